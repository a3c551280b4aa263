/* Decoding: ids -> token strings -> the decoder steps of tokenizer.json (Replace,
 * ByteFallback, Fuse, Strip, Metaspace, ByteLevel), then transformers'
 * clean_up_tokenization when tokenizer_config.json asks for it. Output is always valid
 * UTF-8: invalid byte runs become U+FFFD as HF's lossy conversions do. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

static const char *tok_at(const hr_pieces *p, int i) { return p->text.p + p->off[i]; }

static hr_err *dec_replace(const hr_dec_step *st, hr_pieces *in, hr_pieces *out) {
    size_t pl = strlen(st->a), wl = strlen(st->b);
    hr_buf w = {0};
    hr_err *e = NULL;
    for (int i = 0; i < in->n && !e; i++) {
        const char *s = tok_at(in, i);
        size_t n = in->len[i], k = 0, run = 0;
        w.len = 0;
        while (pl && k + pl <= n && !e) {
            if (memcmp(s + k, st->a, pl) == 0) {
                e = hr_buf_append(&w, s + run, k - run);
                if (!e) e = hr_buf_append(&w, st->b, wl);
                k += pl;
                run = k;
            } else {
                k++;
            }
        }
        if (!e) e = hr_buf_append(&w, s + run, n - run);
        if (!e) e = hr_pieces_add(out, w.p, w.len, 0); /* HF keeps empty tokens; we drop them */
    }
    hr_buf_free(&w);
    return e;
}

static int byte_token(const char *s, size_t n, unsigned *byte) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return 0;
    unsigned v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                       : -1;
        if (d < 0) return 0;
        v = v * 16 + (unsigned)d;
    }
    *byte = v;
    return 1;
}

static hr_err *flush_bytes(hr_buf *bytes, hr_pieces *out) {
    if (!bytes->len) return NULL;
    hr_err *e = NULL;
    if (hr_utf8_is_valid(bytes->p, bytes->len))
        e = hr_pieces_add(out, bytes->p, bytes->len, 0);
    else
        for (size_t i = 0; i < bytes->len && !e; i++)
            e = hr_pieces_add(out, "\xEF\xBF\xBD", 3, 0);
    bytes->len = 0;
    return e;
}

static hr_err *dec_bytefallback(hr_pieces *in, hr_pieces *out) {
    hr_buf bytes = {0};
    hr_err *e = NULL;
    for (int i = 0; i < in->n && !e; i++) {
        unsigned b;
        if (byte_token(tok_at(in, i), in->len[i], &b)) {
            unsigned char c = (unsigned char)b;
            e = hr_buf_append(&bytes, &c, 1);
            continue;
        }
        e = flush_bytes(&bytes, out);
        if (!e) e = hr_pieces_add(out, tok_at(in, i), in->len[i], 0);
    }
    if (!e) e = flush_bytes(&bytes, out);
    hr_buf_free(&bytes);
    return e;
}

static hr_err *dec_fuse(hr_pieces *in, hr_pieces *out) {
    if (in->n == 0) return NULL;
    return hr_pieces_add(out, in->text.p, in->text.len, 0);
}

static hr_err *dec_strip(const hr_dec_step *st, hr_pieces *in, hr_pieces *out) {
    size_t cl = strlen(st->a);
    for (int i = 0; i < in->n; i++) {
        const char *s = tok_at(in, i);
        size_t a = 0, b = in->len[i];
        for (int k = 0; k < st->start && cl && a + cl <= b && memcmp(s + a, st->a, cl) == 0; k++)
            a += cl;
        for (int k = 0; k < st->stop && cl && b >= a + cl && memcmp(s + b - cl, st->a, cl) == 0;
             k++)
            b -= cl;
        HR_TRY(hr_pieces_add(out, s + a, b - a, 0));
    }
    return NULL;
}

/* HF's Metaspace decoder drops every replacement char of the first token (when it
 * prepends) and turns the others into spaces. */
static hr_err *dec_metaspace(const hr_dec_step *st, hr_pieces *in, hr_pieces *out) {
    size_t rl = strlen(st->a);
    hr_buf w = {0};
    hr_err *e = NULL;
    for (int i = 0; i < in->n && !e; i++) {
        const char *s = tok_at(in, i);
        size_t n = in->len[i], k = 0;
        w.len = 0;
        while (k < n && !e) {
            if (rl && k + rl <= n && memcmp(s + k, st->a, rl) == 0) {
                if (!(i == 0 && st->prepend != HR_PREPEND_NEVER)) e = hr_buf_append(&w, " ", 1);
                k += rl;
            } else {
                e = hr_buf_append(&w, s + k++, 1);
            }
        }
        if (!e) e = hr_pieces_add(out, w.p ? w.p : "", w.len, 0);
    }
    hr_buf_free(&w);
    return e;
}

static hr_err *dec_bytelevel(const hr_bytelevel *bl, hr_pieces *in, hr_pieces *out) {
    hr_buf bytes = {0}, text = {0};
    hr_err *e = NULL;
    for (int i = 0; i < in->n && !e; i++) {
        const char *s = tok_at(in, i);
        size_t n = in->len[i], k = 0, mark = bytes.len;
        while (k < n && !e) {
            uint32_t cp;
            k += hr_utf8_decode(s + k, &cp);
            if (cp >= 324 || bl->dec[cp] < 0) break;
            unsigned char c = (unsigned char)bl->dec[cp];
            e = hr_buf_append(&bytes, &c, 1);
        }
        if (!e && k < n) {
            bytes.len = mark; /* a character outside the table: the token's own bytes */
            e = hr_buf_append(&bytes, s, n);
        }
    }
    if (!e) e = hr_utf8_lossy_append(&text, bytes.p ? bytes.p : "", bytes.len);
    if (!e) e = hr_pieces_add(out, text.p ? text.p : "", text.len, 0);
    hr_buf_free(&bytes);
    hr_buf_free(&text);
    return e;
}

static hr_err *dec_step(const hr_tokenizer *t, const hr_dec_step *st, hr_pieces *in,
                        hr_pieces *out) {
    switch (st->kind) {
    case HR_DEC_REPLACE: return dec_replace(st, in, out);
    case HR_DEC_BYTEFALLBACK: return dec_bytefallback(in, out);
    case HR_DEC_FUSE: return dec_fuse(in, out);
    case HR_DEC_STRIP: return dec_strip(st, in, out);
    case HR_DEC_METASPACE: return dec_metaspace(st, in, out);
    case HR_DEC_BYTELEVEL: return dec_bytelevel(&t->bl, in, out);
    }
    return NULL;
}

/* transformers' clean_up_tokenization: the same replacements, in the same order. */
static void cleanup_spaces(hr_buf *b) {
    static const char *pats[][2] = {{" .", "."},     {" ?", "?"},     {" !", "!"},   {" ,", ","},
                                    {" ' ", "'"},    {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"},
                                    {" 've", "'ve"}, {" 're", "'re"}};
    for (size_t p = 0; p < sizeof pats / sizeof pats[0]; p++) {
        size_t pl = strlen(pats[p][0]), wl = strlen(pats[p][1]), r = 0, w = 0;
        while (r < b->len) {
            if (r + pl <= b->len && memcmp(b->p + r, pats[p][0], pl) == 0) {
                memmove(b->p + w, pats[p][1], wl);
                w += wl;
                r += pl;
            } else {
                b->p[w++] = b->p[r++];
            }
        }
        b->len = w;
        b->p[w] = 0;
    }
}

static hr_err *collect_tokens(const hr_tokenizer *t, const int32_t *ids, int n, int skip_special,
                              hr_pieces *out) {
    for (int i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n_vocab)
            return hr_errf("token id %d is out of range (vocabulary has %d ids)", id, t->n_vocab);
        if (!t->id_str[id] || (skip_special && t->id_special[id])) continue;
        HR_TRY(hr_pieces_add(out, t->id_str[id], t->id_len[id], 0));
    }
    return NULL;
}

static hr_err *run_decoders(const hr_tokenizer *t, hr_pieces *a, hr_pieces *b, hr_buf *out) {
    hr_err *e = NULL;
    for (int i = 0; i < t->n_dec && !e; i++) {
        hr_pieces_clear(b);
        e = dec_step(t, &t->dec[i], a, b);
        hr_pieces tmp = *a;
        *a = *b;
        *b = tmp;
    }
    for (int i = 0; i < a->n && !e; i++) {
        if (!t->has_decoder && i > 0) e = hr_buf_append(out, " ", 1);
        if (!e) e = hr_utf8_lossy_append(out, tok_at(a, i), a->len[i]);
    }
    return e;
}

hr_err *hr_tok_decode_buf(const hr_tokenizer *t, const int32_t *ids, int n, int skip_special,
                          hr_buf *out) {
    hr_pieces a = {0}, b = {0};
    out->len = 0;
    hr_err *e = collect_tokens(t, ids, n, skip_special, &a);
    if (!e) e = run_decoders(t, &a, &b, out);
    if (!e) e = hr_buf_append(out, "", 0);
    if (!e && t->cleanup_spaces) cleanup_spaces(out);
    hr_pieces_free(&a);
    hr_pieces_free(&b);
    return e;
}

hr_err *hr_tokenizer_decode(const hr_tokenizer *tok, const int32_t *ids, int n, int skip_special,
                            char **out) {
    hr_buf b = {0};
    *out = NULL;
    hr_err *e = hr_tok_decode_buf(tok, ids, n, skip_special, &b);
    if (e) {
        hr_buf_free(&b);
        return e;
    }
    *out = b.p;
    return NULL;
}
