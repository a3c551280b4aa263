/* The KV store's sizes and dtypes: for every fixture model and KV dtype, the bytes per token x
 * blocks (+ recurrent state) that pool sizing and `hearth fit` count are exactly what the CPU
 * backend's kv_create allocates, and fit's config-only geometry equals the loaded model's;
 * narrow KV (bf16, f16, q8_0, q4_0) rows round trip within their precision, the SIMD loaders equal
 * the plain C one bit for bit, and attention over a narrow store equals attention over an
 * f32 store of the same (widened) values at every kernel level and on both paths; the
 * numerics choice (model dtype x backend caps x flags). */
#include <dirent.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"
#include "engine/kv_pool.h"
#include "engine/numerics.h"
#include "engine/open.h"
#include "harness.h"
#include "hearth/hearth.h"

static unsigned rng = 777;
static float frand(void) {
    rng = rng * 1103515245u + 12345u;
    return ((float)((rng >> 8) & 0xffff) / 65536.0f) * 2.0f - 1.0f;
}

static const hr_dtype kv_dtypes[] = {HR_F32, HR_BF16, HR_F16, HR_Q8_0, HR_Q4_0};

static int blocked(hr_dtype t) { return t == HR_Q8_0 || t == HR_Q4_0; }

/* One model: its pool's allocation against the formula, for every KV dtype. */
static void check_model(const char *dir) {
    hr_opened_model om;
    hr_open_options oo = {.n_threads = 1, .no_tokenizer = 1, .weights_in_place = 1};
    HR_CHECK_OK(hr_model_open(dir, &oo, &om));
    hr_model_config c;
    hr_err *err = hr_config_load(dir, &c);
    for (size_t d = 0; !err && d < sizeof kv_dtypes / sizeof *kv_dtypes; d++) {
        hr_model_set_kv_dtype(om.model, kv_dtypes[d]);
        hr_kv_store fit;
        int hd[HR_MAX_LAYERS];
        hr_config_kv_shape(&c, kv_dtypes[d], &fit, hd);
        hr_kv_pool pool;
        hr_err *e = hr_kv_pool_create_slots(&pool, om.model, 5, 16, 3, 2);
        if (e && blocked(kv_dtypes[d]) && hr_kv_dtype_check(&fit)) { /* head dims not x32 */
            HR_CHECK(strstr(hr_err_msg(e), "blocks of 32"), "%s: %s", dir, hr_err_msg(e));
            hr_err_free(e);
            continue;
        }
        if (e) {
            hr_model_close(&om);
            HR_CHECK_OK(e);
        }
        const hr_kv_store *s = &pool.store;
        size_t per_token = hr_kv_token_bytes(s), state = hr_kv_state_bytes(s);
        size_t want = per_token * 5 * 16 + (s->n_state_layers ? state * 5 : 0);
        int same_fit = hr_kv_token_bytes(&fit) == per_token && hr_kv_state_bytes(&fit) == state;
        size_t got = s->bytes, formula = hr_kv_store_bytes(s);
        hr_kv_pool_destroy(&pool);
        if (got != want || formula != want || !same_fit) hr_model_close(&om);
        HR_CHECK(got == want && formula == want,
                 "%s %s: kv_create %zu bytes, formula %zu, want %zu", dir,
                 hr_dtype_name(kv_dtypes[d]), got, formula, want);
        HR_CHECK(same_fit, "%s %s: fit's geometry %zu + %zu bytes, the model's %zu + %zu", dir,
                 hr_dtype_name(kv_dtypes[d]), hr_kv_token_bytes(&fit), hr_kv_state_bytes(&fit),
                 per_token, state);
    }
    hr_model_close(&om);
    HR_CHECK_OK(err);
}

static void test_every_fixture_allocates_its_formula(void) {
    const char *root = hr_fixture("models");
    DIR *d = opendir(root);
    HR_CHECK(d, "cannot open %s", root);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
        check_model(dir);
        n++;
        if (hr_t_cur_failed) break;
    }
    closedir(d);
    HR_CHECK(n >= 12, "only %d fixture models", n);
}

/* The per-layer geometry the issue names: one KV layer of four in tiny-qwen3_next, two
 * KV-shared layers and a 64-wide global head in tiny-gemma4, a plain dense model. */
static void test_known_sizes(void) {
    struct {
        const char *model;
        size_t f32, q8;
    } cases[] = {{"models/tiny-qwen3_next", 512, 136},
                 {"models/tiny-gemma4", 2560, 680},
                 {"models/brown-llama-8m", 3072, 816}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hr_model_config c;
        HR_CHECK_OK(hr_config_load(hr_fixture(cases[i].model), &c));
        hr_kv_store s;
        int hd[HR_MAX_LAYERS];
        hr_config_kv_shape(&c, HR_F32, &s, hd);
        size_t f32 = hr_kv_token_bytes(&s);
        hr_config_kv_shape(&c, HR_BF16, &s, hd);
        size_t bf16 = hr_kv_token_bytes(&s);
        hr_config_kv_shape(&c, HR_Q8_0, &s, hd);
        size_t q8 = hr_kv_token_bytes(&s);
        HR_CHECK(f32 == cases[i].f32 && bf16 == f32 / 2 && q8 == cases[i].q8,
                 "%s: %zu / %zu / %zu bytes per token (f32 / bf16 / q8_0)", cases[i].model, f32,
                 bf16, q8);
    }
}

/* A q8_0 store of head_dim 48 is refused with a message naming the fix. */
static void test_q8_needs_head_dim_multiple_of_32(void) {
    hr_backend *be;
    HR_CHECK_OK(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 1}, &be));
    hr_kv_store kv = {.dtype = HR_Q8_0,
                      .n_layers = 1,
                      .n_blocks = 2,
                      .block_size = 16,
                      .n_kv_heads = 2,
                      .head_dim = 48};
    hr_err *err = be->vt->kv_create(be, &kv);
    hr_backend_destroy(be);
    HR_CHECK(err && strstr(hr_err_msg(err), "head_dim 48") && strstr(hr_err_msg(err), "--kv-dtype"),
             "got %s", err ? hr_err_msg(err) : "success");
    hr_err_free(err);
}

/* Stored rows come back within their precision; every SIMD loader equals the reference. */
static void test_rows_round_trip(void) {
    int ns[] = {1, 7, 32, 33, 64, 96, 128, 160, 512};
    const hr_cpu_kernels *levels[] = {&hr_cpu_kernels_ref, &hr_cpu_kernels_avx2,
                                      &hr_cpu_kernels_avx512};
    hr_cpu_set_level(HR_CPU_AVX512);
    int n_levels = 1 + (hr_cpu()->level >= HR_CPU_AVX2) + (hr_cpu()->level >= HR_CPU_AVX512);
    float x[512], y[512], z[528];
    uint8_t row[4 * 512];
    for (size_t d = 1; d < sizeof kv_dtypes / sizeof *kv_dtypes; d++)
        for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
            int n = ns[k];
            if (blocked(kv_dtypes[d]) && n % 32) continue;
            float amax = 0;
            for (int i = 0; i < n; i++) {
                x[i] = frand() * (i % 5 == 0 ? 8.0f : 1.0f);
                amax = fmaxf(amax, fabsf(x[i]));
            }
            hr_kv_row_store(row, x, kv_dtypes[d], n);
            hr_kv_row_load_ref(y, row, kv_dtypes[d], n);
            for (int i = 0; i < n; i++) {
                float tol = kv_dtypes[d] == HR_BF16   ? fabsf(x[i]) / 256
                            : kv_dtypes[d] == HR_F16  ? fabsf(x[i]) / 2048 + 1e-7f
                            : kv_dtypes[d] == HR_Q8_0 ? amax / 127 / 2 * 1.01f
                                                      : amax / 8 * 1.01f; /* -max clamps to 7 d */
                HR_CHECK(fabsf(y[i] - x[i]) <= tol, "%s n=%d [%d]: %g -> %g",
                         hr_dtype_name(kv_dtypes[d]), n, i, x[i], y[i]);
            }
            for (int l = 1; l < n_levels; l++) {
                memset(z, 0xff, sizeof z);
                levels[l]->kv_load(z, row, kv_dtypes[d], n);
                HR_CHECK(!memcmp(y, z, sizeof(float) * (size_t)n) && z[n] != z[n],
                         "%s %s n=%d: loader differs from the reference", levels[l]->name,
                         hr_dtype_name(kv_dtypes[d]), n);
            }
        }
}

/* Attention over a narrow store vs an f32 store holding the widened values, bit for bit:
 * prefill (P query tokens, the blocked path) and one decode token after them. */
enum { P = 70, KVH = 2, HEADS = 4, HD = 64, BS = 16 };

static void attend(hr_backend *be, hr_kv_store *kv, const float *k, const float *v, const float *q,
                   float *out_prefill, float *out_decode) {
    int32_t tok[P], pos[P], row[P], qs[2] = {0, P}, table[(P + BS) / BS], slot = 0;
    for (int i = 0; i < P; i++)
        tok[i] = 0, pos[i] = i, row[i] = 0;
    for (int i = 0; i < (P + BS) / BS; i++)
        table[i] = i;
    hr_step_meta m = {P, 1,   tok, pos, row, qs, (P + BS) / BS, table, &slot, HR_HEAD_LOGITS,
                      0, NULL};
    hr_attn_params ap = {0, HEADS, KVH, HD, 0.125f, 0, 0};
    be->vt->step_begin(be, &m);
    be->vt->kv_write(be, kv, 0, k, v);
    be->vt->attention(be, out_prefill, q, kv, &ap);
    int32_t last = P - 1, qs1[2] = {0, 1};
    hr_step_meta m1 = {1, 1,   tok, &last, row, qs1, (P + BS) / BS, table, &slot, HR_HEAD_LOGITS,
                       0, NULL};
    be->vt->step_begin(be, &m1);
    be->vt->attention(be, out_decode, q + (size_t)(P - 1) * HEADS * HD, kv, &ap);
}

static void test_attention_narrow_equals_widened(void) {
    static float k[P * KVH * HD], v[P * KVH * HD], kw[P * KVH * HD], vw[P * KVH * HD];
    static float q[P * HEADS * HD], o1[P * HEADS * HD], o2[P * HEADS * HD], o3[P * HEADS * HD];
    static float d1[HEADS * HD], d2[HEADS * HD], d3[HEADS * HD];
    for (int i = 0; i < P * KVH * HD; i++)
        k[i] = frand(), v[i] = frand();
    for (int i = 0; i < P * HEADS * HD; i++)
        q[i] = frand();
    hr_cpu_level levels[] = {HR_CPU_GENERIC, HR_CPU_AVX2, HR_CPU_AVX512};
    hr_cpu_set_level(HR_CPU_AVX512);
    hr_cpu_level hw = hr_cpu()->level;
    for (size_t d = 1; d < sizeof kv_dtypes / sizeof *kv_dtypes; d++) {
        uint8_t rb[4 * HD];
        for (int r = 0; r < P * KVH; r++) { /* the values a narrow store gives back */
            hr_kv_row_store(rb, k + r * HD, kv_dtypes[d], HD);
            hr_kv_row_load_ref(kw + r * HD, rb, kv_dtypes[d], HD);
            hr_kv_row_store(rb, v + r * HD, kv_dtypes[d], HD);
            hr_kv_row_load_ref(vw + r * HD, rb, kv_dtypes[d], HD);
        }
        for (size_t l = 0; l < 3 && levels[l] <= hw; l++) {
            hr_cpu_set_level(levels[l]);
            hr_backend *be;
            HR_CHECK_OK(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2}, &be));
            hr_kv_store narrow = {.dtype = kv_dtypes[d],
                                  .n_layers = 1,
                                  .n_blocks = (P + BS) / BS,
                                  .block_size = BS,
                                  .n_kv_heads = KVH,
                                  .head_dim = HD};
            hr_kv_store wide = narrow;
            wide.dtype = HR_F32;
            hr_err *err = be->vt->kv_create(be, &narrow);
            if (!err) err = be->vt->kv_create(be, &wide);
            if (!err) {
                attend(be, &wide, k, v, q, o3, d3); /* unrounded: must differ */
                attend(be, &narrow, k, v, q, o1, d1);
                attend(be, &wide, kw, vw, q, o2, d2);
            }
            be->vt->kv_destroy(be, &narrow);
            be->vt->kv_destroy(be, &wide);
            hr_backend_destroy(be);
            HR_CHECK_OK(err);
            HR_CHECK(!memcmp(o1, o2, sizeof o1) && !memcmp(d1, d2, sizeof d1),
                     "%s at level %d: narrow attention differs from the widened f32 one",
                     hr_dtype_name(kv_dtypes[d]), (int)levels[l]);
            HR_CHECK(memcmp(o1, o3, sizeof o1) && memcmp(d1, d3, sizeof d1),
                     "%s: narrow KV changed nothing", hr_dtype_name(kv_dtypes[d]));
        }
    }
    hr_cpu_set_level(HR_CPU_AVX512);
}

/* The one choice: model dtype x backend caps x flags. */
static void test_numerics_choice(void) {
    hr_backend_caps cpu, cuda = {1u << HR_BF16, HR_BF16, HR_BF16, 0},
                         gpu = {(1u << HR_F32) | (1u << HR_BF16), HR_F32, HR_BF16, 1};
    HR_CHECK_OK(hr_backend_caps_of("cpu", &cpu));
    struct {
        hr_numerics_req req;
        hr_dtype weights;
        const hr_backend_caps *caps;
        int bf16;
        hr_dtype kv;
    } cases[] = {
        {{HR_COMPUTE_AUTO, HR_KV_AUTO, 1}, HR_BF16, &cpu, 1, HR_BF16}, /* serve's default */
        {{HR_COMPUTE_AUTO, HR_KV_AUTO, 1}, HR_F32, &cpu, 0, HR_F32},   /* f32 checkpoint */
        {{HR_COMPUTE_AUTO, HR_KV_AUTO, 1}, HR_F16, &cpu, 0, HR_F32},   /* f16 checkpoint */
        {{HR_COMPUTE_AUTO, HR_KV_AUTO, 0}, HR_BF16, &cpu, 0, HR_F32},  /* --exact, logits */
        {{HR_COMPUTE_F32, HR_KV_AUTO, 1}, HR_BF16, &cpu, 0, HR_BF16},  /* --compute f32 */
        {{HR_COMPUTE_AUTO, HR_KV_Q8_0, 1}, HR_BF16, &cpu, 1, HR_Q8_0}, /* --kv-dtype q8_0 */
        {{HR_COMPUTE_BF16, HR_KV_F16, 0}, HR_F32, &cpu, 1, HR_F16},
        {{HR_COMPUTE_AUTO, HR_KV_AUTO, 0}, HR_BF16, &cuda, 0, HR_BF16}, /* CUDA: no f32 KV */
        {{HR_COMPUTE_AUTO, HR_KV_AUTO, 1}, HR_Q4_K, &cpu, 0, HR_F32},   /* GGUF on the CPU */
        {{HR_COMPUTE_AUTO, HR_KV_AUTO, 1}, HR_Q4_K, &gpu, 1, HR_BF16},  /* GGUF on a GPU: fast */
        {{HR_COMPUTE_AUTO, HR_KV_AUTO, 0}, HR_Q8_0, &gpu, 0, HR_F32},   /* --exact */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hr_numerics n;
        HR_CHECK_OK(hr_numerics_choose(&cases[i].req, cases[i].weights, cases[i].caps, &n));
        HR_CHECK(n.compute_bf16 == cases[i].bf16 && n.kv == cases[i].kv, "case %zu: %d %s", i,
                 n.compute_bf16, hr_dtype_name(n.kv));
    }
    hr_numerics n;
    hr_err *err =
        hr_numerics_choose(&(hr_numerics_req){HR_COMPUTE_AUTO, HR_KV_F32, 0}, HR_BF16, &cuda, &n);
    HR_CHECK(err && strstr(hr_err_msg(err), "bf16 only"), "f32 KV on CUDA: %s",
             err ? hr_err_msg(err) : "accepted");
    hr_err_free(err);
}

int main(void) {
    HR_RUN(test_every_fixture_allocates_its_formula);
    HR_RUN(test_known_sizes);
    HR_RUN(test_q8_needs_head_dim_multiple_of_32);
    HR_RUN(test_rows_round_trip);
    HR_RUN(test_attention_narrow_equals_widened);
    HR_RUN(test_numerics_choice);
    return hr_test_summary();
}
