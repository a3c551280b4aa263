/* Lexer for the template language; see lexer.h. Positions are 1-based line and byte
 * column. Inside a tag, an end marker only counts outside brackets, so dict literals
 * like {{ {'a': {'b': 1}} }} lex as jinja2 lexes them. */
#include "template/lexer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

typedef struct {
    tpl_arena *a;
    const char *s;
    size_t n, pos, line_start;
    int line;
    token *v;
    size_t nt, cap;
    int line_starting; /* the previous match ended with a newline */
} lexer;

static hr_err *lex_err(lexer *L, size_t pos, const char *msg) {
    int line = 1;
    size_t ls = 0;
    for (size_t i = 0; i < pos && i < L->n; i++)
        if (L->s[i] == '\n') line++, ls = i + 1;
    return hr_errf("template syntax error at line %d, column %zu: %s", line, pos - ls + 1, msg);
}

static void advance_to(lexer *L, size_t pos) {
    for (; L->pos < pos; L->pos++)
        if (L->s[L->pos] == '\n') L->line++, L->line_start = L->pos + 1;
}

/* Appends a token at source offset `at`. Tokens come in source order, so the line count
 * advances with them and lexing stays linear however long a tag is. The array is on the
 * heap: only the parser reads it. */
static token *push(lexer *L, ttype t, size_t at) {
    if (L->nt == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 64;
        token *v = realloc(L->v, cap * sizeof *v);
        if (!v) return NULL;
        L->v = v;
        L->cap = cap;
    }
    token *k = &L->v[L->nt++];
    memset(k, 0, sizeof *k);
    k->t = t;
    advance_to(L, at);
    k->line = L->line;
    k->col = (int)(at - L->line_start + 1);
    return k;
}

static int is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Where the text before a tag at `tag` ends, after {%- or lstrip_blocks. */
static size_t text_end(lexer *L, size_t start, size_t tag, char kind, char mod) {
    size_t e = tag;
    if (mod == '-') {
        while (e > start && is_ws(L->s[e - 1]))
            e--;
        return e;
    }
    if (mod == '+' || kind == '{') return e;
    size_t l = e;
    while (l > start && L->s[l - 1] != '\n')
        l--;
    if (l == start && !L->line_starting) return e;
    for (size_t i = l; i < e; i++)
        if (!is_ws(L->s[i])) return e;
    return l;
}

static hr_err *emit_text(lexer *L, size_t start, size_t end) {
    if (end <= start) return NULL;
    token *k = push(L, T_TEXT, start);
    if (!k || !(k->s = hr_ta_strndup(L->a, L->s + start, end - start))) return hr_err_oom();
    k->n = end - start;
    return NULL;
}

/* After a tag's closing marker at `end` (just past it): -} strips whitespace, a block's
 * plain %} eats one newline (trim_blocks). */
static void after_tag(lexer *L, size_t end, char mod, int trim) {
    size_t p = end;
    if (mod == '-')
        while (p < L->n && is_ws(L->s[p]))
            p++;
    else if (mod != '+' && trim && p < L->n && L->s[p] == '\n')
        p++;
    L->line_starting = p > 0 && L->s[p - 1] == '\n';
    advance_to(L, p);
}

static hr_err *lex_comment(lexer *L, size_t open) {
    const char *e = strstr(L->s + open + 2, "#}");
    if (!e) return lex_err(L, open, "missing end of comment tag");
    size_t close = (size_t)(e - L->s);
    char mod = close > open + 2 && (L->s[close - 1] == '-' || L->s[close - 1] == '+')
                   ? L->s[close - 1]
                   : 0;
    after_tag(L, close + 2, mod, 1);
    return NULL;
}

static int word_at(const char *s, size_t n, size_t p, const char *w, size_t *end) {
    while (p < n && is_ws(s[p]))
        p++;
    size_t k = strlen(w);
    if (p + k > n || memcmp(s + p, w, k) != 0) return 0;
    p += k;
    if (p < n && (s[p] == '_' || (s[p] >= 'a' && s[p] <= 'z') || (s[p] >= '0' && s[p] <= '9')))
        return 0;
    while (p < n && is_ws(s[p]))
        p++;
    if (p < n && (s[p] == '-' || s[p] == '+')) p++;
    if (p + 2 > n || s[p] != '%' || s[p + 1] != '}') return 0;
    *end = p + 2;
    return 1;
}

/* {% raw %}...{% endraw %}: the content is text, verbatim. */
static hr_err *lex_raw(lexer *L, size_t open, size_t body) {
    const char *s = L->s;
    for (size_t p = body; p + 1 < L->n; p++) {
        if (s[p] != '{' || s[p + 1] != '%') continue;
        size_t q = p + 2, end;
        char mod = s[q] == '-' || s[q] == '+' ? s[q] : 0;
        if (mod) q++;
        if (!word_at(s, L->n, q, "endraw", &end)) continue;
        size_t te = p;
        if (mod == '-')
            while (te > body && is_ws(s[te - 1]))
                te--;
        HR_TRY(emit_text(L, body, te));
        char emod = s[end - 3] == '-' || s[end - 3] == '+' ? s[end - 3] : 0;
        after_tag(L, end, emod, 1);
        return NULL;
    }
    return lex_err(L, open, "missing endraw tag");
}

static const char *ops3[] = {"**", "//", "==", "!=", "<=", ">=", NULL};

/* Where the string opening at p ends: the offset of its closing quote, or n. */
static size_t string_end(const lexer *L, size_t p) {
    size_t i = p + 1;
    while (i < L->n && L->s[i] != L->s[p])
        i += L->s[i] == '\\' && i + 1 < L->n ? 2 : 1;
    return i;
}

/* Unescaping never lengthens a string (\uXXXX is 6 bytes for at most 3), so the literal's
 * own length bounds its buffer. */
static hr_err *lex_string(lexer *L, size_t *p) {
    const char *s = L->s;
    size_t start = *p, end = string_end(L, start);
    if (end >= L->n) return lex_err(L, start, "unterminated string");
    char *buf = hr_ta_alloc(L->a, end - start);
    if (!buf) return hr_err_oom();
    size_t o = 0;
    for (size_t i = start + 1; i < end; i++) {
        if (s[i] != '\\') {
            buf[o++] = s[i];
            continue;
        }
        char c = s[++i];
        switch (c) {
        case 'n': buf[o++] = '\n'; break;
        case 't': buf[o++] = '\t'; break;
        case 'r': buf[o++] = '\r'; break;
        case '\\':
        case '\'':
        case '"': buf[o++] = c; break;
        case '\n': break;
        case 'u':
        case 'x': {
            int nd = c == 'u' ? 4 : 2;
            char hex[5] = {0};
            if (i + (size_t)nd >= L->n) return lex_err(L, i, "truncated \\u escape");
            memcpy(hex, s + i + 1, (size_t)nd);
            char *e;
            unsigned long cp = strtoul(hex, &e, 16);
            if (*e) return lex_err(L, i, "malformed escape in string");
            o += hr_utf8_encode((uint32_t)cp, buf + o);
            i += (size_t)nd;
            break;
        }
        default: buf[o++] = '\\'; buf[o++] = c;
        }
    }
    token *k = push(L, T_STRING, start);
    if (!k) return hr_err_oom();
    k->s = buf;
    k->n = o;
    *p = end + 1;
    return NULL;
}

static hr_err *lex_number(lexer *L, size_t *p) {
    const char *s = L->s;
    size_t i = *p;
    int is_float = 0;
    while (i < L->n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
        i++;
    if (i + 1 < L->n && s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '9') {
        is_float = 1;
        for (i++; i < L->n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '_');)
            i++;
    }
    if (i < L->n && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < L->n && (s[j] == '+' || s[j] == '-')) j++;
        if (j < L->n && s[j] >= '0' && s[j] <= '9') {
            is_float = 1;
            for (i = j; i < L->n && s[i] >= '0' && s[i] <= '9';)
                i++;
        }
    }
    char buf[64];
    size_t o = 0;
    for (size_t k = *p; k < i && o < sizeof buf - 1; k++)
        if (s[k] != '_') buf[o++] = s[k];
    buf[o] = 0;
    token *k = push(L, is_float ? T_FLOAT : T_INT, *p);
    if (!k) return hr_err_oom();
    errno = 0;
    if (is_float)
        k->f = strtod(buf, NULL);
    else
        k->i = strtoll(buf, NULL, 10);
    if (errno) return lex_err(L, *p, "number out of range");
    *p = i;
    return NULL;
}

static hr_err *lex_op(lexer *L, size_t *p, int *depth) {
    const char *s = L->s;
    size_t n = 1;
    for (int k = 0; ops3[k]; k++)
        if (*p + 1 < L->n && s[*p] == ops3[k][0] && s[*p + 1] == ops3[k][1]) n = 2;
    if (n == 1 && !strchr("+-*/%~<>()[]{},.:|=", s[*p])) {
        char msg[64];
        snprintf(msg, sizeof msg, "unexpected character '%c'", s[*p]);
        return lex_err(L, *p, msg);
    }
    char c = s[*p];
    if (c == '(' || c == '[' || c == '{') ++*depth;
    if ((c == ')' || c == ']' || c == '}') && *depth > 0) --*depth;
    token *k = push(L, T_OP, *p);
    if (!k || !(k->s = hr_ta_strndup(L->a, s + *p, n))) return hr_err_oom();
    k->n = n;
    *p += n;
    return NULL;
}

/* Matches the end marker of a tag ("}}" or "%}") at p, with its optional -/+. */
static int tag_end_at(lexer *L, size_t p, char close, char *mod, size_t *end) {
    const char *s = L->s;
    *mod = 0;
    if ((s[p] == '-' || s[p] == '+') && p + 2 < L->n + 0 && s[p + 1] == close && s[p + 2] == '}') {
        *mod = s[p];
        *end = p + 3;
        return 1;
    }
    if (s[p] == close && p + 1 < L->n && s[p + 1] == '}') {
        *end = p + 2;
        return 1;
    }
    return 0;
}

static hr_err *lex_tag(lexer *L, size_t p, char close) {
    int depth = 0;
    const char *s = L->s;
    size_t open = L->pos;
    while (p < L->n) {
        char c = s[p], mod;
        size_t end;
        if (is_ws(c))
            p++;
        else if (depth == 0 && tag_end_at(L, p, close, &mod, &end)) {
            if (!push(L, close == '}' ? T_VAR_END : T_BLOCK_END, p)) return hr_err_oom();
            after_tag(L, end, mod, close == '%');
            return NULL;
        } else if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
            size_t b = p;
            while (p < L->n && (s[p] == '_' || (s[p] >= 'a' && s[p] <= 'z') ||
                                (s[p] >= 'A' && s[p] <= 'Z') || (s[p] >= '0' && s[p] <= '9')))
                p++;
            token *k = push(L, T_NAME, b);
            if (!k || !(k->s = hr_ta_strndup(L->a, s + b, p - b))) return hr_err_oom();
            k->n = p - b;
        } else if (c >= '0' && c <= '9')
            HR_TRY(lex_number(L, &p));
        else if (c == '\'' || c == '"')
            HR_TRY(lex_string(L, &p));
        else
            HR_TRY(lex_op(L, &p, &depth));
    }
    return lex_err(L, open,
                   close == '}' ? "unexpected end of template, expected '}}'"
                                : "unexpected end of template, expected '%}'");
}

/* One text run and the tag after it. Returns 1 at the end of the source. */
static hr_err *lex_step(lexer *L, int *done) {
    const char *s = L->s;
    size_t start = L->pos, tag = start;
    while (tag + 1 < L->n &&
           !(s[tag] == '{' && (s[tag + 1] == '{' || s[tag + 1] == '%' || s[tag + 1] == '#')))
        tag++;
    if (tag + 1 >= L->n) {
        *done = 1;
        return emit_text(L, start, L->n);
    }
    char kind = s[tag + 1];
    char mod = tag + 2 < L->n && (s[tag + 2] == '-' || s[tag + 2] == '+') ? s[tag + 2] : 0;
    HR_TRY(emit_text(L, start, text_end(L, start, tag, kind, mod)));
    advance_to(L, tag);
    size_t body = tag + 2 + (mod ? 1 : 0), raw_end;
    if (kind == '#') return lex_comment(L, tag);
    if (kind == '%' && word_at(s, L->n, body, "raw", &raw_end)) {
        char emod = s[raw_end - 3] == '-' ? '-' : 0;
        size_t b = raw_end;
        if (emod)
            while (b < L->n && is_ws(s[b]))
                b++;
        advance_to(L, b);
        return lex_raw(L, tag, b);
    }
    if (!push(L, kind == '{' ? T_VAR_BEGIN : T_BLOCK_BEGIN, tag)) return hr_err_oom();
    return lex_tag(L, body, kind == '{' ? '}' : '%');
}

/* jinja2 normalises newlines in the source and drops one trailing newline. */
static char *normalize(tpl_arena *a, const char *src, size_t *n) {
    size_t len = strlen(src), o = 0;
    char *d = hr_ta_alloc(a, len + 1);
    if (!d) return NULL;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            d[o++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else
            d[o++] = src[i];
    }
    if (o && d[o - 1] == '\n') o--;
    d[o] = 0;
    *n = o;
    return d;
}

hr_err *hr_tpl_lex(tpl_arena *a, const char *src, token **out, size_t *n) {
    *out = NULL;
    lexer L = {.a = a, .line = 1, .line_starting = 1};
    if (!(L.s = normalize(a, src, &L.n))) return hr_err_oom();
    int done = 0;
    hr_err *e = NULL;
    while (!done && !e)
        e = lex_step(&L, &done);
    if (!e && !push(&L, T_EOF, L.n)) e = hr_err_oom();
    if (e) return free(L.v), e;
    *out = L.v;
    *n = L.nt;
    return NULL;
}
