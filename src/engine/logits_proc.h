/* Logits processors applied to one row's logits before sampling: logit_bias, the
 * repetition penalty (HF: over prompt and output), presence and frequency penalties
 * (OpenAI: over output tokens), each optionally over only the last N tokens of its history
 * (llama.cpp's repeat_last_n); applied on the host, or handed to the sample op as edits
 * (hr_logprobs, the log-probabilities of the processed logits, is in backend/sample.h). */
#ifndef HR_ENGINE_LOGITS_PROC_H
#define HR_ENGINE_LOGITS_PROC_H

#include <stdint.h>

#include "backend/sample.h"
#include "base/err.h"

typedef struct {
    float repetition_penalty; /* 1 or 0 = off; > 1 discourages repeats */
    float presence_penalty;   /* subtracted once from every token already generated */
    float frequency_penalty;  /* subtracted per occurrence in the output */
    int last_n; /* > 0: penalties see only the last N tokens of their history; 0 = all */
    const int32_t *bias_ids; /* logit_bias: logits[bias_ids[i]] += bias_values[i] */
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
/* The same processors as a list of edits for the sample op, one per token they change
 * (hr_sample_apply_edits of the list is hr_proc_apply, bit for bit); returns the count, or -1
 * when logit_bias names an id twice (two additions in a row do not fold into one edit
 * exactly: the host applies those). edits has room for n_bias + n_prompt + n_out; counts as
 * in hr_proc_apply. */
int hr_proc_edits(const hr_proc_params *p, const int32_t *prompt, int n_prompt, const int32_t *out,
                  int n_out, int *counts, hr_logit_edit *edits);

#endif
