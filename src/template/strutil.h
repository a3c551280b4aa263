/* String helpers shared by filters and methods (strutil.c): Python's whitespace,
 * strip with a character set, case mapping through utf8proc, html escape. */
#ifndef HR_TEMPLATE_STRUTIL_H
#define HR_TEMPLATE_STRUTIL_H

#include "template/internal.h"

int hr_py_isspace(uint32_t cp);
/* Python str.strip/lstrip/rstrip: chars NULL or None strips whitespace. which: 1 left,
 * 2 right, 3 both. */
hr_err *hr_str_strip(rt *r, const tv *s, const tv *chars, int which, tv **out);
/* mode: 'u' upper, 'l' lower, 'c' capitalize (Python), 't' title (Python str.title). */
hr_err *hr_str_case(rt *r, const tv *s, char mode, tv **out);
/* Python str.split / rsplit (sep NULL or None: runs of whitespace). */
hr_err *hr_str_split(rt *r, const tv *s, const tv *sep, int64_t maxsplit, int from_right, tv **out);
hr_err *hr_str_replace(rt *r, const tv *s, const tv *old, const tv *new_, int64_t count, tv **out);
/* Occurrences of sub (non-overlapping). */
size_t hr_str_count(const tv *s, const tv *sub);
/* Code-point index of the first (or last) sub, or -1. */
int64_t hr_str_find(const tv *s, const tv *sub, int last);
/* Requires a str argument, naming the function in the error. */
hr_err *hr_need_str(const tv *v, const char *fn);

#endif
