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

typedef struct {
    int compact; /* 1: no whitespace between tokens */
    int max_ws;  /* longest whitespace run allowed; <= 0: HR_SCHEMA_MAX_WS_DEFAULT */
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
