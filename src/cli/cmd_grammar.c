/* `hearth grammar`: feeds the model tokenizer's encoding of a text through a grammar's
 * token masks, checking every token is allowed (and, unless --bench, that the fast mask
 * equals the reference one). Exit 0: every token allowed and the grammar accepts at the
 * end; 1: rejected (the byte offset and token say where); 2: the grammar is refused or
 * the usage is wrong; 3: the model or the text cannot be read. --bench prints compile,
 * vocabulary and per-token mask times. Each grammar source (--regex, --gbnf, --schema) is
 * one branch of compile_source. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/file.h"
#include "base/json.h"
#include "cli/args.h"
#include "cli/verbs.h"
#include "engine/tok_open.h"
#include "grammar/grammar.h"
#include "grammar/schema.h"

typedef struct {
    const char *model, *regex, *gbnf, *schema, *text, *file;
    int bench, compact;
} grammar_opts;

/* The grammar the options name, compiled; the source text is kept for --bench recompiles. */
static hr_err *compile_source(const grammar_opts *o, char **src, size_t *len, hr_grammar **g) {
    if (o->regex) {
        *len = strlen(o->regex);
        if (!(*src = strdup(o->regex))) return hr_err_oom();
        return hr_grammar_compile_regex(*src, *len, g);
    }
    if (o->schema) { /* JSON Schema -> GBNF text, which --bench then recompiles */
        json_t *s;
        HR_TRY(hr_json_load_file(o->schema, &s));
        hr_schema_opts so = {.compact = o->compact};
        hr_err *e = hr_schema_to_gbnf(s, &so, src, len);
        json_decref(s);
        if (e) return hr_err_wrap(e, "%s: ", o->schema);
        return hr_err_wrap(hr_grammar_compile(*src, *len, g), "%s (as GBNF): ", o->schema);
    }
    HR_TRY(hr_read_file(o->gbnf, src, len));
    return hr_err_wrap(hr_grammar_compile(*src, *len, g), "%s: ", o->gbnf);
}

static hr_err *recompile(const grammar_opts *o, const char *src, size_t len, hr_grammar **g) {
    return o->regex ? hr_grammar_compile_regex(src, len, g) : hr_grammar_compile(src, len, g);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void print_times(const char *what, uint64_t *ns, int n) {
    if (!n) return;
    qsort(ns, (size_t)n, sizeof *ns, cmp_u64);
    printf("%s: p50 %.1f us, p99 %.1f us, max %.1f us over %d masks\n", what, ns[n / 2] / 1e3,
           ns[(size_t)((n - 1) * 0.99)] / 1e3, ns[n - 1] / 1e3, n);
}

/* Bytes before token i of ids. */
static size_t byte_offset(const hr_tokenizer *tok, const int32_t *ids, int i) {
    size_t off = 0;
    for (int k = 0; k < i; k++) {
        size_t b = hr_tokenizer_token_bytes(tok, ids[k], NULL, 0);
        off += b == (size_t)-1 ? 0 : b;
    }
    return off;
}

/* Says at which byte token i of ids fails (its bytes fed one by one find it). */
static void report_reject(hr_matcher *m, const hr_tokenizer *tok, const int32_t *ids, int i) {
    char bytes[256];
    size_t n = hr_tokenizer_token_bytes(tok, ids[i], bytes, sizeof bytes), ok = 0;
    if (n != (size_t)-1 && n <= sizeof bytes) hr_matcher_accept_bytes(m, bytes, n, &ok);
    const char *s = hr_tokenizer_token_str(tok, ids[i]);
    printf("rejected at byte %zu: token %d (%s) is not allowed there\n",
           byte_offset(tok, ids, i) + ok, ids[i], s ? s : "?");
}

/* One pass of the tokens through a matcher: 0 all allowed and accepting, 1 rejected. */
static int feed(const hr_grammar *g, const hr_grammar_vocab *v, const hr_tokenizer *tok,
                const int32_t *ids, int n, int check_ref, uint64_t *ns, int quiet) {
    int words = (hr_grammar_vocab_size(v) + 31) / 32, rc = 0;
    uint32_t *bits = malloc((size_t)words * 4), *ref = malloc((size_t)words * 4);
    hr_matcher *m = NULL;
    hr_err *e = (bits && ref) ? hr_matcher_create(g, v, &m) : hr_err_oom();
    if (e) {
        fprintf(stderr, "hearth grammar: %s\n", hr_err_msg(e));
        hr_err_free(e);
        free(bits), free(ref);
        return 3;
    }
    for (int i = 0; i < n && !rc; i++) {
        uint64_t t0 = hr_now_ns();
        hr_matcher_mask(m, bits);
        ns[i] = hr_now_ns() - t0;
        if (check_ref) {
            hr_matcher_mask_ref(m, ref);
            if (memcmp(bits, ref, (size_t)words * 4)) {
                fprintf(stderr,
                        "hearth grammar: internal error: fast and reference masks differ before "
                        "token %d\n",
                        i);
                rc = 3;
                break;
            }
        }
        int allowed = (bits[ids[i] >> 5] >> (ids[i] & 31)) & 1;
        if (!allowed || !hr_matcher_accept(m, ids[i])) {
            if (!quiet) report_reject(m, tok, ids, i);
            rc = 1;
        }
    }
    if (!rc && !hr_matcher_is_accepting(m)) {
        if (!quiet)
            printf("rejected at the end (byte %zu): the text is an incomplete match\n",
                   byte_offset(tok, ids, n));
        rc = 1;
    }
    hr_matcher_free(m);
    free(bits), free(ref);
    return rc;
}

static void bench_compile(const grammar_opts *o, const char *src, size_t len, double first_ms) {
    enum { RUNS = 21 };
    uint64_t ns[RUNS];
    for (int r = 0; r < RUNS; r++) {
        hr_grammar *g;
        uint64_t t0 = hr_now_ns();
        hr_err *e = recompile(o, src, len, &g);
        ns[r] = hr_now_ns() - t0;
        hr_err_free(e);
        if (!e) hr_grammar_free(g);
    }
    qsort(ns, RUNS, sizeof *ns, cmp_u64);
    printf("compile: %.3f ms first, p50 %.3f ms over %d runs\n", first_ms, ns[RUNS / 2] / 1e6,
           RUNS);
}

static int run(const grammar_opts *o) {
    char *src = NULL, *buf = NULL;
    size_t len = 0, tlen = o->text ? strlen(o->text) : 0;
    hr_grammar *g = NULL;
    uint64_t t0 = hr_now_ns();
    hr_err *e = compile_source(o, &src, &len, &g);
    double compile_ms = (hr_now_ns() - t0) / 1e6;
    if (e) {
        free(src);
        return hr_cmd_fail("grammar", hr_err_wrap(e, "grammar refused: ")), 2;
    }
    hr_tokenizer *tok = NULL;
    hr_grammar_vocab *v = NULL;
    int32_t *ids = NULL;
    int n = 0, rc = 3;
    if (o->file) e = hr_read_file(o->file, &buf, &tlen);
    if (!e) e = hr_tokenizer_open(o->model, &tok);
    t0 = hr_now_ns();
    if (!e) e = hr_grammar_vocab_create(tok, &v);
    double vocab_ms = (hr_now_ns() - t0) / 1e6;
    if (!e) e = hr_tokenizer_encode(tok, o->file ? buf : o->text, tlen, 0, &ids, &n);
    uint64_t *ns = e ? NULL : malloc(((size_t)n + 1) * sizeof *ns);
    if (!e && !ns) e = hr_err_oom();
    if (e)
        hr_cmd_fail("grammar", e);
    else {
        rc = feed(g, v, tok, ids, n, !o->bench, ns, 0);
        if (o->bench && rc == 0) {
            bench_compile(o, src, len, compile_ms);
            printf("vocab + trie: %.1f ms (%d tokens)\n", vocab_ms, hr_grammar_vocab_size(v));
            print_times("mask, cold cache", ns, n);
            feed(g, v, tok, ids, n, 0, ns, 1);
            print_times("mask, warm cache", ns, n);
        } else if (rc == 0)
            printf("accepted: %d tokens, %zu bytes\n", n, tlen);
    }
    free(ns), free(ids), free(buf), free(src);
    hr_grammar_vocab_free(v);
    if (tok) hr_tokenizer_free(tok);
    hr_grammar_free(g);
    return rc;
}

int hr_cmd_grammar(int argc, char **argv) {
    grammar_opts o = {0};
    int help = 0;
    hr_opt opts[] = {
        {"model", HR_OPT_STR, &o.model, "model or tokenizer directory, or a .gguf file"},
        {"regex", HR_OPT_STR, &o.regex, "the output must match this regular expression as a whole"},
        {"gbnf", HR_OPT_STR, &o.gbnf,
         "grammar file (llama.cpp GBNF, /regex/ terminals; docs/grammar.md)"},
        {"schema", HR_OPT_STR, &o.schema, "JSON Schema file (docs/json-schema.md)"},
        {"compact", HR_OPT_FLAG, &o.compact, "with --schema: no whitespace between JSON tokens"},
        {"text", HR_OPT_STR, &o.text, "text to check"},
        {"file", HR_OPT_STR, &o.file, "file whose contents to check"},
        {"bench", HR_OPT_FLAG, &o.bench, "time compile and masks (skips the reference mask check)"},
    };
    hr_err *e =
        hr_opts_parse(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]),
                      "usage: hearth grammar --model DIR (--regex R | --gbnf FILE | --schema FILE "
                      "[--compact]) (--text T | --file F) [--bench]",
                      &help);
    if (e) return hr_cmd_fail("grammar", e), 2;
    if (help) return 0;
    if (!o.model) return hr_cmd_fail("grammar", hr_errf("--model is required")), 2;
    if (!!o.regex + !!o.gbnf + !!o.schema != 1)
        return hr_cmd_fail("grammar", hr_errf("give exactly one of --regex, --gbnf and --schema")),
               2;
    if (o.compact && !o.schema)
        return hr_cmd_fail("grammar", hr_errf("--compact goes with --schema")), 2;
    if (!o.text == !o.file)
        return hr_cmd_fail("grammar", hr_errf("give exactly one of --text and --file")), 2;
    return run(&o);
}
