/* Seed corpus for fuzz_safetensors: writes small valid .safetensors files into the folder
 * argv[1] (hr_st_write): one tensor of every dtype the reader takes, a byte tensor first so
 * the next ones are misaligned (copied by the reader), a 0-element tensor, a file with no
 * tensor, and a 3-D and a 4-D shape. Each is well under a KiB, so the fuzzer mutates the
 * header rather than tensor bytes. */
#include <stdio.h>
#include <string.h>

#include "model/safetensors.h"

static hr_err *fill(void *ctx, int index, size_t offset, void *buf, size_t len) {
    unsigned char *b = buf;
    for (size_t i = 0; i < len; i++)
        b[i] = (unsigned char)(index * 31 + (int)(offset + i) * 7);
    return NULL;
}

static int save(const char *dir, const char *name, const hr_st_spec *specs, int n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, name);
    hr_err *e = hr_st_write(path, specs, n, fill, NULL);
    if (e) fprintf(stderr, "seed_safetensors: %s: %s\n", name, hr_err_msg(e));
    int bad = e != NULL;
    hr_err_free(e);
    return bad;
}

int main(int argc, char **argv) {
    if (argc != 2) return fprintf(stderr, "usage: seed_safetensors DIR\n"), 2;
    const char *dir = argv[1];
    const hr_st_spec every[] = {
        {"u8", HR_U8, 1, {3}},        {"f32", HR_F32, 2, {2, 3}}, {"f16", HR_F16, 1, {5}},
        {"bf16", HR_BF16, 2, {3, 2}}, {"i8", HR_I8, 1, {2}},      {"i32", HR_I32, 1, {2}},
        {"u32", HR_U32, 1, {3}},      {"i64", HR_I64, 1, {2}},
    };
    const hr_st_spec shapes[] = {
        {"model.embed_tokens.weight", HR_BF16, 2, {8, 4}},
        {"empty", HR_F32, 2, {0, 4}},
        {"cube", HR_F16, 3, {2, 2, 2}},
        {"scalar", HR_F32, 0, {0}},
        {"four", HR_I8, 4, {1, 2, 1, 2}},
    };
    int bad = save(dir, "every_dtype", every, (int)(sizeof every / sizeof *every));
    bad |= save(dir, "shapes", shapes, (int)(sizeof shapes / sizeof *shapes));
    bad |= save(dir, "one", shapes, 1);
    bad |= save(dir, "none", shapes, 0);
    return bad;
}
