/* The bf16-product attention kernels (attn_bx_avx512.c): used by attention.c with
 * --compute bf16 over a bf16 KV store on CPUs with AVX-512 BF16, head_dim a multiple of 32. */
#ifndef HR_BACKEND_CPU_ATTN_BX_H
#define HR_BACKEND_CPU_ATTN_BX_H

#include <stdint.h>

typedef struct {
    /* dst[e][j][2] = elements 2e, 2e + 1 of rows[j] for e < hd / 2, j < n rounded up to 16
       (hd a multiple of 32; a NULL row and those past n are zeros): K for Q K^T on pv. */
    void (*kt)(uint16_t *dst, const uint16_t *const *rows, int n, int hd);
    /* dst[p][d][2] = element d of rows[2p] and rows[2p + 1] for p < (n + 1) / 2 (hd a
       multiple of 32; a NULL row and the pad of an odd n are zeros): V for P V on pv. */
    void (*pairs)(uint16_t *dst, const uint16_t *const *rows, int n, int hd);
    /* y[0..n) = x rounded to bf16, nearest even (n a multiple of 16). */
    void (*round)(uint16_t *y, const float *x, int n);
    /* o[i][0..hd) += sum over pairs j < np, in order, of p[i * p_ld + 2j .. + 1] times the
       pair j of vp (vp[j][d][2], as pairs or kt give it; hd a multiple of 16). */
    void (*pv)(float *const *o, const uint16_t *p, long p_ld, int n, const uint16_t *vp, int np,
               int hd);
} hr_attn_bx;

extern const hr_attn_bx hr_attn_bx_avx512;

#endif
