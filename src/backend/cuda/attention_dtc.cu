/* Decode attention on the tensor cores, flash-decoding style: one warp per (token, kv head,
 * split). The G query heads of the kv head's group are the rows of one 16-row tile (G <= 16;
 * rows past G are zeros), so each K and V row is read once for the whole group and the
 * products Q K^T and P V run as mma.sync instead of per-position warp reductions. The split's
 * positions are walked in tiles of DK keys copied into shared memory asynchronously, the next
 * tile while the current one is multiplied; the online softmax stays in registers
 * (mma.cuh). With one split the warp writes the output; with several it writes a partial
 * (max, sum, unnormalized output) that attention.cu's merge kernel combines. Sliding windows
 * and soft-capping as the CPU op. bf16 KV caches only (the fast mode). */
#include <math.h>

#include "backend/cuda/mma.cuh"

enum { DK = 32, DTC_FILL = 1536, DTC_MAX_SPLITS = 32 }; /* DK: the split rule's tile */
enum { DTC_WIDE = 512 }; /* items (tokens x kv heads) from which 16-key tiles run */

typedef struct {
    const int32_t *pos, *row, *table, *q_start;
    int max_blocks, splits;
    int skip_tiled; /* tokens of rows the prefill kernel takes are left to it */
} dtc_args;

/* The 16 rows' A fragments: row r is query head h0 + r of token t (zeros for r >= G). */
template <int HD>
static __device__ void load_q_heads(uint32_t qa[HD / 16][4], const float *q, long t, int h0, int G,
                                    int n_heads) {
    int lane = threadIdx.x & 31, g = lane >> 2, c = 2 * (lane & 3);
    const float *q0 = q + (t * n_heads + h0 + (g < G ? g : 0)) * HD;
    const float *q1 = q + (t * n_heads + h0 + (g + 8 < G ? g + 8 : 0)) * HD;
    float2 z = make_float2(0.0f, 0.0f);
#pragma unroll
    for (int k = 0; k < HD / 16; k++) {
        float2 a = g < G ? *(const float2 *)(q0 + 16 * k + c) : z;
        float2 b = g + 8 < G ? *(const float2 *)(q1 + 16 * k + c) : z;
        float2 e = g < G ? *(const float2 *)(q0 + 16 * k + 8 + c) : z;
        float2 f = g + 8 < G ? *(const float2 *)(q1 + 16 * k + 8 + c) : z;
        qa[k][0] = pack_bf16(a.x, a.y);
        qa[k][1] = pack_bf16(b.x, b.y);
        qa[k][2] = pack_bf16(e.x, e.y);
        qa[k][3] = pack_bf16(f.x, f.y);
    }
}

/* K and V rows j0 .. j0 + NK - 1 of kv head kvh; positions at or past j1 are zeros. */
template <int HD, int NK>
static __device__ void load_tile(__nv_bfloat16 (*ks)[HD + 8], __nv_bfloat16 (*vs)[HD + 8],
                                 const hr_cu_kv_layer &kv, const int32_t *bt, int kvh, int j0,
                                 int j1) {
    constexpr int CH = HD / 8;
    const __nv_bfloat16 *K = (const __nv_bfloat16 *)kv.k, *V = (const __nv_bfloat16 *)kv.v;
    for (int c = threadIdx.x; c < NK * CH; c += 32) {
        int jj = c / CH, d = (c % CH) * 8, j = j0 + jj, ok = j < j1;
        long base = ok ? (((long)bt[j / kv.block_size] * kv.n_kv_heads + kvh) * kv.block_size +
                          j % kv.block_size) *
                                 HD +
                             d
                       : 0;
        cp16(&ks[jj][d], K + base, ok);
        cp16(&vs[jj][d], V + base, ok);
    }
}

/* Rows r < G: the output (one split) or the split's partial (natural-log max, sum, output). */
template <int HD>
static __device__ void store_rows(float *out, float *partial, float o[HD / 8][4], float m[2],
                                  float l[2], long t, int h0, int G, int n_heads, int splits,
                                  int split) {
    const float LN2 = 0.6931471805599453f;
    int lane = threadIdx.x & 31, g = lane >> 2, c = 2 * (lane & 3);
#pragma unroll
    for (int i = 0; i < 2; i++) {
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
        int r = g + 8 * i;
        if (r >= G) continue;
        long th = t * n_heads + h0 + r;
        float scale = splits == 1 ? (l[i] > 0 ? 1.0f / l[i] : 0.0f) : 1.0f;
        float *dst = splits == 1 ? out + th * HD : partial + (th * splits + split) * (HD + 2) + 2;
#pragma unroll
        for (int n = 0; n < HD / 8; n++)
            *(float2 *)(dst + 8 * n + c) =
                make_float2(o[n][2 * i] * scale, o[n][2 * i + 1] * scale);
        if (splits > 1 && c == 0) dst[-2] = m[i] * LN2, dst[-1] = l[i];
    }
}

/* NK keys a tile, NS tiles in flight or in use (HEARTH_CUDA_DTC=NKxNS; default 32x2). */
template <int HD, int NK, int NS>
static __global__ void __launch_bounds__(32)
    attn_dtc_k(dtc_args a, hr_cu_kv_layer kv, hr_cu_attn p, float *out, const float *q,
               float *partial) {
    HR_PDL_ENTRY();
    __shared__ __align__(128) __nv_bfloat16 ks[NS][NK][HD + 8], vs[NS][NK][HD + 8];
    long t = blockIdx.x / p.n_kv_heads;
    int kvh = blockIdx.x % p.n_kv_heads, split = blockIdx.y, G = p.n_heads / p.n_kv_heads;
    if (a.skip_tiled && a.q_start[a.row[t] + 1] - a.q_start[a.row[t]] >= HR_CU_TILE_MIN) return;
    int j0, j1;
    hr_attn_split(a.pos[t], p.window, a.splits, split, &j0, &j1);
    const int32_t *bt = a.table + (long)a.row[t] * a.max_blocks;
    uint32_t qa[HD / 16][4];
    load_q_heads<HD>(qa, q, t, kvh * G, G, p.n_heads);
    float o[HD / 8][4], s[NK / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < HD / 8; n++)
        o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    int last[2] = {j1 - 1, j1 - 1}, first[2] = {j0, j0}; /* both rows see the split's keys */
    int n_tiles = j1 > j0 ? (j1 - j0 + NK - 1) / NK : 0;
#pragma unroll
    for (int i = 0; i < NS - 1; i++) {
        if (i < n_tiles) load_tile<HD, NK>(ks[i], vs[i], kv, bt, kvh, j0 + i * NK, j1);
        cp_commit();
    }
    for (int it = 0; it < n_tiles; it++) {
        int jt = j0 + it * NK, st = it % NS, nx = it + NS - 1;
        if (nx < n_tiles)
            load_tile<HD, NK>(ks[nx % NS], vs[nx % NS], kv, bt, kvh, j0 + nx * NK, j1);
        cp_commit();
        cp_wait<NS - 1>();
        __syncwarp();
        scores<HD, NK>(s, qa, ks[st]);
        softmax_tile<HD, NK>(s, o, m, l, p, last, first, jt);
        accumulate<HD, NK>(o, s, vs[st]);
        __syncwarp(); /* stage st is refilled NS - 1 iterations on */
    }
    store_rows<HD>(out, partial, o, m, l, t, kvh * G, G, p.n_heads, a.splits, split);
}

extern "C" int hr_cu_attention_dtc_fits(const hr_cu_kv_layer *kv, const hr_cu_attn *p) {
    int aligned = ((uintptr_t)kv->k | (uintptr_t)kv->v) % 16 == 0;
    int G = p->n_kv_heads > 0 ? p->n_heads / p->n_kv_heads : 0;
    return kv->dtype == HR_CU_BF16 && aligned && G >= 1 && G <= 16 &&
           (p->head_dim == 64 || p->head_dim == 128);
}

extern "C" int hr_cu_attention_dtc_splits(const hr_cu_meta *m, const hr_cu_attn *p) {
    long items = (long)m->n_tokens * p->n_kv_heads;
    if (items >= DTC_FILL) return 1;
    int by_len = (m->max_len + DK - 1) / DK;
    int by_fill = (int)((DTC_FILL + items - 1) / items);
    int s = by_len < by_fill ? by_len : by_fill;
    return s < 1 ? 1 : s > DTC_MAX_SPLITS ? DTC_MAX_SPLITS : s;
}

/* How many one-warp blocks of 16-key tiles two deep the device holds at once (0: unknown). */
static long dtc_16x2_resident(void) {
    int dev = 0, sms = 0, per_sm = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, attn_dtc_k<128, 16, 2>, 32, 0) !=
            cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return (long)sms * per_sm;
}

/* The variant for a step (HEARTH_CUDA_DTC=auto, the default): 32-key tiles two deep below
 * DTC_WIDE items (64 streams of 8 kv heads, the narrowest step the variants were measured at),
 * else 16-key tiles, two deep while the warps fit on the device at once, three deep past that.
 * A warp of 32-key tiles holds 35 KB of shared memory, so 6 fit an SM: 1.4 active warps a
 * scheduler, each stalled on its own dependencies (ncu at 64 streams: 0.35 issued a cycle, DRAM
 * 54%); 16-key tiles two deep hold 17 KB (about 12 an SM, by registers), three deep 26 KB (8).
 * On the H200, llama3-8b: 64 streams 8,248-8,320 -> 8,646-8,724 tok/s (16x2), 128 streams
 * 12,464-12,510 -> 13,168-13,224 (16x3). */
static int dtc_auto(const hr_cu_meta *m, const hr_cu_attn *p, int splits) {
    long items = (long)m->n_tokens * p->n_kv_heads;
    if (items < DTC_WIDE) return HR_CU_DTC_32X2;
    static const long resident = dtc_16x2_resident();
    return items * splits <= resident ? HR_CU_DTC_16X2 : HR_CU_DTC_16X3;
}

extern "C" void hr_cu_attention_dtc(cudaStream_t s, const hr_cu_meta *m, const hr_cu_kv_layer *kv,
                                    const hr_cu_attn *p, int splits, int skip_tiled, float *out,
                                    const float *q, float *partial) {
    dtc_args a = {m->pos, m->row, m->block_table, m->q_start, m->max_blocks, splits, skip_tiled};
    dim3 grid((unsigned)(m->n_tokens * p->n_kv_heads), (unsigned)splits);
    int v = hr_cu_dtc_tile == HR_CU_DTC_AUTO ? dtc_auto(m, p, splits) : hr_cu_dtc_tile;
#define DTC_LAUNCH(NK, NS)                                                                         \
    do {                                                                                           \
        if (p->head_dim == 64)                                                                     \
            hr_launch(attn_dtc_k<64, NK, NS>, grid, 32, 0, s, a, *kv, *p, out, q, partial);        \
        else                                                                                       \
            hr_launch(attn_dtc_k<128, NK, NS>, grid, 32, 0, s, a, *kv, *p, out, q, partial);       \
    } while (0)
    if (v == HR_CU_DTC_16X2)
        DTC_LAUNCH(16, 2);
    else if (v == HR_CU_DTC_16X3)
        DTC_LAUNCH(16, 3);
    else if (v == HR_CU_DTC_16X4)
        DTC_LAUNCH(16, 4);
    else
        DTC_LAUNCH(32, 2);
#undef DTC_LAUNCH
}

int hr_cu_dtc_tile = HR_CU_DTC_AUTO;
