/* Token masks. The reference tries every token's bytes from the current state. The fast
 * mask starts from a cache entry for the frontier's (DFA, state) pairs, built by
 * walking the vocabulary trie with those DFA states alone: the tokens along which some pair
 * stays alive and none reaches an accepting state (allowed whatever the Earley sets hold;
 * whole subtrees at once where a pair's chain covers them, judged at a UTF-8 lead byte by
 * the chain of the state its character ends in), and the trie nodes where some pair first
 * accepts (a terminal that only ends the start rule does not count: completing it adds no
 * frontier entry). Only from those nodes, grouped, does the parser run, a byte per trie
 * node, truncating on the way up, skipping subtrees it rejects and taking whole those a
 * frontier entry's chain covers. Inside a JSON string nearly every token comes from the
 * entry and only tokens holding a '"' are walked. The entries live in one process-wide
 * cache (mask_cache.c) keyed by the pairs' DFAs rather than the grammar's terminals, so
 * grammars sharing terminals (every JSON grammar's strings and numbers) share entries; an
 * entry is built outside the cache's lock and never changes once published, so matchers on
 * many threads read it freely. */
#include <stdlib.h>
#include <string.h>

#include "grammar/gram_ir.h"
#include "grammar/grammar.h"
#include "grammar/mask_cache.h"

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
        while (k < e && hr_gm_push(m, v->bytes[k]))
            k++;
        if (k == e) bits[id >> 5] |= 1u << (id & 31);
        hr_gm_truncate(m, base);
    }
    set_stops(m, bits);
}

/* The tokens tok[b, e) (a run of the trie's preorder, or of a suffix trie's). */
static inline void set_tokens(const int32_t *tok, int b, int e, uint32_t *bits) {
    for (int k = b; k < e; k++)
        bits[tok[k] >> 5] |= 1u << (tok[k] & 31);
}

/* The tokens ending at trie node u. */
static inline void set_node_tokens(const hr_grammar_vocab *v, int u, uint32_t *bits) {
    set_tokens(v->sorted_tok, v->node_tok[u], v->node_tok[u + 1], bits);
}

/* Every token of the subtree of trie node u. */
static inline void set_subtree_tokens(const hr_grammar_vocab *v, int u, uint32_t *bits) {
    set_tokens(v->sorted_tok, v->node_tok[u], v->node_tok[v->node_end[u]], bits);
}

/* The DFA state s of d stays alive through every path below trie node u: its chain takes
 * every byte there (non-ASCII ones by the lead bytes of the characters that start below,
 * only where every path is valid UTF-8, so the state is between characters) for at least as
 * many characters as start on any path below. */
static int chain_covers(const hr_gdfa *d, int32_t s, const hr_grammar_vocab *v, int u) {
    const hr_gbytes *below = &v->node_below[u], *c = &d->chain_set[s];
    return !(below->w[0] & ~c->w[0]) && !(below->w[1] & ~HR_G_NON_ASCII & ~c->w[1]) &&
           !(below->w[2] & ~c->w[2]) && d->chain_len[s] >= v->node_below_chars[u];
}

/* Non-ASCII bytes below u only on valid UTF-8 paths (what a chain's lead bits speak of). */
static int utf8_below(const hr_grammar_vocab *v, int u) {
    return !(v->node_below[u].w[1] & HR_G_NON_ASCII) || (v->node_utf8[u] & 1);
}

/* The state a chain leads to (succ in chain.c): where the chain set's printable bytes go;
 * -1 when the set has none. */
static int32_t chain_succ(const hr_gdfa *d, int32_t s) {
    const hr_gbytes *c = &d->chain_set[s];
    int bit = c->w[0]                   ? __builtin_ctzll(c->w[0])
              : (c->w[1] & 0xFFFFFFFFu) ? 64 + __builtin_ctzll(c->w[1])
                                        : -1;
    return bit < 0 ? -1 : d->trans[(size_t)s * 256 + 0x20 + bit];
}

/* Trie node u holds a UTF-8 lead byte read from state s (the parent's): when s's chain takes
 * every character of that lead byte (each one read from s ends in succ through live
 * states), every path below u is valid UTF-8 from inside this character, and succ's chain
 * covers the bytes below, the state stays alive through the subtree, as a chain at u would
 * say. */
static int lead_covers(const hr_gdfa *d, int32_t s, const hr_grammar_vocab *v, int u) {
    uint8_t b = v->node_byte[u];
    if (b < 0xC2 || b > 0xF4 || !(d->chain_set[s].w[2] >> (b - 0xC0) & 1)) return 0;
    int q = hr_gutf8_step(0, b);
    if (q <= 0 || !(v->node_utf8[u] >> q & 1)) return 0;
    int32_t t = chain_succ(d, s);
    return t >= 0 && chain_covers(d, t, v, u);
}

/* Some entry of the parser's frontier stays alive below trie node u (whose byte is the
 * last consumed): then the parse stays alive too, and every token below is accepted. */
static int front_stays_below(const hr_matcher *m, int u) {
    if (m->v->node_byte[u] >= 0xC2 && m->cur > 0) /* a lead byte: the parent's entries */
        for (size_t k = m->front_beg[m->cur - 1]; k < m->front_beg[m->cur]; k++) {
            const hr_gfront *f = &m->front[k];
            if (lead_covers(&m->g->terms[-m->g->pos_sym[f->pos] - 1], f->state, m->v, u)) return 1;
        }
    if (!utf8_below(m->v, u)) return 0;
    for (size_t k = m->front_beg[m->cur]; k < m->front_beg[m->cur + 1]; k++) {
        const hr_gfront *f = &m->front[k];
        if (chain_covers(&m->g->terms[-m->g->pos_sym[f->pos] - 1], f->state, m->v, u)) return 1;
    }
    return 0;
}

#define CHAIN_CHECK 8 /* nodes below a node before the parser walk tries the frontier's chains */

/* Walks the subtree below trie node top (whose bytes are already consumed, at parser
 * position base), setting every token the parser accepts; a subtree that some frontier
 * entry's chain covers is taken whole. */
static void walk_subtree(hr_matcher *m, int top, int base, uint32_t *bits) {
    const hr_grammar_vocab *v = m->v;
    int d0 = v->node_depth[top];
    for (int u = top + 1; u < v->node_end[top];) {
        hr_gm_truncate(m, base + v->node_depth[u] - 1 - d0);
        if (!hr_gm_push(m, v->node_byte[u])) {
            u = v->node_end[u];
            continue;
        }
        if (v->node_end[u] - u > CHAIN_CHECK && front_stays_below(m, u)) {
            set_subtree_tokens(v, u, bits);
            u = v->node_end[u];
            continue;
        }
        set_node_tokens(v, u, bits);
        u++;
    }
    hr_gm_truncate(m, base);
}

/* The frontier's distinct (DFA, state, counts) triples, sorted, as the cache key; term[i]:
 * a terminal of the grammar behind pair i (any one: equal uids, equal tables). */
typedef struct {
    hr_gkey_pair *v;
    int32_t *term;
    int n;
} pairs;

typedef struct {
    hr_gkey_pair k;
    int32_t term;
} term_pair;

static int cmp_key(const hr_gkey_pair *a, const hr_gkey_pair *b) {
    if (a->uid != b->uid) return a->uid < b->uid ? -1 : 1;
    if (a->state != b->state) return a->state < b->state ? -1 : 1;
    return (a->counts > b->counts) - (a->counts < b->counts);
}

static int cmp_term_pair(const void *x, const void *y) {
    return cmp_key(&((const term_pair *)x)->k, &((const term_pair *)y)->k);
}

static int frontier_pairs(const hr_matcher *m, pairs *p) {
    size_t b = m->front_beg[m->cur], e = m->front_beg[m->cur + 1], n = e - b;
    term_pair *tp = malloc((n + 1) * sizeof *tp);
    p->v = malloc((n + 1) * sizeof *p->v);
    p->term = malloc((n + 1) * sizeof *p->term);
    if (!tp || !p->v || !p->term) {
        free(tp);
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        int t = -m->g->pos_sym[m->front[b + k].pos] - 1;
        tp[k] = (term_pair){{m->g->terms[t].uid, m->front[b + k].state, !m->g->term_inert[t]}, t};
    }
    qsort(tp, n, sizeof *tp, cmp_term_pair);
    p->n = 0;
    for (size_t i = 0; i < n; i++)
        if (!p->n || cmp_key(&tp[i].k, &p->v[p->n - 1])) {
            p->v[p->n] = tp[i].k;
            p->term[p->n++] = tp[i].term;
        }
    free(tp);
    return 0;
}

static uint64_t hash_ints(uint64_t h, const int32_t *p, int n) {
    for (int i = 0; i < n; i++)
        h = (h ^ (uint32_t)p[i]) * 1099511628211ull;
    return h;
}

/* The bound nodes found by the walk, each with its state vector (n_pairs states, -1 dead).
 * They are grouped by those vectors: the parser states after two nodes of one group differ
 * only in where the last position is, so one walk of a group node's bytes serves all. What
 * follows the nodes in their tokens (the suffixes) goes into one small trie per group
 * (hr_gstrie), so a suffix that many tokens share (`",` after a string's last word) is
 * parsed once. */
typedef struct {
    int32_t *node, *group;
    int n, cap;
    int32_t *vecs; /* (n_groups, n_pairs) */
    int n_groups, cap_groups;
    int32_t *table; /* open addressing over groups: index + 1 */
    int table_cap;
} bounds;

static int group_of(bounds *b, const int32_t *vec, int k) {
    uint64_t h = hash_ints(1469598103934665603ull, vec, k);
    if ((b->n_groups + 1) * 2 > b->table_cap) {
        int nc = b->table_cap ? b->table_cap * 2 : 64;
        int32_t *t = calloc((size_t)nc, sizeof(int32_t));
        if (!t) return -1;
        for (int g = 0; g < b->n_groups; g++) {
            size_t j =
                hash_ints(1469598103934665603ull, b->vecs + (size_t)g * k, k) & (size_t)(nc - 1);
            while (t[j])
                j = (j + 1) & (size_t)(nc - 1);
            t[j] = g + 1;
        }
        free(b->table);
        b->table = t;
        b->table_cap = nc;
    }
    size_t j = h & (size_t)(b->table_cap - 1);
    for (; b->table[j]; j = (j + 1) & (size_t)(b->table_cap - 1))
        if (!memcmp(b->vecs + (size_t)(b->table[j] - 1) * k, vec, (size_t)k * sizeof(int32_t)))
            return b->table[j] - 1;
    if (b->n_groups == b->cap_groups) {
        int nc = b->cap_groups ? b->cap_groups * 2 : 16;
        int32_t *q = realloc(b->vecs, (size_t)nc * (size_t)(k ? k : 1) * sizeof(int32_t));
        if (!q) return -1;
        b->vecs = q;
        b->cap_groups = nc;
    }
    memcpy(b->vecs + (size_t)b->n_groups * k, vec, (size_t)k * sizeof(int32_t));
    b->table[j] = b->n_groups + 1;
    return b->n_groups++;
}

static int add_bound(bounds *b, int32_t u, const int32_t *vec, int k) {
    int g = group_of(b, vec, k);
    if (g < 0) return -1;
    if (b->n == b->cap) {
        int nc = b->cap ? b->cap * 2 : 64;
        int32_t *q = realloc(b->node, (size_t)nc * sizeof(int32_t)), *r;
        if (!q) return -1;
        b->node = q;
        if (!(r = realloc(b->group, (size_t)nc * sizeof(int32_t)))) return -1;
        b->group = r;
        b->cap = nc;
    }
    b->node[b->n] = u;
    b->group[b->n++] = g;
    return 0;
}

/* A pair's DFA as the walk reads it: the tables behind g->terms[term], and whether its
 * accepting states count (a terminal that only ends the start rule makes no bound nodes). */
typedef struct {
    const hr_gdfa *d;
    const int32_t *trans;
    const uint8_t *accept;
    uint8_t counts;
} pair_dfa;

/* A pair alive at a trie node: its index in the key, its state there and at the parent (a
 * lead byte is judged from the parent's state). */
typedef struct {
    int32_t i, s, from;
} live_pair;

/* Some live pair stays alive through every path below the node (chain_covers). A frontier
 * entry that stays alive keeps the parse alive whatever completions happen on the way, so
 * every token of the subtree is allowed. */
static int stays_below(const hr_grammar_vocab *v, const pair_dfa *pd, const live_pair *lv, int n,
                       int u) {
    if (v->node_byte[u] >= 0xC2) /* a lead byte: from the parent's states (lead_covers) */
        for (int j = 0; j < n; j++)
            if (lead_covers(pd[lv[j].i].d, lv[j].from, v, u)) return 1;
    if (!utf8_below(v, u)) return 0;
    for (int j = 0; j < n; j++)
        if (chain_covers(pd[lv[j].i].d, lv[j].s, v, u)) return 1;
    return 0;
}

/* A bound node's state vector: every pair's state, -1 where dead. */
static int bound_at(bounds *b, int u, const live_pair *lv, int n, int32_t *vec, int k) {
    for (int i = 0; i < k; i++)
        vec[i] = -1;
    for (int j = 0; j < n; j++)
        vec[lv[j].i] = lv[j].s;
    return add_bound(b, u, vec, k);
}

/* The walk's verdicts on the trie's preorder token list sorted_tok, which it meets in order
 * and whole: segments alternately not allowed (first) and allowed, the i-th ending at
 * cut[i], the last at the list's end. */
typedef struct {
    int32_t *cut;
    int n, cap, allowed;
} verdicts;

static int add_cut(verdicts *r, int32_t at) {
    if (r->n == r->cap) {
        int nc = r->cap ? r->cap * 2 : 256;
        int32_t *q = realloc(r->cut, (size_t)nc * sizeof *q);
        if (!q) return -1;
        r->cut = q, r->cap = nc;
    }
    r->cut[r->n++] = at;
    r->allowed ^= 1;
    return 0;
}

/* The tokens sorted_tok[b, e) are allowed or not. */
static inline int judge(verdicts *r, int allowed, int32_t b, int32_t e) {
    return allowed == r->allowed || b == e ? 0 : add_cut(r, b);
}

/* The entry's bits from the verdicts: the allowed tokens set one by one, or, when most tokens
 * are allowed (a string interior allows ~140k of Qwen's 151k), every normal token but the
 * others (the fewer writes either way). */
static void fill_bits(const hr_grammar_vocab *v, const verdicts *r, uint32_t *bits) {
    int32_t total = v->node_tok[v->n_nodes], yes = 0;
    for (int i = 0; i < r->n; i += 2)
        yes += (i + 1 < r->n ? r->cut[i + 1] : total) - r->cut[i];
    int flip = yes * 2 > total;
    if (flip) memcpy(bits, v->normal_bits, mask_words(v) * sizeof(uint32_t));
    for (int i = flip ? -1 : 0; i < r->n; i += 2) { /* the segments to write */
        int32_t b = i < 0 ? 0 : r->cut[i], e = i + 1 < r->n ? r->cut[i + 1] : total;
        for (int32_t k = b; k < e; k++) {
            int32_t id = v->sorted_tok[k];
            bits[id >> 5] ^= 1u << (id & 31);
        }
    }
}

/* Walks the trie with the pairs alone: lv holds each depth's live pairs (n_lv of them), so
 * a dead pair costs nothing below its node (a frontier's key literals die within a byte or
 * two, its string lives on). A live leaf is allowed at once (nothing below it to stay alive
 * through). Not allowed: dead, or below a bound node (which the parser takes). */
static int walk_pairs(const hr_grammar *g, const hr_grammar_vocab *v, const pairs *p, hr_gentry *e,
                      live_pair *lv, int *n_lv, bounds *b) {
    int k = p->n, ok = 1;
    pair_dfa *pd = malloc(((size_t)k + 1) * sizeof *pd);
    int32_t *vec = malloc(((size_t)k + 1) * sizeof *vec);
    verdicts r = {0};
    if (!pd || !vec) {
        free(pd);
        free(vec);
        return -1;
    }
    for (int i = 0; i < k; i++) {
        const hr_gdfa *d = &g->terms[p->term[i]];
        pd[i] = (pair_dfa){d, d->trans, d->accept, (uint8_t)p->v[i].counts};
        lv[i] = (live_pair){i, p->v[i].state, -1};
    }
    n_lv[0] = k;
    const uint8_t *byte = v->node_byte;
    const uint16_t *depth = v->node_depth;
    const int32_t *end = v->node_end, *tok = v->node_tok;
    for (int u = 1, n_nodes = v->n_nodes; ok && u < n_nodes;) {
        int d = depth[u], acc = 0, n = 0;
        const live_pair *in = lv + (size_t)(d - 1) * k;
        live_pair *out = lv + (size_t)d * k;
        for (int j = 0, m = n_lv[d - 1]; j < m; j++) { /* the node's byte for each live pair */
            const pair_dfa *q = &pd[in[j].i];
            int32_t s = q->trans[(size_t)in[j].s * 256 + byte[u]];
            if (s < 0) continue;
            out[n++] = (live_pair){in[j].i, s, in[j].s};
            acc |= q->accept[s] & q->counts;
        }
        n_lv[d] = n;
        if (n && (end[u] == u + 1 || stays_below(v, pd, out, n, u))) {
            ok = !judge(&r, 1, tok[u], tok[end[u]]); /* all allowed */
            u = end[u];
        } else if (!n || acc) { /* dead, or a bound node */
            ok = !(acc && bound_at(b, u, out, n, vec, k)) && !judge(&r, 0, tok[u], tok[end[u]]);
            u = end[u];
        } else {
            ok = !judge(&r, 1, tok[u], tok[u + 1]);
            u++;
        }
    }
    if (ok) fill_bits(v, &r, e->bits);
    free(r.cut), free(pd), free(vec);
    return ok ? 0 : -1;
}

/* A group's suffix trie while it is merged: children as sibling lists, tokens as lists; the
 * root's children also by byte (the root has the most, and every suffix starts there). */
typedef struct {
    int32_t *first, *next, *tok_head; /* (cap) nodes; -1 none */
    uint8_t *byte;
    int32_t *tok_id, *tok_next; /* token slots */
    int32_t root_child[256];
    int n, n_tok;
} strie_merge;

static int32_t child_of(strie_merge *w, int32_t x, uint8_t byte) {
    int32_t c = x ? w->first[x] : w->root_child[byte];
    while (c >= 0 && w->byte[c] != byte)
        c = w->next[c];
    if (c >= 0) return c;
    c = w->n++;
    w->byte[c] = byte, w->first[c] = -1, w->tok_head[c] = -1;
    w->next[c] = w->first[x];
    w->first[x] = c;
    if (!x) w->root_child[byte] = c;
    return c;
}

/* Adds the subtree below vocabulary trie node top: node top is the merge's root. */
static void merge_subtree(strie_merge *w, const hr_grammar_vocab *v, int top, int32_t *at) {
    int d0 = v->node_depth[top];
    at[0] = 0;
    for (int u = top; u < v->node_end[top]; u++) {
        int d = v->node_depth[u] - d0;
        int32_t x = d ? child_of(w, at[d - 1], v->node_byte[u]) : 0;
        at[d] = x;
        for (int k = v->node_tok[u]; k < v->node_tok[u + 1]; k++) {
            w->tok_id[w->n_tok] = v->sorted_tok[k];
            w->tok_next[w->n_tok] = w->tok_head[x];
            w->tok_head[x] = w->n_tok++;
        }
    }
}

/* The merged trie laid out in preorder into t (children and tokens in any order). */
static int strie_layout(const strie_merge *w, hr_gstrie *t, int max_depth) {
    t->byte = malloc((size_t)w->n);
    t->depth = malloc((size_t)w->n * sizeof(uint16_t));
    t->end = malloc((size_t)w->n * sizeof(int32_t));
    t->tok_beg = malloc(((size_t)w->n + 1) * sizeof(int32_t));
    t->tok = malloc(((size_t)w->n_tok + 1) * sizeof(int32_t));
    int32_t *node = malloc(((size_t)max_depth + 2) * sizeof(int32_t)),
            *out = malloc(((size_t)max_depth + 2) * sizeof(int32_t)),
            *kid = malloc(((size_t)max_depth + 2) * sizeof(int32_t));
    int ok = t->byte && t->depth && t->end && t->tok_beg && t->tok && node && out && kid;
    int sp = 0, n = 0, n_tok = 0;
    if (ok) node[sp] = 0, out[sp] = -1, sp++;
    while (ok && sp) {
        int top = sp - 1, x = node[top];
        if (out[top] < 0) { /* entering x */
            int o = out[top] = n++;
            t->byte[o] = w->byte[x];
            t->depth[o] = (uint16_t)top;
            t->tok_beg[o] = n_tok;
            for (int32_t k = w->tok_head[x]; k >= 0; k = w->tok_next[k])
                t->tok[n_tok++] = w->tok_id[k];
            kid[top] = w->first[x];
        }
        int32_t c = kid[top];
        if (c >= 0) {
            kid[top] = w->next[c];
            node[sp] = c, out[sp] = -1, sp++;
        } else {
            t->end[out[top]] = n;
            sp--;
        }
    }
    if (ok) t->n = n, t->tok_beg[n] = n_tok;
    free(node), free(out), free(kid);
    return ok ? 0 : -1;
}

/* The trie of the suffixes below the group's small nodes (nodes[0, n)) into t. */
static int strie_build(const hr_grammar_vocab *v, const int32_t *nodes, int n, hr_gstrie *t) {
    size_t cap = 1, toks = 0;
    for (int i = 0; i < n; i++) {
        cap += (size_t)(v->node_end[nodes[i]] - nodes[i]);
        toks += (size_t)(v->node_tok[v->node_end[nodes[i]]] - v->node_tok[nodes[i]]);
    }
    strie_merge w = {.n = 1};
    w.first = malloc(cap * sizeof(int32_t));
    w.next = malloc(cap * sizeof(int32_t));
    w.tok_head = malloc(cap * sizeof(int32_t));
    w.byte = malloc(cap);
    w.tok_id = malloc((toks + 1) * sizeof(int32_t));
    w.tok_next = malloc((toks + 1) * sizeof(int32_t));
    int32_t *at = malloc(((size_t)v->max_depth + 1) * sizeof(int32_t));
    int ok = w.first && w.next && w.tok_head && w.byte && w.tok_id && w.tok_next && at;
    if (ok) {
        memset(w.root_child, -1, sizeof w.root_child);
        w.first[0] = w.next[0] = w.tok_head[0] = -1, w.byte[0] = 0;
        for (int i = 0; i < n; i++)
            merge_subtree(&w, v, nodes[i], at);
        ok = !strie_layout(&w, t, v->max_depth);
    }
    free(w.first), free(w.next), free(w.tok_head), free(w.byte), free(w.tok_id), free(w.tok_next);
    free(at);
    return ok ? 0 : -1;
}

#define SMALL_SUBTREE 64 /* tokens: a node with more is walked in the vocabulary trie */

static int is_big(const hr_grammar_vocab *v, int u, int alone) {
    return alone || v->node_tok[v->node_end[u]] - v->node_tok[u] > SMALL_SUBTREE;
}

/* Per group: a representative node, the nodes walked in the vocabulary trie (large
 * subtrees, or alone in the group), and the trie of the suffixes below the others. */
static int group_bounds(const hr_grammar_vocab *v, hr_gentry *e, const bounds *b) {
    int G = b->n_groups;
    e->n_groups = G;
    e->rep = malloc(((size_t)G + 1) * sizeof(int32_t));
    e->suffix = calloc((size_t)G + 1, sizeof(hr_gstrie));
    e->big_beg = calloc((size_t)G + 2, sizeof(int32_t));
    e->big = malloc(((size_t)b->n + 1) * sizeof(int32_t));
    int32_t *count = calloc((size_t)G + 1, sizeof(int32_t));
    int ok = e->rep && e->suffix && e->big_beg && e->big && count;
    for (int i = 0; ok && i < b->n; i++)
        e->rep[b->group[i]] = b->node[i], count[b->group[i]]++;
    for (int i = 0; ok && i < b->n; i++)
        if (is_big(v, b->node[i], count[b->group[i]] == 1)) e->big_beg[b->group[i] + 2]++;
    for (int g = 0; ok && g < G; g++)
        e->big_beg[g + 2] += e->big_beg[g + 1];
    for (int i = 0; ok && i < b->n; i++)
        if (is_big(v, b->node[i], count[b->group[i]] == 1))
            e->big[e->big_beg[b->group[i] + 1]++] = b->node[i];
    int32_t *small = ok ? malloc(((size_t)b->n + 1) * sizeof(int32_t)) : NULL;
    ok = ok && small;
    for (int g = 0; ok && g < G; g++) {
        int n = 0, toks = 0;
        for (int i = 0; i < b->n; i++) {
            int u = b->node[i];
            if (b->group[i] != g || is_big(v, u, count[g] == 1)) continue;
            small[n++] = u;
            toks += v->node_tok[v->node_end[u]] - v->node_tok[u];
        }
        if (n) ok = !strie_build(v, small, n, &e->suffix[g]);
        if (ok) e->bytes += (size_t)e->suffix[g].n * 11 + (size_t)toks * 4;
    }
    e->bytes += (size_t)b->n * 4;
    free(small);
    free(count);
    return ok ? 0 : -1;
}

/* Most entries allow few tokens (a literal's next byte): their bits are kept as the nonzero
 * words and where they go, when that is under a quarter of the mask (a string interior's
 * 140k tokens stay whole). */
static int pack_bits(const hr_grammar_vocab *v, hr_gentry *e) {
    size_t words = mask_words(v), n = 0;
    for (size_t w = 0; w < words; w++)
        n += e->bits[w] != 0;
    if (n * 2 > words / 4) return 0;
    uint32_t *val = malloc((n + 1) * sizeof *val);
    e->word = malloc((n + 1) * sizeof *e->word);
    if (!val || !e->word) {
        free(val);
        return -1;
    }
    for (size_t w = 0; w < words; w++)
        if (e->bits[w]) val[e->n_words] = e->bits[w], e->word[e->n_words++] = (int32_t)w;
    free(e->bits);
    e->bits = val;
    return 0;
}

/* The entry for the key p (not yet published: refs 0), by one walk of the trie with its
 * pairs; NULL when out of memory. */
static hr_gentry *build_entry(const hr_grammar *g, const hr_grammar_vocab *v, const pairs *p,
                              uint64_t h) {
    hr_gentry *e = calloc(1, sizeof *e);
    live_pair *lv = malloc(((size_t)v->max_depth + 1) * (size_t)(p->n ? p->n : 1) * sizeof *lv);
    int *n_lv = malloc(((size_t)v->max_depth + 1) * sizeof *n_lv);
    bounds b = {0};
    int ok = e && lv && n_lv;
    if (ok) {
        e->hash = h;
        e->vocab = v->uid;
        e->n_pairs = p->n;
        e->pairs = malloc(((size_t)p->n + 1) * sizeof *e->pairs);
        e->bits = calloc(mask_words(v), sizeof(uint32_t));
        ok = e->pairs && e->bits;
    }
    if (ok) {
        memcpy(e->pairs, p->v, (size_t)p->n * sizeof *e->pairs);
        ok = !walk_pairs(g, v, p, e, lv, n_lv, &b) && !group_bounds(v, e, &b);
    }
    free(lv);
    free(n_lv);
    free(b.node), free(b.group), free(b.vecs), free(b.table);
    if (!ok || pack_bits(v, e)) {
        hr_gentry_free(e);
        return NULL;
    }
    e->bytes += (e->word ? (size_t)e->n_words * 8 : mask_words(v) * 4) + (size_t)e->n_groups * 4 +
                (size_t)e->n_pairs * sizeof *e->pairs + sizeof *e;
    return e;
}

/* The entry for the key p, cached or built and offered to the cache, with a reference for
 * the caller; NULL when out of memory. */
static hr_gentry *get_key(const hr_matcher *m, const pairs *p) {
    uint64_t h = hr_gentry_hash(m->v->uid, p->v, p->n);
    hr_gentry *e = hr_gentry_find(m->v->uid, p->v, p->n, h);
    if (!e && (e = build_entry(m->g, m->v, p, h))) e = hr_gentry_publish(e);
    return e;
}

/* The entry for the matcher's frontier, with a reference for the caller; NULL when out of
 * memory. */
static hr_gentry *get_entry(hr_matcher *m) {
    pairs p = {0};
    hr_gentry *e = frontier_pairs(m, &p) ? NULL : get_key(m, &p);
    free(p.v);
    free(p.term);
    return e;
}

/* One group of bound nodes: the parser takes the bytes of the group's representative,
 * then walks the subtrees of the big nodes and the group's suffix trie from there. */
static void walk_group(hr_matcher *m, const hr_gentry *e, int g, uint32_t *bits) {
    const hr_grammar_vocab *v = m->v;
    const hr_gstrie *t = &e->suffix[g];
    int base = m->cur, u = e->rep[g], d = v->node_depth[u];
    const uint8_t *path = v->bytes + v->tok_off[v->sorted_tok[v->node_tok[u]]];
    int k = 0;
    while (k < d && hr_gm_push(m, path[k]))
        k++;
    if (k < d) {
        hr_gm_truncate(m, base);
        return;
    }
    int top = m->cur;
    for (int i = e->big_beg[g]; i < e->big_beg[g + 1]; i++) {
        set_node_tokens(v, e->big[i], bits);
        walk_subtree(m, e->big[i], top, bits);
    }
    if (t->n) set_tokens(t->tok, t->tok_beg[0], t->tok_beg[1], bits);
    for (int c = 1; c < t->n;) {
        hr_gm_truncate(m, top + t->depth[c] - 1);
        if (!hr_gm_push(m, t->byte[c])) {
            c = t->end[c];
            continue;
        }
        set_tokens(t->tok, t->tok_beg[c], t->tok_beg[c + 1], bits);
        c++;
    }
    hr_gm_truncate(m, base);
}

void hr_matcher_mask(hr_matcher *m, uint32_t *bits) {
    if (!m->v) return;
    size_t words = mask_words(m->v);
    memset(bits, 0, words * sizeof(uint32_t));
    if (m->ended) return;
    hr_gentry *e = get_entry(m);
    if (!e) { /* out of memory for the entry: the plain trie walk */
        walk_subtree(m, 0, m->cur, bits);
        set_stops(m, bits);
        return;
    }
    if (e->word)
        for (int i = 0; i < e->n_words; i++)
            bits[e->word[i]] = e->bits[i];
    else
        memcpy(bits, e->bits, words * sizeof(uint32_t));
    for (int g = 0; g < e->n_groups; g++)
        walk_group(m, e, g, bits);
    hr_gentry_release(e);
    set_stops(m, bits);
}
