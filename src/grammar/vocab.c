/* The grammar vocabulary: every token's raw bytes, which tokens masks may allow (special
 * tokens never, stop tokens only when accepting), and a byte trie over the
 * normal tokens in preorder, so a mask walks shared prefixes once and skips a dead
 * subtree in one step. */
#define _GNU_SOURCE /* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "grammar/gram_ir.h"
#include "grammar/grammar.h"
#include "grammar/mask_cache.h"

static int cmp_tok(const void *x, const void *y, void *arg) {
    const hr_grammar_vocab *v = arg;
    int a = *(const int32_t *)x, b = *(const int32_t *)y;
    uint32_t la = v->tok_off[a + 1] - v->tok_off[a], lb = v->tok_off[b + 1] - v->tok_off[b];
    int c = memcmp(v->bytes + v->tok_off[a], v->bytes + v->tok_off[b], la < lb ? la : lb);
    if (c) return c;
    if (la != lb) return la < lb ? -1 : 1;
    return a - b;
}

static hr_err *load_bytes(const hr_tokenizer *tok, hr_grammar_vocab *v) {
    size_t cap = 1 << 20, n = 0;
    v->bytes = malloc(cap);
    if (!v->bytes) return hr_err_oom();
    for (int i = 0; i < v->n_vocab; i++) {
        v->tok_off[i] = (uint32_t)n;
        size_t k = hr_tokenizer_token_bytes(tok, i, NULL, 0);
        if (k == (size_t)-1) {
            v->kind[i] = HR_GV_NEVER;
            continue;
        }
        if (n + k > cap) {
            while (n + k > cap)
                cap *= 2;
            uint8_t *q = realloc(v->bytes, cap);
            if (!q) return hr_err_oom();
            v->bytes = q;
        }
        hr_tokenizer_token_bytes(tok, i, (char *)v->bytes + n, k);
        n += k;
        /* added tokens that are text (Qwen's <tool_call>, <think>) are tokens like any
         * other: a grammar of tool-call markup lets the model write them as it was trained */
        if (!k || k > 60000 || hr_tokenizer_is_special(tok, i)) v->kind[i] = HR_GV_NEVER;
    }
    v->tok_off[v->n_vocab] = (uint32_t)n;
    const int32_t *stop;
    v->n_stop = hr_tokenizer_stop_ids(tok, &stop);
    v->stop = malloc(((size_t)v->n_stop + 1) * sizeof(int32_t));
    if (!v->stop) return hr_err_oom();
    for (int k = 0; k < v->n_stop; k++) {
        v->stop[k] = stop[k];
        if (stop[k] >= 0 && stop[k] < v->n_vocab) v->kind[stop[k]] = HR_GV_STOP;
    }
    return NULL;
}

/* The trie from the normal tokens sorted by bytes (see the struct in gram_ir.h). */
static hr_err *build_trie(hr_grammar_vocab *v, int32_t *sorted, int n) {
    size_t cap = 1024;
    for (int i = 0; i < n; i++)
        cap += v->tok_off[sorted[i] + 1] - v->tok_off[sorted[i]];
    v->node_byte = malloc(cap);
    v->node_depth = malloc(cap * sizeof(uint16_t));
    v->node_end = malloc(cap * sizeof(int32_t));
    v->node_tok = malloc((cap + 1) * sizeof(int32_t));
    int32_t *tok_node = malloc(((size_t)n + 1) * sizeof(int32_t)),
            *stack = malloc(65536 * sizeof(int32_t));
    hr_err *e = (v->node_byte && v->node_depth && v->node_end && v->node_tok && tok_node && stack)
                    ? NULL
                    : hr_err_oom();
    int nn = 1, depth = 0; /* the path's length */
    if (!e) {
        v->node_byte[0] = 0;
        v->node_depth[0] = 0;
        stack[0] = 0;
    }
    for (int i = 0; !e && i < n; i++) {
        const uint8_t *t = v->bytes + v->tok_off[sorted[i]];
        int len = (int)(v->tok_off[sorted[i] + 1] - v->tok_off[sorted[i]]), c = 0;
        if (i) {
            const uint8_t *p = v->bytes + v->tok_off[sorted[i - 1]];
            int lp = (int)(v->tok_off[sorted[i - 1] + 1] - v->tok_off[sorted[i - 1]]);
            while (c < len && c < lp && p[c] == t[c])
                c++;
        }
        for (; depth > c; depth--)
            v->node_end[stack[depth]] = nn;
        for (; depth < len; depth++) {
            v->node_byte[nn] = t[depth];
            v->node_depth[nn] = (uint16_t)(depth + 1);
            stack[depth + 1] = nn++;
        }
        tok_node[i] = stack[len];
        if (len > v->max_depth) v->max_depth = len;
    }
    if (!e) {
        for (; depth >= 0; depth--)
            v->node_end[stack[depth]] = nn;
        v->n_nodes = nn;
        int k = 0;
        for (int u = 0; u <= nn; u++) {
            while (k < n && tok_node[k] < u)
                k++;
            v->node_tok[u] = k;
        }
    }
    free(tok_node);
    free(stack);
    return e;
}

/* node_below, node_utf8 and node_below_chars from the leaves up: preorder puts every child after
 * its parent. */
static hr_err *summarize_below(hr_grammar_vocab *v) {
    v->node_below = calloc((size_t)v->n_nodes + 1, sizeof(hr_gbytes));
    v->node_utf8 = malloc((size_t)v->n_nodes + 1);
    v->node_below_chars = calloc((size_t)v->n_nodes + 1, sizeof(uint16_t));
    if (!v->node_below || !v->node_utf8 || !v->node_below_chars) return hr_err_oom();
    for (int u = v->n_nodes - 1; u >= 0; u--) {
        v->node_utf8[u] = 0xFF;
        for (int c = u + 1; c < v->node_end[u]; c = v->node_end[c]) {
            int k = hr_gbytes_bit(v->node_byte[c]);
            int starts = (v->node_byte[c] & 0xC0) != 0x80; /* not a continuation byte */
            if (v->node_below_chars[c] + starts > v->node_below_chars[u])
                v->node_below_chars[u] = (uint16_t)(v->node_below_chars[c] + starts);
            for (int w = 0; w < 3; w++)
                v->node_below[u].w[w] |= v->node_below[c].w[w];
            v->node_below[u].w[k >> 6] |= 1ull << (k & 63);
            if (v->node_byte[c] >= 0xC0) v->node_below[u].w[2] |= 1ull << (v->node_byte[c] - 0xC0);
            for (int q = 0; q < 8; q++) {
                int q2 = hr_gutf8_step(q, v->node_byte[c]);
                if (q2 < 0 || !(v->node_utf8[c] >> q2 & 1)) v->node_utf8[u] &= (uint8_t) ~(1u << q);
            }
        }
    }
    return NULL;
}

hr_err *hr_grammar_vocab_create(const hr_tokenizer *tok, hr_grammar_vocab **out) {
    if (!tok) return hr_errf("grammar vocab: no tokenizer");
    hr_grammar_vocab *v = calloc(1, sizeof *v);
    if (!v) return hr_err_oom();
    v->n_vocab = hr_tokenizer_vocab_size(tok);
    v->tok_off = malloc(((size_t)v->n_vocab + 1) * sizeof(uint32_t));
    v->kind = calloc((size_t)v->n_vocab + 1, 1);
    v->sorted_tok = malloc(((size_t)v->n_vocab + 1) * sizeof(int32_t));
    hr_err *e = (v->tok_off && v->kind && v->sorted_tok) ? NULL : hr_err_oom();
    if (!e) e = load_bytes(tok, v);
    int n = 0;
    v->normal_bits = e ? NULL : calloc(((size_t)v->n_vocab + 31) / 32, sizeof(uint32_t));
    if (!e && !v->normal_bits) e = hr_err_oom();
    for (int i = 0; !e && i < v->n_vocab; i++)
        if (v->kind[i] == HR_GV_NORMAL) {
            v->sorted_tok[n++] = i;
            v->normal_bits[i >> 5] |= 1u << (i & 31);
        }
    if (!e) {
        qsort_r(v->sorted_tok, (size_t)n, sizeof(int32_t), cmp_tok, v);
        e = build_trie(v, v->sorted_tok, n);
    }
    if (!e) e = summarize_below(v);
    if (e) {
        hr_grammar_vocab_free(v);
        return e;
    }
    v->uid = hr_guid_new();
    *out = v;
    return NULL;
}

void hr_grammar_vocab_free(hr_grammar_vocab *v) {
    if (!v) return;
    if (v->uid) hr_gentry_forget_vocab(v->uid);
    free(v->tok_off);
    free(v->bytes);
    free(v->kind);
    free(v->stop);
    free(v->node_byte);
    free(v->node_depth);
    free(v->node_end);
    free(v->node_tok);
    free(v->node_below);
    free(v->node_utf8);
    free(v->node_below_chars);
    free(v->sorted_tok);
    free(v->normal_bits);
    free(v);
}

int hr_grammar_vocab_size(const hr_grammar_vocab *v) { return v->n_vocab; }
