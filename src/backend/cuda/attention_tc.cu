/* Prefill attention on the tensor cores (FlashAttention-2 style, WMMA bf16 products with f32
 * accumulation): one block of 4 warps per (tile of HR_CU_TILE consecutive queries of one row,
 * query head). Each key tile of 64 positions is gathered from the paged KV into shared
 * memory, S = Q K^T runs on the tensor cores, each warp takes the online softmax of its 16
 * query rows (scale, soft-cap, causal and sliding-window masks as the CPU op), then O += P V
 * on the tensor cores with O kept in shared memory and rescaled per row. Q and P are rounded
 * to bf16 (the KV already is): used for bf16 KV caches only, the fast mode; the exact mode
 * keeps the CUDA-core kernel (attention.cu). */
#include <math.h>
#include <mma.h>

#include "backend/cuda/common.cuh"

using namespace nvcuda;

enum { BQ = HR_CU_TILE, BK = 64, TC_WARPS = 4 };

typedef struct {
    const int32_t *pos, *row, *table, *tiles;
    int max_blocks;
} tc_args;

template <int HD>
struct tc_smem {
    __nv_bfloat16 q[BQ * HD], k[BK * HD], v[BK * HD];
    float s[BQ * BK];
    __nv_bfloat16 p[BQ * BK];
    float o[BQ * HD];
    float m[BQ], l[BQ];
};

/* K and V rows j0 .. j0 + BK - 1 of kv head kvh into shared memory; positions outside
 * [lo, last] (not written, or before the window and maybe released) are zeros. */
template <int HD>
static __device__ void load_kv(tc_smem<HD> &sm, const hr_cu_kv_layer &kv, const int32_t *bt,
                               int kvh, int j0, int lo, int last) {
    for (int e = threadIdx.x; e < BK * HD; e += blockDim.x) {
        int jj = e / HD, d = e % HD, j = j0 + jj;
        float kf = 0, vf = 0;
        if (j >= lo && j <= last) {
            long base = (((long)bt[j / kv.block_size] * kv.n_kv_heads + kvh) * kv.block_size +
                         j % kv.block_size) * HD + d;
            kf = hr_ld(kv.k, HR_CU_BF16, base);
            vf = hr_ld(kv.v, HR_CU_BF16, base);
        }
        sm.k[e] = __float2bfloat16_rn(kf);
        sm.v[e] = __float2bfloat16_rn(vf);
    }
}

/* S rows of warp w = Q rows (16) x K^T (BK columns). */
template <int HD>
static __device__ void scores(tc_smem<HD> &sm, int w) {
    for (int n = 0; n < BK / 16; n++) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.0f);
        for (int k = 0; k < HD / 16; k++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
            wmma::load_matrix_sync(a, sm.q + 16 * w * HD + 16 * k, HD);
            wmma::load_matrix_sync(b, sm.k + 16 * n * HD + 16 * k, HD);
            wmma::mma_sync(acc, a, b, acc);
        }
        wmma::store_matrix_sync(sm.s + 16 * w * BK + 16 * n, acc, BK, wmma::mem_row_major);
    }
}

/* The online softmax of warp w's rows over this key tile: P (bf16) and the rescaled O. */
template <int HD>
static __device__ void softmax_rows(tc_smem<HD> &sm, const hr_cu_attn &p, int w, int p0, int nq,
                                    int j0) {
    int lane = threadIdx.x & 31;
    for (int ii = 0; ii < 16; ii++) {
        int i = 16 * w + ii, pq = p0 + i;
        int lo_i = p.window > 0 && pq - p.window + 1 > 0 ? pq - p.window + 1 : 0;
        float s[2], mt = -INFINITY;
        for (int c = 0; c < 2; c++) {
            int col = lane + 32 * c, j = j0 + col;
            float v = sm.s[i * BK + col] * p.scale;
            if (p.softcap > 0) v = p.softcap * tanhf(v / p.softcap);
            s[c] = i < nq && j <= pq && j >= lo_i ? v : -INFINITY;
            mt = fmaxf(mt, s[c]);
        }
        mt = hr_warp_max(mt);
        float m_old = sm.m[i], m_new = fmaxf(m_old, mt);
        float corr = m_old == -INFINITY ? 0.0f : expf(m_old - m_new), sum = 0;
        for (int c = 0; c < 2; c++) {
            float e = s[c] == -INFINITY ? 0.0f : expf(s[c] - m_new);
            sum += e;
            sm.p[i * BK + lane + 32 * c] = __float2bfloat16_rn(e);
        }
        sum = hr_warp_sum(sum);
        for (int d = lane; d < HD; d += 32) sm.o[i * HD + d] *= corr;
        __syncwarp();
        if (lane == 0) sm.l[i] = sm.l[i] * corr + sum, sm.m[i] = m_new;
    }
}

/* O rows of warp w += P rows x V. */
template <int HD>
static __device__ void accumulate(tc_smem<HD> &sm, int w) {
    for (int n = 0; n < HD / 16; n++) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::load_matrix_sync(acc, sm.o + 16 * w * HD + 16 * n, HD, wmma::mem_row_major);
        for (int k = 0; k < BK / 16; k++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
            wmma::load_matrix_sync(a, sm.p + 16 * w * BK + 16 * k, BK);
            wmma::load_matrix_sync(b, sm.v + 16 * k * HD + 16 * n, HD);
            wmma::mma_sync(acc, a, b, acc);
        }
        wmma::store_matrix_sync(sm.o + 16 * w * HD + 16 * n, acc, HD, wmma::mem_row_major);
    }
}

template <int HD>
static __global__ void __launch_bounds__(32 * TC_WARPS) attn_tc_k(tc_args a, hr_cu_kv_layer kv,
                                                                  hr_cu_attn p, float *out,
                                                                  const float *q) {
    extern __shared__ __align__(128) unsigned char raw[];
    tc_smem<HD> &sm = *reinterpret_cast<tc_smem<HD> *>(raw);
    int t0 = a.tiles[2 * blockIdx.x], nq = a.tiles[2 * blockIdx.x + 1], h = blockIdx.y;
    int kvh = h / (p.n_heads / p.n_kv_heads), w = threadIdx.x >> 5;
    int p0 = a.pos[t0], last = p0 + nq - 1;
    int lo = p.window > 0 && p0 - p.window + 1 > 0 ? p0 - p.window + 1 : 0;
    const int32_t *bt = a.table + (long)a.row[t0] * a.max_blocks;
    for (int e = threadIdx.x; e < BQ * HD; e += blockDim.x) {
        int i = e / HD, d = e % HD;
        sm.q[e] = __float2bfloat16_rn(i < nq ? q[((long)(t0 + i) * p.n_heads + h) * HD + d] : 0.0f);
        sm.o[e] = 0;
    }
    for (int i = threadIdx.x; i < BQ; i += blockDim.x) sm.m[i] = -INFINITY, sm.l[i] = 0;
    for (int j0 = lo / BK * BK; j0 <= last; j0 += BK) {
        __syncthreads(); /* the previous tile's K / V are no longer read */
        load_kv(sm, kv, bt, kvh, j0, lo, last);
        __syncthreads();
        scores(sm, w);
        __syncwarp();
        softmax_rows(sm, p, w, p0, nq, j0);
        __syncwarp();
        accumulate(sm, w);
    }
    __syncthreads();
    for (int e = threadIdx.x; e < nq * HD; e += blockDim.x) {
        int i = e / HD, d = e % HD;
        float L = sm.l[i];
        out[((long)(t0 + i) * p.n_heads + h) * HD + d] = L > 0 ? sm.o[e] / L : 0.0f;
    }
}

template <int HD>
static int launch(cudaStream_t s, const hr_cu_meta *m, const hr_cu_kv_layer *kv,
                  const hr_cu_attn *p, float *out, const float *q) {
    size_t shm = sizeof(tc_smem<HD>);
    static int ready; /* the dynamic shared memory limit, raised once per instantiation */
    if (!ready) {
        if (cudaFuncSetAttribute(attn_tc_k<HD>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm) !=
            cudaSuccess)
            return 0;
        ready = 1;
    }
    tc_args a = {m->pos, m->row, m->block_table, m->tiles, m->max_blocks};
    dim3 grid((unsigned)m->n_tiles, (unsigned)p->n_heads);
    attn_tc_k<HD><<<grid, 32 * TC_WARPS, shm, s>>>(a, *kv, *p, out, q);
    return 1;
}

extern "C" int hr_cu_attention_tc_fits(const hr_cu_kv_layer *kv, const hr_cu_attn *p) {
    return kv->dtype == HR_CU_BF16 && (p->head_dim == 32 || p->head_dim == 64 || p->head_dim == 128);
}

extern "C" int hr_cu_attention_tc(cudaStream_t s, const hr_cu_meta *m, const hr_cu_kv_layer *kv,
                                  const hr_cu_attn *p, float *out, const float *q) {
    if (m->n_tiles <= 0) return 1;
    switch (p->head_dim) {
    case 32: return launch<32>(s, m, kv, p, out, q);
    case 64: return launch<64>(s, m, kv, p, out, q);
    case 128: return launch<128>(s, m, kv, p, out, q);
    default: return 0;
    }
}
