/* Tensor-core building blocks of the attention kernels (attention_tc.cu: prefill tiles,
 * attention_dtc.cu: decode): 16-byte asynchronous global-to-shared copies, ldmatrix fragment
 * loads, bf16 (and, for mmf.cu, f16) mma.sync m16n8k16 with f32 accumulation, and one warp's
 * FlashAttention-2 step over a key tile in shared memory — S = Q K^T, the online softmax,
 * O += P V — with S, P and O in registers. Fragment layouts are PTX's: lane l holds rows l / 4
 * and l / 4 + 8, columns 2 (l % 4) and 2 (l % 4) + 1. Shared tiles are [keys][HD + 8] bf16:
 * ldmatrix's eight 16-byte rows then fall on distinct bank groups. */
#ifndef HR_BACKEND_CUDA_MMA_CUH
#define HR_BACKEND_CUDA_MMA_CUH

#include <stdint.h>

#include "backend/cuda/common.cuh"

static __device__ __forceinline__ uint32_t smem_addr(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* 16 bytes global -> shared; zeros when !valid (nothing is read then). */
static __device__ __forceinline__ void cp16(void *dst, const void *src, int valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(valid ? 16 : 0));
}

static __device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N> static __device__ __forceinline__ void cp_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

static __device__ __forceinline__ void ldsm_x4(uint32_t r[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}

static __device__ __forceinline__ void ldsm_x4_t(uint32_t r[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}

/* c[16x8] += a[16x16] b[16x8], bf16 in, f32 accumulate. */
static __device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0,
                                           uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* The same with f16 in (mmf.cu). */
static __device__ __forceinline__ void mma_f16(float c[4], const uint32_t a[4], uint32_t b0,
                                               uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

static __device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

/* s[n] (keys 8n .. 8n + 7 of an NK-key tile) = Q K^T for the warp's 16 rows (qa: A fragments). */
template <int HD, int NK>
static __device__ __forceinline__ void scores(float s[NK / 8][4], const uint32_t qa[HD / 16][4],
                                              const __nv_bfloat16 (*k)[HD + 8]) {
    int lane = threadIdx.x & 31, mi = lane >> 3, r = lane & 7;
#pragma unroll
    for (int n = 0; n < NK / 8; n++)
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int n = 0; n < NK / 8; n += 2) {
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) {
            uint32_t b[4]; /* b0, b1 of key tile n, then of n + 1 */
            ldsm_x4(b, &k[8 * n + 8 * (mi >> 1) + r][16 * kk + 8 * (mi & 1)]);
            mma(s[n], qa[kk], b[0], b[1]);
            mma(s[n + 1], qa[kk], b[2], b[3]);
        }
    }
}

/* o[n] (dims 8n .. 8n + 7) += P V, P taken from the softmaxed s. */
template <int HD, int NK>
static __device__ __forceinline__ void accumulate(float o[HD / 8][4], const float s[NK / 8][4],
                                                  const __nv_bfloat16 (*v)[HD + 8]) {
    int lane = threadIdx.x & 31, mi = lane >> 3, r = lane & 7;
#pragma unroll
    for (int kk = 0; kk < NK / 16; kk++) {
        uint32_t pa[4] = {pack_bf16(s[2 * kk][0], s[2 * kk][1]),
                          pack_bf16(s[2 * kk][2], s[2 * kk][3]),
                          pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                          pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int n = 0; n < HD / 8; n += 2) {
            uint32_t b[4]; /* b0, b1 of dim tile n, then of n + 1 */
            ldsm_x4_t(b, &v[16 * kk + 8 * (mi & 1) + r][8 * n + 8 * (mi >> 1)]);
            mma(o[n], pa, b[0], b[1]);
            mma(o[n + 1], pa, b[2], b[3]);
        }
    }
}

/* The maximum over the four lanes that hold one row's scores. */
static __device__ __forceinline__ float quad_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

/* o's two rows scaled by corr[0] and corr[1] (the running max moved). */
template <int HD>
static __device__ __forceinline__ void rescale_o(float o[HD / 8][4], const float corr[2]) {
#pragma unroll
    for (int n = 0; n < HD / 8; n++) {
        o[n][0] *= corr[0], o[n][1] *= corr[0];
        o[n][2] *= corr[1], o[n][3] *= corr[1];
    }
}

/* The tile's row maxima mt (this thread's share) folded into the running maxima m; corr the
 * factors that move l (rescaled here) and o to the new maxima (1 while a row has seen only masked
 * keys). */
static __device__ __forceinline__ void fold_max(float m[2], float l[2], float mt[2],
                                                float corr[2]) {
#pragma unroll
    for (int i = 0; i < 2; i++) {
        float mn = fmaxf(m[i], quad_max(mt[i]));
        corr[i] = mn == -INFINITY ? 1.0f : exp2f(m[i] - mn);
        m[i] = mn;
        l[i] *= corr[i];
    }
}

/* Masks and soft-caps the tile's scores of this thread's two rows (query positions pq[0..1],
 * window starts lo[0..1]), folds them into the running max m and sum l (this thread's share),
 * rescales o and leaves the probabilities in s (scores in log2 units: m is scale * log2(e)
 * times the natural maximum). */
template <int HD, int NK>
static __device__ __forceinline__ void softmax_tile(float s[NK / 8][4], float o[HD / 8][4],
                                                    float m[2], float l[2], const hr_cu_attn &p,
                                                    const int pq[2], const int lo[2], int j0) {
    int c = 2 * (threadIdx.x & 3);
    const float LOG2E = 1.4426950408889634f;
    float mt[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < NK / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int i = e >> 1, j = j0 + 8 * n + c + (e & 1);
            float x = s[n][e] * p.scale;
            if (p.softcap > 0) x = p.softcap * tanhf(x / p.softcap);
            x = j <= pq[i] && j >= lo[i] ? x * LOG2E : -INFINITY;
            s[n][e] = x;
            mt[i] = fmaxf(mt[i], x);
        }
    float corr[2];
    fold_max(m, l, mt, corr);
#pragma unroll
    for (int n = 0; n < NK / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int i = e >> 1;
            float x = s[n][e] == -INFINITY ? 0.0f : exp2f(s[n][e] - m[i]);
            s[n][e] = x;
            l[i] += x;
        }
    rescale_o<HD>(o, corr);
}

/* softmax_tile for a tile whose keys every row of the warp sees (no mask, no soft-cap, scale > 0):
 * the maximum is taken over the raw scores and the scale folds into the exponent's FMA
 * (sl = scale * log2(e)); the running max m is in the same units as softmax_tile's. */
template <int HD, int NK>
static __device__ __forceinline__ void softmax_tile_full(float s[NK / 8][4], float o[HD / 8][4],
                                                         float m[2], float l[2], float sl) {
    float mt[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < NK / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            mt[e >> 1] = fmaxf(mt[e >> 1], s[n][e]);
    float corr[2];
    mt[0] *= sl, mt[1] *= sl; /* sl > 0: the scaled maximum is the maximum scaled */
    fold_max(m, l, mt, corr);
#pragma unroll
    for (int n = 0; n < NK / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            float x = exp2f(fmaf(s[n][e], sl, -m[e >> 1]));
            s[n][e] = x;
            l[e >> 1] += x;
        }
    rescale_o<HD>(o, corr);
}

#endif
