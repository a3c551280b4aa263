/* The process-wide cache of mask entries (mask_cache.c), shared by the files of src/grammar/
 * only. An entry is what the fast mask precomputes for one frontier: keyed by the vocabulary
 * and the frontier's distinct (DFA, state, counts) triples, where a DFA is named by its uid
 * (equal uids, equal tables), so every grammar whose frontier holds the same terminals in
 * the same states (every JSON Schema grammar inside a string) shares one entry. Entries are
 * reference counted: a mask holds one while it reads it, the cache one while it keeps it. */
#ifndef HR_GRAMMAR_MASK_CACHE_H
#define HR_GRAMMAR_MASK_CACHE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "grammar/lru.h"

/* One pair of the key: a DFA (its uid), a state of it, and whether its accepting states
 * make bound nodes (0 for a terminal that only ends the start rule). 16 bytes, no padding:
 * keys compare with memcmp. */
typedef struct {
    uint64_t uid;
    int32_t state, counts;
} hr_gkey_pair;

/* The suffixes that follow a group's bound nodes in their tokens, as a preorder trie. */
typedef struct {
    int n; /* nodes in preorder; node 0 (the empty suffix) is the root */
    uint8_t *byte;
    uint16_t *depth;
    int32_t *end;
    int32_t *tok_beg; /* (n + 1) tokens ending at node u: tok[tok_beg[u], tok_beg[u+1]) */
    int32_t *tok;
} hr_gstrie;

typedef struct hr_gentry {
    hr_glru_link lru;        /* the cache's LRU list (first: a link is its entry) */
    struct hr_gentry *chain; /* the cache's bucket list */
    atomic_int refs;
    uint64_t hash, vocab; /* vocab: the vocabulary's uid */
    int n_pairs;
    hr_gkey_pair *pairs; /* sorted, distinct */
    uint32_t *bits;      /* tokens strictly inside the terminals: the whole mask, or (word
                            set) only its nonzero words */
    int32_t *word;       /* (n_words) where each of bits goes; NULL: bits is the whole mask */
    int n_words;
    int n_groups;
    int32_t *rep;      /* (n_groups) a bound node of the group, whose bytes the parser takes */
    hr_gstrie *suffix; /* (n_groups) the suffixes below the group's small nodes */
    int32_t *big;      /* the group's nodes with large subtrees (or alone in their group),
                          walked in the vocabulary trie: big[big_beg[g], big_beg[g+1]) */
    int32_t *big_beg;  /* (n_groups + 1) */
    size_t bytes;      /* memory held, all told */
} hr_gentry;

uint64_t hr_gentry_hash(uint64_t vocab, const hr_gkey_pair *p, int n);
/* The cached entry for the key, with a reference for the caller; NULL when absent. */
hr_gentry *hr_gentry_find(uint64_t vocab, const hr_gkey_pair *p, int n, uint64_t hash);
/* Offers a freshly built entry (refs 0, hash, key and bytes set): returns the entry to use,
 * with a reference for the caller — fresh (kept, or not kept when over the cap's share) or
 * an equal one published meanwhile (fresh freed). */
hr_gentry *hr_gentry_publish(hr_gentry *fresh);
/* Drops a reference; the last one frees the entry. */
void hr_gentry_release(hr_gentry *e);
void hr_gentry_free(hr_gentry *e);
/* Drops the entries of a vocabulary being freed. */
void hr_gentry_forget_vocab(uint64_t vocab);

#endif
