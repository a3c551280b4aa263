/* Statement execution and rendering: output, if, for (with jinja's loop object and a
 * fresh scope per iteration), set (names, tuples, namespace attributes), macros and
 * call blocks, break/continue; plus hr_template_parse/render. */
#include <stdlib.h>
#include <string.h>

#include "template/ops.h"

enum { CTL_NONE, CTL_BREAK, CTL_CONTINUE };

static hr_err *assign(rt *r, frame *f, const expr *target, tv *v) {
    if (target->k == E_NAME) return hr_frame_set(r, f, target->name, v) ? NULL : hr_rt_nomem(r);
    if (target->k == E_ATTR) {
        tv *ns = hr_frame_lookup(f, target->a->name);
        if (!ns || ns->k != V_DICT || !ns->dict->is_ns)
            return hr_errf("can only assign attributes of a namespace() object ('%s')",
                           target->a->name);
        HR_TRY(hr_tpl_check_depth(v));
        return hr_tv_dict_set(r->a, ns->dict, hr_tv_str(r->a, target->name), v) ? NULL
                                                                                : hr_rt_nomem(r);
    }
    tv **items;
    size_t n;
    HR_TRY(hr_tv_iterate(r, v, &items, &n));
    if (n != target->n)
        return hr_errf(n > target->n ? "too many values to unpack (expected %zu)"
                                     : "not enough values to unpack (expected %zu, got %zu)",
                       target->n, n);
    for (size_t i = 0; i < n; i++)
        HR_TRY(assign(r, f, target->items[i], items[i]));
    return NULL;
}

static hr_err *loop_cycle(rt *r, tv *self, const targs *a, tv **out) {
    if (a->npos == 0) return hr_errf("no items for cycling given");
    tv *i0 = hr_tv_dict_gets(self->dict, "index0");
    *out = a->pos[(size_t)i0->i % a->npos];
    (void)r;
    return NULL;
}

static int loop_put(rt *r, tv *loop, const char *k, tv *v) {
    tv *key = hr_tv_str(r->a, k);
    return key && v && hr_tv_dict_set(r->a, loop->dict, key, v);
}

static tv *make_loop(rt *r, tv **items, size_t i, size_t n) {
    tv *l = hr_tv_dict(r->a);
    if (!l) return NULL;
    l->dict->is_loop = 1;
    int ok = loop_put(r, l, "index", hr_tv_int(r->a, (int64_t)i + 1)) &&
             loop_put(r, l, "index0", hr_tv_int(r->a, (int64_t)i)) &&
             loop_put(r, l, "revindex", hr_tv_int(r->a, (int64_t)(n - i))) &&
             loop_put(r, l, "revindex0", hr_tv_int(r->a, (int64_t)(n - i - 1))) &&
             loop_put(r, l, "first", TV_BOOL(i == 0)) &&
             loop_put(r, l, "last", TV_BOOL(i + 1 == n)) &&
             loop_put(r, l, "length", hr_tv_int(r->a, (int64_t)n)) &&
             loop_put(r, l, "depth", hr_tv_int(r->a, 1)) &&
             loop_put(r, l, "depth0", hr_tv_int(r->a, 0)) &&
             (i == 0 || loop_put(r, l, "previtem", items[i - 1])) &&
             (i + 1 == n || loop_put(r, l, "nextitem", items[i + 1])) &&
             loop_put(r, l, "cycle", hr_tv_builtin(r->a, "cycle", loop_cycle, l, F_METHOD));
    return ok ? l : NULL;
}

/* Applies `for x in y if cond`: the loop sees only the items that pass. */
static hr_err *loop_filter(rt *r, frame *f, const stmt *s, tv ***items, size_t *n) {
    tv **kept = *n ? hr_ta_alloc(r->a, *n * sizeof *kept) : NULL;
    if (*n && !kept) return hr_rt_nomem(r);
    size_t k = 0;
    for (size_t i = 0; i < *n; i++) {
        frame *it = hr_frame_new(r, f);
        tv *c;
        if (!it) return hr_rt_nomem(r);
        HR_TRY(assign(r, it, s->target, (*items)[i]));
        HR_TRY(hr_eval_expr(r, it, s->cond, &c));
        if (hr_tv_truthy(c)) kept[k++] = (*items)[i];
    }
    *items = kept;
    *n = k;
    return NULL;
}

static hr_err *exec_for(rt *r, frame *f, const stmt *s, tsb *out) {
    tv *seq, **items;
    size_t n;
    HR_TRY(hr_eval_expr(r, f, s->e, &seq));
    HR_TRY(hr_tv_iterate(r, seq, &items, &n));
    if (s->cond) HR_TRY(loop_filter(r, f, s, &items, &n));
    if (n == 0) {
        int ctl = CTL_NONE;
        return hr_exec_body(r, f, &s->orelse, out, &ctl);
    }
    for (size_t i = 0; i < n; i++) {
        frame *it = hr_frame_new(r, f);
        tv *loop = make_loop(r, items, i, n);
        if (!it || !loop || !hr_frame_set(r, it, "loop", loop)) return hr_rt_nomem(r);
        HR_TRY(assign(r, it, s->target, items[i]));
        int ctl = CTL_NONE;
        HR_TRY(hr_exec_body(r, it, &s->body, out, &ctl));
        if (ctl == CTL_BREAK) break;
    }
    return NULL;
}

static hr_err *capture(rt *r, frame *f, const stmt_list *body, tv **out) {
    tsb b = {0};
    int ctl = CTL_NONE;
    hr_err *e = hr_exec_body(r, f, body, &b, &ctl);
    if (!e) e = hr_tsb_error(&b);
    if (!e && !(*out = hr_tv_strn(r->a, b.p ? b.p : "", b.n))) e = hr_rt_nomem(r);
    hr_tsb_free(&b);
    return e;
}

static tv *macro_value(rt *r, frame *f, const stmt *s, const char *name) {
    tv *v = hr_tv_builtin(r->a, name, NULL, NULL, F_MACRO);
    if (!v) return NULL;
    v->fn->macro = s;
    v->fn->closure = f;
    return v;
}

/* Binds a macro's parameters; extra arguments land in varargs / kwargs. */
static hr_err *bind_params(rt *r, frame *mf, const stmt *m, const targs *a) {
    size_t extra_pos = a->npos > m->nparams ? a->npos - m->nparams : 0;
    tv *varargs = hr_tv_list(r->a, extra_pos, 1), *kwargs = hr_tv_dict(r->a);
    if (!varargs || !kwargs) return hr_rt_nomem(r);
    for (size_t i = 0; i < extra_pos; i++)
        varargs->list.items[i] = a->pos[m->nparams + i];
    for (size_t i = 0; i < a->npos; i++)
        HR_TRY(hr_tpl_check_depth(a->pos[i]));
    for (size_t i = 0; i < a->nkw; i++)
        HR_TRY(hr_tpl_check_depth(a->kwv[i]));
    for (size_t i = 0; i < m->nparams; i++) {
        tv *v = hr_targ(a, i, m->params[i], NULL);
        if (!v && m->defaults[i]) HR_TRY(hr_eval_expr(r, mf, m->defaults[i], &v));
        if (!v && !(v = hr_tv_undef_msg(r->a, "parameter '%s' was not provided", m->params[i])))
            return hr_rt_nomem(r);
        if (!hr_frame_set(r, mf, m->params[i], v)) return hr_rt_nomem(r);
    }
    for (size_t k = 0; k < a->nkw; k++) {
        int known = !strcmp(a->kwn[k], "caller");
        for (size_t i = 0; i < m->nparams && !known; i++)
            known = !strcmp(a->kwn[k], m->params[i]);
        if (!known && !hr_tv_dict_set(r->a, kwargs->dict, hr_tv_str(r->a, a->kwn[k]), a->kwv[k]))
            return hr_rt_nomem(r);
    }
    tv *caller = hr_targ(a, SIZE_MAX, "caller", NULL);
    if (caller && !hr_frame_set(r, mf, "caller", caller)) return hr_rt_nomem(r);
    return hr_frame_set(r, mf, "varargs", varargs) && hr_frame_set(r, mf, "kwargs", kwargs)
               ? NULL
               : hr_rt_nomem(r);
}

static hr_err *call_macro(rt *r, tfunc *fn, const targs *a, tv **out) {
    if (r->calls >= TPL_MAX_CALL_DEPTH)
        return hr_tpl_limit("macro calls nested deeper than %d (recursion?)", TPL_MAX_CALL_DEPTH);
    frame *mf = hr_frame_new(r, fn->closure);
    if (!mf) return hr_rt_nomem(r);
    HR_TRY(bind_params(r, mf, fn->macro, a));
    r->calls++;
    hr_err *e = capture(r, mf, &fn->macro->body, out);
    r->calls--;
    return e;
}

hr_err *hr_tv_call(rt *r, tv *fn, const targs *a, tv **out) {
    if (fn->k == V_UNDEF) return hr_undef_error(fn);
    if (fn->k != V_FUNC) return hr_errf("'%s' object is not callable", hr_tv_type_name(fn));
    if (fn->fn->kind == F_MACRO) return call_macro(r, fn->fn, a, out);
    return fn->fn->fn(r, fn->fn->self, a, out);
}

static hr_err *exec_call_block(rt *r, frame *f, const stmt *s, tsb *out) {
    tv *fn, *caller = macro_value(r, f, s, "caller"), *res;
    targs a;
    if (!caller) return hr_rt_nomem(r);
    HR_TRY(hr_eval_expr(r, f, s->e->a, &fn));
    HR_TRY(hr_eval_args(r, f, s->e, &a));
    const char **kwn = hr_ta_alloc(r->a, (a.nkw + 1) * sizeof *kwn);
    tv **kwv = hr_ta_alloc(r->a, (a.nkw + 1) * sizeof *kwv);
    if (!kwn || !kwv) return hr_rt_nomem(r);
    if (a.nkw) memcpy(kwn, a.kwn, a.nkw * sizeof *kwn), memcpy(kwv, a.kwv, a.nkw * sizeof *kwv);
    kwn[a.nkw] = "caller";
    kwv[a.nkw] = caller;
    a.kwn = kwn;
    a.kwv = kwv;
    a.nkw++;
    HR_TRY(hr_tv_call(r, fn, &a, &res));
    hr_tv_write_str(out, res);
    return NULL;
}

/* An if whose else is a single if (an elif chain) continues with it instead of recursing. */
static hr_err *exec_if(rt *r, frame *f, const stmt *s, tsb *out, int *ctl) {
    tv *v;
    for (;;) {
        HR_TRY(hr_eval_expr(r, f, s->e, &v));
        if (hr_tv_truthy(v)) return hr_exec_body(r, f, &s->body, out, ctl);
        if (s->orelse.n != 1 || s->orelse.v[0]->k != S_IF)
            return hr_exec_body(r, f, &s->orelse, out, ctl);
        s = s->orelse.v[0];
    }
}

static hr_err *exec_stmt(rt *r, frame *f, const stmt *s, tsb *out, int *ctl) {
    tv *v;
    switch (s->k) {
    case S_TEXT: hr_tsb_put(out, s->text, s->len); return NULL;
    case S_OUTPUT:
        HR_TRY(hr_eval_expr(r, f, s->e, &v));
        hr_tv_write_str(out, v);
        return NULL;
    case S_IF: return exec_if(r, f, s, out, ctl);
    case S_FOR: return exec_for(r, f, s, out);
    case S_SET: HR_TRY(hr_eval_expr(r, f, s->e, &v)); return assign(r, f, s->target, v);
    case S_SETBLOCK: HR_TRY(capture(r, f, &s->body, &v)); return assign(r, f, s->target, v);
    case S_MACRO:
        if (!(v = macro_value(r, f, s, s->name)) || !hr_frame_set(r, f, s->name, v))
            return hr_rt_nomem(r);
        return NULL;
    case S_CALLBLOCK: return exec_call_block(r, f, s, out);
    case S_BREAK: *ctl = CTL_BREAK; return NULL;
    case S_CONTINUE: *ctl = CTL_CONTINUE; return NULL;
    case S_SCOPE: return hr_exec_body(r, f, &s->body, out, ctl);
    }
    return NULL;
}

static hr_err *exec_list(rt *r, frame *f, const stmt_list *l, tsb *out, int *ctl) {
    for (size_t i = 0; i < l->n && *ctl == CTL_NONE; i++) {
        if (++r->steps > TPL_MAX_STEPS)
            return hr_tpl_limit("template exceeded the limit of %ld evaluation steps",
                                TPL_MAX_STEPS);
        HR_TRY(exec_stmt(r, f, l->v[i], out, ctl));
        HR_TRY(hr_tsb_error(out));
    }
    return NULL;
}

hr_err *hr_exec_body(rt *r, frame *f, const stmt_list *l, tsb *out, int *ctl) {
    if (r->depth >= TPL_MAX_DEPTH)
        return hr_tpl_limit("template nested deeper than %d levels while rendering (macro "
                            "recursion?)",
                            TPL_MAX_DEPTH);
    r->depth++;
    hr_err *e = exec_list(r, f, l, out, ctl);
    r->depth--;
    return e;
}

hr_err *hr_template_parse(const char *src, hr_template **out) {
    *out = NULL;
    size_t n = strlen(src);
    if (n > HR_TEMPLATE_MAX_SOURCE)
        return hr_errf("template source is %zu bytes, over the limit of %u "
                       "(HR_TEMPLATE_MAX_SOURCE)",
                       n, HR_TEMPLATE_MAX_SOURCE);
    hr_template *t = calloc(1, sizeof *t);
    if (!t || !(t->arena = hr_ta_create(HR_TEMPLATE_MAX_PARSE_MEMORY)))
        return free(t), hr_err_oom();
    hr_err *e = hr_tpl_parse(t, src);
    if (e == hr_err_oom() && hr_tpl_arena_exhausted(t->arena))
        e = hr_errf("template needs more than %u MiB to parse (HR_TEMPLATE_MAX_PARSE_MEMORY)",
                    HR_TEMPLATE_MAX_PARSE_MEMORY >> 20);
    if (e) return hr_template_free(t), e;
    *out = t;
    return NULL;
}

void hr_template_free(hr_template *t) {
    if (!t) return;
    hr_ta_destroy(t->arena);
    free(t);
}

static hr_err *install_context(rt *r, frame *g, const json_t *ctx) {
    const char *k;
    json_t *v;
    if (!ctx) return NULL;
    if (!json_is_object(ctx)) return hr_errf("template context must be a JSON object");
    json_object_foreach((json_t *)ctx, k, v) {
        tv *x;
        HR_TRY(hr_tv_from_json(r, v, 1, &x));
        char *name = hr_ta_strndup(r->a, k, strlen(k));
        if (!name || !hr_frame_set(r, g, name, x)) return hr_rt_nomem(r);
    }
    return NULL;
}

hr_err *hr_template_render(const hr_template *t, const json_t *context, char **out, int *raised) {
    *out = NULL;
    if (raised) *raised = 0;
    rt r = {.a = hr_ta_create(TPL_MAX_ARENA)};
    if (!r.a) return hr_err_oom();
    tsb b = {0};
    int ctl = CTL_NONE;
    frame *top = NULL;
    hr_err *e = NULL;
    if (!(r.globals = hr_frame_new(&r, NULL)) || !(top = hr_frame_new(&r, r.globals)))
        e = hr_rt_nomem(&r);
    if (!e) hr_builtins_install(&r, r.globals);
    if (!e) e = install_context(&r, r.globals, context);
    if (!e) e = hr_exec_body(&r, top, &t->body, &b, &ctl);
    if (!e)
        *out = b.p ? b.p : calloc(1, 1);
    else
        hr_tsb_free(&b);
    if (!e && !*out) e = hr_err_oom();
    if (raised) *raised = e && r.raised;
    hr_ta_destroy(r.a);
    return e;
}
