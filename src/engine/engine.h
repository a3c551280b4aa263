/* Engine internals shared by engine.c (API, threads, request channels) and sched.c (the
 * scheduler step). The engine thread alone touches the model, the pool and every field
 * marked "engine thread"; fields under "mu" are shared with submitting threads. */
#ifndef HR_ENGINE_ENGINE_H
#define HR_ENGINE_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>

#include "engine/constrain.h"
#include "engine/kv_pool.h"
#include "engine/logits_proc.h"
#include "engine/open.h"
#include "engine/prompt.h"
#include "engine/sampler.h"
#include "engine/ssd_tier.h"
#include "engine/stop.h"
#include "hearth/hearth.h"

typedef struct hr_ev_node hr_ev_node;

struct hr_request {
    hr_engine *eng;
    atomic_int refs; /* the caller's handle + the engine's until DONE */
    atomic_int cancel;
    /* what was asked (immutable after submit) */
    int n_prompt, max_tokens, logprobs, top_logprobs;
    hr_sampler sampler;
    hr_proc_params proc; /* bias arrays owned */
    int32_t *stop_ids;
    int n_stop_ids;
    struct {                  /* the reasoning cap (budget 0: none) */
        int budget, used;     /* tokens allowed / generated inside <think> */
        int in, forcing, pos; /* inside a block; emitting close[pos..] instead of sampling */
        int32_t open_id, close_id;
        int32_t *close; /* "\n</think>\n\n" */
        int n_close;
    } think;
    hr_event_cb cb;
    void *cb_ctx;
    /* channel (mu): events waiting to be pulled */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    hr_ev_node *head, *tail, *cur;
    /* made at submit: the DONE event delivered when memory runs out while queueing events
     * (an event that could not be queued cancels the request; its DONE is then an error) */
    hr_ev_node *spare_done;
    int lost; /* an event could not be queued */
    int finished;
    /* sequence state (engine thread) */
    int32_t *tokens; /* (cap) prompt then generated */
    int n_tokens, cap, n_computed, n_cached, admitted, ended;
    int text_stopped; /* 1 + index of the stop string that ended the text, or 0 */
    hr_kv_seq kv;
    int state_slot; /* recurrent-state slot while running (hybrid models), else -1 */
    hr_stop_matcher stop;
    hr_detok_stream *detok; /* NULL without a tokenizer */
    hr_constraint con;      /* the grammar the output follows (con.m NULL: none) */
    hr_request *next;       /* inbox / waiting list link */
};

struct hr_engine {
    hr_model *model;
    hr_tokenizer *tok;
    hr_opened_model opened; /* what hr_engine_create opened (empty for hr_engine_create_on) */
    hr_prompt prompt;       /* chat requests (has_prompt: the engine has a tokenizer) */
    int has_prompt;
    hr_engine_options opt;
    hr_kv_pool pool;
    hr_ssd_tier *ssd; /* the prefix cache's SSD tier, or NULL */
    int max_context;  /* longest prompt + max_tokens ever admissible */
    int kv_window;    /* every KV layer is sliding: the widest window, blocks before it are freed */
    /* ids [0, n_tokenizable) have a token; the model's vocab may be padded past the
     * tokenizer's (Qwen3: 151669 of 151936), and sampling never picks an id above */
    int n_tokenizable;
    pthread_t thread;
    int thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    int stopping;
    hr_request *inbox_head, *inbox_tail;
    int n_inbox;
    hr_engine_stats stats;
    /* engine thread */
    hr_request *wait_head, *wait_tail;
    int n_waiting;
    hr_request **running; /* (max_seqs) in admission order */
    int n_running;
    int trim_due;               /* a step ran since the heap was last trimmed (wait_idle) */
    unsigned decode_turn;       /* rotates the decode pass when max_batch_tokens < n_running */
    double decode_s;            /* time of the steps with decode rows only (no prefill chunk) */
    long long decode_tokens;    /* tokens those steps generated */
    hr_row *rows;               /* (max_seqs) */
    hr_request **row_req;       /* (max_seqs) */
    float *logits;              /* (max_seqs, vocab) */
    int32_t *greedy_ids;        /* (max_seqs) argmax of each row, when a step needs no logits */
    hr_sample_row *sample_rows; /* (max_seqs) a sample step's rows (sched.c sample_params) */
    hr_sample_out *sampled;     /* (max_seqs) and what the op decided */
    hr_logit_edit *edits;       /* (cap_edits) the step's processor edits */
    size_t cap_edits;
    hr_sample_step sample;
    int *counts; /* (vocab) zeroed scratch for penalties */
    /* constrained decoding: the tokenizer's vocabulary as the grammar sees it (built at the
     * first request with a grammar, under gvocab_mu) and the step's mask worker */
    hr_grammar_vocab *gvocab;
    pthread_mutex_t gvocab_mu;
    hr_masker masker;
    hr_constraint **mask_rows; /* (max_seqs) */
    uint32_t *step_masks;      /* (max_seqs, (vocab + 31) / 32) the sample op's token masks */
    int32_t top_ids[HR_MAX_TOP_LOGPROBS];
    float top_lp[HR_MAX_TOP_LOGPROBS];
};

/* Creates an engine on an already loaded model (not owned) and tokenizer (may be NULL,
 * not owned); tests and hr_generate use it to share one model. The model's backend and KV
 * dtype (hr_model_set_kv_dtype) are used as they are: opt's n_threads, compute, kv_dtype,
 * fast, device and weights_in_place must be left 0 (they are refused, not ignored). */
hr_err *hr_engine_create_on(hr_model *m, hr_tokenizer *tok, const hr_engine_options *opt,
                            hr_engine **out);

/* What the server and verbs built on the engine share with it: the model's config, its
 * tokenizer (NULL without tokenizer.json) and its prompt path (NULL without a tokenizer). */
const hr_model_config *hr_engine_model_cfg(const hr_engine *e);
const hr_tokenizer *hr_engine_tokenizer(const hr_engine *e);
const hr_prompt *hr_engine_prompt(const hr_engine *e);
/* The ids [0, n) a request may name (prompt ids, logit_bias): the model's vocab, or the
 * tokenizer's when it has fewer (the sampler never picks one above, see sched.c). */
int hr_engine_token_ids(const hr_engine *e);

/* sched.c: one scheduler step on the engine thread; *idle says nothing could run. */
void hr_sched_step(hr_engine *e, int *idle);
/* sched.c: ends every running and waiting sequence (engine shutdown). */
void hr_sched_cancel_all(hr_engine *e);
/* engine.c: delivers an event to r's callback or channel. */
void hr_request_emit(hr_request *r, const hr_event *ev);
/* engine.c: drops the engine's reference after DONE. */
void hr_request_unref(hr_request *r);

#endif
