/* MaskBench's method (guidance-ai/jsonschemabench, maskbench/) over the fixture schemas, one
 * thread (issue #14: mask p50 <= 40 us, p99 <= 500 us, compile p50 <= 5 ms):
 *   bench_maskbench [--dir ../shared/fixtures/jsonschema] [--model ../shared/fixtures/models/
 *                   qwen3-tools-20m] [--limit N] [--stride S] [--check-every K] [--spaced]
 *                   [--invalid] [--no-cold-compile] [--fresh-masks] [--mask-cache-mb M]
 *                   [--verbose]
 * Per schema (file names sorted): compile it as the server does for response_format
 * json_schema (hr_schema_to_gbnf with default options, then hr_grammar_compile), timed with
 * the process-wide DFA cache as a server has it after the schemas before (32 MiB, natural
 * order); then for each valid instance (--invalid: every instance, up to its first rejected
 * token, as MaskBench) the instance's text (compact JSON; --spaced: Python's json.dumps
 * separators ", " and ": ", MaskBench's exact text) is tokenized with the model's tokenizer
 * (no special tokens) and for each token hr_matcher_mask is timed, then hr_matcher_accept.
 * A fresh grammar per schema, cold as MaskBench's (later instances of a schema share its
 * masks' entries, as MaskBench's deep copies of one interpreter do); the process-wide mask
 * cache keeps the entries of the schemas before, as a server's does (--fresh-masks: emptied
 * before each schema, nothing shared between schemas); a second pass over the same
 * instances gives the warm masks. After all schemas every one
 * is compiled again with the DFA cache off (hr_grammar_dfa_cache_limit(0)): the cold compile.
 * Checks: every warm mask equals the cold one (a hash), every K-th token's mask (default
 * 50; 0: none) equals hr_matcher_mask_ref; a difference exits 1; a bad count exits 2. Percentiles
 * as MaskBench's get_p (index floor(n p / 100)). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../tests/schema_refusals.h"
#include "base/json.h"
#include "common.h"
#include "grammar/grammar.h"
#include "grammar/schema.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    uint64_t *v;
    size_t n, cap;
} samples;

static void push(samples *s, uint64_t x) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        uint64_t *v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            fprintf(stderr, "bench_maskbench: out of memory\n");
            exit(2);
        }
        s->v = v, s->cap = cap;
    }
    s->v[s->n++] = x;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* MaskBench's get_p on sorted values. */
static uint64_t pct(const samples *s, double p) {
    size_t i = (size_t)((double)s->n * p / 100.0);
    return s->v[i < s->n ? i : s->n - 1];
}

typedef struct {
    const char *dir, *model;
    int limit, stride, check_every, spaced, invalid, cold_compile, fresh_masks, verbose;
    size_t mask_cache;
} opts;

typedef struct {
    char name[128];
    uint64_t ns;
} worst;

enum { N_WORST = 5 };

typedef struct {
    int schemas, compiled, refused, instances, tokens, not_allowed, not_accepting, checked;
    samples compile, compile_cpu, compile_gbnf, compile_cold;
    samples mask, accept, tbm, mask_warm, tbm_warm;
    samples mask_built, mask_hit; /* cold masks that built their entry / found it cached */
    uint64_t mask_sum, tbm_sum, mask_warm_sum;
    schema_refusals refusals;
    worst worst_compile[N_WORST], worst_mask[N_WORST];
} stats;

typedef struct {
    const opts *o;
    hr_tokenizer *tok;
    hr_grammar_vocab *v;
    int words;
    uint32_t *bits, *ref;
    long token_no; /* over the whole run: which tokens are checked against the reference */
    stats st;
} bench;

static uint64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void note_worst(worst *w, const char *name, uint64_t ns) {
    int k = N_WORST - 1;
    if (ns <= w[k].ns) return;
    while (k > 0 && w[k - 1].ns < ns) {
        w[k] = w[k - 1];
        k--;
    }
    snprintf(w[k].name, sizeof w[k].name, "%s", name);
    w[k].ns = ns;
}

/* The server's path for response_format json_schema (src/server/request_grammar.c). */
static hr_err *compile_schema(const json_t *schema, hr_grammar **g, uint64_t *gbnf_ns) {
    hr_schema_opts so = {0};
    char *text = NULL;
    size_t len = 0;
    uint64_t t0 = hr_now_ns();
    hr_err *e = hr_schema_to_gbnf(schema, &so, &text, &len);
    *gbnf_ns = hr_now_ns() - t0;
    if (!e) e = hr_grammar_compile(text, len, g);
    free(text);
    return e;
}

static uint64_t mask_hash(const uint32_t *bits, int words) {
    uint64_t h = 1469598103934665603u;
    for (int i = 0; i < words; i++)
        h = (h ^ bits[i]) * 1099511628211u;
    return h;
}

static void check_ref(bench *b, hr_matcher *m, const char *name, int token) {
    hr_matcher_mask_ref(m, b->ref);
    b->st.checked++;
    if (memcmp(b->bits, b->ref, (size_t)b->words * 4)) {
        fprintf(stderr, "bench_maskbench: %s: fast and reference masks differ before token %d\n",
                name, token);
        exit(1);
    }
}

/* One pass of an instance's tokens. Cold: times the masks, keeps their hashes, returns 0 when
 * every token is allowed and accepted (the end accepting or not is only counted). Warm:
 * times again, compares with the hashes and checks every K-th mask against the reference. */
static int run_tokens(bench *b, const hr_grammar *g, const int32_t *ids, int n, uint64_t *hash,
                      int warm, const char *name) {
    hr_matcher *m;
    hr_err *e = hr_matcher_create(g, b->v, &m);
    if (e) {
        fprintf(stderr, "bench_maskbench: %s: %s\n", name, hr_err_msg(e));
        exit(2);
    }
    stats *st = &b->st;
    int rc = 0;
    for (int i = 0; i < n; i++) {
        hr_grammar_shared_info c0, c1;
        hr_grammar_mask_cache_stats(&c0);
        uint64_t t0 = hr_now_ns();
        hr_matcher_mask(m, b->bits);
        uint64_t t1 = hr_now_ns(), mask_ns = t1 - t0;
        hr_grammar_mask_cache_stats(&c1);
        if (warm) { /* the checks, untimed, before the state moves on */
            if (hash[i] != mask_hash(b->bits, b->words)) {
                fprintf(stderr, "bench_maskbench: %s: warm and cold masks differ at token %d\n",
                        name, i);
                exit(1);
            }
            if (b->o->check_every > 0 && b->token_no++ % b->o->check_every == 0)
                check_ref(b, m, name, i);
            t1 = hr_now_ns();
        }
        int allowed = (b->bits[ids[i] >> 5] >> (ids[i] & 31)) & 1;
        int ok = allowed && hr_matcher_accept(m, ids[i]);
        uint64_t acc_ns = hr_now_ns() - t1;
        if (!warm) {
            push(&st->mask, mask_ns), push(&st->accept, acc_ns), push(&st->tbm, mask_ns + acc_ns);
            st->mask_sum += mask_ns, st->tbm_sum += mask_ns + acc_ns;
            st->tokens++;
            push(c1.misses > c0.misses ? &st->mask_built : &st->mask_hit, mask_ns);
            hash[i] = mask_hash(b->bits, b->words);
            note_worst(st->worst_mask, name, mask_ns);
        } else {
            push(&st->mask_warm, mask_ns), push(&st->tbm_warm, mask_ns + acc_ns);
            st->mask_warm_sum += mask_ns;
        }
        if (!ok) {
            if (!warm && b->o->verbose)
                printf("# %s: token %d (id %d) %s\n", name, i, ids[i],
                       allowed ? "allowed but not accepted" : "not allowed");
            rc = allowed ? 2 : 1;
            break;
        }
    }
    if (!rc && !warm && !hr_matcher_is_accepting(m)) st->not_accepting++;
    hr_matcher_free(m);
    return rc;
}

static char *instance_text(const json_t *data, int spaced) {
    /* jansson's separators without JSON_COMPACT are Python's defaults (", " and ": "). */
    return json_dumps(data, JSON_ENCODE_ANY | (spaced ? 0 : JSON_COMPACT));
}

/* Tokenizes one instance and runs its cold pass; *ids / *n / *hash hold it for the warm one
 * (NULL when the instance is not run again). */
static void cold_instance(bench *b, const hr_grammar *g, const json_t *test, const char *name,
                          int32_t **ids_out, int *n_out, uint64_t **hash_out) {
    *ids_out = NULL, *hash_out = NULL, *n_out = 0;
    int valid = json_is_true(json_object_get(test, "valid"));
    if (!valid && !b->o->invalid) return;
    char *text = instance_text(json_object_get(test, "data"), b->o->spaced);
    int32_t *ids = NULL;
    int n = 0;
    hr_err *e = text ? hr_tokenizer_encode(b->tok, text, strlen(text), 0, &ids, &n) : NULL;
    free(text);
    if (e || !text) {
        fprintf(stderr, "bench_maskbench: %s: cannot tokenize an instance\n", name);
        exit(2);
    }
    uint64_t *hash = malloc(((size_t)n + 1) * sizeof *hash);
    if (!hash) exit(2);
    b->st.instances++;
    int rc = run_tokens(b, g, ids, n, hash, 0, name);
    if (rc && valid) {
        b->st.not_allowed += rc == 1;
        printf("# %s: a valid instance's token not %s by the grammar\n", name,
               rc == 1 ? "allowed" : "accepted");
    }
    *ids_out = ids, *n_out = n, *hash_out = hash;
}

/* The cold pass over a schema's instances, then the warm pass over the same tokens. */
static void run_instances(bench *b, const hr_grammar *g, const json_t *tests, const char *name) {
    size_t nt = json_array_size(tests);
    int32_t **ids = calloc(nt + 1, sizeof *ids);
    uint64_t **hash = calloc(nt + 1, sizeof *hash);
    int *n = calloc(nt + 1, sizeof *n);
    if (!ids || !hash || !n) exit(2);
    for (size_t i = 0; i < nt; i++)
        cold_instance(b, g, json_array_get(tests, i), name, &ids[i], &n[i], &hash[i]);
    for (size_t i = 0; i < nt; i++) {
        if (hash[i]) run_tokens(b, g, ids[i], n[i], hash[i], 1, name);
        free(ids[i]), free(hash[i]);
    }
    free(ids), free(hash), free(n);
}

static void run_schema(bench *b, const char *path, const char *name) {
    stats *st = &b->st;
    json_t *f;
    st->schemas++;
    hr_err *e = hr_json_load_file(path, &f);
    if (e) { /* an integer past int64: jansson cannot load the file */
        schema_refusals_note(&st->refusals, "(jansson cannot load it)");
        st->refused++;
        hr_err_free(e);
        return;
    }
    hr_grammar *g = NULL;
    uint64_t gbnf_ns, c0 = cpu_ns(), t0 = hr_now_ns();
    e = compile_schema(json_object_get(f, "schema"), &g, &gbnf_ns);
    uint64_t wall = hr_now_ns() - t0, cpu = cpu_ns() - c0;
    if (e) {
        if (b->o->verbose) printf("# refused %s: %s\n", name, hr_err_msg(e));
        schema_refusals_note(&st->refusals, hr_err_msg(e));
        st->refused++;
        hr_err_free(e);
        json_decref(f);
        return;
    }
    st->compiled++;
    push(&st->compile, wall), push(&st->compile_cpu, cpu), push(&st->compile_gbnf, gbnf_ns);
    note_worst(st->worst_compile, name, wall);
    if (b->o->fresh_masks) { /* nothing shared with the schemas before */
        hr_grammar_mask_cache_limit(0);
        hr_grammar_mask_cache_limit(b->o->mask_cache);
    }
    uint64_t cold0 = st->mask_sum, warm0 = st->mask_warm_sum;
    int tok0 = st->tokens;
    run_instances(b, g, json_object_get(f, "tests"), name);
    if (b->o->verbose)
        printf("# %s: compile %.2f ms, %d tokens, masks cold %.2f ms, warm %.2f ms\n", name,
               wall / 1e6, st->tokens - tok0, (st->mask_sum - cold0) / 1e6,
               (st->mask_warm_sum - warm0) / 1e6);
    hr_grammar_free(g);
    json_decref(f);
}

/* The same schemas compiled again with the DFA cache off. */
static void cold_compile(bench *b, char **names, int n) {
    hr_grammar_dfa_cache_limit(0);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", b->o->dir, names[i]);
        json_t *f;
        hr_err *e = hr_json_load_file(path, &f);
        if (e) {
            hr_err_free(e);
            continue;
        }
        hr_grammar *g = NULL;
        uint64_t gbnf_ns, t0 = hr_now_ns();
        e = compile_schema(json_object_get(f, "schema"), &g, &gbnf_ns);
        uint64_t wall = hr_now_ns() - t0;
        if (!e) push(&b->st.compile_cold, wall);
        hr_err_free(e);
        hr_grammar_free(g);
        json_decref(f);
    }
}

static int is_json(const struct dirent *d) {
    size_t n = strlen(d->d_name);
    return n > 5 && !strcmp(d->d_name + n - 5, ".json");
}

static void print_dist(const char *what, samples *s, double unit, const char *u) {
    if (!s->n) return;
    qsort(s->v, s->n, sizeof *s->v, cmp_u64);
    printf("%-36s p50 %8.2f  p90 %8.2f  p99 %8.2f  max %9.2f %s  (n %zu)\n", what,
           pct(s, 50) / unit, pct(s, 90) / unit, pct(s, 99) / unit, s->v[s->n - 1] / unit, u, s->n);
}

static void print_report(bench *b) {
    stats *st = &b->st;
    printf("schemas %d: compiled %d, refused %d; instances %d (%s, %s), tokens %d\n", st->schemas,
           st->compiled, st->refused, st->instances, b->o->invalid ? "all" : "valid only",
           b->o->spaced ? "spaced as json.dumps" : "compact", st->tokens);
    printf("valid instances with a token not allowed: %d; instances not accepting at the end: "
           "%d; masks checked against the reference: %d (all equal), warm = cold: all\n",
           st->not_allowed, st->not_accepting, st->checked);
    print_dist("compile, DFA cache warm (ms)", &st->compile, 1e6, "ms");
    print_dist("  the same, thread CPU (ms)", &st->compile_cpu, 1e6, "ms");
    print_dist("  of it schema -> GBNF (ms)", &st->compile_gbnf, 1e6, "ms");
    print_dist("compile, DFA cache off (ms)", &st->compile_cold, 1e6, "ms");
    print_dist("mask, cold grammar (us)", &st->mask, 1e3, "us");
    print_dist("  of them building an entry (us)", &st->mask_built, 1e3, "us");
    print_dist("  of them with the entry cached (us)", &st->mask_hit, 1e3, "us");
    print_dist("accept (us)", &st->accept, 1e3, "us");
    print_dist("mask + accept = MaskBench TBM (us)", &st->tbm, 1e3, "us");
    print_dist("mask, warm second pass (us)", &st->mask_warm, 1e3, "us");
    print_dist("mask + accept, warm (us)", &st->tbm_warm, 1e3, "us");
    if (st->tokens)
        printf("mean us: mask %.2f, TBM %.2f, warm mask %.2f\n", st->mask_sum / 1e3 / st->tokens,
               st->tbm_sum / 1e3 / st->tokens,
               st->mask_warm.n ? st->mask_warm_sum / 1e3 / st->mask_warm.n : 0.0);
    for (int i = 0; i < N_WORST && st->worst_compile[i].ns; i++)
        printf("slowest compile %d: %s %.1f ms\n", i + 1, st->worst_compile[i].name,
               st->worst_compile[i].ns / 1e6);
    for (int i = 0; i < N_WORST && st->worst_mask[i].ns; i++)
        printf("slowest mask %d: %s %.0f us\n", i + 1, st->worst_mask[i].name,
               st->worst_mask[i].ns / 1e3);
    hr_grammar_shared_info mc;
    hr_grammar_mask_cache_stats(&mc);
    printf("mask cache: %llu hits, %llu entries built, %llu evicted; %zu entries (%.1f MiB) "
           "held at the end\n",
           (unsigned long long)mc.hits, (unsigned long long)mc.misses,
           (unsigned long long)mc.evictions, mc.entries, mc.bytes / 1048576.0);
    schema_refusals_print(&st->refusals, "");
}

static void usage(void) {
    fprintf(stderr, "usage: bench_maskbench [--dir DIR] [--model DIR] [--limit N] [--stride S] "
                    "[--check-every K] [--spaced] [--invalid] [--no-cold-compile] [--verbose]\n");
    exit(2);
}

/* A whole decimal count of at least lo (0 for --limit and --check-every: none / never). */
static int count_arg(const char *flag, const char *v, int lo) {
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || *end || n < lo || n > 1000000000) {
        fprintf(stderr, "bench_maskbench: %s wants a whole number >= %d, not '%s'\n", flag, lo, v);
        exit(2);
    }
    return (int)n;
}

static void parse(int argc, char **argv, opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--spaced"))
            o->spaced = 1;
        else if (!strcmp(a, "--invalid"))
            o->invalid = 1;
        else if (!strcmp(a, "--no-cold-compile"))
            o->cold_compile = 0;
        else if (!strcmp(a, "--verbose"))
            o->verbose = 1;
        else if (!strcmp(a, "--fresh-masks"))
            o->fresh_masks = 1;
        else if (!v)
            usage();
        else if (!strcmp(a, "--dir"))
            o->dir = v, i++;
        else if (!strcmp(a, "--model"))
            o->model = v, i++;
        else if (!strcmp(a, "--limit"))
            o->limit = count_arg(a, v, 0), i++;
        else if (!strcmp(a, "--stride"))
            o->stride = count_arg(a, v, 1), i++;
        else if (!strcmp(a, "--check-every"))
            o->check_every = count_arg(a, v, 0), i++;
        else if (!strcmp(a, "--mask-cache-mb"))
            o->mask_cache = (size_t)count_arg(a, v, 0) << 20, i++;
        else
            usage();
    }
}

int main(int argc, char **argv) {
    opts o = {.dir = "../shared/fixtures/jsonschema",
              .model = "../shared/fixtures/models/qwen3-tools-20m",
              .stride = 1,
              .check_every = 50,
              .mask_cache = (size_t)256 << 20,
              .cold_compile = 1};
    parse(argc, argv, &o);
    hr_grammar_mask_cache_limit(o.mask_cache);
    bench b = {.o = &o};
    hr_err *e = hr_tokenizer_load(o.model, &b.tok);
    if (!e) e = hr_grammar_vocab_create(b.tok, &b.v);
    if (e) {
        fprintf(stderr, "bench_maskbench: %s\n", hr_err_msg(e));
        return 2;
    }
    b.words = (hr_grammar_vocab_size(b.v) + 31) / 32;
    b.bits = malloc((size_t)b.words * 4), b.ref = malloc((size_t)b.words * 4);
    struct dirent **de;
    int nd = scandir(o.dir, &de, is_json, alphasort), n = 0;
    char **names = calloc(nd > 0 ? (size_t)nd : 1, sizeof *names);
    if (nd < 0 || !names || !b.bits || !b.ref) {
        fprintf(stderr, "bench_maskbench: cannot read %s\n", o.dir);
        return 2;
    }
    for (int i = 0; i < nd; i++) {
        if (i % o.stride == 0 && (!o.limit || n < o.limit)) names[n++] = strdup(de[i]->d_name);
        free(de[i]);
    }
    free(de);
    printf("bench_maskbench: %d schemas of %d, vocabulary %d tokens, one thread\n", n, nd,
           hr_grammar_vocab_size(b.v));
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", o.dir, names[i]);
        run_schema(&b, path, names[i]);
    }
    if (o.cold_compile) cold_compile(&b, names, n);
    print_report(&b);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names), free(b.bits), free(b.ref);
    hr_grammar_vocab_free(b.v);
    hr_tokenizer_free(b.tok);
    return 0;
}
