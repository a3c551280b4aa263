/* The one path from a chat request to prompt tokens, shared by the engine, the server and
 * `hearth run`: the model's chat template (or a --chat-template file, or for base models
 * without one a documented fallback), the forced-tool-call prefill, and tokenization. */
#ifndef HR_ENGINE_PROMPT_H
#define HR_ENGINE_PROMPT_H

#include <jansson.h>
#include <stdint.h>

#include "template/template.h"
#include "tokenizer/tokenizer.h"

/* For models without a chat template: one "role: content" line per message, then
 * "assistant:"; its prompt is tokenized with the tokenizer's special tokens (BOS). */
extern const char hr_fallback_chat_template[];

typedef struct {
    const hr_tokenizer *tok; /* borrowed */
    hr_chat_template ct;
    int fallback; /* ct is hr_fallback_chat_template */
    char *source; /* the template's text ("" for the fallback), for output-format detection */
    /* ct renders system messages after the first turn in place; else hr_prompt_render folds
     * them into the leading system message (template/system_turns.h) */
    int system_turns;
} hr_prompt;

/* The template of model dir (template_path, when not NULL, overrides it; a bad file is an
 * error), else the fallback. tok is borrowed for p's life. */
hr_err *hr_prompt_open(const char *dir, const char *template_path, const hr_tokenizer *tok,
                       hr_prompt *p);
void hr_prompt_close(hr_prompt *p);

/* Renders chat ({"messages", "tools"?, "add_generation_prompt"?, "kwargs"?}; a missing
 * add_generation_prompt counts as true; later system messages folded into the leading one
 * when the template has no system turns), appends prefill (NULL: none; a <think> the
 * template left open is closed before it), and tokenizes. *in_reasoning (may be NULL):
 * the prompt ends inside an open <think>. */
hr_err *hr_prompt_render(const hr_prompt *p, const json_t *chat, const char *prefill, int32_t **ids,
                         int *n, int *in_reasoning);

/* Whether text ends inside a <think> block (the last <think> has no </think> after it). */
int hr_prompt_in_reasoning(const char *text);

#endif
