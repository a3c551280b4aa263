/* Parser state shared by the expression parser (parser.c) and the statement parser
 * (parse_stmt.c). */
#ifndef HR_TEMPLATE_PARSER_H
#define HR_TEMPLATE_PARSER_H

#include <stdarg.h>
#include <stdio.h>

#include "template/lexer.h"

typedef struct {
    tpl_arena *a;
    token *t;
    size_t n, i;
    int depth;
} parser;

#define CUR(P) (&(P)->t[(P)->i])

hr_err *hr_perr(parser *P, const token *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *hr_tok_desc(const token *t);
int hr_is_op(const token *t, const char *op);
int hr_is_name(const token *t, const char *n);
hr_err *hr_expect_op(parser *P, const char *op);
expr *hr_new_expr(parser *P, ekind k, const token *at);

hr_err *hr_parse_expression(parser *P, int with_condexpr, expr **out);
/* An error when evaluating e, a statement's expression at the current block depth, would
 * nest deeper than TPL_MAX_DEPTH (the depth rendering counts: blocks plus expression nodes). */
hr_err *hr_tpl_check_nesting(parser *P, const expr *e);
/* Comma-separated expressions; a tuple when there is a comma (or empty parentheses).
 * `extra` lists names that end the tuple (e.g. "in"). */
hr_err *hr_parse_tuple(parser *P, int with_condexpr, int explicit_parens, const char *const *extra,
                       expr **out);
hr_err *hr_parse_postfix(parser *P, expr **node);
hr_err *hr_parse_call_args(parser *P, expr *call);

#endif
