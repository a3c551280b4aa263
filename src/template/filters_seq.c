/* jinja2's filters on sequences and mappings: items, join, first/last, list, reverse,
 * sort/dictsort (stable, Python ordering), unique, select/reject(attr), map, sum,
 * min/max, batch. Attribute arguments may be dotted ("function.name"). */
#include <stdlib.h>
#include <string.h>

#include "template/filters.h"
#include "template/strutil.h"

static hr_err *items_of(rt *r, tv *x, tv ***items, size_t *n) {
    return hr_tv_iterate(r, x, items, n);
}

static hr_err *new_list(rt *r, tv **items, size_t n, tv **out) {
    tv *l = hr_tv_list(r->a, n, 0);
    if (!l) return hr_rt_nomem(r);
    if (n) memcpy(l->list.items, items, n * sizeof *items);
    return *out = l, NULL;
}

/* item["a"]["b"] for attribute "a.b" (numeric parts index lists). */
static hr_err *get_path(rt *r, tv *item, const tv *attr, tv **out) {
    if (!attr || attr->k == V_NONE) return *out = item, NULL;
    if (attr->k == V_INT) return hr_tv_getitem(r, item, (tv *)attr, out);
    if (attr->k != V_STR) return hr_errf("attribute must be a string");
    const char *s = attr->str.s;
    *out = item;
    for (;;) {
        const char *dot = strchr(s, '.');
        size_t n = dot ? (size_t)(dot - s) : strlen(s);
        tv *key =
            n && s[0] >= '0' && s[0] <= '9' ? hr_tv_int(r->a, atoll(s)) : hr_tv_strn(r->a, s, n);
        if (!key) return hr_rt_nomem(r);
        if ((*out)->k == V_UNDEF) return NULL;
        HR_TRY(hr_tv_getitem(r, *out, key, out));
        if (!dot) return NULL;
        s = dot + 1;
    }
}

hr_err *hr_f_items(rt *r, tv *x, const targs *a, tv **out) {
    if (x->k == V_UNDEF) return new_list(r, NULL, 0, out);
    if (x->k != V_DICT || x->dict->is_ns || x->dict->is_loop)
        return hr_errf("Can only get item pairs from a mapping.");
    tv *l = hr_tv_list(r->a, x->dict->n, 0);
    if (!l) return hr_rt_nomem(r);
    for (size_t i = 0; i < x->dict->n; i++) {
        tv *p = hr_tv_list(r->a, 2, 1);
        if (!p) return hr_rt_nomem(r);
        p->list.items[0] = x->dict->keys[i];
        p->list.items[1] = x->dict->vals[i];
        l->list.items[i] = p;
    }
    return *out = l, NULL;
}

hr_err *hr_f_join(rt *r, tv *x, const targs *a, tv **out) {
    tv *sep = hr_targ(a, 0, "d", NULL), *attr = hr_targ(a, 1, "attribute", NULL), **items;
    size_t n;
    HR_TRY(items_of(r, x, &items, &n));
    tsb b = {0};
    hr_err *e = NULL;
    for (size_t i = 0; i < n && !e; i++) {
        tv *v;
        if ((e = get_path(r, items[i], attr, &v))) break;
        if (i && sep) hr_tv_write_str(&b, sep);
        hr_tv_write_str(&b, v);
    }
    if (!e) e = hr_tsb_error(&b);
    if (!e && !(*out = hr_tv_strn(r->a, b.p ? b.p : "", b.n))) e = hr_rt_nomem(r);
    hr_tsb_free(&b);
    return e;
}

hr_err *hr_f_first(rt *r, tv *x, const targs *a, tv **out) {
    tv **items;
    size_t n;
    HR_TRY(items_of(r, x, &items, &n));
    if (n) return *out = items[0], NULL;
    return hr_fret(r, hr_tv_undef_msg(r->a, "No first item, sequence was empty."), out);
}

hr_err *hr_f_last(rt *r, tv *x, const targs *a, tv **out) {
    tv **items;
    size_t n;
    HR_TRY(items_of(r, x, &items, &n));
    if (n) return *out = items[n - 1], NULL;
    return hr_fret(r, hr_tv_undef_msg(r->a, "No last item, sequence was empty."), out);
}

hr_err *hr_f_list(rt *r, tv *x, const targs *a, tv **out) {
    tv **items;
    size_t n;
    HR_TRY(items_of(r, x, &items, &n));
    return new_list(r, items, n, out);
}

hr_err *hr_f_reverse(rt *r, tv *x, const targs *a, tv **out) {
    if (x->k == V_STR) {
        tv *s = NULL;
        HR_TRY(hr_f_list(r, x, a, &s));
        tsb b = {0};
        for (size_t i = s->list.n; i-- > 0;)
            hr_tsb_put(&b, s->list.items[i]->str.s, s->list.items[i]->str.n);
        *out = hr_tv_strn(r->a, b.p ? b.p : "", b.n);
        hr_tsb_free(&b);
        return *out ? NULL : hr_rt_nomem(r);
    }
    tv **items;
    size_t n;
    HR_TRY(items_of(r, x, &items, &n));
    tv *l = hr_tv_list(r->a, n, 0);
    if (!l) return hr_rt_nomem(r);
    for (size_t i = 0; i < n; i++)
        l->list.items[i] = items[n - 1 - i];
    return *out = l, NULL;
}

/* A sort key: the item's attribute, lowercased when not case sensitive. */
static hr_err *sort_key(rt *r, tv *item, const tv *attr, int cs, tv **key) {
    HR_TRY(get_path(r, item, attr, key));
    if (!cs && (*key)->k == V_STR) return hr_str_case(r, *key, 'l', key);
    return NULL;
}

/* Stable merge sort of items by keys; comparison errors propagate. */
static hr_err *merge_sort(tv **items, tv **keys, tv **ti, tv **tk, size_t n, int rev) {
    if (n < 2) return NULL;
    size_t h = n / 2;
    HR_TRY(merge_sort(items, keys, ti, tk, h, rev));
    HR_TRY(merge_sort(items + h, keys + h, ti, tk, n - h, rev));
    size_t i = 0, j = h, o = 0;
    while (i < h || j < n) {
        int take_right = 0;
        if (i < h && j < n) {
            int c;
            HR_TRY(hr_tv_compare(keys[j], keys[i], "<", &c));
            take_right = rev ? c > 0 : c < 0;
        } else
            take_right = i >= h;
        size_t k = take_right ? j++ : i++;
        ti[o] = items[k];
        tk[o++] = keys[k];
    }
    memcpy(items, ti, n * sizeof *items);
    memcpy(keys, tk, n * sizeof *keys);
    return NULL;
}

static hr_err *sorted(rt *r, tv **src, size_t n, const tv *attr, int cs, int rev, tv **out) {
    tv **items = hr_ta_alloc(r->a, (n + 1) * sizeof *items),
       **keys = hr_ta_alloc(r->a, (n + 1) * sizeof *keys);
    tv **ti = hr_ta_alloc(r->a, (n + 1) * sizeof *ti),
       **tk = hr_ta_alloc(r->a, (n + 1) * sizeof *tk);
    if (!items || !keys || !ti || !tk) return hr_rt_nomem(r);
    for (size_t i = 0; i < n; i++) {
        items[i] = src[i];
        HR_TRY(sort_key(r, src[i], attr, cs, &keys[i]));
    }
    HR_TRY(merge_sort(items, keys, ti, tk, n, rev));
    return new_list(r, items, n, out);
}

hr_err *hr_f_sort(rt *r, tv *x, const targs *a, tv **out) {
    tv **items;
    size_t n;
    HR_TRY(items_of(r, x, &items, &n));
    return sorted(r, items, n, hr_targ(a, 2, "attribute", NULL),
                  hr_tv_truthy(hr_targ(a, 1, "case_sensitive", TV_FALSE)),
                  hr_tv_truthy(hr_targ(a, 0, "reverse", TV_FALSE)), out);
}

hr_err *hr_f_dictsort(rt *r, tv *x, const targs *a, tv **out) {
    tv *pairs, *by = hr_targ(a, 1, "by", NULL);
    static tv zero = {.k = V_INT, .i = 0}, one = {.k = V_INT, .i = 1};
    HR_TRY(hr_f_items(r, x, a, &pairs));
    int by_value = by && by->k == V_STR && !strcmp(by->str.s, "value");
    return sorted(r, pairs->list.items, pairs->list.n, by_value ? &one : &zero,
                  hr_tv_truthy(hr_targ(a, 0, "case_sensitive", TV_FALSE)),
                  hr_tv_truthy(hr_targ(a, 2, "reverse", TV_FALSE)), out);
}

hr_err *hr_f_unique(rt *r, tv *x, const targs *a, tv **out) {
    tv **items, *attr = hr_targ(a, 1, "attribute", NULL);
    int cs = hr_tv_truthy(hr_targ(a, 0, "case_sensitive", TV_FALSE));
    size_t n, k = 0;
    HR_TRY(items_of(r, x, &items, &n));
    tv **keep = hr_ta_alloc(r->a, (n + 1) * sizeof *keep),
       **keys = hr_ta_alloc(r->a, (n + 1) * sizeof *keys);
    if (!keep || !keys) return hr_rt_nomem(r);
    for (size_t i = 0; i < n; i++) {
        tv *key;
        HR_TRY(sort_key(r, items[i], attr, cs, &key));
        int seen = 0;
        for (size_t j = 0; j < k && !seen; j++)
            seen = hr_tv_equal(keys[j], key);
        if (!seen) keys[k] = key, keep[k++] = items[i];
    }
    return new_list(r, keep, k, out);
}

/* select/reject(test, args...) and selectattr/rejectattr(attr, test, args...). */
static hr_err *select_common(rt *r, tv *x, const targs *a, int by_attr, int want, tv **out) {
    tv **items;
    size_t n, k = 0, skip = by_attr ? 1 : 0;
    tv *attr = by_attr ? hr_targ(a, 0, NULL, NULL) : NULL, *test = hr_targ(a, skip, NULL, NULL);
    if (by_attr && !attr) return hr_errf("selectattr/rejectattr need an attribute");
    if (test && test->k != V_STR) return hr_errf("test name must be a string");
    HR_TRY(items_of(r, x, &items, &n));
    targs ta = {a->npos > skip + 1 ? a->pos + skip + 1 : NULL,
                a->npos > skip + 1 ? a->npos - skip - 1 : 0, NULL, NULL, 0};
    tv **keep = hr_ta_alloc(r->a, (n + 1) * sizeof *keep);
    if (!keep) return hr_rt_nomem(r);
    for (size_t i = 0; i < n; i++) {
        tv *v;
        int ok;
        HR_TRY(get_path(r, items[i], attr, &v));
        if (test)
            HR_TRY(hr_apply_test(r, test->str.s, v, &ta, &ok));
        else
            ok = hr_tv_truthy(v);
        if (ok == want) keep[k++] = items[i];
    }
    return new_list(r, keep, k, out);
}

hr_err *hr_f_select(rt *r, tv *x, const targs *a, tv **out) {
    return select_common(r, x, a, 0, 1, out);
}
hr_err *hr_f_reject(rt *r, tv *x, const targs *a, tv **out) {
    return select_common(r, x, a, 0, 0, out);
}
hr_err *hr_f_selectattr(rt *r, tv *x, const targs *a, tv **out) {
    return select_common(r, x, a, 1, 1, out);
}
hr_err *hr_f_rejectattr(rt *r, tv *x, const targs *a, tv **out) {
    return select_common(r, x, a, 1, 0, out);
}

/* map(attribute="x", default=d) or map("filter", args...). */
hr_err *hr_f_map(rt *r, tv *x, const targs *a, tv **out) {
    tv **items, *attr = hr_targ(a, SIZE_MAX, "attribute", NULL),
                *def = hr_targ(a, SIZE_MAX, "default", NULL);
    tv *name = hr_targ(a, 0, NULL, NULL);
    size_t n;
    if (!attr && (!name || name->k != V_STR))
        return hr_errf("map needs a filter name or attribute=");
    HR_TRY(items_of(r, x, &items, &n));
    tv *l = hr_tv_list(r->a, n, 0);
    if (!l) return hr_rt_nomem(r);
    targs fa = {a->npos > 1 ? a->pos + 1 : NULL, a->npos > 1 ? a->npos - 1 : 0, NULL, NULL, 0};
    for (size_t i = 0; i < n; i++) {
        tv **slot = &l->list.items[i];
        if (attr) {
            HR_TRY(get_path(r, items[i], attr, slot));
            if ((*slot)->k == V_UNDEF && def) *slot = def;
        } else
            HR_TRY(hr_apply_filter(r, name->str.s, items[i], &fa, slot));
    }
    return *out = l, NULL;
}

hr_err *hr_f_sum(rt *r, tv *x, const targs *a, tv **out) {
    tv **items, *attr = hr_targ(a, 0, "attribute", NULL), *acc = hr_targ(a, 1, "start", NULL);
    size_t n;
    HR_TRY(items_of(r, x, &items, &n));
    if (!acc && !(acc = hr_tv_int(r->a, 0))) return hr_rt_nomem(r);
    for (size_t i = 0; i < n; i++) {
        tv *v;
        HR_TRY(get_path(r, items[i], attr, &v));
        if (!hr_tv_is_num(acc) || !hr_tv_is_num(v))
            return hr_errf("unsupported operand type(s) for +: '%s' and '%s'", hr_tv_type_name(acc),
                           hr_tv_type_name(v));
        acc = acc->k == V_FLOAT || v->k == V_FLOAT
                  ? hr_tv_float(r->a, hr_tv_num(acc) + hr_tv_num(v))
                  : hr_tv_int(r->a, (int64_t)hr_tv_num(acc) + (int64_t)hr_tv_num(v));
        if (!acc) return hr_rt_nomem(r);
    }
    return *out = acc, NULL;
}

static hr_err *min_max(rt *r, tv *x, const targs *a, int want_max, tv **out) {
    tv *s;
    targs sa = {NULL, 0, a->kwn, a->kwv, a->nkw};
    HR_TRY(hr_f_sort(r, x, &sa, &s));
    if (!s->list.n)
        return hr_fret(r, hr_tv_undef_msg(r->a, "No aggregated item, sequence was empty."), out);
    /* the first of equal items wins, as in Python's min/max */
    size_t pick = 0;
    if (want_max) {
        tv *attr = hr_targ(a, SIZE_MAX, "attribute", NULL), *kl, *ki;
        int cs = hr_tv_truthy(hr_targ(a, SIZE_MAX, "case_sensitive", TV_FALSE));
        pick = s->list.n - 1;
        HR_TRY(sort_key(r, s->list.items[pick], attr, cs, &kl));
        while (pick > 0) {
            HR_TRY(sort_key(r, s->list.items[pick - 1], attr, cs, &ki));
            if (!hr_tv_equal(ki, kl)) break;
            pick--;
        }
    }
    return *out = s->list.items[pick], NULL;
}

hr_err *hr_f_min(rt *r, tv *x, const targs *a, tv **out) { return min_max(r, x, a, 0, out); }
hr_err *hr_f_max(rt *r, tv *x, const targs *a, tv **out) { return min_max(r, x, a, 1, out); }

hr_err *hr_f_batch(rt *r, tv *x, const targs *a, tv **out) {
    tv **items, *size = hr_targ(a, 0, "linecount", NULL), *fill = hr_targ(a, 1, "fill_with", NULL);
    size_t n;
    if (!size || size->k != V_INT || size->i <= 0) return hr_errf("batch needs a positive count");
    HR_TRY(items_of(r, x, &items, &n));
    size_t per = (size_t)size->i, nb = (n + per - 1) / per;
    tv *l = hr_tv_list(r->a, nb, 0);
    if (!l) return hr_rt_nomem(r);
    for (size_t b = 0; b < nb; b++) {
        size_t cnt = n - b * per < per ? n - b * per : per;
        tv *chunk = hr_tv_list(r->a, fill ? per : cnt, 0);
        if (!chunk) return hr_rt_nomem(r);
        for (size_t i = 0; i < chunk->list.n; i++)
            chunk->list.items[i] = i < cnt ? items[b * per + i] : fill;
        l->list.items[b] = chunk;
    }
    return *out = l, NULL;
}
