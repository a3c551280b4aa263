/* tool_choice "required" / named without constrained decoding: the assistant turn is
 * prefilled with the opening of a tool call in the model family's markup (the inverse of
 * what output_parse.c recognises), so the model can only continue inside a call. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "server/request.h"

/* Gemma's calls are python syntax: the name must read as one (tool_body.c's parser). */
static int python_name(const char *s) {
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.') return 0;
    return 1;
}

/* The opening for fmt; name (a JSON string literal for the JSON families, the bare name
 * for Gemma) is NULL for "required". */
static char *opening(hr_tool_format fmt, const char *name) {
    const char *f = NULL;
    if (fmt == HR_TOOLS_QWEN)
        f = name ? "<tool_call>\n{\"name\": %s, \"arguments\": " : "<tool_call>\n";
    if (fmt == HR_TOOLS_LLAMA3) f = name ? "{\"name\": %s, \"parameters\": " : "{\"name\": \"";
    if (fmt == HR_TOOLS_GEMMA) f = name ? "```tool_code\n%s(" : "```tool_code\n";
    size_t cap = strlen(f) + (name ? strlen(name) : 0) + 1;
    char *s = malloc(cap);
    if (s) snprintf(s, cap, f, name);
    return s;
}

hr_err *hr_request_set_prefill(hr_api_request *r, hr_tool_format fmt) {
    if (r->tool_choice == HR_TOOL_CHOICE_AUTO || r->grammar) return NULL;
    if (fmt == HR_TOOLS_NONE)
        return hr_errf("request: this model's chat template has no known tool-call format, so "
                       "\"tool_choice\" cannot force a tool call; use \"auto\"");
    const char *name = r->tool_choice_name;
    char *quoted = NULL;
    if (name && fmt == HR_TOOLS_GEMMA && !python_name(name))
        return hr_errf("request: \"tool_choice\" names \"%s\", which Gemma's tool_code call syntax "
                       "cannot spell (letters, digits, _ and . only)",
                       name);
    if (name && fmt != HR_TOOLS_GEMMA) {
        json_t *j = json_string(name);
        quoted = j ? hr_json_dumps(j, JSON_ENCODE_ANY) : NULL;
        json_decref(j);
        if (!quoted) return hr_err_oom();
        name = quoted;
    }
    r->prefill = opening(fmt, name);
    free(quoted);
    return r->prefill ? NULL : hr_err_oom();
}
