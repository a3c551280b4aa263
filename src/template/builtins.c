/* Global functions of the render environment: jinja2's range (capped like its sandbox),
 * namespace and dict, plus transformers' raise_exception and strftime_now. */
#include <string.h>
#include <time.h>

#include "template/internal.h"

static hr_err *int_param(const tv *v, const char *fn, int64_t *out) {
    if (v->k != V_INT && v->k != V_BOOL)
        return hr_errf("%s: '%s' object cannot be interpreted as an integer", fn,
                       hr_tv_type_name(v));
    *out = v->k == V_INT ? v->i : v->b;
    return NULL;
}

static hr_err *b_range(rt *r, tv *self, const targs *a, tv **out) {
    int64_t start = 0, stop = 0, step = 1;
    if (a->npos < 1 || a->npos > 3)
        return hr_errf("range expected 1 to 3 arguments, got %zu", a->npos);
    HR_TRY(int_param(a->pos[a->npos == 1 ? 0 : 1], "range", &stop));
    if (a->npos >= 2) HR_TRY(int_param(a->pos[0], "range", &start));
    if (a->npos == 3) HR_TRY(int_param(a->pos[2], "range", &step));
    if (step == 0) return hr_errf("range() arg 3 must not be zero");
    double span = ((double)stop - (double)start) / (double)step;
    int64_t n = span > 0 ? (int64_t)(span + 0.999999999) : 0;
    if (n > TPL_MAX_RANGE)
        return hr_errf("Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).",
                       TPL_MAX_RANGE);
    tv *l = hr_tv_list(r->a, (size_t)n, 0);
    if (!l) return hr_rt_nomem(r);
    for (int64_t i = 0; i < n; i++)
        if (!(l->list.items[i] = hr_tv_int(r->a, start + i * step))) return hr_rt_nomem(r);
    return *out = l, NULL;
}

/* dict(...) and namespace(...): an optional mapping, then keyword arguments. */
static hr_err *make_mapping(rt *r, const targs *a, int ns, tv **out) {
    tv *d = hr_tv_dict(r->a);
    if (!d) return hr_rt_nomem(r);
    d->dict->is_ns = ns;
    if (a->npos > 1)
        return hr_errf("%s expected at most 1 positional argument", ns ? "namespace" : "dict");
    if (a->npos == 1) {
        tv *m = a->pos[0];
        if (m->k != V_DICT)
            return hr_errf("cannot convert '%s' object to a mapping", hr_tv_type_name(m));
        for (size_t i = 0; i < m->dict->n; i++)
            if (!hr_tv_dict_set(r->a, d->dict, m->dict->keys[i], m->dict->vals[i]))
                return hr_rt_nomem(r);
    }
    for (size_t i = 0; i < a->nkw; i++) {
        tv *k = hr_tv_str(r->a, a->kwn[i]);
        if (!k || !hr_tv_dict_set(r->a, d->dict, k, a->kwv[i])) return hr_rt_nomem(r);
    }
    for (size_t i = 0; ns && i < d->dict->n; i++)
        HR_TRY(hr_tpl_check_depth(d->dict->vals[i]));
    return *out = d, NULL;
}

static hr_err *b_namespace(rt *r, tv *self, const targs *a, tv **out) {
    return make_mapping(r, a, 1, out);
}
static hr_err *b_dict(rt *r, tv *self, const targs *a, tv **out) {
    return make_mapping(r, a, 0, out);
}

static hr_err *b_raise(rt *r, tv *self, const targs *a, tv **out) {
    tv *m = hr_targ(a, 0, "message", TV_NONE);
    tsb b = {0};
    hr_tv_write_str(&b, m);
    hr_err *e = hr_errf("%s", b.p ? b.p : "");
    hr_tsb_free(&b);
    r->raised = 1;
    return e;
}

static hr_err *b_strftime_now(rt *r, tv *self, const targs *a, tv **out) {
    tv *fmt = hr_targ(a, 0, "format", NULL);
    if (!fmt || fmt->k != V_STR) return hr_errf("strftime_now() needs a format string");
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char buf[512];
    size_t n = strftime(buf, sizeof buf, fmt->str.s, &tm);
    return (*out = hr_tv_strn(r->a, buf, n)) ? NULL : hr_rt_nomem(r);
}

void hr_builtins_install(rt *r, frame *g) {
    static const struct {
        const char *name;
        builtin_fn fn;
    } fns[] = {{"range", b_range},
               {"namespace", b_namespace},
               {"dict", b_dict},
               {"raise_exception", b_raise},
               {"strftime_now", b_strftime_now}};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        tv *v = hr_tv_builtin(r->a, fns[i].name, fns[i].fn, NULL, F_BUILTIN);
        if (v) hr_frame_set(r, g, fns[i].name, v);
    }
}
