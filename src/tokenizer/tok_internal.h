/* Internal layout of hr_tokenizer, shared by the files of src/tokenizer/ only. The encode
 * pipeline is HF's: added-token split -> normalizer -> pre-tokenizer -> BPE model ->
 * post-processor; decode runs the decoder steps over token strings. */
#ifndef HR_TOKENIZER_TOK_INTERNAL_H
#define HR_TOKENIZER_TOK_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "base/regex.h"
#include "base/utf8.h"
#include "tokenizer/strmap.h"
#include "tokenizer/tokenizer.h"

/* ---- UTF-8 helpers (utf8.c) ---- */
/* Bytes of the character (or of the maximal invalid subpart) at s; *valid says which. */
size_t hr_utf8_next(const unsigned char *s, size_t n, int *valid);
int hr_utf8_is_valid(const char *s, size_t n);
/* Appends s with every invalid sequence replaced by U+FFFD (Rust from_utf8_lossy). */
hr_err *hr_utf8_lossy_append(hr_buf *b, const char *s, size_t n);
/* Decodes one valid character at s (n > 0) to a code point; returns its length. */

/* GPT-2 byte <-> printable code point table used by ByteLevel. */
typedef struct {
    char enc[256][3]; /* UTF-8 of the code point standing for each byte */
    uint8_t enc_len[256];
    int16_t dec[324]; /* code point -> byte, -1 if not a byte-level character */
} hr_bytelevel;
void hr_bytelevel_init(hr_bytelevel *t);

/* ---- normalizers (normalize.c) ---- */
typedef enum {
    HR_NORM_NFC,
    HR_NORM_NFKC,
    HR_NORM_NFD,
    HR_NORM_NFKD,
    HR_NORM_LOWERCASE,
    HR_NORM_REPLACE,
    HR_NORM_PREPEND,
    HR_NORM_STRIP
} hr_norm_kind;

typedef struct {
    hr_norm_kind kind;
    char *a, *b;     /* REPLACE: pattern, content; PREPEND: text */
    int left, right; /* STRIP */
} hr_norm_step;

/* ---- pre-tokenizers (pretok.c) ---- */
typedef enum { HR_PRE_SPLIT, HR_PRE_BYTELEVEL, HR_PRE_METASPACE } hr_pre_kind;
typedef enum {
    HR_SPLIT_REMOVED,
    HR_SPLIT_ISOLATED,
    HR_SPLIT_MERGED_PREV,
    HR_SPLIT_MERGED_NEXT,
    HR_SPLIT_CONTIGUOUS
} hr_split_behavior;
typedef enum { HR_PREPEND_NEVER, HR_PREPEND_ALWAYS, HR_PREPEND_FIRST } hr_prepend_scheme;

typedef struct {
    hr_pre_kind kind;
    pcre2_code *re; /* SPLIT with a regex; BYTELEVEL with use_regex */
    char *literal;  /* SPLIT with a plain string */
    hr_split_behavior behavior;
    int invert;
    int add_prefix_space; /* BYTELEVEL */
    char *replacement;    /* METASPACE */
    hr_prepend_scheme prepend;
    int split;
} hr_pre_step;

/* ---- added tokens (added.c) ---- */
typedef struct {
    char *content;
    int32_t id;
    int special, lstrip, rstrip, normalized, single_word;
} hr_added_token;

/* A byte trie over added-token contents for leftmost-longest matching. */
typedef struct {
    hr_pairmap edges; /* (node << 8 | byte) -> child node */
    int32_t *term;    /* node -> index into tok->added, or -1 */
    int n_nodes, cap_nodes;
    uint8_t first[32]; /* bitmap of first bytes, a fast reject */
} hr_trie;

/* One way of running normalizer + pre-tokenizer (tokenizer.json's, or transformers'). */
typedef struct {
    hr_norm_step *norm;
    int n_norm;
    hr_pre_step *pre;
    int n_pre;
    hr_trie norm_trie; /* added tokens with normalized=true, matched after normalizing */
} hr_pipeline;

/* ---- decoders (decode.c) ---- */
typedef enum {
    HR_DEC_REPLACE,
    HR_DEC_BYTEFALLBACK,
    HR_DEC_FUSE,
    HR_DEC_STRIP,
    HR_DEC_METASPACE,
    HR_DEC_BYTELEVEL
} hr_dec_kind;

typedef struct {
    hr_dec_kind kind;
    char *a, *b;     /* REPLACE: pattern, content; STRIP: content; METASPACE: replacement */
    int start, stop; /* STRIP */
    hr_prepend_scheme prepend;
} hr_dec_step;

/* ---- the word cache (bpe.c) ---- */
typedef struct {
    pthread_mutex_t mu;
    hr_strmap map;   /* word -> index into spans */
    uint32_t *spans; /* (offset into ids, count) pairs */
    int32_t *ids;
    size_t n_spans, cap_spans, n_ids, cap_ids;
} hr_word_cache;

struct hr_tokenizer {
    /* model */
    int n_vocab;         /* largest id + 1 */
    char **id_str;       /* (n_vocab) token string per id, NULL for holes */
    uint32_t *id_len;    /* (n_vocab) */
    uint8_t *id_special; /* (n_vocab) 1 for added tokens marked special */
    hr_strmap vocab;     /* model vocab: token -> id */
    hr_pairmap merges;   /* (left id, right id) -> rank << 32 | merged id */
    int byte_fallback, fuse_unk, ignore_merges;
    float *spm_scores;     /* (n_vocab) a GGUF SentencePiece vocab: merge by score, else NULL */
    int32_t unk_id;        /* -1: none */
    int32_t byte_ids[256]; /* <0xXX> ids, -1 when absent */
    int32_t *char_ids;     /* ids of single bytes 0..127 as vocab strings, -1 if absent */
    hr_bytelevel bl;
    hr_word_cache *cache;

    /* added tokens */
    hr_added_token *added;
    int n_added;
    hr_strmap added_map; /* content -> id */
    hr_trie raw_trie;    /* added tokens with normalized=false */

    /* pipelines: [0] tokenizer.json, [1] transformers' (differs for LlamaTokenizer) */
    hr_pipeline pipe[2];

    /* post-processing with add_special */
    int32_t *prefix_ids, *suffix_ids;
    int n_prefix, n_suffix;

    /* decoding */
    hr_dec_step *dec;
    int n_dec;
    int has_decoder;
    int cleanup_spaces;

    /* config */
    char *bos, *eos;
    int32_t bos_id, eos_id;
    int32_t *stop_ids;
    int n_stop;
    json_t *templates;   /* chat_template from tokenizer_config.json (string or list) */
    char *template_file; /* chat_template.jinja */
};

/* load.c / config.c */
hr_err *hr_tok_load_model(hr_tokenizer *t, json_t *model);
hr_err *hr_tok_load_added(hr_tokenizer *t, json_t *added);
hr_err *hr_tok_load_normalizer(json_t *j, hr_pipeline *p);
hr_err *hr_tok_load_pretok(json_t *j, hr_pipeline *p);
hr_err *hr_tok_load_decoder(json_t *j, hr_tokenizer *t);
hr_err *hr_tok_load_post(hr_tokenizer *t, json_t *post);
hr_err *hr_tok_load_config(hr_tokenizer *t, const char *dir);
/* tokenizer_config.json (cfg) and special_tokens_map.json (map, may be NULL) already parsed. */
hr_err *hr_tok_apply_config(hr_tokenizer *t, json_t *cfg, json_t *map);
/* tokenizer.c: a tokenizer.json object into t, and the steps after the config. */
hr_err *hr_tok_load_json(hr_tokenizer *t, json_t *j);
hr_err *hr_tok_finish(hr_tokenizer *t);
hr_tokenizer *hr_tok_new(void); /* empty, ids unset; NULL when out of memory */
/* stop ids (config.c): adds id once (ignores -1). */
hr_err *hr_tok_stop_push(hr_tokenizer *t, int32_t id);
void hr_pipeline_free(hr_pipeline *p);
void hr_tok_decoders_free(hr_tokenizer *t);

/* normalize.c: appends the normalized s to out. */
hr_err *hr_normalize(const hr_pipeline *p, const char *s, size_t n, hr_buf *out);

/* pretok.c: a list of pieces inside one buffer. */
typedef struct {
    hr_buf text;
    uint32_t *off, *len;
    uint8_t *first; /* piece starts at offset 0 of the original text */
    int n, cap;
} hr_pieces;
void hr_pieces_clear(hr_pieces *p);
void hr_pieces_free(hr_pieces *p);
hr_err *hr_pieces_add(hr_pieces *p, const char *s, size_t n, int first);
/* Runs the pre-tokenizer steps over in (consumed; it is left cleared) into out. */
hr_err *hr_pretokenize(const hr_tokenizer *t, const hr_pipeline *p, hr_pieces *in, hr_pieces *out,
                       pcre2_match_data *md);

/* added.c */
hr_err *hr_trie_add(hr_trie *t, const char *s, size_t n, int32_t index);
void hr_trie_free(hr_trie *t);
/* Longest added token starting at s[0], as an index into tok->added, and its length. */
int hr_trie_longest(const hr_trie *t, const char *s, size_t n, size_t *mlen);

/* A segment of text after splitting out added tokens: an added-token id or a text span. */
typedef struct {
    int32_t id; /* -1 for text */
    size_t start, end;
} hr_segment;
hr_err *hr_split_added(const hr_tokenizer *t, const hr_trie *trie, const char *s, size_t n,
                       hr_segment **segs, int *n_segs, int *cap_segs);

/* decode.c: decodes into out (replacing its contents). */
hr_err *hr_tok_decode_buf(const hr_tokenizer *t, const int32_t *ids, int n, int skip_special,
                          hr_buf *out);

/* bpe.c: appends the ids of one pre-tokenized word. */
typedef struct {
    int32_t *v;
    int n, cap;
} hr_ids;
hr_err *hr_ids_push(hr_ids *ids, int32_t id);
hr_err *hr_bpe_word(const hr_tokenizer *t, const char *w, size_t n, hr_ids *out);
/* spm.c: the same for a SentencePiece vocab with scores (llama.cpp's merge order). */
hr_err *hr_spm_word(const hr_tokenizer *t, const char *w, size_t n, hr_ids *out);
hr_err *hr_word_cache_create(hr_word_cache **out);
void hr_word_cache_destroy(hr_word_cache *c);

#endif
