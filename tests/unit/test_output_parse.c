/* Output parsers: reasoning and each tool-call family, fed whole, byte by byte and in
 * random splits, must give the same content / reasoning / tool calls; text before markup
 * streams before the markup closes; broken markup comes back as content. */
#include "harness.h"

#include "server/output_parse.h"

typedef struct {
    char content[4096], reasoning[4096], tools[4096];
    size_t nc, nr;
    int n_content_events;
} collect;

static void on_ev(void *ud, const hr_out_event *ev) {
    collect *c = ud;
    if (ev->kind == HR_OUT_CONTENT) {
        memcpy(c->content + c->nc, ev->text, ev->len);
        c->nc += ev->len;
        c->n_content_events++;
    } else if (ev->kind == HR_OUT_REASONING) {
        memcpy(c->reasoning + c->nr, ev->text, ev->len);
        c->nr += ev->len;
    } else {
        size_t n = strlen(c->tools);
        snprintf(c->tools + n, sizeof c->tools - n, "%d:%s%s;", ev->tool_index, ev->tool_name,
                 ev->tool_args);
    }
}

static unsigned rng_state = 12345;
static unsigned rnd(void) {
    rng_state = rng_state * 1103515245u + 12345u;
    return rng_state >> 16;
}

/* Feeds text in pieces: mode 0 whole, 1 byte by byte, 2 random splits. */
static void run(const hr_out_config *cfg, const char *text, int mode, collect *c) {
    memset(c, 0, sizeof *c);
    hr_out_parser *p;
    if (hr_out_parser_create(cfg, on_ev, c, &p)) return;
    size_t len = strlen(text), off = 0;
    while (off < len) {
        size_t n = mode == 0 ? len : mode == 1 ? 1 : 1 + rnd() % 7;
        if (n > len - off) n = len - off;
        hr_out_parser_feed(p, text + off, n);
        off += n;
    }
    hr_out_parser_finish(p);
    hr_out_parser_free(p);
}

typedef struct {
    const char *name;
    hr_tool_format fmt;
    int reasoning, in_reasoning;
    const char *text;
    const char *content, *reasoning_out, *tools;
} pcase;

static const char *WEATHER_TOOLS =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, "
    "\"days\": {\"type\": \"integer\"}, \"zip\": {\"type\": \"string\"}}}}}]";

static const pcase CASES[] = {
    {"plain", HR_TOOLS_QWEN, 1, 0, "Hello <b>world</b> <thin", "Hello <b>world</b> <thin", "", ""},
    {"think", HR_TOOLS_NONE, 1, 0, "<think>\nstep 1\n</think>\n\nAnswer: 4", "Answer: 4",
     "\nstep 1\n", ""},
    {"think_in_prompt", HR_TOOLS_NONE, 1, 1, "plan</think>done", "done", "plan", ""},
    {"think_unclosed", HR_TOOLS_NONE, 1, 0, "<think>still going", "", "still going", ""},
    {"think_off", HR_TOOLS_NONE, 0, 0, "<think>x</think>y", "<think>x</think>y", "", ""},
    {"qwen_json", HR_TOOLS_QWEN, 1, 0,
     "<think>need weather</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", "
     "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
     "Let me check.\n", "need weather", "0:get_weather{\"city\":\"Paris\"};"},
    {"qwen_two", HR_TOOLS_QWEN, 0, 0,
     "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"b\", "
     "\"arguments\": \"{\\\"k\\\": [1, 2]}\"}</tool_call>",
     "\n", "", "0:a{};1:b{\"k\":[1,2]};"},
    {"qwen_bad_json", HR_TOOLS_QWEN, 0, 0, "x<tool_call>{not json}</tool_call>y",
     "x<tool_call>{not json}</tool_call>y", "", ""},
    {"qwen_close_in_string", HR_TOOLS_QWEN, 0, 0,
     "<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"a</tool_call>b\\\"\"}}</tool_call>", "",
     "", "0:f{\"s\":\"a</tool_call>b\\\"\"};"},
    {"qwen_string_never_closed", HR_TOOLS_QWEN, 0, 0,
     "<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"a}</tool_call>x<tool_call>"
     "{\"name\": \"g\", \"arguments\": {}}</tool_call>",
     "<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"a}</tool_call>x", "", "0:g{};"},
    {"qwen_unclosed_ok", HR_TOOLS_QWEN, 0, 0,
     "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}", "", "", "0:f{\"a\":1};"},
    {"qwen_unclosed_bad", HR_TOOLS_QWEN, 0, 0, "ok <tool_call>{\"name\": \"f\"",
     "ok <tool_call>{\"name\": \"f\"", "", ""},
    {"qwen_xml", HR_TOOLS_QWEN, 0, 0,
     "Sure.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
     "<parameter=days>\n3\n</parameter>\n<parameter=zip>\n10001\n</parameter>\n</function>\n</"
     "tool_call>",
     "Sure.\n", "", "0:get_weather{\"city\":\"New York\",\"days\":3,\"zip\":\"10001\"};"},
    {"qwen_xml_untyped", HR_TOOLS_QWEN, 0, 0,
     "<tool_call><function=f><parameter=obj>{\"a\": true}</parameter><parameter=s>hi "
     "there</parameter>"
     "</function></tool_call>",
     "", "", "0:f{\"obj\":{\"a\":true},\"s\":\"hi there\"};"},
    {"qwen_xml_broken", HR_TOOLS_QWEN, 0, 0,
     "<tool_call><function=f><parameter=x>1</function></tool_call>",
     "<tool_call><function=f><parameter=x>1</function></tool_call>", "", ""},
    {"llama_json", HR_TOOLS_LLAMA3, 0, 0,
     "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}", "", "",
     "0:get_weather{\"city\":\"Oslo\"};"},
    {"llama_python_tag", HR_TOOLS_LLAMA3, 0, 0,
     "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": "
     "{\"x\": 1}}",
     "", "", "0:a{};1:b{\"x\":1};"},
    {"llama_text", HR_TOOLS_LLAMA3, 0, 0, "The {braces} here are text.",
     "The {braces} here are text.", "", ""},
    {"llama_json_not_call", HR_TOOLS_LLAMA3, 0, 0, "{\"answer\": 42}", "{\"answer\": 42}", "", ""},
    {"llama_partial_tag_text", HR_TOOLS_LLAMA3, 0, 0, "<|py", "<|py", "", ""},
    {"gemma_call", HR_TOOLS_GEMMA, 0, 0,
     "I'll look.\n```tool_code\nget_weather(city=\"London\", days=2, metric=True, tags=['a', "
     "\"b\"], "
     "opts={'x': None})\n```\n",
     "I'll look.\n\n", "",
     "0:get_weather{\"city\":\"London\",\"days\":2,\"metric\":true,\"tags\":[\"a\",\"b\"],\"opts\":"
     "{\"x\":null}};"},
    {"gemma_list", HR_TOOLS_GEMMA, 0, 0, "```tool_code\n[f()]\n```", "", "", "0:f{};"},
    {"gemma_json", HR_TOOLS_GEMMA, 0, 0,
     "```tool_code\n{\"name\": \"f\", \"parameters\": {\"q\": \"x\"}}\n```", "", "",
     "0:f{\"q\":\"x\"};"},
    {"gemma_bare_list", HR_TOOLS_GEMMA, 0, 0, " [get_weather(city='Rome'), f()]\n", "", "",
     "0:get_weather{\"city\":\"Rome\"};1:f{};"},
    {"gemma_bare_json", HR_TOOLS_GEMMA, 0, 0, "{\"name\": \"f\", \"parameters\": {}}", "", "",
     "0:f{};"},
    {"gemma_bracket_text", HR_TOOLS_GEMMA, 0, 0, "[1] is a footnote.", "[1] is a footnote.", "",
     ""},
    {"gemma_bad", HR_TOOLS_GEMMA, 0, 0, "```tool_code\nprint(1 +\n```",
     "```tool_code\nprint(1 +\n```", "", ""},
    {"gemma_other_fence", HR_TOOLS_GEMMA, 0, 0, "```python\nx = 1\n```", "```python\nx = 1\n```",
     "", ""},
    {"utf8", HR_TOOLS_QWEN, 1, 0,
     "<think>日本</think>héllo 👋<tool_call>{\"name\": \"ü\", \"arguments\": {\"s\": "
     "\"é\"}}</tool_call>",
     "héllo 👋", "日本", "0:ü{\"s\":\"é\"};"},
};

static void test_cases_all_splits(void) {
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
        const pcase *k = &CASES[i];
        json_t *defs = json_loads(WEATHER_TOOLS, 0, NULL);
        hr_out_config cfg = {.reasoning = k->reasoning,
                             .in_reasoning = k->in_reasoning,
                             .tools = k->fmt,
                             .tool_defs = defs};
        for (int mode = 0; mode < 3; mode++)
            for (int rep = 0; rep < (mode == 2 ? 50 : 1); rep++) {
                collect c;
                run(&cfg, k->text, mode, &c);
                HR_CHECK(c.nc == strlen(k->content) && !memcmp(c.content, k->content, c.nc),
                         "%s mode %d: content [%.*s] want [%s]", k->name, mode, (int)c.nc,
                         c.content, k->content);
                HR_CHECK(c.nr == strlen(k->reasoning_out) &&
                             !memcmp(c.reasoning, k->reasoning_out, c.nr),
                         "%s mode %d: reasoning [%.*s]", k->name, mode, (int)c.nr, c.reasoning);
                HR_CHECK(!strcmp(c.tools, k->tools), "%s mode %d: tools [%s] want [%s]", k->name,
                         mode, c.tools, k->tools);
            }
        json_decref(defs);
    }
}

/* Content before a tool call is out before the call's markup is complete. */
static void test_streams_live(void) {
    hr_out_config cfg = {.reasoning = 1, .tools = HR_TOOLS_QWEN};
    collect c = {0};
    hr_out_parser *p;
    HR_CHECK_OK(hr_out_parser_create(&cfg, on_ev, &c, &p));
    const char *a = "Checking now<tool";
    HR_CHECK_OK(hr_out_parser_feed(p, a, strlen(a)));
    HR_CHECK(c.nc == strlen("Checking now") && !memcmp(c.content, "Checking now", c.nc),
             "held back only the marker prefix: [%.*s]", (int)c.nc, c.content);
    const char *b = "_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";
    HR_CHECK_OK(hr_out_parser_feed(p, b, strlen(b)));
    HR_CHECK(!strcmp(c.tools, "0:f{};") && hr_out_parser_tool_calls(p) == 1,
             "call out before finish: %s", c.tools);
    HR_CHECK_OK(hr_out_parser_feed(p, "<th", 3));
    HR_CHECK(c.nr == 0, "no reasoning yet");
    HR_CHECK_OK(hr_out_parser_feed(p, "ink>why", 7));
    HR_CHECK(c.nr == 3 && !memcmp(c.reasoning, "why", 3), "reasoning streams: [%.*s]", (int)c.nr,
             c.reasoning);
    hr_out_parser_finish(p);
    hr_out_parser_free(p);
}

/* Parses body and renders the calls as "name args;" (or "-" when it does not parse). */
static const char *body(hr_tool_format fmt, const char *text) {
    static char out[512];
    int oom;
    json_t *calls = hr_tool_body_parse(fmt, text, strlen(text), NULL, &oom);
    if (oom) return "out of memory";
    if (!calls) return "-";
    out[0] = 0;
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c) {
        size_t n = strlen(out);
        snprintf(out + n, sizeof out - n, "%s %s;", json_string_value(json_object_get(c, "name")),
                 json_string_value(json_object_get(c, "arguments")));
    }
    json_decref(calls);
    return out;
}

static void test_body_parse(void) {
    static const struct {
        hr_tool_format fmt;
        const char *in, *want;
    } cases[] = {
        {HR_TOOLS_QWEN, " {\"name\": \"x\"} ", "x {};"},
        {HR_TOOLS_QWEN, "[1]", "-"},
        {HR_TOOLS_QWEN, "{\"name\": 1}", "-"},
        {HR_TOOLS_QWEN, "{\"name\": \"f\", \"arguments\": [1]}", "-"},
        {HR_TOOLS_QWEN, "<function=>x</function>", "-"},
        {HR_TOOLS_LLAMA3, "{\"name\": \"a\", \"parameters\": {}} junk", "-"},
        {HR_TOOLS_GEMMA, "f(1)", "-"},
        {HR_TOOLS_GEMMA, "f(a='x)", "-"},
        {HR_TOOLS_GEMMA, "m.f(a='it\\'s', b=-1.5e3)", "m.f {\"a\":\"it's\",\"b\":-1500.0};"},
        {HR_TOOLS_GEMMA, "[f(a='x, y'), g(b=[1, (2)])]", "-"},
        {HR_TOOLS_GEMMA, "[f(a='x, y'), g(b=[1, 2])]", "f {\"a\":\"x, y\"};g {\"b\":[1,2]};"},
        {HR_TOOLS_GEMMA, "[]", "-"},
        {HR_TOOLS_GEMMA,
         "f(a=[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]])", "-"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *got = body(cases[i].fmt, cases[i].in);
        HR_CHECK(!strcmp(got, cases[i].want), "case %zu %s: got [%s] want [%s]", i, cases[i].in,
                 got, cases[i].want);
    }
}

/* Random garbage around markers must never crash or lose bytes when it stays content. */
static void test_random_no_loss(void) {
    static const char *atoms[] = {"<",   "think>",    "</think>", "<tool_call>", "</tool_call>",
                                  "```", "tool_code", "{",        "}",           "\"name\"",
                                  ":",   "a",         " ",        "\n",          "<|python_tag|>",
                                  "\"",  "\\"};
    for (int it = 0; it < 300; it++) {
        char text[512] = "";
        int n = 1 + (int)(rnd() % 30);
        for (int i = 0; i < n; i++)
            strcat(text, atoms[rnd() % (sizeof atoms / sizeof *atoms)]);
        for (int f = HR_TOOLS_NONE; f <= HR_TOOLS_GEMMA; f++) {
            hr_out_config cfg = {.reasoning = (int)(rnd() & 1), .tools = (hr_tool_format)f};
            collect whole, bytes;
            run(&cfg, text, 0, &whole);
            run(&cfg, text, 1, &bytes);
            HR_CHECK(whole.nc == bytes.nc && !memcmp(whole.content, bytes.content, whole.nc) &&
                         whole.nr == bytes.nr && !strcmp(whole.tools, bytes.tools),
                     "split-dependent result for fmt %d: %s", f, text);
            if (!whole.tools[0] && !cfg.reasoning)
                HR_CHECK(whole.nc == strlen(text) && !memcmp(whole.content, text, whole.nc),
                         "lost bytes for fmt %d: %s -> %.*s", f, text, (int)whole.nc,
                         whole.content);
        }
    }
}

int main(void) {
    HR_RUN(test_cases_all_splits);
    HR_RUN(test_streams_live);
    HR_RUN(test_body_parse);
    HR_RUN(test_random_no_loss);
    return hr_test_summary();
}
