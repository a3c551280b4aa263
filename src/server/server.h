/* The HTTP server and the interface it needs from an engine. The server parses and
 * validates requests, hands each to backend->submit with a sink, and turns what the
 * engine pushes into the sink (text pieces, then one finish) into OpenAI/Anthropic JSON
 * or SSE. The engine calls the sink from its own thread; the HTTP thread waits on it. */
#ifndef HR_SERVER_SERVER_H
#define HR_SERVER_SERVER_H

#include <jansson.h>
#include <stdint.h>

#include "base/err.h"
#include "hearth/hearth.h"
#include "server/request.h"

typedef struct hr_gen_sink hr_gen_sink;

typedef struct {
    const char *text; /* token text (bytes, not NUL-terminated) */
    size_t len;
    float logprob;
} hr_token_alt;

/* One step of output: the text the incremental detokenizer released (may be empty),
 * and when the request asked for logprobs, the sampled token (its id and own text) and
 * its alternatives. */
typedef struct {
    const char *text;
    size_t len;
    int32_t token;
    const char *token_text;
    size_t token_len;
    float logprob;
    const hr_token_alt *top; /* n_top alternatives, most likely first */
    int n_top;
} hr_gen_token;

/* What an engine implements. Every function may be called from any HTTP thread at once. */
typedef struct {
    void *ctx;
    /* The model id shown in /v1/models and responses. */
    const char *(*model_name)(void *ctx);
    /* Starts generating for req (borrowed until the sink is finished). Called once per
     * choice of a request with n > 1, each with its own sink and seed. Returns an error
     * (and never touches the sink) when the request cannot be accepted; otherwise the
     * engine must later call hr_gen_sink_finish exactly once, from any thread. */
    hr_err *(*submit)(void *ctx, const hr_api_request *req, hr_gen_sink *sink);
    /* The client went away: stop the request soon (it still finishes the sink). May be
     * NULL when the engine polls hr_gen_sink_cancelled instead. */
    void (*cancel)(void *ctx, hr_gen_sink *sink);
    /* Adds counters to the /health object (may be NULL); out of memory when any of them
     * could not be added. */
    hr_err *(*stats)(void *ctx, json_t *out);
    /* The prompt's token count as submit would build it (template, prefill); for
     * count_tokens routes. */
    hr_err *(*count)(void *ctx, const hr_api_request *req, int *n_tokens);
    hr_err *(*tokenize)(void *ctx, const char *text, int add_special, int32_t **ids, int *n);
    /* *text (caller frees) holds *len bytes, NUL-terminated; it may hold NULs itself. */
    hr_err *(*detokenize)(void *ctx, const int32_t *ids, int n, char **text, size_t *len);
    /* The output markup of the loaded model: tool-call family and <think> reasoning. */
    hr_tool_format tool_format;
    int reasoning;
    hr_request_limits limits;
} hr_server_backend;

/* Engine side of a request's channel. begin (optional, once, before any token) gives the
 * prompt's token count, how many of them came from the prefix cache, and whether the
 * rendered prompt ends inside an open <think>. */
void hr_gen_sink_begin(hr_gen_sink *s, int prompt_tokens, int cached_tokens, int in_reasoning);
void hr_gen_sink_token(hr_gen_sink *s, const hr_gen_token *t);
/* The last call for this request. completion_tokens counts the generated tokens.
 * detail: for HR_FINISH_ERROR the message; for HR_FINISH_STOP the stop string that ended
 * generation (NULL when it was end-of-sequence); else NULL. The sink may be freed at once
 * after this call. */
void hr_gen_sink_finish(hr_gen_sink *s, hr_finish why, int completion_tokens, const char *detail);
/* Nonzero once the client disconnected; the engine may poll this every step. */
int hr_gen_sink_cancelled(const hr_gen_sink *s);

typedef struct {
    const char *host;    /* default 127.0.0.1 */
    int port;            /* 0 = any free port (see hr_server_port) */
    const char *api_key; /* NULL = no auth */
    size_t max_body;     /* bytes; 0 = 8 MiB */
    /* Seconds a connection may wait on a silent client (no request bytes arriving, or no
     * reply bytes taken) before it is closed; time spent waiting on the engine does not
     * count. 0 = 60 s, negative = never. */
    int timeout_s;
    /* Connections open at once (idle keep-alive ones included); libmicrohttpd accepts and
     * closes any beyond, without a reply. 0 = 512. */
    unsigned max_connections;
    /* Seconds a request's headers and body may take to arrive, however the bytes trickle
     * (the idle timeout restarts on every byte); the connection is closed past it.
     * 0 = 30 s, negative = no deadline. */
    int request_timeout_s;
    /* Connections open at once from one client address; more are closed at once. 0 = no
     * limit beyond max_connections (a local server's clients, benchmarks and agents, all
     * come from one address). */
    unsigned max_connections_per_ip;
    /* Bytes of memory for parsing and preparing requests, all requests together; each
     * reserves its body size before the body is read and HR_REQUEST_MEMORY_FACTOR
     * (mem_budget.h) times it in all before parsing, waiting for it up to 2 s, then gets a
     * 503. 0 = a quarter of the physical memory. */
    size_t request_memory;
    /* Bytes of output a request holds for a client that does not read it (a stalled SSE
     * reader) before it is cancelled, ending with an error event. 0 = 16 MiB. */
    size_t max_backlog;
    /* Listen on this unix domain socket instead of host:port (the engine child of
     * --isolate); NULL = TCP. */
    const char *unix_socket;
    /* MiB of compiled grammars kept for requests that send the same schema, grammar or
     * tools again (grammar_cache.h); 0 = 256, negative = none. */
    int grammar_cache_mb;
} hr_server_config;

typedef struct hr_server hr_server;

/* Starts listening (backend borrowed for the server's life). */
hr_err *hr_server_start(const hr_server_config *cfg, const hr_server_backend *backend,
                        hr_server **out);
int hr_server_port(const hr_server *s);
/* Graceful shutdown, step 1: stops accepting connections (connects are refused) and
 * keeping them alive. */
void hr_server_quiesce(hr_server *s);
/* Step 2: lets requests in flight finish for up to grace_s seconds, then ends those still
 * generating (streams with an error event in their API's shape, others with a 503) and
 * waits for them to go out. Call once, before hr_server_stop. */
void hr_server_drain(hr_server *s, double grace_s);
/* Stops accepting, waits for connections to end, frees. */
void hr_server_stop(hr_server *s);

#endif
