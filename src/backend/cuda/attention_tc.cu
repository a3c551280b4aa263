/* Prefill attention on the tensor cores (FlashAttention-2 structure, bf16 mma.sync m16n8k16
 * with f32 accumulation): one block of 4 warps per (tile of HR_CU_TILE consecutive queries of
 * one row, query head); each warp owns 16 query rows. Key tiles of BK positions are copied
 * from the paged KV into shared memory with 16-byte asynchronous copies, the next tile while
 * the current one is multiplied (two buffers). S = Q K^T stays in registers, where the online
 * softmax of each row runs (scale, soft-cap, causal and sliding-window masks as the CPU op);
 * the accumulator layout of S is the operand layout of P, so O += P V needs no shared memory
 * round trip, and O lives in registers until the end. Q and P are rounded to bf16 (the KV
 * already is): used for bf16 KV caches only, the fast mode; the exact mode keeps the CUDA-core
 * kernel (attention.cu). */
#include <math.h>
#include <stdint.h>

#include "backend/cuda/mma.cuh"

enum { BQ = HR_CU_TILE, BK = 64, TC_WARPS = 4, STAGES = 2 };

typedef struct {
    const int32_t *pos, *row, *table, *tiles;
    int max_blocks;
} tc_args;

/* Shared memory rows are HD + 8 elements: 16-byte row chunks land on distinct bank groups for
 * ldmatrix's eight rows. */
template <int HD> struct tc_smem { __nv_bfloat16 k[STAGES][BK][HD + 8], v[STAGES][BK][HD + 8]; };

/* K and V rows j0 .. j0 + BK - 1 of kv head kvh into stage buffers; positions outside
 * [lo, last] (not written, or before the window and maybe released) are zeros. Each thread
 * copies one 16-byte column chunk of every ROWS-th row, walking the block table with a running
 * (block, slot) pair: one division per tile, not one per chunk. */
template <int HD>
static __device__ void load_kv(tc_smem<HD> &sm, int stage, const hr_cu_kv_layer &kv,
                               const int32_t *bt, int kvh, int j0, int lo, int last) {
    constexpr int CH = HD / 8,
                  ROWS = 32 * TC_WARPS / CH; /* 16-byte chunks per row; rows per pass */
    const __nv_bfloat16 *K = (const __nv_bfloat16 *)kv.k, *V = (const __nv_bfloat16 *)kv.v;
    int r0 = threadIdx.x / CH, d = (threadIdx.x % CH) * 8, bs = kv.block_size;
    long bstride = (long)kv.n_kv_heads * bs * HD, hoff = (long)kvh * bs * HD + d;
    int j = j0 + r0, b = j / bs, slot = j - b * bs;
#pragma unroll
    for (int jj = r0; jj < BK; jj += ROWS) {
        int ok = j >= lo && j <= last;
        long base = ok ? bt[b] * bstride + hoff + (long)slot * HD : 0;
        cp16(&sm.k[stage][jj][d], K + base, ok);
        cp16(&sm.v[stage][jj][d], V + base, ok);
        j += ROWS, slot += ROWS;
        while (slot >= bs)
            slot -= bs, b++;
    }
}

/* Warp w's 16 query rows of head h as A fragments (bf16), rows past nq zero. */
template <int HD>
static __device__ void load_q(uint32_t qa[HD / 16][4], const float *q, int t0, int nq, int h,
                              int n_heads, int w) {
    int lane = threadIdx.x & 31, g = lane >> 2, c = 2 * (lane & 3);
    int r0 = 16 * w + g, r1 = r0 + 8;
    const float *q0 = q + ((long)(t0 + r0) * n_heads + h) * HD;
    const float *q1 = q + ((long)(t0 + r1) * n_heads + h) * HD;
#pragma unroll
    for (int k = 0; k < HD / 16; k++) {
        float2 z = make_float2(0.0f, 0.0f);
        float2 a = r0 < nq ? *(const float2 *)(q0 + 16 * k + c) : z;
        float2 b = r1 < nq ? *(const float2 *)(q1 + 16 * k + c) : z;
        float2 e = r0 < nq ? *(const float2 *)(q0 + 16 * k + 8 + c) : z;
        float2 f = r1 < nq ? *(const float2 *)(q1 + 16 * k + 8 + c) : z;
        qa[k][0] = pack_bf16(a.x, a.y);
        qa[k][1] = pack_bf16(b.x, b.y);
        qa[k][2] = pack_bf16(e.x, e.y);
        qa[k][3] = pack_bf16(f.x, f.y);
    }
}

template <int HD>
static __device__ void store_out(float *out, float o[HD / 8][4], float l[2], int t0, int nq, int h,
                                 int n_heads, int w) {
    int lane = threadIdx.x & 31, g = lane >> 2, c = 2 * (lane & 3);
#pragma unroll
    for (int i = 0; i < 2; i++) {
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
        int r = 16 * w + g + 8 * i;
        if (r >= nq) continue;
        float inv = l[i] > 0 ? 1.0f / l[i] : 0.0f;
        float *dst = out + ((long)(t0 + r) * n_heads + h) * HD + c;
#pragma unroll
        for (int n = 0; n < HD / 8; n++)
            *(float2 *)(dst + 8 * n) = make_float2(o[n][2 * i] * inv, o[n][2 * i + 1] * inv);
    }
}

template <int HD>
static __global__ void __launch_bounds__(32 * TC_WARPS)
    attn_tc_k(tc_args a, hr_cu_kv_layer kv, hr_cu_attn p, float *out, const float *q) {
    HR_PDL_ENTRY();
    extern __shared__ __align__(128) unsigned char raw[];
    tc_smem<HD> &sm = *reinterpret_cast<tc_smem<HD> *>(raw);
    /* the longest tiles (last in each row) first: fewer idle multiprocessors at the end */
    int tile = gridDim.x - 1 - blockIdx.x;
    int t0 = a.tiles[2 * tile], nq = a.tiles[2 * tile + 1], h = blockIdx.y;
    int kvh = h / (p.n_heads / p.n_kv_heads), w = threadIdx.x >> 5, g = (threadIdx.x & 31) >> 2;
    int p0 = a.pos[t0], last = p0 + nq - 1;
    int lo = p.window > 0 && p0 - p.window + 1 > 0 ? p0 - p.window + 1 : 0;
    const int32_t *bt = a.table + (long)a.row[t0] * a.max_blocks;
    int pq[2], lo_i[2];
    for (int i = 0; i < 2; i++) {
        pq[i] = p0 + 16 * w + g + 8 * i;
        lo_i[i] = p.window > 0 && pq[i] - p.window + 1 > 0 ? pq[i] - p.window + 1 : 0;
    }
    /* the warp's visible keys: from its first row's window start to its last row */
    int warp_last = p0 + 16 * w + 15, warp_lo = p0 + 16 * w - p.window + 1;
    warp_lo = p.window > 0 && warp_lo > 0 ? warp_lo : 0;
    /* tiles every row of the warp sees whole: keys up to its first row, from its last row's
     * window start; those skip the masks (and need no soft-cap and a positive scale) */
    int warp_first = p0 + 16 * w, warp_lo_max = p.window > 0 ? warp_last - p.window + 1 : 0;
    int plain = p.softcap <= 0 && p.scale > 0;
    float scale_log2 = p.scale * 1.4426950408889634f;
    uint32_t qa[HD / 16][4];
    load_q<HD>(qa, q, t0, nq, h, p.n_heads, w);
    float o[HD / 8][4], s[BK / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < HD / 8; n++)
        o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    int first = lo / BK * BK, n_tiles = (last - first) / BK + 1;
    load_kv(sm, 0, kv, bt, kvh, first, lo, last);
    cp_commit();
    for (int it = 0; it < n_tiles; it++) {
        int j0 = first + it * BK, st = it % STAGES;
        if (it + 1 < n_tiles) load_kv(sm, (it + 1) % STAGES, kv, bt, kvh, j0 + BK, lo, last);
        cp_commit();
        cp_wait<1>();
        __syncthreads();
        if (j0 <= warp_last && j0 + BK - 1 >= warp_lo) { /* some key of the tile is visible */
            scores<HD, BK>(s, qa, sm.k[st]);
            if (plain && j0 + BK - 1 <= warp_first && j0 >= warp_lo_max)
                softmax_tile_full<HD, BK>(s, o, m, l, scale_log2);
            else
                softmax_tile<HD, BK>(s, o, m, l, p, pq, lo_i, j0);
            accumulate<HD, BK>(o, s, sm.v[st]);
        }
        __syncthreads(); /* stage st is refilled next iteration */
    }
    store_out<HD>(out, o, l, t0, nq, h, p.n_heads, w);
}

template <int HD>
static int launch(cudaStream_t s, const hr_cu_meta *m, const hr_cu_kv_layer *kv,
                  const hr_cu_attn *p, float *out, const float *q) {
    size_t shm = sizeof(tc_smem<HD>);
    static int ready; /* the dynamic shared memory limit, raised once per instantiation */
    if (!ready) {
        if (cudaFuncSetAttribute(attn_tc_k<HD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)shm) != cudaSuccess)
            return 0;
        ready = 1;
    }
    tc_args a = {m->pos, m->row, m->block_table, m->tiles, m->max_blocks};
    dim3 grid((unsigned)m->n_tiles, (unsigned)p->n_heads);
    hr_launch(attn_tc_k<HD>, grid, 32 * TC_WARPS, shm, s, a, *kv, *p, out, q);
    return 1;
}

extern "C" int hr_cu_attention_tc_fits(const hr_cu_kv_layer *kv, const hr_cu_attn *p) {
    int aligned = ((uintptr_t)kv->k | (uintptr_t)kv->v) % 16 == 0;
    return kv->dtype == HR_CU_BF16 && aligned &&
           (p->head_dim == 32 || p->head_dim == 64 || p->head_dim == 128);
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
