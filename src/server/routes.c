/* The route table and its handlers: /health, /stats, /metrics (engine counters and open
 * connections), /v1/models, the four generation routes (parse, submit to the backend,
 * then one JSON body or an SSE stream), /v1/messages/count_tokens, GET / DELETE of stored
 * responses, /tokenize and /detokenize. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "grammar/grammar_cache.h"
#include "server/http_internal.h"
#include "server/listener.h"

/* A body parser of a generation route, with what the server adds (limits, the store). */
typedef hr_err *(*parse_fn)(const hr_server *s, const json_t *body, hr_api_request **out);

static hr_err *parse_chat(const hr_server *s, const json_t *b, hr_api_request **out) {
    return hr_parse_chat_request(b, &s->be->limits, out);
}

static hr_err *parse_completion(const hr_server *s, const json_t *b, hr_api_request **out) {
    return hr_parse_completion_request(b, &s->be->limits, out);
}

static hr_err *parse_messages(const hr_server *s, const json_t *b, hr_api_request **out) {
    return hr_parse_messages_request(b, &s->be->limits, out);
}

static hr_err *parse_count(const hr_server *s, const json_t *b, hr_api_request **out) {
    return hr_parse_count_tokens_request(b, &s->be->limits, out);
}

static hr_err *parse_responses(const hr_server *s, const json_t *b, hr_api_request **out) {
    return hr_parse_responses_request(b, &s->be->limits, s->responses, out);
}

/* The server's own counters (the listener's, the budget's, the store's, the grammar
 * cache's and the process-wide mask cache's). */
static hr_err *server_stats(hr_server *s, json_t *o) {
    size_t stored, bytes;
    hr_response_store_usage(s->responses, &stored, &bytes);
    hr_grammar_cache_stats gs;
    hr_grammar_cache_stats_get(s->grammars, &gs);
    hr_grammar_shared_info ms;
    hr_grammar_mask_cache_stats(&ms);
    const hr_json_field f[] = {
        {"max_connections", json_integer(hr_listener_max_connections(s->lis))},
        {"request_memory_used", json_integer((json_int_t)hr_mem_budget_used(&s->budget))},
        {"request_memory_total", json_integer((json_int_t)s->budget.cap)},
        {"requests_timed_out",
         json_integer((json_int_t)hr_conn_guard_cut(hr_listener_guard(s->lis)))},
        {"responses_stored", json_integer((json_int_t)stored)},
        {"responses_stored_bytes", json_integer((json_int_t)bytes)},
        {"grammar_cache_hits", json_integer((json_int_t)gs.hits)},
        {"grammar_compiles", json_integer((json_int_t)gs.compiles)},
        {"grammar_cache_evictions", json_integer((json_int_t)gs.evictions)},
        {"grammar_cache_entries", json_integer((json_int_t)gs.entries)},
        {"grammar_cache_bytes", json_integer((json_int_t)gs.bytes)},
        {"grammar_mask_cache_entries", json_integer((json_int_t)ms.entries)},
        {"grammar_mask_cache_bytes", json_integer((json_int_t)ms.bytes)},
        {"grammar_mask_cache_evictions", json_integer((json_int_t)ms.evictions)},
    };
    return hr_json_set_fields(o, f, sizeof f / sizeof *f);
}

/* The engine's counters, then the listener's: connections open (idle keep-alive ones and
 * the asking one included) and the limit they count against. Takes o: NULL when out of
 * memory (o or any field). */
static json_t *with_stats(hr_server *s, const hr_http_req *q, json_t *o) {
    hr_err *e = o ? NULL : hr_err_oom();
    if (!e && s->be->stats) e = s->be->stats(s->be->ctx, o);
    long conns = hr_listener_connections(q->conn);
    if (!e && conns >= 0) e = hr_json_set_new(o, "connections", json_integer(conns));
    if (!e) e = server_stats(s, o);
    if (!e) return o;
    hr_err_free(e);
    json_decref(o);
    return NULL;
}

static hr_err *health(hr_server *s, hr_http_req *q, const char *body, size_t len) {
    json_t *o = json_pack("{s:s, s:s}", "status", "ok", "model", s->be->model_name(s->be->ctx));
    return hr_http_reply_json(q, 200, with_stats(s, q, o));
}

static hr_err *stats(hr_server *s, hr_http_req *q, const char *body, size_t len) {
    return hr_http_reply_json(q, 200, with_stats(s, q, json_object()));
}

/* Prometheus text format: every numeric stats field as a gauge hearth_<name>. */
static hr_err *metrics(hr_server *s, hr_http_req *q, const char *body, size_t len) {
    json_t *o = with_stats(s, q, json_object());
    if (!o) return hr_http_reply_oom(q, HR_API_CHAT);
    size_t cap = 256 + json_object_size(o) * 160, n = 0;
    char *text = malloc(cap);
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        if (!text || !json_is_number(v)) continue;
        n += (size_t)snprintf(text + n, cap - n, "# TYPE hearth_%s gauge\nhearth_%s %.17g\n", key,
                              key, json_number_value(v));
    }
    json_decref(o);
    if (!text) return hr_http_reply_oom(q, HR_API_CHAT);
    if (n == 0) text[0] = 0;
    return hr_http_reply_text(q, 200, "text/plain; version=0.0.4", text);
}

static hr_err *models(hr_server *s, hr_http_req *q, const char *body, size_t len) {
    return hr_http_reply_json(q, 200, hr_models_body(s->be->model_name(s->be->ctx)));
}

/* Parses body as a JSON object with no NUL in any string, or replies 400 (*j NULL, return
 * value from the reply). */
static hr_err *load_body(hr_http_req *q, hr_api_kind api, const char *body, size_t len,
                         json_t **j) {
    hr_err *e = hr_json_load_buf("request body", body, len, j);
    if (e) return hr_http_reply_err(q, api, 400, e);
    e = json_is_object(*j) ? hr_json_reject_nul(*j) : hr_errf("request body must be a JSON object");
    if (!e) return NULL;
    json_decref(*j);
    *j = NULL;
    return hr_http_reply_err(q, api, 400, e);
}

/* Non-streaming: wait for the whole reply, then send it (nothing if the client left; a
 * 503 if the server's shutdown cut it). */
static hr_err *reply_whole(hr_http_req *q, hr_api_kind api, hr_http_gen *g) {
    while (!g->done)
        hr_http_gen_wait(g);
    int status;
    json_t *body = hr_reply_body(g->reply, &status);
    int cancelled = g->cancelled, ended = g->ended;
    hr_http_gen_account(g, &q->acc);
    hr_http_gen_free(g);
    if (cancelled) return json_decref(body), hr_errf("client disconnected");
    if (ended) return json_decref(body), hr_http_reply_error(q, api, 503, HR_SHUTDOWN_MSG);
    return hr_http_reply_json(q, status, body);
}

/* Submits every choice; on the first refusal stops the ones already running and returns
 * the engine's error. */
static hr_err *submit_choices(hr_server *s, hr_http_gen *g, int n) {
    int i = 0;
    hr_err *e = NULL;
    while (i < n &&
           !(e = s->be->submit(s->be->ctx, hr_chan_request(g->chan, i), hr_chan_sink(g->chan, i))))
        i++;
    if (!e) return NULL;
    for (int k = i; k < n; k++)
        hr_chan_unsubmitted(g->chan, k); /* the engine never got these */
    hr_http_gen_stop(g);
    return e;
}

static hr_err *submit(hr_server *s, hr_http_req *q, hr_api_request *req) {
    hr_api_kind api = req->api;
    int n = req->n;
    hr_http_gen *g = calloc(1, sizeof *g);
    hr_err *e =
        g ? hr_reply_create(req, s->be->model_name(s->be->ctx), (long)time(NULL), s->be, &g->reply)
          : hr_err_oom();
    if (!e && !(g->chan = hr_chan_create(req, s->cfg.max_backlog))) e = hr_err_oom();
    if (e) {
        if (g) hr_reply_free(g->reply);
        free(g);
        hr_api_request_free(req);
        hr_err_free(e);
        return hr_http_reply_oom(q, api);
    }
    hr_reply_set_store(g->reply, s->responses);
    g->be = s->be;
    g->s = s;
    g->conn = q->conn;
    g->timeout_s = s->timeout_s;
    if ((e = submit_choices(s, g, n))) {
        hr_http_gen_free(g);
        return hr_http_reply_err(q, api, 400, e);
    }
    return req->stream ? hr_http_reply_sse(q, g) : reply_whole(q, api, g);
}

/* The body parsed into a request with its grammar or forced-tool prefill; a bad body gets its 400
 * here (*req NULL, the return value is the reply's). */
static hr_err *parse_body(hr_server *s, hr_http_req *q, hr_api_kind api, parse_fn parse,
                          const char *body, size_t len, hr_api_request **req) {
    *req = NULL;
    json_t *j;
    hr_err *e = load_body(q, api, body, len, &j);
    if (!j) return e;
    e = parse(s, j, req);
    json_decref(j);
    if (!e) e = hr_request_set_grammar(*req, s->be->tool_format, s->grammars);
    if (!e) e = hr_request_set_prefill(*req, s->be->tool_format);
    if (e && *req) {
        hr_api_request_free(*req);
        *req = NULL;
    }
    return e ? hr_http_reply_err(q, api, 400, e) : NULL;
}

static hr_err *generate(hr_server *s, hr_http_req *q, hr_api_kind api, parse_fn parse,
                        const char *body, size_t len) {
    hr_api_request *req;
    hr_err *e = parse_body(s, q, api, parse, body, len, &req);
    return req ? submit(s, q, req) : e;
}

static hr_err *chat(hr_server *s, hr_http_req *q, const char *body, size_t len) {
    return generate(s, q, HR_API_CHAT, parse_chat, body, len);
}

static hr_err *completions(hr_server *s, hr_http_req *q, const char *body, size_t len) {
    return generate(s, q, HR_API_COMPLETION, parse_completion, body, len);
}

static hr_err *messages(hr_server *s, hr_http_req *q, const char *body, size_t len) {
    return generate(s, q, HR_API_MESSAGES, parse_messages, body, len);
}

/* POST /v1/responses: the store resolves previous_response_id while parsing. */
static hr_err *responses_create(hr_server *s, hr_http_req *q, const char *body, size_t len) {
    return generate(s, q, HR_API_RESPONSES, parse_responses, body, len);
}

/* The prompt /v1/messages would build for the body (prefill included), counted. */
static hr_err *count_tokens(hr_server *s, hr_http_req *q, const char *body, size_t len) {
    hr_api_request *req;
    hr_err *e = parse_body(s, q, HR_API_MESSAGES, parse_count, body, len, &req);
    if (!req) return e;
    int n = 0;
    e = s->be->count ? s->be->count(s->be->ctx, req, &n)
                     : hr_errf("this server's engine cannot count tokens");
    hr_api_request_free(req);
    if (e) return hr_http_reply_err(q, HR_API_MESSAGES, 400, e);
    return hr_http_reply_json(q, 200, json_pack("{s:i}", "input_tokens", n));
}

/* The {id} of /v1/responses/{id}. */
static const char *response_id(const hr_http_req *q) { return q->path + strlen("/v1/responses/"); }

static hr_err *response_not_found(hr_http_req *q, const char *id) {
    return hr_http_reply_err(q, HR_API_RESPONSES, 404,
                             hr_errc(HR_E_NOTFOUND, "Response with id '%.200s' not found.", id));
}

/* GET /v1/responses/{id}: the stored response object. */
static hr_err *responses_get(hr_server *s, hr_http_req *q, const char *body, size_t len) {
    int oom;
    json_t *r = hr_response_store_get(s->responses, response_id(q), NULL, &oom);
    if (oom) return hr_http_reply_oom(q, HR_API_RESPONSES);
    return r ? hr_http_reply_json(q, 200, r) : response_not_found(q, response_id(q));
}

/* DELETE /v1/responses/{id}. */
static hr_err *responses_delete(hr_server *s, hr_http_req *q, const char *body, size_t len) {
    const char *id = response_id(q);
    if (!hr_response_store_delete(s->responses, id)) return response_not_found(q, id);
    return hr_http_reply_json(
        q, 200, json_pack("{s:s, s:s, s:b}", "id", id, "object", "response", "deleted", 1));
}

static hr_err *tokenize(hr_server *s, hr_http_req *q, const char *body, size_t len) {
    json_t *j;
    hr_err *e = load_body(q, HR_API_CHAT, body, len, &j);
    if (!j) return e;
    const char *text;
    int special;
    int32_t *ids = NULL;
    int n = 0;
    e = hr_parse_tokenize_request(j, &text, &special);
    if (!e) e = s->be->tokenize(s->be->ctx, text, special, &ids, &n);
    json_decref(j);
    if (e) return hr_http_reply_err(q, HR_API_CHAT, 400, e);
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++)
        if (json_array_append_new(arr, json_integer(ids[i]))) {
            json_decref(arr);
            arr = NULL;
        }
    free(ids);
    return hr_http_reply_json(q, 200, json_pack("{s:o, s:i}", "tokens", arr, "count", n));
}

static hr_err *detokenize(hr_server *s, hr_http_req *q, const char *body, size_t len) {
    json_t *j;
    hr_err *e = load_body(q, HR_API_CHAT, body, len, &j);
    if (!j) return e;
    int32_t *ids = NULL;
    int n = 0;
    char *text = NULL;
    size_t text_len = 0;
    e = hr_parse_detokenize_request(j, &s->be->limits, &ids, &n);
    if (!e) e = s->be->detokenize(s->be->ctx, ids, n, &text, &text_len);
    json_decref(j);
    free(ids);
    if (e) return hr_http_reply_err(q, HR_API_CHAT, 400, e);
    json_t *o = json_pack("{s:o}", "prompt", hr_json_string_lossy(text, text_len));
    free(text);
    return hr_http_reply_json(q, 200, o);
}

static const hr_route routes[] = {
    {"/health", "GET", HR_API_CHAT, 0, 0, health},
    {"/stats", "GET", HR_API_CHAT, 1, 0, stats},
    {"/metrics", "GET", HR_API_CHAT, 1, 0, metrics},
    {"/v1/models", "GET", HR_API_CHAT, 1, 0, models},
    {"/v1/chat/completions", "POST", HR_API_CHAT, 1, 0, chat},
    {"/v1/completions", "POST", HR_API_COMPLETION, 1, 0, completions},
    {"/v1/messages", "POST", HR_API_MESSAGES, 1, 0, messages},
    {"/v1/messages/count_tokens", "POST", HR_API_MESSAGES, 1, 0, count_tokens},
    {"/v1/responses", "POST", HR_API_RESPONSES, 1, 0, responses_create},
    {"/v1/responses/", "GET", HR_API_RESPONSES, 1, 1, responses_get},
    {"/v1/responses/", "DELETE", HR_API_RESPONSES, 1, 1, responses_delete},
    {"/tokenize", "POST", HR_API_CHAT, 1, 0, tokenize},
    {"/detokenize", "POST", HR_API_CHAT, 1, 0, detokenize},
};

static int path_matches(const hr_route *r, const char *path) {
    size_t n = strlen(r->path);
    if (r->prefix) return !strncmp(r->path, path, n) && path[n];
    return !strcmp(r->path, path);
}

const hr_route *hr_route_find(const char *path, const char *method, char *allowed, size_t cap) {
    size_t n = 0;
    allowed[0] = 0;
    for (size_t i = 0; i < sizeof routes / sizeof *routes; i++) {
        if (!path_matches(&routes[i], path)) continue;
        if (!strcmp(routes[i].method, method)) return &routes[i];
        int k = snprintf(allowed + n, cap - n, "%s%s", n ? ", " : "", routes[i].method);
        if (k > 0 && n + (size_t)k < cap) n += (size_t)k;
    }
    return NULL;
}
