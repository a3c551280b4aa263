/* Plain C 8-bit-activation dot products (qdot.h): the definition of what the SIMD variants
 * compute, the kernels on CPUs without AVX2, and the activation quantizer all levels use. */
#include <math.h>
#include <string.h>

#include "backend/cpu/qdot.h"
#include "base/cpu.h"

void hr_q8x_quantize(const float *x, hr_q8x *out, long K, int paired) {
    long nb = K / 32;
    if (nb % 8) memset(out + nb / 8, 0, sizeof *out);
    for (long b = 0; b < nb; b++, x += 32) {
        hr_q8x *g = out + b / 8;
        int i = (int)(b % 8), s = 0;
        float am = 0;
        for (int j = 0; j < 32; j++)
            am = fmaxf(am, fabsf(x[j]));
        float d = am / 127.0f, id = d == 0 ? 0.0f : 1.0f / d;
        for (int j = 0; j < 32; j++) {
            int8_t q = (int8_t)roundf(x[j] * id);
            g->q[hr_q8x_pos(paired, i, j)] = q;
            s += q;
        }
        g->d[i] = d;
        g->sum[i] = s;
    }
}

void hr_q8k_quantize(const float *x, hr_q8k *out, long K) {
    for (long b = 0; b < K / 256; b++, x += 256, out++) {
        float am = 0;
        for (int j = 0; j < 256; j++)
            am = fmaxf(am, fabsf(x[j]));
        float d = am / 127.0f, id = d == 0 ? 0.0f : 1.0f / d;
        for (int j = 0; j < 256; j++)
            out->q[j] = (int8_t)roundf(x[j] * id);
        for (int j = 0; j < 16; j++) {
            int s = 0;
            for (int l = 0; l < 16; l++)
                s += out->q[16 * j + l];
            out->s16[j] = (int16_t)s;
        }
        for (int j = 0; j < 8; j++)
            out->s32[j] = (int16_t)(out->s16[2 * j] + out->s16[2 * j + 1]);
        out->d = d;
    }
}

void hr_qx_quantize(hr_dtype t, const float *x, void *out, long K) {
    if (hr_qdot_q8k(t))
        hr_q8k_quantize(x, out, K);
    else
        hr_q8x_quantize(x, out, K, hr_qdot_paired(t));
}

static float f16(const uint8_t *p) { return hr_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

static float dot_q8_0(const void *wv, const void *xv, long nb) {
    const uint8_t *w = wv;
    const hr_q8x *x = xv;
    float acc = 0;
    for (long b = 0; b < nb; b++, w += 34) {
        int s = 0;
        const hr_q8x *g = x + b / 8;
        for (int j = 0; j < 32; j++)
            s += (int8_t)w[2 + j] * g->q[hr_q8x_pos(0, (int)(b % 8), j)];
        acc += f16(w) * g->d[b % 8] * (float)s;
    }
    return acc;
}

static float dot_q4_0(const void *wv, const void *xv, long nb) {
    const uint8_t *w = wv;
    const hr_q8x *x = xv;
    float acc = 0;
    for (long b = 0; b < nb; b++, w += 18) {
        const int8_t *q = x[b / 8].q;
        int i = (int)(b % 8), s = 0;
        for (int j = 0; j < 16; j++) {
            s += ((w[2 + j] & 15) - 8) * q[hr_q8x_pos(1, i, j)];
            s += ((w[2 + j] >> 4) - 8) * q[hr_q8x_pos(1, i, j + 16)];
        }
        acc += f16(w) * x[b / 8].d[b % 8] * (float)s;
    }
    return acc;
}

static float dot_q5_0(const void *wv, const void *xv, long nb) {
    const uint8_t *w = wv;
    const hr_q8x *x = xv;
    float acc = 0;
    for (long b = 0; b < nb; b++, w += 22) {
        uint32_t qh =
            (uint32_t)w[2] | (uint32_t)w[3] << 8 | (uint32_t)w[4] << 16 | (uint32_t)w[5] << 24;
        const int8_t *q = x[b / 8].q;
        int i = (int)(b % 8), s = 0;
        for (int j = 0; j < 16; j++) {
            int lo = (w[6 + j] & 15) | (int)(qh >> j & 1) << 4;
            int hi = (w[6 + j] >> 4) | (int)(qh >> (j + 16) & 1) << 4;
            s += (lo - 16) * q[hr_q8x_pos(1, i, j)] + (hi - 16) * q[hr_q8x_pos(1, i, j + 16)];
        }
        acc += f16(w) * x[b / 8].d[b % 8] * (float)s;
    }
    return acc;
}

/* Q4_K / Q5_K (five: the fifth bit j of qh[l] for sub-block j): per 32-element sub-block j,
 * d*sc_j * (q . x_j) - dmin*m_j * sum(x_j); the eight sub-blocks sum in integers, then one
 * scale by x's d per super-block. */
static float dot_qk(int five, const void *wv, const void *xv, long nb) {
    const uint8_t *w = wv;
    const hr_q8k *x = xv;
    float acc = 0;
    for (long sb = 0; sb < nb / 8; sb++, w += five ? 176 : 144, x++) {
        const uint8_t *s = w + 4, *qh = w + 16, *qs = w + (five ? 48 : 16);
        int isum = 0, msum = 0;
        for (int j = 0; j < 8; j++) {
            int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
            int m = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | (s[j] >> 6) << 4;
            int dotj = 0;
            for (int l = 0; l < 32; l++) {
                int q = qs[j / 2 * 32 + l] >> (4 * (j % 2)) & 15;
                if (five) q |= (qh[l] >> j & 1) << 4;
                dotj += q * x->q[32 * j + l];
            }
            isum += sc * dotj;
            msum += m * x->s32[j];
        }
        acc += x->d * (f16(w) * (float)isum - f16(w + 2) * (float)msum);
    }
    return acc;
}

static float dot_q4_k(const void *w, const void *x, long nb) { return dot_qk(0, w, x, nb); }
static float dot_q5_k(const void *w, const void *x, long nb) { return dot_qk(1, w, x, nb); }

/* Q6_K: 16 sub-blocks of 16 elements with int8 scales, summed in integers per super-block. */
static float dot_q6_k(const void *wv, const void *xv, long nb) {
    const uint8_t *w = wv;
    const hr_q8k *x = xv;
    float acc = 0;
    for (long sb = 0; sb < nb / 8; sb++, w += 210, x++) {
        const uint8_t *ql = w, *qh = w + 128;
        const int8_t *sc = (const int8_t *)(w + 192);
        int isum = 0;
        for (int j = 0; j < 8; j++) {
            int h = j / 4, s = j % 4, half[2] = {0, 0};
            for (int l = 0; l < 32; l++) {
                int lo = ql[h * 64 + (s % 2) * 32 + l] >> (4 * (s / 2)) & 15;
                int q = (lo | (qh[h * 32 + l] >> (2 * s) & 3) << 4) - 32;
                half[l / 16] += q * x->q[32 * j + l];
            }
            isum += sc[2 * j] * half[0] + sc[2 * j + 1] * half[1];
        }
        acc += x->d * (f16(w + 208) * (float)isum);
    }
    return acc;
}

const hr_cpu_qdots hr_cpu_qdots_ref = {
    "generic",
    {[HR_Q8_0] = dot_q8_0,
     [HR_Q4_0] = dot_q4_0,
     [HR_Q5_0] = dot_q5_0,
     [HR_Q4_K] = dot_q4_k,
     [HR_Q5_K] = dot_q5_k,
     [HR_Q6_K] = dot_q6_k},
    {0}, /* four tokens are four dots */
    {[HR_Q8_0] = hr_qrows_ref_q8_0,
     [HR_Q4_0] = hr_qrows_ref_q4_0,
     [HR_Q5_0] = hr_qrows_ref_q5_0,
     [HR_Q4_K] = hr_qrows_ref_q4_k,
     [HR_Q5_K] = hr_qrows_ref_q5_k,
     [HR_Q6_K] = hr_qrows_ref_q6_k},
    {0},
    {0}, /* four tokens of two tiles are rows4 per tile */
    hr_qx_quantize,
};

const hr_cpu_qdots *hr_cpu_qdots_get(void) {
    const hr_cpu_features *f = hr_cpu();
    if (f->level == HR_CPU_AVX512 && f->avx512vnni) return &hr_cpu_qdots_vnni;
    if (f->level >= HR_CPU_AVX2) return &hr_cpu_qdots_avx2;
    return &hr_cpu_qdots_ref;
}
