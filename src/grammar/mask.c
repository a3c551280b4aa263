/* Token masks. The reference tries every token's bytes from the current state. The fast
 * mask walks the vocabulary trie depth first, advancing the parser a byte per node and
 * truncating back on the way up, skipping subtrees the grammar rejects. */
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

void hr_matcher_mask(hr_matcher *m, uint32_t *bits) {
    if (!m->v) return;
    memset(bits, 0, mask_words(m->v) * sizeof(uint32_t));
    if (m->ended) return;
    walk_subtree(m, 0, m->cur, bits);
    set_stops(m, bits);
}

struct hr_gcache {
    pthread_mutex_t mu;
};

hr_err *hr_gcache_create(hr_gcache **out) {
    hr_gcache *c = calloc(1, sizeof *c);
    if (!c) return hr_err_oom();
    pthread_mutex_init(&c->mu, NULL);
    *out = c;
    return NULL;
}

void hr_gcache_free(hr_gcache *c) {
    pthread_mutex_destroy(&c->mu);
    free(c);
}
