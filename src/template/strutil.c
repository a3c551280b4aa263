/* String operations with Python's semantics over UTF-8; see strutil.h. */
#define _GNU_SOURCE
#include "template/strutil.h"

#include <string.h>
#include <utf8proc.h>

int hr_py_isspace(uint32_t c) {
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

hr_err *hr_need_str(const tv *v, const char *fn) {
    if (v->k == V_STR) return NULL;
    if (v->k == V_UNDEF) return hr_undef_error(v);
    return hr_errf("%s: expected a string, got %s", fn, hr_tv_type_name(v));
}

static int in_set(uint32_t c, const tv *chars) {
    if (!chars || chars->k == V_NONE) return hr_py_isspace(c);
    for (size_t i = 0; i < chars->str.n;)
        if (hr_tpl_utf8_next(chars->str.s, chars->str.n, &i) == c) return 1;
    return 0;
}

hr_err *hr_str_strip(rt *r, const tv *s, const tv *chars, int which, tv **out) {
    if (chars && chars->k != V_NONE) HR_TRY(hr_need_str(chars, "strip"));
    size_t b = 0, e = s->str.n;
    while ((which & 1) && b < e) {
        size_t p = b;
        if (!in_set(hr_tpl_utf8_next(s->str.s, s->str.n, &p), chars)) break;
        b = p;
    }
    while ((which & 2) && e > b) {
        size_t p = e - 1;
        while (p > b && ((unsigned char)s->str.s[p] & 0xC0) == 0x80)
            p--;
        size_t q = p;
        if (!in_set(hr_tpl_utf8_next(s->str.s, s->str.n, &q), chars)) break;
        e = p;
    }
    return (*out = hr_tv_strn(r->a, s->str.s + b, e - b)) ? NULL : hr_rt_nomem(r);
}

hr_err *hr_str_case(rt *r, const tv *s, char mode, tv **out) {
    char *d = hr_ta_alloc(r->a, s->str.n * 3 + 4);
    if (!d) return hr_rt_nomem(r);
    size_t o = 0;
    int prev_cased = 0, first = 1;
    for (size_t i = 0; i < s->str.n;) {
        uint32_t c = hr_tpl_utf8_next(s->str.s, s->str.n, &i);
        int up = mode == 'u' || (mode == 'c' && first) || (mode == 't' && !prev_cased);
        if (mode != 'u' && mode != 'l' && mode != 'c' && mode != 't') up = 0;
        uint32_t m = (uint32_t)(up ? utf8proc_toupper((utf8proc_int32_t)c)
                                   : utf8proc_tolower((utf8proc_int32_t)c));
        const utf8proc_property_t *p = utf8proc_get_property((utf8proc_int32_t)c);
        prev_cased = p->category == UTF8PROC_CATEGORY_LU || p->category == UTF8PROC_CATEGORY_LL ||
                     p->category == UTF8PROC_CATEGORY_LT;
        o += hr_utf8_encode(m, d + o);
        first = 0;
    }
    return (*out = hr_tv_strn(r->a, d, o)) ? NULL : hr_rt_nomem(r);
}

static int list_push(rt *r, tv *l, size_t *cap, tv *item) {
    if (!item) return 0;
    if (l->list.n == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        tv **v = hr_ta_alloc(r->a, *cap * sizeof *v);
        if (!v) return 0;
        if (l->list.n) memcpy(v, l->list.items, l->list.n * sizeof *v);
        l->list.items = v;
    }
    l->list.items[l->list.n++] = item;
    return 1;
}

static void reverse_items(tv *l) {
    for (size_t i = 0, j = l->list.n; i + 1 < j; i++, j--) {
        tv *t = l->list.items[i];
        l->list.items[i] = l->list.items[j - 1];
        l->list.items[j - 1] = t;
    }
}

static hr_err *split_ws(rt *r, const tv *s, int64_t maxsplit, int from_right, tv *l) {
    size_t cap = 0, n = s->str.n;
    const char *p = s->str.s;
    if (!from_right) {
        size_t i = 0;
        for (;;) {
            size_t q;
            while (i < n && (q = i, hr_py_isspace(hr_tpl_utf8_next(p, n, &q))))
                i = q;
            if (i >= n) break;
            size_t start = i;
            if (maxsplit >= 0 && (int64_t)l->list.n >= maxsplit) {
                size_t e = n;
                while (e > start && hr_py_isspace((unsigned char)p[e - 1]))
                    e--;
                if (!list_push(r, l, &cap, hr_tv_strn(r->a, p + start, e - start)))
                    return hr_rt_nomem(r);
                break;
            }
            while (i < n && (q = i, !hr_py_isspace(hr_tpl_utf8_next(p, n, &q))))
                i = q;
            if (!list_push(r, l, &cap, hr_tv_strn(r->a, p + start, i - start)))
                return hr_rt_nomem(r);
        }
        return NULL;
    }
    size_t e = n;
    for (;;) {
        while (e > 0 && hr_py_isspace((unsigned char)p[e - 1]))
            e--;
        if (e == 0) break;
        if (maxsplit >= 0 && (int64_t)l->list.n >= maxsplit) {
            size_t b = 0;
            while (b < e && hr_py_isspace((unsigned char)p[b]))
                b++;
            if (!list_push(r, l, &cap, hr_tv_strn(r->a, p + b, e - b))) return hr_rt_nomem(r);
            break;
        }
        size_t b = e;
        while (b > 0 && !hr_py_isspace((unsigned char)p[b - 1]))
            b--;
        if (!list_push(r, l, &cap, hr_tv_strn(r->a, p + b, e - b))) return hr_rt_nomem(r);
        e = b;
    }
    reverse_items(l);
    return NULL;
}

static const char *find_last(const char *h, size_t hn, const char *nd, size_t nn) {
    if (nn > hn) return NULL;
    for (size_t i = hn - nn + 1; i-- > 0;)
        if (memcmp(h + i, nd, nn) == 0) return h + i;
    return NULL;
}

static hr_err *split_sep(rt *r, const tv *s, const tv *sep, int64_t maxsplit, int from_right,
                         tv *l) {
    if (sep->str.n == 0) return hr_errf("empty separator");
    size_t cap = 0;
    const char *p = s->str.s, *end = p + s->str.n;
    if (!from_right) {
        const char *m;
        while ((maxsplit < 0 || (int64_t)l->list.n < maxsplit) &&
               (m = memmem(p, (size_t)(end - p), sep->str.s, sep->str.n))) {
            if (!list_push(r, l, &cap, hr_tv_strn(r->a, p, (size_t)(m - p)))) return hr_rt_nomem(r);
            p = m + sep->str.n;
        }
        return list_push(r, l, &cap, hr_tv_strn(r->a, p, (size_t)(end - p))) ? NULL
                                                                             : hr_rt_nomem(r);
    }
    const char *m;
    while ((maxsplit < 0 || (int64_t)l->list.n < maxsplit) &&
           (m = find_last(p, (size_t)(end - p), sep->str.s, sep->str.n))) {
        const char *after = m + sep->str.n;
        if (!list_push(r, l, &cap, hr_tv_strn(r->a, after, (size_t)(end - after))))
            return hr_rt_nomem(r);
        end = m;
    }
    if (!list_push(r, l, &cap, hr_tv_strn(r->a, p, (size_t)(end - p)))) return hr_rt_nomem(r);
    reverse_items(l);
    return NULL;
}

hr_err *hr_str_split(rt *r, const tv *s, const tv *sep, int64_t maxsplit, int from_right,
                     tv **out) {
    tv *l = hr_tv_list(r->a, 0, 0);
    if (!l) return hr_rt_nomem(r);
    *out = l;
    if (!sep || sep->k == V_NONE) return split_ws(r, s, maxsplit, from_right, l);
    HR_TRY(hr_need_str(sep, "split"));
    return split_sep(r, s, sep, maxsplit, from_right, l);
}

hr_err *hr_str_replace(rt *r, const tv *s, const tv *old, const tv *new_, int64_t count, tv **out) {
    HR_TRY(hr_need_str(old, "replace"));
    HR_TRY(hr_need_str(new_, "replace"));
    tsb b = {0};
    const char *p = s->str.s, *end = p + s->str.n;
    int64_t done = 0;
    if (old->str.n == 0) { /* Python inserts `new` between every character */
        size_t i = 0;
        while (count < 0 || done < count) {
            hr_tsb_put(&b, new_->str.s, new_->str.n);
            done++;
            if (i >= s->str.n) break;
            size_t q = i;
            hr_tpl_utf8_next(s->str.s, s->str.n, &q);
            hr_tsb_put(&b, s->str.s + i, q - i);
            i = q;
        }
        p = s->str.s + i;
    } else {
        const char *m;
        while ((count < 0 || done < count) &&
               (m = memmem(p, (size_t)(end - p), old->str.s, old->str.n))) {
            hr_tsb_put(&b, p, (size_t)(m - p));
            hr_tsb_put(&b, new_->str.s, new_->str.n);
            p = m + old->str.n;
            done++;
        }
    }
    hr_tsb_put(&b, p, (size_t)(end - p));
    if (b.full) return hr_tsb_free(&b), hr_rt_nomem(r);
    *out = hr_tv_strn(r->a, b.p ? b.p : "", b.n);
    hr_tsb_free(&b);
    return *out ? NULL : hr_rt_nomem(r);
}

size_t hr_str_count(const tv *s, const tv *sub) {
    if (sub->str.n == 0) return hr_tpl_utf8_len(s->str.s, s->str.n) + 1;
    size_t c = 0;
    const char *p = s->str.s, *end = p + s->str.n, *m;
    while ((m = memmem(p, (size_t)(end - p), sub->str.s, sub->str.n)))
        c++, p = m + sub->str.n;
    return c;
}

int64_t hr_str_find(const tv *s, const tv *sub, int last) {
    const char *m = last ? find_last(s->str.s, s->str.n, sub->str.s, sub->str.n)
                         : memmem(s->str.s, s->str.n, sub->str.s, sub->str.n);
    if (!m && sub->str.n == 0) m = last ? s->str.s + s->str.n : s->str.s;
    return m ? (int64_t)hr_tpl_utf8_len(s->str.s, (size_t)(m - s->str.s)) : -1;
}
