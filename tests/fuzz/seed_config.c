/* Seed corpus for fuzz_config: writes into the folder argv[1] the config.json of every
 * model fixture ($HEARTH_SHARED/fixtures/models/NAME/config.json: one per family, dense,
 * gemma, MoE and hybrid) and a few variants the fixtures lack (mistral, llama3 and linear
 * rope scaling, a Qwen3.5 vision-language text_config). Fails when a fixture is missing. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "seed.h"

static const char *const variants[] = {
    "{\"model_type\": \"mistral\", \"hidden_size\": 64, \"intermediate_size\": 128, "
    "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
    "\"vocab_size\": 256, \"rms_norm_eps\": 1e-5, \"rope_theta\": 10000.0, "
    "\"sliding_window\": 32, \"max_position_embeddings\": 512}",
    "{\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 128, "
    "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 1, "
    "\"head_dim\": 16, \"vocab_size\": 256, \"rope_scaling\": {\"rope_type\": \"llama3\", "
    "\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
    "\"original_max_position_embeddings\": 8192}, \"eos_token_id\": [1, 2], "
    "\"tie_word_embeddings\": false, \"mlp_bias\": true, \"attention_bias\": true}",
    "{\"model_type\": \"qwen2\", \"hidden_size\": 64, \"intermediate_size\": 128, "
    "\"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"num_key_value_heads\": 4, "
    "\"vocab_size\": 256, \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}}",
    "{\"model_type\": \"qwen3_5\", \"text_config\": {\"model_type\": \"qwen3_5_text\", "
    "\"hidden_size\": 64, \"intermediate_size\": 128, \"num_hidden_layers\": 2, "
    "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, "
    "\"vocab_size\": 256, \"layer_types\": [\"linear_attention\", \"full_attention\"], "
    "\"linear_conv_kernel_dim\": 4, \"linear_key_head_dim\": 16, \"linear_num_key_heads\": 2, "
    "\"linear_num_value_heads\": 4, \"linear_value_head_dim\": 16}}",
};

static int save(const char *dir, const char *name, const char *text, size_t len) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    return seed_file(path, text, len);
}

/* The fixtures' configs; -1 when the fixture folder cannot be read. */
static int copy_fixtures(const char *dir) {
    const char *shared = getenv("HEARTH_SHARED");
    char models[900];
    snprintf(models, sizeof models, "%s/fixtures/models", shared ? shared : "../shared");
    DIR *d = opendir(models);
    if (!d) return fprintf(stderr, "seed_config: cannot read %s\n", models), -1;
    int n = 0, bad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1200];
        snprintf(path, sizeof path, "%s/%s/config.json", models, e->d_name);
        char *text = NULL;
        size_t len = 0;
        hr_err *err = hr_read_file(path, &text, &len);
        if (err) {
            hr_err_free(err);
            continue;
        }
        bad |= save(dir, e->d_name, text, len);
        free(text);
        n++;
    }
    closedir(d);
    return bad ? -1 : n;
}

int main(int argc, char **argv) {
    if (argc != 2) return fprintf(stderr, "usage: seed_config DIR\n"), 2;
    int n = copy_fixtures(argv[1]);
    if (n < 10)
        return fprintf(stderr, "seed_config: %d fixture configs, want every family\n", n), 1;
    int bad = 0;
    for (size_t i = 0; i < sizeof variants / sizeof *variants; i++) {
        char name[32];
        snprintf(name, sizeof name, "variant%zu", i);
        bad |= save(argv[1], name, variants[i], strlen(variants[i]));
    }
    return bad;
}
