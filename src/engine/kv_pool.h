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
    int *free_slots; /* (store.n_state_slots) stack of free recurrent-state slots */
    int n_free_slots;
} hr_kv_pool;

/* Recurrent-state slots hr_kv_pool_create gives a hybrid model: min(n_blocks, this). */
enum { HR_KV_STATE_SLOTS = 8 };

hr_err *hr_kv_pool_create(hr_kv_pool *pool, const hr_model *m, int n_blocks, int block_size);
/* The same with n_state_slots recurrent-state slots (ignored for models without DeltaNet
 * layers): the most sequences of a hybrid model that can be live at once. */
hr_err *hr_kv_pool_create_slots(hr_kv_pool *pool, const hr_model *m, int n_blocks, int block_size,
                                int n_state_slots);
/* A free recurrent-state slot for a new sequence (docs/hybrid.md); fails when all are taken. */
hr_err *hr_kv_state_acquire(hr_kv_pool *pool, int *slot);
/* Gives a slot back; its next owner starts at position 0. */
void hr_kv_state_release(hr_kv_pool *pool, int slot);
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
