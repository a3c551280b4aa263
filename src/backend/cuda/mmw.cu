/* Products of 16-bit weights (bf16 or f16) with the decode batches past mmh's rows, on Hopper's
 * warpgroup tensor-core instruction (wgmma, sm_90a): the weights are the M side of
 * wgmma.m64nNk16 and the rows of x its N side (16 to 128 of them), both read from shared memory
 * in the 128-byte swizzled K-major layout that wgmma's descriptors name. A block is one
 * warpgroup (128 threads) for 128 weight rows (two m64 tiles) and BN rows of x; the K chunks of
 * 64 elements stream through 3 or 4 shared-memory stages by cp.async, the next stages' loads
 * in flight while a chunk is multiplied. When the grid is small, K splits over a thread-block
 * cluster along z: the blocks of a cluster leave their partial tiles in their shared memory and
 * each sums its share of the tile over the cluster's blocks in rank order (distributed shared
 * memory), so a result depends on T and the shapes, never on timing, and no partial goes
 * through device memory. Only a device of compute capability 9.0 runs it (hr_cu_mmw_ok): the
 * compute_90 PTX fallback holds an empty body. */
#include <cooperative_groups.h>

#include "backend/cuda/qtile.cuh"

namespace cg = cooperative_groups;

enum { MW_BM = 128, MW_BK = 64, MW_THREADS = 128, MW_MAX_SPLITS = 8 };
/* Stages in shared memory: 4, 3 for 128 rows of x (96 KB: two blocks an SM) */
template <int BN> static constexpr __host__ __device__ int mw_stages() { return BN >= 128 ? 3 : 4; }
enum { MW_ALIGN = 1024 }; /* the swizzle atom's alignment */

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MW_ON 1
#else
#define MW_ON 0
#endif

/* One stage: the block's 128 weight rows then its BN rows of x, 64 elements of K each. */
template <int BN> struct mw_stage {
    uint16_t a[MW_BM * MW_BK];
    uint16_t b[BN * MW_BK];
};

#if MW_ON
/* The shared-memory descriptor of a K-major tile at p (1024-byte aligned, plus 32 bytes per 16
 * elements of K within the swizzle atom): 128-byte swizzle, 8-row groups 1024 bytes apart. */
static __device__ __forceinline__ uint64_t mw_desc(const void *p) {
    uint64_t a = smem_addr(p);
    return ((a & 0x3ffff) >> 4) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}

#define MW_F8(d, o)                                                                                \
    "+f"(d[o]), "+f"(d[o + 1]), "+f"(d[o + 2]), "+f"(d[o + 3]), "+f"(d[o + 4]), "+f"(d[o + 5]),    \
        "+f"(d[o + 6]), "+f"(d[o + 7])
#define MW_F32(d, o) MW_F8(d, o), MW_F8(d, o + 8), MW_F8(d, o + 16), MW_F8(d, o + 24)
/* wgmma of n columns with accumulators regs, descriptors %ia and %ib, scale-d from %pa */
#define MW_ASM(n, ty, regs, ia, ib, pa)                                                            \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %" pa ", 0;\nwgmma.mma_async.sync.aligned.m64n" n            \
    "k16.f32." ty "." ty " {" regs "}, %" ia ", %" ib ", p, 1, 1, 0, 0;\n}\n"

/* d[64 x BN] += a[64 x 16] b[16 x BN]: wgmma with both operands in shared memory. */
template <int D, int BN>
static __device__ __forceinline__ void mw_mma(float (&d)[BN / 2], uint64_t a, uint64_t b) {
#define MW_CASE(n, regs, ia, ib, pa, ...)                                                          \
    if constexpr (D == HR_CU_BF16)                                                                 \
        asm volatile(MW_ASM(n, "bf16", regs, ia, ib, pa) : __VA_ARGS__ : "l"(a), "l"(b), "r"(1));  \
    else                                                                                           \
        asm volatile(MW_ASM(n, "f16", regs, ia, ib, pa) : __VA_ARGS__ : "l"(a), "l"(b), "r"(1));
    if constexpr (BN == 16) {
        MW_CASE("16", "%0,%1,%2,%3,%4,%5,%6,%7", "8", "9", "10", MW_F8(d, 0))
    } else if constexpr (BN == 32) {
        MW_CASE("32", "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15", "16", "17", "18",
                MW_F8(d, 0), MW_F8(d, 8))
    } else if constexpr (BN == 64) {
        MW_CASE("64",
                "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,"
                "%22,%23,%24,%25,%26,%27,%28,%29,%30,%31",
                "32", "33", "34", MW_F32(d, 0))
    } else {
        MW_CASE("128",
                "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,"
                "%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,"
                "%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,"
                "%62,%63",
                "64", "65", "66", MW_F32(d, 0), MW_F32(d, 32))
    }
#undef MW_CASE
}

static __device__ __forceinline__ void mw_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

static __device__ __forceinline__ void mw_commit_wait() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

/* The accumulators' registers as of now, for the compiler: wgmma wrote them asynchronously. */
template <int R> static __device__ __forceinline__ void mw_touch(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

/* Chunk c of the stage's rows: thread i copies 16-byte piece q = i % 8 of rows i / 8 + 16 j,
 * stored at piece q ^ (row % 8) (the swizzle); rows past T and elements past K are zeros. */
template <int BN>
static __device__ __forceinline__ void mw_load(mw_stage<BN> *st, const uint16_t *const *wrow,
                                               const uint16_t *x, long t0, int T, long K, long c) {
    int q = threadIdx.x & 7, r0 = threadIdx.x >> 3, sw = 8 * (q ^ (r0 & 7));
    long e = MW_BK * c + 8 * q;
    bool in = e < K;
#pragma unroll
    for (int j = 0; j < MW_BM / 16; j++)
        cp16(&st->a[(r0 + 16 * j) * MW_BK + sw], wrow[j] + (in ? e : 0), in);
#pragma unroll
    for (int j = 0; j < BN / 16; j++) {
        long t = t0 + r0 + 16 * j;
        bool ok = in && t < T;
        cp16(&st->b[(r0 + 16 * j) * MW_BK + sw], x + (ok ? t * K + e : 0), ok);
    }
}

/* Where accumulator i of m-tile m of thread th lands: weight row (n0 + ..) and x row. */
static __device__ __forceinline__ void mw_pos_of(int th, int m, int i, long *n, long *t) {
    int warp = th >> 5, lane = th & 31;
    *n = 64 * m + 16 * warp + (lane >> 2) + 8 * ((i >> 1) & 1);
    *t = 8 * (i >> 2) + 2 * (lane & 3) + (i & 1);
}
#endif

/* Rows blockIdx.x x 128 .. of the set, x rows blockIdx.y x BN .., K chunks of split blockIdx.z
 * (the block's rank in its cluster of `splits`). */
template <int D, int BN>
static __global__ void __launch_bounds__(MW_THREADS)
    mmw_k(hr_cu_gemv_set g, const uint16_t *x, int T, long K, int splits) {
    HR_PDL_ENTRY();
#if MW_ON
    constexpr int S = mw_stages<BN>();
    extern __shared__ __align__(16) unsigned char mw_raw[]; /* MW_ALIGN more than the stages */
    unsigned char *mw_smem = mw_raw + ((MW_ALIGN - smem_addr(mw_raw) % MW_ALIGN) % MW_ALIGN);
    mw_stage<BN> *st = (mw_stage<BN> *)mw_smem;
    long N = g.start[g.n], n0 = (long)blockIdx.x * MW_BM, t0 = (long)blockIdx.y * BN;
    long nc = (K + MW_BK - 1) / MW_BK, per = (nc + splits - 1) / splits;
    long c0 = blockIdx.z * per, c1 = c0 + per < nc ? c0 + per : nc;
    int n_it = c1 > c0 ? (int)(c1 - c0) : 0;
    const uint16_t *wrow[MW_BM / 16];
#pragma unroll
    for (int j = 0; j < MW_BM / 16; j++) {
        long n = n0 + (threadIdx.x >> 3) + 16 * j, in;
        int k = hr_set_row(g, n < N ? n : N - 1, &in);
        wrow[j] = (const uint16_t *)g.w[k] + in * K;
    }
#pragma unroll
    for (int s = 0; s < S - 1; s++) {
        if (s < n_it) mw_load<BN>(&st[s], wrow, x, t0, T, K, c0 + s);
        cp_commit();
    }
    float acc[2][BN / 2] = {};
    for (int it = 0; it < n_it; it++) {
        cp_wait<S - 2>();
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads(); /* the chunk is in; the stage refilled next was read by every thread */
        if (it + S - 1 < n_it)
            mw_load<BN>(&st[(it + S - 1) % S], wrow, x, t0, T, K, c0 + it + S - 1);
        cp_commit();
        const mw_stage<BN> *cur = &st[it % S];
        mw_fence();
#pragma unroll
        for (int k = 0; k < MW_BK / 16; k++) {
            uint64_t b = mw_desc(cur->b + 16 * k);
            mw_mma<D, BN>(acc[0], mw_desc(cur->a + 16 * k), b);
            mw_mma<D, BN>(acc[1], mw_desc(cur->a + 64 * MW_BK + 16 * k), b);
        }
        mw_commit_wait();
        mw_touch(acc[0]);
        mw_touch(acc[1]);
    }
    if (splits == 1) {
#pragma unroll
        for (int m = 0; m < 2; m++)
#pragma unroll
            for (int i = 0; i < BN / 2; i++) {
                long n, t;
                mw_pos_of(threadIdx.x, m, i, &n, &t);
                if (n0 + n < N && t0 + t < T) *hr_set_out(g, n0 + n, t0 + t) = acc[m][i];
            }
        return;
    }
    /* the partial tile, register r of thread i at red[r][i], summed over the cluster's blocks:
     * this block takes its share of the tile, 4 elements a thread at a time, all the blocks'
     * 16-byte pieces of them loaded before the sum (in rank order) */
    cp_wait<0>();
    __syncthreads();
    float *red = (float *)mw_smem;
#pragma unroll
    for (int m = 0; m < 2; m++)
#pragma unroll
        for (int i = 0; i < BN / 2; i++)
            red[(m * (BN / 2) + i) * MW_THREADS + threadIdx.x] = acc[m][i];
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();
    int rank = (int)cl.block_rank(), n4 = MW_THREADS * BN / 4;
    const float4 *part[MW_MAX_SPLITS];
#pragma unroll
    for (int z = 0; z < MW_MAX_SPLITS; z++)
        part[z] = (const float4 *)cl.map_shared_rank(red, z < splits ? z : 0);
    for (int q = n4 * rank / splits + threadIdx.x; q < n4 * (rank + 1) / splits; q += MW_THREADS) {
        float4 v[MW_MAX_SPLITS];
#pragma unroll
        for (int z = 0; z < MW_MAX_SPLITS; z++)
            if (z < splits) v[z] = part[z][q];
        float4 sum = v[0];
#pragma unroll
        for (int z = 1; z < MW_MAX_SPLITS; z++)
            if (z < splits) sum.x += v[z].x, sum.y += v[z].y, sum.z += v[z].z, sum.w += v[z].w;
        const float e4[4] = {sum.x, sum.y, sum.z, sum.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            int r = (4 * q + k) / MW_THREADS, th = (4 * q + k) % MW_THREADS;
            long n, t;
            mw_pos_of(th, r / (BN / 2), r % (BN / 2), &n, &t);
            if (n0 + n < N && t0 + t < T) *hr_set_out(g, n0 + n, t0 + t) = e4[k];
        }
    }
    cl.sync(); /* no block leaves while another reads its shared memory */
#else
    (void)g, (void)x, (void)T, (void)K, (void)splits;
#endif
}

int hr_cu_mmw_max_splits = HR_CU_MMW_SPLITS;

/* K splits (the cluster size) for a grid of `tiles` blocks with `slots` resident at once: the
 * fewest that fill the slots, each split at least 4 chunks of K. */
static int mw_splits(long tiles, long slots, long nc) {
    long s = (slots + tiles - 1) / tiles, most = hr_cu_mmw_max_splits;
    if (s > nc / 4) s = nc / 4;
    if (most > MW_MAX_SPLITS) most = MW_MAX_SPLITS;
    if (s > most) s = most;
    return s < 1 ? 1 : (int)s;
}

template <int D, int BN> static size_t mw_shm(void) {
    static int set; /* the opt-in past 48 KB, once per instantiation */
    size_t shm = mw_stages<BN>() * sizeof(mw_stage<BN>) + MW_ALIGN;
    if (!set) {
        cudaFuncSetAttribute(mmw_k<D, BN>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm);
        set = 1;
    }
    return shm;
}

/* The launch of a grid of clusters of `splits` blocks along z, with PDL where it is on. */
static cudaLaunchConfig_t mw_config(dim3 grid, size_t shm, cudaStream_t s, int splits,
                                    cudaLaunchAttribute at[2]) {
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 1;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = (unsigned)splits;
    at[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[1].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(MW_THREADS);
    cfg.dynamicSmemBytes = shm;
    cfg.stream = s;
    cfg.attrs = at;
    cfg.numAttrs = hr_cu_pdl ? 2 : 1;
    return cfg;
}

template <int D, int BN>
static void mmw_run(cudaStream_t s, const hr_cu_gemv_set *g, const uint16_t *xh, int T, long K) {
    size_t shm = mw_shm<D, BN>();
    long N = g->start[g->n], tiles = (N + MW_BM - 1) / MW_BM * ((T + BN - 1) / BN);
    long per_sm = (long)(228 * 1024) / (long)(shm + 1024); /* 1 KB reserved a block */
    int splits = mw_splits(tiles, mq_sms() * (per_sm < 1 ? 1 : per_sm), (K + MW_BK - 1) / MW_BK);
    cudaLaunchAttribute at[2];
    dim3 grid((unsigned)((N + MW_BM - 1) / MW_BM), (unsigned)((T + BN - 1) / BN), (unsigned)splits);
    cudaLaunchConfig_t cfg = mw_config(grid, shm, s, splits, at);
    cudaLaunchKernelEx(&cfg, mmw_k<D, BN>, *g, xh, T, K, splits);
}

template <int BN> static int mw_clusters(int splits) {
    size_t shm = mw_shm<HR_CU_BF16, BN>();
    cudaLaunchAttribute at[2];
    cudaLaunchConfig_t cfg = mw_config(dim3(1024, 1, (unsigned)splits), shm, 0, splits, at);
    cfg.numAttrs = 1;
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, mmw_k<HR_CU_BF16, BN>, &cfg) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" int hr_cu_mmw_clusters(int bn, int splits) {
    return bn <= 16   ? mw_clusters<16>(splits)
           : bn <= 32 ? mw_clusters<32>(splits)
           : bn <= 64 ? mw_clusters<64>(splits)
                      : mw_clusters<128>(splits);
}

/* The x tile by rows: 16, 32, 64 or 128, the fewest that cover T (past 128: tiles of 128). */
template <int D>
static void mmw_tiles(cudaStream_t s, const hr_cu_gemv_set *g, const uint16_t *xh, int T, long K) {
    if (T <= 16)
        mmw_run<D, 16>(s, g, xh, T, K);
    else if (T <= 32)
        mmw_run<D, 32>(s, g, xh, T, K);
    else if (T <= 64)
        mmw_run<D, 64>(s, g, xh, T, K);
    else
        mmw_run<D, 128>(s, g, xh, T, K);
}

extern "C" int hr_cu_mmw_ok(void) {
    static int ok = -1;
    if (ok < 0) {
        int dev = 0, major = 0, minor = 0;
        cudaGetDevice(&dev);
        ok =
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess &&
            major == 9 && minor == 0;
    }
    return ok;
}

extern "C" void hr_cu_mmw(cudaStream_t s, const hr_cu_gemv_set *g, const void *xh, int dtype, int T,
                          long K) {
    if (dtype == HR_CU_BF16)
        mmw_tiles<HR_CU_BF16>(s, g, (const uint16_t *)xh, T, K);
    else
        mmw_tiles<HR_CU_F16>(s, g, (const uint16_t *)xh, T, K);
}
