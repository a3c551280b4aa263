/* The process-wide DFA cache (src/grammar/dfa_cache.c) changes no compile: every fixture
 * schema (../shared/fixtures/jsonschema) compiled without the cache, with it cold and with
 * it warm gives the same tables, terminal by terminal, and the same masks along a valid
 * instance; threads compiling at once under a cap small enough to evict get the same
 * grammars too. Prints the compile times with the cache off and warm. */
#include <dirent.h>
#include <pthread.h>
#include <time.h>

#include "base/json.h"
#include "grammar/gram_ir.h"
#include "grammar/grammar.h"
#include "grammar/schema.h"
#include "harness.h"

#define CAP_DEFAULT ((size_t)32 << 20)
#define CAP_SMALL ((size_t)80 << 10)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STRIDE 8 /* every 8th fixture schema: each is compiled three times, ~5x slower */
#else
#define STRIDE 1
#endif

static hr_tokenizer *tok;
static hr_grammar_vocab *voc;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int same_mem(const void *a, const void *b, size_t n) { return !n || !memcmp(a, b, n); }

/* 1 when x and y have the same DFAs and CFG; else 0 with why. */
static int same_grammar(const hr_grammar *x, const hr_grammar *y, char *why, size_t cap) {
    if (x->n_terms != y->n_terms || x->n_nts != y->n_nts || x->n_prods != y->n_prods ||
        x->n_pos != y->n_pos) {
        snprintf(why, cap, "sizes differ: %d/%d terminals, %d/%d nonterminals", x->n_terms,
                 y->n_terms, x->n_nts, y->n_nts);
        return 0;
    }
    for (int t = 0; t < x->n_terms; t++) {
        const hr_gdfa *a = &x->terms[t], *b = &y->terms[t];
        size_t n = (size_t)a->n_states;
        if (a->n_states != b->n_states || !same_mem(a->trans, b->trans, n * 256 * 4) ||
            !same_mem(a->accept, b->accept, n) ||
            !same_mem(a->chain_set, b->chain_set, n * sizeof(hr_gbytes)) ||
            !same_mem(a->chain_len, b->chain_len, n * 4)) {
            snprintf(why, cap, "terminal %d differs (%d / %d states)", t, a->n_states, b->n_states);
            return 0;
        }
    }
    size_t nts = (size_t)x->n_nts, np = (size_t)x->n_pos;
    if (!same_mem(x->nullable, y->nullable, nts) ||
        !same_mem(x->nt_prods, y->nt_prods, (nts + 1) * sizeof(int)) ||
        !same_mem(x->prod_pos, y->prod_pos, (size_t)x->n_prods * sizeof(int)) ||
        !same_mem(x->pos_sym, y->pos_sym, np * 4) || !same_mem(x->pos_lhs, y->pos_lhs, np * 4) ||
        !same_mem(x->term_inert, y->term_inert, (size_t)x->n_terms)) {
        snprintf(why, cap, "the CFG differs");
        return 0;
    }
    return 1;
}

/* 1 when the fast masks of x and y agree before each token of text (the model's encoding)
 * as far as x accepts it. */
static int same_masks(const hr_grammar *x, const hr_grammar *y, const char *text) {
    int32_t *ids = NULL;
    int n = 0;
    hr_err *e = hr_tokenizer_encode(tok, text, strlen(text), 0, &ids, &n);
    hr_matcher *mx = NULL, *my = NULL;
    if (!e) e = hr_matcher_create(x, voc, &mx);
    if (!e) e = hr_matcher_create(y, voc, &my);
    size_t words = ((size_t)hr_grammar_vocab_size(voc) + 31) / 32;
    uint32_t *bx = calloc(words, 4), *by = calloc(words, 4);
    int ok = !e && bx && by;
    for (int i = 0; ok && i <= n; i++) {
        hr_matcher_mask(mx, bx);
        hr_matcher_mask(my, by);
        ok = !memcmp(bx, by, words * 4);
        if (i == n || !hr_matcher_accept(mx, ids[i]) || !hr_matcher_accept(my, ids[i])) break;
    }
    hr_err_free(e);
    hr_matcher_free(mx);
    hr_matcher_free(my);
    free(bx);
    free(by);
    free(ids);
    return ok;
}

/* The first valid test instance of fixture f, compact (malloc'd), or NULL. */
static char *valid_instance(const json_t *f) {
    const json_t *tests = json_object_get(f, "tests");
    for (size_t i = 0; i < json_array_size(tests); i++) {
        const json_t *t = json_array_get(tests, i);
        if (json_is_true(json_object_get(t, "valid")))
            return json_dumps(json_object_get(t, "data"), JSON_ENCODE_ANY | JSON_COMPACT);
    }
    return NULL;
}

static hr_err *compile_timed(const char *text, size_t len, hr_grammar **g, double *ms) {
    double t0 = now_ms();
    hr_err *e = hr_grammar_compile(text, len, g);
    *ms = now_ms() - t0;
    return e;
}

static void print_times(const char *what, double *ms, int n) {
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    printf("# %s: GBNF -> grammar ms p50 %.2f p99 %.2f max %.2f over %d schemas\n", what, ms[n / 2],
           ms[(n * 99) / 100], ms[n - 1], n);
}

/* Every fixture schema (every STRIDE-th under a sanitizer): off (the reference), on and
 * cold (the cache emptied first), on and warm (right after); tables equal, masks equal along
 * a valid instance. */
static void test_fixtures_same(void) {
    const char *dir = hr_fixture("jsonschema");
    DIR *d = opendir(dir);
    HR_CHECK(d, "cannot open %s", dir);
    static double ms_off[1024], ms_warm[1024];
    int n = 0, bad = 0, seen = 0;
    char why[256] = "";
    struct dirent *de;
    while ((de = readdir(d)) && !bad && n < 1024) {
        size_t nl = strlen(de->d_name);
        if (nl < 6 || strcmp(de->d_name + nl - 5, ".json") || seen++ % STRIDE) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        json_t *f;
        char *text = NULL;
        size_t len;
        hr_err *e = hr_json_load_file(path, &f);
        if (e) {
            hr_err_free(e);
            continue;
        }
        hr_grammar *off = NULL, *cold = NULL, *warm = NULL;
        double t_cold;
        e = hr_schema_to_gbnf(json_object_get(f, "schema"), NULL, &text, &len);
        hr_grammar_dfa_cache_limit(0);
        if (!e) e = compile_timed(text, len, &off, &ms_off[n]);
        hr_grammar_dfa_cache_limit(CAP_DEFAULT);
        if (!e) e = compile_timed(text, len, &cold, &t_cold);
        if (!e) e = compile_timed(text, len, &warm, &ms_warm[n]);
        if (!e) {
            char *inst = valid_instance(f);
            if (!same_grammar(off, cold, why, sizeof why) ||
                !same_grammar(off, warm, why, sizeof why))
                bad = 1;
            else if (inst && !same_masks(off, warm, inst))
                bad = 1, snprintf(why, sizeof why, "the masks differ");
            free(inst);
            n++;
        }
        if (bad) printf("# %s: %s\n", de->d_name, why);
        hr_err_free(e);
        hr_grammar_free(off);
        hr_grammar_free(cold);
        hr_grammar_free(warm);
        free(text);
        json_decref(f);
    }
    closedir(d);
    HR_CHECK(!bad, "a schema compiled differently through the cache: %s", why);
    HR_CHECK(n >= 500 / STRIDE, "only %d fixture schemas compiled", n);
    print_times("cache off", ms_off, n);
    print_times("cache warm (the same schema again)", ms_warm, n);
    hr_grammar_shared_info info;
    hr_grammar_dfa_cache_stats(&info);
    printf("# cache: %llu hits, %llu misses, %zu entries, %zu bytes\n",
           (unsigned long long)info.hits, (unsigned long long)info.misses, info.entries,
           info.bytes);
    HR_CHECK(info.hits >= (uint64_t)n, "only %llu hits", (unsigned long long)info.hits);
    HR_CHECK(info.bytes <= CAP_DEFAULT, "the cache holds %zu bytes", info.bytes);
}

/* ---- threads ---- */

static const char *const FIXED[] = {
    "root ::= \"{\" ws \"\\\"a\\\"\" ws \":\" ws str ws \"}\"\n"
    "str ::= \"\\\"\" [^\"\\\\]{0,40} \"\\\"\"\nws ::= [ \\t\\n]{0,8}\n",
    "root ::= (/[a-z]+@[a-z]+\\.(com|org)/ \",\")* /[0-9]{1,12}/\n",
    "root ::= \"[\" ( item (\",\" item)* )? \"]\"\nitem ::= /-?(0|[1-9][0-9]{0,9})/ | "
    "\"\\\"\" [a-zA-Z ]{2,30} \"\\\"\"\n",
    "root ::= (/[a-z0-9]+/ & /.{2,8}/) \":\" ~/.*bad.*/\n",
};
#define N_FIXED (int)(sizeof FIXED / sizeof *FIXED)
/* the fixed grammars, then small distinct ones: more small DFAs than CAP_SMALL holds */
#define N_TEXTS (N_FIXED + 400)

static char texts[N_TEXTS][96];
static hr_grammar *ref_g[N_TEXTS];

static void *compile_loop(void *arg) {
    long bad = 0;
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < N_TEXTS; i++) {
            int k = (i + 31 * (int)(intptr_t)arg) % N_TEXTS;
            hr_grammar *g;
            hr_err *e = hr_grammar_compile(texts[k], strlen(texts[k]), &g);
            char why[128];
            bad += e || !same_grammar(ref_g[k], g, why, sizeof why);
            if (!e) hr_grammar_free(g);
            hr_err_free(e);
        }
    return (void *)bad;
}

static void test_threads_evicting(void) {
    for (int i = 0; i < N_TEXTS; i++)
        if (i < N_FIXED)
            snprintf(texts[i], sizeof texts[i], "%s", FIXED[i]);
        else
            snprintf(texts[i], sizeof texts[i], "root ::= \"k%d\" [a-z]{0,%d} \";\"\n", i, i % 20);
    hr_grammar_dfa_cache_limit(0);
    for (int i = 0; i < N_TEXTS; i++)
        HR_CHECK_OK(hr_grammar_compile(texts[i], strlen(texts[i]), &ref_g[i]));
    hr_grammar_dfa_cache_limit(CAP_SMALL); /* fewer bytes than the texts' DFAs */
    hr_grammar_shared_info before, info;
    hr_grammar_dfa_cache_stats(&before);
    pthread_t th[4];
    for (int t = 0; t < 4; t++)
        HR_CHECK(!pthread_create(&th[t], NULL, compile_loop, (void *)(intptr_t)t), "thread");
    long bad = 0;
    for (int t = 0; t < 4; t++) {
        void *r;
        pthread_join(th[t], &r);
        bad += (long)(intptr_t)r;
    }
    hr_grammar_dfa_cache_stats(&info);
    for (int i = 0; i < N_TEXTS; i++)
        hr_grammar_free(ref_g[i]);
    hr_grammar_dfa_cache_limit(CAP_DEFAULT);
    HR_CHECK(!bad, "%ld compiles differed from the uncached one", bad);
    HR_CHECK(info.bytes <= CAP_SMALL, "the cache holds %zu bytes", info.bytes);
    uint64_t evicted = info.evictions - before.evictions;
    HR_CHECK(info.entries > 0 && evicted > 0, "%zu entries, %llu evictions", info.entries,
             (unsigned long long)evicted);
}

int main(void) {
    hr_err *e = hr_tokenizer_load(hr_fixture("models/brown-llama-8m"), &tok);
    if (!e) e = hr_grammar_vocab_create(tok, &voc);
    if (e) {
        printf("FAIL setup: %s\n", hr_err_msg(e));
        hr_err_free(e);
        return 1;
    }
    HR_RUN(test_threads_evicting);
    HR_RUN(test_fixtures_same);
    hr_grammar_vocab_free(voc);
    hr_tokenizer_free(tok);
    hr_grammar_dfa_cache_limit(0);
    return hr_test_summary();
}
