/* Structural ids of IR nodes (hash-consing): two nodes get the same id exactly when they
 * have the same structure (kind, bounds, ranges and, recursively, kids; rule references
 * followed into their bodies). The DFA builder keys its NFA fragments on these ids, so the
 * many identical copies a generated regex holds (a string interior after every branch of
 * a key-exclusion trie) become one set of NFA states. Only regular nodes are asked for. */
#include <stdlib.h>
#include <string.h>

#include "grammar/gram_ir.h"

#define FNV_PRIME 1099511628211ull

static uint64_t mix(uint64_t h, uint64_t x) { return (h ^ x) * FNV_PRIME; }

/* *t becomes an empty table of at least 2 need slots; on failure *t and *cap are left as
 * they were. */
static hr_err *table_init(int **t, size_t *cap, size_t need) {
    size_t c = 256;
    while (c < need * 2)
        c *= 2;
    int *n = malloc(c * sizeof(int));
    if (!n) return hr_err_oom();
    memset(n, 0xff, c * sizeof(int));
    free(*t);
    *t = n;
    *cap = c;
    return NULL;
}

hr_err *hr_gcanon_init(hr_gcanon *c, const hr_gir *ir) {
    memset(c, 0, sizeof *c);
    c->ir = ir;
    HR_TRY(table_init(&c->of, &c->cap_of, 64));
    c->of_id = malloc(c->cap_of * sizeof(int));
    if (!c->of_id) return hr_err_oom();
    return table_init(&c->reps, &c->cap_reps, 64);
}

void hr_gcanon_free(hr_gcanon *c) {
    free(c->of);
    free(c->of_id);
    free(c->reps);
    free(c->rep_hash);
    free(c->rep_node);
    memset(c, 0, sizeof *c);
}

/* The node a chain of rule references leads to. */
static int deref(const hr_gir *ir, int node) {
    while (ir->nodes[node].kind == HR_GN_REF)
        node = ir->body[ir->nodes[node].child];
    return node;
}

/* The number of kids of n (a REP's or NOT's child is its one kid) and the k-th one. */
static int kid_count(const hr_gnode *n) {
    if (n->kind == HR_GN_REP || n->kind == HR_GN_NOT) return 1;
    return n->kind == HR_GN_SET ? 0 : n->n;
}

static int kid(const hr_gir *ir, const hr_gnode *n, int k) {
    return n->kind == HR_GN_REP || n->kind == HR_GN_NOT ? n->child : ir->kids[n->first + k];
}

/* Same kind, bounds and ranges; kids compared by id (already canonical). */
static int same(hr_gcanon *c, int a, int b) {
    const hr_gir *ir = c->ir;
    const hr_gnode *x = &ir->nodes[a], *y = &ir->nodes[b];
    if (x->kind != y->kind || x->n != y->n || x->min != y->min || x->max != y->max) return 0;
    if (x->kind == HR_GN_SET) /* an empty set ([]) may have no range table at all */
        return x->n == 0 || !memcmp(&ir->ranges[x->first], &ir->ranges[y->first],
                                    (size_t)x->n * sizeof(hr_grange));
    for (int k = 0; k < kid_count(x); k++)
        if (hr_gcanon_id(c, kid(ir, x, k)) != hr_gcanon_id(c, kid(ir, y, k))) return 0;
    return 1;
}

static uint64_t shape_hash(hr_gcanon *c, int node, int *oom) {
    const hr_gir *ir = c->ir;
    const hr_gnode *n = &ir->nodes[node];
    uint64_t h = mix(mix(1469598103934665603ull, (uint64_t)n->kind), (uint32_t)n->n);
    h = mix(h, (uint64_t)(uint32_t)n->min << 32 | (uint32_t)n->max);
    if (n->kind == HR_GN_SET)
        for (int k = 0; k < n->n; k++)
            h = mix(h, (uint64_t)ir->ranges[n->first + k].lo << 32 | ir->ranges[n->first + k].hi);
    for (int k = 0; k < kid_count(n) && !*oom; k++) {
        int id = hr_gcanon_id(c, kid(ir, n, k));
        if (id < 0) *oom = 1;
        h = mix(h, (uint32_t)id);
    }
    return h;
}

static hr_err *grow_reps(hr_gcanon *c) {
    if (c->n_reps < c->cap_rep_list) return NULL;
    int cap = c->cap_rep_list ? c->cap_rep_list * 2 : 64;
    uint64_t *h = realloc(c->rep_hash, (size_t)cap * sizeof *h);
    if (h) c->rep_hash = h;
    int *n = realloc(c->rep_node, (size_t)cap * sizeof *n);
    if (n) c->rep_node = n;
    if (!h || !n) return hr_err_oom();
    if ((size_t)cap * 2 > c->cap_reps) { /* rebuild the representatives' table */
        HR_TRY(table_init(&c->reps, &c->cap_reps, (size_t)cap));
        for (int r = 0; r < c->n_reps; r++) {
            size_t s = c->rep_hash[r] & (c->cap_reps - 1);
            while (c->reps[s] >= 0)
                s = (s + 1) & (c->cap_reps - 1);
            c->reps[s] = r;
        }
    }
    c->cap_rep_list = cap; /* only once the table has room for it */
    return NULL;
}

/* The id of the representative equal to node, a new one when none is. */
static int intern_shape(hr_gcanon *c, int node) {
    int oom = 0;
    uint64_t h = shape_hash(c, node, &oom);
    if (oom) return -1;
    size_t s = h & (c->cap_reps - 1);
    for (; c->reps[s] >= 0; s = (s + 1) & (c->cap_reps - 1)) {
        int r = c->reps[s];
        if (c->rep_hash[r] == h && same(c, c->rep_node[r], node)) return r;
    }
    int at = c->n_reps;
    hr_err *e = grow_reps(c);
    if (e) {
        hr_err_free(e);
        return -1;
    }
    c->rep_hash[at] = h;
    c->rep_node[at] = node;
    c->n_reps++;
    for (s = h & (c->cap_reps - 1); c->reps[s] >= 0;)
        s = (s + 1) & (c->cap_reps - 1);
    c->reps[s] = at;
    return at;
}

/* Room in the node -> id memo for one more entry. */
static int grow_of(hr_gcanon *c) {
    if ((size_t)(c->n_of + 1) * 2 <= c->cap_of) return 0;
    size_t cap = c->cap_of * 2;
    int *t = malloc(cap * sizeof(int)), *ids = realloc(c->of_id, cap * sizeof(int));
    if (ids) c->of_id = ids;
    if (!t || !ids) {
        free(t);
        return -1;
    }
    memset(t, 0xff, cap * sizeof(int));
    for (size_t s = 0; s < c->cap_of; s++) {
        int i = c->of[s];
        if (i < 0) continue;
        size_t q = (size_t)(c->of_id[2 * i] * FNV_PRIME) & (cap - 1);
        while (t[q] >= 0)
            q = (q + 1) & (cap - 1);
        t[q] = i;
    }
    free(c->of);
    c->of = t;
    c->cap_of = cap;
    return 0;
}

int hr_gcanon_id(hr_gcanon *c, int node) {
    node = deref(c->ir, node);
    size_t s = (size_t)((uint64_t)(uint32_t)node * FNV_PRIME) & (c->cap_of - 1);
    for (; c->of[s] >= 0; s = (s + 1) & (c->cap_of - 1))
        if (c->of_id[2 * c->of[s]] == node) return c->of_id[2 * c->of[s] + 1];
    int id = intern_shape(c, node);
    if (id < 0 || grow_of(c)) return -1;
    s = (size_t)((uint64_t)(uint32_t)node * FNV_PRIME) & (c->cap_of - 1);
    while (c->of[s] >= 0)
        s = (s + 1) & (c->cap_of - 1);
    c->of[s] = c->n_of;
    c->of_id[2 * c->n_of] = node;
    c->of_id[2 * c->n_of + 1] = id;
    c->n_of++;
    return id;
}
