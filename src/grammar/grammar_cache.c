/* The compiled-grammar cache: a hash table (by FNV-1a of kind and text, texts compared on
 * a hit) threaded on a doubly linked LRU list, under one mutex. Compiling happens outside
 * the lock; a grammar's size (its tables and its text) is measured once, as it is kept. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_cache.h"
#include "grammar/lru.h"

#define N_BUCKETS 1024

typedef struct entry {
    hr_glru_link lru;        /* first: a link is its entry */
    struct entry *next_hash; /* the bucket's list */
    uint64_t hash;
    hr_grammar_src kind;
    char *text;
    size_t len, bytes;
    hr_grammar *g;
} entry;

struct hr_grammar_cache {
    pthread_mutex_t mu;
    entry *bucket[N_BUCKETS];
    hr_glru lru;
    size_t cap, bytes, n;
    uint64_t hits, compiles, evictions;
};

static uint64_t hash_text(hr_grammar_src kind, const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)kind;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

hr_err *hr_grammar_cache_create(size_t cap_bytes, hr_grammar_cache **out) {
    hr_grammar_cache *c = calloc(1, sizeof *c);
    if (!c) return hr_err_oom();
    pthread_mutex_init(&c->mu, NULL);
    c->cap = cap_bytes;
    *out = c;
    return NULL;
}

static void drop(hr_grammar_cache *c, entry *e) {
    entry **p = &c->bucket[e->hash % N_BUCKETS];
    while (*p != e)
        p = &(*p)->next_hash;
    *p = e->next_hash;
    hr_glru_unlink(&c->lru, &e->lru);
    c->bytes -= e->bytes;
    c->n--;
    hr_grammar_free(e->g);
    free(e->text);
    free(e);
}

/* Evicts the least recently used until the cache fits its cap (a kept grammar alone always
 * fits: insert keeps none larger than the cap). */
static void shrink(hr_grammar_cache *c) {
    for (; c->lru.oldest && c->bytes > c->cap; c->evictions++)
        drop(c, (entry *)c->lru.oldest);
}

static entry *find(hr_grammar_cache *c, uint64_t h, hr_grammar_src kind, const char *text,
                   size_t len) {
    for (entry *e = c->bucket[h % N_BUCKETS]; e; e = e->next_hash)
        if (e->hash == h && e->kind == kind && e->len == len && !memcmp(e->text, text, len))
            return e;
    return NULL;
}

static hr_err *compile(hr_grammar_src kind, const char *text, size_t len, hr_grammar **out) {
    return kind == HR_GRAMMAR_SRC_REGEX ? hr_grammar_compile_regex(text, len, out)
                                        : hr_grammar_compile(text, len, out);
}

/* Keeps g (one more reference) unless an equal entry appeared meanwhile or it is too big. */
static void insert(hr_grammar_cache *c, uint64_t h, hr_grammar_src kind, const char *text,
                   size_t len, hr_grammar *g) {
    size_t bytes = hr_grammar_bytes(g) + len;
    if (bytes > c->cap || find(c, h, kind, text, len)) return;
    entry *e = calloc(1, sizeof *e);
    char *t = e ? malloc(len + 1) : NULL;
    if (!t) {
        free(e);
        return;
    }
    memcpy(t, text, len);
    t[len] = 0;
    *e = (entry){
        .hash = h, .kind = kind, .text = t, .len = len, .bytes = bytes, .g = hr_grammar_ref(g)};
    e->next_hash = c->bucket[h % N_BUCKETS];
    c->bucket[h % N_BUCKETS] = e;
    hr_glru_push(&c->lru, &e->lru);
    c->bytes += bytes;
    c->n++;
    shrink(c);
}

hr_err *hr_grammar_cache_get(hr_grammar_cache *c, hr_grammar_src kind, const char *text, size_t len,
                             hr_grammar **out) {
    *out = NULL;
    if (!c) return compile(kind, text, len, out);
    uint64_t h = hash_text(kind, text, len);
    pthread_mutex_lock(&c->mu);
    entry *e = find(c, h, kind, text, len);
    if (e) {
        c->hits++;
        hr_glru_unlink(&c->lru, &e->lru);
        hr_glru_push(&c->lru, &e->lru);
        *out = hr_grammar_ref(e->g);
        pthread_mutex_unlock(&c->mu);
        return NULL;
    }
    c->compiles++;
    pthread_mutex_unlock(&c->mu);
    HR_TRY(compile(kind, text, len, out));
    pthread_mutex_lock(&c->mu);
    insert(c, h, kind, text, len, *out);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

void hr_grammar_cache_stats_get(hr_grammar_cache *c, hr_grammar_cache_stats *out) {
    *out = (hr_grammar_cache_stats){0};
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    *out = (hr_grammar_cache_stats){c->hits, c->compiles, c->evictions, c->n, c->bytes, c->cap};
    pthread_mutex_unlock(&c->mu);
}

void hr_grammar_cache_free(hr_grammar_cache *c) {
    if (!c) return;
    while (c->lru.newest)
        drop(c, (entry *)c->lru.newest);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
