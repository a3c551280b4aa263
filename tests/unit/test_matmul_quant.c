/* Quantized weights on the CPU backend: matmul of every GGUF block type against the f32
 * matmul of the same weight dequantized (bit for bit, at odd sizes and every thread count),
 * embed of a quantized table, and the refusal of rows that are not whole blocks. */
#include "backend/backend.h"
#include "harness.h"
#include "tensor/quant.h"

static const hr_dtype all_types[] = {HR_Q8_0, HR_Q4_0, HR_Q4_1, HR_Q5_0,  HR_Q5_1,  HR_Q2_K,
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
    case HR_Q4_1: case HR_Q5_1: case HR_Q4_K: case HR_Q5_K: off[0] = 0, off[1] = 2; return 2;
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
    for (long i = 0; i < nb * info->block_bytes; i++) b[i] = (uint8_t)rnd();
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

/* y = x w^T with w of type t [N, K] equals the f32 matmul of w dequantized, bit for bit. */
static int check_exact(hr_backend *be, hr_dtype t, int T, long N, long K) {
    void *wq = random_blocks(t, N * K);
    float *wf = malloc(sizeof(float) * (size_t)(N * K)), *x = malloc(sizeof(float) * (size_t)(T * K));
    float *y0 = malloc(sizeof(float) * (size_t)(T * N)), *y1 = malloc(sizeof(float) * (size_t)(T * N));
    hr_dequant_row(t, wq, wf, N * K);
    for (long i = 0; i < T * K; i++) x[i] = frand();
    hr_tensor host_q = {.data = wq, .dtype = t, .ndim = 2, .shape = {N, K}};
    hr_tensor host_f = {.data = wf, .dtype = HR_F32, .ndim = 2, .shape = {N, K}};
    hr_tensor dq, df;
    int ok = 0;
    hr_err *e = be->vt->upload(be, &host_q, &dq);
    if (!e) e = be->vt->upload(be, &host_f, &df);
    if (!e) {
        be->vt->matmul(be, y0, x, &df, NULL, T);
        be->vt->matmul(be, y1, x, &dq, NULL, T);
        ok = memcmp(y0, y1, sizeof(float) * (size_t)(T * N)) == 0;
        be->vt->release(be, &dq);
        be->vt->release(be, &df);
    }
    if (e) hr_err_free(e);
    free(wq);
    free(wf);
    free(x);
    free(y0);
    free(y1);
    return ok;
}

static void test_matmul_every_type_exact(void) {
    int Ts[] = {1, 2, 3, 7}, threads[] = {1, 2, 3};
    long Ns[] = {1, 17, 40};
    for (int th = 0; th < 3; th++) {
        hr_backend *be = backend(threads[th]);
        HR_CHECK(be, "no backend");
        for (int i = 0; i < N_TYPES; i++)
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 3; b++) {
                    long K = hr_dtype_get(all_types[i])->block * (b + 1);
                    int ok = check_exact(be, all_types[i], Ts[a], Ns[b], K);
                    if (!ok) hr_backend_destroy(be);
                    HR_CHECK(ok, "%s T=%d N=%ld K=%ld threads=%d: differs from the dequantized f32 matmul",
                             hr_dtype_name(all_types[i]), Ts[a], Ns[b], K, threads[th]);
                }
        hr_backend_destroy(be);
    }
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
        for (long i = 0; i < D; i++) ok &= y[t * D + i] == ref[tok[t] * D + i] * 2.0f;
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
    HR_RUN(test_matmul_every_type_exact);
    HR_RUN(test_embed_quantized_table);
    HR_RUN(test_partial_block_rows_refused);
    return hr_test_summary();
}
