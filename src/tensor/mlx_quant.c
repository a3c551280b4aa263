/* MLX affine quantization: bit-stream codes, the reference dequantization and mlx's
 * quantizer; see mlx_quant.h and docs/quant.md. */
#include "tensor/mlx_quant.h"

#include <math.h>
#include <string.h>

#include "tensor/tile16.h"

int hr_mlx_bits(hr_dtype t) {
    switch (t) {
    case HR_MLX_Q2: return 2;
    case HR_MLX_Q3: return 3;
    case HR_MLX_Q4: return 4;
    case HR_MLX_Q5: return 5;
    case HR_MLX_Q6: return 6;
    case HR_MLX_Q8: return 8;
    default: return 0;
    }
}

hr_dtype hr_mlx_dtype(int bits) {
    switch (bits) {
    case 2: return HR_MLX_Q2;
    case 3: return HR_MLX_Q3;
    case 4: return HR_MLX_Q4;
    case 5: return HR_MLX_Q5;
    case 6: return HR_MLX_Q6;
    case 8: return HR_MLX_Q8;
    default: return HR_DTYPE_COUNT;
    }
}

int hr_mlx_group_ok(int g) { return g == 32 || g == 64 || g == 128; }

/* A code never spans more than two bytes (bits <= 8); the second is read only when the
 * code reaches into it, so the last code of a row reads nothing past the row. */
uint32_t hr_mlx_code(const void *row, int bits, int64_t i) {
    const uint8_t *p = row;
    int64_t bit = i * bits;
    int sh = (int)(bit & 7);
    uint32_t v = p[bit >> 3];
    if (sh + bits > 8) v |= (uint32_t)p[(bit >> 3) + 1] << 8;
    return (v >> sh) & ((1u << bits) - 1);
}

float hr_mlx_companion(const hr_tensor *t, int64_t i) {
    i = hr_tensor_elem_off(t, i);
    switch (t->dtype) {
    case HR_BF16: return hr_bf16_to_f32(((const uint16_t *)t->data)[i]);
    case HR_F16: return hr_f16_to_f32(((const uint16_t *)t->data)[i]);
    default: return ((const float *)t->data)[i];
    }
}

void hr_mlx_dequant(const hr_tensor *w, int64_t r, int64_t c0, int64_t n, float *out) {
    int bits = hr_mlx_bits(w->dtype), g = w->group_size;
    int64_t cols = w->shape[w->ndim - 1], gpr = cols / g;
    const char *row = (const char *)w->data + r * (cols * bits / 8);
    for (int64_t c = c0; c < c0 + n;) {
        int64_t grp = r * gpr + c / g, end = (c / g + 1) * g;
        if (end > c0 + n) end = c0 + n;
        float s = hr_mlx_companion(w->scales, grp), b = hr_mlx_companion(w->biases, grp);
        for (; c < end; c++)
            out[c - c0] = s * (float)hr_mlx_code(row, bits, c) + b;
    }
}

/* One group as mlx's quantize: scale from the min/max edge with the larger magnitude, the
 * edge made exact (scale = edge / q0, bias = edge) unless it rounds to code 0; eps keeps a
 * constant group's scale nonzero. */
static void quant_group(const float *x, int group, int bits, uint8_t *codes, float *scale,
                        float *bias) {
    float n_bins = (float)((1 << bits) - 1), eps = 1e-7f;
    float w_min = INFINITY, w_max = -INFINITY;
    for (int j = 0; j < group; j++) {
        w_max = fmaxf(w_max, x[j]);
        w_min = fminf(w_min, x[j]);
    }
    int mask = fabsf(w_min) > fabsf(w_max);
    float s = fmaxf((w_max - w_min) / n_bins, eps);
    s = mask ? s : -s;
    float edge = mask ? w_min : w_max, q0 = rintf(edge / s), b = 0;
    if (q0 != 0) {
        s = edge / q0;
        b = edge;
    }
    for (int j = 0; j < group; j++) {
        float q = rintf((x[j] - b) / s);
        codes[j] = (uint8_t)fminf(fmaxf(q, 0.0f), n_bins);
    }
    *scale = s;
    *bias = b;
}

void hr_mlx_quantize(const float *x, int64_t n, int bits, int group, void *packed, float *scales,
                     float *biases) {
    uint8_t *p = packed, codes[128];
    memset(p, 0, (size_t)(n * bits / 8));
    for (int64_t g = 0; g < n / group; g++) {
        quant_group(x + g * group, group, bits, codes, &scales[g], &biases[g]);
        for (int j = 0; j < group; j++) {
            int64_t bit = (g * group + j) * bits;
            uint32_t v = (uint32_t)codes[j] << (bit & 7);
            p[bit >> 3] |= (uint8_t)v;
            if ((bit & 7) + bits > 8) p[(bit >> 3) + 1] |= (uint8_t)(v >> 8);
        }
    }
}

float hr_mlx_round_companion(float v, hr_dtype t) {
    if (t == HR_BF16) return hr_bf16_to_f32(hr_f32_to_bf16(v));
    if (t == HR_F16) return hr_f16_to_f32(hr_f32_to_f16(v));
    return v;
}

void hr_mlx_fake_quant(const float *x, int64_t n, int bits, int group, hr_dtype companion,
                       float *out) {
    uint8_t packed[128];
    float s, b;
    for (int64_t g = 0; g < n / group; g++) {
        hr_mlx_quantize(x + g * group, group, bits, group, packed, &s, &b);
        s = hr_mlx_round_companion(s, companion);
        b = hr_mlx_round_companion(b, companion);
        for (int j = 0; j < group; j++)
            out[g * group + j] = s * (float)hr_mlx_code(packed, bits, j) + b;
    }
}
