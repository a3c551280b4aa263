/* Opening a model directory the one way every verb and the engine do it: the backend,
 * the weights, and the tokenizer when the directory has one. */
#ifndef HR_ENGINE_OPEN_H
#define HR_ENGINE_OPEN_H

#include "backend/backend.h"
#include "engine/numerics.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    const char *device;       /* "cpu", "cuda", "auto" or NULL (auto): see hr_backend_create */
    int n_threads;            /* <= 0: all online CPUs */
    hr_numerics_req numerics; /* products and KV dtype: hr_numerics_choose */
    int weights_in_place;     /* compute from the mmapped file instead of a copy */
    int need_tokenizer;       /* a directory without tokenizer.json is an error */
    int no_tokenizer;         /* do not load the tokenizer (verbs that work on ids) */
} hr_open_options;

typedef struct {
    hr_backend *be;
    hr_model *model;
    hr_tokenizer *tok;    /* NULL when the directory has no tokenizer.json */
    hr_numerics numerics; /* what was chosen (the model's KV stores use numerics.kv) */
} hr_opened_model;

/* Reads the weight dtype from the headers first, so the numerics are chosen (with the
 * backend's caps) before the backend is created and the weights are uploaded. */
hr_err *hr_model_open(const char *dir, const hr_open_options *o, hr_opened_model *out);
/* Frees what hr_model_open made (any part may be NULL). */
void hr_model_close(hr_opened_model *m);

#endif
