/* GGUF block-quantized weights on the GPU, read in their file layout (tensor/quant.h is the
 * definition): Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K. Every kernel decodes a
 * weight row in pieces of 8 consecutive elements (a quarter of a 32-element unit: a Q*_0/Q*_1
 * block or a K-quant sub-block), in the reference's arithmetic (scale * q - min in f32), so a
 * decoded weight equals hr_dequant_row's bit for bit.
 * Matrices of every format but Q4_K and Q5_K are uploaded in the planar layout
 * (tensor/qplanes.h) and read from it here.
 * - small-batch products (T <= HR_CU_GEMV_MAX_T rows) of the formats without an 8-bit-activation
 *   product (mmvq.cu), or all with HEARTH_CUDA_QGEMV=f32: a block per QGEMV_R output rows, its
 *   warps splitting K; lane l takes piece l % 4 of unit l / 4 of each group of 8 units, so 4
 *   lanes read 128 contiguous bytes of x, and each piece of x read serves the block's R rows
 *   (x is f32: read once per row it would cost the L1 several times the weights' bytes). Codes
 *   become floats through the mantissa of 2^23 (no int-to-float conversion, a quarter-rate
 *   instruction that bounded the first version at ~1 TB/s), and the scale multiplies a
 *   piece's sum, not each element;
 * - larger batches: the matrix decoded to f16 rows for cuBLAS (cuda_ops.c);
 * - embedding rows of a quantized table. */
#include "backend/cuda/qfields.cuh"

/* Rows per warp of the small-batch product (each piece of x read serves R rows), for matrices
 * of at least QGEMV_R_MIN_N rows; smaller ones take a row per warp, or too few warps would
 * run. */
enum { QGEMV_WARPS = 4, QGEMV_R = 4, QGEMV_R_MIN_N = 4096 };

/* 8 bytes at p (2-byte aligned), little-endian, as two words. */
static __device__ __forceinline__ uint2 ld8_a2(const uint8_t *p) {
    const unsigned short *h = (const unsigned short *)p;
    return make_uint2(h[0] | (uint32_t)h[1] << 16, h[2] | (uint32_t)h[3] << 16);
}

static __device__ __forceinline__ uint2 ld8_a4(const uint8_t *p) {
    const uint32_t *w = (const uint32_t *)p;
    return make_uint2(w[0], w[1]);
}

static __device__ __forceinline__ uint32_t ld4_a2(const uint8_t *p) {
    const unsigned short *h = (const unsigned short *)p;
    return h[0] | (uint32_t)h[1] << 16;
}

/* Eight consecutive elements of a row: element i = scale * (c_i - z) + offset, c_i byte i of
 * the code words (0..255). */
typedef struct {
    uint2 c;
    float z, scale, offset;
} piece8;

/* c_i - z as an exact float without an int-to-float conversion (a quarter-rate instruction):
 * byte i placed in the mantissa of 2^23. */
static __device__ __forceinline__ float code(const piece8 &p, int i) {
    uint32_t w = i < 4 ? p.c.x : p.c.y;
    return __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7440u + (unsigned)(i & 3))) -
           (8388608.0f + p.z);
}

static __device__ __forceinline__ uint2 nibbles(uint2 q, int sh) {
    return make_uint2(q.x >> sh & 0x0F0F0F0Fu, q.y >> sh & 0x0F0F0F0Fu);
}

/* Elements 8p .. 8p+7 of unit u (32 elements) of a row of nb units in format Q, in the file
 * layout or (pl: every format but Q4_K / Q5_K) the planar one of tensor/qplanes.h. */
template <int Q>
static __device__ __forceinline__ piece8 piece(const uint8_t *row, long u, int p, long nb,
                                               bool pl) {
    piece8 r;
    r.offset = 0;
    if (Q == HR_CU_Q8_0) {
        const uint8_t *b = row + u * 34;
        uint2 q = pl ? ld8_a4(row + 32 * u + 8 * p) : ld8_a2(b + 2 + 8 * p);
        r.c = make_uint2(q.x ^ 0x80808080u, q.y ^ 0x80808080u); /* int8 + 128 */
        r.z = 128;
        r.scale = hr_q_f16(pl ? row + 32 * nb + 2 * u : b);
    } else if (Q == HR_CU_Q4_0 || Q == HR_CU_Q4_1) {
        /* element j in the low nibble of qs[j], j + 16 in the high */
        const uint8_t *b = row + u * (Q == HR_CU_Q4_0 ? 18 : 20);
        const uint8_t *qs = (pl ? row + 16 * u : b + (Q == HR_CU_Q4_0 ? 2 : 4)) + 8 * (p & 1);
        const uint8_t *sc = pl ? row + 16 * nb + (Q == HR_CU_Q4_0 ? 2 : 4) * u : b;
        r.c = nibbles(pl || Q == HR_CU_Q4_1 ? ld8_a4(qs) : ld8_a2(qs), 4 * (p >> 1));
        r.z = Q == HR_CU_Q4_0 ? 8 : 0;
        r.scale = hr_q_f16(sc);
        if (Q == HR_CU_Q4_1) r.offset = hr_q_f16(sc + 2);
    } else if (Q == HR_CU_Q5_0 || Q == HR_CU_Q5_1) {
        const uint8_t *b = row + u * (Q == HR_CU_Q5_0 ? 22 : 24);
        const uint8_t *hq = pl ? row + 16 * nb + 4 * u : b + (Q == HR_CU_Q5_0 ? 2 : 4);
        const uint8_t *qs = (pl ? row + 16 * u : hq + 4) + 8 * (p & 1);
        const uint8_t *sc = pl ? row + 20 * nb + (Q == HR_CU_Q5_0 ? 2 : 4) * u : b;
        bool a4 = pl || Q == HR_CU_Q5_1; /* qh and the codes 4-byte aligned */
        uint32_t qh = (a4 ? *(const uint32_t *)hq : ld4_a2(hq)) >> (8 * p);
        uint2 q = nibbles(a4 ? ld8_a4(qs) : ld8_a2(qs), 4 * (p >> 1));
        r.c = make_uint2(q.x | hr_q_fifth_bits(qh),
                         q.y | hr_q_fifth_bits(qh >> 4)); /* bit e of qh: element e */
        r.z = Q == HR_CU_Q5_0 ? 16 : 0;
        r.scale = hr_q_f16(sc);
        if (Q == HR_CU_Q5_1) r.offset = hr_q_f16(sc + 2);
    } else if (Q == HR_CU_Q4_K || Q == HR_CU_Q5_K) {
        const uint8_t *b = row + (u >> 3) * (Q == HR_CU_Q4_K ? 144 : 176);
        int j = (int)(u & 7), sc, mn;
        hr_q_k4_scale_min(b + 4, j, &sc, &mn);
        r.c = nibbles(*(const uint2 *)(b + (Q == HR_CU_Q4_K ? 16 : 48) + j / 2 * 32 + 8 * p),
                      4 * (j & 1));
        if (Q == HR_CU_Q5_K) { /* bit j of qh[l]: the fifth bit of element j*32 + l */
            uint2 h = *(const uint2 *)(b + 16 + 8 * p);
            r.c.x |= (h.x >> j & 0x01010101u) << 4;
            r.c.y |= (h.y >> j & 0x01010101u) << 4;
        }
        r.z = 0;
        r.scale = hr_q_f16(b) * (float)sc;
        r.offset = -(hr_q_f16(b + 2) * (float)mn);
    } else { /* Q6_K: element h*128 + s*32 + l */
        long sb = u >> 3, ns = nb / 8;
        const uint8_t *b = row + sb * 210;
        const uint8_t *ql = pl ? row + 128 * sb : b, *qh = pl ? row + 128 * ns + 64 * sb : b + 128,
                      *sc = pl ? row + 192 * ns + 16 * sb : b + 192,
                      *d = pl ? row + 208 * ns + 2 * sb : b + 208;
        int j = (int)(u & 7), h = j >> 2, s = j & 3;
        uint2 lo = nibbles(ld8_a2(ql + h * 64 + (s & 1) * 32 + 8 * p), 4 * (s >> 1));
        uint2 hi = ld8_a2(qh + h * 32 + 8 * p);
        r.c = make_uint2(lo.x | (hi.x >> (2 * s) & 0x03030303u) << 4,
                         lo.y | (hi.y >> (2 * s) & 0x03030303u) << 4);
        r.z = 32;
        r.scale = hr_q_f16(d) * (float)(int8_t)sc[h * 8 + s * 2 + p / 2];
    }
    return r;
}

/* Whether format Q's elements carry an offset (a min): its products need sum(x). */
template <int Q> static __device__ __forceinline__ bool has_offset() {
    return Q == HR_CU_Q4_1 || Q == HR_CU_Q5_1 || Q == HR_CU_Q4_K || Q == HR_CU_Q5_K;
}

/* The decoded elements, as hr_dequant_row computes them. */
template <int Q>
static __device__ __forceinline__ void decode8(const uint8_t *row, long u, int p, long nb, bool pl,
                                               float *v) {
    piece8 pc = piece<Q>(row, u, p, nb, pl);
#pragma unroll
    for (int i = 0; i < 8; i++)
        v[i] = pc.scale * code(pc, i) + pc.offset;
}

/* y[t, n] = x[t] . w[n] for T rows; a block of QGEMV_WARPS warps per R output rows, the warps
 * taking every QGEMV_WARPS-th group of 8 units, their sums meeting in shared memory. */
template <int Q, int T, int R>
static __global__ void qgemv_k(float *y, const float *x, const uint8_t *w, bool pl, long N, long K,
                               long row_bytes) {
    HR_PDL_ENTRY();
    /* steps per batch of loads: the loads of U steps are issued before their products, so
     * enough bytes are in flight (fewer for more x rows, which need the registers) */
    constexpr int U = T == 1 ? 4 : T == 2 ? 2 : 1;
    __shared__ float part[QGEMV_WARPS][R][T];
    int lane = threadIdx.x & 31, p = lane & 3, warp = threadIdx.x >> 5;
    long n0 = (long)blockIdx.x * R, units = K / 32, stride = 8 * QGEMV_WARPS;
    const uint8_t *rows[R];
#pragma unroll
    for (int r = 0; r < R; r++) /* rows past N read the last one; their sums are dropped */
        rows[r] = w + (n0 + r < N ? n0 + r : N - 1) * row_bytes;
    float acc[R][T] = {};
    for (long u0 = (lane >> 2) + 8 * warp; u0 < units; u0 += stride * U) {
        piece8 pc[U][R];
        float4 xa[U][T], xc[U][T];
#pragma unroll
        for (int k = 0; k < U; k++) {
            long u = u0 + stride * k < units ? u0 + stride * k : u0; /* a repeat, not counted */
#pragma unroll
            for (int t = 0; t < T; t++) {
                const float4 *xp = (const float4 *)(x + t * K + u * 32 + 8 * p);
                xa[k][t] = xp[0];
                xc[k][t] = xp[1];
            }
#pragma unroll
            for (int r = 0; r < R; r++)
                pc[k][r] = piece<Q>(rows[r], u, p, units, pl);
        }
#pragma unroll
        for (int k = 0; k < U; k++) {
            if (u0 + stride * k >= units) break;
#pragma unroll
            for (int t = 0; t < T; t++) {
                float sx = has_offset<Q>() ? xa[k][t].x + xa[k][t].y + xa[k][t].z + xa[k][t].w +
                                                 xc[k][t].x + xc[k][t].y + xc[k][t].z + xc[k][t].w
                                           : 0.0f;
#pragma unroll
                for (int r = 0; r < R; r++) {
                    const piece8 &c = pc[k][r];
                    float d = code(c, 0) * xa[k][t].x + code(c, 1) * xa[k][t].y +
                              code(c, 2) * xa[k][t].z + code(c, 3) * xa[k][t].w +
                              code(c, 4) * xc[k][t].x + code(c, 5) * xc[k][t].y +
                              code(c, 6) * xc[k][t].z + code(c, 7) * xc[k][t].w;
                    acc[r][t] += c.scale * d + (has_offset<Q>() ? c.offset * sx : 0.0f);
                }
            }
        }
    }
    float s = hr_block_rows_sum<QGEMV_WARPS, R, T>(acc, part);
    if (threadIdx.x < R * T) {
        int r = threadIdx.x / T, t = threadIdx.x % T;
        if (n0 + r < N) y[t * N + n0 + r] = s;
    }
}

/* out[n, k] (f16) = w[n, k] decoded; one thread per 8 elements. */
template <int Q>
static __global__ void dequant_k(__half *out, const uint8_t *w, bool pl, long N, long K,
                                 long row_bytes) {
    HR_PDL_ENTRY();
    long pieces = K / 8;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < N * pieces;
         i += (long)gridDim.x * blockDim.x) {
        long n = i / pieces, q = i % pieces;
        float v[8];
        decode8<Q>(w + n * row_bytes, q >> 2, (int)(q & 3), K / 32, pl, v);
        __align__(16) __half b[8];
#pragma unroll
        for (int k = 0; k < 8; k++)
            b[k] = __float2half_rn(v[k]);
        *(uint4 *)(out + n * K + q * 8) = *(const uint4 *)b;
    }
}

/* y[t] = table[tokens[t]] * scale; a block per token. */
template <int Q>
static __global__ void qembed_k(float *y, const int32_t *tokens, const uint8_t *table, bool pl,
                                long dim, long row_bytes, float scale) {
    HR_PDL_ENTRY();
    int t = blockIdx.x;
    const uint8_t *row = table + (long)tokens[t] * row_bytes;
    for (long q = threadIdx.x; q < dim / 8; q += blockDim.x) {
        float v[8];
        decode8<Q>(row, q >> 2, (int)(q & 3), dim / 32, pl, v);
#pragma unroll
        for (int k = 0; k < 8; k++)
            y[(long)t * dim + q * 8 + k] = scale != 1.0f ? v[k] * scale : v[k];
    }
}

/* The kernel instance for format q (a switch over the template parameter). */
#define HR_Q_DISPATCH(q, F, ...)                                                                   \
    switch (q) {                                                                                   \
    case HR_CU_Q8_0: F<HR_CU_Q8_0>(__VA_ARGS__); break;                                            \
    case HR_CU_Q4_0: F<HR_CU_Q4_0>(__VA_ARGS__); break;                                            \
    case HR_CU_Q4_1: F<HR_CU_Q4_1>(__VA_ARGS__); break;                                            \
    case HR_CU_Q5_0: F<HR_CU_Q5_0>(__VA_ARGS__); break;                                            \
    case HR_CU_Q5_1: F<HR_CU_Q5_1>(__VA_ARGS__); break;                                            \
    case HR_CU_Q4_K: F<HR_CU_Q4_K>(__VA_ARGS__); break;                                            \
    case HR_CU_Q5_K: F<HR_CU_Q5_K>(__VA_ARGS__); break;                                            \
    default: F<HR_CU_Q6_K>(__VA_ARGS__); break;                                                    \
    }

template <int Q, int R>
static void qgemv_rows(cudaStream_t s, float *y, const float *x, const uint8_t *w, bool pl, int T,
                       long N, long K, long rb) {
    unsigned grid = (unsigned)((N + R - 1) / R), threads = 32 * QGEMV_WARPS;
    switch (T) {
    case 1: hr_launch(qgemv_k<Q, 1, R>, grid, threads, 0, s, y, x, w, pl, N, K, rb); break;
    case 2: hr_launch(qgemv_k<Q, 2, R>, grid, threads, 0, s, y, x, w, pl, N, K, rb); break;
    case 3: hr_launch(qgemv_k<Q, 3, R>, grid, threads, 0, s, y, x, w, pl, N, K, rb); break;
    default: hr_launch(qgemv_k<Q, 4, R>, grid, threads, 0, s, y, x, w, pl, N, K, rb); break;
    }
}

template <int Q>
static void qgemv_launch(cudaStream_t s, float *y, const float *x, const void *w, bool pl, int T,
                         long N, long K, long rb) {
    const uint8_t *wb = (const uint8_t *)w;
    if (N >= QGEMV_R_MIN_N)
        qgemv_rows<Q, QGEMV_R>(s, y, x, wb, pl, T, N, K, rb);
    else
        qgemv_rows<Q, 1>(s, y, x, wb, pl, T, N, K, rb);
}

template <int Q>
static void dequant_launch(cudaStream_t s, void *out, const void *w, bool pl, long N, long K,
                           long rb) {
    hr_launch(dequant_k<Q>, hr_blocks(N * (K / 8), 256), 256, 0, s, (__half *)out,
              (const uint8_t *)w, pl, N, K, rb);
}

template <int Q>
static void qembed_launch(cudaStream_t s, const hr_cu_meta *m, float *y, const void *table, bool pl,
                          long dim, long rb, float scale) {
    hr_launch(qembed_k<Q>, m->n_tokens, 128, 0, s, y, m->tokens, (const uint8_t *)table, pl, dim,
              rb, scale);
}

extern "C" void hr_cu_qgemv(cudaStream_t s, float *y, const float *x, const void *w, int q,
                            int planar, int T, long N, long K, long rb) {
    HR_Q_DISPATCH(q, qgemv_launch, s, y, x, w, planar != 0, T, N, K, rb);
}

extern "C" void hr_cu_dequant_f16(cudaStream_t s, void *out, const void *w, int q, int planar,
                                  long N, long K, long rb) {
    HR_Q_DISPATCH(q, dequant_launch, s, out, w, planar != 0, N, K, rb);
}

extern "C" void hr_cu_qembed(cudaStream_t s, const hr_cu_meta *m, float *y, const void *table,
                             int q, int planar, long dim, long rb, float scale) {
    HR_Q_DISPATCH(q, qembed_launch, s, m, y, table, planar != 0, dim, rb, scale);
}
