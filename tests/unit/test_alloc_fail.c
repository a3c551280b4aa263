/* The allocation-failure sweep (docs/reliability.md): each operation runs once to count its
 * allocations and their call sites, then again with allocation N failing, for every N up to
 * DENSE, the first allocation of every call site, and a stride over the rest (one-shot: only
 * N fails; persistent: N and every later one). Each run must end in an error with a message
 * or in the same result as without the failure, with no block left allocated (the shim's live
 * set, tests/fault/alloc_fail.c). Then each thread start of the operation fails in turn: a
 * clean error (HR_E_BUSY) or the same result, nothing leaked. HEARTH_FAULT_FULL=1 tries every
 * N; HEARTH_FAULT_OP=name runs one operation. Run as `test_alloc_fail --unix-socket PATH`
 * (by the proxy op's supervisor) it is that op's engine child. */
#define _GNU_SOURCE /* dladdr */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/file.h"
#include "base/json.h"
#include "base/log.h"
#include "engine/engine.h"
#include "fault/alloc_fail.h"
#include "grammar/grammar.h"
#include "grammar/schema.h"
#include "harness.h"
#include "model/config.h"
#include "model/gguf.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "server/proxy.h"
#include "server/reply_internal.h"
#include "server/request.h"
#include "server/response_store.h"
#include "server/sink.h"
#include "server/supervisor.h"
#include "template/template.h"
#include "tokenizer/tokenizer.h"

static hr_tokenizer *brown_tok;    /* for the grammar op's vocabulary */
static hr_grammar_vocab *brown_gv; /* built once: the op compiles and matches, not indexes */
static char ssd_dir[256];
static long ssd_restores; /* blocks the last engine_run with an SSD tier restored */

static uint64_t mix(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static const char *CHAT_BODY =
    "{\"model\": \"m\", \"messages\": [{\"role\": \"system\", \"content\": \"be brief\"},"
    " {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"weather in Paris?\"}]},"
    " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"c1\", \"type\": "
    "\"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": "
    "\"{\\\"city\\\": \\\"Paris\\\"}\"}}]},"
    " {\"role\": \"tool\", \"tool_call_id\": \"c1\", \"content\": \"sunny, 21C\"}],"
    " \"max_tokens\": 64, \"temperature\": 0.5, \"top_p\": 0.9, \"stop\": [\"END\", \"###\"],"
    " \"logit_bias\": {\"7\": -100}, \"seed\": 7, \"response_format\": {\"type\": "
    "\"json_object\"},"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\","
    " \"description\": \"the weather\", \"parameters\": {\"type\": \"object\", \"properties\":"
    " {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}]}";

static const hr_request_limits LIM = {.max_tokens_limit = 4096, .vocab_size = 32000};

typedef hr_err *(*parse_fn)(const json_t *body, const hr_request_limits *lim, hr_api_request **out);

/* A request body through jansson and one of the API's parsers. */
static hr_err *load_request(const char *body, parse_fn parse, hr_api_request **r) {
    json_t *j;
    HR_TRY(hr_json_load_buf("request body", body, strlen(body), &j));
    hr_err *e = parse(j, &LIM, r);
    json_decref(j);
    return e;
}

static hr_err *parse_responses(const json_t *b, const hr_request_limits *lim, hr_api_request **r) {
    return hr_parse_responses_request(b, lim, NULL, r);
}

static hr_err *parse_body(hr_api_request **r) {
    return load_request(CHAT_BODY, hr_parse_chat_request, r);
}

/* Hashes a JSON value without allocating (json_dumps could fail in the sweep itself). */
static uint64_t mix_json(uint64_t d, const json_t *v) {
    int t = v ? (int)json_typeof(v) : -1;
    d = mix(d, &t, sizeof t);
    const char *k;
    const json_t *x;
    size_t i;
    switch (t) {
    case JSON_OBJECT:
        json_object_foreach((json_t *)v, k, x) d = mix_json(mix(d, k, strlen(k)), x);
        break;
    case JSON_ARRAY: json_array_foreach(v, i, x) d = mix_json(d, x); break;
    case JSON_STRING: d = mix(d, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER:
    case JSON_REAL: {
        double n = json_number_value(v);
        d = mix(d, &n, sizeof n);
    } break;
    default: break;
    }
    return d;
}

static hr_err *op_request(uint64_t *d) {
    hr_api_request *r = NULL;
    HR_TRY(parse_body(&r));
    *d = mix_json(*d, r->chat);
    *d = mix(*d, &r->max_tokens, sizeof r->max_tokens);
    *d = mix(*d, &r->n_stop, sizeof r->n_stop);
    *d = mix(*d, &r->output.kind, sizeof r->output.kind);
    hr_api_request_free(r);
    return NULL;
}

static const char *MESSAGES_BODY =
    "{\"model\": \"m\", \"max_tokens\": 64, \"system\": [{\"type\": \"text\", \"text\": "
    "\"be brief\"}], \"messages\": [{\"role\": \"user\", \"content\": \"weather?\"},"
    " {\"role\": \"assistant\", \"content\": [{\"type\": \"thinking\", \"thinking\": "
    "\"hmm\", \"signature\": \"s\"}, {\"type\": \"text\", \"text\": \"checking\"},"
    " {\"type\": \"tool_use\", \"id\": \"t1\", \"name\": \"get_weather\", \"input\": "
    "{\"city\": \"Paris\"}}]},"
    " {\"role\": \"user\", \"content\": [{\"type\": \"tool_result\", \"tool_use_id\": "
    "\"t1\", \"content\": [{\"type\": \"text\", \"text\": \"sunny\"}]}, {\"type\": "
    "\"text\", \"text\": \"thanks\"}]}],"
    " \"stop_sequences\": [\"END\"], \"tools\": [{\"name\": \"get_weather\", "
    "\"input_schema\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": "
    "\"string\"}}}}], \"tool_choice\": {\"type\": \"auto\"}}";

/* An Anthropic /v1/messages body (system blocks, thinking, tool_use, tool_result). */
static hr_err *op_messages(uint64_t *d) {
    hr_api_request *r = NULL;
    HR_TRY(load_request(MESSAGES_BODY, hr_parse_messages_request, &r));
    *d = mix_json(*d, r->chat);
    *d = mix(*d, &r->n_stop, sizeof r->n_stop);
    hr_api_request_free(r);
    return NULL;
}

static hr_err *op_template(uint64_t *d) {
    hr_chat_template ct;
    HR_TRY(hr_chat_template_load(hr_fixture("models/qwen3-tools-20m"), NULL, &ct));
    hr_api_request *r = NULL;
    char *out = NULL;
    hr_err *e = parse_body(&r);
    if (!e) e = hr_chat_template_apply(&ct, r->chat, &out, NULL);
    if (!e) *d = mix(*d, out, strlen(out));
    free(out);
    hr_api_request_free(r);
    hr_chat_template_free(&ct);
    return e;
}

/* The tokenizer in dir loaded and a sentence encoded (with special tokens or not). */
static hr_err *tokenize(const char *dir, int add_special, uint64_t *d) {
    hr_tokenizer *t;
    HR_TRY(hr_tokenizer_load(dir, &t));
    static const char text[] = "The quick brown fox, said Mr. O'Neil, jumped 1234 times! ";
    int32_t *ids = NULL;
    int n = 0;
    hr_err *e = hr_tokenizer_encode(t, text, sizeof text - 1, add_special, &ids, &n);
    if (!e) *d = mix(*d, ids, sizeof *ids * (size_t)n);
    free(ids);
    hr_tokenizer_free(t);
    return e;
}

static hr_err *op_tokenizer(uint64_t *d) {
    return tokenize(hr_fixture("models/brown-llama-8m"), 1, d);
}

static char pretok_dir[64]; /* a tokenizer.json whose pre-tokenizers are regexes */

/* A byte-level BPE tokenizer (every printable ASCII byte but '"' and '\\', the space's
 * "\u0120", two merges) behind a Split regex and ByteLevel's GPT-2 regex: PCRE2's compile,
 * JIT and match allocations, which brown-llama-8m's Metaspace has none of. */
static hr_err *pretok_write(void) {
    snprintf(pretok_dir, sizeof pretok_dir, "/tmp/hearth-alloc-pretok-XXXXXX");
    if (!mkdtemp(pretok_dir)) return hr_errf("mkdtemp: %s", strerror(errno));
    char vocab[2048], body[4096];
    int n = 0, id = 0;
    for (int c = 33; c < 127; c++)
        if (c != '"' && c != '\\')
            n += snprintf(vocab + n, sizeof vocab - (size_t)n, "\"%c\": %d, ", c, id++);
    snprintf(vocab + n, sizeof vocab - (size_t)n, "\"\\u0120\": %d, \"Th\": %d, \"The\": %d", id,
             id + 1, id + 2);
    snprintf(
        body, sizeof body,
        "{\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
        "\"Split\", \"pattern\": {\"Regex\": \"\\\\p{L}+|\\\\p{N}| "
        "?[^\\\\s\\\\p{L}\\\\p{N}]+|\\\\s+\"}, "
        "\"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", "
        "\"add_prefix_space\": false, \"use_regex\": true}]}, \"decoder\": {\"type\": "
        "\"ByteLevel\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {%s}, \"merges\": [\"T h\", "
        "\"Th e\"]}}",
        vocab);
    char *path = hr_path_join(pretok_dir, "tokenizer.json");
    hr_err *e = path ? hr_write_atomic(path, body, strlen(body)) : hr_err_oom();
    free(path);
    return e;
}

/* That tokenizer loaded (its patterns compiled) and the sentence encoded (matched). */
static hr_err *op_pretok(uint64_t *d) { return tokenize(pretok_dir, 0, d); }

static hr_err *load_schema(json_t **s) {
    json_t *doc;
    HR_TRY(hr_json_load_file(hr_fixture("jsonschema/Glaiveai2K---create_invoice_1a6bcbdb.json"),
                             &doc));
    *s = json_incref(json_object_get(doc, "schema"));
    json_decref(doc);
    return *s ? NULL : hr_errf("the schema fixture has no \"schema\"");
}

/* Schema s's grammar, a matcher over brown-llama-8m's vocabulary, and masks along the
 * valid document prefix doc fed token by token (tokens of one byte each, found in the
 * vocabulary). Takes s. */
static hr_err *schema_masks(json_t *s, const char *doc, uint64_t *d) {
    char *text = NULL;
    size_t len = 0;
    hr_grammar *g = NULL;
    hr_matcher *m = NULL;
    hr_err *e = hr_schema_to_gbnf(s, NULL, &text, &len);
    json_decref(s);
    if (!e) e = hr_grammar_compile(text, len, &g);
    free(text);
    if (!e) e = hr_matcher_create(g, brown_gv, &m);
    uint32_t *bits = NULL;
    size_t words = ((size_t)hr_grammar_vocab_size(brown_gv) + 31) / 32;
    if (!e && !(bits = malloc(words * sizeof *bits))) e = hr_err_oom();
    for (size_t i = 0; !e && doc[i]; i++) {
        hr_matcher_mask(m, bits);
        *d = mix(*d, bits, words * sizeof *bits);
        char piece[8];
        snprintf(piece, sizeof piece, "<0x%02X>", (unsigned char)doc[i]);
        int32_t id = hr_tokenizer_token_id(brown_tok, piece);
        if (!hr_matcher_accept(m, id)) e = hr_errf("the matcher refused byte %zu", i);
    }
    free(bits);
    hr_matcher_free(m);
    hr_grammar_free(g);
    return e;
}

static hr_err *op_schema(uint64_t *d) {
    json_t *s;
    HR_TRY(load_schema(&s));
    return schema_masks(s, "{\"customer_name\": \"A", d);
}

/* The schema op through the process-wide DFA and mask caches, which the other ops leave off
 * so that their sweeps reach the DFA builder and every mask builds its entry alone: the warm
 * run fills the DFA cache, the swept runs copy out of it. The mask cache is emptied after
 * each run (a DFA built outside the cache after a failure has a new uid, so its masks' new
 * entries would stay), so every run builds its entries and offers them to the cache. */
static hr_err *op_schema_cached(uint64_t *d) {
    hr_grammar_dfa_cache_limit((size_t)32 << 20);
    hr_grammar_mask_cache_limit((size_t)256 << 20);
    hr_err *e = op_schema(d);
    hr_grammar_mask_cache_limit(0);
    return e;
}

/* Strings whose grammar is an intersection with a complement (`&`, `~`): a pattern with a
 * length, a second pattern from an allOf, "not" of a pattern. */
static hr_err *op_strings(uint64_t *d) {
    static const char schema[] =
        "{\"type\":\"object\",\"properties\":{\"s\":{\"allOf\":[{\"type\":\"string\","
        "\"pattern\":\"a\",\"maxLength\":6},{\"pattern\":\"b\"},{\"not\":{\"pattern\":\"c\"}}]}},"
        "\"required\":[\"s\"]}";
    json_t *s;
    HR_TRY(hr_json_load_buf("schema", schema, sizeof schema - 1, &s));
    return schema_masks(s, "{\"s\": \"ab\"}", d);
}

static hr_err *op_gbnf(uint64_t *d) {
    char *text;
    size_t len;
    HR_TRY(hr_read_file("tests/data/grammar/json.gbnf", &text, &len));
    hr_grammar *g = NULL;
    hr_matcher *m = NULL;
    hr_err *e = hr_grammar_compile(text, len, &g);
    free(text);
    if (!e) e = hr_matcher_create(g, NULL, &m);
    static const char doc[] = "{\"a\": [1, 2.5e3, \"x\\n\", true, null]}";
    size_t ok = 0;
    if (!e && !hr_matcher_accept_bytes(m, doc, sizeof doc - 1, &ok))
        e = hr_errf("the matcher refused byte %zu", ok);
    if (!e) *d = mix(*d, &ok, sizeof ok);
    hr_matcher_free(m);
    hr_grammar_free(g);
    return e;
}

static hr_err *op_safetensors(uint64_t *d) {
    hr_safetensors *st;
    HR_TRY(hr_st_open(hr_fixture("models/tiny-llama/model.safetensors"), &st));
    int n = hr_st_count(st);
    for (int i = 0; i < n; i++)
        *d = mix(*d, hr_st_name(st, i), strlen(hr_st_name(st, i)));
    hr_st_close(st);
    hr_model_config c;
    HR_TRY(hr_config_load(hr_fixture("models/tiny-llama"), &c));
    *d = mix(*d, &c.n_layers, sizeof c.n_layers);
    return NULL;
}

static hr_err *op_gguf(uint64_t *d) {
    hr_gguf *g;
    HR_TRY(hr_gguf_open(hr_fixture("gguf/brown-llama-8m-Q4_K_M.gguf"), &g));
    int nkv = hr_gguf_kv_count(g), nt = hr_gguf_tensor_count(g);
    *d = mix(*d, &nkv, sizeof nkv);
    *d = mix(*d, &nt, sizeof nt);
    hr_model_config c;
    hr_err *e = hr_config_from_gguf(g, &c);
    if (!e) *d = mix(*d, &c.n_layers, sizeof c.n_layers);
    hr_gguf_close(g);
    return e;
}

/* One request of prompt tokens through an engine; an error event is the run's error. */
static hr_err *generate(hr_engine *en, int n_prompt, uint64_t *d) {
    int32_t p[64];
    for (int i = 0; i < n_prompt; i++)
        p[i] = 3 + (i * 7919 + 17) % 500; /* tiny-llama has 512 ids */
    hr_request_params rp = {.tokens = p, .n_tokens = n_prompt, .max_tokens = 4, .ignore_eos = 1};
    hr_request *r;
    HR_TRY(hr_engine_submit(en, &rp, &r));
    hr_err *e = NULL;
    hr_event ev;
    while (hr_request_next(r, &ev)) {
        if (ev.kind == HR_EVENT_TOKEN) *d = mix(*d, &ev.token, sizeof ev.token);
        if (ev.kind == HR_EVENT_DONE && ev.finish != HR_FINISH_LENGTH) /* events carry no code */
            e = hr_errc(ev.error && strstr(ev.error, "out of memory") ? HR_E_OOM : HR_E_GENERIC,
                        "request ended with finish %d: %s", (int)ev.finish,
                        ev.error ? ev.error : "(no message)");
    }
    hr_request_release(r);
    return e;
}

/* A CPU backend, tiny-llama loaded on it, an engine (the SSD tier at ssd, when set) and
 * one request: prefill and 4 decode steps. */
static hr_err *engine_run(const char *ssd, uint64_t *d) {
    hr_backend *be;
    HR_TRY(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2}, &be));
    hr_model *m = NULL;
    hr_engine *en = NULL;
    hr_engine_options o = {
        .kv_memory = 4 << 20, .max_seqs = 2, .max_batch_tokens = 64, .ssd_cache = ssd};
    hr_err *e = hr_model_load(hr_fixture("models/tiny-llama"), be, &m);
    if (!e) e = hr_engine_create_on(m, NULL, &o, &en);
    if (!e) e = generate(en, 40, d);
    if (en && ssd) {
        hr_engine_stats st;
        hr_engine_stats_get(en, &st);
        ssd_restores = st.ssd_restores;
    }
    if (en) hr_engine_destroy(en);
    hr_model_free(m);
    hr_backend_destroy(be);
    return e;
}

static hr_err *op_engine(uint64_t *d) { return engine_run(NULL, d); }

/* The SSD tier: an engine writes its cached blocks to a fresh directory at destroy, a
 * second one indexes the files and restores the prefix from them. */
static hr_err *op_ssd(uint64_t *d) {
    hr_test_remove_tree(ssd_dir);
    HR_TRY(engine_run(ssd_dir, d));
    return engine_run(ssd_dir, d);
}

/* ---- The server's reply builders (reply.c, anthropic_reply.c, responses_reply.c, sink.c):
 * scripted engine events into each reply kind. A run must give the whole reply, or the
 * reply's out-of-memory outcome: no body (503) not streamed; streamed, whole events that
 * are the first ones of the reply without failures, then nothing but its error event. */

static const hr_server_backend REPLY_BE = {
    .tool_format = HR_TOOLS_QWEN, .reasoning = 1, .limits = {.max_tokens_limit = 1000}};

enum { MAX_EVENTS = 256 };

/* One reply kind: its request (parsed once, before the sweep), how the engine ends it, and
 * the digests of its stream's events without failures (the first run records them). */
typedef struct {
    const char *body;
    parse_fn parse;
    hr_finish why;
    const char *detail;
    hr_api_request *req;
    uint64_t ref[MAX_EVENTS];
    int n_ref, have_ref;
} reply_case;

#define TOOLS "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]"
#define USER "\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]"
#define ANTH_TOOLS "\"tools\": [{\"name\": \"f\", \"input_schema\": {\"type\": \"object\"}}]"
#define RESP_TOOLS "\"tools\": [{\"type\": \"function\", \"name\": \"f\"}]"

#define CASE(b, p, w, det)                                                                         \
    { .body = b, .parse = p, .why = w, .detail = det }

static reply_case RC_CHAT = CASE("{\"model\": \"m1\", " USER ", " TOOLS
                                 ", \"n\": 2, \"logprobs\": true, \"top_logprobs\": 2}",
                                 hr_parse_chat_request, HR_FINISH_STOP, NULL);
static reply_case RC_CHAT_STREAM =
    CASE("{" USER ", " TOOLS ", \"stream\": true, \"stream_options\": {\"include_usage\": true},"
         " \"logprobs\": true, \"top_logprobs\": 2}",
         hr_parse_chat_request, HR_FINISH_STOP, NULL);
static reply_case RC_COMPLETION = CASE("{\"prompt\": \"hi\", \"logprobs\": 2}",
                                       hr_parse_completion_request, HR_FINISH_LENGTH, NULL);
static reply_case RC_COMPLETION_STREAM =
    CASE("{\"prompt\": \"hi\", \"logprobs\": 2, \"stream\": true,"
         " \"stream_options\": {\"include_usage\": true}}",
         hr_parse_completion_request, HR_FINISH_LENGTH, NULL);
static reply_case RC_MESSAGES = CASE("{\"max_tokens\": 64, " USER ", " ANTH_TOOLS "}",
                                     hr_parse_messages_request, HR_FINISH_STOP, "END");
static reply_case RC_MESSAGES_STREAM =
    CASE("{\"max_tokens\": 64, \"stream\": true, " USER ", " ANTH_TOOLS "}",
         hr_parse_messages_request, HR_FINISH_STOP, NULL);
static reply_case RC_ERROR_STREAM = CASE("{" USER ", \"stream\": true}", hr_parse_chat_request,
                                         HR_FINISH_ERROR, "the engine failed \xc3");
static reply_case RC_ANTH_ERROR = CASE("{\"max_tokens\": 64, \"stream\": true, " USER "}",
                                       hr_parse_messages_request, HR_FINISH_ERROR, "engine died");

static reply_case RC_RESPONSES =
    CASE("{\"input\": \"x\", \"instructions\": \"be brief\", " RESP_TOOLS ", \"store\": true}",
         parse_responses, HR_FINISH_STOP, NULL);
static reply_case RC_RESPONSES_STREAM =
    CASE("{\"input\": \"x\", \"stream\": true, \"store\": true, " RESP_TOOLS "}", parse_responses,
         HR_FINISH_STOP, NULL);

static reply_case *const REPLY_CASES[] = {
    &RC_CHAT,      &RC_CHAT_STREAM,      &RC_COMPLETION,   &RC_COMPLETION_STREAM,
    &RC_MESSAGES,  &RC_MESSAGES_STREAM,  &RC_ERROR_STREAM, &RC_ANTH_ERROR,
    &RC_RESPONSES, &RC_RESPONSES_STREAM,
};

/* The model's output: reasoning, content, a tool call, more content. */
static const char *const PIECES[] = {
    "<think>",
    "hm",
    "</think>",
    "Hi",
    " th\xc3\xa9re",
    "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": [1, \"b\"]}}</tool_call>",
    "ok",
    NULL};

/* A JSON value's digest without the ids (random per reply) and times. */
static uint64_t mix_reply(uint64_t d, const json_t *v) {
    if (!json_is_object(v) && !json_is_array(v)) return mix_json(d, v);
    const char *k;
    const json_t *x;
    size_t i;
    if (json_is_array(v)) json_array_foreach(v, i, x) d = mix_reply(d, x);
    if (json_is_object(v)) json_object_foreach((json_t *)v, k, x) {
            d = mix(d, k, strlen(k));
            if (strcmp(k, "id") && strcmp(k, "item_id") && strcmp(k, "call_id") &&
                strcmp(k, "created") && strcmp(k, "created_at"))
                d = mix_reply(d, x);
        }
    return d;
}

/* Splits SSE text into events (name and data digests); -1 when one is not whole JSON. */
static int stream_events(const char *s, size_t len, uint64_t *ev, int cap) {
    int n = 0;
    const char *end = s + len;
    while (s < end) {
        const char *stop = strstr(s, "\n\n");
        if (!stop || n == cap) return -1;
        uint64_t h = 0xcbf29ce484222325ULL;
        if (!strncmp(s, "event: ", 7)) {
            const char *nl = strchr(s, '\n');
            h = mix(h, s + 7, (size_t)(nl - s - 7));
            s = nl + 1;
        }
        if (strncmp(s, "data: ", 6)) return -1;
        s += 6;
        json_t *v = json_loadb(s, (size_t)(stop - s), 0, NULL);
        if (!v && strncmp(s, "[DONE]", 6)) return -1;
        h = v ? mix_reply(h, v) : mix(h, s, 6);
        json_decref(v);
        ev[n++] = h;
        s = stop + 2;
    }
    return n;
}

/* Takes the reply's new SSE bytes onto *all (as libmicrohttpd's reader would); 0 when out
 * of memory in the test itself. */
static int take(hr_reply *r, hr_sbuf *all) {
    size_t n;
    char *s = hr_reply_take(r, &n);
    int ok = !n || hr_sbuf_add(all, s, n);
    free(s);
    return ok;
}

/* The engine's events for choice i, as hr_gen_sink calls would apply them. */
static void script_reply(hr_reply *r, int i, const reply_case *rc, hr_sbuf *all, int *ok) {
    hr_reply_begin(r, i, 10, 4, 0);
    *ok &= take(r, all);
    int n = 0;
    for (; PIECES[n]; n++) {
        const char *p = PIECES[n];
        hr_token_alt alt[2] = {{p, strlen(p), -0.5f}, {"x", 1, -2.0f}};
        hr_gen_token t = {.text = p,
                          .len = strlen(p),
                          .token = n,
                          .token_text = p,
                          .token_len = strlen(p),
                          .logprob = -0.25f,
                          .top = alt,
                          .n_top = 2};
        hr_reply_token(r, i, &t);
        *ok &= take(r, all);
    }
    hr_reply_finish(r, i, rc->why, n, rc->detail);
    *ok &= take(r, all);
}

/* A streamed reply's outcome: whole events, the reference's first ones; after a failure
 * its error event ends it. */
static hr_err *check_stream(hr_reply *r, reply_case *rc, const hr_sbuf *all, uint64_t *d) {
    uint64_t ev[MAX_EVENTS];
    int n = stream_events(all->s ? all->s : "", all->len, ev, MAX_EVENTS);
    if (n < 0) return hr_errf("the stream has an event that is not whole JSON");
    if (!rc->have_ref) {
        memcpy(rc->ref, ev, sizeof ev);
        rc->n_ref = n;
        rc->have_ref = 1;
    }
    if (!hr_reply_failed(r)) {
        *d = mix(*d, ev, sizeof *ev * (size_t)n);
        return NULL;
    }
    if (n >= rc->n_ref || memcmp(ev, rc->ref, sizeof *ev * (size_t)n))
        return hr_errf("a failed stream's events are not the first %d of the reply", n);
    size_t len;
    const char *tail = hr_reply_fail_event(r, &len);
    uint64_t last[2];
    if (!tail || stream_events(tail, len, last, 2) < 1)
        return hr_errf("a failed stream has no whole error event");
    return hr_err_oom();
}

/* A whole body, or none (503) when the reply failed. */
static hr_err *check_body(hr_reply *r, uint64_t *d) {
    int status;
    json_t *b = hr_reply_body(r, &status);
    hr_reply_summary sum;
    hr_reply_summarize(r, &sum);
    if (!b && (status != 503 || !hr_reply_failed(r) || strcmp(sum.finish, "error")))
        return hr_errf("no body, yet status %d and the reply not failed", status);
    if (!b) return hr_err_oom();
    *d = mix(mix_reply(*d, b), &status, sizeof status);
    json_decref(b);
    return NULL;
}

/* The reply of rc through its builders; the Responses ones store into a fresh store. */
static hr_err *reply_run(reply_case *rc, uint64_t *d) {
    hr_reply *r;
    HR_TRY(hr_reply_create(rc->req, "default", 1700000000, &REPLY_BE, &r));
    hr_response_store *st = NULL;
    if (rc->req->api == HR_API_RESPONSES && !(st = hr_response_store_create(4, 1 << 20))) {
        hr_reply_free(r);
        return hr_err_oom();
    }
    hr_reply_set_store(r, st);
    hr_sbuf all = {0};
    int ok = 1;
    for (int i = 0; i < rc->req->n || i == 0; i++)
        script_reply(r, i, rc, &all, &ok);
    hr_err *e = !ok               ? hr_err_oom()
                : rc->req->stream ? check_stream(r, rc, &all, d)
                                  : check_body(r, d);
    size_t stored = 0, bytes;
    if (st) hr_response_store_usage(st, &stored, &bytes);
    if (!e && st && stored != 1) e = hr_errf("the response was not stored");
    free(all.s);
    hr_reply_free(r);
    hr_response_store_destroy(st);
    return e;
}

static hr_err *op_chat(uint64_t *d) { return reply_run(&RC_CHAT, d); }
static hr_err *op_chat_stream(uint64_t *d) { return reply_run(&RC_CHAT_STREAM, d); }
static hr_err *op_completion(uint64_t *d) {
    HR_TRY(reply_run(&RC_COMPLETION, d));
    return reply_run(&RC_COMPLETION_STREAM, d);
}
static hr_err *op_messages_reply(uint64_t *d) { return reply_run(&RC_MESSAGES, d); }
static hr_err *op_messages_stream(uint64_t *d) { return reply_run(&RC_MESSAGES_STREAM, d); }
static hr_err *op_responses_reply(uint64_t *d) { return reply_run(&RC_RESPONSES, d); }
static hr_err *op_responses_stream(uint64_t *d) { return reply_run(&RC_RESPONSES_STREAM, d); }

/* Error replies: every API's error body (a message cut inside a character), /v1/models,
 * and the engine failing a stream (OpenAI's and Anthropic's error events). */
static hr_err *op_errors(uint64_t *d) {
    static const hr_api_kind apis[] = {HR_API_CHAT, HR_API_COMPLETION, HR_API_MESSAGES,
                                       HR_API_RESPONSES};
    for (size_t i = 0; i < sizeof apis / sizeof *apis; i++) {
        json_t *b = hr_error_body(apis[i], 400, "request: \"tools\" must be an array \xe2\x82");
        if (!b) return hr_err_oom();
        *d = mix_json(*d, b);
        json_decref(b);
    }
    json_t *m = hr_models_body("qwen3");
    if (!m) return hr_err_oom();
    *d = mix_json(*d, m);
    json_decref(m);
    HR_TRY(reply_run(&RC_ERROR_STREAM, d));
    return reply_run(&RC_ANTH_ERROR, d);
}

/* The request channel (sink.c) between them: the engine's events copied, queued, and
 * drained into a streamed chat reply. The channel takes its request, so this op parses
 * its own. */
static hr_err *op_channel(uint64_t *d) {
    static reply_case rc = CASE("{" USER ", " TOOLS ", \"stream\": true, \"logprobs\": true, "
                                "\"top_logprobs\": 2}",
                                hr_parse_chat_request, HR_FINISH_STOP, "END");
    hr_api_request *q = NULL;
    HR_TRY(load_request(rc.body, rc.parse, &q));
    hr_gen_chan *c = hr_chan_create(q, 1 << 20);
    if (!c) return hr_api_request_free(q), hr_err_oom();
    hr_reply *r = NULL;
    hr_err *e = hr_reply_create(hr_chan_request(c, 0), "default", 5, &REPLY_BE, &r);
    hr_gen_sink *s = hr_chan_sink(c, 0);
    if (e) {
        hr_chan_unsubmitted(c, 0);
        hr_chan_release(c);
        return e;
    }
    hr_gen_sink_begin(s, 10, 4, 0);
    for (int n = 0; PIECES[n]; n++) {
        hr_token_alt alt = {"x", 1, -2.0f};
        hr_gen_token t = {.text = PIECES[n],
                          .len = strlen(PIECES[n]),
                          .token = n,
                          .token_text = PIECES[n],
                          .token_len = strlen(PIECES[n]),
                          .logprob = -0.5f,
                          .top = &alt,
                          .n_top = 1};
        hr_gen_sink_token(s, &t);
    }
    hr_gen_sink_finish(s, HR_FINISH_STOP, 7, "END");
    hr_sbuf all = {0};
    int ok = hr_chan_drain(c, r, 0) && take(r, &all);
    e = ok ? check_stream(r, &rc, &all, d) : hr_err_oom();
    free(all.s);
    hr_reply_free(r);
    hr_chan_release(c);
    return e;
}

static const char *RESPONSES_BODY =
    "{\"model\": \"m\", \"instructions\": \"be brief\", \"input\": ["
    "{\"type\": \"message\", \"role\": \"developer\", \"content\": \"rules\"},"
    "{\"role\": \"user\", \"content\": [{\"type\": \"input_text\", \"text\": \"weather?\"}]},"
    "{\"type\": \"reasoning\", \"summary\": [{\"type\": \"summary_text\", \"text\": \"hmm\"}]},"
    "{\"type\": \"message\", \"role\": \"assistant\", \"content\": [{\"type\": \"output_text\","
    " \"text\": \"checking\"}]},"
    "{\"type\": \"function_call\", \"call_id\": \"c1\", \"name\": \"get_weather\","
    " \"arguments\": \"{\\\"city\\\": \\\"Paris\\\"}\"},"
    "{\"type\": \"function_call_output\", \"call_id\": \"c1\", \"output\": \"sunny\"}],"
    " \"tools\": [{\"type\": \"function\", \"name\": \"get_weather\", \"description\": \"w\","
    " \"parameters\": {\"type\": \"object\"}}, {\"type\": \"web_search\"}],"
    " \"reasoning\": {\"effort\": \"none\"}, \"text\": {\"format\": {\"type\": \"text\"}},"
    " \"metadata\": {\"k\": \"v\"}, \"max_output_tokens\": 32}";

/* A Responses body with every input item kind, tools, reasoning and echoed fields
 * (responses_request.c). */
static hr_err *op_responses_request(uint64_t *d) {
    hr_api_request *r = NULL;
    HR_TRY(load_request(RESPONSES_BODY, parse_responses, &r));
    *d = mix_json(mix_json(*d, r->chat), r->responses);
    hr_api_request_free(r);
    return NULL;
}

/* ---- The HTTP glue around the builders (http.c, routes.c): a server on a free port with a
 * backend that generates the scripted output within its submit call; requests over a
 * socket, each read to the end. Each reply must be the whole one (ids and times left out),
 * a 503 in the API's error shape (the static out-of-memory body, or one naming what ran
 * out), or a stream of whole events ended by its error event; never no reply at all.
 * libmicrohttpd's own allocations are not made to fail (a shared library: not wrapped). */

static hr_err *script_submit(void *ctx, const hr_api_request *req, hr_gen_sink *s) {
    hr_gen_sink_begin(s, 10, 4, 0);
    int n = 0;
    for (; PIECES[n]; n++) {
        hr_token_alt alt = {"x", 1, -2.0f};
        hr_gen_token t = {.text = PIECES[n],
                          .len = strlen(PIECES[n]),
                          .token = n,
                          .token_text = PIECES[n],
                          .token_len = strlen(PIECES[n]),
                          .logprob = -0.5f,
                          .top = &alt,
                          .n_top = 1};
        hr_gen_sink_token(s, &t);
    }
    hr_gen_sink_finish(s, HR_FINISH_STOP, n, NULL);
    return NULL;
}

static const char *script_name(void *ctx) { return "fake"; }

static const hr_server_backend HTTP_BE = {.submit = script_submit,
                                          .model_name = script_name,
                                          .tool_format = HR_TOOLS_QWEN,
                                          .reasoning = 1,
                                          .limits = {.max_tokens_limit = 1000}};

/* One request of the sweep's HTTP op and the events of its stream without failures. */
typedef struct {
    const char *method, *path, *body;
    hr_api_kind api;
    int stream;
    uint64_t ref[MAX_EVENTS];
    int n_ref, have_ref;
} http_case;

#define HTTP(m, p, b, a, st)                                                                       \
    { .method = m, .path = p, .body = b, .api = a, .stream = st }

static http_case HTTP_CASES[] = {
    HTTP("GET", "/v1/models", NULL, HR_API_CHAT, 0),
    HTTP("POST", "/v1/chat/completions",
         "{" USER ", " TOOLS ", \"logprobs\": true, \"top_logprobs\": 1}", HR_API_CHAT, 0),
    HTTP("POST", "/v1/chat/completions", "{" USER ", " TOOLS ", \"stream\": true}", HR_API_CHAT, 1),
    HTTP("POST", "/v1/messages", "{\"max_tokens\": 64, \"stream\": true, " USER ", " ANTH_TOOLS "}",
         HR_API_MESSAGES, 1),
    HTTP("POST", "/v1/responses", "{\"input\": \"x\", " RESP_TOOLS "}", HR_API_RESPONSES, 0),
    HTTP("POST", "/v1/responses", "{\"input\": \"x\", \"stream\": true, " RESP_TOOLS "}",
         HR_API_RESPONSES, 1),
};

static char reply_buf[1 << 16]; /* the reply being checked */

/* Sends the request (HTTP/1.0: the reply ends with the connection) and reads the reply into
 * buf; no allocation (the sweep counts the client's too). */
static hr_err *http_exchange(int port, const http_case *c, char *buf, size_t cap, size_t *n) {
    char req[2048];
    size_t blen = c->body ? strlen(c->body) : 0;
    int k = snprintf(req, sizeof req,
                     "%s %s HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     c->method, c->path, blen, c->body ? c->body : "");
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    struct timeval tv = {.tv_sec = 60};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    hr_err *e = connect(fd, (struct sockaddr *)&a, sizeof a) || send(fd, req, (size_t)k, 0) != k
                    ? hr_errf("cannot send to the server: %s", strerror(errno))
                    : NULL;
    *n = 0;
    for (ssize_t got = 1; !e && got > 0 && *n + 1 < cap; *n += (size_t)got)
        if ((got = recv(fd, buf + *n, cap - 1 - *n, 0)) < 0) {
            e = hr_errf("no end to the reply of %s %s within 60 s", c->method, c->path);
            got = 0;
        }
    close(fd);
    buf[*n] = 0;
    return e;
}

/* A streamed reply's body: the reference's events, or their first ones and an error event
 * (the API's, with the message "out of memory") to end it. */
static hr_err *http_stream(http_case *c, const char *body, size_t len, int *oom, uint64_t *d) {
    uint64_t ev[MAX_EVENTS];
    int n = stream_events(body, len, ev, MAX_EVENTS);
    if (n < 0) return hr_errf("%s: the stream has an event that is not whole JSON", c->path);
    if (!c->have_ref) {
        memcpy(c->ref, ev, sizeof ev);
        c->n_ref = n, c->have_ref = 1;
    }
    if (n == c->n_ref && !memcmp(ev, c->ref, sizeof *ev * (size_t)n)) {
        *d = mix(*d, ev, sizeof *ev * (size_t)n);
        return NULL;
    }
    int errors = c->api == HR_API_CHAT ? 2 : 1; /* OpenAI's ends with [DONE] */
    const char *tail =
        c->api == HR_API_CHAT ? strstr(body, "data: {\"error\"") : strstr(body, "event: error\n");
    if (!tail || !strstr(tail, "\"out of memory\"") || n < errors ||
        memcmp(ev, c->ref, sizeof *ev * (size_t)(n - errors)))
        return hr_errf("%s: a stream that is neither whole nor its first events and an error "
                       "event: %.300s",
                       c->path, body);
    *oom = 1;
    return NULL;
}

/* Whether body is an error of the server's in api's shape (the static out-of-memory one, or
 * one that names what ran out). */
static int server_error(hr_api_kind api, const char *body) {
    if (!strcmp(body, hr_oom_body(api))) return 1;
    json_t *v = json_loads(body, 0, NULL);
    const char *type = json_string_value(json_object_get(json_object_get(v, "error"), "type"));
    int ok = type && !strcmp(type, api == HR_API_MESSAGES ? "api_error" : "server_error");
    json_decref(v);
    return ok;
}

/* One reply: whole, or out of memory (*oom), or an error saying what else it was. */
static hr_err *http_check(http_case *c, const char *buf, size_t n, int *oom, uint64_t *d) {
    if (!n) return hr_errf("%s %s: no reply at all", c->method, c->path);
    const char *body = strstr(buf, "\r\n\r\n");
    int status = 0;
    if (!body || sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        return hr_errf("%s: not an HTTP reply: %.200s", c->path, buf);
    body += 4;
    if (status == 503 && server_error(c->api, body)) return *oom = 1, NULL;
    if (status != 200) return hr_errf("%s: status %d: %.300s", c->path, status, body);
    if (c->stream) return http_stream(c, body, n - (size_t)(body - buf), oom, d);
    json_t *v = json_loads(body, 0, NULL);
    if (!v) return hr_errf("%s: a body that is not JSON: %.300s", c->path, body);
    *d = mix_reply(*d, v);
    json_decref(v);
    return NULL;
}

/* Every HTTP case against the server at port, each checked (*oom: one was out of memory). */
static hr_err *http_cases(int port, int *oom, uint64_t *d) {
    hr_err *e = NULL;
    for (size_t i = 0; !e && i < sizeof HTTP_CASES / sizeof *HTTP_CASES; i++) {
        size_t n;
        e = http_exchange(port, &HTTP_CASES[i], reply_buf, sizeof reply_buf, &n);
        if (!e) e = http_check(&HTTP_CASES[i], reply_buf, n, oom, d);
    }
    return e;
}

static hr_err *op_http(uint64_t *d) {
    hr_server *s;
    hr_server_config cfg = {.port = 0};
    HR_TRY(hr_server_start(&cfg, &HTTP_BE, &s));
    int oom = 0;
    hr_err *e = http_cases(hr_server_port(s), &oom, d);
    hr_server_stop(s);
    return e ? e : oom ? hr_err_oom() : NULL;
}

/* ---- The --isolate proxy (proxy.c) and supervisor (supervisor.c). The proxy op starts a
 * proxy (inside the op: its own allocations and thread are swept) in front of an engine
 * child started once before the sweep: this binary serving the HTTP op's scripted backend
 * on a unix socket (serve_child). Its own GET /health and every HTTP case go through it;
 * each reply must pass the HTTP op's checks (a stream cut by memory ends with the API's
 * error event, whole before it). */

static hr_supervisor *iso_sup; /* the proxy op's engine child, started once */
static char iso_dir[64];       /* its runtime directory */
static char sup_dir[64];       /* the supervisor op's (each supervisor names its sockets alike) */
static char *const ISO_ARGV[] = {"test_alloc_fail", NULL};
static const hr_supervisor_config ISO_CFG = {.argv = ISO_ARGV,
                                             .runtime_dir = iso_dir,
                                             .probe_interval_s = 3600,
                                             .probe_timeout_s = 3600,
                                             .stop_timeout_s = 10};

/* The child of the proxy op: `test_alloc_fail --unix-socket PATH` serves the scripted backend
 * there until SIGTERM. */
static int serve_child(const char *path) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    hr_log_threshold = HR_LOG_ERROR;
    hr_server *s;
    hr_err *e = hr_server_start(&(hr_server_config){.unix_socket = path}, &HTTP_BE, &s);
    if (e) {
        fprintf(stderr, "test_alloc_fail child: %s\n", hr_err_msg(e));
        hr_err_free(e);
        return 1;
    }
    int sig;
    sigwait(&set, &sig);
    hr_server_stop(s);
    return 0;
}

/* The supervisor and its child for the proxy op, before the sweep. Probes come hourly once
 * the child is ready, so none allocates during a run; the one that follows the first answer
 * (0.1 s later, as while loading) is let pass first. */
static hr_err *iso_start(void) {
    snprintf(iso_dir, sizeof iso_dir, "/tmp/hearth-alloc-iso-XXXXXX");
    snprintf(sup_dir, sizeof sup_dir, "/tmp/hearth-alloc-sup-XXXXXX");
    if (!mkdtemp(iso_dir) || !mkdtemp(sup_dir)) return hr_errf("mkdtemp: %s", strerror(errno));
    HR_TRY(hr_supervisor_create(&ISO_CFG, &iso_sup));
    HR_TRY(hr_supervisor_run(iso_sup));
    char path[256];
    uint64_t gen;
    if (hr_supervisor_wait_ready(iso_sup, 0, 60, path, sizeof path, &gen) != 1)
        return hr_errf("the proxy op's engine child was not ready within 60 s");
    usleep(500000);
    return NULL;
}

/* The proxy op's engine child, stopped after the sweep, exits 0: under ASan with no leak
 * report of its own (LeakSanitizer's exit status is 23). */
static void test_iso_child_exit(void) {
    hr_supervisor_stop(iso_sup);
    json_t *state, *child;
    int ready;
    hr_supervisor_health(iso_sup, &state, &child, &ready);
    json_t *code = json_object_get(json_object_get(state, "last_exit"), "code");
    int clean = json_is_integer(code) && json_integer_value(code) == 0;
    char why[320];
    snprintf(why, sizeof why, "%s", json_string_value(json_object_get(state, "reason")));
    json_decref(state);
    json_decref(child);
    HR_CHECK(clean, "the engine child did not exit 0: %s", why);
}

/* A JSON value's object keys, recursively (the values: times and counts, left out). */
static uint64_t mix_keys(uint64_t d, const json_t *v) {
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) d = mix_keys(mix(d, k, strlen(k)), x);
    return d;
}

/* The proxy's own GET /health: 200 with the state "ready" and the child's fields, or the
 * static 503. */
static hr_err *health_check(const char *buf, size_t n, int *oom, uint64_t *d) {
    const char *body = n ? strstr(buf, "\r\n\r\n") : NULL;
    int status = 0;
    if (!body || sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        return hr_errf("GET /health: not an HTTP reply: %.200s", buf);
    body += 4;
    if (status == 503 && server_error(HR_API_CHAT, body)) return *oom = 1, NULL;
    json_t *v = json_loads(body, 0, NULL);
    const char *st = json_string_value(json_object_get(json_object_get(v, "isolate"), "state"));
    int ok = status == 200 && st && !strcmp(st, "ready") && json_object_get(v, "model");
    if (ok) *d = mix_keys(*d, v);
    json_decref(v);
    return ok ? NULL : hr_errf("GET /health: status %d: %.300s", status, body);
}

static hr_err *op_proxy(uint64_t *d) {
    static const http_case health = HTTP("GET", "/health", NULL, HR_API_CHAT, 0);
    hr_proxy *p;
    HR_TRY(hr_proxy_start(&(hr_proxy_config){.port = 0}, iso_sup, &p));
    int oom = 0;
    size_t n;
    hr_err *e = http_exchange(hr_proxy_port(p), &health, reply_buf, sizeof reply_buf, &n);
    if (!e) e = health_check(reply_buf, n, &oom, d);
    if (!e) e = http_cases(hr_proxy_port(p), &oom, d);
    hr_proxy_stop(p);
    return e ? e : oom ? hr_err_oom() : NULL;
}

/* A supervisor started, its child (this binary) forked and probed until ready, then
 * stopped (SIGTERM, reaped, its socket removed). */
static hr_err *op_supervisor(uint64_t *d) {
    hr_supervisor_config cfg = ISO_CFG;
    cfg.runtime_dir = sup_dir;
    hr_supervisor *s;
    HR_TRY(hr_supervisor_create(&cfg, &s));
    hr_err *e = hr_supervisor_run(s);
    char path[256];
    uint64_t gen;
    if (!e && hr_supervisor_wait_ready(s, 0, 60, path, sizeof path, &gen) != 1)
        e = hr_errf("no engine child was ready within 60 s");
    if (!e) *d = mix(*d, path, strlen(path));
    hr_supervisor_destroy(s);
    return e;
}

/* The requests of the reply cases, parsed once (the ops build replies, not requests). */
static hr_err *reply_cases_parse(void) {
    for (size_t i = 0; i < sizeof REPLY_CASES / sizeof *REPLY_CASES; i++) {
        hr_err *e = load_request(REPLY_CASES[i]->body, REPLY_CASES[i]->parse, &REPLY_CASES[i]->req);
        if (e) return hr_err_wrap(e, "reply case %zu", i);
    }
    return NULL;
}

static void reply_cases_free(void) {
    for (size_t i = 0; i < sizeof REPLY_CASES / sizeof *REPLY_CASES; i++)
        hr_api_request_free(REPLY_CASES[i]->req);
}

/* An operation and how many runs with failures it gets besides the first allocation of each
 * call site: every N below dense, `strided` more spread over the rest, `persistent` runs
 * failing from N on. The slow ones (a 32000-token tokenizer.json, two engines and their
 * files) get fewer, to keep the whole sweep near a minute in the ASan build. */
typedef struct {
    const char *name;
    hr_err *(*run)(uint64_t *digest);
    long dense, strided, persistent;
    /* every error must be HR_E_OOM (a request's: the server answers 503); not for the
     * grammar ops, whose matcher says only "rejected" when it runs out */
    int oom_code;
} op;

static const op OPS[] = {
    {"request", op_request, 300, 150, 60, 1},
    {"messages", op_messages, 300, 150, 60, 1},
    {"template", op_template, 300, 150, 60, 1},
    {"tokenizer", op_tokenizer, 10, 10, 5, 1},
    {"pretok", op_pretok, 300, 150, 60, 1},
    {"schema", op_schema, 300, 150, 60, 0},
    {"gbnf", op_gbnf, 300, 150, 60, 0},
    {"strings", op_strings, 300, 150, 60, 0},
    {"safetensors", op_safetensors, 300, 150, 60, 1},
    {"gguf", op_gguf, 300, 150, 60, 1},
    {"engine", op_engine, 100, 50, 30, 1},
    {"ssd", op_ssd, 40, 20, 10, 1},
    {"chat", op_chat, 300, 150, 60, 1},
    {"chat_stream", op_chat_stream, 300, 150, 60, 1},
    {"completion", op_completion, 300, 150, 60, 1},
    {"messages_reply", op_messages_reply, 300, 150, 60, 1},
    {"messages_stream", op_messages_stream, 300, 150, 60, 1},
    {"responses_reply", op_responses_reply, 300, 150, 60, 1},
    {"responses_stream", op_responses_stream, 300, 150, 60, 1},
    {"reply_errors", op_errors, 300, 150, 60, 1},
    {"channel", op_channel, 300, 150, 60, 1},
    {"responses_request", op_responses_request, 300, 150, 60, 1},
    {"http", op_http, 300, 150, 60, 1},
    {"proxy", op_proxy, 300, 150, 60, 1},
    {"supervisor", op_supervisor, 40, 20, 10, 1},
    {"schema_cached", op_schema_cached, 300, 150, 60, 0}, /* last: it turns the cache on */
};

/* Where a call site is: the binary's file offset, for addr2line -e. */
static void print_site(const char *what, void *site) {
    Dl_info di;
    if (site && dladdr(site, &di) && di.dli_fname)
        printf("#   %s: %s+0x%lx\n", what, di.dli_fname,
               (unsigned long)((char *)site - (char *)di.dli_fbase));
}

typedef struct {
    const op *o;
    uint64_t want;
    long tried, errors, same, not_oom; /* not_oom: errors without the HR_E_OOM code */
} sweep;

/* Without failures, the SSD op's second engine restores the prefix from the files the first
 * wrote (else the sweep would not cover the tier's read path). */
static void test_ssd_op_restores(void) {
    uint64_t d = 0;
    ssd_restores = 0;
    HR_CHECK_OK(op_ssd(&d));
    HR_CHECK(ssd_restores > 0, "the second engine restored %ld blocks", ssd_restores);
}

/* One run with allocation n failing (n < 0: none), or thread start k (k < 0: none); 0 (and
 * says why) when it went wrong. A run that hangs ends the test (SIGALRM). */
static int try_one(sweep *s, long n, int persistent, long k, char *why, size_t cap) {
    uint64_t d = 0xcbf29ce484222325ULL;
    hr_fault_track();
    hr_fault_arm(n, persistent);
    hr_fault_arm_thread(k);
    alarm(300);
    hr_err *e = s->o->run(&d);
    alarm(0);
    hr_fault_arm(-1, 0);
    hr_fault_arm_thread(-1);
    hr_err_code want = k >= 0 ? HR_E_BUSY : HR_E_OOM;
    int ok = 1;
    if (e) {
        const char *msg = hr_err_msg(e);
        if (!msg || !*msg) {
            snprintf(why, cap, "an error without a message");
            ok = 0;
        }
        if (hr_err_code_of(e) != want) {
            s->not_oom += k < 0;
            if (ok && (s->o->oom_code || k >= 0)) {
                snprintf(why, cap, "an error not marked %s: %.160s",
                         k >= 0 ? "HR_E_BUSY" : "out of memory", msg);
                ok = 0;
            }
        }
        hr_err_free(e);
    }
    hr_fault_stats st;
    hr_fault_stop(&st);
    s->tried++;
    if (e) s->errors++;
    if (ok && !e && d != s->want && st.failed + st.threads_failed) {
        snprintf(why, cap, "succeeded with a different result");
        ok = 0;
    }
    if (!e && d == s->want) s->same++;
    for (int i = 1; !ok && i < st.n_fail_stack; i++)
        print_site("the failed allocation's caller", st.fail_stack[i]);
    if (ok && st.live) {
        snprintf(why, cap, "%ld blocks (%zu bytes) leaked", st.live, st.live_bytes);
        print_site("a leaked block's allocation", st.first_leak_site);
        ok = 0;
    }
    return ok;
}

static int wanted(const op *o, long n, long calls, const char *sites, int full) {
    if (full || n < o->dense || sites[n]) return 1;
    long rest = calls - o->dense, step = rest / o->strided + 1;
    return (n - o->dense) % step == 0;
}

static void sweep_op(const op *o) {
    hr_t_cur = o->name;
    hr_t_cur_failed = 0;
    int full = getenv("HEARTH_FAULT_FULL") && atoi(getenv("HEARTH_FAULT_FULL"));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sweep s = {.o = o, .want = 0xcbf29ce484222325ULL};
    uint64_t warm = s.want;
    hr_err *e = o->run(&warm); /* lazy one-time state (CPU features, caches) */
    hr_fault_track();
    if (!e) e = o->run(&s.want);
    hr_fault_stats base;
    hr_fault_stop(&base);
    char why[256] = "";
    if (e) {
        printf("FAIL %s: without injected failures: %s\n", o->name, hr_err_msg(e));
        hr_err_free(e);
        hr_t_failed++;
        return;
    }
    if (base.live) {
        printf("FAIL %s: without injected failures %ld blocks leaked\n", o->name, base.live);
        print_site("a leaked block's allocation", base.first_leak_site);
        hr_t_failed++;
        return;
    }
    char *site_at = calloc((size_t)base.calls + 1, 1);
    for (int i = 0; i < base.n_sites; i++)
        if (hr_fault_site_first(i) < base.calls) site_at[hr_fault_site_first(i)] = 1;
    int bad = 0;
    for (long n = 0; n < base.calls && !bad; n++)
        if (wanted(o, n, base.calls, site_at, full) && !try_one(&s, n, 0, -1, why, sizeof why)) {
            printf("FAIL %s: allocation %ld of %ld failing once: %s\n", o->name, n, base.calls,
                   why);
            bad = 1;
        }
    long step = full ? 1 : base.calls / o->persistent + 1;
    for (long n = 0; n < base.calls && !bad; n += step)
        if (!try_one(&s, n, 1, -1, why, sizeof why)) {
            printf("FAIL %s: allocations from %ld of %ld failing: %s\n", o->name, n, base.calls,
                   why);
            bad = 1;
        }
    for (long k = 0; k < base.threads && !bad; k++)
        if (!try_one(&s, -1, 0, k, why, sizeof why)) {
            printf("FAIL %s: thread start %ld of %ld failing: %s\n", o->name, k, base.threads, why);
            bad = 1;
        }
    free(site_at);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("# %s: %ld allocations from %d call sites, %ld thread starts; %ld runs with failures "
           "(%ld errors, %ld same result, %ld errors not HR_E_OOM), %.1f s\n",
           o->name, base.calls, base.n_sites, base.threads, s.tried, s.errors, s.same, s.not_oom,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    if (bad)
        hr_t_failed++;
    else {
        hr_t_passed++;
        printf("ok %s\n", o->name);
    }
    fflush(stdout);
}

/* Whether the operation called name runs (HEARTH_FAULT_OP: only that one). */
static int selected(const char *name) {
    const char *only = getenv("HEARTH_FAULT_OP");
    return !only || !strcmp(only, name);
}

int main(int argc, char **argv) {
    /* jansson's allocations go through the shim too (malloc here is __wrap_malloc) */
    json_set_alloc_funcs(malloc, free);
    if (argc == 3 && !strcmp(argv[1], "--unix-socket")) return serve_child(argv[2]);
    snprintf(ssd_dir, sizeof ssd_dir, "/tmp/hearth-alloc-fail-%d", (int)getpid());
    hr_err *e = hr_tokenizer_load(hr_fixture("models/brown-llama-8m"), &brown_tok);
    if (!e) e = hr_grammar_vocab_create(brown_tok, &brown_gv);
    if (!e) e = reply_cases_parse();
    hr_grammar_dfa_cache_limit(0);   /* until schema_cached: every compile builds its DFAs */
    hr_grammar_mask_cache_limit(0);  /* and every mask its entry */
    hr_log_threshold = HR_LOG_ERROR; /* the tier's "out of memory" warnings, hundreds */
    if (!e && (selected("proxy") || selected("supervisor"))) e = iso_start();
    if (!e && selected("pretok")) e = pretok_write();
    if (e) {
        printf("FAIL setup: %s\n", hr_err_msg(e));
        hr_err_free(e);
        return hr_test_summary() | 1;
    }
    if (!getenv("HEARTH_FAULT_OP")) HR_RUN(test_ssd_op_restores);
    for (size_t i = 0; i < sizeof OPS / sizeof OPS[0]; i++)
        if (selected(OPS[i].name)) sweep_op(&OPS[i]);
    if (iso_sup) HR_RUN(test_iso_child_exit);
    hr_supervisor_destroy(iso_sup);
    if (iso_dir[0]) hr_test_remove_tree(iso_dir);
    if (sup_dir[0]) hr_test_remove_tree(sup_dir);
    if (pretok_dir[0]) hr_test_remove_tree(pretok_dir);
    reply_cases_free();
    hr_grammar_vocab_free(brown_gv);
    hr_tokenizer_free(brown_tok);
    hr_test_remove_tree(ssd_dir);
    return hr_test_summary();
}
