/* Paged KV block pool, per-sequence block tables, the prefix cache, and the recurrent-state
 * slots of hybrid models; see kv_pool.h. Invariant: every block is in exactly one of three
 * states: referenced (refcount > 0), on the free list, or idle in the LRU (refcount 0 and
 * published). */
#include "engine/kv_pool.h"

#include <stdlib.h>
#include <string.h>

hr_err *hr_kv_pool_create(hr_kv_pool *pool, const hr_model *m, int n_blocks, int block_size) {
    int slots = n_blocks < HR_KV_STATE_SLOTS ? n_blocks : HR_KV_STATE_SLOTS;
    return hr_kv_pool_create_slots(pool, m, n_blocks, block_size, slots, 0);
}

hr_err *hr_kv_pool_create_slots(hr_kv_pool *pool, const hr_model *m, int n_blocks, int block_size,
                                int n_state_slots, int n_snapshots) {
    memset(pool, 0, sizeof *pool);
    if (n_blocks <= 0 || block_size <= 0) return hr_errf("KV pool: need at least one block");
    pool->be = hr_model_backend(m);
    hr_model_kv_shape(m, &pool->store);
    pool->store.n_blocks = n_blocks;
    pool->store.block_size = block_size;
    if (pool->store.n_state_layers > 0) {
        if (n_state_slots <= 0)
            return hr_errf("KV pool: a hybrid model needs at least one state slot");
        pool->store.n_state_slots = n_state_slots;
        pool->store.n_snapshots = n_snapshots < 0 ? 0 : n_snapshots;
    }
    int ns = pool->store.n_state_slots, nsnap = pool->store.n_snapshots;
    size_t nb = (size_t)n_blocks;
    pool->n_buckets = 2 * n_blocks;
    pool->free_list = malloc(sizeof(int) * nb);
    pool->refcount = calloc(nb, sizeof(int));
    pool->key = calloc(nb, sizeof(uint64_t));
    pool->parent = calloc(nb, sizeof(uint64_t));
    pool->tokens = malloc(sizeof(int32_t) * nb * (size_t)block_size);
    pool->bucket_next = malloc(sizeof(int) * nb);
    pool->buckets = malloc(sizeof(int) * (size_t)pool->n_buckets);
    pool->lru_prev = malloc(sizeof(int) * nb);
    pool->lru_next = malloc(sizeof(int) * nb);
    pool->store.state_pos = calloc((size_t)ns + 1, sizeof(int32_t));
    pool->free_slots = malloc(sizeof(int) * ((size_t)ns + 1));
    pool->snap = malloc(sizeof(int) * nb);
    pool->free_snaps = malloc(sizeof(int) * ((size_t)nsnap + 1));
    if (!pool->snap || !pool->free_snaps || !pool->free_list || !pool->refcount || !pool->key ||
        !pool->parent || !pool->tokens || !pool->bucket_next || !pool->buckets || !pool->lru_prev ||
        !pool->lru_next || !pool->store.state_pos || !pool->free_slots) {
        hr_kv_pool_destroy(pool);
        return hr_err_oom();
    }
    for (int i = 0; i < n_blocks; i++) {
        pool->free_list[i] = n_blocks - 1 - i;
        pool->snap[i] = -1;
    }
    for (int i = 0; i < nsnap; i++)
        pool->free_snaps[i] = nsnap - 1 - i;
    pool->n_free_snaps = nsnap;
    for (int i = 0; i < pool->n_buckets; i++)
        pool->buckets[i] = -1;
    pool->n_free = n_blocks;
    pool->lru_head = pool->lru_tail = -1;
    for (int i = 0; i < ns; i++)
        pool->free_slots[i] = ns - 1 - i;
    pool->n_free_slots = ns;
    hr_err *err = pool->be->vt->kv_create(pool->be, &pool->store);
    if (err) hr_kv_pool_destroy(pool);
    return err;
}

void hr_kv_pool_destroy(hr_kv_pool *pool) {
    if (pool->be && pool->store.k) pool->be->vt->kv_destroy(pool->be, &pool->store);
    free(pool->store.state_pos);
    free(pool->free_slots);
    free(pool->snap);
    free(pool->free_snaps);
    free(pool->free_list);
    free(pool->refcount);
    free(pool->key);
    free(pool->parent);
    free(pool->tokens);
    free(pool->bucket_next);
    free(pool->buckets);
    free(pool->lru_prev);
    free(pool->lru_next);
    memset(pool, 0, sizeof *pool);
}

int hr_kv_pool_used(const hr_kv_pool *pool) {
    return pool->store.n_blocks - pool->n_free - pool->n_lru;
}

int hr_kv_pool_snapshots(const hr_kv_pool *pool) {
    return pool->store.n_snapshots - pool->n_free_snaps;
}

int hr_kv_pool_available(const hr_kv_pool *pool) { return pool->n_free + pool->n_lru; }

void hr_kv_pool_enable_cache(hr_kv_pool *pool, uint64_t fingerprint) {
    pool->cache_enabled = 1;
    pool->fingerprint = fingerprint;
}

/* ---- hash table and LRU ---- */

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

static uint64_t block_key(const hr_kv_pool *pool, uint64_t parent, const int32_t *tokens) {
    uint64_t h = mix(pool->fingerprint, parent);
    for (int i = 0; i < pool->store.block_size; i++)
        h = mix(h, (uint64_t)(uint32_t)tokens[i]);
    return h ? h : 1; /* 0 means "not published" */
}

static int *bucket_of(hr_kv_pool *pool, uint64_t key) {
    return &pool->buckets[key % (uint64_t)pool->n_buckets];
}

static int find(hr_kv_pool *pool, uint64_t key, uint64_t parent, const int32_t *tokens) {
    size_t bs = (size_t)pool->store.block_size;
    for (int b = *bucket_of(pool, key); b >= 0; b = pool->bucket_next[b])
        if (pool->key[b] == key && pool->parent[b] == parent &&
            memcmp(pool->tokens + (size_t)b * bs, tokens, bs * sizeof *tokens) == 0)
            return b;
    return -1;
}

static void unpublish(hr_kv_pool *pool, int b) {
    int *p = bucket_of(pool, pool->key[b]);
    while (*p != b)
        p = &pool->bucket_next[*p];
    *p = pool->bucket_next[b];
    pool->key[b] = 0;
    if (pool->snap[b] >= 0) pool->free_snaps[pool->n_free_snaps++] = pool->snap[b];
    pool->snap[b] = -1;
}

static void lru_remove(hr_kv_pool *pool, int b) {
    int p = pool->lru_prev[b], n = pool->lru_next[b];
    if (p >= 0)
        pool->lru_next[p] = n;
    else
        pool->lru_head = n;
    if (n >= 0)
        pool->lru_prev[n] = p;
    else
        pool->lru_tail = p;
    pool->n_lru--;
}

static void lru_push(hr_kv_pool *pool, int b) {
    pool->lru_prev[b] = pool->lru_tail;
    pool->lru_next[b] = -1;
    if (pool->lru_tail >= 0)
        pool->lru_next[pool->lru_tail] = b;
    else
        pool->lru_head = b;
    pool->lru_tail = b;
    pool->n_lru++;
}

/* A block with refcount 1, from the free list or else the oldest idle cached block. */
static int take_block(hr_kv_pool *pool) {
    int id;
    if (pool->n_free > 0) {
        id = pool->free_list[--pool->n_free];
    } else {
        id = pool->lru_head;
        lru_remove(pool, id);
        if (pool->tier.evict) pool->tier.evict(pool->tier.ctx, pool, id);
        unpublish(pool, id);
        pool->n_evicted++;
    }
    pool->refcount[id] = 1;
    return id;
}

static void drop_block(hr_kv_pool *pool, int id) {
    if (--pool->refcount[id] > 0) return;
    if (pool->key[id]) {
        lru_push(pool, id);
        return;
    }
    if (pool->snap[id] >= 0) pool->free_snaps[pool->n_free_snaps++] = pool->snap[id];
    pool->snap[id] = -1;
    pool->free_list[pool->n_free++] = id;
}

int hr_kv_pool_take(hr_kv_pool *pool) {
    return hr_kv_pool_available(pool) > 0 ? take_block(pool) : -1;
}

void hr_kv_pool_put(hr_kv_pool *pool, int block) { drop_block(pool, block); }

static void publish_block(hr_kv_pool *pool, int b, uint64_t key, uint64_t parent,
                          const int32_t *tokens) {
    size_t bs = (size_t)pool->store.block_size;
    pool->key[b] = key;
    pool->parent[b] = parent;
    memcpy(pool->tokens + (size_t)b * bs, tokens, sizeof(int32_t) * bs);
    int *head = bucket_of(pool, key);
    pool->bucket_next[b] = *head;
    *head = b;
}

/* ---- sequences ---- */

static hr_err *grow_table(hr_kv_seq *seq, int need) {
    if (need <= seq->cap) return NULL;
    int cap = need > 2 * seq->cap ? need : 2 * seq->cap;
    int32_t *b = realloc(seq->blocks, sizeof(int32_t) * (size_t)cap);
    if (!b) return hr_err_oom();
    seq->blocks = b;
    seq->cap = cap;
    return NULL;
}

hr_err *hr_kv_state_acquire(hr_kv_pool *pool, int *slot) {
    if (pool->n_free_slots == 0)
        return hr_errf("KV pool: all %d recurrent-state slots are taken",
                       pool->store.n_state_slots);
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
    if (need - seq->n_blocks > hr_kv_pool_available(pool))
        return hr_errf("KV cache full: %d more blocks needed, %d free", need - seq->n_blocks,
                       hr_kv_pool_available(pool));
    HR_TRY(grow_table(seq, need));
    while (seq->n_blocks < need)
        seq->blocks[seq->n_blocks++] = take_block(pool);
    return NULL;
}

void hr_kv_seq_release(hr_kv_pool *pool, hr_kv_seq *seq) {
    /* Drop from the end so a chain's later blocks become the older LRU entries and are
     * evicted before the blocks they depend on. */
    for (int i = seq->n_blocks - 1; i >= seq->n_released; i--)
        drop_block(pool, seq->blocks[i]);
    free(seq->blocks);
    memset(seq, 0, sizeof *seq);
}

void hr_kv_seq_release_before(hr_kv_pool *pool, hr_kv_seq *seq, int pos) {
    int end = pos / pool->store.block_size;
    if (end > seq->n_blocks) end = seq->n_blocks;
    for (; seq->n_released < end; seq->n_released++) {
        drop_block(pool, seq->blocks[seq->n_released]);
        seq->blocks[seq->n_released] = -1;
    }
}

/* A free snapshot id, else the one of the oldest idle cached block that has one, else -1. */
static int take_snapshot(hr_kv_pool *pool) {
    if (pool->n_free_snaps > 0) return pool->free_snaps[--pool->n_free_snaps];
    for (int b = pool->lru_head; b >= 0; b = pool->lru_next[b])
        if (pool->snap[b] >= 0) {
            int id = pool->snap[b];
            pool->snap[b] = -1;
            return id;
        }
    return -1;
}

int hr_kv_pool_attach_snapshot(hr_kv_pool *pool, int block) {
    if (pool->store.n_snapshots == 0) return -1;
    int id = take_snapshot(pool);
    if (id >= 0) pool->snap[block] = id;
    return id;
}

void hr_kv_seq_snapshot(hr_kv_pool *pool, const hr_kv_seq *seq, int slot, int n_computed) {
    int bs = pool->store.block_size, i = n_computed / bs - 1;
    if (pool->store.n_snapshots == 0 || n_computed % bs != 0 || i < 0 || i >= seq->n_keyed) return;
    int b = seq->blocks[i];
    if (!pool->key[b] || pool->snap[b] >= 0) return; /* private duplicate, or done */
    int id = take_snapshot(pool);
    if (id < 0) return;
    pool->be->vt->state_copy(pool->be, &pool->store, slot, id, 0);
    pool->snap[b] = id;
}

void hr_kv_state_restore(hr_kv_pool *pool, const hr_kv_seq *seq, int n_blocks, int slot) {
    pool->be->vt->state_copy(pool->be, &pool->store, slot, pool->snap[seq->blocks[n_blocks - 1]],
                             1);
    pool->store.state_pos[slot] = n_blocks * pool->store.block_size;
}

int hr_kv_seq_reuse(hr_kv_pool *pool, hr_kv_seq *seq, const int32_t *tokens, int n,
                    int max_blocks) {
    if (!pool->cache_enabled || seq->n_blocks != 0) return 0;
    int bs = pool->store.block_size, limit = n / bs < max_blocks ? n / bs : max_blocks;
    if (limit <= 0 || grow_table(seq, limit)) return 0;
    uint64_t parent = 0;
    for (int i = 0; i < limit; i++) {
        const int32_t *t = tokens + (size_t)i * bs;
        uint64_t key = block_key(pool, parent, t);
        int b = find(pool, key, parent, t);
        if (b >= 0) {
            if (pool->refcount[b]++ == 0) lru_remove(pool, b);
        } else if (pool->tier.restore &&
                   (b = pool->tier.restore(pool->tier.ctx, pool, key, parent, t)) >= 0) {
            publish_block(pool, b, key, parent, t);
        } else {
            break;
        }
        seq->blocks[seq->n_blocks++] = b;
        parent = key;
    }
    /* a hybrid model resumes only where the recurrent state was snapshotted */
    while (pool->store.n_state_layers > 0 && seq->n_blocks > 0 &&
           pool->snap[seq->blocks[seq->n_blocks - 1]] < 0)
        drop_block(pool, seq->blocks[--seq->n_blocks]);
    seq->n_keyed = seq->n_blocks;
    seq->last_key = seq->n_blocks > 0 ? pool->key[seq->blocks[seq->n_blocks - 1]] : 0;
    return seq->n_blocks;
}

void hr_kv_seq_publish(hr_kv_pool *pool, hr_kv_seq *seq, const int32_t *tokens, int n_computed) {
    if (!pool->cache_enabled) return;
    int bs = pool->store.block_size, full = n_computed / bs;
    if (full > seq->n_blocks) full = seq->n_blocks;
    for (; seq->n_keyed < full; seq->n_keyed++) {
        const int32_t *t = tokens + (size_t)seq->n_keyed * bs;
        uint64_t parent = seq->last_key, key = block_key(pool, parent, t);
        int b = seq->blocks[seq->n_keyed];
        seq->last_key = key;
        if (b < 0 || pool->key[b] || find(pool, key, parent, t) >= 0) continue;
        publish_block(pool, b, key, parent, t);
    }
}
