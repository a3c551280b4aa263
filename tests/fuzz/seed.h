/* What the seed corpus writers (tests/fuzz/seed_*.c, each its own program) share: writing
 * one corpus file, and a corpus of strings as DIR/seed0, seed1, ... Both return 0, or 1
 * after saying on stderr which file could not be written. */
#ifndef HR_TESTS_FUZZ_SEED_H
#define HR_TESTS_FUZZ_SEED_H

#include <stdio.h>
#include <string.h>

static inline int seed_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, n, f) == n;
    if (f) ok &= fclose(f) == 0;
    if (!ok) fprintf(stderr, "seed: cannot write %s\n", path);
    return ok ? 0 : 1;
}

static inline int seed_strings(const char *dir, const char *const *seeds, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/seed%zu", dir, i);
        if (seed_file(path, seeds[i], strlen(seeds[i]))) return 1;
    }
    return 0;
}

#endif
