/* Where a model's config and weights come from: a checkpoint directory (config.json +
 * safetensors) or a GGUF file (metadata + tensors, gguf_weights.c). Either answers the
 * loader's lookups by Hugging Face tensor name with tensors in their file dtype. */
#ifndef HR_MODEL_WEIGHTS_H
#define HR_MODEL_WEIGHTS_H

#include "base/err.h"
#include "model/config.h"
#include "tensor/tensor.h"

typedef struct {
    const hr_tensor *(*get)(const void *impl, const char *name);
    size_t (*data_bytes)(const void *impl);
    hr_dtype (*main_dtype)(const void *impl);
    void (*close)(void *impl);
} hr_weights_vt;

typedef struct hr_weights {
    const hr_weights_vt *vt;
    void *impl;
} hr_weights;

/* path: a checkpoint directory or a .gguf file; fills cfg from config.json or the GGUF
 * metadata. Anything else is an error saying so. */
hr_err *hr_weights_open(const char *path, hr_model_config *cfg, hr_weights **out);
void hr_weights_close(hr_weights *w);
/* The tensor named name (HF naming), or NULL. */
const hr_tensor *hr_weights_get(const hr_weights *w, const char *name);
/* Bytes of tensor data as stored. */
size_t hr_weights_data_bytes(const hr_weights *w);
/* The dtype holding most of the weight bytes (what the numerics choice looks at). */
hr_dtype hr_weights_main_dtype(const hr_weights *w);

/* The GGUF source (gguf_weights.c). */
hr_err *hr_gguf_weights_open(const char *path, hr_model_config *cfg, hr_weights **out);

#endif
