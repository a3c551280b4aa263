/* Constrained decoding through the engine on qwen3-tools-20m (a trained Qwen3 with the real
 * tokenizer): sampled output always in the grammar's language and ending where it accepts,
 * the same tokens alone and batched, the grammar after a reasoning block, a lazy grammar from
 * its trigger token on, and the refusals. */
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
    hr_engine_destroy(eng);
    return hr_test_summary();
}
