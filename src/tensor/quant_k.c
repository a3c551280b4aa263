/* Quantizers of the K-quant super-blocks hearth writes (Q4_K, Q5_K, Q6_K; layouts in
 * docs/quant.md, the ones tensor/quant.c's dequantizers read). Not llama.cpp's
 * make_qkx2_quants search: each sub-block's step and offset cover its range exactly, the
 * 6-bit (8-bit for Q6_K) sub-block scales round up against the super-block's f16 scales so
 * no element is clipped, and codes round to nearest. Error bounds in tests/unit/test_quant.c. */
#include "tensor/quant_k.h"

#include <math.h>

static void put_f16(uint8_t *p, uint16_t h) {
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* Stores at p the f16 nearest v / k, raised an ulp at a time until k times it covers v
 * (v >= 0), and returns it. */
static float f16_cover(float v, int k, uint8_t *p) {
    uint16_t h = hr_f32_to_f16(v / (float)k);
    while (hr_f16_to_f32(h) * (float)k < v && h < 0x7c00)
        h++;
    put_f16(p, h);
    return hr_f16_to_f32(h);
}

/* The multiple of unit (> 0) that covers v (>= 0), at most top. */
static int cover(float v, float unit, int top) {
    if (unit == 0) return 0;
    float c = ceilf(v / unit);
    return c > (float)top ? top : (int)c;
}

static int nearest(float v, int lo, int hi) {
    float r = roundf(v);
    return r < (float)lo ? lo : r > (float)hi ? hi : (int)r;
}

/* Q4_K / Q5_K's packing of eight 6-bit scales and mins into 12 bytes. */
static void pack_scale_min(uint8_t *s, const int *sc, const int *m) {
    for (int j = 0; j < 12; j++)
        s[j] = 0;
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            s[j] |= (uint8_t)sc[j];
            s[j + 4] |= (uint8_t)m[j];
        } else {
            s[j + 4] = (uint8_t)((sc[j] & 15) | (m[j] & 15) << 4);
            s[j - 4] |= (uint8_t)((sc[j] >> 4) << 6);
            s[j] |= (uint8_t)((m[j] >> 4) << 6);
        }
    }
}

/* The codes (0..top) of one super-block, y = d*sc*q - dmin*m: per sub-block of 32 the min
 * m (mins are clamped at 0, so the offset only subtracts) covers -min(x), then the step
 * covers max(x) + offset in top steps. */
static void q_kmin(const float *x, uint8_t *b, int top, uint8_t *q) {
    float mins[8], need[8], mmax = 0, nmax = 0;
    int sc[8], m[8];
    for (int j = 0; j < 8; j++) {
        float lo = 0, hi = x[j * 32];
        for (int l = 0; l < 32; l++) {
            lo = fminf(lo, x[j * 32 + l]);
            hi = fmaxf(hi, x[j * 32 + l]);
        }
        mins[j] = -lo;
        mmax = fmaxf(mmax, mins[j]);
        need[j] = hi;
    }
    float dmin = f16_cover(mmax, 63, b + 2);
    for (int j = 0; j < 8; j++) {
        m[j] = cover(mins[j], dmin, 63);
        need[j] = fmaxf(0, (need[j] + dmin * (float)m[j]) / (float)top);
        nmax = fmaxf(nmax, need[j]);
    }
    float d = f16_cover(nmax, 63, b);
    for (int j = 0; j < 8; j++) {
        sc[j] = cover(need[j], d, 63);
        float dl = d * (float)sc[j], ml = dmin * (float)m[j], id = dl == 0 ? 0 : 1 / dl;
        for (int l = 0; l < 32; l++)
            q[j * 32 + l] = (uint8_t)nearest((x[j * 32 + l] + ml) * id, 0, top);
    }
    pack_scale_min(b + 4, sc, m);
}

/* Sub-block j's codes as the low (j even) or high (j odd) nibbles of qs[32*(j/2) ..]. */
static void pack_nibbles(const uint8_t *q, uint8_t *qs) {
    for (int i = 0; i < 128; i++)
        qs[i] = 0;
    for (int e = 0; e < 256; e++) {
        int j = e / 32, l = e % 32;
        qs[j / 2 * 32 + l] |= (uint8_t)((q[e] & 15) << (4 * (j % 2)));
    }
}

void hr_quant_q4_k(const float *x, uint8_t *b) {
    uint8_t q[256];
    q_kmin(x, b, 15, q);
    pack_nibbles(q, b + 16);
}

/* Q5_K: as Q4_K, with bit j of qh[l] the fifth bit of element j*32 + l. */
void hr_quant_q5_k(const float *x, uint8_t *b) {
    uint8_t q[256], *qh = b + 16;
    q_kmin(x, b, 31, q);
    pack_nibbles(q, b + 48);
    for (int l = 0; l < 32; l++)
        qh[l] = 0;
    for (int e = 0; e < 256; e++)
        qh[e % 32] |= (uint8_t)((q[e] >> 4) << (e / 32));
}

/* Q6_K: per 16 elements an int8 scale of the f16 d; y = d*sc*(q - 32). The element of
 * largest magnitude takes the code -32 (the one the symmetric range [-31, 31] lacks) and
 * the others at most 31; |sc| rounds up against d = max|scale| / 127, so none clips. */
void hr_quant_q6_k(const float *x, uint8_t *b) {
    float scale[16], amax = 0;
    for (int j = 0; j < 16; j++) {
        float m = 0;
        for (int l = 0; l < 16; l++)
            if (fabsf(x[j * 16 + l]) > fabsf(m)) m = x[j * 16 + l];
        scale[j] = m / -32.0f;
        amax = fmaxf(amax, fabsf(scale[j]));
    }
    float d = f16_cover(amax, 127, b + 208);
    uint8_t *ql = b, *qh = b + 128;
    int8_t *sc = (int8_t *)(b + 192);
    for (int i = 0; i < 192; i++)
        b[i] = 0;
    for (int j = 0; j < 16; j++) {
        int s = cover(fabsf(scale[j]), d, 127);
        sc[j] = (int8_t)(scale[j] < 0 ? -s : s);
    }
    for (int e = 0; e < 256; e++) {
        float dl = d * (float)sc[e / 16];
        int q = nearest(dl == 0 ? 0 : x[e] / dl, -32, 31) + 32;
        int h = e / 128, s = e % 128 / 32, l = e % 32;
        ql[h * 64 + (s % 2) * 32 + l] |= (uint8_t)((q & 15) << (4 * (s / 2)));
        qh[h * 32 + l] |= (uint8_t)((q >> 4) << (2 * s));
    }
}
