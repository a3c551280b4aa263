/* Sampling on the device: the sample op's per-step parameters and per-row result (plain
 * structs, the same layout in C and in the CUDA kernels), and the sampling math in C that is
 * both the engine's host sampler (engine/sampler.c calls it) and the op's reference (the CPU
 * backend's op, gpu_check's judge of the CUDA kernel). docs/backend-v2.md, "Sampling on the
 * device". */
#ifndef HR_BACKEND_SAMPLE_H
#define HR_BACKEND_SAMPLE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* HR_SAMPLE_CAP: the most candidates the op sorts; a row whose top-k, or whose top-p
 * nucleus, needs a longer sorted prefix falls back to the host. HR_SAMPLE_MAX_TOP: the most
 * top logprobs a row asks (HR_MAX_TOP_LOGPROBS). */
enum { HR_SAMPLE_CAP = 1024, HR_SAMPLE_MAX_TOP = 20 };

/* What the op does with a row: its argmax (temperature 0), a draw with u, or nothing (the
 * host decides from the raw row: typical-p, XTC, a forced token, duplicate logit_bias ids). */
enum { HR_SAMPLE_GREEDY = 0, HR_SAMPLE_DRAW = 1, HR_SAMPLE_HOST = 2 };

/* One processor edit, applied before everything else: logits[id] += add, then (rep != 1) the
 * repetition penalty (l > 0 ? l / rep : l * rep), then logits[id] -= sub (presence and
 * frequency). The ids of one row are distinct (engine/logits_proc.c builds them). */
typedef struct {
    int32_t id;
    float add, rep, sub;
} hr_logit_edit;

/* One logit row's request. */
typedef struct {
    double u;           /* the draw, uniform in [0, 1) from the request's generator (DRAW) */
    int32_t mode;       /* HR_SAMPLE_* */
    float temperature;  /* > 0 for DRAW */
    float top_p, min_p; /* 1 / 0 = off */
    int32_t top_k;      /* 0 = off */
    int32_t logprob;    /* 1: the chosen token's logprob is wanted */
    int32_t n_top;      /* top logprobs wanted, 0..HR_SAMPLE_MAX_TOP */
    int32_t edit_start; /* this row's edits: edits[edit_start .. edit_start + n_edits) */
    int32_t n_edits;
    int32_t mask; /* 0: none; k > 0: this row's token mask is the step's masks[k - 1] */
} hr_sample_row;

/* A step's sampling parameters, one row per logit row in order. A token mask (a grammar's
 * allowed tokens) is a bitmask over the vocabulary: token i is allowed when bit i % 32 of word
 * i / 32 is set; a masked row samples as if its disallowed logits were -inf (after its edits). */
typedef struct {
    int n_rows, n_edits;
    const hr_sample_row *rows;  /* [n_rows] */
    const hr_logit_edit *edits; /* [n_edits] */
    int n_masks, mask_words;    /* mask_words = (V + 31) / 32 */
    const uint32_t *masks;      /* [n_masks, mask_words] */
} hr_sample_step;

/* One row's result. id -1: the op did not decide (HOST rows, and fallbacks: a sorted prefix
 * over HR_SAMPLE_CAP, no candidate, too many ties for the top logprobs); the row's logits, with
 * its edits applied unless HOST, stay on the device for the host to read. */
typedef struct {
    int32_t id;
    float logprob;                      /* log-softmax of the processed logits at id */
    int32_t top_ids[HR_SAMPLE_MAX_TOP]; /* n_top most likely, by logit descending, ties by id */
    float top_lp[HR_SAMPLE_MAX_TOP];
} hr_sample_out;

/* --- the math (sample.c) --- */

/* probs = softmax(logits / temperature) over V; returns the largest probability. */
float hr_sample_softmax(float *probs, const float *logits, int V, float temperature);
/* The candidates after min-p, top-k and top-p, in idx in walking order (index order when no
 * cut needs a sort, else probability descending, ties by id); returns their count. When the
 * sorted prefix the cuts need is longer than cap, returns -1 (cap >= V: never). */
int hr_sample_candidates(const float *probs, int32_t *idx, int V, float pmax, float min_p,
                         float top_p, int top_k, int cap);
/* The token the draw u in [0, 1) picks among the first n of idx (n > 0): the first whose
 * cumulative probability exceeds u times their total. */
int32_t hr_sample_walk(const float *probs, const int32_t *idx, int n, double u);
/* The first index of the largest of x[0..n). */
int32_t hr_sample_argmax(const float *x, int n);
/* Log-softmax of logits at token; fills the top_n most likely (ids descending by logit, ties
 * by id) when top_n > 0. */
float hr_logprobs(const float *logits, int vocab, int32_t token, int top_n, int32_t *top_ids,
                  float *top_lp);
/* Applies n edits to logits in order. */
void hr_sample_apply_edits(float *logits, const hr_logit_edit *e, int n);
/* The op on one row (the reference of the device kernels): edits applied to logits in place,
 * then row->mode's pick and the logprobs asked; probs and idx are scratch of V. mask (NULL:
 * none) is the row's token mask: the result is the unmasked op's on the logits with every
 * disallowed id set to -inf, except that id is -1 (the host decides) when no allowed logit is
 * above -inf; the loops skip the disallowed words, and logits stay unmasked (but for a masked
 * row whose top logprobs reach a -inf: then the mask is written into them). */
void hr_sample_ref(hr_sample_out *out, float *logits, int V, const hr_sample_row *row,
                   const hr_logit_edit *edits, const uint32_t *mask, float *probs, int32_t *idx);
/* Row r's token mask in s, or NULL. */
const uint32_t *hr_sample_row_mask(const hr_sample_step *s, int r);
/* Whether every masked row of s's first rows names a mask of s and the masks cover V ids. */
int hr_sample_masks_fit(const hr_sample_step *s, int rows, int V);
/* Sets logits[i] = -inf for every id i < V that mask disallows. */
void hr_sample_mask_logits(float *logits, int V, const uint32_t *mask);

#ifdef __cplusplus
}
#endif

#endif
