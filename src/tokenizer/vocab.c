/* hr_tokenizer from a GGUF vocabulary (hr_tok_vocab): the tokenizer.json and
 * tokenizer_config.json it stands for are built and go through the one loader, so a
 * GGUF tokenizer runs the same encode and decode code. "gpt2" vocabs become byte-level BPE
 * with the pre-tokenizer llama.cpp uses for tokenizer.ggml.pre; "llama" vocabs become
 * SentencePiece-style pieces (a space prefix, spaces as U+2581, byte fallback) merged by
 * score as llama.cpp does (spm.c). Control tokens are special added tokens, user-defined
 * ones plain added tokens. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

enum { T_NORMAL = 1, T_UNKNOWN, T_CONTROL, T_USER, T_UNUSED, T_BYTE };

#define SPIECE "\xE2\x96\x81"

static const struct {
    const char *pre, *regex;
    int ignore_merges;
} pres[] = {
    {"qwen2",
     "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{"
     "N}| ?"
     "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     0},
    {"llama-bpe",
     "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
     "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     1},
    {"gpt2", NULL, 0},
    {"default", NULL, 0},
};

static int type_of(const hr_tok_vocab *v, int i) { return v->types ? v->types[i] : T_NORMAL; }

static json_t *str(hr_tok_str s) { return json_stringn(s.p, s.len); }

static hr_err *tokens(const hr_tok_vocab *v, json_t *vocab, json_t *added) {
    for (int i = 0; i < v->n_tokens; i++) {
        int ty = type_of(v, i);
        json_t *s = str(v->tokens[i]);
        if (!s) return hr_errf("GGUF token %d is not valid UTF-8", i);
        if (ty == T_CONTROL || ty == T_USER) {
            json_t *a = json_pack("{s:i, s:o, s:b, s:b}", "id", i, "content", s, "special",
                                  ty == T_CONTROL, "normalized", 0);
            if (!a || json_array_append_new(added, a)) return hr_err_oom();
        } else {
            int bad =
                json_object_setn_new(vocab, v->tokens[i].p, v->tokens[i].len, json_integer(i));
            json_decref(s);
            if (bad) return hr_errf("GGUF token %d cannot be a vocab key", i);
        }
    }
    return NULL;
}

static json_t *pre_tokenizer(const hr_tok_vocab *v, hr_err **e, int *ignore_merges) {
    const char *pre = v->pre ? v->pre : "default";
    for (size_t i = 0; i < sizeof pres / sizeof *pres; i++) {
        if (strcmp(pre, pres[i].pre)) continue;
        *ignore_merges = pres[i].ignore_merges;
        if (!pres[i].regex)
            return json_pack("{s:s, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", 0,
                             "use_regex", 1);
        return json_pack("{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, {s:s, s:b, s:b}]}", "type", "Sequence",
                         "pretokenizers", "type", "Split", "pattern", "Regex", pres[i].regex,
                         "behavior", "Isolated", "invert", 0, "type", "ByteLevel",
                         "add_prefix_space", 0, "use_regex", 0);
    }
    *e = hr_errf(
        "GGUF tokenizer.ggml.pre \"%s\" is not supported (qwen2, llama-bpe, gpt2, default)", pre);
    return NULL;
}

/* The tokenizer.json of a gpt2 vocab: BPE with merges, byte-level. */
static hr_err *gpt2(const hr_tok_vocab *v, json_t *j, json_t *model) {
    hr_err *e = NULL;
    int ignore = 0;
    json_t *pre = pre_tokenizer(v, &e, &ignore), *merges = json_array();
    if (e || !pre || !merges) {
        json_decref(pre);
        json_decref(merges);
        return e ? e : hr_err_oom();
    }
    for (int i = 0; i < v->n_merges; i++) {
        json_t *m = str(v->merges[i]);
        if (!m || json_array_append_new(merges, m)) {
            json_decref(merges);
            json_decref(pre);
            return hr_errf("GGUF merge %d is not valid UTF-8", i);
        }
    }
    json_object_set_new(model, "merges", merges);
    json_object_set_new(model, "ignore_merges", json_boolean(ignore));
    json_object_set_new(j, "pre_tokenizer", pre);
    json_object_set_new(j, "decoder", json_pack("{s:s}", "type", "ByteLevel"));
    return NULL;
}

/* The tokenizer.json of a llama (SentencePiece) vocab; the merging itself is spm.c's. */
static hr_err *spm(const hr_tok_vocab *v, json_t *j, json_t *model) {
    if (!v->scores)
        return hr_errf("GGUF tokenizer.ggml.scores is missing (a llama vocab needs it)");
    int prefix = v->add_space_prefix != 0;
    json_t *norm = json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:{s:s}, s:s}]}", "type", "Sequence",
                             "normalizers", "type", "Prepend", "prepend", prefix ? SPIECE : "",
                             "type", "Replace", "pattern", "String", " ", "content", SPIECE);
    json_t *dec = json_pack("{s:s, s:[{s:s, s:{s:s}, s:s}, {s:s}, {s:s}, {s:s, s:s, s:i, s:i}]}",
                            "type", "Sequence", "decoders", "type", "Replace", "pattern", "String",
                            SPIECE, "content", " ", "type", "ByteFallback", "type", "Fuse", "type",
                            "Strip", "content", " ", "start", prefix, "stop", 0);
    if (!norm || !dec) {
        json_decref(norm);
        json_decref(dec);
        return hr_err_oom();
    }
    json_object_set_new(model, "byte_fallback", json_true());
    json_object_set_new(j, "normalizer", norm);
    json_object_set_new(j, "decoder", dec);
    return NULL;
}

static hr_err *tokenizer_json(const hr_tok_vocab *v, json_t *j) {
    json_t *vocab = json_object(), *added = json_array();
    json_t *model = json_pack("{s:s, s:o}", "type", "BPE", "vocab", vocab);
    if (!model || !added || json_object_set_new(j, "model", model) ||
        json_object_set_new(j, "added_tokens", added))
        return hr_err_oom();
    HR_TRY(tokens(v, vocab, added));
    if (!strcmp(v->model, "gpt2")) return gpt2(v, j, model);
    if (!strcmp(v->model, "llama")) return spm(v, j, model);
    return hr_errf("GGUF tokenizer.ggml.model \"%s\" is not supported (gpt2, llama)", v->model);
}

static json_t *token_json(const hr_tok_vocab *v, int32_t id) {
    return id >= 0 && id < v->n_tokens ? str(v->tokens[id]) : json_null();
}

/* The tokenizer_config.json: BOS/EOS, whether to add them, the chat template. */
static json_t *config_json(const hr_tok_vocab *v) {
    int spm_model = !strcmp(v->model, "llama");
    json_t *c =
        json_pack("{s:o, s:o, s:b, s:b}", "bos_token", token_json(v, v->bos), "eos_token",
                  token_json(v, v->eos), "add_bos_token", v->add_bos >= 0 ? v->add_bos : spm_model,
                  "add_eos_token", v->add_eos > 0);
    if (c && v->chat_template)
        json_object_set_new(c, "chat_template", json_string(v->chat_template));
    return c;
}

static hr_err *build(hr_tokenizer *t, const hr_tok_vocab *v) {
    json_t *j = json_object(), *cfg = NULL;
    hr_err *e = j ? tokenizer_json(v, j) : hr_err_oom();
    if (!e) e = hr_tok_load_json(t, j);
    if (!e && !(cfg = config_json(v))) e = hr_err_oom();
    if (!e) e = hr_tok_apply_config(t, cfg, NULL);
    if (!e) e = hr_tok_stop_push(t, v->eot >= 0 && v->eot < t->n_vocab ? v->eot : -1);
    json_decref(j);
    json_decref(cfg);
    if (e || strcmp(v->model, "llama")) return e;
    t->unk_id = v->unk >= 0 && v->unk < t->n_vocab ? v->unk : -1;
    t->spm_scores = malloc(sizeof *t->spm_scores * (size_t)(t->n_vocab ? t->n_vocab : 1));
    if (!t->spm_scores) return hr_err_oom();
    for (int i = 0; i < t->n_vocab; i++)
        t->spm_scores[i] = i < v->n_tokens ? v->scores[i] : -1e30f;
    return NULL;
}

hr_err *hr_tokenizer_from_vocab(const hr_tok_vocab *v, hr_tokenizer **out) {
    *out = NULL;
    if (!v->model) /* found by fuzz_gguf: tokens without a model crashed strcmp */
        return hr_errf("loading the GGUF tokenizer: tokenizer.ggml.model is missing");
    hr_tokenizer *t = hr_tok_new();
    if (!t) return hr_err_oom();
    hr_err *e = build(t, v);
    if (!e) e = hr_tok_finish(t);
    if (e) {
        hr_tokenizer_free(t);
        return hr_err_wrap(e, "loading the GGUF tokenizer: ");
    }
    *out = t;
    return NULL;
}
