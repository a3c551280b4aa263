/* Tokenizer: loads a Hugging Face tokenizer.json (+ tokenizer_config.json) and encodes text
 * to token ids and back, exactly as HF tokenizers/transformers do for BPE models (byte-level
 * GPT-2/Llama 3/Qwen style and SentencePiece-style Llama 2/Gemma). A loaded tokenizer is
 * read-only apart from an internal, mutex-guarded word cache, so one may be shared by
 * threads. Input text that is not valid UTF-8 is first repaired (each invalid sequence
 * becomes U+FFFD, like Python's bytes.decode(errors="replace")). */
#ifndef HR_TOKENIZER_TOKENIZER_H
#define HR_TOKENIZER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct hr_tokenizer hr_tokenizer;

/* dir holds tokenizer.json and tokenizer_config.json (a model dir or a bare tokenizer dir);
 * special_tokens_map.json, generation_config.json and chat_template.jinja are optional. */
hr_err *hr_tokenizer_load(const char *dir, hr_tokenizer **out);
/* Nonzero when dir holds a tokenizer.json (what hr_tokenizer_load needs). */
int hr_tokenizer_present(const char *dir);
void hr_tokenizer_free(hr_tokenizer *tok);

/* A vocabulary as a GGUF file's tokenizer.ggml.* metadata gives it (engine/tok_open.c reads
 * it): model "gpt2" (byte-level BPE with merges; pre names the pre-tokenizer: "qwen2",
 * "llama-bpe", "gpt2"/"default") or "llama" (SentencePiece: merges by score, as llama.cpp
 * encodes). token types are llama.cpp's: 1 normal, 2 unknown, 3 control, 4 user-defined,
 * 5 unused, 6 byte. */
typedef struct {
    const char *p;
    size_t len;
} hr_tok_str;

typedef struct {
    const char *model, *pre; /* pre may be NULL */
    int n_tokens;
    const hr_tok_str *tokens;
    const float *scores;  /* (n_tokens) or NULL */
    const int32_t *types; /* (n_tokens) or NULL (all normal) */
    int n_merges;
    const hr_tok_str *merges;               /* "a b" */
    int32_t bos, eos, eot, unk;             /* -1 when absent */
    int add_bos, add_eos, add_space_prefix; /* -1: the model's default */
    const char *chat_template;              /* or NULL */
} hr_tok_vocab;

hr_err *hr_tokenizer_from_vocab(const hr_tok_vocab *v, hr_tokenizer **out);

/* Encodes text[0..len). add_special=1 gives what transformers' AutoTokenizer(text) gives
 * (BOS/EOS per tokenizer_config.json or the post-processor); add_special=0 gives what
 * tokenizers' Tokenizer.encode(text, add_special_tokens=False) gives on tokenizer.json.
 * *ids is a heap array (caller frees; NULL when *n is 0). */
hr_err *hr_tokenizer_encode(const hr_tokenizer *tok, const char *text, size_t len, int add_special,
                            int32_t **ids, int *n);

/* Decodes ids to NUL-terminated UTF-8 text (caller frees), like transformers' decode
 * (including clean_up_tokenization_spaces when the config sets it). Ids outside
 * [0, vocab size) are an error; ids inside the range without a token are skipped. */
hr_err *hr_tokenizer_decode(const hr_tokenizer *tok, const int32_t *ids, int n, int skip_special,
                            char **out);

/* Number of ids (largest id + 1, model vocab and added tokens together). */
int hr_tokenizer_vocab_size(const hr_tokenizer *tok);
/* Id of a token string (added tokens first, then the model vocab), or -1. */
int32_t hr_tokenizer_token_id(const hr_tokenizer *tok, const char *token);
/* Raw token string of an id (e.g. "Ġworld", "▁the", "<0x0A>"), or NULL. */
const char *hr_tokenizer_token_str(const hr_tokenizer *tok, int32_t id);
int hr_tokenizer_is_special(const hr_tokenizer *tok, int32_t id);
/* The raw bytes token id stands for in the middle of a text (byte-level BPE's byte alphabet
 * unmapped, SentencePiece's U+2581 as a space and <0xHH> as its byte, an added token's
 * content): writes up to cap bytes to out and returns the full length, or (size_t)-1 for
 * an id without a token. */
size_t hr_tokenizer_token_bytes(const hr_tokenizer *tok, int32_t id, char *out, size_t cap);
/* Nonzero when id is an added token (tokenizer.json's added_tokens), special or not. */
int hr_tokenizer_is_added(const hr_tokenizer *tok, int32_t id);

/* BOS/EOS from tokenizer_config.json (or special_tokens_map.json): string and id, or
 * NULL / -1 when the tokenizer has none. */
const char *hr_tokenizer_bos(const hr_tokenizer *tok);
const char *hr_tokenizer_eos(const hr_tokenizer *tok);
int32_t hr_tokenizer_bos_id(const hr_tokenizer *tok);
int32_t hr_tokenizer_eos_id(const hr_tokenizer *tok);
/* Every id that ends generation: the EOS above plus generation_config.json's eos_token_id
 * (an int or a list). Returns the count; *ids points into tok. */
int hr_tokenizer_stop_ids(const hr_tokenizer *tok, const int32_t **ids);

/* The chat template: chat_template.jinja if present, else tokenizer_config.json's
 * chat_template (a string, or a list of {name, template}: name NULL picks "default" or
 * the first). NULL when there is none. */
const char *hr_tokenizer_chat_template(const hr_tokenizer *tok, const char *name);

/* Incremental detokenizer: feed ids one at a time and get the newly completed text. The
 * concatenation of every push and the final flush equals hr_tokenizer_decode of the whole
 * sequence; a push never returns part of a UTF-8 character. */
typedef struct hr_detok_stream hr_detok_stream;

hr_err *hr_detok_stream_create(const hr_tokenizer *tok, int skip_special, hr_detok_stream **out);
void hr_detok_stream_destroy(hr_detok_stream *s);
/* *text (length *len, NUL-terminated) stays valid until the next call on s. */
hr_err *hr_detok_stream_push(hr_detok_stream *s, int32_t id, const char **text, size_t *len);
/* Returns the text held back at the end (e.g. an incomplete character, shown as U+FFFD). */
hr_err *hr_detok_stream_flush(hr_detok_stream *s, const char **text, size_t *len);

#endif
