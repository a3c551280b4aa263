/* Constrained decoding in the engine: a request's grammar matcher, when its masks apply (after
 * a reasoning block closes; for a lazy grammar, from its trigger token until the grammar
 * accepts), the mask of the tokens it allows at the next step — computed on a worker thread
 * while the forward pass runs (hr_masker) — and that mask applied to a row's logits. */
#ifndef HR_ENGINE_CONSTRAIN_H
#define HR_ENGINE_CONSTRAIN_H

#include <pthread.h>
#include <stdint.h>

#include "base/err.h"
#include "grammar/grammar.h"

typedef struct {
    hr_matcher *m;  /* NULL: the request is unconstrained */
    hr_grammar *g;  /* the request's reference (hr_grammar_ref) */
    uint32_t *bits; /* the next step's mask over the grammar vocabulary */
    int n_vocab;    /* tokens the mask covers (the tokenizer's); ids past it are never allowed */
    int32_t open_id, close_id; /* <think> / </think>, or -1 */
    int in_think;              /* a reasoning block is open: the grammar waits for its close */
    int first; /* nothing generated yet: <think> may open a block before the grammar */
    int lazy;  /* the grammar applies from trigger on, until it accepts */
    int32_t trigger;
    int armed;               /* lazy: the trigger was generated, the grammar applies */
    int n_accepted;          /* tokens the matcher accepted since it (re)started */
    int allowed;             /* after hr_constraint_apply: tokens left allowed */
    const int32_t *stop_ids; /* the request's stop ids (borrowed), allowed where it accepts */
    float *stop_logits;      /* (n_stop) scratch */
    int n_stop;
} hr_constraint;

/* What a request asks (hearth.h's hr_request_params fields, as the engine keeps them). */
typedef struct {
    hr_grammar *grammar; /* borrowed; NULL: none */
    int after_think;     /* the model may reason first: the grammar starts after </think> */
    int in_reasoning;    /* the prompt ends inside an open <think> */
    int32_t trigger;     /* >= 0: lazy, the grammar applies after this token */
    int32_t open_id, close_id;
    const int32_t *stop_ids; /* must outlive the constraint */
    int n_stop;
} hr_constraint_params;

hr_err *hr_constraint_init(hr_constraint *c, const hr_constraint_params *p,
                           const hr_grammar_vocab *v);
void hr_constraint_free(hr_constraint *c);
/* Whether the next token is constrained (its mask must be computed and applied). */
int hr_constraint_applies(const hr_constraint *c);
/* Computes c->bits for the next token (worker thread). */
void hr_constraint_mask(hr_constraint *c);
/* Applies c->bits to logits[vocab]: disallowed ids become -inf; the request's stop ids are
 * allowed exactly when the grammar accepts. Sets c->allowed. */
void hr_constraint_apply(hr_constraint *c, float *logits, int vocab);
/* The mask hr_constraint_apply applies, as a bitmask over vocab ids in dst[(vocab + 31) / 32]
 * for the sample op (backend/sample.h): c->bits, no id past the grammar's vocabulary, the stop
 * ids by acceptance, <think> at the first token. */
void hr_constraint_row_mask(const hr_constraint *c, uint32_t *dst, int vocab);
/* Advances past the generated token tok; 0 when the grammar rejects it. */
int hr_constraint_accept(hr_constraint *c, int32_t tok);

/* The worker that computes a step's masks while the forward pass runs. */
typedef struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started, quit, pending; /* pending: rows are being computed */
    hr_constraint **rows;       /* (cap) */
    int n, cap;
} hr_masker;

hr_err *hr_masker_start(hr_masker *mk, int cap);
void hr_masker_stop(hr_masker *mk);
/* Starts computing the masks of rows[0..n) (n <= cap; the caller keeps them unchanged until
 * hr_masker_wait). */
void hr_masker_run(hr_masker *mk, hr_constraint *const *rows, int n);
void hr_masker_wait(hr_masker *mk);
/* Computes the masks of rows[0..n) now: about half on the worker, the rest on the calling
 * thread (the forward pass is not running: its threads are idle or the device's). */
void hr_masker_compute(hr_masker *mk, hr_constraint *const *rows, int n);

#endif
