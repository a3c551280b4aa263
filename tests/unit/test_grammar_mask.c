/* Grammar masks over real vocabularies (qwen3-tools-20m's 151k byte-level BPE tokens,
 * brown-llama-8m's SentencePiece-style ones): the fast mask equals the reference mask bit
 * for bit along random walks and along the tokens of real texts, rollback restores masks
 * exactly, stop tokens appear only where the grammar accepts, token bytes are right. Run
 * from the repository root with the shared fixtures (HEARTH_SHARED). */
#include <pthread.h>
#include <stdint.h>

#include "engine/tok_open.h"
#include "grammar/grammar.h"
#include "harness.h"
#include "tokenizer/tokenizer.h"

static hr_tokenizer *qwen, *llama;
static hr_grammar_vocab *vq, *vl;

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = malloc(1 << 16);
    size_t n = b ? fread(b, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    if (b) b[n] = 0;
    return b;
}

static hr_grammar *compile_file(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "tests/data/grammar/%s", name);
    char *text = read_text(path);
    if (!text) return NULL;
    hr_grammar *g = NULL;
    hr_err *e = hr_grammar_compile(text, strlen(text), &g);
    if (e) {
        printf("# %s: %s\n", name, hr_err_msg(e));
        hr_err_free(e);
    }
    free(text);
    return g;
}

static uint64_t rng = 88172645463325252ull;
static uint32_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

static int bit(const uint32_t *m, int i) { return (m[i >> 5] >> (i & 31)) & 1; }

/* First differing token of two masks, or -1. */
static int mask_diff(const uint32_t *a, const uint32_t *b, int n) {
    for (int i = 0; i < n; i++)
        if (bit(a, i) != bit(b, i)) return i;
    return -1;
}

static int count_bits(const uint32_t *m, int n) {
    int c = 0;
    for (int i = 0; i < n; i++)
        c += bit(m, i);
    return c;
}

static int is_stop(const hr_tokenizer *tok, int id) {
    const int32_t *ids;
    int n = hr_tokenizer_stop_ids(tok, &ids);
    for (int k = 0; k < n; k++)
        if (ids[k] == id) return 1;
    return 0;
}

/* A random walk: at each step fast == ref, stops iff accepting, rollback restores. */
static int random_walk(const hr_grammar *g, const hr_tokenizer *tok, const hr_grammar_vocab *v,
                       int steps, char *why, size_t cap) {
    int n = hr_grammar_vocab_size(v), words = (n + 31) / 32;
    uint32_t *fast = malloc(words * 4), *ref = malloc(words * 4), *again = malloc(words * 4);
    int32_t *allowed = malloc((size_t)n * 4);
    hr_matcher *m;
    hr_err *e = hr_matcher_create(g, v, &m);
    int ok = !e && fast && ref && again && allowed;
    if (e) snprintf(why, cap, "%s", hr_err_msg(e)), hr_err_free(e);
    for (int s = 0; ok && s < steps; s++) {
        hr_matcher_mask(m, fast);
        hr_matcher_mask_ref(m, ref);
        int d = mask_diff(fast, ref, n);
        if (d >= 0) {
            snprintf(why, cap, "step %d: token %d: fast %d ref %d", s, d, bit(fast, d),
                     bit(ref, d));
            ok = 0;
            break;
        }
        int na = 0, stop_seen = 0;
        for (int i = 0; i < n; i++)
            if (bit(fast, i)) {
                if (is_stop(tok, i))
                    stop_seen = 1;
                else
                    allowed[na++] = i;
            }
        const int32_t *stops;
        if (hr_tokenizer_stop_ids(tok, &stops) && stop_seen != hr_matcher_is_accepting(m)) {
            snprintf(why, cap, "step %d: stop allowed %d, accepting %d", s, stop_seen,
                     hr_matcher_is_accepting(m));
            ok = 0;
            break;
        }
        if (!na) break;
        int t = allowed[next_rand() % na];
        if (!hr_matcher_accept(m, t)) {
            snprintf(why, cap, "step %d: allowed token %d rejected", s, t);
            ok = 0;
            break;
        }
        if (next_rand() % 4 == 0) { /* rollback restores the previous mask exactly */
            hr_matcher_rollback(m, 1);
            hr_matcher_mask(m, again);
            if (mask_diff(again, fast, n) >= 0) {
                snprintf(why, cap, "step %d: mask after rollback differs", s);
                ok = 0;
                break;
            }
            hr_matcher_accept(m, t);
        }
    }
    hr_matcher_free(m);
    free(fast), free(ref), free(again), free(allowed);
    return ok;
}

static void walk_grammar(hr_grammar *g, int steps) {
    char why[256];
    HR_CHECK(g, "compile failed");
    for (int w = 0; w < 3; w++) {
        int ok = random_walk(g, qwen, vq, steps, why, sizeof why);
        if (ok) ok = random_walk(g, llama, vl, steps, why, sizeof why);
        if (!ok) {
            hr_grammar_free(g);
            HR_CHECK(0, "%s", why);
        }
    }
    hr_grammar_free(g);
}

static void test_walk_json(void) { walk_grammar(compile_file("json.gbnf"), 25); }
static void test_walk_arithmetic(void) { walk_grammar(compile_file("arithmetic.gbnf"), 25); }
static void test_walk_list(void) { walk_grammar(compile_file("list.gbnf"), 15); }

static void test_walk_regex(void) {
    const char *res[] = {"[a-z]{1,8}@[a-z]{2,6}\\.(com|org)",
                         "(\\d{1,3}\\.){3}\\d{1,3}",
                         "\"([^\"\\\\]|\\\\.)*\"",
                         "[\\u00e0-\\u00ff€]{0,12}!",
                         ".*",
                         "[^a]*a[^b]{2,}",
                         "[^!]{0,12}!",
                         "([a-z ]|\\u00e9){0,9}\\."};
    for (int i = 0; i < 8; i++) {
        hr_grammar *g;
        HR_CHECK_OK(hr_grammar_compile_regex(res[i], strlen(res[i]), &g));
        walk_grammar(g, 12);
        if (hr_t_cur_failed) return;
    }
}

/* Feeds a text's tokens: each is in the mask, fast == ref, accepting at the end. */
static void feed_text(hr_grammar *g, const hr_tokenizer *tok, const hr_grammar_vocab *v,
                      const char *text) {
    int32_t *ids;
    int n_ids;
    HR_CHECK_OK(hr_tokenizer_encode(tok, text, strlen(text), 0, &ids, &n_ids));
    int n = hr_grammar_vocab_size(v), words = (n + 31) / 32;
    uint32_t *fast = malloc(words * 4), *ref = malloc(words * 4);
    hr_matcher *m;
    HR_CHECK_OK(hr_matcher_create(g, v, &m));
    int bad = -1, diff = -1, i;
    for (i = 0; i < n_ids && bad < 0 && diff < 0; i++) {
        hr_matcher_mask(m, fast);
        hr_matcher_mask_ref(m, ref);
        diff = mask_diff(fast, ref, n);
        if (!bit(fast, ids[i]) || !hr_matcher_accept(m, ids[i])) bad = i;
    }
    int acc = hr_matcher_is_accepting(m), stop = hr_tokenizer_eos_id(tok), ended = 0;
    if (acc && stop >= 0) ended = hr_matcher_accept(m, stop) && hr_matcher_is_ended(m);
    hr_matcher_mask(m, fast);
    int after = count_bits(fast, n);
    hr_matcher_free(m);
    free(fast), free(ref), free(ids);
    HR_CHECK(diff < 0, "token %d: fast and ref masks differ at %d", i - 1, diff);
    HR_CHECK(bad < 0, "token %d rejected", bad);
    HR_CHECK(acc, "not accepting at the end");
    HR_CHECK(stop < 0 || ended, "the stop token was refused at the end");
    HR_CHECK(after == 0, "%d tokens allowed after the stop token", after);
}

static const char *JSON_TEXT = "{\"name\": \"hearth\", \"version\": 3, \"tags\": [\"c\", \"llm\", "
                               "\"caf\xC3\xA9\"], \"ok\": true,\n"
                               " \"nested\": {\"a\": [1, 2.5, -3e4, null], \"s\": \"line\\nbreak "
                               "\\\"q\\\" \\u00e9\"}, \"emoji\": \"\xF0\x9F\x98\x80\"}";

static void test_feed_json(void) {
    hr_grammar *g = compile_file("json.gbnf");
    HR_CHECK(g, "compile failed");
    feed_text(g, qwen, vq, JSON_TEXT);
    hr_grammar_free(g);
}

/* SentencePiece encodes a leading space ("▁{"): the grammar allows one. */
static void test_feed_json_sentencepiece(void) {
    char *text = read_text("tests/data/grammar/json.gbnf");
    HR_CHECK(text, "cannot read json.gbnf");
    char *src = malloc(strlen(text) + 64);
    snprintf(src, strlen(text) + 64, "root ::= \" \"? object\n%s", strstr(text, "value"));
    free(text);
    hr_grammar *g;
    hr_err *e = hr_grammar_compile(src, strlen(src), &g);
    free(src);
    HR_CHECK_OK(e);
    feed_text(g, llama, vl, JSON_TEXT);
    hr_grammar_free(g);
}

static void test_rollback_many(void) {
    hr_grammar *g = compile_file("json.gbnf");
    HR_CHECK(g, "compile failed");
    int32_t *ids;
    int n_ids;
    HR_CHECK_OK(hr_tokenizer_encode(qwen, JSON_TEXT, strlen(JSON_TEXT), 0, &ids, &n_ids));
    int n = hr_grammar_vocab_size(vq), words = (n + 31) / 32;
    uint32_t *at5 = malloc(words * 4), *again = malloc(words * 4);
    hr_matcher *m;
    HR_CHECK_OK(hr_matcher_create(g, vq, &m));
    for (int i = 0; i < 5; i++)
        hr_matcher_accept(m, ids[i]);
    hr_matcher_mask(m, at5);
    for (int i = 5; i < n_ids; i++)
        hr_matcher_accept(m, ids[i]);
    hr_matcher_rollback(m, n_ids - 5);
    hr_matcher_mask(m, again);
    int d = mask_diff(at5, again, n);
    hr_matcher_free(m);
    hr_grammar_free(g);
    free(at5), free(again), free(ids);
    HR_CHECK(d < 0, "mask after rolling back %d tokens differs at token %d", n_ids - 5, d);
}

static void test_token_bytes(void) {
    char buf[64];
    int32_t id = hr_tokenizer_token_id(qwen, "\xC4\xA0world"); /* "Ġworld" */
    HR_CHECK(id >= 0, "no Ġworld in qwen");
    size_t k = hr_tokenizer_token_bytes(qwen, id, buf, sizeof buf);
    HR_CHECK(k == 6 && !memcmp(buf, " world", 6), "Ġworld -> %zu bytes", k);
    id = hr_tokenizer_token_id(qwen, "\xC4\x8A"); /* "Ċ" = "\n" */
    HR_CHECK(id >= 0 && hr_tokenizer_token_bytes(qwen, id, buf, sizeof buf) == 1 && buf[0] == '\n',
             "Ċ");
    id = hr_tokenizer_token_id(llama, "<0x0A>");
    HR_CHECK(id >= 0 && hr_tokenizer_token_bytes(llama, id, buf, sizeof buf) == 1 && buf[0] == '\n',
             "<0x0A>");
    id = hr_tokenizer_token_id(llama, "\xE2\x96\x81the");
    HR_CHECK(id >= 0, "no ▁the in llama");
    k = hr_tokenizer_token_bytes(llama, id, buf, sizeof buf);
    HR_CHECK(k == 4 && !memcmp(buf, " the", 4), "▁the -> %zu bytes", k);
    HR_CHECK(hr_tokenizer_token_bytes(qwen, -1, buf, sizeof buf) == (size_t)-1, "id -1");
    HR_CHECK(hr_tokenizer_token_bytes(qwen, hr_tokenizer_vocab_size(qwen), buf, sizeof buf) ==
                 (size_t)-1,
             "id n");
    k = hr_tokenizer_token_bytes(qwen, hr_tokenizer_token_id(qwen, "\xC4\xA0world"), buf, 2);
    HR_CHECK(k == 6 && !memcmp(buf, " w", 2), "a short buffer gets the length and a prefix");
}

/* A GGUF vocab (SentencePiece) gives the same bytes per id as the tokenizer.json it came
 * from; a GGUF byte-level vocab's bytes equal the one-token decode where that is valid
 * UTF-8 (a lone token may hold part of a character). */
static void test_token_bytes_gguf(void) {
    hr_tokenizer *bg, *qg;
    HR_CHECK_OK(hr_tokenizer_open(hr_fixture("gguf/brown-llama-8m-F16.gguf"), &bg));
    HR_CHECK_OK(hr_tokenizer_open(hr_fixture("gguf/e2e-qwen3-Q8_0.gguf"), &qg));
    char a[256], b[256];
    int bad = -1, n = hr_tokenizer_vocab_size(bg), checked = 0;
    for (int i = 0; i < n && bad < 0; i++) {
        if (hr_tokenizer_is_special(bg, i)) continue;
        size_t ka = hr_tokenizer_token_bytes(bg, i, a, sizeof a),
               kb = hr_tokenizer_token_bytes(llama, i, b, sizeof b);
        if (ka != kb || (ka <= sizeof a && memcmp(a, b, ka))) bad = i;
    }
    for (int32_t i = 0; i < hr_tokenizer_vocab_size(qg) && bad < 0; i += 7) {
        if (hr_tokenizer_is_special(qg, i) || hr_tokenizer_is_added(qg, i)) continue;
        size_t k = hr_tokenizer_token_bytes(qg, i, a, sizeof a);
        char *text;
        if (k == (size_t)-1 || k >= sizeof a || hr_tokenizer_decode(qg, &i, 1, 0, &text)) continue;
        if (!strstr(text, "\xEF\xBF\xBD")) {
            checked++;
            if (strlen(text) != k || memcmp(text, a, k)) bad = 1000000 + i;
        }
        free(text);
    }
    hr_tokenizer_free(bg);
    hr_tokenizer_free(qg);
    HR_CHECK(bad < 0, "token %d: bytes differ", bad);
    HR_CHECK(checked > 10000, "only %d byte-level tokens checked", checked);
}

static void test_special_tokens_never(void) {
    hr_grammar *g;
    const char *src = "root ::= .*";
    HR_CHECK_OK(hr_grammar_compile(src, strlen(src), &g));
    int n = hr_grammar_vocab_size(vq), words = (n + 31) / 32;
    uint32_t *bits = malloc(words * 4);
    hr_matcher *m;
    HR_CHECK_OK(hr_matcher_create(g, vq, &m));
    hr_matcher_mask(m, bits);
    int special_on = -1;
    for (int i = 0; i < n; i++)
        if (bit(bits, i) && hr_tokenizer_is_special(qwen, i) && !is_stop(qwen, i)) special_on = i;
    /* a text added token is a token like any other; a control token never */
    int32_t call = hr_tokenizer_token_id(qwen, "<tool_call>"),
            start = hr_tokenizer_token_id(qwen, "<|im_start|>");
    int call_on = call >= 0 && bit(bits, call), refused = start < 0 || !hr_matcher_accept(m, start);
    int bad_ids = !hr_matcher_accept(m, -5) && !hr_matcher_accept(m, n);
    hr_matcher_free(m);
    hr_grammar_free(g);
    free(bits);
    HR_CHECK(special_on < 0, "special token %d allowed", special_on);
    HR_CHECK(call_on, "the text added token <tool_call> is not allowed by .*");
    HR_CHECK(refused, "a special token was accepted");
    HR_CHECK(bad_ids, "out-of-range ids accepted");
}

/* GPT-2's byte alphabet: the code point standing for byte b, as UTF-8 into out. */
static size_t bytelevel_char(uint8_t b, char *out) {
    int n = 0;
    uint32_t cp = b;
    if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) {
        for (int x = 0; x < b; x++)
            if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE)) n++;
        cp = 256 + (uint32_t)n;
    }
    if (cp < 0x80) return out[0] = (char)cp, 1;
    out[0] = (char)(0xC0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

/* A byte-level vocab of every single byte plus tokens a real BPE vocab would not hold:
 * invalid UTF-8 inside (a stray continuation, an overlong form, a surrogate, a lead byte
 * followed by ASCII), so the masks' UTF-8 shortcuts meet them. */
static void test_walk_odd_vocab(void) {
    static const char *odd[] = {("a\x80"
                                 "b"), /* split: \x80b would be one escape */
                                "ab\xC3",
                                "\xC3\xA9x",
                                "a\xE0\x80\x80",
                                "a\xED\xA0\x80",
                                "a\xE0\xA0\x80z",
                                "q\xC3q",
                                "\xF0\x9F\x98\x80ok",
                                "x\xF4\x90\x80\x80",
                                "\"a\x80",
                                "zz\xC3\xA9\xC3",
                                "hello",
                                "\"}",
                                "a\xC0\xAF"};
    enum { N_ODD = sizeof odd / sizeof odd[0], N = 256 + N_ODD };
    static char buf[N][64];
    hr_tok_str toks[N];
    for (int i = 0; i < N; i++) {
        const char *raw = i < 256 ? NULL : odd[i - 256];
        size_t len = i < 256 ? 1 : strlen(raw), k = 0;
        for (size_t j = 0; j < len; j++)
            k += bytelevel_char(i < 256 ? (uint8_t)i : (uint8_t)raw[j], buf[i] + k);
        toks[i] = (hr_tok_str){buf[i], k};
    }
    hr_tok_vocab v = {.model = "gpt2",
                      .pre = "gpt2",
                      .n_tokens = N,
                      .tokens = toks,
                      .bos = -1,
                      .eos = -1,
                      .eot = -1,
                      .unk = -1,
                      .add_bos = 0,
                      .add_eos = 0,
                      .add_space_prefix = 0};
    hr_tokenizer *tok;
    HR_CHECK_OK(hr_tokenizer_from_vocab(&v, &tok));
    hr_grammar_vocab *gv;
    HR_CHECK_OK(hr_grammar_vocab_create(tok, &gv));
    const char *res[] = {".*",         "\"[^\"]*\"", "[^a]*a.{2,}", "(\u00e9|[a-z])*",
                         "[^!]{0,6}!", ".{2,5}"};
    char why[256];
    int ok = 1;
    for (int r = 0; r < 6 && ok; r++) {
        hr_grammar *g;
        HR_CHECK_OK(hr_grammar_compile_regex(res[r], strlen(res[r]), &g));
        for (int w = 0; w < 4 && ok; w++)
            ok = random_walk(g, tok, gv, 20, why, sizeof why);
        hr_grammar_free(g);
    }
    hr_grammar *g = compile_file("json.gbnf");
    for (int w = 0; w < 6 && ok && g; w++)
        ok = random_walk(g, tok, gv, 30, why, sizeof why);
    hr_grammar_free(g);
    hr_grammar_vocab_free(gv);
    hr_tokenizer_free(tok);
    HR_CHECK(ok, "%s", why);
}

/* Threads sharing one grammar (and its mask cache) each walk the same text's tokens on
 * their own matcher; every fast mask must equal the reference. */
typedef struct {
    const hr_grammar *g;
    const int32_t *ids;
    int n_ids, bad;
} share_arg;

static void *share_thread(void *p) {
    share_arg *a = p;
    int n = hr_grammar_vocab_size(vq), words = (n + 31) / 32;
    uint32_t *fast = malloc(words * 4), *ref = malloc(words * 4);
    hr_matcher *m;
    hr_err *e = hr_matcher_create(a->g, vq, &m);
    if (e) {
        hr_err_free(e);
        a->bad = 1;
    }
    for (int i = 0; !a->bad && i < a->n_ids; i++) {
        hr_matcher_mask(m, fast);
        if (i % 8 == 0) {
            hr_matcher_mask_ref(m, ref);
            if (memcmp(fast, ref, (size_t)words * 4)) a->bad = 1;
        }
        if (!bit(fast, a->ids[i]) || !hr_matcher_accept(m, a->ids[i])) a->bad = 1;
    }
    if (!e) hr_matcher_free(m);
    free(fast), free(ref);
    return NULL;
}

static void test_shared_grammar_threads(void) {
    hr_grammar *g = compile_file("json.gbnf");
    HR_CHECK(g, "compile failed");
    int32_t *ids;
    int n_ids;
    HR_CHECK_OK(hr_tokenizer_encode(qwen, JSON_TEXT, strlen(JSON_TEXT), 0, &ids, &n_ids));
    pthread_t th[4];
    share_arg args[4];
    for (int t = 0; t < 4; t++) {
        args[t] = (share_arg){g, ids, n_ids, 0};
        pthread_create(&th[t], NULL, share_thread, &args[t]);
    }
    int bad = 0;
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        bad |= args[t].bad;
    }
    hr_grammar_free(g);
    free(ids);
    HR_CHECK(!bad, "a thread saw a wrong mask");
}

int main(void) {
    hr_err *e = hr_tokenizer_load(hr_fixture("models/qwen3-tools-20m"), &qwen);
    if (!e) e = hr_tokenizer_load(hr_fixture("models/brown-llama-8m"), &llama);
    if (!e) e = hr_grammar_vocab_create(qwen, &vq);
    if (!e) e = hr_grammar_vocab_create(llama, &vl);
    if (e) {
        printf("FAIL setup: %s\n", hr_err_msg(e));
        hr_err_free(e);
        return 1;
    }
    HR_RUN(test_token_bytes);
    HR_RUN(test_token_bytes_gguf);
    HR_RUN(test_special_tokens_never);
    HR_RUN(test_feed_json);
    HR_RUN(test_feed_json_sentencepiece);
    HR_RUN(test_rollback_many);
    HR_RUN(test_shared_grammar_threads);
    HR_RUN(test_walk_json);
    HR_RUN(test_walk_arithmetic);
    HR_RUN(test_walk_list);
    HR_RUN(test_walk_regex);
    HR_RUN(test_walk_odd_vocab);
    hr_grammar_vocab_free(vq);
    hr_grammar_vocab_free(vl);
    hr_tokenizer_free(qwen);
    hr_tokenizer_free(llama);
    return hr_test_summary();
}
