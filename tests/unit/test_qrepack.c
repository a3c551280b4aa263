/* Repacked (row-interleaved) Q4_0 / Q5_0 / Q8_0 / Q4_K / Q5_K / Q6_K weights
 * (backend/cpu/qrepack.h): the layout reads back block for block; every SIMD tile equals the plain
 * C tile bit for bit, rows4 four rows1; the backend's matmul of a repacked weight (rows % 8 != 0, K
 * of 1, 2, 3 and 129 blocks) equals the C tiles plus the row dots of the tail rows bit for bit, is
 * batch invariant across T, thread counts, column splits and row views, and stays within the 8-bit
 * error bound of the f32 matmul, at every instruction-set level; embed of a repacked table gives
 * its dequantized rows. */
#include "backend/backend.h"
#include "backend/cpu/matmul_quant.h"
#include "backend/cpu/qdot.h"
#include "backend/cpu/qrepack.h"
#include "base/cpu.h"
#include "harness.h"
#include "qref.h"
#include "quant_err.h"
#include "tensor/quant.h"
#include "tensor/view.h"

enum { N_TYPES = 6 };
static const hr_dtype types[N_TYPES] = {HR_Q4_0, HR_Q5_0, HR_Q8_0, HR_Q4_K, HR_Q5_K, HR_Q6_K};
/* K per type: 1, 2, 3 and 129 blocks (the K-quants: 1, 2, 3 and 17 super-blocks) */
static const long Ks[N_TYPES][4] = {{32, 64, 96, 4096 + 32},     {32, 64, 96, 4096 + 32},
                                    {32, 64, 96, 4096 + 32},     {256, 512, 768, 4096 + 256},
                                    {256, 512, 768, 4096 + 256}, {256, 512, 768, 4096 + 256}};

static unsigned rng = 7;
static unsigned rnd(void) {
    rng = rng * 1103515245u + 12345u;
    return rng >> 8;
}
static float frand(void) { return (float)(rnd() & 0xffff) / 32768.0f - 1.0f; }

/* n elements of blocks of t with f16 scales in [-0.05, 0.05] (Q4_K / Q5_K: d, dmin; Q6_K's d
 * at 208), every other byte random or, with full, 0xff (the largest codes, 6-bit scales and
 * mins). */
static uint8_t *blocks(hr_dtype t, long n, int full) {
    int bb = hr_dtype_get(t)->block_bytes, scales = t == HR_Q4_K || t == HR_Q5_K ? 2 : 1;
    int at = t == HR_Q6_K ? 208 : 0;
    long nb = n / hr_dtype_get(t)->block;
    uint8_t *b = malloc((size_t)(nb * bb));
    for (long i = 0; i < nb * bb; i++)
        b[i] = full ? 0xff : (uint8_t)rnd();
    for (long i = 0; i < nb; i++)
        for (int j = 0; j < scales; j++) {
            uint16_t h = hr_f32_to_f16(frand() * 0.05f);
            memcpy(b + i * bb + at + 2 * j, &h, 2);
        }
    return b;
}

static uint8_t *random_blocks(hr_dtype t, long n) { return blocks(t, n, 0); }

/* Rows of a weight the backend repacks: at least its 1 MiB copy threshold, N % 8 = 5. */
static long rows_for(hr_dtype t, long K) {
    long row = (long)hr_dtype_bytes(t, K), n = ((1l << 20) / row + 8) / 8 * 8 + 5;
    return n;
}

static void test_block_roundtrip(void) {
    hr_pool *pool;
    HR_CHECK_OK(hr_pool_create(3, &pool));
    for (int i = 0; i < N_TYPES; i++) {
        hr_dtype t = types[i];
        long N = 8 * 5 + 3, K = Ks[i][2], nb = K / hr_dtype_get(t)->block;
        int bb = hr_dtype_get(t)->block_bytes;
        size_t bytes = hr_dtype_bytes(t, N * K);
        uint8_t *src = random_blocks(t, N * K), *a = malloc(bytes), *b = malloc(bytes), blk[256];
        hr_qrepack(NULL, t, src, a, N, K);
        hr_qrepack(pool, t, src, b, N, K);
        HR_CHECK(!memcmp(a, b, bytes), "%s: repacked on the pool differs", hr_dtype_name(t));
        hr_tensor w = {.data = a, .dtype = t, .ndim = 2, .shape = {N, K}, .row_tile = HR_QROWS};
        int ok = 1;
        for (long r = 0; r < N; r++)
            for (long k = 0; k < nb; k++) {
                hr_qrepack_block(&w, r, k, blk);
                ok &= !memcmp(blk, src + (r * nb + k) * bb, (size_t)bb);
            }
        HR_CHECK(ok, "%s: a repacked block does not read back", hr_dtype_name(t));
        HR_CHECK(memcmp(a, src, (size_t)(8 * bb)) != 0, "%s: not repacked", hr_dtype_name(t));
        free(src);
        free(a);
        free(b);
    }
    hr_pool_destroy(pool);
}

/* Every SIMD level's rows1 and rows4 against the C tile on one tile of K: random, and (full)
 * the integer sums' worst case, every code at its largest against x quantized to +-127. */
static void rows_variants(int full) {
    hr_cpu_level saved = hr_cpu()->level;
    hr_cpu_set_level(HR_CPU_AVX512);
    const hr_cpu_qdots *v[2];
    int n = 0;
    if (hr_cpu()->level >= HR_CPU_AVX2) v[n++] = &hr_cpu_qdots_avx2;
    if (hr_cpu()->avx512vnni) v[n++] = &hr_cpu_qdots_vnni;
    for (int i = 0; i < N_TYPES; i++)
        for (int k = 0; k < 4; k++) {
            hr_dtype t = types[i];
            long K = Ks[i][k], nb = K / 32;
            uint8_t *src = blocks(t, HR_QROWS * K, full), *tile = malloc(hr_dtype_bytes(t, 8 * K));
            hr_qrepack(NULL, t, src, tile, HR_QROWS, K);
            size_t xs = hr_qx_row_bytes(K) + sizeof(hr_q8x); /* tokens need not be adjacent */
            char *xq = aligned_alloc(64, 4 * xs);
            float *x = malloc(sizeof(float) * (size_t)K), ref[32], o[32];
            for (int r = 0; r < 4; r++) {
                for (long j = 0; j < K; j++)
                    x[j] = full ? (r % 2 ? -1.0f : 1.0f)
                                : frand() * (float)(r + 1) * (j % 5 == 0 ? 3.0f : 1.0f);
                hr_qx_quantize(t, x, xq + r * xs, K);
                hr_cpu_qdots_ref.rows1[t](tile, xq + r * xs, xs, nb, ref + 8 * r);
            }
            for (int j = 0; j < n; j++) {
                HR_CHECK(v[j]->rows1[t] && v[j]->rows4[t], "%s lacks %s tiles", v[j]->name,
                         hr_dtype_name(t));
                for (int r = 0; r < 4; r++)
                    v[j]->rows1[t](tile, xq + r * xs, xs, nb, o + 8 * r);
                HR_CHECK(!memcmp(o, ref, sizeof o), "%s rows1 %s K=%ld%s differs from C",
                         v[j]->name, hr_dtype_name(t), K, full ? " (full codes)" : "");
                v[j]->rows4[t](tile, xq, xs, nb, o);
                HR_CHECK(!memcmp(o, ref, sizeof o), "%s rows4 %s K=%ld%s differs from C",
                         v[j]->name, hr_dtype_name(t), K, full ? " (full codes)" : "");
            }
            free(src);
            free(tile);
            free(xq);
            free(x);
        }
    hr_cpu_set_level(saved);
}

static void test_rows_variants(void) {
    rows_variants(0);
    rows_variants(1);
}

static hr_backend *backend(int threads) {
    hr_backend *be = NULL;
    hr_err *e = hr_backend_cpu_create(&(hr_cpu_options){.n_threads = threads}, &be);
    if (e) hr_err_free(e);
    return be;
}

/* y[T, N] through the unrepacked path: this level's row dot of every row of the row-major
 * weight wq. */
static void row_dots(float *y, const float *x, const uint8_t *wq, hr_dtype t, long N, long K,
                     int T) {
    size_t xs = hr_qx_row_bytes(K), rb = hr_dtype_bytes(t, K);
    char *xq = aligned_alloc(64, xs);
    for (int r = 0; r < T; r++) {
        hr_qx_quantize(t, x + r * K, xq, K);
        for (long n = 0; n < N; n++)
            y[r * N + n] = hr_cpu_qdots_get()->dot[t](wq + n * rb, xq, K / 32);
    }
    free(xq);
}

/* Columns of y split at odd places over hr_qmm_cols equal the matmul's. */
static int split_matches(hr_backend *be, const hr_tensor *w, const float *x, int T,
                         const float *want) {
    long N = w->shape[0], K = w->shape[1];
    hr_pool *pool;
    hr_err *e = hr_pool_create(1, &pool);
    if (e) {
        hr_err_free(e);
        return 0;
    }
    void *scratch = aligned_alloc(64, (hr_qmm_scratch_bytes(T, K, 1) + 63) / 64 * 64);
    float *y = malloc(sizeof(float) * (size_t)(T * N));
    hr_qmm q;
    hr_qmm_prepare(&q, pool, x, w, T, scratch);
    long cut[] = {0, 3, 13, 21, N - 2, N};
    for (int i = 0; i < 5; i++)
        hr_qmm_cols(&q, y, cut[i], cut[i + 1], 0);
    int ok = !memcmp(y, want, sizeof(float) * (size_t)(T * N));
    free(scratch);
    free(y);
    hr_pool_destroy(pool);
    return ok;
}

enum { MAX_T = 64 };

/* One type and K on a backend of `threads`: the checks of the file comment; y64 holds the
 * T = 64 result of the first thread count and is compared on the others. */
static void check_matmul(hr_backend *be, hr_dtype t, long K, int first, float *y64) {
    long N = rows_for(t, K);
    rng = (unsigned)(K * 31 + t); /* the same weight and x on every thread count */
    uint8_t *wq = random_blocks(t, N * K);
    float *wf = malloc(sizeof(float) * (size_t)(N * K)), *x = malloc(sizeof(float) * MAX_T * K);
    float *y1 = malloc(sizeof(float) * MAX_T * N), *y = malloc(sizeof(float) * MAX_T * N);
    hr_dequant_row(t, wq, wf, N * K);
    for (long i = 0; i < MAX_T * K; i++)
        x[i] = frand();
    float *yr = malloc(sizeof(float) * 5 * (size_t)N);
    row_dots(yr, x, wq, t, N, K, 5); /* before upload drops wq's pages */
    hr_tensor hq = {.data = wq, .dtype = t, .ndim = 2, .shape = {N, K}}, dq;
    /* upload drops the source pages of what it copies: the f32 weight goes from a copy */
    float *wf_up = malloc(sizeof(float) * (size_t)(N * K));
    memcpy(wf_up, wf, sizeof(float) * (size_t)(N * K));
    hr_tensor hf = {.data = wf_up, .dtype = HR_F32, .ndim = 2, .shape = {N, K}}, df;
    HR_CHECK_OK(be->vt->upload(be, &hq, &dq));
    HR_CHECK_OK(be->vt->upload(be, &hf, &df));
    HR_CHECK(dq.row_tile == HR_QROWS, "%s [%ld, %ld] was not repacked", hr_dtype_name(t), N, K);
    const char *name = hr_dtype_name(t);
    for (int r = 0; r < MAX_T; r++)
        be->vt->matmul(be, y1 + r * N, x + r * K, &dq, NULL, 1);
    if (first) {
        hr_test_qref(y, x, &dq, 5);
        HR_CHECK(!memcmp(y, y1, sizeof(float) * 5 * (size_t)N), "%s K=%ld: not the C tiles", name,
                 K);
        float err = hr_test_quant_err(y1, yr, wf, x, 5, N, K);
        HR_CHECK(err < 1e-6f, "%s K=%ld: %g from the row dots (float rounding only)", name, K, err);
        be->vt->matmul(be, y, x, &df, NULL, 5);
        err = hr_test_quant_err(y1, y, wf, x, 5, N, K);
        HR_CHECK(err < 1.0f / 127, "%s K=%ld: error %g", name, K, err);
        HR_CHECK(split_matches(be, &dq, x, 5, y1), "%s K=%ld: columns split at odd places", name,
                 K);
        hr_tensor v, vs, vb; /* a view from the second tile to the end: the same rows */
        hr_tensor_rows(&dq, 8, N - 8, &v, &vs, &vb);
        be->vt->matmul(be, y, x, &v, NULL, 1);
        HR_CHECK(!memcmp(y, y1 + 8, sizeof(float) * (size_t)(N - 8)),
                 "%s K=%ld: a row view differs", name, K);
    }
    int Ts[] = {3, 4, 5, MAX_T};
    for (int i = 0; i < 4; i++) {
        be->vt->matmul(be, y, x, &dq, NULL, Ts[i]);
        HR_CHECK(!memcmp(y, y1, sizeof(float) * (size_t)(Ts[i] * N)),
                 "%s K=%ld T=%d: a token differs from itself alone", name, K, Ts[i]);
    }
    if (first)
        memcpy(y64, y, sizeof(float) * MAX_T * (size_t)N);
    else
        HR_CHECK(!memcmp(y64, y, sizeof(float) * MAX_T * (size_t)N),
                 "%s K=%ld: differs across thread counts", name, K);
    be->vt->release(be, &dq);
    be->vt->release(be, &df);
    free(wq);
    free(wf);
    free(wf_up);
    free(x);
    free(y1);
    free(y);
    free(yr);
}

static void test_matmul_repacked(void) {
    int threads[] = {1, 2, 3};
    float *y64[N_TYPES][4];
    for (int i = 0; i < N_TYPES; i++)
        for (int k = 0; k < 4; k++)
            y64[i][k] = malloc(sizeof(float) * MAX_T * (size_t)rows_for(types[i], Ks[i][k]));
    for (int th = 0; th < 3; th++) {
        hr_backend *be = backend(threads[th]);
        HR_CHECK(be, "no backend");
        for (int i = 0; i < N_TYPES; i++)
            for (int k = 0; k < 4; k++)
                check_matmul(be, types[i], Ks[i][k], th == 0, y64[i][k]);
        hr_backend_destroy(be);
    }
    for (int i = 0; i < N_TYPES; i++)
        for (int k = 0; k < 4; k++)
            free(y64[i][k]);
}

/* The same on the plain C tiles (no rows4: four rows1 per group of tokens) and on AVX2. */
static void test_matmul_levels(void) {
    hr_cpu_level saved = hr_cpu()->level, levels[] = {HR_CPU_GENERIC, HR_CPU_AVX2};
    for (int l = 0; l < 2 && levels[l] <= saved; l++) {
        hr_cpu_set_level(levels[l]);
        hr_backend *be = backend(2);
        HR_CHECK(be, "no backend");
        for (int i = 0; i < N_TYPES; i++)
            for (int k = 0; k < 4; k++) {
                float *y64 = malloc(sizeof(float) * MAX_T * (size_t)rows_for(types[i], Ks[i][k]));
                check_matmul(be, types[i], Ks[i][k], 1, y64);
                free(y64);
            }
        hr_backend_destroy(be);
    }
    hr_cpu_set_level(saved);
}

/* embed of a repacked table of type t gives its dequantized rows. */
static void check_embed(hr_dtype t) {
    hr_backend *be = backend(2);
    long D = 1024, V = rows_for(t, D);
    uint8_t *q = random_blocks(t, V * D);
    float *ref = malloc(sizeof(float) * (size_t)(V * D)), *y = malloc(sizeof(float) * 3 * D);
    hr_dequant_row(t, q, ref, V * D);
    hr_tensor host = {.data = q, .dtype = t, .ndim = 2, .shape = {V, D}}, dev;
    HR_CHECK_OK(be->vt->upload(be, &host, &dev));
    HR_CHECK(dev.row_tile == HR_QROWS, "the %s table was not repacked", hr_dtype_name(t));
    int32_t tok[3] = {13, 0, (int32_t)V - 1}, zero[3] = {0};
    hr_step_meta meta = {.n_tokens = 3, .n_rows = 1, .tokens = tok, .pos = zero, .row = zero};
    HR_CHECK_OK(be->vt->step_begin(be, &meta));
    be->vt->embed(be, y, &dev, 1.0f);
    int ok = 1;
    for (int i = 0; i < 3; i++)
        ok &= !memcmp(y + i * D, ref + tok[i] * D, sizeof(float) * (size_t)D);
    be->vt->release(be, &dev);
    free(q);
    free(ref);
    free(y);
    hr_backend_destroy(be);
    HR_CHECK(ok, "embed of a repacked %s table differs from its dequantized rows",
             hr_dtype_name(t));
}

/* Q4_0 and Q6_K (the tied table of Q4_K_M / Q5_K_M / Q6_K files). */
static void test_embed_repacked(void) {
    check_embed(HR_Q4_0);
    check_embed(HR_Q6_K);
}

int main(void) {
    HR_RUN(test_block_roundtrip);
    HR_RUN(test_rows_variants);
    HR_RUN(test_matmul_repacked);
    HR_RUN(test_matmul_levels);
    HR_RUN(test_embed_repacked);
    return hr_test_summary();
}
