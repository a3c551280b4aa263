/* The template lexer: splits source into text and tag tokens, applying jinja2's
 * whitespace rules (trim_blocks, lstrip_blocks, {%- -%} and {%+ +%}) and its newline
 * normalisation (\r\n -> \n, one trailing newline dropped). */
#ifndef HR_TEMPLATE_LEXER_H
#define HR_TEMPLATE_LEXER_H

#include "template/internal.h"

typedef enum {
    T_TEXT,
    T_VAR_BEGIN,
    T_VAR_END,
    T_BLOCK_BEGIN,
    T_BLOCK_END,
    T_NAME,
    T_STRING,
    T_INT,
    T_FLOAT,
    T_OP,
    T_EOF
} ttype;

typedef struct {
    ttype t;
    int line, col;
    const char *s; /* T_TEXT, T_NAME, T_STRING (unescaped), T_OP: arena-owned */
    size_t n;
    int64_t i;
    double f;
} token;

/* Token strings live in a; the token array *out is on the heap (the caller frees it). */
hr_err *hr_tpl_lex(tpl_arena *a, const char *src, token **out, size_t *n);

#endif
