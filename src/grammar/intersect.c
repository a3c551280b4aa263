/* Boolean operations on byte DFAs for GBNF's `&` and `~` (docs/grammar.md): the
 * intersection is the product automaton over the pairs of states reachable from the two
 * starts, a pair accepting when both are; the complement completes a DFA with a sink, flips
 * its accepting states and intersects that with the UTF-8 automaton, so that it holds only
 * valid text. States that cannot accept are left for the caller's trimming. */
#include <stdlib.h>
#include <string.h>

#include "grammar/gram_ir.h"

#define MAX_PRODUCT 20000

typedef struct {
    uint64_t *key; /* (cap) pair + 1, 0 empty */
    int *id;
    size_t cap;
} pairmap;

static uint64_t pair(int a, int b) { return ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1; }

static size_t slot(const pairmap *m, uint64_t k) {
    size_t h = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 17) & (m->cap - 1);
    while (m->key[h] && m->key[h] != k)
        h = (h + 1) & (m->cap - 1);
    return h;
}

/* The id of pair k, given the next id when new (*added = 1); -1 when out of memory. */
static int lookup(pairmap *m, uint64_t k, int next, int *added) {
    *added = 0;
    if ((size_t)next * 2 >= m->cap) {
        pairmap g = {calloc(m->cap * 2, sizeof(uint64_t)), malloc(m->cap * 2 * sizeof(int)),
                     m->cap * 2};
        if (!g.key || !g.id) {
            free(g.key);
            free(g.id);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i]) {
                size_t j = slot(&g, m->key[i]);
                g.key[j] = m->key[i];
                g.id[j] = m->id[i];
            }
        free(m->key);
        free(m->id);
        *m = g;
    }
    size_t h = slot(m, k);
    if (!m->key[h]) m->key[h] = k, m->id[h] = next, *added = 1;
    return m->id[h];
}

static hr_err *grow_out(hr_gdfa *o, int *cap, int n) {
    if (n <= *cap) return NULL;
    int nc = *cap * 2;
    int32_t *t = realloc(o->trans, (size_t)nc * 256 * sizeof(int32_t));
    if (t) o->trans = t;
    uint8_t *a = t ? realloc(o->accept, (size_t)nc) : NULL;
    if (a) o->accept = a;
    if (!t || !a) return hr_err_oom();
    *cap = nc;
    return NULL;
}

hr_err *hr_gdfa_intersect(const hr_gdfa *x, const hr_gdfa *y, hr_gdfa *out) {
    memset(out, 0, sizeof *out);
    if (!x->n_states || !y->n_states) return NULL; /* one side is empty: so is the product */
    int cap = 64, n = 1, added;
    pairmap m = {calloc(1024, sizeof(uint64_t)), malloc(1024 * sizeof(int)), 1024};
    int *todo = malloc((size_t)MAX_PRODUCT * 2 * sizeof(int));
    out->trans = malloc((size_t)cap * 256 * sizeof(int32_t));
    out->accept = malloc((size_t)cap);
    hr_err *e = m.key && m.id && todo && out->trans && out->accept ? NULL : hr_err_oom();
    if (!e && lookup(&m, pair(0, 0), 0, &added) < 0) e = hr_err_oom();
    if (!e) todo[0] = todo[1] = 0;
    for (int s = 0; !e && s < n; s++) {
        int a = todo[2 * s], b = todo[2 * s + 1];
        out->accept[s] = x->accept[a] && y->accept[b];
        for (int c = 0; c < 256 && !e; c++) {
            int ta = x->trans[(size_t)a * 256 + c], tb = y->trans[(size_t)b * 256 + c], t = -1;
            if (ta >= 0 && tb >= 0) {
                t = lookup(&m, pair(ta, tb), n, &added);
                if (t < 0)
                    e = hr_err_oom();
                else if (added && n == MAX_PRODUCT)
                    e = hr_errf("grammar too large: an intersection needs more than %d DFA states",
                                MAX_PRODUCT);
                else if (added) {
                    todo[2 * n] = ta, todo[2 * n + 1] = tb;
                    e = grow_out(out, &cap, ++n);
                }
            }
            if (!e) out->trans[(size_t)s * 256 + c] = t;
        }
    }
    out->n_states = n;
    free(m.key);
    free(m.id);
    free(todo);
    if (e) hr_gdfa_free(out);
    return e;
}

/* x with a sink state for its missing transitions and its accepting states flipped. */
static hr_err *flipped(const hr_gdfa *x, hr_gdfa *out) {
    int n = x->n_states + 1, sink = x->n_states;
    out->n_states = n;
    out->trans = malloc((size_t)n * 256 * sizeof(int32_t));
    out->accept = malloc((size_t)n);
    out->chain_set = NULL;
    out->chain_len = NULL;
    if (!out->trans || !out->accept) return hr_err_oom();
    for (size_t k = 0; k < (size_t)sink * 256; k++)
        out->trans[k] = x->trans[k] < 0 ? sink : x->trans[k];
    for (int c = 0; c < 256; c++)
        out->trans[(size_t)sink * 256 + c] = sink;
    for (int s = 0; s < sink; s++)
        out->accept[s] = !x->accept[s];
    out->accept[sink] = 1;
    return NULL;
}

/* Valid UTF-8 text: hr_gutf8_step's states, accepting between characters. */
static hr_err *utf8_text(hr_gdfa *out) {
    enum { N = 8 };
    memset(out, 0, sizeof *out);
    out->n_states = N;
    out->trans = malloc((size_t)N * 256 * sizeof(int32_t));
    out->accept = calloc(N, 1);
    if (!out->trans || !out->accept) return hr_err_oom();
    for (int q = 0; q < N; q++)
        for (int c = 0; c < 256; c++)
            out->trans[(size_t)q * 256 + c] = hr_gutf8_step(q, (uint8_t)c);
    out->accept[0] = 1;
    return NULL;
}

hr_err *hr_gdfa_complement(const hr_gdfa *x, hr_gdfa *out) {
    hr_gdfa f = {0}, u = {0};
    hr_err *e = flipped(x, &f);
    if (!e) e = utf8_text(&u);
    if (!e) e = hr_gdfa_intersect(&f, &u, out);
    hr_gdfa_free(&f);
    hr_gdfa_free(&u);
    return e;
}
