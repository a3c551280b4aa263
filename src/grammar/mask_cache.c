/* The process-wide cache of mask entries (mask_cache.h): one mutex over a hash table threaded
 * on an LRU list, bounded in bytes (256 MiB unless hr_grammar_mask_cache_limit says
 * otherwise). Entries are built outside the lock by mask.c and offered here; an entry larger
 * than 1/16 of the cap is not kept (used once by its mask, then freed). Evicting an entry
 * only drops the cache's reference: a mask reading it keeps it alive until it is done. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/gram_ir.h"
#include "grammar/mask_cache.h"

#define N_BUCKETS 4096
#define DEFAULT_CAP ((size_t)256 << 20)

static struct {
    pthread_mutex_t mu;
    hr_gentry *bucket[N_BUCKETS];
    hr_glru lru;
    size_t cap, bytes, entries;
    uint64_t hits, misses, evictions;
} cache = {.mu = PTHREAD_MUTEX_INITIALIZER, .cap = DEFAULT_CAP};

uint64_t hr_gentry_hash(uint64_t vocab, const hr_gkey_pair *p, int n) {
    uint64_t h = (vocab + 1) * 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < n; i++) {
        h = (h ^ p[i].uid) * 1099511628211ull;
        h = (h ^ (uint32_t)p[i].state ^ (uint64_t)p[i].counts << 32) * 1099511628211ull;
    }
    return h;
}

void hr_gentry_free(hr_gentry *e) {
    if (!e) return;
    free(e->pairs);
    free(e->bits);
    free(e->word);
    for (int g = 0; e->suffix && g < e->n_groups; g++) {
        hr_gstrie *t = &e->suffix[g];
        free(t->byte), free(t->depth), free(t->end), free(t->tok_beg), free(t->tok);
    }
    free(e->suffix);
    free(e->big);
    free(e->big_beg);
    free(e->rep);
    free(e);
}

void hr_gentry_release(hr_gentry *e) {
    if (e && atomic_fetch_sub(&e->refs, 1) == 1) hr_gentry_free(e);
}

/* ---- the table (callers hold the lock) ---- */

static hr_gentry **find(uint64_t vocab, const hr_gkey_pair *p, int n, uint64_t h) {
    hr_gentry **q = &cache.bucket[h % N_BUCKETS];
    for (; *q; q = &(*q)->chain)
        if ((*q)->hash == h && (*q)->vocab == vocab && (*q)->n_pairs == n &&
            !memcmp((*q)->pairs, p, (size_t)n * sizeof *p))
            break;
    return q;
}

static void drop(hr_gentry *e) {
    hr_gentry **q = find(e->vocab, e->pairs, e->n_pairs, e->hash);
    *q = e->chain;
    hr_glru_unlink(&cache.lru, &e->lru);
    cache.bytes -= e->bytes;
    cache.entries--;
    hr_gentry_release(e);
}

static void shrink_to(size_t cap) {
    for (; cache.lru.oldest && cache.bytes > cap; cache.evictions++)
        drop((hr_gentry *)cache.lru.oldest);
}

/* ---- lookups ---- */

hr_gentry *hr_gentry_find(uint64_t vocab, const hr_gkey_pair *p, int n, uint64_t hash) {
    pthread_mutex_lock(&cache.mu);
    hr_gentry *e = *find(vocab, p, n, hash);
    if (e) {
        atomic_fetch_add(&e->refs, 1);
        hr_glru_unlink(&cache.lru, &e->lru);
        hr_glru_push(&cache.lru, &e->lru);
        cache.hits++;
    } else
        cache.misses++;
    pthread_mutex_unlock(&cache.mu);
    return e;
}

hr_gentry *hr_gentry_publish(hr_gentry *fresh) {
    atomic_store(&fresh->refs, 1);
    pthread_mutex_lock(&cache.mu);
    hr_gentry **q = find(fresh->vocab, fresh->pairs, fresh->n_pairs, fresh->hash), *e = *q;
    if (e)
        atomic_fetch_add(&e->refs, 1);
    else if (fresh->bytes <= cache.cap / 16) {
        atomic_fetch_add(&fresh->refs, 1);
        fresh->chain = NULL;
        *q = fresh;
        hr_glru_push(&cache.lru, &fresh->lru);
        cache.bytes += fresh->bytes;
        cache.entries++;
        shrink_to(cache.cap);
    }
    pthread_mutex_unlock(&cache.mu);
    if (!e) return fresh;
    hr_gentry_release(fresh);
    return e;
}

void hr_gentry_forget_vocab(uint64_t vocab) {
    pthread_mutex_lock(&cache.mu);
    for (hr_glru_link *l = cache.lru.newest, *older; l; l = older) {
        older = l->older;
        if (((hr_gentry *)l)->vocab == vocab) drop((hr_gentry *)l);
    }
    pthread_mutex_unlock(&cache.mu);
}

void hr_grammar_mask_cache_limit(size_t bytes) {
    pthread_mutex_lock(&cache.mu);
    cache.cap = bytes;
    shrink_to(bytes);
    pthread_mutex_unlock(&cache.mu);
}

void hr_grammar_mask_cache_stats(hr_grammar_shared_info *info) {
    pthread_mutex_lock(&cache.mu);
    *info = (hr_grammar_shared_info){.hits = cache.hits,
                                     .misses = cache.misses,
                                     .evictions = cache.evictions,
                                     .entries = cache.entries,
                                     .bytes = cache.bytes};
    pthread_mutex_unlock(&cache.mu);
}
