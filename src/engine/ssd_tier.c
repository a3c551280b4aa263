/* The SSD tier (ssd_tier.h): the index of block files, the spill queue and its writer thread,
 * write-behind, restore, the header-only scan at open and the byte cap. Invariants: an index
 * entry is either pending (its job, a full file image, is queued or being written) or a file
 * on disk; total counts on-disk entries only; only the writer unlinks for the cap, and only
 * the writer frees a job it took, under mu, so a restore from a pending job reads it under mu. */
#include "engine/ssd_tier.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/file.h"
#include "base/log.h"
#include "base/thread.h"
#include "engine/ssd_file.h"

enum { DEFAULT_QUEUE = 256 << 20 };

typedef struct job {
    uint8_t *buf; /* (bytes) the file image: header page(s) filled by the writer */
    size_t bytes;
    int snap; /* which layout: 1 with the block's state snapshot */
    uint64_t key, parent;
    int32_t *tokens; /* (block_size) */
    struct job *next;
} job;

typedef struct {
    uint64_t key, fp;
    size_t bytes;
    int64_t mtime_ns;
    job *pending; /* NULL: on disk */
    int next;     /* bucket chain, or free list link */
} entry;

struct hr_ssd_tier {
    hr_ssd_options o;
    char *dir;
    hr_backend *be;
    hr_kv_store *store;
    /* this pool's tensors, bytes and offsets (tokens unset): [0] KV only, [1] KV and a state
     * snapshot (hybrid models; n_layouts 2) */
    hr_ssd_header layout[2];
    int n_layouts;
    size_t file_bytes[2], block_bytes[HR_MAX_LAYERS];
    uint8_t *stage; /* (file_bytes[n_layouts - 1]) restore buffer, engine thread */
    pthread_t writer;
    int writer_started;
    pthread_mutex_t mu;
    pthread_cond_t work, room;
    /* under mu */
    job *head, *tail;
    int writing, stop;
    entry *ent;
    int n_ent, cap_ent, free_ent, *buckets, n_buckets;
    size_t total;
    hr_ssd_stats st;
    long restores_at_lookup; /* engine thread */
    /* engine thread: running means of a disk block's restore and a token's prefill (ms), and
     * the lookups skipped since a restore was last tried */
    double restore_ms, prefill_ms;
    long skips_since_probe;
};

enum { PROBE_EVERY = 32 }; /* while restores lose, every 32nd lookup tries one block again */

/* ---- the index ---- */

static int *bucket(hr_ssd_tier *t, uint64_t key) {
    return &t->buckets[key % (uint64_t)t->n_buckets];
}

static int find(hr_ssd_tier *t, uint64_t key) {
    for (int i = t->n_buckets ? *bucket(t, key) : -1; i >= 0; i = t->ent[i].next)
        if (t->ent[i].key == key) return i;
    return -1;
}

static hr_err *rehash(hr_ssd_tier *t, int n_buckets) {
    int *b = malloc(sizeof(int) * (size_t)n_buckets);
    if (!b) return hr_err_oom();
    for (int i = 0; i < n_buckets; i++)
        b[i] = -1;
    free(t->buckets);
    t->buckets = b;
    t->n_buckets = n_buckets;
    for (int i = 0; i < t->cap_ent; i++)
        if (t->ent[i].bytes) { /* in use */
            int *h = bucket(t, t->ent[i].key);
            t->ent[i].next = *h;
            *h = i;
        }
    return NULL;
}

/* A new entry for key (not yet in the index), or -1 out of memory. */
static int add_entry(hr_ssd_tier *t, uint64_t key, uint64_t fp, size_t bytes, int64_t mtime_ns) {
    if (t->free_ent < 0) {
        int cap = t->cap_ent ? 2 * t->cap_ent : 256;
        entry *e = realloc(t->ent, sizeof *e * (size_t)cap);
        if (!e) return -1;
        t->ent = e;
        for (int i = cap - 1; i >= t->cap_ent; i--) {
            e[i] = (entry){.next = t->free_ent};
            t->free_ent = i;
        }
        t->cap_ent = cap;
    }
    if (t->n_buckets < 2 * t->cap_ent) { /* grown, or a rehash that ran out of memory */
        hr_err *err = rehash(t, 2 * t->cap_ent);
        if (err) return hr_err_free(err), -1;
    }
    int i = t->free_ent;
    t->free_ent = t->ent[i].next;
    t->ent[i] = (entry){.key = key, .fp = fp, .bytes = bytes, .mtime_ns = mtime_ns};
    int *h = bucket(t, key);
    t->ent[i].next = *h;
    *h = i;
    t->n_ent++;
    return i;
}

static void remove_entry(hr_ssd_tier *t, int i) {
    int *p = bucket(t, t->ent[i].key);
    while (*p != i)
        p = &t->ent[*p].next;
    *p = t->ent[i].next;
    if (!t->ent[i].pending) {
        t->total -= t->ent[i].bytes;
        if (t->ent[i].fp == t->o.fingerprint) t->st.entries--;
    }
    t->ent[i] = (entry){.next = t->free_ent};
    t->free_ent = i;
    t->n_ent--;
}

static void file_name(uint64_t key, char *buf, size_t cap) {
    snprintf(buf, cap, "%016llx.hkv", (unsigned long long)key);
}

static char *path_of(const hr_ssd_tier *t, uint64_t key) {
    char name[32];
    file_name(key, name, sizeof name);
    return hr_path_join(t->dir, name);
}

static void delete_file(hr_ssd_tier *t, uint64_t key) {
    char *p = path_of(t, key);
    if (p) unlink(p);
    free(p);
}

static void mark_on_disk(hr_ssd_tier *t, int i, int64_t mtime_ns) {
    t->ent[i].pending = NULL;
    t->ent[i].mtime_ns = mtime_ns;
    t->total += t->ent[i].bytes;
    if (t->ent[i].fp == t->o.fingerprint) t->st.entries++;
}

/* Deletes the least recently used files (oldest mtime, any model) until the cap holds. */
static void enforce_cap(hr_ssd_tier *t) {
    while (t->total > t->o.max_bytes) {
        int old = -1;
        for (int i = 0; i < t->cap_ent; i++)
            if (t->ent[i].bytes && !t->ent[i].pending &&
                (old < 0 || t->ent[i].mtime_ns < t->ent[old].mtime_ns))
                old = i;
        if (old < 0) return;
        delete_file(t, t->ent[old].key);
        remove_entry(t, old);
        t->st.removed++;
    }
}

static int64_t mtime_of(const struct stat *s) {
    return (int64_t)s->st_mtim.tv_sec * 1000000000 + s->st_mtim.tv_nsec;
}

static int64_t wall_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* ---- the spill queue and its writer ---- */

static void free_job(job *j) {
    if (!j) return;
    free(j->buf);
    free(j->tokens);
    free(j);
}

/* Drops the oldest queued job (not the one being written), under mu. */
static void drop_oldest(hr_ssd_tier *t) {
    job *j = t->head;
    t->head = j->next;
    if (!t->head) t->tail = NULL;
    t->st.queued_bytes -= j->bytes;
    int i = find(t, j->key);
    if (i >= 0 && t->ent[i].pending == j) remove_entry(t, i);
    free_job(j);
    t->st.dropped++;
}

/* Fills the header of j's image (checksums of its tensors) and writes it atomically. */
static hr_err *write_job(hr_ssd_tier *t, job *j) {
    hr_ssd_header h = t->layout[j->snap];
    h.key = j->key;
    h.parent = j->parent;
    h.tokens = j->tokens;
    for (int i = 0; i < h.n_tensors; i++)
        h.checksum[i] = hr_ssd_hash(j->buf + h.offset[i], h.bytes[i], (uint64_t)i);
    hr_ssd_encode(&h, j->buf);
    char *path = path_of(t, j->key);
    if (!path) return hr_err_oom();
    hr_err *err = hr_write_atomic(path, j->buf, j->bytes);
    int fd = err ? -1 : open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) { /* written pages need not stay in the page cache */
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
    free(path);
    return err;
}

/* A failed write (full or read-only disk): one warning, then memory-only. Under mu. */
static void writes_fail(hr_ssd_tier *t, hr_err *err) {
    HR_WARN("ssd cache %s: %s; writes are off from now on (serving goes on from memory)", t->dir,
            hr_err_msg(err));
    hr_err_free(err);
    t->st.writes_off = 1;
    while (t->head)
        drop_oldest(t);
}

static void *writer_main(void *arg) {
    hr_ssd_tier *t = arg;
    /* background work: on a CPU box the writer's checksums and syscalls yield to decoding
     * (Linux's nice is per thread); failure to lower it changes nothing else */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10))
        HR_DEBUG("ssd cache writer: nice failed");
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (!t->head && !t->stop)
            pthread_cond_wait(&t->work, &t->mu);
        if (!t->head) break;
        job *j = t->head;
        t->head = j->next;
        if (!t->head) t->tail = NULL;
        t->writing = 1;
        pthread_mutex_unlock(&t->mu);
        hr_err *err = write_job(t, j);
        int64_t now = wall_ns();
        pthread_mutex_lock(&t->mu);
        t->writing = 0;
        t->st.queued_bytes -= j->bytes;
        int i = find(t, j->key);
        if (err) {
            if (i >= 0) remove_entry(t, i);
            t->st.dropped++;
            writes_fail(t, err);
        } else if (i >= 0 && t->ent[i].pending == j) {
            mark_on_disk(t, i, now);
            t->st.spills++;
            enforce_cap(t);
        }
        free_job(j);
        pthread_cond_broadcast(&t->room);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* Reads (restore 0) or writes (1) a tensor of the pool's KV store or snapshot memory. */
static hr_err *move(hr_ssd_tier *t, void *base, size_t off, uint8_t *host, size_t n, int restore) {
    char *dev = (char *)base + off;
    return restore ? t->be->vt->write(t->be, dev, host, n) : t->be->vt->read(t->be, dev, host, n);
}

/* Moves block b's tensors between the pool and a file image of layout L: each KV layer's K
 * and V region of the block, then (L 1, snap >= 0) each state layer's conv window and delta
 * matrix of snapshot snap. */
static hr_err *move_block(hr_ssd_tier *t, uint8_t *img, int b, int L, int snap, int restore) {
    const hr_kv_store *s = t->store;
    const hr_ssd_header *lay = &t->layout[L];
    for (int l = 0; l < s->n_layers; l++) {
        size_t n = t->block_bytes[l], off = s->layer_off[l] + (size_t)b * n;
        HR_TRY(move(t, s->k, off, img + lay->offset[2 * l], n, restore));
        HR_TRY(move(t, s->v, off, img + lay->offset[2 * l + 1], n, restore));
    }
    for (int l = 0; L == 1 && snap >= 0 && l < s->n_state_layers; l++) {
        size_t at = (size_t)l * (size_t)s->n_snapshots + (size_t)snap, k = 2 * (size_t)s->n_layers;
        size_t nc = sizeof(float) * (size_t)s->conv_floats,
               nd = sizeof(float) * (size_t)s->delta_floats;
        HR_TRY(move(t, s->snap_conv, at * nc, img + lay->offset[k + 2 * (size_t)l], nc, restore));
        HR_TRY(
            move(t, s->snap_delta, at * nd, img + lay->offset[k + 2 * (size_t)l + 1], nd, restore));
    }
    return NULL;
}

/* The file image of pool block b (with its state snapshot when it has one): its tensors read
 * from the backend into an aligned buffer. */
static job *copy_block(hr_ssd_tier *t, hr_kv_pool *pool, int b) {
    job *j = calloc(1, sizeof *j);
    int bs = pool->store.block_size;
    if (j) j->snap = t->n_layouts > 1 && pool->snap[b] >= 0;
    if (j) j->bytes = t->file_bytes[j->snap];
    if (!j || !(j->buf = aligned_alloc(HR_SSD_ALIGN, j->bytes)) ||
        !(j->tokens = malloc(sizeof(int32_t) * (size_t)bs))) {
        free_job(j);
        return NULL;
    }
    j->key = pool->key[b];
    j->parent = pool->parent[b];
    memcpy(j->tokens, pool->tokens + (size_t)b * (size_t)bs, sizeof(int32_t) * (size_t)bs);
    hr_err *err = move_block(t, j->buf, b, j->snap, pool->snap[b], 0);
    if (err) {
        HR_WARN("ssd cache: reading block %d from the KV store: %s", b, hr_err_msg(err));
        hr_err_free(err);
        free_job(j);
        return NULL;
    }
    return j;
}

/* Queues pool block b unless its key is indexed already. drop: make room by dropping the
 * oldest pending spills (eviction); else refuse (return 0) when the queue is full. */
static int offer(hr_ssd_tier *t, hr_kv_pool *pool, int b, int drop) {
    pthread_mutex_lock(&t->mu);
    int known = t->st.writes_off || find(t, pool->key[b]) >= 0;
    size_t most = t->file_bytes[t->n_layouts - 1];
    int full = t->st.queued_bytes > 0 && t->st.queued_bytes + most > t->o.queue_bytes;
    pthread_mutex_unlock(&t->mu);
    if (known) return 1;
    if (full && !drop) return 0;
    job *j = copy_block(t, pool, b);
    if (!j) return 1;
    pthread_mutex_lock(&t->mu);
    while (t->head && t->st.queued_bytes + j->bytes > t->o.queue_bytes)
        drop_oldest(t);
    int i = t->st.writes_off ? -1 : add_entry(t, j->key, t->o.fingerprint, j->bytes, 0);
    if (i < 0) {
        t->st.dropped++;
        free_job(j);
    } else {
        t->ent[i].pending = j;
        if (t->tail)
            t->tail->next = j;
        else
            t->head = j;
        t->tail = j;
        t->st.queued_bytes += j->bytes;
        pthread_cond_signal(&t->work);
    }
    pthread_mutex_unlock(&t->mu);
    return 1;
}

static void on_evict(void *ctx, hr_kv_pool *pool, int b) { offer(ctx, pool, b, 1); }

int hr_ssd_tier_write_behind(hr_ssd_tier *t, hr_kv_pool *pool, int (*busy)(void *ctx), void *ctx) {
    for (int b = pool->lru_tail; b >= 0; b = pool->lru_prev[b])
        if (busy(ctx) || !offer(t, pool, b, 0)) return 1;
    return 0;
}

void hr_ssd_tier_flush(hr_ssd_tier *t, hr_kv_pool *pool) {
    for (int b = pool->lru_tail; b >= 0; b = pool->lru_prev[b])
        while (!offer(t, pool, b, 0)) {
            pthread_mutex_lock(&t->mu);
            if (t->head || t->writing) pthread_cond_wait(&t->room, &t->mu);
            pthread_mutex_unlock(&t->mu);
        }
}

void hr_ssd_tier_drain(hr_ssd_tier *t) {
    pthread_mutex_lock(&t->mu);
    while (t->head || t->writing)
        pthread_cond_wait(&t->room, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

/* ---- restore ---- */

/* Writes a file image of layout L into pool block b; with L 1 also its state snapshot, into
 * a snapshot the pool gives the block (none left: the block comes back without one, and a
 * hybrid lookup then ends before it). */
static hr_err *load_block(hr_ssd_tier *t, hr_kv_pool *pool, uint8_t *img, int b, int L) {
    int snap = L == 1 ? hr_kv_pool_attach_snapshot(pool, b) : -1;
    return move_block(t, img, b, L, snap, 1);
}

/* Checks a file image of n bytes read into the stage against the block asked for: NULL and
 * its layout in *L when it is that block; *corrupt says whether the file is damaged (else it
 * is another block, a collision). */
static hr_err *check_image(hr_ssd_tier *t, size_t n, uint64_t key, uint64_t parent,
                           const int32_t *tokens, int *L, int *corrupt) {
    hr_ssd_header h;
    *corrupt = 1;
    HR_TRY(hr_ssd_decode(t->stage, n, n, &h));
    *L = t->n_layouts > 1 && h.n_tensors == t->layout[1].n_tensors;
    const hr_ssd_header *lay = &t->layout[*L];
    if (h.fingerprint != t->o.fingerprint || h.tok_hash != t->o.tok_hash ||
        h.block_size != lay->block_size || h.n_tensors != lay->n_tensors || n != t->file_bytes[*L])
        return hr_errf("made for another model, tokenizer or layout");
    for (int i = 0; i < h.n_tensors; i++) {
        if (h.bytes[i] != lay->bytes[i] || h.offset[i] != lay->offset[i])
            return hr_errf("tensor %d's size or place differs from this model's", i);
        if (t->o.verify &&
            hr_ssd_hash(t->stage + h.offset[i], h.bytes[i], (uint64_t)i) != h.checksum[i])
            return hr_errf("tensor %d fails its checksum", i);
    }
    *corrupt = 0;
    if (h.key != key || h.parent != parent ||
        memcmp(h.tokens, tokens, sizeof(int32_t) * (size_t)h.block_size))
        return hr_errf("holds another block (key collision)");
    return NULL;
}

/* Reads key's file (n bytes, as indexed) into the stage; fd stays open for the touch and the
 * fadvise. */
static hr_err *read_file(hr_ssd_tier *t, uint64_t key, size_t n, int *fd) {
    char *path = path_of(t, key);
    if (!path) return hr_err_oom();
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (*fd < 0) return hr_errf("cannot open: %s", strerror(errno));
    if (n > t->file_bytes[t->n_layouts - 1])
        return hr_errf("%zu bytes: larger than this model's blocks", n);
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(*fd, t->stage + got, n - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return hr_errf("truncated at %zu of %zu bytes", got, n);
        got += (size_t)r;
    }
    return NULL;
}

/* A pending block: its image is still in the queue (or being written); under mu. */
static int restore_pending(hr_ssd_tier *t, hr_kv_pool *pool, const job *j, uint64_t parent,
                           const int32_t *tokens, int b) {
    if (j->parent != parent ||
        memcmp(j->tokens, tokens, sizeof(int32_t) * (size_t)pool->store.block_size))
        return 0;
    hr_err *err = load_block(t, pool, j->buf, b, j->snap);
    hr_err_free(err);
    return !err;
}

/* Reads key's file into pool block b; a damaged file is deleted (and logged). */
static int restore_file(hr_ssd_tier *t, hr_kv_pool *pool, uint64_t key, size_t n, uint64_t parent,
                        const int32_t *tokens, int b) {
    int fd = -1, corrupt = 0, L = 0;
    hr_err *err = read_file(t, key, n, &fd);
    if (!err) err = check_image(t, n, key, parent, tokens, &L, &corrupt);
    if (!err) err = load_block(t, pool, t->stage, b, L);
    if (fd >= 0) {
        if (!err) futimens(fd, NULL); /* LRU by mtime: a hit is a use */
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
    pthread_mutex_lock(&t->mu);
    int i = find(t, key);
    if (err && (corrupt || fd < 0)) {
        HR_WARN("ssd cache %s: block %016llx: %s; %s", t->dir, (unsigned long long)key,
                hr_err_msg(err), fd >= 0 ? "deleted" : "forgotten");
        if (fd >= 0) delete_file(t, key);
        if (i >= 0 && !t->ent[i].pending) remove_entry(t, i);
        if (fd >= 0) t->st.removed++;
    } else if (!err && i >= 0) {
        t->ent[i].mtime_ns = wall_ns();
    }
    pthread_mutex_unlock(&t->mu);
    hr_err_free(err);
    return !err;
}

int hr_ssd_restore_pays(double restore_ms, double prefill_ms, int block_size) {
    return restore_ms <= 0 || prefill_ms <= 0 || restore_ms <= prefill_ms * block_size;
}

/* A running mean: the first value, then a quarter of each new one. */
static void blend(double *mean, double v) { *mean = *mean > 0 ? 0.75 * *mean + 0.25 * v : v; }

void hr_ssd_tier_note_prefill(hr_ssd_tier *t, int tokens, double ms) {
    if (tokens >= 64 && ms > 0) blend(&t->prefill_ms, ms / tokens);
}

/* Whether a block on disk should be read back rather than prefilled (engine thread); when not,
 * the lookup is counted as skipped, and every PROBE_EVERY-th one restores anyway so the
 * restore's cost is measured again. */
static int restore_wanted(hr_ssd_tier *t, int block_size) {
    if (t->o.always_restore || hr_ssd_restore_pays(t->restore_ms, t->prefill_ms, block_size))
        return 1;
    if (++t->skips_since_probe >= PROBE_EVERY) {
        t->skips_since_probe = 0;
        return 1;
    }
    pthread_mutex_lock(&t->mu);
    t->st.skipped++;
    pthread_mutex_unlock(&t->mu);
    return 0;
}

/* The pool's miss hook. The block is taken before mu is held: taking one may evict, and the
 * eviction hook queues a spill under mu. */
static int on_restore(void *ctx, hr_kv_pool *pool, uint64_t key, uint64_t parent,
                      const int32_t *tokens) {
    hr_ssd_tier *t = ctx;
    if (hr_kv_pool_available(pool) <= 1) return -1; /* leave a block for the prompt's rest */
    pthread_mutex_lock(&t->mu);
    int i = find(t, key), have = i >= 0 && t->ent[i].fp == t->o.fingerprint;
    int from_disk = have && !t->ent[i].pending;
    pthread_mutex_unlock(&t->mu);
    if (from_disk && !restore_wanted(t, pool->store.block_size)) return -1;
    int b = have ? hr_kv_pool_take(pool) : -1;
    if (b < 0) return -1;
    pthread_mutex_lock(&t->mu);
    i = find(t, key);
    int ok = 0, on_disk = i >= 0 && !t->ent[i].pending;
    size_t n = on_disk ? t->ent[i].bytes : 0;
    if (i >= 0 && t->ent[i].pending)
        ok = restore_pending(t, pool, t->ent[i].pending, parent, tokens, b);
    pthread_mutex_unlock(&t->mu);
    if (on_disk) {
        uint64_t t0 = hr_now_ns();
        ok = restore_file(t, pool, key, n, parent, tokens, b);
        if (ok) blend(&t->restore_ms, (double)(hr_now_ns() - t0) / 1e6);
    }
    if (!ok) {
        hr_kv_pool_put(pool, b);
        return -1;
    }
    pthread_mutex_lock(&t->mu);
    t->st.restores++;
    pthread_mutex_unlock(&t->mu);
    return b;
}

void hr_ssd_tier_lookup_done(hr_ssd_tier *t, double ms) {
    pthread_mutex_lock(&t->mu);
    if (t->st.restores > t->restores_at_lookup) {
        t->st.hits++;
        t->st.last_restore_ms = ms;
        t->restores_at_lookup = t->st.restores;
    }
    pthread_mutex_unlock(&t->mu);
}

void hr_ssd_tier_stats(hr_ssd_tier *t, hr_ssd_stats *st) {
    pthread_mutex_lock(&t->mu);
    *st = t->st;
    st->bytes = t->total;
    pthread_mutex_unlock(&t->mu);
}

/* ---- measured costs, kept across restarts ---- */

/* This model's measured restore and prefill costs: "FINGERPRINT.costs", one text line. */
static char *costs_path(const hr_ssd_tier *t) {
    char name[40];
    snprintf(name, sizeof name, "%016llx.costs", (unsigned long long)t->o.fingerprint);
    return hr_path_join(t->dir, name);
}

/* The costs an earlier run measured (a missing or unreadable file leaves them unknown), so a
 * restarted server weighs its first restore too. */
static void load_costs(hr_ssd_tier *t) {
    char *path = costs_path(t), *text = NULL;
    size_t n;
    hr_err *err = path ? hr_read_file_max(path, 256, &text, &n) : hr_err_oom();
    double r, p;
    if (!err && sscanf(text, "%lf %lf", &r, &p) == 2 && isfinite(r) && isfinite(p) && r >= 0 &&
        p >= 0)
        t->restore_ms = r, t->prefill_ms = p;
    hr_err_free(err);
    free(text);
    free(path);
}

static void save_costs(const hr_ssd_tier *t) {
    if (t->restore_ms <= 0 && t->prefill_ms <= 0) return;
    char line[64];
    int n = snprintf(line, sizeof line, "%.6g %.6g\n", t->restore_ms, t->prefill_ms);
    char *path = costs_path(t);
    if (path) hr_err_free(hr_write_atomic(path, line, (size_t)n)); /* a lost file: re-measured */
    free(path);
}

/* ---- open: the header-only scan ---- */

/* A temporary file of hr_write_atomic ("NAME.tmp.PID") whose writer is gone: a write cut
 * short (kill -9, power loss). A live process's is left alone (another server may share dir). */
static int stale_tmp(const char *name) {
    const char *p = strstr(name, ".hkv.tmp."), *c = strstr(name, ".costs.tmp.");
    if (!p && !c) return 0;
    long pid = strtol(p ? p + 9 : c + 11, NULL, 10);
    return pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH);
}

/* Parses NAME.hkv into its key; 0 when name is not a block file's. */
static uint64_t key_of_name(const char *name) {
    char want[32];
    if (strlen(name) != 20 || strcmp(name + 16, ".hkv")) return 0;
    uint64_t key = strtoull(name, NULL, 16);
    file_name(key, want, sizeof want);
    return strcmp(want, name) ? 0 : key;
}

/* Reads and checks one file's header; NULL and its fingerprint when it is sound. */
static hr_err *scan_header(int fd, uint64_t key, const struct stat *s, uint64_t *fp) {
    uint8_t page[HR_SSD_ALIGN];
    if (pread(fd, page, sizeof page, 0) != (ssize_t)sizeof page)
        return hr_errf("truncated header (%lld bytes)", (long long)s->st_size);
    size_t span;
    HR_TRY(hr_ssd_header_span(page, sizeof page, &span));
    uint8_t *buf = span > sizeof page ? malloc(span) : page;
    if (!buf) return hr_err_oom();
    hr_err *err = NULL;
    if (buf != page && pread(fd, buf, span, 0) != (ssize_t)span) err = hr_errf("truncated header");
    hr_ssd_header h = {0};
    if (!err) err = hr_ssd_decode(buf, span, (uint64_t)s->st_size, &h);
    if (!err && h.key != key)
        err = hr_errf("its header names block %016llx", (unsigned long long)h.key);
    size_t end = h.n_tensors > 0
                     ? (h.offset[h.n_tensors - 1] + h.bytes[h.n_tensors - 1] + HR_SSD_ALIGN - 1) /
                           HR_SSD_ALIGN * HR_SSD_ALIGN
                     : 0;
    if (!err && end != (size_t)s->st_size)
        err = hr_errf("%lld bytes where its header says %zu", (long long)s->st_size, end);
    if (!err) *fp = h.fingerprint;
    if (buf != page) free(buf);
    return err;
}

static void scan_one(hr_ssd_tier *t, const char *name) {
    char *path = hr_path_join(t->dir, name);
    if (!path) return;
    uint64_t key = key_of_name(name), fp = 0;
    if (!key) {
        if (stale_tmp(name)) {
            HR_WARN("ssd cache %s: removing %s (a write that did not finish)", t->dir, name);
            unlink(path);
        }
        free(path);
        return;
    }
    struct stat s;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    hr_err *err = fd < 0          ? hr_errf("cannot open: %s", strerror(errno))
                  : fstat(fd, &s) ? hr_errf("cannot stat: %s", strerror(errno))
                                  : scan_header(fd, key, &s, &fp);
    if (fd >= 0) close(fd);
    if (err) {
        HR_WARN("ssd cache %s: %s: %s; deleted", t->dir, name, hr_err_msg(err));
        hr_err_free(err);
        unlink(path);
        t->st.removed++;
    } else if (find(t, key) < 0) {
        int i = add_entry(t, key, fp, (size_t)s.st_size, mtime_of(&s));
        if (i >= 0) mark_on_disk(t, i, mtime_of(&s));
    }
    free(path);
}

static hr_err *scan(hr_ssd_tier *t) {
    DIR *d = opendir(t->dir);
    if (!d) return hr_errf("--ssd-cache %s: %s", t->dir, strerror(errno));
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.') scan_one(t, de->d_name);
    closedir(d);
    enforce_cap(t);
    return NULL;
}

/* This pool's file layouts: K then V of each KV layer, a block's region of each; for hybrid
 * models a second one adds each state layer's conv window and delta matrix (a snapshot). */
static void set_layout(hr_ssd_tier *t, const hr_kv_store *s) {
    t->n_layouts = s->n_state_layers > 0 && s->n_snapshots > 0 ? 2 : 1;
    for (int L = 0; L < t->n_layouts; L++) {
        hr_ssd_header *h = &t->layout[L];
        *h = (hr_ssd_header){.fingerprint = t->o.fingerprint,
                             .tok_hash = t->o.tok_hash,
                             .block_size = s->block_size,
                             .n_tensors = 2 * s->n_layers + (L ? 2 * s->n_state_layers : 0)};
        for (int l = 0; l < s->n_layers; l++) {
            int hd = s->layer_head_dim ? s->layer_head_dim[l] : s->head_dim;
            t->block_bytes[l] =
                (size_t)s->block_size * (size_t)s->n_kv_heads * hr_kv_row_bytes(s->dtype, hd);
            h->bytes[2 * l] = h->bytes[2 * l + 1] = t->block_bytes[l];
        }
        for (int l = 0; L && l < s->n_state_layers; l++) {
            h->bytes[2 * s->n_layers + 2 * l] = sizeof(float) * (size_t)s->conv_floats;
            h->bytes[2 * s->n_layers + 2 * l + 1] = sizeof(float) * (size_t)s->delta_floats;
        }
        t->file_bytes[L] = hr_ssd_layout(h);
    }
}

static hr_err *tier_start(hr_ssd_tier *t, hr_kv_pool *pool) {
    const hr_kv_store *s = &pool->store;
    if (s->n_layers <= 0 || 2 * (s->n_layers + s->n_state_layers) > HR_SSD_MAX_TENSORS ||
        s->block_size > HR_SSD_MAX_BLOCK)
        return hr_errf("--ssd-cache: %d KV layers of %d-position blocks do not fit the format",
                       s->n_layers, s->block_size);
    set_layout(t, s);
    if (!(t->stage = aligned_alloc(HR_SSD_ALIGN, t->file_bytes[t->n_layouts - 1])))
        return hr_err_oom();
    struct stat st;
    if (stat(t->dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return hr_errf("--ssd-cache %s is not a directory", t->dir);
    HR_TRY(hr_err_wrap(hr_mkdir_p(t->dir), "--ssd-cache %s: ", t->dir)); /* keeps HR_E_OOM */
    HR_TRY(scan(t));
    load_costs(t);
    HR_TRY(hr_thread_start(&t->writer, writer_main, t, "ssd cache writer"));
    t->writer_started = 1;
    return NULL;
}

hr_err *hr_ssd_tier_open(const hr_ssd_options *o, hr_kv_pool *pool, hr_ssd_tier **out) {
    *out = NULL;
    hr_ssd_tier *t = calloc(1, sizeof *t);
    if (!t) return hr_err_oom();
    t->o = *o;
    if (!t->o.queue_bytes) t->o.queue_bytes = DEFAULT_QUEUE;
    t->dir = strdup(o->dir);
    t->be = pool->be;
    t->store = &pool->store;
    t->free_ent = -1;
    t->o.dir = t->dir;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->work, NULL);
    pthread_cond_init(&t->room, NULL);
    hr_err *err = t->dir ? tier_start(t, pool) : hr_err_oom();
    if (err) {
        hr_ssd_tier_close(t, pool);
        return err;
    }
    pool->tier = (hr_kv_tier_hooks){.evict = on_evict, .restore = on_restore, .ctx = t};
    *out = t;
    return NULL;
}

void hr_ssd_tier_close(hr_ssd_tier *t, hr_kv_pool *pool) {
    if (!t) return;
    if (pool && pool->tier.ctx == t) pool->tier = (hr_kv_tier_hooks){0};
    if (t->writer_started) {
        pthread_mutex_lock(&t->mu);
        t->stop = 1;
        pthread_cond_signal(&t->work);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->writer, NULL);
        save_costs(t);
    }
    while (t->head)
        drop_oldest(t);
    free(t->ent);
    free(t->buckets);
    free(t->stage);
    free(t->dir);
    pthread_cond_destroy(&t->work);
    pthread_cond_destroy(&t->room);
    pthread_mutex_destroy(&t->mu);
    free(t);
}
