/* The Responses API without HTTP: request bodies into chat-template messages (every item
 * kind, every error naming its field), the response store (LRU by count and bytes), and
 * the response object and event stream built from scripted engine events, including a
 * previous_response_id continuation through the store. */
#include "harness.h"

#include "server/reply.h"
#include "server/response_store.h"

static const hr_server_backend BE = {
    .tool_format = HR_TOOLS_QWEN, .reasoning = 1, .limits = {.max_tokens_limit = 1000}};

/* Parses src (NULL on error, the message into err). */
static hr_api_request *parse(const char *src, hr_response_store *store, char *err, size_t cap) {
    json_error_t je;
    json_t *j = json_loads(src, 0, &je);
    if (!j) {
        snprintf(err, cap, "test JSON does not parse (%s): %s", je.text, src);
        return NULL;
    }
    hr_api_request *r = NULL;
    hr_err *e = hr_parse_responses_request(j, &BE.limits, store, &r);
    json_decref(j);
    if (e) {
        snprintf(err, cap, "%s", hr_err_msg(e));
        hr_err_free(e);
    }
    return r;
}

static const json_t *msg(const hr_api_request *r, size_t i) {
    return json_array_get(json_object_get(r->chat, "messages"), i);
}

static const char *str(const json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "(none)";
}

static void test_string_input(void) {
    char err[256] = "";
    hr_api_request *r =
        parse("{\"model\": \"m\", \"input\": \"Hi\", \"instructions\": \"Be brief.\", "
              "\"max_output_tokens\": 50, \"temperature\": 0.5, \"top_p\": 0.9, \"stream\": true, "
              "\"store\": false, \"unknown\": 1, \"metadata\": {\"k\": \"v\"}, \"user\": \"u\", "
              "\"include\": [\"reasoning.encrypted_content\"], \"truncation\": \"auto\", "
              "\"prompt_cache_key\": \"p\", \"safety_identifier\": \"s\", \"service_tier\": "
              "\"auto\", \"background\": false, \"stream_options\": {}, \"parallel_tool_calls\": "
              "false, \"text\": {\"format\": {\"type\": \"text\"}, \"verbosity\": \"low\"}}",
              NULL, err, sizeof err);
    HR_CHECK(r, "%s", err);
    HR_CHECK(r->api == HR_API_RESPONSES && r->stream && r->max_tokens == 50 &&
                 r->sampling.temperature == 0.5f && r->sampling.top_p == 0.9f && r->n == 1,
             "fields");
    HR_CHECK(json_array_size(json_object_get(r->chat, "messages")) == 2, "two messages");
    HR_CHECK(!strcmp(str(msg(r, 0), "role"), "system") &&
                 !strcmp(str(msg(r, 0), "content"), "Be brief."),
             "instructions first");
    HR_CHECK(!strcmp(str(msg(r, 1), "role"), "user") && !strcmp(str(msg(r, 1), "content"), "Hi"),
             "user");
    const json_t *echo = json_object_get(r->responses, "echo");
    HR_CHECK(!strcmp(str(echo, "instructions"), "Be brief.") &&
                 json_is_false(json_object_get(echo, "store")) &&
                 json_is_false(json_object_get(echo, "parallel_tool_calls")) &&
                 json_integer_value(json_object_get(echo, "max_output_tokens")) == 50 &&
                 !strcmp(str(json_object_get(echo, "metadata"), "k"), "v") &&
                 !strcmp(str(json_object_get(echo, "text"), "verbosity"), "low"),
             "echo");
    HR_CHECK(json_array_size(json_object_get(r->responses, "input")) == 1,
             "stored input has no instructions");
    hr_api_request_free(r);
}

/* Every item kind, and how a turn's pieces merge into one assistant message. */
static void test_items(void) {
    char err[256] = "";
    hr_api_request *r = parse(
        "{\"input\": ["
        " {\"role\": \"developer\", \"content\": \"dev\"},"
        " {\"type\": \"message\", \"role\": \"user\", \"content\": [{\"type\": \"input_text\", "
        "\"text\": \"a\"}, {\"type\": \"text\", \"text\": \"b\"}]},"
        " {\"type\": \"reasoning\", \"id\": \"rs_1\", \"summary\": [], \"content\": [{\"type\": "
        "\"reasoning_text\", \"text\": \"hmm\"}], \"encrypted_content\": \"xyz\"},"
        " {\"type\": \"message\", \"role\": \"assistant\", \"content\": [{\"type\": "
        "\"output_text\", \"text\": \"Let me look.\"}]},"
        " {\"type\": \"function_call\", \"call_id\": \"c1\", \"name\": \"f\", \"arguments\": "
        "\"{\\\"x\\\": 1}\"},"
        " {\"type\": \"function_call\", \"call_id\": \"c2\", \"name\": \"g\", \"arguments\": "
        "\"{}\"},"
        " {\"type\": \"function_call_output\", \"call_id\": \"c1\", \"output\": \"one\"},"
        " {\"type\": \"function_call_output\", \"call_id\": \"c2\", \"output\": [{\"type\": "
        "\"input_text\", \"text\": \"two\"}]},"
        " {\"type\": \"reasoning\", \"summary\": [{\"type\": \"summary_text\", \"text\": "
        "\"sum\"}]},"
        " {\"role\": \"assistant\", \"content\": \"Done.\"},"
        " {\"type\": \"reasoning\", \"summary\": [], \"encrypted_content\": \"only\"},"
        " {\"role\": \"user\", \"content\": \"thanks\"}]}",
        NULL, err, sizeof err);
    HR_CHECK(r, "%s", err);
    const json_t *msgs = json_object_get(r->chat, "messages");
    HR_CHECK(json_array_size(msgs) == 7, "7 messages, got %zu: %s", json_array_size(msgs),
             json_dumps(msgs, JSON_COMPACT));
    HR_CHECK(!strcmp(str(msg(r, 0), "role"), "system"), "developer -> system");
    HR_CHECK(!strcmp(str(msg(r, 1), "content"), "ab"), "parts joined");
    const json_t *a = msg(r, 2);
    HR_CHECK(!strcmp(str(a, "role"), "assistant") && !strcmp(str(a, "content"), "Let me look.") &&
                 !strcmp(str(a, "reasoning_content"), "hmm"),
             "reasoning + text + calls in one assistant message");
    const json_t *calls = json_object_get(a, "tool_calls");
    HR_CHECK(json_array_size(calls) == 2, "two calls merged");
    const json_t *c0 = json_array_get(calls, 0);
    HR_CHECK(!strcmp(str(c0, "id"), "c1") &&
                 !strcmp(str(json_object_get(c0, "function"), "name"), "f") &&
                 json_integer_value(json_object_get(
                     json_object_get(json_object_get(c0, "function"), "arguments"), "x")) == 1,
             "call with object arguments");
    HR_CHECK(!strcmp(str(msg(r, 3), "role"), "tool") &&
                 !strcmp(str(msg(r, 3), "tool_call_id"), "c1") &&
                 !strcmp(str(msg(r, 4), "content"), "two"),
             "tool messages");
    HR_CHECK(!strcmp(str(msg(r, 5), "reasoning_content"), "sum") &&
                 !strcmp(str(msg(r, 5), "content"), "Done."),
             "summary reasoning then answer");
    HR_CHECK(!strcmp(str(msg(r, 6), "content"), "thanks"), "encrypted-only reasoning ignored");
    hr_api_request_free(r);
}

static void test_tools(void) {
    char err[256] = "";
    hr_api_request *r = parse(
        "{\"input\": \"x\", \"tools\": [{\"type\": \"function\", \"name\": \"get_weather\", "
        "\"description\": \"d\", \"parameters\": {\"type\": \"object\"}, \"strict\": true},"
        " {\"type\": \"web_search_preview\"}, {\"type\": \"mcp\", \"server_label\": \"s\"},"
        " {\"type\": \"custom\", \"name\": \"c\"}], \"tool_choice\": {\"type\": \"function\", "
        "\"name\": \"get_weather\"}, \"parallel_tool_calls\": true}",
        NULL, err, sizeof err);
    HR_CHECK(r, "%s", err);
    const json_t *tools = json_object_get(r->chat, "tools");
    HR_CHECK(json_array_size(tools) == 1, "only the function tool offered");
    const json_t *fn = json_object_get(json_array_get(tools, 0), "function");
    HR_CHECK(!strcmp(str(json_array_get(tools, 0), "type"), "function") &&
                 !strcmp(str(fn, "name"), "get_weather") && !strcmp(str(fn, "description"), "d") &&
                 json_is_object(json_object_get(fn, "parameters")) &&
                 json_is_true(json_object_get(fn, "strict")),
             "template form");
    HR_CHECK(r->use_tools && r->tool_choice == HR_TOOL_CHOICE_NAMED &&
                 !strcmp(r->tool_choice_name, "get_weather"),
             "named tool_choice");
    HR_CHECK(json_array_size(json_object_get(json_object_get(r->responses, "echo"), "tools")) == 4,
             "echo keeps the tools as given");
    hr_api_request_free(r);
    r = parse("{\"input\": \"x\", \"tools\": [{\"type\": \"function\", \"name\": \"f\"}], "
              "\"tool_choice\": \"none\"}",
              NULL, err, sizeof err);
    HR_CHECK(r && !r->use_tools && json_is_null(json_object_get(r->chat, "tools")), "none");
    hr_api_request_free(r);
    r = parse("{\"input\": \"x\", \"tools\": [{\"type\": \"function\", \"name\": \"f\"}], "
              "\"tool_choice\": \"required\"}",
              NULL, err, sizeof err);
    HR_CHECK(r && r->tool_choice == HR_TOOL_CHOICE_REQUIRED, "required");
    hr_api_request_free(r);
    r = parse("{\"input\": \"x\", \"tools\": [{\"type\": \"web_search\"}]}", NULL, err, sizeof err);
    HR_CHECK(r && !r->use_tools, "hosted tools only: no tools offered");
    hr_api_request_free(r);
}

static void test_reasoning(void) {
    char err[256] = "";
    hr_api_request *r =
        parse("{\"input\": \"x\", \"reasoning\": {\"effort\": \"none\"}}", NULL, err, sizeof err);
    HR_CHECK(r, "%s", err);
    const json_t *kw = json_object_get(r->chat, "kwargs");
    HR_CHECK(json_is_false(json_object_get(kw, "enable_thinking")) &&
                 !strcmp(str(kw, "reasoning_effort"), "none") &&
                 !strcmp(r->reasoning_effort, "none"),
             "effort none turns thinking off");
    hr_api_request_free(r);
    r = parse("{\"input\": \"x\", \"reasoning\": {\"effort\": \"xhigh\", \"summary\": \"auto\"}}",
              NULL, err, sizeof err);
    HR_CHECK(r && !json_object_get(json_object_get(r->chat, "kwargs"), "enable_thinking") &&
                 !strcmp(r->reasoning_effort, "xhigh"),
             "xhigh: %s", err);
    hr_api_request_free(r);
}

static void test_errors(void) {
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"[1]", "must be a JSON object"},
        {"{}", "\"input\" is required"},
        {"{\"input\": []}", "\"input\" must not be empty"},
        {"{\"input\": 5}", "\"input\" must be a string or an array"},
        {"{\"input\": [5]}", "input[0] must be an object"},
        {"{\"input\": [{\"role\": \"tool\", \"content\": \"x\"}]}", "input[0].role must be one of"},
        {"{\"input\": [{\"role\": \"user\"}]}", "input[0].content is required"},
        {"{\"input\": [{\"role\": \"user\", \"content\": 3}]}",
         "input[0].content must be a string"},
        {"{\"input\": [{\"role\": \"user\", \"content\": [{\"type\": \"input_image\", "
         "\"image_url\": \"u\"}]}]}",
         "input[0].content[0] is an input_image part; this server is text-only"},
        {"{\"input\": [{\"role\": \"user\", \"content\": [{\"type\": \"input_file\"}]}]}",
         "input[0].content[0] is an input_file part"},
        {"{\"input\": [{\"role\": \"user\", \"content\": [{\"type\": \"weird\"}]}]}",
         "input[0].content[0].type must be input_text"},
        {"{\"input\": [{\"role\": \"user\", \"content\": [{\"type\": \"input_text\"}]}]}",
         "input[0].content[0].text must be a string"},
        {"{\"input\": [{\"type\": \"function_call\", \"name\": \"f\", \"arguments\": \"{}\"}]}",
         "input[0].call_id must be a string"},
        {"{\"input\": [{\"type\": \"function_call\", \"call_id\": \"c\", \"arguments\": \"{}\"}]}",
         "input[0].name must be a string"},
        {"{\"input\": [{\"type\": \"function_call\", \"call_id\": \"c\", \"name\": \"f\", "
         "\"arguments\": \"[1\"}]}",
         "input[0].arguments must be a string holding a JSON object"},
        {"{\"input\": [{\"type\": \"function_call_output\", \"output\": \"x\"}]}",
         "input[0].call_id must be a string"},
        {"{\"input\": [{\"type\": \"function_call_output\", \"call_id\": \"c\"}]}",
         "input[0].output is required"},
        {"{\"input\": [{\"type\": \"reasoning\", \"summary\": 1}]}",
         "input[0]: a reasoning item's summary and content must be arrays"},
        {"{\"input\": [{\"type\": \"item_reference\", \"id\": \"msg_1\"}]}",
         "input[0]: item_reference is not supported"},
        {"{\"input\": [{\"type\": \"computer_call_output\"}]}",
         "input[0].type \"computer_call_output\" is not supported"},
        {"{\"input\": \"x\", \"instructions\": 3}", "\"instructions\""},
        {"{\"input\": \"x\", \"tools\": {}}", "\"tools\" must be an array"},
        {"{\"input\": \"x\", \"tools\": [{\"name\": \"f\"}]}", "tools[0].type must be a string"},
        {"{\"input\": \"x\", \"tools\": [{\"type\": \"function\"}]}",
         "tools[0].name must be a string"},
        {"{\"input\": \"x\", \"tools\": [{\"type\": \"function\", \"name\": \"f\", "
         "\"parameters\": 1}]}",
         "tools[0].parameters must be an object"},
        {"{\"input\": \"x\", \"tool_choice\": \"always\"}", "\"tool_choice\" must be"},
        {"{\"input\": \"x\", \"tool_choice\": {\"type\": \"function\"}}",
         "needs a string \"name\""},
        {"{\"input\": \"x\", \"tool_choice\": {\"type\": \"file_search\"}}",
         "\"tool_choice\" type \"file_search\" is not supported"},
        {"{\"input\": \"x\", \"tool_choice\": \"required\"}", "needs a non-empty \"tools\""},
        {"{\"input\": \"x\", \"tools\": [{\"type\": \"function\", \"name\": \"f\"}], "
         "\"tool_choice\": {\"type\": \"function\", \"name\": \"g\"}}",
         "names the tool \"g\", which is not in \"tools\""},
        {"{\"input\": \"x\", \"max_output_tokens\": 0}", "\"max_output_tokens\""},
        {"{\"input\": \"x\", \"temperature\": \"hot\"}", "\"temperature\""},
        {"{\"input\": \"x\", \"top_p\": 2}", "\"top_p\" must be in"},
        {"{\"input\": \"x\", \"reasoning\": \"high\"}", "\"reasoning\" must be an object"},
        {"{\"input\": \"x\", \"reasoning\": {\"effort\": \"max\"}}",
         "\"reasoning.effort\" must be one of none, minimal, low, medium, high, xhigh"},
        {"{\"input\": \"x\", \"reasoning\": {\"summary\": 1}}",
         "\"reasoning.summary\" must be a string"},
        {"{\"input\": \"x\", \"text\": {\"format\": {\"type\": \"json_schema\", \"name\": \"s\", "
         "\"schema\": 5}}}",
         "\"text.format.schema\" must be a JSON schema object"},
        {"{\"input\": \"x\", \"text\": {\"format\": {\"type\": \"xml\"}}}",
         "\"text.format\".type must be \"text\", \"json_object\" or \"json_schema\""},
        {"{\"input\": \"x\", \"text\": {\"verbosity\": \"loud\"}}",
         "\"text.verbosity\" must be one of"},
        {"{\"input\": \"x\", \"text\": 1}", "\"text\" must be an object"},
        {"{\"input\": \"x\", \"background\": true}", "\"background\": true is not supported"},
        {"{\"input\": \"x\", \"store\": \"yes\"}", "\"store\""},
        {"{\"input\": \"x\", \"stream\": 1}", "\"stream\""},
        {"{\"input\": \"x\", \"metadata\": []}", "\"metadata\" must be an object"},
        {"{\"input\": \"x\", \"stream_options\": 1}", "\"stream_options\" must be an object"},
        {"{\"input\": \"x\", \"include\": \"all\"}", "\"include\" must be an array"},
        {"{\"input\": \"x\", \"include\": [1]}", "\"include\"[0] must be a string"},
        {"{\"input\": \"x\", \"truncation\": \"cut\"}",
         "\"truncation\" must be one of auto, disabled"},
        {"{\"input\": \"x\", \"user\": 1}", "\"user\""},
        {"{\"input\": \"x\", \"conversation\": \"conv_1\"}", "\"conversation\" is not supported"},
        {"{\"input\": \"x\", \"prompt\": {\"id\": \"p\"}}", "\"prompt\" is not supported"},
        {"{\"input\": \"x\", \"previous_response_id\": \"resp_nope\"}",
         "Previous response with id 'resp_nope' not found."},
        {"{\"input\": \"x\", \"previous_response_id\": 7}", "\"previous_response_id\""},
        {"{\"input\": \"x\", \"model\": 7}", "\"model\""},
    };
    hr_response_store *st = hr_response_store_create(4, 1 << 20);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char err[512] = "";
        hr_api_request *r = parse(cases[i].body, st, err, sizeof err);
        int ok = !r && strstr(err, cases[i].want);
        hr_api_request_free(r);
        if (!ok) hr_response_store_destroy(st);
        HR_CHECK(ok, "case %zu %s: wanted /%s/, got: %s", i, cases[i].body, cases[i].want,
                 r ? "accepted" : err);
    }
    hr_response_store_destroy(st);
}

/* The param of a Responses error body names the field. */
static void test_error_param(void) {
    static const struct {
        const char *msg, *param;
    } cases[] = {
        {"Previous response with id 'x' not found.", "previous_response_id"},
        {"request: \"text.format\" type \"json_schema\" needs", "text.format"},
        {"input[3].call_id must be a string", "input[3].call_id"},
        {"input[0]: item_reference is not supported", "input[0]"},
        {"tools[1].name must be a string", "tools[1].name"},
        {"request: a \"tool_choice\" that forces", "tool_choice"},
        {"request body must be a JSON object", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *b = hr_error_body(HR_API_RESPONSES, 400, cases[i].msg);
        const json_t *p = json_object_get(json_object_get(b, "error"), "param");
        int ok = cases[i].param ? json_is_string(p) && !strcmp(json_string_value(p), cases[i].param)
                                : json_is_null(p);
        ok = ok && !strcmp(str(json_object_get(b, "error"), "message"), cases[i].msg);
        json_decref(b);
        HR_CHECK(ok, "case %zu: %s", i, cases[i].msg);
    }
    json_t *b = hr_error_body(HR_API_CHAT, 400, "input[0] x");
    int chat_ok = !json_object_get(json_object_get(b, "error"), "param");
    json_decref(b);
    HR_CHECK(chat_ok, "chat errors have no param");
}

static void test_store(void) {
    hr_response_store *s = hr_response_store_create(3, 1 << 20);
    char id[16];
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof id, "r%d", i);
        HR_CHECK(hr_response_store_put(s, id, json_pack("{s:i}", "n", i), json_array()), "put");
        if (i == 2) json_decref(hr_response_store_get(s, "r0", NULL, NULL)); /* r0 recently used */
    }
    size_t n, bytes;
    hr_response_store_usage(s, &n, &bytes);
    HR_CHECK(n == 3 && bytes > 0, "bounded by count: %zu", n);
    json_t *conv = NULL, *r0 = hr_response_store_get(s, "r0", &conv, NULL);
    HR_CHECK(r0 && json_integer_value(json_object_get(r0, "n")) == 0 && json_is_array(conv),
             "recently used kept");
    json_decref(r0);
    json_decref(conv);
    json_t *r1 = hr_response_store_get(s, "r1", NULL, NULL);
    HR_CHECK(!r1 && !hr_response_store_get(s, "r2", NULL, NULL), "least recently used evicted");
    HR_CHECK(hr_response_store_delete(s, "r4") && !hr_response_store_delete(s, "r4") &&
                 !hr_response_store_get(s, "r4", NULL, NULL),
             "delete");
    HR_CHECK(hr_response_store_put(s, "r3", json_pack("{s:i}", "n", 33), json_array()), "replace");
    json_t *r3 = hr_response_store_get(s, "r3", NULL, NULL);
    HR_CHECK(json_integer_value(json_object_get(r3, "n")) == 33, "replaced");
    json_decref(r3);
    hr_response_store_usage(s, &n, &bytes);
    HR_CHECK(n == 2, "replace keeps one entry: %zu", n);
    hr_response_store_destroy(s);
    s = hr_response_store_create(100, 200);
    char big[120];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    HR_CHECK(!hr_response_store_put(s, "huge", json_pack("{s:s, s:s}", "a", big, "b", big),
                                    json_array()),
             "an entry over the byte cap alone is not stored");
    HR_CHECK(hr_response_store_put(s, "a", json_pack("{s:s}", "a", big), json_array()) &&
                 hr_response_store_put(s, "b", json_pack("{s:s}", "a", big), json_array()),
             "puts");
    hr_response_store_usage(s, &n, &bytes);
    HR_CHECK(n == 1 && bytes <= 200, "bounded by bytes: %zu entries, %zu bytes", n, bytes);
    hr_response_store_destroy(s);
}

/* Splits SSE text into [{"event": name, "data": JSON}]. */
static json_t *sse_events(const char *s) {
    json_t *out = json_array();
    char name[96] = "";
    while (s && *s) {
        const char *nl = strchr(s, '\n');
        if (!nl) break;
        if (!strncmp(s, "event: ", 7))
            snprintf(name, sizeof name, "%.*s", (int)(nl - s - 7), s + 7);
        else if (!strncmp(s, "data: ", 6)) {
            json_t *d = json_loadb(s + 6, (size_t)(nl - s - 6), 0, NULL);
            json_array_append_new(out, json_pack("{s:s, s:o}", "event", name, "data",
                                                 d ? d : json_string("BAD JSON")));
            name[0] = 0;
        }
        s = nl + 1;
    }
    return out;
}

/* Runs src's request through a reply fed pieces, then finished with why. Returns the
 * body (whole) or the events (stream); the reply stores into store. */
static json_t *run(const char *src, hr_response_store *store, const char **pieces, hr_finish why,
                   char *id, size_t id_cap) {
    char err[256] = "";
    hr_api_request *q = parse(src, store, err, sizeof err);
    if (!q) return json_pack("{s:s}", "parse_error", err);
    hr_reply *r;
    hr_err *e = hr_reply_create(q, "default", 1700000000, &BE, &r);
    if (e) return hr_err_free(e), hr_api_request_free(q), NULL;
    hr_reply_set_store(r, store);
    hr_reply_begin(r, 0, 12, 5, 0);
    int n = 0;
    for (; pieces[n]; n++)
        hr_reply_token(r, 0, &(hr_gen_token){.text = pieces[n], .len = strlen(pieces[n])});
    hr_reply_finish(r, 0, why, n, why == HR_FINISH_ERROR ? "boom" : NULL);
    json_t *out;
    if (q->stream) {
        size_t len;
        char *s = hr_reply_take(r, &len);
        out = sse_events(s);
        free(s);
    } else {
        int status;
        out = hr_reply_body(r, &status);
        if (status != 200) json_object_set_new(out, "status", json_integer(status));
    }
    /* the id, for continuing */
    json_t *resp =
        q->stream ? json_object_get(json_object_get(json_array_get(out, 0), "data"), "response")
                  : out;
    snprintf(id, id_cap, "%s", str(resp, "id"));
    hr_reply_free(r);
    hr_api_request_free(q);
    return out;
}

static const char *TOOLS = "\"tools\": [{\"type\": \"function\", \"name\": \"get_weather\", "
                           "\"parameters\": {\"type\": \"object\"}}]";

static void test_body(void) {
    char src[512], id[64];
    snprintf(src, sizeof src,
             "{\"model\": \"m1\", \"input\": \"Weather?\", \"instructions\": \"Be brief.\", %s}",
             TOOLS);
    const char *p[] = {"<think>\nhm", "</think>\n\n", "Checking.\n",
                       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                       "\"Oslo\"}}\n</tool_call>",
                       NULL};
    json_t *b = run(src, NULL, p, HR_FINISH_STOP, id, sizeof id);
    HR_CHECK(b && !json_object_get(b, "parse_error"), "run");
    HR_CHECK(!strncmp(str(b, "id"), "resp_", 5) && !strcmp(str(b, "object"), "response") &&
                 json_integer_value(json_object_get(b, "created_at")) == 1700000000 &&
                 !strcmp(str(b, "status"), "completed") && !strcmp(str(b, "model"), "m1") &&
                 json_is_null(json_object_get(b, "error")) &&
                 json_is_null(json_object_get(b, "incomplete_details")),
             "header: %s", json_dumps(b, JSON_COMPACT));
    const json_t *out = json_object_get(b, "output");
    HR_CHECK(json_array_size(out) == 3, "three items");
    const json_t *rs = json_array_get(out, 0), *m = json_array_get(out, 1),
                 *fc = json_array_get(out, 2);
    HR_CHECK(!strcmp(str(rs, "type"), "reasoning") && !strncmp(str(rs, "id"), "rs_", 3) &&
                 json_array_size(json_object_get(rs, "summary")) == 0 &&
                 !strcmp(str(json_array_get(json_object_get(rs, "content"), 0), "type"),
                         "reasoning_text") &&
                 !strcmp(str(json_array_get(json_object_get(rs, "content"), 0), "text"), "hm"),
             "reasoning item");
    const json_t *part = json_array_get(json_object_get(m, "content"), 0);
    HR_CHECK(!strcmp(str(m, "type"), "message") && !strncmp(str(m, "id"), "msg_", 4) &&
                 !strcmp(str(m, "role"), "assistant") && !strcmp(str(m, "status"), "completed") &&
                 !strcmp(str(part, "type"), "output_text") &&
                 !strcmp(str(part, "text"), "Checking.\n") &&
                 json_is_array(json_object_get(part, "annotations")) &&
                 json_is_array(json_object_get(part, "logprobs")),
             "message item");
    HR_CHECK(!strcmp(str(fc, "type"), "function_call") && !strncmp(str(fc, "id"), "fc_", 3) &&
                 !strncmp(str(fc, "call_id"), "call_", 5) &&
                 !strcmp(str(fc, "name"), "get_weather") &&
                 !strcmp(str(fc, "arguments"), "{\"city\":\"Oslo\"}") &&
                 !strcmp(str(fc, "status"), "completed"),
             "function_call item");
    const json_t *u = json_object_get(b, "usage");
    HR_CHECK(json_integer_value(json_object_get(u, "input_tokens")) == 12 &&
                 json_integer_value(json_object_get(json_object_get(u, "input_tokens_details"),
                                                    "cached_tokens")) == 5 &&
                 json_integer_value(json_object_get(u, "output_tokens")) == 4 &&
                 json_integer_value(json_object_get(u, "total_tokens")) == 16 &&
                 json_integer_value(json_object_get(json_object_get(u, "output_tokens_details"),
                                                    "reasoning_tokens")) == 2,
             "usage: %s", json_dumps(u, JSON_COMPACT));
    HR_CHECK(
        !strcmp(str(b, "instructions"), "Be brief.") &&
            json_array_size(json_object_get(b, "tools")) == 1 &&
            !strcmp(str(b, "tool_choice"), "auto") &&
            json_is_true(json_object_get(b, "parallel_tool_calls")) &&
            json_is_true(json_object_get(b, "store")) &&
            json_is_null(json_object_get(b, "previous_response_id")) &&
            json_is_object(json_object_get(b, "metadata")) &&
            json_is_object(json_object_get(b, "reasoning")) &&
            !strcmp(str(json_object_get(json_object_get(b, "text"), "format"), "type"), "text"),
        "echoed fields");
    json_decref(b);
}

static void test_incomplete_and_failed(void) {
    char id[64];
    const char *p[] = {"Once upon", " a time", NULL};
    json_t *b = run("{\"input\": \"story\", \"max_output_tokens\": 2}", NULL, p, HR_FINISH_LENGTH,
                    id, sizeof id);
    HR_CHECK(
        !strcmp(str(b, "status"), "incomplete") &&
            !strcmp(str(json_object_get(b, "incomplete_details"), "reason"), "max_output_tokens") &&
            !strcmp(str(json_array_get(json_object_get(b, "output"), 0), "status"), "incomplete") &&
            json_integer_value(json_object_get(b, "max_output_tokens")) == 2,
        "incomplete: %s", json_dumps(b, JSON_COMPACT));
    json_decref(b);
    b = run("{\"input\": \"x\"}", NULL, p, HR_FINISH_ERROR, id, sizeof id);
    HR_CHECK(json_integer_value(json_object_get(b, "status")) == 500 &&
                 strstr(str(json_object_get(b, "error"), "message"), "boom"),
             "failed whole: 500");
    json_decref(b);
    b = run("{\"input\": \"x\", \"stream\": true}", NULL, p, HR_FINISH_ERROR, id, sizeof id);
    const json_t *last = json_object_get(json_array_get(b, json_array_size(b) - 1), "data");
    HR_CHECK(
        !strcmp(str(last, "type"), "response.failed") &&
            !strcmp(str(json_object_get(last, "response"), "status"), "failed") &&
            !strcmp(str(json_object_get(json_object_get(last, "response"), "error"), "message"),
                    "boom"),
        "failed stream");
    json_decref(b);
}

/* The event names of a stream joined by spaces (short forms), and its checks. */
static void test_stream(void) {
    char src[512], id[64];
    snprintf(src, sizeof src, "{\"input\": \"Weather?\", \"stream\": true, %s}", TOOLS);
    const char *p[] = {"<think>\nh",
                       "m</think>\n\n",
                       "Chec",
                       "king.\n",
                       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                       "\"Oslo\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", "
                       "\"arguments\": {\"city\": \"Lima\"}}\n</tool_call>",
                       NULL};
    json_t *ev = run(src, NULL, p, HR_FINISH_STOP, id, sizeof id);
    char names[2048] = "";
    size_t i;
    const json_t *e;
    int seq_ok = 1, names_ok = 1;
    json_array_foreach(ev, i, e) {
        const json_t *d = json_object_get(e, "data");
        seq_ok &= json_integer_value(json_object_get(d, "sequence_number")) == (json_int_t)i;
        names_ok &= !strcmp(str(e, "event"), str(d, "type"));
        const char *t = str(d, "type");
        size_t n = strlen(names);
        snprintf(names + n, sizeof names - n, "%s%s", n ? " " : "",
                 !strncmp(t, "response.", 9) ? t + 9 : t);
    }
    const char *want =
        "created in_progress output_item.added content_part.added reasoning_text.delta "
        "reasoning_text.delta reasoning_text.done content_part.done output_item.done "
        "output_item.added content_part.added output_text.delta output_text.delta "
        "output_text.done content_part.done output_item.done "
        "output_item.added function_call_arguments.delta function_call_arguments.done "
        "output_item.done output_item.added function_call_arguments.delta "
        "function_call_arguments.done output_item.done completed";
    HR_CHECK(!strcmp(names, want), "sequence:\n got  %s\n want %s", names, want);
    HR_CHECK(seq_ok && names_ok, "sequence_number 0.. and event: line = type");
    const json_t *created =
        json_object_get(json_object_get(json_array_get(ev, 0), "data"), "response");
    HR_CHECK(!strcmp(str(created, "status"), "in_progress") &&
                 json_array_size(json_object_get(created, "output")) == 0 &&
                 json_is_null(json_object_get(created, "usage")),
             "created");
    const json_t *d = json_object_get(json_array_get(ev, 4), "data");
    HR_CHECK(!strcmp(str(d, "delta"), "h") && !strncmp(str(d, "item_id"), "rs_", 3) &&
                 json_integer_value(json_object_get(d, "output_index")) == 0 &&
                 json_integer_value(json_object_get(d, "content_index")) == 0,
             "reasoning delta");
    d = json_object_get(json_array_get(ev, 13), "data");
    HR_CHECK(!strcmp(str(d, "text"), "Checking.\n") &&
                 json_integer_value(json_object_get(d, "output_index")) == 1,
             "text done");
    d = json_object_get(json_array_get(ev, 18), "data");
    HR_CHECK(!strcmp(str(d, "arguments"), "{\"city\":\"Oslo\"}") &&
                 !strcmp(str(d, "name"), "get_weather") &&
                 json_integer_value(json_object_get(d, "output_index")) == 2,
             "arguments done");
    d = json_object_get(json_array_get(ev, 16), "data");
    HR_CHECK(!strcmp(str(json_object_get(d, "item"), "status"), "in_progress") &&
                 !strcmp(str(json_object_get(d, "item"), "arguments"), ""),
             "call added in progress");
    const json_t *fin = json_object_get(
        json_object_get(json_array_get(ev, json_array_size(ev) - 1), "data"), "response");
    const json_t *out = json_object_get(fin, "output");
    HR_CHECK(!strcmp(str(fin, "status"), "completed") && json_array_size(out) == 4 &&
                 !strcmp(str(json_array_get(out, 3), "arguments"), "{\"city\":\"Lima\"}") &&
                 json_integer_value(
                     json_object_get(json_object_get(fin, "usage"), "input_tokens")) == 12,
             "final response: %s", json_dumps(fin, JSON_COMPACT));
    /* the item ids in the final response are the streamed ones */
    const json_t *added = json_object_get(json_object_get(json_array_get(ev, 9), "data"), "item");
    HR_CHECK(!strcmp(str(added, "id"), str(json_array_get(out, 1), "id")), "stable ids");
    json_decref(ev);
}

/* A stored response continues: its conversation (not its instructions) comes first. */
static void test_continue(void) {
    hr_response_store *st = hr_response_store_create(8, 1 << 20);
    char src[512], id[64], id2[64];
    snprintf(src, sizeof src,
             "{\"input\": \"Weather in Oslo?\", \"instructions\": \"Be brief.\", %s}", TOOLS);
    const char *p[] = {"<think>x</think>",
                       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                       "\"Oslo\"}}\n</tool_call>",
                       NULL};
    json_t *b = run(src, st, p, HR_FINISH_STOP, id, sizeof id);
    const char *call_id = str(json_array_get(json_object_get(b, "output"), 1), "call_id");
    char src2[512];
    snprintf(src2, sizeof src2,
             "{\"previous_response_id\": \"%s\", \"input\": [{\"type\": "
             "\"function_call_output\", \"call_id\": \"%s\", \"output\": \"21 C\"}], %s}",
             id, call_id, TOOLS);
    char err[256] = "";
    hr_api_request *q = parse(src2, st, err, sizeof err);
    HR_CHECK(q, "%s", err);
    const json_t *msgs = json_object_get(q->chat, "messages");
    HR_CHECK(json_array_size(msgs) == 3, "user, assistant, tool: %s", json_dumps(msgs, 0));
    HR_CHECK(!strcmp(str(msg(q, 0), "role"), "user") &&
                 !strcmp(str(msg(q, 1), "role"), "assistant") &&
                 !strcmp(str(msg(q, 1), "reasoning_content"), "x") &&
                 !strcmp(str(json_array_get(json_object_get(msg(q, 1), "tool_calls"), 0), "id"),
                         call_id) &&
                 !strcmp(str(msg(q, 2), "tool_call_id"), call_id),
             "history prepended, instructions dropped");
    hr_api_request_free(q);
    const char *p2[] = {"It is 21 C.", NULL};
    json_t *b2 = run(src2, st, p2, HR_FINISH_STOP, id2, sizeof id2);
    HR_CHECK(!strcmp(str(b2, "previous_response_id"), id), "echo previous_response_id");
    json_t *conv = NULL, *got = hr_response_store_get(st, id2, &conv, NULL);
    HR_CHECK(got && json_array_size(conv) == 4 &&
                 !strcmp(str(json_array_get(conv, 3), "content"), "It is 21 C."),
             "second stored with the whole conversation");
    HR_CHECK(json_equal(got, b2), "stored object equals the body");
    json_decref(got);
    json_decref(conv);
    json_decref(b2);
    json_decref(b);
    const char *p3[] = {"hi", NULL};
    b = run("{\"input\": \"x\", \"store\": false}", st, p3, HR_FINISH_STOP, id, sizeof id);
    got = hr_response_store_get(st, id, NULL, NULL);
    HR_CHECK(!got, "store: false is not stored");
    json_decref(b);
    hr_response_store_destroy(st);
}

int main(void) {
    HR_RUN(test_string_input);
    HR_RUN(test_items);
    HR_RUN(test_tools);
    HR_RUN(test_reasoning);
    HR_RUN(test_errors);
    HR_RUN(test_error_param);
    HR_RUN(test_store);
    HR_RUN(test_body);
    HR_RUN(test_incomplete_and_failed);
    HR_RUN(test_stream);
    HR_RUN(test_continue);
    return hr_test_summary();
}
