/* dtype table and IEEE half conversions; see dtype.h. */
#include "tensor/dtype.h"

static const hr_dtype_info infos[HR_DTYPE_COUNT] = {
    [HR_F32] = {"F32", 1, 4, 0},         [HR_F16] = {"F16", 1, 2, 0},
    [HR_BF16] = {"BF16", 1, 2, 0},       [HR_I8] = {"I8", 1, 1, 0},
    [HR_U8] = {"U8", 1, 1, 0},           [HR_I32] = {"I32", 1, 4, 0},
    [HR_U32] = {"U32", 1, 4, 0},         [HR_I64] = {"I64", 1, 8, 0},
    [HR_Q8_0] = {"Q8_0", 32, 34, 1},     [HR_Q4_0] = {"Q4_0", 32, 18, 1},
    [HR_Q4_1] = {"Q4_1", 32, 20, 1},     [HR_Q5_0] = {"Q5_0", 32, 22, 1},
    [HR_Q5_1] = {"Q5_1", 32, 24, 1},     [HR_Q2_K] = {"Q2_K", 256, 84, 1},
    [HR_Q3_K] = {"Q3_K", 256, 110, 1},   [HR_Q4_K] = {"Q4_K", 256, 144, 1},
    [HR_Q5_K] = {"Q5_K", 256, 176, 1},   [HR_Q6_K] = {"Q6_K", 256, 210, 1},
    [HR_IQ4_NL] = {"IQ4_NL", 32, 18, 1}, [HR_IQ4_XS] = {"IQ4_XS", 256, 136, 1},
    [HR_MLX_Q2] = {"MLX_Q2", 32, 8, 1},  [HR_MLX_Q3] = {"MLX_Q3", 32, 12, 1},
    [HR_MLX_Q4] = {"MLX_Q4", 32, 16, 1}, [HR_MLX_Q5] = {"MLX_Q5", 32, 20, 1},
    [HR_MLX_Q6] = {"MLX_Q6", 32, 24, 1}, [HR_MLX_Q8] = {"MLX_Q8", 32, 32, 1},
};

const hr_dtype_info *hr_dtype_get(hr_dtype t) { return &infos[t]; }

size_t hr_dtype_bytes(hr_dtype t, int64_t n) {
    const hr_dtype_info *i = &infos[t];
    return (size_t)(n / i->block) * (size_t)i->block_bytes;
}

float hr_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, u;
    if (exp == 0) {
        if (mant == 0) {
            u = sign;
        } else {
            exp = 127 - 15 + 1;
            while (!(mant & 0x400)) {
                mant <<= 1;
                exp--;
            }
            u = sign | (exp << 23) | ((mant & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (mant << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t hr_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000;
    int32_t exp = (int32_t)((u >> 23) & 0xff) - 127 + 15;
    uint32_t mant = u & 0x7fffff;
    if (((u >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        mant |= 0x800000;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;
    return (uint16_t)half;
}
