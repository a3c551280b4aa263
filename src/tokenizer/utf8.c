/* UTF-8 for the tokenizer: validation by maximal subparts (what Rust's from_utf8_lossy and
 * Python's errors="replace" use: each invalid subpart becomes one U+FFFD) and the GPT-2
 * byte-level table that maps every byte to a printable code point. */
#include <string.h>

#include "tokenizer/tok_internal.h"

size_t hr_utf8_next(const unsigned char *s, size_t n, int *valid) {
    unsigned c = s[0];
    *valid = 1;
    if (c < 0x80) return 1;
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        *valid = 0;
        return 1;
    }
    size_t i = 1;
    for (; i < need && i < n; i++) {
        unsigned b = s[i];
        if (b < lo || b > hi) break;
        lo = 0x80;
        hi = 0xBF;
    }
    if (i < need) *valid = 0;
    return i;
}

int hr_utf8_is_valid(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        int ok;
        i += hr_utf8_next(u + i, n - i, &ok);
        if (!ok) return 0;
    }
    return 1;
}

hr_err *hr_utf8_lossy_append(hr_buf *b, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0;
    while (i < n) {
        int ok;
        size_t k = u[i] < 0x80 ? (ok = 1, 1) : hr_utf8_next(u + i, n - i, &ok);
        if (!ok) {
            HR_TRY(hr_buf_append(b, s + run, i - run));
            HR_TRY(hr_buf_append(b, "\xEF\xBF\xBD", 3));
            run = i + k;
        }
        i += k;
    }
    return hr_buf_append(b, s + run, n - run);
}

/* Printable bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68 bytes
 * get code points 256, 257, ... in byte order. */
void hr_bytelevel_init(hr_bytelevel *t) {
    memset(t->dec, 0xff, sizeof t->dec);
    uint32_t next = 256;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        uint32_t cp = printable ? (uint32_t)b : next++;
        t->enc_len[b] = (uint8_t)hr_utf8_encode(cp, t->enc[b]);
        t->dec[cp] = (int16_t)b;
    }
}
