/* Device helpers shared by the CUDA backend's kernels: typed element loads and stores, warp
 * and block reductions, launch geometry. */
#ifndef HR_BACKEND_CUDA_COMMON_CUH
#define HR_BACKEND_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/kernels.h"

/* Programmatic dependent launch (docs/cuda.md): with hr_cu_pdl set, hr_launch lets a kernel
 * start while the previous one in the stream drains; each kernel's first statement is
 * HR_PDL_ENTRY, which waits until the previous grid has completed and its writes are visible
 * (a no-op for a kernel launched without the attribute), then lets the next kernel launch. A
 * kernel reads or writes nothing before it. */
#define HR_PDL_ENTRY()                                                                             \
    do {                                                                                           \
        asm volatile("griddepcontrol.wait;\n" ::: "memory");                                       \
        asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");                          \
    } while (0)

template <typename... Params, typename... Args>
static inline void hr_launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shm,
                             cudaStream_t s, Args... args) {
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = shm;
    cfg.stream = s;
    cfg.attrs = at;
    cfg.numAttrs = hr_cu_pdl ? 1 : 0;
    cudaLaunchKernelEx(&cfg, kernel, args...);
}

static __device__ __forceinline__ float hr_ld(const void *p, int dtype, long i) {
    switch (dtype) {
    case HR_CU_BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case HR_CU_F16: return __half2float(((const __half *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

static __device__ __forceinline__ void hr_st(void *p, int dtype, long i, float v) {
    switch (dtype) {
    case HR_CU_BF16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v); break;
    case HR_CU_F16: ((__half *)p)[i] = __float2half_rn(v); break;
    default: ((float *)p)[i] = v;
    }
}

static __device__ __forceinline__ float hr_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static __device__ __forceinline__ float hr_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it. */
static __device__ __forceinline__ float hr_block_sum(float v) {
    __shared__ float part[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = hr_warp_sum(v);
    __syncthreads();
    if (lane == 0) part[warp] = v;
    __syncthreads();
    float t = lane < nw ? part[lane] : 0.0f;
    return hr_warp_sum(t);
}

/* The R x T sums of a block of W warps whose lanes each hold partial sums acc: summed over each
 * warp, then over the warps in a fixed order through part (W * R * T floats of shared memory).
 * Thread i < R * T gets the total of (row i / T, x row i % T); the others get 0. */
template <int W, int R, int T>
static __device__ __forceinline__ float hr_block_rows_sum(const float (&acc)[R][T],
                                                          float (*part)[R][T]) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int t = 0; t < T; t++) {
            float s = hr_warp_sum(acc[r][t]);
            if (lane == 0) part[warp][r][t] = s;
        }
    __syncthreads();
    float s = 0;
    if (threadIdx.x < R * T)
#pragma unroll
        for (int k = 0; k < W; k++)
            s += part[k][threadIdx.x / T][threadIdx.x % T];
    return s;
}

/* The gate activation of act·mul: 0 SiLU, 1 GELU (tanh approximation); one definition for
 * every kernel that applies it, so a fused product computes what hr_cu_act_mul does. */
static __device__ __forceinline__ float hr_act_fn(float g, int act) {
    if (act == 0) return g / (1.0f + expf(-g));
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * g * (1.0f + tanhf(c * (g + 0.044715f * g * g * g)));
}

/* Split `split` of `splits` equal ranges [j0, j1) of the positions a query at pos sees (from
 * its sliding-window start, or 0, to pos). */
static __device__ __forceinline__ void hr_attn_split(int pos, int window, int splits, int split,
                                                     int *j0, int *j1) {
    int lo = window > 0 && pos - window + 1 > 0 ? pos - window + 1 : 0;
    int chunk = (pos + 1 - lo + splits - 1) / splits;
    *j0 = lo + split * chunk;
    *j1 = *j0 + chunk < pos + 1 ? *j0 + chunk : pos + 1;
}

/* Matrix m of a product set (kernels.h) that launch row n belongs to, and the row within it. */
static __device__ __forceinline__ int hr_set_row(const hr_cu_gemv_set &g, long n, long *in) {
    int m = 0;
    while (m + 1 < g.n && n >= g.start[m + 1])
        m++;
    *in = n - g.start[m];
    return m;
}

/* Where the product of launch row n with row t of x goes among a set's outputs ([T][rows] per
 * matrix). */
static __device__ __forceinline__ float *hr_set_out(const hr_cu_gemv_set &g, long n, long t) {
    long in;
    int m = hr_set_row(g, n, &in);
    return g.y[m] + t * (g.start[m + 1] - g.start[m]) + in;
}

static inline unsigned hr_blocks(long n, int threads) {
    long b = (n + threads - 1) / threads;
    return (unsigned)(b < 1 ? 1 : b > 8192 ? 8192 : b); /* grid-stride loops do the rest */
}

#endif
