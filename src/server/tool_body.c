/* Tool-call bodies of each model family into (name, arguments JSON): Hermes/Qwen3 and
 * Llama 3.1 JSON objects, Qwen3-Coder XML (<function=f><parameter=p>v</parameter>), and
 * Gemma's python-call syntax inside ```tool_code (name(a="x", n=1, ok=True)). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "server/output_parse.h"

static char *dump_args(const json_t *args) { return hr_json_dumps(args, JSON_COMPACT); }

/* {"name": s, "arguments" | "parameters": object or string holding one}. */
static int parse_json_call(const json_t *v, char **name, char **args) {
    const char *n = json_string_value(json_object_get(v, "name"));
    const json_t *a = json_object_get(v, "arguments");
    if (!a) a = json_object_get(v, "parameters");
    if (!n || !json_is_object(v)) return 0;
    json_t *parsed = NULL;
    if (json_is_string(a)) a = parsed = json_loads(json_string_value(a), 0, NULL);
    if (!a) a = parsed = json_object();
    int ok = json_is_object(a);
    if (ok) {
        *name = strdup(n);
        *args = dump_args(a);
    }
    json_decref(parsed);
    return ok && *name && *args;
}

static int parse_json_body(const char *body, size_t len, char **name, char **args) {
    json_t *v = json_loadb(body, len, 0, NULL);
    int ok = v && parse_json_call(v, name, args);
    json_decref(v);
    return ok;
}

static const char *skip_ws(const char *s, const char *end) {
    while (s < end && isspace((unsigned char)*s))
        s++;
    return s;
}

static const char *find(const char *s, const char *end, const char *needle) {
    size_t n = strlen(needle);
    for (; s + n <= end; s++)
        if (!memcmp(s, needle, n)) return s;
    return NULL;
}

/* The JSON-schema type of a tool's parameter, or NULL. */
static const char *param_type(const json_t *defs, const char *fn, const char *param) {
    size_t i;
    const json_t *t;
    json_array_foreach(defs, i, t) {
        const json_t *f = json_object_get(t, "function");
        const char *n = json_string_value(json_object_get(f, "name"));
        if (!n || strcmp(n, fn)) continue;
        const json_t *props = json_object_get(json_object_get(f, "parameters"), "properties");
        return json_string_value(json_object_get(json_object_get(props, param), "type"));
    }
    return NULL;
}

/* A parameter value: a string for string-typed (or unknown, non-JSON) parameters,
 * otherwise its JSON value. One newline either side is markup, not value. */
static json_t *xml_value(const char *v, const char *end, const char *type) {
    if (v < end && *v == '\n') v++;
    if (end > v && end[-1] == '\n') end--;
    if (!type || strcmp(type, "string")) {
        json_t *j = json_loadb(v, (size_t)(end - v), JSON_DECODE_ANY, NULL);
        if (j) return j;
    }
    return hr_json_string_lossy(v, (size_t)(end - v));
}

static int parse_xml_params(const char *s, const char *end, const char *fn, const json_t *defs,
                            json_t *args) {
    for (;;) {
        s = skip_ws(s, end);
        if (s == end) return 1;
        if ((size_t)(end - s) < 11 || memcmp(s, "<parameter=", 11)) return 0;
        const char *pn = s + 11, *gt = memchr(pn, '>', (size_t)(end - pn));
        if (!gt) return 0;
        const char *close = find(gt + 1, end, "</parameter>");
        if (!close) return 0;
        char *p = strndup(pn, (size_t)(gt - pn));
        int bad =
            !p || json_object_set_new(args, p, xml_value(gt + 1, close, param_type(defs, fn, p)));
        free(p);
        if (bad) return 0; /* a name that is not UTF-8 */
        s = close + 12;
    }
}

static int parse_xml_body(const char *body, size_t len, const json_t *defs, char **name,
                          char **args) {
    const char *end = body + len, *s = skip_ws(body, end);
    if ((size_t)(end - s) < 10 || memcmp(s, "<function=", 10)) return 0;
    const char *gt = memchr(s + 10, '>', (size_t)(end - s - 10));
    const char *close = find(s, end, "</function>");
    if (!gt || !close || close < gt || skip_ws(close + 11, end) != end) return 0;
    char *n = strndup(s + 10, (size_t)(gt - s - 10));
    json_t *a = json_object(), *valid = n ? json_string(n) : NULL;
    int ok = valid && *n && parse_xml_params(gt + 1, close, n, defs, a);
    json_decref(valid);
    if (ok) {
        *name = n;
        *args = dump_args(a);
    } else {
        free(n);
    }
    json_decref(a);
    return ok && *args;
}

/* ---- Gemma: python call syntax ---- */

typedef struct {
    const char *s, *end;
} py_cur;

static json_t *py_value(py_cur *c, int depth);

static json_t *py_string(py_cur *c) {
    char q = *c->s++;
    size_t cap = (size_t)(c->end - c->s) + 1, n = 0;
    char *buf = malloc(cap);
    while (buf && c->s < c->end && *c->s != q) {
        char ch = *c->s++;
        if (ch == '\\' && c->s < c->end) {
            ch = *c->s++;
            ch = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch;
        }
        buf[n++] = ch;
    }
    if (!buf || c->s == c->end) return free(buf), NULL;
    c->s++;
    json_t *v = json_stringn(buf, n);
    free(buf);
    return v;
}

static json_t *py_seq(py_cur *c, int depth, char close, int is_dict) {
    json_t *v = is_dict ? json_object() : json_array();
    c->s++;
    for (;;) {
        c->s = skip_ws(c->s, c->end);
        if (c->s < c->end && *c->s == close) return c->s++, v;
        json_t *k = is_dict ? py_value(c, depth + 1) : NULL;
        if (is_dict) {
            c->s = skip_ws(c->s, c->end);
            if (!json_is_string(k) || c->s == c->end || *c->s != ':') break;
            c->s++;
        }
        json_t *x = py_value(c, depth + 1);
        if (!x) break;
        if (is_dict)
            json_object_set_new(v, json_string_value(k), x);
        else
            json_array_append_new(v, x);
        json_decref(k);
        k = NULL;
        c->s = skip_ws(c->s, c->end);
        if (c->s < c->end && *c->s == ',')
            c->s++;
        else if (c->s == c->end || *c->s != close)
            break;
    }
    json_decref(v);
    return NULL;
}

static json_t *py_value(py_cur *c, int depth) {
    c->s = skip_ws(c->s, c->end);
    if (c->s == c->end || depth > 32) return NULL;
    char ch = *c->s;
    if (ch == '"' || ch == '\'') return py_string(c);
    if (ch == '[') return py_seq(c, depth, ']', 0);
    if (ch == '{') return py_seq(c, depth, '}', 1);
    static const struct {
        const char *word;
        int kind;
    } words[] = {{"True", 1}, {"False", 2}, {"None", 3}, {"true", 1}, {"false", 2}, {"null", 3}};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        size_t n = strlen(words[i].word);
        if ((size_t)(c->end - c->s) >= n && !memcmp(c->s, words[i].word, n)) {
            c->s += n;
            return words[i].kind == 1   ? json_true()
                   : words[i].kind == 2 ? json_false()
                                        : json_null();
        }
    }
    const char *st = c->s;
    while (c->s < c->end && (isdigit((unsigned char)*c->s) || strchr("+-.eE", *c->s)))
        c->s++;
    return c->s > st ? json_loadb(st, (size_t)(c->s - st), JSON_DECODE_ANY, NULL) : NULL;
}

static int parse_py_call(const char *body, size_t len, char **name, char **args) {
    py_cur c = {skip_ws(body, body + len), body + len};
    while (c.end > c.s && isspace((unsigned char)c.end[-1]))
        c.end--;
    if (c.end - c.s >= 2 && *c.s == '[' && c.end[-1] == ']') c.s++, c.end--;
    const char *n = c.s;
    while (c.s < c.end && (isalnum((unsigned char)*c.s) || *c.s == '_' || *c.s == '.'))
        c.s++;
    if (c.s == n || c.s == c.end || *c.s != '(' || c.end[-1] != ')') return 0;
    const char *paren = c.s;
    json_t *a = json_object();
    c.s++;
    c.end--;
    for (;;) {
        c.s = skip_ws(c.s, c.end);
        if (c.s == c.end) break;
        const char *k = c.s;
        while (c.s < c.end && (isalnum((unsigned char)*c.s) || *c.s == '_'))
            c.s++;
        const char *ke = c.s;
        c.s = skip_ws(c.s, c.end);
        if (ke == k || c.s == c.end || *c.s != '=') return json_decref(a), 0;
        c.s++;
        json_t *v = py_value(&c, 0);
        if (!v) return json_decref(a), 0;
        char *key = strndup(k, (size_t)(ke - k));
        json_object_set_new(a, key, v);
        free(key);
        c.s = skip_ws(c.s, c.end);
        if (c.s < c.end && *c.s++ != ',') return json_decref(a), 0;
    }
    *name = strndup(n, (size_t)(paren - n));
    *args = dump_args(a);
    json_decref(a);
    return *name && *args;
}

/* Splits "[f(a=1), g(b='x,y')]" (brackets optional) at top-level commas and parses
 * each call. */
static int parse_py_list(const char *s, size_t n, json_t *calls) {
    const char *end = s + n;
    while (end > s && isspace((unsigned char)end[-1]))
        end--;
    if (end - s >= 2 && *s == '[' && end[-1] == ']') s++, end--;
    int depth = 0, count = 0;
    char quote = 0;
    for (const char *st = s, *p = s; p <= end; p++) {
        if (p < end && quote) {
            if (*p == '\\')
                p++;
            else if (*p == quote)
                quote = 0;
            continue;
        }
        if (p < end && (*p == '"' || *p == '\''))
            quote = *p;
        else if (p < end && strchr("([{", *p))
            depth++;
        else if (p < end && strchr(")]}", *p))
            depth--;
        if (p < end && (depth || *p != ',')) continue;
        char *name, *args;
        if (!parse_py_call(st, (size_t)(p - st), &name, &args)) return 0;
        json_array_append_new(calls, json_pack("{s:s, s:s}", "name", name, "arguments", args));
        free(name);
        free(args);
        count++;
        st = p + 1;
    }
    return count > 0 && !quote && !depth;
}

/* JSON calls separated by ';' or whitespace, maybe after <|python_tag|>. */
static int parse_json_seq(const char *s, size_t n, json_t *calls) {
    static const char tag[] = "<|python_tag|>";
    size_t off = (size_t)(skip_ws(s, s + n) - s);
    if (n - off >= sizeof tag - 1 && !memcmp(s + off, tag, sizeof tag - 1)) off += sizeof tag - 1;
    for (;;) {
        while (off < n && (isspace((unsigned char)s[off]) || s[off] == ';'))
            off++;
        if (off == n) return json_array_size(calls) > 0;
        json_error_t je;
        json_t *v = json_loadb(s + off, n - off, JSON_DISABLE_EOF_CHECK, &je);
        char *name, *args;
        int ok = v && parse_json_call(v, &name, &args);
        json_decref(v);
        if (!ok) return 0;
        json_array_append_new(calls, json_pack("{s:s, s:s}", "name", name, "arguments", args));
        free(name);
        free(args);
        off += (size_t)je.position;
    }
}

static int parse_one(const char *s, size_t n, const json_t *defs, json_t *calls) {
    char *name = NULL, *args = NULL;
    int ok = n && *s == '<' ? parse_xml_body(s, n, defs, &name, &args)
                            : parse_json_body(s, n, &name, &args);
    if (ok) json_array_append_new(calls, json_pack("{s:s, s:s}", "name", name, "arguments", args));
    free(name);
    free(args);
    return ok;
}

json_t *hr_tool_body_parse(hr_tool_format fmt, const char *body, size_t len,
                           const json_t *tool_defs) {
    const char *s = skip_ws(body, body + len);
    size_t n = len - (size_t)(s - body);
    json_t *calls = json_array();
    int ok = 0;
    if (fmt == HR_TOOLS_QWEN)
        ok = parse_one(s, n, tool_defs, calls);
    else if (fmt == HR_TOOLS_LLAMA3)
        ok = parse_json_seq(s, n, calls);
    else if (fmt == HR_TOOLS_GEMMA)
        ok = n && *s == '{' ? parse_json_seq(s, n, calls) : parse_py_list(s, n, calls);
    if (!ok) {
        json_decref(calls);
        return NULL;
    }
    return calls;
}
