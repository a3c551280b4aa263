/* Expression parser: jinja2's grammar and precedence (condexpr < or < and < not <
 * comparisons < + - < ~ < * / // % < ** < unary < postfix/filters/tests), building
 * arena-owned expr nodes. Statements are parsed in parse_stmt.c. */
#include <string.h>

#include "template/parser.h"

hr_err *hr_perr(parser *P, const token *t, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hr_errf("template syntax error at line %d, column %d: %s", t->line, t->col, msg);
}

const char *hr_tok_desc(const token *t) {
    switch (t->t) {
    case T_TEXT: return "template data";
    case T_VAR_BEGIN: return "begin of print statement";
    case T_VAR_END: return "end of print statement";
    case T_BLOCK_BEGIN: return "begin of statement block";
    case T_BLOCK_END: return "end of statement block";
    case T_STRING: return "string";
    case T_INT: return "integer";
    case T_FLOAT: return "float";
    case T_EOF: return "end of template";
    default: return t->s;
    }
}

int hr_is_op(const token *t, const char *op) { return t->t == T_OP && strcmp(t->s, op) == 0; }
int hr_is_name(const token *t, const char *n) { return t->t == T_NAME && strcmp(t->s, n) == 0; }

hr_err *hr_expect_op(parser *P, const char *op) {
    if (!hr_is_op(CUR(P), op))
        return hr_perr(P, CUR(P), "expected '%s', got '%s'", op, hr_tok_desc(CUR(P)));
    P->i++;
    return NULL;
}

expr *hr_new_expr(parser *P, ekind k, const token *at) {
    expr *e = hr_ta_alloc(P->a, sizeof *e);
    if (!e) return NULL;
    e->k = k;
    e->line = at->line;
    e->col = at->col;
    return e;
}

/* A growable array of expr * in the arena. */
typedef struct {
    expr **v;
    size_t n, cap;
} evec;

static int evec_push(parser *P, evec *v, expr *e) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 4;
        expr **n = hr_ta_alloc(P->a, cap * sizeof *n);
        if (!n) return 0;
        if (v->n) memcpy(n, v->v, v->n * sizeof *n);
        v->v = n;
        v->cap = cap;
    }
    v->v[v->n++] = e;
    return 1;
}

static hr_err *parse_or(parser *P, expr **out);
static hr_err *parse_unary(parser *P, int with_filter, expr **out);

#define NEW(var, kind, at)                                                                         \
    do {                                                                                           \
        if (!((var) = hr_new_expr(P, (kind), (at)))) return hr_err_oom();                          \
    } while (0)

static hr_err *enter(parser *P) {
    if (++P->depth > TPL_MAX_DEPTH)
        return hr_perr(P, CUR(P), "expression nested too deeply (more than %d levels)",
                       TPL_MAX_DEPTH);
    return NULL;
}

/* Operator chains (a + b + ... , a.b.c, x|f|g) parse in loops but make trees as deep as
 * they are long, and evaluation recurses down them: e at `depth` must keep its deepest
 * node within TPL_MAX_DEPTH. The walk stops at the limit, so its own recursion is bounded. */
static hr_err *check_node(const expr *e, int depth) {
    if (!e) return NULL;
    if (depth > TPL_MAX_DEPTH)
        return hr_errf("template syntax error at line %d, column %d: expression nested too deeply "
                       "(more than %d levels)",
                       e->line, e->col, TPL_MAX_DEPTH);
    const expr *kids[] = {e->a, e->b, e->c, e->d};
    for (int i = 0; i < 4; i++)
        HR_TRY(check_node(kids[i], depth + 1));
    for (size_t i = 0; i < e->n; i++)
        HR_TRY(check_node(e->items[i], depth + 1));
    for (size_t i = 0; i < e->nkw; i++)
        HR_TRY(check_node(e->kwv[i], depth + 1));
    return NULL;
}

hr_err *hr_tpl_check_nesting(parser *P, const expr *e) { return check_node(e, P->depth + 1); }

/* The parser's recursion passes parse_unary (or the else of an inline if, or `not`) once
 * per level, and each counts against TPL_MAX_DEPTH. */
hr_err *hr_parse_expression(parser *P, int with_condexpr, expr **out) {
    HR_TRY(parse_or(P, out));
    while (with_condexpr && hr_is_name(CUR(P), "if")) {
        const token *at = CUR(P);
        P->i++;
        expr *c;
        NEW(c, E_COND, at);
        c->b = *out;
        HR_TRY(parse_or(P, &c->a));
        if (hr_is_name(CUR(P), "else")) {
            P->i++;
            HR_TRY(enter(P));
            HR_TRY(hr_parse_expression(P, 1, &c->c));
            P->depth--;
        }
        *out = c;
    }
    return NULL;
}

static hr_err *parse_logic(parser *P, const char *word, ekind k, hr_err *(*sub)(parser *, expr **),
                           expr **out) {
    HR_TRY(sub(P, out));
    while (hr_is_name(CUR(P), word)) {
        expr *e;
        NEW(e, k, CUR(P));
        P->i++;
        e->a = *out;
        HR_TRY(sub(P, &e->b));
        *out = e;
    }
    return NULL;
}

static hr_err *parse_compare(parser *P, expr **out);

static hr_err *parse_not(parser *P, expr **out) {
    if (!hr_is_name(CUR(P), "not")) return parse_compare(P, out);
    expr *e;
    NEW(e, E_NOT, CUR(P));
    P->i++;
    HR_TRY(enter(P));
    HR_TRY(parse_not(P, &e->a));
    P->depth--;
    *out = e;
    return NULL;
}

static hr_err *parse_and(parser *P, expr **out) {
    return parse_logic(P, "and", E_AND, parse_not, out);
}
static hr_err *parse_or(parser *P, expr **out) {
    return parse_logic(P, "or", E_OR, parse_and, out);
}

static hr_err *parse_bin(parser *P, const char *const *ops, const binop *codes,
                         hr_err *(*sub)(parser *, expr **), expr **out) {
    HR_TRY(sub(P, out));
    for (;;) {
        int k = -1;
        for (int j = 0; ops[j]; j++)
            if (hr_is_op(CUR(P), ops[j])) k = j;
        if (k < 0) return NULL;
        expr *e;
        NEW(e, E_BIN, CUR(P));
        P->i++;
        e->op = codes[k];
        e->a = *out;
        HR_TRY(sub(P, &e->b));
        *out = e;
    }
}

static hr_err *parse_pow_wrap(parser *P, expr **out);
static hr_err *parse_math2(parser *P, expr **out) {
    static const char *const ops[] = {"*", "/", "//", "%", NULL};
    static const binop codes[] = {OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD};
    return parse_bin(P, ops, codes, parse_pow_wrap, out);
}

static hr_err *parse_concat(parser *P, expr **out) {
    HR_TRY(parse_math2(P, out));
    if (!hr_is_op(CUR(P), "~")) return NULL;
    evec v = {0};
    expr *e;
    NEW(e, E_CONCAT, CUR(P));
    if (!evec_push(P, &v, *out)) return hr_err_oom();
    while (hr_is_op(CUR(P), "~")) {
        P->i++;
        expr *x;
        HR_TRY(parse_math2(P, &x));
        if (!evec_push(P, &v, x)) return hr_err_oom();
    }
    e->items = v.v;
    e->n = v.n;
    *out = e;
    return NULL;
}

static hr_err *parse_math1(parser *P, expr **out) {
    static const char *const ops[] = {"+", "-", NULL};
    static const binop codes[] = {OP_ADD, OP_SUB};
    return parse_bin(P, ops, codes, parse_concat, out);
}

static int compare_op(parser *P, binop *op) {
    static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">=", NULL};
    static const binop codes[] = {OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE};
    for (int j = 0; ops[j]; j++)
        if (hr_is_op(CUR(P), ops[j])) {
            *op = codes[j];
            P->i++;
            return 1;
        }
    if (hr_is_name(CUR(P), "in")) {
        *op = OP_IN;
        P->i++;
        return 1;
    }
    if (hr_is_name(CUR(P), "not") && hr_is_name(&P->t[P->i + 1], "in")) {
        *op = OP_NOTIN;
        P->i += 2;
        return 1;
    }
    return 0;
}

/* a < b < c means (a < b) and (b < c), as in Python. */
static hr_err *parse_compare(parser *P, expr **out) {
    HR_TRY(parse_math1(P, out));
    expr *prev = *out, *acc = NULL;
    const token *at = CUR(P);
    binop op;
    while (compare_op(P, &op)) {
        expr *e, *rhs;
        NEW(e, E_BIN, at);
        HR_TRY(parse_math1(P, &rhs));
        e->op = op;
        e->a = prev;
        e->b = rhs;
        if (acc) {
            expr *both;
            NEW(both, E_AND, at);
            both->a = acc;
            both->b = e;
            acc = both;
        } else
            acc = e;
        prev = rhs;
        at = CUR(P);
    }
    if (acc) *out = acc;
    return NULL;
}

static hr_err *parse_pow_wrap(parser *P, expr **out) {
    HR_TRY(parse_unary(P, 1, out));
    while (hr_is_op(CUR(P), "**")) {
        expr *e;
        NEW(e, E_BIN, CUR(P));
        P->i++;
        e->op = OP_POW;
        e->a = *out;
        HR_TRY(parse_unary(P, 1, &e->b));
        *out = e;
    }
    return NULL;
}

/* Items up to `close`, separated by commas (a trailing comma allowed). */
static hr_err *parse_seq(parser *P, const char *close, int dict, evec *v) {
    while (!hr_is_op(CUR(P), close)) {
        if (v->n) {
            HR_TRY(hr_expect_op(P, ","));
            if (hr_is_op(CUR(P), close)) break;
        }
        expr *x;
        HR_TRY(hr_parse_expression(P, 1, &x));
        if (!evec_push(P, v, x)) return hr_err_oom();
        if (dict) {
            HR_TRY(hr_expect_op(P, ":"));
            HR_TRY(hr_parse_expression(P, 1, &x));
            if (!evec_push(P, v, x)) return hr_err_oom();
        }
    }
    P->i++;
    return NULL;
}

static int tuple_end(parser *P, const char *const *extra) {
    const token *t = CUR(P);
    if (t->t == T_VAR_END || t->t == T_BLOCK_END || t->t == T_EOF || hr_is_op(t, ")")) return 1;
    for (int i = 0; extra && extra[i]; i++)
        if (hr_is_name(t, extra[i])) return 1;
    return 0;
}

hr_err *hr_parse_tuple(parser *P, int with_condexpr, int explicit_parens, const char *const *extra,
                       expr **out) {
    const token *at = CUR(P);
    evec v = {0};
    int is_tuple = 0;
    for (;;) {
        if (v.n) HR_TRY(hr_expect_op(P, ","));
        if (tuple_end(P, extra)) break;
        expr *x;
        HR_TRY(hr_parse_expression(P, with_condexpr, &x));
        if (!evec_push(P, &v, x)) return hr_err_oom();
        if (hr_is_op(CUR(P), ","))
            is_tuple = 1;
        else
            break;
    }
    if (!is_tuple && v.n) {
        *out = v.v[0];
        return NULL;
    }
    if (!is_tuple && !explicit_parens)
        return hr_perr(P, CUR(P), "Expected an expression, got '%s'", hr_tok_desc(CUR(P)));
    NEW(*out, E_TUPLE, at);
    (*out)->items = v.v;
    (*out)->n = v.n;
    return NULL;
}

static hr_err *parse_const(parser *P, expr **out) {
    const token *t = CUR(P);
    tv *v = NULL;
    if (t->t == T_INT)
        v = hr_tv_int(P->a, t->i);
    else if (t->t == T_FLOAT)
        v = hr_tv_float(P->a, t->f);
    else if (t->t == T_STRING) { /* adjacent strings concatenate */
        size_t n = 0, j = P->i;
        for (; P->t[j].t == T_STRING; j++)
            n += P->t[j].n;
        char *s = hr_ta_alloc(P->a, n + 1);
        if (!s) return hr_err_oom();
        for (n = 0; CUR(P)->t == T_STRING; P->i++) {
            memcpy(s + n, CUR(P)->s, CUR(P)->n);
            n += CUR(P)->n;
        }
        P->i--;
        v = hr_tv_strn(P->a, s, n);
    }
    if (!v) return hr_err_oom();
    NEW(*out, E_CONST, t);
    (*out)->cval = v;
    P->i++;
    return NULL;
}

static hr_err *parse_name(parser *P, expr **out) {
    const token *t = CUR(P);
    P->i++;
    tv *c = NULL;
    if (!strcmp(t->s, "true") || !strcmp(t->s, "True"))
        c = TV_TRUE;
    else if (!strcmp(t->s, "false") || !strcmp(t->s, "False"))
        c = TV_FALSE;
    else if (!strcmp(t->s, "none") || !strcmp(t->s, "None"))
        c = TV_NONE;
    NEW(*out, c ? E_CONST : E_NAME, t);
    (*out)->cval = c;
    (*out)->name = t->s;
    return NULL;
}

static hr_err *parse_primary(parser *P, expr **out) {
    const token *t = CUR(P);
    if (t->t == T_NAME) return parse_name(P, out);
    if (t->t == T_STRING || t->t == T_INT || t->t == T_FLOAT) return parse_const(P, out);
    if (!hr_is_op(t, "(") && !hr_is_op(t, "[") && !hr_is_op(t, "{"))
        return hr_perr(P, t, "unexpected '%s'", hr_tok_desc(t));
    P->i++;
    if (hr_is_op(t, "(")) {
        HR_TRY(hr_parse_tuple(P, 1, 1, NULL, out));
        return hr_expect_op(P, ")");
    }
    evec v = {0};
    HR_TRY(parse_seq(P, hr_is_op(t, "[") ? "]" : "}", hr_is_op(t, "{"), &v));
    NEW(*out, hr_is_op(t, "[") ? E_LIST : E_DICT, t);
    (*out)->items = v.v;
    (*out)->n = v.n;
    return NULL;
}

/* Call arguments after '(': positional, then name=value. */
hr_err *hr_parse_call_args(parser *P, expr *call) {
    HR_TRY(hr_expect_op(P, "("));
    evec pos = {0}, kwv = {0};
    const char **kwn = NULL;
    while (!hr_is_op(CUR(P), ")")) {
        if (pos.n + kwv.n) HR_TRY(hr_expect_op(P, ","));
        if (hr_is_op(CUR(P), ")")) break;
        if (CUR(P)->t == T_NAME && hr_is_op(&P->t[P->i + 1], "=")) {
            const char **nk = hr_ta_alloc(P->a, (kwv.n + 1) * sizeof *nk);
            if (!nk) return hr_err_oom();
            if (kwv.n) memcpy(nk, kwn, kwv.n * sizeof *nk);
            nk[kwv.n] = CUR(P)->s;
            kwn = nk;
            P->i += 2;
            expr *x;
            HR_TRY(hr_parse_expression(P, 1, &x));
            if (!evec_push(P, &kwv, x)) return hr_err_oom();
            continue;
        }
        if (kwv.n) return hr_perr(P, CUR(P), "positional argument after keyword argument");
        expr *x;
        HR_TRY(hr_parse_expression(P, 1, &x));
        if (!evec_push(P, &pos, x)) return hr_err_oom();
    }
    P->i++;
    call->items = pos.v;
    call->n = pos.n;
    call->kwn = kwn;
    call->kwv = kwv.v;
    call->nkw = kwv.n;
    return NULL;
}

/* One slice part or index inside [...]. */
static hr_err *parse_subscribed(parser *P, expr **out) {
    const token *at = CUR(P);
    expr *parts[3] = {0};
    if (!hr_is_op(CUR(P), ":")) {
        HR_TRY(hr_parse_expression(P, 1, &parts[0]));
        if (!hr_is_op(CUR(P), ":")) return *out = parts[0], NULL;
    }
    P->i++;
    if (!hr_is_op(CUR(P), "]") && !hr_is_op(CUR(P), ",") && !hr_is_op(CUR(P), ":"))
        HR_TRY(hr_parse_expression(P, 1, &parts[1]));
    if (hr_is_op(CUR(P), ":")) {
        P->i++;
        if (!hr_is_op(CUR(P), "]") && !hr_is_op(CUR(P), ","))
            HR_TRY(hr_parse_expression(P, 1, &parts[2]));
    }
    NEW(*out, E_SLICE, at);
    (*out)->b = parts[0];
    (*out)->c = parts[1];
    (*out)->d = parts[2];
    return NULL;
}

static hr_err *parse_subscript(parser *P, expr **node) {
    const token *t = CUR(P);
    P->i++;
    expr *e;
    if (hr_is_op(t, ".")) {
        const token *a = CUR(P);
        if (a->t == T_NAME) {
            NEW(e, E_ATTR, t);
            e->name = a->s;
        } else if (a->t == T_INT) {
            NEW(e, E_ITEM, t);
            HR_TRY(parse_const(P, &e->b));
            P->i--;
        } else
            return hr_perr(P, a, "expected name or number after '.'");
        P->i++;
        e->a = *node;
        *node = e;
        return NULL;
    }
    expr *idx;
    HR_TRY(parse_subscribed(P, &idx));
    HR_TRY(hr_expect_op(P, "]"));
    if (idx->k == E_SLICE)
        e = idx;
    else {
        NEW(e, E_ITEM, t);
        e->b = idx;
    }
    e->a = *node;
    *node = e;
    return NULL;
}

static hr_err *parse_filter(parser *P, expr **node) {
    P->i++;
    const token *t = CUR(P);
    if (t->t != T_NAME) return hr_perr(P, t, "expected filter name, got '%s'", hr_tok_desc(t));
    if (!hr_filter_exists(t->s)) return hr_perr(P, t, "No filter named '%s'.", t->s);
    expr *e;
    NEW(e, E_FILTER, t);
    e->name = t->s;
    e->a = *node;
    P->i++;
    if (hr_is_op(CUR(P), "(")) HR_TRY(hr_parse_call_args(P, e));
    *node = e;
    return NULL;
}

static int test_arg_start(const token *t) {
    if (t->t == T_NAME)
        return !hr_is_name(t, "else") && !hr_is_name(t, "or") && !hr_is_name(t, "and");
    return t->t == T_STRING || t->t == T_INT || t->t == T_FLOAT || hr_is_op(t, "[") ||
           hr_is_op(t, "{");
}

static hr_err *parse_test(parser *P, expr **node) {
    P->i++;
    expr *e;
    NEW(e, E_TEST, CUR(P));
    if (hr_is_name(CUR(P), "not")) e->negate = 1, P->i++;
    const token *t = CUR(P);
    if (t->t != T_NAME) return hr_perr(P, t, "expected test name, got '%s'", hr_tok_desc(t));
    if (!hr_test_exists(t->s)) return hr_perr(P, t, "No test named '%s'.", t->s);
    e->name = t->s;
    e->a = *node;
    P->i++;
    if (hr_is_op(CUR(P), "("))
        HR_TRY(hr_parse_call_args(P, e));
    else if (test_arg_start(CUR(P))) {
        if (hr_is_name(CUR(P), "is"))
            return hr_perr(P, CUR(P), "You cannot chain multiple tests with is");
        if (!(e->items = hr_ta_alloc(P->a, sizeof(expr *)))) return hr_err_oom();
        HR_TRY(parse_primary(P, &e->items[0]));
        HR_TRY(hr_parse_postfix(P, &e->items[0]));
        e->n = 1;
    }
    *node = e;
    return NULL;
}

hr_err *hr_parse_postfix(parser *P, expr **node) {
    for (;;) {
        if (hr_is_op(CUR(P), ".") || hr_is_op(CUR(P), "["))
            HR_TRY(parse_subscript(P, node));
        else if (hr_is_op(CUR(P), "(")) {
            expr *c;
            NEW(c, E_CALL, CUR(P));
            HR_TRY(hr_parse_call_args(P, c));
            c->a = *node;
            *node = c;
        } else
            return NULL;
    }
}

static hr_err *parse_filter_expr(parser *P, expr **node) {
    for (;;) {
        if (hr_is_op(CUR(P), "|"))
            HR_TRY(parse_filter(P, node));
        else if (hr_is_name(CUR(P), "is"))
            HR_TRY(parse_test(P, node));
        else if (hr_is_op(CUR(P), "("))
            HR_TRY(hr_parse_postfix(P, node));
        else
            return NULL;
    }
}

static hr_err *parse_unary(parser *P, int with_filter, expr **out) {
    HR_TRY(enter(P));
    const token *t = CUR(P);
    if (hr_is_op(t, "-") || hr_is_op(t, "+")) {
        P->i++;
        NEW(*out, hr_is_op(t, "-") ? E_NEG : E_POS, t);
        HR_TRY(parse_unary(P, 0, &(*out)->a));
    } else
        HR_TRY(parse_primary(P, out));
    HR_TRY(hr_parse_postfix(P, out));
    if (with_filter) HR_TRY(parse_filter_expr(P, out));
    P->depth--;
    return NULL;
}
