/* GBNF front end: llama.cpp's grammar syntax (rules `name ::= alts`, literals, classes,
 * `.`, groups, `* + ? {m} {m,} {m,n}`, `#` comments, its newline rules: a rule ends at a
 * newline unless inside parentheses or after `::=` / `|`) plus `/regex/` terminals, `a & b`
 * (the strings both regular sides match; looser than a sequence, tighter than `|`) and `~x`
 * (the text a regular item does not match), parsed
 * into the expression IR. Errors name the problem and its byte offset. */
#include <stdlib.h>
#include <string.h>

#include "grammar/gram_ir.h"

#define MAX_REPEAT 100000

typedef struct {
    const char *s;
    size_t n, i;
    hr_gir *ir;
    int depth;
} gp;

static int peek(const gp *p, size_t k) {
    return p->i + k < p->n ? (unsigned char)p->s[p->i + k] : -1;
}

static void space(gp *p, int newline_ok) {
    for (;;) {
        int c = peek(p, 0);
        if (c == '#') {
            while (peek(p, 0) >= 0 && peek(p, 0) != '\r' && peek(p, 0) != '\n')
                p->i++;
        } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n')))
            p->i++;
        else
            return;
    }
}

static int is_word(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

static hr_err *oom(void) { return hr_err_oom(); }

static hr_err *hex(gp *p, int digits, uint32_t *out) {
    uint32_t v = 0;
    for (int k = 0; k < digits; k++) {
        int c = peek(p, 0), d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return hr_errf("grammar: expected %d hex digits at offset %zu", digits, p->i);
        v = v << 4 | (uint32_t)d;
        p->i++;
    }
    if (v > HR_G_MAX_CP || (v >= 0xD800 && v <= 0xDFFF))
        return hr_errf("grammar: escape U+%X at offset %zu is not a Unicode scalar value", v, p->i);
    *out = v;
    return NULL;
}

/* One character of a literal or class, escapes decoded. */
static hr_err *one_char(gp *p, uint32_t *cp) {
    if (peek(p, 0) < 0) return hr_errf("grammar: unexpected end of input at offset %zu", p->i);
    if (peek(p, 0) == '\\') {
        size_t at = p->i;
        int e = peek(p, 1);
        p->i += 2;
        switch (e) {
        case 'x': return hex(p, 2, cp);
        case 'u': return hex(p, 4, cp);
        case 'U': return hex(p, 8, cp);
        case 't': *cp = '\t'; return NULL;
        case 'r': *cp = '\r'; return NULL;
        case 'n': *cp = '\n'; return NULL;
        case '\\':
        case '"':
        case '[':
        case ']': *cp = (uint32_t)e; return NULL;
        default:
            if (e < 0) return hr_errf("grammar: unexpected end of input at offset %zu", at);
            return hr_errf("grammar: unknown escape \\%c at offset %zu", e, at);
        }
    }
    size_t k = hr_gutf8_decode(p->s + p->i, p->n - p->i, cp);
    if (!k) return hr_errf("grammar: invalid UTF-8 at offset %zu", p->i);
    p->i += k;
    return NULL;
}

static hr_err *literal(gp *p, int *node) {
    size_t start = p->i++;
    hr_gints kids = {0};
    hr_err *e = NULL;
    while (!e && peek(p, 0) != '"') {
        uint32_t cp;
        if (peek(p, 0) < 0)
            e = hr_errf("grammar: unterminated string starting at offset %zu", start);
        else if (!(e = one_char(p, &cp))) {
            int c = hr_gir_char(p->ir, cp);
            if (c < 0 || hr_gints_push(&kids, c)) e = oom();
        }
    }
    if (!e) {
        p->i++;
        *node = hr_gir_list(p->ir, HR_GN_SEQ, kids.v, kids.n);
        if (*node < 0) e = oom();
    }
    free(kids.v);
    return e;
}

static hr_err *push_range(hr_grange **r, int *n, int *cap, uint32_t lo, uint32_t hi) {
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        hr_grange *q = realloc(*r, (size_t)nc * sizeof *q);
        if (!q) return oom();
        *r = q;
        *cap = nc;
    }
    (*r)[(*n)++] = (hr_grange){lo, hi};
    return NULL;
}

static hr_err *char_class(gp *p, int *node) {
    size_t start = p->i++;
    int negate = peek(p, 0) == '^';
    if (negate) p->i++;
    hr_grange *r = NULL;
    int n = 0, cap = 0;
    hr_err *e = NULL;
    while (!e && peek(p, 0) != ']') {
        uint32_t lo, hi;
        if (peek(p, 0) < 0)
            e = hr_errf("grammar: unterminated character class at offset %zu", start);
        else if (!(e = one_char(p, &lo))) {
            hi = lo;
            if (peek(p, 0) == '-' && peek(p, 1) != ']' && peek(p, 1) >= 0) {
                size_t at = p->i++;
                if (!(e = one_char(p, &hi)) && hi < lo)
                    e = hr_errf("grammar: range end before its start at offset %zu", at);
            }
            if (!e) e = push_range(&r, &n, &cap, lo, hi);
        }
    }
    if (!e) {
        p->i++;
        *node = hr_gir_set(p->ir, r, n, negate);
        if (*node < 0) e = oom();
    }
    free(r);
    return e;
}

/* `/re/`: the closing slash is the first one not escaped and not inside a class. */
static hr_err *regex_term(gp *p, int *node) {
    size_t start = ++p->i;
    int in_class = 0;
    for (;;) {
        int c = peek(p, 0);
        if (c < 0)
            return hr_errf("grammar: unterminated /regex/ starting at offset %zu", start - 1);
        if (c == '\\')
            p->i++;
        else if (c == '[')
            in_class = 1;
        else if (c == ']')
            in_class = 0;
        else if (c == '/' && !in_class)
            break;
        p->i++;
    }
    size_t end = p->i++;
    return hr_regex_parse(p->s + start, end - start, start, p->ir, node);
}

static hr_err *alternates(gp *p, int nested, int *node);

static hr_err *number(gp *p, int *out) {
    if (peek(p, 0) < '0' || peek(p, 0) > '9')
        return hr_errf("grammar: expected a number at offset %zu", p->i);
    long v = 0;
    while (peek(p, 0) >= '0' && peek(p, 0) <= '9') {
        v = v * 10 + (peek(p, 0) - '0');
        if (v > MAX_REPEAT)
            return hr_errf("grammar: repetition count at offset %zu is over %d", p->i, MAX_REPEAT);
        p->i++;
    }
    *out = (int)v;
    return NULL;
}

/* `{m}`, `{m,}`, `{m,n}` after an item. */
static hr_err *braces(gp *p, int nested, int *min, int *max) {
    p->i++;
    space(p, nested);
    HR_TRY(number(p, min));
    space(p, nested);
    *max = *min;
    if (peek(p, 0) == ',') {
        p->i++;
        space(p, nested);
        *max = HR_G_INF;
        if (peek(p, 0) >= '0' && peek(p, 0) <= '9') {
            size_t at = p->i;
            HR_TRY(number(p, max));
            if (*max < *min)
                return hr_errf("grammar: repetition {%d,%d} at offset %zu has max < min", *min,
                               *max, at);
            space(p, nested);
        }
    }
    if (peek(p, 0) != '}') return hr_errf("grammar: expected '}' at offset %zu", p->i);
    p->i++;
    return NULL;
}

static hr_err *postfix(gp *p, int nested, hr_gints *items) {
    int c = peek(p, 0), min, max;
    if (!items->n) return hr_errf("grammar: '%c' at offset %zu has no preceding item", c, p->i);
    if (c == '{')
        HR_TRY(braces(p, nested, &min, &max));
    else {
        min = c == '+';
        max = c == '?' ? 1 : HR_G_INF;
        p->i++;
    }
    int r = hr_gir_rep(p->ir, items->v[items->n - 1], min, max);
    if (r < 0) return oom();
    items->v[items->n - 1] = r;
    return NULL;
}

static hr_err *rule_ref(gp *p, int *node) {
    size_t start = p->i;
    while (is_word(peek(p, 0)))
        p->i++;
    int rule = hr_gir_rule(p->ir, p->s + start, p->i - start, start);
    if (rule < 0 || (*node = hr_gir_ref(p->ir, rule)) < 0) return oom();
    return NULL;
}

static hr_err *group(gp *p, int *node) {
    size_t start = p->i++;
    if (++p->depth > 200)
        return hr_errf("grammar: parentheses nested too deep at offset %zu", start);
    space(p, 1);
    HR_TRY(alternates(p, 1, node));
    p->depth--;
    if (peek(p, 0) != ')')
        return hr_errf("grammar: expected ')' at offset %zu (group opened at %zu)", p->i, start);
    p->i++;
    return NULL;
}

static hr_err *item(gp *p, int c, int *node) {
    if (c == '"') return literal(p, node);
    if (c == '[') return char_class(p, node);
    if (c == '/') return regex_term(p, node);
    if (c == '(') return group(p, node);
    if (c == '.') {
        p->i++;
        hr_grange all = {0, HR_G_MAX_CP};
        return (*node = hr_gir_set(p->ir, &all, 1, 0)) < 0 ? oom() : NULL;
    }
    return rule_ref(p, node);
}

/* `~item` (a hearth extension): the text the item does not match; `~~item` is the item. */
static hr_err *negated(gp *p, hr_gints *items) {
    size_t at = p->i;
    int k = 0, c, n;
    while (peek(p, 0) == '~')
        p->i++, k++;
    c = peek(p, 0);
    if (!(c == '"' || c == '[' || c == '/' || c == '(' || c == '.' || is_word(c)))
        return hr_errf("grammar: '~' at offset %zu is not followed by an item", at);
    HR_TRY(item(p, c, &n));
    if (k % 2 && (n = hr_gir_not(p->ir, n)) < 0) return oom();
    return hr_gints_push(items, n) ? oom() : NULL;
}

static hr_err *sequence(gp *p, int nested, int *node) {
    hr_gints items = {0};
    hr_err *e = NULL;
    for (;;) {
        int c = peek(p, 0), n;
        if (c == '*' || c == '+' || c == '?' || c == '{')
            e = postfix(p, nested, &items);
        else if (c == '~')
            e = negated(p, &items);
        else if (c == '"' || c == '[' || c == '/' || c == '(' || c == '.' || is_word(c)) {
            if (!(e = item(p, c, &n)) && hr_gints_push(&items, n)) e = oom();
        } else
            break;
        if (e) break;
        space(p, nested);
    }
    if (!e && (*node = hr_gir_list(p->ir, HR_GN_SEQ, items.v, items.n)) < 0) e = oom();
    free(items.v);
    return e;
}

/* Parts (each parsed by part) separated by sep, as one node of kind. */
static hr_err *joined(gp *p, int nested, int sep, hr_gnode_kind kind,
                      hr_err *(*part)(gp *, int, int *), int *node) {
    hr_gints parts = {0};
    hr_err *e = NULL;
    for (;;) {
        int n;
        if ((e = part(p, nested, &n))) break;
        if (hr_gints_push(&parts, n)) {
            e = oom();
            break;
        }
        if (peek(p, 0) != sep) break;
        p->i++;
        space(p, 1);
    }
    if (!e && (*node = hr_gir_list(p->ir, kind, parts.v, parts.n)) < 0) e = oom();
    free(parts.v);
    return e;
}

/* Sequences joined by `&` (a hearth extension): the strings every one of them matches. */
static hr_err *conjunction(gp *p, int nested, int *node) {
    return joined(p, nested, '&', HR_GN_AND, sequence, node);
}

static hr_err *alternates(gp *p, int nested, int *node) {
    return joined(p, nested, '|', HR_GN_ALT, conjunction, node);
}

static hr_err *rule(gp *p) {
    size_t start = p->i;
    while (is_word(peek(p, 0)))
        p->i++;
    if (p->i == start) return hr_errf("grammar: expected a rule name at offset %zu", start);
    int r = hr_gir_rule(p->ir, p->s + start, p->i - start, start);
    if (r < 0) return oom();
    if (p->ir->body[r] >= 0)
        return hr_errf("grammar: rule '%s' defined twice (again at offset %zu)", p->ir->names[r],
                       start);
    p->ir->name_off[r] = start;
    space(p, 0);
    if (p->i + 3 > p->n || memcmp(p->s + p->i, "::=", 3))
        return hr_errf("grammar: expected '::=' at offset %zu", p->i);
    p->i += 3;
    space(p, 1);
    int body;
    HR_TRY(alternates(p, 0, &body));
    p->ir->body[r] = body;
    int c = peek(p, 0);
    if (c == '\r')
        p->i += peek(p, 1) == '\n' ? 2 : 1;
    else if (c == '\n')
        p->i++;
    else if (c >= 0)
        return hr_errf("grammar: unexpected '%c' at offset %zu (expected a newline or the end)", c,
                       p->i);
    space(p, 1);
    return NULL;
}

hr_err *hr_gbnf_parse(const char *text, size_t len, hr_gir *ir, int *root) {
    gp p = {text, len, 0, ir, 0};
    space(&p, 1);
    while (p.i < p.n)
        HR_TRY(rule(&p));
    for (int r = 0; r < ir->n_rules; r++)
        if (ir->body[r] < 0)
            return hr_errf("grammar: undefined rule '%s' referenced at offset %zu", ir->names[r],
                           ir->name_off[r]);
    *root = -1;
    for (int r = 0; r < ir->n_rules; r++)
        if (!strcmp(ir->names[r], "root")) *root = r;
    if (*root < 0) return hr_errf("grammar: no rule named 'root'");
    return NULL;
}
