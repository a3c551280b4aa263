/* The grammar a request's output follows (hr_request_set_grammar): a forced tool_choice as
 * the family's tool-call markup whose arguments follow each tool's schema, else the output
 * spec (response_format and the like), else — when a tool is strict — a lazy grammar over
 * the calls that starts at the family's call-opening token. Tool schemas a forced call
 * cannot enforce fall back to any JSON object for tools not marked strict (the call still
 * parses); a strict tool's schema must compile. Compiled grammars come from the server's
 * cache (grammar_cache.h), keyed by the grammar text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "grammar/grammar.h"
#include "grammar/grammar_cache.h"
#include "grammar/schema.h"
#include "grammar/text_buf.h"
#include "server/request.h"

static hr_err *compile(hr_grammar_cache *gc, hr_gbuf *b, const char *field, hr_grammar **out) {
    if (b->oom) return hr_err_oom();
    hr_err *e = hr_grammar_cache_get(gc, HR_GRAMMAR_SRC_GBNF, b->p, b->n, out);
    if (!e) return NULL;
    hr_err *w = hr_errf("request: \"%s\": %s", field, hr_err_msg(e));
    hr_err_free(e);
    return w;
}

/* response_format "json_schema" and the like. */
static hr_err *spec_grammar(hr_grammar_cache *gc, const hr_output_spec *o, hr_grammar **g) {
    hr_schema_opts so = {0};
    char *text = NULL;
    size_t len = 0;
    hr_err *e = NULL;
    hr_gbuf b = {0};
    switch (o->kind) {
    case HR_OUT_JSON_OBJECT: e = hr_schema_any_object_gbnf(&so, &text, &len); break;
    case HR_OUT_JSON_SCHEMA: e = hr_schema_to_gbnf(o->value, &so, &text, &len); break;
    case HR_OUT_REGEX:
        e = hr_grammar_cache_get(gc, HR_GRAMMAR_SRC_REGEX, o->text, strlen(o->text), g);
        break;
    case HR_OUT_GBNF:
        e = hr_grammar_cache_get(gc, HR_GRAMMAR_SRC_GBNF, o->text, strlen(o->text), g);
        break;
    case HR_OUT_CHOICE:
        hr_gbuf_puts(&b, "root ::= ");
        for (size_t i = 0; i < json_array_size(o->value); i++) {
            const json_t *c = json_array_get(o->value, i);
            if (i) hr_gbuf_puts(&b, " | ");
            hr_gbuf_lit(&b, json_string_value(c), json_string_length(c));
        }
        hr_gbuf_puts(&b, "\n");
        e = compile(gc, &b, o->field, g);
        hr_gbuf_free(&b);
        return e;
    case HR_OUT_FREE: return NULL;
    }
    if (!e && text) e = hr_grammar_cache_get(gc, HR_GRAMMAR_SRC_GBNF, text, len, g);
    free(text);
    if (!e) return NULL;
    hr_err *w = hr_errf("request: \"%s\": %s", o->field, hr_err_msg(e));
    hr_err_free(e);
    return w;
}

static const json_t *tool_fn(const json_t *tool) {
    const json_t *f = json_object_get(tool, "function");
    return f ? f : tool;
}

static int tool_strict(const json_t *tool) {
    return json_is_true(json_object_get(tool_fn(tool), "strict"));
}

/* Appends tool i's rule "tc-fI ::= NAME ws , ws KEY ws : ws ARGS": its name, then its
 * arguments under key ("arguments" or "parameters") following its schema. */
static hr_err *tool_rule(hr_gbuf *b, const json_t *tool, size_t i, const char *key) {
    const json_t *fn = tool_fn(tool);
    const json_t *params = json_object_get(fn, "parameters");
    json_t *any = NULL;
    if (!json_is_object(params)) params = any = json_pack("{s:s}", "type", "object");
    char prefix[32], *text = NULL;
    size_t len = 0;
    snprintf(prefix, sizeof prefix, "t%zu-", i);
    hr_schema_opts so = {0};
    hr_err *e =
        params ? hr_schema_to_gbnf_prefixed(params, &so, prefix, &text, &len) : hr_err_oom();
    if (e && !tool_strict(tool)) { /* the call still parses; its arguments are any object */
        hr_err_free(e);
        json_decref(any);
        params = any = json_pack("{s:s}", "type", "object");
        e = params ? hr_schema_to_gbnf_prefixed(params, &so, prefix, &text, &len) : hr_err_oom();
    }
    json_decref(any);
    if (e) {
        hr_err *w = hr_errf("request: \"tools[%zu]\" parameters: %s", i, hr_err_msg(e));
        hr_err_free(e);
        return w;
    }
    char head[64];
    snprintf(head, sizeof head, "tc-f%zu ::= ", i);
    hr_gbuf_puts(b, head);
    char *name = hr_json_dumps(json_object_get(fn, "name"), JSON_ENCODE_ANY);
    hr_gbuf_lit(b, name ? name : "\"\"", name ? strlen(name) : 2);
    free(name);
    char tail[96];
    snprintf(tail, sizeof tail, " tc-ws \",\" tc-ws \"\\\"%s\\\"\" tc-ws \":\" tc-ws %sroot\n", key,
             prefix);
    hr_gbuf_puts(b, tail);
    hr_gbuf_add(b, text, len);
    hr_gbuf_puts(b, "\n");
    free(text);
    return NULL;
}

/* The calls' grammar: root is what follows `open` (the trigger for a lazy grammar, else the
 * whole output). */
static hr_err *calls_grammar(hr_grammar_cache *gc, const hr_api_request *r, hr_tool_format fmt,
                             int lazy, hr_grammar **g) {
    const json_t *tools = json_object_get(r->chat, "tools");
    int qwen = fmt == HR_TOOLS_QWEN;
    const char *key = qwen ? "arguments" : "parameters";
    hr_gbuf b = {0};
    hr_err *e = NULL;
    if (lazy)
        hr_gbuf_puts(&b, "root ::= tc-body\n");
    else if (r->tool_choice == HR_TOOL_CHOICE_NAMED || !qwen)
        hr_gbuf_puts(&b, "root ::= tc-call\n");
    else
        hr_gbuf_puts(&b, "root ::= tc-call (\"\\n\" tc-call)*\n");
    hr_gbuf_puts(
        &b, qwen
                ? "tc-call ::= \"<tool_call>\" tc-body\n"
                  "tc-body ::= \"\\n{\" tc-ws \"\\\"name\\\"\" tc-ws \":\" tc-ws tc-fn tc-ws "
                  "\"}\\n</tool_call>\"\n"
                : "tc-call ::= \"{\" tc-ws \"\\\"name\\\"\" tc-ws \":\" tc-ws tc-fn tc-ws \"}\"\n");
    hr_gbuf_puts(&b, "tc-ws ::= [ \\t\\n]{0,8}\ntc-fn ::= ");
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(tools); i++) {
        const char *name =
            json_string_value(json_object_get(tool_fn(json_array_get(tools, i)), "name"));
        if (r->tool_choice == HR_TOOL_CHOICE_NAMED && (!name || strcmp(name, r->tool_choice_name)))
            continue;
        char alt[40];
        snprintf(alt, sizeof alt, "%stc-f%zu", n++ ? " | " : "", i);
        hr_gbuf_puts(&b, alt);
    }
    hr_gbuf_puts(&b, "\n");
    for (size_t i = 0; !e && i < json_array_size(tools); i++) {
        const json_t *t = json_array_get(tools, i);
        const char *name = json_string_value(json_object_get(tool_fn(t), "name"));
        if (r->tool_choice == HR_TOOL_CHOICE_NAMED && (!name || strcmp(name, r->tool_choice_name)))
            continue;
        e = tool_rule(&b, t, i, key);
    }
    if (!e) e = compile(gc, &b, "tools", g);
    hr_gbuf_free(&b);
    return e;
}

static int any_strict(const json_t *tools) {
    for (size_t i = 0; i < json_array_size(tools); i++)
        if (tool_strict(json_array_get(tools, i))) return 1;
    return 0;
}

hr_err *hr_request_set_grammar(hr_api_request *r, hr_tool_format fmt, hr_grammar_cache *gc) {
    int forced = r->use_tools && r->tool_choice != HR_TOOL_CHOICE_AUTO;
    if (forced) /* Gemma's python-syntax calls keep the prefilled opening (tool_prefill.c) */
        return fmt == HR_TOOLS_QWEN || fmt == HR_TOOLS_LLAMA3
                   ? calls_grammar(gc, r, fmt, 0, &r->grammar)
                   : NULL;
    if (r->output.kind != HR_OUT_FREE) return spec_grammar(gc, &r->output, &r->grammar);
    if (r->use_tools && !forced && fmt == HR_TOOLS_QWEN &&
        any_strict(json_object_get(r->chat, "tools"))) {
        HR_TRY(calls_grammar(gc, r, fmt, 1, &r->grammar));
        r->grammar_lazy = 1;
        r->grammar_trigger = "<tool_call>";
    }
    return NULL;
}
