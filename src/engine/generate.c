/* Single-sequence generation over the paged KV pool; see generate.h. */
#include "engine/generate.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "engine/kv_pool.h"

typedef struct {
    hr_model *m;
    hr_kv_pool pool;
    hr_kv_seq seq;
    hr_sampler sampler;
    float *logits;
    int32_t *tokens; /* prompt + generated */
} gen_state;

static int is_stop(const hr_gen_request *r, int tok) {
    for (int i = 0; i < r->n_stop; i++)
        if (r->stop_ids[i] == tok) return 1;
    return 0;
}

static hr_err *gen_init(gen_state *g, hr_model *m, const hr_gen_request *r) {
    memset(g, 0, sizeof *g);
    g->m = m;
    const hr_model_config *c = hr_model_cfg(m);
    if (r->n_prompt <= 0) return hr_errf("the prompt is empty");
    if (r->max_tokens < 0) return hr_errf("max_tokens must be >= 0");
    int total = r->n_prompt + r->max_tokens, bs = 16;
    HR_TRY(hr_sampler_init(&g->sampler, &r->sampling, c->vocab));
    HR_TRY(hr_kv_pool_create(&g->pool, m, (total + bs - 1) / bs, bs));
    g->logits = malloc(sizeof(float) * (size_t)c->vocab);
    g->tokens = malloc(sizeof(int32_t) * (size_t)total);
    if (!g->logits || !g->tokens) return hr_err_oom();
    memcpy(g->tokens, r->prompt, sizeof(int32_t) * (size_t)r->n_prompt);
    return hr_kv_seq_reserve(&g->pool, &g->seq, total);
}

static void gen_free(gen_state *g) {
    hr_kv_seq_release(&g->pool, &g->seq);
    hr_kv_pool_destroy(&g->pool);
    hr_sampler_free(&g->sampler);
    free(g->logits);
    free(g->tokens);
}

static hr_err *step(gen_state *g, int pos, int n, hr_logits_mode mode) {
    hr_row row = {g->tokens + pos, n, pos, g->seq.blocks, mode, 0};
    return hr_model_forward(g->m, &g->pool.store, &row, 1, g->logits);
}

static hr_err *gen_run(gen_state *g, const hr_gen_request *r, hr_token_cb cb, void *ctx,
                       hr_gen_stats *st) {
    int chunk = r->prefill_chunk > 0 ? r->prefill_chunk : 512, n = r->n_prompt;
    uint64_t t0 = hr_now_ns();
    for (int p = 0; p < n; p += chunk) {
        int len = n - p < chunk ? n - p : chunk;
        HR_TRY(step(g, p, len, p + len == n ? HR_LOGITS_LAST : HR_LOGITS_NONE));
    }
    uint64_t t1 = hr_now_ns();
    st->prefill_s = (double)(t1 - t0) * 1e-9;
    for (int i = 0; i < r->max_tokens; i++) {
        int tok = hr_sampler_sample(&g->sampler, g->logits);
        g->tokens[n] = tok;
        st->n_generated++;
        if (cb && cb(ctx, tok)) break;
        if (is_stop(r, tok) || i + 1 == r->max_tokens) break;
        HR_TRY(step(g, n, 1, HR_LOGITS_LAST));
        n++;
    }
    st->decode_s = (double)(hr_now_ns() - t1) * 1e-9;
    return NULL;
}

hr_err *hr_generate(hr_model *m, const hr_gen_request *req, hr_token_cb cb, void *ctx,
                    hr_gen_stats *stats) {
    hr_gen_stats local;
    hr_gen_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    st->n_prompt = req->n_prompt;
    gen_state g;
    hr_err *err = gen_init(&g, m, req);
    if (!err) err = gen_run(&g, req, cb, ctx, st);
    gen_free(&g);
    return err;
}
