/* Incremental detokenizer. It re-decodes a short window of recent ids and emits the part
 * of the window's text past what was already emitted. The window keeps one earlier token
 * (the anchor) so that decoders which treat the first token specially (Strip, Metaspace)
 * see a mid-sequence token as HF's full decode does. Text is held back while it ends in
 * U+FFFD (a character still incomplete), while the last token is a <0xXX> byte that a
 * later byte could turn invalid (ByteFallback replaces a whole invalid byte run), or, with
 * clean_up_tokenization_spaces, while it ends in the start of a pattern a later token could
 * complete (" n" of " n't"). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

#define WINDOW_MAX 8

struct hr_detok_stream {
    const hr_tokenizer *tok;
    int skip_special;
    int byte_fallback; /* the decoder has a ByteFallback step */
    int32_t *ids;
    int n, cap;
    int start;   /* first id of the window */
    size_t done; /* bytes of the window's text already emitted */
    hr_buf text, out;
};

hr_err *hr_detok_stream_create(const hr_tokenizer *tok, int skip_special, hr_detok_stream **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return hr_err_oom();
    (*out)->tok = tok;
    (*out)->skip_special = skip_special;
    for (int i = 0; i < tok->n_dec; i++)
        (*out)->byte_fallback |= tok->dec[i].kind == HR_DEC_BYTEFALLBACK;
    return NULL;
}

void hr_detok_stream_destroy(hr_detok_stream *s) {
    if (!s) return;
    free(s->ids);
    hr_buf_free(&s->text);
    hr_buf_free(&s->out);
    free(s);
}

static size_t cleanup_holdback(const hr_buf *b) {
    static const char *pats[] = {" .",   " ?",  " !",  " ,",   " ' ",
                                 " n't", " 'm", " 's", " 've", " 're"};
    for (size_t k = 3; k >= 1; k--) {
        if (b->len < k) continue;
        const char *tail = b->p + b->len - k;
        for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++)
            if (strlen(pats[i]) > k && memcmp(pats[i], tail, k) == 0) return k;
    }
    return 0;
}

static int visible(const hr_detok_stream *s, int32_t id) {
    return s->tok->id_str[id] && !(s->skip_special && s->tok->id_special[id]);
}

static int last_is_byte_token(const hr_detok_stream *s) {
    for (int i = s->n - 1; i >= s->start; i--) {
        if (!visible(s, s->ids[i])) continue;
        const char *t = s->tok->id_str[s->ids[i]];
        return s->tok->id_len[s->ids[i]] == 6 && strncmp(t, "<0x", 3) == 0 && t[5] == '>';
    }
    return 0;
}

static size_t holdback(const hr_detok_stream *s) {
    const hr_buf *b = &s->text;
    if (s->byte_fallback && last_is_byte_token(s)) return b->len;
    if (b->len >= 3 && memcmp(b->p + b->len - 3, "\xEF\xBF\xBD", 3) == 0) return b->len;
    return s->tok->cleanup_spaces ? cleanup_holdback(b) : 0;
}

/* Moves the window to start at the last visible id when it has grown long. */
static hr_err *advance(hr_detok_stream *s) {
    if (s->n - s->start <= WINDOW_MAX) return NULL;
    int a = s->n - 1;
    while (a > s->start && !visible(s, s->ids[a]))
        a--;
    if (a == s->start) return NULL;
    HR_TRY(hr_tok_decode_buf(s->tok, s->ids + a, s->n - a, s->skip_special, &s->text));
    s->start = a;
    s->done = s->text.len;
    return NULL;
}

static hr_err *emit(hr_detok_stream *s, size_t upto, const char **text, size_t *len) {
    s->out.len = 0;
    if (upto > s->done)
        HR_TRY(hr_buf_append(&s->out, s->text.p + s->done, upto - s->done));
    else
        HR_TRY(hr_buf_append(&s->out, "", 0));
    if (upto > s->done) s->done = upto;
    *text = s->out.p;
    *len = s->out.len;
    return NULL;
}

hr_err *hr_detok_stream_push(hr_detok_stream *s, int32_t id, const char **text, size_t *len) {
    *text = "";
    *len = 0;
    if (id < 0 || id >= s->tok->n_vocab)
        return hr_errf("token id %d is out of range (vocabulary has %d ids)", id, s->tok->n_vocab);
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 64;
        int32_t *v = realloc(s->ids, sizeof *v * (size_t)cap);
        if (!v) return hr_err_oom();
        s->ids = v;
        s->cap = cap;
    }
    s->ids[s->n++] = id;
    HR_TRY(
        hr_tok_decode_buf(s->tok, s->ids + s->start, s->n - s->start, s->skip_special, &s->text));
    size_t hold = holdback(s);
    HR_TRY(emit(s, s->text.len - hold, text, len));
    if (hold == 0) HR_TRY(advance(s));
    return NULL;
}

hr_err *hr_detok_stream_flush(hr_detok_stream *s, const char **text, size_t *len) {
    const int32_t *pending = s->ids ? s->ids + s->start : NULL; /* nothing pushed yet: no ids */
    HR_TRY(hr_tok_decode_buf(s->tok, pending, s->n - s->start, s->skip_special, &s->text));
    return emit(s, s->text.len, text, len);
}
