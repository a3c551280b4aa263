/* 8-bit-activation dot products for quantized weights: x is quantized per 32 elements to
 * int8 with an f32 scale (hr_q8x, the activation side of llama.cpp's q8_0), each weight
 * block multiplies it in integers, and the block results accumulate in f32. One table per
 * instruction-set level; the plain C one (qdot_ref.c) is the definition the AVX2 and
 * AVX-512 VNNI variants (qdot_x86.h) are tested against. A dot never depends on other rows
 * or tokens, so matmuls built on it are batch invariant. */
#ifndef HR_BACKEND_CPU_QDOT_H
#define HR_BACKEND_CPU_QDOT_H

#include <stdint.h>

#include "tensor/dtype.h"

typedef struct {
    float d;     /* x ~ d * q */
    int32_t sum; /* sum of q (the min terms of Q4_K) */
    int8_t q[32];
} hr_q8x;

/* w: one weight row of nb * 32 elements in its block format; x: the row's nb blocks. */
typedef float (*hr_qdot_fn)(const void *w, const hr_q8x *x, long nb);
/* The same row with four tokens' blocks x, x + xs, x + 2 xs, x + 3 xs: out[t] is bit for bit
 * dot(w, x + t xs, nb), the weight decoded once for the four (prefill). */
typedef void (*hr_qdot4_fn)(const void *w, const hr_q8x *x, long xs, long nb, float *out);

typedef struct {
    const char *name;
    hr_qdot_fn dot[HR_DTYPE_COUNT]; /* NULL: the type multiplies through dequantized f32 rows */
    hr_qdot4_fn dot4[HR_DTYPE_COUNT]; /* NULL: four calls of dot */
} hr_cpu_qdots;

extern const hr_cpu_qdots hr_cpu_qdots_ref;
extern const hr_cpu_qdots hr_cpu_qdots_avx2;
extern const hr_cpu_qdots hr_cpu_qdots_vnni;

/* The table for the current hr_cpu() level (VNNI only where cpuid has it). */
const hr_cpu_qdots *hr_cpu_qdots_get(void);

/* x[K] (K a multiple of 32) into K / 32 blocks: d = max |x| / 127, q = round(x / d). */
void hr_q8x_quantize(const float *x, hr_q8x *out, long K);

#endif
