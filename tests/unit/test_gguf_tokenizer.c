/* GGUF tokenizers against ../shared/fixtures/gguf/reference.json: brown-llama-8m's SPM vocab
 * (every score -1000) encodes every test text and the held-out text to llama.cpp's ids;
 * e2e-qwen3's gpt2/qwen2 vocab to llama.cpp's ids, which equal tokenizer.json's; both with
 * and without BOS; decoding gives the text back; the chat template comes from the file. */
#include "base/json.h"
#include "engine/tok_open.h"
#include "harness.h"
#include "model/gguf_write.h"

static json_t *ref;

static int ids_equal(const int32_t *ids, int n, const json_t *want) {
    if (n != (int)json_array_size(want)) return 0;
    for (int i = 0; i < n; i++)
        if (ids[i] != json_integer_value(json_array_get(want, (size_t)i))) return 0;
    return 1;
}

/* Every text of all_texts[set] encodes to its llamacpp_ids (with BOS) and llamacpp_ids_no_bos. */
static void texts(const char *file, const char *set) {
    hr_tokenizer *tok;
    HR_CHECK_OK(hr_tokenizer_open(hr_fixture(file), &tok));
    const json_t *all =
        json_object_get(json_object_get(json_object_get(ref, "tokenizer_check"), "all_texts"), set);
    size_t i, bad = 0;
    const json_t *c;
    json_array_foreach(all, i, c) {
        const char *text = json_string_value(json_object_get(c, "text"));
        for (int special = 0; special < 2; special++) {
            int32_t *ids = NULL;
            int n = 0;
            hr_err *e = hr_tokenizer_encode(tok, text, strlen(text), special, &ids, &n);
            const json_t *want =
                json_object_get(c, special ? "llamacpp_ids" : "llamacpp_ids_no_bos");
            if (e || !ids_equal(ids, n, want))
                printf("  %s: \"%.40s\" (special %d) differs\n", file, text, special), bad++;
            hr_err_free(e);
            free(ids);
        }
    }
    hr_tokenizer_free(tok);
    HR_CHECK(json_array_size(all) > 0 && bad == 0, "%zu of %zu encodings differ", bad,
             2 * json_array_size(all));
}

static void test_brown_texts(void) { texts("gguf/brown-llama-8m-F16.gguf", "A"); }
static void test_qwen3_texts(void) { texts("gguf/e2e-qwen3-Q8_0.gguf", "B"); }

static void test_brown_heldout(void) {
    json_t *mref;
    HR_CHECK_OK(hr_json_load_file(hr_fixture("models/brown-llama-8m/reference.json"), &mref));
    const char *text = json_string_value(json_object_get(mref, "heldout_text"));
    hr_tokenizer *tok;
    hr_err *e = hr_tokenizer_open(hr_fixture("gguf/brown-llama-8m-Q4_K_M.gguf"), &tok);
    int32_t *ids = NULL;
    int n = 0;
    char *back = NULL;
    if (!e) e = hr_tokenizer_encode(tok, text, strlen(text), 1, &ids, &n);
    if (!e) e = hr_tokenizer_decode(tok, ids, n, 1, &back);
    const json_t *want = json_object_get(
        json_object_get(json_object_get(ref, "tokenizer_check"), "brown-llama-8m heldout ids"),
        "llamacpp_ids");
    int same = !e && ids_equal(ids, n, want), round = back && !strcmp(back, text);
    free(ids);
    free(back);
    hr_tokenizer_free(e ? NULL : tok);
    json_decref(mref);
    HR_CHECK_OK(e);
    HR_CHECK(same, "held-out text: %d ids, llama.cpp %zu", n, json_array_size(want));
    HR_CHECK(round, "decoding the held-out ids does not give the text back");
}

static void test_qwen3_specials(void) {
    hr_tokenizer *tok;
    HR_CHECK_OK(hr_tokenizer_open(hr_fixture("gguf/e2e-qwen3-Q8_0.gguf"), &tok));
    const char *tpl = hr_tokenizer_chat_template(tok, NULL);
    int has_tpl = tpl && strstr(tpl, "<|im_start|>");
    int32_t im = hr_tokenizer_token_id(tok, "<|im_start|>");
    int special = hr_tokenizer_is_special(tok, im), eos = hr_tokenizer_eos_id(tok);
    hr_tokenizer_free(tok);
    HR_CHECK(has_tpl, "no chat template");
    HR_CHECK(im == 151644 && special && eos == 151645, "<|im_start|> %d (special %d), eos %d", im,
             special, eos);
}

/* A vocab without tokenizer.ggml.model is an error, not a crash (found by fuzz_gguf). */
static void test_missing_model_key(void) {
    hr_gguf_writer *w;
    HR_CHECK_OK(hr_gguf_writer_new(&w));
    const char *toks[2] = {"a", "b"};
    hr_err *e = hr_gguf_put_arr(w, "tokenizer.ggml.tokens", HR_GGUF_STRING, toks, 2);
    uint8_t *buf = NULL;
    size_t len = 0;
    if (!e) e = hr_gguf_writer_bytes(w, &buf, &len);
    hr_gguf_writer_free(w);
    hr_gguf *g = NULL;
    if (!e) e = hr_gguf_parse(buf, len, "mem", &g);
    hr_tokenizer *tok = NULL;
    hr_err *te = e ? NULL : hr_tokenizer_from_gguf(g, &tok);
    int named = te && strstr(hr_err_msg(te), "tokenizer.ggml.model") != NULL;
    hr_err_free(te);
    hr_tokenizer_free(tok);
    hr_gguf_close(g);
    free(buf);
    HR_CHECK_OK(e);
    HR_CHECK(named && !tok, "a vocab without tokenizer.ggml.model was not refused by name");
}

int main(void) {
    hr_err *e = hr_json_load_file(hr_fixture("gguf/reference.json"), &ref);
    if (e) {
        printf("FAIL setup: %s\n", hr_err_msg(e));
        return 1;
    }
    HR_RUN(test_brown_texts);
    HR_RUN(test_qwen3_texts);
    HR_RUN(test_brown_heldout);
    HR_RUN(test_qwen3_specials);
    HR_RUN(test_missing_model_key);
    json_decref(ref);
    return hr_test_summary();
}
