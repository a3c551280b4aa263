/* Opening the tokenizer of a model path the one way verbs and the engine do it: a
 * directory's tokenizer.json, or a GGUF file's tokenizer.ggml.* metadata. */
#ifndef HR_ENGINE_TOK_OPEN_H
#define HR_ENGINE_TOK_OPEN_H

#include "model/gguf.h"
#include "tokenizer/tokenizer.h"

/* Nonzero when path (a directory or a .gguf file) has a tokenizer. */
int hr_tokenizer_available(const char *path);
hr_err *hr_tokenizer_open(const char *path, hr_tokenizer **out);
/* The tokenizer of an open GGUF file's tokenizer.ggml.* metadata (g may be closed after). */
hr_err *hr_tokenizer_from_gguf(const hr_gguf *g, hr_tokenizer **out);

#endif
