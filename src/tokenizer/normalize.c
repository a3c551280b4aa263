/* Normalizers: Unicode forms through utf8proc (skipped for pure ASCII, which every form
 * leaves unchanged), Lowercase, Replace (literal), Prepend and Strip, applied in order to
 * one piece of text. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/tok_internal.h"

static int is_ascii(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return 0;
    return 1;
}

static hr_err *unicode_form(hr_norm_kind k, const char *s, size_t n, hr_buf *out) {
    if (is_ascii(s, n)) return hr_buf_append(out, s, n);
    int opt = UTF8PROC_STABLE;
    if (k == HR_NORM_NFC || k == HR_NORM_NFKC)
        opt |= UTF8PROC_COMPOSE;
    else
        opt |= UTF8PROC_DECOMPOSE;
    if (k == HR_NORM_NFKC || k == HR_NORM_NFKD) opt |= UTF8PROC_COMPAT;
    utf8proc_uint8_t *r = NULL;
    utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &r, opt);
    if (m < 0) return hr_errf("normalizer: %s", utf8proc_errmsg(m));
    hr_err *e = hr_buf_append(out, r, (size_t)m);
    free(r);
    return e;
}

static hr_err *lowercase(const char *s, size_t n, hr_buf *out) {
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = hr_utf8_decode(s + i, &cp);
        char enc[4];
        size_t m = hr_utf8_encode((uint32_t)utf8proc_tolower((utf8proc_int32_t)cp), enc);
        HR_TRY(hr_buf_append(out, enc, m));
        i += k;
    }
    return NULL;
}

static hr_err *replace(const char *pat, const char *with, const char *s, size_t n, hr_buf *out) {
    size_t pl = strlen(pat), wl = strlen(with), i = 0, run = 0;
    if (!pl) return hr_buf_append(out, s, n);
    while (i + pl <= n) {
        if (memcmp(s + i, pat, pl) == 0) {
            HR_TRY(hr_buf_append(out, s + run, i - run));
            HR_TRY(hr_buf_append(out, with, wl));
            i += pl;
            run = i;
        } else {
            i++;
        }
    }
    return hr_buf_append(out, s + run, n - run);
}

/* Strips Unicode white space; ASCII white space and U+00A0-ish cases via utf8proc. */
static int is_space_cp(uint32_t cp) {
    if (cp == ' ' || (cp >= 9 && cp <= 13)) return 1;
    if (cp < 0x80) return 0;
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP ||
           cp == 0x85;
}

static hr_err *strip(int left, int right, const char *s, size_t n, hr_buf *out) {
    size_t a = 0, b = n;
    while (left && a < b) {
        uint32_t cp;
        size_t k = hr_utf8_decode(s + a, &cp);
        if (!is_space_cp(cp)) break;
        a += k;
    }
    while (right && b > a) {
        size_t p = b - 1;
        while (p > a && ((unsigned char)s[p] & 0xC0) == 0x80)
            p--;
        uint32_t cp;
        hr_utf8_decode(s + p, &cp);
        if (!is_space_cp(cp)) break;
        b = p;
    }
    return hr_buf_append(out, s + a, b - a);
}

static hr_err *apply(const hr_norm_step *st, const char *s, size_t n, hr_buf *out) {
    switch (st->kind) {
    case HR_NORM_NFC:
    case HR_NORM_NFKC:
    case HR_NORM_NFD:
    case HR_NORM_NFKD: return unicode_form(st->kind, s, n, out);
    case HR_NORM_LOWERCASE: return lowercase(s, n, out);
    case HR_NORM_REPLACE: return replace(st->a, st->b, s, n, out);
    case HR_NORM_PREPEND:
        if (n) HR_TRY(hr_buf_append(out, st->a, strlen(st->a)));
        return hr_buf_append(out, s, n);
    case HR_NORM_STRIP: return strip(st->left, st->right, s, n, out);
    }
    return NULL;
}

hr_err *hr_normalize(const hr_pipeline *p, const char *s, size_t n, hr_buf *out) {
    if (p->n_norm == 0) return hr_buf_append(out, s, n);
    hr_buf a = {0}, b = {0};
    hr_err *e = NULL;
    const char *cur = s;
    size_t cur_n = n;
    for (int i = 0; i < p->n_norm && !e; i++) {
        hr_buf *dst = (i % 2 == 0) ? &a : &b;
        dst->len = 0;
        e = apply(&p->norm[i], cur, cur_n, dst);
        cur = dst->p ? dst->p : "";
        cur_n = dst->len;
    }
    if (!e) e = hr_buf_append(out, cur, cur_n);
    hr_buf_free(&a);
    hr_buf_free(&b);
    return e;
}
