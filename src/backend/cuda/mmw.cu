/* Products of 16-bit weights (bf16 or f16) with the decode batches past mmh's rows, on Hopper's
 * warpgroup tensor-core instruction (wgmma, sm_90a): the weights are the M side of
 * wgmma.m64nNk16 and the rows of x its N side (16 to 128 of them), both read from shared memory
 * in the 128-byte swizzled K-major layout that wgmma's descriptors name. A block is one or two
 * consumer warpgroups (128 threads each) of 128 weight rows (two m64 tiles) and BN rows of x
 * (two for 128 rows of x: they share each x chunk), and a producer warp: one of its threads
 * streams the K chunks of 64 elements into 6 to 8 shared-memory stages by the tensor memory
 * accelerator (TMA: a 2-D box of a tensor map per operand, swizzled and zero-filled past the
 * rows and K by the copy itself), each stage's arrival counted by an
 * mbarrier, each stage handed back by the consumers' mbarrier once the wgmma reading it is done
 * (one chunk's wgmma left in flight). The weights do not depend on the previous kernel, so the
 * first stages' weight boxes are asked for before the programmatic-dependent-launch wait and x's
 * after it. When the grid is small, K splits over a thread-block cluster along z: the blocks of
 * a cluster leave their partial tiles in their shared memory and each sums its share of the tile
 * over the cluster's blocks in rank order (distributed shared memory), so a result depends on T
 * and the shapes, never on timing, and no partial goes through device memory. Only a device of
 * compute capability 9.0 runs it (hr_cu_mmw_ok): the compute_90 PTX fallback holds an empty
 * body. */
#include <stdint.h>
#include <string.h>

#include <cooperative_groups.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include "backend/cuda/qtile.cuh"

namespace cg = cooperative_groups;

/* A block: WG consumer warpgroups of 128 weight rows each (BM = 128 WG rows), then a producer
 * warp. */
enum { MW_WG_ROWS = 128, MW_BK = 64, MW_MAX_SPLITS = 8 };
template <int WG> static constexpr __host__ __device__ int mw_consumers() { return 128 * WG; }
template <int WG> static constexpr __host__ __device__ int mw_threads() { return 128 * WG + 32; }
enum { MW_ALIGN = 1024 };      /* the swizzle atom's alignment */
enum { MW_SMEM = 200 * 1024 }; /* the stages' shared memory: one block an SM */

/* One stage: the block's 128 WG weight rows then its BN rows of x, 64 elements of K each. */
template <int BN, int WG> struct mw_stage {
    uint16_t a[MW_WG_ROWS * WG * MW_BK];
    uint16_t b[BN * MW_BK];
};

/* Stages: as many as MW_SMEM holds, at most 8. */
template <int BN, int WG> static constexpr __host__ __device__ int mw_stages() {
    return MW_SMEM / (int)sizeof(mw_stage<BN, WG>) < 8 ? MW_SMEM / (int)sizeof(mw_stage<BN, WG>)
                                                       : 8;
}

/* The TMA descriptors of a launch: each weight matrix of the set, and x. */
typedef struct {
    CUtensorMap w[HR_CU_GEMV_FUSE];
    CUtensorMap x;
} mw_maps;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MW_ON 1
#else
#define MW_ON 0
#endif

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

static __device__ __forceinline__ void mw_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/* Waits until at most N of the warpgroup's committed wgmma groups are pending. */
template <int N> static __device__ __forceinline__ void mw_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* The accumulators' registers as of now, for the compiler: wgmma wrote them asynchronously. */
template <int R> static __device__ __forceinline__ void mw_touch(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

static __device__ __forceinline__ void mbar_init(uint64_t *b, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(b)), "r"(count));
}

/* This thread's arrival, with tx more bytes the phase waits for. */
static __device__ __forceinline__ void mbar_expect(uint64_t *b, uint32_t tx) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(b)),
                 "r"(tx)
                 : "memory");
}

static __device__ __forceinline__ void mbar_arrive(uint64_t *b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(b)) : "memory");
}

/* Waits for the completion of the barrier's phase of the given parity. */
static __device__ __forceinline__ void mbar_wait(uint64_t *b, uint32_t parity) {
    asm volatile("{\n.reg .pred p;\nMW_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra MW_WAIT;\n}\n" ::"r"(smem_addr(b)),
                 "r"(parity)
                 : "memory");
}

/* The box at (element k, row r) of map into dst, counted on bar. */
static __device__ __forceinline__ void mw_tma(void *dst, const CUtensorMap *map, long k, long r,
                                              uint64_t *bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3}], [%4];\n" ::"r"(smem_addr(dst)),
                 "l"(map), "r"((int)k), "r"((int)r), "r"(smem_addr(bar))
                 : "memory");
}

/* The producer (one thread): chunk c0 + i of the block's weight rows (row r of map w) and of x
 * (rows t0 ..) into stage i % S, once the consumers handed that stage back. The first stages'
 * weights are asked for before the wait for the previous kernel (x is its output). */
template <int BN, int WG, int S>
static __device__ void mw_produce(mw_stage<BN, WG> *st, uint64_t *full, uint64_t *empty,
                                  const CUtensorMap *w, const CUtensorMap *x, long r, long t0,
                                  long c0, int n_it) {
    int pre = n_it < S ? n_it : S;
    for (int i = 0; i < pre; i++) {
        mbar_expect(&full[i], sizeof(mw_stage<BN, WG>));
        mw_tma(st[i].a, w, MW_BK * (c0 + i), r, &full[i]);
    }
    HR_PDL_ENTRY();
    for (int i = 0; i < pre; i++)
        mw_tma(st[i].b, x, MW_BK * (c0 + i), t0, &full[i]);
    for (int i = pre; i < n_it; i++) {
        int s = i % S;
        mbar_wait(&empty[s], (uint32_t)(i / S - 1) & 1);
        mbar_expect(&full[s], sizeof(mw_stage<BN, WG>));
        mw_tma(st[s].a, w, MW_BK * (c0 + i), r, &full[s]);
        mw_tma(st[s].b, x, MW_BK * (c0 + i), t0, &full[s]);
    }
}

/* A consumer warpgroup (wg: its 128 rows of the block's): each chunk's 8 wgmmas once its
 * stage is in; the stage of the chunk before goes back to the producer once only this chunk's
 * wgmmas are in flight. */
template <int D, int BN, int WG, int S>
static __device__ void mw_consume(const mw_stage<BN, WG> *st, uint64_t *full, uint64_t *empty,
                                  int n_it, int wg, float (&acc)[2][BN / 2]) {
    for (int i = 0; i < n_it; i++) {
        const uint16_t *a = st[i % S].a + wg * MW_WG_ROWS * MW_BK, *bx = st[i % S].b;
        mbar_wait(&full[i % S], (uint32_t)(i / S) & 1);
        mw_fence();
#pragma unroll
        for (int k = 0; k < MW_BK / 16; k++) {
            uint64_t b = mw_desc(bx + 16 * k);
            mw_mma<D, BN>(acc[0], mw_desc(a + 16 * k), b);
            mw_mma<D, BN>(acc[1], mw_desc(a + 64 * MW_BK + 16 * k), b);
        }
        mw_commit();
        mw_wait<1>();
        if (i > 0) mbar_arrive(&empty[(i - 1) % S]);
    }
    mw_wait<0>();
    mw_touch(acc[0]);
    mw_touch(acc[1]);
}

/* Where accumulator i of m-tile m of consumer th lands: weight row (n0 + ..) and x row. */
static __device__ __forceinline__ void mw_pos_of(int th, int m, int i, long *n, long *t) {
    int warp = (th >> 5) & 3, lane = th & 31;
    *n = MW_WG_ROWS * (th >> 7) + 64 * m + 16 * warp + (lane >> 2) + 8 * ((i >> 1) & 1);
    *t = 8 * (i >> 2) + 2 * (lane & 3) + (i & 1);
}
#endif

/* Rows blockIdx.x x 128 WG .. of the set (all in one matrix), x rows blockIdx.y x BN .., K
 * chunks of split blockIdx.z (the block's rank in its cluster of `splits`). */
template <int D, int BN, int WG>
static __global__ void __launch_bounds__(mw_threads<WG>(), 1)
    mmw_k(const __grid_constant__ mw_maps maps, hr_cu_gemv_set g, int T, long K, int splits) {
#if MW_ON
    constexpr int S = mw_stages<BN, WG>(), C = mw_consumers<WG>();
    extern __shared__ __align__(16) unsigned char mw_raw[]; /* MW_ALIGN more than the stages */
    unsigned char *mw_smem = mw_raw + ((MW_ALIGN - smem_addr(mw_raw) % MW_ALIGN) % MW_ALIGN);
    mw_stage<BN, WG> *st = (mw_stage<BN, WG> *)mw_smem;
    uint64_t *full = (uint64_t *)(st + S), *empty = full + S;
    long N = g.start[g.n], n0 = (long)blockIdx.x * MW_WG_ROWS * WG, t0 = (long)blockIdx.y * BN;
    long nc = (K + MW_BK - 1) / MW_BK, per = (nc + splits - 1) / splits;
    long c0 = blockIdx.z * per, c1 = c0 + per < nc ? c0 + per : nc;
    int n_it = c1 > c0 ? (int)(c1 - c0) : 0;
    if (threadIdx.x == C) {
        for (int s = 0; s < S; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], C);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    float acc[2][BN / 2] = {};
    if (threadIdx.x >= C) {
        long in;
        int m = hr_set_row(g, n0, &in);
        if (threadIdx.x == C)
            mw_produce<BN, WG, S>(st, full, empty, &maps.w[m], &maps.x, in, t0, c0, n_it);
        else
            HR_PDL_ENTRY();
    } else {
        HR_PDL_ENTRY(); /* y may still be read by the kernel before */
        mw_consume<D, BN, WG, S>(st, full, empty, n_it, threadIdx.x >> 7, acc);
    }
    if (splits == 1) {
        if (threadIdx.x >= C) return;
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
    /* the partial tile, register r of consumer i at red[r][i], summed over the cluster's
     * blocks: this block takes its share of the tile, 4 elements a thread at a time, all the
     * blocks' 16-byte pieces of them loaded before the sum (in rank order) */
    __syncthreads(); /* every stage read: the tiles go where the stages were */
    float *red = (float *)mw_smem;
    if (threadIdx.x < C)
#pragma unroll
        for (int m = 0; m < 2; m++)
#pragma unroll
            for (int i = 0; i < BN / 2; i++)
                red[(m * (BN / 2) + i) * C + threadIdx.x] = acc[m][i];
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();
    int rank = (int)cl.block_rank(), n4 = C * BN / 4;
    const float4 *part[MW_MAX_SPLITS];
#pragma unroll
    for (int z = 0; z < MW_MAX_SPLITS; z++)
        part[z] = (const float4 *)cl.map_shared_rank(red, z < splits ? z : 0);
    for (int q = n4 * rank / splits + threadIdx.x; q < n4 * (rank + 1) / splits;
         q += mw_threads<WG>()) {
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
            int r = (4 * q + k) / C, th = (4 * q + k) % C;
            long n, t;
            mw_pos_of(th, r / (BN / 2), r % (BN / 2), &n, &t);
            if (n0 + n < N && t0 + t < T) *hr_set_out(g, n0 + n, t0 + t) = e4[k];
        }
    }
    cl.sync(); /* no block leaves while another reads its shared memory */
#else
    HR_PDL_ENTRY();
    (void)maps, (void)g, (void)T, (void)K, (void)splits;
#endif
}

int hr_cu_mmw_max_splits = HR_CU_MMW_SPLITS;

template <int D, int BN, int WG> static size_t mw_shm(void) {
    static int set; /* the opt-in past 48 KB, once per instantiation */
    size_t shm = mw_stages<BN, WG>() * (sizeof(mw_stage<BN, WG>) + 2 * sizeof(uint64_t)) + MW_ALIGN;
    if (!set) {
        cudaFuncSetAttribute(mmw_k<D, BN, WG>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)shm);
        set = 1;
    }
    return shm;
}

/* The launch of a grid of clusters of `splits` blocks along z, with PDL where it is on. */
static cudaLaunchConfig_t mw_config(dim3 grid, int threads, size_t shm, cudaStream_t s, int splits,
                                    cudaLaunchAttribute at[2]) {
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 1;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = (unsigned)splits;
    at[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[1].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3((unsigned)threads);
    cfg.dynamicSmemBytes = shm;
    cfg.stream = s;
    cfg.attrs = at;
    cfg.numAttrs = hr_cu_pdl ? 2 : 1;
    return cfg;
}

/* How many clusters of s blocks (1 <= s <= MW_MAX_SPLITS) the device holds at once. */
typedef struct {
    int n[MW_MAX_SPLITS + 1];
} mw_resident;

template <int D, int BN, int WG> static mw_resident mw_resident_of(void) {
    mw_resident r = {};
    size_t shm = mw_shm<D, BN, WG>();
    for (int s = 1; s <= MW_MAX_SPLITS; s++) {
        cudaLaunchAttribute at[2];
        cudaLaunchConfig_t cfg =
            mw_config(dim3(1, 1, (unsigned)s), mw_threads<WG>(), shm, 0, s, at);
        cfg.numAttrs = 1;
        if (cudaOccupancyMaxActiveClusters(&r.n[s], mmw_k<D, BN, WG>, &cfg) != cudaSuccess) {
            cudaGetLastError();
            r.n[s] = 0;
        }
    }
    return r;
}

/* K splits (the cluster size) for a grid of `tiles` blocks: the most, up to the cap and at
 * least 4 chunks of K each, whose blocks all fit on the device at once (1 where none do). */
template <int D, int BN, int WG> static int mw_splits(long tiles, long nc) {
    static const mw_resident res = mw_resident_of<D, BN, WG>();
    int most = hr_cu_mmw_max_splits < MW_MAX_SPLITS ? hr_cu_mmw_max_splits : MW_MAX_SPLITS;
    for (int s = most; s > 1; s--)
        if (s <= nc / 4 && tiles * s <= (long)res.n[s] * s) return s;
    return 1;
}

static PFN_cuTensorMapEncodeTiled_v12000 mw_lookup(void) {
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
        return NULL;
    return (PFN_cuTensorMapEncodeTiled_v12000)fn;
}

/* The tensor map of rows x K 16-bit elements at p in boxes of 64 elements by box_rows rows,
 * 128-byte swizzled, zeros past the edges; 0 where the driver refuses it. */
static int mw_map(CUtensorMap *m, const void *p, long rows, long K, int box_rows) {
    static const PFN_cuTensorMapEncodeTiled_v12000 encode = mw_lookup();
    if (!encode) return 0;
    cuuint64_t dim[2] = {(cuuint64_t)K, (cuuint64_t)rows}, stride[1] = {(cuuint64_t)K * 2};
    cuuint32_t box[2] = {MW_BK, (cuuint32_t)box_rows}, step[2] = {1, 1};
    return encode(m, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, (void *)p, dim, stride, box, step,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/* One launch for the set g, whose matrices but the last have whole tiles of 128 WG rows; 0
 * where a tensor map cannot be made. */
template <int D, int BN, int WG>
static int mmw_run(cudaStream_t s, const hr_cu_gemv_set *g, const uint16_t *xh, int T, long K) {
    const int bm = MW_WG_ROWS * WG;
    mw_maps maps;
    memset(&maps, 0, sizeof maps);
    for (int i = 0; i < g->n; i++)
        if (!mw_map(&maps.w[i], g->w[i], g->start[i + 1] - g->start[i], K, bm)) return 0;
    if (!mw_map(&maps.x, xh, T, K, BN)) return 0;
    size_t shm = mw_shm<D, BN, WG>();
    long N = g->start[g->n], tiles = (N + bm - 1) / bm * ((T + BN - 1) / BN);
    int splits = mw_splits<D, BN, WG>(tiles, (K + MW_BK - 1) / MW_BK);
    cudaLaunchAttribute at[2];
    dim3 grid((unsigned)((N + bm - 1) / bm), (unsigned)((T + BN - 1) / BN), (unsigned)splits);
    cudaLaunchConfig_t cfg = mw_config(grid, mw_threads<WG>(), shm, s, splits, at);
    return cudaLaunchKernelEx(&cfg, mmw_k<D, BN, WG>, maps, *g, T, K, splits) == cudaSuccess;
}

extern "C" int hr_cu_mmw_clusters(int bn, int splits) {
    if (splits < 1 || splits > MW_MAX_SPLITS) return 0;
    return bn <= 16   ? mw_resident_of<HR_CU_BF16, 16, 1>().n[splits]
           : bn <= 32 ? mw_resident_of<HR_CU_BF16, 32, 1>().n[splits]
           : bn <= 64 ? mw_resident_of<HR_CU_BF16, 64, 1>().n[splits]
                      : mw_resident_of<HR_CU_BF16, 128, 2>().n[splits];
}

/* The x tile by rows: 16, 32, 64 or 128, the fewest that cover T (past 128: tiles of 128); 128
 * rows of x with 256 weight rows a block (two consumer warpgroups sharing each x chunk: x's reads
 * from the L2 half of the weights' instead of as many). */
template <int D>
static int mmw_tiles(cudaStream_t s, const hr_cu_gemv_set *g, const uint16_t *xh, int T, long K,
                     int wg) {
    if (T <= 16) return mmw_run<D, 16, 1>(s, g, xh, T, K);
    if (T <= 32) return mmw_run<D, 32, 1>(s, g, xh, T, K);
    if (T <= 64) return mmw_run<D, 64, 1>(s, g, xh, T, K);
    return wg == 2 ? mmw_run<D, 128, 2>(s, g, xh, T, K) : mmw_run<D, 128, 1>(s, g, xh, T, K);
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

/* The set in one launch where its tiles of rows stay within a matrix, else a launch per matrix.
 * Past 64 rows of x, blocks of 256 weight rows where the matrices allow them. */
template <int D>
static int mmw_set(cudaStream_t s, const hr_cu_gemv_set *g, const uint16_t *xh, int T, long K) {
    int whole = 1, wg = T > 64 ? 2 : 1;
    for (int i = 1; i < g->n; i++) {
        whole &= g->start[i] % MW_WG_ROWS == 0;
        if (g->start[i] % (2 * MW_WG_ROWS)) wg = 1;
    }
    if (whole) return mmw_tiles<D>(s, g, xh, T, K, wg);
    for (int i = 0; i < g->n; i++) {
        hr_cu_gemv_set one = {.n = 1, .w = {g->w[i]}, .y = {g->y[i]}};
        one.start[1] = g->start[i + 1] - g->start[i];
        if (!mmw_tiles<D>(s, &one, xh, T, K, T > 64 ? 2 : 1)) return 0;
    }
    return 1;
}

long hr_cu_mmw_refused;

static int mmw_takes(const hr_cu_gemv_set *g, const void *xh, long K) {
    if (K % 8 || (uintptr_t)xh % 16) return 0;
    for (int i = 0; i < g->n; i++)
        if ((uintptr_t)g->w[i] % 16) return 0;
    return 1;
}

extern "C" int hr_cu_mmw(cudaStream_t s, const hr_cu_gemv_set *g, const void *xh, int dtype, int T,
                         long K) {
    int ok = mmw_takes(g, xh, K) &&
             (dtype == HR_CU_BF16 ? mmw_set<HR_CU_BF16>(s, g, (const uint16_t *)xh, T, K)
                                  : mmw_set<HR_CU_F16>(s, g, (const uint16_t *)xh, T, K));
    if (!ok) hr_cu_mmw_refused++;
    return ok;
}
