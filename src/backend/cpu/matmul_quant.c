/* Matmul with a quantized weight. GGUF types with an 8-bit dot product (qdot.h) quantize x
 * once per call (rows split over the pool; per 32 or, for the K-quants, per 256 elements) and take
 * one dot per output, four tokens per decode of a weight row where the type has dot4 (bit for bit
 * four dots): each weight row is read once and decoded in registers. A weight the backend
 * repacked (qrepack.h) takes the same x through tiles of 8 interleaved rows instead. MLX 4- and
 * 8-bit weights on AVX2 / AVX-512 take one f32 dot per output likewise (mlx_dot.h), with x's group
 * sums computed once. The other types (and every type at the generic level for MLX) dequantize
 * HR_QMM_ROWS weight rows at a time (tensor/quant.c, tensor/mlx_quant.c) into the thread's f32
 * buffer for the f32 kernel, bit for bit the f32 matmul of the dequantized weight. Either way an
 * output depends on its own row and column only, whatever T is and however the columns are split.
 */
#include "backend/cpu/matmul_quant.h"

#include "backend/cpu/qrepack.h"

#include "tensor/mlx_quant.h"
#include "tensor/quant.h"

/* Scratch: x's quantized blocks (or MLX group sums, or the dequantized rows), then per
 * thread one weight row's MLX scales and biases in f32. */
static size_t first_part(int T, long K, int n_threads) {
    size_t xq = hr_qx_row_bytes(K) * (size_t)T;
    size_t rows = sizeof(float) * (size_t)n_threads * HR_QMM_ROWS * (size_t)K;
    return ((xq > rows ? xq : rows) + 63) / 64 * 64;
}

size_t hr_qmm_scratch_bytes(int T, long K, int n_threads) {
    return first_part(T, K, n_threads) + sizeof(float) * 2 * (size_t)n_threads * (size_t)(K / 32);
}

static void prepare_mlx(hr_qmm *q, int n_threads, void *scratch) {
    const hr_cpu_mlx_dots *md = hr_cpu_mlx_dots_get();
    q->mdot = md ? md->dot[hr_mlx_bits(q->w->dtype)] : NULL;
    if (!q->mdot) {
        q->rows = scratch;
        return;
    }
    long G = q->K / q->w->group_size;
    float *xs = scratch;
    for (int t = 0; t < q->T; t++)
        hr_mlx_xsums(q->x + t * q->K, q->K, q->w->group_size, xs + t * G);
    q->xs = xs;
    q->sb = (float *)((char *)scratch + first_part(q->T, q->K, n_threads));
}

typedef struct {
    const float *x;
    char *xq;
    long K;
    int T;
    hr_dtype w;
    void (*quantize)(hr_dtype t, const float *x, void *out, long K);
} quant_ctx;

static void quant_task(void *ctx, int t, int nt) {
    quant_ctx *c = ctx;
    for (int r = c->T * t / nt; r < c->T * (t + 1) / nt; r++)
        c->quantize(c->w, c->x + r * c->K, c->xq + (size_t)r * hr_qx_row_bytes(c->K), c->K);
}

void hr_qmm_prepare(hr_qmm *q, hr_pool *pool, const float *x, const hr_tensor *w, int T,
                    void *scratch) {
    const hr_cpu_qdots *qd = hr_cpu_qdots_get();
    *q = (hr_qmm){.w = w,
                  .x = x,
                  .T = T,
                  .K = w->shape[1],
                  .k = hr_cpu_kernels_get(),
                  .dot = qd->dot[w->dtype],
                  .dot4 = qd->dot4[w->dtype],
                  .rows1 = w->row_tile ? qd->rows1[w->dtype] : NULL,
                  .rows4 = w->row_tile ? qd->rows4[w->dtype] : NULL,
                  .rows4x2 = w->row_tile ? qd->rows4x2[w->dtype] : NULL};
    if (hr_mlx_bits(w->dtype)) {
        prepare_mlx(q, hr_pool_size(pool), scratch);
        return;
    }
    if (!q->dot) {
        q->rows = scratch;
        return;
    }
    quant_ctx c = {x, scratch, q->K, T, w->dtype, qd->quantize};
    if (T == 1)
        quant_task(&c, 0, 1);
    else
        hr_pool_run(pool, quant_task, &c);
    q->xq = scratch;
}

/* MLX 4 / 8 bits: each row's companions in f32 once, then one dot per token. */
static void mlx_cols(const hr_qmm *q, float *y, long n0, long n1, int thread) {
    const hr_tensor *w = q->w;
    long N = w->shape[0], K = q->K, G = K / w->group_size;
    size_t row_bytes = hr_dtype_bytes(w->dtype, K);
    float *s = q->sb + (long)thread * 2 * (K / 32), *b = s + G;
    for (long n = n0; n < n1; n++) {
        for (long g = 0; g < G; g++) {
            s[g] = hr_mlx_companion(w->scales, n * G + g);
            b[g] = hr_mlx_companion(w->biases, n * G + g);
        }
        const uint8_t *row = (const uint8_t *)w->data + n * row_bytes;
        for (int t = 0; t < q->T; t++)
            y[t * N + n] = q->mdot(row, s, b, q->x + t * K, q->xs + t * G, K, w->group_size);
    }
}

static void dequant_row(const hr_tensor *w, long r, size_t row_bytes, float *out) {
    if (hr_mlx_bits(w->dtype))
        hr_mlx_dequant(w, r, 0, w->shape[1], out);
    else
        hr_dequant_row(w->dtype, (const char *)w->data + r * row_bytes, out, w->shape[1]);
}

/* Rows [n0, n1) through the per-row dots: groups of 4 tokens (their x blocks stay in L1)
 * over the rows. */
static void dot_cols(const hr_qmm *q, float *y, long n0, long n1) {
    long N = q->w->shape[0], K = q->K, nb = K / 32;
    size_t row_bytes = hr_dtype_bytes(q->w->dtype, K), xs = hr_qx_row_bytes(K);
    const char *w = q->w->data;
    for (int t0 = 0; t0 < q->T; t0 += 4) {
        const char *x = (const char *)q->xq + (size_t)t0 * xs;
        int nt = q->T - t0 < 4 ? q->T - t0 : 4;
        for (long n = n0; n < n1; n++) {
            float o[4];
            if (nt == 4 && q->dot4)
                q->dot4(w + n * row_bytes, x, xs, nb, o);
            else
                for (int t = 0; t < nt; t++)
                    o[t] = q->dot(w + n * row_bytes, x + t * xs, nb);
            for (int t = 0; t < nt; t++)
                y[(t0 + t) * N + n] = o[t];
        }
    }
}

/* A repacked weight (qrepack.h): the tiles that overlap [n0, n1) whole (a row's lane does
 * not depend on the others), keeping the rows asked for; the rows past the last tile
 * through dot_cols. */
static void tile_cols(const hr_qmm *q, float *y, long n0, long n1) {
    long N = q->w->shape[0], K = q->K, nb = K / 32, whole = N / HR_QROWS * HR_QROWS;
    size_t xs = hr_qx_row_bytes(K), tile_bytes = hr_dtype_bytes(q->w->dtype, HR_QROWS * K);
    const char *w = q->w->data;
    for (int t0 = 0; t0 < q->T; t0 += 4) {
        const char *x = (const char *)q->xq + (size_t)t0 * xs;
        int nt = q->T - t0 < 4 ? q->T - t0 : 4;
        for (long s = n0 / HR_QROWS * HR_QROWS, step; s < n1 && s < whole; s += step) {
            float o[4 * 2 * HR_QROWS];
            const char *tile = w + (size_t)(s / HR_QROWS) * tile_bytes;
            step = nt == 4 && q->rows4x2 && s + 2 * HR_QROWS <= whole ? 2 * HR_QROWS : HR_QROWS;
            if (step > HR_QROWS)
                q->rows4x2(tile, x, xs, nb, o);
            else if (nt == 4 && q->rows4)
                q->rows4(tile, x, xs, nb, o);
            else
                for (int t = 0; t < nt; t++)
                    q->rows1(tile, x + t * xs, xs, nb, o + HR_QROWS * t);
            long a = s > n0 ? s : n0, e = s + step < n1 ? s + step : n1;
            for (int t = 0; t < nt; t++)
                for (long n = a; n < e; n++)
                    y[(t0 + t) * N + n] = o[step * t + n - s];
        }
    }
    if (n1 > whole) dot_cols(q, y, n0 > whole ? n0 : whole, n1);
}

void hr_qmm_cols(const hr_qmm *q, float *y, long n0, long n1, int thread) {
    long N = q->w->shape[0], K = q->K;
    size_t row_bytes = hr_dtype_bytes(q->w->dtype, K);
    if (q->mdot) {
        mlx_cols(q, y, n0, n1, thread);
        return;
    }
    if (q->rows1) {
        tile_cols(q, y, n0, n1);
        return;
    }
    if (q->dot) {
        dot_cols(q, y, n0, n1);
        return;
    }
    float *rows = q->rows + (long)thread * HR_QMM_ROWS * K;
    for (long nb0 = n0; nb0 < n1; nb0 += HR_QMM_ROWS) {
        long len = n1 - nb0 < HR_QMM_ROWS ? n1 - nb0 : HR_QMM_ROWS;
        for (long r = 0; r < len; r++)
            dequant_row(q->w, nb0 + r, row_bytes, rows + r * K);
        q->k->mm_f32(y + nb0, N, q->x, K, rows, (int)K, q->T, 0, len);
    }
}
