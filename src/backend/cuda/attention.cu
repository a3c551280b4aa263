/* Paged causal attention on the GPU, flash-decoding style. One block of 4 warps per (token,
 * kv head, group of up to GMAX query heads sharing it, split): each K and V row is read once
 * for the query heads of its GQA group. The token's visible positions [lo, pos] are cut into
 * `splits` equal ranges; each warp walks every 4th position of its range with an online
 * softmax per head (scores are warp-wide dot products; lane l holds dims l, l + 32, ...), the
 * warps merge in shared memory, and with more than one split a second kernel merges the
 * splits' (max, sum, output) partials. Splits give decode (one token, many positions) enough
 * blocks to fill the GPU; prefill steps have blocks enough from their tokens and use one
 * split. Sliding windows and tanh soft-capping as the CPU op (src/backend/cpu/attention.c).
 * Rows of HR_CU_TILE_MIN+ tokens with a bf16 KV go to the tensor-core kernel (attention_tc.cu)
 * when the layer fits it; their tokens are skipped here. */
#include <math.h>

#include "backend/cuda/common.cuh"

enum { WARPS = 4, U = 4, MAX_SPLITS = 32, MIN_SPLIT_POSITIONS = 32, FILL_BLOCKS = 1024 };

/* Query heads per block for EPL dims per lane: registers hold GMAX x EPL outputs and queries. */
static __host__ __device__ constexpr int gmax_for(int epl) {
    return epl >= 16 ? 1 : epl >= 8 ? 2 : epl >= 4 ? 4 : 8;
}

static int head_groups(const hr_cu_attn *p, int gmax) {
    int G = p->n_heads / p->n_kv_heads;
    return (G + gmax - 1) / gmax;
}

static int epl_of(const hr_cu_attn *p) {
    int e = (p->head_dim + 31) / 32;
    return e <= 1 ? 1 : e <= 2 ? 2 : e <= 4 ? 4 : e <= 8 ? 8 : 16;
}

/* Splits per token for a step: enough blocks to fill the GPU, each split at least
 * MIN_SPLIT_POSITIONS positions of the longest row. */
static int splits_for(const hr_cu_meta *m, const hr_cu_attn *p) {
    long items = (long)m->n_tokens * p->n_kv_heads * head_groups(p, gmax_for(epl_of(p)));
    if (items >= FILL_BLOCKS) return 1;
    int by_len = (m->max_len + MIN_SPLIT_POSITIONS - 1) / MIN_SPLIT_POSITIONS;
    int by_fill = (int)((FILL_BLOCKS + items - 1) / items);
    int s = by_len < by_fill ? by_len : by_fill;
    return s < 1 ? 1 : s > MAX_SPLITS ? MAX_SPLITS : s;
}

/* Splits of the kernel that takes the layer: the tensor-core decode kernel when it fits. */
static int layer_splits(const hr_cu_meta *m, const hr_cu_kv_layer *kv, const hr_cu_attn *p) {
    return hr_cu_attention_dtc_fits(kv, p) ? hr_cu_attention_dtc_splits(m, p) : splits_for(m, p);
}

extern "C" long hr_cu_attention_scratch(const hr_cu_meta *m, const hr_cu_kv_layer *kv,
                                        const hr_cu_attn *p) {
    int s = layer_splits(m, kv, p);
    return s > 1 ? (long)m->n_tokens * p->n_heads * s * (p->head_dim + 2) : 0;
}

/* Elements EPL lane .. EPL lane + EPL - 1 of the head vector at element base (zeros past hd):
 * one load of EPL elements when the row is whole (VEC: hd % EPL == 0 and aligned rows). */
template <int EPL, int KDT, int VEC>
static __device__ __forceinline__ void ld_row(float *r, const void *p, long base, int lane,
                                              int hd) {
    int d0 = EPL * lane;
    if (VEC && d0 + EPL <= hd) {
        if (KDT == HR_CU_BF16) {
            const __nv_bfloat16 *b = (const __nv_bfloat16 *)p + base + d0;
            if (EPL == 8) {
                uint4 u = *(const uint4 *)b;
                const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
                for (int j = 0; j < 4 && 2 * j < EPL; j++)
                    r[2 * j] = __uint_as_float(w[j] << 16),
                          r[2 * j + 1] = __uint_as_float(w[j] & 0xffff0000u);
            } else if (EPL == 4) {
                uint2 u = *(const uint2 *)b;
                r[0] = __uint_as_float(u.x << 16), r[1] = __uint_as_float(u.x & 0xffff0000u);
                r[2] = __uint_as_float(u.y << 16), r[3] = __uint_as_float(u.y & 0xffff0000u);
            } else if (EPL == 2) {
                uint32_t u = *(const uint32_t *)b;
                r[0] = __uint_as_float(u << 16), r[1] = __uint_as_float(u & 0xffff0000u);
            } else {
#pragma unroll
                for (int e = 0; e < EPL; e++)
                    r[e] = __bfloat162float(b[e]);
            }
            return;
        }
        const float *f = (const float *)p + base + d0;
        if (EPL % 4 == 0) {
#pragma unroll
            for (int e = 0; e < EPL; e += 4) {
                float4 v = *(const float4 *)(f + e);
                r[e] = v.x, r[e + 1] = v.y, r[e + 2] = v.z, r[e + 3] = v.w;
            }
            return;
        }
    }
#pragma unroll
    for (int e = 0; e < EPL; e++)
        r[e] = d0 + e < hd ? hr_ld(p, KDT, base + d0 + e) : 0.0f;
}

typedef struct {
    const int32_t *pos, *row, *table, *q_start;
    int max_blocks, splits;
    int skip_tiled; /* tokens of rows the tensor-core kernel takes are left to it */
} step_args;

template <int EPL, int KDT, int VEC>
static __global__ void __launch_bounds__(32 * WARPS)
    attn_k(step_args st, hr_cu_kv_layer kv, hr_cu_attn p, float *out, const float *q,
           float *partial) {
    HR_PDL_ENTRY();
    constexpr int GM = gmax_for(EPL);
    __shared__ float sm_m[WARPS][GM], sm_l[WARPS][GM];
    extern __shared__ float sm_o[]; /* [WARPS][GM][head_dim] */
    int G = p.n_heads / p.n_kv_heads, groups = (G + GM - 1) / GM;
    int t = blockIdx.x / (p.n_kv_heads * groups), rest = blockIdx.x % (p.n_kv_heads * groups);
    int kvh = rest / groups, h0 = kvh * G + (rest % groups) * GM;
    int nh = G - (rest % groups) * GM < GM ? G - (rest % groups) * GM : GM;
    int split = blockIdx.y, hd = p.head_dim;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (st.skip_tiled && st.q_start[st.row[t] + 1] - st.q_start[st.row[t]] >= HR_CU_TILE_MIN)
        return;
    int j0, j1;
    hr_attn_split(st.pos[t], p.window, st.splits, split, &j0, &j1);
    const int32_t *bt = st.table + (long)st.row[t] * st.max_blocks;
    float qr[GM][EPL], acc[GM][EPL], mx[GM], sum[GM];
#pragma unroll
    for (int g = 0; g < GM; g++) {
        const float *qt = q + ((long)t * p.n_heads + h0 + (g < nh ? g : 0)) * hd;
#pragma unroll
        for (int e = 0; e < EPL; e++) {
            int d = EPL * lane + e;
            qr[g][e] = d < hd && g < nh ? qt[d] : 0.0f;
            acc[g][e] = 0;
        }
        mx[g] = -INFINITY;
        sum[g] = 0;
    }
    for (int jb = j0 + U * warp; jb < j1; jb += U * WARPS) {
        float kr[U][EPL], vr[U][EPL];
#pragma unroll
        for (int u = 0; u < U; u++) {
            int j = jb + u < j1 ? jb + u : jb; /* past the range: a row already loaded, unused */
            long base = (((long)bt[j / kv.block_size] * kv.n_kv_heads + kvh) * kv.block_size +
                         j % kv.block_size) *
                        hd;
            ld_row<EPL, KDT, VEC>(kr[u], kv.k, base, lane, hd);
            ld_row<EPL, KDT, VEC>(vr[u], kv.v, base, lane, hd);
        }
#pragma unroll
        for (int g = 0; g < GM; g++) {
            float sc[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                sc[u] = 0;
#pragma unroll
                for (int e = 0; e < EPL; e++)
                    sc[u] += qr[g][e] * kr[u][e];
            }
#pragma unroll
            for (int u = 0; u < U; u++)
                sc[u] = hr_warp_sum(sc[u]) * p.scale;
#pragma unroll
            for (int u = 0; u < U; u++) {
                if (jb + u >= j1) break;
                float v = p.softcap > 0 ? p.softcap * tanhf(sc[u] / p.softcap) : sc[u];
                float nm = fmaxf(mx[g], v), corr = expf(mx[g] - nm), w = expf(v - nm);
                sum[g] = sum[g] * corr + w;
#pragma unroll
                for (int e = 0; e < EPL; e++)
                    acc[g][e] = acc[g][e] * corr + w * vr[u][e];
                mx[g] = nm;
            }
        }
    }
#pragma unroll
    for (int g = 0; g < GM; g++) {
        if (lane == 0) sm_m[warp][g] = mx[g], sm_l[warp][g] = sum[g];
#pragma unroll
        for (int e = 0; e < EPL; e++) {
            int d = EPL * lane + e;
            if (d < hd) sm_o[(warp * GM + g) * hd + d] = acc[g][e];
        }
    }
    __syncthreads();
    for (int g = 0; g < nh; g++) {
        float M = -INFINITY;
        for (int w = 0; w < WARPS; w++)
            M = fmaxf(M, sm_m[w][g]);
        float L = 0, f[WARPS];
        for (int w = 0; w < WARPS; w++) {
            f[w] = M == -INFINITY ? 0.0f : expf(sm_m[w][g] - M);
            L += sm_l[w][g] * f[w];
        }
        long th = (long)t * p.n_heads + h0 + g;
        for (int d = threadIdx.x; d < hd; d += blockDim.x) {
            float o = 0;
            for (int w = 0; w < WARPS; w++)
                o += sm_o[(w * GM + g) * hd + d] * f[w];
            if (st.splits == 1) {
                out[th * hd + d] = L > 0 ? o / L : 0.0f;
            } else {
                float *pp = partial + (th * st.splits + split) * (hd + 2);
                pp[2 + d] = o;
                if (d == 0) pp[0] = M, pp[1] = L;
            }
        }
    }
}

/* Block th merges row-head th's splits: warp 0 takes the splits' maxima and sums into one
 * weight per split (shared memory: splits floats), then every thread sums its dims' partial
 * outputs with those weights, the splits' loads of a dim coalesced across the block. */
static __global__ void merge_k(float *out, const float *partial, int splits, int hd) {
    HR_PDL_ENTRY();
    extern __shared__ float merge_w[]; /* [splits] weights, then the sum L */
    int th = blockIdx.x, lane = threadIdx.x;
    const float *pp = partial + (long)th * splits * (hd + 2);
    if (threadIdx.x < 32) {
        float M = -INFINITY, L = 0;
        for (int s = lane; s < splits; s += 32)
            M = fmaxf(M, pp[s * (hd + 2)]);
        M = hr_warp_max(M);
        for (int s = lane; s < splits; s += 32) {
            float m = pp[s * (hd + 2)], e = m == -INFINITY ? 0.0f : expf(m - M);
            merge_w[s] = e;
            L += pp[s * (hd + 2) + 1] * e;
        }
        L = hr_warp_sum(L);
        if (lane == 0) merge_w[splits] = L;
    }
    __syncthreads();
    float L = merge_w[splits];
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float o = 0;
        for (int s = 0; s < splits; s++)
            if (merge_w[s] != 0.0f) o += pp[s * (hd + 2) + 2 + d] * merge_w[s]; /* -inf: none */
        out[(long)th * hd + d] = L > 0 ? o / L : 0.0f;
    }
}

template <int EPL>
static void launch(cudaStream_t s, const hr_cu_meta *m, int splits, step_args st,
                   const hr_cu_kv_layer *kv, const hr_cu_attn *p, float *out, const float *q,
                   float *partial) {
    constexpr int GM = gmax_for(EPL);
    dim3 grid((unsigned)(m->n_tokens * p->n_kv_heads * head_groups(p, GM)), (unsigned)splits);
    size_t shm = sizeof(float) * WARPS * GM * (size_t)p->head_dim;
    int esize = kv->dtype == HR_CU_BF16 ? 2 : 4;
    int vec = p->head_dim % EPL == 0 && ((uintptr_t)kv->k | (uintptr_t)kv->v) % (EPL * esize) == 0;
    if (kv->dtype == HR_CU_BF16 && vec)
        hr_launch(attn_k<EPL, HR_CU_BF16, 1>, grid, 32 * WARPS, shm, s, st, *kv, *p, out, q,
                  partial);
    else if (kv->dtype == HR_CU_BF16)
        hr_launch(attn_k<EPL, HR_CU_BF16, 0>, grid, 32 * WARPS, shm, s, st, *kv, *p, out, q,
                  partial);
    else if (vec)
        hr_launch(attn_k<EPL, HR_CU_F32, 1>, grid, 32 * WARPS, shm, s, st, *kv, *p, out, q,
                  partial);
    else
        hr_launch(attn_k<EPL, HR_CU_F32, 0>, grid, 32 * WARPS, shm, s, st, *kv, *p, out, q,
                  partial);
}

/* The CUDA-core kernel for the tokens the tensor-core kernels leave. */
static void cuda_core(cudaStream_t s, const hr_cu_meta *m, int splits, int tiled,
                      const hr_cu_kv_layer *kv, const hr_cu_attn *p, float *out, const float *q,
                      float *partial) {
    step_args st = {m->pos, m->row, m->block_table, m->q_start, m->max_blocks, splits, tiled};
    switch (epl_of(p)) {
    case 1: launch<1>(s, m, splits, st, kv, p, out, q, partial); break;
    case 2: launch<2>(s, m, splits, st, kv, p, out, q, partial); break;
    case 4: launch<4>(s, m, splits, st, kv, p, out, q, partial); break;
    case 8: launch<8>(s, m, splits, st, kv, p, out, q, partial); break;
    default: launch<16>(s, m, splits, st, kv, p, out, q, partial); break;
    }
}

extern "C" void hr_cu_attention(cudaStream_t s, const hr_cu_meta *m, const hr_cu_kv_layer *kv,
                                const hr_cu_attn *p, float *out, const float *q, float *partial) {
    if (m->n_tokens <= 0) return;
    /* prefill rows on the tensor cores when the layer fits; the rest here */
    int tiled =
        m->n_tiles > 0 && hr_cu_attention_tc_fits(kv, p) && hr_cu_attention_tc(s, m, kv, p, out, q);
    int splits = tiled ? 1 : layer_splits(m, kv, p); /* a split merge would overwrite tiled rows */
    if (hr_cu_attention_dtc_fits(kv, p))
        hr_cu_attention_dtc(s, m, kv, p, splits, tiled, out, q, partial);
    else
        cuda_core(s, m, splits, tiled, kv, p, out, q, partial);
    if (splits > 1) {
        int threads = p->head_dim < 256 ? (p->head_dim + 31) / 32 * 32 : 256;
        hr_launch(merge_k, m->n_tokens * p->n_heads, threads, sizeof(float) * (splits + 1), s, out,
                  partial, splits, p->head_dim);
    }
}
