/* The process-wide mask cache (src/grammar/mask_cache.c) over qwen3-tools-20m's 151k-token
 * vocabulary: grammars that share a terminal share its entries, and their masks stay equal
 * to the reference; a terminal that only ends the start rule does not take another's entry;
 * a JSON object's keys and strings (declared keys beside the generic one, non-ASCII text,
 * escapes, a maxLength counter) give masks equal to the reference; a freed vocabulary's
 * entries go; a small cap evicts entries other threads are reading; a cap of 0 keeps
 * nothing. Run from the repository root with the shared fixtures (HEARTH_SHARED). */
#include <pthread.h>
#include <stdint.h>

#include "engine/tok_open.h"
#include "grammar/grammar.h"
#include "grammar/schema.h"
#include "harness.h"
#include "tokenizer/tokenizer.h"

#define DEFAULT_CAP ((size_t)256 << 20)
#define SMALL_CAP ((size_t)384 << 10) /* ~18 dense entries of a 151k vocabulary */

static hr_tokenizer *qwen;
static hr_grammar_vocab *vq;

static hr_grammar_shared_info stats(void) {
    hr_grammar_shared_info s;
    hr_grammar_mask_cache_stats(&s);
    return s;
}

static hr_grammar *gbnf(const char *text) {
    hr_grammar *g = NULL;
    hr_err *e = hr_grammar_compile(text, strlen(text), &g);
    if (e) printf("# %s\n", hr_err_msg(e)), hr_err_free(e);
    return g;
}

static hr_grammar *schema(const char *json) {
    json_error_t je;
    json_t *s = json_loads(json, 0, &je);
    char *text = NULL;
    size_t len = 0;
    hr_err *e = s ? hr_schema_to_gbnf(s, NULL, &text, &len) : hr_errf("bad schema");
    json_decref(s);
    hr_grammar *g = NULL;
    if (!e) e = hr_grammar_compile(text, len, &g);
    if (e) printf("# %s\n", hr_err_msg(e)), hr_err_free(e);
    free(text);
    return g;
}

/* Feeds text's tokens through g on v: every mask equals the reference and holds the next
 * token; 0 ok, else the token index + 1 where it went wrong. *built: entries built during
 * the first mask (NULL: not asked). */
static int feed(const hr_grammar *g, const hr_grammar_vocab *v, const char *text, uint64_t *built) {
    int32_t *ids = NULL;
    int n_ids = 0, words = (hr_grammar_vocab_size(v) + 31) / 32, bad = 0;
    hr_err *e = hr_tokenizer_encode(qwen, text, strlen(text), 0, &ids, &n_ids);
    uint32_t *fast = malloc((size_t)words * 4), *ref = malloc((size_t)words * 4);
    hr_matcher *m = NULL;
    if (!e) e = hr_matcher_create(g, v, &m);
    if (e) hr_err_free(e), bad = -1;
    for (int i = 0; !bad && i < n_ids; i++) {
        uint64_t before = stats().misses;
        hr_matcher_mask(m, fast);
        if (built && i == 0) *built = stats().misses - before;
        hr_matcher_mask_ref(m, ref);
        if (memcmp(fast, ref, (size_t)words * 4) || !(fast[ids[i] >> 5] >> (ids[i] & 31) & 1) ||
            !hr_matcher_accept(m, ids[i]))
            bad = i + 1;
    }
    if (!bad && !hr_matcher_is_accepting(m)) bad = n_ids + 1;
    hr_matcher_free(m);
    free(fast), free(ref), free(ids);
    return bad;
}

/* One terminal's structure in three grammars: two where it is followed by more (they share
 * its entries), one where it only ends the start rule (an entry of its own). */
static void test_shared_between_grammars(void) {
    const char *string = "/\"[a-z ]*\"/";
    char g1_text[256], g2_text[256];
    snprintf(g1_text, sizeof g1_text,
             "root ::= \"[\" list \"]\"\nlist ::= item | item \",\" list\n"
             "item ::= %s\n",
             string);
    snprintf(g2_text, sizeof g2_text, "root ::= item | \"(\" root \")\"\nitem ::= %s\n", string);
    hr_grammar *g1 = gbnf(g1_text), *g2 = gbnf(g2_text), *g3 = NULL;
    HR_CHECK(g1 && g2, "compile failed");
    HR_CHECK_OK(hr_grammar_compile_regex(string + 1, strlen(string) - 2, &g3));
    hr_grammar_mask_cache_limit(0); /* the regex grammar's entries first */
    hr_grammar_mask_cache_limit(DEFAULT_CAP);
    int bad = feed(g3, vq, "\"the quick brown fox\"", NULL);
    HR_CHECK(!bad, "regex grammar (the terminal ends the start rule): token %d", bad - 1);
    bad = feed(g1, vq, "[\"the quick brown fox\",\"jumps over\"]", NULL);
    HR_CHECK(!bad, "first grammar: token %d", bad - 1);
    hr_grammar_shared_info before = stats();
    bad = feed(g2, vq, "((\"the quick brown fox\"))", NULL);
    hr_grammar_shared_info after = stats();
    HR_CHECK(!bad, "second grammar: token %d", bad - 1);
    HR_CHECK(after.hits > before.hits, "a fresh grammar found none of the shared entries");
    hr_grammar_free(g1), hr_grammar_free(g2), hr_grammar_free(g3);
}

static const char *OBJECT_SCHEMA =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"nickname\":{\"type\":"
    "\"string\",\"maxLength\":12},\"age\":{\"type\":\"integer\"},\"tags\":{\"type\":\"array\","
    "\"items\":{\"type\":\"string\"}}},\"additionalProperties\":{\"type\":\"string\"}}";

/* A key's first characters meet every declared key and the generic one (a string but the
 * declared names), whose interior meets non-ASCII text, escapes and a maxLength counter. */
static void test_key_entries(void) {
    hr_grammar_mask_cache_limit(0); /* nothing cached: the first mask builds its entry */
    hr_grammar_mask_cache_limit(DEFAULT_CAP);
    hr_grammar *g = schema(OBJECT_SCHEMA);
    HR_CHECK(g, "compile failed");
    const char *texts[] = {
        "{\"nam\":\"x\",\"name\":\"y\",\"age\":3,\"nick\":\"z\"}",
        "{\"nickname\":\"short one\",\"tags\":[\"a\",\"b c\"],\"namer\":\"\\u00e9t\\u00e9\"}",
        "{ \"age\" : -12 , \"n\" : \"caf\xC3\xA9\" }",
        "{\"tags\":[],\"name\":\"\xE6\x97\xA5\xE6\x9C\xAC\",\"zzz\":\"quote \\\" inside\"}"};
    uint64_t built = 0;
    int bad = feed(g, vq, texts[0], &built);
    HR_CHECK(!bad, "text 0: token %d", bad - 1);
    HR_CHECK(built >= 1, "the first mask built no entry");
    for (int t = 1; t < 4; t++) {
        bad = feed(g, vq, texts[t], NULL);
        HR_CHECK(!bad, "text %d: token %d", t, bad - 1);
    }
    hr_grammar_free(g);
}

/* A vocabulary's entries go with it. */
static void test_vocab_freed(void) {
    hr_grammar_vocab *v;
    HR_CHECK_OK(hr_grammar_vocab_create(qwen, &v));
    hr_grammar *g = schema(OBJECT_SCHEMA);
    HR_CHECK(g, "compile failed");
    size_t before = stats().entries;
    int bad = feed(g, v, "{\"name\":\"a b\",\"age\":7}", NULL);
    size_t during = stats().entries;
    hr_grammar_vocab_free(v);
    size_t after = stats().entries;
    hr_grammar_free(g);
    HR_CHECK(!bad, "token %d", bad - 1);
    HR_CHECK(during > before, "no entry was kept (%zu -> %zu)", before, during);
    HR_CHECK(after == before, "%zu entries of a freed vocabulary kept", after - before);
}

/* Threads with their own grammars under a cap that holds a few entries (each character of
 * a maxLength counter is a new dense entry): entries are evicted while others read them,
 * every mask stays right. */
typedef struct {
    const hr_grammar *g;
    const char *text;
    int bad;
} thread_arg;

static void *feed_thread(void *p) {
    thread_arg *a = p;
    a->bad = feed(a->g, vq, a->text, NULL);
    return NULL;
}

static void test_small_cap_threads(void) {
    hr_grammar_mask_cache_limit(0);
    hr_grammar_mask_cache_limit(SMALL_CAP);
    hr_grammar *g[2] = {schema(OBJECT_SCHEMA), gbnf("root ::= \"[\" list \"]\"\nlist ::= "
                                                    "item | item \",\" list\nitem ::= "
                                                    "/\"[a-z ]{0,40}\"/ | /[0-9]+/\n")};
    HR_CHECK(g[0] && g[1], "compile failed");
    const char *texts[4] = {
        "{\"name\":\"a b\",\"tags\":[\"x\"],\"age\":7}", "[\"ab cd ef gh ij kl mn op\",12,\"c d\"]",
        "{\"other\":\"q\",\"nickname\":\"n\"}", "[3,\"zz yy xx ww vv uu tt ss rr\",40]"};
    uint64_t evicted = stats().evictions;
    pthread_t th[4];
    thread_arg args[4];
    for (int t = 0; t < 4; t++) {
        args[t] = (thread_arg){g[t % 2], texts[t], 0};
        pthread_create(&th[t], NULL, feed_thread, &args[t]);
    }
    int bad = 0;
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        bad |= args[t].bad;
    }
    evicted = stats().evictions - evicted;
    hr_grammar_shared_info s = stats();
    hr_grammar_mask_cache_limit(0);
    int bad0 = feed(g[0], vq, texts[0], NULL);
    size_t kept0 = stats().entries;
    hr_grammar_mask_cache_limit(DEFAULT_CAP);
    hr_grammar_free(g[0]), hr_grammar_free(g[1]);
    HR_CHECK(!bad, "a thread saw a wrong mask");
    HR_CHECK(evicted > 0, "a small cap evicted nothing (%zu entries, %zu bytes held)", s.entries,
             s.bytes);
    HR_CHECK(s.bytes <= SMALL_CAP, "%zu bytes held under a cap of %zu", s.bytes, SMALL_CAP);
    HR_CHECK(!bad0, "no cache: token %d", bad0 - 1);
    HR_CHECK(kept0 == 0, "%zu entries kept with the cache off", kept0);
}

int main(void) {
    hr_err *e = hr_tokenizer_load(hr_fixture("models/qwen3-tools-20m"), &qwen);
    if (!e) e = hr_grammar_vocab_create(qwen, &vq);
    if (e) {
        printf("FAIL setup: %s\n", hr_err_msg(e));
        hr_err_free(e);
        return 1;
    }
    HR_RUN(test_shared_between_grammars);
    HR_RUN(test_key_entries);
    HR_RUN(test_vocab_freed);
    HR_RUN(test_small_cap_threads);
    hr_grammar_vocab_free(vq);
    hr_tokenizer_free(qwen);
    return hr_test_summary();
}
