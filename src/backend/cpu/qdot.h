/* 8-bit-activation dot products for quantized weights: x is quantized to int8 with an f32
 * scale per 32 elements (hr_q8x, the activation side of llama.cpp's q8_0, kept in groups of
 * 8 blocks so that SIMD code loads 8 scales at once) or, for the
 * K-quants, per 256 (hr_q8k, llama.cpp's q8_K: a super-block's sub-blocks then sum in
 * integers); each weight block multiplies it in integers, and the block results accumulate
 * in f32. One table per
 * instruction-set level; the plain C one (qdot_ref.c) is the definition the AVX2 and
 * AVX-512 VNNI variants (qdot_x86.h) are tested against. A dot never depends on other rows
 * or tokens, so matmuls built on it are batch invariant. */
#ifndef HR_BACKEND_CPU_QDOT_H
#define HR_BACKEND_CPU_QDOT_H

#include <stddef.h>
#include <stdint.h>

#include "tensor/dtype.h"

/* Eight blocks of 32 elements (block b of a row is group b / 8, slot b % 8; a row's last
 * group is zero past its last block), in the element order hr_q8x_pos gives. */
typedef struct {
    _Alignas(32) int8_t q[256]; /* block i ~ d[i] * its 32 q */
    float d[8];
    int32_t sum[8]; /* sum of block i's q (the offsets of unsigned weight codes) */
} hr_q8x;

/* Where element j of block i sits in its group's q: in order, or paired the way a 16-byte
 * load of nibbles covers two blocks (Q4_0, Q5_0: the low 16 elements of blocks 2p and
 * 2p + 1, then their high 16). */
static inline int hr_q8x_pos(int paired, int i, int j) {
    return paired ? (i & ~1) * 32 + (j / 16) * 32 + (i & 1) * 16 + j % 16 : i * 32 + j;
}

/* x per 256 elements for the K-quants; the size of an hr_q8x, so a row of x takes the same
 * bytes in either form. */
typedef struct {
    _Alignas(32) int8_t q[256]; /* x ~ d * q */
    int16_t s16[16];            /* sums of q per 16 (Q6_K's -32 offsets) */
    int16_t s32[8];             /* and per 32 (Q4_K's mins) */
    float d;
} hr_q8k;
_Static_assert(sizeof(hr_q8k) == sizeof(hr_q8x), "a row of x takes the same bytes either way");

/* w: one weight row of nb * 32 elements in its block format; x: the row's activation blocks
 * (hr_q8x, or hr_q8k where hr_qdot_q8k(type)). */
typedef float (*hr_qdot_fn)(const void *w, const void *x, long nb);
/* The same row with four tokens' activations x, x + xs, x + 2 xs, x + 3 xs (xs in bytes):
 * out[t] is bit for bit dot(w, x + t xs, nb), the weight decoded once for the four
 * (prefill). */
typedef void (*hr_qdot4_fn)(const void *w, const void *x, size_t xs, long nb, float *out);

/* A tile of HR_QROWS repacked rows (qrepack.h; 8) times one token's activations x (rows1)
 * or four tokens' x + t xs (rows4): out[8 t + r] is row r times token t, and rows4's token t
 * is bit for bit rows1 of it (each row's dot still never depends on other tokens). */
typedef void (*hr_qrows_fn)(const void *tile, const void *x, size_t xs, long nb, float *out);

typedef struct {
    const char *name;
    hr_qdot_fn dot[HR_DTYPE_COUNT];    /* NULL: the type multiplies through dequantized f32 rows */
    hr_qdot4_fn dot4[HR_DTYPE_COUNT];  /* NULL: four calls of dot */
    hr_qrows_fn rows1[HR_DTYPE_COUNT]; /* the repacked types (qrepack.h): one token */
    hr_qrows_fn rows4[HR_DTYPE_COUNT]; /* and four; NULL: four calls of rows1 */
    /* two consecutive tiles (16 rows) and four tokens, out[16 t + r], bit for bit rows4 of
     * each (prefill only: for one token two streams a thread read slower); NULL: rows4 per
     * tile */
    hr_qrows_fn rows4x2[HR_DTYPE_COUNT];
    /* hr_qx_quantize, bit for bit */
    void (*quantize)(hr_dtype t, const float *x, void *out, long K);
} hr_cpu_qdots;

extern const hr_cpu_qdots hr_cpu_qdots_ref;
/* The plain C repacked tiles (qdot_rows_ref.c), the definition the SIMD ones match. */
void hr_qrows_ref_q4_0(const void *tile, const void *x, size_t xs, long nb, float *out);
void hr_qrows_ref_q5_0(const void *tile, const void *x, size_t xs, long nb, float *out);
void hr_qrows_ref_q8_0(const void *tile, const void *x, size_t xs, long nb, float *out);
void hr_qrows_ref_q4_k(const void *tile, const void *x, size_t xs, long nb, float *out);
void hr_qrows_ref_q5_k(const void *tile, const void *x, size_t xs, long nb, float *out);
void hr_qrows_ref_q6_k(const void *tile, const void *x, size_t xs, long nb, float *out);
extern const hr_cpu_qdots hr_cpu_qdots_avx2;
extern const hr_cpu_qdots hr_cpu_qdots_vnni;

/* The table for the current hr_cpu() level (VNNI only where cpuid has it). */
const hr_cpu_qdots *hr_cpu_qdots_get(void);

/* x[K] (K a multiple of 32) into K / 32 blocks: d = max |x| / 127, q = round(x / d). */
void hr_q8x_quantize(const float *x, hr_q8x *out, long K, int paired);
/* The same per 256 elements (K a multiple of 256). */
void hr_q8k_quantize(const float *x, hr_q8k *out, long K);

/* Whether the dots of weight type t take hr_q8k activations (the K-quants), and whether
 * its hr_q8x are paired. */
static inline int hr_qdot_q8k(hr_dtype t) { return t == HR_Q4_K || t == HR_Q5_K || t == HR_Q6_K; }
static inline int hr_qdot_paired(hr_dtype t) { return t == HR_Q4_0 || t == HR_Q5_0; }
/* Bytes of one row of K activations in either form. */
static inline size_t hr_qx_row_bytes(long K) { return sizeof(hr_q8x) * (size_t)((K + 255) / 256); }
/* x[K] quantized the way the dots of weight type t take it (hr_qx_row_bytes(K) at out). */
void hr_qx_quantize(hr_dtype t, const float *x, void *out, long K);

#endif
