/* The sample op on the GPU (reference: hr_sample_ref in backend/sample.c). One block of 1024
 * threads per logit row: the row's processor edits (distinct ids, applied in parallel), its
 * token mask (disallowed logits set to -inf in place), its max and argmax, the sum of
 * exp((l - max) / T), the candidate floor (min-p, the top-p prune), then either the walk in
 * index order (no cut needs a sort: a per-warp mass over contiguous segments, then one warp's
 * scan inside the segment where u falls) or the top M candidates (a radix select on the logit
 * bits, ties at the threshold taken in index order, a bitonic sort by logit descending, id
 * ascending, in shared memory), the top-p cut and the walk over them; and the logprobs. Every
 * sum is a fixed tree or scan, so a row's result depends on its logits and parameters only,
 * never on the batch. Candidates are ordered by logit, which is the host's probability order
 * except where expf rounds two logits to one probability. */
#include <stdint.h>

#include "backend/cuda/common.cuh"

enum { THREADS = 1024, WARPS = THREADS / 32, BINS = 256 };

/* A float's bits as an unsigned key in the float's order. */
static __device__ __forceinline__ uint32_t key_of(float f) {
    uint32_t b = __float_as_uint(f);
    return (b & 0x80000000u) ? ~b : b | 0x80000000u;
}

typedef struct {
    unsigned long long sorted[HR_SAMPLE_CAP]; /* (key << 32) | ~id, descending once sorted */
    int hist[BINS];
    double seg[WARPS];
    int seg_last[WARPS];
    float redf[WARPS];
    double redd[WARPS];
    int redi[WARPS];
    uint32_t redu[WARPS];
    int n, bin, rem, ties, pick, wsel;
    double base, uu;
} smem;

static __device__ __forceinline__ int lane_id() { return threadIdx.x & 31; }
static __device__ __forceinline__ int warp_id() { return threadIdx.x >> 5; }

static __device__ float bsum_f(float v, smem *s) {
    v = hr_warp_sum(v);
    __syncthreads();
    if (lane_id() == 0) s->redf[warp_id()] = v;
    __syncthreads();
    return hr_warp_sum(s->redf[lane_id()]);
}

static __device__ double warp_sum_d(double v) {
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static __device__ int bsum_i(int v, smem *s) {
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if (lane_id() == 0) s->redi[warp_id()] = v;
    __syncthreads();
    v = s->redi[lane_id()];
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static __device__ int bmin_i(int v, smem *s) {
    for (int o = 16; o > 0; o >>= 1)
        v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();
    if (lane_id() == 0) s->redi[warp_id()] = v;
    __syncthreads();
    v = s->redi[lane_id()];
    for (int o = 16; o > 0; o >>= 1)
        v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

static __device__ uint32_t bmin_u(uint32_t v, smem *s) {
    for (int o = 16; o > 0; o >>= 1)
        v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();
    if (lane_id() == 0) s->redu[warp_id()] = v;
    __syncthreads();
    v = s->redu[lane_id()];
    for (int o = 16; o > 0; o >>= 1)
        v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Keeps (v, i) when it beats (bv, bi): larger, or equal with the lower index. */
static __device__ __forceinline__ void better(float &bv, int &bi, float v, int i) {
    if (v > bv || (v == bv && i < bi)) bv = v, bi = i;
}

/* The row's largest logit and the first index holding it. */
static __device__ void block_argmax(const float *l, int V, smem *s, float *mx, int *amax) {
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int i = threadIdx.x; i < V; i += THREADS)
        better(bv, bi, l[i], i);
    for (int o = 16; o > 0; o >>= 1)
        better(bv, bi, __shfl_xor_sync(0xffffffffu, bv, o), __shfl_xor_sync(0xffffffffu, bi, o));
    __syncthreads();
    if (lane_id() == 0) s->redf[warp_id()] = bv, s->redi[warp_id()] = bi;
    __syncthreads();
    bv = s->redf[lane_id()];
    bi = s->redi[lane_id()];
    for (int o = 16; o > 0; o >>= 1)
        better(bv, bi, __shfl_xor_sync(0xffffffffu, bv, o), __shfl_xor_sync(0xffffffffu, bi, o));
    *mx = bv;
    *amax = bi < V ? bi : 0;
}

/* Inclusive scan over the block, one value per thread. */
template <typename T> static __device__ T block_scan(T v, T *warp_tot) {
    for (int o = 1; o < 32; o <<= 1) {
        T t = __shfl_up_sync(0xffffffffu, v, o);
        if (lane_id() >= o) v += t;
    }
    __syncthreads();
    if (lane_id() == 31) warp_tot[warp_id()] = v;
    __syncthreads();
    if (warp_id() == 0) {
        T w = warp_tot[lane_id()];
        for (int o = 1; o < 32; o <<= 1) {
            T t = __shfl_up_sync(0xffffffffu, w, o);
            if (lane_id() >= o) w += t;
        }
        warp_tot[lane_id()] = w;
    }
    __syncthreads();
    return warp_id() > 0 ? v + warp_tot[warp_id() - 1] : v;
}

/* The tempered distribution of one row: p(i) = exp((l[i] - mx) / T) / sum, as the host's
 * softmax computes it; candidates are p >= floor and p > 0. */
typedef struct {
    const float *l;
    int V;
    float mx, inv_t, sum, floor;
} dist;

static __device__ __forceinline__ float prob(const dist &d, int i) {
    return expf((d.l[i] - d.mx) * d.inv_t) / d.sum;
}

static __device__ __forceinline__ int is_cand(const dist &d, float p) {
    return p >= d.floor && p > 0;
}

/* The host's walk in index order over every candidate: each warp's mass over a contiguous
 * segment, the segment where u * total falls, then that warp's running scan to the token. */
static __device__ int walk_index(const dist &d, double u, smem *s) {
    int seg_len = ((d.V + WARPS - 1) / WARPS + 31) / 32 * 32, w = warp_id(), lane = lane_id();
    int s0 = w * seg_len, s1 = min(d.V, s0 + seg_len), last = -1;
    double part = 0;
    for (int i = s0 + lane; i < s1; i += 32) {
        float p = prob(d, i);
        if (is_cand(d, p)) part += p, last = i;
    }
    part = warp_sum_d(part);
    for (int o = 16; o > 0; o >>= 1)
        last = max(last, __shfl_xor_sync(0xffffffffu, last, o));
    if (lane == 0) s->seg[w] = part, s->seg_last[w] = last;
    __syncthreads();
    if (threadIdx.x == 0) {
        double total = 0, c = 0;
        for (int k = 0; k < WARPS; k++)
            total += s->seg[k];
        s->uu = u * total;
        s->wsel = -1;
        s->pick = -1;
        for (int k = 0; k < WARPS; k++)
            s->pick = max(s->pick, s->seg_last[k]);
        for (int k = 0; k < WARPS && s->wsel < 0; k++) {
            if (s->uu < c + s->seg[k]) s->wsel = k, s->base = c;
            c += s->seg[k];
        }
    }
    __syncthreads();
    if (w == s->wsel) {
        double base = s->base;
        for (int t0 = w * seg_len; t0 < d.V; t0 += 32) {
            int i = t0 + lane;
            float p = i < d.V ? prob(d, i) : 0.0f;
            double v = i < d.V && is_cand(d, p) ? (double)p : 0.0;
            for (int o = 1; o < 32; o <<= 1) {
                double t = __shfl_up_sync(0xffffffffu, v, o);
                if (lane >= o) v += t;
            }
            unsigned hit = __ballot_sync(0xffffffffu, i < d.V && s->uu < base + v && is_cand(d, p));
            if (hit) {
                if (lane == 0) s->pick = t0 + __ffs(hit) - 1;
                break;
            }
            base += __shfl_sync(0xffffffffu, v, 31);
        }
    }
    __syncthreads();
    return s->pick;
}

/* The radix digit histogram of the keys >= kmin that match prefix under mask; leaves the
 * digit holding the rem-th largest in s->bin, the rank left inside it in s->rem and its count
 * in s->ties. */
static __device__ void radix_pass(const float *l, int V, uint32_t kmin, uint32_t prefix,
                                  uint32_t mask, int shift, int rem, smem *s) {
    for (int b = threadIdx.x; b < BINS; b += THREADS)
        s->hist[b] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < V; i += THREADS) {
        uint32_t k = key_of(l[i]);
        if (k >= kmin && (k & mask) == prefix) atomicAdd(&s->hist[(k >> shift) & 255], 1);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int acc = 0, b = BINS - 1;
        while (b > 0 && acc + s->hist[b] < rem)
            acc += s->hist[b--];
        s->bin = b;
        s->rem = rem - acc;
        s->ties = s->hist[b];
    }
    __syncthreads();
}

/* Takes the first `need` keys equal to kth in index order into sorted[at ..]. */
static __device__ void gather_ties(const float *l, int V, uint32_t kth, int need, int at, smem *s) {
    int taken = 0;
    for (int t0 = 0; t0 < V && taken < need; t0 += THREADS) {
        int i = t0 + threadIdx.x, f = i < V && key_of(l[i]) == kth;
        unsigned ball = __ballot_sync(0xffffffffu, f);
        __syncthreads();
        if (lane_id() == 0) s->redi[warp_id()] = __popc(ball);
        __syncthreads();
        int off = taken, total = 0;
        for (int k = 0; k < WARPS; k++) {
            off += k < warp_id() ? s->redi[k] : 0;
            total += s->redi[k];
        }
        int pos = off + __popc(ball & ((1u << lane_id()) - 1));
        if (f && pos < need) s->sorted[at + pos] = ((unsigned long long)kth << 32) | (uint32_t)~i;
        taken += total;
    }
}

/* Bitonic sort of sorted[0..n) descending (n <= HR_SAMPLE_CAP; padded with zeros). */
static __device__ void sort_desc(int n, smem *s) {
    int P = 1;
    while (P < n)
        P <<= 1;
    for (int i = n + threadIdx.x; i < P; i += THREADS)
        s->sorted[i] = 0;
    __syncthreads();
    for (int k = 2; k <= P; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int i = threadIdx.x; i < P; i += THREADS) {
                int x = i ^ j;
                if (x <= i) continue;
                unsigned long long a = s->sorted[i], b = s->sorted[x];
                int desc = (i & k) == 0;
                if (desc ? a < b : a > b) s->sorted[i] = b, s->sorted[x] = a;
            }
            __syncthreads();
        }
}

/* The M largest keys >= kmin (M at most their count and HR_SAMPLE_CAP) into sorted[0..M),
 * by key descending, ties by id ascending. */
static __device__ void select_top(const float *l, int V, uint32_t kmin, int M, smem *s) {
    uint32_t prefix = 0, mask = 0;
    int rem = M;
    for (int shift = 24; shift >= 0; shift -= 8) {
        radix_pass(l, V, kmin, prefix, mask, shift, rem, s);
        prefix |= (uint32_t)s->bin << shift;
        mask |= 0xffu << shift;
        rem = s->rem;
    }
    int ties = s->ties;
    if (threadIdx.x == 0) s->n = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < V; i += THREADS) {
        uint32_t k = key_of(l[i]);
        if (k >= kmin && (k > prefix || (k == prefix && ties == rem)))
            s->sorted[atomicAdd(&s->n, 1)] = ((unsigned long long)k << 32) | (uint32_t)~i;
    }
    __syncthreads();
    if (ties > rem) gather_ties(l, V, prefix, rem, M - rem, s);
    __syncthreads();
    sort_desc(M, s);
}

static __device__ __forceinline__ int sorted_id(const smem *s, int j) {
    return (int)~(uint32_t)(s->sorted[j] & 0xffffffffu);
}

/* The top-p cut over the M sorted candidates: the first j whose running mass reaches top_p,
 * plus one; -1 when none does. */
static __device__ int nucleus(const dist &d, int M, float top_p, smem *s) {
    int j = threadIdx.x;
    float c = block_scan(j < M ? prob(d, sorted_id(s, j)) : 0.0f, s->redf);
    int first = bmin_i(j < M && c >= top_p ? j + 1 : 0x7fffffff, s);
    return first == 0x7fffffff ? -1 : first;
}

/* The walk over the first n sorted candidates. */
static __device__ int walk_sorted(const dist &d, int n, double u, smem *s) {
    int j = threadIdx.x;
    double c = block_scan(j < n ? (double)prob(d, sorted_id(s, j)) : 0.0, s->redd);
    if (j == n - 1) s->uu = u * c;
    __syncthreads();
    int first = bmin_i(j < n && s->uu < c ? j : n - 1, s);
    return sorted_id(s, first);
}

/* A draw with u over the row's candidates (hr_sample_candidates + hr_sample_walk); -1 where
 * the host must decide (no candidate, or a sorted prefix over HR_SAMPLE_CAP). */
static __device__ int draw(const float *l, int V, float mx, const hr_sample_row &row, smem *s) {
    dist d = {l, V, mx, 1.0f / row.temperature, 1.0f, 0.0f};
    float part = 0;
    for (int i = threadIdx.x; i < V; i += THREADS)
        part += expf((l[i] - mx) * d.inv_t);
    d.sum = bsum_f(part, s);
    d.floor = row.min_p * (1.0f / d.sum);
    if (row.top_p < 1) d.floor = fmaxf(d.floor, (1.0f - row.top_p) / (2.0f * (float)V));
    int cnt = 0;
    uint32_t kmin = 0xffffffffu;
    for (int i = threadIdx.x; i < V; i += THREADS)
        if (is_cand(d, prob(d, i))) cnt++, kmin = min(kmin, key_of(l[i]));
    int n = bsum_i(cnt, s);
    kmin = bmin_u(kmin, s);
    if (n == 0) return -1;
    int cut_k = row.top_k > 0 && row.top_k < n;
    if (!cut_k && row.top_p >= 1) return walk_index(d, row.u, s);
    if (row.top_p >= 1 && row.top_k > HR_SAMPLE_CAP) return -1;
    int K = cut_k ? row.top_k : n, M = min(K, (int)HR_SAMPLE_CAP);
    select_top(l, V, kmin, M, s);
    int m = M;
    if (row.top_p < 1) {
        m = nucleus(d, M, row.top_p, s);
        if (m < 0 && M < K) return -1;
        if (m < 0) m = M;
    }
    return walk_sorted(d, m, row.u, s);
}

/* The chosen token's logprob and the n_top most likely, log-softmax of the processed row. */
static __device__ void logprobs(hr_sample_out *o, const float *l, int V, float mx, int id,
                                int n_top, smem *s) {
    float part = 0;
    for (int i = threadIdx.x; i < V; i += THREADS)
        part += expf(l[i] - mx);
    float lse = mx + logf(bsum_f(part, s));
    if (threadIdx.x == 0) o->logprob = l[id] - lse;
    if (n_top <= 0) return;
    select_top(l, V, 0, n_top, s);
    if (threadIdx.x < n_top) {
        int t = sorted_id(s, threadIdx.x);
        o->top_ids[threadIdx.x] = t;
        o->top_lp[threadIdx.x] = l[t] - lse;
    }
}

static __global__ void __launch_bounds__(THREADS)
    sample_k(hr_sample_out *out, float *logits, int V, const hr_sample_row *rows,
             const hr_logit_edit *edits) {
    __shared__ smem s;
    const hr_sample_row row = rows[blockIdx.x];
    hr_sample_out *o = out + blockIdx.x;
    float *l = logits + (size_t)blockIdx.x * V;
    if (row.mode == HR_SAMPLE_HOST) {
        if (threadIdx.x == 0) o->id = -1;
        return;
    }
    for (int j = threadIdx.x; j < row.n_edits; j += THREADS) {
        hr_logit_edit e = edits[row.edit_start + j];
        float x = l[e.id];
        if (e.add != 0) x += e.add;
        if (e.rep != 1) x = x > 0 ? x / e.rep : x * e.rep;
        if (e.sub != 0) x -= e.sub;
        l[e.id] = x;
    }
    __syncthreads();
    /* the token mask (hr_sample_ref's semantics): disallowed logits become -inf in place */
    const uint32_t *mask = row.mask > 0 ? (const uint32_t *)edits + (row.mask - 1) : NULL;
    if (mask) {
        for (int i = threadIdx.x; i < V; i += THREADS)
            if (!(mask[i >> 5] >> (i & 31) & 1u)) l[i] = -INFINITY;
        __syncthreads();
    }
    float mx;
    int id;
    block_argmax(l, V, &s, &mx, &id);
    if (mask && mx == -INFINITY) { /* nothing allowed is left: the host decides */
        if (threadIdx.x == 0) o->id = -1;
        return;
    }
    if (row.mode == HR_SAMPLE_DRAW) id = draw(l, V, mx, row, &s);
    if (id >= 0 && (row.logprob || row.n_top > 0)) logprobs(o, l, V, mx, id, min(row.n_top, V), &s);
    if (threadIdx.x == 0) o->id = id;
}

extern "C" void hr_cu_sample(cudaStream_t st, hr_sample_out *out, float *logits, int rows, int V,
                             const hr_sample_row *prm, const hr_logit_edit *edits) {
    if (rows > 0 && V > 0) sample_k<<<rows, THREADS, 0, st>>>(out, logits, V, prm, edits);
}
