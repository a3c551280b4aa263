/* Quantization reference code (tensor/quant.c) against gguf-py: every block type's
 * dequantization and every written 32-element type's quantization, bit for bit, on the
 * committed outputs of tests/data/quant/gen_refs.py; the K-quant quantizers (quant_k.c,
 * which gguf-py lacks) by error bounds and exact round trips. Run from the repository root. */
#include "base/file.h"
#include "harness.h"
#include "tensor/quant.h"

static const hr_dtype all_types[] = {HR_Q8_0, HR_Q4_0, HR_Q4_1, HR_Q5_0, HR_Q5_1,   HR_Q2_K,
                                     HR_Q3_K, HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_NL, HR_IQ4_XS};

static char *load(hr_dtype t, const char *ext, size_t *len) {
    char path[256];
    snprintf(path, sizeof path, "tests/data/quant/%s.%s", hr_dtype_name(t), ext);
    char *p = NULL;
    hr_err *e = hr_read_file(path, &p, len);
    if (e) {
        printf("     %s\n", hr_err_msg(e));
        hr_err_free(e);
    }
    return p;
}

static void test_dequant_matches_gguf_py(void) {
    for (size_t i = 0; i < sizeof all_types / sizeof *all_types; i++) {
        hr_dtype t = all_types[i];
        size_t nb, ny;
        char *b = load(t, "blocks", &nb), *y = load(t, "f32", &ny);
        HR_CHECK(b && y, "%s: reference files missing", hr_dtype_name(t));
        int64_t n = (int64_t)(ny / 4);
        HR_CHECK(hr_dtype_bytes(t, n) == nb, "%s: %zu bytes of blocks for %lld floats",
                 hr_dtype_name(t), nb, (long long)n);
        float *out = malloc(ny);
        hr_dequant_row(t, b, out, n);
        int bad = memcmp(out, y, ny) != 0;
        int64_t at = 0;
        while (bad && at < n && memcmp(out + at, (float *)y + at, 4) == 0)
            at++;
        float got = bad ? out[at] : 0, want = bad ? ((float *)y)[at] : 0;
        free(out);
        free(b);
        free(y);
        HR_CHECK(!bad, "%s: element %lld is %.9g, gguf-py %.9g", hr_dtype_name(t), (long long)at,
                 got, want);
    }
}

static void test_quant_matches_gguf_py(void) {
    int written = 0;
    for (size_t i = 0; i < sizeof all_types / sizeof *all_types; i++) {
        hr_dtype t = all_types[i];
        if (!hr_quant_can_write(t) || hr_dtype_get(t)->block != 32) continue;
        written++;
        size_t nx, nq;
        char *x = load(t, "qin", &nx), *q = load(t, "qout", &nq);
        HR_CHECK(x && q, "%s: reference files missing", hr_dtype_name(t));
        int64_t n = (int64_t)(nx / 4);
        HR_CHECK(hr_dtype_bytes(t, n) == nq, "%s: size mismatch", hr_dtype_name(t));
        char *out = malloc(nq);
        hr_quant_row(t, (const float *)x, out, n);
        size_t at = 0;
        while (at < nq && out[at] == q[at])
            at++;
        free(out);
        free(x);
        free(q);
        HR_CHECK(at == nq, "%s: byte %zu (block %zu) differs from gguf-py", hr_dtype_name(t), at,
                 at / (size_t)hr_dtype_get(t)->block_bytes);
    }
    HR_CHECK(written == 5, "%d types of 32 can be written, expected 5", written);
    HR_CHECK(hr_quant_can_write(HR_Q4_K) && hr_quant_can_write(HR_Q5_K) &&
                 hr_quant_can_write(HR_Q6_K) && !hr_quant_can_write(HR_Q3_K),
             "the K-quants hearth writes are Q4_K, Q5_K, Q6_K");
}

/* Quantize then dequantize stays within one step of the input (the _0 types clip the end
 * opposite the largest element at one step short). */
static void test_roundtrip_error(void) {
    float x[256], y[256];
    unsigned r = 7;
    for (int i = 0; i < 256; i++) {
        r = r * 1103515245u + 12345u;
        x[i] = (float)((r >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    hr_dtype ts[] = {HR_Q8_0, HR_Q4_0, HR_Q4_1, HR_Q5_0, HR_Q5_1};
    float bound[] = {1.0f / 127, 1.0f / 8, 2.0f / 15, 1.0f / 16, 2.0f / 31};
    uint8_t blocks[256 * 2];
    for (int k = 0; k < 5; k++) {
        hr_quant_row(ts[k], x, blocks, 256);
        hr_dequant_row(ts[k], blocks, y, 256);
        for (int i = 0; i < 256; i++)
            HR_CHECK(fabsf(x[i] - y[i]) <= bound[k] * 1.01f, "%s: x[%d] = %g -> %g",
                     hr_dtype_name(ts[k]), i, x[i], y[i]);
    }
}

static unsigned lcg(unsigned *r) { return *r = *r * 1103515245u + 12345u; }

/* Uniform in [-1, 1). */
static float unit_rand(unsigned *r) { return (float)((lcg(r) >> 8) & 0xffff) / 32768.0f - 1.0f; }

enum { KN = 512 }; /* two super-blocks */

/* The rows the K-quant bounds are checked on: random, constant, zeros, negative only, large,
 * sub-blocks of very different magnitudes, one outlier. */
static void kq_row(int kind, float *x) {
    unsigned r = 11u + (unsigned)kind;
    for (int i = 0; i < KN; i++) {
        float u = unit_rand(&r);
        x[i] = kind == 0   ? u
               : kind == 1 ? 0.37f
               : kind == 2 ? 0.0f
               : kind == 3 ? -2.0f + u
               : kind == 4 ? 3000.0f * u
               : kind == 5 ? u * powf(10.0f, (float)(i / 16 % 5) - 3.0f)
                           : (i == 77 ? 50.0f : 0.01f * u);
    }
}

/* The largest error Q4_K (top 15) / Q5_K (top 31) may make on element e of x: codes round
 * to nearest and never clip, so half the sub-block's step dl = d*sc. The min m covers
 * -min(x, 0) in units of dmin = M/63 (M: the super-block's largest such min), so the
 * offset exceeds it by less than dmin; the step covers max(x) + offset in top steps,
 * rounded up in units of d = (largest such step)/63. Both f16 scales round up by at most
 * an ulp (2^-10 relative). */
static float kmin_bound(const float *x, int e, int top) {
    const float *sb = x + e / 256 * 256;
    float M = 0, need[8], nmax = 0, up = 1 + 1.0f / 1024;
    for (int j = 0; j < 8; j++)
        for (int l = 0; l < 32; l++)
            M = fmaxf(M, -sb[j * 32 + l]);
    float dmin = M / 63 * up;
    for (int j = 0; j < 8; j++) {
        float lo = 0, hi = sb[j * 32];
        for (int l = 0; l < 32; l++) {
            lo = fminf(lo, sb[j * 32 + l]);
            hi = fmaxf(hi, sb[j * 32 + l]);
        }
        need[j] = (hi - lo + dmin) / (float)top;
        nmax = fmaxf(nmax, need[j]);
    }
    return (need[e % 256 / 32] + nmax / 63 * up) / 2;
}

/* Q6_K on element e: the sub-block's element of largest magnitude a takes code -32, so the
 * step dl covers a/32, rounded up in units of d = (largest a/32)/127 (f16: an ulp more).
 * Elements of that element's sign round to nearest (half a step); the other side reaches
 * only 31 steps, short of a <= 32 steps by at most one step. */
static float q6k_bound(const float *x, int e) {
    const float *sb = x + e / 256 * 256, *sub = x + e / 16 * 16;
    float A = 0, a = 0, m = 0;
    for (int i = 0; i < 256; i++)
        A = fmaxf(A, fabsf(sb[i]));
    for (int l = 0; l < 16; l++)
        if (fabsf(sub[l]) > a) a = fabsf(m = sub[l]);
    float step = a / 32 + A / 32 / 127 * (1 + 1.0f / 1024);
    return x[e] * m >= 0 ? step / 2 : step;
}

static void test_kquant_error_bounds(void) {
    const hr_dtype ts[] = {HR_Q4_K, HR_Q5_K, HR_Q6_K};
    float x[KN], y[KN];
    uint8_t blocks[KN];
    for (int kind = 0; kind < 7; kind++)
        for (int k = 0; k < 3; k++) {
            kq_row(kind, x);
            hr_quant_row(ts[k], x, blocks, KN);
            hr_dequant_row(ts[k], blocks, y, KN);
            for (int i = 0; i < KN; i++) {
                float b = ts[k] == HR_Q6_K ? q6k_bound(x, i) : kmin_bound(x, i, k ? 31 : 15);
                HR_CHECK(fabsf(x[i] - y[i]) <= b * 1.0001f + 1e-6f * fabsf(x[i]),
                         "%s row %d: x[%d] = %g -> %g (bound %g)", hr_dtype_name(ts[k]), kind, i,
                         x[i], y[i], b);
            }
            HR_CHECK(kind != 2 || y[0] == 0, "zeros stay zero");
        }
}

/* Rows the formats hold exactly (small-integer scales of power-of-two d / dmin, every
 * sub-block using its lowest and highest code, one scale and one min at 63 / |127|) come
 * back unchanged: the quantizer recovers d, dmin, the scales and the codes. */
static void exact_kmin_row(int top, float *x) {
    unsigned r = 5;
    const float d = 1.0f / 256, dmin = 1.0f / 512;
    for (int j = 0; j < 16; j++) {
        int sc = j % 8 == 0 ? 63 : 1 + (int)(lcg(&r) >> 8) % 63;
        int m = j % 8 == 1 ? 63 : (int)(lcg(&r) >> 8) % 64;
        for (int l = 0; l < 32; l++) {
            int q = l == 0 ? 0 : l == 1 ? top : (int)(lcg(&r) >> 8) % (top + 1);
            x[j * 32 + l] = d * (float)sc * (float)q - dmin * (float)m;
        }
    }
}

static void exact_q6k_row(float *x) {
    unsigned r = 9;
    const float d = 1.0f / 1024;
    for (int j = 0; j < 32; j++) {
        int sc = j % 16 == 0 ? -127 : (int)(lcg(&r) >> 8) % 255 - 127;
        for (int l = 0; l < 16; l++) {
            int c = l == 3 ? -32 : (int)(lcg(&r) >> 8) % 63 - 31;
            x[j * 16 + l] = d * (float)sc * (float)c;
        }
    }
}

static void test_kquant_exact_roundtrip(void) {
    const hr_dtype ts[] = {HR_Q4_K, HR_Q5_K, HR_Q6_K};
    float x[KN], y[KN];
    uint8_t blocks[KN];
    for (int k = 0; k < 3; k++) {
        if (ts[k] == HR_Q6_K)
            exact_q6k_row(x);
        else
            exact_kmin_row(k ? 31 : 15, x);
        hr_quant_row(ts[k], x, blocks, KN);
        hr_dequant_row(ts[k], blocks, y, KN);
        for (int i = 0; i < KN; i++)
            HR_CHECK(x[i] == y[i], "%s: x[%d] = %.9g -> %.9g", hr_dtype_name(ts[k]), i, x[i], y[i]);
    }
}

int main(void) {
    HR_RUN(test_dequant_matches_gguf_py);
    HR_RUN(test_quant_matches_gguf_py);
    HR_RUN(test_roundtrip_error);
    HR_RUN(test_kquant_error_bounds);
    HR_RUN(test_kquant_exact_roundtrip);
    return hr_test_summary();
}
