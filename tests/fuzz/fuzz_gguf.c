/* libFuzzer target: parses the input as a GGUF file and, when it is accepted, reads every
 * key/value (array elements included), every tensor (its first and last byte), the model
 * config the metadata describes and the tokenizer it holds (encoding and decoding a short
 * text with it). Must never crash, leak or read outside the input. Seeds: seed_gguf.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tok_open.h"
#include "model/config.h"
#include "model/gguf.h"

static volatile uint64_t sink;

static void walk(const hr_gguf *g) {
    for (int i = 0; i < hr_gguf_kv_count(g); i++) {
        const hr_gguf_kv *kv = hr_gguf_kv_at(g, i);
        sink += kv->u + (uint64_t)kv->s.len;
        for (uint64_t k = 0; kv->type == HR_GGUF_ARRAY && k < kv->arr_n && k < 4096; k++)
            sink += kv->arr_type == HR_GGUF_STRING ? hr_gguf_arr_str(kv, k).len
                                                   : (uint64_t)hr_gguf_arr_int(kv, k);
    }
    for (int i = 0; i < hr_gguf_tensor_count(g); i++) {
        const hr_tensor *t = hr_gguf_tensor_at(g, i);
        size_t n = hr_tensor_bytes(t);
        if (n) sink += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[n - 1];
        sink += hr_gguf_tensor(g, hr_gguf_tensor_name(g, i)) == t;
    }
}

static void tokenize(const hr_gguf *g) {
    hr_tokenizer *tok = NULL;
    hr_err *e = hr_tokenizer_from_gguf(g, &tok);
    if (!e) {
        static const char text[] = "ab a\tb <s>caf\xc3\xa9 \xe2\x96\x81</s>";
        int32_t *ids = NULL;
        int n = 0;
        char *back = NULL;
        e = hr_tokenizer_encode(tok, text, sizeof text - 1, 1, &ids, &n);
        if (!e) e = hr_tokenizer_decode(tok, ids, n, 1, &back);
        sink += (uint64_t)n + (back ? strlen(back) : 0);
        free(ids);
        free(back);
        hr_tokenizer_free(tok);
    }
    hr_err_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* a private copy, so reads past the input are caught by ASan */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    if (size) memcpy(copy, data, size);
    hr_gguf *g = NULL;
    hr_err *e = hr_gguf_parse(copy, size, "fuzz", &g);
    if (!e) {
        walk(g);
        hr_model_config *c = malloc(sizeof *c);
        if (c) hr_err_free(hr_config_from_gguf(g, c));
        free(c);
        tokenize(g);
        hr_gguf_close(g);
    }
    hr_err_free(e);
    free(copy);
    return 0;
}
