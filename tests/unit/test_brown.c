/* The real small model brown-llama-8m against its reference.json: mean NLL of the held-out
 * ids (relative 1e-4) and the greedy continuations up to the first position whose
 * reference margin is below 0.05. Run again with --compute bf16 (activations rounded to
 * bf16 before every weight product), whose looser bounds say how far that mode drifts:
 * NLL within 2e-4 relative (measured 2.6e-5 on AMX, 4.3e-5 with the rounding path), and
 * margins above 0.1 must keep their argmax. Then with each narrow KV cache (--kv-dtype bf16,
 * f16, q8_0, q4_0; f32 products) and the fast default (bf16 products and KV): the printed figures
 * are the quality cost docs/engine.md quotes (NLL drift, largest logit error against the
 * f32 run), held within bounds a little above what was measured. */
#include "base/file.h"
#include "base/json.h"
#include "engine/generate.h"
#include "engine/kv_pool.h"
#include "harness.h"

static json_t *ref;
static hr_backend *be;
static hr_model *model;
static double nll_tol = 1e-4, clear_margin = 0.05; /* the f32 bounds; bf16 loosens them */
static double logit_tol = 0;                       /* largest |logit - f32 run's logit| */
static float *f32_logits;                          /* the exact run's held-out logits */

static int32_t *ids_of(const json_t *arr, int *n) {
    *n = (int)json_array_size(arr);
    int32_t *v = malloc(sizeof(int32_t) * (size_t)*n);
    for (int i = 0; i < *n; i++)
        v[i] = (int32_t)json_integer_value(json_array_get(arr, (size_t)i));
    return v;
}

static void test_heldout_nll(void) {
    int n;
    int32_t *ids = ids_of(json_object_get(ref, "heldout_ids"), &n);
    int V = hr_model_cfg(model)->vocab;
    float *logits = malloc(sizeof(float) * (size_t)n * V);
    hr_kv_pool pool;
    HR_CHECK_OK(hr_kv_pool_create(&pool, model, n / 16 + 1, 16));
    hr_kv_seq seq = {0};
    HR_CHECK_OK(hr_kv_seq_reserve(&pool, &seq, n));
    hr_row row = {ids, n, 0, seq.blocks, HR_LOGITS_ALL, 0};
    HR_CHECK_OK(hr_model_forward(model, &pool.store, &row, 1, logits));
    double nll = 0;
    for (int t = 0; t + 1 < n; t++) {
        const float *l = logits + (size_t)t * V;
        double mx = l[0], sum = 0;
        for (int i = 1; i < V; i++)
            mx = l[i] > mx ? l[i] : mx;
        for (int i = 0; i < V; i++)
            sum += exp(l[i] - mx);
        nll += mx + log(sum) - l[ids[t + 1]];
    }
    nll /= n - 1;
    double want = json_real_value(json_object_get(ref, "heldout_mean_nll"));
    hr_kv_seq_release(&pool, &seq);
    hr_kv_pool_destroy(&pool);
    double err = 0;
    for (size_t i = 0; f32_logits && i < (size_t)n * V; i++)
        err = fmax(err, fabs(logits[i] - f32_logits[i]));
    if (!f32_logits)
        f32_logits = logits;
    else
        free(logits);
    free(ids);
    printf("  mean NLL %.7f, reference %.7f (relative %.2g), max logit error vs f32 %.3g\n", nll,
           want, fabs(nll - want) / want, err);
    HR_CHECK(err <= logit_tol || logit_tol == 0, "max logit error %.3g > %.3g", err, logit_tol);
    HR_CHECK(fabs(nll - want) <= nll_tol * fabs(want), "mean NLL %.7f, reference %.7f", nll, want);
}

typedef struct {
    const int32_t *want;
    const json_t *margins;
    int n, pos, mismatch;
} greedy_ctx;

static int check_token(void *ctx, int32_t tok) {
    greedy_ctx *g = ctx;
    if (g->pos >= g->n) return 1;
    double margin = json_real_value(json_array_get(g->margins, (size_t)g->pos));
    if (margin < clear_margin) return 1;
    if (tok != g->want[g->pos]) {
        g->mismatch = g->pos;
        return 1;
    }
    g->pos++;
    return 0;
}

static void test_greedy(void) {
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(ref, "greedy_samples"), i, s) {
        int np, ng;
        int32_t *prompt = ids_of(json_object_get(s, "prompt_ids"), &np);
        int32_t *want = ids_of(json_object_get(s, "greedy_ids"), &ng);
        greedy_ctx g = {want, json_object_get(s, "margins"), ng, 0, -1};
        hr_gen_request req = {prompt, np, ng, {.top_p = 1}, NULL, 0, 0};
        hr_err *err = hr_generate(model, &req, check_token, &g, NULL);
        free(prompt);
        free(want);
        HR_CHECK_OK(err);
        HR_CHECK(g.mismatch < 0, "sample %zu: token %d differs", i, g.mismatch);
    }
}

/* Teacher-forced: prompt + reference continuation; our argmax must equal the reference
 * token at every position whose margin is clear, also after an unclear one. */
static void test_greedy_teacher_forced(void) {
    size_t i;
    const json_t *s;
    int V = hr_model_cfg(model)->vocab;
    json_array_foreach(json_object_get(ref, "greedy_samples"), i, s) {
        int np, ng;
        int32_t *prompt = ids_of(json_object_get(s, "prompt_ids"), &np);
        int32_t *want = ids_of(json_object_get(s, "greedy_ids"), &ng);
        int n = np + ng;
        int32_t *all = malloc(sizeof(int32_t) * (size_t)n);
        memcpy(all, prompt, sizeof(int32_t) * (size_t)np);
        memcpy(all + np, want, sizeof(int32_t) * (size_t)ng);
        float *logits = malloc(sizeof(float) * (size_t)n * V);
        hr_kv_pool pool;
        hr_kv_seq seq = {0};
        hr_err *err = hr_kv_pool_create(&pool, model, n / 16 + 1, 16);
        if (!err) err = hr_kv_seq_reserve(&pool, &seq, n);
        hr_row row = {all, n, 0, seq.blocks, HR_LOGITS_ALL, 0};
        if (!err) err = hr_model_forward(model, &pool.store, &row, 1, logits);
        int bad = -1, compared = 0;
        for (int k = 0; !err && k < ng && bad < 0; k++) {
            if (json_real_value(json_array_get(json_object_get(s, "margins"), (size_t)k)) <
                clear_margin)
                continue;
            const float *l = logits + (size_t)(np - 1 + k) * V;
            int best = 0;
            for (int v = 1; v < V; v++)
                best = l[v] > l[best] ? v : best;
            if (best != want[k]) bad = k;
            compared++;
        }
        hr_kv_seq_release(&pool, &seq);
        hr_kv_pool_destroy(&pool);
        free(all);
        free(logits);
        free(prompt);
        free(want);
        HR_CHECK_OK(err);
        HR_CHECK(bad < 0, "sample %zu: argmax differs at generated position %d", i, bad);
        HR_CHECK(compared > ng / 2, "sample %zu: only %d positions compared", i, compared);
    }
}

/* Loads the model with the given compute mode and KV dtype and runs every test on it. */
static void run_mode(const char *dir, int bf16, hr_dtype kv) {
    printf("  --compute %s --kv-dtype %s\n", bf16 ? "bf16" : "f32", hr_dtype_name(kv));
    hr_err *err =
        hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2, .compute_bf16 = bf16}, &be);
    if (!err) err = hr_model_load(dir, be, &model);
    if (!err) hr_model_set_kv_dtype(model, kv);
    if (err) {
        printf("FAIL setup: %s\n", hr_err_msg(err));
        hr_err_free(err);
        hr_t_failed++;
    } else {
        HR_RUN(test_heldout_nll);
        HR_RUN(test_greedy);
        HR_RUN(test_greedy_teacher_forced);
    }
    hr_model_free(model);
    hr_backend_destroy(be);
    model = NULL;
    be = NULL;
}

int main(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", hr_fixture("models/brown-llama-8m"));
    char *path = hr_path_join(dir, "reference.json");
    hr_err *err = hr_json_load_file(path, &ref);
    free(path);
    if (err) {
        printf("FAIL setup: %s\n", hr_err_msg(err));
        hr_err_free(err);
        return 1;
    }
    run_mode(dir, 0, HR_F32);
    nll_tol = 2e-4;
    clear_margin = 0.1;
    run_mode(dir, 1, HR_F32);
    struct {
        int bf16;
        hr_dtype kv;
        double nll, logit, margin;
    } narrow[] = {/* measured: NLL 1.4e-5 relative, logits 0.034; 8.7e-8, 0.0039; 7.9e-5, 0.096;
                     bf16 products + KV 6.7e-5, 0.048 (AVX-512 machine, 2026-12-01); q4_0
                     4.5e-4, 1.44, and it flips an argmax of margin 0.125 */
                  {0, HR_BF16, 1e-4, 0.1, 0.1},
                  {0, HR_F16, 1e-5, 0.02, 0.1},
                  {0, HR_Q8_0, 3e-4, 0.25, 0.1},
                  {1, HR_BF16, 2e-4, 0.15, 0.1},
                  {0, HR_Q4_0, 6e-4, 2.0, 0.25}};
    for (size_t i = 0; i < sizeof narrow / sizeof *narrow; i++) {
        nll_tol = narrow[i].nll;
        logit_tol = narrow[i].logit;
        clear_margin = narrow[i].margin;
        run_mode(dir, narrow[i].bf16, narrow[i].kv);
    }
    free(f32_logits);
    json_decref(ref);
    return hr_test_summary();
}
