/* What the two tensor-core GGUF products (mmq.cu: 8-bit x, integer mma; mmf.cu: f16 x, weights
 * decoded in registers, f16 mma) share: a weight tile's chunk of 256 elements of K staged in
 * shared memory by cp.async (per row: its bytes of the chunk, padded so a warp's 4-byte fragment
 * reads fall on distinct banks), the launch rows' pointers into a product set, and the split of
 * K over blockIdx.z for small grids, whose partials a second kernel sums in split order (so a
 * result depends on T and the shapes, never on timing). */
#ifndef HR_BACKEND_CUDA_QTILE_CUH
#define HR_BACKEND_CUDA_QTILE_CUH

#include "backend/cuda/mma.cuh"

enum { MQ_MAX_SPLITS = 8 };
enum { MQ_WS_ROWS = 32768 }; /* splits x rows a workspace of T rows holds */

/* Bytes of a weight row's chunk in shared memory: Q4_0 [codes 8 x 16][scales 8 x 2], Q8_0
 * [codes 8 x 32][scales], Q4_K its 144-byte super-block as in the file, Q6_K [low bits 128][high
 * bits 64][scales 16][the 4-byte word holding d]. Each stride is 16 or 112 mod 128 bytes, so the
 * 8 rows x 4 words a fragment read takes fall on 32 distinct banks. */
template <int Q> struct mq_w {
    static constexpr int stride = Q == HR_CU_Q8_0 ? 272 : Q == HR_CU_Q6_K ? 240 : 144;
    /* 16-byte pieces of a row's chunk (Q6_K: and one 4-byte one) */
    static constexpr int pieces = Q == HR_CU_Q8_0 ? 17 : Q == HR_CU_Q6_K ? 14 : 9;
};

static __device__ __forceinline__ void cp4(void *dst, const void *src, int valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(valid ? 4 : 0));
}

static __device__ __forceinline__ uint32_t ld32(const void *p) { return *(const uint32_t *)p; }

/* Chunk c of BM weight rows (row pointers rowp; nb blocks of 32 per row) into w, by a block of
 * THREADS threads. */
template <int Q, int BM, int THREADS>
static __device__ __forceinline__ void load_w(uint8_t (*w)[mq_w<Q>::stride],
                                              const uint8_t *const *rowp, long c, long nb) {
    constexpr int P = mq_w<Q>::pieces;
    long ns = nb / 8;
    for (int i = threadIdx.x; i < BM * P; i += THREADS) {
        int r = i / P, p = i % P;
        const uint8_t *row = rowp[r];
        uint8_t *dst = w[r] + 16 * p;
        if constexpr (Q == HR_CU_Q4_0) {
            if (p < 8)
                cp16(dst, row + 16 * (8 * c + p), 8 * c + p < nb);
            else
                cp16(dst, row + 16 * nb + 16 * c, 1);
        } else if constexpr (Q == HR_CU_Q8_0) {
            long u = 8 * c + p / 2;
            if (p < 16)
                cp16(dst, row + 32 * u + 16 * (p & 1), u < nb);
            else
                cp16(dst, row + 32 * nb + 16 * c, 1);
        } else if constexpr (Q == HR_CU_Q4_K) {
            cp16(dst, row + 144 * c + 16 * p, 1);
        } else if (p < 8) {
            cp16(dst, row + 128 * c + 16 * p, 1);
        } else if (p < 12) {
            cp16(dst, row + 128 * ns + 64 * c + 16 * (p - 8), 1);
        } else if (p == 12) {
            cp16(dst, row + 192 * ns + 16 * c, 1);
        } else { /* d's aligned word: its high half for odd c */
            cp4(dst, row + ((208 * ns + 2 * c) & ~3L), 1);
        }
    }
}

/* Threads 0 .. BM - 1 point rowp at launch rows n0 .. n0 + BM - 1 of the set (rows past its end
 * at the last one: their sums are dropped); the caller synchronizes. */
template <int BM>
static __device__ __forceinline__ void set_rows(const uint8_t **rowp, const hr_cu_gemv_set &g,
                                                long n0, long rb) {
    long N = g.start[g.n];
    if (threadIdx.x < BM) {
        long in, n = n0 + threadIdx.x < N ? n0 + threadIdx.x : N - 1;
        int m = hr_set_row(g, n, &in);
        rowp[threadIdx.x] = (const uint8_t *)g.w[m] + in * rb;
    }
}

/* The chunks [c0, c1) of split z of nc chunks. */
static __device__ __forceinline__ void split_range(long nc, int splits, long *c0, long *c1) {
    long per = (nc + splits - 1) / splits;
    *c0 = blockIdx.z * per;
    *c1 = *c0 + per < nc ? *c0 + per : nc;
}

/* A result: y of the set (one split), else split z's partial ws[z][T][N]. */
static __device__ __forceinline__ void put_out(const hr_cu_gemv_set &g, float *ws, int splits,
                                               long n, long t, int T, float v) {
    long N = g.start[g.n];
    if (n >= N || t >= T) return;
    if (splits > 1)
        ws[((long)blockIdx.z * T + t) * N + n] = v;
    else
        *hr_set_out(g, n, t) = v;
}

/* y of the set = the sum of the splits' partials ws[z][T][N], z in order. */
static __global__ void mq_reduce_k(hr_cu_gemv_set g, const float *ws, int splits, int T) {
    HR_PDL_ENTRY();
    long N = g.start[g.n], total = (long)T * N;
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long)gridDim.x * blockDim.x) {
        float s = ws[i];
        for (int z = 1; z < splits; z++)
            s += ws[(long)z * total + i];
        *hr_set_out(g, i % N, i / N) = s;
    }
}

static inline int mq_sms(void) {
    static int sms;
    if (!sms) {
        int dev = 0;
        cudaGetDevice(&dev);
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
            sms <= 0)
            sms = 1;
    }
    return sms;
}

/* K splits for a grid of `blocks`: enough blocks for two per SM, at least 2 chunks a split,
 * and what the workspace (MQ_WS_ROWS rows per row of x) holds; 1 without one. */
static inline int mq_splits(long blocks, long nc, long N, const float *ws) {
    if (!ws) return 1;
    long s = (2L * mq_sms() + blocks - 1) / blocks;
    if (s > nc / 2) s = nc / 2;
    if (s > MQ_MAX_SPLITS) s = MQ_MAX_SPLITS;
    while (s > 1 && s * N > MQ_WS_ROWS)
        s--;
    return s < 1 ? 1 : (int)s;
}

/* Launches the product's kernel on a grid whose z is its K splits, then the sum of the splits. */
template <typename... Params, typename... Args>
static inline void mq_launch_split(void (*kernel)(Params...), dim3 grid, int threads, size_t shm,
                                   cudaStream_t s, const hr_cu_gemv_set *g, int T, long K,
                                   float *ws, Args... args) {
    long N = g->start[g->n];
    int splits = mq_splits((long)grid.x * grid.y, (K + 255) / 256, N, ws);
    grid.z = (unsigned)splits;
    hr_launch(kernel, grid, threads, shm, s, *g, args..., T, K, ws, splits);
    if (splits > 1)
        hr_launch(mq_reduce_k, hr_blocks((long)T * N, 256), 256, 0, s, *g, (const float *)ws,
                  splits, T);
}

#endif
