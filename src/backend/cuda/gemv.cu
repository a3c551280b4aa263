/* Matrix-vector products for small batches (decode): y[T, N] = x[T, K] w[N, K]^T with T <= 4
 * activation rows, for up to HR_CU_GEMV_FUSE matrices that share x in one launch (q, k and v;
 * gate and up: one grid instead of two or three small ones). One warp per 2 or 4 output rows, each weight row read once with 16-byte loads and converted in registers, f32
 * accumulation. Decode is bound by reading the weights, so this is the kernel that sets
 * batch-1 speed (docs/cuda.md). */
#include <stdint.h>

#include "backend/cuda/common.cuh"

enum { WARPS_PER_BLOCK = 8 };

static __device__ __forceinline__ void unpack8(uint4 p, int dtype, float *f) {
    const uint32_t u[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
    for (int j = 0; j < 4; j++) {
        if (dtype == HR_CU_BF16) {
            f[2 * j] = __uint_as_float(u[j] << 16);
            f[2 * j + 1] = __uint_as_float(u[j] & 0xffff0000u);
        } else {
            __half2 h = *(const __half2 *)&u[j];
            float2 v = __half22float2(h);
            f[2 * j] = v.x;
            f[2 * j + 1] = v.y;
        }
    }
}

/* Matrix blockIdx.y of the launch, picked with selects (a run-time index into the parameter
 * struct would copy it to local memory). */
typedef struct {
    const void *w;
    float *y;
    long N;
} one_matrix;

static __device__ __forceinline__ one_matrix matrix_of(const hr_cu_gemv_set &g) {
    int s = blockIdx.y;
    one_matrix m;
    m.w = s == 0 ? g.w[0] : s == 1 ? g.w[1] : s == 2 ? g.w[2] : g.w[3];
    m.y = s == 0 ? g.y[0] : s == 1 ? g.y[1] : s == 2 ? g.y[2] : g.y[3];
    long a = s == 0 ? g.start[0] : s == 1 ? g.start[1] : s == 2 ? g.start[2] : g.start[3];
    long b = s == 0 ? g.start[1] : s == 1 ? g.start[2] : s == 2 ? g.start[3] : g.start[4];
    m.N = b - a;
    return m;
}

/* 16-bit weights, K % 8 == 0, 16-byte aligned rows and activations. A warp computes R rows of
 * matrix blockIdx.y: each x vector loaded (from L1) serves R weight vectors, and R independent
 * weight loads are in flight per lane. */
template <int T, int R, int DT>
static __global__ void __launch_bounds__(256) gemv_vec(hr_cu_gemv_set g, const float *x, long K) {
    one_matrix m = matrix_of(g);
    long n0 = (((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5) * R;
    int lane = threadIdx.x & 31;
    if (n0 >= m.N) return;
    const uint4 *wr[R];
#pragma unroll
    for (int r = 0; r < R; r++) wr[r] = (const uint4 *)((const uint16_t *)m.w + (n0 + r < m.N ? n0 + r : n0) * K);
    float acc[R][T];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int t = 0; t < T; t++) acc[r][t] = 0;
    long nv = K / 8;
#pragma unroll 2
    for (long i = lane; i < nv; i += 32) {
        float wf[R][8];
#pragma unroll
        for (int r = 0; r < R; r++) unpack8(__ldg(wr[r] + i), DT, wf[r]);
#pragma unroll
        for (int t = 0; t < T; t++) {
            const float4 *xp = (const float4 *)(x + t * K + i * 8);
            float4 a = __ldg(xp), b = __ldg(xp + 1);
#pragma unroll
            for (int r = 0; r < R; r++)
                acc[r][t] += wf[r][0] * a.x + wf[r][1] * a.y + wf[r][2] * a.z + wf[r][3] * a.w +
                             wf[r][4] * b.x + wf[r][5] * b.y + wf[r][6] * b.z + wf[r][7] * b.w;
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int t = 0; t < T; t++) {
            float v = hr_warp_sum(acc[r][t]);
            if (lane == 0 && n0 + r < m.N) m.y[t * m.N + n0 + r] = v;
        }
}

/* Any dtype and alignment, element by element, one row per warp. */
static __global__ void gemv_any(hr_cu_gemv_set g, const float *x, int dtype, int T, long K) {
    one_matrix m = matrix_of(g);
    long n = ((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (n >= m.N) return;
    float acc[HR_CU_GEMV_MAX_T] = {0};
    for (long k = lane; k < K; k += 32) {
        float wv = hr_ld(m.w, dtype, n * K + k);
        for (int t = 0; t < T; t++) acc[t] += wv * x[t * K + k];
    }
    for (int t = 0; t < T; t++) {
        float v = hr_warp_sum(acc[t]);
        if (lane == 0) m.y[t * m.N + n] = v;
    }
}

/* Blocks along x for the widest matrix at R rows per warp; along y one per matrix. */
static dim3 grid_for(const hr_cu_gemv_set *g, int R) {
    long widest = 0;
    for (int i = 0; i < g->n; i++)
        if (g->start[i + 1] - g->start[i] > widest) widest = g->start[i + 1] - g->start[i];
    long warps = (widest + R - 1) / R;
    return dim3((unsigned)((warps + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK), (unsigned)g->n);
}

template <int T, int DT>
static void launch_t(cudaStream_t s, const hr_cu_gemv_set *g, const float *x, long K) {
    constexpr int R = T <= 2 ? 2 : 4; /* rows per warp: more share each x load as T grows */
    gemv_vec<T, R, DT><<<grid_for(g, R), 32 * WARPS_PER_BLOCK, 0, s>>>(*g, x, K);
}

template <int DT>
static void launch_vec(cudaStream_t s, const hr_cu_gemv_set *g, const float *x, int T, long K) {
    switch (T) {
    case 1: launch_t<1, DT>(s, g, x, K); break;
    case 2: launch_t<2, DT>(s, g, x, K); break;
    case 3: launch_t<3, DT>(s, g, x, K); break;
    default: launch_t<4, DT>(s, g, x, K); break;
    }
}

extern "C" void hr_cu_gemv(cudaStream_t s, const hr_cu_gemv_set *g, const float *x, int dtype,
                           int T, long K) {
    if (T <= 0 || g->n <= 0 || g->start[g->n] <= 0) return;
    int aligned = K % 8 == 0 && (uintptr_t)x % 16 == 0;
    for (int i = 0; i < g->n; i++) aligned &= (uintptr_t)g->w[i] % 16 == 0;
    if (aligned && dtype == HR_CU_BF16) launch_vec<HR_CU_BF16>(s, g, x, T, K);
    else if (aligned && dtype == HR_CU_F16) launch_vec<HR_CU_F16>(s, g, x, T, K);
    else gemv_any<<<grid_for(g, 1), 32 * WARPS_PER_BLOCK, 0, s>>>(*g, x, dtype, T, K);
}
