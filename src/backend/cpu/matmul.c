/* CPU matmul op: y[T,N] = x[T,K] w[N,K]^T + bias. Output columns are claimed in chunks
 * from the pool (hr_pool_for: threads that finish early take more, a descheduled one holds
 * up at most its chunk), each chunk computed by the kernel of the weight's dtype. With --compute
 * bf16, bf16 weights multiply x rounded to bf16 (matmul_bf16.h): on AMX tiles when the shapes
 * allow, else on VDPBF16PS, else through the f32 kernels (always for a weight the backend tiled,
 * tensor/tile16.h, which only those read). Quantized weights go through
 * matmul_quant.c. One weight always takes the same path, whatever T is. */
#include <stdlib.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/matmul_bf16.h"
#include "backend/cpu/matmul_quant.h"
#include "base/log.h"

typedef struct {
    float *y;
    const float *x;
    const uint16_t *xp; /* x packed for AMX, or x in bf16 for bx */
    const hr_tensor *w, *bias;
    int T;
    hr_mm_fn fn;
    hr_mm_bx_fn
        bx; /* set: bx(xp) computes; else xp set: AMX; else q set: quantized w; else fn(x) */
    const hr_qmm *q;
    long chunk; /* columns per chunk, a multiple of 16 (of 64 for AMX) */
} mm_ctx;

static void add_bias(const mm_ctx *c, long b, long e) {
    long N = c->w->shape[0];
    float bias[16];
    for (long n = b; n < e; n += 16) {
        long len = e - n < 16 ? e - n : 16;
        hr_cpu_to_f32(bias, c->bias, n, len);
        for (int r = 0; r < c->T; r++)
            for (long i = 0; i < len; i++)
                c->y[r * N + n + i] += bias[i];
    }
}

static void mm_task(void *ctx, int t, long b, long e) {
    mm_ctx *c = ctx;
    long N = c->w->shape[0], K = c->w->shape[1];
    if (c->bx)
        c->bx(c->y, N, c->xp, K, c->w->data, (int)K, c->T, b, e);
    else if (c->xp)
        hr_amx_mm(c->y, N, c->xp, c->w->data, (int)K, c->T, b, e);
    else if (c->q)
        hr_qmm_cols(c->q, c->y, b, e, t);
    else
        c->fn(c->y, N, c->x, K, c->w->data, (int)K, c->T, b, e);
    if (c->bias) add_bias(c, b, e);
}

/* Rounds x to bf16 for the non-AMX paths, rows split over the threads: into bf16 (bx) or
 * back into f32 (the f32 kernels then multiply exactly what bf16 products would). */
typedef struct {
    const float *x;
    uint16_t *xb;
    float *xr;
    long K;
    int T;
    const hr_cpu_kernels *k;
} round_ctx;

static void round_task(void *ctx, int t, int nt) {
    round_ctx *c = ctx;
    long b = c->K * (c->T * t / nt), e = c->K * (c->T * (t + 1) / nt);
    if (c->xb && c->k->round_bf16) {
        c->k->round_bf16(c->xb + b, c->x + b, e - b);
        return;
    }
    for (long i = b; i < e; i++) {
        uint16_t b = hr_f32_to_bf16(c->x[i]);
        if (c->xb)
            c->xb[i] = b;
        else
            c->xr[i] = hr_bf16_to_f32(b);
    }
}

typedef struct {
    uint16_t *xp;
    const float *x;
    int K, T;
} pack_ctx;

static void pack_task(void *ctx, int t, int nt) {
    pack_ctx *c = ctx;
    int G = (c->T + 15) / 16;
    hr_amx_pack(c->xp, c->x, c->K, c->K, c->T, G * t / nt, G * (t + 1) / nt);
}

/* Chunks of a weight's columns: about CHUNKS_PER_THREAD per thread and at most CHUNK_BYTES of
 * weight each (the head's 151936 rows: ~300 chunks, not one per thread), a multiple of align. */
enum { CHUNKS_PER_THREAD = 8, CHUNK_BYTES = 256 << 10 };

static long chunk_cols(const hr_cpu_backend *cb, const hr_tensor *w, long align) {
    size_t row = hr_dtype_bytes(w->dtype, w->shape[1]);
    long most = row ? (long)(CHUNK_BYTES / row) : 0;
    return hr_pool_grain(cb->pool, w->shape[0], align, CHUNKS_PER_THREAD, most < 1 ? 1 : most);
}

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* Bytes of scratch a T-token matmul with rows of K needs on any path. */
static size_t scratch_need(const hr_cpu_backend *cb, long T, long K) {
    size_t packed = (size_t)hr_amx_pack_elems((int)T, (int)K) * 2, rounded = (size_t)T * K * 4;
    size_t quant = cb->has_quant ? hr_qmm_scratch_bytes((int)T, K, hr_pool_size(cb->pool)) : 0;
    return max_size(max_size(packed, rounded), quant);
}

static void *scratch(hr_cpu_backend *cb, size_t bytes) {
    if (bytes <= cb->scratch_bytes) return cb->scratch;
    free(cb->scratch);
    cb->scratch = aligned_alloc(64, (bytes + 63) / 64 * 64);
    cb->scratch_bytes = cb->scratch ? bytes : 0;
    return cb->scratch;
}

int hr_cpu_matmul_reserve(hr_cpu_backend *cb, int T) {
    size_t need = scratch_need(cb, T, (cb->max_k + 31) / 32 * 32);
    return need == 0 || scratch(cb, need) != NULL; /* 0: no weights loaded (yet) */
}

/* --compute bf16 on a bf16 weight: prepares x for AMX, VDPBF16PS or the f32 kernels in
 * the scratch (reserved by step_begin; grown here for callers outside a step). Returns 0
 * when that memory cannot be had. */
static int prepare_bf16(hr_cpu_backend *cb, const hr_cpu_kernels *k, mm_ctx *c, long N, long K) {
    if (!scratch(cb, scratch_need(cb, c->T, K))) return 0;
    if (!c->w->row_tile && hr_amx_fits(N, K)) {
        uint16_t *xp = cb->scratch;
        pack_ctx p = {xp, c->x, (int)K, c->T};
        hr_pool_run(cb->pool, pack_task, &p);
        c->xp = xp;
        c->chunk = chunk_cols(cb, c->w, 64);
        return 1;
    }
    int bx = hr_cpu()->avx512bf16 && k->mm_bx && !c->w->row_tile;
    void *buf = cb->scratch;
    round_ctx r = {c->x, bx ? buf : NULL, bx ? NULL : buf, K, c->T, k};
    hr_pool_run(cb->pool, round_task, &r);
    if (bx) {
        c->xp = buf;
        c->bx = k->mm_bx;
    } else {
        c->x = buf;
    }
    return 1;
}

void hr_cpu_matmul(hr_backend *be, float *y, const float *x, const hr_tensor *w,
                   const hr_tensor *bias, int T) {
    const hr_cpu_kernels *k = hr_cpu_kernels_get();
    hr_cpu_backend *cb = (hr_cpu_backend *)be;
    long N = w->shape[0], K = w->shape[1];
    mm_ctx c = {.y = y, .x = x, .w = w, .bias = bias, .T = T, .fn = hr_cpu_mm_for(k, w)};
    c.chunk = chunk_cols(cb, w, 16);
    hr_qmm q;
    if (hr_dtype_get(w->dtype)->quantized) {
        if (!scratch(cb, hr_qmm_scratch_bytes(T, K, hr_pool_size(cb->pool)))) {
            /* as for bf16: step_begin reserved it; no silent second path */
            HR_ERROR("out of memory for the quantized matmul scratch (%d x %ld)", T, K);
            abort();
        }
        hr_qmm_prepare(&q, cb->pool, x, w, T, cb->scratch);
        c.q = &q;
    }
    if (cb->opt.compute_bf16 && w->dtype == HR_BF16 && !prepare_bf16(cb, k, &c, N, K)) {
        /* only reachable outside a step (step_begin reserved the scratch); switching to
         * exact products instead would make numerics depend on memory pressure */
        HR_ERROR("out of memory for the bf16 matmul scratch (%d x %ld)", T, K);
        abort();
    }
    hr_pool_for(cb->pool, N, c.chunk, mm_task, &c);
}
