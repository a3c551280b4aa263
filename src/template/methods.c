/* Methods callable on values as Python's: str (startswith, split, strip, format, ...),
 * dict (items, keys, values, get) and list (index, count). Mutating methods are left
 * out on purpose: transformers renders in jinja2's immutable sandbox, which blocks them. */
#include <stdlib.h>
#include <string.h>

#include "template/strutil.h"

static hr_err *ret(rt *r, tv *v, tv **out) { return (*out = v) ? NULL : hr_rt_nomem(r); }

static hr_err *int_arg(const tv *v, int64_t def, int64_t *out) {
    if (!v || v->k == V_NONE) return *out = def, NULL;
    if (v->k != V_INT && v->k != V_BOOL)
        return hr_errf("'%s' object cannot be interpreted as an integer", hr_tv_type_name(v));
    *out = v->k == V_INT ? v->i : v->b;
    return NULL;
}

static int affix_match(const tv *s, const tv *a, int end) {
    if (a->str.n > s->str.n) return 0;
    return memcmp(s->str.s + (end ? s->str.n - a->str.n : 0), a->str.s, a->str.n) == 0;
}

static hr_err *m_affix(rt *r, tv *self, const targs *a, tv **out, int end) {
    tv *p = hr_targ(a, 0, NULL, NULL);
    if (!p)
        return hr_errf("%s() takes at least 1 argument (0 given)", end ? "endswith" : "startswith");
    int hit = 0;
    if (p->k == V_LIST && p->list.tuple) {
        for (size_t i = 0; i < p->list.n && !hit; i++) {
            HR_TRY(hr_need_str(p->list.items[i], end ? "endswith" : "startswith"));
            hit = affix_match(self, p->list.items[i], end);
        }
    } else {
        HR_TRY(hr_need_str(p, end ? "endswith" : "startswith"));
        hit = affix_match(self, p, end);
    }
    (void)r;
    return *out = TV_BOOL(hit), NULL;
}

static hr_err *m_startswith(rt *r, tv *self, const targs *a, tv **out) {
    return m_affix(r, self, a, out, 0);
}
static hr_err *m_endswith(rt *r, tv *self, const targs *a, tv **out) {
    return m_affix(r, self, a, out, 1);
}

static hr_err *m_split_any(rt *r, tv *self, const targs *a, tv **out, int right) {
    int64_t maxsplit = -1;
    HR_TRY(int_arg(hr_targ(a, 1, "maxsplit", NULL), -1, &maxsplit));
    return hr_str_split(r, self, hr_targ(a, 0, "sep", NULL), maxsplit, right, out);
}
static hr_err *m_split(rt *r, tv *self, const targs *a, tv **out) {
    return m_split_any(r, self, a, out, 0);
}
static hr_err *m_rsplit(rt *r, tv *self, const targs *a, tv **out) {
    return m_split_any(r, self, a, out, 1);
}

static hr_err *m_strip(rt *r, tv *self, const targs *a, tv **out) {
    return hr_str_strip(r, self, hr_targ(a, 0, NULL, NULL), 3, out);
}
static hr_err *m_lstrip(rt *r, tv *self, const targs *a, tv **out) {
    return hr_str_strip(r, self, hr_targ(a, 0, NULL, NULL), 1, out);
}
static hr_err *m_rstrip(rt *r, tv *self, const targs *a, tv **out) {
    return hr_str_strip(r, self, hr_targ(a, 0, NULL, NULL), 2, out);
}
static hr_err *m_upper(rt *r, tv *self, const targs *a, tv **out) {
    return hr_str_case(r, self, 'u', out);
}
static hr_err *m_lower(rt *r, tv *self, const targs *a, tv **out) {
    return hr_str_case(r, self, 'l', out);
}
static hr_err *m_title(rt *r, tv *self, const targs *a, tv **out) {
    return hr_str_case(r, self, 't', out);
}
static hr_err *m_capitalize(rt *r, tv *self, const targs *a, tv **out) {
    return hr_str_case(r, self, 'c', out);
}

static hr_err *m_replace(rt *r, tv *self, const targs *a, tv **out) {
    tv *old = hr_targ(a, 0, NULL, NULL), *nw = hr_targ(a, 1, NULL, NULL);
    int64_t count = -1;
    if (!old || !nw) return hr_errf("replace() takes at least 2 arguments");
    HR_TRY(int_arg(hr_targ(a, 2, "count", NULL), -1, &count));
    return hr_str_replace(r, self, old, nw, count, out);
}

static hr_err *m_find_any(rt *r, tv *self, const targs *a, tv **out, int last) {
    tv *sub = hr_targ(a, 0, NULL, NULL);
    if (!sub) return hr_errf("find() takes at least 1 argument (0 given)");
    HR_TRY(hr_need_str(sub, "find"));
    return ret(r, hr_tv_int(r->a, hr_str_find(self, sub, last)), out);
}
static hr_err *m_find(rt *r, tv *self, const targs *a, tv **out) {
    return m_find_any(r, self, a, out, 0);
}
static hr_err *m_rfind(rt *r, tv *self, const targs *a, tv **out) {
    return m_find_any(r, self, a, out, 1);
}

static hr_err *m_str_count(rt *r, tv *self, const targs *a, tv **out) {
    tv *sub = hr_targ(a, 0, NULL, NULL);
    if (!sub) return hr_errf("count() takes at least 1 argument (0 given)");
    HR_TRY(hr_need_str(sub, "count"));
    return ret(r, hr_tv_int(r->a, (int64_t)hr_str_count(self, sub)), out);
}

static hr_err *m_join(rt *r, tv *self, const targs *a, tv **out) {
    tv *seq = hr_targ(a, 0, NULL, NULL), **items;
    size_t n;
    if (!seq) return hr_errf("join() takes exactly one argument (0 given)");
    HR_TRY(hr_tv_iterate(r, seq, &items, &n));
    tsb b = {0};
    for (size_t i = 0; i < n; i++) {
        if (items[i]->k != V_STR) {
            hr_tsb_free(&b);
            return hr_errf("sequence item %zu: expected str instance, %s found", i,
                           hr_tv_type_name(items[i]));
        }
        if (i) hr_tsb_put(&b, self->str.s, self->str.n);
        hr_tsb_put(&b, items[i]->str.s, items[i]->str.n);
    }
    *out = b.full ? NULL : hr_tv_strn(r->a, b.p ? b.p : "", b.n);
    hr_tsb_free(&b);
    return *out ? NULL : hr_rt_nomem(r);
}

/* str.format with {} / {0} / {name} fields (no format specs). */
static hr_err *m_format(rt *r, tv *self, const targs *a, tv **out) {
    tsb b = {0};
    size_t auto_i = 0;
    const char *s = self->str.s;
    hr_err *e = NULL;
    for (size_t i = 0; i < self->str.n && !e; i++) {
        if ((s[i] == '{' || s[i] == '}') && i + 1 < self->str.n && s[i + 1] == s[i]) {
            hr_tsb_put(&b, s + i++, 1);
            continue;
        }
        if (s[i] != '{') {
            hr_tsb_put(&b, s + i, 1);
            continue;
        }
        const char *close = memchr(s + i, '}', self->str.n - i);
        if (!close) {
            e = hr_errf("Single '{' encountered in format string");
            break;
        }
        char name[64] = {0};
        size_t nl = (size_t)(close - s) - i - 1;
        memcpy(name, s + i + 1, nl < 63 ? nl : 63);
        tv *v = NULL;
        if (!name[0])
            v = hr_targ(a, auto_i++, NULL, NULL);
        else if (name[0] >= '0' && name[0] <= '9')
            v = hr_targ(a, (size_t)atoi(name), NULL, NULL);
        else
            v = hr_targ(a, SIZE_MAX, name, NULL);
        if (!v)
            e = hr_errf("format: no argument for field '{%s}'", name);
        else
            hr_tv_write_str(&b, v);
        i = (size_t)(close - s);
    }
    if (!e) e = hr_tsb_error(&b);
    if (!e && !(*out = hr_tv_strn(r->a, b.p ? b.p : "", b.n))) e = hr_rt_nomem(r);
    hr_tsb_free(&b);
    return e;
}

static hr_err *m_splitlines(rt *r, tv *self, const targs *a, tv **out) {
    static const tv nl = {.k = V_STR, .str = {"\n", 1}};
    HR_TRY(hr_str_split(r, self, &nl, -1, 0, out));
    if ((*out)->list.n && (*out)->list.items[(*out)->list.n - 1]->str.n == 0) (*out)->list.n--;
    return NULL;
}

static hr_err *m_is_class(rt *r, tv *self, tv **out, int (*pred)(int)) {
    int ok = self->str.n > 0;
    for (size_t i = 0; i < self->str.n && ok; i++)
        ok = pred((unsigned char)self->str.s[i]);
    (void)r;
    return *out = TV_BOOL(ok), NULL;
}
static int c_digit(int c) { return c >= '0' && c <= '9'; }
static int c_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80; }
static int c_space(int c) { return c == ' ' || (c >= 9 && c <= 13); }
static int c_alnum(int c) { return c_digit(c) || c_alpha(c); }
static hr_err *m_isdigit(rt *r, tv *self, const targs *a, tv **out) {
    return m_is_class(r, self, out, c_digit);
}
static hr_err *m_isalpha(rt *r, tv *self, const targs *a, tv **out) {
    return m_is_class(r, self, out, c_alpha);
}
static hr_err *m_isspace(rt *r, tv *self, const targs *a, tv **out) {
    return m_is_class(r, self, out, c_space);
}
static hr_err *m_isalnum(rt *r, tv *self, const targs *a, tv **out) {
    return m_is_class(r, self, out, c_alnum);
}

static hr_err *m_items(rt *r, tv *self, const targs *a, tv **out) {
    tv *l = hr_tv_list(r->a, self->dict->n, 0);
    if (!l) return hr_rt_nomem(r);
    for (size_t i = 0; i < self->dict->n; i++) {
        tv *p = hr_tv_list(r->a, 2, 1);
        if (!p) return hr_rt_nomem(r);
        p->list.items[0] = self->dict->keys[i];
        p->list.items[1] = self->dict->vals[i];
        l->list.items[i] = p;
    }
    return *out = l, NULL;
}

static hr_err *dict_column(rt *r, tv *self, int vals, tv **out) {
    tv *l = hr_tv_list(r->a, self->dict->n, 0);
    if (!l) return hr_rt_nomem(r);
    for (size_t i = 0; i < self->dict->n; i++)
        l->list.items[i] = vals ? self->dict->vals[i] : self->dict->keys[i];
    return *out = l, NULL;
}
static hr_err *m_keys(rt *r, tv *self, const targs *a, tv **out) {
    return dict_column(r, self, 0, out);
}
static hr_err *m_values(rt *r, tv *self, const targs *a, tv **out) {
    return dict_column(r, self, 1, out);
}

static hr_err *m_get(rt *r, tv *self, const targs *a, tv **out) {
    tv *k = hr_targ(a, 0, NULL, NULL);
    if (!k) return hr_errf("get expected at least 1 argument, got 0");
    *out = hr_tv_dict_get(self->dict, k);
    if (!*out) *out = hr_targ(a, 1, NULL, TV_NONE);
    return NULL;
}

static hr_err *m_list_index(rt *r, tv *self, const targs *a, tv **out) {
    tv *x = hr_targ(a, 0, NULL, TV_UNDEF);
    for (size_t i = 0; i < self->list.n; i++)
        if (hr_tv_equal(self->list.items[i], x)) return ret(r, hr_tv_int(r->a, (int64_t)i), out);
    return hr_errf("x not in list");
}

static hr_err *m_list_count(rt *r, tv *self, const targs *a, tv **out) {
    tv *x = hr_targ(a, 0, NULL, TV_UNDEF);
    int64_t c = 0;
    for (size_t i = 0; i < self->list.n; i++)
        c += hr_tv_equal(self->list.items[i], x);
    return ret(r, hr_tv_int(r->a, c), out);
}

typedef struct {
    vkind on;
    const char *name;
    builtin_fn fn;
} method;

static const method methods[] = {
    {V_STR, "startswith", m_startswith},
    {V_STR, "endswith", m_endswith},
    {V_STR, "split", m_split},
    {V_STR, "rsplit", m_rsplit},
    {V_STR, "strip", m_strip},
    {V_STR, "lstrip", m_lstrip},
    {V_STR, "rstrip", m_rstrip},
    {V_STR, "upper", m_upper},
    {V_STR, "lower", m_lower},
    {V_STR, "title", m_title},
    {V_STR, "capitalize", m_capitalize},
    {V_STR, "replace", m_replace},
    {V_STR, "find", m_find},
    {V_STR, "rfind", m_rfind},
    {V_STR, "count", m_str_count},
    {V_STR, "join", m_join},
    {V_STR, "format", m_format},
    {V_STR, "splitlines", m_splitlines},
    {V_STR, "isdigit", m_isdigit},
    {V_STR, "isalpha", m_isalpha},
    {V_STR, "isspace", m_isspace},
    {V_STR, "isalnum", m_isalnum},
    {V_DICT, "items", m_items},
    {V_DICT, "keys", m_keys},
    {V_DICT, "values", m_values},
    {V_DICT, "get", m_get},
    {V_LIST, "index", m_list_index},
    {V_LIST, "count", m_list_count},
};

tv *hr_method_lookup(rt *r, tv *obj, const char *name) {
    if (obj->k == V_DICT && (obj->dict->is_ns || obj->dict->is_loop)) return NULL;
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (methods[i].on == obj->k && !strcmp(methods[i].name, name))
            return hr_tv_builtin(r->a, methods[i].name, methods[i].fn, obj, F_METHOD);
    return NULL;
}
