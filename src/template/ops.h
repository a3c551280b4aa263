/* Operators and access on template values (ops.c). */
#ifndef HR_TEMPLATE_OPS_H
#define HR_TEMPLATE_OPS_H

#include "template/internal.h"

/* + - * / // % ** with Python's rules. */
hr_err *hr_tv_arith(rt *r, binop op, tv *x, tv *y, tv **out);
/* needle in hay. */
hr_err *hr_tv_contains(tv *hay, tv *needle, int *out);
/* obj[a:b:c]; NULL parts are omitted. */
hr_err *hr_tv_slice(rt *r, tv *obj, tv *a, tv *b, tv *c, tv **out);

#endif
