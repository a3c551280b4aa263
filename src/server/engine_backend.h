/* The server's backend interface (server.h) implemented over the engine: renders chat
 * requests through the model's chat template (or a documented fallback for base models),
 * tokenizes, submits token ids to the engine and turns its events into sink calls. */
#ifndef HR_SERVER_ENGINE_BACKEND_H
#define HR_SERVER_ENGINE_BACKEND_H

#include "engine/engine.h"
#include "server/server.h"

typedef struct hr_engine_server hr_engine_server;

/* The template used for chat requests when the model has none: "role: content" lines,
 * then "assistant:". Its prompt is tokenized with the tokenizer's special tokens (BOS). */
extern const char hr_fallback_chat_template[];

/* Wraps e (borrowed; it must outlive the wrapper). tok is the engine's tokenizer
 * (borrowed, required); template_path overrides the model's chat template; name is the
 * model id clients see. */
hr_err *hr_engine_server_create(hr_engine *e, const hr_tokenizer *tok, const char *model_dir,
                                const char *template_path, const char *name, int max_context,
                                int vocab, hr_engine_server **out);
/* Frees the wrapper; every request it submitted must have finished. */
void hr_engine_server_destroy(hr_engine_server *s);
const hr_server_backend *hr_engine_server_backend(hr_engine_server *s);

#endif
