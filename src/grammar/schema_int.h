/* Internal interface of the JSON Schema compiler (src/grammar/schema*.c): a growable text
 * buffer, the compile context, and what each file provides to the others. Regexes built
 * here are ECMAScript-subset text for the engine's /regex/ terminals; those matching the
 * inside of a JSON string work on its encoded form (escapes included). */
#ifndef HR_GRAMMAR_SCHEMA_INT_H
#define HR_GRAMMAR_SCHEMA_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/json.h"
#include "grammar/schema.h"
#include "grammar/text_buf.h"

/* One JSON string character in its encoded form, any spelling (raw, short escape, \uXXXX
 * or a surrogate pair): decodes to exactly one code point. */
#define HR_SC_CHAR                                                                                 \
    "(?:[^\"\\\\\\x00-\\x1f]|\\\\[\"\\\\\\/bfnrt]|\\\\u(?:[0-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|"        \
    "[dD][0-7][0-9a-fA-F]{2})|\\\\u[dD][89abAB][0-9a-fA-F]{2}\\\\u[dD][c-fC-F][0-9a-fA-F]{2})"
/* One character in canonical spelling (as jansson writes it): raw, or a short escape for
 * " \ \b \f \n \r \t, or \u00XX for the other control characters. Keys use it, so that a
 * key has one spelling and "not one of the declared names" is a plain regex. */
#define HR_SC_CANON                                                                                \
    "(?:[^\"\\\\\\x00-\\x1f]|\\\\[\"\\\\bfnrt]|\\\\u00(?:0[0-7bBeEfF]|1[0-9a-fA-F]))"

/* The compiler's own keyword (from "not" of an enum/const of strings): a string that is
 * none of the listed ones. */
#define HR_SC_NOT_STRINGS "$hr-not-strings"
/* The compiler's own keywords for strings: more patterns every string must match (from an
 * allOf of two different "pattern"s), and patterns it must not match (from "not" of a
 * pattern). */
#define HR_SC_PATTERNS "$hr-patterns"
#define HR_SC_NOT_PATTERNS "$hr-not-patterns"

/* most fraction digits of a decimal bound */
#define HR_SC_FRAC_MAX 160

/* Regex for JSON integers in [lo, hi] (has_lo/has_hi 0: unbounded on that side). */
void hr_sc_int_range(hr_gbuf *o, int has_lo, int64_t lo, int has_hi, int64_t hi);
/* An exact decimal bound: -(ip.frac) when neg (never for zero), frac the digits after
 * the point without trailing zeros; ex: the bound itself is excluded; has 0: none. */
typedef struct {
    int has, neg, ex;
    uint64_t ip;
    char frac[HR_SC_FRAC_MAX + 1];
} hr_sc_dec;
/* Regex for JSON numbers between lo and hi (decimal comparison); no exponent form when a
 * bound is given. Returns 0 when no number is in range (the text appended is then to be
 * dropped). */
int hr_sc_num_range(hr_gbuf *o, const hr_sc_dec *lo, const hr_sc_dec *hi);
/* The decimal bound that a validator comparing doubles applies for the schema's bound v
 * (lower: minimum / exclusiveMinimum, ex: exclusive): for a non-integer v, the midpoint
 * between v and its neighbouring double (ties rounding to even), so that every spelling
 * of a number that reads back as an allowed double is allowed; an integer v as it is.
 * 0 when |v| is out of range (beyond 9.2e18 or needing more than HR_SC_FRAC_MAX
 * digits). */
int hr_sc_dec_bound(double v, int lower, int ex, hr_sc_dec *out);
/* Regex for the encoded inside of a JSON string whose decoded value contains a match of
 * the ECMAScript pattern (the pattern's own characters in canonical spelling). An
 * unsupported construct is an error naming it and its offset. */
hr_err *hr_sc_pattern(hr_gbuf *o, const char *pat, size_t len);
/* For a pattern "^X1{a1,b1}...Xk{ak,bk}$" (each X one character or class) and lengths
 * [mn, mx] (mx < 0: none): appends the pattern's regex with the lengths enforced, when
 * the pattern's lengths lie inside them or exactly one atom's count varies (it takes the
 * bounds the others leave), and returns 1; else returns 0 (the text appended is then to
 * be dropped; nothing is appended then). */
int hr_sc_pattern_len(hr_gbuf *o, const char *pat, size_t len, int64_t mn, int64_t mx);
/* Regex for the inside of a JSON string of the given format; *known 0 when the name is
 * not a format this compiler knows (an annotation then); an error for a standard format
 * it cannot enforce. */
hr_err *hr_sc_format(hr_gbuf *o, const char *name, int *known);

/* Do all strings of format `name` have a length (code points) in [mn, mx] (mx < 0: no
 * upper bound)? 0 when unknown. */
int hr_sc_format_fits(const char *name, int64_t mn, int64_t mx);
/* Does the decoded string s (n bytes) contain a match of the ECMAScript pattern? -1 when
 * PCRE2 cannot compile it, HR_SC_NOMEM when memory ran out. */
#define HR_SC_NOMEM (-2)
int hr_sc_pattern_matches(const char *pat, const char *s, size_t n);

#endif

/* Regex for the inside of a JSON string whose decoded value is none of the n names. */
void hr_sc_not_names(hr_gbuf *o, const char *const *names, const size_t *lens, size_t n);

/* The compile context: one per hr_schema_to_gbnf call. */
typedef struct hr_sc_ctx hr_sc_ctx;
/* A rule for a whole JSON string key (quotes included) that is none of the n names, as
 * context-free rules over the names' trie (for many names, where the regex's DFA would
 * be too large). NULL on OOM. */
const char *hr_sc_not_names_rule(hr_sc_ctx *c, const char *const *names, const size_t *lens,
                                 size_t n);
typedef struct {
    const json_t *node; /* a $ref target */
    char *name;         /* its rule; NULL once done when it accepts nothing */
    int level;          /* structure depth when reserved: a cycle at the same depth loops */
    int done;
    int used; /* referred to while being compiled (recursion) */
} hr_sc_memo;

struct hr_sc_ctx {
    const json_t *root;
    const char *root_id; /* the root's $id/id, so absolute refs to the document are local */
    const char *prefix;
    const char *ws; /* " <prefix>ws" or "" (compact) */
    int max_ws;
    hr_gbuf rules;
    hr_sc_memo *memo;
    size_t n_memo, cap_memo;
    char **names; /* every rule name made, freed at the end */
    size_t n_names, cap_names;
    struct hr_sc_body *bodies; /* hash set: rule body -> name (shares identical rules) */
    size_t cap_bodies, n_bodies;
    json_t **keep; /* schemas made by merging, alive until the end */
    size_t n_keep, cap_keep;
    int next_id, level, depth;
    unsigned over;   /* HR_SCHEMA_OVER_* classes the grammar has */
    const char *any; /* the any-JSON-value rule, once made */
    char hint[96];   /* the hr_sc_hint rule's name, "" until made */
};

/* A rule with this body (shared with an identical earlier one); NULL on OOM. */
const char *hr_sc_rule(hr_sc_ctx *c, const char *hint, const char *body);
/* A rule that is the regex terminal /re/. NULL on OOM. */
const char *hr_sc_regex_rule(hr_sc_ctx *c, const char *hint, const hr_gbuf *re);
/* A fresh rule name (owned by the context). NULL on OOM. */
char *hr_sc_new_name(hr_sc_ctx *c, const char *hint);
/* Appends "name ::= body" (no sharing). */
void hr_sc_emit(hr_sc_ctx *c, const char *name, const char *body);
/* A rule that derives nothing (its only production is recursive): an alternative " | hint"
 * leaves a rule's language as it was but makes it context free for the engine, which then
 * keeps it a nonterminal instead of folding the whole object into one huge DFA terminal. */
const char *hr_sc_hint(hr_sc_ctx *c);
/* The rule for any JSON value. NULL on OOM. */
const char *hr_sc_any(hr_sc_ctx *c);
/* The rule for values valid under schema s at JSON pointer path; *rule NULL when s
 * accepts no value at all. */
hr_err *hr_sc_value(hr_sc_ctx *c, const json_t *s, const char *path, const char **rule);
/* The object part (type "object") of schema s. */
hr_err *hr_sc_object(hr_sc_ctx *c, const json_t *s, const char *path, const char **rule);
/* Keeps a made schema alive for the compile (takes ownership); returns it. */
json_t *hr_sc_keep(hr_sc_ctx *c, json_t *s);
/* allOf [a, b] as one schema (kept by the context); refs inside are resolved first. */
hr_err *hr_sc_merge(hr_sc_ctx *c, const json_t *a, const json_t *b, const char *path,
                    const json_t **out);
/* oneOf branch i of list merged with rest (may be NULL) and with what excludes the other
 * branches; an error when that cannot be done exactly. */
hr_err *hr_sc_one_of_branch(hr_sc_ctx *c, const json_t *rest, const json_t *list, size_t i,
                            const char *path, const json_t **out);
/* "not s" as a new schema when it can be said exactly (s lists only required properties
 * and a type), else NULL. */
json_t *hr_sc_negation(hr_sc_ctx *c, const json_t *s);
/* As hr_sc_negation, also of {properties (required, type object)} whose property schemas
 * have negations: for if/then/else. */
json_t *hr_sc_negation_cond(hr_sc_ctx *c, const json_t *s);
/* schema_cond.c: does s hold if/then/else or a schema dependency, and s with those
 * rewritten as allOf/anyOf of exact negations (refused with the path where there is none) */
int hr_sc_has_conditional(const json_t *s);
hr_err *hr_sc_conditionals(hr_sc_ctx *c, const json_t *s, const char *path, const json_t **out);
/* uniqueItems: true on an array of items (no tuple), minItems mn, maxItems mx (< 0: none):
 * *done with *rule (NULL: no array fits) when the items take few values and uniqueness is
 * exact; else *done 0 and the context marked HR_SCHEMA_OVER_UNIQUE. */
hr_err *hr_sc_unique_array(hr_sc_ctx *c, const json_t *items, int64_t mn, int64_t mx,
                           const char *path, int *done, const char **rule);
/* contains / minContains on an array of items (NULL: any; no tuple), minItems mn, maxItems
 * mx (< 0: none); *rule NULL when minContains is 0 (the plain array then) or nothing can
 * match. */
hr_err *hr_sc_contains(hr_sc_ctx *c, const json_t *s, const json_t *items, int64_t mn, int64_t mx,
                       const char *path, const char **rule);
/* Resolves a local $ref ("#", "#/json/pointer", or the root's $id + fragment). */
hr_err *hr_sc_resolve(hr_sc_ctx *c, const char *ref, const char *path, const json_t **out);
/* Is instance v valid under schema s? For enum/const values and declared keys; a keyword
 * it cannot evaluate on v is an error. */
hr_err *hr_sc_check(hr_sc_ctx *c, const json_t *s, const json_t *v, const char *path, int *ok);
/* Does keyword k of a schema object constrain instances (not an annotation)? */
int hr_sc_is_assertion(const char *k);
/* path + "/" + seg (seg escaped as a JSON pointer token); malloc'd, NULL on OOM. */
char *hr_sc_path(const char *path, const char *seg);
