/* MLX-quantized checkpoints as mlx-lm writes them: the `quantization` (or
 * `quantization_config`) block of config.json, with defaults `bits` / `group_size` and
 * per-module overrides (an object with its own bits / group_size, or false: not quantized),
 * and a quantized module's `<m>.weight` (u32, packed), `<m>.scales` and `<m>.biases`. Which
 * modules are quantized follows mlx-lm's load: an override if the block has one, else the
 * presence of `<m>.scales`. */
#ifndef HR_MODEL_MLX_LOAD_H
#define HR_MODEL_MLX_LOAD_H

#include "base/json.h"
#include "model/weights.h"

typedef struct {
    json_t *q; /* the quantization object (owned reference); NULL: none */
    int bits, group_size;
} hr_mlx_qconfig;

/* Reads the quantization block of a parsed config.json (also inside text_config); none is
 * not an error. Unsupported modes, bits or group sizes are. */
hr_err *hr_mlx_qconfig_parse(const json_t *config, hr_mlx_qconfig *out);
/* Reads dir/config.json's block. */
hr_err *hr_mlx_qconfig_load(const char *dir, hr_mlx_qconfig *out);
void hr_mlx_qconfig_free(hr_mlx_qconfig *q);
/* Bits and group size of module `path` ("model.layers.0.mlp.down_proj"): *bits 0 when the
 * block sets it to false; else the override's or the defaults. */
hr_err *hr_mlx_qconfig_module(const hr_mlx_qconfig *q, const char *path, int *bits, int *group);

/* The host tensors of a quantized weight: w is the logical (rows, cols) view of the packed
 * data with its companions set. */
typedef struct {
    hr_tensor w;
    const hr_tensor *scales, *biases;
} hr_mlx_parts;

/* For tensor `name` (rows, cols): *quantized 0 when it is a plain tensor; else validates the
 * packed weight and its companions (presence, dtypes, shapes) and fills *out. */
hr_err *hr_mlx_weight(const hr_mlx_qconfig *q, const hr_weights *st, const char *name, int64_t rows,
                      int64_t cols, hr_mlx_parts *out, int *quantized);
/* 1 if `name` ("<m>.weight") has an `<m>.scales` companion in st. */
int hr_mlx_has_scales(const hr_weights *st, const char *name);

#endif
