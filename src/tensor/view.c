/* Views into tensors: a 2-D slice of one slab of a 3-D tensor, sharing its memory (the
 * experts of a checkpoint that stacks them, [experts, rows, cols], as the per-expert matrices
 * the MoE op takes), and row ranges of a matrix (with its MLX companions). */
#include <stdio.h>
#include <stdlib.h>

#include "tensor/view.h"

#include "base/log.h"

hr_err *hr_tensor_slab_rows(const hr_tensor *t, int64_t i, int64_t row0, int64_t rows,
                            hr_tensor *out) {
    char shape[64];
    if (t->ndim != 3)
        return hr_errf("slab view: tensor %s is not 3-D",
                       hr_tensor_shape_str(t, shape, sizeof shape));
    if (i < 0 || i >= t->shape[0] || row0 < 0 || rows <= 0 || row0 + rows > t->shape[1])
        return hr_errf("slab view: [%lld, %lld:%lld] is outside %s", (long long)i, (long long)row0,
                       (long long)(row0 + rows), hr_tensor_shape_str(t, shape, sizeof shape));
    if (t->scales || t->biases || t->shape[2] % hr_dtype_get(t->dtype)->block)
        return hr_errf(
            "slab view: %s tensors with companion scales or partial blocks are not supported",
            hr_dtype_name(t->dtype));
    size_t row_bytes = hr_dtype_bytes(t->dtype, t->shape[2]);
    *out = *t;
    out->ndim = 2;
    out->shape[0] = rows;
    out->shape[1] = t->shape[2];
    out->shape[2] = 0;
    out->data = (char *)t->data + ((size_t)i * (size_t)t->shape[1] + (size_t)row0) * row_bytes;
    return NULL;
}

static void rows_of(const hr_tensor *t, int64_t row0, int64_t rows, hr_tensor *out) {
    /* a repacked weight's rows keep their layout only in whole tiles (or its last rows) */
    int tile = t->row_tile;
    if (tile && (row0 % tile || (rows % tile && row0 + rows != t->shape[0]))) {
        HR_ERROR("internal: rows [%lld, %lld) of a weight repacked in tiles of %d", (long long)row0,
                 (long long)(row0 + rows), tile);
        abort();
    }
    *out = *t;
    out->shape[0] = rows;
    out->data = (char *)t->data + hr_dtype_bytes(t->dtype, row0 * t->shape[1]);
}

void hr_tensor_rows(const hr_tensor *t, int64_t row0, int64_t rows, hr_tensor *out, hr_tensor *cs,
                    hr_tensor *cb) {
    rows_of(t, row0, rows, out);
    if (!t->scales) return;
    rows_of(t->scales, row0, rows, cs);
    rows_of(t->biases, row0, rows, cb);
    out->scales = cs;
    out->biases = cb;
}
