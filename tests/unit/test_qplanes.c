/* The planar row layout (tensor/qplanes.h): a packed row is the fields of its blocks plane by
 * plane at the offsets qplanes.h gives, the padding is zero, and unpacking gives the file row
 * back, for row lengths whose bytes are and are not a multiple of 16. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tensor/qplanes.h"

static void fill(uint8_t *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)((i * 131u + seed * 17u) >> 3 ^ i);
}

/* Byte i of block b's field [at, at + len) sits at plane + b * len + i. */
static int field_at(const uint8_t *flat, const uint8_t *file, int block, int64_t nb, size_t plane,
                    int at, int len) {
    for (int64_t b = 0; b < nb; b++)
        if (memcmp(flat + plane + b * len, file + b * block + at, (size_t)len)) return 0;
    return 1;
}

/* Each type's block fields in plane order (qplanes.h), as {offset, size} pairs. */
typedef struct {
    hr_dtype t;
    int n, f[4][2];
} layout;

static const layout layouts[] = {
    {HR_Q4_0, 2, {{2, 16}, {0, 2}}},
    {HR_Q4_1, 2, {{4, 16}, {0, 4}}},
    {HR_Q5_0, 3, {{6, 16}, {2, 4}, {0, 2}}},
    {HR_Q5_1, 3, {{8, 16}, {4, 4}, {0, 4}}},
    {HR_Q8_0, 2, {{2, 32}, {0, 2}}},
    {HR_Q6_K, 4, {{0, 128}, {128, 64}, {192, 16}, {208, 2}}},
};
enum { N_LAYOUTS = sizeof layouts / sizeof *layouts };

static void check_type(const layout *l, int64_t K) {
    hr_dtype t = l->t;
    size_t fb = hr_dtype_bytes(t, K), pb = hr_qplanes_row_bytes(t, K);
    uint8_t *file = malloc(fb), *flat = malloc(pb), *back = malloc(fb);
    fill(file, fb, (unsigned)K);
    memset(flat, 0xAA, pb);
    hr_qplanes_pack(t, flat, file, K);
    int64_t nb = K / hr_dtype_get(t)->block;
    int ok = pb % 16 == 0 && pb >= fb && pb < fb + 16;
    for (size_t i = fb; i < pb; i++)
        ok &= flat[i] == 0;
    size_t plane = 0;
    for (int i = 0; i < l->n; plane += (size_t)nb * (size_t)l->f[i][1], i++)
        ok &= field_at(flat, file, hr_dtype_get(t)->block_bytes, nb, plane, l->f[i][0], l->f[i][1]);
    ok &= plane == fb;
    hr_qplanes_unpack(t, back, flat, K);
    ok &= memcmp(back, file, fb) == 0;
    HR_CHECK(ok, "%s K=%lld: planes at their offsets, padding zero, unpack inverts pack",
             hr_dtype_name(t), (long long)K);
    free(file), free(flat), free(back);
}

/* Row lengths whose bytes are and are not a multiple of 16, odd block counts among them. */
static void test_layouts(void) {
    const int64_t q0[] = {32, 96, 160, 256, 4096, 14336},
                  qk[] = {256, 768, 1024, 2048, 3072, 14336};
    for (int i = 0; i < N_LAYOUTS; i++)
        for (int k = 0; k < 6; k++)
            check_type(&layouts[i], layouts[i].t == HR_Q6_K ? qk[k] : q0[k]);
}

static void test_which(void) {
    HR_CHECK(hr_qplanes_has(HR_Q4_0) && hr_qplanes_has(HR_Q4_1) && hr_qplanes_has(HR_Q5_0) &&
                 hr_qplanes_has(HR_Q5_1) && hr_qplanes_has(HR_Q8_0) && hr_qplanes_has(HR_Q6_K),
             "Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q6_K have planes");
    HR_CHECK(!hr_qplanes_has(HR_Q4_K) && !hr_qplanes_has(HR_Q5_K) && !hr_qplanes_has(HR_F16),
             "Q4_K, Q5_K, F16 have none");
}

int main(void) {
    HR_RUN(test_which);
    HR_RUN(test_layouts);
    return hr_test_summary();
}
