/* Logits processors applied to one row's logits before sampling: logit_bias, the
 * repetition penalty (HF: over prompt and output), presence and frequency penalties
 * (OpenAI: over output tokens), each optionally over only the last N tokens of its history
 * (llama.cpp's repeat_last_n), and log-probabilities of the processed logits. */
#ifndef HR_ENGINE_LOGITS_PROC_H
#define HR_ENGINE_LOGITS_PROC_H

#include <stdint.h>

#include "base/err.h"

typedef struct {
    float repetition_penalty; /* 1 or 0 = off; > 1 discourages repeats */
    float presence_penalty;   /* subtracted once from every token already generated */
    float frequency_penalty;  /* subtracted per occurrence in the output */
    int last_n; /* > 0: penalties see only the last N tokens of their history; 0 = all */
    const int32_t *bias_ids;  /* logit_bias: logits[bias_ids[i]] += bias_values[i] */
    const float *bias_values;
    int n_bias;
} hr_proc_params;

/* Checks ranges and that bias ids are inside [0, vocab). */
hr_err *hr_proc_params_check(const hr_proc_params *p, int vocab);
/* Whether any processor changes logits. */
int hr_proc_active(const hr_proc_params *p);
/* Applies the processors to logits[vocab] in place. counts is scratch of vocab ints, all
 * zero on entry and on return. */
void hr_proc_apply(const hr_proc_params *p, float *logits, int vocab, const int32_t *prompt,
                   int n_prompt, const int32_t *out, int n_out, int *counts);
/* Log-softmax of logits at token; fills the top_n most likely (ids descending by
 * probability, ties by id) when top_n > 0. */
float hr_logprobs(const float *logits, int vocab, int32_t token, int top_n, int32_t *top_ids,
                  float *top_lp);

#endif
