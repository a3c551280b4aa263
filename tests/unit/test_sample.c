/* Sampling through the sample op against the host path it replaces: processor edits equal
 * hr_proc_apply bit for bit; the CPU backend's op with a pre-drawn u, plus the host deciding
 * the rows it leaves (fallbacks), gives the host sampler's tokens, logprobs and RNG stream for
 * every combination of temperature, top-k, top-p, min-p, penalties, logit_bias and logprobs;
 * and the engine gives the same tokens and logprobs on brown-llama-8m with the op as on a
 * backend without it. */
#include "backend/backend.h"
#include "engine/engine.h"
#include "harness.h"

static uint64_t rng_state = 12345;

static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static float rndf(void) { return (float)rnd() / 2147483648.0f; } /* [0, 1) */

/* Logits with structure: a few peaks, ties, zeros and negatives. */
static void fill_logits(float *l, int V, float spread) {
    for (int i = 0; i < V; i++) {
        l[i] = (rndf() - 0.5f) * spread;
        if (rnd() % 17 == 0) l[i] = 0;
        if (rnd() % 29 == 0) l[i] = l[rnd() % (unsigned)(i + 1)];
    }
    for (int k = 0; k < 3; k++)
        l[rnd() % (unsigned)V] += spread;
}

static void fill_history(int32_t *h, int n, int V) {
    for (int i = 0; i < n; i++)
        h[i] = rnd() % 7 == 0 && i ? h[rnd() % (unsigned)i] : (int32_t)(rnd() % (unsigned)V);
}

static hr_proc_params random_proc(int32_t *bias_ids, float *bias_values, int V) {
    static const float reps[] = {0, 1, 1.3f, 0.7f, 2};
    hr_proc_params p = {.repetition_penalty = reps[rnd() % 5],
                        .presence_penalty = rnd() % 2 ? (rndf() - 0.5f) * 2 : 0,
                        .frequency_penalty = rnd() % 2 ? (rndf() - 0.5f) : 0,
                        .last_n = (int)(rnd() % 3) * 9,
                        .bias_ids = bias_ids,
                        .bias_values = bias_values,
                        .n_bias = (int)(rnd() % 5)};
    for (int i = 0; i < p.n_bias; i++) {
        bias_ids[i] = (int32_t)((rnd() % (unsigned)V + (unsigned)i * 7) % (unsigned)V);
        for (int j = 0; j < i; j++)
            if (bias_ids[j] == bias_ids[i]) bias_ids[i] = (bias_ids[i] + 1) % V, j = -1;
        bias_values[i] = (rndf() - 0.5f) * 20;
    }
    return p;
}

static void test_edits_equal_proc_apply(void) {
    enum { V = 300 };
    static float a[V], b[V];
    static int counts[V];
    int32_t prompt[40], out[30], bid[8];
    float bval[8];
    hr_logit_edit edits[8 + 40 + 30];
    for (int trial = 0; trial < 2000; trial++) {
        fill_logits(a, V, 10);
        memcpy(b, a, sizeof a);
        int np = 1 + (int)(rnd() % 40), no = (int)(rnd() % 30);
        fill_history(prompt, np, V);
        fill_history(out, no, V);
        hr_proc_params p = random_proc(bid, bval, V);
        hr_proc_apply(&p, a, V, prompt, np, out, no, counts);
        int n = hr_proc_edits(&p, prompt, np, out, no, counts, edits);
        HR_CHECK(n >= 0, "trial %d: edits refused", trial);
        hr_sample_apply_edits(b, edits, n);
        for (int i = 0; i < V; i++)
            HR_CHECK(a[i] == b[i] || (a[i] == 0 && b[i] == 0), "trial %d: logit %d %g vs %g", trial,
                     i, a[i], b[i]);
        for (int i = 0; i < V; i++)
            HR_CHECK(counts[i] == 0, "trial %d: counts not cleared", trial);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < i; j++)
                HR_CHECK(edits[i].id != edits[j].id, "trial %d: id twice", trial);
    }
    int32_t dup[2] = {5, 5};
    float dv[2] = {1, 2};
    hr_proc_params p = {.bias_ids = dup, .bias_values = dv, .n_bias = 2};
    HR_CHECK(hr_proc_edits(&p, prompt, 1, out, 0, counts, edits) == -1,
             "duplicate bias ids accepted");
    for (int i = 0; i < V; i++)
        HR_CHECK(counts[i] == 0, "counts not cleared after a refusal");
}

/* One set of sampler parameters; a share of them needs the host (a top-k over the cap, a
 * nucleus over the cap on a flat row). */
static hr_sampler_params random_sampler(int V) {
    static const float temps[] = {0, 0.3f, 0.8f, 1, 1.7f, 6};
    static const float top_ps[] = {1, 1, 0.9f, 0.5f, 0.999f};
    static const int top_ks[] = {0, 0, 1, 5, 40, 900, 1500};
    (void)V;
    return (hr_sampler_params){.temperature = temps[rnd() % 6],
                               .top_p = top_ps[rnd() % 5],
                               .top_k = top_ks[rnd() % 7],
                               .min_p = rnd() % 3 == 0 ? rndf() * 0.2f : 0,
                               .seed = rnd()};
}

typedef struct {
    int32_t tok;
    float lp;
    int32_t top_ids[HR_SAMPLE_MAX_TOP];
    float top_lp[HR_SAMPLE_MAX_TOP];
} picked;

/* A grammar's mask applied by hand, as the host path did: disallowed logits become -inf. */
static void mask_by_hand(float *l, int V, const uint32_t *mask) {
    for (int i = 0; mask && i < V; i++)
        if (!(mask[i / 32] >> (i % 32) & 1)) l[i] = -INFINITY;
}

/* The host path: processors, the mask (NULL: none) by hand, hr_sampler_sample, hr_logprobs. */
static picked old_path(hr_sampler *s, const hr_proc_params *p, float *l, int V,
                       const int32_t *prompt, int np, const int32_t *out, int no, int n_top,
                       const uint32_t *mask, int *counts) {
    picked r = {0};
    if (hr_proc_active(p)) hr_proc_apply(p, l, V, prompt, np, out, no, counts);
    mask_by_hand(l, V, mask);
    r.tok = hr_sampler_sample(s, l);
    r.lp = hr_logprobs(l, V, r.tok, n_top, r.top_ids, r.top_lp);
    return r;
}

/* The op path: the CPU backend's sample op on one row (with the mask as its input), the host
 * deciding what it leaves (the mask by hand there). */
static picked op_path(hr_backend *be, hr_sampler *s, const hr_proc_params *p, float *l, int V,
                      const int32_t *prompt, int np, const int32_t *out, int no, int n_top,
                      const uint32_t *mask, int *counts, int *fallbacks) {
    static hr_logit_edit edits[64 + 8];
    hr_sample_row row = {.mode = s->p.temperature == 0 ? HR_SAMPLE_GREEDY : HR_SAMPLE_DRAW,
                         .temperature = s->p.temperature,
                         .top_p = s->p.top_p,
                         .min_p = s->p.min_p,
                         .top_k = s->p.top_k,
                         .logprob = 1,
                         .n_top = n_top,
                         .mask = mask != NULL};
    if (hr_proc_active(p)) row.n_edits = hr_proc_edits(p, prompt, np, out, no, counts, edits);
    if (row.mode == HR_SAMPLE_DRAW) row.u = hr_sampler_peek(s);
    hr_sample_step step = {1, row.n_edits, &row, edits, mask != NULL, (V + 31) / 32, mask};
    hr_step_meta meta = {.head = HR_HEAD_SAMPLE, .n_logit_rows = 1, .sample = &step};
    hr_sample_out o;
    picked r = {0};
    if (be->vt->step_begin(be, &meta)) return (picked){.tok = -2};
    be->vt->sample(be, &o, l, 1, V);
    if (o.id >= 0) {
        if (row.mode == HR_SAMPLE_DRAW) hr_sampler_uniform(s);
        r.tok = o.id;
        r.lp = o.logprob;
        memcpy(r.top_ids, o.top_ids, sizeof r.top_ids);
        memcpy(r.top_lp, o.top_lp, sizeof r.top_lp);
        return r;
    }
    ++*fallbacks;
    mask_by_hand(l, V, mask);
    int drew;
    r.tok = hr_sampler_sample_u(s, l, row.u, &drew);
    if (drew) hr_sampler_uniform(s);
    r.lp = hr_logprobs(l, V, r.tok, n_top, r.top_ids, r.top_lp);
    return r;
}

/* A random token mask over V ids with at least one allowed (and junk bits past V): sparse,
 * dense, or runs, as a grammar's masks are; NULL a third of the time. */
static const uint32_t *random_mask(uint32_t *m, int V) {
    int kind = (int)(rnd() % 6), words = (V + 31) / 32;
    if (kind < 2) return NULL;
    for (int w = 0; w < words; w++)
        m[w] = kind == 2   ? (rnd() % 50 == 0 ? 1u << (rnd() % 32) : 0)
               : kind == 3 ? ~(rnd() % 40 == 0 ? 1u << (rnd() % 32) : 0u)
               : kind == 4 ? (w % 7 < 3 ? ~0u : 0)
                           : rnd() ^ rnd() << 16;
    int keep = (int)(rnd() % (unsigned)V);
    m[keep / 32] |= 1u << (keep % 32);
    return m;
}

static void test_op_equals_host(void) {
    enum { V = 3000, STEPS = 4 };
    static float raw[V], a[V], b[V];
    static uint32_t mask_words[(V + 31) / 32];
    int masked = 0;
    static int counts[V];
    int32_t prompt[40], out[24], bid[8];
    float bval[8];
    hr_backend *be;
    HR_CHECK_OK(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 1}, &be));
    int fallbacks = 0, decided = 0;
    for (int trial = 0; trial < 400; trial++) {
        hr_sampler_params sp = random_sampler(V);
        hr_sampler s1, s2;
        HR_CHECK_OK(hr_sampler_init(&s1, &sp, V));
        HR_CHECK_OK(hr_sampler_init(&s2, &sp, V));
        hr_proc_params p = random_proc(bid, bval, V);
        int np = 1 + (int)(rnd() % 40), n_top = (int)(rnd() % 4) * 5;
        fill_history(prompt, np, V);
        float spread = rnd() % 4 == 0 ? 0.5f : 12; /* flat rows: nuclei over the cap */
        for (int step = 0; step < STEPS; step++) {
            int no = step * 6;
            fill_history(out, no, V);
            fill_logits(raw, V, spread);
            memcpy(a, raw, sizeof raw);
            memcpy(b, raw, sizeof raw);
            int fb = fallbacks;
            const uint32_t *mask = random_mask(mask_words, V);
            masked += mask != NULL;
            picked x = old_path(&s1, &p, a, V, prompt, np, out, no, n_top, mask, counts);
            picked y =
                op_path(be, &s2, &p, b, V, prompt, np, out, no, n_top, mask, counts, &fallbacks);
            decided += fb == fallbacks;
            HR_CHECK(x.tok == y.tok,
                     "trial %d step %d (T %g top_k %d top_p %g min_p %g): token %d vs %d", trial,
                     step, sp.temperature, sp.top_k, sp.top_p, sp.min_p, x.tok, y.tok);
            HR_CHECK(x.lp == y.lp, "trial %d step %d: logprob %.9g vs %.9g", trial, step, x.lp,
                     y.lp);
            for (int k = 0; k < n_top; k++)
                HR_CHECK(x.top_ids[k] == y.top_ids[k] && x.top_lp[k] == y.top_lp[k],
                         "trial %d step %d: top %d differs", trial, step, k);
            HR_CHECK(hr_sampler_peek(&s1) == hr_sampler_peek(&s2),
                     "trial %d step %d: RNG streams part", trial, step);
        }
        hr_sampler_free(&s1);
        hr_sampler_free(&s2);
    }
    hr_backend_destroy(be);
    HR_CHECK(fallbacks > 50 && decided > 500 && masked > 300,
             "fallbacks %d, decided by the op %d, masked %d: every path must run", fallbacks,
             decided, masked);
}

/* --- the engine on brown-llama-8m, with the op and on a backend without it --- */

typedef struct {
    int32_t toks[24];
    float lp[24];
    int32_t top[24][3];
    int n;
} result;

static void drain(hr_request *r, result *res) {
    memset(res, 0, sizeof *res);
    hr_event ev;
    while (hr_request_next(r, &ev))
        if (ev.kind == HR_EVENT_TOKEN && res->n < 24) {
            res->lp[res->n] = ev.logprob;
            for (int k = 0; k < ev.n_top && k < 3; k++)
                res->top[res->n][k] = ev.top_ids[k];
            res->toks[res->n++] = ev.token;
        }
}

enum { N_REQ = 12 };

/* Requests covering every path: greedy, draws of each filter mix, penalties and bias,
 * logprobs; host rows (typical-p, XTC, a repeated bias id); fallbacks (top-k and a hot
 * nucleus over the cap). */
static void requests(hr_request_params *p, int32_t (*prompts)[40], int32_t *bid, float *bv) {
    bid[0] = 17, bid[1] = 923, bid[2] = 17;
    bv[0] = 3, bv[1] = -2, bv[2] = 1;
    for (int i = 0; i < N_REQ; i++) {
        for (int j = 0; j < 40; j++)
            prompts[i][j] = 3 + (int32_t)((i * 7919 + j * 104729 + 11) % 31000);
        p[i] = (hr_request_params){.tokens = prompts[i],
                                   .n_tokens = 6 + i * 3,
                                   .max_tokens = 10 + i % 5,
                                   .ignore_eos = 1,
                                   .temperature = 1,
                                   .top_p = 1,
                                   .seed = (uint64_t)i * 31 + 1,
                                   .repetition_penalty = 1};
    }
    p[0].temperature = 0, p[0].logprobs = 1, p[0].top_logprobs = 3, p[0].repetition_penalty = 1.3f;
    p[1].top_k = 40, p[1].top_p = 0.9f, p[1].min_p = 0.05f;
    p[2].temperature = 0.7f, p[2].presence_penalty = 0.5f, p[2].frequency_penalty = 0.3f,
    p[2].penalty_last_n = 8, p[2].logprobs = 1;
    p[3].bias_ids = bid, p[3].bias_values = bv, p[3].n_bias = 2, p[3].top_logprobs = 2;
    p[4].typical_p = 0.8f;
    p[5].xtc_probability = 0.5f, p[5].xtc_threshold = 0.05f;
    p[6].bias_ids = bid, p[6].bias_values = bv, p[6].n_bias = 3; /* id 17 twice: the host's */
    p[7].top_k = 2000;                                           /* over the cap */
    p[8].temperature = 6, p[8].top_p = 0.999f;                   /* a nucleus over the cap */
    p[9].min_p = 0.1f, p[9].repetition_penalty = 1.5f, p[9].logprobs = 1, p[9].top_logprobs = 5;
    p[10].temperature = 1.3f;
    p[11].temperature = 0, p[11].bias_ids = bid + 1, p[11].bias_values = bv + 1, p[11].n_bias = 1;
}

static hr_err *run_all(hr_model *m, int batched, result *res) {
    static int32_t prompts[N_REQ][40];
    int32_t bid[3];
    float bv[3];
    hr_request_params p[N_REQ];
    requests(p, prompts, bid, bv);
    hr_engine *e;
    hr_engine_options o = {.kv_memory = 32 << 20, .max_seqs = 16, .no_prefix_cache = 1};
    HR_TRY(hr_engine_create_on(m, NULL, &o, &e));
    hr_request *r[N_REQ];
    hr_err *err = NULL;
    for (int i = 0; i < N_REQ && !err; i++) {
        err = hr_engine_submit(e, &p[i], &r[i]);
        if (!err && !batched) drain(r[i], &res[i]), hr_request_release(r[i]);
    }
    for (int i = 0; i < N_REQ && !err && batched; i++)
        drain(r[i], &res[i]), hr_request_release(r[i]);
    hr_engine_destroy(e);
    return err;
}

static void test_engine_op_equals_host(void) {
    static hr_backend_vt no_sample;
    hr_backend *be_op, *be_host;
    hr_model *m_op, *m_host;
    HR_CHECK_OK(
        hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2}, &be_op)); /* rows over the pool */
    HR_CHECK_OK(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 1}, &be_host));
    no_sample = *be_host->vt;
    no_sample.sample = NULL;
    be_host->vt = &no_sample;
    HR_CHECK_OK(hr_model_load(hr_fixture("models/brown-llama-8m"), be_op, &m_op));
    HR_CHECK_OK(hr_model_load(hr_fixture("models/brown-llama-8m"), be_host, &m_host));
    HR_CHECK(hr_model_can_sample(m_op) && !hr_model_can_sample(m_host), "the op's presence");
    static result host[N_REQ], op[N_REQ], op_alone[N_REQ];
    HR_CHECK_OK(run_all(m_host, 1, host));
    HR_CHECK_OK(run_all(m_op, 1, op));
    HR_CHECK_OK(run_all(m_op, 0, op_alone));
    for (int i = 0; i < N_REQ; i++) {
        HR_CHECK(host[i].n > 0 && host[i].n == op[i].n, "request %d: %d vs %d tokens", i, host[i].n,
                 op[i].n);
        HR_CHECK(!memcmp(&host[i], &op[i], sizeof host[i]), "request %d: tokens or logprobs differ",
                 i);
        HR_CHECK(!memcmp(&op[i], &op_alone[i], sizeof op[i]),
                 "request %d: batched differs from alone", i);
    }
    hr_model_free(m_op);
    hr_model_free(m_host);
    hr_backend_destroy(be_op);
    hr_backend_destroy(be_host);
}

/* The argmax op against the one-pass loop it must equal (`x[i] > x[best]`): the first of tied
 * maxima, NaNs skipped (a NaN at 0 gives 0), -0 and +0 tied, -inf rows, lengths under and past
 * the vector width, two rows at once. */
static void test_argmax_op(void) {
    enum { N = 1000 };
    static float x[2 * N];
    int32_t ids[2];
    hr_backend *be;
    HR_CHECK_OK(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 1}, &be));
    int bad = 0;
    for (int trial = 0; trial < 2000; trial++) {
        int n = 1 + (int)(rnd() % (trial < 1000 ? 40 : N)), kind = (int)(rnd() % 6);
        for (int i = 0; i < 2 * n; i++) {
            int r = (int)(rnd() % 8);
            x[i] = kind == 0   ? -INFINITY
                   : kind == 1 ? (float)(r % 3) - 1.0f /* many ties */
                   : kind == 2 ? (r == 0 ? NAN : rndf())
                   : kind == 3 ? (r < 4   ? -0.0f
                                  : r < 6 ? 0.0f
                                          : -1.0f)
                               : rndf() * 4.0f - 2.0f;
        }
        if (kind == 4) x[0] = NAN;
        be->vt->argmax(be, ids, x, 2, n);
        for (int r = 0; r < 2; r++) {
            const float *xr = x + (long)r * n;
            int best = 0;
            for (int i = 1; i < n; i++)
                if (xr[i] > xr[best]) best = i;
            bad += ids[r] != best;
        }
    }
    HR_CHECK(bad == 0, "%d argmax rows differ from the one-pass loop", bad);
    hr_backend_destroy(be);
}

int main(void) {
    HR_RUN(test_argmax_op);
    HR_RUN(test_edits_equal_proc_apply);
    HR_RUN(test_op_equals_host);
    HR_RUN(test_engine_op_equals_host);
    return hr_test_summary();
}
