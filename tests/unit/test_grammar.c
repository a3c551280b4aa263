/* Grammar engine: GBNF and regex compilation, exact context-free semantics over bytes
 * (ambiguity, nullable rules, left and right recursion, llama.cpp's example grammars),
 * the regex compiler against PCRE2 (anchored whole match, UTF-8), error messages with
 * offsets, rollback. Run from the repository root (reads tests/data/grammar). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>

#include "base/file.h"
#include "grammar/grammar.h"
#include "harness.h"

/* Matches whole strings with a bytes-only matcher (no vocabulary). */
static int full_match(const hr_grammar *g, const char *s, size_t n) {
    hr_matcher *m;
    hr_err *e = hr_matcher_create(g, NULL, &m);
    if (e) {
        hr_err_free(e);
        return -1;
    }
    int r = hr_matcher_accept_bytes(m, s, n, NULL) && hr_matcher_is_accepting(m);
    hr_matcher_free(m);
    return r;
}

typedef struct {
    const char *text;
    int ok;
} sample;

static int check_all(const char *gbnf, const sample *s, int n, char *why, size_t cap) {
    hr_grammar *g;
    hr_err *e = hr_grammar_compile(gbnf, strlen(gbnf), &g);
    if (e) {
        snprintf(why, cap, "compile: %s", hr_err_msg(e));
        hr_err_free(e);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        int r = full_match(g, s[i].text, strlen(s[i].text));
        if (r != s[i].ok) {
            snprintf(why, cap, "%s on \"%s\": got %d", gbnf, s[i].text, r);
            hr_grammar_free(g);
            return 0;
        }
    }
    hr_grammar_free(g);
    return 1;
}

#define CHECK_SAMPLES(gbnf, ...)                                                                   \
    do {                                                                                           \
        const sample s_[] = {__VA_ARGS__};                                                         \
        char why_[512];                                                                            \
        HR_CHECK(check_all(gbnf, s_, (int)(sizeof s_ / sizeof s_[0]), why_, sizeof why_), "%s",    \
                 why_);                                                                            \
    } while (0)

static void test_regular_not_greedy(void) {
    CHECK_SAMPLES("root ::= [a-z]* \"x\"", {"abx", 1}, {"x", 1}, {"xx", 1}, {"ab", 0}, {"", 0},
                  {"abxy", 0});
    CHECK_SAMPLES("root ::= [a-z]+ [a-z]", {"ab", 1}, {"a", 0}, {"abc", 1});
    CHECK_SAMPLES("root ::= (\"a\" | \"ab\") \"c\"", {"ac", 1}, {"abc", 1}, {"abbc", 0});
}

static void test_recursion(void) {
    CHECK_SAMPLES("root ::= \"(\" root \")\" | \"\"", {"", 1}, {"()", 1}, {"(())", 1}, {"(()", 0},
                  {")(", 0});
    CHECK_SAMPLES(
        "root ::= e\ne ::= e \"+\" t | t\nt ::= t \"*\" f | f\nf ::= [0-9]+ | \"(\" e \")\"",
        {"1+2*3", 1}, {"(1+2)*3", 1}, {"1+", 0}, {"12*(3+4)+5", 1}, {"((1)", 0});
    CHECK_SAMPLES("root ::= a\na ::= \"x\" a | \"y\"", {"y", 1}, {"xxy", 1}, {"xx", 0});
    CHECK_SAMPLES("root ::= a\na ::= a \"x\" | \"y\"", {"y", 1}, {"yxx", 1}, {"xy", 0});
}

static void test_nullable_and_ambiguous(void) {
    CHECK_SAMPLES("root ::= a a a\na ::= \"x\"? | a \"y\"", {"", 1}, {"xxx", 1}, {"xyy", 1},
                  {"yx", 1}, {"xxxx", 0});
    CHECK_SAMPLES("root ::= s\ns ::= s s | \"a\" | \"\"", {"", 1}, {"a", 1}, {"aaaa", 1}, {"b", 0});
    CHECK_SAMPLES("root ::= x*\nx ::= \"a\" x \"b\" | \"\"", {"", 1}, {"ab", 1}, {"abaabb", 1},
                  {"aab", 0});
}

static void test_repetitions(void) {
    CHECK_SAMPLES("root ::= \"a\"{2,3}", {"a", 0}, {"aa", 1}, {"aaa", 1}, {"aaaa", 0});
    CHECK_SAMPLES("root ::= \"a\"{2}", {"aa", 1}, {"aaa", 0});
    CHECK_SAMPLES("root ::= \"a\"{2,}", {"a", 0}, {"aaaaa", 1});
    CHECK_SAMPLES("root ::= p{1,2}\np ::= \"(\" p* \")\"", {"()", 1}, {"()()", 1}, {"()()()", 0},
                  {"(())", 1});
    CHECK_SAMPLES("root ::= .+ \"!\"", {"h\xC3\xA9!", 1}, {"!", 0}, {"\xE2\x82\xAC!!", 1});
}

static char *load_data(const char *name, size_t *n) {
    char path[256];
    snprintf(path, sizeof path, "tests/data/grammar/%s", name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 16);
    *n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    if (buf) buf[*n] = 0;
    return buf;
}

static void check_file(const char *name, const sample *s, int n) {
    size_t len;
    char *text = load_data(name, &len);
    HR_CHECK(text, "cannot read tests/data/grammar/%s (run from the repository root)", name);
    char why[512];
    int ok = check_all(text, s, n, why, sizeof why);
    free(text);
    HR_CHECK(ok, "%s", why);
}

static void test_json_gbnf(void) {
    const sample s[] = {
        {"{}", 1},
        {"{\"a\": 1}", 1},
        {"{\"a\":[1, 2.5e3, -0, true, null, {\"b\": \"\\u00e9\\n\"}]}", 1},
        {"{\n  \"k\": \"v\"\n}", 1},
        {"{\"a\": 01}", 0},
        {"{\"a\" 1}", 0},
        {"[1]", 0},
        {"{\"a\": \"\x01\"}", 0},
        {"{\"a\": [1,]}", 0},
        {"{\"\xC3\xA9\": \"\xF0\x9F\x98\x80\"}", 1},
        {"{\"a\": 1} ", 1},
    };
    check_file("json.gbnf", s, (int)(sizeof s / sizeof s[0]));
}

static void test_arithmetic_and_list(void) {
    const sample a[] = {
        {"x = 1\n", 1}, {"(a+b)*3 = 4\ny = z\n", 1}, {"x = \n", 0}, {"1+ = 2\n", 0}};
    check_file("arithmetic.gbnf", a, 4);
    const sample l[] = {
        {"- one\n- two\n", 1}, {"- one\n-two\n", 0}, {"", 0}, {"- \xE2\x80\xA8\n", 0}};
    check_file("list.gbnf", l, 4);
}

static void check_error(const char *gbnf, const char *needle) {
    hr_grammar *g = NULL;
    hr_err *e = hr_grammar_compile(gbnf, strlen(gbnf), &g);
    HR_CHECK(e, "\"%s\" compiled", gbnf);
    int found = strstr(hr_err_msg(e), needle) != NULL;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", hr_err_msg(e));
    hr_err_free(e);
    HR_CHECK(found, "\"%s\": error \"%s\" lacks \"%s\"", gbnf, msg, needle);
}

static void test_gbnf_errors(void) {
    check_error("", "no rule named 'root'");
    check_error("root ::= foo", "undefined rule 'foo' referenced at offset 9");
    check_error("root ::= \"abc", "unterminated string starting at offset 9");
    check_error("root ::= [a-", "unterminated character class at offset 9");
    check_error("root ::= (\"a\"", "expected ')' at offset 13");
    check_error("root = \"a\"", "expected '::=' at offset 5");
    check_error("root ::= * \"a\"", "'*' at offset 9 has no preceding item");
    check_error("root ::= \"a\"{3,1}", "max < min");
    check_error("root ::= \"a\" )", "unexpected ')' at offset 13");
    check_error("root ::= \"\\q\"", "unknown escape \\q at offset 10");
    check_error("root ::= \"a\"\nroot ::= \"b\"", "defined twice");
    check_error("root ::= [z-a]", "range end before its start at offset 11");
    check_error("root ::= \"\\xZZ\"", "expected 2 hex digits");
    check_error("root ::= a\na ::= a \"x\"", "matches no string");
    check_error("root ::= /a(?=b)/", "lookaround at offset 11");
    check_error("root ::= /(a)\\1/", "backreference \\1 at offset 13");
    check_error("root ::= \"\xFF\"", "invalid UTF-8 at offset 10");
    check_error("root ::= \"a\"{99999999}", "over 100000");
    check_error("root ::= [^a]{100000}",
                "grammar too large: a regular part needs more than 400000 NFA states");
    check_error("root ::= \"a\"{30000}",
                "grammar too large: a regular part needs more than 20000 DFA states");
    check_error("root ::= \"<|im_end|>\" <|im_end|>", "unexpected '<' at offset 22");
}

static void test_regex_errors(void) {
    static const struct {
        const char *re, *needle;
    } cases[] = {
        {"a(?!b)", "lookaround at offset 1"},
        {"(?<=a)b", "lookaround at offset 0"},
        {"\\bfoo", "word boundary \\b at offset 0"},
        {"(a)\\1", "backreference \\1 at offset 3"},
        {"\\p{L}", "Unicode property escape"},
        {"a**", "nothing to repeat"},
        {"(ab", "unterminated group"},
        {"ab)", "unmatched ')' at offset 2"},
        {"[ab", "unterminated character class"},
        {"a^b", "anchor '^' at offset 1"},
        {"a$b", "anchor '$' at offset 1"},
        {"*a", "nothing to repeat at offset 0"},
        {"a{3,2}", "max < min"},
        {"a{1}{300000}", "nothing to repeat"},
        {"a{1}{3,2}", "nothing to repeat"},
        {"\\k<x>", "backreference \\k"},
        {"[z-a]", "range out of order"},
        {"[]|[]", "matches no string at all"}, /* two empty sets compared by structure */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hr_grammar *g = NULL;
        hr_err *e = hr_grammar_compile_regex(cases[i].re, strlen(cases[i].re), &g);
        HR_CHECK(e, "/%s/ compiled", cases[i].re);
        int found = strstr(hr_err_msg(e), cases[i].needle) != NULL;
        char msg[512];
        snprintf(msg, sizeof msg, "%s", hr_err_msg(e));
        hr_err_free(e);
        HR_CHECK(found, "/%s/: error \"%s\" lacks \"%s\"", cases[i].re, msg, cases[i].needle);
    }
}

/* PCRE2 anchored whole-string match, UTF mode: the reference for the regex compiler. */
static int pcre_match(pcre2_code *re, const char *s, size_t n) {
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    int rc = pcre2_match(re, (PCRE2_SPTR)s, n, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    return rc >= 0;
}

static const char *PATTERNS[] = {
    "abc",
    "a|b|cd",
    "a*b+c?",
    "(ab)*",
    "(?:a|bc){2,3}",
    "[a-c]+x",
    "[^a-c]+",
    "\\d{1,3}(\\.\\d+)?",
    "\\w+@\\w+\\.com",
    "[\\s\\S]*",
    ".*",
    "a.c",
    "^\\d+$",
    "(a|ab)(c|bcd)",
    "[\\u00e0-\\u00ff]+",
    "\\u00e9|\\u20ac",
    "[^\\u0000-\\u007f]",
    "x{0}",
    "(a{2}){2}",
    "[a\\-z]+",
    "a+?b",
    "[\\d\\-]+",
    "-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?",
    "\"([^\"\\\\]|\\\\.)*\"",
    "[\\x41-\\x43]{2}",
    "\\D\\W",
    "(\\uD83D\\uDE00)+",
    "[^\\n]",
    ".",
    "(|a)b",
    "a{2,}",
    "[.]",
    "\\/\\.\\+",
    "é+ü?",
    "[€-₿]",
    "(x|y|)+z",
    "[\\w.-]+",
    "ab{0,2}c",
};

static const char *STRINGS[] = {
    "",
    "a",
    "b",
    "ab",
    "abc",
    "cd",
    "abab",
    "abcbc",
    "bcbc",
    "aabbc",
    "xx",
    "ddx",
    "dd",
    "12",
    "123",
    "1234",
    "1.5",
    "12.",
    "a@b.com",
    "w_1@x.com",
    "\n",
    "a\nc",
    "abc\n",
    "abcd",
    "\xC3\xA0\xC3\xBF",
    "\xC3\xA9",
    "\xE2\x82\xAC",
    "\xC3\xA9\xC3\xA9",
    "\x7F",
    "aaaa",
    "aa",
    "-",
    "a-z",
    "aab",
    "-12.5e+3",
    "0",
    "01",
    "\"a\\\"b\"",
    "\"",
    "AB",
    "CA",
    "1!",
    "\xF0\x9F\x98\x80",
    "\xF0\x9F\x98\x80\xF0\x9F\x98\x80",
    "b",
    ".",
    "/.+",
    "\xC3\xA9\xC3\xBC",
    "\xE2\x82\xBF",
    "xyz",
    "z",
    "a.b-c",
    "abbc",
    "ac",
    "abbbc",
};

static void test_regex_vs_pcre2(void) {
    int checked = 0;
    for (size_t p = 0; p < sizeof PATTERNS / sizeof PATTERNS[0]; p++) {
        const char *pat = PATTERNS[p];
        hr_grammar *g;
        HR_CHECK_OK(hr_grammar_compile_regex(pat, strlen(pat), &g));
        int ec;
        PCRE2_SIZE eo;
        pcre2_code *re = pcre2_compile(
            (PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
            PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_ALT_BSUX, &ec, &eo, NULL);
        if (!re) { /* PCRE2 lacks \u{...} and surrogate pairs: those patterns are checked by hand */
            hr_grammar_free(g);
            continue;
        }
        for (size_t s = 0; s < sizeof STRINGS / sizeof STRINGS[0]; s++) {
            const char *str = STRINGS[s];
            int want = pcre_match(re, str, strlen(str)), got = full_match(g, str, strlen(str));
            if (want != got) {
                pcre2_code_free(re);
                hr_grammar_free(g);
                HR_CHECK(0, "/%s/ on \"%s\": pcre2 %d, ours %d", pat, str, want, got);
            }
            checked++;
        }
        pcre2_code_free(re);
        hr_grammar_free(g);
    }
    HR_CHECK(checked > 1500, "only %d pairs checked", checked);
}

static pcre2_code *pcre_of(const char *pat) {
    int ec;
    PCRE2_SIZE eo;
    return pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
                         PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_ALT_BSUX, &ec, &eo,
                         NULL);
}

/* `/p/ & /q/` (inside a sequence, to check the product's entry and exits too) accepts what
 * both patterns match, for pairs of the patterns above. */
static void test_intersection_vs_pcre2(void) {
    int n = (int)(sizeof PATTERNS / sizeof PATTERNS[0]), checked = 0;
    for (int i = 0; i < 2 * n; i++) {
        const char *p = PATTERNS[i % n], *q = PATTERNS[i < n ? (i + 1) % n : (i * 7 + 3) % n];
        pcre2_code *rp = pcre_of(p), *rq = pcre_of(q);
        if (!rp || !rq || strchr(p, '/') || strchr(q, '/')) {
            pcre2_code_free(rp);
            pcre2_code_free(rq);
            continue;
        }
        char gbnf[1024], why[1536] = "";
        snprintf(gbnf, sizeof gbnf, "root ::= \"<\" (/%s/ & /%s/) \">\"", p, q);
        hr_grammar *g = NULL;
        hr_err *e = hr_grammar_compile(gbnf, strlen(gbnf), &g);
        /* an empty intersection refuses the grammar; then no string may match both */
        int empty = e && strstr(hr_err_msg(e), "matches no string");
        if (e && !empty) snprintf(why, sizeof why, "%s: %s", gbnf, hr_err_msg(e));
        hr_err_free(e);
        for (size_t k = 0; !why[0] && k < sizeof STRINGS / sizeof STRINGS[0]; k++) {
            char t[512];
            const char *str = STRINGS[k];
            int len = snprintf(t, sizeof t, "<%s>", str);
            int want = pcre_match(rp, str, strlen(str)) && pcre_match(rq, str, strlen(str));
            int got = g && full_match(g, t, (size_t)len);
            if (want != got)
                snprintf(why, sizeof why, "%s on \"%s\": want %d, got %d", gbnf, str, want, got);
            checked++;
        }
        pcre2_code_free(rp);
        pcre2_code_free(rq);
        hr_grammar_free(g);
        HR_CHECK(!why[0], "%s", why);
    }
    HR_CHECK(checked > 1500, "only %d pairs checked", checked);
}

static void test_intersection(void) {
    CHECK_SAMPLES("root ::= /[a-z0-9]+/ & /.{2,3}/ & /[^5]*/", {"ab", 1}, {"a12", 1}, {"a", 0},
                  {"abcd", 0}, {"a5", 0}, {"A1", 0});
    CHECK_SAMPLES("root ::= (\"ab\" | \"abc\") & /a.c/ | \"z\"", {"abc", 1}, {"ab", 0}, {"z", 1});
    CHECK_SAMPLES("root ::= \"x\" (/a+/ & /b+/)? \"y\"", {"xy", 1}, {"xay", 0}, {"xby", 0});
    CHECK_SAMPLES("root ::= w (\",\" w)*\nw ::= [a-z]+ & /.{1,2}/", {"ab,c", 1}, {"abc", 0},
                  {"a,,b", 0});
    check_error("root ::= a & \"b\"\na ::= \"a\" a | \"a\"", "both sides of \"&\" must be regular");
    check_error("root ::= \"a\" & ", "");
}

static void test_complement(void) {
    CHECK_SAMPLES("root ::= ~\"ab\"", {"", 1}, {"a", 1}, {"ab", 0}, {"abc", 1}, {"\xC3\xA9", 1},
                  {"\xC3", 0});
    CHECK_SAMPLES("root ::= \"<\" (/[a-z]*/ & ~/.*bad.*/) \">\"", {"<good>", 1}, {"<>", 1},
                  {"<isbad>", 0}, {"<ba>", 1});
    CHECK_SAMPLES("root ::= (~[0-9] & .){2}", {"ab", 1}, {"a1", 0}, {"", 0});
    CHECK_SAMPLES("root ::= ~~/a+/", {"aa", 1}, {"b", 0});
    check_error("root ::= ~a\na ::= \"(\" a \")\" | \"\"", "\"~\" negates must be regular");
    check_error("root ::= ~ \"a\"", "'~' at offset 9 is not followed by an item");
}

static void test_regex_by_hand(void) {
    static const struct {
        const char *re, *s;
        int ok;
    } cases[] = {
        {"\\u{1F600}", "\xF0\x9F\x98\x80", 1},
        {"(\\uD83D\\uDE00)+", "\xF0\x9F\x98\x80\xF0\x9F\x98\x80", 1},
        {"\\u{1F600}", "\xF0\x9F\x98", 0},
        {".", "\n", 0},
        {".", "\xF0\x9F\x98\x80", 1},
        {"[^a]", "\xE2\x82\xAC", 1},
        {"a{0,1000}", "aaaaaaaaaa", 1},
        {"([])([])|b", "b", 1}, /* empty sets, compared by structure (fuzz_regex found UB) */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hr_grammar *g;
        HR_CHECK_OK(hr_grammar_compile_regex(cases[i].re, strlen(cases[i].re), &g));
        int got = full_match(g, cases[i].s, strlen(cases[i].s));
        hr_grammar_free(g);
        HR_CHECK(got == cases[i].ok, "/%s/ on \"%s\": got %d", cases[i].re, cases[i].s, got);
    }
}

static void test_regex_terminal_in_gbnf(void) {
    CHECK_SAMPLES("root ::= \"id=\" /[a-z][a-z0-9_]*/ (\",\" root)?", {"id=a1", 1},
                  {"id=a,id=b_2", 1}, {"id=1", 0}, {"id=a,", 0});
    CHECK_SAMPLES("root ::= /\\/[^\\/]*\\// \"!\"", {"/abc/!", 1}, {"/a/b/!", 0});
}

static void test_partial_bytes_and_rollback(void) {
    hr_grammar *g;
    const char *src = "root ::= \"\xE2\x82\xAC\" [0-9]+";
    HR_CHECK_OK(hr_grammar_compile(src, strlen(src), &g));
    hr_matcher *m;
    HR_CHECK_OK(hr_matcher_create(g, NULL, &m));
    size_t ok;
    HR_CHECK(hr_matcher_accept_bytes(m, "\xE2", 1, &ok) && ok == 1, "first byte of a code point");
    HR_CHECK(!hr_matcher_is_accepting(m), "accepting mid code point");
    HR_CHECK(hr_matcher_accept_bytes(m,
                                     "\x82\xAC"
                                     "1",
                                     3, &ok),
             "rest");
    HR_CHECK(hr_matcher_is_accepting(m), "not accepting after a digit");
    HR_CHECK(!hr_matcher_accept_bytes(m, "2x3", 3, &ok) && ok == 1, "rejection offset %zu", ok);
    HR_CHECK(hr_matcher_is_accepting(m), "a rejected run changed the state");
    HR_CHECK(hr_matcher_accept_bytes(m, "23", 2, &ok), "digits after a rejection");
    hr_matcher_rollback(m, 2);
    HR_CHECK(!hr_matcher_is_accepting(m), "rollback of 2 should leave \"\\xE2\"");
    HR_CHECK(hr_matcher_accept_bytes(m,
                                     "\x82\xAC"
                                     "9",
                                     3, &ok) &&
                 hr_matcher_is_accepting(m),
             "after rollback");
    hr_matcher_rollback(m, 100);
    HR_CHECK(!hr_matcher_is_accepting(m) && hr_matcher_accept_bytes(m,
                                                                    "\xE2\x82\xAC"
                                                                    "0",
                                                                    4, &ok),
             "rollback all");
    hr_matcher_free(m);
    hr_grammar_free(g);
}

static void test_bad_arguments(void) {
    hr_grammar *g = NULL;
    hr_matcher *m = NULL;
    hr_grammar_vocab *v = NULL;
    hr_err *e = hr_grammar_compile(NULL, 5, &g);
    HR_CHECK(e && strstr(hr_err_msg(e), "no text"), "compile(NULL, 5)");
    hr_err_free(e);
    e = hr_grammar_compile_regex(NULL, 3, &g);
    HR_CHECK(e && strstr(hr_err_msg(e), "no pattern"), "compile_regex(NULL, 3)");
    hr_err_free(e);
    e = hr_matcher_create(NULL, NULL, &m);
    HR_CHECK(e && strstr(hr_err_msg(e), "no grammar"), "matcher_create(NULL)");
    hr_err_free(e);
    e = hr_grammar_vocab_create(NULL, &v);
    HR_CHECK(e && strstr(hr_err_msg(e), "no tokenizer"), "vocab_create(NULL)");
    hr_err_free(e);
    HR_CHECK_OK(hr_grammar_compile_regex("", 0, &g)); /* the empty regex matches "" only */
    HR_CHECK(full_match(g, "", 0) == 1 && full_match(g, "a", 1) == 0, "empty regex");
    HR_CHECK_OK(hr_matcher_create(g, NULL, &m));
    HR_CHECK(!hr_matcher_accept(m, 0), "a bytes-only matcher took a token");
    hr_matcher_free(m);
    hr_grammar_free(g);
    hr_grammar_free(NULL);
    hr_matcher_free(NULL);
    hr_grammar_vocab_free(NULL);
}

int main(void) {
    HR_RUN(test_regular_not_greedy);
    HR_RUN(test_recursion);
    HR_RUN(test_nullable_and_ambiguous);
    HR_RUN(test_repetitions);
    HR_RUN(test_json_gbnf);
    HR_RUN(test_arithmetic_and_list);
    HR_RUN(test_gbnf_errors);
    HR_RUN(test_regex_errors);
    HR_RUN(test_regex_vs_pcre2);
    HR_RUN(test_intersection_vs_pcre2);
    HR_RUN(test_intersection);
    HR_RUN(test_complement);
    HR_RUN(test_regex_by_hand);
    HR_RUN(test_regex_terminal_in_gbnf);
    HR_RUN(test_partial_bytes_and_rollback);
    HR_RUN(test_bad_arguments);
    return hr_test_summary();
}
