/* The model fingerprint the prefix cache mixes into every block key, and the SSD tier writes
 * into every file: everything that changes the KV bytes of a token prefix, so a block of
 * another model, checkpoint, KV dtype, compute mode or backend never matches. */
#ifndef HR_ENGINE_FINGERPRINT_H
#define HR_ENGINE_FINGERPRINT_H

#include <stdint.h>

#include "model/model.h"
#include "tokenizer/tokenizer.h"

/* The config (every field), the sampled weight hash (hr_model_weight_hash), the weights'
 * byte count, the KV dtype, the compute mode (hr_compute; AUTO for an engine on a caller's
 * model) and the backend's name. */
uint64_t hr_engine_fingerprint(const hr_model *m, hr_dtype kv_dtype, int compute);
/* A hash of every token's string (0 for NULL): files of another tokenizer are not used. */
uint64_t hr_tokenizer_hash(const hr_tokenizer *tok);

#endif
