/* Quantization reference code (tensor/quant.c) against gguf-py: every block type's
 * dequantization and every written type's quantization, bit for bit, on the committed
 * outputs of tests/data/quant/gen_refs.py. Run from the repository root. */
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
        if (!hr_quant_can_write(t)) continue;
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
    HR_CHECK(written == 5, "%d types can be written, expected 5", written);
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

int main(void) {
    HR_RUN(test_dequant_matches_gguf_py);
    HR_RUN(test_quant_matches_gguf_py);
    HR_RUN(test_roundtrip_error);
    return hr_test_summary();
}
