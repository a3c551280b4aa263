/* Paged KV block pool and per-sequence block tables, and the recurrent-state slots of
 * hybrid models; see kv_pool.h. */
#include "engine/kv_pool.h"

#include <stdlib.h>
#include <string.h>

hr_err *hr_kv_pool_create(hr_kv_pool *pool, const hr_model *m, int n_blocks, int block_size) {
    int slots = n_blocks < HR_KV_STATE_SLOTS ? n_blocks : HR_KV_STATE_SLOTS;
    return hr_kv_pool_create_slots(pool, m, n_blocks, block_size, slots);
}

hr_err *hr_kv_pool_create_slots(hr_kv_pool *pool, const hr_model *m, int n_blocks, int block_size,
                                int n_state_slots) {
    memset(pool, 0, sizeof *pool);
    if (n_blocks <= 0 || block_size <= 0) return hr_errf("KV pool: need at least one block");
    pool->be = hr_model_backend(m);
    hr_model_kv_shape(m, &pool->store);
    pool->store.n_blocks = n_blocks;
    pool->store.block_size = block_size;
    if (pool->store.n_state_layers > 0) {
        if (n_state_slots <= 0) return hr_errf("KV pool: a hybrid model needs at least one state slot");
        pool->store.n_state_slots = n_state_slots;
    }
    int ns = pool->store.n_state_slots;
    pool->free_list = malloc(sizeof(int) * (size_t)n_blocks);
    pool->refcount = calloc((size_t)n_blocks, sizeof(int));
    pool->store.state_pos = calloc((size_t)ns + 1, sizeof(int32_t));
    pool->free_slots = malloc(sizeof(int) * ((size_t)ns + 1));
    if (!pool->free_list || !pool->refcount || !pool->store.state_pos || !pool->free_slots) {
        hr_kv_pool_destroy(pool);
        return hr_err_oom();
    }
    for (int i = 0; i < n_blocks; i++) pool->free_list[i] = n_blocks - 1 - i;
    pool->n_free = n_blocks;
    for (int i = 0; i < ns; i++) pool->free_slots[i] = ns - 1 - i;
    pool->n_free_slots = ns;
    hr_err *err = pool->be->vt->kv_create(pool->be, &pool->store);
    if (err) hr_kv_pool_destroy(pool);
    return err;
}

void hr_kv_pool_destroy(hr_kv_pool *pool) {
    if (pool->be && pool->store.k) pool->be->vt->kv_destroy(pool->be, &pool->store);
    free(pool->store.state_pos);
    free(pool->free_slots);
    free(pool->free_list);
    free(pool->refcount);
    memset(pool, 0, sizeof *pool);
}

int hr_kv_pool_used(const hr_kv_pool *pool) { return pool->store.n_blocks - pool->n_free; }

hr_err *hr_kv_state_acquire(hr_kv_pool *pool, int *slot) {
    if (pool->n_free_slots == 0)
        return hr_errf("KV pool: all %d recurrent-state slots are taken", pool->store.n_state_slots);
    *slot = pool->free_slots[--pool->n_free_slots];
    pool->store.state_pos[*slot] = 0;
    return NULL;
}

void hr_kv_state_release(hr_kv_pool *pool, int slot) {
    pool->store.state_pos[slot] = 0;
    pool->free_slots[pool->n_free_slots++] = slot;
}

hr_err *hr_kv_seq_reserve(hr_kv_pool *pool, hr_kv_seq *seq, int n_positions) {
    int bs = pool->store.block_size;
    int need = (n_positions + bs - 1) / bs;
    if (need <= seq->n_blocks) return NULL;
    if (need - seq->n_blocks > pool->n_free)
        return hr_errf("KV cache full: %d more blocks needed, %d free", need - seq->n_blocks, pool->n_free);
    if (need > seq->cap) {
        int cap = need > 2 * seq->cap ? need : 2 * seq->cap;
        int32_t *b = realloc(seq->blocks, sizeof(int32_t) * (size_t)cap);
        if (!b) return hr_err_oom();
        seq->blocks = b;
        seq->cap = cap;
    }
    while (seq->n_blocks < need) {
        int id = pool->free_list[--pool->n_free];
        pool->refcount[id] = 1;
        seq->blocks[seq->n_blocks++] = id;
    }
    return NULL;
}

void hr_kv_seq_release(hr_kv_pool *pool, hr_kv_seq *seq) {
    for (int i = 0; i < seq->n_blocks; i++) {
        int id = seq->blocks[i];
        if (--pool->refcount[id] == 0) pool->free_list[pool->n_free++] = id;
    }
    free(seq->blocks);
    memset(seq, 0, sizeof *seq);
}
