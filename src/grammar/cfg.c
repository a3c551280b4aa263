/* Grammar compilation: the IR's rules into terminals + CFG. A rule is regular when no rule
 * reachable from it (itself included) is recursive; every maximal run of regular items in
 * a production becomes one terminal backed by a byte DFA, the rest stays context free
 * (groups and repetitions of non-regular items become helper nonterminals, counted ones
 * expanded). Unproductive productions are dropped, so every live parse can finish. */
#include <stdlib.h>
#include <string.h>

#include "grammar/gram_ir.h"
#include "grammar/grammar.h"

#define MAX_SYMBOLS 2000000

typedef struct {
    int lhs, first, n; /* symbols [first, first+n) of b->syms */
} prod;

typedef struct {
    hr_gir *ir;
    int8_t *rule_reg; /* (n_rules) 1 regular */
    int8_t *node_reg; /* (n_nodes at start) -1 unknown */
    int n_nodes0;
    int *rule_nt;   /* (n_rules) nonterminal, -1 none yet */
    int *rule_term; /* (n_rules) terminal of a whole regular rule, -1 none yet */
    hr_gints queue; /* rules whose productions are still to add */
    prod *prods;
    int n_prods, cap_prods;
    hr_gints syms;
    hr_gdfa *terms;
    int n_terms, cap_terms;
    int n_nts;
    /* terminals by the structure of their node (a schema's grammar repeats the same runs,
     * such as `"," ws`, in thousands of productions): open addressing, term + 1, 0 empty */
    int *term_slot, *term_node;
    uint64_t *term_hash;
    int cap_slots;
    hr_gcanon canon; /* structural ids for the DFA cache's keys, kept across terminals */
} builder;

/* ---- regularity ---- */

static void collect_refs(const hr_gir *ir, int node, uint8_t *seen, hr_gints *out, int *oom) {
    const hr_gnode *n = &ir->nodes[node];
    if (n->kind == HR_GN_REF) {
        if (!seen[n->child]) {
            seen[n->child] = 1;
            if (hr_gints_push(out, n->child)) *oom = 1;
        }
    } else if (n->kind == HR_GN_REP || n->kind == HR_GN_NOT)
        collect_refs(ir, n->child, seen, out, oom);
    else if (n->kind != HR_GN_SET)
        for (int k = 0; k < n->n; k++)
            collect_refs(ir, ir->kids[n->first + k], seen, out, oom);
}

/* The rule graph: each rule's direct references, deduplicated, as CSR. */
static hr_err *rule_graph(const hr_gir *ir, int **off, int **adj) {
    int R = ir->n_rules, oom = 0;
    hr_gints all = {0}, one = {0};
    uint8_t *seen = calloc((size_t)R + 1, 1);
    *off = calloc((size_t)R + 1, sizeof(int));
    if (!seen || !*off) oom = 1;
    for (int r = 0; r < R && !oom; r++) {
        one.n = 0;
        collect_refs(ir, ir->body[r], seen, &one, &oom);
        for (int k = 0; k < one.n; k++) {
            seen[one.v[k]] = 0;
            oom |= hr_gints_push(&all, one.v[k]);
        }
        (*off)[r + 1] = all.n;
    }
    free(seen);
    free(one.v);
    *adj = all.v;
    return oom ? hr_err_oom() : NULL;
}

typedef struct {
    const int *off, *adj;
    int *index, *low, *stack, *comp, *work, *edge;
    uint8_t *on_stack;
    int sp, counter, n_comp;
} tarjan;

/* One strongly connected component found (the top of the stack down to v): a component
 * is bad (not regular) if it is recursive or reaches a bad one; Tarjan emits components
 * after every component they reach, so those are known. */
static void emit_component(tarjan *t, int v, int8_t *reg) {
    int bad = 0, first = t->sp;
    do
        first--;
    while (t->stack[first] != v);
    for (int i = first; i < t->sp; i++) {
        int u = t->stack[i];
        t->on_stack[u] = 0;
        t->comp[u] = t->n_comp;
    }
    for (int i = first; i < t->sp && !bad; i++) {
        int u = t->stack[i];
        for (int k = t->off[u]; k < t->off[u + 1] && !bad; k++) {
            int w = t->adj[k];
            bad = t->comp[w] == t->n_comp ? 1 : !reg[w];
        }
    }
    for (int i = first; i < t->sp; i++)
        reg[t->stack[i]] = (int8_t)!bad;
    t->sp = first;
    t->n_comp++;
}

/* Iterative Tarjan from root r (work holds the DFS path, edge the next edge of each). */
static void tarjan_from(tarjan *t, int r, int8_t *reg) {
    int wp = 0;
    t->work[wp++] = r;
    t->index[r] = t->low[r] = ++t->counter;
    t->stack[t->sp++] = r, t->on_stack[r] = 1;
    t->edge[r] = t->off[r];
    while (wp) {
        int v = t->work[wp - 1];
        if (t->edge[v] < t->off[v + 1]) {
            int w = t->adj[t->edge[v]++];
            if (!t->index[w]) {
                t->index[w] = t->low[w] = ++t->counter;
                t->stack[t->sp++] = w, t->on_stack[w] = 1;
                t->edge[w] = t->off[w];
                t->work[wp++] = w;
            } else if (t->on_stack[w] && t->index[w] < t->low[v])
                t->low[v] = t->index[w];
            continue;
        }
        wp--;
        if (wp && t->low[v] < t->low[t->work[wp - 1]]) t->low[t->work[wp - 1]] = t->low[v];
        if (t->low[v] == t->index[v]) emit_component(t, v, reg);
    }
}

/* rule_reg[r]: no rule reachable from r (itself included) is recursive. Linear time. */
static hr_err *classify_rules(builder *b) {
    int R = b->ir->n_rules, *off = NULL, *adj = NULL;
    hr_err *e = rule_graph(b->ir, &off, &adj);
    size_t n = (size_t)R + 1;
    tarjan t = {off,
                adj,
                calloc(n, sizeof(int)),
                calloc(n, sizeof(int)),
                malloc(n * sizeof(int)),
                malloc(n * sizeof(int)),
                malloc(n * sizeof(int)),
                malloc(n * sizeof(int)),
                calloc(n, 1),
                0,
                0,
                0};
    if (!e && (!t.index || !t.low || !t.stack || !t.comp || !t.work || !t.edge || !t.on_stack))
        e = hr_err_oom();
    for (int r = 0; !e && r < R; r++)
        if (!t.index[r]) tarjan_from(&t, r, b->rule_reg);
    free(t.index), free(t.low), free(t.stack), free(t.comp), free(t.work), free(t.edge),
        free(t.on_stack);
    free(off);
    free(adj);
    return e;
}

static int node_regular(builder *b, int node) {
    if (node < b->n_nodes0 && b->node_reg[node] >= 0) return b->node_reg[node];
    const hr_gnode *n = &b->ir->nodes[node];
    int reg = 1;
    if (n->kind == HR_GN_REF)
        reg = b->rule_reg[n->child];
    else if (n->kind == HR_GN_REP || n->kind == HR_GN_NOT)
        reg = node_regular(b, n->child);
    else if (n->kind != HR_GN_SET)
        for (int k = 0; k < n->n && reg; k++)
            reg = node_regular(b, b->ir->kids[n->first + k]);
    if (node < b->n_nodes0) b->node_reg[node] = (int8_t)reg;
    return reg;
}

/* ---- building productions ---- */

/* A hash of node's structure (references to regular rules followed into their bodies). */
static uint64_t node_hash(const hr_gir *ir, int node) {
    const hr_gnode *n = &ir->nodes[node];
    uint64_t h = 1469598103934665603ull ^ (uint64_t)n->kind;
    h = (h ^ (uint64_t)(uint32_t)n->n) * 1099511628211ull;
    switch (n->kind) {
    case HR_GN_SET:
        for (int k = 0; k < n->n; k++)
            h = (h ^ ((uint64_t)ir->ranges[n->first + k].lo << 32 | ir->ranges[n->first + k].hi)) *
                1099511628211ull;
        return h;
    case HR_GN_REP:
        h = (h ^ (uint64_t)(uint32_t)n->min ^ (uint64_t)(uint32_t)n->max << 32) * 1099511628211ull;
        return (h ^ node_hash(ir, n->child)) * 1099511628211ull;
    case HR_GN_NOT: return (h ^ node_hash(ir, n->child)) * 1099511628211ull;
    case HR_GN_REF: return node_hash(ir, ir->body[n->child]);
    default:
        for (int k = 0; k < n->n; k++)
            h = (h ^ node_hash(ir, ir->kids[n->first + k])) * 1099511628211ull;
        return h;
    }
}

static int node_eq(const hr_gir *ir, int a, int b) {
    while (ir->nodes[a].kind == HR_GN_REF)
        a = ir->body[ir->nodes[a].child];
    while (ir->nodes[b].kind == HR_GN_REF)
        b = ir->body[ir->nodes[b].child];
    if (a == b) return 1;
    const hr_gnode *x = &ir->nodes[a], *y = &ir->nodes[b];
    if (x->kind != y->kind || x->n != y->n) return 0;
    if (x->kind == HR_GN_SET)
        return !memcmp(&ir->ranges[x->first], &ir->ranges[y->first],
                       (size_t)x->n * sizeof(hr_grange));
    if (x->kind == HR_GN_REP)
        return x->min == y->min && x->max == y->max && node_eq(ir, x->child, y->child);
    if (x->kind == HR_GN_NOT) return node_eq(ir, x->child, y->child);
    for (int k = 0; k < x->n; k++)
        if (!node_eq(ir, ir->kids[x->first + k], ir->kids[y->first + k])) return 0;
    return 1;
}

static hr_err *grow_slots(builder *b) {
    int cap = b->cap_slots ? b->cap_slots * 2 : 256;
    int *slot = calloc((size_t)cap, sizeof *slot);
    if (!slot) return hr_err_oom();
    for (int t = 0; t < b->n_terms; t++) {
        size_t j = b->term_hash[t] & (size_t)(cap - 1);
        while (slot[j])
            j = (j + 1) & (size_t)(cap - 1);
        slot[j] = t + 1;
    }
    free(b->term_slot);
    b->term_slot = slot;
    b->cap_slots = cap;
    return NULL;
}

/* The terminal for node: an earlier one of the same structure, else a new DFA. */
static hr_err *new_term(builder *b, int node, int *sym) {
    if ((b->n_terms + 1) * 2 > b->cap_slots) HR_TRY(grow_slots(b));
    uint64_t h = node_hash(b->ir, node);
    size_t j = h & (size_t)(b->cap_slots - 1);
    for (; b->term_slot[j]; j = (j + 1) & (size_t)(b->cap_slots - 1)) {
        int t = b->term_slot[j] - 1;
        if (b->term_hash[t] == h && node_eq(b->ir, b->term_node[t], node)) {
            *sym = -(t + 1);
            return NULL;
        }
    }
    if (b->n_terms == b->cap_terms) {
        int nc = b->cap_terms ? b->cap_terms * 2 : 16;
        hr_gdfa *q = realloc(b->terms, (size_t)nc * sizeof *q);
        int *qn = realloc(b->term_node, (size_t)nc * sizeof *qn);
        if (qn) b->term_node = qn;
        uint64_t *qh = qn ? realloc(b->term_hash, (size_t)nc * sizeof *qh) : NULL;
        if (qh) b->term_hash = qh;
        if (q) b->terms = q;
        if (!q || !qn || !qh) return hr_err_oom();
        b->cap_terms = nc;
    }
    HR_TRY(hr_gdfa_build_cached(b->ir, &b->canon, node, &b->terms[b->n_terms]));
    b->term_node[b->n_terms] = node;
    b->term_hash[b->n_terms] = h;
    b->term_slot[j] = b->n_terms + 1;
    *sym = -(b->n_terms++ + 1);
    return NULL;
}

static hr_err *add_prod(builder *b, int lhs, const int *syms, int n) {
    if (b->syms.n + n > MAX_SYMBOLS)
        return hr_errf("grammar too large: over %d symbols", MAX_SYMBOLS);
    if (b->n_prods == b->cap_prods) {
        int nc = b->cap_prods ? b->cap_prods * 2 : 64;
        prod *q = realloc(b->prods, (size_t)nc * sizeof *q);
        if (!q) return hr_err_oom();
        b->prods = q;
        b->cap_prods = nc;
    }
    b->prods[b->n_prods++] = (prod){lhs, b->syms.n, n};
    for (int k = 0; k < n; k++)
        if (hr_gints_push(&b->syms, syms[k])) return hr_err_oom();
    return NULL;
}

static hr_err *add_alts(builder *b, int lhs, int node);

static hr_err *rule_symbol(builder *b, int rule, int *sym) {
    if (b->rule_reg[rule]) {
        if (b->rule_term[rule] < 0) {
            int t;
            HR_TRY(new_term(b, b->ir->body[rule], &t));
            b->rule_term[rule] = t;
        }
        *sym = b->rule_term[rule];
        return NULL;
    }
    if (b->rule_nt[rule] < 0) {
        b->rule_nt[rule] = b->n_nts++;
        if (hr_gints_push(&b->queue, rule)) return hr_err_oom();
    }
    *sym = b->rule_nt[rule];
    return NULL;
}

/* X{min,max} of a non-regular X (symbol c) as the productions of a fresh nonterminal. */
static hr_err *repeat_symbol(builder *b, int c, int min, int max, int *sym) {
    int tail = -1;
    if (max == HR_G_INF) { /* tail ::= ε | tail c (left recursion suits Earley) */
        tail = b->n_nts++;
        int two[2] = {tail, c};
        HR_TRY(add_prod(b, tail, NULL, 0));
        HR_TRY(add_prod(b, tail, two, 2));
    } else
        for (int k = min; k < max; k++) { /* opt ::= ε | c opt */
            int o = b->n_nts++, two[2] = {c, tail};
            HR_TRY(add_prod(b, o, NULL, 0));
            HR_TRY(add_prod(b, o, two, tail < 0 ? 1 : 2));
            tail = o;
        }
    if (min == 0 && tail >= 0) { /* X* and X{0,n} are the tail alone */
        *sym = tail;
        return NULL;
    }
    if ((long)min + 1 > MAX_SYMBOLS) return hr_errf("grammar too large: repetition of %d", min);
    int h = b->n_nts++, *seq = malloc(((size_t)min + 1) * sizeof(int));
    if (!seq) return hr_err_oom();
    for (int k = 0; k < min; k++)
        seq[k] = c;
    if (tail >= 0) seq[min] = tail;
    hr_err *e = add_prod(b, h, seq, min + (tail >= 0));
    free(seq);
    *sym = h;
    return e;
}

/* The one symbol standing for a non-regular item. */
static hr_err *item_symbol(builder *b, int node, int *sym) {
    const hr_gnode n = b->ir->nodes[node];
    if (n.kind == HR_GN_REF) return rule_symbol(b, n.child, sym);
    if (n.kind == HR_GN_AND)
        return hr_errf("grammar: both sides of \"&\" must be regular (no recursive rule)");
    if (n.kind == HR_GN_NOT)
        return hr_errf("grammar: what \"~\" negates must be regular (no recursive rule)");
    if (n.kind == HR_GN_REP) {
        int c;
        if (node_regular(b, n.child))
            HR_TRY(new_term(b, n.child, &c));
        else
            HR_TRY(item_symbol(b, n.child, &c));
        return repeat_symbol(b, c, n.min, n.max, sym);
    }
    *sym = b->n_nts++;
    return add_alts(b, *sym, node);
}

static hr_err *flush_run(builder *b, hr_gints *run, hr_gints *out) {
    if (!run->n) return NULL;
    int sym;
    const hr_gnode *n0 = &b->ir->nodes[run->v[0]];
    if (run->n == 1 && n0->kind == HR_GN_REF)
        HR_TRY(rule_symbol(b, n0->child, &sym));
    else {
        int node = hr_gir_list(b->ir, HR_GN_SEQ, run->v, run->n);
        if (node < 0) return hr_err_oom();
        HR_TRY(new_term(b, node, &sym));
    }
    run->n = 0;
    return hr_gints_push(out, sym) ? hr_err_oom() : NULL;
}

static hr_err *add_seq(builder *b, int lhs, int node) {
    const hr_gnode n = b->ir->nodes[node];
    int cnt = n.kind == HR_GN_SEQ ? n.n : 1;
    hr_gints run = {0}, out = {0};
    hr_err *e = NULL;
    for (int k = 0; k < cnt && !e; k++) {
        int it = n.kind == HR_GN_SEQ ? b->ir->kids[n.first + k] : node, sym;
        if (node_regular(b, it)) {
            if (hr_gints_push(&run, it)) e = hr_err_oom();
        } else if (!(e = flush_run(b, &run, &out)) && !(e = item_symbol(b, it, &sym)))
            e = hr_gints_push(&out, sym) ? hr_err_oom() : NULL;
    }
    if (!e) e = flush_run(b, &run, &out);
    if (!e) e = add_prod(b, lhs, out.v, out.n);
    free(run.v);
    free(out.v);
    return e;
}

static hr_err *add_alts(builder *b, int lhs, int node) {
    const hr_gnode n = b->ir->nodes[node];
    if (n.kind != HR_GN_ALT) return add_seq(b, lhs, node);
    for (int k = 0; k < n.n; k++)
        HR_TRY(add_seq(b, lhs, b->ir->kids[n.first + k]));
    return NULL;
}

/* ---- finishing ---- */

static int sym_ok(const builder *b, const uint8_t *nt_ok, int s) {
    return s >= 0 ? nt_ok[s] : b->terms[-s - 1].n_states > 0;
}

/* Productive nonterminals (derive some string); drops productions using others. */
static hr_err *prune(builder *b) {
    uint8_t *ok = calloc((size_t)b->n_nts, 1);
    if (!ok) return hr_err_oom();
    for (int changed = 1; changed;) {
        changed = 0;
        for (int p = 0; p < b->n_prods; p++) {
            const prod *q = &b->prods[p];
            if (ok[q->lhs]) continue;
            int all = 1;
            for (int k = 0; k < q->n && all; k++)
                all = sym_ok(b, ok, b->syms.v[q->first + k]);
            if (all) ok[q->lhs] = 1, changed = 1;
        }
    }
    int m = 0;
    for (int p = 0; p < b->n_prods; p++) {
        const prod *q = &b->prods[p];
        int all = 1;
        for (int k = 0; k < q->n && all; k++)
            all = sym_ok(b, ok, b->syms.v[q->first + k]);
        if (all) b->prods[m++] = *q;
    }
    b->n_prods = m;
    int start_ok = ok[0];
    free(ok);
    return start_ok ? NULL : hr_errf("grammar: matches no string at all");
}

static int cmp_prod(const void *x, const void *y) {
    const prod *a = x, *b = y;
    return a->lhs != b->lhs ? a->lhs - b->lhs : a->first - b->first;
}

static void mark_inert(hr_grammar *g) {
    for (int t = 0; t < g->n_terms; t++)
        g->term_inert[t] = 1;
    for (int s = 0; s < g->n_pos; s++) {
        int y = g->pos_sym[s];
        if (y < 0 && y != HR_G_END && (g->pos_lhs[s] != 0 || g->pos_sym[s + 1] != HR_G_END))
            g->term_inert[-y - 1] = 0;
    }
}

static hr_err *layout(builder *b, hr_grammar *g) {
    qsort(b->prods, (size_t)b->n_prods, sizeof(prod), cmp_prod);
    g->n_nts = b->n_nts;
    g->n_prods = b->n_prods;
    g->n_pos = b->n_prods + b->syms.n;
    g->nt_prods = calloc((size_t)g->n_nts + 1, sizeof(int));
    g->prod_pos = malloc(((size_t)g->n_prods + 1) * sizeof(int));
    g->pos_sym = malloc((size_t)g->n_pos * sizeof(int32_t));
    g->pos_lhs = malloc((size_t)g->n_pos * sizeof(int32_t));
    g->nullable = calloc((size_t)g->n_nts, 1);
    g->term_inert = malloc((size_t)g->n_terms + 1);
    if (!g->nt_prods || !g->prod_pos || !g->pos_sym || !g->pos_lhs || !g->nullable ||
        !g->term_inert)
        return hr_err_oom();
    int pos = 0;
    for (int p = 0; p < b->n_prods; p++) {
        const prod *q = &b->prods[p];
        g->nt_prods[q->lhs + 1]++;
        g->prod_pos[p] = pos;
        for (int k = 0; k <= q->n; k++, pos++) {
            g->pos_sym[pos] = k < q->n ? b->syms.v[q->first + k] : HR_G_END;
            g->pos_lhs[pos] = q->lhs;
        }
    }
    g->n_pos = pos; /* pruned productions left symbols in b->syms that have no position */
    for (int nt = 0; nt < g->n_nts; nt++)
        g->nt_prods[nt + 1] += g->nt_prods[nt];
    mark_inert(g);
    for (int changed = 1; changed;) {
        changed = 0;
        for (int p = 0; p < g->n_prods; p++) {
            int lhs = g->pos_lhs[g->prod_pos[p]], all = 1;
            if (g->nullable[lhs]) continue;
            for (int s = g->prod_pos[p]; g->pos_sym[s] != HR_G_END && all; s++) {
                int y = g->pos_sym[s];
                all = y >= 0 ? g->nullable[y] : g->terms[-y - 1].accept[0];
            }
            if (all) g->nullable[lhs] = 1, changed = 1;
        }
    }
    return NULL;
}

static hr_err *build(hr_gir *ir, int root, hr_grammar **out) {
    builder b = {.ir = ir, .n_nodes0 = ir->n_nodes};
    hr_grammar *g = calloc(1, sizeof *g);
    b.rule_reg = malloc((size_t)ir->n_rules + 1);
    b.node_reg = malloc((size_t)ir->n_nodes + 1);
    b.rule_nt = malloc(((size_t)ir->n_rules + 1) * sizeof(int));
    b.rule_term = malloc(((size_t)ir->n_rules + 1) * sizeof(int));
    hr_err *e = (g && b.rule_reg && b.node_reg && b.rule_nt && b.rule_term) ? NULL : hr_err_oom();
    if (!e) e = hr_gcanon_init(&b.canon, ir);
    if (!e) {
        memset(b.node_reg, -1, (size_t)ir->n_nodes + 1);
        for (int r = 0; r < ir->n_rules; r++)
            b.rule_nt[r] = b.rule_term[r] = -1;
        b.n_nts = 1; /* 0: S' ::= root */
        e = classify_rules(&b);
    }
    int sym;
    if (!e) e = rule_symbol(&b, root, &sym);
    if (!e) e = add_prod(&b, 0, &sym, 1);
    for (int k = 0; !e && k < b.queue.n; k++) {
        int r = b.queue.v[k];
        e = add_alts(&b, b.rule_nt[r], ir->body[r]);
    }
    if (g) {
        g->terms = b.terms;
        g->n_terms = b.n_terms;
    }
    if (!e) e = prune(&b);
    if (!e) e = layout(&b, g);
    free(b.rule_reg);
    free(b.node_reg);
    free(b.rule_nt);
    free(b.rule_term);
    free(b.term_slot);
    free(b.term_node);
    free(b.term_hash);
    hr_gcanon_free(&b.canon);
    free(b.queue.v);
    free(b.prods);
    free(b.syms.v);
    if (e) {
        if (g)
            hr_grammar_free(g);
        else
            free(b.terms);
        return e;
    }
    *out = g;
    return NULL;
}

hr_grammar *hr_grammar_ref(hr_grammar *g) {
    if (g) atomic_fetch_add(&g->refs, 1);
    return g;
}

size_t hr_grammar_bytes(const hr_grammar *g) {
    size_t n = sizeof *g + (size_t)g->n_terms * (sizeof *g->terms + 1) + (size_t)g->n_nts * 5 +
               (size_t)g->n_prods * 4 + (size_t)g->n_pos * 8;
    for (int t = 0; t < g->n_terms; t++)
        n += (size_t)g->terms[t].n_states * (256 * 4 + 1 + sizeof(hr_gbytes) + 4);
    return n;
}

void hr_grammar_free(hr_grammar *g) {
    if (!g || atomic_fetch_sub(&g->refs, 1) > 0) return;
    for (int t = 0; t < g->n_terms; t++)
        hr_gdfa_free(&g->terms[t]);
    free(g->terms);
    free(g->nullable);
    free(g->nt_prods);
    free(g->prod_pos);
    free(g->pos_sym);
    free(g->pos_lhs);
    free(g->term_inert);
    free(g);
}

hr_err *hr_grammar_compile(const char *text, size_t len, hr_grammar **out) {
    if (!text && len) return hr_errf("grammar: no text");
    hr_gir ir = {0};
    int root;
    hr_err *e = hr_gbnf_parse(text ? text : "", len, &ir, &root);
    if (!e) e = build(&ir, root, out);
    hr_gir_free(&ir);
    return e;
}

hr_err *hr_grammar_compile_regex(const char *re, size_t len, hr_grammar **out) {
    if (!re && len) return hr_errf("regex: no pattern");
    hr_gir ir = {0};
    int node, root = -1;
    hr_err *e = hr_regex_parse(re ? re : "", len, 0, &ir, &node);
    if (!e && (root = hr_gir_rule(&ir, "root", 4, 0)) < 0) e = hr_err_oom();
    if (!e) {
        ir.body[root] = node;
        e = build(&ir, root, out);
    }
    hr_gir_free(&ir);
    return e;
}
