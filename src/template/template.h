/* Chat-template rendering: a Jinja interpreter covering what real chat templates use,
 * with the environment transformers' apply_chat_template renders them in (trim_blocks,
 * lstrip_blocks, raise_exception, strftime_now, its tojson). See docs/template.md. */
#ifndef HR_TEMPLATE_TEMPLATE_H
#define HR_TEMPLATE_TEMPLATE_H

#include <jansson.h>

#include "base/err.h"

typedef struct hr_template hr_template;

/* Limits that turn a hostile template into an error instead of a crash or an OOM kill
 * (docs/template.md). Real chat templates are under 20 KB and nest under 20 levels. The
 * depth limit holds at parse time (a template nesting deeper does not load) and while
 * rendering (macro recursion, nested values); at 256 a render needs well under the 512 KiB
 * of a small thread stack. Errors from render-time limits carry HR_E_LIMIT. */
#define HR_TEMPLATE_MAX_SOURCE (1u << 20)        /* bytes of template source */
#define HR_TEMPLATE_MAX_PARSE_MEMORY (64u << 20) /* bytes of a parsed template */
#define HR_TEMPLATE_MAX_DEPTH 256                /* nesting levels (see template.md) */

/* Parses template source. A syntax error says "line L, column C: ...". */
hr_err *hr_template_parse(const char *src, hr_template **out);
void hr_template_free(hr_template *t);

/* Renders with context (a JSON object whose keys become template variables) into a new
 * heap string (*out, caller frees). On error *out is NULL; when the error is the
 * template's own raise_exception(msg), its message is exactly msg and *raised (if not
 * NULL) is set to 1, otherwise 0. */
hr_err *hr_template_render(const hr_template *t, const json_t *context, char **out, int *raised);

/* A model's chat template and special tokens, loaded from a model or tokenizer directory
 * (chat_template.jinja if present, else tokenizer_config.json's chat_template). */
typedef struct {
    hr_template *tpl;
    char *bos_token; /* NULL when absent */
    char *eos_token;
} hr_chat_template;

/* Loads from dir; template_path (may be NULL) overrides the directory's template. */
hr_err *hr_chat_template_load(const char *dir, const char *template_path, hr_chat_template *out);
/* From template source text and special tokens (bos/eos may be NULL), e.g. a GGUF file's. */
hr_err *hr_chat_template_from(const char *source, const char *bos, const char *eos,
                              hr_chat_template *out);
void hr_chat_template_free(hr_chat_template *ct);

/* Renders a request object {"messages", "tools", "add_generation_prompt", "kwargs"} the
 * way apply_chat_template does (kwargs merged into the context). */
hr_err *hr_chat_template_apply(const hr_chat_template *ct, const json_t *request, char **out,
                               int *raised);

#endif
