/* Plain C 8-bit-activation dot products (qdot.h): the definition of what the SIMD variants
 * compute, the kernels on CPUs without AVX2, and the activation quantizer all levels use. */
#include <math.h>

#include "backend/cpu/qdot.h"
#include "base/cpu.h"

void hr_q8x_quantize(const float *x, hr_q8x *out, long K) {
    for (long b = 0; b < K / 32; b++, x += 32, out++) {
        float am = 0;
        for (int j = 0; j < 32; j++) am = fmaxf(am, fabsf(x[j]));
        float d = am / 127.0f, id = d == 0 ? 0.0f : 1.0f / d;
        int s = 0;
        for (int j = 0; j < 32; j++) {
            out->q[j] = (int8_t)roundf(x[j] * id);
            s += out->q[j];
        }
        out->d = d;
        out->sum = s;
    }
}

static float f16(const uint8_t *p) { return hr_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

static float dot_q8_0(const void *wv, const hr_q8x *x, long nb) {
    const uint8_t *w = wv;
    float acc = 0;
    for (long b = 0; b < nb; b++, w += 34) {
        int s = 0;
        for (int j = 0; j < 32; j++) s += (int8_t)w[2 + j] * x[b].q[j];
        acc += f16(w) * x[b].d * (float)s;
    }
    return acc;
}

static float dot_q4_0(const void *wv, const hr_q8x *x, long nb) {
    const uint8_t *w = wv;
    float acc = 0;
    for (long b = 0; b < nb; b++, w += 18) {
        int s = 0;
        for (int j = 0; j < 16; j++)
            s += ((w[2 + j] & 15) - 8) * x[b].q[j] + ((w[2 + j] >> 4) - 8) * x[b].q[j + 16];
        acc += f16(w) * x[b].d * (float)s;
    }
    return acc;
}

static float dot_q5_0(const void *wv, const hr_q8x *x, long nb) {
    const uint8_t *w = wv;
    float acc = 0;
    for (long b = 0; b < nb; b++, w += 22) {
        uint32_t qh = (uint32_t)w[2] | (uint32_t)w[3] << 8 | (uint32_t)w[4] << 16 | (uint32_t)w[5] << 24;
        int s = 0;
        for (int j = 0; j < 16; j++) {
            int lo = (w[6 + j] & 15) | (int)(qh >> j & 1) << 4;
            int hi = (w[6 + j] >> 4) | (int)(qh >> (j + 16) & 1) << 4;
            s += (lo - 16) * x[b].q[j] + (hi - 16) * x[b].q[j + 16];
        }
        acc += f16(w) * x[b].d * (float)s;
    }
    return acc;
}

/* Q4_K: per 32-element sub-block j, d*sc_j * (q . x_j) - dmin*m_j * sum(x_j). */
static float dot_q4_k(const void *wv, const hr_q8x *x, long nb) {
    const uint8_t *w = wv;
    float acc = 0, mins = 0;
    for (long sb = 0; sb < nb / 8; sb++, w += 144, x += 8) {
        float d = f16(w), dmin = f16(w + 2);
        const uint8_t *s = w + 4, *qs = w + 16;
        for (int j = 0; j < 8; j++) {
            int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
            int m = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | (s[j] >> 6) << 4;
            int dotj = 0;
            for (int l = 0; l < 32; l++) dotj += (qs[j / 2 * 32 + l] >> (4 * (j % 2)) & 15) * x[j].q[l];
            acc += d * (float)sc * x[j].d * (float)dotj;
            mins += dmin * (float)m * x[j].d * (float)x[j].sum;
        }
    }
    return acc - mins;
}

/* Q6_K: x block j holds sub-blocks 2j and 2j + 1 (16 elements each, own int8 scale). */
static float dot_q6_k(const void *wv, const hr_q8x *x, long nb) {
    const uint8_t *w = wv;
    float acc = 0;
    for (long sb = 0; sb < nb / 8; sb++, w += 210, x += 8) {
        const uint8_t *ql = w, *qh = w + 128;
        const int8_t *sc = (const int8_t *)(w + 192);
        float d = f16(w + 208);
        for (int j = 0; j < 8; j++) {
            int h = j / 4, s = j % 4, half[2] = {0, 0};
            for (int l = 0; l < 32; l++) {
                int lo = ql[h * 64 + (s % 2) * 32 + l] >> (4 * (s / 2)) & 15;
                int q = (lo | (qh[h * 32 + l] >> (2 * s) & 3) << 4) - 32;
                half[l / 16] += q * x[j].q[l];
            }
            acc += d * x[j].d * (float)(sc[2 * j] * half[0] + sc[2 * j + 1] * half[1]);
        }
    }
    return acc;
}

const hr_cpu_qdots hr_cpu_qdots_ref = {
    "generic",
    {[HR_Q8_0] = dot_q8_0, [HR_Q4_0] = dot_q4_0, [HR_Q5_0] = dot_q5_0, [HR_Q4_K] = dot_q4_k,
     [HR_Q6_K] = dot_q6_k},
    {0}, /* four tokens are four dots */
};

const hr_cpu_qdots *hr_cpu_qdots_get(void) {
    const hr_cpu_features *f = hr_cpu();
    if (f->level == HR_CPU_AVX512 && f->avx512vnni) return &hr_cpu_qdots_vnni;
    if (f->level >= HR_CPU_AVX2) return &hr_cpu_qdots_avx2;
    return &hr_cpu_qdots_ref;
}
