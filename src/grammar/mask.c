/* Token masks. The reference tries every token's bytes from the current state. The fast
 * mask starts from a cache entry for the frontier's (terminal, DFA state) pairs: the
 * tokens whose bytes stay strictly inside those terminals (no pair reaches an accepting
 * state, one stays alive), which are allowed whatever the Earley sets hold, and the trie
 * nodes where some pair first accepts. Only below those nodes does it run the parser,
 * walking the vocabulary trie depth first, a byte per node, truncating on the way up and
 * skipping subtrees the grammar rejects. Inside a JSON string nearly every token comes
 * from the cache and only tokens holding a '"' are walked. The cache lives in the grammar,
 * keyed by vocabulary too, behind a mutex; an entry is built outside the lock and never
 * changes once published, so matchers on many threads read it freely. */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "grammar/gram_ir.h"

static void set_stops(const hr_matcher *m, uint32_t *bits) {
    if (!hr_matcher_is_accepting(m)) return;
    for (int k = 0; k < m->v->n_stop; k++) {
        int32_t id = m->v->stop[k];
        if (id >= 0 && id < m->v->n_vocab) bits[id >> 5] |= 1u << (id & 31);
    }
}

static size_t mask_words(const hr_grammar_vocab *v) { return ((size_t)v->n_vocab + 31) / 32; }

void hr_matcher_mask_ref(hr_matcher *m, uint32_t *bits) {
    const hr_grammar_vocab *v = m->v;
    if (!v) return;
    memset(bits, 0, mask_words(v) * sizeof(uint32_t));
    if (m->ended) return;
    int base = m->cur;
    for (int id = 0; id < v->n_vocab; id++) {
        if (v->kind[id] != HR_GV_NORMAL) continue;
        uint32_t k = v->tok_off[id], e = v->tok_off[id + 1];
        while (k < e && hr_gm_push(m, v->bytes[k])) k++;
        if (k == e) bits[id >> 5] |= 1u << (id & 31);
        hr_gm_truncate(m, base);
    }
    set_stops(m, bits);
}

static void set_node_tokens(const hr_grammar_vocab *v, int u, uint32_t *bits) {
    for (int k = v->node_tok[u]; k < v->node_tok[u + 1]; k++) {
        int32_t id = v->sorted_tok[k];
        bits[id >> 5] |= 1u << (id & 31);
    }
}

/* Walks the subtree below trie node top (whose bytes are already consumed, at parser
 * position base), setting every token the parser accepts. */
static void walk_subtree(hr_matcher *m, int top, int base, uint32_t *bits) {
    const hr_grammar_vocab *v = m->v;
    int d0 = v->node_depth[top];
    for (int u = top + 1; u < v->node_end[top];) {
        hr_gm_truncate(m, base + v->node_depth[u] - 1 - d0);
        if (!hr_gm_push(m, v->node_byte[u])) {
            u = v->node_end[u];
            continue;
        }
        set_node_tokens(v, u, bits);
        u++;
    }
    hr_gm_truncate(m, base);
}

/* The frontier's distinct (terminal, state) pairs, sorted, as the cache key. */
typedef struct {
    int32_t *v; /* (term, state) pairs */
    int n, cap;
} pairs;

static int cmp_pair(const void *x, const void *y) {
    const int32_t *a = x, *b = y;
    return a[0] != b[0] ? (a[0] < b[0] ? -1 : 1) : (a[1] < b[1] ? -1 : a[1] > b[1]);
}

static int frontier_pairs(const hr_matcher *m, pairs *p) {
    size_t b = m->front_beg[m->cur], e = m->front_beg[m->cur + 1];
    if ((size_t)p->cap < 2 * (e - b)) {
        int32_t *q = realloc(p->v, 2 * (e - b) * sizeof(int32_t));
        if (!q) return -1;
        p->v = q;
        p->cap = (int)(2 * (e - b));
    }
    p->n = 0;
    for (size_t k = b; k < e; k++) {
        p->v[2 * p->n] = -m->g->pos_sym[m->front[k].pos] - 1;
        p->v[2 * p->n + 1] = m->front[k].state;
        p->n++;
    }
    qsort(p->v, (size_t)p->n, 2 * sizeof(int32_t), cmp_pair);
    int u = 0;
    for (int i = 0; i < p->n; i++)
        if (!u || cmp_pair(&p->v[2 * i], &p->v[2 * (u - 1)])) {
            p->v[2 * u] = p->v[2 * i];
            p->v[2 * u + 1] = p->v[2 * i + 1];
            u++;
        }
    p->n = u;
    return 0;
}

typedef struct entry {
    struct entry *next;
    uint64_t hash;
    const hr_grammar_vocab *v;
    int n_pairs;
    int32_t *pairs;
    uint32_t *bits;   /* tokens strictly inside the terminals */
    int32_t *bound;   /* trie nodes where some pair first accepts */
    int n_bound;
} entry;

#define N_BUCKETS 1024
#define CACHE_BYTES (256u << 20)

struct hr_gcache {
    pthread_mutex_t mu;
    entry *bucket[N_BUCKETS];
    size_t bytes; /* held by entries; past CACHE_BYTES new ones are not kept */
};

static uint64_t hash_pairs(const hr_grammar_vocab *v, const int32_t *p, int n) {
    uint64_t h = (uint64_t)(uintptr_t)v * 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 2 * n; i++) h = (h ^ (uint32_t)p[i]) * 1099511628211ull;
    return h;
}

static entry *lookup(hr_gcache *c, const hr_grammar_vocab *v, const pairs *p, uint64_t h) {
    for (entry *e = c->bucket[h % N_BUCKETS]; e; e = e->next)
        if (e->hash == h && e->v == v && e->n_pairs == p->n && !memcmp(e->pairs, p->v, (size_t)p->n * 2 * sizeof(int32_t)))
            return e;
    return NULL;
}

static void entry_free(entry *e) {
    if (!e) return;
    free(e->pairs);
    free(e->bits);
    free(e->bound);
    free(e);
}

static int push_bound(entry *e, int *cap, int32_t u) {
    if (e->n_bound == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        int32_t *q = realloc(e->bound, (size_t)nc * sizeof(int32_t));
        if (!q) return -1;
        e->bound = q;
        *cap = nc;
    }
    e->bound[e->n_bound++] = u;
    return 0;
}

/* Fills e->bits and e->bound by walking the trie with the pairs alone. sets holds a pair
 * set per trie depth, (max_depth + 1) * n pairs. */
static int fill_entry(const hr_grammar *g, const hr_grammar_vocab *v, entry *e, int32_t *sets, int *cnt) {
    int n = e->n_pairs, cap = 0;
    memcpy(sets, e->pairs, (size_t)n * 2 * sizeof(int32_t));
    cnt[0] = n;
    for (int u = 1; u < v->n_nodes;) {
        int d = v->node_depth[u], k = 0, acc = 0;
        const int32_t *in = sets + (size_t)(d - 1) * n * 2;
        int32_t *out = sets + (size_t)d * n * 2;
        uint8_t b = v->node_byte[u];
        for (int i = 0; i < cnt[d - 1]; i++) {
            const hr_gdfa *dfa = &g->terms[in[2 * i]];
            int32_t s = dfa->trans[(size_t)in[2 * i + 1] * 256 + b];
            if (s < 0) continue;
            acc |= dfa->accept[s];
            out[2 * k] = in[2 * i];
            out[2 * k + 1] = s;
            k++;
        }
        cnt[d] = k;
        if (!k || acc) {
            if (acc && push_bound(e, &cap, u)) return -1;
            u = v->node_end[u];
            continue;
        }
        set_node_tokens(v, u, e->bits);
        u++;
    }
    return 0;
}

static entry *build_entry(const hr_grammar *g, const hr_grammar_vocab *v, const pairs *p, uint64_t h) {
    entry *e = calloc(1, sizeof *e);
    int32_t *sets = malloc(((size_t)v->max_depth + 1) * (size_t)(p->n ? p->n : 1) * 2 * sizeof(int32_t));
    int *cnt = malloc(((size_t)v->max_depth + 1) * sizeof(int));
    int ok = e && sets && cnt;
    if (ok) {
        e->hash = h;
        e->v = v;
        e->n_pairs = p->n;
        e->pairs = malloc(((size_t)p->n + 1) * 2 * sizeof(int32_t));
        e->bits = calloc(mask_words(v), sizeof(uint32_t));
        ok = e->pairs && e->bits;
    }
    if (ok) {
        memcpy(e->pairs, p->v, (size_t)p->n * 2 * sizeof(int32_t));
        ok = !fill_entry(g, v, e, sets, cnt);
    }
    free(sets);
    free(cnt);
    if (!ok) {
        entry_free(e);
        return NULL;
    }
    return e;
}

/* The cache entry for the matcher's frontier, built and published when missing; NULL
 * when out of memory. *owned: the caller frees it (the cache was full). */
static entry *get_entry(hr_matcher *m, pairs *p, int *owned) {
    hr_gcache *c = m->g->cache;
    *owned = 0;
    if (frontier_pairs(m, p)) return NULL;
    uint64_t h = hash_pairs(m->v, p->v, p->n);
    pthread_mutex_lock(&c->mu);
    entry *e = lookup(c, m->v, p, h);
    pthread_mutex_unlock(&c->mu);
    if (e) return e;
    entry *fresh = build_entry(m->g, m->v, p, h);
    if (!fresh) return NULL;
    size_t size = mask_words(m->v) * 4 + (size_t)fresh->n_bound * 4 + (size_t)p->n * 8 + sizeof *fresh;
    pthread_mutex_lock(&c->mu);
    e = lookup(c, m->v, p, h);
    if (!e && c->bytes + size <= CACHE_BYTES) {
        fresh->next = c->bucket[h % N_BUCKETS];
        c->bucket[h % N_BUCKETS] = fresh;
        c->bytes += size;
        e = fresh;
        fresh = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    if (!e) {
        *owned = 1;
        return fresh;
    }
    entry_free(fresh);
    return e;
}

/* Below a node where some terminal accepts: the bytes to it, then the parser's walk. */
static void walk_bound(hr_matcher *m, int u, uint32_t *bits) {
    const hr_grammar_vocab *v = m->v;
    int base = m->cur, d = v->node_depth[u];
    const uint8_t *path = v->bytes + v->tok_off[v->sorted_tok[v->node_tok[u]]];
    int k = 0;
    while (k < d && hr_gm_push(m, path[k])) k++;
    if (k == d) {
        set_node_tokens(v, u, bits);
        walk_subtree(m, u, base + d, bits);
    }
    hr_gm_truncate(m, base);
}

void hr_matcher_mask(hr_matcher *m, uint32_t *bits) {
    if (!m->v) return;
    size_t words = mask_words(m->v);
    memset(bits, 0, words * sizeof(uint32_t));
    if (m->ended) return;
    pairs p = {0};
    int owned;
    entry *e = get_entry(m, &p, &owned);
    free(p.v);
    if (!e) { /* out of memory for the cache: the plain trie walk */
        walk_subtree(m, 0, m->cur, bits);
        set_stops(m, bits);
        return;
    }
    memcpy(bits, e->bits, words * sizeof(uint32_t));
    for (int i = 0; i < e->n_bound; i++) walk_bound(m, e->bound[i], bits);
    if (owned) entry_free(e);
    set_stops(m, bits);
}

hr_err *hr_gcache_create(hr_gcache **out) {
    hr_gcache *c = calloc(1, sizeof *c);
    if (!c) return hr_err_oom();
    pthread_mutex_init(&c->mu, NULL);
    *out = c;
    return NULL;
}

void hr_gcache_free(hr_gcache *c) {
    for (int b = 0; b < N_BUCKETS; b++)
        for (entry *e = c->bucket[b], *next; e; e = next) {
            next = e->next;
            entry_free(e);
        }
    pthread_mutex_destroy(&c->mu);
    free(c);
}
