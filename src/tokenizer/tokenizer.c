/* hr_tokenizer lifetime and lookups: hr_tokenizer_load reads tokenizer.json (through
 * load.c) and the config files (config.c), then builds the id -> string table in which
 * added tokens take precedence over the model vocab, as in HF. */
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/json.h"
#include "tokenizer/tok_internal.h"

static hr_err *build_id_table(hr_tokenizer *t) {
    size_t n = (size_t)t->n_vocab;
    t->id_str = calloc(n ? n : 1, sizeof *t->id_str);
    t->id_len = calloc(n ? n : 1, sizeof *t->id_len);
    t->id_special = calloc(n ? n : 1, 1);
    if (!t->id_str || !t->id_len || !t->id_special) return hr_err_oom();
    /* Vocab keys live back to back in the map's arena; copy them NUL-terminated. */
    for (uint32_t i = 0; i < t->vocab.n; i++) {
        const hr_strmap_ent *e = &t->vocab.ents[i];
        char *s = malloc(e->len + 1);
        if (!s) return hr_err_oom();
        memcpy(s, t->vocab.keys.p + e->off, e->len);
        s[e->len] = 0;
        free(t->id_str[e->val]);
        t->id_str[e->val] = s;
        t->id_len[e->val] = e->len;
    }
    for (int i = 0; i < t->n_added; i++) {
        const hr_added_token *a = &t->added[i];
        char *s = strdup(a->content);
        if (!s) return hr_err_oom();
        free(t->id_str[a->id]);
        t->id_str[a->id] = s;
        t->id_len[a->id] = (uint32_t)strlen(s);
        t->id_special[a->id] = (uint8_t)a->special;
    }
    return NULL;
}

/* Added tokens with normalized=true are matched in normalized text, so their patterns
 * are normalized by each pipeline's normalizer. */
static hr_err *normalized_tries(hr_tokenizer *t) {
    for (int p = 0; p < 2; p++) {
        hr_pipeline *pipe = &t->pipe[p];
        for (int i = 0; i < t->n_added; i++) {
            if (!t->added[i].normalized) continue;
            hr_buf nb = {0};
            hr_err *e = hr_normalize(pipe, t->added[i].content, strlen(t->added[i].content), &nb);
            if (!e) e = hr_trie_add(&pipe->norm_trie, nb.p, nb.len, i);
            hr_buf_free(&nb);
            HR_TRY(e);
        }
    }
    return NULL;
}

hr_err *hr_tok_load_json(hr_tokenizer *t, json_t *j) {
    if (!json_is_object(j)) return hr_errf("tokenizer.json: not a JSON object");
    HR_TRY(hr_tok_load_model(t, json_object_get(j, "model")));
    HR_TRY(hr_tok_load_added(t, json_object_get(j, "added_tokens")));
    HR_TRY(hr_tok_load_normalizer(json_object_get(j, "normalizer"), &t->pipe[0]));
    HR_TRY(hr_tok_load_pretok(json_object_get(j, "pre_tokenizer"), &t->pipe[0]));
    HR_TRY(hr_tok_load_post(t, json_object_get(j, "post_processor")));
    HR_TRY(hr_tok_load_decoder(json_object_get(j, "decoder"), t));
    return build_id_table(t);
}

hr_tokenizer *hr_tok_new(void) {
    hr_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    hr_bytelevel_init(&t->bl);
    t->bos_id = t->eos_id = t->unk_id = -1;
    return t;
}

hr_err *hr_tok_finish(hr_tokenizer *t) {
    HR_TRY(normalized_tries(t));
    return hr_word_cache_create(&t->cache);
}

hr_err *hr_tokenizer_load(const char *dir, hr_tokenizer **out) {
    *out = NULL;
    char *path = hr_path_join(dir, "tokenizer.json");
    if (!path) return hr_err_oom();
    if (!hr_file_exists(path)) {
        hr_err *e = hr_errf("%s: no such file (is %s a model or tokenizer directory?)", path, dir);
        free(path);
        return e;
    }
    hr_tokenizer *t = hr_tok_new();
    if (!t) {
        free(path);
        return hr_err_oom();
    }
    json_t *j = NULL;
    hr_err *e = hr_json_load_file(path, &j);
    if (!e) e = hr_tok_load_json(t, j);
    json_decref(j);
    if (!e) e = hr_tok_load_config(t, dir);
    if (!e) e = hr_tok_finish(t);
    if (e) {
        e = hr_err_wrap(e, "loading tokenizer from %s: ", dir);
        hr_tokenizer_free(t);
    } else {
        *out = t;
    }
    free(path);
    return e;
}

void hr_tokenizer_free(hr_tokenizer *t) {
    if (!t) return;
    for (int i = 0; t->id_str && i < t->n_vocab; i++)
        free(t->id_str[i]);
    free(t->id_str);
    free(t->id_len);
    free(t->id_special);
    hr_strmap_free(&t->vocab);
    hr_pairmap_free(&t->merges);
    free(t->char_ids);
    free(t->spm_scores);
    hr_word_cache_destroy(t->cache);
    for (int i = 0; i < t->n_added; i++)
        free(t->added[i].content);
    free(t->added);
    hr_strmap_free(&t->added_map);
    hr_trie_free(&t->raw_trie);
    hr_pipeline_free(&t->pipe[0]);
    hr_pipeline_free(&t->pipe[1]);
    free(t->prefix_ids);
    free(t->suffix_ids);
    hr_tok_decoders_free(t);
    free(t->bos);
    free(t->eos);
    free(t->stop_ids);
    json_decref(t->templates);
    free(t->template_file);
    free(t);
}

int hr_tokenizer_vocab_size(const hr_tokenizer *t) { return t->n_vocab; }

int32_t hr_tokenizer_token_id(const hr_tokenizer *t, const char *token) {
    int32_t id;
    size_t n = strlen(token);
    if (hr_strmap_get(&t->added_map, token, n, &id)) return id;
    if (hr_strmap_get(&t->vocab, token, n, &id)) return id;
    return -1;
}

const char *hr_tokenizer_token_str(const hr_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab ? t->id_str[id] : NULL;
}

int hr_tokenizer_is_special(const hr_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab && t->id_special[id];
}

const char *hr_tokenizer_bos(const hr_tokenizer *t) { return t->bos; }
const char *hr_tokenizer_eos(const hr_tokenizer *t) { return t->eos; }
int32_t hr_tokenizer_bos_id(const hr_tokenizer *t) { return t->bos_id; }
int32_t hr_tokenizer_eos_id(const hr_tokenizer *t) { return t->eos_id; }

int hr_tokenizer_stop_ids(const hr_tokenizer *t, const int32_t **ids) {
    *ids = t->stop_ids;
    return t->n_stop;
}

const char *hr_tokenizer_chat_template(const hr_tokenizer *t, const char *name) {
    if (t->template_file && !name) return t->template_file;
    if (json_is_string(t->templates)) return name ? NULL : json_string_value(t->templates);
    const char *want = name ? name : "default", *first = NULL;
    for (size_t i = 0; i < json_array_size(t->templates); i++) {
        json_t *x = json_array_get(t->templates, i);
        const char *n = json_string_value(json_object_get(x, "name"));
        const char *s = json_string_value(json_object_get(x, "template"));
        if (!first) first = s;
        if (n && strcmp(n, want) == 0) return s;
    }
    return name ? NULL : first;
}

int hr_tokenizer_present(const char *dir) {
    char *path = hr_path_join(dir, "tokenizer.json");
    int have = path && hr_file_exists(path);
    free(path);
    return have;
}
