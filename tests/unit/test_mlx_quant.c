/* MLX affine quantization: dequantization of hand-packed words at every bit width against
 * value = scale * q + bias; mlx's quantizer on edge cases (constant and zero groups) and its
 * error bound; the CPU matmul of MLX weights at every level (fast 4- and 8-bit dots on
 * AVX2 / AVX-512 against the dequantized-row reference) at odd sizes, batch invariant, and
 * embed of a quantized table. */
#include "backend/backend.h"
#include "base/cpu.h"
#include "harness.h"
#include "tensor/mlx_quant.h"

static const int all_bits[] = {2, 3, 4, 5, 6, 8};

static unsigned rng = 7;
static unsigned rnd(void) {
    rng = rng * 1103515245u + 12345u;
    return rng >> 8;
}
static float frand(void) { return (float)(rnd() & 0xffff) / 32768.0f - 1.0f; }

/* Sets bit by bit: code i's bit j is bit i * bits + j of the little-endian u32 words. */
static void pack_direct(const uint32_t *q, int n, int bits, uint32_t *words) {
    memset(words, 0, (size_t)n * bits / 8);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < bits; j++)
            if (q[i] >> j & 1) words[(i * bits + j) / 32] |= 1u << ((i * bits + j) % 32);
}

static void test_dequant_hand_packed(void) {
    enum { ROWS = 3, COLS = 128, G = 32 };
    for (size_t b = 0; b < sizeof all_bits / sizeof *all_bits; b++) {
        int bits = all_bits[b];
        uint32_t q[ROWS * COLS], words[ROWS * COLS / 4];
        float s[ROWS * COLS / G], bias[ROWS * COLS / G], out[COLS];
        for (int i = 0; i < ROWS * COLS; i++)
            q[i] = rnd() & ((1u << bits) - 1);
        for (int i = 0; i < ROWS * COLS / G; i++)
            s[i] = frand(), bias[i] = frand();
        for (int r = 0; r < ROWS; r++)
            pack_direct(q + r * COLS, COLS, bits, words + r * COLS * bits / 32);
        hr_tensor st = {.data = s, .dtype = HR_F32, .ndim = 2, .shape = {ROWS, COLS / G}};
        hr_tensor bt = {.data = bias, .dtype = HR_F32, .ndim = 2, .shape = {ROWS, COLS / G}};
        hr_tensor w = {.data = words,
                       .dtype = hr_mlx_dtype(bits),
                       .ndim = 2,
                       .shape = {ROWS, COLS},
                       .scales = &st,
                       .biases = &bt,
                       .group_size = G};
        for (int r = 0; r < ROWS; r++) {
            hr_mlx_dequant(&w, r, 0, COLS, out);
            for (int c = 0; c < COLS; c++) {
                float want = s[r * 4 + c / G] * (float)q[r * COLS + c] + bias[r * 4 + c / G];
                HR_CHECK(out[c] == want, "%d bits [%d,%d]: %g, expected %g", bits, r, c, out[c],
                         want);
            }
            hr_mlx_dequant(&w, r, 29, 7, out); /* a range across a group boundary */
            HR_CHECK(out[3] == s[r * 4 + 1] * (float)q[r * COLS + 32] + bias[r * 4 + 1],
                     "%d bits: range", bits);
        }
    }
    /* words written out by hand: 4 bits 0x76543210 are codes 0..7, 8 bits 0x04030201 are 1..4 */
    uint32_t w4 = 0x76543210u, w8 = 0x04030201u;
    for (int i = 0; i < 8; i++)
        HR_CHECK(hr_mlx_code(&w4, 4, i) == (uint32_t)i, "4-bit code %d", i);
    for (int i = 0; i < 4; i++)
        HR_CHECK(hr_mlx_code(&w8, 8, i) == (uint32_t)i + 1, "8-bit code %d", i);
    /* 3 bits, as mlx's extract_bits: code 2 is bits 6-7 of byte 0 and bit 0 of byte 1 */
    uint8_t b3[3] = {0x80, 0x01, 0};
    HR_CHECK(hr_mlx_code(b3, 3, 2) == 6, "3-bit straddling code: %u", hr_mlx_code(b3, 3, 2));
}

static void test_quantize_edges(void) {
    float x[64], s[2], b[2], y[64];
    uint8_t packed[64];
    for (int i = 0; i < 32; i++)
        x[i] = 0.5f, x[32 + i] = 0.0f;
    hr_mlx_quantize(x, 64, 4, 32, packed, s, b);
    HR_CHECK(s[0] != 0 && s[1] != 0, "scales never zero: %g %g", s[0], s[1]);
    hr_mlx_fake_quant(x, 64, 4, 32, HR_F32, y);
    for (int i = 0; i < 64; i++)
        HR_CHECK(y[i] == x[i], "constant group element %d: %g", i, y[i]);
    for (size_t k = 0; k < sizeof all_bits / sizeof *all_bits; k++) {
        int bits = all_bits[k];
        for (int i = 0; i < 64; i++)
            x[i] = frand() * (i < 32 ? 1.0f : 0.01f);
        hr_mlx_quantize(x, 64, bits, 32, packed, s, b);
        for (int g = 0; g < 2; g++)
            for (int i = 0; i < 32; i++) {
                /* within half a step unless clipped (mlx makes the larger-magnitude edge exact,
                 * which can push the other edge past the top code) */
                float v = s[g] * (float)hr_mlx_code(packed, bits, g * 32 + i) + b[g];
                float u = rintf((x[g * 32 + i] - b[g]) / s[g]);
                if (u < 0 || u > (float)((1 << bits) - 1)) continue;
                float tol = fabsf(s[g]) * 0.5f * 1.001f + 1e-6f;
                HR_CHECK(fabsf(v - x[g * 32 + i]) <= tol, "%d bits: |%g - %g| > %g", bits, v,
                         x[g * 32 + i], tol);
            }
    }
}

static hr_backend *backend(int threads) {
    hr_backend *be = NULL;
    hr_err *e = hr_backend_cpu_create(&(hr_cpu_options){.n_threads = threads}, &be);
    if (e) hr_err_free(e);
    return be;
}

typedef struct {
    uint8_t *packed;
    uint16_t *sb; /* bf16 scales then biases */
    hr_tensor host, s, b, dev, ds, db;
} mlx_weight;

static hr_err *make_weight(hr_backend *be, int bits, int g, long N, long K, mlx_weight *w) {
    long G = K / g;
    float *x = malloc(sizeof(float) * (size_t)K), *s = malloc(sizeof(float) * (size_t)G * 2);
    w->packed = malloc((size_t)(N * K * bits / 8));
    w->sb = malloc(sizeof(uint16_t) * 2 * (size_t)(N * G));
    for (long r = 0; r < N; r++) {
        for (long k = 0; k < K; k++)
            x[k] = frand() * 0.1f;
        hr_mlx_quantize(x, K, bits, g, w->packed + r * K * bits / 8, s, s + G);
        for (long i = 0; i < G; i++) {
            w->sb[r * G + i] = hr_f32_to_bf16(s[i]);
            w->sb[N * G + r * G + i] = hr_f32_to_bf16(s[G + i]);
        }
    }
    free(x);
    free(s);
    w->s = (hr_tensor){.data = w->sb, .dtype = HR_BF16, .ndim = 2, .shape = {N, G}};
    w->b = w->s;
    w->b.data = w->sb + N * G;
    HR_TRY(be->vt->upload(be, &w->s, &w->ds));
    HR_TRY(be->vt->upload(be, &w->b, &w->db));
    w->host = (hr_tensor){.data = w->packed,
                          .dtype = hr_mlx_dtype(bits),
                          .ndim = 2,
                          .shape = {N, K},
                          .scales = &w->ds,
                          .biases = &w->db,
                          .group_size = g};
    return be->vt->upload(be, &w->host, &w->dev);
}

static void free_weight(hr_backend *be, mlx_weight *w) {
    be->vt->release(be, &w->dev);
    free(w->packed);
    free(w->sb);
}

/* y of every level against the generic one (bit for bit the f32 matmul of the dequantized
 * weight); rows of a T-token matmul equal the same rows alone. */
static void check_matmul(int bits, int g, long N, long K, int T) {
    hr_backend *be = backend(3);
    mlx_weight w;
    HR_CHECK_OK(make_weight(be, bits, g, N, K, &w));
    float *x = malloc(sizeof(float) * (size_t)(T * K)),
          *wf = malloc(sizeof(float) * (size_t)(N * K));
    float *ref = malloc(sizeof(float) * (size_t)(T * N)),
          *y = malloc(sizeof(float) * (size_t)(T * N));
    float *y1 = malloc(sizeof(float) * (size_t)N), *yf = malloc(sizeof(float) * (size_t)(T * N));
    for (long i = 0; i < T * K; i++)
        x[i] = frand();
    for (long r = 0; r < N; r++)
        hr_mlx_dequant(&w.dev, r, 0, K, wf + r * K);
    hr_tensor f = {.data = wf, .dtype = HR_F32, .ndim = 2, .shape = {N, K}}, df;
    HR_CHECK_OK(be->vt->upload(be, &f, &df));
    hr_cpu_level levels[] = {HR_CPU_GENERIC, HR_CPU_AVX2, HR_CPU_AVX512}, hw = hr_cpu()->level;
    for (int l = 0; l < 3; l++) {
        hr_cpu_set_level(levels[l]);
        if (hr_cpu()->level != levels[l]) continue;
        be->vt->matmul(be, y, x, &w.dev, NULL, T);
        be->vt->matmul(be, yf, x, &df, NULL, T);
        int fast = levels[l] != HR_CPU_GENERIC && (bits == 4 || bits == 8);
        if (l == 0) memcpy(ref, y, sizeof(float) * (size_t)(T * N));
        for (long i = 0; i < T * N; i++) {
            if (!fast)
                HR_CHECK(y[i] == yf[i], "%d bits %s: [%ld] %g != f32 %g", bits,
                         hr_cpu_level_name(levels[l]), i, y[i], yf[i]);
            else
                HR_CHECK(fabsf(y[i] - ref[i]) <= 1e-5f * (1 + fabsf(ref[i])) + 1e-5f,
                         "%d bits %s g%d K%ld: %g vs %g", bits, hr_cpu_level_name(levels[l]), g, K,
                         y[i], ref[i]);
        }
        for (int t = 0; t < T; t++) {
            be->vt->matmul(be, y1, x + t * K, &w.dev, NULL, 1);
            HR_CHECK(!memcmp(y1, y + t * N, sizeof(float) * (size_t)N),
                     "%d bits %s: row %d depends on the batch", bits, hr_cpu_level_name(levels[l]),
                     t);
        }
    }
    hr_cpu_set_level(hw);
    be->vt->release(be, &df);
    free_weight(be, &w);
    hr_backend_destroy(be);
    free(x), free(wf), free(ref), free(y), free(y1), free(yf);
}

static void test_matmul_every_width(void) {
    for (size_t b = 0; b < sizeof all_bits / sizeof *all_bits && !hr_t_cur_failed; b++) {
        check_matmul(all_bits[b], 32, 37, 96, 3);
        check_matmul(all_bits[b], 64, 19, 320, 5);
        check_matmul(all_bits[b], 128, 53, 384, 1);
    }
}

static void test_embed_quantized(void) {
    hr_backend *be = backend(1);
    mlx_weight w;
    HR_CHECK_OK(make_weight(be, 5, 32, 11, 64, &w));
    float y[3 * 64], want[64];
    int32_t tok[3] = {7, 0, 10}, zero[3] = {0};
    hr_step_meta meta = {.n_tokens = 3, .n_rows = 1, .tokens = tok, .pos = zero, .row = zero};
    HR_CHECK_OK(be->vt->step_begin(be, &meta));
    be->vt->embed(be, y, &w.dev, 2.0f);
    for (int t = 0; t < 3; t++) {
        hr_mlx_dequant(&w.host, tok[t], 0, 64, want);
        for (int i = 0; i < 64; i++)
            HR_CHECK(y[t * 64 + i] == want[i] * 2.0f, "embed token %d [%d]", t, i);
    }
    free_weight(be, &w);
    hr_backend_destroy(be);
}

static void test_upload_needs_companions(void) {
    hr_backend *be = backend(1);
    uint32_t words[16] = {0};
    hr_tensor host = {.data = words,
                      .dtype = HR_MLX_Q4,
                      .ndim = 2,
                      .shape = {2, 64},
                      .group_size = 64},
              dev;
    hr_err *e = be->vt->upload(be, &host, &dev);
    HR_CHECK(e && strstr(hr_err_msg(e), "scales and biases"), "upload without companions: %s",
             e ? hr_err_msg(e) : "accepted");
    hr_err_free(e);
    hr_backend_destroy(be);
}

int main(void) {
    HR_RUN(test_dequant_hand_packed);
    HR_RUN(test_quantize_edges);
    HR_RUN(test_matmul_every_width);
    HR_RUN(test_embed_quantized);
    HR_RUN(test_upload_needs_companions);
    return hr_test_summary();
}
