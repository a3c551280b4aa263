/* Token sampling from one row of logits: greedy (temperature 0), or temperature with
 * top-k, min-p, top-p, locally typical and XTC filters (applied in that order to the
 * tempered distribution), driven by a per-request seeded generator so a seeded request
 * reproduces its tokens whatever else shares the batch. */
#ifndef HR_ENGINE_SAMPLER_H
#define HR_ENGINE_SAMPLER_H

#include <stdint.h>

#include "base/err.h"

typedef struct {
    float temperature; /* 0 = greedy */
    float top_p;       /* 1 = off */
    int top_k;         /* 0 = off */
    float min_p;       /* 0 = off */
    uint64_t seed;
    float typical_p;       /* locally typical mass; 0 or 1 = off */
    float xtc_probability; /* chance per token of excluding the top choices; 0 = off */
    float xtc_threshold;   /* XTC: tokens at or above this probability are "top choices" */
} hr_sampler_params;

typedef struct {
    hr_sampler_params p;
    uint64_t rng[4];
    int vocab;
    float *probs; /* (vocab) */
    int32_t *idx; /* (vocab) */
} hr_sampler;

/* Checks ranges (temperature >= 0, 0 < top_p <= 1, top_k >= 0, min_p, typical_p and the
 * XTC fields in [0, 1]). */
hr_err *hr_sampler_params_check(const hr_sampler_params *p);
hr_err *hr_sampler_init(hr_sampler *s, const hr_sampler_params *p, int vocab);
void hr_sampler_free(hr_sampler *s);
/* Picks a token from logits[vocab]; does not modify logits. Draws from the generator once
 * (twice with XTC), except for greedy samplers and rows with no candidate. */
int hr_sampler_sample(hr_sampler *s, const float *logits);
/* The same pick with u as its draw, for samplers without XTC; the generator is not touched.
 * *drew says whether hr_sampler_sample would have drawn (then the caller advances the
 * generator, so the stream stays the one hr_sampler_sample consumes). */
int hr_sampler_sample_u(hr_sampler *s, const float *logits, double u, int *drew);
/* Uniform double in [0, 1) from the sampler's generator. */
double hr_sampler_uniform(hr_sampler *s);
/* The value the next hr_sampler_uniform returns, without drawing it. */
double hr_sampler_peek(const hr_sampler *s);
/* Whether s samples with a filter the sample op does not have (typical-p, XTC). */
int hr_sampler_host_only(const hr_sampler *s);

#endif
