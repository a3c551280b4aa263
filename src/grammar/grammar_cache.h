/* A bounded LRU of compiled grammars keyed by their source text, shared by the requests of
 * a server: agents resend the same tools and schema every turn, and compiling a large one
 * takes up to seconds. */
#ifndef HR_GRAMMAR_GRAMMAR_CACHE_H
#define HR_GRAMMAR_GRAMMAR_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "grammar/grammar.h"

typedef struct hr_grammar_cache hr_grammar_cache;

/* How a source text is compiled: hr_grammar_compile or hr_grammar_compile_regex. */
typedef enum { HR_GRAMMAR_SRC_GBNF, HR_GRAMMAR_SRC_REGEX } hr_grammar_src;

typedef struct {
    uint64_t hits, compiles, evictions;
    size_t entries, bytes, cap_bytes;
} hr_grammar_cache_stats;

/* A cache holding at most cap_bytes (hr_grammar_bytes of its grammars plus their texts); 0
 * caches nothing (every get compiles). */
hr_err *hr_grammar_cache_create(size_t cap_bytes, hr_grammar_cache **out);
void hr_grammar_cache_free(hr_grammar_cache *c);
/* The grammar of (kind, text[0..len)): a new reference to the cached one, or compiled and
 * cached (least recently used ones evicted past the cap; a grammar larger than the cap is
 * not kept). Thread-safe; two threads missing on the same text may both compile it (one
 * result is kept). c NULL: compiles. */
hr_err *hr_grammar_cache_get(hr_grammar_cache *c, hr_grammar_src kind, const char *text, size_t len,
                             hr_grammar **out);
void hr_grammar_cache_stats_get(hr_grammar_cache *c, hr_grammar_cache_stats *out);

#endif
