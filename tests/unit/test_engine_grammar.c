/* Constrained decoding through the engine on qwen3-tools-20m (a trained Qwen3 with the real
 * tokenizer): sampled output always in the grammar's language and ending where it accepts,
 * the same tokens alone and batched, the grammar after a reasoning block, a lazy grammar from
 * its trigger token on, the refusals, and constrained rows sampled by the backend's sample op
 * with the mask as its input giving the tokens and logprobs of the host path that writes the
 * mask into the logits by hand. */
#include <regex.h>

#include "engine/engine.h"
#include "harness.h"

static hr_engine *eng;

typedef struct {
    int32_t toks[128];
    int n;
    char text[2048];
    size_t len;
    hr_finish finish;
} out;

static void drain(hr_request *r, out *o) {
    memset(o, 0, sizeof *o);
    hr_event ev;
    while (hr_request_next(r, &ev)) {
        if (o->len + ev.text_len < sizeof o->text) {
            memcpy(o->text + o->len, ev.text, ev.text_len);
            o->len += ev.text_len;
        }
        if (ev.kind == HR_EVENT_DONE)
            o->finish = ev.finish;
        else if (o->n < 128)
            o->toks[o->n++] = ev.token;
    }
}

/* One request to its end. */
static hr_err *run(const hr_request_params *p, out *o) {
    hr_request *r;
    HR_TRY(hr_engine_submit(eng, p, &r));
    drain(r, o);
    hr_request_release(r);
    return NULL;
}

static const int32_t prompt[] = {9707, 1879, 11, 1246, 525, 498};

static hr_request_params params(hr_grammar *g, uint64_t seed) {
    return (hr_request_params){.tokens = prompt,
                               .n_tokens = 6,
                               .max_tokens = 40,
                               .temperature = 1,
                               .seed = seed,
                               .grammar = g};
}

/* Whether text matches re as a whole (POSIX ERE). */
static int full_match(const char *re, const char *text) {
    regex_t rx;
    char anchored[256];
    snprintf(anchored, sizeof anchored, "^(%s)$", re);
    if (regcomp(&rx, anchored, REG_EXTENDED | REG_NOSUB)) return 0;
    int ok = regexec(&rx, text, 0, NULL, 0) == 0;
    regfree(&rx);
    return ok;
}

static void test_regex_sampled(void) {
    const char *re = "[0-9]{3}-[a-z]{2}";
    hr_grammar *g;
    HR_CHECK_OK(hr_grammar_compile_regex(re, strlen(re), &g));
    for (uint64_t seed = 1; seed <= 6; seed++) {
        hr_request_params p = params(g, seed);
        out o;
        HR_CHECK_OK(run(&p, &o));
        HR_CHECK(o.finish == HR_FINISH_STOP && full_match(re, o.text), "seed %d: finish %d, \"%s\"",
                 (int)seed, o.finish, o.text);
    }
    hr_grammar_free(g); /* the requests held their own references */
}

/* Six constrained requests, alone and then all at once: the same tokens. */
static void test_batch_invariance(void) {
    const char *gbnf =
        "root ::= \"{\\\"n\\\": \" [0-9]{1,4} \", \\\"w\\\": \\\"\" [a-z ]{0,12} \"\\\"}\"";
    hr_grammar *g;
    HR_CHECK_OK(hr_grammar_compile(gbnf, strlen(gbnf), &g));
    out alone[6], together[6];
    hr_request *r[6];
    for (int i = 0; i < 6; i++) {
        hr_request_params p = params(g, 40 + (uint64_t)i);
        HR_CHECK_OK(run(&p, &alone[i]));
    }
    for (int i = 0; i < 6; i++) {
        hr_request_params p = params(g, 40 + (uint64_t)i);
        HR_CHECK_OK(hr_engine_submit(eng, &p, &r[i]));
    }
    for (int i = 0; i < 6; i++) {
        drain(r[i], &together[i]);
        hr_request_release(r[i]);
    }
    hr_grammar_free(g);
    for (int i = 0; i < 6; i++) {
        HR_CHECK(alone[i].n == together[i].n &&
                     !memcmp(alone[i].toks, together[i].toks, sizeof(int32_t) * (size_t)alone[i].n),
                 "request %d: %d tokens alone, %d batched: \"%s\" / \"%s\"", i, alone[i].n,
                 together[i].n, alone[i].text, together[i].text);
        HR_CHECK(alone[i].finish == HR_FINISH_STOP && alone[i].text[0] == '{' &&
                     alone[i].text[alone[i].len - 1] == '}',
                 "request %d: finish %d, \"%s\"", i, alone[i].finish, alone[i].text);
    }
}

/* The model reasons first (it opens <think> itself); the grammar holds after </think>. */
static void test_after_think(void) {
    const char *gbnf = "root ::= \"ok \" [0-9]{2}";
    hr_grammar *g;
    HR_CHECK_OK(hr_grammar_compile(gbnf, strlen(gbnf), &g));
    const char *chat = "{\"messages\": [{\"role\": \"user\", \"content\": \"Hello there\"}]}";
    hr_request_params p = {.chat = chat, .max_tokens = 80, .grammar = g, .grammar_after_think = 1};
    out o;
    HR_CHECK_OK(run(&p, &o));
    hr_grammar_free(g);
    const char *close = strstr(o.text, "</think>");
    HR_CHECK(close && strstr(o.text, "<think>") < close, "no reasoning block: \"%s\"", o.text);
    const char *answer = close + strlen("</think>");
    HR_CHECK(o.finish == HR_FINISH_STOP && full_match("ok [0-9]{2}", answer),
             "finish %d, answer \"%s\"", o.finish, answer);
}

/* Lazy: free text until the trigger token, then the grammar until it accepts, then free
 * again. A large bias makes the model emit the trigger at once and again after the span. */
static void test_lazy(void) {
    const hr_tokenizer *t = hr_engine_tokenizer(eng);
    int32_t trig = hr_tokenizer_token_id(t, "<tool_call>");
    HR_CHECK(trig >= 0, "no <tool_call> token");
    const char *gbnf = "root ::= \"[\" [a-c]{3} \"]\"";
    hr_grammar *g;
    HR_CHECK_OK(hr_grammar_compile(gbnf, strlen(gbnf), &g));
    float bias = 30;
    hr_request_params p = params(g, 9);
    p.max_tokens = 24;
    p.ignore_eos = 1;
    p.grammar_lazy = 1;
    p.grammar_trigger = trig;
    p.bias_ids = &trig;
    p.bias_values = &bias;
    p.n_bias = 1;
    out o;
    HR_CHECK_OK(run(&p, &o));
    hr_grammar_free(g);
    int spans = 0;
    for (const char *s = strstr(o.text, "<tool_call>"); s; s = strstr(s + 1, "<tool_call>")) {
        const char *body = s + strlen("<tool_call>"), *end = strstr(body, "<tool_call>");
        size_t n = end ? (size_t)(end - body) : strlen(body);
        char span[64] = {0};
        memcpy(span, body, n < 63 ? n : 63);
        if (end || n >= 5) { /* a span cut by max_tokens is a prefix */
            HR_CHECK(n == 5 && full_match("\\[[a-c]{3}\\]", span), "span %d is \"%s\" in \"%s\"",
                     spans, span, o.text);
            spans++;
        }
    }
    HR_CHECK(spans >= 2, "%d constrained spans in \"%s\"", spans, o.text);
}

static void test_refusals(void) {
    const char *gbnf = "root ::= \"a\"";
    hr_grammar *g;
    HR_CHECK_OK(hr_grammar_compile(gbnf, strlen(gbnf), &g));
    hr_request_params p = params(g, 1);
    p.grammar_lazy = 1;
    p.grammar_trigger = -5;
    hr_request *r = NULL;
    hr_err *err = hr_engine_submit(eng, &p, &r);
    HR_CHECK(err && strstr(hr_err_msg(err), "trigger"), "a bad trigger was taken");
    hr_err_free(err);
    hr_grammar_free(g);
}

/* Constrained requests of every sampling kind, batched on an engine over the model's
 * directory; each request's tokens and logprobs in res. no_op: the engine's backend loses its
 * sample op (before any request), so every row is decided on the host. */
enum { N_CON = 8 };

typedef struct {
    int32_t toks[40];
    float lp[40];
    int32_t top[40][4];
    int n;
    hr_finish finish;
} con_result;

static hr_err *run_constrained(int no_op, hr_grammar *g, con_result *res) {
    static hr_backend_vt no_sample;
    hr_engine *e;
    hr_engine_options o = {
        .n_threads = 2, .kv_memory = 32 << 20, .max_seqs = 8, .no_prefix_cache = 1};
    HR_TRY(hr_engine_create(hr_fixture("models/qwen3-tools-20m"), &o, &e));
    if (no_op) {
        no_sample = *e->opened.be->vt;
        no_sample.sample = NULL;
        e->opened.be->vt = &no_sample;
    }
    int32_t bias_ids[2] = {1, 90};
    float bias_values[2] = {4, -3};
    hr_request *r[N_CON];
    hr_err *err = NULL;
    for (int i = 0; i < N_CON && !err; i++) {
        hr_request_params p = params(g, 70 + (uint64_t)i);
        p.temperature = i == 0 ? 0 : 0.6f + 0.2f * (float)i;
        p.logprobs = i % 2;
        p.top_logprobs = i % 3 == 0 ? 4 : 0;
        if (i == 2) p.top_k = 20, p.top_p = 0.9f;
        if (i == 3) p.repetition_penalty = 1.3f, p.presence_penalty = 0.4f;
        if (i == 4) p.bias_ids = bias_ids, p.bias_values = bias_values, p.n_bias = 2;
        if (i == 5) p.min_p = 0.05f, p.frequency_penalty = 0.5f;
        err = hr_engine_submit(e, &p, &r[i]);
    }
    for (int i = 0; i < N_CON && !err; i++) {
        memset(&res[i], 0, sizeof res[i]);
        hr_event ev;
        while (hr_request_next(r[i], &ev))
            if (ev.kind == HR_EVENT_DONE) {
                res[i].finish = ev.finish;
            } else if (res[i].n < 40) {
                res[i].lp[res[i].n] = ev.logprob;
                for (int k = 0; k < ev.n_top && k < 4; k++)
                    res[i].top[res[i].n][k] = ev.top_ids[k];
                res[i].toks[res[i].n++] = ev.token;
            }
        hr_request_release(r[i]);
    }
    hr_engine_destroy(e);
    return err;
}

static void test_op_equals_host_mask(void) {
    const char *gbnf = "root ::= \"{\\\"n\\\": \" [0-9]{1,4} \", \\\"w\\\": \\\"\" [a-z ]{0,20} "
                       "\"\\\"}\"";
    hr_grammar *g;
    HR_CHECK_OK(hr_grammar_compile(gbnf, strlen(gbnf), &g));
    static con_result host[N_CON], op[N_CON];
    HR_CHECK_OK(run_constrained(1, g, host));
    HR_CHECK_OK(run_constrained(0, g, op));
    for (int i = 0; i < N_CON; i++) {
        HR_CHECK(host[i].finish == HR_FINISH_STOP && host[i].n > 4,
                 "request %d: finish %d, %d tokens", i, host[i].finish, host[i].n);
        HR_CHECK(!memcmp(&host[i], &op[i], sizeof host[i]),
                 "request %d: the op's tokens or logprobs differ from the host's (%d vs %d tokens)",
                 i, op[i].n, host[i].n);
    }
    hr_grammar_free(g);
}

int main(void) {
    hr_err *err =
        hr_engine_create(hr_fixture("models/qwen3-tools-20m"),
                         &(hr_engine_options){.n_threads = 2, .kv_memory = 32 << 20}, &eng);
    if (err) {
        printf("FAIL engine: %s\n# 0 passed, 1 failed\n", hr_err_msg(err));
        return 1;
    }
    HR_RUN(test_regex_sampled);
    HR_RUN(test_batch_invariance);
    HR_RUN(test_after_think);
    HR_RUN(test_lazy);
    HR_RUN(test_refusals);
    HR_RUN(test_op_equals_host_mask);
    hr_engine_destroy(eng);
    return hr_test_summary();
}
