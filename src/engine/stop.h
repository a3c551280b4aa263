/* Stop strings matched on decoded text. Text arrives in pieces (from the incremental
 * detokenizer); the matcher releases what can be shown and holds back any tail that could
 * still begin a stop string, so a stop string split across tokens is never streamed. The
 * stop string itself and everything after it are dropped (OpenAI semantics). */
#ifndef HR_ENGINE_STOP_H
#define HR_ENGINE_STOP_H

#include <stddef.h>

#include "base/err.h"

typedef struct {
    char **stops; /* (n) owned copies, each non-empty */
    int n;
    char *buf; /* pending text; [0, released) was handed out by the last call */
    size_t len, cap, released;
} hr_stop_matcher;

hr_err *hr_stop_init(hr_stop_matcher *m, const char *const *stops, int n);
void hr_stop_free(hr_stop_matcher *m);
/* Adds text[0..len). out, out_len: the text now safe to emit (valid until the next call).
 * Returns 1 + the index of the stop string that completed (*out ends just before it; the
 * earliest match wins), else 0. */
int hr_stop_push(hr_stop_matcher *m, const char *text, size_t len, const char **out,
                 size_t *out_len);
/* Releases everything held back (at the end of generation for another reason). */
void hr_stop_flush(hr_stop_matcher *m, const char **out, size_t *out_len);

#endif
