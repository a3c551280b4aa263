/* The CUDA backend's ops: argument checks and kernel launches on the backend's stream, and the
 * matmul dispatch: own GEMV for up to HR_CU_GEMV_MAX_T rows (f32 x), cuBLAS beyond, with x
 * rounded to the weight's 16-bit type (bf16 products) or, in the exact mode, split into two
 * 16-bit halves whose products add up to near-f32 precision; f32 accumulation and output.
 * GGUF-quantized weights take their own products (8-bit x, then f16 x with the weights decoded in
 * registers), or beyond those rows are decoded to f16 for cuBLAS. An
 * op cannot fail in the interface's terms; a failure is recorded and reported at the next
 * sync point. */
#include "backend/cuda/cuda_backend.h"

#include "tensor/qplanes.h"

/* Every op but matmul starts here: cb for the body, deferred products launched first, and
 * nothing to do when a replayed graph holds the op. */
#define HR_CU_OP(be)                                                                               \
    hr_cuda_backend *cb = (hr_cuda_backend *)(be);                                                 \
    hr_cu_flush(cb);                                                                               \
    hr_cu_forget_x(cb); /* the op may write x */                                                   \
    if (hr_cu_graph_op(cb)) return

/* The kernels' dtype code of t, or -1 with the failure recorded. */
static int dt(hr_cuda_backend *cb, const hr_tensor *t, const char *op) {
    int d = hr_cu_dtype(t->dtype);
    if (d < 0)
        hr_cu_fail(cb,
                   hr_errf("cuda %s: %s tensors are not supported", op, hr_dtype_name(t->dtype)));
    return d;
}

/* The scratch now holds x (n elements) rounded to 16-bit type d. */
static void xh_holds(hr_cuda_backend *cb, const float *x, size_t n, int d) {
    cb->xh_of = x, cb->xh_n = n, cb->xh_dtype = d, cb->xh_at = cb->xh;
}

/* x's n elements rounded to 16-bit type d in cb->xh (and, unless bf16 products, the rest in
 * its second half): once for products of one x back to back (q, k, v; gate, up); NULL when the
 * scratch cannot grow (the failure recorded). */
static const void *x_rounded(hr_cuda_backend *cb, const float *x, size_t n, int d) {
    if (!hr_cu_grow(cb, &cb->xh, &cb->xh_bytes, 2 * n * 2)) return NULL;
    if (cb->xh_of != x || cb->xh_n != n || cb->xh_dtype != d || cb->xh_at != cb->xh) {
        hr_cu_round(cb->stream, cb->xh, cb->bf16_products ? NULL : (char *)cb->xh + n * 2, d, x,
                    (long)n);
        xh_holds(cb, x, n, d);
    }
    return cb->xh;
}

static void gemm(hr_cuda_backend *cb, float *y, const float *x, const hr_tensor *w, int d, int T,
                 long N, long K) {
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st;
    if (d == HR_CU_F32) {
        st = cublasSgemm(cb->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, T, (int)K, &one, w->data,
                         (int)K, x, (int)K, &zero, y, (int)N);
    } else {
        size_t n = (size_t)T * (size_t)K;
        const void *xh = x_rounded(cb, x, n, d);
        if (!xh) return;
        const void *lo = cb->bf16_products ? NULL : (const char *)xh + n * 2;
        cudaDataType ty = d == HR_CU_BF16 ? CUDA_R_16BF : CUDA_R_16F;
        st = cublasGemmEx(cb->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, T, (int)K, &one, w->data, ty,
                          (int)K, xh, ty, (int)K, &zero, y, CUDA_R_32F, (int)N, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT);
        if (lo && st == CUBLAS_STATUS_SUCCESS)
            st = cublasGemmEx(cb->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, T, (int)K, &one, w->data,
                              ty, (int)K, lo, ty, (int)K, &one, y, CUDA_R_32F, (int)N,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    if (st != CUBLAS_STATUS_SUCCESS)
        hr_cu_fail(cb, hr_errf("cuda matmul: cuBLAS failed (%s)", cublasGetStatusString(st)));
}

/* Whether the set's weights lie one after the other (the arena placed them so: cuda_arena.c),
 * K 16-bit elements a row. */
static int contiguous(const hr_cu_gemv_set *g, long K) {
    for (int i = 0; i + 1 < g->n; i++)
        if ((const char *)g->w[i] + (g->start[i + 1] - g->start[i]) * K * 2 != g->w[i + 1])
            return 0;
    return g->n > 1;
}

/* A set of 16-bit products of one x past the GEMV's rows. From mmw_min_t to mmw_max_t rows
 * mmw where it takes the shape. Else a set with a small matrix (q, k, v: hr_cu_mmh_wins),
 * which cuBLAS reads slowly a matrix at a time: from cat_min_t to HR_CU_CAT_MAX_T rows, where
 * its weights are contiguous, one cuBLAS product of them all into cb->cat, split into the
 * outputs; else to mmh_max_t rows mmh; everything else cuBLAS a matrix at a time. x rounded
 * once. */
static void products16(hr_cuda_backend *cb, const hr_cu_gemv_set *g) {
    int T = cb->pending.T, d = cb->pending.dtype;
    long K = cb->pending.K, N = g->start[g->n];
    if (T >= cb->mmw_min_t && T <= cb->mmw_max_t) {
        const void *xh = x_rounded(cb, cb->pending.x, (size_t)T * (size_t)K, d);
        if (!xh || hr_cu_mmw(cb->stream, g, xh, d, T, K)) return;
    }
    int small = hr_cu_mmh_wins(g);
    if (small && cb->cat_min_t && T >= cb->cat_min_t && T <= HR_CU_CAT_MAX_T && contiguous(g, K)) {
        if (!hr_cu_grow(cb, &cb->cat, &cb->cat_bytes, sizeof(float) * (size_t)T * (size_t)N))
            return;
        hr_tensor w = {.data = (void *)g->w[0]};
        gemm(cb, cb->cat, cb->pending.x, &w, d, T, N, K);
        hr_cu_split_cols(cb->stream, g, cb->cat, T);
        return;
    }
    if (small && T <= cb->mmh_max_t) {
        const void *xh = x_rounded(cb, cb->pending.x, (size_t)T * (size_t)K, d);
        if (xh && hr_cu_grow(cb, &cb->mmq_ws, &cb->mmq_ws_bytes, hr_cu_mmq_ws_bytes(T)))
            hr_cu_mmh(cb->stream, g, xh, d, T, K, cb->mmq_ws);
        return;
    }
    for (int i = 0; i < g->n; i++) {
        hr_tensor w = {.data = (void *)g->w[i]};
        gemm(cb, g->y[i], cb->pending.x, &w, d, T, g->start[i + 1] - g->start[i], K);
    }
}

static void flush_add(hr_cuda_backend *cb) {
    if (!cb->pending_add.y) return;
    hr_cu_add(cb->stream, cb->pending_add.y, cb->pending_add.a, cb->pending_add.n);
    cb->pending_add.y = NULL;
}

static void flush_norm(hr_cuda_backend *cb) {
    hr_cu_gemv_fold *f = &cb->pending_norm.fold;
    if (!cb->pending_norm.y) return;
    if (cb->pending_norm.add)
        hr_cu_add_rmsnorm(cb->stream, cb->pending_norm.y, (float *)f->norm_x, cb->pending_norm.add,
                          f->norm_w, f->norm_dtype, cb->pending_norm.rows, cb->pending_norm.dim,
                          f->eps, f->one_plus);
    else
        hr_cu_rmsnorm(cb->stream, cb->pending_norm.y, f->norm_x, f->norm_w, f->norm_dtype,
                      cb->pending_norm.rows, cb->pending_norm.dim, f->eps, f->one_plus);
    cb->pending_norm.y = NULL;
}

/* The quantized-x scratch grown for T rows of K (0: it cannot grow, the failure recorded). */
static int xq_room(hr_cuda_backend *cb, int T, long K) {
    return hr_cu_grow(cb, &cb->xq, &cb->xq_bytes, hr_cu_xq_bytes(T, K));
}

/* The scratch now holds x (T rows of K) quantized in blocks of per. */
static void xq_holds(hr_cuda_backend *cb, const float *x, int T, long K, int per) {
    cb->xq_of = x, cb->xq_T = T, cb->xq_K = K, cb->xq_per = per, cb->xq_at = cb->xq;
}

static void flush_act(hr_cuda_backend *cb) {
    if (!cb->pending_act.y) return;
    hr_cu_act_mul(cb->stream, cb->pending_act.y, cb->pending_act.gate, cb->pending_act.up,
                  cb->pending_act.n, cb->pending_act.act);
    cb->pending_act.y = NULL;
}

/* The pending activation whose output is x (T rows of K) launched as the kernel that also
 * quantizes it for mmvq in blocks of per, then what else is pending; 0 when there is none or
 * no scratch (the caller flushes). */
static int act_quantized(hr_cuda_backend *cb, const float *x, int T, long K, int per) {
    typeof(cb->pending_act) p = cb->pending_act;
    if (p.y != x || p.n != (long)T * K || !xq_room(cb, T, K)) return 0;
    cb->pending_act.y = NULL;
    hr_cu_act_mul_quant(cb->stream, p.y, p.gate, p.up, T, K, p.act, cb->xq, per);
    hr_cu_flush(cb);
    xq_holds(cb, x, T, K, per);
    return 1;
}

/* The pending norm of x (T rows of K) launched as the kernel that also quantizes its output
 * for mmvq in blocks of per, then what else is pending; 0 when there is none or it does not
 * fit (the caller flushes). */
static int norm_quantized(hr_cuda_backend *cb, const float *x, int T, long K, int per) {
    hr_cu_gemv_fold f = cb->pending_norm.fold;
    if (cb->pending_norm.y != x || cb->pending_norm.rows != T || cb->pending_norm.dim != K ||
        !hr_cu_norm_quant_fits((int)K, per) || !xq_room(cb, T, K))
        return 0;
    cb->pending_norm.y = NULL;
    hr_cu_norm_quant(cb->stream, (float *)x, (float *)f.norm_x, cb->pending_norm.add, f.norm_w,
                     f.norm_dtype, T, (int)K, f.eps, f.one_plus, cb->xq, per);
    hr_cu_flush(cb);
    xq_holds(cb, x, T, K, per);
    return 1;
}

/* Row bytes of a quantized weight on the device: planar rows are padded to 16 bytes. */
static long qrow_bytes(const hr_tensor *w) {
    long K = w->shape[1];
    return (long)(w->planes ? hr_qplanes_row_bytes(w->dtype, K) : hr_dtype_bytes(w->dtype, K));
}

/* x's T rows quantized to 8 bits in blocks of per for mmvq, once for consecutive products of
 * the same x (q, k, v; gate, up); NULL when the scratch cannot grow. */
static const void *x_quantized(hr_cuda_backend *cb, const float *x, int T, long K, int per) {
    if (!xq_room(cb, T, K)) return NULL;
    if (cb->xq_of != x || cb->xq_T != T || cb->xq_K != K || cb->xq_per != per ||
        cb->xq_at != cb->xq) {
        hr_cu_quantize_x(cb->stream, cb->xq, x, T, K, per);
        xq_holds(cb, x, T, K, per);
    }
    return cb->xq;
}

/* The pending norm of x (T rows of K) launched as the kernel that also rounds its output to
 * 16-bit type d into the scratch, then what else is pending; 0 when there is none or no scratch
 * (the caller flushes). */
static int norm_rounded(hr_cuda_backend *cb, const float *x, int T, long K, int d) {
    hr_cu_gemv_fold f = cb->pending_norm.fold;
    size_t n = (size_t)T * (size_t)K;
    if (cb->pending_norm.y != x || cb->pending_norm.rows != T || cb->pending_norm.dim != K ||
        !hr_cu_grow(cb, &cb->xh, &cb->xh_bytes, 2 * n * 2))
        return 0;
    cb->pending_norm.y = NULL;
    hr_cu_norm_round(cb->stream, (float *)x, (float *)f.norm_x, cb->pending_norm.add, f.norm_w,
                     f.norm_dtype, T, (int)K, f.eps, f.one_plus, cb->xh, d);
    hr_cu_flush(cb);
    xh_holds(cb, x, n, d);
    return 1;
}

/* The same for the pending activation whose output is x. */
static int act_rounded(hr_cuda_backend *cb, const float *x, int T, long K, int d) {
    typeof(cb->pending_act) p = cb->pending_act;
    size_t n = (size_t)T * (size_t)K;
    if (p.y != x || p.n != (long)n || !hr_cu_grow(cb, &cb->xh, &cb->xh_bytes, 2 * n * 2)) return 0;
    cb->pending_act.y = NULL;
    hr_cu_act_mul_round(cb->stream, p.y, p.gate, p.up, p.n, p.act, cb->xh, d);
    hr_cu_flush(cb);
    xh_holds(cb, x, n, d);
    return 1;
}

/* Launches what is pending before a product that reads x (T rows of K) with weights of type d:
 * where that product takes x rounded to 16-bit d (bf16 products), a pending norm or activation
 * whose output is x rounds it as well. */
static void flush_rounding(hr_cuda_backend *cb, const float *x, int T, long K, int d) {
    if (!cb->bf16_products || d == HR_CU_F32 ||
        (!norm_rounded(cb, x, T, K, d) && !act_rounded(cb, x, T, K, d)))
        hr_cu_flush(cb);
}

static void flush_rope(hr_cuda_backend *cb);

void hr_cu_flush(hr_cuda_backend *cb) {
    hr_cu_gemv_set *g = &cb->pending.set;
    flush_rope(cb);
    flush_norm(cb);
    flush_act(cb);
    if (!g->n) {
        flush_add(cb);
        return;
    }
    if (cb->pending.q >= 0) {
        const void *xq =
            x_quantized(cb, cb->pending.x, cb->pending.T, cb->pending.K, cb->pending.per);
        if (xq && cb->pending.T <= HR_CU_MMVQ_MAX_T)
            hr_cu_mmvq(cb->stream, g, xq, cb->pending.q, cb->pending.T, cb->pending.K,
                       cb->pending.rb);
        else if (xq &&
                 hr_cu_grow(cb, &cb->mmq_ws, &cb->mmq_ws_bytes, hr_cu_mmq_ws_bytes(cb->pending.T)))
            hr_cu_mmq(cb->stream, g, xq, cb->pending.q, cb->pending.T, cb->pending.K,
                      cb->pending.rb, cb->mmq_ws);
    } else if (cb->pending.T > HR_CU_GEMV_MAX_T) {
        products16(cb, g);
    } else {
        hr_cu_gemv(cb->stream, g, (float *)cb->pending.x, cb->pending.dtype, cb->pending.T,
                   cb->pending.K);
    }
    g->fold = (hr_cu_gemv_fold){0};
    for (int i = 0; i < g->n; i++) {
        const hr_tensor *b = cb->pending.bias[i];
        int bd = b ? dt(cb, b, "matmul bias") : -1;
        if (bd >= 0)
            hr_cu_add_bias(cb->stream, g->y[i], b->data, bd, cb->pending.T,
                           g->start[i + 1] - g->start[i]);
    }
    g->n = 0;
}

/* Whether a product of x can join the pending launch: same x, shape and type (GGUF format q
 * with rows of rb bytes, or q = -1 and dtype d), room left, and its output is none of the
 * pending inputs or outputs. */
static int joins(const hr_cuda_backend *cb, float *y, const float *x, int d, int q, long rb, int T,
                 long K) {
    const hr_cu_gemv_set *g = &cb->pending.set;
    if (!g->n || g->n == HR_CU_GEMV_FUSE || g->fold.acc || g->fold.act_y || x != cb->pending.x ||
        T != cb->pending.T || K != cb->pending.K || q != cb->pending.q ||
        (q < 0 ? d != cb->pending.dtype : rb != cb->pending.rb) || (const float *)y == x)
        return 0;
    for (int i = 0; i < g->n; i++)
        if (g->y[i] == y) return 0;
    return 1;
}

/* Adds a product to the pending launch (started afresh when it cannot join). */
static void defer(hr_cuda_backend *cb, float *y, const float *x, const void *w, long N,
                  const hr_tensor *bias) {
    hr_cu_gemv_set *g = &cb->pending.set;
    g->w[g->n] = w;
    g->y[g->n] = y;
    cb->pending.bias[g->n] = bias;
    g->start[g->n + 1] = g->start[g->n] + N;
    g->n++;
}

/* The block of x a product of T rows with a GGUF weight of format q takes 8-bit x in (32 or
 * 256; 0: none of the 8-bit-activation products takes it). */
static int x_block(const hr_cuda_backend *cb, const hr_tensor *w, int q, long rb, int T) {
    if (cb->qgemv_f32 || (T > HR_CU_MMVQ_MAX_T && (cb->mmq_off || T > hr_cu_mmq_max_t(q))))
        return 0;
    return hr_cu_mmvq_per(q, w->planes, rb);
}

/* Whether a product of T rows with w (format q, rows of rb bytes) takes mmf.cu: past the rows
 * of the f32 GEMV and of the 8-bit products, to hr_cu_mmf_max_t, with x rounded to f16 (bf16
 * products; the exact mode keeps the two-part x of cuBLAS). */
static int mmf_takes(const hr_cuda_backend *cb, const hr_tensor *w, int q, long rb, int T) {
    return cb->bf16_products && !cb->mmf_off && !cb->qgemv_f32 && T > HR_CU_GEMV_MAX_T &&
           T <= hr_cu_mmf_max_t(q, w->planes, rb);
}

/* A product with a GGUF-quantized weight (format q). Batches up to hr_cu_mmq_max_t rows take
 * the 8-bit-activation products where the format has one (mmvq.cu to 8 rows, then mmq.cu on
 * the tensor cores), deferred like the GEMV so products of one x launch together; past those
 * rows, to hr_cu_mmf_max_t, f16 x and the weights decoded in registers (mmf.cu); else the f32
 * GEMV, alone, to 4 rows; larger batches decode the matrix to f16 for cuBLAS. */
static void qmatmul(hr_cuda_backend *cb, float *y, const float *x, const hr_tensor *w, int q,
                    const hr_tensor *bias, int T) {
    long N = w->shape[0], K = w->shape[1], rb = qrow_bytes(w);
    int per = x_block(cb, w, q, rb, T);
    if (per) {
        if (!joins(cb, y, x, -1, q, rb, T, K)) {
            if (!norm_quantized(cb, x, T, K, per) && !act_quantized(cb, x, T, K, per))
                hr_cu_flush(cb);
            cb->pending.x = x, cb->pending.T = T, cb->pending.K = K;
            cb->pending.q = q, cb->pending.per = per, cb->pending.rb = rb;
            cb->pending.set.start[0] = 0;
            cb->pending.set.fold = (hr_cu_gemv_fold){0};
        }
        defer(cb, y, x, w->data, N, bias);
        return;
    }
    if (T > HR_CU_GEMV_MAX_T)
        flush_rounding(cb, x, T, K, HR_CU_F16); /* mmf, or the f16 decode and cuBLAS */
    else
        hr_cu_flush(cb);
    if (mmf_takes(cb, w, q, rb, T)) {
        const void *xh = x_rounded(cb, x, (size_t)T * (size_t)K, HR_CU_F16);
        hr_cu_gemv_set g = {.n = 1, .w = {w->data}, .y = {y}, .start = {0, N}};
        if (xh && hr_cu_grow(cb, &cb->mmq_ws, &cb->mmq_ws_bytes, hr_cu_mmq_ws_bytes(T)))
            hr_cu_mmf(cb->stream, &g, xh, q, T, K, rb, cb->mmq_ws);
    } else if (T <= HR_CU_GEMV_MAX_T) {
        hr_cu_qgemv(cb->stream, y, x, w->data, q, w->planes, T, N, K, rb);
    } else if (hr_cu_grow(cb, &cb->wdq, &cb->wdq_bytes, (size_t)(N * K) * 2)) {
        hr_cu_dequant_f16(cb->stream, cb->wdq, w->data, q, w->planes, N, K, rb);
        hr_tensor wh = *w;
        wh.dtype = HR_F16;
        wh.data = cb->wdq;
        gemm(cb, y, x, &wh, HR_CU_F16, T, N, K);
    }
    int bd = bias ? dt(cb, bias, "matmul bias") : -1;
    if (bd >= 0) hr_cu_add_bias(cb->stream, y, bias->data, bd, T, N);
}

void hr_cu_op_matmul(hr_backend *be, float *y, const float *x, const hr_tensor *w,
                     const hr_tensor *bias, int T) {
    hr_cuda_backend *cb = (hr_cuda_backend *)be;
    if (hr_cu_graph_op(cb)) return;
    if ((const float *)y == cb->xh_of || (const float *)y == cb->xq_of) hr_cu_forget_x(cb);
    int q = hr_cu_qtype(w->dtype);
    if (q >= 0) {
        if (T > 0) qmatmul(cb, y, x, w, q, bias, T);
        return;
    }
    int d = dt(cb, w, "matmul");
    if (d < 0 || T <= 0) return;
    long N = w->shape[0], K = w->shape[w->ndim - 1];
    /* 16-bit products past the GEMV's rows wait to launch as a set (products16) */
    int set16 = T > HR_CU_GEMV_MAX_T && cb->bf16_products && hr_cu_mmh_takes(d, K);
    if (T > HR_CU_GEMV_MAX_T && !set16) {
        flush_rounding(cb, x, T, K, d);
        gemm(cb, y, x, w, d, T, N, K);
        int bd = bias ? dt(cb, bias, "matmul bias") : -1;
        if (bd >= 0) hr_cu_add_bias(cb->stream, y, bias->data, bd, T, N);
        return;
    }
    if (!joins(cb, y, x, d, -1, 0, T, K)) {
        /* a pending norm of x folds into the GEMV's launch (the products read it on the fly) */
        hr_cu_gemv_fold fold = {0};
        if (!set16 && cb->pending_norm.y == x && !cb->pending_norm.add &&
            cb->pending_norm.rows == T && cb->pending_norm.dim == K) {
            fold = cb->pending_norm.fold;
            cb->pending_norm.y = NULL;
        }
        if (set16)
            flush_rounding(cb, x, T, K, d);
        else
            hr_cu_flush(cb);
        cb->pending.x = x;
        cb->pending.T = T;
        cb->pending.K = K;
        cb->pending.dtype = d;
        cb->pending.q = -1;
        cb->pending.set.start[0] = 0;
        cb->pending.set.fold = fold;
    }
    defer(cb, y, x, w->data, N, bias);
}

void hr_cu_op_embed(hr_backend *be, float *y, const hr_tensor *table, float scale) {
    HR_CU_OP(be);
    int q = hr_cu_qtype(table->dtype);
    if (q >= 0) {
        long dim = table->shape[1];
        if (cb->meta.n_tokens > 0)
            hr_cu_qembed(cb->stream, &cb->meta, y, table->data, q, table->planes, dim,
                         qrow_bytes(table), scale);
        return;
    }
    int d = dt(cb, table, "embed");
    if (d >= 0 && cb->meta.n_tokens > 0)
        hr_cu_embed(cb->stream, &cb->meta, y, table->data, d, table->shape[1], scale);
}

/* A pending residual add whose sum this norm reads runs in the norm's kernel. */
void hr_cu_op_rmsnorm(hr_backend *be, float *y, const float *x, const hr_tensor *w, int rows,
                      int dim, float eps, int one_plus) {
    hr_cuda_backend *pb = (hr_cuda_backend *)be;
    float *sum = pb->pending_add.y;
    const float *a = pb->pending_add.a;
    int fuse = sum && sum == x && pb->pending_add.n == (long)rows * dim;
    if (fuse) pb->pending_add.y = NULL;
    HR_CU_OP(be);
    int d = w ? dt(cb, w, "rmsnorm") : HR_CU_F32;
    if (d < 0) return;
    /* with bf16 products the 16-bit products of any rows may round y with it */
    int most = cb->bf16_products ? rows : cb->max_q_elems ? HR_CU_MMQ_MAX_T : HR_CU_GEMV_MAX_T;
    if (cb->fold && rows <= most && (fuse || y != x)) {
        /* may fold into the products of y (a plain norm) or quantize y for them */
        cb->pending_norm.y = y;
        cb->pending_norm.rows = rows;
        cb->pending_norm.dim = dim;
        cb->pending_norm.add = fuse ? a : NULL;
        cb->pending_norm.fold = (hr_cu_gemv_fold){.norm_x = x,
                                                  .norm_w = w ? w->data : NULL,
                                                  .norm_dtype = d,
                                                  .one_plus = one_plus,
                                                  .eps = eps};
    } else if (fuse) {
        hr_cu_add_rmsnorm(cb->stream, y, sum, a, w ? w->data : NULL, d, rows, dim, eps, one_plus);
    } else {
        hr_cu_rmsnorm(cb->stream, y, x, w ? w->data : NULL, d, rows, dim, eps, one_plus);
    }
}

/* Whether a rope of these parameters can wait beside the pending one (same head dim, rotary
 * dims and frequencies; at most two: q and k). */
static int rope_joins(const hr_cuda_backend *cb, int head_dim, int rot_dim, const float *inv_freq) {
    const hr_cu_rope_kv *r = &cb->pending_rope.r;
    return cb->pending_rope.n == 1 && r->head_dim == head_dim && r->rot_dim == rot_dim &&
           r->inv_freq == inv_freq;
}

/* Deferred: a KV write of the rotated k takes it (and the q rope before it) into one launch;
 * any other op launches it alone. */
void hr_cu_op_rope(hr_backend *be, float *x, int n_heads, int head_dim, int rot_dim,
                   const hr_tensor *inv_freq) {
    hr_cuda_backend *cb = (hr_cuda_backend *)be;
    if (inv_freq->dtype != HR_F32) {
        hr_cu_fail(cb, hr_errf("cuda rope: inverse frequencies must be F32"));
        return;
    }
    if (!rope_joins(cb, head_dim, rot_dim, inv_freq->data)) hr_cu_flush(cb);
    hr_cu_forget_x(cb);
    if (hr_cu_graph_op(cb) || cb->meta.n_tokens <= 0 || rot_dim < 2) return;
    hr_cu_rope_kv *r = &cb->pending_rope.r;
    if (cb->pending_rope.n == 0)
        *r = (hr_cu_rope_kv){.q = x,
                             .n_q = n_heads,
                             .head_dim = head_dim,
                             .rot_dim = rot_dim,
                             .inv_freq = inv_freq->data};
    else
        r->k = x, r->n_k = n_heads;
    cb->pending_rope.n++;
}

static void flush_rope(hr_cuda_backend *cb) {
    hr_cu_rope_kv *r = &cb->pending_rope.r;
    if (cb->pending_rope.n >= 1)
        hr_cu_rope(cb->stream, &cb->meta, r->q, r->n_q, r->head_dim, r->rot_dim, r->inv_freq);
    if (cb->pending_rope.n == 2)
        hr_cu_rope(cb->stream, &cb->meta, r->k, r->n_k, r->head_dim, r->rot_dim, r->inv_freq);
    cb->pending_rope.n = 0;
}

/* Layer `layer` of the KV store as the kernels see it. */
static hr_cu_kv_layer kv_layer(const hr_kv_store *kv, int layer) {
    size_t off = kv->layer_off[layer];
    return (hr_cu_kv_layer){.k = (char *)kv->k + off,
                            .v = (char *)kv->v + off,
                            .dtype = kv->dtype == HR_BF16 ? HR_CU_BF16 : HR_CU_F32,
                            .block_size = kv->block_size,
                            .n_kv_heads = kv->n_kv_heads,
                            .head_dim =
                                kv->layer_head_dim ? kv->layer_head_dim[layer] : kv->head_dim};
}

/* The pending ropes run in this write's kernel when the last of them rotated k. */
void hr_cu_op_kv_write(hr_backend *be, hr_kv_store *kv, int layer, const float *k, const float *v) {
    hr_cuda_backend *pb = (hr_cuda_backend *)be;
    hr_cu_kv_layer l = kv_layer(kv, layer);
    hr_cu_rope_kv r = pb->pending_rope.r;
    int n = pb->pending_rope.n;
    const float *rotated = n == 2 ? r.k : n == 1 ? r.q : NULL;
    int fuse = rotated == k && r.head_dim == l.head_dim && (n == 2 ? r.n_k : r.n_q) == l.n_kv_heads;
    if (fuse) {
        if (n == 1) r.k = r.q, r.n_k = r.n_q, r.q = NULL, r.n_q = 0;
        r.v = v;
        pb->pending_rope.n = 0;
    }
    HR_CU_OP(be);
    if (cb->meta.n_tokens <= 0) return;
    if (fuse)
        hr_cu_rope_kv_write(cb->stream, &cb->meta, &r, &l);
    else
        hr_cu_kv_write(cb->stream, &cb->meta, &l, k, v);
}

enum { MAX_HEAD_DIM = 512 };

void hr_cu_op_attention(hr_backend *be, float *out, const float *q, const hr_kv_store *kv,
                        const hr_attn_params *p) {
    HR_CU_OP(be);
    if (p->head_dim > MAX_HEAD_DIM) {
        hr_cu_fail(cb,
                   hr_errf("cuda attention: head_dim %d is over %d", p->head_dim, MAX_HEAD_DIM));
        return;
    }
    hr_cu_kv_layer l = kv_layer(kv, p->layer);
    hr_cu_attn a = {p->n_heads, p->n_kv_heads, p->head_dim, p->window, p->scale, p->softcap};
    size_t need = sizeof(float) * (size_t)hr_cu_attention_scratch(&cb->meta, &l, &a);
    if (need && !hr_cu_grow(cb, (void **)&cb->partial, &cb->partial_bytes, need)) return;
    hr_cu_attention(cb->stream, &cb->meta, &l, &a, out, q, cb->partial);
}

/* Whether act_mul(y, gate, up, n) can fold into the pending product set (hr_cu_gemv_fold's
 * act_y): the GEMV of 16-bit gate and up, unbiased, of equal rows, writing gate and up, with
 * nothing else folded after it and y none of its operands. */
static int act_folds(const hr_cuda_backend *cb, const float *y, const float *gate, const float *up,
                     long n) {
    const hr_cu_gemv_set *g = &cb->pending.set;
    int d = cb->pending.dtype;
    return cb->fold && g->n == 2 && cb->pending.q < 0 && cb->pending.T <= HR_CU_GEMV_MAX_T &&
           (d == HR_CU_BF16 || d == HR_CU_F16) && g->y[0] == gate && g->y[1] == up &&
           g->start[2] == 2 * g->start[1] && (long)cb->pending.T * g->start[1] == n &&
           !cb->pending.bias[0] && !cb->pending.bias[1] && !g->fold.acc && y != gate && y != up &&
           y != cb->pending.x && y != g->fold.norm_x;
}

/* Folded into the pending gate and up GEMV where it can be (act_folds), else deferred to be
 * rounded or quantized with the next product's x, or launched. */
void hr_cu_op_act_mul(hr_backend *be, float *y, const float *gate, const float *up, long n,
                      hr_act_fn act) {
    hr_cuda_backend *pb = (hr_cuda_backend *)be;
    if (act_folds(pb, y, gate, up, n)) {
        pb->pending.set.fold.act_y = y;
        pb->pending.set.fold.act = act == HR_ACT_FN_SILU ? 0 : 1;
        hr_cu_forget_x(pb);
        hr_cu_graph_op(pb); /* counted like any op (nothing is pending while a graph replays) */
        return;
    }
    HR_CU_OP(be);
    int a = act == HR_ACT_FN_SILU ? 0 : 1;
    if ((cb->max_q_elems || cb->bf16_products) && n > 0)
        cb->pending_act =
            (typeof(cb->pending_act)){y, gate, up, n, a}; /* may quantize or round y */
    else
        hr_cu_act_mul(cb->stream, y, gate, up, n, a);
}

/* Folded into the pending product that wrote a (it adds its output to y as well), else
 * deferred: launched by the next op, or with the next RMSNorm when it normalizes y. */
void hr_cu_op_add(hr_backend *be, float *y, const float *a, long n) {
    hr_cuda_backend *pb = (hr_cuda_backend *)be;
    hr_cu_gemv_set *g = &pb->pending.set;
    if (pb->fold && g->n == 1 && pb->pending.q < 0 && pb->pending.T <= HR_CU_GEMV_MAX_T &&
        g->y[0] == a && !pb->pending.bias[0] && !g->fold.acc && y != a &&
        (const float *)y != pb->pending.x && (long)pb->pending.T * g->start[1] == n) {
        g->fold.acc = y;
        hr_cu_graph_op(pb); /* counted like any op (nothing is pending while a graph replays) */
        return;
    }
    HR_CU_OP(be);
    if (n <= 0) return;
    cb->pending_add.y = y;
    cb->pending_add.a = a;
    cb->pending_add.n = n;
}

void hr_cu_op_copy(hr_backend *be, float *dst, const float *src, long n) {
    HR_CU_OP(be);
    if (n > 0)
        hr_cu_fail(cb, hr_cu_check(cudaMemcpyAsync(dst, src, sizeof(float) * (size_t)n,
                                                   cudaMemcpyDeviceToDevice, cb->stream),
                                   "copy"));
}

void hr_cu_op_scale(hr_backend *be, float *y, float s, long n) {
    HR_CU_OP(be);
    hr_cu_scale(cb->stream, y, s, n);
}

void hr_cu_op_softcap(hr_backend *be, float *y, float cap, long n) {
    HR_CU_OP(be);
    hr_cu_softcap(cb->stream, y, cap, n);
}

void hr_cu_op_copy2d(hr_backend *be, float *dst, long dst_stride, const float *src, long src_stride,
                     int rows, long cols) {
    HR_CU_OP(be);
    hr_cu_copy2d(cb->stream, dst, dst_stride, src, src_stride, rows, cols);
}

void hr_cu_op_mul_gather(hr_backend *be, float *y, const int32_t *idx, const hr_tensor *table,
                         long n) {
    HR_CU_OP(be);
    int d = dt(cb, table, "mul_gather");
    if (d >= 0) hr_cu_mul_gather(cb->stream, y, idx, table->data, d, n);
}

void hr_cu_op_sigmoid_mul(hr_backend *be, float *y, const float *g, long rows, int w, int g_w) {
    HR_CU_OP(be);
    hr_cu_sigmoid_mul(cb->stream, y, g, rows, w, g_w);
}

enum { MAX_CONV_TAPS = 16 };

void hr_cu_op_conv1d(hr_backend *be, float *x, const hr_tensor *w, int channels, hr_kv_store *kv,
                     int state_layer) {
    HR_CU_OP(be);
    int d = dt(cb, w, "conv1d"), K = (int)w->shape[2];
    if (d < 0) return;
    if (K > MAX_CONV_TAPS) {
        hr_cu_fail(cb, hr_errf("cuda conv1d: kernel of %d taps is over %d", K, MAX_CONV_TAPS));
        return;
    }
    float *state = (float *)kv->conv + (long)state_layer * kv->n_state_slots * kv->conv_floats;
    hr_cu_conv1d(cb->stream, &cb->meta, x, w->data, d, channels, K, state, kv->conv_floats);
}

void hr_cu_op_gated_delta(hr_backend *be, float *out, hr_kv_store *kv, const hr_delta_params *p) {
    HR_CU_OP(be);
    int da = dt(cb, p->a_log, "gated_delta"), db = dt(cb, p->dt_bias, "gated_delta");
    if (da < 0 || db < 0) return;
    hr_cu_delta d = {
        p->n_k_heads, p->n_v_heads, p->k_dim,       p->v_dim,         p->q, p->k, p->v, p->a,
        p->b,         p->ld,        p->a_log->data, p->dt_bias->data, da,   db};
    float *state = (float *)kv->delta + (long)p->state_layer * kv->n_state_slots * kv->delta_floats;
    if (!hr_cu_gated_delta(cb->stream, &cb->meta, &d, out, state, kv->delta_floats))
        hr_cu_fail(cb, hr_errf("cuda gated_delta: head dims %d x %d are over 256 x 1024", p->k_dim,
                               p->v_dim));
}

/* One state layer's region: slot i of layer l at (l * count + i) * n floats. */
static float *state_at(void *base, int layer, int count, int i, long n) {
    return (float *)base + ((long)layer * count + i) * n;
}

void hr_cu_op_state_copy(hr_backend *be, hr_kv_store *kv, int slot, int snap, int restore) {
    HR_CU_OP(be);
    for (int l = 0; l < kv->n_state_layers; l++) {
        const struct {
            void *live, *saved;
            long n;
        } parts[] = {{state_at(kv->conv, l, kv->n_state_slots, slot, kv->conv_floats),
                      state_at(kv->snap_conv, l, kv->n_snapshots, snap, kv->conv_floats),
                      kv->conv_floats},
                     {state_at(kv->delta, l, kv->n_state_slots, slot, kv->delta_floats),
                      state_at(kv->snap_delta, l, kv->n_snapshots, snap, kv->delta_floats),
                      kv->delta_floats}};
        for (int i = 0; i < 2; i++) {
            void *dst = restore ? parts[i].live : parts[i].saved;
            const void *src = restore ? parts[i].saved : parts[i].live;
            hr_cu_fail(cb, hr_cu_check(cudaMemcpyAsync(dst, src, sizeof(float) * (size_t)parts[i].n,
                                                       cudaMemcpyDeviceToDevice, cb->stream),
                                       "state copy"));
        }
    }
}

void hr_cu_op_moe_route(hr_backend *be, int32_t *ids, float *weights, const float *logits, int T,
                        int n_experts, int k, int renorm) {
    HR_CU_OP(be);
    hr_cu_moe_route(cb->stream, ids, weights, logits, T, n_experts, k, renorm);
}

void hr_cu_op_argmax(hr_backend *be, int32_t *ids, const float *x, int rows, int n) {
    HR_CU_OP(be);
    /* the attention partials' scratch: free once the step's layers are done */
    size_t need = sizeof(float) * (size_t)hr_cu_argmax_scratch(rows, n);
    if (need && !hr_cu_grow(cb, (void **)&cb->partial, &cb->partial_bytes, need)) return;
    hr_cu_argmax(cb->stream, ids, x, rows, n, cb->partial);
}

void hr_cu_op_sample(hr_backend *be, hr_sample_out *out, float *x, int rows, int n) {
    HR_CU_OP(be);
    if (!cb->meta.sample_rows || cb->meta.n_sample_rows != rows) {
        hr_cu_fail(cb, hr_errf("cuda sample: the step has %d sample rows, not %d",
                               cb->meta.n_sample_rows, rows));
        return;
    }
    if (cb->meta.sample_mask_words && cb->meta.sample_mask_words * 32 < n) {
        hr_cu_fail(cb, hr_errf("cuda sample: token masks of %d words for %d logits",
                               cb->meta.sample_mask_words, n));
        return;
    }
    hr_cu_sample(cb->stream, out, x, rows, n, cb->meta.sample_rows, cb->meta.sample_edits);
}
