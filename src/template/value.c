/* Template values: constructors, ordered dicts, Python truthiness, equality and ordering,
 * conversion from JSON, and UTF-8 helpers. Values are arena-owned and, except namespace
 * dicts (assignable attributes), never change after construction. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "template/internal.h"

tv hr_tv_none_v = {.k = V_NONE};
tv hr_tv_true_v = {.k = V_BOOL, .b = 1};
tv hr_tv_false_v = {.k = V_BOOL, .b = 0};
tv hr_tv_undef_v = {.k = V_UNDEF, .undef_msg = "value is undefined"};

static tv *new_val(tpl_arena *a, vkind k) {
    tv *v = hr_ta_alloc(a, sizeof *v);
    if (v) v->k = k;
    return v;
}

tv *hr_tv_int(tpl_arena *a, int64_t i) {
    tv *v = new_val(a, V_INT);
    if (v) v->i = i;
    return v;
}

tv *hr_tv_float(tpl_arena *a, double f) {
    tv *v = new_val(a, V_FLOAT);
    if (v) v->f = f;
    return v;
}

tv *hr_tv_strn(tpl_arena *a, const char *s, size_t n) {
    tv *v = new_val(a, V_STR);
    char *p = v ? hr_ta_strndup(a, s, n) : NULL;
    if (!p) return NULL;
    v->str.s = p;
    v->str.n = n;
    return v;
}

tv *hr_tv_str(tpl_arena *a, const char *s) { return hr_tv_strn(a, s, strlen(s)); }

tv *hr_tv_list(tpl_arena *a, size_t n, int tuple) {
    tv *v = new_val(a, V_LIST);
    if (!v) return NULL;
    if (n && n > SIZE_MAX / sizeof(tv *)) return NULL;
    v->list.items = n ? hr_ta_alloc(a, n * sizeof(tv *)) : NULL;
    if (n && !v->list.items) return NULL;
    v->list.n = n;
    v->list.tuple = tuple;
    return v;
}

tv *hr_tv_dict(tpl_arena *a) {
    tv *v = new_val(a, V_DICT);
    if (!v) return NULL;
    v->dict = hr_ta_alloc(a, sizeof(tdict));
    return v->dict ? v : NULL;
}

tv *hr_tv_undef_msg(tpl_arena *a, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    tv *v = new_val(a, V_UNDEF);
    if (v) v->undef_msg = hr_ta_strndup(a, buf, strlen(buf));
    return v && v->undef_msg ? v : NULL;
}

tv *hr_tv_builtin(tpl_arena *a, const char *name, builtin_fn fn, tv *self, fkind kind) {
    tv *v = new_val(a, V_FUNC);
    if (!v || !(v->fn = hr_ta_alloc(a, sizeof(tfunc)))) return NULL;
    v->fn->kind = kind;
    v->fn->name = name;
    v->fn->fn = fn;
    v->fn->self = self;
    return v;
}

/* Python hashing equates 1, 1.0 and True as keys; == does the same here. */
tv *hr_tv_dict_get(const tdict *d, const tv *key) {
    for (size_t i = 0; i < d->n; i++)
        if (hr_tv_equal(d->keys[i], key)) return d->vals[i];
    return NULL;
}

tv *hr_tv_dict_gets(const tdict *d, const char *key) {
    size_t n = strlen(key);
    for (size_t i = 0; i < d->n; i++) {
        const tv *k = d->keys[i];
        if (k->k == V_STR && k->str.n == n && memcmp(k->str.s, key, n) == 0) return d->vals[i];
    }
    return NULL;
}

int hr_tv_dict_set(tpl_arena *a, tdict *d, tv *key, tv *val) {
    for (size_t i = 0; i < d->n; i++)
        if (hr_tv_equal(d->keys[i], key)) {
            d->vals[i] = val;
            return 1;
        }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        tv **k = hr_ta_alloc(a, cap * sizeof *k), **v = hr_ta_alloc(a, cap * sizeof *v);
        if (!k || !v) return 0;
        if (d->n) {
            memcpy(k, d->keys, d->n * sizeof *k);
            memcpy(v, d->vals, d->n * sizeof *v);
        }
        d->keys = k;
        d->vals = v;
        d->cap = cap;
    }
    d->keys[d->n] = key;
    d->vals[d->n++] = val;
    return 1;
}

const char *hr_tv_type_name(const tv *v) {
    switch (v->k) {
    case V_UNDEF: return "Undefined";
    case V_NONE: return "NoneType";
    case V_BOOL: return "bool";
    case V_INT: return "int";
    case V_FLOAT: return "float";
    case V_STR: return "str";
    case V_LIST: return v->list.tuple ? "tuple" : "list";
    case V_DICT: return v->dict->is_ns ? "Namespace" : v->dict->is_loop ? "LoopContext" : "dict";
    case V_FUNC: return v->fn->kind == F_MACRO ? "Macro" : "builtin_function_or_method";
    }
    return "object";
}

int hr_tv_truthy(const tv *v) {
    switch (v->k) {
    case V_UNDEF:
    case V_NONE: return 0;
    case V_BOOL: return v->b;
    case V_INT: return v->i != 0;
    case V_FLOAT: return v->f != 0;
    case V_STR: return v->str.n != 0;
    case V_LIST: return v->list.n != 0;
    case V_DICT: return v->dict->is_ns || v->dict->is_loop || v->dict->n != 0;
    case V_FUNC: return 1;
    }
    return 0;
}

int hr_tv_is_num(const tv *v) { return v->k == V_BOOL || v->k == V_INT || v->k == V_FLOAT; }

double hr_tv_num(const tv *v) {
    return v->k == V_FLOAT ? v->f : v->k == V_INT ? (double)v->i : v->k == V_BOOL ? v->b : 0;
}

static int64_t tv_intval(const tv *v) { return v->k == V_INT ? v->i : v->b; }

static int list_equal(const tv *x, const tv *y) {
    if (x->list.n != y->list.n || x->list.tuple != y->list.tuple) return 0;
    for (size_t i = 0; i < x->list.n; i++)
        if (!hr_tv_equal(x->list.items[i], y->list.items[i])) return 0;
    return 1;
}

static int dict_equal(const tv *x, const tv *y) {
    if (x->dict == y->dict) return 1;
    if (x->dict->is_ns || y->dict->is_ns || x->dict->n != y->dict->n) return 0;
    for (size_t i = 0; i < x->dict->n; i++) {
        const tv *o = hr_tv_dict_get(y->dict, x->dict->keys[i]);
        if (!o || !hr_tv_equal(x->dict->vals[i], o)) return 0;
    }
    return 1;
}

int hr_tv_equal(const tv *x, const tv *y) {
    if (hr_tv_is_num(x) && hr_tv_is_num(y)) {
        if (x->k == V_FLOAT || y->k == V_FLOAT) return hr_tv_num(x) == hr_tv_num(y);
        return tv_intval(x) == tv_intval(y);
    }
    if (x->k != y->k) return 0;
    switch (x->k) {
    case V_UNDEF:
    case V_NONE: return 1;
    case V_STR: return x->str.n == y->str.n && memcmp(x->str.s, y->str.s, x->str.n) == 0;
    case V_LIST: return list_equal(x, y);
    case V_DICT: return dict_equal(x, y);
    case V_FUNC: return x->fn == y->fn;
    default: return 0;
    }
}

static int sign(double d) { return d < 0 ? -1 : d > 0; }

static hr_err *list_compare(const tv *x, const tv *y, const char *op, int *cmp) {
    size_t n = x->list.n < y->list.n ? x->list.n : y->list.n;
    for (size_t i = 0; i < n; i++) {
        if (hr_tv_equal(x->list.items[i], y->list.items[i])) continue;
        return hr_tv_compare(x->list.items[i], y->list.items[i], op, cmp);
    }
    *cmp = x->list.n < y->list.n ? -1 : x->list.n > y->list.n;
    return NULL;
}

hr_err *hr_tv_compare(const tv *x, const tv *y, const char *op, int *cmp) {
    if (hr_tv_is_num(x) && hr_tv_is_num(y)) {
        if (x->k == V_FLOAT || y->k == V_FLOAT)
            *cmp = sign(hr_tv_num(x) - hr_tv_num(y));
        else
            *cmp = tv_intval(x) < tv_intval(y) ? -1 : tv_intval(x) > tv_intval(y);
        return NULL;
    }
    if (x->k == V_STR && y->k == V_STR) { /* UTF-8 byte order is code point order */
        size_t n = x->str.n < y->str.n ? x->str.n : y->str.n;
        int c = memcmp(x->str.s, y->str.s, n);
        *cmp = c ? sign(c) : x->str.n < y->str.n ? -1 : x->str.n > y->str.n;
        return NULL;
    }
    if (x->k == V_LIST && y->k == V_LIST && x->list.tuple == y->list.tuple)
        return list_compare(x, y, op, cmp);
    if (x->k == V_UNDEF) return hr_undef_error(x);
    if (y->k == V_UNDEF) return hr_undef_error(y);
    return hr_errf("'%s' not supported between instances of '%s' and '%s'", op, hr_tv_type_name(x),
                   hr_tv_type_name(y));
}

static hr_err *list_from_json(rt *r, const json_t *j, int depth, tv **out) {
    tv *v = hr_tv_list(r->a, json_array_size(j), 0);
    if (!v) return hr_rt_nomem(r);
    for (size_t i = 0; i < v->list.n; i++)
        HR_TRY(hr_tv_from_json(r, json_array_get(j, i), depth + 1, &v->list.items[i]));
    return *out = v, NULL;
}

static hr_err *dict_from_json(rt *r, const json_t *j, int depth, tv **out) {
    tv *v = hr_tv_dict(r->a);
    if (!v) return hr_rt_nomem(r);
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)j, k, x) {
        tv *key = hr_tv_str(r->a, k), *val;
        if (!key) return hr_rt_nomem(r);
        HR_TRY(hr_tv_from_json(r, x, depth + 1, &val));
        if (!hr_tv_dict_set(r->a, v->dict, key, val)) return hr_rt_nomem(r);
    }
    return *out = v, NULL;
}

/* Deeper context is the request's doing: a plain error (a 400), not a limit. */
hr_err *hr_tv_from_json(rt *r, const json_t *j, int depth, tv **out) {
    *out = NULL;
    if ((json_is_object(j) || json_is_array(j)) && depth > TPL_MAX_DEPTH)
        return hr_errf("template context nests more than %d levels deep", TPL_MAX_DEPTH);
    switch (json_typeof(j)) {
    case JSON_OBJECT: return dict_from_json(r, j, depth, out);
    case JSON_ARRAY: return list_from_json(r, j, depth, out);
    case JSON_STRING: *out = hr_tv_strn(r->a, json_string_value(j), json_string_length(j)); break;
    case JSON_INTEGER: *out = hr_tv_int(r->a, json_integer_value(j)); break;
    case JSON_REAL: *out = hr_tv_float(r->a, json_real_value(j)); break;
    case JSON_TRUE: *out = TV_TRUE; break;
    case JSON_FALSE: *out = TV_FALSE; break;
    case JSON_NULL: *out = TV_NONE; break;
    }
    return *out ? NULL : hr_rt_nomem(r);
}

static int max_depth(int a, int b) { return a < 0 || b < 0 ? -1 : a > b ? a : b; }

/* v's nesting depth in lists and dicts, or -1 when it has more than `room` levels. A
 * value's depth is measured once and kept in it: lists and dicts do not change once a
 * template sees them (namespaces do, so they count as one level and are not entered). */
static int nest_depth(tv *v, int room) {
    if (v->k == V_DICT && v->dict->is_ns) return room > 0 ? 1 : -1;
    if (v->k != V_LIST && v->k != V_DICT) return 0;
    if (v->depth) return v->depth <= room ? v->depth : -1;
    if (room == 0) return -1;
    int d = 0;
    if (v->k == V_LIST)
        for (size_t i = 0; i < v->list.n && d >= 0; i++)
            d = max_depth(d, nest_depth(v->list.items[i], room - 1));
    for (size_t i = 0; v->k == V_DICT && i < v->dict->n && d >= 0; i++)
        d = max_depth(d, max_depth(nest_depth(v->dict->keys[i], room - 1),
                                   nest_depth(v->dict->vals[i], room - 1)));
    if (d < 0) return -1;
    return v->depth = d + 1;
}

hr_err *hr_tpl_check_depth(tv *v) {
    if (nest_depth(v, TPL_MAX_DEPTH) >= 0) return NULL;
    return hr_tpl_limit("a value nested more than %d levels deep", TPL_MAX_DEPTH);
}

size_t hr_tpl_utf8_len(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

uint32_t hr_tpl_utf8_next(const char *s, size_t n, size_t *i) {
    const unsigned char *u = (const unsigned char *)s;
    uint32_t c = u[*i];
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    if (*i + (size_t)extra >= n) extra = 0;
    if (extra) c &= 0x3F >> extra;
    (*i)++;
    for (int k = 0; k < extra && *i < n && (u[*i] & 0xC0) == 0x80; k++)
        c = (c << 6) | (u[(*i)++] & 0x3F);
    return c;
}
