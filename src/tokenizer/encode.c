/* hr_tokenizer_encode: the HF pipeline for one text. Added tokens that are not normalized
 * are split out of the raw text first; each remaining segment is normalized, split on
 * normalized added tokens, pre-tokenized and run through BPE; then BOS/EOS are added. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

typedef struct {
    const hr_tokenizer *t;
    const hr_pipeline *p;
    hr_buf norm;
    hr_segment *segs;
    int n_segs, cap_segs;
    hr_pieces in, out;
    pcre2_match_data *md;
    hr_ids ids;
} enc_ctx;

static hr_err *run_words(enc_ctx *c) {
    HR_TRY(hr_pretokenize(c->t, c->p, &c->in, &c->out, c->md));
    for (int i = 0; i < c->out.n; i++)
        HR_TRY(hr_bpe_word(c->t, c->out.text.p + c->out.off[i], c->out.len[i], &c->ids));
    return NULL;
}

static hr_err *encode_segment(enc_ctx *c, const char *s, size_t n, int first) {
    c->norm.len = 0;
    HR_TRY(hr_normalize(c->p, s, n, &c->norm));
    hr_pieces_clear(&c->in);
    if (c->p->norm_trie.n_nodes == 0) {
        HR_TRY(hr_pieces_add(&c->in, c->norm.p, c->norm.len, first));
        return run_words(c);
    }
    HR_TRY(hr_split_added(c->t, &c->p->norm_trie, c->norm.p, c->norm.len, &c->segs, &c->n_segs,
                          &c->cap_segs));
    for (int i = 0; i < c->n_segs; i++) {
        hr_segment g = c->segs[i];
        if (g.id >= 0) {
            HR_TRY(run_words(c)); /* words before the token come first */
            HR_TRY(hr_ids_push(&c->ids, g.id));
            continue;
        }
        HR_TRY(hr_pieces_add(&c->in, c->norm.p + g.start, g.end - g.start, first && g.start == 0));
    }
    return run_words(c);
}

static hr_err *encode_text(enc_ctx *c, const char *text, size_t len, int add_special) {
    const hr_tokenizer *t = c->t;
    if (add_special)
        for (int i = 0; i < t->n_prefix; i++)
            HR_TRY(hr_ids_push(&c->ids, t->prefix_ids[i]));
    hr_segment *segs = NULL;
    int n_segs = 0, cap = 0;
    hr_err *e = hr_split_added(t, &t->raw_trie, text, len, &segs, &n_segs, &cap);
    for (int i = 0; i < n_segs && !e; i++) {
        if (segs[i].id >= 0)
            e = hr_ids_push(&c->ids, segs[i].id);
        else
            e = encode_segment(c, text + segs[i].start, segs[i].end - segs[i].start,
                               segs[i].start == 0);
    }
    free(segs);
    if (add_special)
        for (int i = 0; i < t->n_suffix && !e; i++)
            e = hr_ids_push(&c->ids, t->suffix_ids[i]);
    return e;
}

static const hr_pipeline *pick_pipeline(const hr_tokenizer *t, int add_special) {
    return add_special && t->pipe[1].pre ? &t->pipe[1] : &t->pipe[0];
}

hr_err *hr_tokenizer_encode(const hr_tokenizer *tok, const char *text, size_t len, int add_special,
                            int32_t **ids, int *n) {
    *ids = NULL;
    *n = 0;
    enc_ctx c = {.t = tok, .p = pick_pipeline(tok, add_special)};
    hr_buf clean = {0};
    hr_err *e = NULL;
    if (!hr_utf8_is_valid(text, len)) {
        e = hr_utf8_lossy_append(&clean, text, len);
        text = clean.p;
        len = clean.len;
    }
    c.md = hr_regex_match_data(NULL);
    if (!c.md) e = e ? e : hr_err_oom();
    if (!e) e = encode_text(&c, text ? text : "", len, add_special);
    pcre2_match_data_free(c.md);
    hr_buf_free(&clean);
    hr_buf_free(&c.norm);
    free(c.segs);
    hr_pieces_free(&c.in);
    hr_pieces_free(&c.out);
    if (e) {
        free(c.ids.v);
        return e;
    }
    *ids = c.ids.v;
    *n = c.ids.n;
    return NULL;
}
