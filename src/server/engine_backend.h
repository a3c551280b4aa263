/* The server's backend interface (server.h) implemented over the engine: renders chat
 * requests through the engine's prompt path, fits max_tokens into the context, submits
 * token ids to the engine and turns its events into sink calls. */
#ifndef HR_SERVER_ENGINE_BACKEND_H
#define HR_SERVER_ENGINE_BACKEND_H

#include "engine/engine.h"
#include "server/server.h"

typedef struct hr_engine_server hr_engine_server;

/* Wraps e (borrowed; it must outlive the wrapper), which must have a tokenizer; chat
 * requests go through the engine's prompt path (engine/prompt.h). name is the model id
 * clients see. */
hr_err *hr_engine_server_create(hr_engine *e, const char *name, hr_engine_server **out);
/* Frees the wrapper; every request it submitted must have finished. */
void hr_engine_server_destroy(hr_engine_server *s);
const hr_server_backend *hr_engine_server_backend(hr_engine_server *s);

#endif
