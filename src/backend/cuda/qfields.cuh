/* Fields of GGUF blocks that both quantized-weight kernels read (qmatmul.cu, mmvq.cu): an f16
 * at a 2-byte-aligned address, the fifth bits of 5-bit codes and the 6-bit scale / min of a
 * Q4_K / Q5_K sub-block, as tensor/quant.c decodes them. */
#ifndef HR_BACKEND_CUDA_QFIELDS_CUH
#define HR_BACKEND_CUDA_QFIELDS_CUH

#include "backend/cuda/common.cuh"

static __device__ __forceinline__ float hr_q_f16(const uint8_t *p) {
    return __half2float(__ushort_as_half(*(const unsigned short *)p));
}

/* Bit k of the low 4 bits of t to bit 4 of byte k (the fifth bit of 5-bit codes). */
static __device__ __forceinline__ uint32_t hr_q_fifth_bits(uint32_t t) {
    return ((t & 15u) * 0x00204081u & 0x01010101u) << 4;
}

/* Sub-block j's scale and min from a super-block's 12 packed scale bytes s. */
static __device__ __forceinline__ void hr_q_k4_scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

#endif
