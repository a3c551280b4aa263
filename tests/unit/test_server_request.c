/* Request parsing: OpenAI chat and completions, Anthropic messages, tokenize bodies;
 * every accepted field lands in hr_api_request, every bad one names itself. */
#include "harness.h"

#include "base/json.h"
#include "server/request.h"

static const hr_request_limits LIM = {.max_tokens_limit = 4096, .vocab_size = 1000};

typedef hr_err *(*parse_fn)(const json_t *, const hr_request_limits *, hr_api_request **);

/* Parses src with fn; returns the request (NULL on error, message into err). */
static hr_api_request *parse(parse_fn fn, const char *src, char *err, size_t cap) {
    json_t *j = json_loads(src, 0, NULL);
    if (!j) {
        snprintf(err, cap, "test JSON does not parse: %s", src);
        return NULL;
    }
    hr_api_request *r = NULL;
    hr_err *e = fn(j, &LIM, &r);
    json_decref(j);
    if (e) {
        snprintf(err, cap, "%s", hr_err_msg(e));
        hr_err_free(e);
    }
    return r;
}

/* Expects fn to reject src with a message containing want. */
static int rejects(parse_fn fn, const char *src, const char *want, char *got, size_t cap) {
    hr_api_request *r = parse(fn, src, got, cap);
    if (r) {
        hr_api_request_free(r);
        snprintf(got, cap, "accepted");
        return 0;
    }
    return strstr(got, want) != NULL;
}

static void test_chat_full(void) {
    char err[256] = "";
    hr_api_request *r = parse(
        hr_parse_chat_request,
        "{\"model\": \"m\", \"messages\": [{\"role\": \"system\", \"content\": \"be brief\"},"
        " {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"a\"}, {\"type\": "
        "\"text\", \"text\": \"b\"}]},"
        " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"c1\", \"type\": "
        "\"function\","
        "   \"function\": {\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}}]},"
        " {\"role\": \"tool\", \"tool_call_id\": \"c1\", \"content\": \"42\"}],"
        " \"stream\": true, \"stream_options\": {\"include_usage\": true}, "
        "\"max_completion_tokens\": 100,"
        " \"temperature\": 0.5, \"top_p\": 0.9, \"top_k\": 40, \"min_p\": 0.05, "
        "\"typical_p\": 0.8, \"xtc_probability\": 0.25, \"xtc_threshold\": 0.2, "
        "\"presence_penalty\": 0.5,"
        " \"frequency_penalty\": -0.5, \"repetition_penalty\": 1.1, \"logit_bias\": {\"7\": -100},"
        " \"repeat_last_n\": 64,"
        " \"stop\": [\"END\", \"###\"], \"seed\": 7, \"logprobs\": true, \"top_logprobs\": 3,"
        " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
        "{}}}],"
        " \"tool_choice\": \"auto\", \"response_format\": {\"type\": \"text\"},"
        " \"chat_template_kwargs\": {\"enable_thinking\": true}, \"reasoning_effort\": \"low\","
        " \"unknown_field\": [1, 2]}",
        err, sizeof err);
    HR_CHECK(r, "%s", err);
    HR_CHECK(r->api == HR_API_CHAT && !strcmp(r->model, "m") && r->stream && r->include_usage,
             "flags");
    HR_CHECK(r->max_tokens == 100, "max_tokens %d", r->max_tokens);
    HR_CHECK(r->sampling.temperature == 0.5f && r->sampling.top_p == 0.9f &&
                 r->sampling.top_k == 40 && r->sampling.min_p == 0.05f && r->seed_set &&
                 r->sampling.seed == 7 && r->sampling.typical_p == 0.8f &&
                 r->sampling.xtc_probability == 0.25f && r->sampling.xtc_threshold == 0.2f,
             "sampling");
    HR_CHECK(r->presence_penalty == 0.5f && r->frequency_penalty == -0.5f &&
                 r->repetition_penalty == 1.1f && r->penalty_last_n == 64,
             "penalties");
    HR_CHECK(r->n_logit_bias == 1 && r->logit_bias[0].token == 7 && r->logit_bias[0].bias == -100,
             "bias");
    HR_CHECK(r->n_stop == 2 && !strcmp(r->stop[1], "###"), "stop");
    HR_CHECK(r->logprobs && r->top_logprobs == 3 && r->use_tools, "logprobs/tools");
    HR_CHECK(!strcmp(r->reasoning_effort, "low"), "effort");
    const json_t *msgs = json_object_get(r->chat, "messages");
    HR_CHECK(json_array_size(msgs) == 4, "messages");
    HR_CHECK(!strcmp(json_string_value(json_object_get(json_array_get(msgs, 1), "content")), "ab"),
             "joined parts");
    const json_t *args = json_object_get(
        json_object_get(json_array_get(json_object_get(json_array_get(msgs, 2), "tool_calls"), 0),
                        "function"),
        "arguments");
    HR_CHECK(json_integer_value(json_object_get(args, "x")) == 1, "arguments became an object");
    HR_CHECK(
        !strcmp(json_string_value(json_object_get(json_array_get(msgs, 3), "tool_call_id")), "c1"),
        "tool id");
    const json_t *kw = json_object_get(r->chat, "kwargs");
    HR_CHECK(json_is_true(json_object_get(kw, "enable_thinking")), "kwargs");
    HR_CHECK(json_is_true(json_object_get(r->chat, "add_generation_prompt")), "gen prompt");
    HR_CHECK(json_array_size(json_object_get(r->chat, "tools")) == 1, "tools");
    hr_api_request_free(r);
}

/* llama.cpp's repeat_last_n: 0 turns the penalties off, -1 (the default) means all tokens. */
static void test_penalty_window(void) {
    char err[256] = "";
    hr_api_request *r =
        parse(hr_parse_completion_request,
              "{\"prompt\": \"x\", \"presence_penalty\": 1, \"frequency_penalty\": 1,"
              " \"repetition_penalty\": 1.3, \"repeat_last_n\": 0}",
              err, sizeof err);
    HR_CHECK(r, "%s", err);
    HR_CHECK(r && r->presence_penalty == 0 && r->frequency_penalty == 0 &&
                 r->repetition_penalty == 1 && r->penalty_last_n == 0,
             "repeat_last_n 0 left penalties on");
    hr_api_request_free(r);
    r = parse(hr_parse_completion_request, "{\"prompt\": \"x\", \"presence_penalty\": 1}", err,
              sizeof err);
    HR_CHECK(r && r->presence_penalty == 1 && r->penalty_last_n == 0, "default window");
    hr_api_request_free(r);
}

static void test_chat_defaults(void) {
    char err[256] = "";
    hr_api_request *r =
        parse(hr_parse_chat_request,
              "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"stop\": \"x\","
              " \"reasoning_effort\": \"none\", \"tool_choice\": \"none\","
              " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]}",
              err, sizeof err);
    HR_CHECK(r, "%s", err);
    HR_CHECK(!r->model && !r->stream && r->max_tokens == 0 && r->sampling.temperature == 1.0f &&
                 r->sampling.top_p == 1.0f && !r->seed_set && r->repetition_penalty == 1.0f &&
                 r->sampling.typical_p == 1.0f && r->sampling.xtc_probability == 0 &&
                 r->sampling.xtc_threshold == 0.1f,
             "defaults");
    HR_CHECK(r->n_stop == 1 && !strcmp(r->stop[0], "x"), "stop string");
    HR_CHECK(!r->use_tools && json_is_null(json_object_get(r->chat, "tools")), "tool_choice none");
    HR_CHECK(json_is_false(json_object_get(json_object_get(r->chat, "kwargs"), "enable_thinking")),
             "effort none disables thinking");
    hr_api_request_free(r);
}

#define MSG "\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]"
#define TOOLS "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]"

static void test_chat_errors(void) {
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"[1]", "must be a JSON object"},
        {"{}", "\"messages\" must be an array"},
        {"{\"messages\": []}", "must not be empty"},
        {"{\"messages\": [{\"role\": \"bot\", \"content\": \"x\"}]}", "messages[0].role"},
        {"{\"messages\": [{\"role\": \"user\"}]}", "messages[0].content is required"},
        {"{\"messages\": [{\"role\": \"user\", \"content\": 5}]}", "messages[0].content must be"},
        {"{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]}",
         "messages[0].content[0]"},
        {"{\"messages\": [{\"role\": \"tool\", \"content\": \"x\"}]}", "messages[0].tool_call_id"},
        {"{\"messages\": [{\"role\": \"user\", \"content\": \"x\", \"tool_calls\": []}]}",
         "only allowed on assistant"},
        {"{\"messages\": [{\"role\": \"assistant\", \"tool_calls\": [{\"function\": {\"name\": "
         "\"f\", \"arguments\": \"[1]\"}}]}]}",
         "arguments must be a JSON object"},
        {"{" MSG ", \"max_tokens\": 0}", "\"max_tokens\" must be at least 1, got 0"},
        {"{" MSG ", \"max_tokens\": -5}", "\"max_tokens\" must be at least 1"},
        {"{" MSG ", \"max_tokens\": \"5\"}", "\"max_tokens\" must be an integer"},
        {"{" MSG ", \"max_completion_tokens\": -1}", "max_completion_tokens"},
        {"{" MSG ", \"temperature\": 3}", "\"temperature\" must be in"},
        {"{" MSG ", \"temperature\": \"hot\"}", "\"temperature\" must be a number"},
        {"{" MSG ", \"top_p\": 0}", "\"top_p\""},
        {"{" MSG ", \"top_k\": -5}", "\"top_k\""},
        {"{" MSG ", \"min_p\": 1.5}", "\"min_p\""},
        {"{" MSG ", \"typical_p\": 0}", "\"typical_p\""},
        {"{" MSG ", \"repeat_last_n\": -2}", "\"repeat_last_n\""},
        {"{" MSG ", \"xtc_probability\": -0.1}", "\"xtc_probability\""},
        {"{" MSG ", \"xtc_threshold\": \"high\"}", "\"xtc_threshold\" must be a number"},
        {"{" MSG ", \"presence_penalty\": 2.5}", "\"presence_penalty\""},
        {"{" MSG ", \"frequency_penalty\": -3}", "\"frequency_penalty\""},
        {"{" MSG ", \"repetition_penalty\": 0}", "\"repetition_penalty\""},
        {"{" MSG ", \"logit_bias\": {\"x\": 1}}", "\"logit_bias\" key \"x\""},
        {"{" MSG ", \"logit_bias\": {\"5\": 200}}", "\"logit_bias\"[\"5\"]"},
        {"{" MSG ", \"logit_bias\": {\"1000\": 1}}",
         "\"logit_bias\" key \"1000\" is not a token id (valid ids are 0..999)"},
        {"{" MSG ", \"logit_bias\": []}", "\"logit_bias\" must be an object"},
        {"{" MSG ", \"stop\": 5}", "\"stop\" must be a string or an array"},
        {"{" MSG ", \"stop\": [\"a\", 1]}", "\"stop\" entries must be strings"},
        {"{" MSG ", \"stop\": [\"\"]}", "\"stop\" strings must be"},
        {"{" MSG ", \"seed\": 1.5}", "\"seed\" must be an integer"},
        {"{" MSG ", \"top_logprobs\": 3}", "needs \"logprobs\": true"},
        {"{" MSG ", \"logprobs\": true, \"top_logprobs\": 21}", "\"top_logprobs\" must be in"},
        {"{" MSG ", \"n\": 0}", "\"n\" must be in [1, 16], got 0"},
        {"{" MSG ", \"n\": 17}", "\"n\" must be in [1, 16], got 17"},
        {"{" MSG ", \"n\": \"2\"}", "\"n\" must be an integer"},
        {"{" MSG ", \"stream\": \"yes\"}", "\"stream\" must be true or false"},
        {"{" MSG ", \"stream_options\": 1}", "\"stream_options\" must be an object"},
        {"{" MSG ", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": 1}}",
         "\"response_format\".json_schema must be an object"},
        {"{" MSG
         ", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"schema\": 1}}}",
         "\"response_format.json_schema.schema\" must be a JSON schema object"},
        {"{" MSG ", \"response_format\": {\"type\": \"xml\"}}",
         "\"response_format\".type must be \"text\", \"json_object\" or \"json_schema\", got "
         "\"xml\""},
        {"{" MSG ", \"guided_choice\": []}",
         "\"guided_choice\" must be a non-empty array of strings"},
        {"{" MSG ", \"guided_json\": \"{not json\"}",
         "\"guided_json\" is not a JSON schema object"},
        {"{" MSG ", \"grammar\": \"\"}", "\"grammar\" must be a non-empty string"},
        {"{" MSG ", \"guided_regex\": \"a\", \"json_schema\": {}}",
         "\"json_schema\" and \"guided_regex\" both constrain the output"},
        {"{" MSG ", \"structured_outputs\": 3}", "\"structured_outputs\" must be an object"},
        {"{" MSG ", \"tools\": {}}", "\"tools\" must be an array"},
        {"{" MSG ", \"tools\": [{\"type\": \"code\"}]}", "tools[0].type"},
        {"{" MSG ", \"tools\": [{\"type\": \"function\", \"function\": {}}]}",
         "tools[0].function.name"},
        {"{" MSG ", \"tool_choice\": \"required\"}", "forces a tool call needs a non-empty"},
        {"{" MSG ", \"tools\": [], \"tool_choice\": \"required\"}", "needs a non-empty \"tools\""},
        {"{" MSG ", \"tools\": " TOOLS ", \"tool_choice\": {\"type\": \"function\", "
         "\"function\": {\"name\": \"g\"}}}",
         "names the tool \"g\", which is not in \"tools\""},
        {"{" MSG ", \"tools\": " TOOLS ", \"tool_choice\": {\"type\": \"function\"}}",
         "\"tool_choice\" object must be"},
        {"{" MSG ", \"tools\": " TOOLS ", \"tool_choice\": {\"type\": \"tool\", \"name\": \"f\"}}",
         "\"tool_choice\" object must be"},
        {"{" MSG ", \"tool_choice\": \"maybe\"}", "\"tool_choice\" must be"},
        {"{" MSG ", \"chat_template_kwargs\": 3}", "\"chat_template_kwargs\" must be an object"},
        {"{" MSG ", \"reasoning_effort\": \"max\"}", "\"reasoning_effort\" must be"},
        {"{" MSG ", \"model\": 3}", "\"model\" must be a string"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char got[256] = "";
        HR_CHECK(rejects(hr_parse_chat_request, cases[i].body, cases[i].want, got, sizeof got),
                 "case %zu %s: wanted /%s/, got: %s", i, cases[i].body, cases[i].want, got);
    }
}

static void test_completion(void) {
    char err[256] = "";
    hr_api_request *r =
        parse(hr_parse_completion_request,
              "{\"prompt\": \"Once\", \"max_tokens\": 8, \"logprobs\": 2, \"stream\": true}", err,
              sizeof err);
    HR_CHECK(r, "%s", err);
    HR_CHECK(r->api == HR_API_COMPLETION && !strcmp(r->prompt, "Once") && !r->prompt_ids &&
                 r->max_tokens == 8 && r->logprobs && r->top_logprobs == 2 && r->stream && !r->chat,
             "fields");
    hr_api_request_free(r);
    r = parse(hr_parse_completion_request, "{\"prompt\": [1, 2, 999]}", err, sizeof err);
    HR_CHECK(r, "%s", err);
    HR_CHECK(r->n_prompt_ids == 3 && r->prompt_ids[2] == 999 && !r->prompt && r->max_tokens == 16 &&
                 !r->logprobs,
             "ids, default max_tokens 16");
    hr_api_request_free(r);
    r = parse(hr_parse_completion_request, "{\"prompt\": [\"one\"]}", err, sizeof err);
    HR_CHECK(r && !strcmp(r->prompt, "one"), "one-string array: %s", err);
    hr_api_request_free(r);
    char got[256];
    HR_CHECK(rejects(hr_parse_completion_request, "{}", "\"prompt\" must be", got, sizeof got),
             "%s", got);
    HR_CHECK(rejects(hr_parse_completion_request, "{\"prompt\": \"\"}", "must not be empty", got,
                     sizeof got),
             "%s", got);
    HR_CHECK(rejects(hr_parse_completion_request, "{\"prompt\": [1, 1000]}",
                     "\"prompt\"[1] is not a token id (valid ids are 0..999)", got, sizeof got),
             "%s", got);
    HR_CHECK(rejects(hr_parse_completion_request, "{\"prompt\": [\"a\", \"b\"]}",
                     "one prompt per request", got, sizeof got),
             "%s", got);
    HR_CHECK(rejects(hr_parse_completion_request, "{\"prompt\": \"a\", \"echo\": true}", "\"echo\"",
                     got, sizeof got),
             "%s", got);
    HR_CHECK(rejects(hr_parse_completion_request, "{\"prompt\": \"a\", \"logprobs\": 50}",
                     "\"logprobs\" must be in", got, sizeof got),
             "%s", got);
    HR_CHECK(rejects(hr_parse_completion_request, "{\"prompt\": \"a\", \"n\": 17}",
                     "\"n\" must be in [1, 16]", got, sizeof got),
             "%s", got);
    r = parse(hr_parse_completion_request, "{\"prompt\": \"a\", \"n\": 16}", err, sizeof err);
    HR_CHECK(r && r->n == 16, "n 16: %s", err);
    hr_api_request_free(r);
}

static void test_messages(void) {
    char err[256] = "";
    hr_api_request *r = parse(
        hr_parse_messages_request,
        "{\"model\": \"claude\", \"max_tokens\": 64, \"system\": [{\"type\": \"text\", \"text\": "
        "\"sys\"}],"
        " \"stop_sequences\": [\"\\n\\nHuman:\"], \"stream\": true, \"temperature\": 0.2, "
        "\"top_k\": 5,"
        " \"thinking\": {\"type\": \"disabled\"}, \"metadata\": {\"user_id\": \"u\"},"
        " \"tools\": [{\"name\": \"get_weather\", \"description\": \"d\", \"input_schema\": "
        "{\"type\": \"object\"}}],"
        " \"messages\": [{\"role\": \"user\", \"content\": \"weather?\"},"
        "  {\"role\": \"assistant\", \"content\": [{\"type\": \"text\", \"text\": \"checking\"},"
        "    {\"type\": \"tool_use\", \"id\": \"toolu_1\", \"name\": \"get_weather\", \"input\": "
        "{\"city\": \"Paris\"}}]},"
        "  {\"role\": \"user\", \"content\": [{\"type\": \"tool_result\", \"tool_use_id\": "
        "\"toolu_1\","
        "    \"content\": [{\"type\": \"text\", \"text\": \"sunny\"}]}, {\"type\": \"text\", "
        "\"text\": \"thanks\"}]}]}",
        err, sizeof err);
    HR_CHECK(r, "%s", err);
    HR_CHECK(r->api == HR_API_MESSAGES && r->max_tokens == 64 && r->stream && r->n_stop == 1 &&
                 r->sampling.top_k == 5 && r->use_tools,
             "fields");
    const json_t *m = json_object_get(r->chat, "messages");
    HR_CHECK(json_array_size(m) == 5, "5 template messages, got %zu", json_array_size(m));
    HR_CHECK(!strcmp(json_string_value(json_object_get(json_array_get(m, 0), "role")), "system"),
             "system");
    const json_t *tc = json_array_get(json_object_get(json_array_get(m, 2), "tool_calls"), 0);
    HR_CHECK(!strcmp(json_string_value(json_object_get(
                         json_object_get(json_object_get(tc, "function"), "arguments"), "city")),
                     "Paris"),
             "tool_use became tool_calls");
    const json_t *tool = json_array_get(m, 3);
    HR_CHECK(!strcmp(json_string_value(json_object_get(tool, "role")), "tool") &&
                 !strcmp(json_string_value(json_object_get(tool, "content")), "sunny") &&
                 !strcmp(json_string_value(json_object_get(tool, "tool_call_id")), "toolu_1"),
             "tool_result");
    HR_CHECK(!strcmp(json_string_value(json_object_get(json_array_get(m, 4), "content")), "thanks"),
             "text after result");
    const json_t *t0 = json_array_get(json_object_get(r->chat, "tools"), 0);
    HR_CHECK(json_is_object(json_object_get(json_object_get(t0, "function"), "parameters")),
             "tool converted");
    HR_CHECK(json_is_false(json_object_get(json_object_get(r->chat, "kwargs"), "enable_thinking")),
             "thinking");
    hr_api_request_free(r);

    static const struct {
        const char *body, *want;
    } cases[] = {
        {"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}",
         "\"max_tokens\" is required"},
        {"{\"max_tokens\": 0, \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}",
         "\"max_tokens\" must be at least 1"},
        {"{\"max_tokens\": 5, \"messages\": []}", "must not be empty"},
        {"{\"max_tokens\": 5, \"messages\": [{\"role\": \"bot\", \"content\": \"x\"}]}",
         "messages[0].role must be \"user\", \"assistant\" or \"system\""},
        {"{\"max_tokens\": 5, \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": "
         "\"image\"}]}]}",
         "messages[0].content[0]: image blocks are not supported by this text-only model"},
        {"{\"max_tokens\": 5, \"system\": 4, \"messages\": [{\"role\": \"user\", \"content\": "
         "\"x\"}]}",
         "\"system\""},
        {"{\"max_tokens\": 5, \"stop_sequences\": \"x\", \"messages\": [{\"role\": \"user\", "
         "\"content\": \"x\"}]}",
         ""},
        {"{\"max_tokens\": 5, \"tools\": [{\"name\": \"f\"}], \"messages\": [{\"role\": \"user\", "
         "\"content\": \"x\"}]}",
         "tools[0] needs"},
        {"{\"max_tokens\": 5, \"tool_choice\": {\"type\": \"any\"}, \"messages\": [{\"role\": "
         "\"user\", \"content\": \"x\"}]}",
         "forces a tool call needs a non-empty \"tools\""},
        {"{\"max_tokens\": 5, \"tool_choice\": {\"type\": \"tool\", \"name\": \"g\"}, \"tools\": "
         "[{\"name\": \"f\", \"input_schema\": {}}], \"messages\": [{\"role\": \"user\", "
         "\"content\": \"x\"}]}",
         "names the tool \"g\", which is not in \"tools\""},
        {"{\"max_tokens\": 5, \"tool_choice\": {\"type\": \"tool\"}, \"tools\": [{\"name\": "
         "\"f\", \"input_schema\": {}}], \"messages\": [{\"role\": \"user\", \"content\": "
         "\"x\"}]}",
         "needs a string \"name\""},
        {"{\"max_tokens\": 5, \"tool_choice\": {\"type\": \"required\"}, \"messages\": "
         "[{\"role\": \"user\", \"content\": \"x\"}]}",
         "\"tool_choice\".type must be"},
        {"{\"max_tokens\": 5, \"thinking\": {\"type\": \"sure\"}, \"messages\": [{\"role\": "
         "\"user\", \"content\": \"x\"}]}",
         "\"thinking\".type must be \"enabled\", \"adaptive\" or \"disabled\""},
        {"{\"max_tokens\": 5, \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": "
         "\"tool_use\", \"id\": \"a\", \"name\": \"f\", \"input\": {}}]}]}",
         "belong to assistant"},
        {"{\"max_tokens\": 5, \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": "
         "\"tool_result\"}]}]}",
         "tool_use_id"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char got[256] = "";
        if (!*cases[i].want) { /* accepted: a string stop_sequences is a valid stop */
            hr_api_request *ok = parse(hr_parse_messages_request, cases[i].body, got, sizeof got);
            HR_CHECK(ok, "case %zu: %s", i, got);
            hr_api_request_free(ok);
            continue;
        }
        HR_CHECK(rejects(hr_parse_messages_request, cases[i].body, cases[i].want, got, sizeof got),
                 "case %zu: wanted /%s/, got: %s", i, cases[i].want, got);
    }
}

/* Single-quoted JSON (test bodies stay readable): every ' becomes ". Returns a static
 * buffer, valid until the next call. */
static const char *q(const char *src) {
    static char buf[8192];
    size_t i = 0;
    for (; src[i] && i + 1 < sizeof buf; i++)
        buf[i] = src[i] == '\'' ? '"' : src[i];
    buf[i] = 0;
    return buf;
}

/* messages[i][key] of a parsed request's template input, as a string ("" if absent). */
static const char *msg_str(const hr_api_request *r, size_t i, const char *key) {
    const json_t *m = json_array_get(json_object_get(r->chat, "messages"), i);
    const char *s = json_string_value(json_object_get(m, key));
    return s ? s : "";
}

static size_t n_msgs(const hr_api_request *r) {
    return json_array_size(json_object_get(r->chat, "messages"));
}

/* Claude Code's shape: system messages inside messages. Leading ones join the system
 * field; later ones stay system turns. */
static void test_messages_system_roles(void) {
    char err[256] = "";
    hr_api_request *r =
        parse(hr_parse_messages_request,
              q("{'max_tokens': 9, 'system': [{'type': 'text', 'text': 'top', 'cache_control': "
                "{'type': 'ephemeral'}}], 'messages': ["
                " {'role': 'system', 'content': 'first'},"
                " {'role': 'system', 'content': [{'type': 'text', 'text': 'second'}]},"
                " {'role': 'user', 'content': 'hi'}, {'role': 'assistant', 'content': 'hello'},"
                " {'role': 'system', 'content': [{'type': 'text', 'text': 'mid', 'cache_control': "
                "{'type': 'ephemeral'}}]}, {'role': 'user', 'content': 'more'}]}"),
              err, sizeof err);
    HR_CHECK(r, "%s", err);
    if (!r) return;
    HR_CHECK(n_msgs(r) == 5, "5 messages, got %zu", n_msgs(r));
    HR_CHECK(!strcmp(msg_str(r, 0, "role"), "system") &&
                 !strcmp(msg_str(r, 0, "content"), "top\n\nfirst\n\nsecond"),
             "leading system: [%s]", msg_str(r, 0, "content"));
    HR_CHECK(!strcmp(msg_str(r, 3, "role"), "system") && !strcmp(msg_str(r, 3, "content"), "mid"),
             "mid system turn: %s %s", msg_str(r, 3, "role"), msg_str(r, 3, "content"));
    HR_CHECK(!strcmp(msg_str(r, 4, "content"), "more"), "last user");
    hr_api_request_free(r);
    r = parse(hr_parse_messages_request,
              q("{'max_tokens': 9, 'messages': [{'role': 'system', 'content': 'only'},"
                " {'role': 'user', 'content': 'hi'}]}"),
              err, sizeof err);
    HR_CHECK(r && n_msgs(r) == 2 && !strcmp(msg_str(r, 0, "content"), "only"),
             "system message without the field: %s", err);
    hr_api_request_free(r);
    r = parse(
        hr_parse_messages_request, /* Claude Code's per-session billing block is dropped */
        q("{'max_tokens': 9, 'system': [{'type': 'text', 'text': 'x-anthropic-billing-header: "
          "cc_version=2.1.332.1c9; cc_entrypoint=sdk-cli;'}, {'type': 'text', 'text': "
          "'You are Claude Code.'}], 'messages': [{'role': 'user', 'content': 'hi'}]}"),
        err, sizeof err);
    HR_CHECK(r && !strcmp(msg_str(r, 0, "content"), "You are Claude Code."), "billing block: %s",
             r ? msg_str(r, 0, "content") : err);
    hr_api_request_free(r);
    static const struct {
        const char *body, *want;
    } bad[] = {
        {"{'max_tokens': 5, 'messages': [{'role': 'user', 'content': 'x'}, {'role': 'system',"
         " 'content': [{'type': 'image', 'source': {}}]}]}",
         "messages[1].content[0]: image blocks are not supported by this text-only model"},
        {"{'max_tokens': 5, 'messages': [{'role': 'system', 'content': [{'type': 'tool_use',"
         " 'id': 'a', 'name': 'f', 'input': {}}]}, {'role': 'user', 'content': 'x'}]}",
         "messages[0].content[0]: only text blocks are accepted here (type tool_use)"},
        {"{'max_tokens': 5, 'messages': [{'role': 'system', 'content': 3}]}",
         "messages[0].content must be a string or an array of content blocks"},
        {"{'max_tokens': 5, 'messages': [{'role': 'system', 'content': [{'type': 'text'}]}]}",
         "messages[0].content[0].text must be a string"},
        {"{'max_tokens': 5, 'system': [{'type': 'image'}], 'messages': [{'role': 'user', "
         "'content': 'x'}]}",
         "request: \"system\"[0]: image blocks are not supported"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char got[256] = "";
        HR_CHECK(rejects(hr_parse_messages_request, q(bad[i].body), bad[i].want, got, sizeof got),
                 "case %zu: wanted /%s/, got: %s", i, bad[i].want, got);
    }
}

static const json_t *kwarg(const hr_api_request *r, const char *key) {
    return json_object_get(json_object_get(r->chat, "kwargs"), key);
}

#define USER_X "'messages': [{'role': 'user', 'content': 'x'}]"

static void test_messages_thinking(void) {
    static const struct {
        const char *body;
        int enable, budget; /* enable: -1 = kwarg absent */
        const char *effort;
    } ok[] = {
        {"{'max_tokens': 4000, 'thinking': {'type': 'adaptive'}, " USER_X "}", 1, 0, NULL},
        {"{'max_tokens': 4000, 'thinking': {'type': 'enabled', 'budget_tokens': 2048}, " USER_X "}",
         1, 2048, NULL},
        {"{'max_tokens': 100, 'thinking': {'type': 'enabled', 'budget_tokens': 5000}, " USER_X "}",
         1, 99, NULL},
        {"{'max_tokens': 100, 'thinking': {'type': 'enabled', 'budget_tokens': 16}, " USER_X "}", 1,
         16, NULL},
        {"{'max_tokens': 100, 'thinking': {'type': 'enabled'}, " USER_X "}", 1, 0, NULL},
        {"{'max_tokens': 100, 'thinking': {'type': 'disabled'}, " USER_X "}", 0, 0, NULL},
        {"{'max_tokens': 100, 'thinking': null, " USER_X "}", -1, 0, NULL},
        {"{'max_tokens': 100, 'output_config': {'effort': 'max'}, " USER_X "}", -1, 0, "high"},
        {"{'max_tokens': 100, 'output_config': {'effort': 'low'}, 'thinking': {'type': "
         "'adaptive'}, " USER_X "}",
         1, 0, "low"},
        {"{'max_tokens': 100, 'output_config': {}, " USER_X "}", -1, 0, NULL},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        char err[256] = "";
        hr_api_request *r = parse(hr_parse_messages_request, q(ok[i].body), err, sizeof err);
        HR_CHECK(r, "case %zu: %s", i, err);
        if (!r) continue;
        const json_t *en = kwarg(r, "enable_thinking");
        int enable = en ? json_is_true(en) : -1;
        const char *eff = json_string_value(kwarg(r, "reasoning_effort"));
        HR_CHECK(enable == ok[i].enable && r->reasoning_budget == ok[i].budget,
                 "case %zu: enable %d budget %d", i, enable, r->reasoning_budget);
        HR_CHECK(ok[i].effort ? eff && !strcmp(eff, ok[i].effort) && r->reasoning_effort &&
                                    !strcmp(r->reasoning_effort, ok[i].effort)
                              : !eff && !r->reasoning_effort,
                 "case %zu: effort %s", i, eff ? eff : "(none)");
        hr_api_request_free(r);
    }
    static const struct {
        const char *body, *want;
    } bad[] = {
        {"{'max_tokens': 100, 'thinking': {'type': 'enabled', 'budget_tokens': 0}, " USER_X "}",
         "\"thinking\".budget_tokens must be >= 1, got 0"},
        {"{'max_tokens': 100, 'thinking': {'type': 'enabled', 'budget_tokens': 'lots'}, " USER_X
         "}",
         "budget_tokens"},
        {"{'max_tokens': 100, 'thinking': {'budget_tokens': 10}, " USER_X "}", "\"thinking\".type"},
        {"{'max_tokens': 100, 'output_config': {'effort': 'extreme'}, " USER_X "}",
         "\"output_config\".effort must be low, medium, high or max"},
        {"{'max_tokens': 100, 'output_config': 'high', " USER_X "}",
         "\"output_config\" must be an object"},
        {"{'max_tokens': 100, 'output_config': {'format': {'type': 'json_schema', 'schema': "
         "{}}}, " USER_X "}",
         "\"output_config\".format (structured outputs) is not supported yet"},
        {"{'max_tokens': 100, 'output_format': {'type': 'json_schema'}, " USER_X "}",
         "\"output_format\" (structured outputs) is not supported yet"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char got[256] = "";
        HR_CHECK(rejects(hr_parse_messages_request, q(bad[i].body), bad[i].want, got, sizeof got),
                 "case %zu: wanted /%s/, got: %s", i, bad[i].want, got);
    }
}

/* Assistant history as Claude Code sends it back: thinking (with signatures), redacted
 * thinking, server-tool blocks, text with citations, tool_use; tool_result content in
 * both forms. */
static void test_messages_history(void) {
    char err[256] = "";
    hr_api_request *r = parse(
        hr_parse_messages_request,
        q("{'max_tokens': 9, 'messages': [{'role': 'user', 'content': [{'type': 'text', 'text': "
          "'w?', 'cache_control': {'type': 'ephemeral', 'ttl': '5m'}}]},"
          " {'role': 'assistant', 'content': ["
          "  {'type': 'thinking', 'thinking': 'need weather', 'signature': 'sig=='},"
          "  {'type': 'redacted_thinking', 'data': 'xyz'},"
          "  {'type': 'server_tool_use', 'id': 'srv_1', 'name': 'web_search', 'input': {}},"
          "  {'type': 'web_search_tool_result', 'tool_use_id': 'srv_1', 'content': []},"
          "  {'type': 'text', 'text': 'checking', 'citations': [{'type': 'char_location'}]},"
          "  {'type': 'tool_use', 'id': 't1', 'name': 'get_weather', 'input': {'city': 'Oslo'}},"
          "  {'type': 'tool_use', 'id': 't2', 'name': 'get_weather', 'input': {'city': 'Lima'}}]},"
          " {'role': 'user', 'content': ["
          "  {'type': 'tool_result', 'tool_use_id': 't1', 'content': 'rain', 'cache_control': "
          "{'type': 'ephemeral'}},"
          "  {'type': 'tool_result', 'tool_use_id': 't2', 'is_error': true, 'content': ["
          "   {'type': 'text', 'text': 'no '}, {'type': 'text', 'text': 'data'}]}]}]}"),
        err, sizeof err);
    HR_CHECK(r, "%s", err);
    if (!r) return;
    HR_CHECK(n_msgs(r) == 4, "user, assistant, 2 tool messages: %zu", n_msgs(r));
    HR_CHECK(!strcmp(msg_str(r, 1, "content"), "checking") &&
                 !strcmp(msg_str(r, 1, "reasoning_content"), "need weather"),
             "assistant: [%s] [%s]", msg_str(r, 1, "content"), msg_str(r, 1, "reasoning_content"));
    const json_t *a = json_array_get(json_object_get(r->chat, "messages"), 1);
    HR_CHECK(json_array_size(json_object_get(a, "tool_calls")) == 2, "two tool calls");
    HR_CHECK(!strcmp(msg_str(r, 2, "content"), "rain") &&
                 !strcmp(msg_str(r, 3, "content"), "no data") &&
                 !strcmp(msg_str(r, 3, "tool_call_id"), "t2"),
             "tool results: [%s] [%s]", msg_str(r, 2, "content"), msg_str(r, 3, "content"));
    hr_api_request_free(r);
    r = parse(hr_parse_messages_request,
              q("{'max_tokens': 9, 'messages': [{'role': 'user', 'content': 'x'},"
                " {'role': 'assistant', 'content': [{'type': 'redacted_thinking', 'data': 'z'}]},"
                " {'role': 'user', 'content': 'y'}]}"),
              err, sizeof err);
    HR_CHECK(r && n_msgs(r) == 3 &&
                 !json_object_get(json_array_get(json_object_get(r->chat, "messages"), 1),
                                  "reasoning_content"),
             "only redacted thinking: an empty assistant turn: %s", err);
    hr_api_request_free(r);

    static const struct {
        const char *body, *want;
    } bad[] = {
        {"{'max_tokens': 5, 'messages': [{'role': 'user', 'content': [{'type': 'text', 'text': "
         "'x'}, {'type': 'document', 'source': {}}]}]}",
         "messages[0].content[1]: document blocks are not supported by this text-only model"},
        {"{'max_tokens': 5, 'messages': [{'role': 'user', 'content': [{'type': "
         "'search_result'}]}]}",
         "messages[0].content[0]: search_result blocks are not supported"},
        {"{'max_tokens': 5, 'messages': [{'role': 'user', 'content': [{'type': "
         "'container_upload', 'file_id': 'f'}]}]}",
         "messages[0].content[0]: container_upload blocks are not supported"},
        {"{'max_tokens': 5, 'messages': [{'role': 'user', 'content': 'x'}, {'role': 'assistant', "
         "'content': [{'type': 'tool_use', 'id': 'a', 'name': 'f', 'input': {}}]}, {'role': "
         "'user', 'content': [{'type': 'tool_result', 'tool_use_id': 'a', 'content': [{'type': "
         "'text', 'text': 'see'}, {'type': 'image', 'source': {}}]}]}]}",
         "messages[2].content[0].content[1]: image blocks are not supported by this text-only "
         "model"},
        {"{'max_tokens': 5, 'messages': [{'role': 'user', 'content': [{'type': 'tool_result', "
         "'tool_use_id': 'a', 'content': [{'type': 'tool_use'}]}]}]}",
         "messages[0].content[0].content[0]: only text blocks are accepted here"},
        {"{'max_tokens': 5, 'messages': [{'role': 'user', 'content': [{'type': 'tool_result', "
         "'tool_use_id': 'a', 'content': 7}]}]}",
         "messages[0].content[0].content must be a string or an array"},
        {"{'max_tokens': 5, 'messages': [{'role': 'user', 'content': [{'type': 'thinking', "
         "'thinking': 'x'}]}]}",
         "messages[0].content[0]: thinking blocks belong to assistant messages"},
        {"{'max_tokens': 5, 'messages': [{'role': 'assistant', 'content': [{'type': "
         "'thinking'}]}]}",
         "messages[0].content[0].thinking must be a string"},
        {"{'max_tokens': 5, 'messages': [{'role': 'assistant', 'content': [{'type': "
         "'tool_result', 'tool_use_id': 'a'}]}]}",
         "messages[0].content[0]: tool_result blocks belong to user messages"},
        {"{'max_tokens': 5, 'messages': [{'role': 'user', 'content': [{'text': 'x'}]}]}",
         "messages[0].content[0] must be a content block with a string type"},
        {"{'max_tokens': 5, 'messages': [{'role': 'user', 'content': [{'type': 'video'}]}]}",
         "messages[0].content[0]: unsupported content block (type video)"},
        {"{'max_tokens': 5, 'messages': [{'role': 'user', 'content': [{'type': 'text', 'text': "
         "5}]}]}",
         "messages[0].content[0].text must be a string"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char got[256] = "";
        HR_CHECK(rejects(hr_parse_messages_request, q(bad[i].body), bad[i].want, got, sizeof got),
                 "case %zu: wanted /%s/, got: %s", i, bad[i].want, got);
    }
}

/* Server tools (no input_schema) are accepted and not offered; fields that mean nothing
 * locally are accepted. */
static void test_messages_tools_and_ignored(void) {
    char err[256] = "";
    hr_api_request *r = parse(
        hr_parse_messages_request,
        q("{'model': 'claude-sonnet-4-5', 'max_tokens': 32000, 'top_k': 40, 'stop_sequences': "
          "['END'], 'metadata': {'user_id': 'u'}, 'service_tier': 'auto', 'container': 'c1',"
          " 'context_management': {'edits': [{'type': 'clear_tool_uses_20250919'}]},"
          " 'mcp_servers': [{'type': 'url', 'url': 'https://x', 'name': 'x'}],"
          " 'tool_choice': {'type': 'auto', 'disable_parallel_tool_use': true},"
          " 'tools': [{'type': 'web_search_20250305', 'name': 'web_search', 'max_uses': 5},"
          "  {'type': 'bash_20250124', 'name': 'bash'}, {'type': 'text_editor_20250728', 'name': "
          "'str_replace_based_edit_tool'},"
          "  {'type': 'computer_20250124', 'name': 'computer', 'display_width_px': 1024},"
          "  {'type': 'code_execution_20250825', 'name': 'code_execution'},"
          "  {'type': 'web_fetch_20250910', 'name': 'web_fetch'}, {'type': 'memory_20250818', "
          "'name': 'memory'},"
          "  {'type': 'custom', 'name': 'get_weather', 'input_schema': {'type': 'object'}, "
          "'cache_control': {'type': 'ephemeral'}},"
          "  {'name': 'read_file', 'description': 'd', 'input_schema': {'type': "
          "'object'}}], " USER_X "}"),
        err, sizeof err);
    HR_CHECK(r, "%s", err);
    if (!r) return;
    const json_t *tools = json_object_get(r->chat, "tools");
    HR_CHECK(r->use_tools && json_array_size(tools) == 2, "2 function tools, got %zu",
             json_array_size(tools));
    HR_CHECK(r->sampling.top_k == 40 && r->n_stop == 1 && r->max_tokens == 32000 &&
                 !strcmp(r->model, "claude-sonnet-4-5"),
             "top_k, stop_sequences, max_tokens, model");
    hr_api_request_free(r);
    r = parse(hr_parse_messages_request,
              q("{'max_tokens': 9, 'tools': [{'type': 'web_search_20250305', 'name': "
                "'web_search'}], " USER_X "}"),
              err, sizeof err);
    HR_CHECK(r && !r->use_tools && json_is_null(json_object_get(r->chat, "tools")),
             "server tools only: no tools offered: %s", err);
    hr_api_request_free(r);
    static const struct {
        const char *body, *want;
    } bad[] = {
        {"{'max_tokens': 5, 'tools': [{'type': 5, 'name': 'f'}], " USER_X "}",
         "tools[0].type must be a string"},
        {"{'max_tokens': 5, 'tools': [{'type': 'custom', 'name': 'f'}], " USER_X "}",
         "tools[0] needs a string name and an object input_schema"},
        {"{'max_tokens': 5, 'tool_choice': {'type': 'auto', 'disable_parallel_tool_use': "
         "'yes'}, " USER_X "}",
         "disable_parallel_tool_use"},
        {"{'max_tokens': 5, 'tools': [{'type': 'bash_20250124', 'name': 'bash'}], 'tool_choice': "
         "{'type': 'any'}, " USER_X "}",
         "forces a tool call needs a non-empty \"tools\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char got[256] = "";
        HR_CHECK(rejects(hr_parse_messages_request, q(bad[i].body), bad[i].want, got, sizeof got),
                 "case %zu: wanted /%s/, got: %s", i, bad[i].want, got);
    }
}

/* /v1/messages/count_tokens: the messages body without max_tokens. */
static void test_count_tokens_body(void) {
    char err[256] = "";
    hr_api_request *r = parse(hr_parse_count_tokens_request,
                              q("{'model': 'm', 'system': 's', " USER_X "}"), err, sizeof err);
    HR_CHECK(r && r->api == HR_API_MESSAGES && n_msgs(r) == 2 && r->max_tokens == 0,
             "no max_tokens: %s", err);
    hr_api_request_free(r);
    r = parse(hr_parse_count_tokens_request, q("{'max_tokens': 999999, " USER_X "}"), err,
              sizeof err);
    HR_CHECK(r, "max_tokens ignored: %s", err);
    hr_api_request_free(r);
    char got[256] = "";
    HR_CHECK(rejects(hr_parse_count_tokens_request, q("{'messages': []}"), "must not be empty", got,
                     sizeof got),
             "%s", got);
    HR_CHECK(rejects(hr_parse_count_tokens_request,
                     q("{'messages': [{'role': 'user', 'content': [{'type': 'image'}]}]}"),
                     "messages[0].content[0]: image blocks", got, sizeof got),
             "%s", got);
}

/* Parses body and applies hr_request_set_prefill for fmt; the prefill (or "" when none)
 * into buf, or the error message prefixed with "error: ". */
static void prefill_of(parse_fn fn, const char *body, hr_tool_format fmt, char *buf, size_t cap) {
    hr_api_request *r = parse(fn, body, buf, cap);
    if (!r) return;
    hr_err *e = hr_request_set_prefill(r, fmt);
    if (e)
        snprintf(buf, cap, "error: %s", hr_err_msg(e));
    else
        snprintf(buf, cap, "%s", r->prefill ? r->prefill : "");
    hr_err_free(e);
    hr_api_request_free(r);
}

#define CHAT_TOOLS_2                                                                               \
    "{" MSG ", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}},"             \
    " {\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}, "                       \
    "{\"type\": \"function\", \"function\": {\"name\": \"a-\\\"b\"}}]"
#define ANTH_TOOLS                                                                                 \
    "{\"max_tokens\": 5, \"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": "    \
    "[{\"name\": \"get_weather\", \"input_schema\": {}}]"

static void test_tool_choice(void) {
    char err[256] = "";
    hr_api_request *r = parse(hr_parse_chat_request,
                              CHAT_TOOLS_2 ", \"tool_choice\": \"required\"}", err, sizeof err);
    HR_CHECK(r && r->tool_choice == HR_TOOL_CHOICE_REQUIRED && r->use_tools &&
                 !r->tool_choice_name && !r->prefill,
             "required: %s", err);
    hr_api_request_free(r);
    static const struct {
        parse_fn fn;
        const char *body;
        hr_tool_format fmt;
        const char *want;
    } cases[] = {
        {hr_parse_chat_request, CHAT_TOOLS_2 ", \"tool_choice\": \"required\"}", HR_TOOLS_QWEN,
         "<tool_call>\n"},
        {hr_parse_chat_request,
         CHAT_TOOLS_2 ", \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": "
                      "\"get_weather\"}}}",
         HR_TOOLS_QWEN, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "},
        {hr_parse_chat_request, CHAT_TOOLS_2 ", \"tool_choice\": \"required\"}", HR_TOOLS_LLAMA3,
         "{\"name\": \""},
        {hr_parse_chat_request,
         CHAT_TOOLS_2 ", \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": "
                      "\"get_weather\"}}}",
         HR_TOOLS_LLAMA3, "{\"name\": \"get_weather\", \"parameters\": "},
        {hr_parse_chat_request, CHAT_TOOLS_2 ", \"tool_choice\": \"required\"}", HR_TOOLS_GEMMA,
         "```tool_code\n"},
        {hr_parse_chat_request,
         CHAT_TOOLS_2 ", \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": "
                      "\"get_weather\"}}}",
         HR_TOOLS_GEMMA, "```tool_code\nget_weather("},
        {hr_parse_chat_request,
         CHAT_TOOLS_2 ", \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": "
                      "\"a-\\\"b\"}}}",
         HR_TOOLS_QWEN, "<tool_call>\n{\"name\": \"a-\\\"b\", \"arguments\": "},
        {hr_parse_chat_request,
         CHAT_TOOLS_2 ", \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": "
                      "\"a-\\\"b\"}}}",
         HR_TOOLS_GEMMA, "error: request: \"tool_choice\" names \"a-\"b\", which Gemma's"},
        {hr_parse_chat_request, CHAT_TOOLS_2 ", \"tool_choice\": \"required\"}", HR_TOOLS_NONE,
         "error: request: this model's chat template has no known tool-call format"},
        {hr_parse_chat_request, CHAT_TOOLS_2 ", \"tool_choice\": \"auto\"}", HR_TOOLS_NONE, ""},
        {hr_parse_chat_request, CHAT_TOOLS_2 "}", HR_TOOLS_QWEN, ""},
        {hr_parse_messages_request, ANTH_TOOLS ", \"tool_choice\": {\"type\": \"any\"}}",
         HR_TOOLS_QWEN, "<tool_call>\n"},
        {hr_parse_messages_request,
         ANTH_TOOLS ", \"tool_choice\": {\"type\": \"tool\", \"name\": \"get_weather\"}}",
         HR_TOOLS_LLAMA3, "{\"name\": \"get_weather\", \"parameters\": "},
        {hr_parse_messages_request, ANTH_TOOLS ", \"tool_choice\": {\"type\": \"auto\"}}",
         HR_TOOLS_QWEN, ""},
        {hr_parse_messages_request,
         ANTH_TOOLS ", \"tool_choice\": {\"type\": \"tool\", \"name\": "
                    "\"get_weather\"}}",
         HR_TOOLS_NONE, "error: request: this model's chat template has no known"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char got[256] = "";
        prefill_of(cases[i].fn, cases[i].body, cases[i].fmt, got, sizeof got);
        HR_CHECK(!strncmp(got, cases[i].want, strlen(cases[i].want)) &&
                     (!strncmp(cases[i].want, "error: ", 7) || !strcmp(got, cases[i].want)),
                 "case %zu: wanted [%s], got [%s]", i, cases[i].want, got);
    }
    r = parse(hr_parse_messages_request, ANTH_TOOLS ", \"tool_choice\": {\"type\": \"none\"}}", err,
              sizeof err);
    HR_CHECK(r && !r->use_tools && r->tool_choice == HR_TOOL_CHOICE_AUTO, "anthropic none: %s",
             err);
    hr_api_request_free(r);
}

static void test_n(void) {
    char err[256] = "";
    hr_api_request *r =
        parse(hr_parse_chat_request, "{" MSG ", \"n\": 3, \"seed\": 5}", err, sizeof err);
    HR_CHECK(r && r->n == 3 && r->seed_set && r->sampling.seed == 5, "n 3: %s", err);
    hr_api_request_free(r);
    r = parse(hr_parse_chat_request, "{" MSG "}", err, sizeof err);
    HR_CHECK(r && r->n == 1, "default n: %s", err);
    hr_api_request_free(r);
    r = parse(
        hr_parse_messages_request,
        "{\"max_tokens\": 5, \"n\": 3, \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}",
        err, sizeof err);
    HR_CHECK(r && r->n == 1, "anthropic has no n: %s", err);
    hr_api_request_free(r);
}

static void test_tokenize_bodies(void) {
    json_t *j = json_loads("{\"content\": \"hi\", \"add_special_tokens\": false}", 0, NULL);
    const char *text;
    int special;
    HR_CHECK_OK(hr_parse_tokenize_request(j, &text, &special));
    HR_CHECK(!strcmp(text, "hi") && !special, "tokenize");
    json_decref(j);
    j = json_loads("{\"tokens\": [1, 2, 3]}", 0, NULL);
    int32_t *ids;
    int n;
    HR_CHECK_OK(hr_parse_detokenize_request(j, &LIM, &ids, &n));
    HR_CHECK(n == 3 && ids[2] == 3, "detokenize");
    free(ids);
    json_decref(j);
    j = json_loads("{\"tokens\": [1, -2]}", 0, NULL);
    hr_err *e = hr_parse_detokenize_request(j, &LIM, &ids, &n);
    HR_CHECK(e && strstr(hr_err_msg(e), "\"tokens\"[1]"), "bad id");
    hr_err_free(e);
    json_decref(j);
    j = json_loads("{\"text\": 1}", 0, NULL);
    e = hr_parse_tokenize_request(j, &text, &special);
    HR_CHECK(e && strstr(hr_err_msg(e), "\"content\""), "missing content");
    hr_err_free(e);
    json_decref(j);
}

/* max_tokens beyond the context (4096 here) is an upper bound the engine lowers, as are
 * huge values; xhigh effort is accepted. */
static void test_max_tokens_upper_bound(void) {
    char err[256] = "";
    hr_api_request *r = parse(hr_parse_chat_request,
                              "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}],"
                              " \"max_tokens\": 32000, \"reasoning_effort\": \"xhigh\"}",
                              err, sizeof err);
    HR_CHECK(r && r->max_tokens == 32000 && !strcmp(r->reasoning_effort, "xhigh"), "%s", err);
    hr_api_request_free(r);
    r = parse(hr_parse_messages_request,
              "{\"max_tokens\": 99999999999, \"messages\": [{\"role\": \"user\", \"content\": "
              "\"x\"}]}",
              err, sizeof err);
    HR_CHECK(r && r->max_tokens == INT32_MAX, "%s", err);
    hr_api_request_free(r);
}

int main(void) {
    HR_RUN(test_chat_full);
    HR_RUN(test_max_tokens_upper_bound);
    HR_RUN(test_chat_defaults);
    HR_RUN(test_penalty_window);
    HR_RUN(test_chat_errors);
    HR_RUN(test_completion);
    HR_RUN(test_messages);
    HR_RUN(test_messages_system_roles);
    HR_RUN(test_messages_thinking);
    HR_RUN(test_messages_history);
    HR_RUN(test_messages_tools_and_ignored);
    HR_RUN(test_count_tokens_body);
    HR_RUN(test_tool_choice);
    HR_RUN(test_n);
    HR_RUN(test_tokenize_bodies);
    return hr_test_summary();
}
