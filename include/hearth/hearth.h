/* libhearth's public API: an engine that owns one model, its KV block pool and a thread
 * that runs every request through one continuously batched forward step. Other threads
 * (an HTTP server's) submit requests and read each request's events from its own channel,
 * either by callback (called on the engine thread; keep it short) or by pulling them with
 * hr_request_next. hr_engine_submit, hr_request_cancel and hr_engine_stats are
 * thread-safe. Errors are hr_err values (NULL = success; read with hr_err_msg, free with
 * hr_err_free). See docs/engine.md. */
#ifndef HEARTH_HEARTH_H
#define HEARTH_HEARTH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hr_err hr_err;
const char *hr_err_msg(const hr_err *err);
void hr_err_free(hr_err *err);

typedef struct hr_engine hr_engine;
typedef struct hr_request hr_request;

/* Products of bf16 weights: F32 widens them (exact); BF16 rounds the activations to bf16
 * first (faster; logits no longer match an f32 reference exactly); docs/engine.md. */
typedef enum { HR_COMPUTE_AUTO, HR_COMPUTE_F32, HR_COMPUTE_BF16 } hr_compute;
/* KV cache element types (Q8_0: GGML's blocks of 32, head dims a multiple of 32). */
typedef enum { HR_KV_AUTO, HR_KV_F32, HR_KV_BF16, HR_KV_F16, HR_KV_Q8_0, HR_KV_Q4_0 } hr_kv_type;

typedef struct {
    const char *device;        /* "cpu", "cuda", or "auto"/NULL: CUDA when hearth was built with
                                  it and a GPU is present, else the CPU */
    int n_threads;             /* CPU threads (<= 0: all online CPUs) */
    int compute;               /* hr_compute: products of bf16 weights (AUTO: by `fast`) */
    int kv_dtype;              /* hr_kv_type: the KV cache's element type (AUTO: by `fast`) */
    int fast;                  /* 1: for bf16 checkpoints, AUTO means bf16 products and a bf16
                                  KV cache (hearth serve/run/bench without --exact); 0: f32
                                  products and the backend's exact KV (f32 on the CPU) */
    int weights_in_place;      /* compute from the mmapped weights (faster load, slower decode) */
    size_t kv_memory;          /* bytes of KV cache (with the recurrent state of hybrid models);
                                  0: from memory_budget, else a default */
    long kv_positions;         /* > 0: a pool of this many positions instead (benches) */
    float gpu_memory;          /* on a GPU, the default KV cache is this fraction of the device
                                  memory the weights left free (0: 0.9); on the CPU a quarter
                                  of available RAM */
    size_t memory_budget;      /* bytes for weights + KV (used when kv_memory is 0) */
    int block_size;            /* positions per KV block (0: 16) */
    int max_batch_tokens;      /* tokens per forward step (0: 2048) */
    int max_seqs;              /* sequences decoding at once (0: 64) */
    int no_prefix_cache;       /* 1 turns the prefix cache off */
    int no_preempt;            /* 1: when KV runs out, wait instead of preempting the youngest */
    int max_queue;             /* requests waiting for admission before submit refuses more
                                  (HR_E_BUSY; 0: 1024) */
    const char *chat_template; /* a .jinja file overriding the model's template (NULL: the
                                  model's; a model without one gets "role: content" lines) */
    /* hybrid (DeltaNet) models: prefix reuse needs snapshots of the recurrent state */
    size_t snapshot_memory; /* bytes for state snapshots (0: as much as the state slots) */
    int snapshot_interval;  /* blocks between snapshots (0: 256 positions' worth) */
    /* the prefix cache's SSD tier (docs/ssd-cache.md; dense models) */
    const char *ssd_cache;        /* directory of block files (NULL: no tier) */
    size_t ssd_cache_max;         /* bytes of files in it at most (0: 32 GiB) */
    int ssd_cache_verify;         /* check every tensor's checksum on restore */
    int ssd_cache_always_restore; /* restore disk blocks even where prefilling them is cheaper */
    size_t ssd_queue;             /* bytes of evicted blocks waiting for the disk (0: 256 MiB) */
} hr_engine_options;

/* Loads dir (config.json, safetensors, and tokenizer/chat template when present) and
 * starts the engine thread. Chat prompts need the tokenizer; a model without a chat
 * template renders them as "role: content" lines ending in "assistant:". */
hr_err *hr_engine_create(const char *model_dir, const hr_engine_options *opt, hr_engine **out);
/* Stops the engine: requests still running end as cancelled. */
void hr_engine_destroy(hr_engine *e);

typedef enum {
    HR_FINISH_NONE,      /* not finished */
    HR_FINISH_LENGTH,    /* max_tokens reached */
    HR_FINISH_STOP,      /* a stop token id or stop string */
    HR_FINISH_CANCELLED, /* hr_request_cancel, or the engine shut down */
    HR_FINISH_ERROR,     /* see hr_event.error */
} hr_finish;

typedef enum { HR_EVENT_TOKEN, HR_EVENT_DONE } hr_event_kind;

enum { HR_MAX_TOP_LOGPROBS = 20 };

/* One event of a request. Pointers stay valid until the next hr_request_next call on
 * the request (or until the callback returns). */
typedef struct {
    hr_event_kind kind;
    int32_t token; /* TOKEN: the sampled id */
    float logprob; /* TOKEN, when logprobs was asked: log p(token) after processors */
    int n_top;     /* TOKEN: entries in top_ids / top_logprobs */
    const int32_t *top_ids;
    const float *top_logprobs;
    const char *text; /* newly releasable text (may be empty); DONE carries the tail */
    size_t text_len;
    hr_finish finish;                    /* DONE */
    const char *error;                   /* DONE with HR_FINISH_ERROR */
    const char *stop_string;             /* DONE with HR_FINISH_STOP by a stop string: which */
    int n_prompt, n_generated, n_cached; /* usage so far (DONE: final); n_cached = prompt
                                            tokens reused from the prefix cache */
} hr_event;

typedef void (*hr_event_cb)(void *ctx, const hr_event *ev);

typedef struct {
    /* The prompt: exactly one of tokens, text (tokenized with special tokens added) or
     * chat (a JSON request {"messages": [...], "tools"?, ...} rendered through the chat
     * template with add_generation_prompt, then tokenized without special tokens). */
    const int32_t *tokens;
    int n_tokens;
    const char *text;
    const char *chat;
    int max_tokens; /* tokens to generate (<= 0: 16) */
    /* Sampling. A zeroed struct is greedy without penalties; a negative temperature,
     * top_p, top_k or repetition_penalty takes generation_config.json's value (greedy
     * unless it sets do_sample). */
    float temperature;     /* 0 = greedy */
    float top_p;           /* (0, 1]; 0 treated as 1 */
    int top_k;             /* 0 = off */
    float min_p;           /* 0 = off */
    float typical_p;       /* (0, 1); 0 or 1 = off, negative = generation_config's */
    float xtc_probability; /* XTC: chance per token of excluding the top choices; 0 = off */
    float xtc_threshold;   /* XTC: a "top choice" has at least this probability (0: 0.1) */
    uint64_t seed;
    float repetition_penalty; /* 0 or 1 = off */
    int penalty_last_n;       /* > 0: the penalties see only the last N tokens; 0 = all */
    float presence_penalty, frequency_penalty;
    const int32_t *bias_ids; /* logit_bias */
    const float *bias_values;
    int n_bias;
    int logprobs;            /* 1: report logprob of each sampled token */
    int top_logprobs;        /* 0..HR_MAX_TOP_LOGPROBS */
    const int32_t *stop_ids; /* extra ids that end generation */
    int n_stop_ids;
    int ignore_eos;          /* 1: the model's EOS ids do not stop */
    const char *const *stop; /* stop strings (need the tokenizer) */
    int n_stop;
    /* Reasoning cap, for models whose tokenizer has <think> and </think> tokens: after
     * reasoning_budget tokens inside <think> blocks, "\n</think>\n\n" is forced (not
     * sampled) and the answer follows. in_reasoning: the prompt ends inside an open
     * <think> (the chat template opened it). 0 = no cap. */
    int reasoning_budget;
    int in_reasoning;
    /* Constrained decoding: the output follows this grammar (src/grammar/grammar.h; the
     * engine takes its own reference). NULL: unconstrained. grammar_after_think: the model
     * may reason first (a <think> block, or the open one of in_reasoning), the grammar
     * applies after it closes. grammar_lazy: the grammar applies only after the token
     * grammar_trigger, until it accepts, and again at the next trigger (strict tool calls). */
    struct hr_grammar *grammar;
    int grammar_after_think;
    int grammar_lazy;
    int32_t grammar_trigger;
    hr_event_cb cb; /* NULL: pull events with hr_request_next */
    void *cb_ctx;
} hr_request_params;

/* The positions one sequence can have (prompt + generated tokens): the model's context
 * or what the KV pool can hold, whichever is smaller. A prompt of n tokens can generate at
 * most hr_engine_max_context(e) - n. */
int hr_engine_max_context(const hr_engine *e);

/* Validates and queues a request. A request that can never fit (prompt + max_tokens
 * beyond the KV pool or the model's context) is refused here with an error. *out is the
 * caller's handle: release it with hr_request_release (which cancels it if running). */
hr_err *hr_engine_submit(hr_engine *e, const hr_request_params *p, hr_request **out);
/* Pull mode: waits for the next event; returns 0 after DONE was returned (no more events). */
int hr_request_next(hr_request *r, hr_event *ev);
/* Asks the engine to end the request; its row and blocks are freed at the next step. */
void hr_request_cancel(hr_request *r);
void hr_request_release(hr_request *r);

typedef struct {
    int active, queued; /* sequences running / waiting for admission */
    int kv_blocks_total, kv_blocks_used, kv_blocks_cached; /* cached: idle reusable blocks */
    int block_size;
    long requests_done, refused, preempted;
    long prompt_tokens, cached_tokens; /* prompt tokens submitted / served from the cache */
    long generated_tokens, steps, step_tokens;
    double busy_s; /* time spent in forward steps */
    double last_step_ms;
    double decode_tok_s; /* tokens generated by decode-only steps / their time (prefill excluded) */
    int state_snapshots; /* hybrid models: recurrent-state snapshots held by cached blocks */
    int compute;         /* hr_compute in use (AUTO: unknown, an engine on a caller's model) */
    int kv_dtype;        /* hr_kv_type of the KV cache */
    const char *device;  /* the backend the engine runs on: "cpu" or "cuda" */
    /* the SSD tier (all 0 without --ssd-cache) */
    int ssd_on;
    long ssd_entries;           /* block files of this model */
    long long ssd_bytes;        /* bytes of the files in the directory */
    long ssd_hits;              /* prompts that restored blocks from disk */
    long ssd_restores;          /* blocks restored */
    long ssd_spills;            /* blocks written */
    long ssd_dropped;           /* spills dropped (queue full, or writes off) */
    double ssd_last_restore_ms; /* the last prompt's prefix lookup that restored */
    long ssd_skipped;           /* lookups that prefilled instead: faster than the disk */
    int ssd_writes_off;         /* a write failed: the tier is read-only from then */
} hr_engine_stats;

void hr_engine_stats_get(hr_engine *e, hr_engine_stats *st);

#ifdef __cplusplus
}
#endif
#endif
