/* One-shot generation for `hearth run` and the benchmarks: a single sequence through the
 * same batched forward the engine uses (a batch of one row): chunked prefill, then one
 * token per step until max_tokens, a stop id, or the callback says stop. */
#ifndef HR_ENGINE_GENERATE_H
#define HR_ENGINE_GENERATE_H

#include "engine/sampler.h"
#include "model/model.h"

typedef struct {
    const int32_t *prompt;
    int n_prompt;
    int max_tokens;
    hr_sampler_params sampling; /* negative temperature, top_p, top_k or typical_p: the
                                   engine takes generation_config.json's (hr_request_params) */
    const int *stop_ids;        /* end-of-sequence ids */
    int n_stop;
    int prefill_chunk; /* tokens per prefill step (0: 512) */
} hr_gen_request;

typedef struct {
    int n_prompt, n_generated;
    double prefill_s, decode_s;
} hr_gen_stats;

/* Called with each generated token; a nonzero return stops generation. */
typedef int (*hr_token_cb)(void *ctx, int32_t token);

hr_err *hr_generate(hr_model *m, const hr_gen_request *req, hr_token_cb cb, void *ctx,
                    hr_gen_stats *stats);

#endif
