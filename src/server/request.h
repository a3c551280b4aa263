/* The one internal generation request every HTTP route is parsed into (OpenAI chat and
 * completions, Anthropic messages), and the parsers that validate a JSON body into it.
 * Any bad field yields an error naming the field; unknown fields are ignored. This is
 * what the engine receives through hr_server_backend.submit (server.h). */
#ifndef HR_SERVER_REQUEST_H
#define HR_SERVER_REQUEST_H

#include <jansson.h>
#include <stdint.h>

#include "base/err.h"
#include "engine/sampler.h"

typedef enum { HR_API_CHAT, HR_API_COMPLETION, HR_API_MESSAGES, HR_API_RESPONSES } hr_api_kind;

/* How tool calls in the model's output are recognised (output_parse.h). */
typedef enum {
    HR_TOOLS_NONE,   /* no tool parsing */
    HR_TOOLS_QWEN,   /* <tool_call>{json}</tool_call> and Qwen3-Coder <function=..> XML */
    HR_TOOLS_LLAMA3, /* whole output {"name", "parameters"} JSON, maybe after <|python_tag|> */
    HR_TOOLS_GEMMA,  /* ```tool_code\nname(arg=value)\n``` */
} hr_tool_format;

typedef struct {
    int32_t token;
    float bias; /* -100..100 */
} hr_logit_bias;

/* What tool_choice asks of a request with tools ("none" drops the tools instead). */
typedef enum {
    HR_TOOL_CHOICE_AUTO,     /* the model decides */
    HR_TOOL_CHOICE_REQUIRED, /* OpenAI "required", Anthropic "any": at least one call */
    HR_TOOL_CHOICE_NAMED,    /* one call of tool_choice_name */
} hr_tool_choice;

#define HR_MAX_CHOICES 16

/* What the output must be (output_spec.c), as the request asked. */
typedef enum {
    HR_OUT_FREE,        /* unconstrained */
    HR_OUT_JSON_OBJECT, /* any JSON object */
    HR_OUT_JSON_SCHEMA, /* value: the schema */
    HR_OUT_REGEX,       /* text: the whole output matches it */
    HR_OUT_GBNF,        /* text: a llama.cpp grammar */
    HR_OUT_CHOICE,      /* value: an array of strings, the output is one of them */
} hr_output_kind;

typedef struct {
    hr_output_kind kind;
    json_t *value;
    char *text;
    char field[48]; /* the request field it came from, for error messages */
} hr_output_spec;

struct hr_grammar;

typedef struct {
    hr_api_kind api;
    char *model; /* as the client named it (echoed back); may be NULL */

    /* Chat APIs: {"messages", "tools", "add_generation_prompt": true, "kwargs"}, ready for
     * hr_chat_template_apply; NULL for completions. Tool-call arguments are objects. */
    json_t *chat;
    /* Completions: a text prompt, or token ids (exactly one is set). */
    char *prompt;
    int32_t *prompt_ids;
    int n_prompt_ids;

    hr_sampler_params sampling; /* temperature, top_p, top_k, min_p, seed */
    int seed_set;               /* 0: the engine picks a seed */
    float presence_penalty;     /* 0 = off, -2..2 */
    float frequency_penalty;    /* 0 = off, -2..2 */
    float repetition_penalty;   /* 1 = off, > 0 */
    int penalty_last_n;         /* > 0: penalties look at the last N tokens only; 0 = all */
    hr_logit_bias *logit_bias;
    int n_logit_bias;

    char **stop; /* stop strings: generation ends before the first match */
    int n_stop;
    int max_tokens; /* an upper bound >= 1 (lowered to what fits); 0 = until end of context */
    int ignore_eos; /* keep generating past end-of-sequence (benchmarks) */

    int logprobs;     /* return the sampled token's logprob */
    int top_logprobs; /* 0..20 alternatives per token */

    int n; /* choices: independent generations of the same prompt, 1..HR_MAX_CHOICES */

    int stream;
    int include_usage; /* OpenAI stream_options.include_usage */
    int use_tools;     /* tools were given and tool_choice is not "none": parse tool calls */
    hr_tool_choice tool_choice;
    char *tool_choice_name; /* HR_TOOL_CHOICE_NAMED: a name in the tools */
    /* Text the assistant turn starts with (NULL: none), set by hr_request_set_prefill: the
     * engine appends it to the rendered prompt and the reply feeds it to the output parser
     * as if the model had generated it. */
    char *prefill;
    char *reasoning_effort; /* NULL, or "none" | "minimal" | "low" | "medium" | "high" | "xhigh" */
    /* > 0: at most this many tokens of reasoning; then the engine closes the <think> block
     * and the answer follows (Anthropic thinking.budget_tokens). 0 = no cap. */
    int reasoning_budget;
    /* Responses API only (responses_request.c), else NULL: {"echo": the request fields the
     * response object repeats, "input": the conversation so far without the instructions
     * (the stored history, then this request's input), "store": bool}. */
    json_t *responses;
    hr_output_spec output; /* response_format and the like */
    /* The grammar the output follows (hr_request_set_grammar; NULL: none), owned. lazy: it
     * applies after the token grammar_trigger (a tool call's opening), until it accepts. */
    struct hr_grammar *grammar;
    int grammar_lazy;
    const char *grammar_trigger;
} hr_api_request;

/* Limits the parsers check against. */
typedef struct {
    int max_tokens_limit; /* the context a sequence can have (prompt + output positions) */
    /* token ids (prompt arrays, logit_bias, /detokenize) must be below it: the ids the
     * tokenizer has a token for, which may be fewer than the model's vocab_size; 0 = unchecked */
    int vocab_size;
} hr_request_limits;

/* Parsers: body is the request JSON (borrowed). On success *out is a new request
 * (hr_api_request_free); on error the message names the offending field. */
hr_err *hr_parse_chat_request(const json_t *body, const hr_request_limits *lim,
                              hr_api_request **out);
hr_err *hr_parse_completion_request(const json_t *body, const hr_request_limits *lim,
                                    hr_api_request **out);
hr_err *hr_parse_messages_request(const json_t *body, const hr_request_limits *lim,
                                  hr_api_request **out);
/* POST /v1/messages/count_tokens: a messages body without max_tokens (ignored if given). */
hr_err *hr_parse_count_tokens_request(const json_t *body, const hr_request_limits *lim,
                                      hr_api_request **out);
void hr_api_request_free(hr_api_request *r);

/* POST /tokenize {"content" | "prompt": text, "add_special_tokens"} and POST /detokenize
 * {"tokens": [ids]}. */
hr_err *hr_parse_tokenize_request(const json_t *body, const char **text, int *add_special);
hr_err *hr_parse_detokenize_request(const json_t *body, const hr_request_limits *lim, int32_t **ids,
                                    int *n);

/* The output fields of body (response_format, text.format, output_format, grammar,
 * json_schema, guided_*, structured_outputs, by api) into *s (zeroed by the caller); two
 * of them at once, or a bad one, is an error naming the field. */
hr_err *hr_parse_output_spec(const json_t *body, hr_api_kind api, hr_output_spec *s);
void hr_output_spec_free(hr_output_spec *s);

/* Compiles what constrains r's output into r->grammar (request_grammar.c): a forced
 * tool_choice as the family's tool-call markup with each tool's arguments following its
 * schema (QWEN and LLAMA3 formats), else r->output, else for strict tools under auto a lazy
 * grammar from the call's opening token (QWEN). A schema or grammar it cannot enforce is an
 * error naming the field (and the keyword and its path). Nothing to do otherwise. gc: the
 * compiled grammars to reuse and add to (NULL: compile every time). */
struct hr_grammar_cache;
hr_err *hr_request_set_grammar(hr_api_request *r, hr_tool_format fmt, struct hr_grammar_cache *gc);

/* Turns a required or named tool_choice into r->prefill: the opening of a tool call in the
 * model's markup (tool_prefill.c), so generation continues inside a call. Errors when the
 * model has no known tool-call format. Nothing to do for other requests. */
hr_err *hr_request_set_prefill(hr_api_request *r, hr_tool_format fmt);

struct hr_response_store;
/* POST /v1/responses (responses_request.c). store (may be NULL) resolves
 * previous_response_id: its conversation is prepended to the input. */
hr_err *hr_parse_responses_request(const json_t *body, const hr_request_limits *lim,
                                   struct hr_response_store *store, hr_api_request **out);

/* Shared by the chat and Anthropic parsers (request_common.c). */
/* Most messages (or Responses input items) and content blocks (parts) in one request. */
#define HR_MAX_MESSAGES 16384
#define HR_MAX_BLOCKS 65536
/* Before any per-message work: at most HR_MAX_MESSAGES entries in msgs (the array named
 * field) and HR_MAX_BLOCKS entries in all their content_key arrays together; the error
 * names the limit. */
hr_err *hr_check_conversation_size(const json_t *msgs, const char *field, const char *content_key);
/* A new request of kind api with the defaults every parser starts from. */
hr_api_request *hr_api_request_new(hr_api_kind api);
/* A new request of kind api filled by parse from body; *out is NULL on error. */
hr_err *hr_parse_request(hr_api_kind api,
                         hr_err *(*parse)(const json_t *body, const hr_request_limits *lim,
                                          hr_api_request *r),
                         const json_t *body, const hr_request_limits *lim, hr_api_request **out);
hr_err *hr_parse_sampling(const json_t *body, const hr_request_limits *lim, hr_api_request *r);
hr_err *hr_parse_max_tokens(const json_t *body, const char *key, int required,
                            const hr_request_limits *lim, hr_api_request *r);
hr_err *hr_parse_stop(const json_t *body, const char *key, hr_api_request *r);
/* The refusal of a prompt that leaves no room for output in context positions, in the
 * wording clients recover from (they shorten and retry): Anthropic's "prompt is too long:
 * N tokens > M maximum", else OpenAI's; code HR_E_CONTEXT (400, context_length_exceeded). */
hr_err *hr_context_error(hr_api_kind api, int prompt_tokens, int context);
/* tool_choice "required" / named after the tools were read: the named tool must be one of
 * them (name NULL for required); sets r->tool_choice and r->tool_choice_name. */
hr_err *hr_set_tool_choice(hr_api_request *r, const json_t *tools, const char *name);
/* Ends a chat parse: takes ownership of messages, tools and kwargs (any may be NULL); with
 * err (the parse's error so far) frees them and returns it, else builds r->chat. */
hr_err *hr_set_chat(hr_api_request *r, hr_err *err, json_t *messages, json_t *tools,
                    json_t *kwargs);

#endif
