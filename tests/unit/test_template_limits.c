/* Hostile chat templates: chains and nesting that would overflow the C stack, literals and
 * sources that would exhaust memory, tags that would lex in quadratic time. Each is
 * generated here at the limit (renders) and past it (a clear error, HR_E_LIMIT at render
 * time), and the deepest renders run on a 512 KiB thread stack with the bytes they used
 * printed. */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>

#include "base/err.h"
#include "harness.h"
#include "template/template.h"

#define DEPTH HR_TEMPLATE_MAX_DEPTH

/* A growable string for generated templates. */
typedef struct {
    char *p;
    size_t n, cap;
} gen;

static void put(gen *g, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    size_t k = (size_t)vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (g->n + k + 1 > g->cap) {
        g->cap = (g->n + k + 1) * 2;
        g->p = realloc(g->p, g->cap);
    }
    vsnprintf(g->p + g->n, k + 1, fmt, ap);
    g->n += k;
    va_end(ap);
}

/* fmt repeated n times. */
static void rep(gen *g, int n, const char *s) {
    for (int i = 0; i < n; i++)
        put(g, "%s", s);
}

/* Parses and renders src with context ctx (JSON text, NULL: none): the output, or NULL
 * with *err (caller frees both). */
static char *render(const char *src, const char *ctx, hr_err **err) {
    hr_template *t;
    char *out = NULL;
    json_t *c = ctx ? json_loads(ctx, 0, NULL) : NULL;
    if (!(*err = hr_template_parse(src, &t))) {
        *err = hr_template_render(t, c, &out, NULL);
        hr_template_free(t);
    }
    json_decref(c);
    return out;
}

/* src must render to want. */
static int renders(const char *what, const char *src, const char *ctx, const char *want) {
    hr_err *e;
    char *out = render(src, ctx, &e);
    int ok = out && !strcmp(out, want);
    if (!ok) printf("  %s: got %.200s, want %.200s\n", what, out ? out : hr_err_msg(e), want);
    free(out);
    hr_err_free(e);
    return ok;
}

/* src must fail with a message containing want, and with code (HR_E_LIMIT for limits
 * hit while rendering, HR_E_GENERIC for a template that does not load). */
static int fails(const char *what, const char *src, const char *ctx, const char *want,
                 hr_err_code code) {
    hr_err *e;
    char *out = render(src, ctx, &e);
    int ok = !out && e && strstr(hr_err_msg(e), want) && hr_err_code_of(e) == code;
    if (!ok)
        printf("  %s: got %.200s (code %d), want \"%s\" (code %d)\n", what,
               out ? out : hr_err_msg(e), (int)hr_err_code_of(e), want, (int)code);
    free(out);
    hr_err_free(e);
    return ok;
}

/* {{ 1 + 1 + ... }} with n operators: a tree n + 1 nodes deep under the top block. */
static char *plus_chain(int n) {
    gen g = {0};
    put(&g, "{{ 1");
    rep(&g, n, " + 1");
    put(&g, " }}");
    return g.p;
}

static void test_operator_chains(void) {
    char *ok = plus_chain(DEPTH - 2), *over = plus_chain(DEPTH - 1), *huge = plus_chain(200000);
    char want[16];
    snprintf(want, sizeof want, "%d", DEPTH - 1);
    int good = renders("+ chain at the limit", ok, NULL, want) &&
               fails("+ chain past the limit", over, NULL, "nested too deeply", HR_E_GENERIC) &&
               fails("200000-term + chain", huge, NULL, "line 1, column", HR_E_GENERIC);
    free(ok), free(over), free(huge);
    HR_CHECK(good, "operator chains");
    gen f = {0}, a = {0};
    put(&f, "{{ 'a'");
    rep(&f, 100000, "|upper");
    put(&f, " }}");
    put(&a, "{{ x");
    rep(&a, 100000, ".y");
    put(&a, " }}");
    good = fails("filter chain", f.p, NULL, "nested too deeply", HR_E_GENERIC) &&
           fails("attribute chain", a.p, NULL, "nested too deeply", HR_E_GENERIC);
    free(f.p), free(a.p);
    HR_CHECK(good, "filter/attribute chains");
}

/* An elif chain is flat: no limit on its length. */
#define ELIFS 50000 /* 40000 overflowed an 8 MiB stack */

/* An if with ELIFS branches (950 KB): x == 1 renders "one", x == ELIFS "last". */
static char *elif_chain(void) {
    gen g = {0};
    put(&g, "{%% if x == 0 %%}zero{%% elif x == 1 %%}one");
    for (int i = 2; i < ELIFS; i++)
        put(&g, "{%% elif x==%d %%}", i);
    put(&g, "{%% elif x==%d %%}last{%% else %%}none{%% endif %%}", ELIFS);
    return g.p;
}

static void test_elif_chain(void) {
    char *src = elif_chain(), ctx[32];
    snprintf(ctx, sizeof ctx, "{\"x\": %d}", ELIFS);
    int good = renders("last elif", src, ctx, "last") &&
               renders("first elif", src, "{\"x\": 1}", "one") &&
               renders("else after elifs", src, "{\"x\": -1}", "none");
    free(src);
    HR_CHECK(good, "elif chain");
}

/* n blocks of kind open/close around {{ x }}. */
static char *nested_blocks(int n, const char *open, const char *close) {
    gen g = {0};
    rep(&g, n, open);
    put(&g, "{{ x }}");
    rep(&g, n, close);
    return g.p;
}

static void test_nested_blocks(void) {
    const char *kinds[][2] = {{"{% if 1 %}", "{% endif %}"},
                              {"{% for i in [1] %}", "{% endfor %}"},
                              {"{% set s %}", "{% endset %}{{ s }}"},
                              {"{% generation %}", "{% endgeneration %}"}};
    for (int k = 0; k < 4; k++) {
        char *ok = nested_blocks(DEPTH - 2, kinds[k][0], kinds[k][1]);
        char *over = nested_blocks(DEPTH, kinds[k][0], kinds[k][1]);
        char *huge = nested_blocks(20000, kinds[k][0], kinds[k][1]);
        int good = renders(kinds[k][0], ok, "{\"x\": 7}", "7") &&
                   fails(kinds[k][0], over, NULL, "nested too deeply", HR_E_GENERIC) &&
                   fails(kinds[k][0], huge, NULL, "nested too deeply", HR_E_GENERIC);
        free(ok), free(over), free(huge);
        HR_CHECK(good, "nesting %s", kinds[k][0]);
    }
    gen g = {0};
    put(&g, "{{ ");
    rep(&g, 100000, "(");
    put(&g, "1");
    rep(&g, 100000, ")");
    put(&g, " }}");
    int good = fails("parentheses", g.p, NULL, "nested too deeply", HR_E_GENERIC);
    free(g.p);
    HR_CHECK(good, "deep parentheses");
}

/* Macro recursion, values grown in a loop, self-containing namespaces: render-time limits. */
static void test_render_depth(void) {
    HR_CHECK(fails("recursive macro",
                   "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(99) }}",
                   NULL, "nested deeper than", HR_E_LIMIT),
             "macro recursion");
    HR_CHECK(
        renders(
            "shallow recursion",
            "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{% endif %}{{ n }}{% endmacro %}{{ f(5) }}",
            NULL, "012345"),
        "macro recursion within the limit");
    HR_CHECK(fails("nested in a loop",
                   "{% set ns = namespace(x=1) %}{% for i in range(100000) %}{% set ns.x = [ns.x] "
                   "%}{% endfor %}{{ ns.x }}",
                   NULL, "a value nested more than", HR_E_LIMIT),
             "value grown by a namespace");
    HR_CHECK(fails("namespace()",
                   "{% set ns = namespace(x=1) %}{% for i in range(100000) %}{% set ns.x = "
                   "namespace(v=[ns.x]).v %}{% endfor %}",
                   NULL, "a value nested more than", HR_E_LIMIT),
             "value grown through namespace()");
    HR_CHECK(fails("macro argument",
                   "{% macro f(x, n) %}{% if n %}{{ f([[[[[[[[[[x]]]]]]]]]], n - 1) }}{% else %}{{ "
                   "x }}{% endif %}{% endmacro %}{{ f(1, 95) }}",
                   NULL, "a value nested more than", HR_E_LIMIT),
             "value grown through macro arguments");
    HR_CHECK(fails("self-containing namespace",
                   "{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}", NULL,
                   "a value nested more than", HR_E_LIMIT),
             "namespace cycle");
    HR_CHECK(renders("namespace cycle compared",
                     "{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me == ns }}", NULL,
                     "True"),
             "namespaces compare by identity");
    HR_CHECK(fails("namespace chain",
                   "{% set ns = namespace(c=0) %}{% for i in range(5000) %}{% set ns.c = "
                   "namespace(x=[ns.c]) %}{% endfor %}{{ ns.c }}",
                   NULL, "a value nested more than", HR_E_LIMIT),
             "chain of namespaces");
}

/* A context value n arrays deep. */
static char *deep_json(int n) {
    gen g = {0};
    put(&g, "{\"v\": ");
    rep(&g, n, "[");
    put(&g, "1");
    rep(&g, n, "]");
    put(&g, "}");
    return g.p;
}

static void test_context_depth(void) {
    char *ok = deep_json(DEPTH), *over = deep_json(DEPTH + 1);
    int good =
        renders("context at the limit", "{{ v|tojson|length > 0 }}{{ v == v }}", ok, "TrueTrue") &&
        fails("context past the limit", "{{ v }}", over, "context nests more than", HR_E_GENERIC);
    free(ok), free(over);
    HR_CHECK(good, "deep context");
}

/* 45000 string literals in 945 KB: each took the rest of the file (21 GB in all). */
static void test_string_literals(void) {
    gen g = {0};
    for (int i = 0; i < 45000; i++)
        put(&g, "{{ 'literal %05d' }}", i);
    hr_template *t;
    hr_err *e = hr_template_parse(g.p, &t);
    free(g.p);
    HR_CHECK_OK(e);
    char *out;
    e = hr_template_render(t, NULL, &out, NULL);
    hr_template_free(t);
    HR_CHECK_OK(e);
    HR_CHECK(strlen(out) == 45000 * 13 && !strncmp(out + 13 * 44999, "literal 44999", 13),
             "output %.40s", out);
    free(out);
    HR_CHECK(renders("escapes", "{{ 'a\\u00e9\\x41\\n\\'\\\\' }}|{{ \"\" }}|{{ 'x' 'y' }}", NULL,
                     "a\xc3\xa9"
                     "A\n'\\||xy"),
             "escapes in literals");
}

static void test_source_and_memory(void) {
    char *big = malloc(HR_TEMPLATE_MAX_SOURCE + 2);
    memset(big, 'x', HR_TEMPLATE_MAX_SOURCE + 1);
    big[HR_TEMPLATE_MAX_SOURCE + 1] = 0;
    int good = fails("source over the limit", big, NULL, "over the limit of", HR_E_GENERIC);
    big[HR_TEMPLATE_MAX_SOURCE] = 0;
    hr_template *t;
    hr_err *e = hr_template_parse(big, &t);
    free(big);
    HR_CHECK(good, "source size");
    HR_CHECK_OK(e);
    hr_template_free(t);
    /* a flat list of one-digit numbers: ~80 bytes of syntax tree per byte of source */
    gen g = {0};
    put(&g, "{{ [1");
    rep(&g, (HR_TEMPLATE_MAX_SOURCE - 16) / 2, ",1");
    put(&g, "] }}");
    good = fails("parse memory", g.p, NULL, "MiB to parse", HR_E_GENERIC);
    free(g.p);
    HR_CHECK(good, "parse memory");
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds to parse one {{ }} tag of about n bytes (ending in a syntax error), best of 3. */
static double lex_time(int n) {
    gen g = {0};
    put(&g, "{{ [");
    rep(&g, n / 4, "1,\n ");
    put(&g, "1 $ }}");
    double best = 1e9;
    for (int k = 0; k < 3; k++) {
        hr_template *t;
        double t0 = cpu_s();
        hr_err *e = hr_template_parse(g.p, &t);
        double dt = cpu_s() - t0;
        if (dt < best) best = dt;
        if (!e || !strstr(hr_err_msg(e), "unexpected character '$'")) best = -1;
        hr_err_free(e);
    }
    free(g.p);
    return best;
}

/* Lexing a tag was quadratic (each token recounted lines from the tag's start: 400 KB took
 * 10 s). Linear time grows 8x from n to 8n; quadratic would grow 64x. */
static void test_lexing_is_linear(void) {
    double small = lex_time(100000), large = lex_time(800000);
    printf("  one tag: 100 KB %.1f ms, 800 KB %.1f ms\n", small * 1e3, large * 1e3);
    HR_CHECK(small > 0 && large > 0, "syntax error not found");
    HR_CHECK(large < 24 * small + 0.01, "8x the tag took %.0fx the time", large / small);
}

/* ---- stack use on a 512 KiB thread ---- */

typedef struct {
    const char *src, *ctx, *want;
    int ok;
} job;

static void *run_job(void *arg) {
    job *j = arg;
    hr_err *e;
    char *out = render(j->src, j->ctx, &e);
    j->ok = j->want ? out && !strcmp(out, j->want) : e && hr_err_code_of(e) == HR_E_LIMIT;
    if (!j->ok) printf("  got %.100s\n", out ? out : hr_err_msg(e));
    free(out);
    hr_err_free(e);
    return NULL;
}

#if defined(__SANITIZE_ADDRESS__)
#define STACK (4u << 20) /* ASan's redzones make frames several times larger */
#else
#define STACK (512u << 10)
#endif
#define PAINT 0xA5

/* Runs j on a thread with a STACK-byte stack (a guard page below it); the bytes it used. */
static size_t stack_used(job *j) {
    size_t page = 4096;
    unsigned char *base =
        mmap(NULL, STACK + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return SIZE_MAX;
    mprotect(base, page, PROT_NONE);
    memset(base + page, PAINT, STACK);
    pthread_attr_t attr;
    pthread_t th;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, base + page, STACK);
    int rc = pthread_create(&th, &attr, run_job, j);
    if (!rc) pthread_join(th, NULL);
    pthread_attr_destroy(&attr);
    size_t i = 0;
    while (i < STACK && base[page + i] == PAINT)
        i++;
    munmap(base, STACK + page);
    return rc ? SIZE_MAX : STACK - i;
}

/* A render at full depth: a value DEPTH - 1 lists deep printed, compared and serialised at
 * the bottom of a macro recursion that takes the rendering depth to the limit. */
static char *deep_render(char *want, size_t n) {
    gen g = {0};
    put(&g, "{%% set ns = namespace(v=1) %%}{%% for i in range(%d) %%}", DEPTH - 1);
    put(&g, "{%% set ns.v = [ns.v] %%}{%% endfor %%}{%% macro f(n) %%}{%% if n %%}{{ f(n - 1) }}");
    put(&g, "{%% else %%}{{ (ns.v|string|length, ns.v == ns.v, ns.v|tojson|length) }}");
    put(&g, "{%% endif %%}{%% endmacro %%}{{ f(%d) }}", (DEPTH - 8) / 3);
    snprintf(want, n, "(%d, True, %d)", 2 * (DEPTH - 1) + 1, 2 * (DEPTH - 1) + 1);
    return g.p;
}

/* {{ ((...(1)...)) }} at the parser's limit. */
static char *deep_parens(void) {
    gen g = {0};
    put(&g, "{{ ");
    rep(&g, DEPTH - 2, "(");
    put(&g, "1");
    rep(&g, DEPTH - 2, ")");
    put(&g, " }}");
    return g.p;
}

/* The deepest renders and parses the limits allow, and the longest elif chain. */
static void test_stack_use(void) {
    char deep_want[64], chain_want[16], elif_ctx[32];
    snprintf(chain_want, sizeof chain_want, "%d", DEPTH - 1);
    snprintf(elif_ctx, sizeof elif_ctx, "{\"x\": %d}", ELIFS);
    char *srcs[] = {deep_render(deep_want, sizeof deep_want),
                    deep_parens(),
                    plus_chain(DEPTH - 2),
                    nested_blocks(DEPTH - 2, "{% if 1 %}", "{% endif %}"),
                    elif_chain(),
                    strdup("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}")};
    job jobs[] = {{srcs[0], NULL, deep_want, 0},  {srcs[1], NULL, "1", 0},
                  {srcs[2], NULL, chain_want, 0}, {srcs[3], "{\"x\": 1}", "1", 0},
                  {srcs[4], elif_ctx, "last", 0}, {srcs[5], NULL, NULL, 0}};
    const char *names[] = {"render+values", "parentheses", "+ chain",
                           "nested ifs",    "elif chain",  "macro limit"};
    int good = 1;
    for (size_t k = 0; k < sizeof jobs / sizeof *jobs; k++) {
        size_t used = stack_used(&jobs[k]);
        printf("  %s: %zu KiB of a %u KiB stack\n", names[k], used >> 10, STACK >> 10);
        good = good && jobs[k].ok && used < STACK;
        free(srcs[k]);
    }
    HR_CHECK(good, "deep renders on a %u KiB stack", STACK >> 10);
}

int main(void) {
    HR_RUN(test_operator_chains);
    HR_RUN(test_elif_chain);
    HR_RUN(test_nested_blocks);
    HR_RUN(test_render_depth);
    HR_RUN(test_context_depth);
    HR_RUN(test_string_literals);
    HR_RUN(test_source_and_memory);
    HR_RUN(test_lexing_is_linear);
    HR_RUN(test_stack_use);
    return hr_test_summary();
}
