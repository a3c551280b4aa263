/* The quantized matmul's definition on the CPU, shared by the quantized matmul tests: y[T, N]
 * of x[T, K] (each row quantized as the matmul quantizes it) and an uploaded weight dev: for a
 * weight the backend repacked (dev->row_tile, qrepack.h), the C tile over its whole tiles; this
 * level's row dot for every other row (rows past the tiles stay row-major where they were). */
#ifndef HR_TESTS_QREF_H
#define HR_TESTS_QREF_H

#include <stdlib.h>
#include <string.h>

#include "backend/cpu/qdot.h"
#include "backend/cpu/qrepack.h"
#include "tensor/tensor.h"

static inline void hr_test_qref(float *y, const float *x, const hr_tensor *dev, int T) {
    hr_dtype t = dev->dtype;
    long N = dev->shape[0], K = dev->shape[1], nb = K / 32;
    long whole = dev->row_tile ? N / HR_QROWS * HR_QROWS : 0;
    size_t xs = hr_qx_row_bytes(K), tb = hr_dtype_bytes(t, HR_QROWS * K), rb = hr_dtype_bytes(t, K);
    char *xq = aligned_alloc(64, (xs * (size_t)T + 63) / 64 * 64);
    for (int r = 0; r < T; r++) {
        hr_qx_quantize(t, x + r * K, xq + r * xs, K);
        for (long s = 0; s < whole; s += HR_QROWS)
            hr_cpu_qdots_ref.rows1[t]((const char *)dev->data + s / HR_QROWS * tb, xq + r * xs, xs,
                                      nb, y + r * N + s);
        for (long n = whole; n < N; n++)
            y[r * N + n] =
                hr_cpu_qdots_get()->dot[t]((const char *)dev->data + n * rb, xq + r * xs, nb);
    }
    free(xq);
}

#endif
