/* A tiny test harness: each tests/unit/test_*.c has a main that calls HR_RUN on its test
 * functions and returns hr_test_summary(). Output lines: "ok NAME" / "FAIL NAME: why",
 * then "# N passed, M failed" which tests/run.sh adds up. HEARTH_TEST_SKIP="exe:fn ..."
 * leaves out the named test functions of the named executables (tests/run_tsan.sh). */
#ifndef HR_TESTS_HARNESS_H
#define HR_TESTS_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int hr_t_passed, hr_t_failed, hr_t_cur_failed;
static const char *hr_t_cur;

#define HR_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (!hr_t_cur_failed)                                                                  \
                printf("FAIL %s: ", hr_t_cur);                                                     \
            else                                                                                   \
                printf("     %s: ", hr_t_cur);                                                     \
            printf("%s:%d: ", __FILE__, __LINE__);                                                 \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            hr_t_cur_failed = 1;                                                                   \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* Checks an hr_err * is NULL, printing and freeing it otherwise. */
#define HR_CHECK_OK(expr)                                                                          \
    do {                                                                                           \
        hr_err *hr_t_e = (expr);                                                                   \
        if (hr_t_e) {                                                                              \
            printf("FAIL %s: %s:%d: %s\n", hr_t_cur, __FILE__, __LINE__, hr_err_msg(hr_t_e));      \
            hr_err_free(hr_t_e);                                                                   \
            hr_t_cur_failed = 1;                                                                   \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* Whether HEARTH_TEST_SKIP names test function fn of this executable ("exe:fn"). */
static inline int hr_t_skipped(const char *fn) {
    const char *skip = getenv("HEARTH_TEST_SKIP");
    char path[4096];
    ssize_t n = skip && *skip ? readlink("/proc/self/exe", path, sizeof path - 1) : -1;
    if (n <= 0) return 0;
    path[n] = 0;
    const char *exe = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t le = strlen(exe), lf = strlen(fn);
    for (const char *p = skip + strspn(skip, " \n"); *p; p += strspn(p, " \n")) {
        size_t len = strcspn(p, " \n");
        if (len == le + 1 + lf && !strncmp(p, exe, le) && p[le] == ':' &&
            !strncmp(p + le + 1, fn, lf))
            return 1;
        p += len;
    }
    return 0;
}

#define HR_RUN(fn)                                                                                 \
    do {                                                                                           \
        if (hr_t_skipped(#fn)) break;                                                              \
        hr_t_cur = #fn;                                                                            \
        hr_t_cur_failed = 0;                                                                       \
        fn();                                                                                      \
        if (hr_t_cur_failed)                                                                       \
            hr_t_failed++;                                                                         \
        else {                                                                                     \
            hr_t_passed++;                                                                         \
            printf("ok %s\n", #fn);                                                                \
        }                                                                                          \
        fflush(stdout);                                                                            \
    } while (0)

static inline int hr_test_summary(void) {
    printf("# %d passed, %d failed\n", hr_t_passed, hr_t_failed);
    return hr_t_failed ? 1 : 0;
}

/* Path of a fixture under ../shared/fixtures (HEARTH_SHARED overrides ../shared). */
static inline const char *hr_fixture(const char *rel) {
    static char buf[4][1024];
    static int slot;
    const char *root = getenv("HEARTH_SHARED");
    if (!root) root = "../shared";
    char *b = buf[slot++ & 3];
    snprintf(b, sizeof buf[0], "%s/fixtures/%s", root, rel);
    return b;
}

/* Removes a test's scratch directory tree (rm -rf), saying so when it cannot. */
static inline void hr_test_remove_tree(const char *dir) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("# cannot remove %s\n", dir);
}

#endif
