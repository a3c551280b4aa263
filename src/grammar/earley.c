/* The matcher's parser: Earley over DFA terminals, one byte at a time. Position p keeps
 * an Earley set (items completed or predicted there; empty when the byte completed no
 * terminal) and a frontier (items inside a terminal with its DFA state). A byte steps every
 * frontier entry's DFA; an entry in an accepting state also completes its terminal there,
 * so a terminal may end at any accepting position: the language is exact, not a greedy
 * lexer's. Nullable nonterminals use Aycock and Horspool's prediction rule. Positions are
 * only appended, so rollback is truncation. */
#include <stdlib.h>
#include <string.h>

#include "grammar/gram_ir.h"
#include "grammar/grammar.h"

#define FRONT_TAG (1ull << 63)

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 256;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, nc * elem);
    if (!q) return -1;
    *p = q;
    *cap = nc;
    return 0;
}

static uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static int hash_reset(hr_matcher *m, size_t want) {
    size_t cap = 64;
    while (cap < want * 2)
        cap *= 2;
    if (cap > m->hash_alloc) {
        uint64_t *t = realloc(m->hash, cap * sizeof *t);
        if (!t) return -1;
        m->hash = t;
        m->hash_alloc = cap;
    }
    m->hash_cap = cap;
    memset(m->hash, 0, cap * sizeof *m->hash);
    m->hash_n = 0;
    return 0;
}

/* An item or frontier entry of the position being built that the stamps dedupe (a
 * prediction there): the index leaves it out. */
static int is_fresh(const hr_matcher *m, const uint32_t *stamp, uint32_t origin) {
    return stamp && origin == m->building;
}

/* Rebuilds the table over the set and frontier being built, twice as large. */
static int hash_grow(hr_matcher *m, size_t set0, size_t front0);

static int hash_insert(hr_matcher *m, uint64_t h, uint64_t val, size_t set0, size_t front0);

static uint64_t item_hash(hr_gitem it) { return mix((uint64_t)it.pos << 32 | it.origin); }
static uint64_t front_hash(hr_gfront f) {
    return mix(((uint64_t)f.pos << 32 | f.origin) ^
               ((uint64_t)(uint32_t)f.state * 0x9E3779B97F4A7C15ull));
}

static int hash_insert(hr_matcher *m, uint64_t h, uint64_t val, size_t set0, size_t front0) {
    if ((m->hash_n + 1) * 2 > m->hash_cap && hash_grow(m, set0, front0)) return -1;
    size_t k = h & (m->hash_cap - 1);
    while (m->hash[k])
        k = (k + 1) & (m->hash_cap - 1);
    m->hash[k] = val;
    m->hash_n++;
    return 0;
}

static int hash_grow(hr_matcher *m, size_t set0, size_t front0) {
    if (hash_reset(m, m->hash_cap)) return -1;
    for (size_t i = set0; i < m->n_items; i++)
        if (!is_fresh(m, m->stamp_item, m->items[i].origin) &&
            hash_insert(m, item_hash(m->items[i]), i + 1, set0, front0))
            return -1;
    for (size_t i = front0; i < m->n_front; i++)
        if (!is_fresh(m, m->stamp_front, m->front[i].origin) &&
            hash_insert(m, front_hash(m->front[i]), (i + 1) | FRONT_TAG, set0, front0))
            return -1;
    return 0;
}

#define SMALL 24 /* a set and frontier up to this size dedupe by a linear scan */

/* Leaves the linear scan: indexes what the set and frontier being built hold so far. */
static void start_hashing(hr_matcher *m, size_t set0, size_t front0) {
    m->hashing = 1;
    if (hash_reset(m, (m->n_items - set0) + (m->n_front - front0) + 16)) {
        m->oom = 1;
        return;
    }
    for (size_t i = set0; i < m->n_items && !m->oom; i++)
        if (!is_fresh(m, m->stamp_item, m->items[i].origin) &&
            hash_insert(m, item_hash(m->items[i]), i + 1, set0, front0))
            m->oom = 1;
    for (size_t i = front0; i < m->n_front && !m->oom; i++)
        if (!is_fresh(m, m->stamp_front, m->front[i].origin) &&
            hash_insert(m, front_hash(m->front[i]), (i + 1) | FRONT_TAG, set0, front0))
            m->oom = 1;
}

static int item_present(const hr_matcher *m, hr_gitem it, uint64_t h, size_t set0) {
    if (!m->hashing) {
        for (size_t i = set0; i < m->n_items; i++)
            if (m->items[i].pos == it.pos && m->items[i].origin == it.origin) return 1;
        return 0;
    }
    for (size_t k = h & (m->hash_cap - 1); m->hash[k]; k = (k + 1) & (m->hash_cap - 1)) {
        uint64_t v = m->hash[k];
        if (v & FRONT_TAG) continue;
        const hr_gitem *o = &m->items[v - 1];
        if (o->pos == it.pos && o->origin == it.origin) return 1;
    }
    return 0;
}

static int front_present(const hr_matcher *m, hr_gfront f, uint64_t h, size_t front0) {
    if (!m->hashing) {
        for (size_t i = front0; i < m->n_front; i++)
            if (m->front[i].pos == f.pos && m->front[i].origin == f.origin &&
                m->front[i].state == f.state)
                return 1;
        return 0;
    }
    for (size_t k = h & (m->hash_cap - 1); m->hash[k]; k = (k + 1) & (m->hash_cap - 1)) {
        uint64_t v = m->hash[k];
        if (!(v & FRONT_TAG)) continue;
        const hr_gfront *o = &m->front[(v & ~FRONT_TAG) - 1];
        if (o->pos == f.pos && o->origin == f.origin && o->state == f.state) return 1;
    }
    return 0;
}

/* After an append: index it, or start indexing once the scan would be long. */
static void note_added(hr_matcher *m, uint64_t h, uint64_t val, size_t set0, size_t front0) {
    if (m->hashing) {
        if (hash_insert(m, h, val, set0, front0)) m->oom = 1;
    } else if ((m->n_items - set0) + (m->n_front - front0) > SMALL)
        start_hashing(m, set0, front0);
}

/* A prediction at the position being built (origin = it): already stamped this round, or
 * stamped now. Every other item has an older origin, so the two never meet. */
static int fresh_seen(const hr_matcher *m, uint32_t *stamp, uint32_t pos, uint32_t origin,
                      int *fresh) {
    *fresh = is_fresh(m, stamp, origin);
    if (!*fresh) return 0;
    if (stamp[pos] == m->gen) return 1;
    stamp[pos] = m->gen;
    return 0;
}

/* After a fresh append: it stays out of the index, but counts toward leaving the scan. */
static void note_fresh(hr_matcher *m, size_t set0, size_t front0) {
    if (!m->hashing && (m->n_items - set0) + (m->n_front - front0) > SMALL)
        start_hashing(m, set0, front0);
}

/* Adds item to the set being built (from set0) unless present. */
static void add_item(hr_matcher *m, hr_gitem it, size_t set0, size_t front0) {
    int fresh;
    if (fresh_seen(m, m->stamp_item, it.pos, it.origin, &fresh)) return;
    uint64_t h = m->hashing && !fresh ? item_hash(it) : 0;
    if (!fresh && item_present(m, it, h, set0)) return;
    if (grow((void **)&m->items, &m->cap_items, m->n_items + 1, sizeof(hr_gitem))) {
        m->oom = 1;
        return;
    }
    m->items[m->n_items++] = it;
    if (fresh)
        note_fresh(m, set0, front0);
    else
        note_added(m, h, m->n_items, set0, front0);
}

static void add_front(hr_matcher *m, hr_gfront f, size_t set0, size_t front0) {
    int fresh; /* predicted: state 0 */
    if (fresh_seen(m, m->stamp_front, f.pos, f.origin, &fresh)) return;
    uint64_t h = m->hashing && !fresh ? front_hash(f) : 0;
    if (!fresh && front_present(m, f, h, front0)) return;
    if (grow((void **)&m->front, &m->cap_front, m->n_front + 1, sizeof(hr_gfront))) {
        m->oom = 1;
        return;
    }
    m->front[m->n_front++] = f;
    if (fresh)
        note_fresh(m, set0, front0);
    else
        note_added(m, h, m->n_front | FRONT_TAG, set0, front0);
}

/* Predict / complete / start terminals over the set at position p (being built). */
static void closure(hr_matcher *m, int p, size_t set0, size_t front0) {
    const hr_grammar *g = m->g;
    for (size_t i = set0; i < m->n_items && !m->oom; i++) {
        hr_gitem it = m->items[i];
        int32_t sym = g->pos_sym[it.pos];
        if (sym == HR_G_END) {
            int32_t lhs = g->pos_lhs[it.pos];
            if (lhs == 0 && it.origin == 0) m->acc[p] = 1;
            size_t b = m->set_beg[it.origin],
                   e = it.origin == (uint32_t)p ? m->n_items : m->set_beg[it.origin + 1];
            for (size_t k = b; k < e; k++)
                if (g->pos_sym[m->items[k].pos] == lhs)
                    add_item(m, (hr_gitem){m->items[k].pos + 1, m->items[k].origin}, set0, front0);
        } else if (sym >= 0) {
            for (int q = g->nt_prods[sym]; q < g->nt_prods[sym + 1]; q++)
                add_item(m, (hr_gitem){(uint32_t)g->prod_pos[q], (uint32_t)p}, set0, front0);
            if (g->nullable[sym]) add_item(m, (hr_gitem){it.pos + 1, it.origin}, set0, front0);
        } else {
            add_front(m, (hr_gfront){it.pos, it.origin, 0}, set0, front0);
            if (g->terms[-sym - 1].accept[0])
                add_item(m, (hr_gitem){it.pos + 1, it.origin}, set0, front0);
        }
    }
}

static int ensure_pos(hr_matcher *m, int p) {
    if (p + 2 <= m->cap_pos) return 0;
    int nc = m->cap_pos ? m->cap_pos * 2 : 256;
    size_t *a = realloc(m->set_beg, (size_t)nc * sizeof *a);
    if (!a) return -1;
    m->set_beg = a;
    size_t *b = realloc(m->front_beg, (size_t)nc * sizeof *b);
    if (!b) return -1;
    m->front_beg = b;
    uint8_t *c = realloc(m->acc, (size_t)nc);
    if (!c) return -1;
    m->acc = c;
    m->cap_pos = nc;
    return 0;
}

/* The stamps' round for building position q. */
static void next_round(hr_matcher *m, uint32_t q) {
    m->building = q;
    if (m->stamp_item && ++m->gen == 0) { /* wrapped: every stamp is stale */
        memset(m->stamp_item, 0, (size_t)m->g->n_pos * sizeof(uint32_t));
        memset(m->stamp_front, 0, (size_t)m->g->n_pos * sizeof(uint32_t));
        m->gen = 1;
    }
}

int hr_gm_push(hr_matcher *m, uint8_t byte) {
    const hr_grammar *g = m->g;
    int p = m->cur, q = p + 1;
    if (m->oom || ensure_pos(m, q)) return 0;
    size_t set0 = m->n_items, front0 = m->n_front;
    size_t fb = m->front_beg[p], fe = m->front_beg[p + 1];
    while (
        fb < fe &&
        g->terms[-g->pos_sym[m->front[fb].pos] - 1].trans[(size_t)m->front[fb].state * 256 + byte] <
            0)
        fb++; /* most bytes fail here, before any bookkeeping */
    if (fb == fe) return 0;
    next_round(m, (uint32_t)q);
    m->hashing = 0;
    m->acc[q] = 0;
    m->set_beg[q] = set0;
    m->front_beg[q] = front0;
    for (size_t k = fb; k < fe && !m->oom; k++) {
        hr_gfront f = m->front[k];
        const hr_gdfa *d = &g->terms[-g->pos_sym[f.pos] - 1];
        int32_t s = d->trans[(size_t)f.state * 256 + byte];
        if (s < 0) continue;
        add_front(m, (hr_gfront){f.pos, f.origin, s}, set0, front0);
        if (d->accept[s]) add_item(m, (hr_gitem){f.pos + 1, f.origin}, set0, front0);
    }
    if (m->n_items > set0) closure(m, q, set0, front0);
    if (m->oom || (m->n_front == front0 && !m->acc[q])) {
        m->n_items = set0;
        m->n_front = front0;
        return 0;
    }
    m->set_beg[q + 1] = m->n_items;
    m->front_beg[q + 1] = m->n_front;
    m->cur = q;
    return 1;
}

void hr_gm_truncate(hr_matcher *m, int pos) {
    m->cur = pos;
    m->n_items = m->set_beg[pos + 1];
    m->n_front = m->front_beg[pos + 1];
}

hr_err *hr_matcher_create(const hr_grammar *g, const hr_grammar_vocab *v, hr_matcher **out) {
    if (!g) return hr_errf("grammar matcher: no grammar");
    hr_matcher *m = calloc(1, sizeof *m);
    if (!m) return hr_err_oom();
    m->g = g;
    m->v = v;
    if (ensure_pos(m, 0)) {
        hr_matcher_free(m);
        return hr_err_oom();
    }
    if (g->n_pos <= HR_GM_STAMPS) { /* without them (out of memory) the index dedupes all */
        m->stamp_item = calloc((size_t)g->n_pos + 1, sizeof(uint32_t));
        m->stamp_front = calloc((size_t)g->n_pos + 1, sizeof(uint32_t));
        if (!m->stamp_item || !m->stamp_front) {
            free(m->stamp_item), free(m->stamp_front);
            m->stamp_item = m->stamp_front = NULL;
        }
    }
    next_round(m, 0);
    m->set_beg[0] = m->front_beg[0] = 0;
    m->acc[0] = 0;
    for (int q = g->nt_prods[0]; q < g->nt_prods[1]; q++)
        add_item(m, (hr_gitem){(uint32_t)g->prod_pos[q], 0}, 0, 0);
    closure(m, 0, 0, 0);
    if (m->oom) {
        hr_matcher_free(m);
        return hr_err_oom();
    }
    m->set_beg[1] = m->n_items;
    m->front_beg[1] = m->n_front;
    *out = m;
    return NULL;
}

void hr_matcher_free(hr_matcher *m) {
    if (!m) return;
    free(m->items);
    free(m->front);
    free(m->set_beg);
    free(m->front_beg);
    free(m->acc);
    free(m->tok_pos);
    free(m->hash);
    free(m->stamp_item);
    free(m->stamp_front);
    free(m);
}

static int push_tok(hr_matcher *m, int pos) {
    size_t cap = (size_t)m->cap_toks;
    if (grow((void **)&m->tok_pos, &cap, (size_t)m->n_toks + 1, sizeof(int))) return -1;
    m->cap_toks = (int)cap;
    m->tok_pos[m->n_toks++] = pos;
    return 0;
}

int hr_matcher_accept_bytes(hr_matcher *m, const char *s, size_t n, size_t *n_ok) {
    int start = m->cur;
    if (n_ok) *n_ok = 0;
    if (m->ended) return 0;
    for (size_t i = 0; i < n; i++) {
        if (!hr_gm_push(m, (uint8_t)s[i])) {
            if (n_ok) *n_ok = i;
            hr_gm_truncate(m, start);
            return 0;
        }
    }
    if (push_tok(m, start)) {
        hr_gm_truncate(m, start);
        return 0;
    }
    if (n_ok) *n_ok = n;
    return 1;
}

int hr_matcher_accept(hr_matcher *m, int32_t token) {
    const hr_grammar_vocab *v = m->v;
    if (!v || m->ended || token < 0 || token >= v->n_vocab || v->kind[token] == HR_GV_NEVER)
        return 0;
    if (v->kind[token] == HR_GV_STOP) {
        if (!m->acc[m->cur] || push_tok(m, -1)) return 0;
        m->ended = 1;
        return 1;
    }
    uint32_t b = v->tok_off[token], e = v->tok_off[token + 1];
    return hr_matcher_accept_bytes(m, (const char *)v->bytes + b, e - b, NULL);
}

void hr_matcher_rollback(hr_matcher *m, int n_tokens) {
    for (; n_tokens > 0 && m->n_toks > 0; n_tokens--) {
        int pos = m->tok_pos[--m->n_toks];
        if (pos < 0)
            m->ended = 0;
        else
            hr_gm_truncate(m, pos);
    }
}

int hr_matcher_is_accepting(const hr_matcher *m) { return m->acc[m->cur]; }

int hr_matcher_is_ended(const hr_matcher *m) { return m->ended; }
