/* JSON Schema `pattern` -> a regex over the encoded inside of a JSON string. A pattern
 * (ECMAScript) matches the decoded string anywhere unless anchored, so each top-level
 * alternative gets "any characters" on its unanchored sides. Every pattern character is
 * spelled canonically (raw, or the short/\u00XX escape jansson writes), which keeps the
 * translation a plain regex; any spelling of the unconstrained parts is accepted.
 * Refused, with the offset: lookaround, backreferences, \b \B, \p{..}, inner anchors. */
#include <stdlib.h>
#include <string.h>

#include "base/regex.h"
#include "base/utf8.h"
#include "grammar/schema_int.h"

#define CP_MAX 0x10FFFFu

typedef struct {
    uint32_t (*r)[2]; /* sorted, disjoint, non-adjacent after cs_norm */
    size_t n, cap;
    int oom; /* a range could not be added: the set is incomplete, emit_set fails */
} cset;

typedef struct {
    const char *s;
    size_t n, i;
    hr_gbuf *o;
    hr_err *err;
} rx;

static void cs_add(cset *c, uint32_t lo, uint32_t hi) {
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        void *p = realloc(c->r, cap * sizeof *c->r);
        if (!p) {
            c->oom = 1;
            return;
        }
        c->r = p;
        c->cap = cap;
    }
    c->r[c->n][0] = lo;
    c->r[c->n][1] = hi;
    c->n++;
}

static int cmp_range(const void *a, const void *b) {
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static void cs_norm(cset *c) {
    if (!c->n) return;
    qsort(c->r, c->n, sizeof *c->r, cmp_range);
    size_t k = 0;
    for (size_t i = 1; i < c->n; i++) {
        if (c->r[i][0] <= c->r[k][1] + 1) {
            if (c->r[i][1] > c->r[k][1]) c->r[k][1] = c->r[i][1];
        } else {
            k++;
            c->r[k][0] = c->r[i][0];
            c->r[k][1] = c->r[i][1];
        }
    }
    c->n = k + 1;
}

static void cs_negate(cset *c) {
    cs_norm(c);
    cset out = {0};
    uint32_t next = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->r[i][0] > next) cs_add(&out, next, c->r[i][0] - 1);
        next = c->r[i][1] + 1;
    }
    if (next <= CP_MAX) cs_add(&out, next, CP_MAX);
    out.oom |= c->oom;
    free(c->r);
    *c = out;
}

static int cs_has(const cset *c, uint32_t cp) {
    for (size_t i = 0; i < c->n; i++)
        if (cp >= c->r[i][0] && cp <= c->r[i][1]) return 1;
    return 0;
}

static void class_escape(cset *c, char e) {
    static const uint32_t space[][2] = {
        {9, 13},          {32, 32},         {0xa0, 0xa0},     {0x1680, 0x1680}, {0x2000, 0x200a},
        {0x2028, 0x2029}, {0x202f, 0x202f}, {0x205f, 0x205f}, {0x3000, 0x3000}, {0xfeff, 0xfeff}};
    cset t = {0};
    char lower = (char)(e | 0x20);
    if (lower == 'd') cs_add(&t, '0', '9');
    if (lower == 'w') {
        cs_add(&t, '0', '9');
        cs_add(&t, 'A', 'Z');
        cs_add(&t, 'a', 'z');
        cs_add(&t, '_', '_');
    }
    if (lower == 's')
        for (size_t i = 0; i < sizeof space / sizeof space[0]; i++)
            cs_add(&t, space[i][0], space[i][1]);
    if (e >= 'A' && e <= 'Z') cs_negate(&t);
    for (size_t i = 0; i < t.n; i++)
        cs_add(c, t.r[i][0], t.r[i][1]);
    c->oom |= t.oom;
    free(t.r);
}

/* Appends code point cp as a regex literal (outside or inside a class). */
static void emit_cp(hr_gbuf *o, uint32_t cp, int in_class) {
    const char *meta = in_class ? "\\]^-[/" : "\\.^$|?*+()[]{}/";
    if (cp < 0x80 && strchr(meta, (int)cp) && cp) {
        char e[2] = {'\\', (char)cp};
        hr_gbuf_add(o, e, 2);
    } else if (cp < 0x20 || cp == 0x7f) {
        hr_gbuf_printf(o, "\\x%02x", cp);
    } else {
        char u[4];
        hr_gbuf_add(o, u, hr_utf8_encode(cp, u));
    }
}

/* The canonical escape of a character that a JSON string cannot hold raw, as regex text. */
static void emit_escaped(hr_gbuf *o, uint32_t cp) {
    static const char shorts[][3] = {
        {'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}};
    if (cp == '"') {
        hr_gbuf_puts(o, "\\\\\"");
        return;
    }
    if (cp == '\\') {
        hr_gbuf_puts(o, "\\\\\\\\");
        return;
    }
    for (size_t i = 0; i < 5; i++)
        if ((uint32_t)(unsigned char)shorts[i][0] == cp) {
            hr_gbuf_printf(o, "\\\\%c", shorts[i][1]);
            return;
        }
    hr_gbuf_printf(o, "\\\\u00%X%c", cp >> 4, "0123456789abcdef"[cp & 15]);
    if ((cp & 15) >= 10) { /* both hex cases: jansson writes lower case */
        o->n--;
        hr_gbuf_printf(o, "[%c%c]", "abcdef"[(cp & 15) - 10], "ABCDEF"[(cp & 15) - 10]);
    }
}

static void raw_range(hr_gbuf *cls, int *n_cls, uint32_t *single, uint32_t lo, uint32_t hi) {
    emit_cp(cls, lo, 1);
    if (hi > lo + 1) hr_gbuf_add(cls, "-", 1);
    if (hi > lo) emit_cp(cls, hi, 1);
    *n_cls += hi - lo + 1 > 2 ? 2 : (int)(hi - lo + 1);
    *single = lo;
}

/* A set of decoded characters as a regex over their encoded spellings (one group). */
static void emit_set(hr_gbuf *o, cset *c) {
    if (c->oom) o->oom = 1;
    cs_norm(c);
    hr_gbuf cls = {0};
    int n_cls = 0;
    uint32_t single = 0;
    /* the raw part: c minus what a JSON string cannot hold raw (and surrogates) */
    static const uint32_t cut[][2] = {{0, 0x1f}, {'"', '"'}, {'\\', '\\'}, {0xD800, 0xDFFF}};
    for (size_t i = 0; i < c->n; i++) {
        uint32_t lo = c->r[i][0], hi = c->r[i][1];
        int done = 0;
        for (size_t k = 0; k < 4 && !done; k++) {
            if (cut[k][1] < lo) continue;
            if (cut[k][0] > hi) break;
            if (cut[k][0] > lo) raw_range(&cls, &n_cls, &single, lo, cut[k][0] - 1);
            lo = cut[k][1] + 1;
            done = lo > hi;
        }
        if (!done) raw_range(&cls, &n_cls, &single, lo, hi);
    }
    int alts = 0;
    hr_gbuf_puts(o, "(?:");
    if (n_cls == 1) {
        emit_cp(o, single, 0);
        alts++;
    } else if (n_cls) {
        hr_gbuf_puts(o, "[");
        hr_gbuf_add(o, cls.p, cls.n);
        hr_gbuf_puts(o, "]");
        alts++;
    }
    if (cls.oom) o->oom = 1;
    hr_gbuf_free(&cls);
    uint32_t esc[] = {'"', '\\'};
    int all_ctrl = 1;
    for (uint32_t cp = 0; cp < 0x20; cp++)
        all_ctrl &= cs_has(c, cp);
    if (all_ctrl) { /* every control character: both spellings, as one group */
        if (alts++) hr_gbuf_puts(o, "|");
        hr_gbuf_puts(o, "\\\\(?:[bfnrt]|u00[01][0-9a-fA-F])");
    }
    for (uint32_t cp = 0; cp < 0x20 && !all_ctrl; cp++)
        if (cs_has(c, cp)) {
            if (alts++) hr_gbuf_puts(o, "|");
            emit_escaped(o, cp);
        }
    for (size_t i = 0; i < 2; i++)
        if (cs_has(c, esc[i])) {
            if (alts++) hr_gbuf_puts(o, "|");
            emit_escaped(o, esc[i]);
        }
    if (cs_has(c, '/')) {
        if (alts++) hr_gbuf_puts(o, "|");
        hr_gbuf_puts(o, "\\\\\\/");
    }
    if (!alts) hr_gbuf_puts(o, "[]"); /* matches nothing, as ECMAScript's [] does */
    hr_gbuf_puts(o, ")");
}

static void fail(rx *r, const char *what) {
    if (!r->err) r->err = hr_errf("pattern: %s at offset %zu is not supported", what, r->i);
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int read_hex(rx *r, size_t digits, uint32_t *cp) {
    uint32_t v = 0;
    for (size_t k = 0; k < digits; k++) {
        if (r->i + k >= r->n || hexval(r->s[r->i + k]) < 0) return 0;
        v = v * 16 + (uint32_t)hexval(r->s[r->i + k]);
    }
    r->i += digits;
    *cp = v;
    return 1;
}

/* After a backslash: adds the escape's characters to c. */
static void parse_escape(rx *r, cset *c, int in_class) {
    if (r->i >= r->n) return fail(r, "a trailing backslash");
    char e = r->s[r->i++];
    uint32_t cp = (unsigned char)e;
    switch (e) {
    case 'd':
    case 'D':
    case 'w':
    case 'W':
    case 's':
    case 'S': class_escape(c, e); return;
    case 'n': cp = '\n'; break;
    case 'r': cp = '\r'; break;
    case 't': cp = '\t'; break;
    case 'f': cp = '\f'; break;
    case 'v': cp = '\v'; break;
    case '0': cp = 0; break;
    case 'b':
        if (!in_class) return fail(r, "the word boundary \\b");
        cp = '\b';
        break;
    case 'B': return fail(r, "the word boundary \\B");
    case 'p':
    case 'P': return fail(r, "a Unicode property escape");
    case 'k': return fail(r, "a named backreference");
    case 'c': return fail(r, "a control escape \\c");
    case 'x':
        if (!read_hex(r, 2, &cp)) return fail(r, "a malformed \\x escape");
        break;
    case 'u':
        if (r->i < r->n && r->s[r->i] == '{') {
            r->i++;
            size_t st = r->i;
            while (r->i < r->n && r->s[r->i] != '}')
                r->i++;
            size_t nd = r->i - st;
            r->i = st;
            if (nd == 0 || nd > 6 || !read_hex(r, nd, &cp) || r->i >= r->n)
                return fail(r, "a malformed \\u{} escape");
            r->i++;
        } else if (!read_hex(r, 4, &cp)) {
            return fail(r, "a malformed \\u escape");
        }
        break;
    default:
        if (e >= '1' && e <= '9') return fail(r, "a backreference");
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) return fail(r, "an unknown escape");
        if ((unsigned char)e >= 0x80) {
            r->i--;
            r->i += hr_utf8_decode(r->s + r->i, &cp);
        }
    }
    if (cp > CP_MAX) return fail(r, "a code point past U+10FFFF");
    cs_add(c, cp, cp);
}

static uint32_t next_cp(rx *r) {
    uint32_t cp = (unsigned char)r->s[r->i];
    if (cp < 0x80) {
        r->i++;
        return cp;
    }
    size_t k = hr_utf8_decode(r->s + r->i, &cp);
    r->i += k ? k : 1;
    return cp;
}

/* One class item: a character (or escape) -> single cp in *cp and return 1; an escape
 * class (\d...) added straight to c -> return 0. */
static int class_atom(rx *r, cset *c, uint32_t *cp) {
    if (r->s[r->i] != '\\') {
        *cp = next_cp(r);
        return 1;
    }
    r->i++;
    cset t = {0};
    parse_escape(r, &t, 1);
    int single = t.n == 1 && t.r[0][0] == t.r[0][1];
    if (single)
        *cp = t.r[0][0];
    else
        for (size_t i = 0; i < t.n; i++)
            cs_add(c, t.r[i][0], t.r[i][1]);
    c->oom |= t.oom;
    free(t.r);
    return single;
}

static void parse_class(rx *r, cset *c) {
    int neg = r->i < r->n && r->s[r->i] == '^';
    if (neg) r->i++;
    while (!r->err) {
        if (r->i >= r->n) return fail(r, "an unterminated character class");
        if (r->s[r->i] == ']') {
            r->i++;
            break;
        }
        uint32_t lo, hi;
        if (!class_atom(r, c, &lo)) continue;
        if (r->i + 1 < r->n && r->s[r->i] == '-' && r->s[r->i + 1] != ']') {
            r->i++;
            if (!class_atom(r, c, &hi)) return fail(r, "a class escape as a range end");
            if (hi < lo) return fail(r, "a reversed range");
            cs_add(c, lo, hi);
        } else {
            cs_add(c, lo, lo);
        }
    }
    if (neg) cs_negate(c);
}

static void parse_alt(rx *r, int top);

/* {m}, {m,}, {m,n} at r->i: copies it to the output and returns 1, or 0 (a literal '{'). */
static int quant_braces(rx *r) {
    size_t j = r->i + 1, st = j;
    while (j < r->n && r->s[j] >= '0' && r->s[j] <= '9')
        j++;
    if (j == st || j >= r->n) return 0;
    if (r->s[j] == ',') {
        j++;
        while (j < r->n && r->s[j] >= '0' && r->s[j] <= '9')
            j++;
    }
    if (j >= r->n || r->s[j] != '}') return 0;
    hr_gbuf_add(r->o, r->s + r->i, j + 1 - r->i);
    r->i = j + 1;
    return 1;
}

static void parse_quant(rx *r) {
    if (r->i >= r->n) return;
    char q = r->s[r->i];
    if (q == '*' || q == '+' || q == '?') {
        hr_gbuf_add(r->o, &q, 1);
        r->i++;
    } else if (q != '{' || !quant_braces(r)) {
        return;
    }
    if (r->i < r->n && r->s[r->i] == '?') r->i++; /* lazy: same language when matched whole */
    if (r->i < r->n && strchr("*+?", r->s[r->i])) fail(r, "a quantifier after a quantifier");
}

static void parse_group(rx *r) {
    if (r->i < r->n && r->s[r->i] == '?') {
        if (r->i + 1 < r->n && r->s[r->i + 1] == ':')
            r->i += 2;
        else if (r->i + 1 < r->n && r->s[r->i + 1] == '<' && r->i + 2 < r->n &&
                 r->s[r->i + 2] != '=' && r->s[r->i + 2] != '!') {
            while (r->i < r->n && r->s[r->i] != '>')
                r->i++;
            r->i++;
        } else {
            return fail(r, "a lookaround group");
        }
    }
    hr_gbuf_puts(r->o, "(?:");
    parse_alt(r, 0);
    if (r->err) return;
    if (r->i >= r->n || r->s[r->i] != ')') return fail(r, "an unclosed group");
    r->i++;
    hr_gbuf_puts(r->o, ")");
}

/* One atom and its quantifier. */
static void parse_atom(rx *r) {
    char ch = r->s[r->i];
    if (ch == '(') {
        r->i++;
        parse_group(r);
    } else if (ch == '*' || ch == '+' || ch == '?') {
        return fail(r, "a quantifier without an atom");
    } else {
        cset c = {0};
        if (ch == '[') {
            r->i++;
            parse_class(r, &c);
        } else if (ch == '.') {
            r->i++;
            cs_add(&c, '\n', '\n');
            cs_add(&c, '\r', '\r');
            cs_add(&c, 0x2028, 0x2029);
            cs_negate(&c);
        } else if (ch == '\\') {
            r->i++;
            parse_escape(r, &c, 0);
        } else {
            uint32_t cp = next_cp(r);
            cs_add(&c, cp, cp);
        }
        if (!r->err) emit_set(r->o, &c);
        free(c.r);
    }
    if (!r->err) parse_quant(r);
}

static void emit_any_run(hr_gbuf *o) { hr_gbuf_puts(o, HR_SC_CHAR "*"); }

/* alt := seq ('|' seq)*; at the top, each seq may start with ^ and end with $. */
static void parse_alt(rx *r, int top) {
    for (int first = 1; !r->err; first = 0) {
        if (!first) hr_gbuf_puts(r->o, "|");
        int start = 0;
        if (top && r->i < r->n && r->s[r->i] == '^') {
            start = 1;
            r->i++;
        }
        if (top && !start) emit_any_run(r->o);
        if (top) hr_gbuf_puts(r->o, "(?:");
        int end = 0;
        while (!r->err && r->i < r->n && r->s[r->i] != '|' && r->s[r->i] != ')') {
            char ch = r->s[r->i];
            if (ch == '$' && top && (r->i + 1 == r->n || r->s[r->i + 1] == '|')) {
                end = 1;
                r->i++;
                break;
            }
            if (ch == '^' || ch == '$') return fail(r, "an anchor inside the pattern");
            parse_atom(r);
        }
        if (top) hr_gbuf_puts(r->o, ")");
        if (top && !end) emit_any_run(r->o);
        if (r->i >= r->n || r->s[r->i] != '|') return;
        r->i++;
    }
}

hr_err *hr_sc_pattern(hr_gbuf *o, const char *pat, size_t len) {
    rx r = {.s = pat, .n = len, .o = o};
    hr_gbuf_puts(o, "(?:");
    parse_alt(&r, 1);
    if (!r.err && r.i < r.n) fail(&r, "an unmatched ')'");
    hr_gbuf_puts(o, ")");
    return r.err;
}

int hr_sc_pattern_matches(const char *pat, const char *s, size_t n) {
    pcre2_code *re;
    hr_err *e = hr_regex_compile(pat, PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_MATCH_INVALID_UTF, &re);
    int bad = !e ? 0 : hr_err_code_of(e) == HR_E_OOM ? HR_SC_NOMEM : -1;
    hr_err_free(e);
    if (bad) return bad;
    pcre2_match_data *md = hr_regex_match_data(re);
    int rc = md ? pcre2_match(re, (PCRE2_SPTR)s, n, 0, 0, md, NULL) : PCRE2_ERROR_NOMEMORY;
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return rc >= 0                      ? 1
           : rc == PCRE2_ERROR_NOMATCH  ? 0
           : rc == PCRE2_ERROR_NOMEMORY ? HR_SC_NOMEM
                                        : -1;
}

/* One level of the names' trie at depth d: whether a name ends there, the next code
 * points (kids) and every other code point. */
static void trie_level(const char *const *names, const size_t *lens, const size_t *idx, size_t n,
                       size_t d, int *terminal, cset *kids, cset *other) {
    *terminal = 0;
    *kids = (cset){0};
    *other = (cset){0};
    for (size_t i = 0; i < n; i++) {
        if (lens[idx[i]] == d) {
            *terminal = 1;
            continue;
        }
        uint32_t cp;
        hr_utf8_decode(names[idx[i]] + d, &cp);
        cs_add(kids, cp, cp);
    }
    cs_norm(kids);
    for (size_t i = 0; i < kids->n; i++)
        cs_add(other, kids->r[i][0], kids->r[i][1]);
    other->oom |= kids->oom;
    cs_negate(other);
}

/* The names (of idx[0..n)) whose code point at depth d is cp, into sub; *step its length. */
static size_t trie_child(const char *const *names, const size_t *lens, const size_t *idx, size_t n,
                         size_t d, uint32_t cp, size_t *sub, size_t *step) {
    size_t m = 0;
    *step = 1;
    for (size_t i = 0; i < n; i++) {
        uint32_t c2;
        if (lens[idx[i]] == d) continue;
        *step = hr_utf8_decode(names[idx[i]] + d, &c2);
        if (c2 == cp) sub[m++] = idx[i];
    }
    return m;
}

/* Strings (decoded) that are none of names[idx[0..n)], all sharing their first d bytes. */
static void not_names_at(hr_gbuf *o, const char *const *names, const size_t *lens, size_t *idx,
                         size_t n, size_t d) {
    int terminal;
    cset kids, other;
    trie_level(names, lens, idx, n, d, &terminal, &kids, &other);
    hr_gbuf_puts(o, "(?:");
    emit_set(o, &other);
    hr_gbuf_puts(o, HR_SC_CHAR "*");
    free(other.r);
    size_t *sub = malloc((n ? n : 1) * sizeof *sub);
    for (size_t k = 0; sub && k < kids.n; k++)
        for (uint32_t cp = kids.r[k][0]; cp <= kids.r[k][1]; cp++) {
            size_t step, m = trie_child(names, lens, idx, n, d, cp, sub, &step);
            if (!step) step = 1;
            cset one = {0};
            cs_add(&one, cp, cp);
            hr_gbuf_puts(o, "|");
            emit_set(o, &one);
            free(one.r);
            not_names_at(o, names, lens, sub, m, d + step);
        }
    if (!sub) o->oom = 1;
    free(sub);
    free(kids.r);
    hr_gbuf_puts(o, terminal ? ")" : ")?");
}

/* The CFG form of not_names_at: one rule per trie node (identical subtrees share one),
 * each an alternative per child character, one for any other character (then anything)
 * and the closing quote unless a name ends there; the hint keeps every node a
 * nonterminal, so no DFA grows with the number of names. */
static const char *not_names_node(hr_sc_ctx *c, const char *const *names, const size_t *lens,
                                  size_t *idx, size_t n, size_t d) {
    int terminal;
    cset kids, other;
    trie_level(names, lens, idx, n, d, &terminal, &kids, &other);
    hr_gbuf b = {0};
    hr_gbuf_puts(&b, "/");
    emit_set(&b, &other);
    hr_gbuf_puts(&b, HR_SC_CHAR "*\"/");
    free(other.r);
    if (!terminal) hr_gbuf_puts(&b, " | \"\\\"\"");
    size_t *sub = malloc((n ? n : 1) * sizeof *sub);
    for (size_t k = 0; sub && k < kids.n && !b.oom; k++)
        for (uint32_t cp = kids.r[k][0]; cp <= kids.r[k][1]; cp++) {
            size_t step, m = trie_child(names, lens, idx, n, d, cp, sub, &step);
            const char *child = not_names_node(c, names, lens, sub, m, d + (step ? step : 1));
            if (!child) b.oom = 1;
            cset one = {0};
            cs_add(&one, cp, cp);
            hr_gbuf_puts(&b, " | /");
            emit_set(&b, &one);
            hr_gbuf_printf(&b, "/ %s", child ? child : "");
            free(one.r);
        }
    hr_gbuf_printf(&b, " | %s", hr_sc_hint(c));
    const char *r = !sub || b.oom ? NULL : hr_sc_rule(c, "kn", b.p);
    free(sub);
    free(kids.r);
    hr_gbuf_free(&b);
    return r;
}

const char *hr_sc_not_names_rule(hr_sc_ctx *c, const char *const *names, const size_t *lens,
                                 size_t n) {
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    if (!idx) return NULL;
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    const char *node = not_names_node(c, names, lens, idx, n, 0);
    free(idx);
    if (!node) return NULL;
    hr_gbuf b = {0};
    hr_gbuf_printf(&b, "\"\\\"\" %s", node);
    const char *r = b.oom ? NULL : hr_sc_rule(c, "key", b.p);
    hr_gbuf_free(&b);
    return r;
}

void hr_sc_not_names(hr_gbuf *o, const char *const *names, const size_t *lens, size_t n) {
    if (!n) {
        hr_gbuf_puts(o, HR_SC_CHAR "*");
        return;
    }
    size_t *idx = malloc(n * sizeof *idx);
    if (!idx) {
        o->oom = 1;
        return;
    }
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    not_names_at(o, names, lens, idx, n, 0);
    free(idx);
}

#define SEQ_MAX 32

/* One single-character atom of a pattern at r->i into *c; 0 if the atom is not one. */
static int char_atom(rx *r, cset *c) {
    char ch = r->s[r->i];
    if (ch == '[') {
        r->i++;
        parse_class(r, c);
    } else if (ch == '\\') {
        r->i++;
        parse_escape(r, c, 0);
    } else if (ch == '.') {
        r->i++;
        cs_add(c, '\n', '\n');
        cs_add(c, '\r', '\r');
        cs_add(c, 0x2028, 0x2029);
        cs_negate(c);
    } else if (!strchr("()|*+?{^$", ch)) {
        uint32_t cp = next_cp(r);
        cs_add(c, cp, cp);
    } else {
        return 0;
    }
    return !r->err;
}

/* The quantifier at r->i (none: {1,1}); hi -1: unbounded. 0 when malformed. */
static int char_quant(rx *r, long long *lo, long long *hi) {
    *lo = *hi = 1;
    if (r->i >= r->n) return 1;
    char q = r->s[r->i];
    char *end;
    if (q == '*')
        *lo = 0, *hi = -1, r->i++;
    else if (q == '+')
        *lo = 1, *hi = -1, r->i++;
    else if (q == '?')
        *lo = 0, *hi = 1, r->i++;
    else if (q == '{') {
        *lo = strtoll(r->s + r->i + 1, &end, 10);
        *hi = *lo;
        if (*end == ',') {
            if (end[1] == '}')
                *hi = -1, end++;
            else
                *hi = strtoll(end + 1, &end, 10);
        }
        if (*end != '}' || end == r->s + r->i + 1) return 0;
        r->i = (size_t)(end - r->s) + 1;
    }
    if (r->i < r->n && r->s[r->i] == '?') r->i++;
    return 1;
}

int hr_sc_pattern_len(hr_gbuf *o, const char *pat, size_t len, int64_t mn, int64_t mx) {
    if (len < 3 || pat[0] != '^' || pat[len - 1] != '$' || pat[len - 2] == '\\') return 0;
    rx r = {.s = pat, .n = len - 1, .i = 1, .o = o};
    cset atoms[SEQ_MAX] = {{0}};
    long long lo[SEQ_MAX], hi[SEQ_MAX], sum_lo = 0, sum_hi = 0;
    int n = 0, ok = 1, var = -1, n_var = 0;
    while (ok && r.i < r.n) {
        ok = n < SEQ_MAX && char_atom(&r, &atoms[n]) && char_quant(&r, &lo[n], &hi[n]);
        if (!ok) break;
        if (lo[n] != hi[n]) var = n, n_var++;
        sum_lo += lo[n];
        sum_hi = sum_hi < 0 || hi[n] < 0 ? -1 : sum_hi + hi[n];
        n++;
    }
    ok = ok && !r.err && n > 0;
    int inside = ok && sum_lo >= mn && (mx < 0 || (sum_hi >= 0 && sum_hi <= mx));
    if (ok && !inside) { /* exactly one variable atom takes the bounds the others leave */
        ok = n_var == 1;
        if (ok) {
            long long others = sum_lo - lo[var];
            if (mn - others > lo[var]) lo[var] = mn - others;
            if (mx >= 0 && (hi[var] < 0 || mx - others < hi[var])) hi[var] = mx - others;
            ok = hi[var] < 0 || lo[var] <= hi[var];
        }
    }
    for (int i = 0; i < n && ok; i++) {
        emit_set(o, &atoms[i]);
        if (hi[i] < 0)
            hr_gbuf_printf(o, "{%lld,}", lo[i]);
        else
            hr_gbuf_printf(o, "{%lld,%lld}", lo[i], hi[i]);
    }
    for (int i = 0; i <= n && i < SEQ_MAX; i++)
        free(atoms[i].r);
    hr_err_free(r.err);
    return ok;
}
