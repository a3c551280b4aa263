/* Writes an MLX-layout checkpoint from a float one and a quantization plan (quant_plan.h):
 * model.safetensors with each planned weight packed (u32) beside its scales and biases in
 * the source dtype, config.json with the `quantization` block (and `quantization_config`,
 * as mlx-lm writes both), and every other file of the source directory copied (tokenizer,
 * generation config, templates). Everything goes to a temporary directory beside out that is
 * renamed into place at the end; out must not exist, so the source is never overwritten. */
#ifndef HR_MODEL_MLX_WRITE_H
#define HR_MODEL_MLX_WRITE_H

#include "base/json.h"
#include "model/quant_plan.h"

typedef struct {
    int bits, group; /* the block's defaults; entries that differ get per-module overrides */
    int progress;    /* draw a progress bar on stderr */
} hr_mlx_write_opts;

/* config: the source config.json (not modified). *bytes_out: tensor bytes written. */
hr_err *hr_mlx_write(const char *src_dir, const hr_safetensors *st, const json_t *config,
                     const hr_qplan *plan, const hr_mlx_write_opts *o, const char *out_dir,
                     size_t *bytes_out);

#endif
