/* Golden tests against transformers' reference logits for the tiny checkpoints of the
 * dense, gemma, MoE and hybrid (DeltaNet) families: full forward, the KV / recurrent-state path
 * (prefill then one token at a time, and chunked prefill), batching of rows from different
 * sequences (distinct state slots), and greedy continuations wherever the reference margin
 * is clear. */
#include "base/cpu.h"
#include "base/json.h"
#include "engine/kv_pool.h"
#include "harness.h"
#include "model/safetensors.h"

static const char *const models[] = {
    "tiny-llama",      "tiny-qwen2",     "tiny-qwen3",      "tiny-gemma3",  "tiny-gemma4",
    "tiny-gemma4_moe", "tiny-qwen3_moe", "tiny-qwen3_next", "tiny-qwen3_5", "tiny-qwen3_5_moe"};

typedef struct {
    hr_backend *be;
    hr_model *m;
    hr_safetensors *gold;
    json_t *cases;
    int V;
} fixture;

static hr_err *fixture_open(const char *name, fixture *f) {
    memset(f, 0, sizeof *f);
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s", hr_fixture("models/"));
    strncat(dir, name, sizeof dir - strlen(dir) - 1);
    HR_TRY(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2}, &f->be));
    HR_TRY(hr_model_load(dir, f->be, &f->m));
    snprintf(path, sizeof path, "%s/golden.safetensors", dir);
    HR_TRY(hr_st_open(path, &f->gold));
    snprintf(path, sizeof path, "%s/golden.json", dir);
    HR_TRY(hr_json_load_file(path, &f->cases));
    f->V = hr_model_cfg(f->m)->vocab;
    return NULL;
}

static void fixture_close(fixture *f) {
    hr_model_free(f->m);
    hr_backend_destroy(f->be);
    hr_st_close(f->gold);
    json_decref(f->cases);
}

/* Runs rows of one sequence: tokens[0..n) in chunks of `chunk`, logits of every position. */
static hr_err *run_chunked(fixture *f, const int32_t *tok, int n, int chunk, float *logits) {
    hr_kv_pool pool;
    HR_TRY(hr_kv_pool_create(&pool, f->m, (n + 3) / 4 + 1, 4));
    hr_kv_seq seq = {0};
    hr_err *err = hr_kv_seq_reserve(&pool, &seq, n);
    for (int p = 0; p < n && !err; p += chunk) {
        int len = n - p < chunk ? n - p : chunk;
        hr_row row = {tok + p, len, p, seq.blocks, HR_LOGITS_ALL, 0};
        err = hr_model_forward(f->m, &pool.store, &row, 1, logits + (size_t)p * f->V);
    }
    hr_kv_seq_release(&pool, &seq);
    if (!err && hr_kv_pool_used(&pool) != 0) err = hr_errf("pool leaked blocks");
    hr_kv_pool_destroy(&pool);
    return err;
}

static float max_abs(const float *a, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmaxf(m, fabsf(a[i]));
    return m;
}

static float max_diff(const float *a, const float *b, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmaxf(m, fabsf(a[i] - b[i]));
    return m;
}

static int argmax(const float *x, int n, float *margin) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    float second = -INFINITY;
    for (int i = 0; i < n; i++)
        if (i != best && x[i] > second) second = x[i];
    if (margin) *margin = x[best] - second;
    return best;
}

/* Greedy generation from the prompt with the KV path; compares with the reference tokens
 * up to the first position whose reference margin is below 0.05. */
static hr_err *check_greedy(fixture *f, const int32_t *ref_tok, const float *ref_logits, int T,
                            int prompt_len) {
    hr_kv_pool pool;
    HR_TRY(hr_kv_pool_create(&pool, f->m, T / 8 + 2, 8));
    hr_kv_seq seq = {0};
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)T);
    float *lg = malloc(sizeof(float) * (size_t)f->V);
    memcpy(tok, ref_tok, sizeof(int32_t) * (size_t)prompt_len);
    hr_err *err = hr_kv_seq_reserve(&pool, &seq, T);
    int pos = 0, n = prompt_len;
    while (!err && n < T) {
        hr_row row = {tok + pos, n - pos, pos, seq.blocks, HR_LOGITS_LAST, 0};
        err = hr_model_forward(f->m, &pool.store, &row, 1, lg);
        if (err) break;
        pos = n;
        float margin;
        argmax(ref_logits + (size_t)(n - 1) * f->V, f->V, &margin);
        tok[n] = argmax(lg, f->V, NULL);
        if (margin < 0.05f) break;
        if (tok[n] != ref_tok[n])
            err = hr_errf("greedy token %d: got %d, reference %d (margin %.3f)", n, tok[n],
                          ref_tok[n], margin);
        n++;
    }
    hr_kv_seq_release(&pool, &seq);
    hr_kv_pool_destroy(&pool);
    free(tok);
    free(lg);
    return err;
}

static void check_case(fixture *f, const json_t *c, const char *model) {
    const char *key = json_string_value(json_object_get(c, "key"));
    int prompt_len = (int)json_integer_value(json_object_get(c, "prompt_len"));
    char name[64];
    snprintf(name, sizeof name, "%s.tokens", key);
    const hr_tensor *tt = hr_st_get(f->gold, name);
    snprintf(name, sizeof name, "%s.logits", key);
    const hr_tensor *lt = hr_st_get(f->gold, name);
    HR_CHECK(tt && lt, "%s %s: golden tensors missing", model, key);
    int T = (int)tt->shape[0];
    const int32_t *tok = tt->data;
    const float *ref = lt->data;
    size_t n = (size_t)T * f->V;
    float *full = malloc(sizeof(float) * n), *inc = malloc(sizeof(float) * n);
    float tol = 1e-3f * fmaxf(1.0f, max_abs(ref, n));
    HR_CHECK_OK(run_chunked(f, tok, T, T, full));
    float d = max_diff(full, ref, n);
    HR_CHECK(d <= tol, "%s %s: full forward differs from reference by %g (tol %g)", model, key, d,
             tol);
    /* attention models: bit-identical whatever the chunking (attention.c); DeltaNet layers
     * use the chunked (WY) form for long chunks and the recurrent one for short ones */
    int chunks[] = {1, 3, 16}, hybrid = hr_arch_is_hybrid(hr_model_cfg(f->m)->arch);
    float chunk_tol = hybrid ? 1e-4f * fmaxf(1.0f, max_abs(ref, n)) : 0;
    for (int i = 0; i < 3; i++) {
        HR_CHECK_OK(run_chunked(f, tok, T, chunks[i], inc));
        d = max_diff(full, inc, n);
        HR_CHECK(d <= chunk_tol, "%s %s: chunk %d differs by %g", model, key, chunks[i], d);
    }
    HR_CHECK_OK(check_greedy(f, tok, ref, T, prompt_len));
    free(full);
    free(inc);
}

/* Two sequences in one step (one prefilling, one decoding) equal each run alone. */
static void check_batched(fixture *f, const char *model) {
    int32_t a[12], b[5];
    for (int i = 0; i < 12; i++)
        a[i] = (i * 37 + 11) % f->V;
    for (int i = 0; i < 5; i++)
        b[i] = (i * 53 + 7) % f->V;
    float ref_a[12 * 512], ref_b[5 * 512];
    HR_CHECK(f->V <= 512, "vocab too big for this test");
    HR_CHECK_OK(run_chunked(f, a, 12, 12, ref_a));
    HR_CHECK_OK(run_chunked(f, b, 5, 5, ref_b));
    hr_kv_pool pool;
    HR_CHECK_OK(hr_kv_pool_create(&pool, f->m, 8, 4));
    hr_kv_seq sa = {0}, sb = {0};
    HR_CHECK_OK(hr_kv_seq_reserve(&pool, &sa, 12));
    HR_CHECK_OK(hr_kv_seq_reserve(&pool, &sb, 5));
    float out[13 * 512];
    hr_row first = {b, 4, 0, sb.blocks, HR_LOGITS_NONE, 1};
    HR_CHECK_OK(hr_model_forward(f->m, &pool.store, &first, 1, NULL));
    hr_row rows[2] = {{a, 12, 0, sa.blocks, HR_LOGITS_ALL, 0},
                      {b + 4, 1, 4, sb.blocks, HR_LOGITS_LAST, 1}};
    HR_CHECK_OK(hr_model_forward(f->m, &pool.store, rows, 2, out));
    float da = max_diff(out, ref_a, (size_t)12 * f->V);
    float db = max_diff(out + 12 * f->V, ref_b + 4 * f->V, (size_t)f->V);
    hr_kv_seq_release(&pool, &sa);
    hr_kv_seq_release(&pool, &sb);
    hr_kv_pool_destroy(&pool);
    float tol = hr_arch_is_hybrid(hr_model_cfg(f->m)->arch) ? 1e-4f : 0;
    HR_CHECK(da <= tol && db <= tol, "%s: batched rows differ (%g, %g)", model, da, db);
}

static void test_models(void) {
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        fixture f;
        HR_CHECK_OK(fixture_open(models[i], &f));
        const json_t *cases = json_object_get(f.cases, "cases");
        size_t k;
        const json_t *c;
        json_array_foreach(cases, k, c) {
            const char *vis = json_string_value(json_object_get(c, "visibility"));
            if (vis && strcmp(vis, "public") == 0) check_case(&f, c, models[i]);
            if (hr_t_cur_failed) break;
        }
        if (!hr_t_cur_failed) check_batched(&f, models[i]);
        fixture_close(&f);
        if (hr_t_cur_failed) return;
        printf("  %s: all public cases match (%s kernels)\n", models[i],
               hr_cpu_level_name(hr_cpu()->level));
    }
}

static void test_models_avx512(void) {
    hr_cpu_set_level(HR_CPU_AVX512);
    test_models();
}

static void test_models_avx2(void) {
    hr_cpu_set_level(HR_CPU_AVX2);
    test_models();
}

static void test_models_generic(void) {
    hr_cpu_set_level(HR_CPU_GENERIC);
    test_models();
}

int main(void) {
    HR_RUN(test_models_avx512);
    HR_RUN(test_models_avx2);
    HR_RUN(test_models_generic);
    return hr_test_summary();
}
