/* The paged KV block pool: a fixed number of blocks of block_size positions in one
 * backend KV store, a free list, and refcounts so sequences can share prefix blocks.
 * A sequence's KV is its block table; hr_kv_seq grows it block by block.
 *
 * Prefix cache: a full block whose KV is computed can be published under a key, the hash
 * of (parent block's key, its tokens, model fingerprint). A keyed block whose refcount
 * drops to zero is kept in an LRU instead of the free list; a later sequence with the same
 * token prefix takes it back (copy-free), and allocation evicts the oldest when the free
 * list is empty. "Used" blocks are those referenced by a sequence; LRU blocks are free.
 *
 * Hybrid models: a cached block is reusable only with a snapshot of the recurrent state at
 * its end (docs/hybrid.md). Snapshots come from a fixed store of n_snapshots; a block's
 * snapshot is freed when the block is evicted, and when the store is full a new snapshot
 * takes the one of the oldest idle cached block. */
#ifndef HR_ENGINE_KV_POOL_H
#define HR_ENGINE_KV_POOL_H

#include "backend/backend.h"
#include "model/model.h"

typedef struct hr_kv_pool hr_kv_pool;

/* A colder tier below the prefix cache (the SSD cache, ssd_tier.h). evict sees an idle cached
 * block just before allocation takes it (its key, parent and tokens still set); restore is
 * asked for a block the memory cache misses and returns a block it took with
 * hr_kv_pool_take and filled with that block's KV, or -1. NULL hooks: no tier. */
typedef struct {
    void (*evict)(void *ctx, hr_kv_pool *pool, int block);
    int (*restore)(void *ctx, hr_kv_pool *pool, uint64_t key, uint64_t parent,
                   const int32_t *tokens);
    void *ctx;
} hr_kv_tier_hooks;

struct hr_kv_pool {
    hr_backend *be;
    hr_kv_store store;
    int *free_list; /* (n_blocks) stack of free block ids */
    int n_free;
    int *refcount;   /* (n_blocks) */
    int *free_slots; /* (store.n_state_slots) stack of free recurrent-state slots */
    int n_free_slots;
    /* prefix cache (all (n_blocks) arrays indexed by block id) */
    int cache_enabled;
    uint64_t fingerprint;     /* mixed into every key: blocks of another model never match */
    uint64_t *key;            /* 0: not published */
    uint64_t *parent;         /* key of the block before it in its chain (0 for the first) */
    int32_t *tokens;          /* (n_blocks, block_size) token ids of published blocks */
    int *bucket_next;         /* hash-chain link, -1 ends */
    int *buckets, n_buckets;  /* (n_buckets) first block of each chain, -1 empty */
    int *lru_prev, *lru_next; /* idle published blocks, oldest at lru_head */
    int lru_head, lru_tail, n_lru;
    long n_evicted;
    /* recurrent-state snapshots (hybrid models; store.n_snapshots of them) */
    int *snap;       /* (n_blocks) snapshot of the state at the block's end, -1 none */
    int *free_snaps; /* (store.n_snapshots) stack of free snapshot ids */
    int n_free_snaps;
    hr_kv_tier_hooks tier;
};

/* Recurrent-state slots hr_kv_pool_create gives a hybrid model: min(n_blocks, this). */
enum { HR_KV_STATE_SLOTS = 8 };

hr_err *hr_kv_pool_create(hr_kv_pool *pool, const hr_model *m, int n_blocks, int block_size);
/* The same with n_state_slots recurrent-state slots (the most sequences of a hybrid model
 * that can be live at once) and n_snapshots state snapshots for the prefix cache; both are
 * ignored for models without DeltaNet layers. */
hr_err *hr_kv_pool_create_slots(hr_kv_pool *pool, const hr_model *m, int n_blocks, int block_size,
                                int n_state_slots, int n_snapshots);
/* A free recurrent-state slot for a new sequence (docs/hybrid.md); fails when all are taken. */
hr_err *hr_kv_state_acquire(hr_kv_pool *pool, int *slot);
/* Gives a slot back; its next owner starts at position 0. */
void hr_kv_state_release(hr_kv_pool *pool, int slot);
void hr_kv_pool_destroy(hr_kv_pool *pool);
/* Snapshots held by cached blocks. */
int hr_kv_pool_snapshots(const hr_kv_pool *pool);
/* Blocks referenced by some sequence (idle cached blocks are not counted). */
int hr_kv_pool_used(const hr_kv_pool *pool);
/* Blocks a reservation can take now: free plus idle cached (evictable) ones. */
int hr_kv_pool_available(const hr_kv_pool *pool);
/* Turns the prefix cache on with a model fingerprint (off after create). */
void hr_kv_pool_enable_cache(hr_kv_pool *pool, uint64_t fingerprint);

/* For a tier's restore: a block with refcount 1 (free, else the oldest idle cached one), or -1
 * when none is available; hr_kv_pool_put gives one back unused. */
int hr_kv_pool_take(hr_kv_pool *pool);
void hr_kv_pool_put(hr_kv_pool *pool, int block);
/* Hybrid models, for a tier's restore: a snapshot for block (free, else the one of the oldest
 * idle cached block that has one), set as the block's; -1 when there is none. The caller fills
 * it; a block given back unpublished frees its snapshot. */
int hr_kv_pool_attach_snapshot(hr_kv_pool *pool, int block);

/* A sequence's block table and how far its blocks are published in the prefix cache. */
typedef struct {
    int32_t *blocks; /* (cap) block ids; -1: released (out of a sliding window) */
    int n_blocks, cap;
    int n_released;    /* leading blocks given back by hr_kv_seq_release_before */
    int n_keyed;       /* leading blocks whose keys are known */
    uint64_t last_key; /* key of block n_keyed - 1 (0 when n_keyed is 0) */
} hr_kv_seq;

/* Makes seq's table cover n_positions, taking blocks from the pool. Fails (leaving the
 * table as it was) when the pool has too few free blocks. */
hr_err *hr_kv_seq_reserve(hr_kv_pool *pool, hr_kv_seq *seq, int n_positions);
/* Returns every block of seq to the pool (dropping its references). */
void hr_kv_seq_release(hr_kv_pool *pool, hr_kv_seq *seq);
/* Gives back the blocks of seq that lie wholly before position pos (models whose layers all
 * attend within a window never read them again). Their table entries become -1; indices of
 * the others do not change. */
void hr_kv_seq_release_before(hr_kv_pool *pool, hr_kv_seq *seq, int pos);

/* For an empty seq: takes the longest chain of cached blocks matching tokens[0..n), at most
 * max_blocks, into seq's table. Returns the number of blocks taken (their KV is valid). For
 * a hybrid model the chain ends at its last block with a state snapshot. A block the memory
 * cache misses is asked of the tier (when set) and published when it has it. */
int hr_kv_seq_reuse(hr_kv_pool *pool, hr_kv_seq *seq, const int32_t *tokens, int n, int max_blocks);
/* Publishes seq's full blocks within its first n_computed positions (tokens are the
 * sequence's tokens). A block whose key is already published elsewhere stays private. */
void hr_kv_seq_publish(hr_kv_pool *pool, hr_kv_seq *seq, const int32_t *tokens, int n_computed);
/* Hybrid models: slot's state has consumed seq's first n_computed positions; when that is
 * the end of a published block without a snapshot, copies the state into one. */
void hr_kv_seq_snapshot(hr_kv_pool *pool, const hr_kv_seq *seq, int slot, int n_computed);
/* Hybrid models: loads the snapshot of seq's block n_blocks - 1 (taken by hr_kv_seq_reuse)
 * into slot, which then continues at position n_blocks * block_size. */
void hr_kv_state_restore(hr_kv_pool *pool, const hr_kv_seq *seq, int n_blocks, int slot);

#endif
