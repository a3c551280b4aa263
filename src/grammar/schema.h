/* JSON Schema (draft-04 .. 2020-12) -> GBNF text for the grammar engine (grammar.h). The
 * emitted grammar accepts only JSON texts that validate against the schema (sound); a
 * keyword that cannot be enforced is refused with an error naming it and its JSON-pointer
 * path. docs/json-schema.md says which keywords are supported and how (property order,
 * additionalProperties, oneOf, whitespace). */
#ifndef HR_GRAMMAR_SCHEMA_H
#define HR_GRAMMAR_SCHEMA_H

#include <jansson.h>
#include <stddef.h>

#include "base/err.h"

/* The longest whitespace run allowed between two JSON tokens when max_ws <= 0: enough for
 * a pretty-printed (2-space indent) instance nested 15 levels deep. */
#define HR_SCHEMA_MAX_WS_DEFAULT 32

/* The documented ways an emitted grammar may accept an instance the schema rejects
 * (docs/json-schema.md, "Over-acceptance"); every other accepted text is valid. */
enum {
    HR_SCHEMA_OVER_ONEOF = 1,    /* oneOf branches whose overlap could not be excluded */
    HR_SCHEMA_OVER_REPEAT = 2,   /* a property of an object with more than 8 declared
                                    properties repeated (min/maxProperties count repeats) */
    HR_SCHEMA_OVER_REQUIRED = 4, /* a required property of such an object left untracked
                                    (more than fit the state budget) may be missing */
    HR_SCHEMA_OVER_UNIQUE = 8    /* uniqueItems not enforced (as llama.cpp, vLLM, xgrammar) */
};

typedef struct {
    int compact;    /* 1: no whitespace between tokens */
    int max_ws;     /* longest whitespace run allowed; <= 0: HR_SCHEMA_MAX_WS_DEFAULT */
    unsigned *over; /* if set: receives the HR_SCHEMA_OVER_* classes the grammar has */
} hr_schema_opts;

/* Compiles schema into GBNF text (start rule "root"); *text is malloc'd, NUL-terminated,
 * *len its length. o may be NULL (defaults: whitespace allowed, max_ws default). */
hr_err *hr_schema_to_gbnf(const json_t *schema, const hr_schema_opts *o, char **text, size_t *len);
/* json_object mode: any JSON object. */
hr_err *hr_schema_any_object_gbnf(const hr_schema_opts *o, char **text, size_t *len);
/* As hr_schema_to_gbnf, every rule name prefixed with `prefix` ([A-Za-z0-9_-]*), the start
 * rule being <prefix>root: for embedding in a larger grammar (tool calls). */
hr_err *hr_schema_to_gbnf_prefixed(const json_t *schema, const hr_schema_opts *o,
                                   const char *prefix, char **text, size_t *len);

#endif
