/* tokenizer.json -> hr_tokenizer: the BPE model (vocab and merges into hash maps), added
 * tokens, normalizer, pre-tokenizer, post-processor and decoder. Anything this engine does
 * not implement is an error that names it, never a silent approximation. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

#define GPT2_REGEX                                                                                 \
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"

static int jbool(const json_t *o, const char *k, int def) {
    const json_t *v = json_object_get(o, k);
    return json_is_boolean(v) ? json_is_true(v) : def;
}

static const char *jstr(const json_t *o, const char *k) {
    return json_string_value(json_object_get(o, k));
}

static char *dupstr(const char *s) { return s ? strdup(s) : NULL; }

/* ---- model ---- */

static hr_err *load_vocab(hr_tokenizer *t, json_t *vocab) {
    if (!json_is_object(vocab))
        return hr_errf("tokenizer.json: model.vocab is missing or not an object");
    HR_TRY(hr_strmap_init(&t->vocab, (uint32_t)json_object_size(vocab)));
    const char *k;
    json_t *v;
    json_object_foreach(vocab, k, v) {
        json_int_t id = json_integer_value(v);
        if (!json_is_integer(v) || id < 0 || id > 50000000)
            return hr_errf("tokenizer.json: model.vocab[\"%s\"] is not a valid id", k);
        HR_TRY(hr_strmap_put(&t->vocab, k, strlen(k), (int32_t)id));
        if (id + 1 > t->n_vocab) t->n_vocab = (int)id + 1;
    }
    return NULL;
}

static hr_err *merge_parts(json_t *m, size_t i, const char **a, size_t *al, const char **b,
                           size_t *bl) {
    if (json_is_string(m)) {
        const char *s = json_string_value(m), *sp = strchr(s, ' ');
        if (!sp) return hr_errf("tokenizer.json: model.merges[%zu] \"%s\" is not \"a b\"", i, s);
        *a = s;
        *al = (size_t)(sp - s);
        *b = sp + 1;
        *bl = strlen(sp + 1);
        return NULL;
    }
    if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
        json_is_string(json_array_get(m, 1))) {
        *a = json_string_value(json_array_get(m, 0));
        *al = json_string_length(json_array_get(m, 0));
        *b = json_string_value(json_array_get(m, 1));
        *bl = json_string_length(json_array_get(m, 1));
        return NULL;
    }
    return hr_errf("tokenizer.json: model.merges[%zu] is neither \"a b\" nor [\"a\", \"b\"]", i);
}

static hr_err *load_merges(hr_tokenizer *t, json_t *merges) {
    size_t n = json_array_size(merges);
    if (merges && !json_is_array(merges))
        return hr_errf("tokenizer.json: model.merges is not an array");
    HR_TRY(hr_pairmap_init(&t->merges, n));
    hr_buf cat = {0};
    hr_err *e = NULL;
    for (size_t i = 0; i < n && !e; i++) {
        const char *a = NULL, *b = NULL;
        size_t al = 0, bl = 0;
        int32_t ia, ib, im;
        e = merge_parts(json_array_get(merges, i), i, &a, &al, &b, &bl);
        if (e) break;
        cat.len = 0;
        if ((e = hr_buf_append(&cat, a, al)) || (e = hr_buf_append(&cat, b, bl))) break;
        if (!hr_strmap_get(&t->vocab, a, al, &ia) || !hr_strmap_get(&t->vocab, b, bl, &ib) ||
            !hr_strmap_get(&t->vocab, cat.p, cat.len, &im)) {
            e = hr_errf(
                "tokenizer.json: model.merges[%zu] (\"%.*s\" + \"%.*s\") uses a token missing "
                "from the vocab",
                i, (int)al, a, (int)bl, b);
            break;
        }
        e = hr_pairmap_put(&t->merges, ((uint64_t)(uint32_t)ia << 32) | (uint32_t)ib,
                           ((uint64_t)i << 32) | (uint32_t)im);
    }
    hr_buf_free(&cat);
    return e;
}

static hr_err *lookup_tables(hr_tokenizer *t) {
    char name[8];
    for (int b = 0; b < 256; b++) {
        snprintf(name, sizeof name, "<0x%02X>", b);
        if (!hr_strmap_get(&t->vocab, name, 6, &t->byte_ids[b])) t->byte_ids[b] = -1;
    }
    t->char_ids = malloc(sizeof *t->char_ids * 128);
    if (!t->char_ids) return hr_err_oom();
    for (int c = 0; c < 128; c++) {
        char s = (char)c;
        if (!hr_strmap_get(&t->vocab, &s, 1, &t->char_ids[c])) t->char_ids[c] = -1;
    }
    return NULL;
}

hr_err *hr_tok_load_model(hr_tokenizer *t, json_t *model) {
    if (!json_is_object(model)) return hr_errf("tokenizer.json: \"model\" is missing");
    const char *type = jstr(model, "type");
    if (!type && json_object_get(model, "merges")) type = "BPE";
    if (!type || strcmp(type, "BPE") != 0)
        return hr_errf("tokenizer.json: unsupported model type \"%s\" (only BPE is implemented)",
                       type ? type : "(none)");
    const char *cp = jstr(model, "continuing_subword_prefix"),
               *ew = jstr(model, "end_of_word_suffix");
    if ((cp && *cp) || (ew && *ew))
        return hr_errf(
            "tokenizer.json: BPE continuing_subword_prefix/end_of_word_suffix are not supported");
    HR_TRY(load_vocab(t, json_object_get(model, "vocab")));
    HR_TRY(load_merges(t, json_object_get(model, "merges")));
    t->byte_fallback = jbool(model, "byte_fallback", 0);
    t->fuse_unk = jbool(model, "fuse_unk", 0);
    t->ignore_merges = jbool(model, "ignore_merges", 0);
    t->unk_id = -1;
    const char *unk = jstr(model, "unk_token");
    if (unk && !hr_strmap_get(&t->vocab, unk, strlen(unk), &t->unk_id))
        return hr_errf("tokenizer.json: model.unk_token \"%s\" is not in the vocab", unk);
    return lookup_tables(t);
}

/* ---- added tokens ---- */

hr_err *hr_tok_load_added(hr_tokenizer *t, json_t *added) {
    size_t n = json_array_size(added);
    HR_TRY(hr_strmap_init(&t->added_map, (uint32_t)n));
    t->added = calloc(n ? n : 1, sizeof *t->added);
    if (!t->added) return hr_err_oom();
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(added, i);
        const char *c = jstr(a, "content");
        json_t *id = json_object_get(a, "id");
        if (!c || !json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) > 50000000)
            return hr_errf("tokenizer.json: added_tokens[%zu] needs a string content and an id", i);
        hr_added_token *x = &t->added[t->n_added++];
        x->content = strdup(c);
        if (!x->content) return hr_err_oom();
        x->id = (int32_t)json_integer_value(id);
        x->special = jbool(a, "special", 0);
        x->lstrip = jbool(a, "lstrip", 0);
        x->rstrip = jbool(a, "rstrip", 0);
        x->normalized = jbool(a, "normalized", !x->special);
        x->single_word = jbool(a, "single_word", 0);
        if (x->id + 1 > t->n_vocab) t->n_vocab = x->id + 1;
        HR_TRY(hr_strmap_put(&t->added_map, c, strlen(c), x->id));
        if (!x->normalized) HR_TRY(hr_trie_add(&t->raw_trie, c, strlen(c), (int32_t)i));
    }
    return NULL;
}

/* ---- normalizer ---- */

static hr_err *norm_push(hr_pipeline *p, hr_norm_step st) {
    hr_norm_step *v = realloc(p->norm, sizeof *v * (size_t)(p->n_norm + 1));
    if (!v) {
        free(st.a);
        free(st.b);
        return hr_err_oom();
    }
    p->norm = v;
    p->norm[p->n_norm++] = st;
    return NULL;
}

static const char *string_pattern(json_t *j, const char *what, hr_err **e) {
    json_t *pat = json_object_get(j, "pattern");
    const char *s = jstr(pat, "String");
    if (!s) *e = hr_errf("tokenizer.json: %s with a non-String pattern is not supported", what);
    return s;
}

hr_err *hr_tok_load_normalizer(json_t *j, hr_pipeline *p) {
    if (!j || json_is_null(j)) return NULL;
    const char *type = jstr(j, "type");
    if (!type) return hr_errf("tokenizer.json: normalizer has no type");
    static const struct {
        const char *name;
        hr_norm_kind kind;
    } simple[] = {{"NFC", HR_NORM_NFC},
                  {"NFKC", HR_NORM_NFKC},
                  {"NFD", HR_NORM_NFD},
                  {"NFKD", HR_NORM_NFKD},
                  {"Lowercase", HR_NORM_LOWERCASE}};
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++)
        if (strcmp(type, simple[i].name) == 0)
            return norm_push(p, (hr_norm_step){.kind = simple[i].kind});
    if (strcmp(type, "Sequence") == 0) {
        json_t *list = json_object_get(j, "normalizers");
        for (size_t i = 0; i < json_array_size(list); i++)
            HR_TRY(hr_tok_load_normalizer(json_array_get(list, i), p));
        return NULL;
    }
    if (strcmp(type, "Replace") == 0) {
        hr_err *e = NULL;
        const char *pat = string_pattern(j, "Replace normalizer", &e), *with = jstr(j, "content");
        if (e) return e;
        return norm_push(p, (hr_norm_step){.kind = HR_NORM_REPLACE,
                                           .a = dupstr(pat),
                                           .b = dupstr(with ? with : "")});
    }
    if (strcmp(type, "Prepend") == 0) {
        const char *s = jstr(j, "prepend");
        return norm_push(p, (hr_norm_step){.kind = HR_NORM_PREPEND, .a = dupstr(s ? s : "")});
    }
    if (strcmp(type, "Strip") == 0)
        return norm_push(p, (hr_norm_step){.kind = HR_NORM_STRIP,
                                           .left = jbool(j, "strip_left", 1),
                                           .right = jbool(j, "strip_right", 1)});
    return hr_errf("tokenizer.json: unsupported normalizer \"%s\"", type);
}

/* ---- pre-tokenizer ---- */

static hr_err *pre_push(hr_pipeline *p, hr_pre_step st) {
    hr_pre_step *v = realloc(p->pre, sizeof *v * (size_t)(p->n_pre + 1));
    if (!v) {
        pcre2_code_free(st.re);
        free(st.literal);
        free(st.replacement);
        return hr_err_oom();
    }
    p->pre = v;
    p->pre[p->n_pre++] = st;
    return NULL;
}

static hr_err *parse_behavior(const char *s, hr_split_behavior *out) {
    static const char *names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                                  "Contiguous"};
    for (int i = 0; i < 5; i++)
        if (s && strcmp(s, names[i]) == 0) return *out = (hr_split_behavior)i, NULL;
    return hr_errf("tokenizer.json: unknown Split behavior \"%s\"", s ? s : "(none)");
}

static hr_err *load_split(json_t *j, hr_pipeline *p) {
    hr_pre_step st = {.kind = HR_PRE_SPLIT, .invert = jbool(j, "invert", 0)};
    HR_TRY(parse_behavior(jstr(j, "behavior"), &st.behavior));
    json_t *pat = json_object_get(j, "pattern");
    const char *re = jstr(pat, "Regex"), *lit = jstr(pat, "String");
    if (re)
        HR_TRY(hr_err_wrap(hr_regex_compile(re, PCRE2_UTF | PCRE2_UCP, &st.re),
                           "tokenizer.json: Split pre-tokenizer: "));
    else if (lit)
        st.literal = strdup(lit);
    else
        return hr_errf("tokenizer.json: Split pre-tokenizer needs a String or Regex pattern");
    return pre_push(p, st);
}

static hr_prepend_scheme parse_prepend(json_t *j) {
    const char *s = jstr(j, "prepend_scheme");
    if (s)
        return strcmp(s, "never") == 0   ? HR_PREPEND_NEVER
               : strcmp(s, "first") == 0 ? HR_PREPEND_FIRST
                                         : HR_PREPEND_ALWAYS;
    return jbool(j, "add_prefix_space", 1) ? HR_PREPEND_ALWAYS : HR_PREPEND_NEVER;
}

hr_err *hr_tok_load_pretok(json_t *j, hr_pipeline *p) {
    if (!j || json_is_null(j)) return NULL;
    const char *type = jstr(j, "type");
    if (!type) return hr_errf("tokenizer.json: pre_tokenizer has no type");
    if (strcmp(type, "Sequence") == 0) {
        json_t *list = json_object_get(j, "pretokenizers");
        for (size_t i = 0; i < json_array_size(list); i++)
            HR_TRY(hr_tok_load_pretok(json_array_get(list, i), p));
        return NULL;
    }
    if (strcmp(type, "Split") == 0) return load_split(j, p);
    if (strcmp(type, "ByteLevel") == 0) {
        hr_pre_step st = {.kind = HR_PRE_BYTELEVEL,
                          .add_prefix_space = jbool(j, "add_prefix_space", 1)};
        if (jbool(j, "use_regex", 1))
            HR_TRY(hr_regex_compile(GPT2_REGEX, PCRE2_UTF | PCRE2_UCP, &st.re));
        return pre_push(p, st);
    }
    if (strcmp(type, "Metaspace") == 0) {
        const char *r = jstr(j, "replacement");
        hr_pre_step st = {.kind = HR_PRE_METASPACE,
                          .replacement = strdup(r ? r : "\xE2\x96\x81"),
                          .prepend = parse_prepend(j),
                          .split = jbool(j, "split", 1)};
        return pre_push(p, st);
    }
    return hr_errf("tokenizer.json: unsupported pre-tokenizer \"%s\"", type);
}

void hr_pipeline_free(hr_pipeline *p) {
    for (int i = 0; i < p->n_norm; i++) {
        free(p->norm[i].a);
        free(p->norm[i].b);
    }
    for (int i = 0; i < p->n_pre; i++) {
        pcre2_code_free(p->pre[i].re);
        free(p->pre[i].literal);
        free(p->pre[i].replacement);
    }
    free(p->norm);
    free(p->pre);
    hr_trie_free(&p->norm_trie);
    memset(p, 0, sizeof *p);
}

/* ---- decoder ---- */

static hr_err *dec_push(hr_tokenizer *t, hr_dec_step st) {
    hr_dec_step *v = realloc(t->dec, sizeof *v * (size_t)(t->n_dec + 1));
    if (!v) {
        free(st.a);
        free(st.b);
        return hr_err_oom();
    }
    t->dec = v;
    t->dec[t->n_dec++] = st;
    return NULL;
}

hr_err *hr_tok_load_decoder(json_t *j, hr_tokenizer *t) {
    if (!j || json_is_null(j)) return NULL;
    t->has_decoder = 1;
    const char *type = jstr(j, "type");
    if (!type) return hr_errf("tokenizer.json: decoder has no type");
    if (strcmp(type, "Sequence") == 0) {
        json_t *list = json_object_get(j, "decoders");
        for (size_t i = 0; i < json_array_size(list); i++)
            HR_TRY(hr_tok_load_decoder(json_array_get(list, i), t));
        return NULL;
    }
    if (strcmp(type, "Replace") == 0) {
        hr_err *e = NULL;
        const char *pat = string_pattern(j, "Replace decoder", &e), *with = jstr(j, "content");
        if (e) return e;
        return dec_push(
            t,
            (hr_dec_step){.kind = HR_DEC_REPLACE, .a = dupstr(pat), .b = dupstr(with ? with : "")});
    }
    if (strcmp(type, "ByteFallback") == 0)
        return dec_push(t, (hr_dec_step){.kind = HR_DEC_BYTEFALLBACK});
    if (strcmp(type, "Fuse") == 0) return dec_push(t, (hr_dec_step){.kind = HR_DEC_FUSE});
    if (strcmp(type, "ByteLevel") == 0) return dec_push(t, (hr_dec_step){.kind = HR_DEC_BYTELEVEL});
    if (strcmp(type, "Strip") == 0) {
        const char *c = jstr(j, "content");
        json_int_t s = json_integer_value(json_object_get(j, "start")),
                   e = json_integer_value(json_object_get(j, "stop"));
        return dec_push(t, (hr_dec_step){.kind = HR_DEC_STRIP,
                                         .a = dupstr(c ? c : " "),
                                         .start = (int)s,
                                         .stop = (int)e});
    }
    if (strcmp(type, "Metaspace") == 0) {
        const char *r = jstr(j, "replacement");
        return dec_push(t, (hr_dec_step){.kind = HR_DEC_METASPACE,
                                         .a = dupstr(r ? r : "\xE2\x96\x81"),
                                         .prepend = parse_prepend(j)});
    }
    return hr_errf("tokenizer.json: unsupported decoder \"%s\"", type);
}

void hr_tok_decoders_free(hr_tokenizer *t) {
    for (int i = 0; i < t->n_dec; i++) {
        free(t->dec[i].a);
        free(t->dec[i].b);
    }
    free(t->dec);
    t->dec = NULL;
    t->n_dec = 0;
}

/* ---- post-processor ---- */

static hr_err *ids_append(int32_t **v, int *n, int32_t id) {
    int32_t *nv = realloc(*v, sizeof *nv * (size_t)(*n + 1));
    if (!nv) return hr_err_oom();
    *v = nv;
    nv[(*n)++] = id;
    return NULL;
}

static hr_err *template_single(hr_tokenizer *t, json_t *j) {
    json_t *single = json_object_get(j, "single"), *specials = json_object_get(j, "special_tokens");
    int after = 0;
    for (size_t i = 0; i < json_array_size(single); i++) {
        json_t *item = json_array_get(single, i);
        if (json_object_get(item, "Sequence")) {
            after = 1;
            continue;
        }
        const char *name = jstr(json_object_get(item, "SpecialToken"), "id");
        json_t *ids = json_object_get(json_object_get(specials, name ? name : ""), "ids");
        if (!name || !json_is_array(ids))
            return hr_errf("tokenizer.json: TemplateProcessing special token \"%s\" has no ids",
                           name ? name : "?");
        for (size_t k = 0; k < json_array_size(ids); k++) {
            int32_t id = (int32_t)json_integer_value(json_array_get(ids, k));
            HR_TRY(after ? ids_append(&t->suffix_ids, &t->n_suffix, id)
                         : ids_append(&t->prefix_ids, &t->n_prefix, id));
        }
    }
    return NULL;
}

hr_err *hr_tok_load_post(hr_tokenizer *t, json_t *j) {
    if (!j || json_is_null(j)) return NULL;
    const char *type = jstr(j, "type");
    if (!type) return hr_errf("tokenizer.json: post_processor has no type");
    if (strcmp(type, "Sequence") == 0) {
        json_t *list = json_object_get(j, "processors");
        for (size_t i = 0; i < json_array_size(list); i++)
            HR_TRY(hr_tok_load_post(t, json_array_get(list, i)));
        return NULL;
    }
    if (strcmp(type, "ByteLevel") == 0) return NULL; /* offsets only */
    if (strcmp(type, "TemplateProcessing") == 0) return template_single(t, j);
    if (strcmp(type, "BertProcessing") == 0 || strcmp(type, "RobertaProcessing") == 0) {
        json_t *cls = json_object_get(j, "cls"), *sep = json_object_get(j, "sep");
        HR_TRY(ids_append(&t->prefix_ids, &t->n_prefix,
                          (int32_t)json_integer_value(json_array_get(cls, 1))));
        return ids_append(&t->suffix_ids, &t->n_suffix,
                          (int32_t)json_integer_value(json_array_get(sep, 1)));
    }
    return hr_errf("tokenizer.json: unsupported post_processor \"%s\"", type);
}
