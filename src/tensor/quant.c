/* GGUF block formats: one dequantizer per format, written from gguf-py's quants.py (the
 * same element order and the same float operations, so the results are bit-exact), and
 * the quantizers of the formats hearth writes (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 as gguf-py;
 * Q4_K, Q5_K, Q6_K from tensor/quant_k.c). Layouts are in docs/quant.md; a block is read
 * bytewise, so blocks need no alignment. */
#include "tensor/quant.h"

#include <math.h>

#include "tensor/quant_k.h"

/* The 16 values IQ4_NL and IQ4_XS indices select. */
static const int8_t iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                        1,    13,   25,  38,  53,  69,  89,  113};

static float f16_at(const uint8_t *p) { return hr_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

static void put_f16(uint8_t *p, float f) {
    uint16_t h = hr_f32_to_f16(f);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

static uint32_t u32_at(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Q8_0: d, qs[32]; y = qs * d */
static void dq_q8_0(const uint8_t *b, float *y) {
    float d = f16_at(b);
    for (int j = 0; j < 32; j++)
        y[j] = (float)(int8_t)b[2 + j] * d;
}

/* Q4_0 / IQ4_NL: d, qs[16]; element j in the low nibble of qs[j], j + 16 in the high */
static void dq_q4_0(const uint8_t *b, float *y) {
    float d = f16_at(b);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)((b[2 + j] & 15) - 8);
        y[j + 16] = d * (float)((b[2 + j] >> 4) - 8);
    }
}

static void dq_iq4_nl(const uint8_t *b, float *y) {
    float d = f16_at(b);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)iq4nl_values[b[2 + j] & 15];
        y[j + 16] = d * (float)iq4nl_values[b[2 + j] >> 4];
    }
}

/* Q4_1: d, m, qs[16]; y = q * d + m */
static void dq_q4_1(const uint8_t *b, float *y) {
    float d = f16_at(b), m = f16_at(b + 2);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)(b[4 + j] & 15) + m;
        y[j + 16] = d * (float)(b[4 + j] >> 4) + m;
    }
}

/* Q5_0: d, qh (bit j: element j's fifth bit), qs[16] as Q4_0; y = (q - 16) * d */
static void dq_q5_0(const uint8_t *b, float *y) {
    float d = f16_at(b);
    uint32_t qh = u32_at(b + 2);
    for (int j = 0; j < 16; j++) {
        int lo = (b[6 + j] & 15) | (int)((qh >> j & 1) << 4);
        int hi = (b[6 + j] >> 4) | (int)((qh >> (j + 16) & 1) << 4);
        y[j] = d * (float)(lo - 16);
        y[j + 16] = d * (float)(hi - 16);
    }
}

/* Q5_1: d, m, qh, qs[16]; y = q * d + m */
static void dq_q5_1(const uint8_t *b, float *y) {
    float d = f16_at(b), m = f16_at(b + 2);
    uint32_t qh = u32_at(b + 4);
    for (int j = 0; j < 16; j++) {
        int lo = (b[8 + j] & 15) | (int)((qh >> j & 1) << 4);
        int hi = (b[8 + j] >> 4) | (int)((qh >> (j + 16) & 1) << 4);
        y[j] = d * (float)lo + m;
        y[j + 16] = d * (float)hi + m;
    }
}

/* Q2_K: scales[16] (low nibble scale, high nibble min of each 16 elements), qs[64], d, dmin.
 * Element e = h*128 + s*32 + l takes bits 2s..2s+1 of qs[h*32 + l]. */
static void dq_q2_k(const uint8_t *b, float *y) {
    const uint8_t *sc = b, *qs = b + 16;
    float d = f16_at(b + 80), dmin = f16_at(b + 82);
    for (int e = 0; e < 256; e++) {
        int h = e / 128, s = e % 128 / 32, l = e % 32;
        float dl = d * (float)(sc[e / 16] & 15), ml = dmin * (float)(sc[e / 16] >> 4);
        y[e] = dl * (float)(qs[h * 32 + l] >> (2 * s) & 3) - ml;
    }
}

/* Q3_K's sixteen 6-bit scales (minus 32): low nibbles in bytes 0..7, high pairs in 8..11. */
static int q3k_scale(const uint8_t *sc, int i) {
    int lo = i < 8 ? sc[i] & 15 : sc[i - 8] >> 4;
    int hi = sc[8 + i % 4] >> (2 * (i / 4)) & 3;
    return (int8_t)(lo | hi << 4) - 32;
}

/* Q3_K: hmask[32], qs[64], scales[12], d. Low bits as Q2_K; the high bit of element
 * e = b*32 + l is bit b of hmask[l], and a clear bit subtracts 4. */
static void dq_q3_k(const uint8_t *b, float *y) {
    const uint8_t *hm = b, *qs = b + 32, *sc = b + 96;
    float d = f16_at(b + 108);
    for (int e = 0; e < 256; e++) {
        int h = e / 128, s = e % 128 / 32, l = e % 32;
        int q = (qs[h * 32 + l] >> (2 * s) & 3) - ((hm[l] >> (e / 32) & 1) ? 0 : 4);
        y[e] = d * (float)q3k_scale(sc, e / 16) * (float)q;
    }
}

/* Q4_K / Q5_K's eight 6-bit scales and mins in 12 bytes. */
static void k_scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

/* Q4_K: d, dmin, scales[12], qs[128]. Sub-block j (32 elements) is the low (j even) or high
 * nibbles of qs[32*(j/2) ..]; y = d*sc * q - dmin*m. */
static void dq_q4_k(const uint8_t *b, float *y) {
    float d = f16_at(b), dmin = f16_at(b + 2);
    const uint8_t *qs = b + 16;
    for (int j = 0; j < 8; j++) {
        int sc, m;
        k_scale_min(b + 4, j, &sc, &m);
        float dl = d * (float)sc, ml = dmin * (float)m;
        for (int l = 0; l < 32; l++)
            y[j * 32 + l] = dl * (float)(qs[j / 2 * 32 + l] >> (4 * (j % 2)) & 15) - ml;
    }
}

/* Q5_K: Q4_K plus qh[32] before qs: bit j of qh[l] is the fifth bit of element j*32 + l. */
static void dq_q5_k(const uint8_t *b, float *y) {
    float d = f16_at(b), dmin = f16_at(b + 2);
    const uint8_t *qh = b + 16, *qs = b + 48;
    for (int j = 0; j < 8; j++) {
        int sc, m;
        k_scale_min(b + 4, j, &sc, &m);
        float dl = d * (float)sc, ml = dmin * (float)m;
        for (int l = 0; l < 32; l++) {
            int q = (qs[j / 2 * 32 + l] >> (4 * (j % 2)) & 15) | (qh[l] >> j & 1) << 4;
            y[j * 32 + l] = dl * (float)q - ml;
        }
    }
}

/* Q6_K: ql[128], qh[64], scales[16] (int8, one per 16 elements), d. Element
 * e = h*128 + s*32 + l: low nibble (s < 2) or high nibble (s >= 2) of ql[h*64 + (s%2)*32 + l],
 * top two bits at 2s of qh[h*32 + l]; y = d * scale * (q - 32). */
static void dq_q6_k(const uint8_t *b, float *y) {
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    float d = f16_at(b + 208);
    for (int e = 0; e < 256; e++) {
        int h = e / 128, s = e % 128 / 32, l = e % 32;
        int lo = ql[h * 64 + (s % 2) * 32 + l] >> (4 * (s / 2)) & 15;
        int q = (lo | (qh[h * 32 + l] >> (2 * s) & 3) << 4) - 32;
        y[e] = d * (float)sc[e / 16] * (float)q;
    }
}

/* IQ4_XS: d, scales_h (u16: 2 bits per sub-block), scales_l[4] (nibbles), qs[128]; sub-block
 * j (32 elements) is IQ4_NL's nibble layout over qs[16j ..], scale (6 bits - 32) * d. */
static void dq_iq4_xs(const uint8_t *b, float *y) {
    float d = f16_at(b);
    unsigned sh = (unsigned)(b[2] | b[3] << 8);
    const uint8_t *sl = b + 4, *qs = b + 8;
    for (int j = 0; j < 8; j++) {
        int s = ((sl[j / 2] >> (4 * (j % 2)) & 15) | (int)(sh >> (2 * j) & 3) << 4) - 32;
        float dl = d * (float)s;
        for (int l = 0; l < 16; l++) {
            y[j * 32 + l] = dl * (float)iq4nl_values[qs[j * 16 + l] & 15];
            y[j * 32 + l + 16] = dl * (float)iq4nl_values[qs[j * 16 + l] >> 4];
        }
    }
}

typedef void (*dq_fn)(const uint8_t *b, float *y);

static const dq_fn dq_fns[HR_DTYPE_COUNT] = {
    [HR_Q8_0] = dq_q8_0, [HR_Q4_0] = dq_q4_0, [HR_Q4_1] = dq_q4_1,     [HR_Q5_0] = dq_q5_0,
    [HR_Q5_1] = dq_q5_1, [HR_Q2_K] = dq_q2_k, [HR_Q3_K] = dq_q3_k,     [HR_Q4_K] = dq_q4_k,
    [HR_Q5_K] = dq_q5_k, [HR_Q6_K] = dq_q6_k, [HR_IQ4_NL] = dq_iq4_nl, [HR_IQ4_XS] = dq_iq4_xs,
};

void hr_dequant_row(hr_dtype t, const void *blocks, float *out, int64_t n) {
    const uint8_t *b = blocks;
    const hr_dtype_info *info = hr_dtype_get(t);
    switch (t) {
    case HR_F32: memcpy(out, blocks, sizeof(float) * (size_t)n); return;
    case HR_F16:
        for (int64_t i = 0; i < n; i++)
            out[i] = f16_at(b + 2 * i);
        return;
    case HR_BF16:
        for (int64_t i = 0; i < n; i++)
            out[i] = hr_bf16_to_f32((uint16_t)(b[2 * i] | b[2 * i + 1] << 8));
        return;
    default: break;
    }
    for (int64_t i = 0; i < n / info->block; i++)
        dq_fns[t](b + i * info->block_bytes, out + i * info->block);
}

/* gguf-py's reciprocal: 0 for a zero scale. */
static float inv(float d) { return d == 0 ? 0.0f : 1.0f / d; }

/* The element of largest magnitude, with its sign (the first one on ties). */
static float signed_absmax(const float *x) {
    float m = 0, am = 0;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > am) {
            am = fabsf(x[j]);
            m = x[j];
        }
    return m;
}

static void q_q8_0(const float *x, uint8_t *b) {
    float am = 0;
    for (int j = 0; j < 32; j++)
        am = fmaxf(am, fabsf(x[j]));
    float d = am / 127.0f, id = inv(d);
    for (int j = 0; j < 32; j++)
        b[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
    put_f16(b, d);
}

/* Truncation to a level in [0, top], as gguf-py's trunc(...).astype(uint8).clip(0, top). */
static int level(float v, int top) {
    int q = (int)v;
    return q > top ? top : q;
}

static void q_q4_0(const float *x, uint8_t *b) {
    float d = signed_absmax(x) / -8.0f, id = inv(d);
    for (int j = 0; j < 16; j++)
        b[2 + j] = (uint8_t)(level(x[j] * id + 8.5f, 15) | level(x[j + 16] * id + 8.5f, 15) << 4);
    put_f16(b, d);
}

static void q_q5_0(const float *x, uint8_t *b) {
    float d = signed_absmax(x) / -16.0f, id = inv(d);
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        int lo = level(x[j] * id + 16.5f, 31), hi = level(x[j + 16] * id + 16.5f, 31);
        b[6 + j] = (uint8_t)((lo & 15) | (hi & 15) << 4);
        qh |= (uint32_t)(lo >> 4) << j | (uint32_t)(hi >> 4) << (j + 16);
    }
    put_f16(b, d);
    for (int i = 0; i < 4; i++)
        b[2 + i] = (uint8_t)(qh >> (8 * i));
}

/* Q4_1 (top 15) and Q5_1 (top 31): levels over [min, max]. */
static void q_min(const float *x, uint8_t *b, int top) {
    float mx = x[0], mn = x[0];
    for (int j = 1; j < 32; j++) {
        mx = fmaxf(mx, x[j]);
        mn = fminf(mn, x[j]);
    }
    float d = (mx - mn) / (float)top, id = inv(d);
    uint8_t *qs = b + (top == 15 ? 4 : 8);
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        int lo = level((x[j] - mn) * id + 0.5f, top), hi = level((x[j + 16] - mn) * id + 0.5f, top);
        qs[j] = (uint8_t)((lo & 15) | (hi & 15) << 4);
        qh |= (uint32_t)(lo >> 4) << j | (uint32_t)(hi >> 4) << (j + 16);
    }
    put_f16(b, d);
    put_f16(b + 2, mn);
    if (top == 31)
        for (int i = 0; i < 4; i++)
            b[4 + i] = (uint8_t)(qh >> (8 * i));
}

static void q_q4_1(const float *x, uint8_t *b) { q_min(x, b, 15); }
static void q_q5_1(const float *x, uint8_t *b) { q_min(x, b, 31); }

typedef void (*q_fn)(const float *x, uint8_t *b);

static const q_fn q_fns[HR_DTYPE_COUNT] = {
    [HR_Q8_0] = q_q8_0,        [HR_Q4_0] = q_q4_0,        [HR_Q4_1] = q_q4_1,
    [HR_Q5_0] = q_q5_0,        [HR_Q5_1] = q_q5_1,        [HR_Q4_K] = hr_quant_q4_k,
    [HR_Q5_K] = hr_quant_q5_k, [HR_Q6_K] = hr_quant_q6_k,
};

int hr_quant_can_write(hr_dtype t) { return t < HR_DTYPE_COUNT && q_fns[t] != NULL; }

void hr_quant_row(hr_dtype t, const float *x, void *blocks, int64_t n) {
    const hr_dtype_info *info = hr_dtype_get(t);
    for (int64_t i = 0; i < n / info->block; i++)
        q_fns[t](x + i * info->block, (uint8_t *)blocks + i * info->block_bytes);
}
