/* Python semantics of the operators and of access: arithmetic with int/float promotion,
 * + and * on strings and lists, `in`, attribute and item lookup as jinja2's sandboxed
 * environment does it (attribute first for `.`, item first for `[]`), slicing by code
 * point, and iteration. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "template/ops.h"

hr_err *hr_tpl_limit(const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hr_errc(HR_E_LIMIT, "%s", msg);
}

hr_err *hr_rt_nomem(rt *r) {
    if (!hr_tpl_arena_exhausted(r->a)) return hr_err_oom(); /* malloc failed below the cap */
    return hr_tpl_limit("template used more than %u MiB of memory", TPL_MAX_ARENA >> 20);
}

hr_err *hr_undef_error(const tv *u) { return hr_errf("%s", u->undef_msg); }

static hr_err *bad_operands(const char *op, const tv *x, const tv *y) {
    if (x->k == V_UNDEF) return hr_undef_error(x);
    if (y->k == V_UNDEF) return hr_undef_error(y);
    return hr_errf("unsupported operand type(s) for %s: '%s' and '%s'", op, hr_tv_type_name(x),
                   hr_tv_type_name(y));
}

static hr_err *concat_seq(rt *r, tv *x, tv *y, tv **out) {
    if (x->k == V_STR) {
        size_t n = x->str.n + y->str.n;
        char *s = hr_ta_alloc(r->a, n + 1);
        if (!s || !(*out = hr_ta_alloc(r->a, sizeof(tv)))) return hr_rt_nomem(r);
        memcpy(s, x->str.s, x->str.n);
        memcpy(s + x->str.n, y->str.s, y->str.n);
        (*out)->k = V_STR;
        (*out)->str.s = s;
        (*out)->str.n = n;
        return NULL;
    }
    tv *l = hr_tv_list(r->a, x->list.n + y->list.n, x->list.tuple);
    if (!l) return hr_rt_nomem(r);
    for (size_t i = 0; i < x->list.n; i++)
        l->list.items[i] = x->list.items[i];
    for (size_t i = 0; i < y->list.n; i++)
        l->list.items[x->list.n + i] = y->list.items[i];
    *out = l;
    return NULL;
}

static hr_err *repeat_seq(rt *r, tv *seq, int64_t times, tv **out) {
    if (times < 0) times = 0;
    size_t unit = seq->k == V_STR ? seq->str.n : seq->list.n;
    if (unit && (uint64_t)times > TPL_MAX_OUTPUT / unit) return hr_rt_nomem(r);
    size_t n = unit * (size_t)times;
    if (seq->k == V_STR) {
        char *s = hr_ta_alloc(r->a, n + 1);
        if (!s || !(*out = hr_ta_alloc(r->a, sizeof(tv)))) return hr_rt_nomem(r);
        for (int64_t i = 0; i < times; i++)
            memcpy(s + (size_t)i * unit, seq->str.s, unit);
        (*out)->k = V_STR;
        (*out)->str.s = s;
        (*out)->str.n = n;
        return NULL;
    }
    tv *l = hr_tv_list(r->a, n, seq->list.tuple);
    if (!l) return hr_rt_nomem(r);
    for (size_t i = 0; i < n; i++)
        l->list.items[i] = seq->list.items[i % unit];
    *out = l;
    return NULL;
}

static int is_intlike(const tv *v) { return v->k == V_INT || v->k == V_BOOL; }
static int64_t ival(const tv *v) { return v->k == V_INT ? v->i : v->b; }

static hr_err *int_arith(rt *r, binop op, int64_t a, int64_t b, tv **out) {
    int64_t res = 0;
    int ovf = 0;
    if ((op == OP_FLOORDIV || op == OP_MOD) && b == 0)
        return hr_errf("integer division or modulo by zero");
    switch (op) {
    case OP_ADD: ovf = __builtin_add_overflow(a, b, &res); break;
    case OP_SUB: ovf = __builtin_sub_overflow(a, b, &res); break;
    case OP_MUL: ovf = __builtin_mul_overflow(a, b, &res); break;
    case OP_FLOORDIV:
        if (a == INT64_MIN && b == -1)
            ovf = 1;
        else
            res = a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
        break;
    case OP_MOD:
        if (b == -1)
            res = 0;
        else
            res = a % b, res += (res != 0 && ((res < 0) != (b < 0))) ? b : 0;
        break;
    case OP_POW:
        if (b < 0)
            return (*out = hr_tv_float(r->a, pow((double)a, (double)b))) ? NULL : hr_rt_nomem(r);
        res = 1;
        for (int64_t i = 0; i < b && !ovf; i++)
            ovf = __builtin_mul_overflow(res, a, &res);
        break;
    default: break;
    }
    if (ovf) return hr_errf("integer overflow (hearth templates use 64-bit integers)");
    return (*out = hr_tv_int(r->a, res)) ? NULL : hr_rt_nomem(r);
}

static hr_err *float_arith(rt *r, binop op, double a, double b, tv **out) {
    double res = 0;
    if ((op == OP_DIV || op == OP_FLOORDIV || op == OP_MOD) && b == 0)
        return hr_errf(op == OP_DIV ? "division by zero" : "float modulo");
    switch (op) {
    case OP_ADD: res = a + b; break;
    case OP_SUB: res = a - b; break;
    case OP_MUL: res = a * b; break;
    case OP_DIV: res = a / b; break;
    case OP_FLOORDIV: res = floor(a / b); break;
    case OP_MOD:
        res = fmod(a, b);
        if (res != 0 && ((res < 0) != (b < 0))) res += b;
        break;
    case OP_POW: res = pow(a, b); break;
    default: break;
    }
    return (*out = hr_tv_float(r->a, res)) ? NULL : hr_rt_nomem(r);
}

static const char *op_sym(binop op) {
    static const char *s[] = {"+", "-", "*", "/", "//", "%", "** or pow()"};
    return op <= OP_POW ? s[op] : "?";
}

hr_err *hr_tv_arith(rt *r, binop op, tv *x, tv *y, tv **out) {
    if (hr_tv_is_num(x) && hr_tv_is_num(y)) {
        if (is_intlike(x) && is_intlike(y) && op != OP_DIV)
            return int_arith(r, op, ival(x), ival(y), out);
        return float_arith(r, op, hr_tv_num(x), hr_tv_num(y), out);
    }
    if (op == OP_ADD && x->k == V_STR && y->k == V_STR) return concat_seq(r, x, y, out);
    if (op == OP_ADD && x->k == V_LIST && y->k == V_LIST && x->list.tuple == y->list.tuple)
        return concat_seq(r, x, y, out);
    if (op == OP_MUL && (x->k == V_STR || x->k == V_LIST) && is_intlike(y))
        return repeat_seq(r, x, ival(y), out);
    if (op == OP_MUL && (y->k == V_STR || y->k == V_LIST) && is_intlike(x))
        return repeat_seq(r, y, ival(x), out);
    if (op == OP_ADD && x->k == V_STR && y->k != V_UNDEF)
        return hr_errf("can only concatenate str (not \"%s\") to str", hr_tv_type_name(y));
    if (op == OP_ADD && x->k == V_LIST && y->k != V_UNDEF)
        return hr_errf("can only concatenate %s (not \"%s\") to %s", hr_tv_type_name(x),
                       hr_tv_type_name(y), hr_tv_type_name(x));
    return bad_operands(op_sym(op), x, y);
}

hr_err *hr_tv_contains(tv *hay, tv *needle, int *out) {
    if (hay->k == V_STR) {
        if (needle->k != V_STR)
            return hr_errf("'in <string>' requires string as left operand, not %s",
                           hr_tv_type_name(needle));
        *out = needle->str.n == 0 ||
               memmem(hay->str.s, hay->str.n, needle->str.s, needle->str.n) != NULL;
        return NULL;
    }
    *out = 0;
    if (hay->k == V_LIST) {
        for (size_t i = 0; i < hay->list.n && !*out; i++)
            *out = hr_tv_equal(hay->list.items[i], needle);
        return NULL;
    }
    if (hay->k == V_DICT) return *out = hr_tv_dict_get(hay->dict, needle) != NULL, NULL;
    if (hay->k == V_UNDEF) return hr_undef_error(hay);
    return hr_errf("argument of type '%s' is not iterable", hr_tv_type_name(hay));
}

static const char *obj_desc(rt *r, const tv *obj, char *buf, size_t n) {
    (void)r;
    if (obj->k == V_NONE) return "None";
    snprintf(buf, n, "%s object", hr_tv_type_name(obj));
    return buf;
}

static tv *missing_attr(rt *r, const tv *obj, const char *name) {
    char buf[64];
    return hr_tv_undef_msg(r->a, "'%s' has no attribute '%s'", obj_desc(r, obj, buf, sizeof buf),
                           name);
}

/* Mutating methods are blocked by the sandbox (ImmutableSandboxedEnvironment). */
static int unsafe_method(const tv *obj, const char *name) {
    static const char *const list_m[] = {"append", "extend", "insert",  "pop", "remove",
                                         "clear",  "sort",   "reverse", NULL};
    static const char *const dict_m[] = {"pop", "popitem", "clear", "update", "setdefault", NULL};
    const char *const *m = obj->k == V_LIST && !obj->list.tuple ? list_m
                           : obj->k == V_DICT                   ? dict_m
                                                                : NULL;
    for (int i = 0; m && m[i]; i++)
        if (!strcmp(m[i], name)) return 1;
    return 0;
}

hr_err *hr_tv_getattr(rt *r, tv *obj, const char *name, tv **out) {
    if (obj->k == V_UNDEF) return hr_undef_error(obj);
    if (obj->k == V_DICT && (obj->dict->is_ns || obj->dict->is_loop)) {
        *out = hr_tv_dict_gets(obj->dict, name);
        if (!*out && !(*out = missing_attr(r, obj, name))) return hr_rt_nomem(r);
        return NULL;
    }
    if (unsafe_method(obj, name)) {
        *out = hr_tv_undef_msg(r->a, "access to attribute '%s' of '%s' object is unsafe.", name,
                               hr_tv_type_name(obj));
        return *out ? NULL : hr_rt_nomem(r);
    }
    if ((*out = hr_method_lookup(r, obj, name))) return NULL;
    if (obj->k == V_DICT && (*out = hr_tv_dict_gets(obj->dict, name))) return NULL;
    return (*out = missing_attr(r, obj, name)) ? NULL : hr_rt_nomem(r);
}

static hr_err *str_index(rt *r, tv *s, int64_t i, tv **out) {
    int64_t n = (int64_t)hr_tpl_utf8_len(s->str.s, s->str.n);
    if (i < 0) i += n;
    if (i < 0 || i >= n)
        return (*out = hr_tv_undef_msg(r->a, "'str object' has no element %lld", (long long)i))
                   ? NULL
                   : hr_rt_nomem(r);
    size_t p = 0;
    for (int64_t k = 0; k < i; k++)
        hr_tpl_utf8_next(s->str.s, s->str.n, &p);
    size_t start = p;
    hr_tpl_utf8_next(s->str.s, s->str.n, &p);
    return (*out = hr_tv_strn(r->a, s->str.s + start, p - start)) ? NULL : hr_rt_nomem(r);
}

hr_err *hr_tv_getitem(rt *r, tv *obj, tv *key, tv **out) {
    if (obj->k == V_UNDEF) return hr_undef_error(obj);
    if (obj->k == V_LIST && (key->k == V_INT || key->k == V_BOOL)) {
        int64_t i = ival(key), n = (int64_t)obj->list.n;
        if (i < 0) i += n;
        if (i >= 0 && i < n) return *out = obj->list.items[i], NULL;
    } else if (obj->k == V_STR && (key->k == V_INT || key->k == V_BOOL)) {
        return str_index(r, obj, ival(key), out);
    } else if (obj->k == V_DICT && !obj->dict->is_ns && !obj->dict->is_loop) {
        if ((*out = hr_tv_dict_get(obj->dict, key))) return NULL;
    }
    if (key->k == V_STR) return hr_tv_getattr(r, obj, key->str.s, out);
    char buf[64];
    tsb k = {0};
    hr_tv_write_repr(&k, key);
    *out = hr_tv_undef_msg(r->a, "'%s' has no element %s", obj_desc(r, obj, buf, sizeof buf),
                           k.p ? k.p : "");
    hr_tsb_free(&k);
    return *out ? NULL : hr_rt_nomem(r);
}

static hr_err *slice_index(const tv *v, int64_t def, int64_t *out) {
    if (!v || v->k == V_NONE) return *out = def, NULL;
    if (!is_intlike(v)) return hr_errf("slice indices must be integers or None");
    *out = ival(v);
    return NULL;
}

/* Python's slice.indices(). */
static hr_err *slice_bounds(int64_t n, const tv *a, const tv *b, const tv *c, int64_t *start,
                            int64_t *stop, int64_t *step) {
    HR_TRY(slice_index(c, 1, step));
    if (*step == 0) return hr_errf("slice step cannot be zero");
    /* a step past the length takes at most one item either way; clamped, the count and index
     * arithmetic cannot overflow (a step of INT64_MIN had no negation) */
    if (*step > n + 1) *step = n + 1;
    if (*step < -(n + 1)) *step = -(n + 1);
    int neg = *step < 0;
    HR_TRY(slice_index(a, neg ? n - 1 : 0, start));
    HR_TRY(slice_index(b, neg ? -1 : n, stop));
    int64_t *ends[2] = {start, stop};
    const tv *given[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        if (!given[k] || given[k]->k == V_NONE) continue;
        int64_t *e = ends[k];
        if (*e < 0)
            *e = *e + n < 0 ? (neg ? -1 : 0) : *e + n;
        else if (*e >= n)
            *e = neg ? n - 1 : n;
    }
    return NULL;
}

hr_err *hr_tv_slice(rt *r, tv *obj, tv *a, tv *b, tv *c, tv **out) {
    if (obj->k == V_UNDEF) return hr_undef_error(obj);
    if (obj->k != V_LIST && obj->k != V_STR)
        return hr_errf("'%s' object is not subscriptable", hr_tv_type_name(obj));
    size_t *offs = NULL;
    int64_t n = (int64_t)obj->list.n;
    if (obj->k == V_STR) { /* code point offsets */
        n = (int64_t)hr_tpl_utf8_len(obj->str.s, obj->str.n);
        if (!(offs = hr_ta_alloc(r->a, ((size_t)n + 1) * sizeof *offs))) return hr_rt_nomem(r);
        size_t p = 0;
        for (int64_t i = 0; i < n; i++)
            offs[i] = p, hr_tpl_utf8_next(obj->str.s, obj->str.n, &p);
        offs[n] = obj->str.n;
    }
    int64_t start = 0, stop = 0, step = 1;
    HR_TRY(slice_bounds(n, a, b, c, &start, &stop, &step));
    int64_t cnt = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                           : (start > stop ? (start - stop - step - 1) / -step : 0);
    if (obj->k == V_LIST) {
        tv *l = hr_tv_list(r->a, (size_t)cnt, obj->list.tuple);
        if (!l) return hr_rt_nomem(r);
        for (int64_t i = 0; i < cnt; i++)
            l->list.items[i] = obj->list.items[start + i * step];
        return *out = l, NULL;
    }
    char *s = hr_ta_alloc(r->a, obj->str.n + 1);
    if (!s) return hr_rt_nomem(r);
    size_t o = 0;
    for (int64_t i = 0; i < cnt; i++) {
        int64_t k = start + i * step;
        memcpy(s + o, obj->str.s + offs[k], offs[k + 1] - offs[k]);
        o += offs[k + 1] - offs[k];
    }
    return (*out = hr_tv_strn(r->a, s, o)) ? NULL : hr_rt_nomem(r);
}

static hr_err *iterate_str(rt *r, tv *v, tv ***items, size_t *n) {
    *n = hr_tpl_utf8_len(v->str.s, v->str.n);
    if (!(*items = hr_ta_alloc(r->a, (*n ? *n : 1) * sizeof(tv *)))) return hr_rt_nomem(r);
    size_t p = 0;
    for (size_t i = 0; i < *n; i++) {
        size_t s = p;
        hr_tpl_utf8_next(v->str.s, v->str.n, &p);
        if (!((*items)[i] = hr_tv_strn(r->a, v->str.s + s, p - s))) return hr_rt_nomem(r);
    }
    return NULL;
}

hr_err *hr_tv_iterate(rt *r, tv *v, tv ***items, size_t *n) {
    switch (v->k) {
    case V_UNDEF: *items = NULL, *n = 0; return NULL;
    case V_LIST: *items = v->list.items, *n = v->list.n; return NULL;
    case V_DICT:
        if (v->dict->is_ns || v->dict->is_loop) break;
        *items = v->dict->keys, *n = v->dict->n;
        return NULL;
    case V_STR: return iterate_str(r, v, items, n);
    default: break;
    }
    return hr_errf("'%s' object is not iterable", hr_tv_type_name(v));
}

hr_err *hr_tv_to_str(rt *r, tv *v, tv **out) {
    if (v->k == V_STR) return *out = v, NULL;
    tsb b = {0};
    hr_tv_write_str(&b, v);
    hr_err *e = hr_tsb_error(&b);
    if (e) return hr_tsb_free(&b), e;
    *out = hr_tv_strn(r->a, b.p ? b.p : "", b.n);
    hr_tsb_free(&b);
    return *out ? NULL : hr_rt_nomem(r);
}
