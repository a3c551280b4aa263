/* hearth mkmodel: writes a random-weight checkpoint of a preset or a given config.json,
 * optionally with a tokenizer's files copied beside it and a GGUF copy (--gguf: F16, or its
 * matrices quantized with --gguf-type, K-quant mixes included). */
#include <stdlib.h>
#include <string.h>

#include <strings.h>

#include "base/file.h"
#include "cli/args.h"
#include "cli/verbs.h"
#include "model/gguf_write.h"
#include "model/mkmodel.h"

static hr_err *copy_tokenizer(const char *src, const char *dst) {
    const char *files[] = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                           "chat_template.jinja"};
    int copied = 0;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char *from = hr_path_join(src, files[i]), *to = hr_path_join(dst, files[i]);
        char *data = NULL;
        size_t len = 0;
        hr_err *err = !from || !to ? hr_err_oom() : NULL;
        if (!err && hr_file_exists(from)) {
            err = hr_read_file(from, &data, &len);
            if (!err) err = hr_write_atomic(to, data, len);
            copied += !err;
        }
        free(data);
        free(from);
        free(to);
        HR_TRY(err);
    }
    return copied
               ? NULL
               : hr_errf("--tokenizer %s: no tokenizer.json or tokenizer_config.json there", src);
}

/* --gguf-type (any case): a type for every matrix, or llama-quantize's Q4_K_M / Q5_K_M. */
static hr_err *gguf_type(const char *name, hr_dtype *out, int *mixed) {
    static const struct {
        const char *name;
        hr_dtype t;
        int mixed;
    } types[] = {{"f16", HR_F16, 0},     {"q8_0", HR_Q8_0, 0},  {"q4_0", HR_Q4_0, 0},
                 {"q4_1", HR_Q4_1, 0},   {"q5_0", HR_Q5_0, 0},  {"q5_1", HR_Q5_1, 0},
                 {"q4_k", HR_Q4_K, 0},   {"q5_k", HR_Q5_K, 0},  {"q6_k", HR_Q6_K, 0},
                 {"q4_k_m", HR_Q4_K, 1}, {"q5_k_m", HR_Q5_K, 1}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (!strcasecmp(name, types[i].name))
            return *out = types[i].t, *mixed = types[i].mixed, NULL;
    return hr_errf("--gguf-type must be f16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, "
                   "q4_k_m or q5_k_m, not \"%s\"",
                   name);
}

static hr_err *run(const char *config, const char *preset, const char *tok, const char *dtype,
                   long seed, long shard_mb, const char *out, const char *gguf, hr_dtype gt,
                   int mixed) {
    hr_dtype dt;
    if (strcmp(dtype, "bf16") == 0)
        dt = HR_BF16;
    else if (strcmp(dtype, "f32") == 0)
        dt = HR_F32;
    else
        return hr_errf("--dtype must be bf16 or f32, not \"%s\"", dtype);
    if (shard_mb <= 0) return hr_errf("--shard-mb must be positive");
    char *text = NULL;
    if (config)
        HR_TRY(hr_read_file(config, &text, NULL));
    else if (hr_mkmodel_preset(preset))
        text = strdup(hr_mkmodel_preset(preset));
    else
        return hr_errf("unknown preset \"%s\" (presets: %s)", preset, hr_mkmodel_preset_names());
    if (!text) return hr_err_oom();
    hr_err *err = hr_mkmodel_write(out, text, dt, (uint64_t)seed, (uint64_t)shard_mb << 20);
    free(text);
    if (!err && tok) err = copy_tokenizer(tok, out);
    if (!err && gguf) err = hr_gguf_convert_as(out, gguf, gt, mixed);
    return err;
}

int hr_cmd_mkmodel(int argc, char **argv) {
    const char *config = NULL, *preset = NULL, *tok = NULL, *dtype = "bf16", *out = NULL,
               *gguf = NULL, *gtype = "f16";
    long seed = 0, shard_mb = 2048;
    hr_opt opts[] = {
        {"config", HR_OPT_STR, &config, "a config.json to build"},
        {"preset", HR_OPT_STR, &preset, "a named shape (llama3-8b, qwen3-0.6b, qwen3-8b, ...)"},
        {"tokenizer", HR_OPT_STR, &tok, "copy this directory's tokenizer files"},
        {"seed", HR_OPT_INT, &seed, "random seed (default 0)"},
        {"dtype", HR_OPT_STR, &dtype, "bf16 (default) or f32"},
        {"shard-mb", HR_OPT_INT, &shard_mb, "largest shard in MiB (default 2048)"},
        {"out", HR_OPT_STR, &out, "output directory"},
        {"gguf", HR_OPT_STR, &gguf,
         "also write it as this GGUF file (llama.cpp's converter conventions)"},
        {"gguf-type", HR_OPT_STR, &gtype,
         "the GGUF file's matrices: f16 (default), q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, "
         "q5_k, q6_k, or llama-quantize's mixes q4_k_m, q5_k_m (docs/gguf.md)"},
    };
    int help;
    hr_err *err =
        hr_opts_parse(argc, argv, opts, sizeof opts / sizeof *opts,
                      "usage: hearth mkmodel (--config FILE | --preset NAME) [--tokenizer DIR] "
                      "[--seed N] [--dtype bf16|f32] --out DIR [--gguf FILE [--gguf-type T]]",
                      &help);
    if (err) return hr_cmd_fail("mkmodel", err), 2;
    if (help) return 0;
    if (!out || !config == !preset)
        return hr_cmd_fail("mkmodel", hr_errf("--out and one of --config / --preset are required")),
               2;
    hr_dtype gt = HR_F16;
    int mixed = 0;
    err = gguf_type(gtype, &gt, &mixed);
    if (!err && gt != HR_F16 && !gguf) err = hr_errf("--gguf-type needs --gguf FILE");
    if (err) return hr_cmd_fail("mkmodel", err), 2;
    err = run(config, preset, tok, dtype, seed, shard_mb, out, gguf, gt, mixed);
    return err ? hr_cmd_fail("mkmodel", err) : 0;
}
