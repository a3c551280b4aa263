/* Single-sequence generation through the engine (one engine path: a batch of one): an
 * engine on the caller's model with a KV pool just large enough, one request in callback
 * mode, and a wait for its end. A nonzero callback return cancels the request. */
#include "engine/generate.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "engine/engine.h"

typedef struct {
    hr_token_cb cb;
    void *ctx;
    hr_request *req;
    hr_gen_stats *st;
    uint64_t t0, t_first, t_last;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    hr_finish finish;
    char *error;
} gen_wait;

/* Runs on the engine thread. */
static void on_event(void *arg, const hr_event *ev) {
    gen_wait *w = arg;
    if (ev->kind == HR_EVENT_TOKEN) {
        w->t_last = hr_now_ns();
        if (!w->t_first) w->t_first = w->t_last;
        w->st->n_generated++;
        if (w->cb && w->cb(w->ctx, ev->token)) {
            pthread_mutex_lock(&w->mu); /* w->req is set once submit returned */
            hr_request *req = w->req;
            pthread_mutex_unlock(&w->mu);
            hr_request_cancel(req);
        }
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    w->finish = ev->finish;
    if (ev->error) w->error = strdup(ev->error);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static hr_err *run_request(hr_engine *e, const hr_gen_request *r, gen_wait *w) {
    hr_request_params p = {.tokens = r->prompt,
                           .n_tokens = r->n_prompt,
                           .max_tokens = r->max_tokens,
                           .temperature = r->sampling.temperature,
                           .top_p = r->sampling.top_p,
                           .top_k = r->sampling.top_k,
                           .min_p = r->sampling.min_p,
                           .typical_p = r->sampling.typical_p,
                           .xtc_probability = r->sampling.xtc_probability,
                           .xtc_threshold = r->sampling.xtc_threshold,
                           .seed = r->sampling.seed,
                           .stop_ids = (const int32_t *)r->stop_ids,
                           .n_stop_ids = r->n_stop,
                           .ignore_eos = 1,
                           .cb = on_event,
                           .cb_ctx = w};
    /* Hold the lock so the callback cannot run before w->req is set. */
    pthread_mutex_lock(&w->mu);
    w->t0 = hr_now_ns();
    hr_err *err = hr_engine_submit(e, &p, &w->req);
    if (!err)
        while (!w->done)
            pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    if (err) return err;
    hr_request_release(w->req);
    if (w->finish == HR_FINISH_ERROR)
        return hr_errf("%s", w->error ? w->error : "generation failed");
    return NULL;
}

hr_err *hr_generate(hr_model *m, const hr_gen_request *req, hr_token_cb cb, void *ctx,
                    hr_gen_stats *stats) {
    hr_gen_stats local;
    hr_gen_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    st->n_prompt = req->n_prompt;
    if (req->n_prompt <= 0) return hr_errf("the prompt is empty");
    if (req->max_tokens < 0) return hr_errf("max_tokens must be >= 0");
    if (req->max_tokens == 0) return NULL;
    int bs = 16, total = req->n_prompt + req->max_tokens;
    hr_engine_options o = {.kv_positions = total,
                           .block_size = bs,
                           .max_batch_tokens = req->prefill_chunk > 0 ? req->prefill_chunk : 512,
                           .max_seqs = 1,
                           .no_prefix_cache = 1};
    hr_engine *e;
    HR_TRY(hr_engine_create_on(m, NULL, &o, &e));
    gen_wait w = {.cb = cb, .ctx = ctx, .st = st};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    hr_err *err = run_request(e, req, &w);
    hr_engine_destroy(e);
    if (w.t_first) {
        st->prefill_s = (double)(w.t_first - w.t0) * 1e-9;
        st->decode_s = (double)(w.t_last - w.t_first) * 1e-9;
    }
    free(w.error);
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    return err;
}
