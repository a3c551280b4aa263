/* Constrained decoding: grammars (llama.cpp's GBNF plus /regex/ terminals, or one regular
 * expression) compiled into terminals backed by byte DFAs and a CFG over them, matched
 * exactly by an Earley parser over bytes; per step, the bitmask of the vocabulary's tokens
 * that keep the output inside the grammar's language. docs/grammar.md has the format.
 * A compiled grammar and a vocab are immutable (the masks' cache is process-wide, behind a
 * mutex), so both may be shared by matchers on different threads; a matcher is one
 * sequence's state and belongs to one thread at a time. */
#ifndef HR_GRAMMAR_GRAMMAR_H
#define HR_GRAMMAR_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "tokenizer/tokenizer.h"

typedef struct hr_grammar hr_grammar;             /* compiled, shareable */
typedef struct hr_grammar_vocab hr_grammar_vocab; /* token bytes + trie, one per tokenizer */
typedef struct hr_matcher hr_matcher;             /* one per sequence */

/* GBNF text (start rule `root`) to a grammar; errors give the problem and its offset. */
hr_err *hr_grammar_compile(const char *text, size_t len, hr_grammar **out);
/* A grammar whose language is the strings re matches as a whole. */
hr_err *hr_grammar_compile_regex(const char *re, size_t len, hr_grammar **out);
/* One more reference to g (for each request that runs under it); hr_grammar_free drops one,
 * the last frees it. */
hr_grammar *hr_grammar_ref(hr_grammar *g);
void hr_grammar_free(hr_grammar *g);
/* Memory the grammar's tables hold. */
size_t hr_grammar_bytes(const hr_grammar *g);

/* Compiling keeps the DFAs it builds in a process-wide cache keyed by their structure (the
 * same terminals recur in every JSON Schema grammar), bounded in bytes: 32 MiB unless set
 * here; 0 empties and disables it. Thread-safe; the compiled grammars are the same with or
 * without it. */
void hr_grammar_dfa_cache_limit(size_t bytes);
typedef struct {
    uint64_t hits, misses; /* lookups since the process started */
    uint64_t evictions;    /* entries dropped to stay under the cap */
    size_t entries, bytes; /* held now */
} hr_grammar_shared_info;
void hr_grammar_dfa_cache_stats(hr_grammar_shared_info *info);

/* The fast masks keep what they precompute for a parser frontier (its terminals' DFAs and
 * states) in one process-wide cache shared by every grammar and vocabulary, bounded in
 * bytes (LRU): 256 MiB unless set here; 0 empties and disables it. Thread-safe; the masks
 * are the same with or without it. */
void hr_grammar_mask_cache_limit(size_t bytes);
void hr_grammar_mask_cache_stats(hr_grammar_shared_info *info);

/* The tokenizer's token bytes and a trie over them. Special and added tokens are left out
 * of masks except the stop ids (hr_tokenizer_stop_ids), allowed exactly when accepting. */
hr_err *hr_grammar_vocab_create(const hr_tokenizer *tok, hr_grammar_vocab **out);
void hr_grammar_vocab_free(hr_grammar_vocab *v);
int hr_grammar_vocab_size(const hr_grammar_vocab *v); /* mask length in tokens */

/* g and v must outlive the matcher. v may be NULL for a bytes-only matcher: then
 * hr_matcher_accept refuses every token and the masks write nothing. */
hr_err *hr_matcher_create(const hr_grammar *g, const hr_grammar_vocab *v, hr_matcher **out);
void hr_matcher_free(hr_matcher *m);
/* bits: (vocab + 31) / 32 words; bit i set = token i allowed; stop tokens set iff the
 * matcher is accepting; all clear once ended. */
void hr_matcher_mask(hr_matcher *m, uint32_t *bits);
/* The same mask by trying every token from the current state: the plain reference. */
void hr_matcher_mask_ref(hr_matcher *m, uint32_t *bits);
/* 1 accepted (state advanced), 0 rejected (state unchanged; also when memory for the
 * new state ran out). A stop token is accepted iff the matcher is accepting, and ends it. */
int hr_matcher_accept(hr_matcher *m, int32_t token);
/* 1 if all n bytes are accepted; else 0 with the state unchanged and *n_ok (may be NULL)
 * the bytes accepted before the failing one. Counts as one token for rollback. */
int hr_matcher_accept_bytes(hr_matcher *m, const char *s, size_t n, size_t *n_ok);
/* Undoes the last n accepted tokens (fewer if fewer were accepted). */
void hr_matcher_rollback(hr_matcher *m, int n_tokens);
int hr_matcher_is_accepting(const hr_matcher *m);
int hr_matcher_is_ended(const hr_matcher *m); /* a stop token was accepted */

#endif
