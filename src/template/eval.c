/* Expression evaluation: variables resolved through the frame chain (a name nowhere
 * in it is Undefined), operators, calls, filters and tests. Every node evaluated counts
 * against the render's step limit so no template runs forever. */
#include <string.h>

#include "template/ops.h"

frame *hr_frame_new(rt *r, frame *parent) {
    frame *f = hr_ta_alloc(r->a, sizeof *f);
    if (f) f->parent = parent;
    return f;
}

tv *hr_frame_lookup(const frame *f, const char *name) {
    for (; f; f = f->parent)
        for (size_t i = f->n; i-- > 0;)
            if (!strcmp(f->names[i], name)) return f->vals[i];
    return NULL;
}

int hr_frame_set(rt *r, frame *f, const char *name, tv *v) {
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->names[i], name)) return f->vals[i] = v, 1;
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        const char **n = hr_ta_alloc(r->a, cap * sizeof *n);
        tv **v2 = hr_ta_alloc(r->a, cap * sizeof *v2);
        if (!n || !v2) return 0;
        if (f->n) {
            memcpy(n, f->names, f->n * sizeof *n);
            memcpy(v2, f->vals, f->n * sizeof *v2);
        }
        f->names = n;
        f->vals = v2;
        f->cap = cap;
    }
    f->names[f->n] = name;
    f->vals[f->n++] = v;
    return 1;
}

tv *hr_targ(const targs *a, size_t i, const char *name, tv *def) {
    if (i < a->npos) return a->pos[i];
    for (size_t k = 0; name && k < a->nkw; k++)
        if (!strcmp(a->kwn[k], name)) return a->kwv[k];
    return def;
}

hr_err *hr_targ_check(const targs *a, size_t max_pos, const char *fn) {
    if (a->npos > max_pos)
        return hr_errf("%s() takes at most %zu positional argument%s (%zu given)", fn, max_pos,
                       max_pos == 1 ? "" : "s", a->npos);
    return NULL;
}

static hr_err *eval_list(rt *r, frame *f, expr **items, size_t n, tv ***out) {
    *out = n ? hr_ta_alloc(r->a, n * sizeof(tv *)) : NULL;
    if (n && !*out) return hr_rt_nomem(r);
    for (size_t i = 0; i < n; i++)
        HR_TRY(hr_eval_expr(r, f, items[i], &(*out)[i]));
    return NULL;
}

hr_err *hr_eval_args(rt *r, frame *f, const expr *call, targs *a) {
    memset(a, 0, sizeof *a);
    HR_TRY(eval_list(r, f, call->items, call->n, &a->pos));
    a->npos = call->n;
    HR_TRY(eval_list(r, f, call->kwv, call->nkw, &a->kwv));
    a->kwn = call->kwn;
    a->nkw = call->nkw;
    return NULL;
}

static hr_err *eval_seq(rt *r, frame *f, const expr *e, tv **out) {
    if (e->k == E_DICT) {
        tv *d = hr_tv_dict(r->a);
        if (!d) return hr_rt_nomem(r);
        for (size_t i = 0; i + 1 < e->n; i += 2) {
            tv *k, *v;
            HR_TRY(hr_eval_expr(r, f, e->items[i], &k));
            HR_TRY(hr_eval_expr(r, f, e->items[i + 1], &v));
            if (!hr_tv_dict_set(r->a, d->dict, k, v)) return hr_rt_nomem(r);
        }
        return *out = d, NULL;
    }
    tv *l = hr_tv_list(r->a, e->n, e->k == E_TUPLE);
    if (!l) return hr_rt_nomem(r);
    for (size_t i = 0; i < e->n; i++)
        HR_TRY(hr_eval_expr(r, f, e->items[i], &l->list.items[i]));
    return *out = l, NULL;
}

static hr_err *eval_compare(binop op, tv *x, tv *y, int *res) {
    static const char *const sym[] = {[OP_LT] = "<", [OP_LE] = "<=", [OP_GT] = ">", [OP_GE] = ">="};
    int c = 0;
    switch (op) {
    case OP_EQ: *res = hr_tv_equal(x, y); return NULL;
    case OP_NE: *res = !hr_tv_equal(x, y); return NULL;
    case OP_IN: return hr_tv_contains(y, x, res);
    case OP_NOTIN:
        HR_TRY(hr_tv_contains(y, x, res));
        *res = !*res;
        return NULL;
    default: break;
    }
    HR_TRY(hr_tv_compare(x, y, sym[op], &c));
    *res = op == OP_LT ? c < 0 : op == OP_LE ? c <= 0 : op == OP_GT ? c > 0 : c >= 0;
    return NULL;
}

static hr_err *eval_bin(rt *r, frame *f, const expr *e, tv **out) {
    tv *x, *y;
    HR_TRY(hr_eval_expr(r, f, e->a, &x));
    HR_TRY(hr_eval_expr(r, f, e->b, &y));
    if (e->op <= OP_POW) return hr_tv_arith(r, e->op, x, y, out);
    int res;
    HR_TRY(eval_compare(e->op, x, y, &res));
    *out = TV_BOOL(res);
    return NULL;
}

static hr_err *eval_concat(rt *r, frame *f, const expr *e, tv **out) {
    tsb b = {0};
    for (size_t i = 0; i < e->n; i++) {
        tv *v;
        hr_err *err = hr_eval_expr(r, f, e->items[i], &v);
        if (err) return hr_tsb_free(&b), err;
        hr_tv_write_str(&b, v);
    }
    hr_err *err = hr_tsb_error(&b);
    if (err) return hr_tsb_free(&b), err;
    *out = hr_tv_strn(r->a, b.p ? b.p : "", b.n);
    hr_tsb_free(&b);
    return *out ? NULL : hr_rt_nomem(r);
}

static hr_err *eval_unary(rt *r, frame *f, const expr *e, tv **out) {
    tv *x;
    HR_TRY(hr_eval_expr(r, f, e->a, &x));
    if (e->k == E_NOT) return *out = TV_BOOL(!hr_tv_truthy(x)), NULL;
    if (x->k == V_UNDEF) return hr_undef_error(x);
    if (!hr_tv_is_num(x))
        return hr_errf("bad operand type for unary %s: '%s'", e->k == E_NEG ? "-" : "+",
                       hr_tv_type_name(x));
    if (e->k == E_POS)
        *out = x->k == V_BOOL ? hr_tv_int(r->a, x->b) : x;
    else if (x->k == V_FLOAT)
        *out = hr_tv_float(r->a, -x->f);
    else if (x->k == V_INT && x->i == INT64_MIN)
        return hr_errf("integer overflow");
    else
        *out = hr_tv_int(r->a, x->k == V_INT ? -x->i : -x->b);
    return *out ? NULL : hr_rt_nomem(r);
}

static hr_err *eval_logic(rt *r, frame *f, const expr *e, tv **out) {
    HR_TRY(hr_eval_expr(r, f, e->a, out));
    int t = hr_tv_truthy(*out);
    if (e->k == E_AND ? !t : t) return NULL;
    return hr_eval_expr(r, f, e->b, out);
}

static hr_err *eval_cond(rt *r, frame *f, const expr *e, tv **out) {
    tv *c;
    HR_TRY(hr_eval_expr(r, f, e->a, &c));
    if (hr_tv_truthy(c)) return hr_eval_expr(r, f, e->b, out);
    if (e->c) return hr_eval_expr(r, f, e->c, out);
    *out = hr_tv_undef_msg(
        r->a,
        "the inline if-expression on line %d evaluated to false and no else section was defined.",
        e->line);
    return *out ? NULL : hr_rt_nomem(r);
}

static hr_err *eval_call(rt *r, frame *f, const expr *e, tv **out) {
    tv *fn;
    targs a;
    HR_TRY(hr_eval_expr(r, f, e->a, &fn));
    HR_TRY(hr_eval_args(r, f, e, &a));
    return hr_tv_call(r, fn, &a, out);
}

static hr_err *eval_filter_test(rt *r, frame *f, const expr *e, tv **out) {
    tv *x;
    targs a;
    HR_TRY(hr_eval_expr(r, f, e->a, &x));
    HR_TRY(hr_eval_args(r, f, e, &a));
    if (e->k == E_FILTER) return hr_apply_filter(r, e->name, x, &a, out);
    int res;
    HR_TRY(hr_apply_test(r, e->name, x, &a, &res));
    *out = TV_BOOL(e->negate ? !res : res);
    return NULL;
}

static hr_err *eval_access(rt *r, frame *f, const expr *e, tv **out) {
    tv *obj, *k = NULL, *parts[3] = {0};
    HR_TRY(hr_eval_expr(r, f, e->a, &obj));
    if (e->k == E_ATTR) return hr_tv_getattr(r, obj, e->name, out);
    if (e->k == E_ITEM) {
        HR_TRY(hr_eval_expr(r, f, e->b, &k));
        return hr_tv_getitem(r, obj, k, out);
    }
    const expr *pe[3] = {e->b, e->c, e->d};
    for (int i = 0; i < 3; i++)
        if (pe[i]) HR_TRY(hr_eval_expr(r, f, pe[i], &parts[i]));
    return hr_tv_slice(r, obj, parts[0], parts[1], parts[2], out);
}

static hr_err *eval_node(rt *r, frame *f, const expr *e, tv **out) {
    switch (e->k) {
    case E_CONST: *out = e->cval; return NULL;
    case E_NAME:
        if ((*out = hr_frame_lookup(f, e->name))) return NULL;
        return (*out = hr_tv_undef_msg(r->a, "'%s' is undefined", e->name)) ? NULL : hr_rt_nomem(r);
    case E_LIST:
    case E_TUPLE:
    case E_DICT: return eval_seq(r, f, e, out);
    case E_ATTR:
    case E_ITEM:
    case E_SLICE: return eval_access(r, f, e, out);
    case E_CALL: return eval_call(r, f, e, out);
    case E_FILTER:
    case E_TEST: return eval_filter_test(r, f, e, out);
    case E_BIN: return eval_bin(r, f, e, out);
    case E_NEG:
    case E_POS:
    case E_NOT: return eval_unary(r, f, e, out);
    case E_AND:
    case E_OR: return eval_logic(r, f, e, out);
    case E_COND: return eval_cond(r, f, e, out);
    case E_CONCAT: return eval_concat(r, f, e, out);
    }
    return hr_errf("internal: unknown expression kind %d", (int)e->k);
}

/* Parsing bounds each expression's depth; macro calls inside expressions are what can
 * still nest deeper, so the render counts every node it is inside of. */
hr_err *hr_eval_expr(rt *r, frame *f, const expr *e, tv **out) {
    if (++r->steps > TPL_MAX_STEPS)
        return hr_tpl_limit("template exceeded the limit of %ld evaluation steps", TPL_MAX_STEPS);
    if (r->depth >= TPL_MAX_DEPTH)
        return hr_tpl_limit("template nested deeper than %d levels while rendering, at line %d "
                            "(macro recursion?)",
                            TPL_MAX_DEPTH, e->line);
    r->depth++;
    hr_err *err = eval_node(r, f, e, out);
    r->depth--;
    return err;
}
