/* Regex front end: the ECMAScript regular expression subset that JSON Schema `pattern`
 * and `/re/` grammar terminals use, parsed into the expression IR over code points.
 * Literals, escapes, classes, `.` (any code point but \n), `|`, groups, greedy and lazy
 * quantifiers (lazy is the same language). Backreferences, lookaround, word boundaries
 * and Unicode property escapes are refused with the construct and its offset. `^` at the
 * start and `$` at the end of a top-level alternative are accepted: the match is whole. */
#include <stdlib.h>
#include <string.h>

#include "grammar/gram_ir.h"

#define MAX_REPEAT 100000

typedef struct {
    const char *s;
    size_t n, i, base;
    hr_gir *ir;
    int depth;
} rp;

typedef struct {
    hr_grange *r;
    int n, cap;
} ranges;

static int peek(const rp *p, size_t k) {
    return p->i + k < p->n ? (unsigned char)p->s[p->i + k] : -1;
}

static size_t at(const rp *p) { return p->base + p->i; }

static hr_err *add(ranges *r, uint32_t lo, uint32_t hi) {
    if (r->n == r->cap) {
        int nc = r->cap ? r->cap * 2 : 8;
        hr_grange *q = realloc(r->r, (size_t)nc * sizeof *q);
        if (!q) return hr_err_oom();
        r->r = q;
        r->cap = nc;
    }
    r->r[r->n++] = (hr_grange){lo, hi};
    return NULL;
}

static const hr_grange DIGIT[] = {{'0', '9'}};
static const hr_grange WORD[] = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
static const hr_grange SPACE[] = {
    {'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
    {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};

/* Adds the class escape c (d w s D W S) to r; 0 when c is not one. */
static int class_escape(int c, ranges *r, hr_err **e) {
    const hr_grange *set;
    int n;
    switch (c | 0x20) {
    case 'd': set = DIGIT, n = 1; break;
    case 'w': set = WORD, n = 4; break;
    case 's': set = SPACE, n = 10; break;
    default: return 0;
    }
    *e = NULL;
    if (c >= 'a') {
        for (int k = 0; k < n && !*e; k++)
            *e = add(r, set[k].lo, set[k].hi);
        return 1;
    }
    uint32_t next = 0;
    for (int k = 0; k < n && !*e; k++) {
        if (set[k].lo > next) *e = add(r, next, set[k].lo - 1);
        next = set[k].hi + 1;
    }
    if (!*e) *e = add(r, next, HR_G_MAX_CP);
    return 1;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static hr_err *hex(rp *p, int digits, uint32_t *cp) {
    uint32_t v = 0;
    for (int k = 0; k < digits; k++) {
        int d = hexval(peek(p, 0));
        if (d < 0) return hr_errf("regex: expected %d hex digits at offset %zu", digits, at(p));
        v = v << 4 | (uint32_t)d;
        p->i++;
    }
    *cp = v;
    return NULL;
}

/* \u{H...}, \uHHHH (a surrogate pair of two \u escapes combines). */
static hr_err *unicode_escape(rp *p, uint32_t *cp) {
    size_t start = at(p);
    if (peek(p, 0) == '{') {
        p->i++;
        uint32_t v = 0;
        int k = 0;
        for (; hexval(peek(p, 0)) >= 0 && v <= HR_G_MAX_CP; k++, p->i++)
            v = v << 4 | (uint32_t)hexval(peek(p, 0));
        if (!k || peek(p, 0) != '}' || v > HR_G_MAX_CP)
            return hr_errf("regex: bad \\u{...} escape at offset %zu", start);
        p->i++;
        *cp = v;
    } else {
        HR_TRY(hex(p, 4, cp));
        if (*cp >= 0xD800 && *cp <= 0xDBFF && peek(p, 0) == '\\' && peek(p, 1) == 'u') {
            size_t save = p->i;
            uint32_t lo = 0;
            p->i += 2;
            if (!hex(p, 4, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                *cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
                return NULL;
            }
            p->i = save;
        }
    }
    if (*cp >= 0xD800 && *cp <= 0xDFFF)
        return hr_errf("regex: lone surrogate escape at offset %zu cannot match UTF-8 text", start);
    return NULL;
}

/* The escape after a backslash (p->i past it) as one character; in_class changes \b. */
static hr_err *char_escape(rp *p, int in_class, uint32_t *cp) {
    size_t start = at(p) - 1;
    int c = peek(p, 0);
    if (c < 0) return hr_errf("regex: trailing backslash at offset %zu", start);
    p->i++;
    switch (c) {
    case 'n': *cp = '\n'; return NULL;
    case 'r': *cp = '\r'; return NULL;
    case 't': *cp = '\t'; return NULL;
    case 'v': *cp = '\v'; return NULL;
    case 'f': *cp = '\f'; return NULL;
    case 'x': return hex(p, 2, cp);
    case 'u': return unicode_escape(p, cp);
    case 'c':
        if (!((peek(p, 0) | 0x20) >= 'a' && (peek(p, 0) | 0x20) <= 'z'))
            return hr_errf("regex: \\c needs a letter at offset %zu", start);
        *cp = (uint32_t)(peek(p, 0) & 0x1F);
        p->i++;
        return NULL;
    case '0':
        if (peek(p, 0) >= '0' && peek(p, 0) <= '9')
            return hr_errf("regex: octal escape at offset %zu is not supported", start);
        *cp = 0;
        return NULL;
    case 'b':
        if (in_class) {
            *cp = 8;
            return NULL;
        }
        return hr_errf("regex: word boundary \\b at offset %zu is not supported", start);
    case 'B': return hr_errf("regex: word boundary \\B at offset %zu is not supported", start);
    case 'k': return hr_errf("regex: backreference \\k at offset %zu is not supported", start);
    case 'p':
    case 'P':
        return hr_errf("regex: Unicode property escape \\%c at offset %zu is not supported", c,
                       start);
    default: break;
    }
    if (c >= '1' && c <= '9')
        return hr_errf("regex: backreference \\%c at offset %zu is not supported", c, start);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80)
        return hr_errf("regex: unknown escape \\%c at offset %zu", c, start);
    *cp = (uint32_t)c;
    return NULL;
}

static hr_err *plain_char(rp *p, uint32_t *cp) {
    size_t k = hr_gutf8_decode(p->s + p->i, p->n - p->i, cp);
    if (!k) return hr_errf("regex: invalid UTF-8 at offset %zu", at(p));
    p->i += k;
    return NULL;
}

/* One class member: a range, a char, or a class escape. */
static hr_err *class_member(rp *p, ranges *r) {
    uint32_t lo = 0, hi;
    hr_err *e = NULL;
    if (peek(p, 0) == '\\') {
        p->i++;
        if (class_escape(peek(p, 0), r, &e)) {
            p->i++;
            return e;
        }
        HR_TRY(char_escape(p, 1, &lo));
    } else
        HR_TRY(plain_char(p, &lo));
    hi = lo;
    if (peek(p, 0) == '-' && peek(p, 1) != ']' && peek(p, 1) >= 0) {
        size_t save = p->i, dash = at(p);
        p->i++;
        if (peek(p, 0) == '\\') {
            p->i++;
            ranges tmp = {0};
            int is_cls = class_escape(peek(p, 0), &tmp, &e);
            free(tmp.r);
            if (is_cls) { /* `a-\d`: the dash is literal */
                p->i = save;
                return add(r, lo, lo);
            }
            HR_TRY(char_escape(p, 1, &hi));
        } else
            HR_TRY(plain_char(p, &hi));
        if (hi < lo) return hr_errf("regex: range out of order in class at offset %zu", dash);
    }
    return add(r, lo, hi);
}

static hr_err *char_class(rp *p, int *node) {
    size_t start = at(p);
    p->i++;
    int negate = peek(p, 0) == '^';
    if (negate) p->i++;
    ranges r = {0};
    hr_err *e = NULL;
    while (!e && peek(p, 0) != ']') {
        if (peek(p, 0) < 0)
            e = hr_errf("regex: unterminated character class at offset %zu", start);
        else
            e = class_member(p, &r);
    }
    if (!e) {
        p->i++;
        if ((*node = hr_gir_set(p->ir, r.r, r.n, negate)) < 0) e = hr_err_oom();
    }
    free(r.r);
    return e;
}

static hr_err *alternation(rp *p, int *node);

static hr_err *group(rp *p, int *node) {
    size_t start = at(p);
    p->i++;
    if (peek(p, 0) == '?') {
        int c = peek(p, 1);
        if (c == ':')
            p->i += 2;
        else if (c == '=' || c == '!' || (c == '<' && (peek(p, 2) == '=' || peek(p, 2) == '!')))
            return hr_errf("regex: lookaround at offset %zu is not supported", start);
        else if (c == '<') {
            p->i += 2;
            while (peek(p, 0) >= 0 && peek(p, 0) != '>')
                p->i++;
            if (peek(p, 0) != '>')
                return hr_errf("regex: unterminated group name at offset %zu", start);
            p->i++;
        } else
            return hr_errf("regex: unknown group syntax '(?%c' at offset %zu", c < 0 ? ' ' : c,
                           start);
    }
    if (++p->depth > 200) return hr_errf("regex: groups nested too deep at offset %zu", start);
    HR_TRY(alternation(p, node));
    p->depth--;
    if (peek(p, 0) != ')') return hr_errf("regex: unterminated group opened at offset %zu", start);
    p->i++;
    return NULL;
}

/* Parses {m}, {m,}, {m,n} at p->i; 0 (p->i unchanged) when it is not a quantifier. */
static int braces(rp *p, int *min, int *max, hr_err **e) {
    size_t k = p->i + 1;
    long lo = 0, hi;
    int digits = 0;
    *e = NULL;
    for (; k < p->n && p->s[k] >= '0' && p->s[k] <= '9'; k++, digits++)
        lo = lo < MAX_REPEAT * 10L ? lo * 10 + (p->s[k] - '0') : lo;
    if (!digits) return 0;
    hi = lo;
    if (k < p->n && p->s[k] == ',') {
        k++;
        hi = HR_G_INF;
        if (k < p->n && p->s[k] >= '0' && p->s[k] <= '9') {
            hi = 0;
            for (; k < p->n && p->s[k] >= '0' && p->s[k] <= '9'; k++)
                hi = hi < MAX_REPEAT * 10L ? hi * 10 + (p->s[k] - '0') : hi;
        }
    }
    if (k >= p->n || p->s[k] != '}') return 0;
    if (lo > MAX_REPEAT || hi > MAX_REPEAT)
        *e = hr_errf("regex: repetition count at offset %zu is over %d", at(p), MAX_REPEAT);
    else if (hi != HR_G_INF && hi < lo)
        *e = hr_errf("regex: repetition at offset %zu has max < min", at(p));
    *min = (int)lo;
    *max = (int)hi;
    p->i = k + 1;
    return 1;
}

/* A quantifier after an atom, if any; *node becomes the repetition. */
static hr_err *quantifier(rp *p, int *node) {
    int c = peek(p, 0), min, max;
    hr_err *e = NULL;
    if (c == '*' || c == '+' || c == '?') {
        min = c == '+';
        max = c == '?' ? 1 : HR_G_INF;
        p->i++;
    } else if (!(c == '{' && braces(p, &min, &max, &e)))
        return NULL;
    else if (e)
        return e;
    if (peek(p, 0) == '?') p->i++; /* lazy: the same language */
    c = peek(p, 0);
    if (c == '*' || c == '+' || c == '?' || (c == '{' && braces(p, &min, &max, &e))) {
        hr_err_free(e); /* what was wrong with the second count matters less */
        return hr_errf("regex: nothing to repeat at offset %zu", at(p));
    }
    if ((*node = hr_gir_rep(p->ir, *node, min, max)) < 0) return hr_err_oom();
    return NULL;
}

/* One atom into *node; *skip when it matched nothing to add (an accepted anchor). */
static hr_err *atom(rp *p, int first, int *node, int *skip) {
    int c = peek(p, 0);
    uint32_t cp;
    hr_err *e = NULL;
    *skip = 0;
    if (c == '^' || c == '$') {
        int ok = p->depth == 0 && (c == '^' ? first : (peek(p, 1) < 0 || peek(p, 1) == '|'));
        if (!ok)
            return hr_errf(
                "regex: anchor '%c' at offset %zu is only supported at the pattern's start/end", c,
                at(p));
        p->i++;
        *skip = 1;
        return NULL;
    }
    if (c == '*' || c == '+' || c == '?')
        return hr_errf("regex: nothing to repeat at offset %zu", at(p));
    if (c == '(') return group(p, node);
    if (c == '[') return char_class(p, node);
    if (c == '.') {
        p->i++;
        hr_grange nl = {'\n', '\n'};
        return (*node = hr_gir_set(p->ir, &nl, 1, 1)) < 0 ? hr_err_oom() : NULL;
    }
    if (c == '\\') {
        ranges r = {0};
        p->i++;
        if (class_escape(peek(p, 0), &r, &e)) {
            p->i++;
            if (!e && (*node = hr_gir_set(p->ir, r.r, r.n, 0)) < 0) e = hr_err_oom();
            free(r.r);
            return e;
        }
        HR_TRY(char_escape(p, 0, &cp));
    } else
        HR_TRY(plain_char(p, &cp));
    return (*node = hr_gir_char(p->ir, cp)) < 0 ? hr_err_oom() : NULL;
}

static hr_err *sequence(rp *p, int *node) {
    hr_gints items = {0};
    hr_err *e = NULL;
    int first = 1;
    while (!e && peek(p, 0) >= 0 && peek(p, 0) != '|' && peek(p, 0) != ')') {
        int n, skip;
        if (!(e = atom(p, first, &n, &skip)) && !skip) {
            if (!(e = quantifier(p, &n)) && hr_gints_push(&items, n)) e = hr_err_oom();
        } else if (!e && skip && (peek(p, 0) == '*' || peek(p, 0) == '+' || peek(p, 0) == '?'))
            e = hr_errf("regex: nothing to repeat at offset %zu", at(p));
        first = 0;
    }
    if (!e && (*node = hr_gir_list(p->ir, HR_GN_SEQ, items.v, items.n)) < 0) e = hr_err_oom();
    free(items.v);
    return e;
}

static hr_err *alternation(rp *p, int *node) {
    hr_gints alts = {0};
    hr_err *e = NULL;
    for (;;) {
        int n;
        if ((e = sequence(p, &n))) break;
        if (hr_gints_push(&alts, n)) {
            e = hr_err_oom();
            break;
        }
        if (peek(p, 0) != '|') break;
        p->i++;
    }
    if (!e && (*node = hr_gir_list(p->ir, HR_GN_ALT, alts.v, alts.n)) < 0) e = hr_err_oom();
    free(alts.v);
    return e;
}

hr_err *hr_regex_parse(const char *re, size_t len, size_t base, hr_gir *ir, int *node) {
    rp p = {re, len, 0, base, ir, 0};
    HR_TRY(alternation(&p, node));
    if (p.i < p.n) return hr_errf("regex: unmatched ')' at offset %zu", at(&p));
    return NULL;
}
