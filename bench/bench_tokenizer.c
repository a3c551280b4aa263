/* Tokenizer benchmark: load time and single-thread encode throughput (MB/s) on English
 * prose (brown-llama-8m's held-out Brown corpus text and ../shared/docs, repeated) and on
 * C code (this repository's src/), for each tokenizer directory given (default: the four
 * fetched by scripts/fetch-tokenizers.sh). Run from the repository root. Target (Qwen3,
 * English): >= 10 MB/s encode, < 300 ms load. */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/file.h"
#include "tokenizer/strmap.h"
#include "tokenizer/tokenizer.h"

static void append_file(hr_buf *b, const char *path) {
    char *s;
    size_t n;
    hr_err *e = hr_read_file(path, &s, &n);
    if (e) {
        hr_err_free(e);
        return;
    }
    hr_err_free(hr_buf_append(b, s, n));
    hr_err_free(hr_buf_append(b, "\n", 1));
    free(s);
}

static void append_dir(hr_buf *b, const char *dir, const char *suffix) {
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char *p = hr_path_join(dir, de->d_name);
        size_t n = strlen(de->d_name), k = strlen(suffix);
        if (de->d_type == DT_DIR)
            append_dir(b, p, suffix);
        else if (n > k && strcmp(de->d_name + n - k, suffix) == 0)
            append_file(b, p);
        free(p);
    }
    if (d) closedir(d);
}

static void repeat_to(hr_buf *b, size_t target) {
    size_t base = b->len;
    hr_err_free(hr_buf_reserve(b, target)); /* appending from b->p must not move it */
    while (base && b->len < target)
        hr_err_free(hr_buf_append(b, b->p, base < target - b->len ? base : target - b->len));
}

static void english(hr_buf *b) {
    json_t *ref =
        json_load_file("../shared/fixtures/models/brown-llama-8m/reference.json", 0, NULL);
    const char *t = json_string_value(json_object_get(ref, "heldout_text"));
    if (t) hr_err_free(hr_buf_append(b, t, strlen(t)));
    json_decref(ref);
    append_dir(b, "../shared/docs", ".md");
    repeat_to(b, 8 << 20);
}

static double now_s(void) { return (double)hr_now_ns() / 1e9; }

static double encode_mbs(hr_tokenizer *tok, const hr_buf *text) {
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        int32_t *ids;
        int n;
        double t0 = now_s();
        hr_err *e = hr_tokenizer_encode(tok, text->p, text->len, 0, &ids, &n);
        double dt = now_s() - t0;
        if (e) {
            fprintf(stderr, "encode: %s\n", hr_err_msg(e));
            hr_err_free(e);
            return 0;
        }
        free(ids);
        double mbs = (double)text->len / 1e6 / dt;
        if (mbs > best) best = mbs;
    }
    return best;
}

static void bench_one(const char *dir, const hr_buf *eng, const hr_buf *code) {
    hr_tokenizer *tok = NULL;
    double best_load = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now_s();
        hr_err *e = hr_tokenizer_load(dir, &tok);
        double ms = (now_s() - t0) * 1e3;
        if (e) {
            fprintf(stderr, "%s\n", hr_err_msg(e));
            hr_err_free(e);
            return;
        }
        if (ms < best_load) best_load = ms;
        if (rep < 2) hr_tokenizer_free(tok);
    }
    printf("%-32s vocab %6d  load %7.1f ms  english %6.2f MB/s  code %6.2f MB/s\n", dir,
           hr_tokenizer_vocab_size(tok), best_load, encode_mbs(tok, eng), encode_mbs(tok, code));
    hr_tokenizer_free(tok);
}

int main(int argc, char **argv) {
    hr_buf eng = {0}, code = {0};
    english(&eng);
    append_dir(&code, "src", ".c");
    repeat_to(&code, 8 << 20);
    printf("english text %.1f MB, code %.1f MB (best of 3 runs, one thread, warm word cache "
           "after the first)\n",
           eng.len / 1e6, code.len / 1e6);
    static const char *defaults[] = {".cache/tokenizers/qwen3", ".cache/tokenizers/llama3_1",
                                     ".cache/tokenizers/gemma3", ".cache/tokenizers/llama2"};
    if (argc > 1)
        for (int i = 1; i < argc; i++)
            bench_one(argv[i], &eng, &code);
    else
        for (int i = 0; i < 4; i++)
            bench_one(defaults[i], &eng, &code);
    hr_buf_free(&eng);
    hr_buf_free(&code);
    return 0;
}
