/* The CPU backend: host memory, weights copied into 2 MiB pages (Q4_0 / Q8_0 / Q4_K matrices
 * repacked into interleaved rows on the way, qrepack.h, and bf16 / f16 ones into 4-row tiles
 * on AVX2, wtile16.h) or used in place (mmapped), ops run
 * immediately on the thread pool with kernels picked by cpuid. Matmul and attention are in their
 * own files; the cheap elementwise ops are here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/qrepack.h"
#include "backend/cpu/wtile16.h"
#include "tensor/mlx_quant.h"
#include "tensor/quant.h"
#include "tensor/tile16.h"

static void cpu_destroy(hr_backend *be) {
    hr_cpu_backend *cb = (hr_cpu_backend *)be;
    hr_pool_destroy(cb->pool);
    free(cb->scratch);
    free(cb->sample_probs);
    free(cb->sample_idx);
    free(cb);
}

static hr_err *cpu_alloc(hr_backend *be, size_t bytes, void **out) {
    *out = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    return *out ? NULL
                : hr_errc(HR_E_OOM, "out of memory: cannot allocate %zu bytes of host memory",
                          bytes);
}

static void cpu_free(hr_backend *be, void *p) { free(p); }

/* Large tensors are copied into 2 MiB-page memory: decode streams every weight once per
 * token and 4 KiB pages of a file mapping cost ~20% of it in TLB misses (perf-notes.md).
 * Smaller ones stay where they are, except weights the matmul repacks (qrepack.h, wtile16.h),
 * which are copied into 4 KiB pages: the row tiles are faster than the row dots at any size. */
enum { HUGE_PAGE = 2u << 20, SMALL_PAGE = 4096, COPY_MIN = 1u << 20 };

/* Bytes a copied tensor of `bytes` maps. */
static size_t mapped_bytes(size_t bytes) {
    size_t page = bytes >= COPY_MIN ? HUGE_PAGE : SMALL_PAGE;
    return (bytes + page - 1) / page * page;
}

/* An MLX-quantized weight needs its companions on this backend and whole groups per row. */
static hr_err *check_mlx(const hr_tensor *w, int64_t row) {
    const hr_tensor *s = w->scales, *b = w->biases;
    if (!s || !b || s->device != HR_DEV_CPU || b->device != HR_DEV_CPU || w->ndim != 2 ||
        !hr_mlx_group_ok(w->group_size) || row % w->group_size)
        return hr_errf("an %s tensor needs 2-D rows of whole groups and its scales and biases "
                       "uploaded first",
                       hr_dtype_name(w->dtype));
    return NULL;
}

static hr_err *cpu_upload(hr_backend *be, const hr_tensor *host, hr_tensor *dev) {
    hr_dtype t = host->dtype;
    int quant = hr_dtype_get(t)->quantized;
    if (t != HR_F32 && t != HR_BF16 && t != HR_F16 && t != HR_I32 && !quant)
        return hr_errf("the CPU backend cannot compute with %s tensors yet", hr_dtype_name(t));
    int64_t row = host->ndim ? host->shape[host->ndim - 1] : 1;
    if (hr_mlx_bits(t)) HR_TRY(check_mlx(host, row));
    if (row % hr_dtype_get(t)->block)
        return hr_errf(
            "a %s tensor's rows of %lld elements are not a multiple of its %d-element block",
            hr_dtype_name(t), (long long)row, hr_dtype_get(t)->block);
    *dev = *host;
    dev->device = HR_DEV_CPU;
    dev->row_tile = 0;
    hr_cpu_backend *cb = (hr_cpu_backend *)be;
    if (quant) cb->has_quant = 1;
    if ((t == HR_BF16 || quant) && row > cb->max_k) cb->max_k = row;
    size_t bytes = hr_tensor_bytes(host);
    int tile16 = hr_wtile16_fits(t, host->ndim, host->shape),
        repack = tile16 || hr_qrepack_fits(t, host->ndim, host->shape[0]);
    if (cb->opt.weights_in_place || (bytes < COPY_MIN && !repack)) return NULL;
    size_t rounded = mapped_bytes(bytes);
    void *p = mmap(NULL, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return hr_errc(HR_E_OOM, "out of memory: cannot allocate %zu MiB for weights", bytes >> 20);
    if (bytes >= COPY_MIN) madvise(p, rounded, MADV_HUGEPAGE);
    if (tile16) {
        hr_wtile16_pack(cb->pool, host->data, p, host->shape[0], row);
        dev->row_tile = HR_TILE16_ROWS;
    } else if (repack) {
        hr_qrepack(cb->pool, t, host->data, p, host->shape[0], row);
        dev->row_tile = HR_QROWS;
    } else {
        memcpy(p, host->data, bytes);
    }
    dev->data = p;
    /* drop a large source's pages from this process (the page cache keeps them); a small
     * one's are left, as they were when small tensors stayed in place */
    if (bytes < COPY_MIN) return NULL;
    uintptr_t b = ((uintptr_t)host->data + 4095) & ~(uintptr_t)4095;
    uintptr_t e = ((uintptr_t)host->data + bytes) & ~(uintptr_t)4095;
    if (e > b) madvise((void *)b, e - b, MADV_DONTNEED);
    return NULL;
}

static void cpu_release(hr_backend *be, hr_tensor *dev) {
    size_t bytes = hr_tensor_bytes(dev);
    if (((hr_cpu_backend *)be)->opt.weights_in_place || (bytes < COPY_MIN && !dev->row_tile))
        return;
    munmap(dev->data, mapped_bytes(bytes));
    dev->data = NULL;
}

static void cpu_kv_destroy(hr_backend *be, hr_kv_store *kv) {
    free(kv->k);
    free(kv->v);
    free(kv->layer_off);
    free(kv->conv);
    free(kv->delta);
    free(kv->snap_conv);
    free(kv->snap_delta);
    kv->k = kv->v = kv->conv = kv->delta = kv->snap_conv = kv->snap_delta = NULL;
    kv->layer_off = NULL;
}

/* KV of the attention layers (per-layer regions of hr_kv_row_bytes rows) plus the
 * recurrent state of the linear-attention layers (none for dense models): exactly
 * hr_kv_store_bytes in all. */
static hr_err *cpu_kv_create(hr_backend *be, hr_kv_store *kv) {
    if (kv->dtype != HR_F32 && kv->dtype != HR_BF16 && kv->dtype != HR_F16 &&
        kv->dtype != HR_Q8_0 && kv->dtype != HR_Q4_0)
        return hr_errf("the CPU KV store holds f32, bf16, f16, q8_0 or q4_0, not %s",
                       hr_dtype_name(kv->dtype));
    HR_TRY(hr_kv_dtype_check(kv));
    kv->k = kv->v = kv->conv = kv->delta = kv->snap_conv = kv->snap_delta = NULL;
    kv->bytes = 0;
    size_t ns = (size_t)kv->n_state_layers * kv->n_state_slots;
    size_t nsnap = (size_t)kv->n_state_layers * kv->n_snapshots;
    if (ns) {
        kv->conv = calloc(ns * (size_t)kv->conv_floats, sizeof(float));
        kv->delta = calloc(ns * (size_t)kv->delta_floats, sizeof(float));
        if (nsnap) {
            kv->snap_conv = calloc(nsnap * (size_t)kv->conv_floats, sizeof(float));
            kv->snap_delta = calloc(nsnap * (size_t)kv->delta_floats, sizeof(float));
        }
        if (!kv->conv || !kv->delta || (nsnap && (!kv->snap_conv || !kv->snap_delta))) {
            kv->layer_off = NULL;
            cpu_kv_destroy(be, kv);
            return hr_errc(
                HR_E_OOM, "out of memory: cannot allocate %zu MiB for the recurrent state",
                (ns + nsnap) * (size_t)(kv->conv_floats + kv->delta_floats) * sizeof(float) >> 20);
        }
        kv->bytes += (ns + nsnap) * (size_t)(kv->conv_floats + kv->delta_floats) * sizeof(float);
    }
    kv->layer_off = malloc(sizeof(size_t) * (size_t)kv->n_layers);
    size_t n = 0;
    for (int l = 0; kv->layer_off && l < kv->n_layers; l++) {
        kv->layer_off[l] = n;
        n += (size_t)kv->n_blocks * kv->block_size * kv->n_kv_heads *
             hr_kv_row_bytes(kv->dtype, hr_kv_head_dim(kv, l));
    }
    kv->k = calloc(n + 1, 1);
    kv->v = calloc(n + 1, 1);
    if (!kv->k || !kv->v || !kv->layer_off) {
        cpu_kv_destroy(be, kv);
        return hr_errc(HR_E_OOM,
                       "out of memory: cannot allocate %zu bytes (%zu MiB) for the KV cache", 2 * n,
                       2 * n >> 20);
    }
    kv->bytes += 2 * n;
    return NULL;
}

/* One state layer's region of n floats per slot: slot i of layer l at (l * count + i) * n. */
static float *state_at(void *base, int layer, int count, int i, long n) {
    return (float *)base + ((long)layer * count + i) * n;
}

static void cpu_state_copy(hr_backend *be, hr_kv_store *kv, int slot, int snap, int restore) {
    (void)be;
    for (int l = 0; l < kv->n_state_layers; l++) {
        float *sc = state_at(kv->conv, l, kv->n_state_slots, slot, kv->conv_floats);
        float *sd = state_at(kv->delta, l, kv->n_state_slots, slot, kv->delta_floats);
        float *pc = state_at(kv->snap_conv, l, kv->n_snapshots, snap, kv->conv_floats);
        float *pd = state_at(kv->snap_delta, l, kv->n_snapshots, snap, kv->delta_floats);
        size_t nc = sizeof(float) * (size_t)kv->conv_floats;
        size_t nd = sizeof(float) * (size_t)kv->delta_floats;
        memcpy(restore ? sc : pc, restore ? pc : sc, nc);
        memcpy(restore ? sd : pd, restore ? pd : sd, nd);
    }
}

static hr_err *cpu_read(hr_backend *be, const void *src, void *dst, size_t bytes) {
    memcpy(dst, src, bytes);
    return NULL;
}

static hr_err *cpu_write(hr_backend *be, void *dst, const void *src, size_t bytes) {
    memcpy(dst, src, bytes);
    return NULL;
}

static hr_err *cpu_sync(hr_backend *be) { return NULL; }

int hr_cpu_meminfo_parse(const char *text, size_t *avail, size_t *total) {
    unsigned long long a = 0, t = 0;
    int got = 0;
    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        if (sscanf(l, "MemAvailable: %llu kB", &a) == 1)
            got |= 1;
        else if (sscanf(l, "MemTotal: %llu kB", &t) == 1)
            got |= 2;
    }
    if (got != 3) return 0;
    *avail = (size_t)a << 10;
    *total = (size_t)t << 10;
    return 1;
}

/* Host RAM from /proc/meminfo: MemAvailable counts reclaimable page cache (e.g. a model's
 * file pages), which sysconf's free pages do not. Without /proc: sysconf. */
static hr_err *cpu_mem_info(hr_backend *be, size_t *free_bytes, size_t *total_bytes) {
    char buf[4096];
    FILE *f = fopen("/proc/meminfo", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    if (hr_cpu_meminfo_parse(buf, free_bytes, total_bytes)) return NULL;
    long avail = sysconf(_SC_AVPHYS_PAGES), phys = sysconf(_SC_PHYS_PAGES),
         page = sysconf(_SC_PAGESIZE);
    if (avail <= 0 || phys <= 0 || page <= 0)
        return hr_errf("cannot read this machine's memory size");
    *free_bytes = (size_t)avail * (size_t)page;
    *total_bytes = (size_t)phys * (size_t)page;
    return NULL;
}

static hr_err *cpu_step_begin(hr_backend *be, const hr_step_meta *meta) {
    hr_cpu_backend *cb = (hr_cpu_backend *)be;
    cb->meta = *meta;
    if ((cb->opt.compute_bf16 || cb->has_quant) && !hr_cpu_matmul_reserve(cb, meta->n_tokens))
        return hr_errf("cannot allocate the matmul scratch for %d tokens", meta->n_tokens);
    return NULL;
}

static float elem_f32(const hr_tensor *t, long i) {
    i = hr_tensor_elem_off(t, i);
    switch (t->dtype) {
    case HR_BF16: return hr_bf16_to_f32(((const uint16_t *)t->data)[i]);
    case HR_F16: return hr_f16_to_f32(((const uint16_t *)t->data)[i]);
    default: return ((const float *)t->data)[i];
    }
}

/* An MLX tensor decodes element ranges of its rows (tensor/mlx_quant.h). */
static void mlx_to_f32(float *y, const hr_tensor *t, long off, long n) {
    long cols = (long)t->shape[1];
    for (long i = off; i < off + n;) {
        long r = i / cols, c = i % cols, len = cols - c < off + n - i ? cols - c : off + n - i;
        hr_mlx_dequant(t, r, c, len, y + (i - off));
        i += len;
    }
}

/* A GGUF tensor decodes whole blocks, keeping the elements asked for (a repacked one's
 * blocks read back in their GGUF form first). */
static void quant_to_f32(float *y, const hr_tensor *t, long off, long n) {
    const hr_dtype_info *info = hr_dtype_get(t->dtype);
    float buf[256]; /* the largest block */
    uint8_t block[256];
    long per_row = t->ndim == 2 ? (long)t->shape[1] / info->block : 0;
    for (long i = off; i < off + n;) {
        long blk = i / info->block, b0 = blk * info->block, e = b0 + info->block;
        if (e > off + n) e = off + n;
        const void *src = (const char *)t->data + blk * info->block_bytes;
        if (t->row_tile) {
            hr_qrepack_block(t, blk / per_row, blk % per_row, block);
            src = block;
        }
        hr_dequant_row(t->dtype, src, buf, info->block);
        memcpy(y + (i - off), buf + (i - b0), sizeof(float) * (size_t)(e - i));
        i = e;
    }
}

void hr_cpu_to_f32(float *y, const hr_tensor *t, long off, long n) {
    if (hr_mlx_bits(t->dtype)) {
        mlx_to_f32(y, t, off, n);
        return;
    }
    if (hr_dtype_get(t->dtype)->quantized) {
        quant_to_f32(y, t, off, n);
        return;
    }
    for (long i = 0; i < n; i++)
        y[i] = elem_f32(t, off + i);
}

static void cpu_embed(hr_backend *be, float *y, const hr_tensor *table, float scale) {
    const hr_step_meta *m = &((hr_cpu_backend *)be)->meta;
    long D = table->shape[1];
    for (int t = 0; t < m->n_tokens; t++) {
        hr_cpu_to_f32(y + t * D, table, (long)m->tokens[t] * D, D);
        if (scale != 1.0f)
            for (long i = 0; i < D; i++)
                y[t * D + i] *= scale;
    }
}

static void cpu_rmsnorm(hr_backend *be, float *y, const float *x, const hr_tensor *w, int rows,
                        int dim, float eps, int one_plus) {
    enum { CHUNK = 256 };
    float wf[CHUNK];
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (long)r * dim;
        float *yr = y + (long)r * dim;
        float ss = 0;
        for (int i = 0; i < dim; i++)
            ss += xr[i] * xr[i];
        float inv = 1.0f / sqrtf(ss / (float)dim + eps);
        for (int c = 0; c < dim; c += CHUNK) {
            int n = dim - c < CHUNK ? dim - c : CHUNK;
            if (w)
                hr_cpu_to_f32(wf, w, c, n);
            else
                for (int i = 0; i < n; i++)
                    wf[i] = one_plus ? 0.0f : 1.0f;
            for (int i = 0; i < n; i++)
                yr[c + i] = xr[c + i] * inv * (wf[i] + (float)one_plus);
        }
    }
}

static void cpu_rope(hr_backend *be, float *x, int n_heads, int head_dim, int rot_dim,
                     const hr_tensor *inv_freq) {
    const hr_step_meta *m = &((hr_cpu_backend *)be)->meta;
    const float *f = inv_freq->data;
    int half = rot_dim / 2;
    for (int t = 0; t < m->n_tokens; t++) {
        float *xt = x + (long)t * n_heads * head_dim;
        for (int i = 0; i < half; i++) {
            float ang = (float)m->pos[t] * f[i];
            float c = cosf(ang), s = sinf(ang);
            for (int h = 0; h < n_heads; h++) {
                float *xh = xt + h * head_dim;
                float x1 = xh[i], x2 = xh[i + half];
                xh[i] = x1 * c - x2 * s;
                xh[i + half] = x2 * c + x1 * s;
            }
        }
    }
}

static void cpu_kv_write(hr_backend *be, hr_kv_store *kv, int layer, const float *k,
                         const float *v) {
    const hr_step_meta *m = &((hr_cpu_backend *)be)->meta;
    int hd = hr_kv_head_dim(kv, layer);
    long width = (long)kv->n_kv_heads * hd;
    size_t rb = hr_kv_row_bytes(kv->dtype, hd);
    for (int t = 0; t < m->n_tokens; t++) {
        int p = m->pos[t];
        int block = m->block_table[(long)m->row[t] * m->max_blocks + p / kv->block_size];
        for (int h = 0; h < kv->n_kv_heads; h++) {
            size_t off = hr_kv_offset(kv, layer, rb, block, h, p % kv->block_size);
            hr_kv_row_store((char *)kv->k + off, k + t * width + h * hd, kv->dtype, hd);
            hr_kv_row_store((char *)kv->v + off, v + t * width + h * hd, kv->dtype, hd);
        }
    }
}

float hr_cpu_act(float g, hr_act_fn fn) {
    if (fn == HR_ACT_FN_SILU) return g / (1.0f + expf(-g));
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * g * (1.0f + tanhf(c * (g + 0.044715f * g * g * g)));
}

typedef struct {
    float *y;
    const float *g, *u;
    long n;
    hr_act_fn fn;
} act_ctx;

static void act_task(void *ctx, int t, int nt) {
    act_ctx *c = ctx;
    long b, e;
    hr_split_range(c->n, 64, t, nt, &b, &e);
    for (long i = b; i < e; i++)
        c->y[i] = hr_cpu_act(c->g[i], c->fn) * c->u[i];
}

static void cpu_act_mul(hr_backend *be, float *y, const float *gate, const float *up, long n,
                        hr_act_fn fn) {
    act_ctx c = {y, gate, up, n, fn};
    if (n < 8192)
        act_task(&c, 0, 1);
    else
        hr_pool_run(((hr_cpu_backend *)be)->pool, act_task, &c);
}

static void cpu_add(hr_backend *be, float *y, const float *a, long n) {
    for (long i = 0; i < n; i++)
        y[i] += a[i];
}

static void cpu_copy(hr_backend *be, float *dst, const float *src, long n) {
    memcpy(dst, src, sizeof(float) * (size_t)n);
}

static void cpu_scale(hr_backend *be, float *y, float s, long n) {
    for (long i = 0; i < n; i++)
        y[i] *= s;
}

static void cpu_softcap(hr_backend *be, float *y, float cap, long n) {
    for (long i = 0; i < n; i++)
        y[i] = cap * tanhf(y[i] / cap);
}

static void cpu_copy2d(hr_backend *be, float *dst, long dst_stride, const float *src,
                       long src_stride, int rows, long cols) {
    for (int r = 0; r < rows; r++)
        memcpy(dst + r * dst_stride, src + r * src_stride, sizeof(float) * (size_t)cols);
}

/* The first index of x's largest value, NaNs never chosen unless x[0] is one (then 0): what
 * `if (x[i] > x[best]) best = i` gives, in two passes that vectorize (16 running maxima, then
 * the first element equal to their maximum); the one-pass loop was 2% of a decode step. */
static int argmax_row(const float *x, int n) {
    enum { L = 16 };
    if (x[0] != x[0]) return 0;
    float mx[L], m = x[0];
    for (int l = 0; l < L; l++)
        mx[l] = x[0];
    int i = 1;
    for (; i + L <= n; i += L)
        for (int l = 0; l < L; l++)
            mx[l] = x[i + l] > mx[l] ? x[i + l] : mx[l];
    for (; i < n; i++)
        m = x[i] > m ? x[i] : m;
    for (int l = 0; l < L; l++)
        m = mx[l] > m ? mx[l] : m;
    for (i = 0; x[i] != m; i++)
        ;
    return i;
}

static void cpu_argmax(hr_backend *be, int32_t *ids, const float *x, int rows, int n) {
    for (int r = 0; r < rows; r++)
        ids[r] = argmax_row(x + (long)r * n, n);
}

typedef struct {
    hr_cpu_backend *cb;
    hr_sample_out *out;
    float *x;
    int rows, n;
} sample_ctx;

/* Rows thread, thread + n_threads, ... with the thread's own scratch. */
static void sample_task(void *ctx, int thread, int n_threads) {
    sample_ctx *c = ctx;
    const hr_sample_step *s = c->cb->meta.sample;
    float *probs = c->cb->sample_probs + (size_t)thread * c->n;
    int32_t *idx = c->cb->sample_idx + (size_t)thread * c->n;
    for (int r = thread; r < c->rows; r += n_threads)
        hr_sample_ref(&c->out[r], c->x + (size_t)r * c->n, c->n, &s->rows[r], s->edits,
                      hr_sample_row_mask(s, r), probs, idx);
}

/* The sample op: hr_sample_ref on each row, rows spread over the pool (each row's result
 * depends on that row alone). Out of memory for the scratch, or masks that do not fit the
 * rows: every row goes to the host. */
static void cpu_sample(hr_backend *be, hr_sample_out *out, float *x, int rows, int n) {
    hr_cpu_backend *cb = (hr_cpu_backend *)be;
    const hr_sample_step *s = cb->meta.sample;
    int threads = rows > 1 ? hr_pool_size(cb->pool) : 1;
    size_t need = (size_t)hr_pool_size(cb->pool) * (size_t)n;
    if (need > cb->sample_cap) {
        free(cb->sample_probs);
        free(cb->sample_idx);
        cb->sample_probs = malloc(sizeof(float) * need);
        cb->sample_idx = malloc(sizeof(int32_t) * need);
        cb->sample_cap = cb->sample_probs && cb->sample_idx ? need : 0;
    }
    if (!s || s->n_rows < rows || cb->sample_cap < need || !hr_sample_masks_fit(s, rows, n)) {
        for (int r = 0; r < rows; r++)
            out[r].id = -1;
        return;
    }
    sample_ctx c = {cb, out, x, rows, n};
    if (threads == 1)
        sample_task(&c, 0, 1);
    else
        hr_pool_run(cb->pool, sample_task, &c);
}

static void cpu_mul_gather(hr_backend *be, float *y, const int32_t *idx, const hr_tensor *table,
                           long n) {
    for (long i = 0; i < n; i++) {
        float s;
        hr_cpu_to_f32(&s, table, idx[i], 1);
        y[i] *= s;
    }
}

static const hr_backend_vt cpu_vt = {
    .name = "cpu",
    .destroy = cpu_destroy,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_upload,
    .release = cpu_release,
    .kv_create = cpu_kv_create,
    .kv_destroy = cpu_kv_destroy,
    .read = cpu_read,
    .write = cpu_write,
    .sync = cpu_sync,
    .mem_info = cpu_mem_info,
    .step_begin = cpu_step_begin,
    .matmul = hr_cpu_matmul,
    .embed = cpu_embed,
    .rmsnorm = cpu_rmsnorm,
    .rope = cpu_rope,
    .kv_write = cpu_kv_write,
    .attention = hr_cpu_attention,
    .act_mul = cpu_act_mul,
    .add = cpu_add,
    .copy = cpu_copy,
    .scale = cpu_scale,
    .softcap = cpu_softcap,
    .copy2d = cpu_copy2d,
    .argmax = cpu_argmax,
    .sample = cpu_sample,
    .moe_route = hr_cpu_moe_route,
    .moe_experts = hr_cpu_moe_experts,
    .mul_gather = cpu_mul_gather,
    .sigmoid_mul = hr_cpu_sigmoid_mul,
    .conv1d = hr_cpu_conv1d,
    .gated_delta = hr_cpu_gated_delta,
    .state_copy = cpu_state_copy,
};

hr_err *hr_backend_cpu_create(const hr_cpu_options *opt, hr_backend **out) {
    *out = NULL;
    hr_cpu_backend *cb = calloc(1, sizeof *cb);
    if (!cb) return hr_err_oom();
    cb->base.vt = &cpu_vt;
    cb->opt = *opt;
    hr_err *err = hr_pool_create(opt->n_threads, &cb->pool);
    if (err) {
        free(cb);
        return err;
    }
    *out = &cb->base;
    return NULL;
}
