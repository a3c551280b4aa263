/* The HTTP server end to end on loopback, with a fake engine behind hr_server_backend
 * that streams scripted text from its own threads. The clients are real: Python's
 * standard library (tests/server/http_client.py), `hearth bench-serve`, and the official
 * openai npm package when npm can install it (tests/server/openai_client.mjs). A second
 * listener with a 1 s idle timeout and 8 connections at most meets slow and stalled
 * clients (tests/server/slow_client.py), a third one hostile clients
 * (tests/server/hostile_client.py). */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "grammar/grammar.h"
#include "harness.h"

#include "base/json.h"

#include "server/server.h"

typedef struct {
    atomic_int requests, cancelled, active, peak_active;
} fake_engine;

typedef struct {
    fake_engine *fe;
    hr_gen_sink *sink;
    char *text;   /* the prompt text the script is chosen by */
    char *script; /* what it generates */
    int max_tokens, delay_us, endless, logprobs;
} fake_job;

/* The scripted output for a prompt. A request's grammar keeps the script's longest suffix
 * it accepts (grammar_suffix). A request's prefill is the start of the assistant turn:
 * the script continues after it (as a model would), so a prefill the script does not
 * contain shows up as unparsed text. SEED reports the choice's seed, COUNT the number of
 * chat messages (a Responses continuation's history); FLOOD is 16 KiB a
 * token, one a millisecond, to outrun a slow reader and fill socket buffers; PAUSE (in
 * fake_run) waits 1.2 s before the first token, as a long prefill. */
/* The fake's stand-in for constrained decoding: the longest suffix of the script the
 * request's grammar accepts whole (a forced call's markup after "Let me check."), or "". */
static const char *grammar_suffix(hr_grammar *g, const char *s) {
    for (const char *at = s; *at; at++) {
        hr_matcher *m;
        if (hr_matcher_create(g, NULL, &m)) return "";
        int ok = hr_matcher_accept_bytes(m, at, strlen(at), NULL) && hr_matcher_is_accepting(m);
        hr_matcher_free(m);
        if (ok) return at;
    }
    return "";
}

static char *script_for(const char *prompt, const hr_api_request *req, int *delay_us,
                        int *endless) {
    *delay_us = 200;
    *endless = 0;
    if (strstr(prompt, "FLOOD")) {
        char *f = malloc(16385);
        memset(f, 'f', 16384);
        f[16384] = 0;
        *delay_us = 1000, *endless = 1;
        return f;
    }
    const char *s = "Hello from the fake engine!";
    if (strstr(prompt, "THINK")) s = "<think>\nLet me think.\n</think>\n\nThe answer is 42.";
    if (strstr(prompt, "TOOL"))
        s = "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
            "\"Paris\"}}\n</tool_call>";
    if (strstr(prompt, "SLOW")) *delay_us = 5000, *endless = 1, s = "tick ";
    if (strstr(prompt, "COUNT")) { /* how many messages reached the template */
        char buf[64];
        snprintf(buf, sizeof buf, "messages=%zu",
                 json_array_size(json_object_get(req->chat, "messages")));
        return strdup(buf);
    }
    if (strstr(prompt, "SEED")) {
        char buf[64];
        snprintf(buf, sizeof buf, "seed=%llu", (unsigned long long)req->sampling.seed);
        return strdup(req->seed_set ? buf : "seed=none");
    }
    const char *at = req->prefill ? strstr(s, req->prefill) : NULL;
    if (req->grammar) at = grammar_suffix(req->grammar, s);
    return strdup(at ? at + (req->grammar ? 0 : strlen(req->prefill)) : s);
}

static void *fake_run(void *arg) {
    fake_job *j = arg;
    const char *s = j->script;
    int delay = j->delay_us, endless = j->endless;
    if (strstr(j->text, "PAUSE")) usleep(1200 * 1000);
    hr_gen_sink_begin(j->sink, (int)strlen(j->text), 0, 0);
    int limit = j->max_tokens ? j->max_tokens : 100000, n = 0;
    size_t off = 0, len = strlen(s);
    hr_finish why = HR_FINISH_STOP;
    while (endless || off < len) {
        if (hr_gen_sink_cancelled(j->sink)) {
            why = HR_FINISH_CANCELLED;
            atomic_fetch_add(&j->fe->cancelled, 1);
            break;
        }
        if (n == limit) {
            why = HR_FINISH_LENGTH;
            break;
        }
        size_t piece = endless ? len : (len - off < 3 ? len - off : 3);
        hr_token_alt alt = {s + off, piece, -1.25f};
        hr_gen_token t = {.text = s + off, .len = piece, .token = n, .logprob = -0.25f};
        if (j->logprobs) /* as the engine: token text and alternatives only when asked */
            t.token_text = s + off, t.token_len = piece, t.top = &alt, t.n_top = 1;
        hr_gen_sink_token(j->sink, &t);
        n++;
        if (!endless) off += piece;
        usleep((useconds_t)delay);
    }
    if (strstr(j->text, "FAIL"))
        hr_gen_sink_finish(j->sink, HR_FINISH_ERROR, n, "scripted failure");
    else
        hr_gen_sink_finish(j->sink, why, n, NULL);
    atomic_fetch_sub(&j->fe->active, 1);
    free(j->text);
    free(j->script);
    free(j);
    return NULL;
}

static char *prompt_text(const hr_api_request *r) {
    if (r->prompt) return strdup(r->prompt);
    if (!r->chat) return strdup("ids");
    const json_t *msgs = json_object_get(r->chat, "messages");
    const json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
    const char *c = json_string_value(json_object_get(last, "content"));
    return strdup(c ? c : "");
}

/* One more request running; the peak is kept for the connection-limit test. */
static void count_active(fake_engine *fe) {
    int active = atomic_fetch_add(&fe->active, 1) + 1, peak = atomic_load(&fe->peak_active);
    while (active > peak && !atomic_compare_exchange_weak(&fe->peak_active, &peak, active))
        ; /* a failed exchange reloaded peak: retry while still below */
}

static hr_err *fake_submit(void *ctx, const hr_api_request *req, hr_gen_sink *sink) {
    fake_engine *fe = ctx;
    char *text = prompt_text(req);
    if (strstr(text, "REJECT")) {
        free(text);
        return hr_errf("prompt is longer than the context (scripted)");
    }
    if (strstr(text, "NO_MEMORY") || strstr(text, "OVER_LIMIT")) {
        int oom = strstr(text, "NO_MEMORY") != NULL;
        free(text);
        return oom ? hr_err_oom() : hr_errc(HR_E_LIMIT, "template used too much (scripted)");
    }
    if (strstr(text, "REFUSE_ODD_SEED") && req->sampling.seed % 2) { /* a later choice */
        free(text);
        return hr_errf("no room for seed %llu (scripted)", (unsigned long long)req->sampling.seed);
    }
    fake_job *j = calloc(1, sizeof *j);
    *j = (fake_job){.fe = fe,
                    .sink = sink,
                    .text = text,
                    .max_tokens = req->max_tokens,
                    .logprobs = req->logprobs};
    j->script = script_for(text, req, &j->delay_us, &j->endless);
    atomic_fetch_add(&fe->requests, 1);
    count_active(fe);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_create(&t, &attr, fake_run, j);
    pthread_attr_destroy(&attr);
    return NULL;
}

static const char *fake_name(void *ctx) { return "fake-model"; }

static hr_err *fake_stats(void *ctx, json_t *out) {
    fake_engine *fe = ctx;
    const hr_json_field f[] = {
        {"requests", json_integer(atomic_load(&fe->requests))},
        {"cancelled", json_integer(atomic_load(&fe->cancelled))},
        {"active", json_integer(atomic_load(&fe->active))},
        {"peak_active", json_integer(atomic_load(&fe->peak_active))},
    };
    return hr_json_set_fields(out, f, sizeof f / sizeof *f);
}

static hr_err *fake_tokenize(void *ctx, const char *text, int special, int32_t **ids, int *n) {
    *n = (int)strlen(text) + (special ? 1 : 0);
    *ids = malloc(((size_t)*n + 1) * sizeof **ids);
    int k = 0;
    if (special) (*ids)[k++] = 1;
    for (const char *p = text; *p; p++)
        (*ids)[k++] = (unsigned char)*p;
    return NULL;
}

static hr_err *fake_detokenize(void *ctx, const int32_t *ids, int n, char **text, size_t *len) {
    *len = (size_t)n;
    *text = malloc((size_t)n + 1);
    for (int i = 0; i < n; i++)
        (*text)[i] = (char)ids[i];
    (*text)[n] = 0;
    return NULL;
}

/* As fake_run reports the prompt: one token per byte of the last message's text. */
static hr_err *fake_count(void *ctx, const hr_api_request *req, int *n) {
    char *text = prompt_text(req);
    if (!text) return hr_err_oom();
    *n = (int)strlen(text);
    free(text);
    return NULL;
}

/* Runs cmd, echoing its output and adding up its ok / FAIL lines into the harness. */
static void run_client(const char *cmd) {
    FILE *f = popen(cmd, "r");
    if (!f) {
        printf("FAIL %s: popen failed\n", cmd);
        hr_t_failed++;
        return;
    }
    char line[4096];
    int any = 0;
    while (fgets(line, sizeof line, f)) {
        fputs(line, stdout);
        if (!strncmp(line, "ok ", 3)) hr_t_passed++, any = 1;
        if (!strncmp(line, "FAIL ", 5)) hr_t_failed++, any = 1;
    }
    int rc = pclose(f);
    if (!any || rc) {
        printf("FAIL %s: exit status %d\n", cmd, rc);
        hr_t_failed++;
    }
    fflush(stdout);
}

static fake_engine FE;

/* Slow and stalled clients against a listener with a 1 s idle timeout and room for 8
 * connections (and a slow reader on the main one); the peak of concurrent requests is
 * counted from here on. */
static void run_slow_clients(const hr_server_backend *be, int main_port) {
    hr_server_config cfg = {.port = 0, .api_key = "sekret", .timeout_s = 1, .max_connections = 8};
    hr_server *s;
    hr_err *e = hr_server_start(&cfg, be, &s);
    if (e) {
        printf("FAIL start_slow: %s\n", hr_err_msg(e));
        hr_t_failed++;
        hr_err_free(e);
        return;
    }
    atomic_store(&FE.peak_active, 0);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "python3 tests/server/slow_client.py %d %d sekret %d 2>&1",
             hr_server_port(s), main_port, (int)getpid());
    run_client(cmd);
    hr_server_stop(s);
}

/* Hostile clients (tests/server/hostile_client.py) against a listener with a 64 KiB body
 * limit, an 8 MiB request memory budget, a 2 s request deadline, 4 connections per
 * client address and a 1 MiB output backlog. */
static void run_hostile_clients(const hr_server_backend *be) {
    hr_server_config cfg = {.port = 0,
                            .api_key = "sekret",
                            .max_body = 64 * 1024,
                            .timeout_s = 5,
                            .request_timeout_s = 2,
                            .max_connections = 32,
                            .max_connections_per_ip = 4,
                            .request_memory = 8u << 20,
                            .max_backlog = 1u << 20};
    hr_server *s;
    hr_err *e = hr_server_start(&cfg, be, &s);
    if (e) {
        printf("FAIL start_hostile: %s\n", hr_err_msg(e));
        hr_t_failed++;
        hr_err_free(e);
        return;
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "python3 tests/server/hostile_client.py %d sekret 2>&1",
             hr_server_port(s));
    run_client(cmd);
    hr_server_stop(s);
}

static void test_start_errors(void) {
    hr_server_backend be = {.ctx = &FE, .model_name = fake_name};
    hr_server *s;
    hr_server_config bad = {.host = "no-such-host.invalid", .port = 0};
    hr_err *e = hr_server_start(&bad, &be, &s);
    HR_CHECK(e && strstr(hr_err_msg(e), "--host no-such-host.invalid"), "bad host");
    hr_err_free(e);
    hr_server_config port = {.port = 70000};
    e = hr_server_start(&port, &be, &s);
    HR_CHECK(e && strstr(hr_err_msg(e), "not a TCP port"), "bad port");
    hr_err_free(e);
}

int main(void) {
    HR_RUN(test_start_errors);
    hr_server_backend be = {.ctx = &FE,
                            .model_name = fake_name,
                            .submit = fake_submit,
                            .stats = fake_stats,
                            .tokenize = fake_tokenize,
                            .detokenize = fake_detokenize,
                            .count = fake_count,
                            .tool_format = HR_TOOLS_QWEN,
                            .reasoning = 1,
                            .limits = {.max_tokens_limit = 4096, .vocab_size = 256}};
    hr_server_config cfg = {.port = 0, .api_key = "sekret", .max_body = 64 * 1024};
    hr_server *s;
    hr_err *e = hr_server_start(&cfg, &be, &s);
    if (e) {
        printf("FAIL start: %s\n", hr_err_msg(e));
        hr_err_free(e);
        return hr_test_summary() | 1;
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "python3 tests/server/http_client.py %d sekret 2>&1",
             hr_server_port(s));
    run_client(cmd);
    snprintf(cmd, sizeof cmd, "bash tests/server/bench_client.sh %d sekret 2>&1",
             hr_server_port(s));
    run_client(cmd);
    snprintf(cmd, sizeof cmd, "bash tests/server/openai_npm.sh %d sekret 2>&1", hr_server_port(s));
    run_client(cmd);
    run_slow_clients(&be, hr_server_port(s));
    run_hostile_clients(&be);
    hr_server_stop(s);
    for (int i = 0; i < 500 && atomic_load(&FE.active); i++)
        usleep(10000);
    if (atomic_load(&FE.active))
        printf("FAIL drain: %d fake requests still running\n", atomic_load(&FE.active)),
            hr_t_failed++;
    return hr_test_summary();
}
