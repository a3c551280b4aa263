/* A test helper shared by the model-level unit tests: the logits of a token sequence, every
 * position, in one forward step over a fresh KV pool. */
#ifndef HR_TESTS_MODEL_LOGITS_H
#define HR_TESTS_MODEL_LOGITS_H

#include <stdlib.h>

#include "engine/kv_pool.h"
#include "model/model.h"

/* Loads the model at path on be, runs ids[0..n) and frees it; *out (n x vocab, the caller
 * frees it) and *vocab on success. */
static hr_err *hr_t_logits(hr_backend *be, const char *path, const int32_t *ids, int n, float **out,
                           int *vocab) {
    hr_model *m;
    HR_TRY(hr_model_load(path, be, &m));
    int V = hr_model_cfg(m)->vocab;
    float *l = malloc(sizeof(float) * (size_t)n * V);
    hr_kv_pool pool;
    hr_err *e = l ? hr_kv_pool_create(&pool, m, n / 16 + 1, 16) : hr_err_oom();
    if (!e) {
        hr_kv_seq seq = {0};
        e = hr_kv_seq_reserve(&pool, &seq, n);
        hr_row row = {ids, n, 0, seq.blocks, HR_LOGITS_ALL, 0};
        if (!e) e = hr_model_forward(m, &pool.store, &row, 1, l);
        hr_kv_seq_release(&pool, &seq);
        hr_kv_pool_destroy(&pool);
    }
    hr_model_free(m);
    if (e)
        free(l);
    else
        *out = l, *vocab = V;
    return e;
}

#endif
