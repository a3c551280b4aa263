/* The engine: batched results equal single-request results (greedy and seeded), chunked
 * prefill, the prefix cache, refusal, cancellation, stop strings across token boundaries,
 * logits processors against hand-computed values, and a stress run of 200 requests with
 * random cancellations against a small KV pool, and hybrid models (recurrent state slots,
 * prefix reuse through state snapshots, snapshot eviction), and the release of blocks that
 * left the window of an all-sliding (mistral-style) model. Uses brown-llama-8m and its tokenizer
 * (tiny-llama for the stress run, tiny-qwen3_next and tiny-qwen3_5 for the hybrid one), and
 * the heap trimmed once the engine idles after work. */
#include <pthread.h>
#include <unistd.h>

#include "base/clock.h"
#include "engine/engine.h"
#include "harness.h"
#include "model/mkmodel.h"

static hr_backend *be;
static hr_model *model, *tiny; /* brown-llama-8m, tiny-llama (stress) */
static hr_tokenizer *tok;

typedef struct {
    int32_t toks[256];
    int n;
    char text[4096];
    size_t text_len;
    hr_event done;
    float logprob[256];
    int32_t top0[256];
} result;

static void prompt_of(int32_t *p, int n, int salt) {
    for (int i = 0; i < n; i++)
        p[i] = 3 + (int32_t)((i * 7919 + salt * 104729 + 17) % 31000);
}

static void drain(hr_request *r, result *res) {
    memset(res, 0, sizeof *res);
    hr_event ev;
    while (hr_request_next(r, &ev)) {
        if (res->text_len + ev.text_len < sizeof res->text) {
            memcpy(res->text + res->text_len, ev.text, ev.text_len);
            res->text_len += ev.text_len;
        }
        if (ev.kind == HR_EVENT_DONE) {
            res->done = ev;
            res->done.text = res->done.error = NULL;
        } else if (res->n < 256) {
            res->logprob[res->n] = ev.logprob;
            res->top0[res->n] = ev.n_top > 0 ? ev.top_ids[0] : -1;
            res->toks[res->n++] = ev.token;
        }
    }
}

static hr_err *engine(int max_batch_tokens, size_t kv_memory, int no_cache, hr_engine **e) {
    hr_engine_options o = {.max_batch_tokens = max_batch_tokens,
                           .kv_memory = kv_memory ? kv_memory : 64 << 20,
                           .max_seqs = 16,
                           .no_prefix_cache = no_cache};
    return hr_engine_create_on(model, tok, &o, e);
}

static hr_err *run_one(hr_engine *e, const hr_request_params *p, result *res) {
    hr_request *r;
    HR_TRY(hr_engine_submit(e, p, &r));
    drain(r, res);
    hr_request_release(r);
    return NULL;
}

static int same_tokens(const result *a, const result *b) {
    return a->n == b->n && memcmp(a->toks, b->toks, sizeof(int32_t) * (size_t)a->n) == 0;
}

/* 16 prompts alone, then all at once, then all at once with 7-token prefill chunks. */
static void check_batch_invariance(float temperature) {
    enum { N = 16 };
    static int32_t prompts[N][80];
    static result alone[N], batched[N];
    hr_request_params p[N];
    for (int i = 0; i < N; i++) {
        prompt_of(prompts[i], 80, i);
        p[i] = (hr_request_params){.tokens = prompts[i],
                                   .n_tokens = 5 + i * 4,
                                   .max_tokens = 8 + i / 2,
                                   .ignore_eos = 1,
                                   .temperature = temperature,
                                   .seed = (uint64_t)i};
    }
    hr_engine *e;
    HR_CHECK_OK(engine(0, 0, 1, &e));
    for (int i = 0; i < N; i++)
        HR_CHECK_OK(run_one(e, &p[i], &alone[i]));
    hr_engine_destroy(e);
    for (int chunk = 2048; chunk >= 7; chunk = chunk == 2048 ? 7 : 0) {
        HR_CHECK_OK(engine(chunk, 0, 1, &e));
        hr_request *r[N];
        for (int i = 0; i < N; i++)
            HR_CHECK_OK(hr_engine_submit(e, &p[i], &r[i]));
        for (int i = 0; i < N; i++) {
            drain(r[i], &batched[i]);
            hr_request_release(r[i]);
        }
        hr_engine_destroy(e);
        for (int i = 0; i < N; i++) {
            HR_CHECK(batched[i].done.finish == HR_FINISH_LENGTH, "request %d finish %d", i,
                     batched[i].done.finish);
            HR_CHECK(same_tokens(&alone[i], &batched[i]),
                     "request %d (chunk %d): batched tokens differ", i, chunk);
        }
    }
}

static void test_greedy_batch_invariance(void) { check_batch_invariance(0); }
static void test_seeded_batch_invariance(void) { check_batch_invariance(1.0f); }

/* The same with --compute bf16 (AMX, VDPBF16PS or rounded x): each token's products
 * never depend on what else is in the batch. */
static void test_bf16_batch_invariance(void) {
    hr_backend *be16 = NULL;
    hr_model *m16 = NULL, *saved = model;
    hr_err *err =
        hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2, .compute_bf16 = 1}, &be16);
    if (!err) err = hr_model_load(hr_fixture("models/brown-llama-8m"), be16, &m16);
    HR_CHECK_OK(err);
    if (!err) {
        model = m16;
        check_batch_invariance(0);
        check_batch_invariance(1.0f);
        model = saved;
    }
    hr_model_free(m16);
    hr_backend_destroy(be16);
}

/* A pool too small for all sequences at once: the youngest are preempted and recomputed
 * (or, with no_preempt, wait), and every output equals the request run alone. */
static void test_preemption(void) {
    enum { N = 6 };
    static int32_t prompts[N][24];
    static result alone[N], got[N];
    hr_request_params p[N];
    for (int i = 0; i < N; i++) {
        prompt_of(prompts[i], 24, 40 + i);
        p[i] = (hr_request_params){
            .tokens = prompts[i], .n_tokens = 20, .max_tokens = 40, .ignore_eos = 1};
    }
    size_t block = (size_t)6 * 2 * 2 * 32 * 4 * 16;
    hr_engine *e;
    HR_CHECK_OK(engine(0, 0, 1, &e));
    for (int i = 0; i < N; i++)
        HR_CHECK_OK(run_one(e, &p[i], &alone[i]));
    hr_engine_destroy(e);
    for (int no_preempt = 0; no_preempt < 2; no_preempt++) {
        hr_engine_options o = {.kv_memory = 10 * block, .max_seqs = 8, .no_preempt = no_preempt};
        HR_CHECK_OK(hr_engine_create_on(model, tok, &o, &e));
        hr_request *r[N];
        for (int i = 0; i < N; i++)
            HR_CHECK_OK(hr_engine_submit(e, &p[i], &r[i]));
        for (int i = 0; i < N; i++) {
            drain(r[i], &got[i]);
            hr_request_release(r[i]);
        }
        hr_engine_stats st;
        hr_engine_stats_get(e, &st);
        hr_engine_destroy(e);
        HR_CHECK(no_preempt ? st.preempted == 0 : st.preempted > 0,
                 "no_preempt %d: %ld preemptions", no_preempt, st.preempted);
        for (int i = 0; i < N; i++)
            HR_CHECK(same_tokens(&alone[i], &got[i]), "no_preempt %d: request %d differs",
                     no_preempt, i);
    }
}

static void test_prefix_cache(void) {
    int32_t a[120], b[120];
    prompt_of(a, 120, 99);
    memcpy(b, a, sizeof a);
    for (int i = 100; i < 120; i++)
        b[i] = 500 + i;
    hr_request_params pa = {.tokens = a, .n_tokens = 120, .max_tokens = 10, .ignore_eos = 1};
    hr_request_params pb = {.tokens = b, .n_tokens = 120, .max_tokens = 10, .ignore_eos = 1};
    result ra, rb, ref;
    hr_engine *e;
    HR_CHECK_OK(engine(0, 0, 1, &e));
    HR_CHECK_OK(run_one(e, &pb, &ref));
    hr_engine_destroy(e);
    HR_CHECK_OK(engine(0, 0, 0, &e));
    HR_CHECK_OK(run_one(e, &pa, &ra));
    HR_CHECK_OK(run_one(e, &pb, &rb));
    result again;
    HR_CHECK_OK(run_one(e, &pa, &again));
    hr_engine_stats st;
    hr_engine_stats_get(e, &st);
    hr_engine_destroy(e);
    HR_CHECK(ra.done.n_cached == 0, "first request reused %d tokens", ra.done.n_cached);
    HR_CHECK(rb.done.n_cached == 96, "shared prefix: reused %d tokens, want 96", rb.done.n_cached);
    HR_CHECK(same_tokens(&rb, &ref), "tokens with the prefix cache differ from without");
    HR_CHECK(again.done.n_cached == 112, "repeat: reused %d tokens, want 112", again.done.n_cached);
    HR_CHECK(same_tokens(&again, &ra), "repeat produced other tokens");
    HR_CHECK(st.cached_tokens == 96 + 112, "stats report %ld cached tokens", st.cached_tokens);
}

static void test_refuse_and_errors(void) {
    hr_engine *e;
    size_t block =
        (size_t)6 * 2 * 2 * 32 * 4 * 16; /* layers * k,v * kv_heads * head_dim * f32 * 16 */
    HR_CHECK_OK(engine(0, 4 * block, 0, &e));
    int32_t p[100];
    prompt_of(p, 100, 1);
    hr_request *r = NULL;
    hr_err *err =
        hr_engine_submit(e, &(hr_request_params){.tokens = p, .n_tokens = 60, .max_tokens = 5}, &r);
    HR_CHECK(err && strstr(hr_err_msg(err), "exceed"), "oversized request not refused");
    hr_err_free(err);
    err = hr_engine_submit(e, &(hr_request_params){.tokens = p, .n_tokens = 4, .text = "x"}, &r);
    HR_CHECK(err, "two prompt sources accepted");
    hr_err_free(err);
    err = hr_engine_submit(e, &(hr_request_params){.chat = "[1]"}, &r);
    HR_CHECK(err && strstr(hr_err_msg(err), "JSON object"), "a chat request that is no object");
    hr_err_free(err);
    int32_t bad = 5000000;
    float v = 1;
    err = hr_engine_submit(
        e,
        &(hr_request_params){
            .tokens = p, .n_tokens = 4, .bias_ids = &bad, .bias_values = &v, .n_bias = 1},
        &r);
    HR_CHECK(err && strstr(hr_err_msg(err), "logit_bias"), "bad logit_bias accepted");
    hr_err_free(err);
    result res;
    HR_CHECK_OK(run_one(
        e, &(hr_request_params){.tokens = p, .n_tokens = 50, .max_tokens = 14, .ignore_eos = 1},
        &res));
    HR_CHECK(res.n == 14 && res.done.finish == HR_FINISH_LENGTH,
             "a request filling the pool got %d tokens", res.n);
    hr_engine_stats st;
    hr_engine_stats_get(e, &st);
    HR_CHECK(st.refused == 4, "refused %ld", st.refused);
    hr_engine_destroy(e);
}

/* Negative sampling fields take generation_config.json's values: brown-llama-8m has no
 * do_sample, so that is greedy. */
/* A model without a chat template renders chat as "role: content" lines, then
 * "assistant:", tokenized with BOS (brown-llama-8m is a base model). */
static void test_chat_fallback(void) {
    hr_engine *e;
    HR_CHECK_OK(engine(0, 0, 0, &e));
    const char *text = "user: Hi\nassistant:";
    int32_t *ids = NULL;
    int n = 0;
    HR_CHECK_OK(hr_tokenizer_encode(tok, text, strlen(text), 1, &ids, &n));
    result res;
    HR_CHECK_OK(run_one(e,
                        &(hr_request_params){.chat = "{\"messages\": [{\"role\": \"user\", "
                                                     "\"content\": \"Hi\"}]}",
                                             .max_tokens = 2,
                                             .ignore_eos = 1},
                        &res));
    HR_CHECK(res.n == 2 && res.done.n_prompt == n, "prompt %d tokens, wanted %d", res.done.n_prompt,
             n);
    free(ids);
    hr_engine_destroy(e);
}

/* Number of tokens strictly between the first <think> and the first </think> of toks
 * (-1 when either is missing). */
static int think_span(const result *r, int32_t open, int32_t close) {
    int a = -1;
    for (int i = 0; i < r->n; i++) {
        if (r->toks[i] == open && a < 0) a = i;
        if (r->toks[i] == close && a >= 0) return i - a - 1;
    }
    return -1;
}

/* reasoning_budget on qwen3-tools-20m (it opens <think> itself by default): the block is
 * closed after the budget by the forced "\n</think>\n\n", and the answer follows; without
 * a budget the model's own block is longer. */
static void test_reasoning_budget(void) {
    hr_engine *e = NULL;
    HR_CHECK_OK(hr_engine_create(hr_fixture("models/qwen3-tools-20m"),
                                 &(hr_engine_options){.n_threads = 1, .kv_memory = 16 << 20}, &e));
    const char *chat = "{\"messages\": [{\"role\": \"user\", \"content\": \"Hello there\"}]}";
    const hr_tokenizer *t = hr_engine_tokenizer(e);
    int32_t open = hr_tokenizer_token_id(t, "<think>"),
            close = hr_tokenizer_token_id(t, "</think>");
    result free_run, capped;
    HR_CHECK_OK(run_one(e, &(hr_request_params){.chat = chat, .max_tokens = 60}, &free_run));
    int natural = think_span(&free_run, open, close);
    HR_CHECK(natural > 3, "the model's own reasoning has %d tokens", natural);
    HR_CHECK_OK(run_one(
        e, &(hr_request_params){.chat = chat, .max_tokens = 60, .reasoning_budget = 3}, &capped));
    int span = think_span(&capped, open, close);
    /* 3 reasoning tokens, then the forced "\n" before </think> */
    HR_CHECK(span == 4, "capped reasoning has %d tokens: %.*s", span, (int)capped.text_len,
             capped.text);
    HR_CHECK(strstr(capped.text, "</think>\n\n") && capped.n > span + 4,
             "an answer follows the closed block: %.*s", (int)capped.text_len, capped.text);
    hr_engine_destroy(e);
}

/* qwen3-tools-20m's embedding has rows past its tokenizer (151669 of 151936): a +100
 * bias on one of them is no way to sample it (it has no text: "detokenizing failed"). */
static void test_untokenizable_never_sampled(void) {
    hr_engine *e = NULL;
    HR_CHECK_OK(hr_engine_create(hr_fixture("models/qwen3-tools-20m"),
                                 &(hr_engine_options){.n_threads = 1, .kv_memory = 16 << 20}, &e));
    if (!e) return;
    int n_tok = hr_tokenizer_vocab_size(hr_engine_tokenizer(e));
    HR_CHECK(n_tok < hr_engine_model_cfg(e)->vocab, "tokenizer %d ids, vocab %d", n_tok,
             hr_engine_model_cfg(e)->vocab);
    int32_t p[4] = {9707, 1879, 11, 1246}, bid = n_tok + 31;
    float bv = 100;
    result res;
    HR_CHECK_OK(run_one(e,
                        &(hr_request_params){.tokens = p,
                                             .n_tokens = 4,
                                             .max_tokens = 4,
                                             .ignore_eos = 1,
                                             .bias_ids = &bid,
                                             .bias_values = &bv,
                                             .n_bias = 1},
                        &res));
    hr_engine_destroy(e);
    HR_CHECK(res.done.finish == HR_FINISH_LENGTH && res.n == 4, "finish %d after %d tokens",
             res.done.finish, res.n);
    for (int i = 0; i < res.n; i++)
        HR_CHECK(res.toks[i] < n_tok, "token %d is %d, past the tokenizer's %d", i, res.toks[i],
                 n_tok);
}

static void test_model_defaults(void) {
    hr_engine *e;
    HR_CHECK_OK(engine(0, 0, 0, &e));
    int32_t p[9];
    prompt_of(p, 9, 8);
    result a, b;
    HR_CHECK_OK(run_one(
        e, &(hr_request_params){.tokens = p, .n_tokens = 9, .max_tokens = 8, .ignore_eos = 1}, &a));
    HR_CHECK_OK(run_one(e,
                        &(hr_request_params){.tokens = p,
                                             .n_tokens = 9,
                                             .max_tokens = 8,
                                             .ignore_eos = 1,
                                             .temperature = -1,
                                             .top_p = -1,
                                             .top_k = -1,
                                             .repetition_penalty = -1,
                                             .seed = 77},
                        &b));
    hr_engine_destroy(e);
    HR_CHECK(same_tokens(&a, &b), "model defaults are not greedy");
}

static void test_cancel(void) {
    hr_engine *e;
    HR_CHECK_OK(engine(0, 0, 0, &e));
    int32_t p[8];
    prompt_of(p, 8, 3);
    hr_request *r;
    HR_CHECK_OK(hr_engine_submit(
        e, &(hr_request_params){.tokens = p, .n_tokens = 8, .max_tokens = 1000, .ignore_eos = 1},
        &r));
    hr_event ev;
    HR_CHECK(hr_request_next(r, &ev) && ev.kind == HR_EVENT_TOKEN, "no first token");
    hr_request_cancel(r);
    result res;
    drain(r, &res);
    hr_request_release(r);
    HR_CHECK(res.done.finish == HR_FINISH_CANCELLED, "finish %d", res.done.finish);
    HR_CHECK(res.n < 999, "cancel did not stop generation");
    hr_engine_destroy(e);
}

/* The pool's prefix cache on its own: publish, reuse by chain, LRU, eviction. */
static void test_kv_pool_cache(void) {
    hr_kv_pool pool;
    HR_CHECK_OK(hr_kv_pool_create(&pool, tiny, 4, 16));
    hr_kv_pool_enable_cache(&pool, 42);
    int32_t t[64], u[64];
    for (int i = 0; i < 64; i++)
        t[i] = u[i] = i + 1;
    u[3] = 99; /* differs in block 0 only: block 1 has the same tokens but another parent */
    hr_kv_seq a = {0}, b = {0}, c = {0}, d = {0};
    HR_CHECK_OK(hr_kv_seq_reserve(&pool, &a, 40));
    hr_kv_seq_publish(&pool, &a, t, 40);
    HR_CHECK(a.n_keyed == 2, "published %d blocks", a.n_keyed);
    hr_kv_seq_release(&pool, &a);
    HR_CHECK(hr_kv_pool_used(&pool) == 0 && pool.n_lru == 2 && hr_kv_pool_available(&pool) == 4,
             "after release: used %d, lru %d", hr_kv_pool_used(&pool), pool.n_lru);
    HR_CHECK(hr_kv_seq_reuse(&pool, &b, u, 64, 4) == 0, "reused a block with another parent");
    HR_CHECK(hr_kv_seq_reuse(&pool, &c, t, 64, 4) == 2 && pool.n_lru == 0, "chain not reused");
    hr_kv_seq_release(&pool, &c);
    HR_CHECK(hr_kv_seq_reuse(&pool, &c, t, 64, 1) == 1, "max_blocks not honoured");
    hr_kv_seq_release(&pool, &c);
    HR_CHECK_OK(hr_kv_seq_reserve(&pool, &d, 64)); /* needs every block: evicts both */
    HR_CHECK(pool.n_evicted == 2 && pool.n_lru == 0, "evicted %ld", pool.n_evicted);
    hr_err *err = hr_kv_seq_reserve(&pool, &b, 1);
    HR_CHECK(err != NULL, "reserved beyond the pool");
    hr_err_free(err);
    hr_kv_seq_release(&pool, &d);
    hr_kv_seq_release(&pool, &b);
    HR_CHECK(hr_kv_seq_reuse(&pool, &c, t, 64, 4) == 0, "evicted blocks still found");
    hr_kv_seq_release(&pool, &c);
    HR_CHECK(hr_kv_pool_used(&pool) == 0 && pool.n_free == 4, "pool not empty at the end");
    hr_kv_pool_destroy(&pool);
}

static void test_processors(void) {
    float l[5] = {1, 2, -1, 0.5f, 3};
    int counts[5] = {0};
    int32_t prompt[] = {0, 2, 0}, out[] = {1, 1, 3};
    int32_t bid[] = {4};
    float bval[] = {-1.5f};
    hr_proc_params p = {.repetition_penalty = 2,
                        .presence_penalty = 0.5f,
                        .frequency_penalty = 0.25f,
                        .bias_ids = bid,
                        .bias_values = bval,
                        .n_bias = 1};
    hr_proc_apply(&p, l, 5, prompt, 3, out, 3, counts);
    /* token 0: 1/2; 1: 2/2 - 0.5 - 2*0.25; 2: -1*2; 3: 0.5/2 - 0.5 - 0.25; 4: 3 - 1.5 */
    float want[5] = {0.5f, 0.0f, -2.0f, -0.5f, 1.5f};
    for (int i = 0; i < 5; i++)
        HR_CHECK(fabsf(l[i] - want[i]) < 1e-6f, "logit %d = %g, want %g", i, l[i], want[i]);
    for (int i = 0; i < 5; i++)
        HR_CHECK(counts[i] == 0, "scratch counts not cleared");
    /* windows: the last 2 tokens are out {1, 3}; the last 4 are prompt {0} + out {1, 1, 3} */
    float want2[5] = {1.0f, 0.25f, -1.0f, -0.5f, 1.5f}, want4[5] = {0.5f, 0.0f, -1.0f, -0.5f, 1.5f};
    for (int w = 2; w <= 4; w += 2) {
        float lw[5] = {1, 2, -1, 0.5f, 3};
        p.last_n = w;
        hr_proc_apply(&p, lw, 5, prompt, 3, out, 3, counts);
        for (int i = 0; i < 5; i++)
            HR_CHECK(fabsf(lw[i] - (w == 2 ? want2 : want4)[i]) < 1e-6f, "last_n %d: logit %d = %g",
                     w, i, lw[i]);
    }
    float x[4] = {0, logf(2), logf(3), logf(2)};
    int32_t ids[3];
    float lp[3];
    float got = hr_logprobs(x, 4, 1, 3, ids, lp);
    HR_CHECK(fabsf(got - logf(2.0f / 8)) < 1e-6f, "logprob %g", got);
    HR_CHECK(ids[0] == 2 && ids[1] == 1 && ids[2] == 3, "top order %d %d %d", ids[0], ids[1],
             ids[2]);
    HR_CHECK(fabsf(lp[0] - logf(3.0f / 8)) < 1e-6f, "top logprob %g", lp[0]);
}

static void test_bias_and_logprobs_in_engine(void) {
    hr_engine *e;
    HR_CHECK_OK(engine(0, 0, 0, &e));
    int32_t p[10], bid = 1234;
    float bv = 100;
    prompt_of(p, 10, 5);
    result res;
    HR_CHECK_OK(run_one(e,
                        &(hr_request_params){.tokens = p,
                                             .n_tokens = 10,
                                             .max_tokens = 6,
                                             .ignore_eos = 1,
                                             .bias_ids = &bid,
                                             .bias_values = &bv,
                                             .n_bias = 1,
                                             .logprobs = 1,
                                             .top_logprobs = 3},
                        &res));
    hr_engine_destroy(e);
    for (int i = 0; i < res.n; i++) {
        HR_CHECK(res.toks[i] == 1234, "token %d is %d despite logit_bias", i, res.toks[i]);
        HR_CHECK(res.top0[i] == 1234 && res.logprob[i] <= 0 && res.logprob[i] > -1e-3f,
                 "logprob %g", res.logprob[i]);
    }
}

static void test_stop_matcher(void) {
    hr_stop_matcher m;
    const char *stops[] = {"o w", "xyz"};
    HR_CHECK_OK(hr_stop_init(&m, stops, 2));
    const char *out;
    size_t n;
    HR_CHECK(!hr_stop_push(&m, "Hel", 3, &out, &n) && n == 3, "Hel");
    HR_CHECK(!hr_stop_push(&m, "lo", 2, &out, &n) && n == 1 && out[0] == 'l', "lo released %zu", n);
    HR_CHECK(!hr_stop_push(&m, " ", 1, &out, &n) && n == 0, "space released %zu", n);
    HR_CHECK(hr_stop_push(&m, "world", 5, &out, &n) && n == 0, "stop not found");
    hr_stop_free(&m);
    HR_CHECK_OK(hr_stop_init(&m, stops, 2));
    HR_CHECK(!hr_stop_push(&m, "ax", 2, &out, &n) && n == 1, "ax");
    hr_stop_flush(&m, &out, &n);
    HR_CHECK(n == 1 && out[0] == 'x', "flush");
    hr_stop_free(&m);
}

/* A stop string that starts inside one token's text and ends inside the next one's. */
static void test_stop_string_across_tokens(void) {
    hr_engine *e;
    HR_CHECK_OK(engine(0, 0, 0, &e));
    hr_request_params p = {.text = "The jury said that the", .max_tokens = 30, .ignore_eos = 1};
    result full, cut;
    HR_CHECK_OK(run_one(e, &p, &full));
    HR_CHECK(full.text_len > 12, "generated text too short: '%s'", full.text);
    /* find a token boundary in the text at least 6 bytes in, and straddle it */
    char piece[64];
    size_t at = 0;
    for (int i = 0; i < full.n - 1 && at < 6; i++) {
        char *s = NULL;
        HR_CHECK_OK(hr_tokenizer_decode(tok, full.toks, i + 1, 1, &s));
        at = strlen(s);
        free(s);
    }
    HR_CHECK(at >= 6 && at + 3 < full.text_len, "no boundary found");
    snprintf(piece, sizeof piece, "%.*s", 5, full.text + at - 2);
    const char *stops[] = {piece};
    p.stop = stops;
    p.n_stop = 1;
    HR_CHECK_OK(run_one(e, &p, &cut));
    hr_engine_destroy(e);
    size_t want = (size_t)(strstr(full.text, piece) - full.text);
    HR_CHECK(cut.done.finish == HR_FINISH_STOP, "finish %d", cut.done.finish);
    HR_CHECK(cut.text_len == want && memcmp(cut.text, full.text, want) == 0,
             "stop '%s': got '%.*s', want '%.*s'", piece, (int)cut.text_len, cut.text, (int)want,
             full.text);
}

/* decode_tok_s leaves prefill out: a request that only prefills (its one token comes from
 * the last prefill step) shows no decode rate; once decode steps run, the rate is what they
 * generated over their own time, higher than generated tokens over all busy time. */
static void test_decode_rate_excludes_prefill(void) {
    hr_engine *e;
    HR_CHECK_OK(hr_engine_create_on(
        tiny, NULL, &(hr_engine_options){.kv_memory = 4 << 20, .max_batch_tokens = 16}, &e));
    static int32_t prompt[200];
    prompt_of(prompt, 200, 3);
    for (int j = 0; j < 200; j++)
        prompt[j] %= 512;
    static result res;
    HR_CHECK_OK(
        run_one(e, &(hr_request_params){.tokens = prompt, .n_tokens = 200, .max_tokens = 1}, &res));
    hr_engine_stats st;
    hr_engine_stats_get(e, &st);
    HR_CHECK(st.generated_tokens == 1 && st.decode_tok_s == 0,
             "after prefill only: %lld tokens, %g tok/s", (long long)st.generated_tokens,
             st.decode_tok_s);
    HR_CHECK_OK(run_one(
        e, &(hr_request_params){.tokens = prompt, .n_tokens = 200, .max_tokens = 20}, &res));
    hr_engine_stats_get(e, &st);
    double overall = (double)st.generated_tokens / st.busy_s;
    HR_CHECK(st.decode_tok_s > overall, "decode %g tok/s, overall %g", st.decode_tok_s, overall);
    hr_engine_destroy(e);
}

/* An engine on a loaded model cannot change how the model computes: options that only
 * opening a model can honour are refused by name instead of ignored. */
static void test_create_on_refuses_open_options(void) {
    hr_engine *e = NULL;
    hr_engine_options threads = {.kv_memory = 1 << 20, .n_threads = 4};
    hr_err *err = hr_engine_create_on(tiny, NULL, &threads, &e);
    HR_CHECK(err && strstr(hr_err_msg(err), "n_threads"), "n_threads: %s", hr_err_msg(err));
    hr_err_free(err);
    hr_engine_options bf16 = {.kv_memory = 1 << 20, .compute = HR_COMPUTE_BF16};
    err = hr_engine_create_on(tiny, NULL, &bf16, &e);
    HR_CHECK(err && strstr(hr_err_msg(err), "compute"), "compute: %s", hr_err_msg(err));
    hr_err_free(err);
    hr_engine_options plain = {.kv_memory = 1 << 20};
    HR_CHECK_OK(hr_engine_create_on(tiny, NULL, &plain, &e));
    hr_engine_destroy(e);
}

/* 4 KB blocks of about 192 MB malloc'd and touched on a thread of their own (its own arena, as
 * a connection thread's), all freed but every 64th: the heap keeps the free pages between them
 * until something trims it. Returns the blocks kept. */
enum { FRAG_BLOCKS = 48 * 1024, FRAG_KEEP = 64 };

static void *fragment_heap(void *arg) {
    void **kept = arg;
    void **all = malloc(sizeof(void *) * FRAG_BLOCKS);
    if (!all) return NULL;
    for (int i = 0; i < FRAG_BLOCKS; i++)
        if ((all[i] = malloc(4096))) memset(all[i], i, 4096);
    for (int i = 0; i < FRAG_BLOCKS; i++) {
        if (i % FRAG_KEEP == FRAG_KEEP - 1)
            kept[i / FRAG_KEEP] = all[i];
        else
            free(all[i]);
    }
    free(all);
    return NULL;
}

static long rss_mib(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    if (f) fclose(f);
    return resident * sysconf(_SC_PAGESIZE) >> 20;
}

/* An engine idle for a second after work gives the heap's free pages back: the fragmented
 * 189 MB another thread freed leave the RSS. (Sanitizer builds bring their own allocator.) */
static void test_idle_trim(void) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return;
#endif
    hr_engine *e = NULL;
    HR_CHECK_OK(engine(0, 0, 0, &e));
    void *kept[FRAG_BLOCKS / FRAG_KEEP] = {0};
    pthread_t t;
    HR_CHECK(pthread_create(&t, NULL, fragment_heap, kept) == 0, "pthread_create");
    pthread_join(t, NULL);
    long before = rss_mib();
    int32_t p[8];
    prompt_of(p, 8, 5);
    result res;
    hr_request_params rp = {.tokens = p, .n_tokens = 8, .max_tokens = 4};
    HR_CHECK_OK(run_one(e, &rp, &res));
    usleep(1600 * 1000);
    long after = rss_mib();
    for (int i = 0; i < FRAG_BLOCKS / FRAG_KEEP; i++)
        free(kept[i]);
    hr_engine_destroy(e);
    HR_CHECK(before - after > 120, "rss %ld MiB before, %ld after a second idle", before, after);
}

static void test_stress(void) {
    enum { N = 200 };
    hr_engine *e;
    size_t block = (size_t)3 * 2 * 2 * 32 * 4 * 16; /* tiny-llama */
    hr_engine_options o = {.kv_memory = 7 * block, .max_seqs = 8, .max_batch_tokens = 64};
    HR_CHECK_OK(hr_engine_create_on(tiny, NULL, &o, &e));
    static int32_t prompts[N][200];
    static hr_request *r[N];
    uint64_t x = 12345;
    int refused = 0, cancelled = 0, completed = 0;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int n = 1 + (int)((x >> 33) % 100), mt = 1 + (int)((x >> 20) % 24);
        prompt_of(prompts[i], n, i % 7); /* shared prefixes exercise the cache */
        for (int j = 0; j < n; j++)
            prompts[i][j] %= 512;
        hr_err *err = hr_engine_submit(e,
                                       &(hr_request_params){.tokens = prompts[i],
                                                            .n_tokens = n,
                                                            .max_tokens = mt,
                                                            .temperature = 0.8f,
                                                            .seed = (uint64_t)i},
                                       &r[i]);
        if (err) {
            refused++;
            hr_err_free(err);
            r[i] = NULL;
        } else if ((x >> 50) % 4 == 0) {
            hr_request_cancel(r[i]);
        }
    }
    for (int i = 0; i < N; i++) {
        if (!r[i]) continue;
        result res;
        if (i % 9 == 0) usleep(100);
        drain(r[i], &res);
        if (i % 5 == 1 && i + 3 < N && r[i + 3]) hr_request_cancel(r[i + 3]);
        HR_CHECK(res.done.kind == HR_EVENT_DONE, "request %d never finished", i);
        HR_CHECK(res.done.finish != HR_FINISH_ERROR, "request %d failed", i);
        cancelled += res.done.finish == HR_FINISH_CANCELLED;
        completed += res.done.finish != HR_FINISH_CANCELLED;
        hr_request_release(r[i]);
    }
    hr_engine_stats st;
    for (int t = 0; t < 2000; t++) {
        hr_engine_stats_get(e, &st);
        if (st.kv_blocks_used == 0 && st.active == 0 && st.queued == 0) break;
        usleep(1000);
    }
    hr_engine_destroy(e);
    HR_CHECK(refused + cancelled + completed == N, "%d refused + %d cancelled + %d completed",
             refused, cancelled, completed);
    HR_CHECK(refused > 0 && cancelled > 0 && completed > 0,
             "%d refused, %d cancelled, %d completed", refused, cancelled, completed);
    HR_CHECK(st.kv_blocks_used == 0, "%d blocks still used", st.kv_blocks_used);
    HR_CHECK(st.active == 0 && st.queued == 0, "%d active, %d queued", st.active, st.queued);
    printf("# stress: %d completed, %d cancelled, %d refused, %ld preempted, %ld cached tokens, "
           "%ld steps\n",
           completed, cancelled, refused, st.preempted, st.cached_tokens, st.steps);
}

/* Hybrid prefix reuse: A and B share 100 of 120 tokens; with snapshots every 2 blocks (32
 * positions) and at each prompt's last full block (112), B resumes at 96 and A run again at
 * 112, and every output equals the output with the cache off. */
static void check_hybrid_prefix(hr_model *m, const char *name) {
    int32_t a[120], b[120];
    prompt_of(a, 120, 99);
    for (int i = 0; i < 120; i++)
        a[i] %= hr_model_cfg(m)->vocab;
    memcpy(b, a, sizeof a);
    for (int i = 100; i < 120; i++)
        b[i] = (a[i] + 5) % hr_model_cfg(m)->vocab;
    hr_request_params pa = {.tokens = a, .n_tokens = 120, .max_tokens = 12, .ignore_eos = 1};
    hr_request_params pb = {.tokens = b, .n_tokens = 120, .max_tokens = 12, .ignore_eos = 1};
    result ref_a, ref_b, ra, rb, again;
    hr_engine *e;
    hr_engine_options o = {
        .max_seqs = 8, .kv_memory = 64 << 20, .snapshot_interval = 2}; /* 8 snapshots */
    o.no_prefix_cache = 1;
    HR_CHECK_OK(hr_engine_create_on(m, NULL, &o, &e));
    if (!e) return;
    HR_CHECK_OK(run_one(e, &pa, &ref_a));
    HR_CHECK_OK(run_one(e, &pb, &ref_b));
    hr_engine_destroy(e);
    o.no_prefix_cache = 0;
    HR_CHECK_OK(hr_engine_create_on(m, NULL, &o, &e));
    if (!e) return;
    HR_CHECK_OK(run_one(e, &pa, &ra));
    HR_CHECK_OK(run_one(e, &pb, &rb));
    HR_CHECK_OK(run_one(e, &pa, &again));
    hr_engine_stats st;
    hr_engine_stats_get(e, &st);
    hr_engine_destroy(e);
    HR_CHECK(ra.done.n_cached == 0, "%s: first request reused %d tokens", name, ra.done.n_cached);
    HR_CHECK(rb.done.n_cached == 96, "%s: shared prefix reused %d, want 96", name,
             rb.done.n_cached);
    HR_CHECK(again.done.n_cached == 112, "%s: repeat reused %d, want 112", name,
             again.done.n_cached);
    HR_CHECK(st.cached_tokens == 96 + 112, "%s: stats %ld cached tokens", name, st.cached_tokens);
    HR_CHECK(st.state_snapshots > 0 && st.state_snapshots <= 8, "%s: %d snapshots held", name,
             st.state_snapshots);
    HR_CHECK(same_tokens(&ra, &ref_a) && same_tokens(&again, &ref_a),
             "%s: A with the cache differs from A without", name);
    HR_CHECK(same_tokens(&rb, &ref_b), "%s: B with the cache differs from B without", name);
}

/* Snapshots at the pool level: a store of 2 holds the newest two boundaries (the oldest idle
 * block's snapshot is taken over), reuse stops at the last block with one, and evicting the
 * cached blocks frees their snapshots. */
static void check_snapshot_eviction(hr_model *m, const char *name) {
    hr_kv_pool pool;
    HR_CHECK_OK(hr_kv_pool_create_slots(&pool, m, 6, 4, 1, 2));
    if (hr_t_cur_failed) return;
    hr_kv_pool_enable_cache(&pool, 42);
    int32_t t[16];
    for (int i = 0; i < 16; i++)
        t[i] = (i * 13 + 1) % hr_model_cfg(m)->vocab;
    hr_kv_seq seq = {0};
    HR_CHECK_OK(hr_kv_seq_reserve(&pool, &seq, 16));
    for (int p = 0; p < 16 && !hr_t_cur_failed; p += 4) { /* one block per step, snapshot each */
        hr_row r = {t + p, 4, p, seq.blocks, HR_LOGITS_NONE, 0};
        HR_CHECK_OK(hr_model_forward(m, &pool.store, &r, 1, NULL));
        hr_kv_seq_publish(&pool, &seq, t, p + 4);
        hr_kv_seq_snapshot(&pool, &seq, 0, p + 4);
    }
    /* blocks 0 and 1 are referenced, so blocks 2 and 3 found no free snapshot */
    HR_CHECK(hr_kv_pool_snapshots(&pool) == 2, "%s: %d snapshots", name,
             hr_kv_pool_snapshots(&pool));
    hr_kv_seq_release(&pool, &seq);
    HR_CHECK(hr_kv_seq_reuse(&pool, &seq, t, 16, 4) == 2, "%s: reuse past the last snapshot", name);
    hr_kv_seq_release(&pool, &seq);
    hr_kv_seq other = {0};
    HR_CHECK_OK(hr_kv_seq_reserve(&pool, &other, 24)); /* every block: evicts the cache */
    HR_CHECK(hr_kv_pool_snapshots(&pool) == 0, "%s: %d snapshots left after eviction", name,
             hr_kv_pool_snapshots(&pool));
    hr_kv_seq_release(&pool, &other);
    hr_kv_pool_destroy(&pool);
}

/* Hybrid models (recurrent state beside the KV): concurrent requests, with 7-token prefill
 * chunks and with a pool small enough to preempt, all with the prefix cache (requests 0 and
 * 1 share a prefix), each equal its solo output without the cache. */
static void check_hybrid_engine(const char *name) {
    enum { N = 6 };
    hr_model *m;
    HR_CHECK_OK(hr_model_load(hr_fixture(name), be, &m));
    if (!m) return;
    check_hybrid_prefix(m, name);
    check_snapshot_eviction(m, name);
    const hr_model_config *c = hr_model_cfg(m);
    static int32_t prompts[N][40];
    static result alone[N], got[N];
    hr_request_params p[N];
    for (int i = 0; i < N; i++) {
        prompt_of(prompts[i], 40, i < 2 ? 77 : 50 + i); /* 0 and 1 share a 32-token prefix */
        for (int j = 0; j < 40; j++)
            prompts[i][j] %= c->vocab;
        p[i] = (hr_request_params){.tokens = prompts[i],
                                   .n_tokens = i == 1 ? 40 : 20 + 3 * i,
                                   .max_tokens = 24 + i,
                                   .ignore_eos = 1};
    }
    hr_kv_store shape;
    hr_model_kv_shape(m, &shape);
    /* 8 blocks of 16 after the recurrent state of 8 slots and their 8 snapshots */
    size_t small = 8 * 16 * hr_kv_token_bytes(&shape) + 16 * hr_kv_state_bytes(&shape);
    hr_engine *e;
    for (int run = 0; run < 4; run++) { /* solo, batched, 7-token chunks, preempting */
        hr_engine_options o = {.max_seqs = 8,
                               .max_batch_tokens = run == 2 ? 7 : 0,
                               .kv_memory = run == 3 ? small : 64 << 20,
                               .no_prefix_cache = run == 0};
        HR_CHECK_OK(hr_engine_create_on(m, NULL, &o, &e));
        if (!e) break;
        hr_request *r[N];
        for (int i = 0; i < N; i++) {
            if (run == 0) {
                HR_CHECK_OK(run_one(e, &p[i], &alone[i]));
                continue;
            }
            HR_CHECK_OK(hr_engine_submit(e, &p[i], &r[i]));
        }
        for (int i = 0; run > 0 && i < N; i++) {
            drain(r[i], &got[i]);
            hr_request_release(r[i]);
        }
        hr_engine_stats st;
        hr_engine_stats_get(e, &st);
        hr_engine_destroy(e);
        if (run == 3) HR_CHECK(st.preempted > 0, "%s: no preemption in a small pool", name);
        for (int i = 0; run > 0 && i < N; i++) {
            HR_CHECK(got[i].done.finish == HR_FINISH_LENGTH, "%s run %d: request %d finish %d",
                     name, run, i, got[i].done.finish);
            HR_CHECK(same_tokens(&alone[i], &got[i]), "%s run %d: request %d differs from solo",
                     name, run, i);
        }
    }
    hr_model_free(m);
}

static void test_hybrid_engine(void) {
    check_hybrid_engine("models/tiny-qwen3_next");
    check_hybrid_engine("models/tiny-qwen3_5");
}

/* Greedy tokens of m for prompt p by plain forwards over a pool that keeps every block. */
static hr_err *greedy_reference(hr_model *m, const int32_t *p, int n, int max_tokens,
                                int32_t *out) {
    int V = hr_model_cfg(m)->vocab, total = n + max_tokens, cur = n;
    int32_t *toks = malloc(sizeof(int32_t) * (size_t)total);
    float *logits = malloc(sizeof(float) * (size_t)V);
    hr_kv_pool pool;
    hr_kv_seq seq = {0};
    hr_err *err = !toks || !logits ? hr_err_oom() : hr_kv_pool_create(&pool, m, total / 4 + 1, 4);
    if (!err) err = hr_kv_seq_reserve(&pool, &seq, total);
    if (toks) memcpy(toks, p, sizeof(int32_t) * (size_t)n);
    for (int pos = 0; !err && cur < total; pos = cur++) {
        hr_row r = {toks + pos, cur - pos, pos, seq.blocks, HR_LOGITS_LAST, 0};
        err = hr_model_forward(m, &pool.store, &r, 1, logits);
        int best = 0;
        for (int v = 1; v < V; v++)
            if (logits[v] > logits[best]) best = v;
        toks[cur] = out[cur - n] = best;
    }
    if (pool.be) {
        hr_kv_seq_release(&pool, &seq);
        hr_kv_pool_destroy(&pool);
    }
    free(toks);
    free(logits);
    return err;
}

typedef struct {
    hr_engine *e;
    int max_used, n;
    int32_t toks[64];
    atomic_int done;
} used_probe;

/* Runs on the engine thread after each token: the pool's referenced blocks right then. */
static void note_used(void *ctx, const hr_event *ev) {
    used_probe *u = ctx;
    int used = hr_kv_pool_used(&u->e->pool);
    if (ev->kind == HR_EVENT_DONE) {
        atomic_store(&u->done, 1);
        return;
    }
    if (used > u->max_used) u->max_used = used;
    if (u->n < 64) u->toks[u->n++] = ev->token;
}

static void remove_model_dir(const char *dir) {
    const char *files[] = {"config.json", "generation_config.json", "model.safetensors"};
    char path[256];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* A mistral config with sliding_window 16 on all layers (random weights, block size 4): a
 * 40-token prompt (wider than the window) and 60 generated tokens, in 7-token prefill chunks,
 * give the tokens of plain forwards without block release, and while decoding the sequence
 * holds at most window / block_size + 1 blocks; also from cached blocks, and through a pool
 * smaller than the request. */
static void test_sliding_release(void) {
    char dir[] = "/tmp/hearth-sliding-XXXXXX";
    HR_CHECK(mkdtemp(dir), "mkdtemp");
    const char *cfg =
        "{\"architectures\": [\"MistralForCausalLM\"], \"model_type\": \"mistral\", "
        "\"vocab_size\": 256, \"hidden_size\": 64, \"intermediate_size\": 128, "
        "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
        "\"head_dim\": 16, \"max_position_embeddings\": 4096, \"rms_norm_eps\": 1e-05, "
        "\"tie_word_embeddings\": false, \"hidden_act\": \"silu\", \"bos_token_id\": 1, "
        "\"eos_token_id\": 2, \"sliding_window\": 16, \"rope_theta\": 10000.0}";
    hr_model *m = NULL;
    HR_CHECK_OK(hr_mkmodel_write(dir, cfg, HR_F32, 7, (uint64_t)1 << 30));
    HR_CHECK_OK(hr_model_load(dir, be, &m));
    remove_model_dir(dir);
    if (!m) return;
    enum { N = 40, G = 60 };
    int32_t p[N], want[G];
    for (int i = 0; i < N; i++)
        p[i] = 3 + (i * 37) % 250;
    HR_CHECK_OK(greedy_reference(m, p, N, G, want));
    hr_engine *e = NULL;
    /* a big pool, twice (the second round reuses cached blocks); then a pool of 12 blocks
     * (48 positions), which only window-bounded reservations let this 100-position request
     * through */
    for (int round = 0; round < 3; round++) {
        if (round != 1) {
            hr_engine_destroy(e);
            hr_engine_options o = {.max_seqs = 4,
                                   .block_size = 4,
                                   .max_batch_tokens = 7,
                                   .kv_memory = round ? 12 * 2 * 2 * 2 * 16 * 4 * 4 : 64 << 20};
            e = NULL;
            HR_CHECK_OK(hr_engine_create_on(m, NULL, &o, &e));
            if (!e) break;
        }
        static used_probe u;
        memset(&u, 0, sizeof u);
        u.e = e;
        hr_request_params rp = {.tokens = p,
                                .n_tokens = N,
                                .max_tokens = G,
                                .ignore_eos = 1,
                                .cb = note_used,
                                .cb_ctx = &u};
        hr_request *r;
        HR_CHECK_OK(hr_engine_submit(e, &rp, &r));
        while (!atomic_load(&u.done))
            usleep(1000);
        hr_request_release(r);
        HR_CHECK(e->kv_window == 16, "window %d, want 16", e->kv_window);
        HR_CHECK(u.n == G && memcmp(u.toks, want, sizeof want) == 0,
                 "round %d: tokens differ from the reference", round);
        HR_CHECK(u.max_used <= 16 / 4 + 1, "round %d: %d blocks used", round, u.max_used);
        if (round == 1) {
            hr_engine_stats st;
            hr_engine_stats_get(e, &st);
            HR_CHECK(st.cached_tokens > 0, "the second round reused no cached block");
        }
        if (round == 2)
            HR_CHECK(e->pool.store.n_blocks == 12, "pool of %d blocks", e->pool.store.n_blocks);
    }
    hr_engine_destroy(e);
    hr_model_free(m);
}

/* Which layers slide, per transformers: mistral slides everywhere with sliding_window; qwen2
 * without layer_types only with use_sliding_window (default false), from max_window_layers
 * (default 28) on. */
static void test_sliding_layer_kinds(void) {
    const char *base = "{\"model_type\": \"%s\", \"vocab_size\": 64, \"hidden_size\": 32, "
                       "\"intermediate_size\": 64, \"num_hidden_layers\": 30, "
                       "\"num_attention_heads\": 2, \"num_key_value_heads\": 1, "
                       "\"sliding_window\": 16%s}";
    struct {
        const char *type, *extra;
        int first_sliding; /* 30: none */
    } cases[] = {{"mistral", "", 0},
                 {"qwen2", "", 30},
                 {"qwen2", ", \"use_sliding_window\": true", 28},
                 {"qwen2", ", \"use_sliding_window\": true, \"max_window_layers\": 0", 0},
                 {"qwen3", ", \"use_sliding_window\": true, \"max_window_layers\": 5", 5}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char json[600];
        snprintf(json, sizeof json, base, cases[k].type, cases[k].extra);
        hr_model_config c;
        HR_CHECK_OK(hr_config_parse("test", json, &c));
        for (int l = 0; l < c.n_layers; l++)
            HR_CHECK(c.layer_kind[l] ==
                         (l >= cases[k].first_sliding ? HR_LAYER_SLIDING : HR_LAYER_FULL),
                     "case %zu: layer %d kind %d", k, l, c.layer_kind[l]);
    }
}

typedef struct {
    hr_engine *e;
    int id, bad;
} submitter;

static void *submit_many(void *arg) {
    submitter *s = arg;
    for (int i = 0; i < 8; i++) {
        int32_t p[12];
        prompt_of(p, 12, s->id * 8 + i);
        hr_request *r;
        result res;
        hr_err *err = hr_engine_submit(
            s->e,
            &(hr_request_params){.tokens = p, .n_tokens = 12, .max_tokens = 5, .ignore_eos = 1},
            &r);
        if (err) {
            hr_err_free(err);
            s->bad++;
            continue;
        }
        drain(r, &res);
        hr_request_release(r);
        s->bad += res.n != 5 || res.done.finish != HR_FINISH_LENGTH;
    }
    return NULL;
}

/* Four threads submit and drain at once, as HTTP threads would. */
static void test_threads(void) {
    hr_engine *e;
    HR_CHECK_OK(engine(0, 0, 0, &e));
    submitter s[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        s[i] = (submitter){e, i, 0};
        pthread_create(&t[i], NULL, submit_many, &s[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    hr_engine_stats st;
    hr_engine_stats_get(e, &st);
    hr_engine_destroy(e);
    for (int i = 0; i < 4; i++)
        HR_CHECK(s[i].bad == 0, "thread %d: %d bad requests", i, s[i].bad);
    HR_CHECK(st.requests_done == 32 && st.generated_tokens == 160, "stats: %ld done, %ld tokens",
             st.requests_done, st.generated_tokens);
}

/* The public constructor on a model dir with a chat template: text and chat prompts. */
static void test_public_api_chat(void) {
    char dir[] = "/tmp/hearth-engine-XXXXXX", path[256], src[256];
    HR_CHECK(mkdtemp(dir), "mkdtemp");
    const char *files[] = {"config.json", "generation_config.json", "model.safetensors",
                           "tokenizer.json", "tokenizer_config.json"};
    for (int i = 0; i < 5; i++) {
        snprintf(src, sizeof src, "%s/%s", hr_fixture("models/brown-llama-8m"), files[i]);
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (src[0] != '/') { /* relative fixture path: make it absolute for the link */
            char cwd[128];
            HR_CHECK(getcwd(cwd, sizeof cwd), "getcwd");
            char abs[400];
            snprintf(abs, sizeof abs, "%s/%s", cwd, src);
            HR_CHECK(symlink(abs, path) == 0, "symlink");
        } else {
            HR_CHECK(symlink(src, path) == 0, "symlink");
        }
    }
    snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
    FILE *f = fopen(path, "w");
    HR_CHECK(f, "write template");
    fputs("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
          "{% if add_generation_prompt %}assistant:{% endif %}",
          f);
    fclose(f);
    hr_engine *e = NULL;
    hr_err *err =
        hr_engine_create(dir, &(hr_engine_options){.n_threads = 1, .kv_memory = 8 << 20}, &e);
    const char *chat = "{\"messages\": [{\"role\": \"user\", \"content\": \"The jury\"}]}";
    result a, b;
    if (!err)
        err = run_one(e, &(hr_request_params){.chat = chat, .max_tokens = 6, .ignore_eos = 1}, &a);
    /* the same prompt as text must give the same tokens (the template adds no BOS) */
    if (!err)
        err = run_one(e,
                      &(hr_request_params){
                          .text = "user: The jury\nassistant:", .max_tokens = 6, .ignore_eos = 1},
                      &b);
    hr_engine_destroy(e);
    e = NULL;
    hr_err *bad =
        err ? NULL
            : hr_engine_create(dir,
                               &(hr_engine_options){.n_threads = 1,
                                                    .kv_memory = 8 << 20,
                                                    .chat_template = "/nonexistent/t.jinja"},
                               &e);
    hr_engine_destroy(bad ? NULL : e);
    const char *names[] = {"config.json",    "generation_config.json", "model.safetensors",
                           "tokenizer.json", "tokenizer_config.json",  "chat_template.jinja"};
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
    HR_CHECK_OK(err);
    HR_CHECK(bad && strstr(hr_err_msg(bad), "nonexistent"),
             "a missing --chat-template was accepted");
    hr_err_free(bad);
    HR_CHECK(a.n == 6 && a.text_len > 0, "chat request produced %d tokens", a.n);
    HR_CHECK(b.done.n_prompt == a.done.n_prompt + 1, "text prompt %d tokens (with BOS), chat %d",
             b.done.n_prompt, a.done.n_prompt);
}

/* An engine on a loaded model whose tokenizer has its own chat template (no directory to
 * read tokenizer_config.json from): the prompt comes from the tokenizer's template. */
static void test_create_on_own_template(void) {
    const char *dir = hr_fixture("models/qwen3-tools-20m");
    hr_model *m = NULL;
    hr_tokenizer *t = NULL;
    hr_engine *e = NULL;
    HR_CHECK_OK(hr_model_load(dir, be, &m));
    hr_err *err = hr_tokenizer_load(dir, &t);
    if (!err) err = hr_engine_create_on(m, t, &(hr_engine_options){.kv_memory = 16 << 20}, &e);
    const hr_prompt *p = err ? NULL : hr_engine_prompt(e);
    json_t *chat = json_pack("{s:[{s:s,s:s}]}", "messages", "role", "user", "content", "hi");
    int32_t *ids = NULL;
    int n = 0;
    char *text = NULL;
    if (!err) err = p ? hr_prompt_render(p, chat, NULL, &ids, &n, NULL) : hr_errf("no prompt");
    if (!err) err = hr_tokenizer_decode(t, ids, n, 0, &text);
    int ok = text && strstr(text, "<|im_start|>user\nhi<|im_end|>") != NULL;
    char got[200];
    snprintf(got, sizeof got, "%s", text ? text : hr_err_msg(err));
    free(text);
    free(ids);
    json_decref(chat);
    hr_err_free(err);
    hr_engine_destroy(e);
    hr_tokenizer_free(t);
    hr_model_free(m);
    HR_CHECK(ok, "rendered %s", got);
}

int main(void) {
    const char *dir = hr_fixture("models/brown-llama-8m");
    hr_err *err = hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 1}, &be);
    if (!err) err = hr_model_load(dir, be, &model);
    if (!err) err = hr_tokenizer_load(dir, &tok);
    if (!err) err = hr_model_load(hr_fixture("models/tiny-llama"), be, &tiny);
    if (err) {
        printf("FAIL setup: %s\n", hr_err_msg(err));
        hr_err_free(err);
        return 1;
    }
    HR_RUN(test_kv_pool_cache);
    HR_RUN(test_processors);
    HR_RUN(test_stop_matcher);
    HR_RUN(test_greedy_batch_invariance);
    HR_RUN(test_seeded_batch_invariance);
    HR_RUN(test_bf16_batch_invariance);
    HR_RUN(test_preemption);
    HR_RUN(test_prefix_cache);
    HR_RUN(test_refuse_and_errors);
    HR_RUN(test_chat_fallback);
    HR_RUN(test_reasoning_budget);
    HR_RUN(test_untokenizable_never_sampled);
    HR_RUN(test_model_defaults);
    HR_RUN(test_cancel);
    HR_RUN(test_bias_and_logprobs_in_engine);
    HR_RUN(test_stop_string_across_tokens);
    HR_RUN(test_threads);
    HR_RUN(test_public_api_chat);
    HR_RUN(test_hybrid_engine);
    HR_RUN(test_sliding_layer_kinds);
    HR_RUN(test_sliding_release);
    HR_RUN(test_create_on_refuses_open_options);
    HR_RUN(test_create_on_own_template);
    HR_RUN(test_decode_rate_excludes_prefill);
    HR_RUN(test_idle_trim);
    HR_RUN(test_stress);
    hr_tokenizer_free(tok);
    hr_model_free(model);
    hr_model_free(tiny);
    hr_backend_destroy(be);
    return hr_test_summary();
}
