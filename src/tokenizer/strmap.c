/* Byte buffer and the two hash maps of strmap.h. Load factor stays under 1/2. */
#include "tokenizer/strmap.h"

#include <stdlib.h>
#include <string.h>

hr_err *hr_buf_reserve(hr_buf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return NULL;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return hr_err_oom();
    b->p = p;
    b->cap = cap;
    return NULL;
}

hr_err *hr_buf_append(hr_buf *b, const void *s, size_t n) {
    HR_TRY(hr_buf_reserve(b, n));
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
    return NULL;
}

void hr_buf_free(hr_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

uint32_t hr_hash_bytes(const char *k, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull ^ len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, k + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < len; i++)
        h = (h ^ (unsigned char)k[i]) * 0x100000001b3ull;
    h ^= h >> 32;
    h *= 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32);
}

static hr_err *strmap_rehash(hr_strmap *m, uint32_t nslots) {
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots) return hr_err_oom();
    for (uint32_t i = 0; i < m->n; i++) {
        uint32_t s = m->ents[i].hash & (nslots - 1);
        while (slots[s])
            s = (s + 1) & (nslots - 1);
        slots[s] = i + 1;
    }
    free(m->slots);
    m->slots = slots;
    m->mask = nslots - 1;
    return NULL;
}

hr_err *hr_strmap_init(hr_strmap *m, uint32_t expect) {
    memset(m, 0, sizeof *m);
    uint32_t nslots = 16;
    while (nslots < expect * 2 + 2)
        nslots *= 2;
    m->cap = expect > 8 ? expect : 8;
    m->ents = malloc(sizeof *m->ents * m->cap);
    if (!m->ents) return hr_err_oom();
    return strmap_rehash(m, nslots);
}

void hr_strmap_free(hr_strmap *m) {
    free(m->slots);
    free(m->ents);
    hr_buf_free(&m->keys);
    memset(m, 0, sizeof *m);
}

static uint32_t *strmap_find(const hr_strmap *m, const char *k, size_t len, uint32_t h) {
    uint32_t s = h & m->mask;
    for (;;) {
        uint32_t e = m->slots[s];
        if (!e) return &m->slots[s];
        const hr_strmap_ent *x = &m->ents[e - 1];
        if (x->hash == h && x->len == len && memcmp(m->keys.p + x->off, k, len) == 0)
            return &m->slots[s];
        s = (s + 1) & m->mask;
    }
}

int hr_strmap_get(const hr_strmap *m, const char *k, size_t len, int32_t *val) {
    if (!m->slots) return 0;
    uint32_t e = *strmap_find(m, k, len, hr_hash_bytes(k, len));
    if (!e) return 0;
    *val = m->ents[e - 1].val;
    return 1;
}

hr_err *hr_strmap_put(hr_strmap *m, const char *k, size_t len, int32_t val) {
    uint32_t h = hr_hash_bytes(k, len);
    uint32_t *slot = strmap_find(m, k, len, h);
    if (*slot) {
        m->ents[*slot - 1].val = val;
        return NULL;
    }
    if (m->n == m->cap) {
        hr_strmap_ent *e = realloc(m->ents, sizeof *e * m->cap * 2);
        if (!e) return hr_err_oom();
        m->ents = e;
        m->cap *= 2;
    }
    uint32_t off = (uint32_t)m->keys.len;
    HR_TRY(hr_buf_append(&m->keys, k, len));
    m->ents[m->n] = (hr_strmap_ent){off, (uint32_t)len, h, val};
    *slot = ++m->n;
    if ((uint64_t)m->n * 2 > m->mask) return strmap_rehash(m, (m->mask + 1) * 2);
    return NULL;
}

static uint64_t pair_hash(uint64_t k) {
    k ^= k >> 31;
    k *= 0x9E3779B97F4A7C15ull;
    return k ^ (k >> 29);
}

hr_err *hr_pairmap_init(hr_pairmap *m, uint64_t expect) {
    uint64_t nslots = 16;
    while (nslots < expect * 2 + 2)
        nslots *= 2;
    m->keys = calloc(nslots, sizeof *m->keys);
    m->vals = malloc(nslots * sizeof *m->vals);
    m->mask = nslots - 1;
    m->n = 0;
    if (!m->keys || !m->vals) {
        hr_pairmap_free(m);
        return hr_err_oom();
    }
    return NULL;
}

void hr_pairmap_free(hr_pairmap *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static hr_err *pairmap_grow(hr_pairmap *m) {
    hr_pairmap g;
    HR_TRY(hr_pairmap_init(&g, (m->mask + 1)));
    for (uint64_t i = 0; i <= m->mask; i++)
        if (m->keys[i]) hr_pairmap_put(&g, m->keys[i] - 1, m->vals[i]);
    hr_pairmap_free(m);
    *m = g;
    return NULL;
}

hr_err *hr_pairmap_put(hr_pairmap *m, uint64_t key, uint64_t val) {
    uint64_t s = pair_hash(key) & m->mask;
    while (m->keys[s] && m->keys[s] != key + 1)
        s = (s + 1) & m->mask;
    if (!m->keys[s]) {
        m->keys[s] = key + 1;
        m->n++;
    }
    m->vals[s] = val;
    if (m->n * 2 > m->mask) return pairmap_grow(m);
    return NULL;
}

int hr_pairmap_get(const hr_pairmap *m, uint64_t key, uint64_t *val) {
    if (!m->keys) return 0;
    uint64_t s = pair_hash(key) & m->mask;
    for (;;) {
        uint64_t k = m->keys[s];
        if (!k) return 0;
        if (k == key + 1) {
            *val = m->vals[s];
            return 1;
        }
        s = (s + 1) & m->mask;
    }
}
