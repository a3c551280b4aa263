/* Containers for the tokenizer: a growable byte buffer, a string -> int32 hash map (keys
 * copied into one arena; used for the vocab, added tokens and the word cache) and a
 * uint64 -> uint64 hash map (BPE merges, trie edges). Open addressing, power-of-two sizes. */
#ifndef HR_TOKENIZER_STRMAP_H
#define HR_TOKENIZER_STRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct {
    char *p;
    size_t len, cap;
} hr_buf;

hr_err *hr_buf_reserve(hr_buf *b, size_t extra);
hr_err *hr_buf_append(hr_buf *b, const void *s, size_t n);
void hr_buf_free(hr_buf *b);

typedef struct {
    uint32_t off, len; /* key bytes in keys */
    uint32_t hash;
    int32_t val;
} hr_strmap_ent;

typedef struct {
    uint32_t *slots; /* 1 + index into ents, 0 = empty */
    uint32_t mask;
    hr_strmap_ent *ents;
    uint32_t n, cap;
    hr_buf keys;
} hr_strmap;

hr_err *hr_strmap_init(hr_strmap *m, uint32_t expect);
void hr_strmap_free(hr_strmap *m);
/* Inserts or overwrites. */
hr_err *hr_strmap_put(hr_strmap *m, const char *k, size_t len, int32_t val);
/* Returns 1 and sets *val when found. */
int hr_strmap_get(const hr_strmap *m, const char *k, size_t len, int32_t *val);
uint32_t hr_hash_bytes(const char *k, size_t len);

typedef struct {
    uint64_t *keys; /* key + 1, 0 = empty */
    uint64_t *vals;
    uint64_t mask;
    uint64_t n;
} hr_pairmap;

hr_err *hr_pairmap_init(hr_pairmap *m, uint64_t expect);
void hr_pairmap_free(hr_pairmap *m);
hr_err *hr_pairmap_put(hr_pairmap *m, uint64_t key, uint64_t val);
int hr_pairmap_get(const hr_pairmap *m, uint64_t key, uint64_t *val);

#endif
