/* Random-weight checkpoints of real shapes in the Hugging Face layout (config.json,
 * generation_config.json, safetensors sharded above a size), for tests and benchmarks:
 * speed does not depend on weight values. */
#ifndef HR_MODEL_MKMODEL_H
#define HR_MODEL_MKMODEL_H

#include <stdint.h>

#include "base/err.h"
#include "tensor/dtype.h"

/* config.json text of a named preset, or NULL. */
const char *hr_mkmodel_preset(const char *name);
/* Comma-separated preset names, for help texts. */
const char *hr_mkmodel_preset_names(void);

/* Writes the checkpoint of config_json (validated first) into out_dir with weights in
 * dtype (F32 or BF16), shards of at most shard_bytes (a larger tensor gets its own). */
hr_err *hr_mkmodel_write(const char *out_dir, const char *config_json, hr_dtype dtype,
                         uint64_t seed, uint64_t shard_bytes);

#endif
