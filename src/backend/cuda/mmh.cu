/* Products of 16-bit weights (bf16 or f16 checkpoints) with 5 to HR_CU_MMH_MAX_T rows of x on the
 * tensor cores, for the decode batches where cuBLAS reads the weights well below the bandwidth
 * (hr_cu_mmh_wins):
 * x rounded to the weight's type once per product group (as the cuBLAS path rounds it), the
 * products of one x (q, k, v) in one launch over a product set, so the small k and v matrices
 * share the grid with q, and K split over blockIdx.z when the grid is small (the
 * partials summed in split order by qtile.cuh's mq_reduce_k: a result depends on T and the
 * shapes, never on timing). m16n8k16 mma.sync with f32 accumulation.
 * The weights stream from memory straight into the mma fragments, as the GEMV streams them: in
 * each 32-element block of K, lane t4 of a fragment row reads the row's elements 8 t4 .. 8 t4 + 7
 * in one 16-byte load and takes them as its k slots of two mma steps (elements 8 t4, + 1 and
 * + 2, + 3 in the first step, + 4 .. + 7 in the second), and x, staged in shared memory in chunks
 * of 256, is read in the same order, so the dot is unchanged. Each lane keeps MH_PF blocks of
 * loads in flight. A block of 4 warps computes BN rows of x (blockIdx.x) for 128 weight rows
 * (blockIdx.y), each warp 32 weight rows (two m-tiles: each x fragment read serves both); three
 * blocks an SM for 16 or 32 rows, two for 64 (their registers). */
#include "backend/cuda/qtile.cuh"

enum { MH_WARPS = 4, MH_THREADS = 32 * MH_WARPS, MH_MT = 2, MH_BM = 16 * MH_MT * MH_WARPS };
/* x staged in chunks of 256 (the K split's unit), rows 576 bytes apart: 64 mod 128, so a quarter
 * warp's 16-byte reads (two rows of 64 bytes) fall on distinct banks; MH_PF blocks of weight
 * loads in flight per lane. */
enum { MH_KC = 256, MH_XS = MH_KC + 32, MH_PF = 4 };

template <int D>
static __device__ __forceinline__ void mma16(float c[4], const uint32_t a[4], uint32_t b0,
                                             uint32_t b1) {
    if constexpr (D == HR_CU_BF16)
        mma(c, a, b0, b1);
    else
        mma_f16(c, a, b0, b1);
}

/* Block b (elements 32 b + 8 t4 ..) of the lane's four fragment rows; zeros past K. */
static __device__ __forceinline__ void load_w(uint4 (*w)[2], const uint16_t *const (*row)[2],
                                              long b, long b1, long K) {
    long e = 32 * b + 8 * (threadIdx.x & 3);
    bool in = b < b1 && e < K;
#pragma unroll
    for (int m = 0; m < MH_MT; m++)
#pragma unroll
        for (int h = 0; h < 2; h++)
            w[m][h] = in ? __ldcs((const uint4 *)(row[m][h] + e)) : make_uint4(0, 0, 0, 0);
}

/* Chunk c of x's rows 0 .. BN - 1 of the block (xrow; NULL past T: zeros, nothing read) into xs. */
template <int BN>
static __device__ __forceinline__ void load_x(uint16_t (*xs)[MH_XS], const uint16_t *const *xrow,
                                              long c, long K) {
    for (int i = threadIdx.x; i < BN * (MH_KC / 8); i += MH_THREADS) {
        int r = i / (MH_KC / 8), p = i % (MH_KC / 8);
        long e = MH_KC * c + 8 * p;
        cp16(&xs[r][8 * p], xrow[r] ? xrow[r] + e : xrow[0], xrow[r] && e < K);
    }
}

/* The two mma steps of one block of K: weights w (the lane's rows), x at element e of the
 * staged chunk. */
template <int D, int BN>
static __device__ __forceinline__ void step(float (*acc)[BN / 8][4], const uint4 (*w)[2],
                                            const uint16_t (*xs)[MH_XS], int e) {
    int lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
        uint4 xv = *(const uint4 *)&xs[8 * j + g][e + 8 * t4];
#pragma unroll
        for (int m = 0; m < MH_MT; m++) {
            const uint32_t a0[4] = {w[m][0].x, w[m][1].x, w[m][0].y, w[m][1].y};
            const uint32_t a1[4] = {w[m][0].z, w[m][1].z, w[m][0].w, w[m][1].w};
            mma16<D>(acc[m][j], a0, xv.x, xv.y);
            mma16<D>(acc[m][j], a1, xv.z, xv.w);
        }
    }
}

/* Rows blockIdx.y x MH_BM .. of the launch, x rows blockIdx.x x BN .., the blocks of split z
 * (splits of 256 elements, as mq_launch_split counts them). splits = 1: y of the set; else
 * ws[z][T][N], summed by mq_reduce_k. */
template <int D, int BN>
static __global__ void __launch_bounds__(MH_THREADS, BN < 64 ? 3 : 2)
    mmh_k(hr_cu_gemv_set g, const uint16_t *x, int T, long K, float *ws, int splits) {
    HR_PDL_ENTRY();
    extern __shared__ __align__(16) unsigned char mh_smem[];
    __shared__ const uint16_t *xrow[BN];
    uint16_t(*xs)[BN][MH_XS] = (uint16_t(*)[BN][MH_XS])mh_smem; /* two stages */
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, gq = lane >> 2, t4 = lane & 3;
    long n0 = (long)blockIdx.y * MH_BM + 16 * MH_MT * warp, col0 = (long)blockIdx.x * BN, s0, s1;
    long N = g.start[g.n], nb = (K + 31) / 32;
    split_range((K + MH_KC - 1) / MH_KC, splits, &s0, &s1);
    long b0 = 8 * s0, b1 = 8 * s1 < nb ? 8 * s1 : nb;
    const uint16_t *row[MH_MT][2]; /* the lane's fragment rows g and g + 8 of each m-tile */
#pragma unroll
    for (int m = 0; m < MH_MT; m++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            long n = n0 + 16 * m + 8 * h + gq, in;
            int k = hr_set_row(g, n < N ? n : N - 1, &in);
            row[m][h] = (const uint16_t *)g.w[k] + in * K;
        }
    if (threadIdx.x < BN)
        xrow[threadIdx.x] = col0 + threadIdx.x < T ? x + (col0 + threadIdx.x) * K : NULL;
    __syncthreads();
    if (b0 < b1) load_x<BN>(xs[0], xrow, s0, K);
    cp_commit();
    uint4 w[MH_PF][MH_MT][2];
#pragma unroll
    for (int p = 0; p < MH_PF; p++)
        load_w(w[p], row, b0 + p, b1, K);
    float acc[MH_MT][BN / 8][4] = {};
    for (long b = b0; b < b1; b += MH_PF) {
#pragma unroll
        for (int p = 0; p < MH_PF; p++) {
            long bp = b + p;
            if (((bp - b0) & 7) == 0) { /* a new chunk: its x staged, the next one's started */
                cp_wait<0>();
                __syncthreads();
                long c = bp / 8;
                if (c + 1 < s1) load_x<BN>(xs[(c + 1 - s0) & 1], xrow, c + 1, K);
                cp_commit();
            }
            if (bp < b1) step<D, BN>(acc, w[p], xs[(bp / 8 - s0) & 1], 32 * (int)(bp & 7));
            load_w(w[p], row, bp + MH_PF, b1, K);
        }
    }
#pragma unroll
    for (int m = 0; m < MH_MT; m++)
#pragma unroll
        for (int j = 0; j < BN / 8; j++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                put_out(g, ws, splits, n0 + 16 * m + gq + 8 * (i >> 1),
                        col0 + 8 * j + 2 * t4 + (i & 1), T, acc[m][j][i]);
}

template <int D, int BN>
static void mmh_run(cudaStream_t s, const hr_cu_gemv_set *g, const uint16_t *xh, int T, long K,
                    float *ws) {
    static int shm_set; /* the opt-in past 48 KB, once per instantiation */
    size_t shm = 2 * sizeof(uint16_t[BN][MH_XS]);
    if (!shm_set) {
        cudaFuncSetAttribute(mmh_k<D, BN>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm);
        shm_set = 1;
    }
    long N = g->start[g->n];
    dim3 grid((unsigned)((T + BN - 1) / BN), (unsigned)((N + MH_BM - 1) / MH_BM), 1);
    mq_launch_split(mmh_k<D, BN>, grid, MH_THREADS, shm, s, g, T, K, ws, xh);
}

/* The x tile by rows: 16, 32 or 64 columns, the fewest that cover T. */
template <int D>
static void mmh_tiles(cudaStream_t s, const hr_cu_gemv_set *g, const uint16_t *xh, int T, long K,
                      float *ws) {
    if (T <= 16)
        mmh_run<D, 16>(s, g, xh, T, K, ws);
    else if (T <= 32)
        mmh_run<D, 32>(s, g, xh, T, K, ws);
    else
        mmh_run<D, 64>(s, g, xh, T, K, ws);
}

/* Measured on the H200 (bench_kernels h, docs/perf-notes.md): mmh reads q, k, v (4096 + 1024 +
 * 1024 rows, K 4096) at 2.4 TB/s for 8-16 rows of x against cuBLAS' 1.3 (its launch per small
 * matrix leaves most of the device idle), and still 1.55 against 1.36 at 64 rows; o, gate,up,
 * down and the head it reads at cuBLAS' rate to 16 rows and more slowly beyond. So it takes the
 * sets that hold a matrix of at most 2048 rows, to HR_CU_MMH_MAX_T = 64 rows of x. */
extern "C" int hr_cu_mmh_wins(const hr_cu_gemv_set *g) {
    for (int i = 0; i < g->n; i++)
        if (g->start[i + 1] - g->start[i] <= 2048) return 1;
    return 0;
}

extern "C" int hr_cu_mmh_takes(int dtype, long K) {
    return (dtype == HR_CU_BF16 || dtype == HR_CU_F16) && K % 8 == 0;
}

extern "C" void hr_cu_mmh(cudaStream_t s, const hr_cu_gemv_set *g, const void *xh, int dtype, int T,
                          long K, float *ws) {
    if (dtype == HR_CU_BF16)
        mmh_tiles<HR_CU_BF16>(s, g, (const uint16_t *)xh, T, K, ws);
    else
        mmh_tiles<HR_CU_F16>(s, g, (const uint16_t *)xh, T, K, ws);
}
