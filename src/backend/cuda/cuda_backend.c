/* The CUDA backend: device memory for weights (uploaded once in their dtype; GGUF matrices but
 * Q4_K / Q5_K in the planar rows of tensor/qplanes.h), activations
 * and the paged KV store, one stream on which every op is enqueued in issue order, the step's
 * metadata (a sampling step's parameters too) uploaded in one transfer from pinned staging,
 * and cuBLAS for large products. This file is the memory side of the vtable; the ops are in
 * cuda_ops.c and cuda_moe.c, the kernels in *.cu (docs/cuda.md). */
#include <stdlib.h>
#include <string.h>

#include <cuda_profiler_api.h>

#include "backend/cuda/cuda_backend.h"

#include "tensor/qplanes.h"

hr_err *hr_cu_check(cudaError_t e, const char *what) {
    return e == cudaSuccess ? NULL : hr_errf("cuda: %s: %s", what, cudaGetErrorString(e));
}

void hr_cu_fail(hr_cuda_backend *cb, hr_err *err) {
    if (!err) return;
    if (cb->sticky)
        hr_err_free(err);
    else
        cb->sticky = err;
}

int hr_cu_grow(hr_cuda_backend *cb, void **buf, size_t *cap, size_t bytes) {
    if (bytes <= *cap) return 1;
    if (*buf) cudaFree(*buf);
    *buf = NULL;
    *cap = 0;
    size_t want = bytes + bytes / 4;
    hr_cu_moved(cb);
    hr_err *err = hr_cu_check(cudaMalloc(buf, want), "scratch");
    if (err) {
        *buf = NULL;
        hr_cu_fail(cb, err);
        return 0;
    }
    *cap = want;
    return 1;
}

int hr_cu_qtype(hr_dtype t) {
    switch (t) {
    case HR_Q8_0: return HR_CU_Q8_0;
    case HR_Q4_0: return HR_CU_Q4_0;
    case HR_Q4_1: return HR_CU_Q4_1;
    case HR_Q5_0: return HR_CU_Q5_0;
    case HR_Q5_1: return HR_CU_Q5_1;
    case HR_Q4_K: return HR_CU_Q4_K;
    case HR_Q5_K: return HR_CU_Q5_K;
    case HR_Q6_K: return HR_CU_Q6_K;
    default: return -1;
    }
}

int hr_cu_dtype(hr_dtype t) {
    switch (t) {
    case HR_F32: return HR_CU_F32;
    case HR_F16: return HR_CU_F16;
    case HR_BF16: return HR_CU_BF16;
    default: return -1;
    }
}

/* The op failure recorded since the last sync point, or a launch / execution error the
 * runtime reports; clears the record. */
static hr_err *take_error(hr_cuda_backend *cb) {
    hr_err *err = cb->sticky;
    cb->sticky = NULL;
    hr_err *launch = hr_cu_check(cudaGetLastError(), "kernel");
    if (err) {
        hr_err_free(launch);
        return err;
    }
    return launch;
}

static void cu_destroy(hr_backend *be) {
    hr_cuda_backend *cb = (hr_cuda_backend *)be;
    hr_cu_flush(cb);
    hr_err_free(hr_cu_graph_end(cb));
    hr_cu_graph_reset(cb);
    if (cb->stream) cudaStreamSynchronize(cb->stream);
    for (int i = 0; i < HR_CU_STAGES; i++) {
        if (cb->stage[i]) cudaFreeHost(cb->stage[i]);
        if (cb->stage_done[i]) cudaEventDestroy(cb->stage_done[i]);
        if (cb->bounce[i]) cudaFreeHost(cb->bounce[i]);
        if (cb->bounce_done[i]) cudaEventDestroy(cb->bounce_done[i]);
    }
    void *dev[] = {cb->meta_dev, cb->xh,      cb->xq,  cb->mmq_ws, cb->partial,
                   cb->moe,      cb->blas_ws, cb->wdq, cb->cat};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
        if (dev[i]) cudaFree(dev[i]);
    free(cb->moe_host);
    hr_cu_arena_destroy(cb);
    if (cb->blas) cublasDestroy(cb->blas);
    if (cb->stream) cudaStreamDestroy(cb->stream);
    hr_err_free(cb->sticky);
    free(cb);
}

static hr_err *cu_alloc(hr_backend *be, size_t bytes, void **out) {
    *out = NULL;
    hr_cu_moved((hr_cuda_backend *)be);
    hr_err *err = hr_cu_check(cudaMalloc(out, bytes ? bytes : 1), "allocating device memory");
    if (err) {
        *out = NULL;
        return hr_err_wrap(err, "%zu MiB: ", bytes >> 20);
    }
    return NULL;
}

static void cu_free(hr_backend *be, void *p) {
    hr_cu_flush((hr_cuda_backend *)be); /* a deferred launch may still read p */
    hr_cu_moved((hr_cuda_backend *)be);
    if (p) cudaFree(p);
}

/* A matrix of a format with planes (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q6_K) in the planar layout
 * (tensor/qplanes.h) the 8-bit-activation products read with 16-byte loads: *out (malloc'd)
 * of *bytes. */
static hr_err *to_planes(const hr_tensor *host, void **out, size_t *bytes) {
    int64_t N = host->shape[0], K = host->shape[1];
    size_t fb = hr_dtype_bytes(host->dtype, K), pb = hr_qplanes_row_bytes(host->dtype, K);
    uint8_t *p = malloc((size_t)N * pb);
    if (!p)
        return hr_errf("out of memory arranging a %s matrix for the GPU",
                       hr_dtype_name(host->dtype));
    for (int64_t n = 0; n < N; n++)
        hr_qplanes_pack(host->dtype, p + n * pb, (const uint8_t *)host->data + n * fb, K);
    *out = p;
    *bytes = (size_t)N * pb;
    return NULL;
}

static hr_err *cu_upload(hr_backend *be, const hr_tensor *host, hr_tensor *dev) {
    hr_cuda_backend *cb = (hr_cuda_backend *)be;
    int q = hr_cu_qtype(host->dtype);
    if (hr_cu_dtype(host->dtype) < 0 && q < 0 && host->dtype != HR_I32)
        return hr_errf("the CUDA backend cannot compute with %s tensors yet",
                       hr_dtype_name(host->dtype));
    if (q >= 0 && host->ndim == 2 && host->shape[0] * host->shape[1] > cb->max_q_elems)
        cb->max_q_elems = host->shape[0] * host->shape[1]; /* its bf16 copy for large batches */
    *dev = *host;
    dev->device = HR_DEV_CUDA;
    void *planar = NULL;
    size_t bytes = hr_tensor_bytes(host);
    if (hr_qplanes_has(host->dtype) && host->ndim == 2) HR_TRY(to_planes(host, &planar, &bytes));
    hr_err *err = hr_cu_arena_alloc(cb, bytes, &dev->data);
    if (!err)
        err = hr_cu_check(
            cudaMemcpy(dev->data, planar ? planar : host->data, bytes, cudaMemcpyHostToDevice),
            "upload");
    free(planar);
    dev->planes = planar != NULL;
    if (err) {
        if (dev->data) hr_cu_arena_free(cb, dev->data);
        dev->data = NULL;
        return err;
    }
    if (host->ndim >= 2 && host->shape[host->ndim - 1] > cb->max_k)
        cb->max_k = host->shape[host->ndim - 1];
    return NULL;
}

static void cu_release(hr_backend *be, hr_tensor *dev) {
    hr_cuda_backend *cb = (hr_cuda_backend *)be;
    hr_cu_flush(cb);
    hr_cu_moved(cb);
    if (dev->data) hr_cu_arena_free(cb, dev->data);
    dev->data = NULL;
}

static void cu_kv_destroy(hr_backend *be, hr_kv_store *kv) {
    hr_cu_moved((hr_cuda_backend *)be);
    void *p[] = {kv->k, kv->v, kv->conv, kv->delta, kv->snap_conv, kv->snap_delta};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        if (p[i]) cudaFree(p[i]);
    free(kv->layer_off);
    kv->k = kv->v = kv->conv = kv->delta = kv->snap_conv = kv->snap_delta = NULL;
    kv->layer_off = NULL;
}

/* A zeroed device buffer of n floats (NULL for n == 0). */
static hr_err *zeroed(size_t bytes, void **out) {
    *out = NULL;
    if (!bytes) return NULL;
    HR_TRY(hr_cu_check(cudaMalloc(out, bytes), "allocating the KV store"));
    return hr_cu_check(cudaMemset(*out, 0, bytes), "clearing the KV store");
}

/* Sizes from kv_store.c (the pool and `hearth fit` count the same bytes). */
static hr_err *kv_alloc(hr_kv_store *kv) {
    size_t n = 0;
    kv->layer_off = malloc(sizeof(size_t) * (size_t)(kv->n_layers > 0 ? kv->n_layers : 1));
    if (!kv->layer_off) return hr_err_oom();
    for (int l = 0; l < kv->n_layers; l++) {
        kv->layer_off[l] = n;
        int hd = kv->layer_head_dim ? kv->layer_head_dim[l] : kv->head_dim;
        n +=
            (size_t)kv->n_blocks * kv->block_size * kv->n_kv_heads * hr_kv_row_bytes(kv->dtype, hd);
    }
    size_t ns = (size_t)kv->n_state_layers * kv->n_state_slots * sizeof(float);
    size_t nsnap = (size_t)kv->n_state_layers * kv->n_snapshots * sizeof(float);
    HR_TRY(zeroed(n, &kv->k));
    HR_TRY(zeroed(n, &kv->v));
    HR_TRY(zeroed(ns * (size_t)kv->conv_floats, &kv->conv));
    HR_TRY(zeroed(ns * (size_t)kv->delta_floats, &kv->delta));
    HR_TRY(zeroed(nsnap * (size_t)kv->conv_floats, &kv->snap_conv));
    return zeroed(nsnap * (size_t)kv->delta_floats, &kv->snap_delta);
}

static hr_err *cu_kv_create(hr_backend *be, hr_kv_store *kv) {
    if (kv->dtype != HR_BF16 && kv->dtype != HR_F32)
        return hr_errf("the CUDA KV store holds BF16 or F32, not %s", hr_dtype_name(kv->dtype));
    kv->k = kv->v = kv->conv = kv->delta = kv->snap_conv = kv->snap_delta = NULL;
    hr_cu_moved((hr_cuda_backend *)be);
    hr_err *err = kv_alloc(kv);
    if (err)
        cu_kv_destroy(be, kv);
    else
        kv->bytes = hr_kv_store_bytes(kv);
    return err;
}

static hr_err *cu_sync(hr_backend *be) {
    hr_cuda_backend *cb = (hr_cuda_backend *)be;
    hr_cu_flush(cb);
    hr_cu_fail(cb, hr_cu_graph_end(cb));
    hr_err *err = hr_cu_check(cudaStreamSynchronize(cb->stream), "running the step");
    hr_err *op = take_error(cb);
    if (err) {
        hr_err_free(op);
        return err;
    }
    return op;
}

/* Small reads copy straight into dst; large ones in HR_CU_BOUNCE chunks through two pinned
 * buffers, the device filling one while the host empties the other. */
static hr_err *read_bounced(hr_cuda_backend *cb, const char *src, char *dst, size_t bytes) {
    size_t n_chunks = (bytes + HR_CU_BOUNCE - 1) / HR_CU_BOUNCE;
    for (size_t i = 0; i <= n_chunks; i++) {
        if (i < n_chunks) {
            size_t n =
                bytes - i * HR_CU_BOUNCE < HR_CU_BOUNCE ? bytes - i * HR_CU_BOUNCE : HR_CU_BOUNCE;
            HR_TRY(hr_cu_check(cudaMemcpyAsync(cb->bounce[i % 2], src + i * HR_CU_BOUNCE, n,
                                               cudaMemcpyDeviceToHost, cb->stream),
                               "read"));
            HR_TRY(hr_cu_check(cudaEventRecord(cb->bounce_done[i % 2], cb->stream), "read"));
        }
        if (i > 0) {
            size_t j = i - 1, n = bytes - j * HR_CU_BOUNCE < HR_CU_BOUNCE ? bytes - j * HR_CU_BOUNCE
                                                                          : HR_CU_BOUNCE;
            HR_TRY(hr_cu_check(cudaEventSynchronize(cb->bounce_done[j % 2]), "read"));
            memcpy(dst + j * HR_CU_BOUNCE, cb->bounce[j % 2], n);
        }
    }
    return NULL;
}

static hr_err *cu_read(hr_backend *be, const void *src, void *dst, size_t bytes) {
    hr_cuda_backend *cb = (hr_cuda_backend *)be;
    hr_cu_flush(cb);
    hr_cu_fail(cb, hr_cu_graph_end(cb));
    if (bytes > HR_CU_BOUNCE / 4)
        hr_cu_fail(cb, read_bounced(cb, src, dst, bytes));
    else
        hr_cu_fail(cb,
                   hr_cu_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, cb->stream),
                               "read"));
    return cu_sync(be);
}

/* Pageable host memory: the runtime has staged src when cudaMemcpyAsync returns. */
static hr_err *cu_write(hr_backend *be, void *dst, const void *src, size_t bytes) {
    hr_cuda_backend *cb = (hr_cuda_backend *)be;
    hr_cu_flush(cb); /* deferred launches come first in stream order */
    hr_cu_forget_x(cb);
    return hr_cu_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cb->stream),
                       "write");
}

static hr_err *cu_mem_info(hr_backend *be, size_t *free_bytes, size_t *total_bytes) {
    return hr_cu_check(cudaMemGetInfo(free_bytes, total_bytes), "memory query");
}

/* Packs the step's arrays into staging slot i (grown to bytes) once its last upload is done. */
static hr_err *stage_slot(hr_cuda_backend *cb, size_t bytes, void **out) {
    int i = cb->stage_next;
    cb->stage_next = (i + 1) % HR_CU_STAGES;
    HR_TRY(hr_cu_check(cudaEventSynchronize(cb->stage_done[i]), "staging"));
    if (bytes > cb->stage_bytes) { /* both slots grow together */
        for (int j = 0; j < HR_CU_STAGES; j++) {
            HR_TRY(hr_cu_check(cudaEventSynchronize(cb->stage_done[j]), "staging"));
            if (cb->stage[j]) cudaFreeHost(cb->stage[j]);
            cb->stage[j] = NULL;
        }
        cb->stage_bytes = 0;
        size_t want = bytes * 2;
        for (int j = 0; j < HR_CU_STAGES; j++)
            HR_TRY(hr_cu_check(cudaHostAlloc(&cb->stage[j], want, cudaHostAllocDefault),
                               "pinned staging"));
        cb->stage_bytes = want;
    }
    *out = cb->stage[i];
    return NULL;
}

static int pow2_at_least(int n, int floor) {
    int p = floor;
    while (p < n)
        p *= 2;
    return p;
}

/* The step's shape as the kernels see it: the block table's width and the context rounded up
 * to powers of two, so decode steps share a shape (and a CUDA graph) for many tokens. */
static void step_shape(const hr_step_meta *m, int *width, int *max_len) {
    int n = 0;
    for (int t = 0; t < m->n_tokens; t++)
        if (m->pos[t] + 1 > n) n = m->pos[t] + 1;
    *max_len = pow2_at_least(n, 128);
    *width = pow2_at_least(m->max_blocks, 1);
}

/* Prefill tiles of the step (pairs of first token and count), written to out when non-NULL;
 * returns how many. */
static int tiles(const hr_step_meta *m, int32_t *out) {
    int n = 0;
    for (int r = 0; r < m->n_rows; r++) {
        int t0 = m->q_start[r], t1 = m->q_start[r + 1];
        if (t1 - t0 < HR_CU_TILE_MIN) continue;
        for (int t = t0; t < t1; t += HR_CU_TILE, n++)
            if (out) out[2 * n] = t, out[2 * n + 1] = t1 - t < HR_CU_TILE ? t1 - t : HR_CU_TILE;
    }
    return n;
}

/* tokens, pos, row, q_start, the block table re-laid at the padded width, state slots, the
 * prefill tiles */
static void pack(const hr_step_meta *m, int width, int32_t *st) {
    size_t nt = (size_t)m->n_tokens, nr = (size_t)m->n_rows;
    memcpy(st, m->tokens, nt * 4);
    memcpy(st + nt, m->pos, nt * 4);
    memcpy(st + 2 * nt, m->row, nt * 4);
    memcpy(st + 3 * nt, m->q_start, (nr + 1) * 4);
    int32_t *bt = st + 3 * nt + nr + 1;
    for (size_t r = 0; r < nr; r++) {
        memcpy(bt + r * width, m->block_table + r * m->max_blocks, (size_t)m->max_blocks * 4);
        for (int b = m->max_blocks; b < width; b++)
            bt[r * width + b] = -1;
    }
    memcpy(bt + nr * width, m->state_slots, nr * 4);
    tiles(m, bt + nr * width + nr);
}

/* Where the sample op's rows and edits sit in the packed metadata: after the int32 arrays,
 * 16-byte aligned (the rows hold a double); the token masks follow the edits. Returns the
 * total bytes. Only the rows' and edits' offsets are baked into a captured step (they depend
 * on the step's shape alone), so a row finds its mask by a word offset from the edits. */
static size_t sample_layout(const hr_step_meta *m, size_t int_bytes, size_t *rows_off,
                            size_t *edits_off) {
    const hr_sample_step *sm = m->sample;
    *rows_off = (int_bytes + 15) / 16 * 16;
    *edits_off = *rows_off + (sm ? (size_t)sm->n_rows * sizeof(hr_sample_row) : 0);
    if (!sm) return *edits_off;
    return *edits_off + (size_t)sm->n_edits * sizeof(hr_logit_edit) +
           (size_t)sm->n_masks * (size_t)sm->mask_words * sizeof(uint32_t);
}

/* Packs the rows, edits and masks; a masked row's mask field becomes 1 + its mask's offset in
 * words from the edits (sample.cu reads it so). */
static void pack_sample(const hr_step_meta *m, char *st, size_t rows_off, size_t edits_off) {
    const hr_sample_step *sm = m->sample;
    if (!sm) return;
    hr_sample_row *rows = (hr_sample_row *)(st + rows_off);
    if (sm->n_rows) memcpy(rows, sm->rows, (size_t)sm->n_rows * sizeof(hr_sample_row));
    size_t edit_words = (size_t)sm->n_edits * sizeof(hr_logit_edit) / sizeof(uint32_t);
    for (int r = 0; r < sm->n_rows; r++)
        if (rows[r].mask > 0)
            rows[r].mask =
                1 + (int32_t)(edit_words + (size_t)(rows[r].mask - 1) * (size_t)sm->mask_words);
    if (sm->n_edits) memcpy(st + edits_off, sm->edits, (size_t)sm->n_edits * sizeof(hr_logit_edit));
    if (sm->n_masks)
        memcpy(st + edits_off + edit_words * sizeof(uint32_t), sm->masks,
               (size_t)sm->n_masks * (size_t)sm->mask_words * sizeof(uint32_t));
}

enum { PROFILED_STEP = 8 }; /* past the eager and captured steps of the rows' graph */

/* HEARTH_CUDA_PROFILE: the profiler's range is one decode step of the rows asked for. */
static void profile_range(hr_cuda_backend *cb, const hr_step_meta *m) {
    if (cb->profile_seen == PROFILED_STEP) {
        cudaProfilerStop();
        cb->profile_seen++;
    } else if (cb->profile_seen < PROFILED_STEP && m->n_tokens == m->n_rows &&
               m->n_rows == cb->profile_rows && ++cb->profile_seen == PROFILED_STEP) {
        cudaProfilerStart();
    }
}

static hr_err *cu_step_begin(hr_backend *be, const hr_step_meta *m) {
    hr_cuda_backend *cb = (hr_cuda_backend *)be;
    hr_cu_flush(cb);
    hr_cu_fail(cb, hr_cu_graph_end(cb)); /* a step that never synced */
    HR_TRY(take_error(cb));
    if (cb->profile_rows) profile_range(cb, m);
    int width, max_len;
    step_shape(m, &width, &max_len);
    size_t nt = (size_t)m->n_tokens, nr = (size_t)m->n_rows, cells = nr * (size_t)width;
    int n_tiles = tiles(m, NULL);
    size_t rows_off, edits_off;
    size_t bytes =
        sample_layout(m, (3 * nt + (nr + 1) + cells + nr + 2 * (size_t)n_tiles) * sizeof(int32_t),
                      &rows_off, &edits_off);
    int32_t *st;
    int slot = cb->stage_next;
    if (m->sample && m->sample->n_masks && !hr_sample_masks_fit(m->sample, m->sample->n_rows, 0))
        return hr_errf("cuda step: a sample row names a token mask the step does not have");
    HR_TRY(stage_slot(cb, bytes, (void **)&st));
    pack(m, width, st);
    pack_sample(m, (char *)st, rows_off, edits_off);
    if (!hr_cu_grow(cb, &cb->meta_dev, &cb->meta_dev_bytes, bytes)) return take_error(cb);
    if (m->n_tokens > HR_CU_GEMV_MAX_T &&
        (!hr_cu_grow(cb, &cb->xh, &cb->xh_bytes, 2 * nt * (size_t)cb->max_k * 2) ||
         !hr_cu_grow(cb, &cb->wdq, &cb->wdq_bytes, (size_t)cb->max_q_elems * 2)))
        return take_error(cb);
    if (m->n_tokens <= HR_CU_MMQ_MAX_T && cb->max_q_elems &&
        !hr_cu_grow(cb, &cb->xq, &cb->xq_bytes, hr_cu_xq_bytes(m->n_tokens, cb->max_k)))
        return take_error(cb);
    int split_products =
        (m->n_tokens > HR_CU_MMVQ_MAX_T && m->n_tokens <= HR_CU_MMF_MAX_T && cb->max_q_elems) ||
        (m->n_tokens > HR_CU_GEMV_MAX_T && m->n_tokens <= cb->mmh_max_t);
    if (split_products &&
        !hr_cu_grow(cb, &cb->mmq_ws, &cb->mmq_ws_bytes, hr_cu_mmq_ws_bytes(m->n_tokens)))
        return take_error(cb);
    HR_TRY(hr_cu_check(cudaMemcpyAsync(cb->meta_dev, st, bytes, cudaMemcpyHostToDevice, cb->stream),
                       "step metadata"));
    HR_TRY(hr_cu_check(cudaEventRecord(cb->stage_done[slot], cb->stream), "staging"));
    const int32_t *d = cb->meta_dev;
    cb->meta =
        (hr_cu_meta){.n_tokens = m->n_tokens,
                     .n_rows = m->n_rows,
                     .max_blocks = width,
                     .max_len = max_len,
                     .tokens = d,
                     .pos = d + nt,
                     .row = d + 2 * nt,
                     .q_start = d + 3 * nt,
                     .block_table = d + 3 * nt + nr + 1,
                     .state_slots = d + 3 * nt + nr + 1 + cells,
                     .n_tiles = n_tiles,
                     .tiles = d + 3 * nt + nr + 1 + cells + nr,
                     .n_sample_rows = m->sample ? m->sample->n_rows : 0,
                     .sample_rows = m->sample ? (const void *)((const char *)d + rows_off) : NULL,
                     .sample_edits = (const void *)((const char *)d + edits_off),
                     .sample_mask_words = m->sample ? m->sample->mask_words : 0};
    hr_cu_forget_x(cb);
    cb->head = m->head;
    cb->n_logit_rows = m->n_logit_rows;
    hr_cu_graph_begin(cb, m->n_tokens == m->n_rows);
    return NULL;
}

static const hr_backend_vt cuda_vt = {
    .name = "cuda",
    .destroy = cu_destroy,
    .alloc = cu_alloc,
    .free = cu_free,
    .upload = cu_upload,
    .release = cu_release,
    .kv_create = cu_kv_create,
    .kv_destroy = cu_kv_destroy,
    .read = cu_read,
    .write = cu_write,
    .sync = cu_sync,
    .mem_info = cu_mem_info,
    .step_begin = cu_step_begin,
    .matmul = hr_cu_op_matmul,
    .embed = hr_cu_op_embed,
    .rmsnorm = hr_cu_op_rmsnorm,
    .rope = hr_cu_op_rope,
    .kv_write = hr_cu_op_kv_write,
    .attention = hr_cu_op_attention,
    .act_mul = hr_cu_op_act_mul,
    .add = hr_cu_op_add,
    .copy = hr_cu_op_copy,
    .scale = hr_cu_op_scale,
    .softcap = hr_cu_op_softcap,
    .copy2d = hr_cu_op_copy2d,
    .argmax = hr_cu_op_argmax,
    .sample = hr_cu_op_sample,
    .moe_route = hr_cu_op_moe_route,
    .moe_experts = hr_cu_op_moe_experts,
    .mul_gather = hr_cu_op_mul_gather,
    .sigmoid_mul = hr_cu_op_sigmoid_mul,
    .conv1d = hr_cu_op_conv1d,
    .gated_delta = hr_cu_op_gated_delta,
    .state_copy = hr_cu_op_state_copy,
};

int hr_backend_cuda_devices(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear it: the runtime keeps the last error per thread */
        return 0;
    }
    return n;
}

/* *out = the row count in environment variable name (0 .. most), or dflt where it is unset. */
static hr_err *env_rows(const char *name, int dflt, int most, int *out) {
    const char *s = getenv(name);
    *out = dflt;
    if (!s) return NULL;
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 0 || v > most)
        return hr_errf("cuda: %s must be a row count from 0 to %d, not '%s'", name, most, s);
    *out = (int)v;
    return NULL;
}

/* HEARTH_CUDA_DTC: the decode attention's key tile and stages (kernels.h). */
static hr_err *dtc_tile(const char *s) {
    static const char *const names[] = {"32x2", "16x2", "16x3", "16x4", "auto"};
    hr_cu_dtc_tile = HR_CU_DTC_AUTO;
    if (!s) return NULL;
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (!strcmp(s, names[i])) {
            hr_cu_dtc_tile = i;
            return NULL;
        }
    return hr_errf("cuda: HEARTH_CUDA_DTC must be auto, 32x2, 16x2, 16x3 or 16x4, not '%s'", s);
}

static hr_err *init(hr_cuda_backend *cb) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        cudaGetLastError();
        const char *why =
            e == cudaErrorInsufficientDriver
                ? "no NVIDIA driver is loaded, or it is older than this build's CUDA runtime"
            : e != cudaSuccess ? cudaGetErrorString(e)
                               : "the driver reports no devices";
        return hr_errf("device cuda: no CUDA GPU is visible (%s)", why);
    }
    HR_TRY(hr_cu_check(cudaSetDevice(cb->device), "selecting the GPU"));
    HR_TRY(hr_cu_check(cudaStreamCreateWithFlags(&cb->stream, cudaStreamNonBlocking), "stream"));
    for (int i = 0; i < HR_CU_STAGES; i++) {
        HR_TRY(hr_cu_check(cudaEventCreateWithFlags(&cb->stage_done[i], cudaEventDisableTiming),
                           "event"));
        HR_TRY(hr_cu_check(cudaEventCreateWithFlags(&cb->bounce_done[i], cudaEventDisableTiming),
                           "event"));
        HR_TRY(hr_cu_check(cudaHostAlloc(&cb->bounce[i], HR_CU_BOUNCE, cudaHostAllocDefault),
                           "pinned bounce buffer"));
    }
    if (cublasCreate(&cb->blas) != CUBLAS_STATUS_SUCCESS) {
        cb->blas = NULL;
        return hr_errf("cuda: cannot create the cuBLAS handle");
    }
    if (cublasSetStream(cb->blas, cb->stream) != CUBLAS_STATUS_SUCCESS)
        return hr_errf("cuda: cannot bind cuBLAS to the stream");
    /* a workspace of its own, so cuBLAS allocates nothing inside a captured graph */
    HR_TRY(hr_cu_check(cudaMalloc(&cb->blas_ws, HR_CU_BLAS_WORKSPACE), "cuBLAS workspace"));
    if (cublasSetWorkspace(cb->blas, cb->blas_ws, HR_CU_BLAS_WORKSPACE) != CUBLAS_STATUS_SUCCESS)
        return hr_errf("cuda: cannot give cuBLAS its workspace");
    const char *g = getenv("HEARTH_CUDA_GRAPHS");
    cb->graphs_off = g && !strcmp(g, "0");
    const char *pdl = getenv("HEARTH_CUDA_PDL");
    hr_cu_pdl = !(pdl && !strcmp(pdl, "0"));
    const char *fo = getenv("HEARTH_CUDA_FOLD");
    cb->fold = !(fo && !strcmp(fo, "0"));
    const char *gv = getenv("HEARTH_CUDA_GEMV");
    hr_cu_gemv_split = !(gv && !strcmp(gv, "warp"));
    HR_TRY(dtc_tile(getenv("HEARTH_CUDA_DTC")));
    const char *qg = getenv("HEARTH_CUDA_QGEMV");
    cb->qgemv_f32 = qg && !strcmp(qg, "f32");
    const char *mq = getenv("HEARTH_CUDA_MMQ");
    cb->mmq_off = mq && !strcmp(mq, "0");
    const char *mf = getenv("HEARTH_CUDA_MMF");
    cb->mmf_off = mf && !strcmp(mf, "0");
    HR_TRY(env_rows("HEARTH_CUDA_CAT", HR_CU_CAT_MIN_T, 1 << 20, &cb->cat_min_t));
    HR_TRY(env_rows("HEARTH_CUDA_MMH", HR_CU_MMH_MAX_T, HR_CU_MMH_MAX_T, &cb->mmh_max_t));
    HR_TRY(env_rows("HEARTH_CUDA_MMW_MIN", HR_CU_MMW_MIN_T, 1 << 20, &cb->mmw_min_t));
    HR_TRY(env_rows("HEARTH_CUDA_MMW", 0, HR_CU_MMW_MAX_T, &cb->mmw_max_t));
    if (!hr_cu_mmw_ok()) cb->mmw_max_t = 0;
    return env_rows("HEARTH_CUDA_PROFILE", 0, 1 << 20, &cb->profile_rows);
}

hr_err *hr_backend_cuda_create(const hr_backend_options *o, hr_backend **out) {
    *out = NULL;
    hr_cuda_backend *cb = calloc(1, sizeof *cb);
    if (!cb) return hr_err_oom();
    cb->base.vt = &cuda_vt;
    cb->bf16_products = o->cpu.compute_bf16; /* the compute mode applies to every device */
    hr_err *err = init(cb);
    if (err) {
        cu_destroy(&cb->base);
        return err;
    }
    *out = &cb->base;
    return NULL;
}
