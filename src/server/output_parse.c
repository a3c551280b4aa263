/* The incremental output parser (output_parse.h). Invariant: buf holds exactly the text
 * not yet emitted. In TEXT and THINK modes everything but a tail that could begin a
 * marker is emitted at once; in TOOL mode the body accumulates until the close marker;
 * WHOLE mode (Llama 3 JSON calls) holds the whole output until finish. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "server/output_parse.h"

typedef enum { MODE_TEXT, MODE_THINK, MODE_TOOL, MODE_WHOLE } mode;

struct hr_out_parser {
    hr_out_config cfg;
    hr_out_fn fn;
    void *ud;
    mode mode;
    char *buf;
    size_t len, cap;
    int n_tools;
    int seen_text;    /* non-blank content was emitted (whole-output call detection) */
    int strip_nl;     /* drop newlines that follow </think> */
    const char *open; /* tool markers of the family, NULL when none */
    const char *close;
    int json_body; /* tool bodies are JSON: a close marker inside one of its strings is text */
    int naive;     /* at finish, a body whose strings never closed: the first marker ends it */
    int oom;       /* a tool call was lost for want of memory: feed and finish say so */
    /* find_close's progress through the current tool body */
    size_t scan;     /* bytes of buf read */
    int kind;        /* 0 (not known yet: blank so far), BODY_JSON or BODY_OTHER */
    int in_str, esc; /* at scan: inside a JSON string, after its backslash */
};

enum { BODY_JSON = 1, BODY_OTHER };

#define THINK_OPEN "<think>"
#define THINK_CLOSE "</think>"
#define PYTHON_TAG "<|python_tag|>"

hr_err *hr_out_parser_create(const hr_out_config *cfg, hr_out_fn fn, void *ud,
                             hr_out_parser **out) {
    hr_out_parser *p = calloc(1, sizeof *p);
    if (!p) return hr_err_oom();
    p->cfg = *cfg;
    p->fn = fn;
    p->ud = ud;
    p->mode = cfg->reasoning && cfg->in_reasoning ? MODE_THINK : MODE_TEXT;
    if (cfg->tools == HR_TOOLS_QWEN)
        p->open = "<tool_call>", p->close = "</tool_call>", p->json_body = 1;
    if (cfg->tools == HR_TOOLS_GEMMA) p->open = "```tool_code", p->close = "```";
    *out = p;
    return NULL;
}

void hr_out_parser_free(hr_out_parser *p) {
    if (!p) return;
    free(p->buf);
    free(p);
}

int hr_out_parser_tool_calls(const hr_out_parser *p) { return p->n_tools; }

static void emit_text(hr_out_parser *p, hr_out_kind kind, const char *s, size_t n) {
    if (kind == HR_OUT_CONTENT && p->strip_nl) {
        while (n && (*s == '\n' || *s == '\r'))
            s++, n--;
        if (n) p->strip_nl = 0;
    }
    if (!n) return;
    if (kind == HR_OUT_CONTENT)
        for (size_t i = 0; i < n && !p->seen_text; i++)
            p->seen_text = !isspace((unsigned char)s[i]);
    hr_out_event ev = {.kind = kind, .text = s, .len = n};
    p->fn(p->ud, &ev);
}

static void consume(hr_out_parser *p, size_t n) {
    memmove(p->buf, p->buf + n, p->len - n);
    p->len -= n;
}

static const char *find(const char *s, size_t len, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (!memcmp(s + i, needle, n)) return s + i;
    return NULL;
}

/* Length of the longest tail of s that is a proper prefix of marker. */
static size_t partial_tail(const char *s, size_t len, const char *marker) {
    size_t m = strlen(marker);
    for (size_t k = m - 1 < len ? m - 1 : len; k > 0; k--)
        if (!memcmp(s + len - k, marker, k)) return k;
    return 0;
}

static void emit_tool(hr_out_parser *p, const char *name, const char *args) {
    hr_out_event ev = {
        .kind = HR_OUT_TOOL_CALL, .tool_index = p->n_tools++, .tool_name = name, .tool_args = args};
    p->fn(p->ud, &ev);
}

/* Emits each call of a parsed body; returns 0 (nothing emitted) when it does not parse,
 * or when memory ran out (p->oom: the text must not stand in for the call). */
static int emit_calls(hr_out_parser *p, const char *body, size_t n) {
    int oom;
    json_t *calls = hr_tool_body_parse(p->cfg.tools, body, n, p->cfg.tool_defs, &oom);
    p->oom |= oom;
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c) emit_tool(p, json_string_value(json_object_get(c, "name")),
                                              json_string_value(json_object_get(c, "arguments")));
    json_decref(calls);
    return calls != NULL;
}

/* A closed (or, at finish, unclosed) tool body; falls back to content as written. */
static void tool_body(hr_out_parser *p, const char *body, size_t n, int closed) {
    if (emit_calls(p, body, n) || p->oom) return;
    emit_text(p, HR_OUT_CONTENT, p->open, strlen(p->open));
    emit_text(p, HR_OUT_CONTENT, body, n);
    if (closed) emit_text(p, HR_OUT_CONTENT, p->close, strlen(p->close));
}

/* Llama 3 and Gemma: a whole output that starts like a call ({, <|python_tag|>, or for
 * Gemma [) is held to the end and parsed then. Returns 1 when the mode is decided (or
 * nothing to decide), 0 to wait for more text. */
static int whole_detect(hr_out_parser *p) {
    hr_tool_format f = p->cfg.tools;
    if ((f != HR_TOOLS_LLAMA3 && f != HR_TOOLS_GEMMA) || p->seen_text) return 1;
    size_t i = 0;
    while (i < p->len && isspace((unsigned char)p->buf[i]))
        i++;
    if (i == p->len) return 0;
    size_t rest = p->len - i, tag = strlen(PYTHON_TAG);
    char c = p->buf[i];
    if (c == '{' || (f == HR_TOOLS_GEMMA && c == '[') ||
        (f == HR_TOOLS_LLAMA3 && rest >= tag && !memcmp(p->buf + i, PYTHON_TAG, tag))) {
        p->mode = MODE_WHOLE;
        return 1;
    }
    if (f == HR_TOOLS_LLAMA3 && rest < tag && !memcmp(p->buf + i, PYTHON_TAG, rest)) return 0;
    p->seen_text = 1;
    return 1;
}

/* A new tool body starts: nothing of it scanned yet. */
static void body_start(hr_out_parser *p) {
    p->scan = 0;
    p->kind = 0;
    p->in_str = p->esc = 0;
}

/* One step in TEXT mode; returns 0 when it needs more input. */
static int step_text(hr_out_parser *p) {
    if (!whole_detect(p)) return 0;
    if (p->mode == MODE_WHOLE) return 1;
    const char *think = p->cfg.reasoning ? find(p->buf, p->len, THINK_OPEN) : NULL;
    const char *tool = p->open ? find(p->buf, p->len, p->open) : NULL;
    const char *hit = think && (!tool || think < tool) ? think : tool;
    if (hit) {
        emit_text(p, HR_OUT_CONTENT, p->buf, (size_t)(hit - p->buf));
        int is_think = hit == think;
        consume(p, (size_t)(hit - p->buf) + strlen(is_think ? THINK_OPEN : p->open));
        p->mode = is_think ? MODE_THINK : MODE_TOOL;
        if (!is_think) body_start(p);
        return 1;
    }
    size_t hold = p->cfg.reasoning ? partial_tail(p->buf, p->len, THINK_OPEN) : 0;
    size_t h2 = p->open ? partial_tail(p->buf, p->len, p->open) : 0;
    if (h2 > hold) hold = h2;
    emit_text(p, HR_OUT_CONTENT, p->buf, p->len - hold);
    consume(p, p->len - hold);
    return 0;
}

static int step_think(hr_out_parser *p) {
    const char *hit = find(p->buf, p->len, THINK_CLOSE);
    if (hit) {
        emit_text(p, HR_OUT_REASONING, p->buf, (size_t)(hit - p->buf));
        consume(p, (size_t)(hit - p->buf) + strlen(THINK_CLOSE));
        p->mode = MODE_TEXT;
        p->strip_nl = 1;
        return 1;
    }
    size_t hold = partial_tail(p->buf, p->len, THINK_CLOSE);
    emit_text(p, HR_OUT_REASONING, p->buf, p->len - hold);
    consume(p, p->len - hold);
    return 0;
}

/* The close marker that ends the tool body in buf: for a JSON body (one that starts with
 * '{') the first one outside a JSON string (an argument may contain "</tool_call>"), else
 * the first one. The scan goes on from where the last call stopped (scan, in_str, esc), so
 * a body streamed a token at a time is read once. */
static const char *find_close(hr_out_parser *p) {
    size_t i = p->scan, n = strlen(p->close);
    if (!p->kind) {
        while (i < p->len && isspace((unsigned char)p->buf[i]))
            i++;
        if (i == p->len) return NULL; /* blank so far: which kind is not known yet */
        p->kind = p->json_body && !p->naive && p->buf[i] == '{' ? BODY_JSON : BODY_OTHER;
    }
    if (p->kind == BODY_OTHER) {
        const char *hit = find(p->buf + i, p->len - i, p->close);
        if (!hit) p->scan = p->len - i >= n ? p->len - n + 1 : i;
        return hit;
    }
    for (; i < p->len; i++) {
        char c = p->buf[i];
        if (p->in_str) {
            if (p->esc)
                p->esc = 0;
            else if (c == '\\')
                p->esc = 1;
            else if (c == '"')
                p->in_str = 0;
        } else if (c == '"') {
            p->in_str = 1;
        } else if (c == *p->close) {
            size_t have = p->len - i < n ? p->len - i : n;
            if (!memcmp(p->buf + i, p->close, have)) {
                if (have == n) return p->buf + i;
                break; /* a marker may begin here: wait for more */
            }
        }
    }
    p->scan = i;
    return NULL;
}

static int step_tool(hr_out_parser *p) {
    const char *hit = find_close(p);
    if (!hit) return 0;
    tool_body(p, p->buf, (size_t)(hit - p->buf), 1);
    consume(p, (size_t)(hit - p->buf) + strlen(p->close));
    p->mode = MODE_TEXT;
    return 1;
}

hr_err *hr_out_parser_feed(hr_out_parser *p, const char *text, size_t len) {
    if (p->len + len + 1 > p->cap) {
        size_t cap = (p->len + len + 1) * 2;
        char *b = realloc(p->buf, cap);
        if (!b) return hr_err_oom();
        p->buf = b;
        p->cap = cap;
    }
    memcpy(p->buf + p->len, text, len);
    p->len += len;
    for (int more = 1; more && p->len;) {
        if (p->mode == MODE_TEXT)
            more = step_text(p);
        else if (p->mode == MODE_THINK)
            more = step_think(p);
        else if (p->mode == MODE_TOOL)
            more = step_tool(p);
        else
            more = 0;
    }
    return p->oom ? hr_err_oom() : NULL;
}

hr_err *hr_out_parser_finish(hr_out_parser *p) {
    if (p->mode == MODE_TOOL && !p->naive && find(p->buf, p->len, p->close)) {
        /* a string in the body never closed: split at the markers as written instead */
        char *rest = p->buf;
        size_t n = p->len;
        p->buf = NULL;
        p->len = p->cap = 0;
        p->naive = 1;
        body_start(p);
        hr_err *e = hr_out_parser_feed(p, rest, n);
        free(rest);
        if (e) return e;
    }
    if (p->mode == MODE_WHOLE && !emit_calls(p, p->buf, p->len) && !p->oom)
        emit_text(p, HR_OUT_CONTENT, p->buf, p->len);
    else if (p->mode == MODE_TOOL)
        tool_body(p, p->buf, p->len, 0);
    else if (p->mode != MODE_WHOLE)
        emit_text(p, p->mode == MODE_THINK ? HR_OUT_REASONING : HR_OUT_CONTENT, p->buf, p->len);
    p->len = 0;
    p->mode = MODE_TEXT;
    p->naive = 0;
    return p->oom ? hr_err_oom() : NULL;
}

void hr_output_format_detect(const char *src, hr_tool_format *tools, int *reasoning) {
    *reasoning = strstr(src, THINK_OPEN) || strstr(src, THINK_CLOSE);
    if (strstr(src, "<tool_call>"))
        *tools = HR_TOOLS_QWEN;
    else if (strstr(src, PYTHON_TAG) || strstr(src, "<|start_header_id|>"))
        *tools = HR_TOOLS_LLAMA3;
    else if (strstr(src, "<start_of_turn>"))
        *tools = HR_TOOLS_GEMMA;
    else
        *tools = HR_TOOLS_NONE;
}
