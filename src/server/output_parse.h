/* Incremental parser of a model's generated text into structure: reasoning between
 * <think> and </think>, tool calls in the model family's markup, and plain content.
 * Text is fed in arbitrary pieces (any byte boundary); content and reasoning stream out
 * as soon as they cannot be the start of markup, a tool call comes out whole once its
 * markup closes, and markup that does not parse comes out as content. */
#ifndef HR_SERVER_OUTPUT_PARSE_H
#define HR_SERVER_OUTPUT_PARSE_H

#include <jansson.h>
#include <stddef.h>

#include "server/request.h"

typedef enum { HR_OUT_CONTENT, HR_OUT_REASONING, HR_OUT_TOOL_CALL } hr_out_kind;

typedef struct {
    hr_out_kind kind;
    const char *text; /* content / reasoning bytes (not NUL-terminated) */
    size_t len;
    int tool_index;        /* tool call: 0, 1, ... in output order */
    const char *tool_name; /* tool call: NUL-terminated */
    const char *tool_args; /* tool call: arguments as a JSON object text */
} hr_out_event;

typedef void (*hr_out_fn)(void *ud, const hr_out_event *ev);

typedef struct {
    int reasoning;           /* recognise <think>...</think> */
    int in_reasoning;        /* the prompt already opened <think> */
    hr_tool_format tools;    /* HR_TOOLS_NONE: no tool parsing */
    const json_t *tool_defs; /* OpenAI-form tools (borrowed; may be NULL): XML parameter types */
} hr_out_config;

typedef struct hr_out_parser hr_out_parser;

hr_err *hr_out_parser_create(const hr_out_config *cfg, hr_out_fn fn, void *ud, hr_out_parser **out);
void hr_out_parser_free(hr_out_parser *p);
/* Feeds generated text; events are delivered through fn before it returns. */
hr_err *hr_out_parser_feed(hr_out_parser *p, const char *text, size_t len);
/* End of generation: releases held-back text and any unclosed markup. */
hr_err *hr_out_parser_finish(hr_out_parser *p);
/* Number of tool calls emitted so far. */
int hr_out_parser_tool_calls(const hr_out_parser *p);

/* The output markup a chat template implies: the tool-call family (Qwen <tool_call>,
 * Llama 3 header tokens, Gemma turns; else HR_TOOLS_NONE) and whether it knows <think>. */
void hr_output_format_detect(const char *template_src, hr_tool_format *tools, int *reasoning);

/* Parses a tool-call body (the text between the family's markers, or a whole Llama 3 /
 * Gemma output) into [{"name", "arguments": JSON object text}, ...]; NULL when it does
 * not parse, or (*oom then 1) when memory ran out. Exposed for tests. */
json_t *hr_tool_body_parse(hr_tool_format fmt, const char *body, size_t len,
                           const json_t *tool_defs, int *oom);

#endif
