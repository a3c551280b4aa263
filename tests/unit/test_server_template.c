/* Parsed requests through the real chat templates (Qwen3, Llama 3.1, Gemma 3 from
 * scripts/fetch-tokenizers.sh): req->chat must render as hr_chat_template_apply expects,
 * tool history and Anthropic conversions included (system messages mid-conversation, with
 * the fold for templates without system turns; thinking history); output-format detection
 * per family. */
#include "harness.h"

#include "engine/prompt.h"
#include "server/output_parse.h"
#include "template/system_turns.h"
#include "template/template.h"

static const hr_request_limits LIM = {.max_tokens_limit = 4096};

typedef hr_err *(*parse_fn)(const json_t *, const hr_request_limits *, hr_api_request **);

/* Renders body (parsed with fn) through the template of .cache/tokenizers/NAME. */
static hr_err *render(const char *name, parse_fn fn, const char *body, char **out) {
    char dir[256];
    snprintf(dir, sizeof dir, ".cache/tokenizers/%s", name);
    hr_chat_template ct;
    HR_TRY(hr_chat_template_load(dir, NULL, &ct));
    json_t *j = json_loads(body, 0, NULL);
    hr_api_request *r = NULL;
    hr_err *e = j ? fn(j, &LIM, &r) : hr_errf("test body is not JSON");
    if (!e) e = hr_chat_template_apply(&ct, r->chat, out, NULL);
    hr_api_request_free(r);
    json_decref(j);
    hr_chat_template_free(&ct);
    return e;
}

static const char *CHAT_TOOLS =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"},"
    " {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"weather in Paris?\"}]},"
    " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"c1\", \"type\": "
    "\"function\","
    "   \"function\": {\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": "
    "\\\"Paris\\\"}\"}}]},"
    " {\"role\": \"tool\", \"tool_call_id\": \"c1\", \"content\": \"sunny\"}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
    "\"description\": \"d\","
    "   \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": "
    "\"string\"}}}}}],"
    " \"chat_template_kwargs\": {\"enable_thinking\": false}}";

static void test_qwen3_tools(void) {
    char *out = NULL;
    HR_CHECK_OK(render("qwen3", hr_parse_chat_request, CHAT_TOOLS, &out));
    HR_CHECK(strstr(out, "<|im_start|>system\nbe brief") && strstr(out, "<tools>") &&
                 strstr(out, "\"name\": \"get_weather\""),
             "system + tools: %s", out);
    HR_CHECK(
        strstr(out,
               "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"),
        "assistant tool call rendered with object arguments: %s", out);
    HR_CHECK(strstr(out, "<tool_response>\nsunny\n</tool_response>"), "tool result: %s", out);
    HR_CHECK(strstr(out, "<|im_start|>assistant\n<think>\n\n</think>\n\n"),
             "enable_thinking false closes the think block: %s", out + strlen(out) - 60);
    HR_CHECK(!hr_prompt_in_reasoning(out), "closed think");
    free(out);
}

static void test_qwen3_anthropic(void) {
    char *out = NULL;
    HR_CHECK_OK(render(
        "qwen3", hr_parse_messages_request,
        "{\"max_tokens\": 9, \"system\": \"sys\", \"tools\": [{\"name\": \"get_weather\", "
        "\"input_schema\":"
        " {\"type\": \"object\"}}], \"messages\": [{\"role\": \"user\", \"content\": \"w?\"},"
        " {\"role\": \"assistant\", \"content\": [{\"type\": \"tool_use\", \"id\": \"t1\", "
        "\"name\": \"get_weather\","
        "  \"input\": {\"city\": \"Oslo\"}}]}, {\"role\": \"user\", \"content\": [{\"type\": "
        "\"tool_result\","
        "  \"tool_use_id\": \"t1\", \"content\": \"rain\"}]}]}",
        &out));
    HR_CHECK(strstr(out, "<|im_start|>system\nsys") &&
                 strstr(out, "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}") &&
                 strstr(out, "<tool_response>\nrain\n</tool_response>"),
             "anthropic conversation: %s", out);
    free(out);
}

static void test_llama_gemma_render(void) {
    const char *plain = "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"},"
                        " {\"role\": \"user\", \"content\": \"hello\"}]}";
    char *out = NULL;
    HR_CHECK_OK(render("llama3_1", hr_parse_chat_request, plain, &out));
    HR_CHECK(strstr(out, "<|start_header_id|>user<|end_header_id|>\n\nhello<|eot_id|>") &&
                 strstr(out, "<|start_header_id|>assistant<|end_header_id|>"),
             "llama: %s", out);
    free(out);
    HR_CHECK_OK(render("gemma3", hr_parse_chat_request, plain, &out));
    HR_CHECK(strstr(out, "<start_of_turn>user\nS\n\nhello<end_of_turn>") &&
                 strstr(out, "<start_of_turn>model\n"),
             "gemma: %s", out);
    free(out);
}

/* As the engine renders: later system messages folded when the template has no system
 * turns. *turns gets hr_chat_template_system_turns. */
static hr_err *render_engine(const char *dir, const char *body, char **out, int *turns) {
    hr_chat_template ct;
    HR_TRY(hr_chat_template_load(dir, NULL, &ct));
    *turns = hr_chat_template_system_turns(&ct);
    json_t *j = json_loads(body, 0, NULL), *folded = NULL;
    hr_api_request *r = NULL;
    hr_err *e = j ? hr_parse_messages_request(j, &LIM, &r) : hr_errf("test body is not JSON");
    if (!e && !*turns) e = hr_chat_fold_system(r->chat, &folded);
    if (!e) e = hr_chat_template_apply(&ct, folded ? folded : r->chat, out, NULL);
    json_decref(folded);
    hr_api_request_free(r);
    json_decref(j);
    hr_chat_template_free(&ct);
    return e;
}

static const char *MID_SYSTEM =
    "{\"max_tokens\": 9, \"system\": \"top\", \"messages\": ["
    " {\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"yo\"},"
    " {\"role\": \"system\", \"content\": [{\"type\": \"text\", \"text\": \"mid\"}]},"
    " {\"role\": \"user\", \"content\": \"more\"}]}";

/* Qwen3 and Llama 3.1 render a later system message as a system turn; Gemma 3 raises on
 * it (roles must alternate), so it is folded into the system text Gemma puts before the
 * first user turn. */
static void test_mid_system(void) {
    static const struct {
        const char *dir;
        int turns;
        const char *want;
    } cases[] = {
        {".cache/tokenizers/qwen3", 1,
         "<|im_start|>system\ntop<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
         "<|im_start|>assistant\nyo<|im_end|>\n<|im_start|>system\nmid<|im_end|>\n"
         "<|im_start|>user\nmore<|im_end|>\n<|im_start|>assistant\n"},
        {"models/qwen3-tools-20m", 1, /* a fixture */
         "<|im_start|>assistant\nyo<|im_end|>\n<|im_start|>system\nmid<|im_end|>\n"},
        {".cache/tokenizers/llama3_1", 1,
         "<|start_header_id|>assistant<|end_header_id|>\n\nyo<|eot_id|><|start_header_id|>"
         "system<|end_header_id|>\n\nmid<|eot_id|><|start_header_id|>user<|end_header_id|>"
         "\n\nmore<|eot_id|>"},
        {".cache/tokenizers/gemma3", 0,
         "<start_of_turn>user\ntop\n\nmid\n\nhi<end_of_turn>\n<start_of_turn>model\nyo"
         "<end_of_turn>\n<start_of_turn>user\nmore<end_of_turn>\n<start_of_turn>model\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *out = NULL;
        int turns = -1;
        const char *dir =
            strncmp(cases[i].dir, "models/", 7) ? cases[i].dir : hr_fixture(cases[i].dir);
        hr_err *e = render_engine(dir, MID_SYSTEM, &out, &turns);
        HR_CHECK(!e, "%s: %s", cases[i].dir, e ? hr_err_msg(e) : "");
        hr_err_free(e);
        HR_CHECK(turns == cases[i].turns, "%s: system turns %d", cases[i].dir, turns);
        HR_CHECK(out && strstr(out, cases[i].want), "%s: %s", cases[i].dir, out ? out : "");
        free(out);
    }
    /* Without the fold Gemma 3 refuses the conversation. */
    char *out = NULL;
    hr_err *e = render("gemma3", hr_parse_messages_request, MID_SYSTEM, &out);
    HR_CHECK(e && strstr(hr_err_msg(e), "alternate"), "gemma raw: %s", e ? hr_err_msg(e) : out);
    hr_err_free(e);
    free(out);
}

/* Qwen3 with tools: the leading system goes into the tools header, a later one is a turn. */
static void test_mid_system_tools(void) {
    char *out = NULL;
    HR_CHECK_OK(
        render("qwen3", hr_parse_messages_request,
               "{\"max_tokens\": 9, \"messages\": [{\"role\": \"system\", \"content\": \"lead\"},"
               " {\"role\": \"user\", \"content\": \"w?\"}, {\"role\": \"system\", \"content\": "
               "\"late\"}],"
               " \"tools\": [{\"name\": \"get_weather\", \"input_schema\": {\"type\": \"object\"}},"
               " {\"type\": \"web_search_20250305\", \"name\": \"web_search\"}]}",
               &out));
    HR_CHECK(
        strstr(out, "<|im_start|>system\nlead\n\n# Tools") &&
            strstr(out, "<|im_start|>user\nw?<|im_end|>\n<|im_start|>system\nlate<|im_end|>") &&
            !strstr(out, "web_search"),
        "qwen3 tools: %s", out);
    free(out);
}

/* Thinking blocks in history: Qwen3 shows reasoning_content for assistant turns after the
 * last user query (the tool chain being answered) and drops it from earlier turns; Llama
 * and Gemma ignore it. */
static const char *THINKING_HISTORY =
    "{\"max_tokens\": 9, \"thinking\": {\"type\": \"adaptive\"}, \"tools\": [{\"name\": "
    "\"get_weather\", \"input_schema\": {\"type\": \"object\"}}], \"messages\": ["
    " {\"role\": \"user\", \"content\": \"hello\"},"
    " {\"role\": \"assistant\", \"content\": [{\"type\": \"thinking\", \"thinking\": \"old "
    "thought\", \"signature\": \"s\"}, {\"type\": \"text\", \"text\": \"hi\"}]},"
    " {\"role\": \"user\", \"content\": \"weather in Oslo?\"},"
    " {\"role\": \"assistant\", \"content\": [{\"type\": \"thinking\", \"thinking\": \"call "
    "it\", \"signature\": \"s\"}, {\"type\": \"redacted_thinking\", \"data\": \"x\"},"
    "  {\"type\": \"tool_use\", \"id\": \"t1\", \"name\": \"get_weather\", \"input\": "
    "{\"city\": \"Oslo\"}}]},"
    " {\"role\": \"user\", \"content\": [{\"type\": \"tool_result\", \"tool_use_id\": \"t1\", "
    "\"content\": [{\"type\": \"text\", \"text\": \"sunny\"}]}]}]}";

static void test_thinking_history(void) {
    char *out = NULL;
    HR_CHECK_OK(render("qwen3", hr_parse_messages_request, THINKING_HISTORY, &out));
    HR_CHECK(strstr(out, "<|im_start|>assistant\n<think>\ncall it\n</think>\n\n<tool_call>\n"
                         "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}") &&
                 !strstr(out, "old thought") &&
                 strstr(out, "<|im_start|>assistant\nhi<|im_end|>") &&
                 strstr(out, "<tool_response>\nsunny\n</tool_response>"),
             "qwen3: %s", out);
    const char *tail = "<|im_start|>assistant\n";
    HR_CHECK(!strcmp(out + strlen(out) - strlen(tail), tail), "adaptive: no closed think");
    free(out);
    /* Gemma 3 has no tool turns (a tool message breaks its alternation): plain history. */
    const char *plain =
        "{\"max_tokens\": 9, \"messages\": [{\"role\": \"user\", \"content\": \"hello\"},"
        " {\"role\": \"assistant\", \"content\": [{\"type\": \"thinking\", \"thinking\": "
        "\"a thought\", \"signature\": \"s\"}, {\"type\": \"text\", \"text\": \"hi\"}]},"
        " {\"role\": \"user\", \"content\": \"bye\"}]}";
    static const char *const others[] = {"llama3_1", "gemma3"};
    for (size_t i = 0; i < 2; i++) {
        HR_CHECK_OK(render(others[i], hr_parse_messages_request, plain, &out));
        HR_CHECK(!strstr(out, "thought") && strstr(out, "hi") && strstr(out, "bye"), "%s: %s",
                 others[i], out);
        free(out);
    }
}

static void test_detect(void) {
    static const struct {
        const char *name;
        hr_tool_format tools;
        int reasoning;
    } cases[] = {{"qwen3", HR_TOOLS_QWEN, 1},
                 {"llama3_1", HR_TOOLS_LLAMA3, 0},
                 {"gemma3", HR_TOOLS_GEMMA, 0}};
    /* Detection reads the template source, as the server's backend adapter will. */
    for (size_t i = 0; i < 3; i++) {
        char path[256];
        snprintf(path, sizeof path, ".cache/tokenizers/%s/tokenizer_config.json", cases[i].name);
        json_t *cfg =
            json_load_file(path, JSON_DECODE_INT_AS_REAL, NULL); /* huge model_max_length */
        const char *src = json_string_value(json_object_get(cfg, "chat_template"));
        HR_CHECK(src, "%s has a chat_template string", cases[i].name);
        hr_tool_format f;
        int reasoning;
        hr_output_format_detect(src, &f, &reasoning);
        HR_CHECK(f == cases[i].tools && reasoning == cases[i].reasoning, "%s: %d %d", cases[i].name,
                 f, reasoning);
        json_decref(cfg);
    }
    hr_tool_format f;
    int reasoning;
    hr_output_format_detect("{{ messages }}", &f, &reasoning);
    HR_CHECK(f == HR_TOOLS_NONE && !reasoning, "plain template");
    HR_CHECK(hr_prompt_in_reasoning("<|im_start|>assistant\n<think>\n"), "open think");
    HR_CHECK(!hr_prompt_in_reasoning("<think>a</think> x"), "closed");
    HR_CHECK(hr_prompt_in_reasoning("<think>a</think> <think>"), "reopened");
    HR_CHECK(!hr_prompt_in_reasoning("no think"), "none");
}

int main(void) {
    if (system("bash scripts/fetch-tokenizers.sh >/dev/null") != 0) {
        printf("FAIL fetch: scripts/fetch-tokenizers.sh failed\n# 0 passed, 1 failed\n");
        return 1;
    }
    HR_RUN(test_qwen3_tools);
    HR_RUN(test_qwen3_anthropic);
    HR_RUN(test_llama_gemma_render);
    HR_RUN(test_mid_system);
    HR_RUN(test_mid_system_tools);
    HR_RUN(test_thinking_history);
    HR_RUN(test_detect);
    return hr_test_summary();
}
