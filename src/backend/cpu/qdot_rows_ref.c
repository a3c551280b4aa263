/* Plain C repacked tiles (qrepack.h): 8 rows times one token's 8-bit activations, each
 * row's integer dot per block (the K-quants: per super-block), then per row acc = fma(dot, w_d *
 * x_d, acc); the definition of what the SIMD tiles (qdot_rows_x86.h) compute, bit for bit. xs is
 * unused: one token. */
#include <math.h>
#include <string.h>

#include "backend/cpu/qdot.h"
#include "backend/cpu/qrepack.h"
#include "tensor/dtype.h"

static float f16(const uint8_t *p) { return hr_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

enum { Q8_0_R, Q4_0_R, Q5_0_R }; /* the formats with a scale per 32 */

/* Row r's integer dot with block i of group g: Q4_0 codes less 8 times the paired x, Q5_0's
 * (fifth bit of element 4v + k at bit 8k + v of the row's qh at 16 + 4r) less 16, Q8_0's
 * (stored XOR 0x80) times x in order. */
static int row_dot(int f, const uint8_t *o, int r, const hr_q8x *g, int i) {
    const uint8_t *codes = o + 2 * HR_QROWS + (f == Q5_0_R ? 32 : 0);
    uint32_t qh = 0;
    if (f == Q5_0_R) memcpy(&qh, o + 16 + 4 * r, 4);
    int s = 0, off = f == Q5_0_R ? 16 : 8;
    for (int c = 0; c < (f == Q8_0_R ? 8 : 4); c++)
        for (int k = 0; k < 4; k++) {
            uint8_t v = codes[32 * c + 4 * r + k];
            int j = 4 * c + k;
            if (f == Q8_0_R) {
                s += (int8_t)(v ^ 0x80) * g->q[hr_q8x_pos(0, i, j)];
                continue;
            }
            int lo = (v & 15) | (qh >> (8 * k + c) & 1) << 4;
            int hi = (v >> 4) | (qh >> (8 * k + c + 4) & 1) << 4;
            s += (lo - off) * g->q[hr_q8x_pos(1, i, j)] +
                 (hi - off) * g->q[hr_q8x_pos(1, i, j + 16)];
        }
    return s;
}

static void rows(int f, const void *tile, const void *xv, long nb, float *out) {
    const uint8_t *w = tile;
    const hr_q8x *x = xv;
    float acc[HR_QROWS] = {0};
    int bb = f == Q8_0_R ? 34 : f == Q4_0_R ? 18 : 22;
    for (long b = 0; b < nb; b++, w += HR_QROWS * bb) {
        const hr_q8x *g = x + b / 8;
        int i = (int)(b % 8);
        for (int r = 0; r < HR_QROWS; r++)
            acc[r] = fmaf((float)row_dot(f, w, r, g, i), f16(w + 2 * r) * g->d[i], acc[r]);
    }
    for (int r = 0; r < HR_QROWS; r++)
        out[r] = acc[r];
}

/* Q4_K / Q5_K (x per 256, hr_q8k): per super-block and row, the sub-blocks' code dots
 * (Q5_K's fifth bit j of qh[l] for sub-block j: its 8 chunks before the nibbles) times their
 * scales and the mins times x's sums per 32 sum in integers; then acc = fma(isum, d x_d,
 * acc) and acc = fma(-msum, dmin x_d, acc). */
static void rows_qk(int five, const void *tile, const void *xv, long nb, float *out) {
    const uint8_t *o = tile;
    const hr_q8k *x = xv;
    float acc[HR_QROWS] = {0};
    int nibbles = 128 + (five ? 256 : 0);
    for (long sb = 0; sb < nb / 8; sb++, o += HR_QROWS * (five ? 176 : 144), x++)
        for (int r = 0; r < HR_QROWS; r++) {
            int isum = 0, msum = 0;
            for (int j = 0; j < 8; j++) {
                int sc = o[32 + 8 * j + r] & 63;
                int m = o[32 + 8 * j + r] >> 6 | (o[96 + 4 * j + r % 4] >> 4 * (r / 4) & 15) << 2;
                int dot = 0;
                for (int l = 0; l < 32; l++) {
                    int at = 32 * (l / 4) + 4 * r + l % 4;
                    int q = o[nibbles + 256 * (j / 2) + at] >> 4 * (j % 2) & 15;
                    if (five) q |= (o[128 + at] >> j & 1) << 4;
                    dot += q * x->q[32 * j + l];
                }
                isum += sc * dot;
                msum += m * x->s32[j];
            }
            acc[r] = fmaf((float)isum, f16(o + 2 * r) * x->d, acc[r]);
            acc[r] = fmaf(-(float)msum, f16(o + 16 + 2 * r) * x->d, acc[r]);
        }
    for (int r = 0; r < HR_QROWS; r++)
        out[r] = acc[r];
}

void hr_qrows_ref_q4_k(const void *tile, const void *x, size_t xs, long nb, float *out) {
    rows_qk(0, tile, x, nb, out);
}

void hr_qrows_ref_q5_k(const void *tile, const void *x, size_t xs, long nb, float *out) {
    rows_qk(1, tile, x, nb, out);
}

/* Q6_K: per super-block and row, each 16-element sub-block k's code dot (low 4 bits from
 * ql's chunks, high 2 from qh's, GGUF order within them) less 32 times x's sum per 16, times
 * its int8 scale, summed in integers; then acc = fma(isum, d x_d, acc). ql / qh byte j of
 * row r is at 144 + 32 hr_q6_k_chunk(j / 4) + 4r + j % 4. */
void hr_qrows_ref_q6_k(const void *tile, const void *xv, size_t xs, long nb, float *out) {
    const uint8_t *o = tile;
    const hr_q8k *x = xv;
    float acc[HR_QROWS] = {0};
    for (long sb = 0; sb < nb / 8; sb++, o += HR_QROWS * 210, x++)
        for (int r = 0; r < HR_QROWS; r++) {
            int isum = 0;
            for (int k = 0; k < 16; k++) {
                int j = k / 2, h = j / 4, s = j % 4, dot = 0;
                for (int l = 16 * (k % 2); l < 16 * (k % 2) + 16; l++) {
                    int ql = h * 64 + (s % 2) * 32 + l, qh = 128 + h * 32 + l;
                    int lo =
                        o[144 + 32 * hr_q6_k_chunk(ql / 4) + 4 * r + ql % 4] >> 4 * (s / 2) & 15;
                    int hi = o[144 + 32 * hr_q6_k_chunk(qh / 4) + 4 * r + qh % 4] >> 2 * s & 3;
                    dot += (lo | hi << 4) * x->q[32 * j + l];
                }
                isum += (int8_t)o[16 + 8 * k + r] * (dot - 32 * x->s16[k]);
            }
            acc[r] = fmaf((float)isum, f16(o + 2 * r) * x->d, acc[r]);
        }
    for (int r = 0; r < HR_QROWS; r++)
        out[r] = acc[r];
}

void hr_qrows_ref_q4_0(const void *tile, const void *x, size_t xs, long nb, float *out) {
    rows(Q4_0_R, tile, x, nb, out);
}

void hr_qrows_ref_q5_0(const void *tile, const void *x, size_t xs, long nb, float *out) {
    rows(Q5_0_R, tile, x, nb, out);
}

void hr_qrows_ref_q8_0(const void *tile, const void *x, size_t xs, long nb, float *out) {
    rows(Q8_0_R, tile, x, nb, out);
}
