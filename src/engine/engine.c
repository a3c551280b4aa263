/* The engine's public side: creation (model, tokenizer, chat template, KV pool sized from
 * a memory amount), the engine thread's loop, request submission with validation and
 * refusal, and each request's event channel (callback, or a mutex+condvar queue pulled by
 * hr_request_next). The scheduler step itself is in sched.c. */
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/file.h"
#include "base/json.h"
#include "base/thread.h"
#include "engine/engine.h"
#include "engine/fingerprint.h"

struct hr_ev_node {
    hr_event ev;
    hr_ev_node *next;
    int32_t top_ids[HR_MAX_TOP_LOGPROBS];
    float top_lp[HR_MAX_TOP_LOGPROBS];
    char text[]; /* the text, then the error message */
};

/* ---- request lifetime and channel ---- */

static void free_events(hr_ev_node *n) {
    while (n) {
        hr_ev_node *next = n->next;
        free(n);
        n = next;
    }
}

static void request_free(hr_request *r) {
    free_events(r->head);
    free(r->spare_done);
    free(r->cur);
    free(r->tokens);
    hr_sampler_free(&r->sampler);
    free((void *)r->proc.bias_ids);
    free((void *)r->proc.bias_values);
    free(r->stop_ids);
    free(r->think.close);
    hr_stop_free(&r->stop);
    hr_detok_stream_destroy(r->detok);
    hr_constraint_free(&r->con);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

void hr_request_unref(hr_request *r) {
    if (atomic_fetch_sub(&r->refs, 1) == 1) request_free(r);
}

static hr_ev_node *copy_event(const hr_event *ev) {
    size_t nt = ev->text_len, ne = ev->error ? strlen(ev->error) + 1 : 0;
    hr_ev_node *n = malloc(sizeof *n + nt + 1 + ne);
    if (!n) return NULL;
    n->ev = *ev;
    n->next = NULL;
    memcpy(n->text, ev->text, nt);
    n->text[nt] = 0;
    n->ev.text = n->text;
    if (ne) {
        memcpy(n->text + nt + 1, ev->error, ne);
        n->ev.error = n->text + nt + 1;
    }
    if (ev->n_top > 0) {
        memcpy(n->top_ids, ev->top_ids, sizeof(int32_t) * (size_t)ev->n_top);
        memcpy(n->top_lp, ev->top_logprobs, sizeof(float) * (size_t)ev->n_top);
    }
    n->ev.top_ids = n->top_ids;
    n->ev.top_logprobs = n->top_lp;
    return n;
}

void hr_request_emit(hr_request *r, const hr_event *ev) {
    int done = ev->kind == HR_EVENT_DONE;
    if (r->cb) {
        r->cb(r->cb_ctx, ev);
        pthread_mutex_lock(&r->mu);
        r->finished |= done;
        pthread_mutex_unlock(&r->mu);
        return;
    }
    pthread_mutex_lock(&r->mu);
    int lost = r->lost;
    pthread_mutex_unlock(&r->mu);
    hr_ev_node *n = lost && done ? NULL : copy_event(ev);
    if (!n && !done) { /* out of memory: the reader would miss a token, so end it */
        pthread_mutex_lock(&r->mu);
        r->lost = 1;
        pthread_mutex_unlock(&r->mu);
        atomic_store(&r->cancel, 1);
        return;
    }
    if (!n) { /* the spare: DONE without its text, as an error */
        n = r->spare_done;
        r->spare_done = NULL;
        n->ev = *ev;
        n->next = NULL;
        n->ev.text = n->text;
        n->ev.text_len = 0;
        n->ev.error = "out of memory while queueing the request's events";
        n->ev.finish = HR_FINISH_ERROR;
        n->ev.n_top = 0;
        n->ev.stop_string = NULL;
    }
    pthread_mutex_lock(&r->mu);
    if (n) {
        if (r->tail)
            r->tail->next = n;
        else
            r->head = n;
        r->tail = n;
    }
    r->finished |= done;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

int hr_request_next(hr_request *r, hr_event *ev) {
    pthread_mutex_lock(&r->mu);
    while (!r->head && !r->finished && !r->cb)
        pthread_cond_wait(&r->cv, &r->mu);
    int got = r->head != NULL;
    if (got) {
        free(r->cur);
        r->cur = r->head;
        r->head = r->head->next;
        if (!r->head) r->tail = NULL;
        *ev = r->cur->ev;
    }
    pthread_mutex_unlock(&r->mu);
    return got;
}

void hr_request_cancel(hr_request *r) {
    atomic_store(&r->cancel, 1);
    pthread_mutex_lock(&r->mu);
    int finished = r->finished;
    pthread_mutex_unlock(&r->mu);
    if (finished) return;
    pthread_mutex_lock(&r->eng->mu);
    pthread_cond_signal(&r->eng->cv);
    pthread_mutex_unlock(&r->eng->mu);
}

void hr_request_release(hr_request *r) {
    if (!r) return;
    hr_request_cancel(r);
    hr_request_unref(r);
}

/* ---- submission ---- */

/* The prompt's token ids from whichever source p gives. */
static hr_err *prompt_tokens(hr_engine *e, const hr_request_params *p, int32_t **ids, int *n) {
    int sources = (p->tokens != NULL) + (p->text != NULL) + (p->chat != NULL);
    if (sources != 1) return hr_errf("give exactly one of tokens, text or chat");
    if (p->tokens) {
        if (p->n_tokens <= 0) return hr_errf("the prompt is empty");
        *ids = malloc(sizeof(int32_t) * (size_t)p->n_tokens);
        if (!*ids) return hr_err_oom();
        memcpy(*ids, p->tokens, sizeof(int32_t) * (size_t)p->n_tokens);
        *n = p->n_tokens;
        return NULL;
    }
    if (!e->tok) return hr_errf("this model has no tokenizer.json: submit token ids");
    if (p->text) return hr_tokenizer_encode(e->tok, p->text, strlen(p->text), 1, ids, n);
    json_t *req = NULL;
    HR_TRY(hr_json_load_buf("chat request", p->chat, strlen(p->chat), &req));
    hr_err *err = hr_prompt_render(&e->prompt, req, NULL, ids, n, NULL);
    json_decref(req);
    return err;
}

static hr_sampler_params sampling(const hr_engine *e, const hr_request_params *p) {
    const hr_gen_defaults *g = &hr_model_cfg(e->model)->gen;
    hr_sampler_params s = {.temperature = p->temperature,
                           .top_p = p->top_p == 0 ? 1 : p->top_p,
                           .top_k = p->top_k,
                           .min_p = p->min_p,
                           .seed = p->seed,
                           .typical_p = p->typical_p,
                           .xtc_probability = p->xtc_probability,
                           .xtc_threshold = p->xtc_threshold == 0 ? 0.1f : p->xtc_threshold};
    if (p->temperature < 0) s.temperature = g->do_sample ? (float)g->temperature : 0;
    if (p->top_p < 0) s.top_p = g->do_sample ? (float)g->top_p : 1;
    if (p->typical_p < 0) s.typical_p = g->do_sample ? (float)g->typical_p : 1;
    if (p->top_k < 0) s.top_k = g->do_sample ? g->top_k : 0;
    return s;
}

static void *dup_array(const void *src, size_t bytes) {
    if (!bytes) return NULL;
    void *d = malloc(bytes);
    if (d) memcpy(d, src, bytes);
    return d;
}

/* The reasoning cap: needs <think> / </think> as single tokens (else the budget is not
 * enforceable and is ignored). */
static hr_err *think_params(hr_engine *e, hr_request *r, const hr_request_params *p) {
    if (p->reasoning_budget <= 0 || !e->tok) return NULL;
    int32_t open = hr_tokenizer_token_id(e->tok, "<think>"),
            close = hr_tokenizer_token_id(e->tok, "</think>");
    if (open < 0 || close < 0) return NULL;
    static const char text[] = "\n</think>\n\n";
    HR_TRY(
        hr_tokenizer_encode(e->tok, text, sizeof text - 1, 0, &r->think.close, &r->think.n_close));
    r->think.budget = p->reasoning_budget;
    r->think.in = p->in_reasoning;
    r->think.open_id = open;
    r->think.close_id = close;
    return NULL;
}

/* The grammar's view of the tokenizer, built once, at the first request that needs it. */
static hr_err *grammar_vocab(hr_engine *e, const hr_grammar_vocab **out) {
    hr_err *err = NULL;
    pthread_mutex_lock(&e->gvocab_mu);
    if (!e->gvocab) err = hr_grammar_vocab_create(e->tok, &e->gvocab);
    if (!err && !e->masker.started) err = hr_masker_start(&e->masker, e->opt.max_seqs);
    *out = e->gvocab;
    pthread_mutex_unlock(&e->gvocab_mu);
    return err;
}

/* The grammar the output follows, if p gives one. */
static hr_err *constraint_params(hr_engine *e, hr_request *r, const hr_request_params *p) {
    hr_constraint_params cp = {.grammar = p->grammar,
                               .trigger = -1,
                               .open_id = -1,
                               .close_id = -1,
                               .stop_ids = r->stop_ids,
                               .n_stop = r->n_stop_ids};
    if (!p->grammar) return hr_constraint_init(&r->con, &cp, NULL);
    if (!e->tok) return hr_errf("constrained decoding needs the model's tokenizer");
    if (p->grammar_lazy) {
        if (p->grammar_trigger < 0 || p->grammar_trigger >= e->n_tokenizable)
            return hr_errf("grammar trigger token %d out of range", p->grammar_trigger);
        cp.trigger = p->grammar_trigger;
    }
    if (p->grammar_after_think) {
        cp.after_think = 1;
        cp.in_reasoning = p->in_reasoning;
        cp.open_id = hr_tokenizer_token_id(e->tok, "<think>");
        cp.close_id = hr_tokenizer_token_id(e->tok, "</think>");
    }
    const hr_grammar_vocab *v;
    HR_TRY(grammar_vocab(e, &v));
    return hr_constraint_init(&r->con, &cp, v);
}

/* Fills r's parameters from p (everything but the prompt). */
static hr_err *request_params(hr_engine *e, hr_request *r, const hr_request_params *p) {
    const hr_model_config *c = hr_model_cfg(e->model);
    if (p->top_logprobs < 0 || p->top_logprobs > HR_MAX_TOP_LOGPROBS)
        return hr_errf("top_logprobs must be in [0, %d]", HR_MAX_TOP_LOGPROBS);
    r->logprobs = p->logprobs;
    r->top_logprobs = p->top_logprobs;
    r->cb = p->cb;
    r->cb_ctx = p->cb_ctx;
    hr_sampler_params sp = sampling(e, p);
    HR_TRY(hr_sampler_init(&r->sampler, &sp, c->vocab));
    hr_proc_params pp = {p->repetition_penalty < 0 ? (float)c->gen.repetition_penalty
                                                   : p->repetition_penalty,
                         p->presence_penalty,
                         p->frequency_penalty,
                         p->penalty_last_n,
                         p->bias_ids,
                         p->bias_values,
                         p->n_bias};
    HR_TRY(hr_proc_params_check(&pp, c->vocab));
    pp.bias_ids = dup_array(p->bias_ids, sizeof(int32_t) * (size_t)p->n_bias);
    pp.bias_values = dup_array(p->bias_values, sizeof(float) * (size_t)p->n_bias);
    r->proc = pp;
    if (p->n_bias > 0 && (!pp.bias_ids || !pp.bias_values)) return hr_err_oom();
    int n_eos = p->ignore_eos ? 0 : c->n_eos, n_stop = p->n_stop_ids > 0 ? p->n_stop_ids : 0;
    r->stop_ids = malloc(sizeof(int32_t) * (size_t)(n_eos + n_stop + 1));
    if (!r->stop_ids) return hr_err_oom();
    for (int i = 0; i < n_eos; i++)
        r->stop_ids[r->n_stop_ids++] = c->eos_ids[i];
    for (int i = 0; i < n_stop; i++)
        r->stop_ids[r->n_stop_ids++] = p->stop_ids[i];
    if (p->n_stop > 0 && !e->tok) return hr_errf("stop strings need the model's tokenizer");
    HR_TRY(hr_stop_init(&r->stop, p->stop, p->n_stop));
    if (e->tok) HR_TRY(hr_detok_stream_create(e->tok, 1, &r->detok));
    HR_TRY(constraint_params(e, r, p));
    return think_params(e, r, p);
}

static hr_err *request_create(hr_engine *e, const hr_request_params *p, hr_request **out) {
    hr_request *r = calloc(1, sizeof *r);
    if (!r) return hr_err_oom();
    r->eng = e;
    r->state_slot = -1;
    atomic_init(&r->refs, 2);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    int32_t *ids = NULL;
    r->spare_done = malloc(sizeof *r->spare_done + 1);
    hr_err *err = r->spare_done ? NULL : hr_err_oom();
    if (r->spare_done) r->spare_done->text[0] = 0;
    if (!err) err = prompt_tokens(e, p, &ids, &r->n_prompt);
    r->max_tokens = p->max_tokens > 0 ? p->max_tokens : 16;
    if (!err && r->n_prompt <= 0) err = hr_errf("the prompt is empty");
    if (!err && (long)r->n_prompt + r->max_tokens > e->max_context)
        err = hr_errf(
            "prompt (%d tokens) + max_tokens (%d) exceed the %d positions this engine can hold "
            "(KV cache %d blocks of %d, model context %d)",
            r->n_prompt, r->max_tokens, e->max_context, e->pool.store.n_blocks,
            e->pool.store.block_size, hr_model_cfg(e->model)->max_pos);
    for (int i = 0; !err && i < r->n_prompt; i++)
        if (ids[i] < 0 || ids[i] >= hr_model_cfg(e->model)->vocab)
            err = hr_errf("token id %d out of range", ids[i]);
    if (!err) err = request_params(e, r, p);
    if (!err) {
        r->cap = r->n_prompt + r->max_tokens;
        r->tokens = realloc(ids, sizeof(int32_t) * (size_t)r->cap);
        if (r->tokens)
            ids = NULL;
        else
            err = hr_err_oom();
        r->n_tokens = r->n_prompt;
    }
    free(ids);
    if (err) {
        request_free(r);
        return err;
    }
    *out = r;
    return NULL;
}

hr_err *hr_engine_submit(hr_engine *e, const hr_request_params *p, hr_request **out) {
    hr_request *r = NULL;
    hr_err *err = request_create(e, p, &r);
    pthread_mutex_lock(&e->mu);
    if (!err && e->stopping) err = hr_errc(HR_E_BUSY, "the engine is shutting down");
    if (!err && e->n_inbox + e->stats.queued >= e->opt.max_queue)
        err = hr_errc(HR_E_BUSY, "the engine is overloaded: %d requests are already waiting",
                      e->n_inbox + e->stats.queued);
    if (err) {
        e->stats.refused++;
        pthread_mutex_unlock(&e->mu);
        return err;
    }
    if (e->inbox_tail)
        e->inbox_tail->next = r;
    else
        e->inbox_head = r;
    e->inbox_tail = r;
    e->n_inbox++;
    e->stats.prompt_tokens += r->n_prompt;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    *out = r;
    return NULL;
}

/* ---- the engine thread ---- */

/* Moves submitted requests to the waiting list (under e->mu). */
static void take_inbox(hr_engine *e) {
    if (!e->inbox_head) return;
    if (e->wait_tail)
        e->wait_tail->next = e->inbox_head;
    else
        e->wait_head = e->inbox_head;
    e->wait_tail = e->inbox_tail;
    e->n_waiting += e->n_inbox;
    e->inbox_head = e->inbox_tail = NULL;
    e->n_inbox = 0;
}

/* The gauges /stats reads, as of now (under e->mu): refreshed after every step, so a
 * request that ended or was cancelled no longer shows once the engine goes idle. */
static void publish_stats(hr_engine *e) {
    e->stats.active = e->n_running;
    e->stats.queued = e->n_waiting;
    e->stats.kv_blocks_used = hr_kv_pool_used(&e->pool);
    e->stats.kv_blocks_cached = e->pool.n_lru;
    e->stats.state_snapshots = hr_kv_pool_snapshots(&e->pool);
}

/* Write-behind stops for new work: a request waits for at most one block's copy. */
static int has_work(void *ctx) {
    hr_engine *e = ctx;
    pthread_mutex_lock(&e->mu);
    int busy = e->stopping || e->inbox_head;
    pthread_mutex_unlock(&e->mu);
    return busy;
}

/* Once the engine has idled this long after work, the heap is trimmed. */
enum { TRIM_IDLE_MS = 1000 };

/* The heap's free pages back to the system: glibc keeps what a thread freed in that thread's
 * arena, so without this an idle server holds the peak of the request bodies its connection
 * threads parsed, long after they are gone. */
static void trim_heap(void) {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* Waits on e->cv (under e->mu) for at most ms; 0 when woken, else ETIMEDOUT. */
static int wait_ms(hr_engine *e, long ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
    return pthread_cond_timedwait(&e->cv, &e->mu, &until);
}

/* Idle (under e->mu): waits for work. With the SSD tier, idle cached blocks are written
 * behind first, and while the spill queue is too full to take them all it wakes every 20 ms
 * to offer the rest. After work, once TRIM_IDLE_MS pass with nothing new (the replies' memory
 * freed by then), the heap is trimmed. */
static void wait_idle(hr_engine *e) {
    int more = 0;
    if (e->ssd && !e->stopping && !e->inbox_head) {
        pthread_mutex_unlock(&e->mu);
        more = hr_ssd_tier_write_behind(e->ssd, &e->pool, has_work, e);
        pthread_mutex_lock(&e->mu);
    }
    while (!e->stopping && !e->inbox_head) {
        if (!more && !e->trim_due) {
            pthread_cond_wait(&e->cv, &e->mu);
            continue;
        }
        if (wait_ms(e, more ? 20 : TRIM_IDLE_MS) == 0) continue;
        pthread_mutex_unlock(&e->mu);
        if (more) {
            more = hr_ssd_tier_write_behind(e->ssd, &e->pool, has_work, e);
        } else {
            e->trim_due = 0;
            trim_heap();
        }
        pthread_mutex_lock(&e->mu);
    }
}

static void *engine_main(void *arg) {
    hr_engine *e = arg;
    int idle = 0;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        if (idle) wait_idle(e);
        take_inbox(e);
        publish_stats(e);
        int stopping = e->stopping;
        pthread_mutex_unlock(&e->mu);
        if (stopping) break;
        hr_sched_step(e, &idle);
        if (!idle) e->trim_due = 1;
        pthread_mutex_lock(&e->mu);
        publish_stats(e);
        pthread_mutex_unlock(&e->mu);
    }
    hr_sched_cancel_all(e);
    return NULL;
}

int hr_engine_max_context(const hr_engine *e) { return e->max_context; }

void hr_engine_stats_get(hr_engine *e, hr_engine_stats *st) {
    pthread_mutex_lock(&e->mu);
    *st = e->stats;
    st->queued += e->n_inbox;
    pthread_mutex_unlock(&e->mu);
    st->device = hr_model_backend(e->model)->vt->name;
    if (!e->ssd) return;
    hr_ssd_stats ss; /* live: the writer's counts move while the engine idles */
    hr_ssd_tier_stats(e->ssd, &ss);
    st->ssd_on = 1;
    st->ssd_entries = ss.entries;
    st->ssd_bytes = (long long)ss.bytes;
    st->ssd_hits = ss.hits;
    st->ssd_restores = ss.restores;
    st->ssd_spills = ss.spills;
    st->ssd_dropped = ss.dropped;
    st->ssd_last_restore_ms = ss.last_restore_ms;
    st->ssd_skipped = ss.skipped;
    st->ssd_writes_off = ss.writes_off;
}

/* ---- creation ---- */

/* On a GPU: gpu_memory (default 0.9) of the device memory the weights left free (the pool is
 * the GPU's to use, and blocks beyond the running sequences keep prefixes cached). On the
 * CPU: min(a quarter of the free RAM, max_seqs sequences of min(context, 8192) positions
 * plus the recurrent state (fixed bytes)). The weights are uploaded by now, so free memory
 * is what they left. */
static size_t default_kv_memory(const hr_engine *e, size_t per_token, size_t fixed) {
    const hr_model_config *c = hr_model_cfg(e->model);
    hr_backend *be = hr_model_backend(e->model);
    size_t avail = 0, total = 0, quarter = (size_t)1 << 30;
    hr_err *err = be->vt->mem_info(be, &avail, &total);
    if (err)
        hr_err_free(err);
    else
        quarter = avail / 4;
    if (!err && strcmp(be->vt->name, "cpu")) {
        double frac = e->opt.gpu_memory > 0 ? e->opt.gpu_memory : 0.9;
        return (size_t)((double)avail * frac);
    }
    size_t ctx = c->max_pos > 0 && c->max_pos < 8192 ? (size_t)c->max_pos : 8192;
    size_t want = per_token * ctx * (size_t)e->opt.max_seqs + fixed;
    return want < quarter ? want : quarter;
}

/* State snapshots for prefix reuse on a hybrid model: snapshot_memory's worth (default: as
 * many as there are state slots), at most one per block, none without the prefix cache. */
static int n_snapshots(const hr_engine *e, size_t each, int slots, int n_blocks) {
    if (each == 0 || e->opt.no_prefix_cache) return 0;
    size_t n = e->opt.snapshot_memory ? e->opt.snapshot_memory / each : (size_t)slots;
    return n < (size_t)n_blocks ? (int)n : n_blocks;
}

/* The pool's memory (kv_memory, else memory_budget - weights, else kv_positions' worth,
 * else the default) holds the
 * hybrid models' recurrent state (a slot per sequence that can run at once, and the
 * snapshots) and then as many KV blocks as fit; the sizes are backend.h's. */
static hr_err *size_pool(hr_engine *e) {
    const hr_model_config *c = hr_model_cfg(e->model);
    int bs = e->opt.block_size;
    hr_kv_store shape;
    hr_model_kv_shape(e->model, &shape);
    size_t per_token = hr_kv_token_bytes(&shape), each = hr_kv_state_bytes(&shape);
    int slots = each ? e->opt.max_seqs : 0, snaps = n_snapshots(e, each, slots, INT_MAX);
    size_t fixed = each * (size_t)(slots + snaps);
    size_t kv = e->opt.kv_memory, weights = hr_model_weight_bytes(e->model);
    if (!kv && e->opt.memory_budget) {
        if (e->opt.memory_budget <= weights)
            return hr_errf("memory budget %.1f MiB does not cover the weights (%.1f MiB)",
                           (double)e->opt.memory_budget / (1 << 20), (double)weights / (1 << 20));
        kv = e->opt.memory_budget - weights;
    }
    if (!kv && e->opt.kv_positions > 0)
        kv = fixed + per_token * (size_t)bs * (size_t)((e->opt.kv_positions + bs - 1) / bs);
    if (!kv) kv = default_kv_memory(e, per_token, fixed);
    size_t n_blocks = kv > fixed ? (kv - fixed) / (per_token * (size_t)bs) : 0;
    if (n_blocks < 1)
        return hr_errf("KV memory of %zu bytes holds no block (%zu bytes each, after %zu bytes of "
                       "recurrent state for %d sequences and %d snapshots)",
                       kv, per_token * (size_t)bs, fixed, slots, snaps);
    if (n_blocks > 1 << 24) n_blocks = 1 << 24;
    /* hybrid models: admission also waits for a free state slot */
    if (slots > (int)n_blocks) slots = (int)n_blocks;
    HR_TRY(hr_kv_pool_create_slots(&e->pool, e->model, (int)n_blocks, bs, slots > 0 ? slots : 1,
                                   n_snapshots(e, each, slots, (int)n_blocks)));
    long cap = (long)n_blocks * bs;
    e->max_context = c->max_pos > 0 && c->max_pos < cap ? c->max_pos : (int)cap;
    return NULL;
}

/* The widest window when every attention layer is sliding (mistral-style), else 0: then a
 * sequence's blocks before pos - window + 1 are never read again. Hybrid models keep full
 * attention layers and gemma mixes full and sliding layers, so they get 0. */
static int all_sliding_window(const hr_engine *e) {
    int w = 0;
    for (int s = 0; s < e->pool.store.n_layers; s++) {
        int ws = hr_model_kv_window(e->model, s);
        if (ws <= 0) return 0;
        if (ws > w) w = ws;
    }
    return e->pool.store.n_state_layers > 0 ? 0 : w;
}

/* The SSD tier under the prefix cache (--ssd-cache). */
static hr_err *open_ssd(hr_engine *e, uint64_t fingerprint) {
    const hr_engine_options *o = &e->opt;
    if (!o->ssd_cache) return NULL;
    if (o->no_prefix_cache)
        return hr_errf("--ssd-cache is a tier of the prefix cache: drop --no-prefix-cache");
    hr_ssd_options so = {.dir = o->ssd_cache,
                         .max_bytes = o->ssd_cache_max ? o->ssd_cache_max : (size_t)32 << 30,
                         .verify = o->ssd_cache_verify,
                         .always_restore = o->ssd_cache_always_restore,
                         .queue_bytes = o->ssd_queue,
                         .fingerprint = fingerprint,
                         .tok_hash = hr_tokenizer_hash(e->tok)};
    return hr_ssd_tier_open(&so, &e->pool, &e->ssd);
}

static hr_err *engine_start(hr_engine *e) {
    hr_engine_options *o = &e->opt;
    if (o->block_size <= 0) o->block_size = 16;
    if (o->max_batch_tokens <= 0) o->max_batch_tokens = 2048;
    if (o->max_seqs <= 0) o->max_seqs = 64;
    if (o->max_seqs > 4096) return hr_errf("max_seqs must be <= 4096");
    if (o->gpu_memory < 0 || o->gpu_memory > 1) return hr_errf("gpu_memory must be in (0, 1]");
    if (o->max_queue <= 0) o->max_queue = 1024;
    const hr_model_config *c = hr_model_cfg(e->model);
    e->n_tokenizable = c->vocab;
    if (e->tok && hr_tokenizer_vocab_size(e->tok) < c->vocab)
        e->n_tokenizable = hr_tokenizer_vocab_size(e->tok);
    HR_TRY(hr_model_set_token_ids(e->model, e->n_tokenizable)); /* never sampled, on any path */
    HR_TRY(size_pool(e));
    e->kv_window = all_sliding_window(e);
    if (e->kv_window && !o->no_preempt) {
        /* a sequence then holds at most its window plus one step's tokens (sched.c), so the
         * context is the model's, as long as the pool covers that much */
        long bs = o->block_size, peak = (e->kv_window + o->max_batch_tokens + bs - 1) / bs + 1;
        if (peak <= e->pool.store.n_blocks && c->max_pos > e->max_context)
            e->max_context = c->max_pos;
    }
    if (o->snapshot_interval <= 0)
        o->snapshot_interval = o->block_size < 256 ? 256 / o->block_size : 1;
    int most = (1 << 30) / o->block_size; /* interval * block_size must fit an int */
    if (o->snapshot_interval > most) o->snapshot_interval = most > 0 ? most : 1;
    if (e->opened.model)
        e->stats.compute = e->opened.numerics.compute_bf16 ? HR_COMPUTE_BF16 : HR_COMPUTE_F32;
    /* hybrid models reuse a prefix only up to a block with a state snapshot (kv_pool.h) */
    uint64_t fp = hr_engine_fingerprint(e->model, e->pool.store.dtype, e->stats.compute);
    if (!o->no_prefix_cache) hr_kv_pool_enable_cache(&e->pool, fp);
    HR_TRY(open_ssd(e, fp));
    size_t ms = (size_t)o->max_seqs;
    e->running = calloc(ms, sizeof *e->running);
    e->row_req = calloc(ms, sizeof *e->row_req);
    e->rows = calloc(ms, sizeof *e->rows);
    e->logits = malloc(sizeof(float) * ms * (size_t)c->vocab);
    e->greedy_ids = malloc(sizeof(int32_t) * ms);
    e->sample_rows = malloc(sizeof(hr_sample_row) * ms);
    e->sampled = malloc(sizeof(hr_sample_out) * ms);
    e->counts = calloc((size_t)c->vocab, sizeof(int));
    e->mask_rows = malloc(sizeof *e->mask_rows * ms);
    e->step_masks = malloc(sizeof(uint32_t) * ms * (size_t)((c->vocab + 31) / 32));
    if (!e->running || !e->row_req || !e->rows || !e->logits || !e->greedy_ids || !e->sample_rows ||
        !e->sampled || !e->counts || !e->mask_rows || !e->step_masks)
        return hr_err_oom();
    e->stats.kv_blocks_total = e->pool.store.n_blocks;
    e->stats.block_size = o->block_size;
    e->stats.kv_dtype = hr_kv_type_of(e->pool.store.dtype);
    HR_TRY(hr_thread_start(&e->thread, engine_main, e, "engine"));
    e->thread_started = 1;
    return NULL;
}

static hr_engine *engine_alloc(const hr_engine_options *opt) {
    hr_engine *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    if (opt) e->opt = *opt;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    pthread_mutex_init(&e->gvocab_mu, NULL);
    return e;
}

/* The prompt path over e->tok (dir: where the chat template is; NULL: the tokenizer's). */
static hr_err *open_prompt(hr_engine *e, const char *dir) {
    if (!e->tok) return NULL;
    HR_TRY(hr_prompt_open(dir, e->opt.chat_template, e->tok, &e->prompt));
    e->has_prompt = 1;
    return NULL;
}

static hr_err *create(hr_engine *e, const char *dir, hr_engine **out) {
    hr_err *err = open_prompt(e, dir);
    if (!err) err = engine_start(e);
    if (err) {
        hr_engine_destroy(e);
        return err;
    }
    *out = e;
    return NULL;
}

/* The options that say how to open a model: on a caller's model they cannot apply (its
 * backend already has its threads and numerics), so they are refused, not ignored. */
static hr_err *no_open_options(const hr_engine_options *o) {
    const char *set = !o                    ? NULL
                      : o->n_threads > 0    ? "n_threads"
                      : o->compute          ? "compute"
                      : o->kv_dtype         ? "kv_dtype"
                      : o->fast             ? "fast"
                      : o->device           ? "device"
                      : o->weights_in_place ? "weights_in_place"
                                            : NULL;
    if (!set) return NULL;
    return hr_errf("engine on a loaded model: %s is the model's backend's, chosen when the model "
                   "was opened (leave it 0 here, or use hr_engine_create)",
                   set);
}

hr_err *hr_engine_create_on(hr_model *m, hr_tokenizer *tok, const hr_engine_options *opt,
                            hr_engine **out) {
    HR_TRY(no_open_options(opt));
    hr_engine *e = engine_alloc(opt);
    if (!e) return hr_err_oom();
    e->model = m;
    e->tok = tok;
    return create(e, NULL, out);
}

hr_err *hr_engine_create(const char *dir, const hr_engine_options *opt, hr_engine **out) {
    hr_engine *e = engine_alloc(opt);
    if (!e) return hr_err_oom();
    hr_open_options oo = {.device = e->opt.device,
                          .n_threads = e->opt.n_threads,
                          .numerics = {e->opt.compute, e->opt.kv_dtype, e->opt.fast},
                          .weights_in_place = e->opt.weights_in_place};
    hr_err *err = hr_model_open(dir, &oo, &e->opened);
    if (err) {
        hr_engine_destroy(e);
        return err;
    }
    e->model = e->opened.model;
    e->tok = e->opened.tok;
    return create(e, dir, out);
}

const hr_model_config *hr_engine_model_cfg(const hr_engine *e) { return hr_model_cfg(e->model); }

const hr_tokenizer *hr_engine_tokenizer(const hr_engine *e) { return e->tok; }

const hr_prompt *hr_engine_prompt(const hr_engine *e) { return e->has_prompt ? &e->prompt : NULL; }

int hr_engine_token_ids(const hr_engine *e) { return e->n_tokenizable; }

void hr_engine_destroy(hr_engine *e) {
    if (!e) return;
    if (e->thread_started) {
        pthread_mutex_lock(&e->mu);
        e->stopping = 1;
        pthread_cond_signal(&e->cv);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->thread, NULL);
    }
    if (e->ssd) hr_ssd_tier_flush(e->ssd, &e->pool); /* the cache outlives the process */
    hr_ssd_tier_close(e->ssd, &e->pool);
    hr_kv_pool_destroy(&e->pool);
    free(e->running);
    free(e->row_req);
    free(e->rows);
    free(e->logits);
    free(e->greedy_ids);
    free(e->sample_rows);
    free(e->sampled);
    free(e->edits);
    free(e->counts);
    free(e->mask_rows);
    free(e->step_masks);
    hr_masker_stop(&e->masker);
    hr_grammar_vocab_free(e->gvocab);
    pthread_mutex_destroy(&e->gvocab_mu);
    if (e->has_prompt) hr_prompt_close(&e->prompt);
    hr_model_close(&e->opened);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e);
}
