/* x quantized to 8 bits for the GGUF products (mmvq.cu): the buffer's layout and the device
 * step that quantizes one element, shared by the quantize kernel and the RMSNorm kernel that
 * quantizes its output as it writes it (elementwise.cu). A buffer for T rows of K holds the
 * codes [T][K], the scales [T][K / 32] (per-256 ones at index e / 256) and the sums of the
 * codes per 16 [T][K / 16]. */
#ifndef HR_BACKEND_CUDA_XQ_CUH
#define HR_BACKEND_CUDA_XQ_CUH

#include "backend/cuda/common.cuh"

typedef struct {
    int8_t *q;
    float *d;
    int *s16;
} hr_xq_parts;

/* Where the scales and the sums start in a buffer for T rows of K, and its bytes. */
typedef struct {
    size_t d, s16, total;
} hr_xq_layout;

static __host__ __device__ inline hr_xq_layout hr_xq_size(int T, long K) {
    size_t q = ((size_t)T * K + 255) / 256 * 256, d = ((size_t)T * (K / 32) * 4 + 255) / 256 * 256;
    return hr_xq_layout{q, q + d, q + d + (size_t)T * (K / 16) * 4};
}

static __host__ __device__ inline hr_xq_parts hr_xq_at(void *buf, int T, long K) {
    char *b = (char *)buf;
    hr_xq_layout l = hr_xq_size(T, K);
    return hr_xq_parts{(int8_t *)b, (float *)(b + l.d), (int *)(b + l.s16)};
}

/* Element e of row t of K, value v (in: e < K), as hr_q8x_quantize / hr_q8k_quantize compute it:
 * d = max |x| / 127 over its block of PER, q = round(x / d) (IEEE division and reciprocal, so
 * the codes are the CPU's), and the sums of q per 16. Every lane of the warp calls it with 32
 * consecutive elements; for PER = 256 the 8 warps of a 256-chunk (warps 8k .. 8k + 7 of the block)
 * together, every thread of the block calling it (it synchronizes the block; wmax: 32 floats of
 * shared memory). */
template <int PER>
static __device__ __forceinline__ void hr_xq_put(hr_xq_parts x, long t, long K, long e, float v,
                                                 bool in, float *wmax) {
    float am = hr_warp_max(fabsf(v));
    if (PER == 256) {
        int g = (threadIdx.x >> 5) & ~7;
        __syncthreads();
        if ((threadIdx.x & 31) == 0) wmax[threadIdx.x >> 5] = am;
        __syncthreads();
        for (int i = 0; i < 8; i++)
            am = fmaxf(am, wmax[g + i]);
    }
    float dd = __fdiv_rn(am, 127.0f), id = dd == 0.0f ? 0.0f : __frcp_rn(dd);
    int c = (int)roundf(__fmul_rn(v, id));
    int s = c;
    for (int o = 8; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (!in) return;
    x.q[t * K + e] = (int8_t)c;
    if ((threadIdx.x & 15) == 0) x.s16[t * (K / 16) + e / 16] = s;
    if (e % PER == 0) x.d[t * (K / 32) + e / PER] = dd;
}

#endif
