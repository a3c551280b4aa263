/* jinja2's tests (`x is defined`, `is string`, `is divisibleby 3`, ...), by name. */
#define _GNU_SOURCE
#include <string.h>

#include "template/internal.h"

typedef hr_err *(*test_fn)(tv *x, tv *arg, int *out);

static hr_err *t_defined(tv *x, tv *a, int *o) { return *o = x->k != V_UNDEF, NULL; }
static hr_err *t_undefined(tv *x, tv *a, int *o) { return *o = x->k == V_UNDEF, NULL; }
static hr_err *t_none(tv *x, tv *a, int *o) { return *o = x->k == V_NONE, NULL; }
static hr_err *t_string(tv *x, tv *a, int *o) { return *o = x->k == V_STR, NULL; }
static hr_err *t_number(tv *x, tv *a, int *o) { return *o = hr_tv_is_num(x), NULL; }
static hr_err *t_integer(tv *x, tv *a, int *o) { return *o = x->k == V_INT, NULL; }
static hr_err *t_float(tv *x, tv *a, int *o) { return *o = x->k == V_FLOAT, NULL; }
static hr_err *t_boolean(tv *x, tv *a, int *o) { return *o = x->k == V_BOOL, NULL; }
static hr_err *t_true(tv *x, tv *a, int *o) { return *o = x->k == V_BOOL && x->b, NULL; }
static hr_err *t_false(tv *x, tv *a, int *o) { return *o = x->k == V_BOOL && !x->b, NULL; }
static hr_err *t_mapping(tv *x, tv *a, int *o) {
    return *o = x->k == V_DICT && !x->dict->is_ns && !x->dict->is_loop, NULL;
}
static hr_err *t_sequence(tv *x, tv *a, int *o) {
    return *o = x->k == V_STR || x->k == V_LIST ||
                (x->k == V_DICT && !x->dict->is_ns && !x->dict->is_loop),
           NULL;
}
static hr_err *t_iterable(tv *x, tv *a, int *o) {
    return t_sequence(x, a, o), *o = *o || x->k == V_UNDEF, NULL;
}
static hr_err *t_callable(tv *x, tv *a, int *o) { return *o = x->k == V_FUNC, NULL; }

static hr_err *int_of(const tv *x, int64_t *v) {
    if (x->k == V_INT || x->k == V_BOOL) return *v = x->k == V_INT ? x->i : x->b, NULL;
    if (x->k == V_UNDEF) return hr_errf("%s", x->undef_msg);
    return hr_errf("expected an integer, got %s", hr_tv_type_name(x));
}

static hr_err *t_even(tv *x, tv *a, int *o) {
    int64_t v = 0;
    HR_TRY(int_of(x, &v));
    return *o = v % 2 == 0, NULL;
}
static hr_err *t_odd(tv *x, tv *a, int *o) {
    int64_t v = 0;
    HR_TRY(int_of(x, &v));
    return *o = v % 2 != 0, NULL;
}
static hr_err *t_divisibleby(tv *x, tv *a, int *o) {
    int64_t v = 0, d = 1;
    if (!a) return hr_errf("divisibleby needs an argument");
    HR_TRY(int_of(x, &v));
    HR_TRY(int_of(a, &d));
    if (d == 0) return hr_errf("integer division or modulo by zero");
    return *o = d == -1 || v % d == 0, NULL;
}
static hr_err *t_eq(tv *x, tv *a, int *o) { return *o = a && hr_tv_equal(x, a), NULL; }
static hr_err *t_ne(tv *x, tv *a, int *o) { return *o = !a || !hr_tv_equal(x, a), NULL; }

static hr_err *ordered(tv *x, tv *a, const char *op, int *c) {
    if (!a) return hr_errf("test needs an argument");
    return hr_tv_compare(x, a, op, c);
}
static hr_err *t_lt(tv *x, tv *a, int *o) {
    int c;
    HR_TRY(ordered(x, a, "<", &c));
    return *o = c < 0, NULL;
}
static hr_err *t_le(tv *x, tv *a, int *o) {
    int c;
    HR_TRY(ordered(x, a, "<=", &c));
    return *o = c <= 0, NULL;
}
static hr_err *t_gt(tv *x, tv *a, int *o) {
    int c;
    HR_TRY(ordered(x, a, ">", &c));
    return *o = c > 0, NULL;
}
static hr_err *t_ge(tv *x, tv *a, int *o) {
    int c;
    HR_TRY(ordered(x, a, ">=", &c));
    return *o = c >= 0, NULL;
}

/* Python's `is`: singletons compare by value, everything else by identity. */
static hr_err *t_sameas(tv *x, tv *a, int *o) {
    if (!a) return hr_errf("sameas needs an argument");
    if (x->k == V_NONE || x->k == V_BOOL || x->k == V_UNDEF)
        return *o = x->k == a->k && hr_tv_equal(x, a), NULL;
    return *o = x == a, NULL;
}

static hr_err *t_in(tv *x, tv *a, int *o) {
    if (!a) return hr_errf("in needs an argument");
    if (a->k == V_STR) {
        if (x->k != V_STR)
            return hr_errf("'in <string>' requires string as left operand, not %s",
                           hr_tv_type_name(x));
        return *o = x->str.n == 0 || memmem(a->str.s, a->str.n, x->str.s, x->str.n), NULL;
    }
    *o = 0;
    if (a->k == V_LIST)
        for (size_t i = 0; i < a->list.n && !*o; i++)
            *o = hr_tv_equal(a->list.items[i], x);
    else if (a->k == V_DICT)
        *o = hr_tv_dict_get(a->dict, x) != NULL;
    else
        return hr_errf("argument of type '%s' is not iterable", hr_tv_type_name(a));
    return NULL;
}

static hr_err *case_test(tv *x, int upper, int *o) {
    *o = 0;
    if (x->k != V_STR) return NULL;
    int cased = 0;
    for (size_t i = 0; i < x->str.n; i++) {
        char c = x->str.s[i];
        if ((upper && c >= 'a' && c <= 'z') || (!upper && c >= 'A' && c <= 'Z')) return NULL;
        cased |= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }
    return *o = cased, NULL;
}
static hr_err *t_lower(tv *x, tv *a, int *o) { return case_test(x, 0, o); }
static hr_err *t_upper(tv *x, tv *a, int *o) { return case_test(x, 1, o); }
static hr_err *t_escaped(tv *x, tv *a, int *o) { return *o = 0, NULL; }

static const struct {
    const char *name;
    test_fn fn;
} tests[] = {
    {"defined", t_defined},
    {"undefined", t_undefined},
    {"none", t_none},
    {"string", t_string},
    {"number", t_number},
    {"integer", t_integer},
    {"float", t_float},
    {"boolean", t_boolean},
    {"true", t_true},
    {"false", t_false},
    {"mapping", t_mapping},
    {"sequence", t_sequence},
    {"iterable", t_iterable},
    {"callable", t_callable},
    {"even", t_even},
    {"odd", t_odd},
    {"divisibleby", t_divisibleby},
    {"eq", t_eq},
    {"equalto", t_eq},
    {"==", t_eq},
    {"ne", t_ne},
    {"!=", t_ne},
    {"lt", t_lt},
    {"lessthan", t_lt},
    {"<", t_lt},
    {"le", t_le},
    {"<=", t_le},
    {"gt", t_gt},
    {"greaterthan", t_gt},
    {">", t_gt},
    {"ge", t_ge},
    {">=", t_ge},
    {"sameas", t_sameas},
    {"in", t_in},
    {"lower", t_lower},
    {"upper", t_upper},
    {"escaped", t_escaped},
};

static test_fn find_test(const char *name) {
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (!strcmp(tests[i].name, name)) return tests[i].fn;
    return NULL;
}

int hr_test_exists(const char *name) { return find_test(name) != NULL; }

hr_err *hr_apply_test(rt *r, const char *name, tv *subject, const targs *a, int *out) {
    (void)r;
    test_fn fn = find_test(name);
    if (!fn) return hr_errf("No test named '%s'.", name);
    return fn(subject, hr_targ(a, 0, NULL, NULL), out);
}
