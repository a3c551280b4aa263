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

enum { WARPS = 4, MAX_SPLITS = 32, MIN_SPLIT_POSITIONS = 128, FILL_BLOCKS = 1024 };

/* Query heads per block for EPL dims per lane: registers hold GMAX x EPL outputs and queries. */
static __host__ __device__ constexpr int gmax_for(int epl) { return epl >= 16 ? 1 : epl >= 8 ? 2 : epl >= 4 ? 4 : 8; }

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

extern "C" long hr_cu_attention_scratch(const hr_cu_meta *m, const hr_cu_attn *p) {
    int s = splits_for(m, p);
    return s > 1 ? (long)m->n_tokens * p->n_heads * s * (p->head_dim + 2) : 0;
}

typedef struct {
    const int32_t *pos, *row, *table, *q_start;
    int max_blocks, splits;
    int skip_tiled; /* tokens of rows the tensor-core kernel takes are left to it */
} step_args;

template <int EPL, int KDT>
static __global__ void __launch_bounds__(32 * WARPS) attn_k(step_args st, hr_cu_kv_layer kv,
                                                            hr_cu_attn p, float *out,
                                                            const float *q, float *partial) {
    constexpr int GM = gmax_for(EPL);
    __shared__ float sm_m[WARPS][GM], sm_l[WARPS][GM];
    extern __shared__ float sm_o[]; /* [WARPS][GM][head_dim] */
    int G = p.n_heads / p.n_kv_heads, groups = (G + GM - 1) / GM;
    int t = blockIdx.x / (p.n_kv_heads * groups), rest = blockIdx.x % (p.n_kv_heads * groups);
    int kvh = rest / groups, h0 = kvh * G + (rest % groups) * GM;
    int nh = G - (rest % groups) * GM < GM ? G - (rest % groups) * GM : GM;
    int split = blockIdx.y, hd = p.head_dim;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (st.skip_tiled && st.q_start[st.row[t] + 1] - st.q_start[st.row[t]] >= HR_CU_TILE_MIN) return;
    int pos = st.pos[t];
    int lo = p.window > 0 && pos - p.window + 1 > 0 ? pos - p.window + 1 : 0;
    int len = pos + 1 - lo, chunk = (len + st.splits - 1) / st.splits;
    int j0 = lo + split * chunk, j1 = j0 + chunk < pos + 1 ? j0 + chunk : pos + 1;
    const int32_t *bt = st.table + (long)st.row[t] * st.max_blocks;
    float qr[GM][EPL], acc[GM][EPL], mx[GM], sum[GM];
#pragma unroll
    for (int g = 0; g < GM; g++) {
        const float *qt = q + ((long)t * p.n_heads + h0 + (g < nh ? g : 0)) * hd;
#pragma unroll
        for (int e = 0; e < EPL; e++) {
            int d = lane + 32 * e;
            qr[g][e] = d < hd && g < nh ? qt[d] : 0.0f;
            acc[g][e] = 0;
        }
        mx[g] = -INFINITY;
        sum[g] = 0;
    }
    for (int j = j0 + warp; j < j1; j += WARPS) {
        long base = (((long)bt[j / kv.block_size] * kv.n_kv_heads + kvh) * kv.block_size +
                     j % kv.block_size) * hd;
        float kr[EPL], vr[EPL];
#pragma unroll
        for (int e = 0; e < EPL; e++) {
            int d = lane + 32 * e;
            kr[e] = d < hd ? hr_ld(kv.k, KDT, base + d) : 0.0f;
            vr[e] = d < hd ? hr_ld(kv.v, KDT, base + d) : 0.0f;
        }
#pragma unroll
        for (int g = 0; g < GM; g++) {
            float sc = 0;
#pragma unroll
            for (int e = 0; e < EPL; e++) sc += qr[g][e] * kr[e];
            sc = hr_warp_sum(sc) * p.scale;
            if (p.softcap > 0) sc = p.softcap * tanhf(sc / p.softcap);
            float nm = fmaxf(mx[g], sc), corr = expf(mx[g] - nm), w = expf(sc - nm);
            sum[g] = sum[g] * corr + w;
#pragma unroll
            for (int e = 0; e < EPL; e++) acc[g][e] = acc[g][e] * corr + w * vr[e];
            mx[g] = nm;
        }
    }
#pragma unroll
    for (int g = 0; g < GM; g++) {
        if (lane == 0) sm_m[warp][g] = mx[g], sm_l[warp][g] = sum[g];
#pragma unroll
        for (int e = 0; e < EPL; e++) {
            int d = lane + 32 * e;
            if (d < hd) sm_o[(warp * GM + g) * hd + d] = acc[g][e];
        }
    }
    __syncthreads();
    for (int g = 0; g < nh; g++) {
        float M = -INFINITY;
        for (int w = 0; w < WARPS; w++) M = fmaxf(M, sm_m[w][g]);
        float L = 0, f[WARPS];
        for (int w = 0; w < WARPS; w++) {
            f[w] = M == -INFINITY ? 0.0f : expf(sm_m[w][g] - M);
            L += sm_l[w][g] * f[w];
        }
        long th = (long)t * p.n_heads + h0 + g;
        for (int d = threadIdx.x; d < hd; d += blockDim.x) {
            float o = 0;
            for (int w = 0; w < WARPS; w++) o += sm_o[(w * GM + g) * hd + d] * f[w];
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

static __global__ void merge_k(float *out, const float *partial, int splits, int hd) {
    int th = blockIdx.x;
    const float *pp = partial + (long)th * splits * (hd + 2);
    float M = -INFINITY;
    for (int s = 0; s < splits; s++) M = fmaxf(M, pp[s * (hd + 2)]);
    float L = 0;
    for (int s = 0; s < splits; s++) {
        float m = pp[s * (hd + 2)];
        L += m == -INFINITY ? 0.0f : pp[s * (hd + 2) + 1] * expf(m - M);
    }
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float o = 0;
        for (int s = 0; s < splits; s++) {
            float m = pp[s * (hd + 2)];
            if (m != -INFINITY) o += pp[s * (hd + 2) + 2 + d] * expf(m - M);
        }
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
    if (kv->dtype == HR_CU_BF16)
        attn_k<EPL, HR_CU_BF16><<<grid, 32 * WARPS, shm, s>>>(st, *kv, *p, out, q, partial);
    else
        attn_k<EPL, HR_CU_F32><<<grid, 32 * WARPS, shm, s>>>(st, *kv, *p, out, q, partial);
}

extern "C" void hr_cu_attention(cudaStream_t s, const hr_cu_meta *m, const hr_cu_kv_layer *kv,
                                const hr_cu_attn *p, float *out, const float *q, float *partial) {
    if (m->n_tokens <= 0) return;
    /* prefill rows on the tensor cores when the layer fits; the rest here */
    int tiled = m->n_tiles > 0 && hr_cu_attention_tc_fits(kv, p) && hr_cu_attention_tc(s, m, kv, p, out, q);
    int splits = tiled ? 1 : splits_for(m, p); /* a split merge would overwrite tiled rows */
    step_args st = {m->pos, m->row, m->block_table, m->q_start, m->max_blocks, splits, tiled};
    switch (epl_of(p)) {
    case 1: launch<1>(s, m, splits, st, kv, p, out, q, partial); break;
    case 2: launch<2>(s, m, splits, st, kv, p, out, q, partial); break;
    case 4: launch<4>(s, m, splits, st, kv, p, out, q, partial); break;
    case 8: launch<8>(s, m, splits, st, kv, p, out, q, partial); break;
    default: launch<16>(s, m, splits, st, kv, p, out, q, partial); break;
    }
    if (splits > 1) {
        int threads = p->head_dim < 256 ? (p->head_dim + 31) / 32 * 32 : 256;
        merge_k<<<m->n_tokens * p->n_heads, threads, 0, s>>>(out, partial, splits, p->head_dim);
    }
}
