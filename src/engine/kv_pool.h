/* The paged KV block pool: a fixed number of blocks of block_size positions in one
 * backend KV store, a free list, and refcounts so sequences can share prefix blocks.
 * A sequence's KV is its block table; hr_kv_seq grows it block by block. */
#ifndef HR_ENGINE_KV_POOL_H
#define HR_ENGINE_KV_POOL_H

#include "backend/backend.h"
#include "model/model.h"

typedef struct {
    hr_backend *be;
    hr_kv_store store;
    int *free_list; /* (n_blocks) stack of free block ids */
    int n_free;
    int *refcount;  /* (n_blocks) */
} hr_kv_pool;

/* Recurrent-state slots a pool of a hybrid model gets (docs/hybrid.md): rows use slots
 * [0, min(n_blocks, HR_KV_STATE_SLOTS)). */
enum { HR_KV_STATE_SLOTS = 8 };

hr_err *hr_kv_pool_create(hr_kv_pool *pool, const hr_model *m, int n_blocks, int block_size);
void hr_kv_pool_destroy(hr_kv_pool *pool);
int hr_kv_pool_used(const hr_kv_pool *pool);

/* A sequence's block table. */
typedef struct {
    int32_t *blocks; /* (cap) block ids */
    int n_blocks, cap;
} hr_kv_seq;

/* Makes seq's table cover n_positions, taking blocks from the pool. Fails (leaving the
 * table as it was) when the pool has too few free blocks. */
hr_err *hr_kv_seq_reserve(hr_kv_pool *pool, hr_kv_seq *seq, int n_positions);
/* Returns every block of seq to the pool (dropping its references). */
void hr_kv_seq_release(hr_kv_pool *pool, hr_kv_seq *seq);

#endif
