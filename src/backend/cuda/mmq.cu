/* Products of GGUF weights with 9..hr_cu_mmq_max_t rows of 8-bit x on the tensor cores, the
 * arithmetic of mmvq.cu and the CPU (backend/cpu/qdot.h): x quantized per 32 (Q8_0, Q4_0) or
 * per 256 (Q4_K, Q6_K) by the same kernels, each scale group's integer dot an int8 mma.sync
 * (m16n8k32 for a 32-element group, m16n8k16 for Q6_K's 16-element ones), a K-quant
 * super-block's groups summed in integers with their 6- or 8-bit scales, then one f32 scale per
 * block or super-block, accumulated in f32 (in another order than the CPU's: results agree to
 * float rounding, not bit for bit).
 * A block of MQ_WR x wc warps computes MQ_BM rows of the launch for BN <= 64 rows of x (warp w:
 * rows 16 (w % MQ_WR) .. + 15, the (w / MQ_WR)-th part of the x rows), over chunks of 256
 * elements of K staged in shared memory by cp.async (3 or 4 stages deep): the weight rows' bytes of
 * the chunk (qtile.cuh) and x's codes, scales and sums. A launch takes the matrices of one product
 * group (q, k, v; gate, up) like mmvq; where the grid would leave SMs idle, K splits over
 * blockIdx.z (qtile.cuh). */
#include "backend/cuda/qfields.cuh"
#include "backend/cuda/qtile.cuh"
#include "backend/cuda/xq.cuh"

enum { MQ_WR = 4, MQ_BM = 16 * MQ_WR, MQ_XS = 272 };
template <int Q, int BN> struct mq_stage {
    uint8_t w[MQ_BM][mq_w<Q>::stride];
    int8_t x[BN][MQ_XS]; /* the chunk's 256 codes of each row of x (16 bytes of padding) */
    float xd[8][BN];     /* its scales: 8 per chunk (Q8_0, Q4_0), 1 (K-quants) */
    int xs[BN][Q == HR_CU_Q4_K ? 16 : 1]; /* Q4_K: the sums of its codes per 16 */
};

/* Stages of the cp.async pipeline (4 while a stage is small) and warps along x's rows (1 for
 * 16 rows, else 2) of a block for BN rows of x. */
template <int BN> struct mq_shape {
    static constexpr int stages = BN <= 32 ? 4 : 3, wc = BN <= 16 ? 1 : 2;
    static constexpr int threads = 32 * MQ_WR * wc;
};

/* c[16x8] += a[16x32] b[32x8], int8 in, int32 accumulate (PTX fragment layouts, mma.cuh). */
static __device__ __forceinline__ void mma_k32(int c[4], const uint32_t a[4], uint32_t b0,
                                               uint32_t b1) {
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, "
        "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* c[16x8] += a[16x16] b[16x8], int8 in, int32 accumulate. */
static __device__ __forceinline__ void mma_k16(int c[4], uint32_t a0, uint32_t a1, uint32_t b0) {
    asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
        "{%0,%1,%2,%3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a0), "r"(a1), "r"(b0));
}

/* Chunk c of the weight rows (row pointers rowp; nb blocks of 32 per row) into st.w. */
template <int Q, int BN>
static __device__ __forceinline__ void load_wt(mq_stage<Q, BN> &st, const uint8_t *const *rowp,
                                               long c, long nb) {
    load_w<Q, MQ_BM, mq_shape<BN>::threads>(st.w, rowp, c, nb);
}

/* Chunk c of x's rows col0 .. col0 + BN - 1 (rows past T repeat row T - 1) into st. */
template <int Q, int BN>
static __device__ __forceinline__ void load_x(mq_stage<Q, BN> &st, const hr_xq_parts &x, long col0,
                                              int T, long c, long K) {
    constexpr int K32 = Q == HR_CU_Q8_0 || Q == HR_CU_Q4_0;
    constexpr int P = 16 + (K32 ? 8 : 1) + (Q == HR_CU_Q4_K ? 4 : 0);
    long nb = K / 32;
    for (int i = threadIdx.x; i < BN * P; i += mq_shape<BN>::threads) {
        int j = i / P, p = i % P;
        long t = col0 + j < T ? col0 + j : T - 1;
        if (p < 16) {
            cp16(&st.x[j][16 * p], x.q + t * K + 256 * c + 16 * p, 256 * c + 16 * p < K);
        } else if (p < 16 + (K32 ? 8 : 1)) {
            int u = p - 16;
            long b = K32 ? 8 * c + u : c;
            cp4(&st.xd[u][j], x.d + t * nb + b, !K32 || b < nb);
        } else {
            int q = p - 17;
            cp16(&st.xs[j][4 * q], x.s16 + t * (K / 16) + 16 * c + 4 * q, 1);
        }
    }
}

/* The f32 term of one 32-element block's integer dots s (rows g, g + 8 scaled d0, d1; x rows
 * 2 t4, 2 t4 + 1 of the tile scaled e.x, e.y), as the CPU's f16(w) * d * s. */
static __device__ __forceinline__ void add_block(float acc[4], const int s[4], float d0, float d1,
                                                 float2 e) {
    acc[0] += d0 * e.x * (float)s[0];
    acc[1] += d0 * e.y * (float)s[1];
    acc[2] += d1 * e.x * (float)s[2];
    acc[3] += d1 * e.y * (float)s[3];
}

/* The scales of x rows 2 t4, 2 t4 + 1 of tile j for block u of the chunk. */
template <int Q, int BN>
static __device__ __forceinline__ float2 x_scales(const mq_stage<Q, BN> &st, int u, int j) {
    return *(const float2 *)&st.xd[u][8 * j + 2 * (threadIdx.x & 3)];
}

/* A warp's share of a chunk: weight rows w0 (g) and w1 (g + 8) of its row group, x tiles j0 ..
 * j0 + NW - 1 into acc[NW]. Q8_0 / Q4_0: the chunk's nu blocks. */
template <int Q, int BN, int NW>
static __device__ __forceinline__ void chunk_k32(float (*acc)[4], const mq_stage<Q, BN> &st,
                                                 const uint8_t *w0, const uint8_t *w1, int j0,
                                                 int nu) {
    constexpr int CB = Q == HR_CU_Q8_0 ? 32 : 16, SC = 8 * CB;
    int lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int u = 0; u < 8; u++) {
        if (u >= nu) break;
        uint32_t a[4];
        if constexpr (Q == HR_CU_Q8_0) {
            a[0] = ld32(w0 + 32 * u + 4 * t4), a[1] = ld32(w1 + 32 * u + 4 * t4);
            a[2] = ld32(w0 + 32 * u + 16 + 4 * t4), a[3] = ld32(w1 + 32 * u + 16 + 4 * t4);
        } else {
            uint32_t c0 = ld32(w0 + 16 * u + 4 * t4), c1 = ld32(w1 + 16 * u + 4 * t4);
            a[0] = __vsub4(c0 & 0x0F0F0F0Fu, 0x08080808u);
            a[1] = __vsub4(c1 & 0x0F0F0F0Fu, 0x08080808u);
            a[2] = __vsub4(c0 >> 4 & 0x0F0F0F0Fu, 0x08080808u);
            a[3] = __vsub4(c1 >> 4 & 0x0F0F0F0Fu, 0x08080808u);
        }
        float d0 = hr_q_f16(w0 + SC + 2 * u), d1 = hr_q_f16(w1 + SC + 2 * u);
#pragma unroll
        for (int jj = 0; jj < NW; jj++) {
            const int8_t *xr = st.x[8 * (j0 + jj) + g];
            int s[4] = {0, 0, 0, 0};
            mma_k32(s, a, ld32(xr + 32 * u + 4 * t4), ld32(xr + 32 * u + 16 + 4 * t4));
            add_block(acc[jj], s, d0, d1, x_scales(st, u, j0 + jj));
        }
    }
}

/* Q4_K: the super-block's 8 sub-blocks of 32 (sub-block 2p + h: nibble h of code bytes 32 p ..
 * 32 p + 31), summed in integers with their scales and mins, then x.d (d isum - dmin msum). */
template <int BN, int NW>
static __device__ __forceinline__ void chunk_q4k(float (*acc)[4],
                                                 const mq_stage<HR_CU_Q4_K, BN> &st,
                                                 const uint8_t *w0, const uint8_t *w1, int j0) {
    int lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    int isum[NW][4] = {}, msum[NW][4] = {};
#pragma unroll
    for (int p = 0; p < 4; p++) {
        uint32_t l0 = ld32(w0 + 16 + 32 * p + 4 * t4), l1 = ld32(w1 + 16 + 32 * p + 4 * t4);
        uint32_t h0 = ld32(w0 + 32 + 32 * p + 4 * t4), h1 = ld32(w1 + 32 + 32 * p + 4 * t4);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int s = 2 * p + h, sc0, m0, sc1, m1;
            uint32_t a[4] = {l0 >> 4 * h & 0x0F0F0F0Fu, l1 >> 4 * h & 0x0F0F0F0Fu,
                             h0 >> 4 * h & 0x0F0F0F0Fu, h1 >> 4 * h & 0x0F0F0F0Fu};
            hr_q_k4_scale_min(w0 + 4, s, &sc0, &m0);
            hr_q_k4_scale_min(w1 + 4, s, &sc1, &m1);
#pragma unroll
            for (int jj = 0; jj < NW; jj++) {
                int j = j0 + jj;
                const int8_t *xr = st.x[8 * j + g];
                int r[4] = {0, 0, 0, 0};
                mma_k32(r, a, ld32(xr + 32 * s + 4 * t4), ld32(xr + 32 * s + 16 + 4 * t4));
                const int *xa = st.xs[8 * j + 2 * t4], *xb = st.xs[8 * j + 2 * t4 + 1];
                int s0 = xa[2 * s] + xa[2 * s + 1], s1 = xb[2 * s] + xb[2 * s + 1];
                isum[jj][0] += sc0 * r[0], isum[jj][1] += sc0 * r[1];
                isum[jj][2] += sc1 * r[2], isum[jj][3] += sc1 * r[3];
                msum[jj][0] += m0 * s0, msum[jj][1] += m0 * s1;
                msum[jj][2] += m1 * s0, msum[jj][3] += m1 * s1;
            }
        }
    }
    float d0 = hr_q_f16(w0), n0 = hr_q_f16(w0 + 2), d1 = hr_q_f16(w1), n1 = hr_q_f16(w1 + 2);
#pragma unroll
    for (int jj = 0; jj < NW; jj++) {
        float2 e = x_scales(st, 0, j0 + jj);
        acc[jj][0] += e.x * (d0 * (float)isum[jj][0] - n0 * (float)msum[jj][0]);
        acc[jj][1] += e.y * (d0 * (float)isum[jj][1] - n0 * (float)msum[jj][1]);
        acc[jj][2] += e.x * (d1 * (float)isum[jj][2] - n1 * (float)msum[jj][2]);
        acc[jj][3] += e.y * (d1 * (float)isum[jj][3] - n1 * (float)msum[jj][3]);
    }
}

/* Q6_K: the super-block's 16 sub-blocks of 16. Element 128 h + 64 n + 32 c + l (l < 32): low
 * bits nibble n of byte 64 h + 32 c + l, high bits 2 c + 4 n of byte 32 h + l, scale (its
 * sub-block) e / 16; codes minus 32. Chunk c of the launch is super-block c (odd: d in the high
 * half of its word). */
template <int BN, int NW>
static __device__ __forceinline__ void
chunk_q6k(float (*acc)[4], const mq_stage<HR_CU_Q6_K, BN> &st, const uint8_t *w0, const uint8_t *w1,
          int j0, long c) {
    int lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    int isum[NW][4] = {};
#pragma unroll
    for (int h = 0; h < 2; h++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            uint32_t qh0 = ld32(w0 + 128 + 32 * h + 16 * hf + 4 * t4);
            uint32_t qh1 = ld32(w1 + 128 + 32 * h + 16 * hf + 4 * t4);
#pragma unroll
            for (int cc = 0; cc < 2; cc++) {
                uint32_t ql0 = ld32(w0 + 64 * h + 32 * cc + 16 * hf + 4 * t4);
                uint32_t ql1 = ld32(w1 + 64 * h + 32 * cc + 16 * hf + 4 * t4);
#pragma unroll
                for (int n = 0; n < 2; n++) {
                    int sb = 8 * h + 4 * n + 2 * cc + hf, sh = 2 * cc + 4 * n;
                    uint32_t a0 = __vsub4(
                        (ql0 >> 4 * n & 0x0F0F0F0Fu) | (qh0 >> sh & 0x03030303u) << 4, 0x20202020u);
                    uint32_t a1 = __vsub4(
                        (ql1 >> 4 * n & 0x0F0F0F0Fu) | (qh1 >> sh & 0x03030303u) << 4, 0x20202020u);
                    int sc0 = (int8_t)w0[192 + sb], sc1 = (int8_t)w1[192 + sb];
#pragma unroll
                    for (int jj = 0; jj < NW; jj++) {
                        int r[4] = {0, 0, 0, 0};
                        mma_k16(r, a0, a1, ld32(st.x[8 * (j0 + jj) + g] + 16 * sb + 4 * t4));
                        isum[jj][0] += sc0 * r[0], isum[jj][1] += sc0 * r[1];
                        isum[jj][2] += sc1 * r[2], isum[jj][3] += sc1 * r[3];
                    }
                }
            }
        }
    int hi = (int)(c & 1) * 16;
    float d0 = __half2float(__ushort_as_half((unsigned short)(ld32(w0 + 208) >> hi)));
    float d1 = __half2float(__ushort_as_half((unsigned short)(ld32(w1 + 208) >> hi)));
#pragma unroll
    for (int jj = 0; jj < NW; jj++) {
        float2 e = x_scales(st, 0, j0 + jj);
        acc[jj][0] += e.x * (d0 * (float)isum[jj][0]);
        acc[jj][1] += e.y * (d0 * (float)isum[jj][1]);
        acc[jj][2] += e.x * (d1 * (float)isum[jj][2]);
        acc[jj][3] += e.y * (d1 * (float)isum[jj][3]);
    }
}

/* Warp w's share: rows 16 (w % MQ_WR) .. + 15 of the block's, x tiles NW (w / MQ_WR) .. + NW - 1.
 */
template <int Q, int BN, int NW>
static __device__ __forceinline__ void chunk(float (*acc)[4], const mq_stage<Q, BN> &st, long c,
                                             long nb) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, r = 16 * (warp % MQ_WR) + (lane >> 2);
    int j0 = NW * (warp / MQ_WR);
    const uint8_t *w0 = st.w[r], *w1 = st.w[r + 8];
    if constexpr (Q == HR_CU_Q8_0 || Q == HR_CU_Q4_0)
        chunk_k32<Q, BN, NW>(acc, st, w0, w1, j0, nb - 8 * c < 8 ? (int)(nb - 8 * c) : 8);
    else if constexpr (Q == HR_CU_Q4_K)
        chunk_q4k<BN, NW>(acc, st, w0, w1, j0);
    else
        chunk_q6k<BN, NW>(acc, st, w0, w1, j0, c);
}

/* Rows n0 .. n0 + MQ_BM - 1 of the launch, x rows col0 .. col0 + BN - 1, chunks of split z.
 * splits = 1: y of the set; else ws[z][T][N], summed by mq_reduce_k (qtile.cuh). */
template <int Q, int BN>
static __global__ void __launch_bounds__(mq_shape<BN>::threads, 2)
    mmq_k(hr_cu_gemv_set g, hr_xq_parts x, long rb, int T, long K, float *ws, int splits) {
    HR_PDL_ENTRY();
    extern __shared__ __align__(16) unsigned char mq_smem[];
    __shared__ const uint8_t *rowp[MQ_BM];
    typedef mq_stage<Q, BN> stage;
    constexpr int NW = BN / 8 / mq_shape<BN>::wc, S = mq_shape<BN>::stages;
    stage *st = (stage *)mq_smem;
    long n0 = (long)blockIdx.x * MQ_BM, col0 = (long)blockIdx.y * BN, nb = K / 32, c0, c1;
    split_range((K + 255) / 256, splits, &c0, &c1);
    set_rows<MQ_BM>(rowp, g, n0, rb);
    __syncthreads();
#pragma unroll
    for (int s = 0; s < S - 1; s++) {
        if (c0 + s < c1)
            load_wt<Q, BN>(st[s], rowp, c0 + s, nb), load_x<Q, BN>(st[s], x, col0, T, c0 + s, K);
        cp_commit();
    }
    float acc[NW][4] = {};
    for (long c = c0; c < c1; c++) {
        cp_wait<S - 2>();
        __syncthreads();
        long next = c + S - 1;
        if (next < c1) {
            stage &sn = st[(next - c0) % S];
            load_wt<Q, BN>(sn, rowp, next, nb), load_x<Q, BN>(sn, x, col0, T, next, K);
        }
        cp_commit();
        chunk<Q, BN, NW>(acc, st[(c - c0) % S], c, nb);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, gq = lane >> 2, t4 = lane & 3;
    int j0 = NW * (warp / MQ_WR);
#pragma unroll
    for (int jj = 0; jj < NW; jj++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            put_out(g, ws, splits, n0 + 16 * (warp % MQ_WR) + gq + 8 * (i >> 1),
                    col0 + 8 * (j0 + jj) + 2 * t4 + (i & 1), T, acc[jj][i]);
}

template <int Q, int BN>
static void mmq_run(cudaStream_t s, const hr_cu_gemv_set *g, hr_xq_parts x, int T, long K, long rb,
                    float *ws) {
    static int shm_set; /* the opt-in past 48 KB, once per instantiation */
    size_t shm = mq_shape<BN>::stages * sizeof(mq_stage<Q, BN>);
    if (!shm_set) {
        cudaFuncSetAttribute(mmq_k<Q, BN>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm);
        shm_set = 1;
    }
    long N = g->start[g->n];
    dim3 grid((unsigned)((N + MQ_BM - 1) / MQ_BM), (unsigned)((T + BN - 1) / BN), 1);
    mq_launch_split(mmq_k<Q, BN>, grid, mq_shape<BN>::threads, shm, s, g, T, K, ws, x, rb);
}

/* x rows per block: 16, 32, 48 or 64. */
template <int Q>
static void mmq_launch(cudaStream_t s, const hr_cu_gemv_set *g, hr_xq_parts x, int T, long K,
                       long rb, float *ws) {
    if (T <= 16)
        mmq_run<Q, 16>(s, g, x, T, K, rb, ws);
    else if (T <= 32)
        mmq_run<Q, 32>(s, g, x, T, K, rb, ws);
    else if (T <= 48)
        mmq_run<Q, 48>(s, g, x, T, K, rb, ws);
    else
        mmq_run<Q, 64>(s, g, x, T, K, rb, ws);
}

/* Past these rows mmf.cu (Q4_0, Q4_K) or the f16 decode and cuBLAS are faster
 * (docs/perf-notes.md). */
extern "C" int hr_cu_mmq_max_t(int q) {
    switch (q) {
    case HR_CU_Q8_0:
    case HR_CU_Q6_K: return HR_CU_MMQ_MAX_T;
    case HR_CU_Q4_0:
    case HR_CU_Q4_K: return 32;
    default: return 0;
    }
}

extern "C" size_t hr_cu_mmq_ws_bytes(int T) { return (size_t)T * MQ_WS_ROWS * sizeof(float); }

extern "C" void hr_cu_mmq(cudaStream_t s, const hr_cu_gemv_set *g, const void *xq, int q, int T,
                          long K, long rb, float *ws) {
    hr_xq_parts p = hr_xq_at((void *)xq, T, K);
    switch (q) {
    case HR_CU_Q8_0: mmq_launch<HR_CU_Q8_0>(s, g, p, T, K, rb, ws); break;
    case HR_CU_Q4_0: mmq_launch<HR_CU_Q4_0>(s, g, p, T, K, rb, ws); break;
    case HR_CU_Q4_K: mmq_launch<HR_CU_Q4_K>(s, g, p, T, K, rb, ws); break;
    default: mmq_launch<HR_CU_Q6_K>(s, g, p, T, K, rb, ws); break;
    }
}
