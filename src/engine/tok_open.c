/* hr_tokenizer_open: tokenizer.json of a directory, or the vocabulary of a GGUF file read
 * from its metadata into an hr_tok_vocab (see tok_open.h). */
#include "engine/tok_open.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gguf.h"

typedef struct {
    hr_tok_vocab v;
    hr_tok_str *tokens, *merges;
    float *scores;
    int32_t *types;
} gguf_vocab;

static hr_err *strings(const hr_gguf *g, const char *key, hr_tok_str **out, int *n) {
    const hr_gguf_kv *kv;
    HR_TRY(hr_gguf_get_arr(g, key, HR_GGUF_STRING, &kv));
    *n = 0;
    if (!kv) return NULL;
    if (kv->arr_n > (1u << 26))
        return hr_errf("GGUF %s has %llu entries, too many", key, (unsigned long long)kv->arr_n);
    *out = malloc(sizeof **out * (size_t)(kv->arr_n + 1));
    if (!*out) return hr_err_oom();
    for (uint64_t i = 0; i < kv->arr_n; i++) {
        hr_gguf_str s = hr_gguf_arr_str(kv, i);
        (*out)[i] = (hr_tok_str){s.p, s.len};
    }
    *n = (int)kv->arr_n;
    return NULL;
}

/* An optional per-token array of `type`, as floats (scores) or ints (types). */
static hr_err *per_token(const hr_gguf *g, const char *key, hr_gguf_type type, int n, float **f,
                         int32_t **i) {
    const hr_gguf_kv *kv;
    HR_TRY(hr_gguf_get_arr(g, key, type, &kv));
    if (!kv) return NULL;
    if (kv->arr_n != (uint64_t)n)
        return hr_errf("GGUF %s has %llu entries for %d tokens", key, (unsigned long long)kv->arr_n,
                       n);
    if (f && !(*f = malloc(sizeof **f * (size_t)(n + 1)))) return hr_err_oom();
    if (i && !(*i = malloc(sizeof **i * (size_t)(n + 1)))) return hr_err_oom();
    for (int k = 0; k < n; k++) {
        if (f)
            (*f)[k] = (float)hr_gguf_arr_num(kv, (uint64_t)k);
        else
            (*i)[k] = (int32_t)hr_gguf_arr_int(kv, (uint64_t)k);
    }
    return NULL;
}

static hr_err *id(const hr_gguf *g, const char *which, int32_t *out) {
    char k[64];
    int64_t v;
    snprintf(k, sizeof k, "tokenizer.ggml.%s_token_id", which);
    HR_TRY(hr_gguf_get_int(g, k, -1, &v));
    *out = v >= 0 && v < INT32_MAX ? (int32_t)v : -1;
    return NULL;
}

static hr_err *flag(const hr_gguf *g, const char *key, int *out) {
    if (!hr_gguf_find(g, key)) return *out = -1, NULL;
    return hr_gguf_get_bool(g, key, 0, out);
}

static hr_err *read_vocab(const hr_gguf *g, gguf_vocab *gv) {
    hr_tok_vocab *v = &gv->v;
    HR_TRY(hr_gguf_get_str(g, "tokenizer.ggml.model", &v->model));
    HR_TRY(hr_gguf_get_str(g, "tokenizer.ggml.pre", &v->pre));
    HR_TRY(strings(g, "tokenizer.ggml.tokens", &gv->tokens, &v->n_tokens));
    if (!v->n_tokens) return hr_errf("GGUF tokenizer.ggml.tokens is missing or empty");
    HR_TRY(strings(g, "tokenizer.ggml.merges", &gv->merges, &v->n_merges));
    HR_TRY(per_token(g, "tokenizer.ggml.scores", HR_GGUF_F32, v->n_tokens, &gv->scores, NULL));
    HR_TRY(per_token(g, "tokenizer.ggml.token_type", HR_GGUF_I32, v->n_tokens, NULL, &gv->types));
    v->tokens = gv->tokens;
    v->merges = gv->merges;
    v->scores = gv->scores;
    v->types = gv->types;
    HR_TRY(id(g, "bos", &v->bos));
    HR_TRY(id(g, "eos", &v->eos));
    HR_TRY(id(g, "eot", &v->eot));
    HR_TRY(id(g, "unknown", &v->unk));
    HR_TRY(flag(g, "tokenizer.ggml.add_bos_token", &v->add_bos));
    HR_TRY(flag(g, "tokenizer.ggml.add_eos_token", &v->add_eos));
    HR_TRY(flag(g, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix));
    return hr_gguf_get_str(g, "tokenizer.chat_template", &v->chat_template);
}

hr_err *hr_tokenizer_from_gguf(const hr_gguf *g, hr_tokenizer **out) {
    gguf_vocab gv = {0};
    hr_err *e = read_vocab(g, &gv);
    if (!e) e = hr_tokenizer_from_vocab(&gv.v, out);
    free(gv.tokens);
    free(gv.merges);
    free(gv.scores);
    free(gv.types);
    return e;
}

static hr_err *open_gguf(const char *path, hr_tokenizer **out) {
    hr_gguf *g;
    HR_TRY(hr_gguf_open(path, &g));
    hr_err *e = hr_tokenizer_from_gguf(g, out);
    hr_gguf_close(g);
    return hr_err_wrap(e, "%s: ", path);
}

int hr_tokenizer_available(const char *path) {
    if (!hr_is_gguf(path)) return hr_tokenizer_present(path);
    hr_gguf *g;
    hr_err *e = hr_gguf_open(path, &g);
    int yes = !e && hr_gguf_find(g, "tokenizer.ggml.model");
    hr_err_free(e);
    hr_gguf_close(e ? NULL : g);
    return yes;
}

hr_err *hr_tokenizer_open(const char *path, hr_tokenizer **out) {
    if (hr_is_gguf(path)) return open_gguf(path, out);
    return hr_tokenizer_load(path, out);
}
