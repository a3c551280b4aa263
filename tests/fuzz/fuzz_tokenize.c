/* libFuzzer target: encodes arbitrary bytes (invalid UTF-8 included) with the Qwen3
 * (byte-level) and Llama 2 (SentencePiece-style) tokenizers, with and without special
 * tokens, decodes the ids back in one go and through the incremental detokenizer, and
 * checks the two decodes agree. HEARTH_TOKENIZERS names the folder holding qwen3/ and
 * llama2/ (tests/fuzz/run.sh sets it). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

static hr_tokenizer *toks[2];

static hr_tokenizer *load(const char *root, const char *name) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    hr_tokenizer *t;
    hr_err *e = hr_tokenizer_load(dir, &t);
    if (e) {
        fprintf(stderr, "fuzz_tokenize: %s (set HEARTH_TOKENIZERS)\n", hr_err_msg(e));
        abort();
    }
    return t;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    const char *root = getenv("HEARTH_TOKENIZERS");
    if (!root) root = ".cache/tokenizers";
    toks[0] = load(root, "qwen3");
    toks[1] = load(root, "llama2");
    return 0;
}

/* The streamed text must equal the full decode. That one is NUL-terminated, so text with
 * a NUL byte (from a "\0" in the input) is compared up to its first NUL. */
static void stream_check(hr_tokenizer *t, const int32_t *ids, int n, const char *full) {
    hr_detok_stream *s;
    if (hr_detok_stream_create(t, 0, &s)) abort();
    size_t used = 0, cap = 256, flen = strlen(full);
    char *acc = malloc(cap);
    for (int i = 0; i <= n; i++) {
        const char *piece;
        size_t len;
        hr_err *e = i < n ? hr_detok_stream_push(s, ids[i], &piece, &len)
                          : hr_detok_stream_flush(s, &piece, &len);
        if (e) abort();
        if (used + len + 1 > cap) acc = realloc(acc, cap = (used + len + 1) * 2);
        memcpy(acc + used, piece, len);
        used += len;
    }
    if (used < flen || memcmp(acc, full, flen) != 0 || (used > flen && acc[flen] != 0)) abort();
    free(acc);
    hr_detok_stream_destroy(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (int k = 0; k < 2; k++) {
        for (int special = 0; special < 2; special++) {
            int32_t *ids;
            int n;
            hr_err *e = hr_tokenizer_encode(toks[k], (const char *)data, size, special, &ids, &n);
            if (e) abort(); /* encode never fails on any input */
            char *text;
            if (hr_tokenizer_decode(toks[k], ids, n, 0, &text)) abort();
            stream_check(toks[k], ids, n, text);
            free(text);
            free(ids);
        }
    }
    return 0;
}
