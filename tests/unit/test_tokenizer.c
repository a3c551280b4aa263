/* Tokenizer tests: every public golden case of the 4 real tokenizers (ids, ids with
 * special tokens, decode, encode of rendered chat templates), round trips on random
 * Unicode, the incremental detokenizer against full decode, malformed tokenizer.json
 * files, and brown-llama-8m's reference ids. Needs scripts/fetch-tokenizers.sh (run here). */
#include <jansson.h>
#include <stdint.h>
#include <unistd.h>
#include <utf8proc.h>

#include "base/file.h"
#include "base/json.h"
#include "harness.h"
#include "tokenizer/tokenizer.h"

static const char *names[] = {"qwen3", "llama3_1", "gemma3", "llama2"};
static hr_tokenizer *toks[4];

static const char *tok_dir(const char *name) {
    static char buf[256];
    snprintf(buf, sizeof buf, ".cache/tokenizers/%s", name);
    return buf;
}

static int prefix_only; /* brown-llama's reference keeps only the first 512 ids */

static int ids_equal(const int32_t *a, int na, json_t *b) {
    if (prefix_only && (size_t)na > json_array_size(b)) na = (int)json_array_size(b);
    if (!json_is_array(b) || (size_t)na != json_array_size(b)) return 0;
    for (int i = 0; i < na; i++)
        if (a[i] != json_integer_value(json_array_get(b, (size_t)i))) return 0;
    return 1;
}

static void print_ids(const char *what, const int32_t *v, int n) {
    printf("     %s:", what);
    for (int i = 0; i < n && i < 40; i++)
        printf(" %d", v[i]);
    printf("\n");
}

/* Runs one encode check; returns 1 on a match and prints the difference otherwise. */
static int check_encode(hr_tokenizer *t, const char *name, const char *text, int add,
                        json_t *want) {
    int32_t *ids;
    int n;
    hr_err *e = hr_tokenizer_encode(t, text, strlen(text), add, &ids, &n);
    if (e) {
        printf("     %s: encode error: %s\n", name, hr_err_msg(e));
        hr_err_free(e);
        return 0;
    }
    int ok = ids_equal(ids, n, want);
    if (!ok) {
        char *w = json_dumps(want, JSON_COMPACT);
        printf("     %s: encode(add_special=%d) of \"%.60s\" differs; want %.300s\n", name, add,
               text, w);
        print_ids("got", ids, n);
        free(w);
    }
    free(ids);
    return ok;
}

static int check_decode(hr_tokenizer *t, const char *name, json_t *ids, const char *want) {
    int n = (int)json_array_size(ids);
    int32_t *v = malloc(sizeof *v * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        v[i] = (int32_t)json_integer_value(json_array_get(ids, (size_t)i));
    char *got = NULL;
    hr_err *e = hr_tokenizer_decode(t, v, n, 0, &got);
    int ok = !e && strcmp(got, want) == 0;
    if (!ok)
        printf("     %s: decode: got \"%.80s\" want \"%.80s\" %s\n", name, got ? got : "", want,
               e ? hr_err_msg(e) : "");
    hr_err_free(e);
    free(got);
    free(v);
    return ok;
}

static void golden(int k) {
    const char *name = names[k];
    char path[256];
    snprintf(path, sizeof path, "goldens/tokenizers/%s.json", name);
    json_t *g;
    HR_CHECK_OK(hr_json_load_file(hr_fixture(path), &g));
    int total = 0, pass = 0, tpl_total = 0, tpl_pass = 0;
    json_t *texts = json_object_get(g, "texts"), *tpls = json_object_get(g, "templates");
    for (size_t i = 0; i < json_array_size(texts); i++) {
        json_t *c = json_array_get(texts, i);
        const char *text = json_string_value(json_object_get(c, "text"));
        total += 3;
        pass += check_encode(toks[k], name, text, 0, json_object_get(c, "ids"));
        pass += check_encode(toks[k], name, text, 1, json_object_get(c, "ids_with_special"));
        pass += check_decode(toks[k], name, json_object_get(c, "ids"),
                             json_string_value(json_object_get(c, "decoded")));
    }
    for (size_t i = 0; i < json_array_size(tpls); i++) {
        json_t *c = json_array_get(tpls, i);
        const char *r = json_string_value(json_object_get(c, "rendered"));
        json_t *ids = json_incref(json_object_get(c, "ids"));
        if (!r || !ids) continue;
        tpl_total++;
        tpl_pass += check_encode(toks[k], name, r, 0, ids);
        json_decref(ids);
    }
    printf("# %s: %d/%d text checks, %d/%d template encodes\n", name, pass, total, tpl_pass,
           tpl_total);
    json_decref(g);
    HR_CHECK(pass == total && tpl_pass == tpl_total, "%s: golden mismatches", name);
}

static void test_golden_qwen3(void) { golden(0); }
static void test_golden_llama3_1(void) { golden(1); }
static void test_golden_gemma3(void) { golden(2); }
static void test_golden_llama2(void) { golden(3); }

/* A random string of characters from scripts the tokenizers see in practice. */
static size_t random_text(char *out, size_t cap, unsigned *seed) {
    static const uint32_t ranges[][2] = {
        {'a', 'z'},     {'A', 'Z'},       {'0', '9'},       {' ', ' '},         {'\n', '\n'},
        {'\t', '\t'},   {'(', '/'},       {':', '@'},       {0xC0, 0x17F},      {0x300, 0x36F},
        {0x400, 0x4FF}, {0x4E00, 0x9FFF}, {0x3040, 0x30FF}, {0x1F300, 0x1F6FF}, {0x600, 0x6FF},
        {0x900, 0x97F}, {0xAC00, 0xD7A3}, {0x2000, 0x206F}};
    size_t n = 0;
    int len = rand_r(seed) % 40;
    for (int i = 0; i < len && n + 4 < cap; i++) {
        const uint32_t *r = ranges[rand_r(seed) % (sizeof ranges / sizeof ranges[0])];
        uint32_t cp = r[0] + (uint32_t)rand_r(seed) % (r[1] - r[0] + 1);
        if (cp == '.' || cp == ',' || cp == '\'' || cp == '?' || cp == '!') cp = 'x';
        n += (size_t)utf8proc_encode_char((utf8proc_int32_t)cp, (utf8proc_uint8_t *)out + n);
    }
    out[n] = 0;
    return n;
}

/* decode(encode(s)) == s (NFC(s) for Qwen, whose normalizer is NFC). */
static void test_round_trip(void) {
    unsigned seed = 1234;
    char s[256];
    for (int k = 0; k < 4; k++) {
        for (int it = 0; it < 400; it++) {
            size_t n = random_text(s, sizeof s, &seed);
            int32_t *ids;
            int nid;
            char *back;
            HR_CHECK_OK(hr_tokenizer_encode(toks[k], s, n, 0, &ids, &nid));
            hr_err *e = hr_tokenizer_decode(toks[k], ids, nid, 0, &back);
            free(ids);
            HR_CHECK_OK(e);
            char *want = k == 0 ? (char *)utf8proc_NFC((const utf8proc_uint8_t *)s) : strdup(s);
            int ok = strcmp(back, want) == 0;
            if (!ok) printf("     %s: \"%s\" -> \"%s\"\n", names[k], want, back);
            free(back);
            free(want);
            HR_CHECK(ok, "%s: round trip differs", names[k]);
        }
    }
}

static void stream_one(hr_tokenizer *t, const int32_t *ids, int n, int skip, const char *name) {
    hr_detok_stream *st;
    HR_CHECK_OK(hr_detok_stream_create(t, skip, &st));
    size_t cap = 1 << 16, used = 0;
    char *acc = malloc(cap);
    const char *piece;
    size_t len;
    for (int i = 0; i <= n; i++) {
        hr_err *e = i < n ? hr_detok_stream_push(st, ids[i], &piece, &len)
                          : hr_detok_stream_flush(st, &piece, &len);
        if (e) {
            hr_detok_stream_destroy(st);
            free(acc);
            HR_CHECK_OK(e);
        }
        if (used + len + 1 > cap) acc = realloc(acc, cap = (used + len + 1) * 2);
        memcpy(acc + used, piece, len);
        used += len;
    }
    acc[used] = 0;
    hr_detok_stream_destroy(st);
    char *full;
    HR_CHECK_OK(hr_tokenizer_decode(t, ids, n, skip, &full));
    int ok = strcmp(full, acc) == 0;
    if (!ok) {
        printf("     %s skip=%d: stream \"%.100s\" vs full \"%.100s\"\n     tokens:", name, skip,
               acc, full);
        for (int i = 0; i < n; i++)
            printf(" %d=%s", ids[i], hr_tokenizer_token_str(t, ids[i]));
        printf("\n");
    }
    free(full);
    free(acc);
    HR_CHECK(ok, "%s: streamed text differs from full decode", name);
}

/* Random id streams (biased to low ids, which are bytes and short pieces) and the ids of
 * real text, fed one at a time. */
static void test_detok_stream(void) {
    unsigned seed = 99;
    int32_t ids[64];
    for (int k = 0; k < 4; k++) {
        int V = hr_tokenizer_vocab_size(toks[k]);
        stream_one(toks[k], ids, 0, 0, names[k]); /* flushed with nothing pushed (fuzz_tokenize) */
        if (hr_t_cur_failed) return;
        for (int it = 0; it < 300; it++) {
            int n = 1 + rand_r(&seed) % 60;
            for (int i = 0; i < n; i++) {
                int r = rand_r(&seed) % 4;
                ids[i] = r == 0   ? rand_r(&seed) % V
                         : r == 1 ? rand_r(&seed) % 300
                                  : rand_r(&seed) % 5000;
                if (!hr_tokenizer_token_str(toks[k], ids[i])) ids[i] = 1;
            }
            stream_one(toks[k], ids, n, it % 2, names[k]);
            if (hr_t_cur_failed) return;
        }
        char s[256];
        for (int it = 0; it < 100; it++) {
            size_t n = random_text(s, sizeof s, &seed);
            int32_t *v;
            int nv;
            HR_CHECK_OK(hr_tokenizer_encode(toks[k], s, n, 1, &v, &nv));
            stream_one(toks[k], v, nv, it % 2, names[k]);
            free(v);
            if (hr_t_cur_failed) return;
        }
    }
}

static void test_special_info(void) {
    hr_tokenizer *q = toks[0], *l3 = toks[1], *g = toks[2], *l2 = toks[3];
    HR_CHECK(hr_tokenizer_token_id(q, "<|im_end|>") == 151645, "qwen3 <|im_end|>");
    HR_CHECK(hr_tokenizer_eos_id(q) == 151645 && hr_tokenizer_bos(q) == NULL, "qwen3 eos/bos");
    HR_CHECK(hr_tokenizer_bos_id(l3) == 128000 && strcmp(hr_tokenizer_eos(l3), "<|eot_id|>") == 0,
             "llama3 bos/eos");
    HR_CHECK(hr_tokenizer_bos_id(g) == 2 && hr_tokenizer_bos_id(l2) == 1 &&
                 hr_tokenizer_eos_id(l2) == 2,
             "bos ids");
    HR_CHECK(hr_tokenizer_chat_template(q, NULL) &&
                 strstr(hr_tokenizer_chat_template(q, NULL), "im_start"),
             "qwen3 template");
    HR_CHECK(hr_tokenizer_chat_template(l2, NULL) == NULL, "llama2 has no template");
    HR_CHECK(hr_tokenizer_vocab_size(q) == 151669, "qwen3 vocab size %d",
             hr_tokenizer_vocab_size(q));
    HR_CHECK(hr_tokenizer_is_special(q, 151645) && !hr_tokenizer_is_special(q, 9707), "is_special");
    char *s;
    int32_t ids[] = {151644, 872, 151645};
    HR_CHECK_OK(hr_tokenizer_decode(q, ids, 3, 1, &s));
    HR_CHECK(strcmp(s, "user") == 0, "skip_special decode gave \"%s\"", s);
    free(s);
    int32_t bad[] = {5, 999999};
    hr_err *e = hr_tokenizer_decode(q, bad, 2, 0, &s);
    HR_CHECK(e && strstr(hr_err_msg(e), "out of range"), "out-of-range id must fail");
    hr_err_free(e);
}

/* Invalid UTF-8 is repaired to U+FFFD first (as Python's errors="replace" would). */
static void test_invalid_utf8(void) {
    const char bad[] = "ab\xE4\xB8 c\xFF\x80\xED\xA0\x80z\xF0\x9F";
    const char fixed[] =
        "ab\xEF\xBF\xBD c\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz\xEF\xBF\xBD";
    for (int k = 0; k < 4; k++) {
        int32_t *a, *b;
        int na, nb;
        HR_CHECK_OK(hr_tokenizer_encode(toks[k], bad, sizeof bad - 1, 1, &a, &na));
        HR_CHECK_OK(hr_tokenizer_encode(toks[k], fixed, sizeof fixed - 1, 1, &b, &nb));
        int same = na == nb && memcmp(a, b, sizeof *a * (size_t)na) == 0;
        free(a);
        free(b);
        HR_CHECK(same, "%s: invalid UTF-8 not repaired like U+FFFD", names[k]);
    }
}

static void test_brown_llama(void) {
    json_t *ref;
    hr_tokenizer *t;
    HR_CHECK_OK(hr_json_load_file(hr_fixture("models/brown-llama-8m/reference.json"), &ref));
    hr_err *e = hr_tokenizer_load(hr_fixture("models/brown-llama-8m"), &t);
    if (e) json_decref(ref);
    HR_CHECK_OK(e);
    prefix_only = 1;
    int ok = check_encode(t, "brown-llama", json_string_value(json_object_get(ref, "heldout_text")),
                          1, json_object_get(ref, "heldout_ids"));
    prefix_only = 0;
    json_t *samples = json_object_get(ref, "greedy_samples");
    for (size_t i = 0; i < json_array_size(samples); i++) {
        json_t *s = json_array_get(samples, i);
        ok &= check_encode(t, "brown-llama", json_string_value(json_object_get(s, "prompt")), 1,
                           json_object_get(s, "prompt_ids"));
    }
    hr_tokenizer_free(t);
    json_decref(ref);
    HR_CHECK(ok, "brown-llama-8m reference ids differ");
}

/* Writes dir/tokenizer.json with body and expects a load error mentioning want. */
static int malformed(const char *dir, const char *body, const char *want) {
    char *path = hr_path_join(dir, "tokenizer.json");
    hr_err *e = hr_write_atomic(path, body, strlen(body));
    free(path);
    if (e) {
        hr_err_free(e);
        return 0;
    }
    hr_tokenizer *t = NULL;
    e = hr_tokenizer_load(dir, &t);
    int ok = e && t == NULL && strstr(hr_err_msg(e), want);
    if (!ok) printf("     want error with \"%s\", got %s\n", want, e ? hr_err_msg(e) : "success");
    hr_err_free(e);
    hr_tokenizer_free(t);
    return ok;
}

static void test_malformed(void) {
    char dir[] = "/tmp/hr_tok_XXXXXX";
    HR_CHECK(mkdtemp(dir), "mkdtemp");
    const char *vocab = "\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}";
    char buf[1024];
    int ok = 1;
    hr_tokenizer *t = NULL;
    hr_err *e = hr_tokenizer_load(dir, &t);
    ok &= e && strstr(hr_err_msg(e), "no such file") != NULL;
    hr_err_free(e);
    ok &= malformed(dir, "{\"model\": {", "invalid JSON");
    ok &= malformed(dir, "[1, 2]", "not a JSON object");
    ok &= malformed(dir, "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}",
                    "unsupported model type \"Unigram\"");
    ok &= malformed(dir, "{\"model\": {\"type\": \"BPE\", \"merges\": []}}",
                    "model.vocab is missing");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s, \"merges\": [\"a c\"]}}", vocab);
    ok &= malformed(dir, buf, "missing from the vocab");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s, \"merges\": [7]}}", vocab);
    ok &= malformed(dir, buf, "merges[0]");
    snprintf(buf, sizeof buf,
             "{\"normalizer\": {\"type\": \"Precompiled\"}, \"model\": {\"type\": \"BPE\", %s, "
             "\"merges\": []}}",
             vocab);
    ok &= malformed(dir, buf, "unsupported normalizer \"Precompiled\"");
    snprintf(buf, sizeof buf,
             "{\"pre_tokenizer\": {\"type\": \"Whitespace\"}, \"model\": {\"type\": \"BPE\", %s, "
             "\"merges\": []}}",
             vocab);
    ok &= malformed(dir, buf, "unsupported pre-tokenizer \"Whitespace\"");
    snprintf(buf, sizeof buf,
             "{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(a\"}, "
             "\"behavior\": \"Isolated\"}, \"model\": {\"type\": \"BPE\", %s, \"merges\": []}}",
             vocab);
    ok &= malformed(dir, buf, "regex");
    snprintf(
        buf, sizeof buf,
        "{\"decoder\": {\"type\": \"CTC\"}, \"model\": {\"type\": \"BPE\", %s, \"merges\": []}}",
        vocab);
    ok &= malformed(dir, buf, "unsupported decoder \"CTC\"");
    snprintf(buf, sizeof buf,
             "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -4}, \"merges\": []}}");
    ok &= malformed(dir, buf, "not a valid id");
    /* A minimal valid one loads and encodes. */
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s, \"merges\": [[\"a\", \"b\"]]}}",
             vocab);
    char *path = hr_path_join(dir, "tokenizer.json");
    HR_CHECK_OK(hr_write_atomic(path, buf, strlen(buf)));
    HR_CHECK_OK(hr_tokenizer_load(dir, &t));
    int32_t *ids;
    int n;
    HR_CHECK_OK(hr_tokenizer_encode(t, "abba", 4, 1, &ids, &n));
    ok &= n == 3 && ids[0] == 2 && ids[1] == 1 && ids[2] == 0;
    free(ids);
    hr_tokenizer_free(t);
    unlink(path);
    free(path);
    rmdir(dir);
    HR_CHECK(ok, "malformed tokenizer.json cases");
}

int main(void) {
    if (system("bash scripts/fetch-tokenizers.sh >/dev/null") != 0) {
        printf("FAIL fetch: scripts/fetch-tokenizers.sh failed\n# 0 passed, 1 failed\n");
        return 1;
    }
    for (int k = 0; k < 4; k++) {
        hr_err *e = hr_tokenizer_load(tok_dir(names[k]), &toks[k]);
        if (e) {
            printf("FAIL load: %s\n# 0 passed, 1 failed\n", hr_err_msg(e));
            return 1;
        }
    }
    HR_RUN(test_golden_qwen3);
    HR_RUN(test_golden_llama3_1);
    HR_RUN(test_golden_gemma3);
    HR_RUN(test_golden_llama2);
    HR_RUN(test_special_info);
    HR_RUN(test_round_trip);
    HR_RUN(test_detok_stream);
    HR_RUN(test_invalid_utf8);
    HR_RUN(test_brown_llama);
    HR_RUN(test_malformed);
    for (int k = 0; k < 4; k++)
        hr_tokenizer_free(toks[k]);
    return hr_test_summary();
}
