/* The error measure of the quantized matmul tests: max |y - yf| / sum_k |w_k x_k| over T
 * tokens of y[T, N] against yf, the f32 matmul of the dequantized weight wf[N, K]. */
#ifndef HR_TESTS_QUANT_ERR_H
#define HR_TESTS_QUANT_ERR_H

#include <math.h>

static inline float hr_test_quant_err(const float *y, const float *yf, const float *wf,
                                      const float *x, int T, long N, long K) {
    float worst = 0;
    for (int r = 0; r < T; r++)
        for (long n = 0; n < N; n++) {
            float a = 1e-30f;
            for (long k = 0; k < K; k++)
                a += fabsf(wf[n * K + k] * x[r * K + k]);
            worst = fmaxf(worst, fabsf(y[r * N + n] - yf[r * N + n]) / a);
        }
    return worst;
}

#endif
