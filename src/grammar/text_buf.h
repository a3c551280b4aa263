/* Growable text for writing grammar sources (GBNF, regexes): the JSON Schema compiler and
 * the server's tool-call grammars build theirs with it. An allocation failure sets oom and
 * later appends do nothing. */
#ifndef HR_GRAMMAR_TEXT_BUF_H
#define HR_GRAMMAR_TEXT_BUF_H

#include <stddef.h>

typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} hr_gbuf;

void hr_gbuf_add(hr_gbuf *b, const char *s, size_t n);
void hr_gbuf_puts(hr_gbuf *b, const char *s);
void hr_gbuf_printf(hr_gbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a GBNF string literal (quotes included). */
void hr_gbuf_lit(hr_gbuf *b, const char *s, size_t n);
void hr_gbuf_free(hr_gbuf *b);

#endif
