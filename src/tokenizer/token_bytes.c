/* A token's raw bytes, as it contributes them in the middle of a decoded text: byte-level
 * BPE unmaps the GPT-2 byte alphabet; SentencePiece-style vocabularies turn <0xHH> byte
 * tokens (with ByteFallback) into their byte and U+2581 into a space; added tokens are their
 * content. Grammar masks need these bytes (a token may end inside a UTF-8 character). */
#include <string.h>

#include "tokenizer/tok_internal.h"

static int has_decoder(const hr_tokenizer *t, hr_dec_kind kind) {
    for (int i = 0; i < t->n_dec; i++)
        if (t->dec[i].kind == kind) return 1;
    return 0;
}

static const char *added_content(const hr_tokenizer *t, int32_t id) {
    for (int i = 0; i < t->n_added; i++)
        if (t->added[i].id == id) return t->added[i].content;
    return NULL;
}

static int hexdig(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static size_t put(char *out, size_t cap, size_t n, const char *s, size_t k) {
    if (n < cap) memcpy(out + n, s, n + k <= cap ? k : cap - n);
    return n + k;
}

static size_t bytelevel(const hr_tokenizer *t, const char *s, size_t len, char *out, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        int valid;
        size_t k = hr_utf8_next((const unsigned char *)s + i, len - i, &valid);
        uint32_t cp = 0;
        if (valid) hr_utf8_decode(s + i, &cp);
        if (valid && cp < 324 && t->bl.dec[cp] >= 0) {
            char b = (char)t->bl.dec[cp];
            n = put(out, cap, n, &b, 1);
        } else
            n = put(out, cap, n, s + i, k);
        i += k;
    }
    return n;
}

static size_t sentencepiece(const hr_tokenizer *t, const char *s, size_t len, char *out,
                            size_t cap) {
    if (has_decoder(t, HR_DEC_BYTEFALLBACK) && len == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' &&
        hexdig(s[3]) >= 0 && hexdig(s[4]) >= 0) {
        char b = (char)(hexdig(s[3]) << 4 | hexdig(s[4]));
        return put(out, cap, 0, &b, 1);
    }
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        if (i + 3 <= len && !memcmp(s + i, "\xE2\x96\x81", 3)) {
            n = put(out, cap, n, " ", 1);
            i += 3;
        } else
            n = put(out, cap, n, s + i++, 1);
    }
    return n;
}

size_t hr_tokenizer_token_bytes(const hr_tokenizer *tok, int32_t id, char *out, size_t cap) {
    if (id < 0 || id >= tok->n_vocab || !tok->id_str[id]) return (size_t)-1;
    const char *added = added_content(tok, id);
    if (added) return put(out, cap, 0, added, strlen(added));
    const char *s = tok->id_str[id];
    size_t len = tok->id_len[id];
    if (has_decoder(tok, HR_DEC_BYTELEVEL)) return bytelevel(tok, s, len, out, cap);
    return sentencepiece(tok, s, len, out, cap);
}

int hr_tokenizer_is_added(const hr_tokenizer *tok, int32_t id) {
    return id >= 0 && id < tok->n_vocab && added_content(tok, id) != NULL;
}
