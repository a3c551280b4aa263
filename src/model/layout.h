/* The dense family's tensor layout as data: each per-layer tensor's name suffix, shape
 * (in config dimensions), when it exists, and where the loader stores it. The loader and
 * `hearth mkmodel` both walk this table, so they cannot disagree. */
#ifndef HR_MODEL_LAYOUT_H
#define HR_MODEL_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"

typedef enum { HR_DIM_NONE, HR_DIM_HIDDEN, HR_DIM_Q, HR_DIM_KV, HR_DIM_INTER, HR_DIM_HEAD, HR_DIM_VOCAB,
               HR_DIM_ONE, HR_DIM_PLE, HR_DIM_EXPERTS, HR_DIM_MOE_INTER,
               /* rows of a 3-D expert tensor [experts, rows / experts, cols]: */
               HR_DIM_EXPERTS_MOE_INTER2, HR_DIM_EXPERTS_HIDDEN } hr_dim;
typedef enum { HR_WHEN_ALWAYS, HR_WHEN_QKV_BIAS, HR_WHEN_O_BIAS, HR_WHEN_MLP_BIAS, HR_WHEN_QK_NORM,
               HR_WHEN_OWN_KV, HR_WHEN_K_NORM, HR_WHEN_SANDWICH, HR_WHEN_NOT_SANDWICH, HR_WHEN_PLE,
               HR_WHEN_LAYER_SCALAR, HR_WHEN_MOE } hr_when;
typedef enum { HR_INIT_LINEAR, HR_INIT_NORM, HR_INIT_BIAS, HR_INIT_EMBED } hr_init;

typedef struct {
    const char *suffix; /* after "model.layers.N." */
    size_t field;       /* offsetof(hr_layer_weights, ...) */
    hr_dim rows, cols;  /* cols HR_DIM_NONE: a vector */
    hr_when when;
    hr_init init;       /* how mkmodel draws it */
} hr_layer_tensor;

extern const hr_layer_tensor hr_dense_layer_tensors[];
extern const int hr_dense_layer_tensor_count;

int64_t hr_dim_value(const hr_model_config *c, hr_dim d);
int hr_when_holds(const hr_model_config *c, hr_when w);
/* hr_dim_value for layer l (per-layer head dims). */
int64_t hr_layer_dim_value(const hr_model_config *c, int l, hr_dim d);
/* Whether rows of d stack the experts (a 3-D tensor); the per-expert rows are value / E. */
int hr_dim_is_experts(hr_dim d);
/* Whether layer l has tensor t (hr_when_holds plus the per-layer conditions). */
int hr_layer_has(const hr_model_config *c, int l, const hr_layer_tensor *t);

#endif
