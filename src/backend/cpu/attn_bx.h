/* The bf16-product attention kernels (attn_bx_avx512.c): used by attention.c with
 * --compute bf16 over a bf16 KV store on CPUs with AVX-512 BF16, head_dim a multiple of 32. */
#ifndef HR_BACKEND_CPU_ATTN_BX_H
#define HR_BACKEND_CPU_ATTN_BX_H

#include <stdint.h>

typedef struct {
    /* q . k over n bf16 pairs, summed as mm_bx's tiles sum one output. */
    float (*dot)(const uint16_t *q, const uint16_t *k, int n);
    /* dst[p][d][2] = rows 2p and 2p + 1 of v[2 np][hd] (hd a multiple of 32). */
    void (*pairs)(uint16_t *dst, const uint16_t *v, int np, int hd);
    /* y[0..n) = x rounded to bf16, nearest even (n a multiple of 16). */
    void (*round)(uint16_t *y, const float *x, int n);
    /* o[i] += p[i] V for queries i < n, positions in pairs 0..np in order: V as pairs gave
       it, p[i * p_ld + 2j], p[.. + 2j + 1] the weights of pair j (hd a multiple of 16). */
    void (*pv)(float *const *o, const uint16_t *p, long p_ld, int n, const uint16_t *vp, int np,
               int hd);
} hr_attn_bx;

extern const hr_attn_bx hr_attn_bx_avx512;

#endif
