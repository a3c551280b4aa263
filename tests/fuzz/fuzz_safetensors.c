/* libFuzzer target: the input as a .safetensors file (header length, JSON header, data),
 * opened through the reader's own path (hr_st_open of a file, rewritten per input) and, when
 * it is accepted, every tensor looked up by name and its first and last byte read. Must
 * never crash, leak or read outside the file. Seeds: seed_safetensors.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/safetensors.h"

static volatile uint64_t sink;
static char path[256];

static void walk(const hr_safetensors *st) {
    for (int i = 0; i < hr_st_count(st); i++) {
        const hr_tensor *t = hr_st_get(st, hr_st_name(st, i));
        size_t n = t ? hr_tensor_bytes(t) : 0;
        if (n) sink += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[n - 1];
    }
    sink += hr_st_data_bytes(st) + (uint64_t)hr_st_main_dtype(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!path[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/fuzz_safetensors.%d.safetensors", tmp ? tmp : "/tmp",
                 (int)getpid());
    }
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(data, 1, size, f) == size;
    if (fclose(f) || !ok) return 0;
    hr_safetensors *st = NULL;
    hr_err *e = hr_st_open(path, &st);
    if (!e) walk(st);
    hr_err_free(e);
    hr_st_close(st);
    unlink(path);
    return 0;
}
