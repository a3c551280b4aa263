/* The scheduler step (engine thread only). Each step: drop cancelled sequences, make sure
 * every running sequence has blocks for its pending tokens (preempting the youngest when
 * the pool is short), admit waiting requests in FIFO order while blocks and max_seqs allow,
 * then run ONE forward over rows: first every decode row (one token each), then prefill
 * chunks in admission order, until max_batch_tokens is spent. Rows that reach the end of
 * their pending tokens get a token (the device's argmax when every row is greedy, else the
 * backend's sample op with the host deciding the rows it leaves, else processors and the
 * sampler on logits read back) and emit. After the step, models whose layers are all sliding
 * give back blocks that left the window. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "engine/engine.h"

static int blocks_for(const hr_engine *e, int positions) {
    int bs = e->pool.store.block_size;
    return (positions + bs - 1) / bs;
}

static void wait_push_front(hr_engine *e, hr_request *r) {
    r->next = e->wait_head;
    e->wait_head = r;
    if (!e->wait_tail) e->wait_tail = r;
    e->n_waiting++;
}

static hr_request *wait_pop(hr_engine *e) {
    hr_request *r = e->wait_head;
    e->wait_head = r->next;
    if (!e->wait_head) e->wait_tail = NULL;
    r->next = NULL;
    e->n_waiting--;
    return r;
}

/* Text still held by the detokenizer and the stop matcher, as one heap string. */
static char *tail_text(hr_request *r, size_t *len) {
    *len = 0;
    if (!r->detok || r->text_stopped) return NULL;
    const char *a = "", *b;
    size_t na = 0, nb;
    hr_err *err = hr_detok_stream_flush(r->detok, &b, &nb);
    if (err) {
        hr_err_free(err);
        nb = 0;
    }
    char *out = NULL;
    int hit = hr_stop_push(&r->stop, b, nb, &a, &na);
    if (hit) r->text_stopped = hit; /* a stop string completed */
    out = malloc(na + 1);
    if (!out) return NULL;
    memcpy(out, a, na);
    if (!r->text_stopped) {
        hr_stop_flush(&r->stop, &b, &nb);
        char *o2 = realloc(out, na + nb + 1);
        if (!o2) {
            free(out);
            return NULL;
        }
        out = o2;
        memcpy(out + na, b, nb);
        na += nb;
    }
    out[na] = 0;
    *len = na;
    return out;
}

/* Gives back r's recurrent-state slot, if it holds one (hybrid models). */
static void release_state(hr_engine *e, hr_request *r) {
    if (r->state_slot < 0) return;
    hr_kv_state_release(&e->pool, r->state_slot);
    r->state_slot = -1;
}

/* Ends r: releases its blocks and emits DONE. The caller removes r from the running array
 * (remove_ended) or the waiting list, then drops the engine's reference. */
static void finish(hr_engine *e, hr_request *r, hr_finish why, const char *error) {
    size_t len = 0;
    char *tail = why == HR_FINISH_LENGTH || why == HR_FINISH_STOP ? tail_text(r, &len) : NULL;
    hr_kv_seq_release(&e->pool, &r->kv);
    release_state(e, r);
    r->ended = 1;
    hr_event ev = {.kind = HR_EVENT_DONE,
                   .text = tail ? tail : "",
                   .text_len = len,
                   .finish = why,
                   .error = error,
                   .n_prompt = r->n_prompt,
                   .n_generated = r->n_tokens - r->n_prompt,
                   .n_cached = r->n_cached,
                   .stop_string = r->text_stopped ? r->stop.stops[r->text_stopped - 1] : NULL};
    pthread_mutex_lock(&e->mu);
    e->stats.requests_done++;
    pthread_mutex_unlock(&e->mu);
    hr_request_emit(r, &ev);
    free(tail);
}

/* Drops ended requests from the running array, with the engine's references to them. */
static void remove_ended(hr_engine *e) {
    int n = 0;
    for (int i = 0; i < e->n_running; i++) {
        hr_request *r = e->running[i];
        if (r->ended)
            hr_request_unref(r);
        else
            e->running[n++] = r;
    }
    e->n_running = n;
}

static void drop_cancelled(hr_engine *e) {
    for (int i = 0; i < e->n_running; i++)
        if (atomic_load(&e->running[i]->cancel))
            finish(e, e->running[i], HR_FINISH_CANCELLED, NULL);
    remove_ended(e);
    for (hr_request **p = &e->wait_head; *p;) {
        hr_request *r = *p;
        if (!atomic_load(&r->cancel)) {
            p = &r->next;
            continue;
        }
        *p = r->next;
        e->n_waiting--;
        finish(e, r, HR_FINISH_CANCELLED, NULL);
        hr_request_unref(r);
    }
    e->wait_tail = NULL;
    for (hr_request *r = e->wait_head; r; r = r->next)
        e->wait_tail = r;
}

/* Sends the youngest running sequence back to the head of the queue; its KV is
 * recomputed (or found in the prefix cache) when it is admitted again. A hybrid model's
 * recurrent state cannot be rewound: the slot goes back too, and the recompute from
 * position 0 starts the next slot it gets from a zero state. */
static void preempt_youngest(hr_engine *e) {
    hr_request *r = e->running[--e->n_running];
    hr_kv_seq_release(&e->pool, &r->kv);
    release_state(e, r);
    r->n_computed = 0;
    wait_push_front(e, r);
    pthread_mutex_lock(&e->mu);
    e->stats.preempted++;
    pthread_mutex_unlock(&e->mu);
}

/* Positions r's table must cover before the next step: all its pending tokens, or for a
 * model whose layers all slide (blocks behind the window are released after each step),
 * only what one step can compute, so a sequence holds about window + max_batch_tokens. */
static int reserve_target(const hr_engine *e, const hr_request *r) {
    if (!e->kv_window || e->opt.no_preempt) return r->n_tokens;
    int step_end = r->n_computed + e->opt.max_batch_tokens;
    return step_end < r->n_tokens ? step_end : r->n_tokens;
}

/* Every running sequence gets blocks for its pending tokens (reserve_target), oldest first. */
static void ensure_blocks(hr_engine *e) {
    for (int i = 0; i < e->n_running; i++) {
        hr_request *r = e->running[i];
        int need = blocks_for(e, reserve_target(e, r)) - r->kv.n_blocks;
        while (need > hr_kv_pool_available(&e->pool) && i < e->n_running)
            preempt_youngest(e);
        if (i >= e->n_running) break; /* r itself was the youngest */
        hr_err *err = hr_kv_seq_reserve(&e->pool, &r->kv, reserve_target(e, r));
        if (err) hr_err_free(err); /* cannot happen: availability was checked */
    }
}

/* Hybrid models with the prefix cache: does r's state get snapshotted after pos positions?
 * Every snapshot_interval-th block boundary, and the prompt's last full block (the most a
 * later request with the same prompt can reuse). */
static int snapshot_point(const hr_engine *e, const hr_request *r, int pos) {
    int bs = e->pool.store.block_size, last = (r->n_prompt - 1) / bs * bs;
    return pos > 0 && pos % bs == 0 && (pos % (e->opt.snapshot_interval * bs) == 0 || pos == last);
}

/* The first snapshot point after pos: a prefill row ends there, so its state can be saved. */
static int next_snapshot_point(const hr_engine *e, const hr_request *r, int pos) {
    int bs = e->pool.store.block_size, every = e->opt.snapshot_interval * bs;
    int next = (pos / every + 1) * every, last = (r->n_prompt - 1) / bs * bs;
    return last > pos && last < next ? last : next;
}

static int snapshots_on(const hr_engine *e) {
    return e->pool.cache_enabled && e->pool.store.n_snapshots > 0;
}

/* Admits waiting requests (FIFO) while a slot and enough blocks are free. A request takes
 * its cached prefix, then blocks for its whole prompt (and, without preemption, for all of
 * max_tokens); one block per running sequence is kept back for their decode growth. For a
 * hybrid model it also takes a recurrent-state slot and loads the state snapshot at the end
 * of its cached prefix into it (without one, its first row starts at position 0, which
 * resets the slot). */
static void admit(hr_engine *e) {
    int bs = e->pool.store.block_size, stateful = e->pool.store.n_state_layers > 0;
    while (e->n_running < e->opt.max_seqs && e->wait_head &&
           (!stateful || e->pool.n_free_slots > 0)) {
        hr_request *r = e->wait_head;
        if (r->kv.n_blocks == 0) {
            uint64_t t0 = hr_now_ns();
            int got =
                hr_kv_seq_reuse(&e->pool, &r->kv, r->tokens, r->n_tokens, (r->n_tokens - 1) / bs);
            if (e->ssd) hr_ssd_tier_lookup_done(e->ssd, (double)(hr_now_ns() - t0) / 1e6);
            r->n_computed = got * bs;
            if (e->kv_window) /* cached blocks behind the window are not needed */
                hr_kv_seq_release_before(&e->pool, &r->kv, r->n_computed - e->kv_window + 1);
        }
        int target = e->opt.no_preempt ? r->n_prompt + r->max_tokens : reserve_target(e, r);
        int need = blocks_for(e, target) - r->kv.n_blocks;
        if (need > hr_kv_pool_available(&e->pool) - e->n_running) {
            hr_kv_seq_release(&e->pool, &r->kv);
            r->n_computed = 0;
            break;
        }
        hr_err *err = hr_kv_seq_reserve(&e->pool, &r->kv, target);
        if (err) { /* out of memory growing the table */
            wait_pop(e);
            finish(e, r, HR_FINISH_ERROR, hr_err_msg(err));
            hr_err_free(err);
            hr_request_unref(r);
            continue;
        }
        wait_pop(e);
        if (stateful) {
            err = hr_kv_state_acquire(&e->pool, &r->state_slot);
            if (err) hr_err_free(err); /* cannot happen: a free slot was checked */
            if (r->n_computed > 0)
                hr_kv_state_restore(&e->pool, &r->kv, r->n_computed / bs, r->state_slot);
        }
        if (!r->admitted) {
            r->admitted = 1;
            r->n_cached = r->n_computed;
            pthread_mutex_lock(&e->mu);
            e->stats.cached_tokens += r->n_cached;
            pthread_mutex_unlock(&e->mu);
        }
        e->running[e->n_running++] = r;
    }
}

/* Decode rows first, then prefill chunks, within max_batch_tokens. When the budget cannot
 * hold every decode row, the decode pass starts one sequence later each step, so every
 * sequence keeps moving. A hybrid model's prefill chunk ends at the next snapshot point.
 * Returns the row count. */
static int plan_rows(hr_engine *e, int *n_tokens) {
    int budget = e->opt.max_batch_tokens, n = 0, N = e->n_running;
    int start = N > budget ? (int)(e->decode_turn++ % (unsigned)N) : 0;
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < N && budget > 0; k++) {
            hr_request *r = e->running[pass == 0 ? (start + k) % N : k];
            int rem = r->n_tokens - r->n_computed;
            if ((rem == 1) != (pass == 0)) continue;
            int len = rem < budget ? rem : budget;
            if (pass == 1 && snapshots_on(e)) {
                int cut = next_snapshot_point(e, r, r->n_computed) - r->n_computed;
                if (len > cut) len = cut;
            }
            budget -= len;
            e->rows[n] = (hr_row){.tokens = r->tokens + r->n_computed,
                                  .n_tokens = len,
                                  .pos0 = r->n_computed,
                                  .block_table = r->kv.blocks,
                                  .logits = len == rem ? HR_LOGITS_LAST : HR_LOGITS_NONE,
                                  .state_slot = r->state_slot};
            e->row_req[n++] = r;
        }
    *n_tokens = e->opt.max_batch_tokens - budget;
    return n;
}

static int is_stop_id(const hr_request *r, int32_t tok) {
    for (int i = 0; i < r->n_stop_ids; i++)
        if (r->stop_ids[i] == tok) return 1;
    return 0;
}

/* The next token of a reasoning close being forced (no draw). */
static int32_t forced_token(hr_request *r) {
    int32_t tok = r->think.close[r->think.pos++];
    if (r->think.pos == r->think.n_close) r->think.forcing = 0;
    return tok;
}

/* Follows <think> blocks; once the budget is spent inside one, starts forcing its close. */
static void track_reasoning(hr_request *r, int32_t tok) {
    if (!r->think.budget) return;
    if (tok == r->think.open_id)
        r->think.in = 1;
    else if (tok == r->think.close_id)
        r->think.in = 0;
    else if (r->think.in && !r->think.forcing && ++r->think.used >= r->think.budget) {
        r->think.forcing = 1;
        r->think.pos = 0;
    }
}

/* The top logprobs r gets (at most the vocabulary). */
static int top_n(const hr_engine *e, const hr_request *r) {
    int V = hr_model_cfg(e->model)->vocab;
    return r->top_logprobs < V ? r->top_logprobs : V;
}

/* A row's chosen token and, when the request asks, its logprobs. */
typedef struct {
    int32_t tok;
    int has_lp, n_top;
    float logprob;
    const int32_t *top_ids;
    const float *top_lp;
} pick;

/* The host's pick from one row's logits (host memory, processed in place unless processed is
 * set): the processors, the grammar's mask, the forced token or the sampler (with the
 * pre-drawn u when u is non-NULL, the generator advanced as hr_sampler_sample would have),
 * the logprobs. tok is -1 when the grammar allows no token. */
static pick host_pick(hr_engine *e, hr_request *r, float *logits, int processed, const double *u) {
    int V = hr_model_cfg(e->model)->vocab, drew = 0;
    if (!processed && hr_proc_active(&r->proc))
        hr_proc_apply(&r->proc, logits, V, r->tokens, r->n_prompt, r->tokens + r->n_prompt,
                      r->n_tokens - r->n_prompt, e->counts);
    pick p = {0};
    if (!r->think.forcing && hr_constraint_applies(&r->con)) {
        hr_constraint_apply(&r->con, logits, V);
        if (r->con.allowed <= 0) return (pick){.tok = -1};
    }
    if (r->think.forcing) {
        p.tok = forced_token(r);
    } else if (!u) {
        p.tok = hr_sampler_sample(&r->sampler, logits);
    } else {
        p.tok = hr_sampler_sample_u(&r->sampler, logits, *u, &drew);
        if (drew) hr_sampler_uniform(&r->sampler); /* the u it used */
    }
    if (r->logprobs || r->top_logprobs) {
        p.has_lp = 1;
        p.logprob = hr_logprobs(logits, V, p.tok, r->top_logprobs, e->top_ids, e->top_lp);
        p.n_top = top_n(e, r);
        p.top_ids = e->top_ids;
        p.top_lp = e->top_lp;
    }
    return p;
}

/* Emits r's token p, then its text; returns how r finished (HR_FINISH_NONE: it goes on). */
static hr_finish emit_token(hr_request *r, const pick *p, const char **error) {
    int32_t tok = p->tok;
    track_reasoning(r, tok);
    hr_event ev = {.kind = HR_EVENT_TOKEN,
                   .token = tok,
                   .text = "",
                   .n_prompt = r->n_prompt,
                   .n_generated = r->n_tokens + 1 - r->n_prompt,
                   .n_cached = r->n_cached};
    if (p->has_lp) {
        ev.logprob = p->logprob;
        ev.n_top = p->n_top;
        ev.top_ids = p->top_ids;
        ev.top_logprobs = p->top_lp;
    }
    r->tokens[r->n_tokens++] = tok; /* tokens has room for n_prompt + max_tokens */
    hr_finish fin = is_stop_id(r, tok)                           ? HR_FINISH_STOP
                    : r->n_tokens - r->n_prompt >= r->max_tokens ? HR_FINISH_LENGTH
                                                                 : HR_FINISH_NONE;
    if (r->detok && fin != HR_FINISH_STOP) {
        const char *piece;
        size_t n;
        hr_err *err = hr_detok_stream_push(r->detok, tok, &piece, &n);
        if (err) {
            hr_err_free(err);
            *error = "detokenizing failed";
            return HR_FINISH_ERROR;
        }
        int hit = hr_stop_push(&r->stop, piece, n, &ev.text, &ev.text_len);
        if (hit) {
            r->text_stopped = hit;
            fin = HR_FINISH_STOP;
        }
    }
    hr_request_emit(r, &ev);
    return fin;
}

/* What the sample op does with r's row: the host keeps rows with a filter the op lacks and
 * rows whose token is forced (a constrained row goes to the op with its grammar's mask). */
static int sample_mode(const hr_request *r) {
    if (r->think.forcing || hr_sampler_host_only(&r->sampler)) return HR_SAMPLE_HOST;
    return r->sampler.p.temperature == 0 ? HR_SAMPLE_GREEDY : HR_SAMPLE_DRAW;
}

/* Grows the step's edit list to hold n. */
static hr_err *reserve_edits(hr_engine *e, size_t n) {
    if (n <= e->cap_edits) return NULL;
    hr_logit_edit *p = realloc(e->edits, sizeof *p * n);
    if (!p) return hr_err_oom();
    e->edits = p;
    e->cap_edits = n;
    return NULL;
}

/* The sample op's parameters for the step's logit rows, in e->sample: each row's mode,
 * filters, processor edits (a row whose logit_bias repeats an id goes to the host), token
 * mask (constrained rows: their masks are computed already) and, for draws, the uniform its
 * generator yields next (drawn for real once the row has used it). */
static hr_err *sample_params(hr_engine *e, int n_rows) {
    int V = hr_model_cfg(e->model)->vocab, words = (V + 31) / 32, n_masks = 0;
    size_t need = 0;
    for (int k = 0; k < n_rows; k++)
        need += (size_t)e->row_req[k]->proc.n_bias + (size_t)e->row_req[k]->n_tokens;
    HR_TRY(reserve_edits(e, need));
    int li = 0, n_edits = 0;
    for (int k = 0; k < n_rows; k++) {
        if (e->rows[k].logits != HR_LOGITS_LAST) continue;
        const hr_request *r = e->row_req[k];
        const hr_sampler_params *sp = &r->sampler.p;
        hr_sample_row *sr = &e->sample_rows[li++];
        *sr = (hr_sample_row){.mode = sample_mode(r),
                              .temperature = sp->temperature,
                              .top_p = sp->top_p,
                              .min_p = sp->min_p,
                              .top_k = sp->top_k,
                              .logprob = r->logprobs,
                              .n_top = top_n(e, r),
                              .edit_start = n_edits};
        if (sr->mode != HR_SAMPLE_HOST && hr_proc_active(&r->proc)) {
            int n = hr_proc_edits(&r->proc, r->tokens, r->n_prompt, r->tokens + r->n_prompt,
                                  r->n_tokens - r->n_prompt, e->counts, e->edits + n_edits);
            if (n < 0)
                sr->mode = HR_SAMPLE_HOST;
            else
                sr->n_edits = n, n_edits += n;
        }
        if (sr->mode != HR_SAMPLE_HOST && hr_constraint_applies(&r->con)) {
            hr_constraint_row_mask(&r->con, e->step_masks + (size_t)n_masks * (size_t)words, V);
            sr->mask = ++n_masks;
        }
        if (sr->mode == HR_SAMPLE_DRAW) sr->u = hr_sampler_peek(&r->sampler);
    }
    e->sample =
        (hr_sample_step){li, n_edits, e->sample_rows, e->edits, n_masks, words, e->step_masks};
    return NULL;
}

/* Logit row li's token after a sample step: the op's, or the host's from the row read back
 * (into e->logits) where the op left it undecided. */
static hr_err *sampled_pick(hr_engine *e, hr_request *r, int li, pick *p) {
    const hr_sample_row *sr = &e->sample_rows[li];
    const hr_sample_out *o = &e->sampled[li];
    if (o->id >= 0) {
        if (sr->mode == HR_SAMPLE_DRAW) hr_sampler_uniform(&r->sampler); /* the u it used */
        *p = (pick){.tok = o->id,
                    .has_lp = sr->logprob || sr->n_top,
                    .n_top = sr->n_top,
                    .logprob = o->logprob,
                    .top_ids = o->top_ids,
                    .top_lp = o->top_lp};
        return NULL;
    }
    if (r->think.forcing && !r->logprobs && !r->top_logprobs) {
        *p = (pick){.tok = forced_token(r)};
        return NULL;
    }
    float *row = e->logits + (size_t)li * hr_model_cfg(e->model)->vocab;
    HR_TRY(hr_model_logits_row(e->model, li, row));
    *p = host_pick(e, r, row, sr->mode != HR_SAMPLE_HOST,
                   sr->mode == HR_SAMPLE_DRAW ? &sr->u : NULL);
    return NULL;
}

/* Logit row li's token, by the step's head. */
static hr_err *row_pick(hr_engine *e, hr_request *r, hr_step_head head, int li, pick *p) {
    switch (head) {
    case HR_HEAD_ARGMAX:
        *p = (pick){.tok = r->think.forcing ? forced_token(r) : e->greedy_ids[li]};
        return NULL;
    case HR_HEAD_SAMPLE: return sampled_pick(e, r, li, p);
    default:
        *p = host_pick(e, r, e->logits + (size_t)li * hr_model_cfg(e->model)->vocab, 0, NULL);
        return NULL;
    }
}

static void fail_rows(hr_engine *e, int n_rows, hr_err *err) {
    for (int k = 0; k < n_rows; k++)
        if (!e->row_req[k]->ended) finish(e, e->row_req[k], HR_FINISH_ERROR, hr_err_msg(err));
    hr_err_free(err);
    remove_ended(e);
}

/* The step's tokens of prompts: prefill chunks and preempted sequences' recomputes (every row
 * has at least one token, so 0 means a decode-only step). */
static int prefill_tokens(const hr_engine *e, int n_rows) {
    int n = 0;
    for (int k = 0; k < n_rows; k++)
        if (e->row_req[k]->n_computed < e->row_req[k]->n_prompt) n += e->rows[k].n_tokens;
    return n;
}

/* decode_tok_s counts only decode-only steps: a step that also prefills takes longer for
 * the same generated tokens. */
static void update_stats(hr_engine *e, int decode, int n_tokens, int n_sampled, uint64_t ns) {
    if (decode) {
        e->decode_s += (double)ns * 1e-9;
        e->decode_tokens += n_sampled;
    }
    pthread_mutex_lock(&e->mu);
    hr_engine_stats *s = &e->stats;
    s->steps++;
    s->step_tokens += n_tokens;
    s->generated_tokens += n_sampled;
    s->busy_s += (double)ns * 1e-9;
    s->last_step_ms = (double)ns * 1e-6;
    s->decode_tok_s = e->decode_s > 0 ? (double)e->decode_tokens / e->decode_s : 0;
    pthread_mutex_unlock(&e->mu);
}

/* Whether every row that samples takes the argmax of its raw logits (greedy, no processors,
 * no logprobs): then only the ids leave the device, not rows x vocab floats (ids without a
 * token are -inf in every row already: hr_model_set_token_ids). */
static int greedy_only(const hr_engine *e, int n_rows) {
    for (int k = 0; k < n_rows; k++) {
        const hr_request *r = e->row_req[k];
        if (e->rows[k].logits == HR_LOGITS_LAST &&
            (r->sampler.p.temperature != 0 || hr_proc_active(&r->proc) || r->logprobs ||
             r->top_logprobs || hr_constraint_applies(&r->con)))
            return 0;
    }
    return 1;
}

/* The step's head: the argmax when every row is greedy, else the sample op when the backend
 * has it, else the logits to the host. */
static hr_step_head step_head(const hr_engine *e, int n_rows) {
    if (greedy_only(e, n_rows)) return HR_HEAD_ARGMAX;
    return hr_model_can_sample(e->model) ? HR_HEAD_SAMPLE : HR_HEAD_LOGITS;
}

/* The masks of the step's constrained rows: computed now when the sample op takes them (it
 * runs inside the forward call, and a device backend uploads them with the step's metadata),
 * else started on the mask worker to overlap the forward pass (hr_masker_wait after it). */
static void start_masks(hr_engine *e, int n_rows, hr_step_head head) {
    int n = 0;
    for (int k = 0; k < n_rows; k++) {
        hr_request *r = e->row_req[k];
        if (e->rows[k].logits == HR_LOGITS_LAST && !r->think.forcing &&
            hr_constraint_applies(&r->con))
            e->mask_rows[n++] = &r->con;
    }
    if (head == HR_HEAD_SAMPLE)
        hr_masker_compute(&e->masker, e->mask_rows, n);
    else
        hr_masker_run(&e->masker, e->mask_rows, n);
}

/* The token after p for r: the grammar must take it; returns how that ends r. */
static hr_finish constrain_pick(hr_request *r, const pick *p, const char **error) {
    if (p->tok < 0) {
        *error = "the grammar allows no token here";
        return HR_FINISH_ERROR;
    }
    if (!hr_constraint_accept(&r->con, p->tok)) {
        *error = "the grammar rejected the generated token";
        return HR_FINISH_ERROR;
    }
    return HR_FINISH_NONE;
}

static hr_err *forward(hr_engine *e, int n_rows, hr_step_head head) {
    hr_kv_store *kv = &e->pool.store;
    switch (head) {
    case HR_HEAD_ARGMAX:
        return hr_model_forward_greedy(e->model, kv, e->rows, n_rows, e->greedy_ids);
    case HR_HEAD_SAMPLE:
        HR_TRY(sample_params(e, n_rows));
        return hr_model_forward_sample(e->model, kv, e->rows, n_rows, &e->sample, e->sampled);
    default: return hr_model_forward(e->model, kv, e->rows, n_rows, e->logits);
    }
}

void hr_sched_step(hr_engine *e, int *idle) {
    drop_cancelled(e);
    ensure_blocks(e);
    admit(e);
    int n_tokens, n_rows = plan_rows(e, &n_tokens);
    *idle = n_rows == 0;
    if (n_rows == 0) return;
    uint64_t t0 = hr_now_ns();
    hr_step_head head = step_head(e, n_rows);
    start_masks(e, n_rows, head);
    hr_err *err = forward(e, n_rows, head);
    hr_masker_wait(&e->masker);
    if (err) {
        fail_rows(e, n_rows, err);
        return;
    }
    int li = 0, n_sampled = 0;
    for (int k = 0; k < n_rows; k++)
        n_sampled += e->rows[k].logits == HR_LOGITS_LAST;
    /* before any DONE goes out, so a caller that saw DONE sees its tokens counted */
    uint64_t ns = hr_now_ns() - t0;
    int prefilled = prefill_tokens(e, n_rows);
    update_stats(e, prefilled == 0, n_tokens, n_sampled, ns);
    if (e->ssd) hr_ssd_tier_note_prefill(e->ssd, prefilled, (double)ns / 1e6);
    for (int k = 0; k < n_rows; k++) {
        hr_request *r = e->row_req[k];
        r->n_computed += e->rows[k].n_tokens;
        hr_kv_seq_publish(&e->pool, &r->kv, r->tokens, r->n_computed);
        if (snapshots_on(e) && snapshot_point(e, r, r->n_computed))
            hr_kv_seq_snapshot(&e->pool, &r->kv, r->state_slot, r->n_computed);
        if (e->kv_window) /* the next token reads from n_computed - window + 1 on */
            hr_kv_seq_release_before(&e->pool, &r->kv, r->n_computed - e->kv_window + 1);
        if (e->rows[k].logits != HR_LOGITS_LAST) continue;
        const char *error = NULL;
        pick p;
        hr_finish fin = HR_FINISH_ERROR;
        err = row_pick(e, r, head, li++, &p);
        if (err) {
            error = "reading the logits back failed";
            hr_err_free(err);
        } else if ((fin = constrain_pick(r, &p, &error)) == HR_FINISH_NONE) {
            fin = emit_token(r, &p, &error);
        }
        if (fin != HR_FINISH_NONE) finish(e, r, fin, error);
    }
    remove_ended(e);
}

void hr_sched_cancel_all(hr_engine *e) {
    for (int i = 0; i < e->n_running; i++)
        finish(e, e->running[i], HR_FINISH_CANCELLED, NULL);
    remove_ended(e);
    while (e->wait_head) {
        hr_request *r = wait_pop(e);
        finish(e, r, HR_FINISH_CANCELLED, NULL);
        hr_request_unref(r);
    }
}
