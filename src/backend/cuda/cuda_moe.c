/* The CUDA MoE experts op: the routed ids come back to the host (one small read, a sync
 * point), which sorts the (token, slot) pairs by expert; the rows are gathered in that order
 * on the device, each hit expert's gate / up / down products run on its run of rows through
 * the matmul op (GEMV or cuBLAS by row count), and a combine kernel adds each token's k
 * weighted outputs. Experts nobody chose cost nothing. A grouped-GEMM kernel that needs no
 * host round trip (and so can sit in a CUDA graph) replaces this later (docs/cuda.md). */
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_backend.h"

/* Sorts pairs i = t * k + j by expert (stable): order[] lists pairs expert by expert, slot[]
 * is each pair's place in that order, start[] each expert's first place. */
static void sort_pairs(const int32_t *ids, int n, int E, int32_t *order, int32_t *slot,
                       int *start) {
    memset(start, 0, sizeof(int) * ((size_t)E + 1));
    for (int i = 0; i < n; i++)
        start[ids[i] + 1]++;
    for (int e = 0; e < E; e++)
        start[e + 1] += start[e];
    for (int i = 0; i < n; i++) {
        int at = start[ids[i]]++;
        order[at] = i;
        slot[i] = at;
    }
    for (int e = E; e > 0; e--)
        start[e] = start[e - 1];
    start[0] = 0;
}

typedef struct {
    float *xs, *g, *u, *o;
    int32_t *order, *slot;
} moe_bufs;

static int carve(hr_cuda_backend *cb, int n, const hr_moe_weights *w, moe_bufs *b) {
    size_t H = (size_t)w->hidden, I = (size_t)w->inter, rows = (size_t)n;
    size_t floats = rows * (2 * H + 2 * I),
           bytes = floats * sizeof(float) + 2 * rows * sizeof(int32_t) + 64;
    if (!hr_cu_grow(cb, &cb->moe, &cb->moe_bytes, bytes)) return 0;
    b->xs = cb->moe;
    b->o = b->xs + rows * H;
    b->g = b->o + rows * H;
    b->u = b->g + rows * I;
    b->order = (int32_t *)(b->u + rows * I);
    b->slot = b->order + rows;
    return 1;
}

static int host_room(hr_cuda_backend *cb, size_t n) {
    if (n <= cb->moe_host_n) return 1;
    int32_t *p = realloc(cb->moe_host, sizeof(int32_t) * n);
    if (!p) return 0;
    cb->moe_host = p;
    cb->moe_host_n = n;
    return 1;
}

void hr_cu_op_moe_experts(hr_backend *be, float *y, const float *x, const int32_t *ids,
                          const float *weights, int T, int k, const hr_moe_weights *w) {
    hr_cuda_backend *cb = (hr_cuda_backend *)be;
    hr_cu_flush(cb);
    hr_cu_forget_x(cb);
    if (hr_cu_graph_op(cb)) return;
    cb->graphs_off = 1; /* the routing comes back to the host mid-step */
    int n = T * k, E = w->n_experts;
    moe_bufs b;
    if (n <= 0) return;
    int *start = malloc(sizeof(int) * ((size_t)E + 1));
    if (!start || !host_room(cb, 3 * (size_t)n) || !carve(cb, n, w, &b)) {
        free(start);
        hr_cu_fail(cb, hr_errf("cuda moe: out of memory for %d routed rows", n));
        return;
    }
    int32_t *h_ids = cb->moe_host, *h_order = h_ids + n, *h_slot = h_order + n;
    hr_err *err = be->vt->read(be, ids, h_ids, sizeof(int32_t) * (size_t)n);
    for (int i = 0; !err && i < n; i++)
        if (h_ids[i] < 0 || h_ids[i] >= E)
            err = hr_errf("cuda moe: routed expert %d out of range", h_ids[i]);
    if (err) {
        free(start);
        hr_cu_fail(cb, err);
        return;
    }
    sort_pairs(h_ids, n, E, h_order, h_slot, start);
    hr_cu_fail(cb, be->vt->write(be, b.order, h_order, sizeof(int32_t) * 2 * (size_t)n));
    hr_cu_gather_rows(cb->stream, b.xs, x, b.order, k, n, w->hidden);
    long H = w->hidden, I = w->inter;
    for (int e = 0; e < E; e++) {
        int r0 = start[e], rows = start[e + 1] - r0;
        if (!rows) continue;
        hr_cu_op_matmul(be, b.g + r0 * I, b.xs + r0 * H, w->gate[e], NULL, rows);
        hr_cu_op_matmul(be, b.u + r0 * I, b.xs + r0 * H, w->up[e], NULL, rows);
        hr_cu_op_act_mul(be, b.g + r0 * I, b.g + r0 * I, b.u + r0 * I, rows * I, w->act);
        hr_cu_op_matmul(be, b.o + r0 * H, b.g + r0 * I, w->down[e], NULL, rows);
    }
    hr_cu_flush(cb);
    hr_cu_combine_rows(cb->stream, y, b.o, b.slot, weights, T, k, H);
    free(start);
}
