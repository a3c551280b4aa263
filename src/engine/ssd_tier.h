/* The SSD cold tier of the prefix cache (docs/ssd-cache.md): blocks evicted from the memory
 * cache are copied into a bounded spill queue and written by a writer thread as one file per
 * block (ssd_file.h), named by the block's prefix-cache key, so sequences sharing a prefix
 * share files; idle cached blocks are written behind while the engine has nothing to run; a
 * prefix the memory cache misses continues on disk (restored into fresh pool blocks through
 * the backend's write op). The index (key -> file) is rebuilt at open from the headers.
 *
 * Threads: the engine thread calls everything but the writer's loop; the index and the queue
 * are under the tier's mutex, the staging buffer is the engine thread's. */
#ifndef HR_ENGINE_SSD_TIER_H
#define HR_ENGINE_SSD_TIER_H

#include "engine/kv_pool.h"

typedef struct hr_ssd_tier hr_ssd_tier;

typedef struct {
    const char *dir;    /* created when missing */
    size_t max_bytes;   /* cap on the block files in dir, all models' (LRU by mtime beyond it) */
    int verify;         /* check every tensor's checksum on restore (else the header's only) */
    int always_restore; /* restore even where prefilling the blocks is measured to be cheaper */
    size_t queue_bytes; /* spill queue cap (0: 256 MiB); beyond it the oldest pending is dropped */
    uint64_t fingerprint, tok_hash; /* the model's (engine/fingerprint.h); other files are kept */
} hr_ssd_options;

typedef struct {
    long entries;           /* files of this model on disk */
    size_t bytes;           /* bytes of every indexed file (all models) */
    long hits;              /* lookups that restored at least one block */
    long restores, spills;  /* blocks read back / written */
    long dropped;           /* spills dropped from a full queue (and after writes stopped) */
    long removed;           /* corrupt, truncated or over-cap files deleted */
    size_t queued_bytes;    /* spill queue now */
    double last_restore_ms; /* the last lookup that restored */
    long skipped;   /* lookups whose disk blocks were left to prefill (hr_ssd_restore_pays) */
    int writes_off; /* a write failed (full or read-only disk): memory-only from then */
} hr_ssd_stats;

/* Opens (creating) o->dir for pool's KV layout, scans it (header only) and starts the writer.
 * Corrupt, truncated or stale temporary files are deleted and logged. Hybrid models: a block
 * with a state snapshot is stored with it and restored into a snapshot. Sets pool->tier. */
hr_err *hr_ssd_tier_open(const hr_ssd_options *o, hr_kv_pool *pool, hr_ssd_tier **out);
/* Writes what is queued (waiting for the writer), stops it, frees t and clears pool->tier. */
void hr_ssd_tier_close(hr_ssd_tier *t, hr_kv_pool *pool);
/* Engine idle: queues idle cached blocks that are not on disk yet, up to the queue's cap,
 * asking busy(ctx) before each and stopping when it says new work came. Returns 1 when some
 * are left (call again once the writer has made room or the engine is idle again). */
int hr_ssd_tier_write_behind(hr_ssd_tier *t, hr_kv_pool *pool, int (*busy)(void *ctx), void *ctx);
/* As write_behind for every idle cached block, waiting for room instead of stopping (engine
 * shutdown, so the cache outlives the process). */
void hr_ssd_tier_flush(hr_ssd_tier *t, hr_kv_pool *pool);
/* Waits until the writer has written (or dropped) everything queued. */
void hr_ssd_tier_drain(hr_ssd_tier *t);
/* After a prefix lookup (hr_kv_seq_reuse) that took ms: counts a hit and its time when it
 * restored blocks. */
void hr_ssd_tier_lookup_done(hr_ssd_tier *t, double ms);
/* A step that prefilled `tokens` in ms (the engine thread): the prefill cost a restore is
 * weighed against. Steps of fewer than 64 prefill tokens are not counted (their decode rows
 * would weigh too much). */
void hr_ssd_tier_note_prefill(hr_ssd_tier *t, int tokens, double ms);
/* Whether reading a block back from disk (restore_ms a block, as measured) is cheaper than
 * computing its block_size tokens again (prefill_ms a token); either unknown (<= 0): yes, so
 * both get measured. On a GPU prefill can beat a disk (docs/ssd-cache.md). */
int hr_ssd_restore_pays(double restore_ms, double prefill_ms, int block_size);
void hr_ssd_tier_stats(hr_ssd_tier *t, hr_ssd_stats *st);

#endif
