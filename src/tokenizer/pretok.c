/* Pre-tokenizers: Split (PCRE2 regex with Unicode classes, or a literal) with HF's five
 * delimiter behaviours, ByteLevel (optional GPT-2 regex split, then bytes -> printable
 * code points) and Metaspace. Each step maps a list of pieces to a new list; empty pieces
 * are dropped, as HF does. */
#define _GNU_SOURCE /* memmem */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

void hr_pieces_clear(hr_pieces *p) {
    p->text.len = 0;
    p->n = 0;
}

void hr_pieces_free(hr_pieces *p) {
    hr_buf_free(&p->text);
    free(p->off);
    free(p->len);
    free(p->first);
    memset(p, 0, sizeof *p);
}

hr_err *hr_pieces_add(hr_pieces *p, const char *s, size_t n, int first) {
    if (n == 0) return NULL;
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 64;
        uint32_t *o = realloc(p->off, sizeof *o * (size_t)cap);
        if (o) p->off = o;
        uint32_t *l = realloc(p->len, sizeof *l * (size_t)cap);
        if (l) p->len = l;
        uint8_t *f = realloc(p->first, (size_t)cap);
        if (f) p->first = f;
        if (!o || !l || !f) return hr_err_oom();
        p->cap = cap;
    }
    p->off[p->n] = (uint32_t)p->text.len;
    p->len[p->n] = (uint32_t)n;
    p->first[p->n] = (uint8_t)first;
    p->n++;
    return hr_buf_append(&p->text, s, n);
}

/* A span of the piece: [a, b), whether the pattern matched it. */
typedef struct {
    size_t a, b;
    int match;
} span;

typedef struct {
    span *v;
    int n, cap;
} spans;

static hr_err *spans_push(spans *s, size_t a, size_t b, int match) {
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 64;
        span *v = realloc(s->v, sizeof *v * (size_t)cap);
        if (!v) return hr_err_oom();
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (span){a, b, match};
    return NULL;
}

static size_t char_len(const char *s, size_t i, size_t n) {
    size_t k = 1;
    while (i + k < n && ((unsigned char)s[i + k] & 0xC0) == 0x80)
        k++;
    return k;
}

/* HF's find_matches: matches and the gaps between them, covering the piece. */
static hr_err *find_matches(const hr_pre_step *st, const char *s, size_t n, pcre2_match_data *md,
                            spans *out) {
    out->n = 0;
    size_t prev = 0, pos = 0;
    size_t lit = st->literal ? strlen(st->literal) : 0;
    while (pos <= n) {
        size_t a, b;
        if (st->re) {
            int rc = pcre2_match(st->re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc == PCRE2_ERROR_NOMEMORY) return hr_err_oom(); /* the interpreter's frames */
            if (rc < 0) return hr_errf("pre-tokenizer regex failed (PCRE2 error %d)", rc);
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            a = ov[0];
            b = ov[1];
        } else {
            if (!lit) break;
            const char *f = pos < n ? memmem(s + pos, n - pos, st->literal, lit) : NULL;
            if (!f) break;
            a = (size_t)(f - s);
            b = a + lit;
        }
        if (prev != a) HR_TRY(spans_push(out, prev, a, 0));
        HR_TRY(spans_push(out, a, b, 1));
        prev = b;
        pos = b > a ? b : (b < n ? b + char_len(s, b, n) : n + 1);
    }
    if (prev != n) HR_TRY(spans_push(out, prev, n, 0));
    return NULL;
}

/* Applies the delimiter behaviour in place; spans marked match=2 are to be removed. */
static void apply_behavior(hr_split_behavior bh, spans *sp) {
    int w = 0, prev_match = 0;
    switch (bh) {
    case HR_SPLIT_ISOLATED:
        for (int i = 0; i < sp->n; i++)
            sp->v[i].match = 0;
        return;
    case HR_SPLIT_REMOVED:
        for (int i = 0; i < sp->n; i++)
            sp->v[i].match = sp->v[i].match ? 2 : 0;
        return;
    case HR_SPLIT_MERGED_PREV:
        for (int i = 0; i < sp->n; i++) {
            int m = sp->v[i].match;
            if (m && !prev_match && w > 0)
                sp->v[w - 1].b = sp->v[i].b;
            else
                sp->v[w++] = (span){sp->v[i].a, sp->v[i].b, 0};
            prev_match = m;
        }
        break;
    case HR_SPLIT_MERGED_NEXT:
        w = sp->n;
        for (int i = sp->n - 1; i >= 0; i--) {
            int m = sp->v[i].match;
            if (m && !prev_match && w < sp->n)
                sp->v[w].a = sp->v[i].a;
            else
                sp->v[--w] = (span){sp->v[i].a, sp->v[i].b, 0};
            prev_match = m;
        }
        memmove(sp->v, sp->v + w, sizeof *sp->v * (size_t)(sp->n - w));
        w = sp->n - w;
        break;
    case HR_SPLIT_CONTIGUOUS:
        for (int i = 0; i < sp->n; i++) {
            int m = sp->v[i].match;
            if (m == prev_match && w > 0)
                sp->v[w - 1].b = sp->v[i].b;
            else
                sp->v[w++] = (span){sp->v[i].a, sp->v[i].b, 0};
            prev_match = m;
        }
        break;
    }
    sp->n = w;
}

static hr_err *split_piece(const hr_pre_step *st, hr_split_behavior bh, int invert, const char *s,
                           size_t n, int first, pcre2_match_data *md, spans *sp, hr_pieces *out) {
    HR_TRY(find_matches(st, s, n, md, sp));
    if (invert)
        for (int i = 0; i < sp->n; i++)
            sp->v[i].match = !sp->v[i].match;
    apply_behavior(bh, sp);
    for (int i = 0; i < sp->n; i++)
        if (sp->v[i].match != 2)
            HR_TRY(hr_pieces_add(out, s + sp->v[i].a, sp->v[i].b - sp->v[i].a,
                                 first && sp->v[i].a == 0));
    return NULL;
}

static hr_err *byte_map(const hr_bytelevel *bl, hr_pieces *p) {
    hr_pieces m = {0};
    hr_buf w = {0};
    hr_err *e = NULL;
    for (int i = 0; i < p->n && !e; i++) {
        const unsigned char *s = (const unsigned char *)p->text.p + p->off[i];
        w.len = 0;
        for (uint32_t k = 0; k < p->len[i] && !e; k++)
            e = hr_buf_append(&w, bl->enc[s[k]], bl->enc_len[s[k]]);
        if (!e) e = hr_pieces_add(&m, w.p, w.len, p->first[i]);
    }
    hr_buf_free(&w);
    if (e) {
        hr_pieces_free(&m);
        return e;
    }
    hr_pieces_free(p);
    *p = m;
    return NULL;
}

static hr_err *metaspace_piece(const hr_pre_step *st, const char *s, size_t n, int first,
                               pcre2_match_data *md, spans *sp, hr_pieces *out) {
    hr_buf w = {0};
    size_t rl = strlen(st->replacement);
    hr_err *e = NULL;
    for (size_t i = 0; i < n && !e; i++)
        e = s[i] == ' ' ? hr_buf_append(&w, st->replacement, rl) : hr_buf_append(&w, s + i, 1);
    int starts = w.len >= rl && memcmp(w.p, st->replacement, rl) == 0;
    int pre = !starts && w.len > 0 &&
              (st->prepend == HR_PREPEND_ALWAYS || (st->prepend == HR_PREPEND_FIRST && first));
    hr_buf v = {0};
    if (!e && pre) e = hr_buf_append(&v, st->replacement, rl);
    if (!e) e = hr_buf_append(&v, w.p ? w.p : "", w.len);
    if (!e && st->split) {
        hr_pre_step lit = {.kind = HR_PRE_SPLIT, .literal = st->replacement};
        e = split_piece(&lit, HR_SPLIT_MERGED_NEXT, 0, v.p, v.len, first, md, sp, out);
    } else if (!e) {
        e = hr_pieces_add(out, v.p, v.len, first);
    }
    hr_buf_free(&w);
    hr_buf_free(&v);
    return e;
}

static hr_err *run_step(const hr_tokenizer *t, const hr_pre_step *st, hr_pieces *in, hr_pieces *out,
                        pcre2_match_data *md, spans *sp) {
    for (int i = 0; i < in->n; i++) {
        const char *s = in->text.p + in->off[i];
        size_t n = in->len[i];
        int first = in->first[i];
        if (st->kind == HR_PRE_SPLIT) {
            HR_TRY(split_piece(st, st->behavior, st->invert, s, n, first, md, sp, out));
        } else if (st->kind == HR_PRE_METASPACE) {
            HR_TRY(metaspace_piece(st, s, n, first, md, sp, out));
        } else if (st->add_prefix_space && s[0] != ' ') {
            hr_buf w = {0};
            hr_err *e = hr_buf_append(&w, " ", 1);
            if (!e) e = hr_buf_append(&w, s, n);
            if (!e && st->re)
                e = split_piece(st, HR_SPLIT_ISOLATED, 0, w.p, w.len, first, md, sp, out);
            else if (!e)
                e = hr_pieces_add(out, w.p, w.len, first);
            hr_buf_free(&w);
            HR_TRY(e);
        } else if (st->re) {
            HR_TRY(split_piece(st, HR_SPLIT_ISOLATED, 0, s, n, first, md, sp, out));
        } else {
            HR_TRY(hr_pieces_add(out, s, n, first));
        }
    }
    if (st->kind == HR_PRE_BYTELEVEL) HR_TRY(byte_map(&t->bl, out));
    return NULL;
}

hr_err *hr_pretokenize(const hr_tokenizer *t, const hr_pipeline *p, hr_pieces *in, hr_pieces *out,
                       pcre2_match_data *md) {
    spans sp = {0};
    hr_err *e = NULL;
    hr_pieces_clear(out);
    if (p->n_pre == 0) {
        hr_pieces tmp = *in;
        *in = *out;
        *out = tmp;
    }
    for (int i = 0; i < p->n_pre && !e; i++) {
        hr_pieces_clear(out);
        e = run_step(t, &p->pre[i], in, out, md, &sp);
        if (i + 1 < p->n_pre) {
            hr_pieces tmp = *in;
            *in = *out;
            *out = tmp;
        }
    }
    hr_pieces_clear(in);
    free(sp.v);
    return e;
}
