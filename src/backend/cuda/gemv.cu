/* Matrix-vector products for small batches (decode): y[T, N] = x[T, K] w[N, K]^T with T <= 4
 * activation rows, for up to HR_CU_GEMV_FUSE matrices that share x in one launch (q, k and v;
 * gate and up: one grid instead of two or three small ones). Each weight row is read once
 * with 16-byte loads and converted in registers, f32 accumulation: by a block of 8 warps per 4
 * rows splitting K (one activation row, or long rows), or by one warp per 2 or 4 rows
 * (tests/gpu/bench_kernels measures both on the Llama-3-8B shapes: docs/perf-notes.md). Decode is
 * bound by reading the weights, so this is the kernel that sets batch-1 speed (docs/cuda.md). */
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
    HR_PDL_ENTRY();
    one_matrix m = matrix_of(g);
    long n0 = (((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5) * R;
    int lane = threadIdx.x & 31;
    if (n0 >= m.N) return;
    const uint4 *wr[R];
#pragma unroll
    for (int r = 0; r < R; r++)
        wr[r] = (const uint4 *)((const uint16_t *)m.w + (n0 + r < m.N ? n0 + r : n0) * K);
    float acc[R][T] = {};
    long nv = K / 8;
#pragma unroll 2
    for (long i = lane; i < nv; i += 32) {
        float wf[R][8];
#pragma unroll
        for (int r = 0; r < R; r++)
            unpack8(__ldg(wr[r] + i), DT, wf[r]);
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

/* The norm weights (+ 1 for one_plus norms) of elements 8i .. 8i + 7, one vector load. */
static __device__ __forceinline__ void norm_weights8(const hr_cu_gemv_fold &f, long i, float *nw) {
    if (!f.norm_w) {
#pragma unroll
        for (int e = 0; e < 8; e++)
            nw[e] = 1.0f;
        return;
    }
    if (f.norm_dtype == HR_CU_F32) {
        const float4 *p = (const float4 *)f.norm_w + 2 * i;
        float4 a = __ldg(p), b = __ldg(p + 1);
        nw[0] = a.x, nw[1] = a.y, nw[2] = a.z, nw[3] = a.w, nw[4] = b.x, nw[5] = b.y, nw[6] = b.z,
        nw[7] = b.w;
    } else {
        unpack8(__ldg((const uint4 *)f.norm_w + i), f.norm_dtype, nw);
    }
#pragma unroll
    for (int e = 0; e < 8; e++)
        nw[e] += (float)f.one_plus;
}

/* x[t] = rmsnorm(fold.norm_x[t]) for the T rows, from the warps' sums of squares in
 * part[w * (off + T) + off + t] (the caller synced). */
template <int T>
static __device__ void store_normed(const hr_cu_gemv_fold &f, float *x, const float *part, int off,
                                    long K) {
    for (int t = 0; t < T; t++) {
        float q = 0;
        for (int w = 0; w < WARPS_PER_BLOCK; w++)
            q += part[w * (off + T) + off + t];
        float inv = 1.0f / sqrtf(q / (float)K + f.eps);
        for (long k = threadIdx.x; k < K; k += blockDim.x) {
            float nw = (f.norm_w ? hr_ld(f.norm_w, f.norm_dtype, k) : (f.one_plus ? 0.0f : 1.0f)) +
                       (float)f.one_plus;
            x[t * K + k] = f.norm_x[t * K + k] * inv * nw;
        }
    }
}

/* The same product with the K range split over the block: 8 warps share R rows (every warp
 * a strided eighth of each row), partial sums meet in shared memory in a fixed order. Many
 * more warps than gemv_vec for the same rows, so more loads in flight: for the products with
 * few rows (o, down, k/v) that cannot fill the GPU one warp per row group. NORM: x is the
 * rmsnorm of fold.norm_x, applied on the fly (each block sees all of K, so it sums the squares
 * itself; block 0 also stores the normalized x); ACC: fold.acc += y too; ACT: the block takes
 * rows n0 .. of matrix 0 (gate) and of matrix 1 (up), the same sums as two launches give,
 * and also writes fold.act_y = act(gate) * up. */
template <int T, int R, int DT, int NORM, int ACC, int ACT>
static __global__ void __launch_bounds__(32 * WARPS_PER_BLOCK)
    gemv_split(hr_cu_gemv_set g, float *x, long K) {
    HR_PDL_ENTRY();
    constexpr int RR = ACT ? 2 * R : R; /* rows read: R of the matrix (ACT: R of each) */
    __shared__ float part[WARPS_PER_BLOCK][RR * T + T];
    one_matrix m = matrix_of(g), up = {g.w[1], g.y[1], m.N};
    long n0 = (long)blockIdx.x * R;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (n0 >= m.N) return;
    const float *xs = NORM ? g.fold.norm_x : x;
    const uint4 *wr[RR];
#pragma unroll
    for (int r = 0; r < RR; r++) {
        long n = n0 + r % R;
        wr[r] = (const uint4 *)((const uint16_t *)(r < R ? m.w : up.w) + (n < m.N ? n : n0) * K);
    }
    float acc[RR][T], ss[T];
#pragma unroll
    for (int t = 0; t < T; t++) {
        ss[t] = 0;
#pragma unroll
        for (int r = 0; r < RR; r++)
            acc[r][t] = 0;
    }
    long nv = K / 8;
#pragma unroll 2
    for (long i = threadIdx.x; i < nv; i += 32 * WARPS_PER_BLOCK) {
        float wf[RR][8], nw[8];
#pragma unroll
        for (int r = 0; r < RR; r++)
            unpack8(__ldg(wr[r] + i), DT, wf[r]);
        if (NORM) norm_weights8(g.fold, i, nw);
#pragma unroll
        for (int t = 0; t < T; t++) {
            const float4 *xp = (const float4 *)(xs + t * K + i * 8);
            float4 a = __ldg(xp), b = __ldg(xp + 1);
            if (NORM) {
                ss[t] += a.x * a.x + a.y * a.y + a.z * a.z + a.w * a.w + b.x * b.x + b.y * b.y +
                         b.z * b.z + b.w * b.w;
                a.x *= nw[0], a.y *= nw[1], a.z *= nw[2], a.w *= nw[3];
                b.x *= nw[4], b.y *= nw[5], b.z *= nw[6], b.w *= nw[7];
            }
#pragma unroll
            for (int r = 0; r < RR; r++)
                acc[r][t] += wf[r][0] * a.x + wf[r][1] * a.y + wf[r][2] * a.z + wf[r][3] * a.w +
                             wf[r][4] * b.x + wf[r][5] * b.y + wf[r][6] * b.z + wf[r][7] * b.w;
        }
    }
#pragma unroll
    for (int t = 0; t < T; t++) {
#pragma unroll
        for (int r = 0; r < RR; r++) {
            float v = hr_warp_sum(acc[r][t]);
            if (lane == 0) part[warp][r * T + t] = v;
        }
        if (NORM) {
            float v = hr_warp_sum(ss[t]);
            if (lane == 0) part[warp][RR * T + t] = v;
        }
    }
    __syncthreads();
    if (NORM && blockIdx.x == 0 && blockIdx.y == 0)
        store_normed<T>(g.fold, x, &part[0][0], RR * T, K);
    if (threadIdx.x < R * T) {
        int r = threadIdx.x / T, t = threadIdx.x % T;
        float v = 0, u = 0, q = 0;
#pragma unroll
        for (int w = 0; w < WARPS_PER_BLOCK; w++) {
            v += part[w][threadIdx.x];
            if (ACT) u += part[w][R * T + threadIdx.x];
        }
        if (NORM) {
#pragma unroll
            for (int w = 0; w < WARPS_PER_BLOCK; w++)
                q += part[w][RR * T + t];
            float inv = 1.0f / sqrtf(q / (float)K + g.fold.eps);
            v *= inv;
            u *= inv;
        }
        if (n0 + r < m.N) {
            long o = t * m.N + n0 + r;
            m.y[o] = v;
            if (ACC) g.fold.acc[o] += v;
            if (ACT) {
                up.y[o] = u;
                g.fold.act_y[o] = hr_act_fn(v, g.fold.act) * u;
            }
        }
    }
}

/* Any dtype and alignment, element by element, one row per warp. */
static __global__ void gemv_any(hr_cu_gemv_set g, const float *x, int dtype, int T, long K) {
    HR_PDL_ENTRY();
    one_matrix m = matrix_of(g);
    long n = ((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (n >= m.N) return;
    float acc[HR_CU_GEMV_MAX_T] = {0};
    for (long k = lane; k < K; k += 32) {
        float wv = hr_ld(m.w, dtype, n * K + k);
        for (int t = 0; t < T; t++)
            acc[t] += wv * x[t * K + k];
    }
    for (int t = 0; t < T; t++) {
        float v = hr_warp_sum(acc[t]);
        if (lane == 0) m.y[t * m.N + n] = v;
    }
}

int hr_cu_gemv_split = 1;

/* The widest matrix's rows of a launch. */
static long widest_of(const hr_cu_gemv_set *g) {
    long widest = 0;
    for (int i = 0; i < g->n; i++)
        if (g->start[i + 1] - g->start[i] > widest) widest = g->start[i + 1] - g->start[i];
    return widest;
}

/* Blocks along x for the widest matrix at R rows per warp; along y one per matrix. */
static dim3 grid_for(const hr_cu_gemv_set *g, int R) {
    long warps = (widest_of(g) + R - 1) / R;
    return dim3((unsigned)((warps + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK), (unsigned)g->n);
}

template <int T, int DT, int NORM, int ACC, int ACT = 0>
static void launch_split(cudaStream_t s, const hr_cu_gemv_set *g, float *x, long K) {
    constexpr int RS = 4;
    dim3 grid((unsigned)((widest_of(g) + RS - 1) / RS), ACT ? 1u : (unsigned)g->n);
    hr_launch(gemv_split<T, RS, DT, NORM, ACC, ACT>, grid, 32 * WARPS_PER_BLOCK, 0, s, *g, x, K);
}

template <int T, int DT>
static void launch_t(cudaStream_t s, const hr_cu_gemv_set *g, float *x, long K) {
    constexpr int R = T <= 2 ? 2 : 4; /* rows per warp: more share each x load as T grows */
    int norm = g->fold.norm_x != NULL, acc = g->fold.acc != NULL;
    if (g->fold.act_y && norm)
        launch_split<T, DT, 1, 0, 1>(s, g, x, K);
    else if (g->fold.act_y)
        launch_split<T, DT, 0, 0, 1>(s, g, x, K);
    else if (norm && acc)
        launch_split<T, DT, 1, 1>(s, g, x, K);
    else if (norm)
        launch_split<T, DT, 1, 0>(s, g, x, K);
    else if (acc)
        launch_split<T, DT, 0, 1>(s, g, x, K);
    else if (hr_cu_gemv_split && (T == 1 || K >= 8192))
        launch_split<T, DT, 0, 0>(s, g, x, K);
    else
        hr_launch(gemv_vec<T, R, DT>, grid_for(g, R), 32 * WARPS_PER_BLOCK, 0, s, *g,
                  (const float *)x, K);
}

template <int DT>
static void launch_vec(cudaStream_t s, const hr_cu_gemv_set *g, float *x, int T, long K) {
    switch (T) {
    case 1: launch_t<1, DT>(s, g, x, K); break;
    case 2: launch_t<2, DT>(s, g, x, K); break;
    case 3: launch_t<3, DT>(s, g, x, K); break;
    default: launch_t<4, DT>(s, g, x, K); break;
    }
}

extern "C" void hr_cu_gemv(cudaStream_t s, const hr_cu_gemv_set *g, float *x, int dtype, int T,
                           long K) {
    if (T <= 0 || g->n <= 0 || g->start[g->n] <= 0) return;
    const hr_cu_gemv_fold *f = &g->fold;
    int aligned =
        K % 8 == 0 && ((uintptr_t)x | (uintptr_t)f->norm_x | (uintptr_t)f->norm_w) % 16 == 0;
    for (int i = 0; i < g->n; i++)
        aligned &= (uintptr_t)g->w[i] % 16 == 0;
    if (aligned && dtype == HR_CU_BF16) {
        launch_vec<HR_CU_BF16>(s, g, x, T, K);
    } else if (aligned && dtype == HR_CU_F16) {
        launch_vec<HR_CU_F16>(s, g, x, T, K);
    } else { /* the folded work as kernels of its own */
        if (f->norm_x)
            hr_cu_rmsnorm(s, x, f->norm_x, f->norm_w, f->norm_dtype, T, (int)K, f->eps,
                          f->one_plus);
        hr_launch(gemv_any, grid_for(g, 1), 32 * WARPS_PER_BLOCK, 0, s, *g, (const float *)x, dtype,
                  T, K);
        if (f->acc) hr_cu_add(s, f->acc, g->y[0], (long)T * (g->start[1] - g->start[0]));
        if (f->act_y) hr_cu_act_mul(s, f->act_y, g->y[0], g->y[1], (long)T * g->start[1], f->act);
    }
}
