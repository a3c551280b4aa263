/* jinja2's filters on scalars and strings (trim, tojson, default, replace, int, round,
 * indent, ...), the filter table, and dispatch. Sequence filters are in filters_seq.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "template/filters.h"
#include "template/strutil.h"

hr_err *hr_fret(rt *r, tv *v, tv **out) { return (*out = v) ? NULL : hr_rt_nomem(r); }

hr_err *hr_as_str(rt *r, tv *v, tv **out) {
    if (v->k == V_UNDEF) return hr_fret(r, hr_tv_str(r->a, ""), out);
    return hr_tv_to_str(r, v, out);
}

static hr_err *f_trim(rt *r, tv *x, const targs *a, tv **out) {
    HR_TRY(hr_as_str(r, x, &x));
    return hr_str_strip(r, x, hr_targ(a, 0, "chars", NULL), 3, out);
}

static hr_err *str_filter(rt *r, tv *x, char mode, tv **out) {
    HR_TRY(hr_as_str(r, x, &x));
    return hr_str_case(r, x, mode, out);
}
static hr_err *f_upper(rt *r, tv *x, const targs *a, tv **out) {
    return str_filter(r, x, 'u', out);
}
static hr_err *f_lower(rt *r, tv *x, const targs *a, tv **out) {
    return str_filter(r, x, 'l', out);
}
static hr_err *f_capitalize(rt *r, tv *x, const targs *a, tv **out) {
    return str_filter(r, x, 'c', out);
}
static hr_err *f_title(rt *r, tv *x, const targs *a, tv **out) {
    return str_filter(r, x, 't', out);
}
static hr_err *f_string(rt *r, tv *x, const targs *a, tv **out) { return hr_as_str(r, x, out); }
static hr_err *f_safe(rt *r, tv *x, const targs *a, tv **out) { return *out = x, NULL; }

static hr_err *f_tojson(rt *r, tv *x, const targs *a, tv **out) {
    tv *ind = hr_targ(a, 0, "indent", TV_NONE), *seps = hr_targ(a, 2, "separators", TV_NONE);
    char spaces[64];
    tjson_opts o = {NULL, ", ", ": ", hr_tv_truthy(hr_targ(a, 1, "ensure_ascii", TV_FALSE)),
                    hr_tv_truthy(hr_targ(a, 3, "sort_keys", TV_FALSE))};
    if (ind->k == V_INT) {
        int n = ind->i < 0 ? 0 : ind->i > 32 ? 32 : (int)ind->i;
        memset(spaces, ' ', (size_t)n);
        spaces[n] = 0;
        o.indent = spaces;
    } else if (ind->k == V_STR)
        o.indent = ind->str.s;
    else if (ind->k != V_NONE)
        return hr_errf("tojson: indent must be an integer or string");
    if (o.indent) o.item_sep = ",";
    if (seps->k == V_LIST && seps->list.n == 2 && seps->list.items[0]->k == V_STR &&
        seps->list.items[1]->k == V_STR) {
        o.item_sep = seps->list.items[0]->str.s;
        o.key_sep = seps->list.items[1]->str.s;
    }
    tsb b = {0};
    hr_err *e = hr_tv_write_json(&b, x, &o, 0);
    if (!e && !(*out = b.full ? NULL : hr_tv_strn(r->a, b.p ? b.p : "", b.n))) e = hr_rt_nomem(r);
    hr_tsb_free(&b);
    return e;
}

static hr_err *f_default(rt *r, tv *x, const targs *a, tv **out) {
    static tv empty = {.k = V_STR, .str = {"", 0}};
    tv *def = hr_targ(a, 0, "default_value", &empty);
    int boolean = hr_tv_truthy(hr_targ(a, 1, "boolean", TV_FALSE));
    *out = x->k == V_UNDEF || (boolean && !hr_tv_truthy(x)) ? def : x;
    return NULL;
}

static hr_err *f_replace(rt *r, tv *x, const targs *a, tv **out) {
    tv *old = hr_targ(a, 0, "old", NULL), *nw = hr_targ(a, 1, "new", NULL),
       *cnt = hr_targ(a, 2, "count", TV_NONE);
    if (!old || !nw) return hr_errf("replace() needs 2 arguments");
    HR_TRY(hr_as_str(r, x, &x));
    HR_TRY(hr_as_str(r, old, &old));
    HR_TRY(hr_as_str(r, nw, &nw));
    return hr_str_replace(r, x, old, nw, cnt->k == V_INT ? cnt->i : -1, out);
}

static hr_err *f_length(rt *r, tv *x, const targs *a, tv **out) {
    int64_t n;
    switch (x->k) {
    case V_UNDEF: n = 0; break;
    case V_STR: n = (int64_t)hr_tpl_utf8_len(x->str.s, x->str.n); break;
    case V_LIST: n = (int64_t)x->list.n; break;
    case V_DICT: n = (int64_t)x->dict->n; break;
    default: return hr_errf("object of type '%s' has no len()", hr_tv_type_name(x));
    }
    return hr_fret(r, hr_tv_int(r->a, n), out);
}

/* int(): parses strings (also "3.7" via float), truncates floats, else the default. */
static hr_err *f_int(rt *r, tv *x, const targs *a, tv **out) {
    tv *def = hr_targ(a, 0, "default", NULL);
    int64_t base = 10;
    tv *b = hr_targ(a, 1, "base", NULL);
    if (b && b->k == V_INT) base = b->i;
    if (x->k == V_INT) return *out = x, NULL;
    if (x->k == V_BOOL) return hr_fret(r, hr_tv_int(r->a, x->b), out);
    if (x->k == V_FLOAT && isfinite(x->f) && fabs(x->f) < 9.2e18)
        return hr_fret(r, hr_tv_int(r->a, (int64_t)x->f), out);
    if (x->k == V_STR && base >= 2 && base <= 36) {
        char *end;
        tv *s;
        HR_TRY(hr_str_strip(r, x, NULL, 3, &s));
        long long v = strtoll(s->str.s, &end, (int)base);
        if (s->str.n && !*end) return hr_fret(r, hr_tv_int(r->a, v), out);
        double d = strtod(s->str.s, &end);
        if (s->str.n && !*end && isfinite(d) && fabs(d) < 9.2e18)
            return hr_fret(r, hr_tv_int(r->a, (int64_t)d), out);
    }
    return def ? (*out = def, NULL) : hr_fret(r, hr_tv_int(r->a, 0), out);
}

static hr_err *f_float(rt *r, tv *x, const targs *a, tv **out) {
    tv *def = hr_targ(a, 0, "default", NULL);
    if (x->k == V_FLOAT) return *out = x, NULL;
    if (x->k == V_INT || x->k == V_BOOL) return hr_fret(r, hr_tv_float(r->a, hr_tv_num(x)), out);
    if (x->k == V_STR) {
        char *end;
        tv *s;
        HR_TRY(hr_str_strip(r, x, NULL, 3, &s));
        double d = strtod(s->str.s, &end);
        if (s->str.n && !*end) return hr_fret(r, hr_tv_float(r->a, d), out);
    }
    return def ? (*out = def, NULL) : hr_fret(r, hr_tv_float(r->a, 0.0), out);
}

static hr_err *f_abs(rt *r, tv *x, const targs *a, tv **out) {
    if (x->k == V_FLOAT) return hr_fret(r, hr_tv_float(r->a, fabs(x->f)), out);
    if (x->k == V_INT && x->i != INT64_MIN)
        return hr_fret(r, hr_tv_int(r->a, x->i < 0 ? -x->i : x->i), out);
    if (x->k == V_BOOL) return hr_fret(r, hr_tv_int(r->a, x->b), out);
    return hr_errf("bad operand type for abs(): '%s'", hr_tv_type_name(x));
}

static hr_err *f_round(rt *r, tv *x, const targs *a, tv **out) {
    tv *p = hr_targ(a, 0, "precision", NULL), *m = hr_targ(a, 1, "method", NULL);
    if (!hr_tv_is_num(x)) return hr_errf("round: expected a number, got %s", hr_tv_type_name(x));
    double scale = pow(10, p && p->k == V_INT ? (double)p->i : 0), v = hr_tv_num(x) * scale;
    const char *method = m && m->k == V_STR ? m->str.s : "common";
    if (!strcmp(method, "ceil"))
        v = ceil(v);
    else if (!strcmp(method, "floor"))
        v = floor(v);
    else if (!strcmp(method, "common"))
        v = nearbyint(v); /* Python's round: half to even */
    else
        return hr_errf("method must be common, ceil or floor");
    return hr_fret(r, hr_tv_float(r->a, v / scale), out);
}

/* Indents every line but the first (unless first=True); blank lines only if blank=True. */
static hr_err *f_indent(rt *r, tv *x, const targs *a, tv **out) {
    tv *w = hr_targ(a, 0, "width", NULL), *first = hr_targ(a, 1, "first", TV_FALSE),
       *blank = hr_targ(a, 2, "blank", TV_FALSE);
    HR_TRY(hr_as_str(r, x, &x));
    char pad[128] = "    ";
    if (w && w->k == V_INT) {
        size_t n = w->i < 0 ? 0 : w->i > 120 ? 120 : (size_t)w->i;
        memset(pad, ' ', n);
        pad[n] = 0;
    } else if (w && w->k == V_STR)
        snprintf(pad, sizeof pad, "%s", w->str.s);
    tsb b = {0};
    const char *s = x->str.s, *end = s + x->str.n;
    for (int line = 0; s <= end; line++) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);
        if ((line > 0 || hr_tv_truthy(first)) && (len > 0 || hr_tv_truthy(blank)))
            hr_tsb_puts(&b, pad);
        hr_tsb_put(&b, s, len);
        if (!nl) break;
        hr_tsb_puts(&b, "\n");
        s = nl + 1;
    }
    *out = b.full ? NULL : hr_tv_strn(r->a, b.p ? b.p : "", b.n);
    hr_tsb_free(&b);
    return *out ? NULL : hr_rt_nomem(r);
}

static hr_err *f_escape(rt *r, tv *x, const targs *a, tv **out) {
    HR_TRY(hr_as_str(r, x, &x));
    tsb b = {0};
    for (size_t i = 0; i < x->str.n; i++) {
        char c = x->str.s[i];
        const char *rep = c == '&'    ? "&amp;"
                          : c == '<'  ? "&lt;"
                          : c == '>'  ? "&gt;"
                          : c == '"'  ? "&#34;"
                          : c == '\'' ? "&#39;"
                                      : NULL;
        if (rep)
            hr_tsb_puts(&b, rep);
        else
            hr_tsb_put(&b, &c, 1);
    }
    *out = b.full ? NULL : hr_tv_strn(r->a, b.p ? b.p : "", b.n);
    hr_tsb_free(&b);
    return *out ? NULL : hr_rt_nomem(r);
}

static hr_err *f_wordcount(rt *r, tv *x, const targs *a, tv **out) {
    HR_TRY(hr_as_str(r, x, &x));
    int64_t n = 0;
    int in = 0;
    for (size_t i = 0; i < x->str.n; i++) {
        unsigned char c = (unsigned char)x->str.s[i];
        int w =
            c == '_' || c >= 0x80 || (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');
        n += w && !in;
        in = w;
    }
    return hr_fret(r, hr_tv_int(r->a, n), out);
}

static hr_err *f_center(rt *r, tv *x, const targs *a, tv **out) {
    tv *w = hr_targ(a, 0, "width", NULL);
    HR_TRY(hr_as_str(r, x, &x));
    int64_t width = w && w->k == V_INT ? w->i : 80,
            len = (int64_t)hr_tpl_utf8_len(x->str.s, x->str.n);
    if (width > 100000) width = 100000;
    if (len >= width) return *out = x, NULL;
    int64_t total = width - len, left = total / 2 + (total & width & 1);
    tsb b = {0};
    for (int64_t i = 0; i < left; i++)
        hr_tsb_puts(&b, " ");
    hr_tsb_put(&b, x->str.s, x->str.n);
    for (int64_t i = 0; i < total - left; i++)
        hr_tsb_puts(&b, " ");
    *out = hr_tv_strn(r->a, b.p, b.n);
    hr_tsb_free(&b);
    return *out ? NULL : hr_rt_nomem(r);
}

static hr_err *f_attr(rt *r, tv *x, const targs *a, tv **out) {
    tv *n = hr_targ(a, 0, "name", NULL);
    if (!n || n->k != V_STR) return hr_errf("attr needs an attribute name");
    return hr_tv_getattr(r, x, n->str.s, out);
}

static const struct {
    const char *name;
    builtin_fn fn;
} filters[] = {
    {"trim", f_trim},
    {"upper", f_upper},
    {"lower", f_lower},
    {"capitalize", f_capitalize},
    {"title", f_title},
    {"string", f_string},
    {"safe", f_safe},
    {"tojson", f_tojson},
    {"default", f_default},
    {"d", f_default},
    {"replace", f_replace},
    {"length", f_length},
    {"count", f_length},
    {"int", f_int},
    {"float", f_float},
    {"abs", f_abs},
    {"round", f_round},
    {"indent", f_indent},
    {"escape", f_escape},
    {"e", f_escape},
    {"forceescape", f_escape},
    {"wordcount", f_wordcount},
    {"center", f_center},
    {"attr", f_attr},
    {"items", hr_f_items},
    {"join", hr_f_join},
    {"first", hr_f_first},
    {"last", hr_f_last},
    {"list", hr_f_list},
    {"reverse", hr_f_reverse},
    {"sort", hr_f_sort},
    {"dictsort", hr_f_dictsort},
    {"unique", hr_f_unique},
    {"select", hr_f_select},
    {"reject", hr_f_reject},
    {"selectattr", hr_f_selectattr},
    {"rejectattr", hr_f_rejectattr},
    {"map", hr_f_map},
    {"sum", hr_f_sum},
    {"min", hr_f_min},
    {"max", hr_f_max},
    {"batch", hr_f_batch},
};

static builtin_fn find_filter(const char *name) {
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
        if (!strcmp(filters[i].name, name)) return filters[i].fn;
    return NULL;
}

int hr_filter_exists(const char *name) { return find_filter(name) != NULL; }

hr_err *hr_apply_filter(rt *r, const char *name, tv *subject, const targs *a, tv **out) {
    builtin_fn fn = find_filter(name);
    if (!fn) return hr_errf("No filter named '%s'.", name);
    return fn(r, subject, a, out);
}
