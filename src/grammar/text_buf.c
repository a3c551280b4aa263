/* Growable text for grammar sources and GBNF literal quoting (text_buf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/text_buf.h"

void hr_gbuf_add(hr_gbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n); /* s may be NULL then (an empty buffer that failed) */
    b->n += n;
    b->p[b->n] = 0;
}

void hr_gbuf_puts(hr_gbuf *b, const char *s) { hr_gbuf_add(b, s, strlen(s)); }

void hr_gbuf_printf(hr_gbuf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    if ((size_t)n < sizeof tmp) {
        hr_gbuf_add(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    hr_gbuf_add(b, big, (size_t)n);
    free(big);
}

void hr_gbuf_lit(hr_gbuf *b, const char *s, size_t n) {
    hr_gbuf_add(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"')
            hr_gbuf_add(b, "\\\"", 2);
        else if (c == '\\')
            hr_gbuf_add(b, "\\\\", 2);
        else if (c == '\n')
            hr_gbuf_add(b, "\\n", 2);
        else if (c == '\r')
            hr_gbuf_add(b, "\\r", 2);
        else if (c == '\t')
            hr_gbuf_add(b, "\\t", 2);
        else if (c < 0x20 || c == 0x7f)
            hr_gbuf_printf(b, "\\x%02X", c);
        else
            hr_gbuf_add(b, (const char *)&s[i], 1);
    }
    hr_gbuf_add(b, "\"", 1);
}

void hr_gbuf_free(hr_gbuf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}
