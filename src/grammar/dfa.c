/* Regular IR nodes to byte DFAs: a Thompson NFA whose edges are UTF-8 byte ranges (each
 * code point range split into byte-range sequences, as RE2 does), subset construction,
 * removal of states that cannot reach an accepting one, and minimization (minimize.c) over
 * byte classes. Caps on
 * NFA and DFA states answer "grammar too large" instead of running away. */
#include <stdlib.h>
#include <string.h>

#include "grammar/gram_ir.h"

#define MAX_NFA 400000
#define MAX_DFA 20000
/* NFA states visited and edges tried by the subset construction of one regular part: a
 * pattern like (a?){30000} stays under MAX_DFA but would take minutes without a cap. */
#define MAX_WORK (1L << 27)
/* Members of all DFA states' NFA sets together (4 bytes each). */
#define MAX_ITEMS (1L << 24)

typedef struct {
    int from, to;
    uint8_t lo, hi;
} edge;

typedef struct {
    int node; /* an AND or NOT node */
    hr_gdfa dfa;
} built_op;

typedef struct {
    uint64_t key; /* memo_key + 1, 0 empty */
    int entry;
} frag_memo;

typedef struct {
    const hr_gir *ir;
    hr_gcanon canon;
    frag_memo *memo; /* open addressing over (structural id, continuation) */
    size_t cap_memo;
    int n_memo;
    edge *e;
    int n_e, cap_e;
    int *eps; /* (from, to) pairs */
    int n_eps, cap_eps;
    int n_states;
    int depth;
    built_op *ops; /* (n_ops) the AND / NOT nodes' DFAs built so far, for their copies */
    int n_ops, cap_ops;
} nfa;

static hr_err *too_large(void) {
    return hr_errf("grammar too large: a regular part needs more than %d NFA states", MAX_NFA);
}

static hr_err *grow(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return NULL;
    int nc = *cap ? *cap * 2 : 64;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) return hr_err_oom();
    *p = q;
    *cap = nc;
    return NULL;
}

static hr_err *state(nfa *a, int *s) {
    if (a->n_states >= MAX_NFA) return too_large();
    *s = a->n_states++;
    return NULL;
}

static hr_err *add_edge(nfa *a, int from, int to, int lo, int hi) {
    HR_TRY(grow((void **)&a->e, &a->cap_e, a->n_e + 1, sizeof(edge)));
    a->e[a->n_e++] = (edge){from, to, (uint8_t)lo, (uint8_t)hi};
    return NULL;
}

static hr_err *add_eps(nfa *a, int from, int to) {
    HR_TRY(grow((void **)&a->eps, &a->cap_eps, 2 * a->n_eps + 2, sizeof(int)));
    a->eps[2 * a->n_eps] = from;
    a->eps[2 * a->n_eps + 1] = to;
    a->n_eps++;
    return NULL;
}

static int encode(uint32_t cp, uint8_t *b) {
    if (cp < 0x80) return b[0] = (uint8_t)cp, 1;
    if (cp < 0x800)
        return b[0] = (uint8_t)(0xC0 | cp >> 6), b[1] = (uint8_t)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        b[0] = (uint8_t)(0xE0 | cp >> 12);
        b[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    b[0] = (uint8_t)(0xF0 | cp >> 18);
    b[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    b[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    b[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Edges from in to out for code points lo..hi (no surrogates inside), split until every
 * piece is a sequence of byte ranges. */
static hr_err *utf8_range(nfa *a, int in, int out, uint32_t lo, uint32_t hi) {
    static const uint32_t lim[3] = {0x7F, 0x7FF, 0xFFFF};
    for (int k = 0; k < 3; k++)
        if (lo <= lim[k] && hi > lim[k]) {
            HR_TRY(utf8_range(a, in, out, lo, lim[k]));
            return utf8_range(a, in, out, lim[k] + 1, hi);
        }
    if (hi < 0x80) return add_edge(a, in, out, (int)lo, (int)hi);
    for (int k = 1; k < 4; k++) {
        uint32_t m = (1u << (6 * k)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if (lo & m) {
                HR_TRY(utf8_range(a, in, out, lo, lo | m));
                return utf8_range(a, in, out, (lo | m) + 1, hi);
            }
            if ((hi & m) != m) {
                HR_TRY(utf8_range(a, in, out, lo, (hi & ~m) - 1));
                return utf8_range(a, in, out, hi & ~m, hi);
            }
        }
    }
    uint8_t bl[4], bh[4];
    int n = encode(lo, bl);
    encode(hi, bh);
    int cur = in;
    for (int k = 0; k < n; k++) {
        int next = out;
        if (k < n - 1) HR_TRY(state(a, &next));
        HR_TRY(add_edge(a, cur, next, bl[k], bh[k]));
        cur = next;
    }
    return NULL;
}

/* Fragments are built backwards: frag(node, cont) returns a state whose language is
 * node's followed by cont's, so a sequence needs no states of its own, and a fragment is
 * keyed on (structural id of node, cont): identical copies before the same continuation
 * share their states. */
static hr_err *frag(nfa *a, int node, int cont, int *entry);

static uint64_t memo_key(int id, int cont) { return (uint64_t)(uint32_t)id << 32 | (uint32_t)cont; }

static size_t memo_slot(const nfa *a, uint64_t k) {
    size_t s = (size_t)((k + 1) * 0x9E3779B97F4A7C15ull >> 20) & (a->cap_memo - 1);
    while (a->memo[s].key && a->memo[s].key != k + 1)
        s = (s + 1) & (a->cap_memo - 1);
    return s;
}

static hr_err *memo_put(nfa *a, uint64_t k, int entry) {
    if ((size_t)(a->n_memo + 1) * 2 > a->cap_memo) {
        size_t old = a->cap_memo;
        frag_memo *m = a->memo;
        a->cap_memo = old ? old * 2 : 1024;
        a->memo = calloc(a->cap_memo, sizeof *a->memo);
        if (!a->memo) {
            a->memo = m;
            a->cap_memo = old;
            return hr_err_oom();
        }
        for (size_t s = 0; s < old; s++)
            if (m[s].key) a->memo[memo_slot(a, m[s].key - 1)] = m[s];
        free(m);
    }
    a->memo[memo_slot(a, k)] = (frag_memo){k + 1, entry};
    a->n_memo++;
    return NULL;
}

static hr_err *frag_set(nfa *a, const hr_gnode *n, int cont, int *entry) {
    HR_TRY(state(a, entry));
    for (int k = 0; k < n->n; k++) {
        const hr_grange *r = &a->ir->ranges[n->first + k];
        HR_TRY(utf8_range(a, *entry, cont, r->lo, r->hi));
    }
    return NULL;
}

/* A state that goes on to x or y. */
static hr_err *fork_to(nfa *a, int x, int y, int *entry) {
    HR_TRY(state(a, entry));
    HR_TRY(add_eps(a, *entry, x));
    return add_eps(a, *entry, y);
}

static hr_err *frag_rep(nfa *a, const hr_gnode *n, int cont, int *entry) {
    int cur = cont, body;
    if (n->max == HR_G_INF) {
        HR_TRY(state(a, &cur));
        HR_TRY(frag(a, n->child, cur, &body));
        HR_TRY(add_eps(a, cur, cont));
        HR_TRY(add_eps(a, cur, body));
    }
    for (int k = n->min; n->max != HR_G_INF && k < n->max; k++) {
        HR_TRY(frag(a, n->child, cur, &body));
        HR_TRY(fork_to(a, cont, body, &cur));
    }
    for (int k = 0; k < n->min; k++)
        HR_TRY(frag(a, n->child, cur, &cur));
    *entry = cur;
    return NULL;
}

/* The product of n's kids' languages (each compiled to its own minimal DFA). */
static hr_err *and_product(const hr_gir *ir, const hr_gnode *n, hr_gdfa *acc) {
    hr_gdfa kid, next;
    HR_TRY(hr_gdfa_build(ir, ir->kids[n->first], acc));
    for (int k = 1; k < n->n; k++) {
        hr_err *e = hr_gdfa_build(ir, ir->kids[n->first + k], &kid);
        if (!e) e = hr_gdfa_intersect(acc, &kid, &next);
        hr_gdfa_free(&kid);
        hr_gdfa_free(acc);
        if (e) return e;
        *acc = next;
    }
    return NULL;
}

/* The DFA of AND or NOT node `node`, built once per NFA however often a repetition copies
 * it. */
static hr_err *op_dfa(nfa *a, int node, const hr_gdfa **out) {
    for (int k = 0; k < a->n_ops; k++)
        if (a->ops[k].node == node) return *out = &a->ops[k].dfa, NULL;
    HR_TRY(grow((void **)&a->ops, &a->cap_ops, a->n_ops + 1, sizeof *a->ops));
    const hr_gnode *n = &a->ir->nodes[node];
    hr_gdfa *d = &a->ops[a->n_ops].dfa;
    if (n->kind == HR_GN_AND)
        HR_TRY(and_product(a->ir, n, d));
    else {
        hr_gdfa x;
        HR_TRY(hr_gdfa_build(a->ir, n->child, &x));
        hr_err *e = hr_gdfa_complement(&x, d);
        hr_gdfa_free(&x);
        HR_TRY(e);
    }
    a->ops[a->n_ops].node = node;
    *out = &a->ops[a->n_ops++].dfa;
    return NULL;
}

/* AND or NOT node `node` as NFA states and byte edges: one state per state of its DFA,
 * cont reached from the accepting ones. */
static hr_err *frag_dfa(nfa *a, int node, int cont, int *entry) {
    const hr_gdfa *p;
    HR_TRY(op_dfa(a, node, &p));
    if (!p->n_states) return state(a, entry); /* the empty language: a dead end */
    int base = a->n_states;
    if (p->n_states > MAX_NFA - base) return too_large();
    a->n_states += p->n_states;
    *entry = base;
    for (int s = 0; s < p->n_states; s++) {
        const int32_t *row = p->trans + (size_t)s * 256;
        if (p->accept[s]) HR_TRY(add_eps(a, base + s, cont));
        for (int lo = 0, hi; lo < 256; lo = hi + 1) {
            for (hi = lo; hi < 255 && row[hi + 1] == row[lo];)
                hi++;
            if (row[lo] >= 0) HR_TRY(add_edge(a, base + s, base + row[lo], lo, hi));
        }
    }
    return NULL;
}

static hr_err *frag_node(nfa *a, int node, int cont, int *entry) {
    const hr_gnode *n = &a->ir->nodes[node];
    switch (n->kind) {
    case HR_GN_SET: return frag_set(a, n, cont, entry);
    case HR_GN_SEQ:
        for (int k = n->n - 1; k >= 0; k--)
            HR_TRY(frag(a, a->ir->kids[n->first + k], cont, &cont));
        *entry = cont;
        return NULL;
    case HR_GN_ALT:
        HR_TRY(state(a, entry));
        for (int k = 0; k < n->n; k++) {
            int kid;
            HR_TRY(frag(a, a->ir->kids[n->first + k], cont, &kid));
            HR_TRY(add_eps(a, *entry, kid));
        }
        return NULL;
    case HR_GN_AND:
    case HR_GN_NOT: return frag_dfa(a, node, cont, entry);
    case HR_GN_REP: return frag_rep(a, n, cont, entry);
    case HR_GN_REF: return frag(a, a->ir->body[n->child], cont, entry);
    }
    return NULL;
}

/* The entry of node before cont (rule references inlined), shared with an earlier copy of
 * the same structure before the same cont. */
static hr_err *frag(nfa *a, int node, int cont, int *entry) {
    if (++a->depth > 10000) return hr_errf("grammar too large: regular rules nested too deep");
    int id = hr_gcanon_id(&a->canon, node);
    if (id < 0) return hr_err_oom();
    uint64_t k = memo_key(id, cont);
    size_t s = a->cap_memo ? memo_slot(a, k) : 0;
    if (a->cap_memo && a->memo[s].key) {
        *entry = a->memo[s].entry;
    } else {
        HR_TRY(frag_node(a, node, cont, entry));
        HR_TRY(memo_put(a, k, *entry));
    }
    a->depth--;
    return NULL;
}

/* ---- subset construction ---- */

typedef struct {
    int *off_e, *off_eps; /* CSR by from-state */
    edge *e;
    int *eps;
    int n;
    int *mark, stamp; /* closure visit marks */
    int *stack;
    long work; /* against MAX_WORK */
} csr;

static int cmp_edge(const void *x, const void *y) {
    return ((const edge *)x)->from - ((const edge *)y)->from;
}

static hr_err *build_csr(nfa *a, csr *c) {
    c->n = a->n_states;
    c->off_e = calloc((size_t)c->n + 1, sizeof(int));
    c->off_eps = calloc((size_t)c->n + 1, sizeof(int));
    c->eps = malloc(((size_t)a->n_eps + 1) * sizeof(int));
    c->mark = calloc((size_t)c->n, sizeof(int));
    c->stack = malloc((size_t)c->n * sizeof(int));
    if (!c->off_e || !c->off_eps || !c->eps || !c->mark || !c->stack) return hr_err_oom();
    if (a->n_e) qsort(a->e, (size_t)a->n_e, sizeof(edge), cmp_edge);
    c->e = a->e;
    for (int k = 0; k < a->n_e; k++)
        c->off_e[a->e[k].from + 1]++;
    for (int k = 0; k < a->n_eps; k++)
        c->off_eps[a->eps[2 * k] + 1]++;
    for (int s = 0; s < c->n; s++) {
        c->off_e[s + 1] += c->off_e[s];
        c->off_eps[s + 1] += c->off_eps[s];
    }
    int *fill = calloc((size_t)c->n, sizeof(int));
    if (!fill) return hr_err_oom();
    for (int k = 0; k < a->n_eps; k++) {
        int f = a->eps[2 * k];
        c->eps[c->off_eps[f] + fill[f]++] = a->eps[2 * k + 1];
    }
    free(fill);
    return NULL;
}

static void csr_free(csr *c) {
    free(c->off_e);
    free(c->off_eps);
    free(c->eps);
    free(c->mark);
    free(c->stack);
}

static int cmp_int(const void *x, const void *y) {
    int a = *(const int *)x, b = *(const int *)y;
    return a < b ? -1 : a > b;
}

/* Epsilon closure of set[0..n) in place (room for c->n); returns the sorted size. */
static int closure(csr *c, int *set, int n) {
    c->stamp++;
    int sp = 0, m = 0;
    for (int k = 0; k < n; k++)
        if (c->mark[set[k]] != c->stamp) c->mark[set[k]] = c->stamp, c->stack[sp++] = set[k];
    while (sp) {
        int s = c->stack[--sp];
        set[m++] = s;
        for (int k = c->off_eps[s]; k < c->off_eps[s + 1]; k++) {
            int t = c->eps[k];
            if (c->mark[t] != c->stamp) c->mark[t] = c->stamp, c->stack[sp++] = t;
        }
    }
    qsort(set, (size_t)m, sizeof(int), cmp_int);
    c->work += m * (32 - __builtin_clz((unsigned)m | 1)); /* the sort's n log n */
    return m;
}

typedef struct {
    int *items; /* all sets back to back */
    size_t n_items, cap_items;
    size_t *off; /* (n_sets + 1) */
    int n_sets, cap_sets;
    int *table; /* open addressing: set index + 1, 0 empty */
    size_t table_cap;
} setmap;

static uint64_t hash_set(const int *s, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int k = 0; k < n; k++)
        h = (h ^ (uint64_t)s[k]) * 1099511628211ull;
    return h;
}

static hr_err *rehash(setmap *m) {
    size_t cap = m->table_cap ? m->table_cap * 2 : 1024;
    int *t = calloc(cap, sizeof(int));
    if (!t) return hr_err_oom();
    for (int i = 0; i < m->n_sets; i++) {
        size_t h = hash_set(m->items + m->off[i], (int)(m->off[i + 1] - m->off[i])) & (cap - 1);
        while (t[h])
            h = (h + 1) & (cap - 1);
        t[h] = i + 1;
    }
    free(m->table);
    m->table = t;
    m->table_cap = cap;
    return NULL;
}

/* The index of set s[0..n), added when new (*added = 1). */
static hr_err *intern(setmap *m, const int *s, int n, int *idx, int *added) {
    if ((size_t)(m->n_sets + 1) * 2 > m->table_cap) HR_TRY(rehash(m));
    size_t h = hash_set(s, n) & (m->table_cap - 1);
    for (; m->table[h]; h = (h + 1) & (m->table_cap - 1)) {
        int i = m->table[h] - 1;
        if (m->off[i + 1] - m->off[i] == (size_t)n &&
            !memcmp(m->items + m->off[i], s, (size_t)n * sizeof(int))) {
            *idx = i;
            *added = 0;
            return NULL;
        }
    }
    if (m->n_sets >= MAX_DFA)
        return hr_errf("grammar too large: a regular part needs more than %d DFA states", MAX_DFA);
    if (m->n_items + (size_t)n > (size_t)MAX_ITEMS)
        return hr_errf(
            "grammar too large: a regular part needs more than %ld NFA states in its DFA states",
            MAX_ITEMS);
    if (m->n_items + (size_t)n > m->cap_items) {
        size_t nc = m->cap_items ? m->cap_items * 2 : 4096;
        while (nc < m->n_items + (size_t)n)
            nc *= 2;
        int *q = realloc(m->items, nc * sizeof(int));
        if (!q) return hr_err_oom();
        m->items = q;
        m->cap_items = nc;
    }
    int cap = m->cap_sets;
    HR_TRY(grow((void **)&m->off, &cap, m->n_sets + 2, sizeof(size_t)));
    m->cap_sets = cap;
    if (n) memcpy(m->items + m->n_items, s, (size_t)n * sizeof(int));
    m->off[m->n_sets] = m->n_items;
    m->n_items += (size_t)n;
    m->off[m->n_sets + 1] = m->n_items;
    m->table[h] = m->n_sets + 1;
    *idx = m->n_sets++;
    *added = 1;
    return NULL;
}

/* The subset construction's DFA, its rows over byte columns: the bytes between two
 * consecutive edge boundaries of the whole NFA, which every state treats alike. */
typedef struct {
    int32_t *trans; /* (n, w) */
    uint8_t *accept;
    int n, cap;
    int w;              /* columns */
    uint8_t col[256];   /* column of each byte */
    uint8_t first[256]; /* (w) the first byte of each column */
} rawdfa;

/* The columns: a new one at each byte where some NFA edge starts or ends. */
static void columns(const csr *c, rawdfa *d) {
    uint8_t cut[257] = {0};
    for (int s = 0; s < c->n; s++)
        for (int j = c->off_e[s]; j < c->off_e[s + 1]; j++)
            cut[c->e[j].lo] = cut[c->e[j].hi + 1] = 1;
    d->w = 0;
    for (int b = 0; b < 256; b++) {
        if (b && cut[b]) d->first[++d->w] = (uint8_t)b;
        d->col[b] = (uint8_t)d->w;
    }
    d->first[0] = 0;
    d->w++;
}

/* Room for n states. */
static hr_err *ensure(rawdfa *d, int n) {
    if (n <= d->cap) return NULL;
    int nc = d->cap ? d->cap * 2 : 64;
    while (nc < n)
        nc *= 2;
    int32_t *t = realloc(d->trans, (size_t)nc * (size_t)d->w * sizeof(int32_t));
    if (!t) return hr_err_oom();
    d->trans = t;
    uint8_t *a = realloc(d->accept, (size_t)nc);
    if (!a) return hr_err_oom();
    d->accept = a;
    d->cap = nc;
    return NULL;
}

/* Target set of set[0..n) on bytes lo..hi (all edges agree on that interval). */
static int step_set(csr *c, const int *set, int n, int b, int *out) {
    int m = 0;
    for (int k = 0; k < n; k++) {
        int j = c->off_e[set[k]], end = c->off_e[set[k] + 1];
        c->work += 1 + end - j;
        for (; j < end; j++)
            if (c->e[j].lo <= b && b <= c->e[j].hi) out[m++] = c->e[j].to;
    }
    return m;
}

static hr_err *expand(csr *c, setmap *m, rawdfa *d, int s, int accept_state, int *buf) {
    int n = (int)(m->off[s + 1] - m->off[s]);
    uint8_t cut[257]; /* the columns where one of the set's edges starts or ends */
    memset(cut, 0, (size_t)d->w + 1);
    cut[0] = cut[d->w] = 1;
    const int *set = m->items + m->off[s];
    for (int k = 0; k < n; k++)
        for (int j = c->off_e[set[k]]; j < c->off_e[set[k] + 1]; j++)
            cut[d->col[c->e[j].lo]] = cut[d->col[c->e[j].hi] + 1] = 1;
    d->accept[s] = 0;
    for (int k = 0; k < n; k++)
        d->accept[s] |= set[k] == accept_state;
    int32_t *row = NULL;
    for (int b = 0; b < d->w;) {
        int e = b + 1;
        while (!cut[e])
            e++;
        set = m->items + m->off[s]; /* intern may move items */
        int t = -1, added, cnt = step_set(c, set, n, d->first[b], buf);
        if (c->work > MAX_WORK)
            return hr_errf("grammar too large: a regular part needs too much work to compile");
        if (cnt) {
            cnt = closure(c, buf, cnt);
            HR_TRY(intern(m, buf, cnt, &t, &added));
            if (added) HR_TRY(ensure(d, m->n_sets));
        }
        row = d->trans + (size_t)s * (size_t)d->w; /* ensure may move trans */
        for (int x = b; x < e; x++)
            row[x] = t;
        b = e;
    }
    return NULL;
}

static hr_err *determinize(csr *c, int start, int accept_state, rawdfa *d) {
    setmap m = {0};
    int *buf = malloc(((size_t)c->n + 1) * sizeof(int));
    hr_err *e = buf ? NULL : hr_err_oom();
    if (!e) {
        buf[0] = start;
        int n = closure(c, buf, 1), idx, added;
        if (!(e = intern(&m, buf, n, &idx, &added))) e = ensure(d, 1);
    }
    for (int s = 0; !e && s < m.n_sets; s++)
        e = expand(c, &m, d, s, accept_state, buf);
    d->n = m.n_sets;
    free(buf);
    free(m.items);
    free(m.off);
    free(m.table);
    return e;
}

/* ---- trim + minimize ---- */

/* live[s] = s can reach an accepting state. */
static hr_err *coreachable(const rawdfa *d, uint8_t *live) {
    int *stack = malloc((size_t)d->n * sizeof(int)), sp = 0;
    int *roff = calloc((size_t)d->n + 1, sizeof(int)),
        *radj = malloc((size_t)d->n * (size_t)d->w * sizeof(int));
    hr_err *e = (stack && roff && radj) ? NULL : hr_err_oom();
    if (!e) {
        /* one reverse edge per run of equal targets in a row (rows are mostly runs) */
        size_t w = (size_t)d->w;
        for (size_t k = 0; k < (size_t)d->n * w; k++)
            if (d->trans[k] >= 0 && (k % w == 0 || d->trans[k - 1] != d->trans[k]))
                roff[d->trans[k] + 1]++;
        for (int s = 0; s < d->n; s++)
            roff[s + 1] += roff[s];
        int *fill = calloc((size_t)d->n + 1, sizeof(int));
        if (!fill) e = hr_err_oom();
        for (size_t k = 0; !e && k < (size_t)d->n * w; k++) {
            int t = d->trans[k];
            if (t >= 0 && (k % w == 0 || d->trans[k - 1] != t))
                radj[roff[t] + fill[t]++] = (int)(k / w);
        }
        free(fill);
        for (int s = 0; !e && s < d->n; s++)
            if ((live[s] = d->accept[s])) stack[sp++] = s;
        while (!e && sp) {
            int s = stack[--sp];
            for (int k = roff[s]; k < roff[s + 1]; k++)
                if (!live[radj[k]]) live[radj[k]] = 1, stack[sp++] = radj[k];
        }
    }
    free(stack);
    free(roff);
    free(radj);
    return e;
}

/* Columns that every state treats alike share a class: minimization looks at one column
 * of each class (rep), not at all of them. Returns the number of classes. */
static int col_classes_exact(const rawdfa *d, uint8_t *rep) {
    int n = 0;
    size_t w = (size_t)d->w;
    for (int b = 0; b < d->w; b++) {
        int same = -1;
        for (int c = 0; c < n && same < 0; c++) {
            int eq = 1;
            for (int s = 0; s < d->n && eq; s++)
                eq = d->trans[(size_t)s * w + b] == d->trans[(size_t)s * w + rep[c]];
            if (eq) same = c;
        }
        if (same < 0) rep[n++] = (uint8_t)b;
    }
    return n;
}

/* As col_classes_exact, reading the table row by row: a hash per column picks the
 * classes, one more pass checks them, and a collision falls back to the exact compare. */
static int col_classes(const rawdfa *d, uint8_t *rep) {
    uint64_t h[256];
    size_t w = (size_t)d->w;
    for (int b = 0; b < d->w; b++)
        h[b] = 1469598103934665603ull;
    for (int s = 0; s < d->n; s++) {
        const int32_t *row = d->trans + (size_t)s * w;
        for (int b = 0; b < d->w; b++)
            h[b] = (h[b] ^ (uint32_t)row[b]) * 1099511628211ull;
    }
    int n = 0;
    uint8_t of[256];
    for (int b = 0; b < d->w; b++) {
        int c = 0;
        while (c < n && h[rep[c]] != h[b])
            c++;
        if (c == n) rep[n++] = (uint8_t)b;
        of[b] = (uint8_t)c;
    }
    for (int s = 0; s < d->n; s++) {
        const int32_t *row = d->trans + (size_t)s * w;
        for (int b = 0; b < d->w; b++)
            if (row[b] != row[rep[of[b]]]) return col_classes_exact(d, rep);
    }
    return n;
}

static hr_err *minimize(rawdfa *d, hr_gdfa *out) {
    int *cls = malloc(((size_t)d->n + 1) * sizeof(int));
    if (!cls) return hr_err_oom();
    uint8_t rep[256];
    int k = hr_gdfa_partition(d->trans, d->w, d->accept, d->n, rep, col_classes(d, rep), cls);
    if (k < 0) {
        free(cls);
        return hr_err_oom();
    }
    out->n_states = k;
    out->trans = malloc((size_t)k * 256 * sizeof(int32_t));
    out->accept = malloc((size_t)k);
    hr_err *e = (out->trans && out->accept) ? NULL : hr_err_oom();
    if (out->accept) memset(out->accept, 2, (size_t)k); /* 2: the class's row is not set */
    for (int s = 0; !e && s < d->n; s++) {
        if (out->accept[cls[s]] != 2) continue; /* the first state of each class tells */
        out->accept[cls[s]] = d->accept[s];
        int32_t to[256];
        for (int x = 0; x < d->w; x++) {
            int t = d->trans[(size_t)s * (size_t)d->w + x];
            to[x] = t < 0 ? -1 : cls[t];
        }
        for (int b = 0; b < 256; b++)
            out->trans[(size_t)cls[s] * 256 + b] = to[d->col[b]];
    }
    free(cls);
    return e;
}

/* Points transitions into states that cannot accept at -1, dropping those states. */
static void kill_dead(rawdfa *d, const uint8_t *live, int *map) {
    int m = 0;
    for (int s = 0; s < d->n; s++)
        map[s] = live[s] ? m++ : -1;
    for (int s = 0; s < d->n; s++) {
        if (!live[s]) continue;
        for (int b = 0; b < d->w; b++) {
            int t = d->trans[(size_t)s * (size_t)d->w + b];
            d->trans[(size_t)map[s] * (size_t)d->w + b] = t < 0 ? -1 : map[t];
        }
        d->accept[map[s]] = d->accept[s];
    }
    d->n = m;
}

hr_err *hr_gdfa_build(const hr_gir *ir, int node, hr_gdfa *out) {
    memset(out, 0, sizeof *out);
    nfa a = {.ir = ir};
    csr c = {0};
    rawdfa d = {0};
    int in = 0, fin = 0;
    hr_err *e = hr_gcanon_init(&a.canon, ir);
    if (!e) e = state(&a, &fin);
    if (!e) e = frag(&a, node, fin, &in);
    if (!e) e = build_csr(&a, &c);
    if (!e) columns(&c, &d);
    if (!e) e = determinize(&c, in, fin, &d);
    uint8_t *live = e ? NULL : calloc((size_t)d.n + 1, 1);
    int *map = e ? NULL : malloc(((size_t)d.n + 1) * sizeof(int));
    if (!e && (!live || !map)) e = hr_err_oom();
    if (!e) e = coreachable(&d, live);
    if (!e && live[0]) {
        kill_dead(&d, live, map);
        e = minimize(&d, out);
        if (!e) e = hr_gdfa_chains(out);
    }
    free(live);
    free(map);
    free(d.trans);
    free(d.accept);
    csr_free(&c);
    free(a.e);
    free(a.eps);
    free(a.memo);
    hr_gcanon_free(&a.canon);
    for (int k = 0; k < a.n_ops; k++)
        hr_gdfa_free(&a.ops[k].dfa);
    free(a.ops);
    if (e) hr_gdfa_free(out); /* a minimized DFA whose chains failed */
    if (!e) out->uid = hr_guid_new();
    return e;
}

uint64_t hr_guid_new(void) {
    static atomic_uint_fast64_t next;
    return atomic_fetch_add(&next, 1) + 1;
}

void hr_gdfa_free(hr_gdfa *d) {
    free(d->trans);
    free(d->accept);
    free(d->chain_set);
    free(d->chain_len);
    memset(d, 0, sizeof *d);
}
