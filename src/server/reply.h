/* One request's response (its n choices), built from engine events: the output parser
 * splits each choice's text into content, reasoning and tool calls, and the API's
 * formatter turns them into SSE bytes (streaming) or the final JSON body. Pure: no I/O and
 * no threads, so tests drive it with scripted events. Also the JSON error bodies of both
 * API families. */
#ifndef HR_SERVER_REPLY_H
#define HR_SERVER_REPLY_H

#include <jansson.h>

#include "server/server.h"

typedef struct hr_reply hr_reply;

/* req is borrowed for the reply's life; model is the name to echo when the request gave
 * none; created is the unix time to stamp. */
hr_err *hr_reply_create(const hr_api_request *req, const char *model, long created,
                        const hr_server_backend *be, hr_reply **out);
void hr_reply_free(hr_reply *r);
/* Responses: a finished response asked to be stored (store: true) goes into s. */
struct hr_response_store;
void hr_reply_set_store(hr_reply *r, struct hr_response_store *s);

/* The engine's events for choice 0..req->n-1 (hr_gen_sink_* in server.h). */
void hr_reply_begin(hr_reply *r, int choice, int prompt_tokens, int cached_tokens,
                    int in_reasoning);
void hr_reply_token(hr_reply *r, int choice, const hr_gen_token *t);
/* detail as for hr_gen_sink_finish: the error message, or the stop string matched. */
void hr_reply_finish(hr_reply *r, int choice, hr_finish why, int completion_tokens,
                     const char *detail);

/* Streaming: the SSE bytes produced since the last call (heap, caller frees; *len may be
 * 0), whole events only. After every choice's finish the last of them ends the stream. */
char *hr_reply_take(hr_reply *r, size_t *len);
/* Not streaming, after every finish: the response body and its HTTP status (200, or 500
 * when the engine failed any choice). New reference; NULL (and 503) when the reply failed. */
json_t *hr_reply_body(hr_reply *r, int *status);

/* Out of memory: any allocation of a reply's builders that fails makes the whole reply
 * void, never one with a field missing. A failed reply has no body (hr_reply_body NULL),
 * and its stream ends, after the whole events taken so far, with hr_reply_fail_event. */
int hr_reply_failed(const hr_reply *r);
/* Fails r from outside (the request channel lost an engine event). */
void hr_reply_fail(hr_reply *r);
/* A failed stream's last bytes: the API's error event (with [DONE] for OpenAI), held in r
 * (nothing allocated); NULL when r has not failed. */
const char *hr_reply_fail_event(hr_reply *r, size_t *len);
/* The last event of a stream that the server's side failed (status 5xx; msg plain text
 * that needs no JSON escaping), in api's shape (OpenAI's error chunk and [DONE],
 * Anthropic's and Responses' `event: error`, the latter with sequence_number seq), written
 * into buf without allocating; its length, 0 when cap is too small. */
size_t hr_error_event(hr_api_kind api, int status, const char *msg, long seq, char *buf,
                      size_t cap);
/* The body of a 503 for out of memory in api's error shape: static text, nothing allocated
 * (what hr_error_body(api, 503, "out of memory") would build). */
const char *hr_oom_body(hr_api_kind api);

/* What a reply amounts to so far, for the access log. */
typedef struct {
    int prompt_tokens, cached_tokens, completion_tokens; /* completion: all choices */
    int tokens_seen;                                     /* token events applied so far */
    const char *finish; /* choice 0's: length, stop, tool_calls, cancelled, error; NULL
                           until it finished */
} hr_reply_summary;
void hr_reply_summarize(const hr_reply *r, hr_reply_summary *out);

/* Error bodies: OpenAI {"error": {"message", "type", "code"}} (Responses adds "param", the
 * field the message names, or null) and Anthropic
 * {"type": "error", "error": {"type", "message"}}; type follows the status. NULL when out
 * of memory. */
json_t *hr_error_body(hr_api_kind api, int status, const char *message);

/* GET /v1/models: the one model, named name. NULL when out of memory. */
json_t *hr_models_body(const char *name);

/* A response id: prefix + 24 random hex digits, into buf (>= strlen(prefix) + 25). */
void hr_make_id(char *buf, size_t cap, const char *prefix);

#endif
