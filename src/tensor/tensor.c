/* Tensor view helpers; see tensor.h. */
#include "tensor/tensor.h"

#include <stdio.h>

int64_t hr_tensor_numel(const hr_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

size_t hr_tensor_bytes(const hr_tensor *t) { return hr_dtype_bytes(t->dtype, hr_tensor_numel(t)); }

const char *hr_tensor_shape_str(const hr_tensor *t, char *buf, size_t len) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, len - k, "[");
    for (int i = 0; i < t->ndim && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (k < len) snprintf(buf + k, len - k, "]");
    return buf;
}
