/* hearth convert: a bf16 / f16 / f32 checkpoint to the MLX affine layout (model/mlx_write.h)
 * at one bit width, an mlx-lm mixed recipe, or per-tensor bits chosen for a target average
 * from measured sensitivities (engine/quant_sens.h). */
#ifndef HR_ENGINE_CONVERT_H
#define HR_ENGINE_CONVERT_H

#include <stddef.h>

#include "base/err.h"

typedef struct {
    const char *model, *out;
    int bits;                /* 2, 3, 4, 5, 6 or 8 (default 4) */
    int group_size;          /* 32, 64 or 128 (default 64) */
    const char *mixed;       /* NULL or an mlx-lm recipe */
    double target_bpw;       /* 0: off */
    const char *const *keep; /* globs over tensor names / module paths left unquantized */
    int n_keep;
    const char *calib; /* calibration text file for --target-bpw, or NULL */
    int progress;
    int n_threads;
} hr_convert_opts;

typedef struct {
    size_t bytes_before, bytes_after;
    double bpw; /* average over the quantizable matrices */
    int n_quantized, n_tensors;
} hr_convert_stats;

/* The options' own errors (bits, group size, recipe, target range): usage errors. */
hr_err *hr_convert_check_opts(const hr_convert_opts *o);
hr_err *hr_convert(const hr_convert_opts *o, hr_convert_stats *stats);

#endif
