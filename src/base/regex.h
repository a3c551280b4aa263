/* PCRE2 through hearth's allocator: a pattern compiled and match data made here allocate
 * (their compile, their JIT compiler, the interpreter's backtracking frames) with
 * malloc/free as libhearth calls them, not PCRE2's own, so out of memory in a regex is an
 * hr_err like any other and the fault sweep reaches it (docs/reliability.md). */
#ifndef HR_BASE_REGEX_H
#define HR_BASE_REGEX_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>
#include <stdint.h>

#include "base/err.h"

/* Compiles pattern with options (PCRE2_*), then JIT-compiles it when it can (else the
 * interpreter runs it: same results). Out of memory: hr_err_oom(); a bad pattern: an error
 * with PCRE2's message and offset. */
hr_err *hr_regex_compile(const char *pattern, uint32_t options, pcre2_code **out);
/* Match data for re (NULL: for 8 pairs of offsets, any pattern); NULL when out of memory.
 * Free with pcre2_match_data_free. */
pcre2_match_data *hr_regex_match_data(const pcre2_code *re);

#endif
