/* Tool-call bodies of each model family into (name, arguments JSON): Hermes/Qwen3 and
 * Llama 3.1 JSON objects, Qwen3-Coder XML (<function=f><parameter=p>v</parameter>), and
 * Gemma's python-call syntax inside ```tool_code (name(a="x", n=1, ok=True)). Every parser
 * tells "does not parse" (0) from "ran out of memory" (0 and *oom set): a call lost to
 * memory must not come out as text. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "server/output_parse.h"

/* v, or NULL with *oom set when it is NULL for want of memory (not of validity). */
static json_t *loaded(json_t *v, const json_error_t *je, int *oom) {
    if (!v && json_error_code(je) == json_error_out_of_memory) *oom = 1;
    return v;
}

/* v, noting a NULL one as out of memory (its builder cannot fail otherwise). */
static json_t *made(json_t *v, int *oom) {
    if (!v) *oom = 1;
    return v;
}

/* The name and arguments text of a parsed call; 0 (out of memory) when either is NULL. */
static int call_out(const char *n, const json_t *a, char **name, char **args, int *oom) {
    *name = strdup(n);
    *args = hr_json_dumps(a, JSON_COMPACT);
    if (*name && *args) return 1;
    free(*name);
    free(*args);
    *name = *args = NULL;
    *oom = 1;
    return 0;
}

/* {"name": s, "arguments" | "parameters": object or string holding one}. */
static int parse_json_call(const json_t *v, char **name, char **args, int *oom) {
    const char *n = json_string_value(json_object_get(v, "name"));
    const json_t *a = json_object_get(v, "arguments");
    if (!a) a = json_object_get(v, "parameters");
    if (!n || !json_is_object(v)) return 0;
    json_t *parsed = NULL;
    json_error_t je;
    if (json_is_string(a)) a = parsed = loaded(json_loads(json_string_value(a), 0, &je), &je, oom);
    if (!a && !*oom) a = parsed = made(json_object(), oom);
    int ok = json_is_object(a) && call_out(n, a, name, args, oom);
    json_decref(parsed);
    return ok;
}

static int parse_json_body(const char *body, size_t len, char **name, char **args, int *oom) {
    json_error_t je;
    json_t *v = loaded(json_loadb(body, len, 0, &je), &je, oom);
    int ok = v && parse_json_call(v, name, args, oom);
    json_decref(v);
    return ok;
}

/* Whether s[0..n) is valid UTF-8 (a JSON key or string as it is); 0 with *oom set when
 * that could not be found out. */
static int utf8_text(const char *s, size_t n, int *oom) {
    json_t *t = made(hr_json_string_lossy(s, n), oom);
    int same = t && json_string_length(t) == n && !memcmp(json_string_value(t), s, n);
    json_decref(t);
    return same;
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
static json_t *xml_value(const char *v, const char *end, const char *type, int *oom) {
    if (v < end && *v == '\n') v++;
    if (end > v && end[-1] == '\n') end--;
    if (!type || strcmp(type, "string")) {
        json_error_t je;
        json_t *j = loaded(json_loadb(v, (size_t)(end - v), JSON_DECODE_ANY, &je), &je, oom);
        if (j || *oom) return j;
    }
    return made(hr_json_string_lossy(v, (size_t)(end - v)), oom);
}

static int parse_xml_params(const char *s, const char *end, const char *fn, const json_t *defs,
                            json_t *args, int *oom) {
    for (;;) {
        s = skip_ws(s, end);
        if (s == end) return 1;
        if ((size_t)(end - s) < 11 || memcmp(s, "<parameter=", 11)) return 0;
        const char *pn = s + 11, *gt = memchr(pn, '>', (size_t)(end - pn));
        if (!gt) return 0;
        const char *close = find(gt + 1, end, "</parameter>");
        if (!close) return 0;
        char *p = strndup(pn, (size_t)(gt - pn));
        if (!p) *oom = 1;
        int bad = !p || !utf8_text(p, strlen(p), oom); /* a name that is not UTF-8 */
        json_t *v = bad ? NULL : xml_value(gt + 1, close, param_type(defs, fn, p), oom);
        if (!bad && (bad = !v || json_object_set_new(args, p, v))) *oom = 1;
        free(p);
        if (bad) return 0;
        s = close + 12;
    }
}

static int parse_xml_body(const char *body, size_t len, const json_t *defs, char **name,
                          char **args, int *oom) {
    const char *end = body + len, *s = skip_ws(body, end);
    if ((size_t)(end - s) < 10 || memcmp(s, "<function=", 10)) return 0;
    const char *gt = memchr(s + 10, '>', (size_t)(end - s - 10));
    const char *close = find(s, end, "</function>");
    if (!gt || !close || close < gt || skip_ws(close + 11, end) != end) return 0;
    size_t nlen = (size_t)(gt - s - 10);
    json_t *a = made(json_object(), oom);
    int ok = a && nlen && utf8_text(s + 10, nlen, oom);
    char *n = ok ? strndup(s + 10, nlen) : NULL;
    if (ok && !n) *oom = 1;
    ok = n && parse_xml_params(gt + 1, close, n, defs, a, oom) && call_out(n, a, name, args, oom);
    free(n);
    json_decref(a);
    return ok;
}

/* ---- Gemma: python call syntax ---- */

typedef struct {
    const char *s, *end;
    int *oom;
} py_cur;

static json_t *py_value(py_cur *c, int depth);

static json_t *py_string(py_cur *c) {
    char q = *c->s++;
    size_t cap = (size_t)(c->end - c->s) + 1, n = 0;
    char *buf = malloc(cap);
    if (!buf) *c->oom = 1;
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
    int valid = utf8_text(buf, n, c->oom);
    json_t *v = valid ? made(json_stringn(buf, n), c->oom) : NULL;
    free(buf);
    return v;
}

static json_t *py_seq(py_cur *c, int depth, char close, int is_dict) {
    json_t *v = made(is_dict ? json_object() : json_array(), c->oom);
    if (!v) return NULL;
    c->s++;
    for (;;) {
        c->s = skip_ws(c->s, c->end);
        if (c->s < c->end && *c->s == close) return c->s++, v;
        json_t *k = is_dict ? py_value(c, depth + 1) : NULL;
        if (is_dict) c->s = skip_ws(c->s, c->end);
        if (is_dict && (!json_is_string(k) || c->s == c->end || *c->s != ':')) {
            json_decref(k);
            break;
        }
        c->s += is_dict;
        json_t *x = py_value(c, depth + 1);
        int bad = !x || (is_dict ? json_object_set_new(v, json_string_value(k), x)
                                 : json_array_append_new(v, x));
        json_decref(k);
        if (bad && x) *c->oom = 1; /* the key is valid UTF-8: py_string checked it */
        if (bad) break;
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
    json_error_t je;
    if (c->s == st) return NULL;
    return loaded(json_loadb(st, (size_t)(c->s - st), JSON_DECODE_ANY, &je), &je, c->oom);
}

static int parse_py_call(const char *body, size_t len, char **name, char **args, int *oom) {
    py_cur c = {skip_ws(body, body + len), body + len, oom};
    while (c.end > c.s && isspace((unsigned char)c.end[-1]))
        c.end--;
    if (c.end - c.s >= 2 && *c.s == '[' && c.end[-1] == ']') c.s++, c.end--;
    const char *n = c.s;
    while (c.s < c.end && (isalnum((unsigned char)*c.s) || *c.s == '_' || *c.s == '.'))
        c.s++;
    if (c.s == n || c.s == c.end || *c.s != '(' || c.end[-1] != ')') return 0;
    const char *paren = c.s;
    json_t *a = made(json_object(), oom);
    if (!a) return 0;
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
        int bad = !key || json_object_set_new(a, key, v); /* the key is ASCII */
        free(key);
        if (bad) {
            if (!key) json_decref(v);
            *oom = 1;
            return json_decref(a), 0;
        }
        c.s = skip_ws(c.s, c.end);
        if (c.s < c.end && *c.s++ != ',') return json_decref(a), 0;
    }
    char *fn = strndup(n, (size_t)(paren - n));
    int ok = fn ? call_out(fn, a, name, args, oom) : (*oom = 1, 0);
    free(fn);
    json_decref(a);
    return ok;
}

/* Appends {"name", "arguments"} to calls and frees both; 0 (out of memory) when it could not. */
static int add_call(json_t *calls, char *name, char *args, int *oom) {
    int bad =
        json_array_append_new(calls, json_pack("{s:s, s:s}", "name", name, "arguments", args));
    free(name);
    free(args);
    if (bad) *oom = 1;
    return !bad;
}

/* Splits "[f(a=1), g(b='x,y')]" (brackets optional) at top-level commas and parses
 * each call. */
static int parse_py_list(const char *s, size_t n, json_t *calls, int *oom) {
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
        if (!parse_py_call(st, (size_t)(p - st), &name, &args, oom)) return 0;
        if (!add_call(calls, name, args, oom)) return 0;
        count++;
        st = p + 1;
    }
    return count > 0 && !quote && !depth;
}

/* JSON calls separated by ';' or whitespace, maybe after <|python_tag|>. */
static int parse_json_seq(const char *s, size_t n, json_t *calls, int *oom) {
    static const char tag[] = "<|python_tag|>";
    size_t off = (size_t)(skip_ws(s, s + n) - s);
    if (n - off >= sizeof tag - 1 && !memcmp(s + off, tag, sizeof tag - 1)) off += sizeof tag - 1;
    for (;;) {
        while (off < n && (isspace((unsigned char)s[off]) || s[off] == ';'))
            off++;
        if (off == n) return json_array_size(calls) > 0;
        json_error_t je;
        json_t *v = loaded(json_loadb(s + off, n - off, JSON_DISABLE_EOF_CHECK, &je), &je, oom);
        char *name, *args;
        int ok = v && parse_json_call(v, &name, &args, oom);
        json_decref(v);
        if (!ok || !add_call(calls, name, args, oom)) return 0;
        off += (size_t)je.position;
    }
}

static int parse_one(const char *s, size_t n, const json_t *defs, json_t *calls, int *oom) {
    char *name = NULL, *args = NULL;
    int ok = n && *s == '<' ? parse_xml_body(s, n, defs, &name, &args, oom)
                            : parse_json_body(s, n, &name, &args, oom);
    return ok && add_call(calls, name, args, oom);
}

json_t *hr_tool_body_parse(hr_tool_format fmt, const char *body, size_t len,
                           const json_t *tool_defs, int *oom) {
    const char *s = skip_ws(body, body + len);
    size_t n = len - (size_t)(s - body);
    *oom = 0;
    json_t *calls = made(json_array(), oom);
    int ok = 0;
    if (calls && fmt == HR_TOOLS_QWEN)
        ok = parse_one(s, n, tool_defs, calls, oom);
    else if (calls && fmt == HR_TOOLS_LLAMA3)
        ok = parse_json_seq(s, n, calls, oom);
    else if (calls && fmt == HR_TOOLS_GEMMA)
        ok = n && *s == '{' ? parse_json_seq(s, n, calls, oom) : parse_py_list(s, n, calls, oom);
    if (!ok || *oom) {
        json_decref(calls);
        return NULL;
    }
    return calls;
}
