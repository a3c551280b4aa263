/* The BPE model: a pre-tokenized word -> ids. Characters map to vocab ids (with byte
 * fallback <0xXX> and unk fusing as HF does), then the lowest-ranked adjacent pair is
 * merged until none is left, using a min-heap on (rank, position) so long words (Gemma
 * treats a whole text as one word) stay O(n log n). Short words go through a cache. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

#define CACHE_MAX_WORD 96
#define CACHE_MAX_ENTRIES 200000

hr_err *hr_ids_push(hr_ids *ids, int32_t id) {
    if (ids->n == ids->cap) {
        int cap = ids->cap ? ids->cap * 2 : 64;
        int32_t *v = realloc(ids->v, sizeof *v * (size_t)cap);
        if (!v) return hr_err_oom();
        ids->v = v;
        ids->cap = cap;
    }
    ids->v[ids->n++] = id;
    return NULL;
}

typedef struct {
    int32_t id, prev, next, len; /* len 0: merged away */
} symbol;

typedef struct {
    uint32_t rank, pos;
    int32_t new_id;
} merge;

static int merge_less(const merge *a, const merge *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(merge *h, int *n, merge m) {
    int i = (*n)++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!merge_less(&m, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = m;
}

static merge heap_pop(merge *h, int *n) {
    merge top = h[0], last = h[--(*n)];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && merge_less(&h[c + 1], &h[c])) c++;
        if (!merge_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = last;
    return top;
}

static int find_merge(const hr_tokenizer *t, int32_t a, int32_t b, uint32_t *rank, int32_t *id) {
    uint64_t v;
    if (!hr_pairmap_get(&t->merges, ((uint64_t)(uint32_t)a << 32) | (uint32_t)b, &v)) return 0;
    *rank = (uint32_t)(v >> 32);
    *id = (int32_t)(uint32_t)v;
    return 1;
}

/* Appends one symbol; symbols has room for at least n bytes. */
static void add_sym(symbol *syms, int *ns, int32_t id, int len) {
    syms[*ns] = (symbol){id, *ns - 1, *ns + 1, len};
    (*ns)++;
}

/* Characters -> initial symbols, following HF's merge_word (unk fusing, byte fallback). */
static int initial_symbols(const hr_tokenizer *t, const char *w, size_t n, symbol *syms) {
    int ns = 0;
    int32_t unk_len = 0;
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)w[i];
        size_t k = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (i + k > n) k = n - i;
        int32_t id = -1;
        if (k == 1 && t->char_ids)
            id = t->char_ids[c];
        else
            hr_strmap_get(&t->vocab, w + i, k, &id);
        if (id >= 0) {
            if (unk_len) add_sym(syms, &ns, t->unk_id, unk_len);
            unk_len = 0;
            add_sym(syms, &ns, id, (int)k);
        } else if (t->byte_fallback && t->byte_ids[c] >= 0) {
            int all = 1;
            for (size_t b = 0; b < k; b++)
                all &= t->byte_ids[(unsigned char)w[i + b]] >= 0;
            if (!all) goto unk;
            for (size_t b = 0; b < k; b++)
                add_sym(syms, &ns, t->byte_ids[(unsigned char)w[i + b]], 1);
        } else {
        unk:
            if (t->unk_id >= 0) {
                if (unk_len && !t->fuse_unk) add_sym(syms, &ns, t->unk_id, unk_len), unk_len = 0;
                unk_len += (int32_t)k;
            }
        }
        i += k;
    }
    if (unk_len) add_sym(syms, &ns, t->unk_id, unk_len);
    if (ns) syms[ns - 1].next = -1;
    return ns;
}

static void merge_all(const hr_tokenizer *t, symbol *syms, int ns, merge *heap) {
    int nh = 0;
    uint32_t rank;
    int32_t id;
    for (int i = 0; i + 1 < ns; i++)
        if (find_merge(t, syms[i].id, syms[i + 1].id, &rank, &id))
            heap_push(heap, &nh, (merge){rank, (uint32_t)i, id});
    while (nh > 0) {
        merge top = heap_pop(heap, &nh);
        symbol *cur = &syms[top.pos];
        if (cur->len == 0 || cur->next < 0) continue;
        symbol *right = &syms[cur->next];
        if (!find_merge(t, cur->id, right->id, &rank, &id) || id != top.new_id) continue;
        cur->id = top.new_id;
        cur->len += right->len;
        right->len = 0;
        cur->next = right->next;
        if (cur->next >= 0) syms[cur->next].prev = (int32_t)top.pos;
        if (cur->prev >= 0 && find_merge(t, syms[cur->prev].id, cur->id, &rank, &id))
            heap_push(heap, &nh, (merge){rank, (uint32_t)cur->prev, id});
        if (cur->next >= 0 && find_merge(t, cur->id, syms[cur->next].id, &rank, &id))
            heap_push(heap, &nh, (merge){rank, top.pos, id});
    }
}

static hr_err *bpe_uncached(const hr_tokenizer *t, const char *w, size_t n, hr_ids *out) {
    if (t->spm_scores) return hr_spm_word(t, w, n, out);
    symbol stack_syms[128];
    merge stack_heap[256];
    /* Every merge pushes at most 2 heap entries, so 3n bounds the heap. */
    symbol *syms = n <= 128 ? stack_syms : malloc(sizeof *syms * n);
    merge *heap = n <= 64 ? stack_heap : malloc(sizeof *heap * 3 * n + sizeof *heap);
    hr_err *e = NULL;
    if (!syms || !heap) e = hr_err_oom();
    if (!e) {
        int ns = initial_symbols(t, w, n, syms);
        merge_all(t, syms, ns, heap);
        for (int i = 0; i < ns && !e; i = syms[i].next) {
            e = hr_ids_push(out, syms[i].id);
            if (syms[i].next < 0) break;
        }
    }
    if (syms != stack_syms) free(syms);
    if (heap != stack_heap) free(heap);
    return e;
}

hr_err *hr_word_cache_create(hr_word_cache **out) {
    hr_word_cache *c = calloc(1, sizeof *c);
    if (!c) return hr_err_oom();
    pthread_mutex_init(&c->mu, NULL);
    hr_err *e = hr_strmap_init(&c->map, 1024);
    if (e) {
        hr_word_cache_destroy(c);
        return e;
    }
    *out = c;
    return NULL;
}

void hr_word_cache_destroy(hr_word_cache *c) {
    if (!c) return;
    pthread_mutex_destroy(&c->mu);
    hr_strmap_free(&c->map);
    free(c->spans);
    free(c->ids);
    free(c);
}

static int cache_get(hr_word_cache *c, const char *w, size_t n, hr_ids *out, hr_err **e) {
    int32_t k;
    int hit = 0;
    pthread_mutex_lock(&c->mu);
    if (hr_strmap_get(&c->map, w, n, &k)) {
        hit = 1;
        uint32_t off = c->spans[2 * k], cnt = c->spans[2 * k + 1];
        for (uint32_t i = 0; i < cnt && !*e; i++)
            *e = hr_ids_push(out, c->ids[off + i]);
    }
    pthread_mutex_unlock(&c->mu);
    return hit;
}

static hr_err *cache_put_locked(hr_word_cache *c, const char *w, size_t n, const int32_t *ids,
                                int cnt) {
    if (c->n_spans >= CACHE_MAX_ENTRIES) {
        hr_strmap_free(&c->map);
        HR_TRY(hr_strmap_init(&c->map, 1024));
        c->n_spans = c->n_ids = 0;
    }
    if (c->n_spans == c->cap_spans) {
        size_t cap = c->cap_spans ? c->cap_spans * 2 : 1024;
        uint32_t *s = realloc(c->spans, sizeof *s * 2 * cap);
        if (!s) return hr_err_oom();
        c->spans = s;
        c->cap_spans = cap;
    }
    if (c->n_ids + (size_t)cnt > c->cap_ids) {
        size_t cap = c->cap_ids ? c->cap_ids * 2 : 4096;
        while (cap < c->n_ids + (size_t)cnt)
            cap *= 2;
        int32_t *v = realloc(c->ids, sizeof *v * cap);
        if (!v) return hr_err_oom();
        c->ids = v;
        c->cap_ids = cap;
    }
    memcpy(c->ids + c->n_ids, ids, sizeof *ids * (size_t)cnt);
    c->spans[2 * c->n_spans] = (uint32_t)c->n_ids;
    c->spans[2 * c->n_spans + 1] = (uint32_t)cnt;
    c->n_ids += (size_t)cnt;
    return hr_strmap_put(&c->map, w, n, (int32_t)c->n_spans++);
}

hr_err *hr_bpe_word(const hr_tokenizer *t, const char *w, size_t n, hr_ids *out) {
    int32_t id;
    if (n == 0) return NULL;
    if (t->ignore_merges && hr_strmap_get(&t->vocab, w, n, &id)) return hr_ids_push(out, id);
    if (n > CACHE_MAX_WORD || !t->cache) return bpe_uncached(t, w, n, out);
    hr_err *e = NULL;
    if (cache_get(t->cache, w, n, out, &e)) return e;
    int before = out->n;
    HR_TRY(bpe_uncached(t, w, n, out));
    if (out->n == before) return NULL; /* no ids (a vocab without bytes): nothing to cache */
    pthread_mutex_lock(&t->cache->mu);
    e = cache_put_locked(t->cache, w, n, out->v + before, out->n - before);
    pthread_mutex_unlock(&t->cache->mu);
    return e;
}
