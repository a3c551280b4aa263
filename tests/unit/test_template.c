/* Template engine tests: the golden chat-template renders of the real tokenizers, the
 * jinja2-rendered language cases in template_cases.json, and error/limit behaviour. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "base/json.h"
#include "harness.h"
#include "template/template.h"

/* Renders src with ctx; returns the output or NULL with *err set (caller frees both). */
static char *render(const char *src, const json_t *ctx, hr_err **err, int *raised) {
    hr_template *t;
    char *out = NULL;
    *err = hr_template_parse(src, &t);
    if (*err) return NULL;
    *err = hr_template_render(t, ctx, &out, raised);
    hr_template_free(t);
    return out;
}

static int golden_failures(const char *name, int *count) {
    char path[256], dir[256];
    snprintf(path, sizeof path, "goldens/tokenizers/%s.json", name);
    snprintf(dir, sizeof dir, ".cache/tokenizers/%s", name);
    json_t *g;
    hr_err *e = hr_json_load_file(hr_fixture(path), &g);
    if (e) return printf("  %s\n", hr_err_msg(e)), hr_err_free(e), 1;
    hr_chat_template ct;
    hr_err *load_err = hr_chat_template_load(dir, NULL, &ct);
    int fails = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(g, "templates"), i, c) {
        const char *want = json_string_value(json_object_get(c, "rendered"));
        const char *want_err = json_string_value(json_object_get(c, "error"));
        char *out = NULL;
        int raised = 0;
        hr_err *re = load_err ? hr_errf("%s", hr_err_msg(load_err))
                              : hr_chat_template_apply(&ct, c, &out, &raised);
        const char *colon = want_err ? strstr(want_err, ": ") : NULL;
        int ok =
            want ? out && !strcmp(out, want) : re && colon && !strcmp(hr_err_msg(re), colon + 2);
        if (ok && want_err && !strncmp(want_err, "TemplateError", 13)) ok = raised;
        if (!ok)
            printf("  %s/%s: got %s\n", name, json_string_value(json_object_get(c, "name")),
                   out ? out : hr_err_msg(re));
        fails += !ok;
        (*count)++;
        free(out);
        hr_err_free(re);
    }
    if (!load_err) hr_chat_template_free(&ct);
    hr_err_free(load_err);
    json_decref(g);
    return fails;
}

static void test_goldens(void) {
    HR_CHECK(system("bash scripts/fetch-tokenizers.sh >/dev/null") == 0,
             "fetch-tokenizers.sh failed");
    const char *names[] = {"qwen3", "llama3_1", "gemma3", "llama2"};
    int fails = 0, count = 0;
    for (int i = 0; i < 4; i++)
        fails += golden_failures(names[i], &count);
    printf("  golden template cases: %d/%d\n", count - fails, count);
    HR_CHECK(fails == 0 && count >= 28, "%d of %d golden cases differ", fails, count);
}

static void test_jinja_cases(void) {
    json_t *root;
    HR_CHECK_OK(hr_json_load_file("tests/unit/template_cases.json", &root));
    const json_t *ctx = json_object_get(root, "ctx");
    int fails = 0, count = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(root, "cases"), i, c) {
        const char *src = json_string_value(json_object_get(c, "src"));
        const char *want = json_string_value(json_object_get(c, "out"));
        const char *want_err = json_string_value(json_object_get(c, "err"));
        hr_err *e;
        int raised;
        char *out = render(src, ctx, &e, &raised);
        size_t el = e ? strlen(hr_err_msg(e)) : 0, wl = want_err ? strlen(want_err) : 0;
        int ok = want ? out && !strcmp(out, want)
                      : e && el >= wl && !strcmp(hr_err_msg(e) + el - wl, want_err);
        if (!ok)
            printf("  case %zu %s\n    want %s\n    got  %s\n", i, src, want ? want : want_err,
                   out ? out : hr_err_msg(e));
        fails += !ok;
        count++;
        free(out);
        hr_err_free(e);
    }
    json_decref(root);
    printf("  jinja2 cases: %d/%d\n", count - fails, count);
    HR_CHECK(fails == 0, "%d of %d cases differ from jinja2", fails, count);
}

static void check_syntax(const char *src, const char *want) {
    hr_template *t = NULL;
    hr_err *e = hr_template_parse(src, &t);
    if (!e) {
        hr_template_free(t);
        printf("  no error for %s\n", src);
        hr_t_cur_failed = 1;
        return;
    }
    if (!strstr(hr_err_msg(e), want)) {
        printf("  %s: got \"%s\", want \"%s\"\n", src, hr_err_msg(e), want);
        hr_t_cur_failed = 1;
    }
    hr_err_free(e);
}

static void test_syntax_errors(void) {
    check_syntax("{% if x %}", "line 1, column 11: unexpected end of template, expected 'endif'");
    check_syntax("a\nb {{ 1 + }}", "line 2, column 10:");
    check_syntax("{% for x in %}{% endfor %}", "line 1, column 13:");
    check_syntax("{{ x | nosuchfilter }}", "No filter named 'nosuchfilter'");
    check_syntax("{{ x is nosuchtest }}", "No test named 'nosuchtest'");
    check_syntax("{% frob %}", "unknown tag 'frob'");
    check_syntax("{{ 'abc }}", "unterminated string");
    check_syntax("{# open", "missing end of comment");
    check_syntax("{% endif %}", "unknown tag 'endif'");
    check_syntax("\n\n   {{ x $ }}", "line 3, column 9: unexpected character '$'");
}

static void test_raise_flag(void) {
    hr_err *e;
    int raised = 0;
    json_t *ctx = json_pack("{s:i}", "x", 3);
    char *out = render("{{ raise_exception('Bad: ' ~ x) }}", ctx, &e, &raised);
    json_decref(ctx);
    HR_CHECK(!out && e, "expected an error");
    HR_CHECK(!strcmp(hr_err_msg(e), "Bad: 3") && raised, "got \"%s\" raised=%d", hr_err_msg(e),
             raised);
    hr_err_free(e);
    out = render("{{ x.y.z }}", NULL, &e, &raised);
    HR_CHECK(e && !raised, "undefined error must not be flagged as raised");
    HR_CHECK(!strcmp(hr_err_msg(e), "'x' is undefined"), "got %s", hr_err_msg(e));
    hr_err_free(e);
}

static void expect_error(const char *src, const char *want) {
    hr_err *e;
    int raised;
    char *out = render(src, NULL, &e, &raised);
    if (out || !e || !strstr(hr_err_msg(e), want)) {
        printf("  %s: got %s\n", src, out ? out : e ? hr_err_msg(e) : "?");
        hr_t_cur_failed = 1;
    }
    free(out);
    hr_err_free(e);
}

static void test_limits(void) {
    expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
                 "macro calls nested deeper");
    expect_error("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
                 "");
    expect_error(
        "{% for a in range(100000) %}{% for b in range(100000) %}{{ 1 }}{% endfor %}{% endfor %}",
        "");
    expect_error("{{ 'x' * 1000000000 }}", "memory");
    expect_error("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ "
                 "ns.s %}{% endfor %}",
                 "");
    expect_error("{{ 9223372036854775807 + 1 }}", "integer overflow");
    char deep[2000] = "{{ ";
    for (int i = 0; i < 600; i++)
        strcat(deep, "-");
    strcat(deep, "1 }}");
    hr_template *t;
    hr_err *e = hr_template_parse(deep, &t);
    HR_CHECK(e && strstr(hr_err_msg(e), "nested too deeply"), "deep nesting: %s",
             e ? hr_err_msg(e) : "parsed");
    hr_err_free(e);
}

static void test_context_types(void) {
    json_t *ctx =
        json_pack("{s:f, s:I, s:s, s:[]}", "f", 0.5, "i", (json_int_t)1 << 40, "s", "日本語", "e");
    hr_err *e;
    char *out = render("{{ f }} {{ i }} {{ s|length }} {{ s[1] }} {{ s|tojson }} {{ "
                       "s|tojson(ensure_ascii=true) }} {{ e }}",
                       ctx, &e, NULL);
    json_decref(ctx);
    HR_CHECK(out, "%s", hr_err_msg(e));
    HR_CHECK(!strcmp(out, "0.5 1099511627776 3 本 \"日本語\" \"\\u65e5\\u672c\\u8a9e\" []"),
             "got %s", out);
    free(out);
}

static void test_chat_template_dir(void) {
    char dir[] = "/tmp/hr_tpl_XXXXXX";
    HR_CHECK(mkdtemp(dir), "mkdtemp");
    char *cfg = hr_path_join(dir, "tokenizer_config.json"),
         *jinja = hr_path_join(dir, "chat_template.jinja");
    const char *cfg_json =
        "{\"bos_token\": {\"content\": \"<s>\"}, \"eos_token\": \"</s>\", "
        "\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"}, {\"name\": "
        "\"default\", \"template\": \"{{ bos_token }}D{{ eos_token }}{{ extra }}\"}]}";
    HR_CHECK_OK(hr_write_atomic(cfg, cfg_json, strlen(cfg_json)));
    hr_chat_template ct;
    json_t *req = json_pack("{s:[], s:{s:s}}", "messages", "kwargs", "extra", "!");
    char *out = NULL;
    HR_CHECK_OK(hr_chat_template_load(dir, NULL, &ct));
    hr_err *e = hr_chat_template_apply(&ct, req, &out, NULL);
    hr_chat_template_free(&ct);
    HR_CHECK(!e && !strcmp(out, "<s>D</s>!"), "got %s", out ? out : hr_err_msg(e));
    free(out);
    HR_CHECK_OK(hr_write_atomic(jinja, "J{{ messages|length }}\n", 22));
    HR_CHECK_OK(hr_chat_template_load(dir, NULL, &ct));
    e = hr_chat_template_apply(&ct, req, &out, NULL);
    hr_chat_template_free(&ct);
    HR_CHECK(!e && !strcmp(out, "J0"), "got %s", out ? out : hr_err_msg(e));
    free(out);
    json_decref(req);
    remove(cfg);
    remove(jinja);
    rmdir(dir);
    free(cfg);
    free(jinja);
}

int main(void) {
    HR_RUN(test_goldens);
    HR_RUN(test_jinja_cases);
    HR_RUN(test_syntax_errors);
    HR_RUN(test_raise_flag);
    HR_RUN(test_limits);
    HR_RUN(test_context_types);
    HR_RUN(test_chat_template_dir);
    return hr_test_summary();
}
