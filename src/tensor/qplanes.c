/* The planar row layout of qplanes.h: each format is a list of fields (offset and size in its
 * block) and a field's bytes of every block form one plane, planes in list order. */
#include "tensor/qplanes.h"

#include <string.h>

typedef struct {
    int block;         /* bytes of a file block */
    int n;             /* fields */
    int at[4], len[4]; /* the fields in plane order */
} planes;

static const planes *planes_of(hr_dtype t) {
    static const planes q4_0 = {18, 2, {2, 0}, {16, 2}}, q4_1 = {20, 2, {4, 0}, {16, 4}},
                        q5_0 = {22, 3, {6, 2, 0}, {16, 4, 2}},
                        q5_1 = {24, 3, {8, 4, 0}, {16, 4, 4}}, q8_0 = {34, 2, {2, 0}, {32, 2}},
                        q6_k = {210, 4, {0, 128, 192, 208}, {128, 64, 16, 2}};
    switch (t) {
    case HR_Q4_0: return &q4_0;
    case HR_Q4_1: return &q4_1;
    case HR_Q5_0: return &q5_0;
    case HR_Q5_1: return &q5_1;
    case HR_Q8_0: return &q8_0;
    case HR_Q6_K: return &q6_k;
    default: return NULL;
    }
}

int hr_qplanes_has(hr_dtype t) { return planes_of(t) != NULL; }

size_t hr_qplanes_row_bytes(hr_dtype t, int64_t K) { return (hr_dtype_bytes(t, K) + 15) / 16 * 16; }

/* n bytes from a to z, with the sizes the fields have as constants (an inlined move each,
 * not a call per field of every block: an 8B model has about 10^9 of them). */
static inline void copy_field(uint8_t *z, const uint8_t *a, int n) {
    switch (n) {
    case 2: memcpy(z, a, 2); break;
    case 4: memcpy(z, a, 4); break;
    case 16: memcpy(z, a, 16); break;
    case 32: memcpy(z, a, 32); break;
    case 64: memcpy(z, a, 64); break;
    case 128: memcpy(z, a, 128); break;
    default: memcpy(z, a, (size_t)n); break;
    }
}

/* Copies every block's fields between the file row (file) and the planar row (flat). */
static void move(hr_dtype t, uint8_t *file, uint8_t *flat, int64_t K, int to_flat) {
    const planes *p = planes_of(t);
    int64_t nb = K / hr_dtype_get(t)->block;
    size_t plane = 0;
    for (int f = 0; f < p->n; f++) {
        int len = p->len[f];
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *a = file + b * p->block + p->at[f], *z = flat + plane + b * len;
            if (to_flat)
                copy_field(z, a, len);
            else
                copy_field(a, z, len);
        }
        plane += (size_t)nb * (size_t)len;
    }
}

void hr_qplanes_pack(hr_dtype t, void *dst, const void *src, int64_t K) {
    size_t used = hr_dtype_bytes(t, K);
    move(t, (uint8_t *)src, dst, K, 1);
    memset((uint8_t *)dst + used, 0, hr_qplanes_row_bytes(t, K) - used);
}

void hr_qplanes_unpack(hr_dtype t, void *dst, const void *src, int64_t K) {
    move(t, dst, (uint8_t *)src, K, 0);
}
