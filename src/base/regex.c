/* PCRE2 with hearth's allocator; see regex.h. A general context lives only as long as
 * the call that makes a code or match data: both copy its allocator functions. */
#include "base/regex.h"

#include <stdlib.h>

static void *rx_malloc(PCRE2_SIZE n, void *data) { return malloc(n); }
static void rx_free(void *p, void *data) { free(p); }

static pcre2_general_context *general(void) {
    return pcre2_general_context_create(rx_malloc, rx_free, NULL);
}

/* The pattern compiled with gc's allocator; *ec is PCRE2's error code when it is not. */
static pcre2_code *compile_with(pcre2_general_context *gc, const char *pattern, uint32_t options,
                                int *ec, PCRE2_SIZE *eo) {
    pcre2_compile_context *cc = pcre2_compile_context_create(gc);
    if (!cc) return *ec = PCRE2_ERROR_HEAP_FAILED, NULL;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, options, ec, eo, cc);
    pcre2_compile_context_free(cc);
    return re;
}

hr_err *hr_regex_compile(const char *pattern, uint32_t options, pcre2_code **out) {
    int ec = PCRE2_ERROR_HEAP_FAILED;
    PCRE2_SIZE eo = 0;
    pcre2_general_context *gc = general();
    *out = gc ? compile_with(gc, pattern, options, &ec, &eo) : NULL;
    pcre2_general_context_free(gc);
    if (*out) {
        pcre2_jit_compile(*out, PCRE2_JIT_COMPLETE); /* failed (no memory): the interpreter */
        return NULL;
    }
    if (ec == PCRE2_ERROR_HEAP_FAILED) return hr_err_oom();
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(ec, msg, sizeof msg);
    return hr_errf("regex \"%.200s\" at offset %zu: %s", pattern, (size_t)eo, (char *)msg);
}

pcre2_match_data *hr_regex_match_data(const pcre2_code *re) {
    pcre2_general_context *gc = general();
    pcre2_match_data *md = !gc  ? NULL
                           : re ? pcre2_match_data_create_from_pattern(re, gc)
                                : pcre2_match_data_create(8, gc);
    pcre2_general_context_free(gc);
    return md;
}
