/* Views into tensors (view.c): per-expert matrices of a checkpoint that stores all experts
 * in one [experts, rows, cols] tensor, and row ranges of a matrix, without copying. */
#ifndef HR_TENSOR_VIEW_H
#define HR_TENSOR_VIEW_H

#include "base/err.h"
#include "tensor/tensor.h"

/* out = rows [row0, row0 + rows) of slab i of the 3-D tensor t, as a (rows, cols) tensor that
 * shares t's memory (and device). E.g. a stacked gate_up_proj [E, 2I, H]: expert e's gate is
 * (e, 0, I), its up (e, I, I). */
hr_err *hr_tensor_slab_rows(const hr_tensor *t, int64_t i, int64_t row0, int64_t rows,
                            hr_tensor *out);

/* out = rows [row0, row0 + rows) of the 2-D tensor t, sharing its memory. An MLX tensor's
 * scales and biases are sliced alike into *cs and *cb, which must outlive out. A weight the
 * CPU backend repacked (t->row_tile) is sliced in whole tiles only (row0 a multiple of the
 * tile; rows too, unless the slice ends at t's last row): anything else aborts. */
void hr_tensor_rows(const hr_tensor *t, int64_t row0, int64_t rows, hr_tensor *out, hr_tensor *cs,
                    hr_tensor *cb);

#endif
