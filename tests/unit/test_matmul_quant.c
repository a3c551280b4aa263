/* Quantized weights on the CPU backend: every SIMD 8-bit dot product against the plain C
 * one; matmul of every GGUF block type at odd sizes and thread counts, bit for bit the f32
 * matmul of the dequantized weight (types without a dot) or the dot of the q8 activations
 * (types with one), within a measured error of f32, and batch invariant; embed of a
 * quantized table; the refusal of rows that are not whole blocks. */
#include "backend/backend.h"
#include "backend/cpu/qdot.h"
#include "base/cpu.h"
#include "harness.h"
#include "qref.h"
#include "quant_err.h"
#include "tensor/quant.h"

static const hr_dtype all_types[] = {HR_Q8_0, HR_Q4_0, HR_Q4_1, HR_Q5_0, HR_Q5_1,   HR_Q2_K,
                                     HR_Q3_K, HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_NL, HR_IQ4_XS};
enum { N_TYPES = sizeof all_types / sizeof *all_types };

static unsigned rng = 99;
static unsigned rnd(void) {
    rng = rng * 1103515245u + 12345u;
    return rng >> 8;
}
static float frand(void) { return (float)(rnd() & 0xffff) / 32768.0f - 1.0f; }

/* Byte offsets of each type's f16 scales (as tests/data/quant/gen_refs.py). */
static int scale_offsets(hr_dtype t, int *off) {
    switch (t) {
    case HR_Q4_1:
    case HR_Q5_1:
    case HR_Q4_K:
    case HR_Q5_K: off[0] = 0, off[1] = 2; return 2;
    case HR_Q2_K: off[0] = 80, off[1] = 82; return 2;
    case HR_Q3_K: off[0] = 108; return 1;
    case HR_Q6_K: off[0] = 208; return 1;
    default: off[0] = 0; return 1;
    }
}

/* n elements of random blocks with scales in [-0.05, 0.05]. */
static void *random_blocks(hr_dtype t, long n) {
    const hr_dtype_info *info = hr_dtype_get(t);
    long nb = n / info->block;
    uint8_t *b = malloc((size_t)nb * info->block_bytes);
    for (long i = 0; i < nb * info->block_bytes; i++)
        b[i] = (uint8_t)rnd();
    int off[2], k = scale_offsets(t, off);
    for (long i = 0; i < nb; i++)
        for (int j = 0; j < k; j++) {
            uint16_t h = hr_f32_to_f16(frand() * 0.05f);
            memcpy(b + i * info->block_bytes + off[j], &h, 2);
        }
    return b;
}

static hr_backend *backend(int threads) {
    hr_backend *be = NULL;
    hr_err *e = hr_backend_cpu_create(&(hr_cpu_options){.n_threads = threads}, &be);
    if (e) hr_err_free(e);
    return be;
}

/* The matmul's definition: where this level has a dot for t, hr_test_qref on the uploaded
 * weight dq; else the f32 matmul of w dequantized (wf). */
static void reference(hr_backend *be, float *y, const float *x, const float *wf,
                      const hr_tensor *dq, int T, long N, long K) {
    if (hr_cpu_qdots_get()->dot[dq->dtype]) {
        hr_test_qref(y, x, dq, T);
        return;
    }
    hr_tensor host = {.data = (void *)wf, .dtype = HR_F32, .ndim = 2, .shape = {N, K}}, dev;
    hr_err *e = be->vt->upload(be, &host, &dev);
    if (e)
        hr_err_free(e);
    else
        be->vt->matmul(be, y, x, &dev, NULL, T);
}

static float worst_err; /* largest |y - f32 y| / sum_k |w_k x_k| of the 8-bit paths */

/* y = x w^T with w of type t [N, K]: equals the reference bit for bit, each row of y equals
 * that row computed alone, and y is close to the f32 matmul of w dequantized. */
static int check_matmul(hr_backend *be, hr_dtype t, int T, long N, long K) {
    void *wq = random_blocks(t, N * K);
    float *wf = malloc(sizeof(float) * (size_t)(N * K)),
          *x = malloc(sizeof(float) * (size_t)(T * K));
    float *y0 = malloc(sizeof(float) * (size_t)(T * N)),
          *y1 = malloc(sizeof(float) * (size_t)(T * N));
    float *yf = malloc(sizeof(float) * (size_t)(T * N));
    hr_dequant_row(t, wq, wf, N * K);
    for (long i = 0; i < T * K; i++)
        x[i] = frand();
    hr_tensor host_q = {.data = wq, .dtype = t, .ndim = 2, .shape = {N, K}};
    hr_tensor host_f = {.data = wf, .dtype = HR_F32, .ndim = 2, .shape = {N, K}};
    hr_tensor dq, df;
    int ok = 0;
    hr_err *e = be->vt->upload(be, &host_q, &dq);
    if (!e) e = be->vt->upload(be, &host_f, &df);
    if (!e) {
        reference(be, y0, x, wf, &dq, T, N, K);
        be->vt->matmul(be, y1, x, &dq, NULL, T);
        ok = memcmp(y0, y1, sizeof(float) * (size_t)(T * N)) == 0;
        for (int r = 0; ok && r < T; r++) {
            be->vt->matmul(be, y0, x + r * K, &dq, NULL, 1);
            ok = memcmp(y0, y1 + r * N, sizeof(float) * (size_t)N) == 0;
        }
        be->vt->matmul(be, yf, x, &df, NULL, T);
        worst_err = fmaxf(worst_err, hr_test_quant_err(y1, yf, wf, x, T, N, K));
        be->vt->release(be, &dq);
        be->vt->release(be, &df);
    }
    if (e) hr_err_free(e);
    free(wq);
    free(wf);
    free(x);
    free(y0);
    free(y1);
    free(yf);
    return ok;
}

static void test_matmul_every_type(void) {
    int Ts[] = {1, 2, 7, 9}, threads[] = {1, 2, 3};
    long Ns[] = {1, 17, 40};
    worst_err = 0;
    for (int th = 0; th < 3; th++) {
        hr_backend *be = backend(threads[th]);
        HR_CHECK(be, "no backend");
        for (int i = 0; i < N_TYPES; i++)
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 3; b++) {
                    long K = hr_dtype_get(all_types[i])->block * (b + 1);
                    int ok = check_matmul(be, all_types[i], Ts[a], Ns[b], K);
                    if (!ok) hr_backend_destroy(be);
                    HR_CHECK(ok,
                             "%s T=%d N=%ld K=%ld threads=%d: differs from its reference or alone",
                             hr_dtype_name(all_types[i]), Ts[a], Ns[b], K, threads[th]);
                }
        hr_backend_destroy(be);
    }
    printf("  8-bit activations: max |y - y_f32| / sum |w x| = %.2g (%s)\n", worst_err,
           hr_cpu_qdots_get()->name);
    HR_CHECK(worst_err < 1.0f / 127, "8-bit path error %g", worst_err);
}

/* dot4 of four tokens is bit for bit four dots (what keeps a tiled prefill batch invariant). */
static int dot4_matches(const hr_cpu_qdots *v, hr_dtype t, const void *w, long K) {
    if (!v->dot4[t]) return 1;
    long nb = K / 32;
    size_t xs =
        hr_qx_row_bytes(K) + 3 * sizeof(hr_q8k); /* the tokens' blocks need not be adjacent */
    float *x = malloc(sizeof(float) * (size_t)K);
    char *xq = aligned_alloc(64, (4 * xs + 63) / 64 * 64);
    for (int r = 0; r < 4; r++) {
        for (long k = 0; k < K; k++)
            x[k] = frand() * (float)(r + 1);
        hr_qx_quantize(t, x, xq + r * xs, K);
    }
    float o[4];
    v->dot4[t](w, xq, xs, nb, o);
    int ok = 1;
    for (int r = 0; r < 4; r++) {
        float d = v->dot[t](w, xq + r * xs, nb);
        ok &= memcmp(&d, &o[r], sizeof d) == 0;
    }
    free(x);
    free(xq);
    return ok;
}

/* The SIMD qdot tables this CPU runs (the level raised to its best for the test; the caller
 * restores it), into v; returns how many. */
static int simd_variants(const hr_cpu_qdots *v[2]) {
    int n = 0;
    hr_cpu_set_level(HR_CPU_AVX512);
    if (hr_cpu()->level >= HR_CPU_AVX2) v[n++] = &hr_cpu_qdots_avx2;
    if (hr_cpu()->avx512vnni) v[n++] = &hr_cpu_qdots_vnni;
    return n;
}

/* Every SIMD dot against the plain C one on random blocks, rows of 1..9 blocks of the type;
 * each SIMD dot4 against its dot. */
static void test_qdot_variants(void) {
    const hr_cpu_qdots *v[2];
    hr_cpu_level saved = hr_cpu()->level;
    int n = simd_variants(v);
    for (int i = 0; i < N_TYPES; i++) {
        hr_qdot_fn ref = hr_cpu_qdots_ref.dot[all_types[i]];
        if (!ref) continue;
        for (long blocks = 1; blocks <= 9; blocks += 2) {
            long K = blocks * hr_dtype_get(all_types[i])->block;
            void *w = random_blocks(all_types[i], K);
            float *x = malloc(sizeof(float) * (size_t)K);
            void *xq = aligned_alloc(64, (hr_qx_row_bytes(K) + 63) / 64 * 64);
            for (long k = 0; k < K; k++)
                x[k] = frand() * (k % 7 == 0 ? 4.0f : 1.0f);
            hr_qx_quantize(all_types[i], x, xq, K);
            float r = ref(w, xq, K / 32), worst = 0;
            for (int j = 0; j < n; j++) {
                HR_CHECK(v[j]->dot[all_types[i]], "%s has no %s dot", v[j]->name,
                         hr_dtype_name(all_types[i]));
                float f = v[j]->dot[all_types[i]](w, xq, K / 32);
                worst = fmaxf(worst, fabsf(f - r) / (1.0f + fabsf(r)));
                if (!dot4_matches(v[j], all_types[i], w, K)) worst = INFINITY;
            }
            free(w);
            free(x);
            free(xq);
            HR_CHECK(worst < 1e-5f, "%s K=%ld: rel diff %g", hr_dtype_name(all_types[i]), K, worst);
        }
    }
    hr_cpu_set_level(saved);
}

/* Activations of K elements quantized by v for type t equal the plain C quantizer's, field
 * by field (the structs' padding aside). */
static int quantize_matches(const hr_cpu_qdots *v, hr_dtype t, const float *x, long K) {
    size_t bytes = (hr_qx_row_bytes(K) + 63) / 64 * 64;
    char *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes);
    hr_qx_quantize(t, x, a, K);
    v->quantize(t, x, b, K);
    int ok = 1;
    for (long g = 0; g < (K + 255) / 256; g++) {
        if (hr_qdot_q8k(t)) {
            const hr_q8k *p = (const hr_q8k *)a + g, *q = (const hr_q8k *)b + g;
            ok &= !memcmp(p->q, q->q, 256) && !memcmp(p->s16, q->s16, 32) &&
                  !memcmp(p->s32, q->s32, 16) && !memcmp(&p->d, &q->d, 4);
        } else {
            ok &= !memcmp((const hr_q8x *)a + g, (const hr_q8x *)b + g, sizeof(hr_q8x));
        }
    }
    free(a);
    free(b);
    return ok;
}

/* Every SIMD quantizer against the plain C one, on random x and on exact ties (x / d = k + 1/2,
 * which roundf takes away from zero). */
static void test_quantize_variants(void) {
    const hr_cpu_qdots *v[2];
    hr_cpu_level saved = hr_cpu()->level;
    int n = simd_variants(v);
    long Ks[] = {32, 96, 256, 288, 768};
    for (int i = 0; i < N_TYPES; i++) {
        hr_dtype t = all_types[i];
        if (!hr_cpu_qdots_ref.dot[t]) continue;
        for (int k = 0; k < 5; k++) {
            long K = Ks[k];
            if (K % hr_dtype_get(t)->block) continue;
            float *x = malloc(sizeof(float) * (size_t)K);
            for (int ties = 0; ties < 2; ties++) {
                for (long j = 0; j < K; j++)
                    x[j] = ties ? (j % 32 == 0 ? 127.0f : (float)(int)(rnd() % 254) - 126.5f)
                                : frand() * 3.0f;
                for (int j = 0; j < n; j++)
                    HR_CHECK(quantize_matches(v[j], t, x, K), "%s quantizer for %s K=%ld%s differs",
                             v[j]->name, hr_dtype_name(t), K, ties ? " (ties)" : "");
            }
            free(x);
        }
    }
    hr_cpu_set_level(saved);
}

static void test_embed_quantized_table(void) {
    hr_backend *be = backend(1);
    long V = 9, D = 256;
    void *q = random_blocks(HR_Q6_K, V * D);
    float *ref = malloc(sizeof(float) * (size_t)(V * D)), y[3 * 256];
    hr_dequant_row(HR_Q6_K, q, ref, V * D);
    hr_tensor host = {.data = q, .dtype = HR_Q6_K, .ndim = 2, .shape = {V, D}}, dev;
    HR_CHECK_OK(be->vt->upload(be, &host, &dev));
    int32_t tok[3] = {4, 0, 8}, zero[3] = {0};
    hr_step_meta meta = {.n_tokens = 3, .n_rows = 1, .tokens = tok, .pos = zero, .row = zero};
    HR_CHECK_OK(be->vt->step_begin(be, &meta));
    be->vt->embed(be, y, &dev, 2.0f);
    int ok = 1;
    for (int t = 0; t < 3; t++)
        for (long i = 0; i < D; i++)
            ok &= y[t * D + i] == ref[tok[t] * D + i] * 2.0f;
    free(q);
    free(ref);
    hr_backend_destroy(be);
    HR_CHECK(ok, "embed of a Q6_K table differs from its dequantized rows");
}

static void test_partial_block_rows_refused(void) {
    hr_backend *be = backend(1);
    uint8_t data[34 * 4] = {0};
    hr_tensor host = {.data = data, .dtype = HR_Q8_0, .ndim = 2, .shape = {2, 48}}, dev;
    hr_err *e = be->vt->upload(be, &host, &dev);
    hr_backend_destroy(be);
    HR_CHECK(e != NULL, "a Q8_0 tensor with rows of 48 was accepted");
    HR_CHECK(strstr(hr_err_msg(e), "multiple") != NULL, "message: %s", hr_err_msg(e));
    hr_err_free(e);
}

int main(void) {
    HR_RUN(test_qdot_variants);
    HR_RUN(test_quantize_variants);
    HR_RUN(test_matmul_every_type);
    HR_RUN(test_embed_quantized_table);
    HR_RUN(test_partial_block_rows_refused);
    return hr_test_summary();
}
