/* State shared by the reply formatters (reply.c for OpenAI, anthropic_reply.c). */
#ifndef HR_SERVER_REPLY_INTERNAL_H
#define HR_SERVER_REPLY_INTERNAL_H

#include <stdlib.h>
#include <string.h>

#include "server/output_parse.h"
#include "server/reply.h"

typedef struct {
    char *s;
    size_t len, cap;
} hr_sbuf;

/* Room for n more bytes (and the NUL); 0 when out of memory (b unchanged). */
static inline int hr_sbuf_reserve(hr_sbuf *b, size_t n) {
    if (b->len + n + 1 <= b->cap) return 1;
    size_t cap = (b->len + n + 1) * 2;
    char *p = realloc(b->s, cap);
    if (!p) return 0;
    b->s = p;
    b->cap = cap;
    return 1;
}

/* Appends n bytes; 0 when out of memory (nothing appended). */
static inline int hr_sbuf_add(hr_sbuf *b, const char *s, size_t n) {
    if (!hr_sbuf_reserve(b, n)) return 0;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
    return 1;
}

/* One choice's output (OpenAI n; Anthropic has only choice 0). */
typedef struct {
    hr_reply *r;
    int index;
    hr_out_parser *parser; /* chat APIs only; created at begin (needs in_reasoning) */
    int began, finished, completion_tokens;
    int tokens_fed;      /* generated tokens fed to the parser so far */
    int reasoning_until; /* tokens_fed up to the last one that released reasoning text */
    hr_finish why;
    char *detail;               /* error message, or the stop string that ended generation */
    hr_sbuf content, reasoning; /* everything so far, for the final body */
    json_t *tool_calls;         /* OpenAI-form calls, arguments as strings */
    json_t *logprobs;           /* entries not yet sent (all of them when not streaming) */
} hr_choice;

struct hr_reply {
    const hr_api_request *req;
    const hr_server_backend *be;
    char id[48];
    long created;
    char *model;
    /* The choices share one prompt: its tokens are counted once (the first begin) and
     * cached_tokens is the least any choice found cached. */
    int prompt_tokens, cached_tokens, counted;
    int n_finished;
    int tokens_seen;
    hr_sbuf out; /* SSE bytes not yet taken: whole events only */
    /* A builder ran out of memory: the reply is void (no body; a stream gets nothing more
     * but its closing error event, fail_event). */
    int failed;
    char fail_event[256];
    /* Anthropic streaming: the open content block (-1 none) and its kind. */
    int block, block_kind, n_blocks, ping_sent;
    /* Responses: the formatter's state (responses_reply.c) and where finished responses
     * are kept (NULL: nowhere). */
    struct hr_resp_state *resp;
    struct hr_response_store *store;
    int n;
    hr_choice choices[];
};

/* The choice's reasoning tokens: an estimate, the tokens up to the one whose text ended
 * the reasoning (the parser holds back at most a marker's length) plus the closing
 * marker's token, at most completion_tokens. */
int hr_choice_reasoning_tokens(const hr_choice *c);

/* Anthropic formatter (anthropic_reply.c). */
void hr_anth_start(hr_reply *r);
void hr_anth_event(hr_reply *r, const hr_out_event *ev);
void hr_anth_finish(hr_reply *r);
json_t *hr_anth_body(hr_reply *r);

/* Responses formatter (responses_reply.c); n is always 1. */
typedef struct hr_resp_state hr_resp_state;
void hr_resp_start(hr_reply *r);
void hr_resp_event(hr_reply *r, const hr_out_event *ev);
void hr_resp_finish(hr_reply *r);
json_t *hr_resp_body(hr_reply *r);
void hr_resp_free(hr_reply *r);
/* The sequence_number the next stream event gets. */
int hr_resp_next_seq(const hr_reply *r);
/* The request field an error message names (buf holds it), for the error's "param". */
const char *hr_resp_error_param(const char *msg, char *buf, size_t cap);

/* Appends "event: NAME\n" (when name) and "data: JSON\n\n" to r->out, whole or not at
 * all; steals v. A NULL v (its builder ran out of memory), or no memory for the event,
 * fails r; nothing is appended once r failed. */
void hr_sse_put(hr_reply *r, const char *name, json_t *v);

/* Checked building: each fails r when memory ran out. chk returns v (NULL fails r); set
 * and append consume v as json_object_set_new / json_array_append_new do (obj may be NULL:
 * its own builder failed). */
json_t *hr_reply_chk(hr_reply *r, json_t *v);
void hr_reply_set(hr_reply *r, json_t *obj, const char *key, json_t *v);
void hr_reply_append(hr_reply *r, json_t *arr, json_t *v);
/* hr_sbuf_add that fails r when out of memory. */
void hr_reply_add(hr_reply *r, hr_sbuf *b, const char *s, size_t n);
/* An OpenAI-form tool call's arguments parsed back into an object ({} when the text is not
 * JSON; NULL, failing r, when out of memory). */
json_t *hr_reply_call_args(hr_reply *r, const json_t *tool_call);

#endif
