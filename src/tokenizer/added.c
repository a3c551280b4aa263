/* Added tokens: a byte trie for leftmost-longest matching (what HF's Aho-Corasick with
 * LeftmostLongest finds), and HF's find_matches rules for single_word, lstrip and rstrip
 * that turn the matches into segments of text and token ids. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

#include <utf8proc.h>

static hr_err *trie_node(hr_trie *t, int32_t *out) {
    if (t->n_nodes == t->cap_nodes) {
        int cap = t->cap_nodes ? t->cap_nodes * 2 : 64;
        int32_t *term = realloc(t->term, sizeof *term * (size_t)cap);
        if (!term) return hr_err_oom();
        t->term = term;
        t->cap_nodes = cap;
    }
    t->term[t->n_nodes] = -1;
    *out = t->n_nodes++;
    return NULL;
}

hr_err *hr_trie_add(hr_trie *t, const char *s, size_t n, int32_t index) {
    if (n == 0) return NULL;
    int32_t node;
    if (t->n_nodes == 0) {
        HR_TRY(hr_pairmap_init(&t->edges, 64));
        HR_TRY(trie_node(t, &node));
    }
    node = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t key = ((uint64_t)node << 8) | (unsigned char)s[i], child;
        if (hr_pairmap_get(&t->edges, key, &child)) {
            node = (int32_t)child;
            continue;
        }
        int32_t c;
        HR_TRY(trie_node(t, &c));
        HR_TRY(hr_pairmap_put(&t->edges, key, (uint64_t)c));
        node = c;
    }
    t->term[node] = index;
    t->first[(unsigned char)s[0] >> 3] |= (uint8_t)(1u << (s[0] & 7));
    return NULL;
}

void hr_trie_free(hr_trie *t) {
    hr_pairmap_free(&t->edges);
    free(t->term);
    memset(t, 0, sizeof *t);
}

int hr_trie_longest(const hr_trie *t, const char *s, size_t n, size_t *mlen) {
    int best = -1;
    if (t->n_nodes == 0 || !(t->first[(unsigned char)s[0] >> 3] & (1u << (s[0] & 7)))) return -1;
    uint64_t node = 0;
    for (size_t i = 0; i < n; i++) {
        if (!hr_pairmap_get(&t->edges, (node << 8) | (unsigned char)s[i], &node)) break;
        if (t->term[node] >= 0) {
            best = t->term[node];
            *mlen = i + 1;
        }
    }
    return best;
}

/* The code point ending just before s[end] / starting at s[start]. */
static uint32_t cp_before(const char *s, size_t end) {
    size_t p = end - 1;
    while (p > 0 && ((unsigned char)s[p] & 0xC0) == 0x80)
        p--;
    uint32_t cp;
    hr_utf8_decode(s + p, &cp);
    return cp;
}

static int is_alnum_cp(uint32_t cp) {
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
           (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
}

/* Rust's char::is_whitespace (the White_Space property). */
static int is_ws_cp(uint32_t cp) {
    return (cp >= 9 && cp <= 13) || cp == ' ' || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

static size_t lstrip_start(const char *s, size_t start) {
    while (start > 0) {
        size_t p = start - 1;
        while (p > 0 && ((unsigned char)s[p] & 0xC0) == 0x80)
            p--;
        uint32_t cp;
        hr_utf8_decode(s + p, &cp);
        if (!is_ws_cp(cp)) break;
        start = p;
    }
    return start;
}

static size_t rstrip_end(const char *s, size_t end, size_t n) {
    while (end < n) {
        uint32_t cp;
        size_t k = hr_utf8_decode(s + end, &cp);
        if (!is_ws_cp(cp)) break;
        end += k;
    }
    return end;
}

static hr_err *seg_push(hr_segment **v, int *n, int *cap, int32_t id, size_t a, size_t b) {
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 16;
        hr_segment *nv = realloc(*v, sizeof *nv * (size_t)c);
        if (!nv) return hr_err_oom();
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = (hr_segment){id, a, b};
    return NULL;
}

hr_err *hr_split_added(const hr_tokenizer *t, const hr_trie *trie, const char *s, size_t n,
                       hr_segment **segs, int *n_segs, int *cap_segs) {
    *n_segs = 0;
    size_t done = 0, i = 0;
    while (i < n) {
        size_t mlen = 0;
        int k = hr_trie_longest(trie, s + i, n - i, &mlen);
        if (k < 0) {
            i++;
            continue;
        }
        const hr_added_token *a = &t->added[k];
        size_t start = i, stop = i + mlen;
        i = stop;
        if (a->single_word) {
            int sp_before = start == 0 || !is_alnum_cp(cp_before(s, start));
            uint32_t next = 0;
            int sp_after = stop == n || (hr_utf8_decode(s + stop, &next), !is_alnum_cp(next));
            if (!sp_before || !sp_after) continue;
        }
        if (a->lstrip) {
            size_t ns = lstrip_start(s, start);
            start = ns > done ? ns : done;
        }
        if (a->rstrip) stop = rstrip_end(s, stop, n);
        if (done < start) HR_TRY(seg_push(segs, n_segs, cap_segs, -1, done, start));
        HR_TRY(seg_push(segs, n_segs, cap_segs, a->id, start, stop));
        done = stop;
    }
    if (done < n) HR_TRY(seg_push(segs, n_segs, cap_segs, -1, done, n));
    return NULL;
}
