/* Joining many text pieces (content blocks, parts, items) into one string in linear time:
 * a growing buffer that doubles, instead of re-copying the text so far at every piece
 * (which made 40k Anthropic text blocks cost minutes). */
#ifndef HR_SERVER_TEXT_JOIN_H
#define HR_SERVER_TEXT_JOIN_H

#include <jansson.h>
#include <stddef.h>

#include "base/err.h"

typedef struct {
    char *s;
    size_t len, cap;
    int oom; /* a piece could not be added: the join is incomplete */
} hr_text_join;

/* Appends n bytes of text, after sep (a C string, may be "") when something is there. */
void hr_text_join_add(hr_text_join *j, const char *sep, const char *text, size_t n);
/* The joined text as a new JSON string (valid UTF-8 when the pieces were); frees j's
 * buffer (j is empty again). Out of memory: NULL and *err set. */
json_t *hr_text_join_take(hr_text_join *j, hr_err **err);
void hr_text_join_free(hr_text_join *j);

#endif
