/* SentencePiece-style encoding of a GGUF "llama" vocab the way llama.cpp does it
 * (llm_tokenizer_spm): the word's characters are symbols; the adjacent pair whose
 * concatenation is a vocab token with the highest score merges first (ties: the leftmost),
 * until no pair forms a token. A symbol that is no token becomes its bytes' <0xXX> tokens
 * (or unk). A heap on (score, position) keeps it O(n log n). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

typedef struct {
    uint32_t off, len; /* len 0: merged away */
    int32_t prev, next;
} sym;

typedef struct {
    float score;
    int32_t left, right;
    uint32_t size;
} bigram;

static int before(const bigram *a, const bigram *b) {
    return a->score != b->score ? a->score > b->score : a->left < b->left;
}

static void push(bigram *h, int *n, bigram b) {
    int i = (*n)++;
    while (i > 0 && before(&b, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = b;
}

static bigram pop(bigram *h, int *n) {
    bigram top = h[0], last = h[--(*n)];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && before(&h[c + 1], &h[c])) c++;
        if (!before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = last;
    return top;
}

static void try_pair(const hr_tokenizer *t, const char *w, const sym *s, int l, int r, bigram *h,
                     int *nh) {
    if (l < 0 || r < 0) return;
    int32_t id;
    uint32_t size = s[l].len + s[r].len;
    if (!hr_strmap_get(&t->vocab, w + s[l].off, size, &id) || id >= t->n_vocab) return;
    push(h, nh, (bigram){t->spm_scores[id], l, r, size});
}

static hr_err *emit(const hr_tokenizer *t, const char *w, const sym *s, hr_ids *out) {
    int32_t id;
    if (hr_strmap_get(&t->vocab, w + s->off, s->len, &id)) return hr_ids_push(out, id);
    for (uint32_t b = 0; b < s->len; b++) {
        id = t->byte_ids[(unsigned char)w[s->off + b]];
        if (id < 0) id = t->unk_id;
        if (id >= 0) HR_TRY(hr_ids_push(out, id));
    }
    return NULL;
}

static void merge_all(const hr_tokenizer *t, const char *w, sym *s, int ns, bigram *h) {
    int nh = 0;
    for (int i = 1; i < ns; i++)
        try_pair(t, w, s, i - 1, i, h, &nh);
    while (nh > 0) {
        bigram b = pop(h, &nh);
        sym *l = &s[b.left], *r = &s[b.right];
        if (!l->len || !r->len || l->len + r->len != b.size) continue;
        l->len += r->len;
        r->len = 0;
        l->next = r->next;
        if (r->next >= 0) s[r->next].prev = b.left;
        try_pair(t, w, s, l->prev, b.left, h, &nh);
        try_pair(t, w, s, b.left, l->next, h, &nh);
    }
}

hr_err *hr_spm_word(const hr_tokenizer *t, const char *w, size_t n, hr_ids *out) {
    /* every merge pushes at most 2 bigrams onto the n - 1 initial ones */
    sym *s = malloc(sizeof *s * (n + 1));
    bigram *h = malloc(sizeof *h * (3 * n + 1));
    hr_err *e = s && h ? NULL : hr_err_oom();
    int ns = 0;
    for (size_t i = 0; !e && i < n; ns++) {
        unsigned char c = (unsigned char)w[i];
        size_t k = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (k > n - i) k = n - i;
        s[ns] = (sym){(uint32_t)i, (uint32_t)k, ns - 1, i + k < n ? ns + 1 : -1};
        i += k;
    }
    if (!e) merge_all(t, w, s, ns, h);
    for (int i = 0; !e && ns && i >= 0; i = s[i].next)
        e = emit(t, w, &s[i], out);
    free(s);
    free(h);
    return e;
}
