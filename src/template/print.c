/* Writing values as text the way Python does: str() for {{ }}, repr() inside containers,
 * float repr (shortest round-trip), and json.dumps for transformers' tojson filter. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/internal.h"

void hr_tsb_put(tsb *b, const char *s, size_t n) {
    if (b->full || n == 0) return;
    if (b->n + n + 1 > TPL_MAX_OUTPUT) {
        b->full = 1;
        return;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->full = b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void hr_tsb_puts(tsb *b, const char *s) { hr_tsb_put(b, s, strlen(s)); }

void hr_tsb_free(tsb *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

hr_err *hr_tsb_error(const tsb *b) {
    if (!b->full) return NULL;
    if (b->oom) return hr_err_oom();
    if (b->deep) return hr_tpl_limit("a value nested more than %d levels deep", TPL_MAX_DEPTH);
    return hr_tpl_limit("template output exceeds %u MiB", TPL_MAX_OUTPUT >> 20);
}

/* Counts a container being written; false (and the buffer full) past TPL_MAX_DEPTH. */
static int repr_enter(tsb *b) {
    if (b->depth >= TPL_MAX_DEPTH) {
        b->deep = b->full = 1;
        return 0;
    }
    b->depth++;
    return 1;
}

/* Python's float repr: the shortest digits that round-trip, positional for exponents in
 * [-4, 16), scientific otherwise. */
static void write_float(tsb *b, double f) {
    if (isnan(f)) return hr_tsb_puts(b, "nan");
    if (isinf(f)) return hr_tsb_puts(b, f < 0 ? "-inf" : "inf");
    char buf[64];
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, f);
        if (strtod(buf, NULL) == f) break;
    }
    char digits[32];
    int nd = 0, neg = buf[0] == '-';
    const char *p = buf + neg;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    int exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = 0;
    char out[64];
    int o = 0;
    if (neg) out[o++] = '-';
    if (exp < -4 || exp >= 16) {
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            for (int i = 1; i < nd; i++)
                out[o++] = digits[i];
        }
        o += snprintf(out + o, sizeof out - (size_t)o, "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
    } else if (exp < 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = 0; i < -exp - 1; i++)
            out[o++] = '0';
        for (int i = 0; i < nd; i++)
            out[o++] = digits[i];
    } else {
        for (int i = 0; i <= exp; i++)
            out[o++] = i < nd ? digits[i] : '0';
        out[o++] = '.';
        if (nd > exp + 1)
            for (int i = exp + 1; i < nd; i++)
                out[o++] = digits[i];
        else
            out[o++] = '0';
    }
    hr_tsb_put(b, out, (size_t)o);
}

static void write_int(tsb *b, int64_t i) {
    char buf[32];
    hr_tsb_put(b, buf, (size_t)snprintf(buf, sizeof buf, "%lld", (long long)i));
}

static void write_str_repr(tsb *b, const char *s, size_t n) {
    char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
    hr_tsb_put(b, &q, 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '\\' || c == (unsigned char)q) {
            esc[0] = '\\';
            esc[1] = (char)c;
            hr_tsb_put(b, esc, 2);
        } else if (c == '\n')
            hr_tsb_puts(b, "\\n");
        else if (c == '\r')
            hr_tsb_puts(b, "\\r");
        else if (c == '\t')
            hr_tsb_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7f)
            hr_tsb_put(b, esc, (size_t)snprintf(esc, sizeof esc, "\\x%02x", c));
        else
            hr_tsb_put(b, (const char *)&c, 1);
    }
    hr_tsb_put(b, &q, 1);
}

static void write_list_repr(tsb *b, const tv *v) {
    if (!repr_enter(b)) return;
    hr_tsb_puts(b, v->list.tuple ? "(" : "[");
    for (size_t i = 0; i < v->list.n; i++) {
        if (i) hr_tsb_puts(b, ", ");
        hr_tv_write_repr(b, v->list.items[i]);
    }
    if (v->list.tuple && v->list.n == 1) hr_tsb_puts(b, ",");
    hr_tsb_puts(b, v->list.tuple ? ")" : "]");
    b->depth--;
}

static void write_dict_repr(tsb *b, const tv *v) {
    if (!repr_enter(b)) return;
    if (v->dict->is_ns) hr_tsb_puts(b, "<Namespace ");
    hr_tsb_puts(b, "{");
    for (size_t i = 0; i < v->dict->n; i++) {
        if (i) hr_tsb_puts(b, ", ");
        hr_tv_write_repr(b, v->dict->keys[i]);
        hr_tsb_puts(b, ": ");
        hr_tv_write_repr(b, v->dict->vals[i]);
    }
    hr_tsb_puts(b, v->dict->is_ns ? "}>" : "}");
    b->depth--;
}

void hr_tv_write_repr(tsb *b, const tv *v) {
    if (b->full) return;
    switch (v->k) {
    case V_UNDEF: return;
    case V_NONE: return hr_tsb_puts(b, "None");
    case V_BOOL: return hr_tsb_puts(b, v->b ? "True" : "False");
    case V_INT: return write_int(b, v->i);
    case V_FLOAT: return write_float(b, v->f);
    case V_STR: return write_str_repr(b, v->str.s, v->str.n);
    case V_LIST: return write_list_repr(b, v);
    case V_DICT:
        if (v->dict->is_loop) return hr_tsb_puts(b, "<LoopContext>");
        return write_dict_repr(b, v);
    case V_FUNC:
        hr_tsb_puts(b, v->fn->kind == F_MACRO ? "<Macro '" : "<built-in function ");
        hr_tsb_puts(b, v->fn->name);
        return hr_tsb_puts(b, v->fn->kind == F_MACRO ? "'>" : ">");
    }
}

void hr_tv_write_str(tsb *b, const tv *v) {
    if (v->k == V_STR)
        hr_tsb_put(b, v->str.s, v->str.n);
    else
        hr_tv_write_repr(b, v);
}

static void write_json_str(tsb *b, const char *s, size_t n, int ensure_ascii) {
    hr_tsb_puts(b, "\"");
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        char esc[16];
        if (c == '"')
            hr_tsb_puts(b, "\\\"");
        else if (c == '\\')
            hr_tsb_puts(b, "\\\\");
        else if (c == '\n')
            hr_tsb_puts(b, "\\n");
        else if (c == '\r')
            hr_tsb_puts(b, "\\r");
        else if (c == '\t')
            hr_tsb_puts(b, "\\t");
        else if (c == '\b')
            hr_tsb_puts(b, "\\b");
        else if (c == '\f')
            hr_tsb_puts(b, "\\f");
        else if (c < 0x20)
            hr_tsb_put(b, esc, (size_t)snprintf(esc, sizeof esc, "\\u%04x", c));
        else if (c >= 0x80 && ensure_ascii) {
            uint32_t cp = hr_tpl_utf8_next(s, n, &i);
            if (cp >= 0x10000) {
                cp -= 0x10000;
                hr_tsb_put(b, esc,
                           (size_t)snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xD800 + (cp >> 10),
                                            0xDC00 + (cp & 0x3FF)));
            } else
                hr_tsb_put(b, esc, (size_t)snprintf(esc, sizeof esc, "\\u%04x", cp));
            continue;
        } else
            hr_tsb_put(b, (const char *)&c, 1);
        i++;
    }
    hr_tsb_puts(b, "\"");
}

static void json_newline(tsb *b, const tjson_opts *o, int depth) {
    hr_tsb_puts(b, "\n");
    for (int i = 0; i < depth; i++)
        hr_tsb_puts(b, o->indent);
}

static hr_err *write_json_list(tsb *b, const tv *v, const tjson_opts *o, int depth) {
    if (v->list.n == 0) return hr_tsb_puts(b, "[]"), NULL;
    hr_tsb_puts(b, "[");
    for (size_t i = 0; i < v->list.n; i++) {
        if (i) hr_tsb_puts(b, o->item_sep);
        if (o->indent) json_newline(b, o, depth + 1);
        HR_TRY(hr_tv_write_json(b, v->list.items[i], o, depth + 1));
    }
    if (o->indent) json_newline(b, o, depth);
    hr_tsb_puts(b, "]");
    return NULL;
}

static hr_err *write_json_key(tsb *b, const tv *k, const tjson_opts *o) {
    if (k->k == V_STR) return write_json_str(b, k->str.s, k->str.n, o->ensure_ascii), NULL;
    if (k->k == V_INT || k->k == V_FLOAT || k->k == V_BOOL || k->k == V_NONE) {
        hr_tsb_puts(b, "\"");
        if (k->k == V_BOOL)
            hr_tsb_puts(b, k->b ? "true" : "false");
        else if (k->k == V_NONE)
            hr_tsb_puts(b, "null");
        else
            hr_tv_write_str(b, k);
        hr_tsb_puts(b, "\"");
        return NULL;
    }
    return hr_errf("keys must be str, int, float, bool or None, not %s", hr_tv_type_name(k));
}

static size_t *sorted_order(const tv *v, int sort) {
    size_t n = v->dict->n, *ord = malloc((n ? n : 1) * sizeof *ord);
    if (!ord) return NULL;
    for (size_t i = 0; i < n; i++)
        ord[i] = i;
    for (size_t i = 1; sort && i < n; i++) /* insertion sort: stable, dicts are small */
        for (size_t j = i; j > 0; j--) {
            int c = 0;
            hr_err *e = hr_tv_compare(v->dict->keys[ord[j - 1]], v->dict->keys[ord[j]], "<", &c);
            hr_err_free(e);
            if (c <= 0) break;
            size_t t = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = t;
        }
    return ord;
}

static hr_err *write_json_dict(tsb *b, const tv *v, const tjson_opts *o, int depth) {
    if (v->dict->n == 0) return hr_tsb_puts(b, "{}"), NULL;
    size_t *ord = sorted_order(v, o->sort_keys);
    if (!ord) return hr_err_oom();
    hr_err *e = NULL;
    hr_tsb_puts(b, "{");
    for (size_t i = 0; i < v->dict->n && !e; i++) {
        if (i) hr_tsb_puts(b, o->item_sep);
        if (o->indent) json_newline(b, o, depth + 1);
        e = write_json_key(b, v->dict->keys[ord[i]], o);
        hr_tsb_puts(b, o->key_sep);
        if (!e) e = hr_tv_write_json(b, v->dict->vals[ord[i]], o, depth + 1);
    }
    free(ord);
    if (e) return e;
    if (o->indent) json_newline(b, o, depth);
    hr_tsb_puts(b, "}");
    return NULL;
}

hr_err *hr_tv_write_json(tsb *b, const tv *v, const tjson_opts *o, int depth) {
    if (depth > TPL_MAX_DEPTH)
        return hr_tpl_limit("tojson: a value nested more than %d levels deep", TPL_MAX_DEPTH);
    switch (v->k) {
    case V_NONE: hr_tsb_puts(b, "null"); return NULL;
    case V_BOOL: hr_tsb_puts(b, v->b ? "true" : "false"); return NULL;
    case V_INT: write_int(b, v->i); return NULL;
    case V_FLOAT:
        if (isnan(v->f))
            hr_tsb_puts(b, "NaN");
        else if (isinf(v->f))
            hr_tsb_puts(b, v->f < 0 ? "-Infinity" : "Infinity");
        else
            write_float(b, v->f);
        return NULL;
    case V_STR: write_json_str(b, v->str.s, v->str.n, o->ensure_ascii); return NULL;
    case V_LIST: return write_json_list(b, v, o, depth);
    case V_DICT:
        if (!v->dict->is_ns && !v->dict->is_loop) return write_json_dict(b, v, o, depth);
        break;
    default: break;
    }
    return hr_errf("Object of type %s is not JSON serializable", hr_tv_type_name(v));
}
