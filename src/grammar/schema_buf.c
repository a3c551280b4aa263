/* The JSON Schema compiler's growable text buffer and GBNF literal quoting. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/schema_int.h"

void hr_sc_add(hr_sc_buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void hr_sc_puts(hr_sc_buf *b, const char *s) { hr_sc_add(b, s, strlen(s)); }

void hr_sc_printf(hr_sc_buf *b, const char *fmt, ...) {
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
        hr_sc_add(b, tmp, (size_t)n);
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
    hr_sc_add(b, big, (size_t)n);
    free(big);
}

void hr_sc_lit(hr_sc_buf *b, const char *s, size_t n) {
    hr_sc_add(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"') hr_sc_add(b, "\\\"", 2);
        else if (c == '\\') hr_sc_add(b, "\\\\", 2);
        else if (c == '\n') hr_sc_add(b, "\\n", 2);
        else if (c == '\r') hr_sc_add(b, "\\r", 2);
        else if (c == '\t') hr_sc_add(b, "\\t", 2);
        else if (c < 0x20 || c == 0x7f) hr_sc_printf(b, "\\x%02X", c);
        else hr_sc_add(b, (const char *)&s[i], 1);
    }
    hr_sc_add(b, "\"", 1);
}

void hr_sc_buf_free(hr_sc_buf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}
