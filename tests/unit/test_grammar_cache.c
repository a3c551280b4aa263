/* The compiled-grammar cache (grammar_cache.h): a second identical lookup does not compile
 * and gives the same grammar, another text or kind compiles, the byte cap evicts the least
 * recently used, a grammar larger than the cap is not kept, errors are not cached, and
 * threads looking up the same few texts at once share them safely (run under ASan). */
#include <pthread.h>
#include <stdio.h>

#include "grammar/grammar_cache.h"
#include "harness.h"

static const char *G1 = "root ::= \"a\" [0-9]+";
static const char *G2 = "root ::= \"b\" | \"c\"";

static hr_grammar *get(hr_grammar_cache *c, hr_grammar_src kind, const char *text) {
    hr_grammar *g = NULL;
    hr_err *e = hr_grammar_cache_get(c, kind, text, strlen(text), &g);
    if (e) printf("# %s: %s\n", text, hr_err_msg(e));
    hr_err_free(e);
    return g;
}

static void test_hits_and_misses(void) {
    hr_grammar_cache *c;
    HR_CHECK_OK(hr_grammar_cache_create(64u << 20, &c));
    hr_grammar *a = get(c, HR_GRAMMAR_SRC_GBNF, G1), *b = get(c, HR_GRAMMAR_SRC_GBNF, G1);
    hr_grammar_cache_stats s;
    hr_grammar_cache_stats_get(c, &s);
    HR_CHECK(a && a == b, "the second lookup gave another grammar");
    HR_CHECK(s.compiles == 1 && s.hits == 1 && s.entries == 1, "compiles %llu hits %llu",
             (unsigned long long)s.compiles, (unsigned long long)s.hits);
    hr_grammar *d = get(c, HR_GRAMMAR_SRC_GBNF, G2);
    hr_grammar *r = get(c, HR_GRAMMAR_SRC_REGEX, "a[0-9]+"); /* another kind compiles */
    hr_grammar_cache_stats_get(c, &s);
    HR_CHECK(d != a && r && s.compiles == 3 && s.entries == 3, "compiles %llu entries %zu",
             (unsigned long long)s.compiles, s.entries);
    hr_grammar *x = NULL;
    hr_err *e = hr_grammar_cache_get(c, HR_GRAMMAR_SRC_GBNF, "root ::= nope", 13, &x);
    HR_CHECK(e && !x, "a bad grammar compiled");
    hr_err_free(e);
    hr_grammar_cache_stats_get(c, &s);
    HR_CHECK(s.entries == 3, "an error was cached");
    hr_grammar_free(a);
    hr_grammar_free(b);
    hr_grammar_free(d);
    hr_grammar_free(r);
    hr_grammar_cache_free(c); /* the cache's references go; nothing leaks (ASan) */
}

static void test_eviction(void) {
    hr_grammar *g = get(NULL, HR_GRAMMAR_SRC_GBNF, G1); /* NULL cache: just compiles */
    HR_CHECK(g, "G1 did not compile");
    size_t one = hr_grammar_bytes(g) + strlen(G1);
    hr_grammar_free(g);
    hr_grammar_cache *c;
    HR_CHECK_OK(hr_grammar_cache_create(one * 5 / 2, &c)); /* room for two */
    char t[3][64];
    for (int i = 0; i < 3; i++)
        snprintf(t[i], sizeof t[i], "root ::= \"a\" [0-%d]+", i + 5);
    hr_grammar_free(get(c, HR_GRAMMAR_SRC_GBNF, t[0]));
    hr_grammar_free(get(c, HR_GRAMMAR_SRC_GBNF, t[1]));
    hr_grammar_free(get(c, HR_GRAMMAR_SRC_GBNF, t[0])); /* t[0] most recent */
    hr_grammar_free(get(c, HR_GRAMMAR_SRC_GBNF, t[2])); /* evicts t[1] */
    hr_grammar_cache_stats s;
    hr_grammar_cache_stats_get(c, &s);
    HR_CHECK(s.evictions == 1 && s.entries == 2 && s.bytes <= s.cap_bytes,
             "evictions %llu entries %zu bytes %zu cap %zu", (unsigned long long)s.evictions,
             s.entries, s.bytes, s.cap_bytes);
    hr_grammar_free(get(c, HR_GRAMMAR_SRC_GBNF, t[0]));
    hr_grammar_cache_stats_get(c, &s);
    HR_CHECK(s.compiles == 3, "t[0] was evicted (compiles %llu)", (unsigned long long)s.compiles);
    hr_grammar_free(get(c, HR_GRAMMAR_SRC_GBNF, t[1]));
    hr_grammar_cache_stats_get(c, &s);
    HR_CHECK(s.compiles == 4, "t[1] was not evicted (compiles %llu)",
             (unsigned long long)s.compiles);
    hr_grammar_cache_free(c);
    HR_CHECK_OK(hr_grammar_cache_create(one / 2, &c)); /* too small for any */
    hr_grammar_free(get(c, HR_GRAMMAR_SRC_GBNF, t[0]));
    hr_grammar_cache_stats_get(c, &s);
    HR_CHECK(s.entries == 0 && s.bytes == 0, "a grammar above the cap was kept");
    hr_grammar_cache_free(c);
}

typedef struct {
    hr_grammar_cache *c;
    int seed, bad;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    char t[64];
    for (int i = 0; i < 200; i++) {
        snprintf(t, sizeof t, "root ::= \"x\" [a-%c]*", 'a' + (w->seed + i) % 6);
        hr_grammar *g = NULL;
        hr_err *e = hr_grammar_cache_get(w->c, HR_GRAMMAR_SRC_GBNF, t, strlen(t), &g);
        hr_matcher *m = NULL;
        if (!e) e = hr_matcher_create(g, NULL, &m);
        if (e || !hr_matcher_accept_bytes(m, "xa", 2, NULL) || !hr_matcher_is_accepting(m))
            w->bad++;
        hr_err_free(e);
        hr_matcher_free(m);
        hr_grammar_free(g);
    }
    return NULL;
}

static void test_threads(void) {
    hr_grammar *g = get(NULL, HR_GRAMMAR_SRC_GBNF, "root ::= \"x\" [a-c]*");
    HR_CHECK(g, "the grammar did not compile");
    size_t one = hr_grammar_bytes(g) + 20;
    hr_grammar_free(g);
    hr_grammar_cache *c;
    HR_CHECK_OK(hr_grammar_cache_create(one * 4, &c)); /* 6 texts, room for 4: evictions too */
    pthread_t th[6];
    worker w[6];
    for (int i = 0; i < 6; i++) {
        w[i] = (worker){c, i, 0};
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    int bad = 0;
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        bad += w[i].bad;
    }
    hr_grammar_cache_stats s;
    hr_grammar_cache_stats_get(c, &s);
    HR_CHECK(!bad, "%d lookups failed", bad);
    HR_CHECK(s.hits + s.compiles == 1200 && s.entries <= 4 && s.hits > 0,
             "hits %llu compiles %llu entries %zu", (unsigned long long)s.hits,
             (unsigned long long)s.compiles, s.entries);
    hr_grammar_cache_free(c);
}

int main(void) {
    HR_RUN(test_hits_and_misses);
    HR_RUN(test_eviction);
    HR_RUN(test_threads);
    return hr_test_summary();
}
