/* Products of 4-bit GGUF weights (Q4_0, planar rows; Q4_K) with more rows of x than mmq.cu
 * takes well, on the f16 tensor cores with the weights decoded in registers (the w4a16 idea of
 * Marlin-style kernels): x rounded to f16 once per product group (as the cuBLAS path rounds it),
 * each weight tile decoded from its staged bytes to f16 fragments — codes to f16 through the
 * mantissa of 1024 (no int-to-float conversion), times the block's f16 scale, or Q4_K's f16
 * sub-block scale and min (one fused multiply-add) — and multiplied by m16n8k16 mma.sync with f32
 * accumulation. The decoding costs per weight, not per weight and row of x as mmq's per-output
 * scaling does, and the weights are read in their bytes (0.56 per Q4_0 weight) where the cuBLAS
 * path writes each matrix as 2-byte f16 and reads it again.
 * Within a 16-element step of K the elements are taken in a permuted order (the same for the
 * weights and x, so the dot is unchanged): lane t4's four k slots of the mma fragment are the
 * step's elements 4 t4 .. 4 t4 + 3, so one 4-byte read of codes and one 8-byte read of x serve
 * a lane's step.
 * A block of 4 warps computes 64 rows of x (blockIdx.x) for 128 weight rows (blockIdx.y), each
 * warp 32 rows (two m-tiles: each x fragment read serves both) x 64 columns, over chunks of 256
 * elements of K staged by cp.async two stages deep (the weights as qtile.cuh stages them for mmq,
 * x as f16). Q4_K's sub-block scales and mins are decoded once per chunk and row into a table. */
#include "backend/cuda/qfields.cuh"
#include "backend/cuda/qtile.cuh"

enum { MF_WARPS = 4, MF_THREADS = 32 * MF_WARPS, MF_BN = 64, MF_STAGES = 2 };
enum { MF_XS = 272 }; /* halves of a staged x row: 256 + 16 (rows 544 bytes apart: no conflicts) */

/* m-tiles of 16 weight rows per warp (each x fragment read serves both), and the block's rows. */
enum { MF_MT = 2, MF_BM = 16 * MF_MT * MF_WARPS };

template <int Q> struct mf_stage {
    uint8_t w[MF_BM][mq_w<Q>::stride];
    __half x[MF_BN][MF_XS];
};

static __device__ __forceinline__ uint32_t h2u(__half2 h) { return *(uint32_t *)&h; }

/* Bytes b (sel 0x4140: bytes 0, 1; 0x4342: bytes 2, 3) of w as the f16 pair 1024 + b. */
static __device__ __forceinline__ __half2 magic2(uint32_t w, uint32_t sel) {
    uint32_t v = __byte_perm(w, 0x6464u, sel);
    return *(__half2 *)&v;
}

/* (byte - z) * d for the two bytes of w that sel picks (z + 1024 given as zb). */
static __device__ __forceinline__ uint32_t deq(uint32_t w, uint32_t sel, __half2 zb, __half2 d) {
    return h2u(__hmul2(__hsub2(magic2(w, sel), zb), d));
}

/* The four A registers of a step from rows g (word w0) and g + 8 (w1) of an m-tile: their
 * elements 4 t4, 4 t4 + 1 (k slots 2 t4, 2 t4 + 1) and 4 t4 + 2, 4 t4 + 3 (slots + 8). */
static __device__ __forceinline__ void frag(uint32_t a[4], uint32_t w0, uint32_t w1, __half2 zb,
                                            __half2 d0, __half2 d1) {
    a[0] = deq(w0, 0x4140u, zb, d0), a[1] = deq(w1, 0x4140u, zb, d1);
    a[2] = deq(w0, 0x4342u, zb, d0), a[3] = deq(w1, 0x4342u, zb, d1);
}

/* The warp's mma of one step of K (x elements e .. e + 15 of the chunk) over its m-tiles and the
 * block's 8 column tiles of x. */
static __device__ __forceinline__ void step(float (*acc)[8][4], const uint32_t (*a)[4],
                                            const __half (*x)[MF_XS], int e) {
    int lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        uint2 b = *(const uint2 *)&x[8 * j + g][e + 4 * t4];
#pragma unroll
        for (int m = 0; m < MF_MT; m++)
            mma_f16(acc[m][j], a[m], b.x, b.y);
    }
}

/* Q4_0: the chunk's nu blocks of 32 (FULL: all 8, a loop the scheduler can overlap); block u:
 * element j in the low nibble of code byte j (j < 16), j + 16 in the high one, the f16 scales
 * after the 8 blocks' codes. */
template <bool FULL>
static __device__ __forceinline__ void
chunk_q4_0(float (*acc)[8][4], const mf_stage<HR_CU_Q4_0> &st, const uint8_t *const *w, int nu) {
    int t4 = threadIdx.x & 3;
    const __half2 zb = __float2half2_rn(1032.0f);
#pragma unroll
    for (int u = 0; u < 8; u++) {
        if (!FULL && u >= nu) break;
        __half2 d[MF_MT][2];
        uint32_t c[MF_MT][2];
#pragma unroll
        for (int m = 0; m < MF_MT; m++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                d[m][h] = __half2half2(*(const __half *)(w[2 * m + h] + 128 + 2 * u));
                c[m][h] = ld32(w[2 * m + h] + 16 * u + 4 * t4);
            }
#pragma unroll
        for (int s = 0; s < 2; s++) {
            uint32_t a[MF_MT][4];
#pragma unroll
            for (int m = 0; m < MF_MT; m++)
                frag(a[m], c[m][0] >> 4 * s & 0x0F0F0F0Fu, c[m][1] >> 4 * s & 0x0F0F0F0Fu, zb,
                     d[m][0], d[m][1]);
            step(acc, a, st.x, 32 * u + 16 * s);
        }
    }
}

/* Q4_K: sub-block 2 p + h is nibble h of code bytes 32 p .. 32 p + 31; element q s - m with s, m
 * from the table (f16 d x scale, -(dmin x min)). */
static __device__ __forceinline__ void chunk_q4k(float (*acc)[8][4], const mf_stage<HR_CU_Q4_K> &st,
                                                 const uint8_t *const *w, const __half2 (*sct)[8],
                                                 const int *ri) {
    int t4 = threadIdx.x & 3;
    const __half2 zb = __float2half2_rn(1024.0f);
#pragma unroll
    for (int p = 0; p < 4; p++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            uint32_t c[MF_MT][2];
#pragma unroll
            for (int m = 0; m < MF_MT; m++)
                for (int h = 0; h < 2; h++)
                    c[m][h] = ld32(w[2 * m + h] + 16 + 32 * p + 16 * hf + 4 * t4);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                uint32_t a[MF_MT][4];
#pragma unroll
                for (int m = 0; m < MF_MT; m++) {
                    __half2 s0 = sct[ri[2 * m]][2 * p + h], s1 = sct[ri[2 * m + 1]][2 * p + h];
                    __half2 d0 = __low2half2(s0), n0 = __high2half2(s0);
                    __half2 d1 = __low2half2(s1), n1 = __high2half2(s1);
                    uint32_t w0 = c[m][0] >> 4 * h & 0x0F0F0F0Fu,
                             w1 = c[m][1] >> 4 * h & 0x0F0F0F0Fu;
                    a[m][0] = h2u(__hfma2(__hsub2(magic2(w0, 0x4140u), zb), d0, n0));
                    a[m][1] = h2u(__hfma2(__hsub2(magic2(w1, 0x4140u), zb), d1, n1));
                    a[m][2] = h2u(__hfma2(__hsub2(magic2(w0, 0x4342u), zb), d0, n0));
                    a[m][3] = h2u(__hfma2(__hsub2(magic2(w1, 0x4342u), zb), d1, n1));
                }
                step(acc, a, st.x, 64 * p + 32 * h + 16 * hf);
            }
        }
}

/* Chunk c of the staged x rows (xrow: each row's start; elements past K are zeros) into st.x;
 * thread i takes piece i % 32 of rows i / 32 + 4 k. */
template <int Q>
static __device__ __forceinline__ void load_x(mf_stage<Q> &st, const __half *const *xrow, long c,
                                              long K) {
    int p = threadIdx.x & 31;
    long e = 256 * c + 8 * p;
#pragma unroll
    for (int k = 0; k < MF_BN * 32 / MF_THREADS; k++) {
        int j = k * (MF_THREADS / 32) + (threadIdx.x >> 5);
        cp16(&st.x[j][8 * p], xrow[j] + e, e < K);
    }
}

/* Q4_K's sub-block scales and mins of the staged chunk, per row, as f16 (d sc, -dmin m) pairs. */
static __device__ __forceinline__ void scale_table(const mf_stage<HR_CU_Q4_K> &st,
                                                   __half2 (*sct)[8]) {
    for (int i = threadIdx.x; i < MF_BM * 8; i += MF_THREADS) {
        int r = i / 8, s = i % 8, sc, mn;
        hr_q_k4_scale_min(st.w[r] + 4, s, &sc, &mn);
        sct[r][s] = __halves2half2(__float2half_rn(hr_q_f16(st.w[r]) * (float)sc),
                                   __float2half_rn(-(hr_q_f16(st.w[r] + 2) * (float)mn)));
    }
}

/* Rows blockIdx.y x MF_BM .. of the launch, x rows blockIdx.x x MF_BN .., chunks of split z.
 * splits = 1: y of the set; else ws[z][T][N], summed by mq_reduce_k. */
template <int Q>
static __global__ void __launch_bounds__(MF_THREADS, 2)
    mmf_k(hr_cu_gemv_set g, const __half *x, long rb, int T, long K, float *ws, int splits) {
    HR_PDL_ENTRY();
    extern __shared__ __align__(16) unsigned char mf_smem[];
    __shared__ const uint8_t *rowp[MF_BM];
    __shared__ const __half *xrow[MF_BN]; /* rows past T repeat row T - 1 */
    __shared__ __half2 sct[Q == HR_CU_Q4_K ? MF_BM : 1][8];
    mf_stage<Q> *st = (mf_stage<Q> *)mf_smem;
    long n0 = (long)blockIdx.y * MF_BM, col0 = (long)blockIdx.x * MF_BN, nb = K / 32, c0, c1;
    split_range((K + 255) / 256, splits, &c0, &c1);
    set_rows<MF_BM>(rowp, g, n0, rb);
    if (threadIdx.x < MF_BN)
        xrow[threadIdx.x] = x + (col0 + threadIdx.x < T ? col0 + threadIdx.x : T - 1) * K;
    __syncthreads();
    if (c0 < c1) load_w<Q, MF_BM, MF_THREADS>(st[0].w, rowp, c0, nb), load_x<Q>(st[0], xrow, c0, K);
    cp_commit();
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, gq = lane >> 2, t4 = lane & 3;
    int ri[2 * MF_MT]; /* the staged rows of the lane's fragments: g and g + 8 of each m-tile */
#pragma unroll
    for (int i = 0; i < 2 * MF_MT; i++)
        ri[i] = 16 * MF_MT * warp + 16 * (i / 2) + gq + 8 * (i & 1);
    float acc[MF_MT][8][4] = {};
    for (long c = c0; c < c1; c++) {
        cp_wait<0>();
        __syncthreads();
        if (c + 1 < c1) {
            mf_stage<Q> &sn = st[(c + 1 - c0) % MF_STAGES];
            load_w<Q, MF_BM, MF_THREADS>(sn.w, rowp, c + 1, nb), load_x<Q>(sn, xrow, c + 1, K);
        }
        cp_commit();
        const mf_stage<Q> &sc = st[(c - c0) % MF_STAGES];
        const uint8_t *w[2 * MF_MT];
#pragma unroll
        for (int i = 0; i < 2 * MF_MT; i++)
            w[i] = sc.w[ri[i]];
        if constexpr (Q == HR_CU_Q4_K) {
            scale_table(sc, sct);
            __syncthreads();
            chunk_q4k(acc, sc, w, sct, ri);
        } else if (nb - 8 * c >= 8) {
            chunk_q4_0<true>(acc, sc, w, 8);
        } else {
            chunk_q4_0<false>(acc, sc, w, (int)(nb - 8 * c));
        }
    }
#pragma unroll
    for (int m = 0; m < MF_MT; m++)
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                put_out(g, ws, splits, n0 + ri[2 * m + (i >> 1)], col0 + 8 * j + 2 * t4 + (i & 1),
                        T, acc[m][j][i]);
}

template <int Q>
static void mmf_run(cudaStream_t s, const hr_cu_gemv_set *g, const __half *xh, int T, long K,
                    long rb, float *ws) {
    static int shm_set; /* the opt-in past 48 KB, once per instantiation */
    size_t shm = MF_STAGES * sizeof(mf_stage<Q>);
    if (!shm_set) {
        cudaFuncSetAttribute(mmf_k<Q>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm);
        shm_set = 1;
    }
    long N = g->start[g->n];
    dim3 grid((unsigned)((T + MF_BN - 1) / MF_BN), (unsigned)((N + MF_BM - 1) / MF_BM), 1);
    mq_launch_split(mmf_k<Q>, grid, MF_THREADS, shm, s, g, T, K, ws, xh, rb);
}

/* Rows of x past mmq's that mmf takes for a matrix of format q (planar rows or not, rows of rb
 * bytes; 0: none). Beyond them the f16 decode and cuBLAS are faster (docs/perf-notes.md): Q4_K's
 * table and fused min cost it more per weight than Q4_0's. */
extern "C" int hr_cu_mmf_max_t(int q, int planar, long rb) {
    if (rb % 16) return 0;
    switch (q) {
    case HR_CU_Q4_0: return planar ? HR_CU_MMF_MAX_T : 0;
    case HR_CU_Q4_K: return 64;
    default: return 0;
    }
}

extern "C" void hr_cu_mmf(cudaStream_t s, const hr_cu_gemv_set *g, const void *xh, int q, int T,
                          long K, long rb, float *ws) {
    if (q == HR_CU_Q4_0)
        mmf_run<HR_CU_Q4_0>(s, g, (const __half *)xh, T, K, rb, ws);
    else
        mmf_run<HR_CU_Q4_K>(s, g, (const __half *)xh, T, K, rb, ws);
}
