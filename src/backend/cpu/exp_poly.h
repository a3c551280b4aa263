/* Cephes' expf, shared by the SIMD levels' exp (kernels_avx2.c, kernels_avx512.c) as macros
 * over the level's intrinsics: x = n ln2 + r with ln2 in two parts (REDUCE), then e^r by a
 * degree-6 polynomial (POLY); the caller scales by 2^n. Within 2 ulp of expf. */
#ifndef HR_BACKEND_CPU_EXP_POLY_H
#define HR_BACKEND_CPU_EXP_POLY_H

#define HR_EXP_LOG2E 1.44269504f
#define HR_EXP_REDUCE(n, x, FNMA, SET1)                                                            \
    FNMA(n, SET1(-2.12194440e-4f), FNMA(n, SET1(0.693359375f), x))
#define HR_EXP_POLY(r, FMA, MUL, ADD, SET1)                                                        \
    FMA(FMA(FMA(FMA(FMA(FMA(SET1(1.9875691500e-4f), r, SET1(1.3981999507e-3f)), r,                 \
                        SET1(8.3334519073e-3f)),                                                   \
                    r, SET1(4.1665795894e-2f)),                                                    \
                r, SET1(1.6666665459e-1f)),                                                        \
            r, SET1(5.0000001201e-1f)),                                                            \
        MUL(r, r), ADD(r, SET1(1.0f)))

#endif
