/* The JSON Schema compiler's refusals tallied by keyword (or by reason where the message
 * names none), for the reports of tests/unit/test_grammar_schema.c and
 * bench/bench_maskbench.c over the fixture schemas. */
#ifndef HR_TESTS_SCHEMA_REFUSALS_H
#define HR_TESTS_SCHEMA_REFUSALS_H

#include <stdio.h>
#include <string.h>

enum { SCHEMA_REFUSALS_MAX = 256 };

typedef struct {
    struct {
        char kw[96];
        int n;
    } r[SCHEMA_REFUSALS_MAX];
    int n;
} schema_refusals;

/* The refused keyword of msg ("schema: \"kw\" at #path ..."), grouped where one keyword has
 * many messages, or the reason when the message names none. */
static inline void schema_refusal_kind(const char *msg, char *kw, size_t cap) {
    const char *body = strstr(msg, "schema: ") ? strstr(msg, "schema: ") + 8 : msg;
    const char *q = strchr(body, '"'), *q2 = q ? strchr(q + 1, '"') : NULL;
    if (q && q2 && q == body)
        snprintf(kw, cap, "%.*s", (int)(q2 - q - 1), q + 1);
    else
        snprintf(kw, cap, "%.80s", body);
    if (!strncmp(body, "\"$ref\"", 6)) snprintf(kw, cap, "$ref (remote)");
    if (strstr(msg, "format \"")) snprintf(kw, cap, "format");
    if (strstr(msg, "patternProperties \""))
        snprintf(kw, cap, "patternProperties matching a declared property");
    if (strstr(msg, "pattern: ")) snprintf(kw, cap, "pattern (regex construct)");
    if (strstr(msg, "grammar too large")) snprintf(kw, cap, "(grammar too large)");
    if (strstr(msg, "together with")) snprintf(kw, cap, "%.80s", body);
    char *at = strstr(kw, " at #");
    if (at) *at = 0;
}

/* Counts msg under its keyword (kinds past the table's size are not counted). */
static inline void schema_refusals_note(schema_refusals *t, const char *msg) {
    char kw[96];
    schema_refusal_kind(msg, kw, sizeof kw);
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->r[i].kw, kw)) {
            t->r[i].n++;
            return;
        }
    if (t->n < SCHEMA_REFUSALS_MAX) {
        snprintf(t->r[t->n].kw, sizeof t->r[0].kw, "%s", kw);
        t->r[t->n++].n = 1;
    }
}

/* One line a keyword: prefix, the count, the keyword. */
static inline void schema_refusals_print(const schema_refusals *t, const char *prefix) {
    for (int i = 0; i < t->n; i++)
        printf("%srefused %3d: %s\n", prefix, t->r[i].n, t->r[i].kw);
}

#endif
