/* Tensor views: a pointer, a dtype, a row-major contiguous shape and a device. Weights
 * in a quantized format may carry companion tensors (MLX affine: per-group scales and
 * biases), so a kernel gets everything it needs from the weight itself and model code
 * never branches on the format. Views do not own their memory. */
#ifndef HR_TENSOR_TENSOR_H
#define HR_TENSOR_TENSOR_H

#include <stdint.h>

#include "tensor/dtype.h"

enum { HR_MAX_DIMS = 4 };

typedef enum { HR_DEV_CPU, HR_DEV_CUDA } hr_device;

typedef struct hr_tensor {
    void *data;
    hr_dtype dtype;
    hr_device device;
    int ndim;
    int64_t shape[HR_MAX_DIMS];     /* shape[ndim-1] is contiguous */
    const struct hr_tensor *scales; /* MLX affine: (rows, cols/group_size), else NULL */
    const struct hr_tensor *biases; /* MLX affine: (rows, cols/group_size), else NULL */
    int group_size;                 /* MLX affine group size, else 0 */
    int row_tile; /* CPU backend: rows interleaved in tiles of this many (qrepack.h), else 0 */
    int planes;   /* CUDA backend: rows in the planar layout (tensor/qplanes.h), else 0 */
} hr_tensor;

int64_t hr_tensor_numel(const hr_tensor *t);
size_t hr_tensor_bytes(const hr_tensor *t);
/* Writes "[a, b, c]" into buf. */
const char *hr_tensor_shape_str(const hr_tensor *t, char *buf, size_t len);

#endif
