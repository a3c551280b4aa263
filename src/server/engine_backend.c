/* hr_server_backend over hr_engine; see engine_backend.h. Each submitted request gets a
 * live_req that ties the HTTP sink to the engine's request handle. Events arrive on the
 * engine thread; handles are released later from an HTTP thread (never inside an engine
 * callback), when the next request is submitted or the wrapper is destroyed. */
#include "server/engine_backend.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/output_parse.h"

typedef struct live_req {
    struct live_req *next;
    hr_engine_server *srv;
    hr_gen_sink *sink;
    hr_request *handle; /* set once submit returned */
    int began, done, in_reasoning, logprobs;
} live_req;

struct hr_engine_server {
    hr_engine *engine;
    const hr_tokenizer *tok;
    const hr_prompt *prompt;
    char *name;
    hr_server_backend backend;
    pthread_mutex_t mu;
    live_req *live;            /* submitted, not yet released */
    atomic_ulong seed_counter; /* HTTP threads draw from it at once (ThreadSanitizer) */
    /* (n_pieces) each token's own text for logprobs, decoded the first time the engine
     * thread needs it, so a token with top logprobs costs no allocation after warm-up */
    struct piece {
        char *text;
        size_t len;
    } * pieces;
    int n_pieces;
};

/* Releases the handles of finished requests (HTTP threads only). */
static void reap(hr_engine_server *s) {
    pthread_mutex_lock(&s->mu);
    live_req **pp = &s->live, *done = NULL;
    while (*pp) {
        live_req *l = *pp;
        if (l->done && l->handle) {
            *pp = l->next;
            l->next = done;
            done = l;
        } else {
            pp = &l->next;
        }
    }
    pthread_mutex_unlock(&s->mu);
    while (done) {
        live_req *n = done->next;
        hr_request_release(done->handle);
        free(done);
        done = n;
    }
}

/* Token id's own text (engine thread): cached after its first decode; "" for an id the
 * tokenizer cannot decode, or when memory ran out decoding it. */
static const char *piece(hr_engine_server *s, int32_t id, size_t *len) {
    *len = 0;
    if (id < 0 || id >= s->n_pieces) return "";
    struct piece *p = &s->pieces[id];
    if (!p->text) {
        hr_err *err = hr_tokenizer_decode(s->tok, &id, 1, 0, &p->text);
        if (err) hr_err_free(err), p->text = NULL;
        if (!p->text) return "";
        p->len = strlen(p->text);
    }
    *len = p->len;
    return p->text;
}

static void emit_token(live_req *l, const hr_event *ev) {
    hr_gen_token t = {
        .text = ev->text, .len = ev->text_len, .token = ev->token, .logprob = ev->logprob};
    hr_token_alt alts[HR_MAX_TOP_LOGPROBS];
    if (l->logprobs) {
        t.token_text = piece(l->srv, ev->token, &t.token_len);
        for (int i = 0; i < ev->n_top && i < HR_MAX_TOP_LOGPROBS; i++) {
            alts[i].text = piece(l->srv, ev->top_ids[i], &alts[i].len);
            alts[i].logprob = ev->top_logprobs[i];
        }
        t.top = alts;
        t.n_top = ev->n_top < HR_MAX_TOP_LOGPROBS ? ev->n_top : HR_MAX_TOP_LOGPROBS;
    }
    hr_gen_sink_token(l->sink, &t);
}

/* The sink cancelled itself (its client stopped reading, sink.h): the engine stops. */
static void cancel_if_dropped(live_req *l) {
    if (!hr_gen_sink_cancelled(l->sink)) return;
    pthread_mutex_lock(&l->srv->mu);
    if (l->handle) hr_request_cancel(l->handle);
    pthread_mutex_unlock(&l->srv->mu);
}

/* Engine thread. */
static void on_event(void *ctx, const hr_event *ev) {
    live_req *l = ctx;
    if (!l->began) {
        hr_gen_sink_begin(l->sink, ev->n_prompt, ev->n_cached, l->in_reasoning);
        l->began = 1;
    }
    if (ev->kind == HR_EVENT_TOKEN) {
        emit_token(l, ev);
        cancel_if_dropped(l);
        return;
    }
    if (ev->text_len > 0) {
        hr_gen_token tail = {.text = ev->text, .len = ev->text_len, .token = -1};
        hr_gen_sink_token(l->sink, &tail);
    }
    const char *detail = ev->finish == HR_FINISH_ERROR ? ev->error : ev->stop_string;
    hr_gen_sink_finish(l->sink, ev->finish, ev->n_generated, detail);
    pthread_mutex_lock(&l->srv->mu);
    l->done = 1;
    pthread_mutex_unlock(&l->srv->mu);
}

/* Whether the engine can follow <think> blocks (single tokens), so a grammar can wait for one
 * to close. */
static int think_tokens(const hr_tokenizer *tok) {
    return hr_tokenizer_token_id(tok, "<think>") >= 0 &&
           hr_tokenizer_token_id(tok, "</think>") >= 0;
}

static hr_err *prompt_ids(hr_engine_server *s, const hr_api_request *req, int32_t **ids, int *n,
                          int *in_reasoning) {
    *in_reasoning = 0;
    if (req->chat) {
        /* a grammar cannot wait for the close of a block the engine cannot see: an open one
         * is closed in the prompt (as a prefill would), and the answer starts under it */
        const char *prefill = req->prefill                            ? req->prefill
                              : req->grammar && !think_tokens(s->tok) ? ""
                                                                      : NULL;
        return hr_prompt_render(s->prompt, req->chat, prefill, ids, n, in_reasoning);
    }
    if (req->prompt)
        return hr_tokenizer_encode(s->tok, req->prompt, strlen(req->prompt), 1, ids, n);
    *ids = malloc(sizeof(int32_t) * (size_t)(req->n_prompt_ids > 0 ? req->n_prompt_ids : 1));
    if (!*ids) return hr_err_oom();
    memcpy(*ids, req->prompt_ids, sizeof(int32_t) * (size_t)req->n_prompt_ids);
    *n = req->n_prompt_ids;
    return NULL;
}

/* Request fields to engine parameters; bias arrays are allocated into *bias_ids/values. */
static void to_params(hr_engine_server *s, const hr_api_request *req, hr_request_params *p,
                      int32_t *bias_ids, float *bias_values) {
    p->max_tokens = req->max_tokens;
    p->temperature = req->sampling.temperature;
    p->top_p = req->sampling.top_p;
    p->top_k = req->sampling.top_k;
    p->min_p = req->sampling.min_p;
    p->typical_p = req->sampling.typical_p;
    p->xtc_probability = req->sampling.xtc_probability;
    p->xtc_threshold = req->sampling.xtc_threshold;
    p->seed = req->seed_set ? req->sampling.seed
                            : (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull +
                                  atomic_fetch_add(&s->seed_counter, 1) + 1;
    p->repetition_penalty = req->repetition_penalty;
    p->penalty_last_n = req->penalty_last_n;
    p->presence_penalty = req->presence_penalty;
    p->frequency_penalty = req->frequency_penalty;
    for (int i = 0; i < req->n_logit_bias; i++) {
        bias_ids[i] = req->logit_bias[i].token;
        bias_values[i] = req->logit_bias[i].bias;
    }
    p->bias_ids = bias_ids;
    p->bias_values = bias_values;
    p->n_bias = req->n_logit_bias;
    p->logprobs = req->logprobs;
    p->top_logprobs = req->top_logprobs;
    p->ignore_eos = req->ignore_eos;
    p->stop = (const char *const *)req->stop;
    p->n_stop = req->n_stop;
    p->reasoning_budget = req->reasoning_budget;
    p->grammar = req->grammar;
    p->grammar_after_think = s->backend.reasoning && req->chat; /* reasoning is the template's */
    p->grammar_lazy = req->grammar_lazy;
    if (req->grammar_lazy) { /* strict calls: only where the opening is one token */
        p->grammar_trigger = hr_tokenizer_token_id(s->tok, req->grammar_trigger);
        if (p->grammar_trigger < 0) p->grammar = NULL, p->grammar_lazy = 0;
    }
    p->cb = on_event;
}

static hr_err *submit(void *ctx, const hr_api_request *req, hr_gen_sink *sink) {
    hr_engine_server *s = ctx;
    reap(s);
    int32_t *ids = NULL;
    int n = 0;
    live_req *l = calloc(1, sizeof *l);
    int nb = req->n_logit_bias > 0 ? req->n_logit_bias : 1;
    int32_t *bias_ids = malloc(sizeof(int32_t) * (size_t)nb);
    float *bias_values = malloc(sizeof(float) * (size_t)nb);
    hr_err *err = l && bias_ids && bias_values ? NULL : hr_err_oom();
    if (!err) err = prompt_ids(s, req, &ids, &n, &l->in_reasoning);
    int room = hr_engine_max_context(s->engine);
    if (!err && n >= room) err = hr_context_error(req->api, n, room);
    hr_request *h = NULL;
    if (!err) {
        hr_request_params p = {.tokens = ids, .n_tokens = n, .cb_ctx = l};
        to_params(s, req, &p, bias_ids, bias_values);
        p.in_reasoning = l->in_reasoning;
        /* max_tokens is an upper bound: what fits beside the prompt, or all of it */
        if (p.max_tokens <= 0 || p.max_tokens > room - n) p.max_tokens = room - n;
        *l = (live_req){.srv = s,
                        .sink = sink,
                        .in_reasoning = l->in_reasoning,
                        .logprobs = req->logprobs || req->top_logprobs > 0};
        pthread_mutex_lock(&s->mu); /* listed before submit: events may come at once */
        l->next = s->live;
        s->live = l;
        pthread_mutex_unlock(&s->mu);
        err = hr_engine_submit(s->engine, &p, &h);
        pthread_mutex_lock(&s->mu);
        if (err) {
            live_req **pp = &s->live;
            while (*pp != l)
                pp = &(*pp)->next;
            *pp = l->next;
        } else {
            l->handle = h;
        }
        pthread_mutex_unlock(&s->mu);
    }
    if (err) free(l);
    free(ids);
    free(bias_ids);
    free(bias_values);
    return err;
}

static hr_err *count(void *ctx, const hr_api_request *req, int *n_tokens) {
    int32_t *ids = NULL;
    int in_reasoning;
    hr_err *err = prompt_ids(ctx, req, &ids, n_tokens, &in_reasoning);
    free(ids);
    return err;
}

static void cancel(void *ctx, hr_gen_sink *sink) {
    hr_engine_server *s = ctx;
    pthread_mutex_lock(&s->mu);
    for (live_req *l = s->live; l; l = l->next)
        if (l->sink == sink && l->handle && !l->done) hr_request_cancel(l->handle);
    pthread_mutex_unlock(&s->mu);
}

static hr_err *ssd_stats(const hr_engine_stats *st, json_t *out) {
    const hr_json_field f[] = {
        {"ssd_entries", json_integer(st->ssd_entries)},
        {"ssd_bytes", json_integer(st->ssd_bytes)},
        {"ssd_hits", json_integer(st->ssd_hits)},
        {"ssd_restores", json_integer(st->ssd_restores)},
        {"ssd_spills", json_integer(st->ssd_spills)},
        {"ssd_dropped_spills", json_integer(st->ssd_dropped)},
        {"ssd_last_restore_ms", json_real(st->ssd_last_restore_ms)},
        {"ssd_restores_skipped", json_integer(st->ssd_skipped)},
        {"ssd_writes_off", json_integer(st->ssd_writes_off)},
    };
    return hr_json_set_fields(out, f, sizeof f / sizeof *f);
}

static hr_err *stats(void *ctx, json_t *out) {
    hr_engine_stats st;
    hr_engine_stats_get(((hr_engine_server *)ctx)->engine, &st);
    const hr_json_field f[] = {
        {"active", json_integer(st.active)},
        {"queued", json_integer(st.queued)},
        {"kv_blocks_total", json_integer(st.kv_blocks_total)},
        {"kv_blocks_used", json_integer(st.kv_blocks_used)},
        {"kv_blocks_cached", json_integer(st.kv_blocks_cached)},
        {"state_snapshots", json_integer(st.state_snapshots)},
        {"requests_done", json_integer(st.requests_done)},
        {"prompt_tokens", json_integer(st.prompt_tokens)},
        {"cached_tokens", json_integer(st.cached_tokens)},
        {"generated_tokens", json_integer(st.generated_tokens)},
        {"decode_tok_s", json_real(st.decode_tok_s)},
    };
    HR_TRY(hr_json_set_fields(out, f, sizeof f / sizeof *f));
    return st.ssd_on ? ssd_stats(&st, out) : NULL;
}

static const char *model_name(void *ctx) { return ((hr_engine_server *)ctx)->name; }

static hr_err *tokenize(void *ctx, const char *text, int add_special, int32_t **ids, int *n) {
    return hr_tokenizer_encode(((hr_engine_server *)ctx)->tok, text, strlen(text), add_special, ids,
                               n);
}

/* Appends piece (n bytes) to *text (length *len, NUL-terminated). */
static hr_err *append_piece(char **text, size_t *len, const char *piece, size_t n) {
    char *p = realloc(*text, *len + n + 1);
    if (!p) return hr_err_oom();
    memcpy(p + *len, piece, n);
    *len += n;
    p[*len] = 0;
    *text = p;
    return NULL;
}

/* Through the incremental detokenizer, which carries lengths: a byte token 0 stays a NUL
 * in the text instead of ending it. */
static hr_err *detokenize(void *ctx, const int32_t *ids, int n, char **text, size_t *len) {
    *text = NULL;
    *len = 0;
    hr_detok_stream *d;
    HR_TRY(hr_detok_stream_create(((hr_engine_server *)ctx)->tok, 0, &d));
    const char *piece;
    size_t k;
    hr_err *e = append_piece(text, len, "", 0);
    for (int i = 0; i < n && !e; i++)
        if (!(e = hr_detok_stream_push(d, ids[i], &piece, &k)))
            e = append_piece(text, len, piece, k);
    if (!e && !(e = hr_detok_stream_flush(d, &piece, &k))) e = append_piece(text, len, piece, k);
    hr_detok_stream_destroy(d);
    if (e) free(*text), *text = NULL;
    return e;
}

hr_err *hr_engine_server_create(hr_engine *e, const char *name, hr_engine_server **out) {
    *out = NULL;
    if (!hr_engine_prompt(e)) return hr_errf("serving needs the model's tokenizer.json");
    hr_engine_server *s = calloc(1, sizeof *s);
    if (!s || !(s->name = strdup(name))) return free(s), hr_err_oom();
    s->engine = e;
    s->tok = hr_engine_tokenizer(e);
    s->prompt = hr_engine_prompt(e);
    s->n_pieces = hr_engine_token_ids(e);
    s->pieces = calloc((size_t)s->n_pieces, sizeof *s->pieces);
    if (!s->pieces) return free(s->name), free(s), hr_err_oom();
    pthread_mutex_init(&s->mu, NULL);
    s->backend = (hr_server_backend){
        .ctx = s,
        .model_name = model_name,
        .submit = submit,
        .count = count,
        .cancel = cancel,
        .stats = stats,
        .tokenize = tokenize,
        .detokenize = detokenize,
        .limits = {.max_tokens_limit = hr_engine_max_context(e),
                   .vocab_size = hr_engine_token_ids(e)},
    };
    /* the output markup follows the template in use (the --chat-template file's when given) */
    hr_output_format_detect(s->prompt->source, &s->backend.tool_format, &s->backend.reasoning);
    *out = s;
    return NULL;
}

void hr_engine_server_destroy(hr_engine_server *s) {
    if (!s) return;
    reap(s);
    for (live_req *l = s->live, *n; l; l = n) { /* unfinished: the engine is gone by now */
        n = l->next;
        hr_request_release(l->handle);
        free(l);
    }
    pthread_mutex_destroy(&s->mu);
    for (int i = 0; i < s->n_pieces; i++)
        free(s->pieces[i].text);
    free(s->pieces);
    free(s->name);
    free(s);
}

const hr_server_backend *hr_engine_server_backend(hr_engine_server *s) { return &s->backend; }
