/* Device memory for weights: uploads are placed one after the other in large chunks, so the
 * matrices a model uploads back to back (q, k and v of a layer) lie contiguously and one GEMM
 * can read them as a single matrix (cuda_ops.c's products16). A chunk is freed when the last
 * tensor in it is released. Chunks grow from HR_CU_CHUNK_MIN to HR_CU_CHUNK_MAX as uploads
 * arrive (a small model wastes little of the device, a large one gets few boundaries); a
 * tensor larger than the next chunk gets a chunk of its own size, and when a chunk cannot be
 * had the allocation falls back to one of exactly the tensor's size. */
#include <stdlib.h>

#include "backend/cuda/cuda_backend.h"

enum { HR_CU_ALIGN = 256 };

static size_t align_up(size_t n) { return (n + HR_CU_ALIGN - 1) / HR_CU_ALIGN * HR_CU_ALIGN; }

/* Adds a chunk of at least bytes (want when it can be had) to the arena; NULL on success. */
static hr_err *add_chunk(hr_cuda_backend *cb, size_t bytes, size_t want) {
    if (cb->n_chunks == cb->cap_chunks) {
        int cap = cb->cap_chunks ? 2 * cb->cap_chunks : 16;
        hr_cu_chunk *c = realloc(cb->chunks, (size_t)cap * sizeof *c);
        if (!c) return hr_err_oom();
        cb->chunks = c;
        cb->cap_chunks = cap;
    }
    void *p = NULL;
    size_t size = want > bytes ? want : bytes;
    if (cudaMalloc(&p, size) != cudaSuccess) {
        cudaGetLastError(); /* not sticky: retried at the tensor's own size */
        size = bytes;
        HR_TRY(hr_cu_check(cudaMalloc(&p, size), "allocating device memory for weights"));
    }
    cb->chunks[cb->n_chunks++] = (hr_cu_chunk){.base = p, .size = size};
    return NULL;
}

hr_err *hr_cu_arena_alloc(hr_cuda_backend *cb, size_t bytes, void **out) {
    *out = NULL;
    hr_cu_moved(cb);
    size_t need = align_up(bytes ? bytes : 1);
    hr_cu_chunk *last = cb->n_chunks ? &cb->chunks[cb->n_chunks - 1] : NULL;
    if (!last || last->size - last->used < need) {
        size_t want = last ? 2 * last->size : HR_CU_CHUNK_MIN;
        if (want > HR_CU_CHUNK_MAX) want = HR_CU_CHUNK_MAX;
        hr_err *err = add_chunk(cb, need, want);
        if (err) return hr_err_wrap(err, "%zu MiB: ", bytes >> 20);
        last = &cb->chunks[cb->n_chunks - 1];
    }
    *out = (char *)last->base + last->used;
    last->used += need;
    last->live++;
    return NULL;
}

void hr_cu_arena_free(hr_cuda_backend *cb, void *p) {
    for (int i = 0; i < cb->n_chunks; i++) {
        hr_cu_chunk *c = &cb->chunks[i];
        if ((char *)p < (char *)c->base || (char *)p >= (char *)c->base + c->size) continue;
        if (--c->live == 0) {
            cudaFree(c->base);
            cb->chunks[i] = cb->chunks[--cb->n_chunks];
        }
        return;
    }
}

void hr_cu_arena_destroy(hr_cuda_backend *cb) {
    for (int i = 0; i < cb->n_chunks; i++)
        cudaFree(cb->chunks[i].base);
    free(cb->chunks);
    cb->chunks = NULL;
    cb->n_chunks = cb->cap_chunks = 0;
}
