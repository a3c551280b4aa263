/* The process-wide cache of terminal DFAs: every JSON Schema grammar rebuilds the same
 * terminals (a string, a number, `"," ws`, a key's quotes and colon), so each is built once
 * per process. The key is the terminal's structure written out canonically (each distinct
 * structure once, in post-order, kids named by their position in that order; rule
 * references followed), so two terminals share an entry exactly when hr_gdfa_build would
 * build them from the same structure, and the DFA copied out of the cache is the one the
 * build would give. Entries hold the rows over byte classes (a DFA's few distinct
 * columns), widened again on a hit; a DFA over 1/64 of the cap is not kept (the large ones
 * are unique to their schema and would push out the small shared ones). One mutex guards a
 * hash table threaded on an LRU list, bounded in bytes; DFAs are built outside the lock (two
 * threads missing on one key may both build it; the first to finish is kept). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/gram_ir.h"
#include "grammar/lru.h"

#define N_BUCKETS 4096
#define DEFAULT_CAP ((size_t)32 << 20)

/* A DFA as the cache holds it: its rows over byte classes (bytes whose columns are equal)
 * instead of 256 bytes, a few dozen times smaller; one block holds the arrays. */
typedef struct {
    uint64_t uid;         /* the DFA's, given to every copy */
    int n, k;             /* states, byte classes */
    uint8_t cls[256];     /* each byte's class */
    int32_t *tab;         /* (n, k) */
    uint8_t *accept;      /* (n) */
    hr_gbytes *chain_set; /* (n) */
    int32_t *chain_len;   /* (n) */
} packed;

typedef struct dentry {
    hr_glru_link lru;     /* first: a link is its entry */
    struct dentry *chain; /* the bucket's list */
    uint64_t hash;
    int32_t *key;
    size_t key_n, bytes;
    packed dfa;
} dentry;

static struct {
    pthread_mutex_t mu;
    dentry *bucket[N_BUCKETS];
    hr_glru lru;
    size_t cap, bytes;
    uint64_t hits, misses, evictions;
} cache = {.mu = PTHREAD_MUTEX_INITIALIZER, .cap = DEFAULT_CAP};

/* ---- the key ---- */

typedef struct {
    hr_gcanon *canon;
    const hr_gir *ir;
    int *ord; /* (cap_ord) each structural id's position in the key, -1 not yet written */
    int cap_ord, n_ord;
    hr_gints out;
    int oom;
} keyer;

static int deref(const hr_gir *ir, int node) {
    while (ir->nodes[node].kind == HR_GN_REF)
        node = ir->body[ir->nodes[node].child];
    return node;
}

static void put(keyer *k, int x) {
    if (hr_gints_push(&k->out, x)) k->oom = 1;
}

/* Room in ord for structural id `id`. */
static int ord_room(keyer *k, int id) {
    if (id < k->cap_ord) return 0;
    int cap = k->cap_ord ? k->cap_ord : 64;
    while (cap <= id)
        cap *= 2;
    int *o = realloc(k->ord, (size_t)cap * sizeof *o);
    if (!o) return -1;
    for (int i = k->cap_ord; i < cap; i++)
        o[i] = -1;
    k->ord = o;
    k->cap_ord = cap;
    return 0;
}

/* Writes node's structure unless one like it is written already; its position, -1 on OOM. */
static int write_node(keyer *k, int node) {
    node = deref(k->ir, node);
    int id = hr_gcanon_id(k->canon, node);
    if (id < 0 || ord_room(k, id)) return -1;
    if (k->ord[id] >= 0) return k->ord[id];
    const hr_gnode *n = &k->ir->nodes[node];
    int one = n->kind == HR_GN_REP || n->kind == HR_GN_NOT;
    int nk = one ? 1 : n->kind == HR_GN_SET ? 0 : n->n;
    int kid_ord[8], *kids = nk <= 8 ? kid_ord : malloc((size_t)nk * sizeof(int));
    if (!kids) return -1;
    for (int i = 0; i < nk && !k->oom; i++) {
        kids[i] = write_node(k, one ? n->child : k->ir->kids[n->first + i]);
        if (kids[i] < 0) k->oom = 1;
    }
    put(k, (int)n->kind);
    put(k, n->n);
    put(k, n->min);
    put(k, n->max);
    for (int i = 0; n->kind == HR_GN_SET && i < n->n; i++) {
        put(k, (int)k->ir->ranges[n->first + i].lo);
        put(k, (int)k->ir->ranges[n->first + i].hi);
    }
    for (int i = 0; i < nk; i++)
        put(k, kids[i]);
    if (kids != kid_ord) free(kids);
    k->ord[id] = k->n_ord++;
    return k->oom ? -1 : k->ord[id];
}

/* node's key (malloc'd, *n words); NULL on OOM. */
static int32_t *make_key(const hr_gir *ir, hr_gcanon *canon, int node, size_t *n) {
    keyer k = {.ir = ir, .canon = canon};
    int ok = write_node(&k, node) >= 0;
    free(k.ord);
    if (!ok) {
        free(k.out.v);
        return NULL;
    }
    *n = (size_t)k.out.n;
    return (int32_t *)k.out.v;
}

static uint64_t hash_key(const int32_t *key, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint32_t)key[i]) * 1099511628211ull;
    return h;
}

/* ---- DFAs in and out ---- */

static size_t packed_bytes(int n, int k) {
    return (size_t)n * ((size_t)k * sizeof(int32_t) + sizeof(hr_gbytes) + sizeof(int32_t) + 1);
}

/* d into p (p->tab the block to free): 0 done, 1 not kept (over max bytes, or two columns
 * with equal hashes that differ), -1 out of memory. Rows are read in order, never columns. */
static int pack(const hr_gdfa *d, size_t max, packed *p) {
    uint64_t h[256];
    int rep[256], n = d->n_states;
    memset(p, 0, sizeof *p);
    if (packed_bytes(n, 1) > max) return 1;
    for (int b = 0; b < 256; b++)
        h[b] = 1469598103934665603ull;
    for (int s = 0; s < n; s++)
        for (int b = 0; b < 256; b++)
            h[b] = (h[b] ^ (uint32_t)d->trans[(size_t)s * 256 + b]) * 1099511628211ull;
    for (int b = 0; b < 256; b++) {
        int c = 0;
        while (c < p->k && h[rep[c]] != h[b])
            c++;
        if (c == p->k) rep[p->k++] = b;
        p->cls[b] = (uint8_t)c;
    }
    for (int s = 0; s < n; s++) {
        const int32_t *row = d->trans + (size_t)s * 256;
        for (int b = 0; b < 256; b++)
            if (row[b] != row[rep[p->cls[b]]]) return 1;
    }
    if (packed_bytes(n, p->k) > max) return 1;
    p->n = n;
    p->uid = d->uid;
    if (!n) return 0;
    size_t k = (size_t)p->k;
    char *m = malloc(packed_bytes(n, p->k));
    if (!m) return -1;
    p->tab = (int32_t *)m;
    p->chain_set = (hr_gbytes *)(m + (size_t)n * k * sizeof(int32_t));
    p->chain_len = (int32_t *)(p->chain_set + n);
    p->accept = (uint8_t *)(p->chain_len + n);
    for (int s = 0; s < n; s++)
        for (size_t c = 0; c < k; c++)
            p->tab[(size_t)s * k + c] = d->trans[(size_t)s * 256 + (size_t)rep[c]];
    memcpy(p->chain_set, d->chain_set, (size_t)n * sizeof(hr_gbytes));
    memcpy(p->chain_len, d->chain_len, (size_t)n * sizeof(int32_t));
    memcpy(p->accept, d->accept, (size_t)n);
    return 0;
}

static hr_err *unpack(const packed *p, hr_gdfa *out) {
    size_t n = (size_t)p->n, k = (size_t)p->k;
    memset(out, 0, sizeof *out);
    out->uid = p->uid;
    if (!n) return NULL;
    out->n_states = p->n;
    out->trans = malloc(n * 256 * sizeof(int32_t));
    out->accept = malloc(n);
    out->chain_set = malloc(n * sizeof(hr_gbytes));
    out->chain_len = malloc(n * sizeof(int32_t));
    if (!out->trans || !out->accept || !out->chain_set || !out->chain_len) {
        hr_gdfa_free(out);
        return hr_err_oom();
    }
    for (size_t s = 0; s < n; s++)
        for (int b = 0; b < 256; b++)
            out->trans[s * 256 + (size_t)b] = p->tab[s * k + p->cls[b]];
    memcpy(out->accept, p->accept, n);
    memcpy(out->chain_set, p->chain_set, n * sizeof(hr_gbytes));
    memcpy(out->chain_len, p->chain_len, n * sizeof(int32_t));
    return NULL;
}

/* ---- the table (callers hold the lock) ---- */

static dentry **find(uint64_t h, const int32_t *key, size_t n) {
    dentry **p = &cache.bucket[h % N_BUCKETS];
    for (; *p; p = &(*p)->chain)
        if ((*p)->hash == h && (*p)->key_n == n && !memcmp((*p)->key, key, n * sizeof *key)) break;
    return p;
}

static void drop(dentry *e) {
    dentry **p = find(e->hash, e->key, e->key_n);
    *p = e->chain;
    hr_glru_unlink(&cache.lru, &e->lru);
    cache.bytes -= e->bytes;
    free(e->key);
    free(e->dfa.tab);
    free(e);
}

static void shrink_to(size_t cap) {
    for (; cache.lru.oldest && cache.bytes > cap; cache.evictions++)
        drop((dentry *)cache.lru.oldest);
}

/* Keeps a packed copy of d under key (taken over; freed when not kept); cap: the cache's
 * cap when the lookup began. */
static void remember(int32_t *key, size_t n, uint64_t h, const hr_gdfa *d, size_t cap) {
    dentry *e = calloc(1, sizeof *e);
    if (e && pack(d, cap / 64, &e->dfa)) {
        free(e);
        e = NULL;
    }
    pthread_mutex_lock(&cache.mu);
    size_t bytes = e ? sizeof *e + n * sizeof *key + packed_bytes(e->dfa.n, e->dfa.k) : 0;
    dentry **p = e ? find(h, key, n) : NULL;
    if (p && !*p && bytes <= cache.cap / 64) {
        e->hash = h;
        e->key = key;
        e->key_n = n;
        e->bytes = bytes;
        *p = e;
        hr_glru_push(&cache.lru, &e->lru);
        cache.bytes += bytes;
        shrink_to(cache.cap);
        key = NULL;
        e = NULL;
    }
    pthread_mutex_unlock(&cache.mu);
    if (e) free(e->dfa.tab);
    free(e);
    free(key);
}

hr_err *hr_gdfa_build_cached(const hr_gir *ir, hr_gcanon *canon, int node, hr_gdfa *out) {
    pthread_mutex_lock(&cache.mu);
    size_t cap = cache.cap;
    pthread_mutex_unlock(&cache.mu);
    size_t n = 0;
    int32_t *key = cap ? make_key(ir, canon, node, &n) : NULL;
    if (!key) return hr_gdfa_build(ir, node, out); /* no cache, or no memory for the key */
    uint64_t h = hash_key(key, n);
    pthread_mutex_lock(&cache.mu);
    dentry *e = *find(h, key, n);
    hr_err *err = NULL;
    if (e) {
        err = unpack(&e->dfa, out);
        hr_glru_unlink(&cache.lru, &e->lru);
        hr_glru_push(&cache.lru, &e->lru);
        cache.hits++;
    } else
        cache.misses++;
    pthread_mutex_unlock(&cache.mu);
    if (e) {
        free(key);
        return err;
    }
    err = hr_gdfa_build(ir, node, out);
    if (err)
        free(key);
    else
        remember(key, n, h, out, cap);
    return err;
}

void hr_grammar_dfa_cache_limit(size_t bytes) {
    pthread_mutex_lock(&cache.mu);
    cache.cap = bytes;
    shrink_to(bytes);
    pthread_mutex_unlock(&cache.mu);
}

void hr_grammar_dfa_cache_stats(hr_grammar_shared_info *info) {
    pthread_mutex_lock(&cache.mu);
    size_t n = 0;
    for (const hr_glru_link *l = cache.lru.newest; l; l = l->older)
        n++;
    *info = (hr_grammar_shared_info){.hits = cache.hits,
                                     .misses = cache.misses,
                                     .evictions = cache.evictions,
                                     .entries = n,
                                     .bytes = cache.bytes};
    pthread_mutex_unlock(&cache.mu);
}
