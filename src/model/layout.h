/* The dense family's tensor layout as data: each per-layer tensor's name suffix, shape
 * (in config dimensions), when it exists, and where the loader stores it. The loader and
 * `hearth mkmodel` both walk this table, so they cannot disagree. */
#ifndef HR_MODEL_LAYOUT_H
#define HR_MODEL_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"

typedef enum {
    HR_DIM_NONE,
    HR_DIM_HIDDEN,
    HR_DIM_Q,
    HR_DIM_KV,
    HR_DIM_INTER,
    HR_DIM_HEAD,
    HR_DIM_VOCAB,
    HR_DIM_Q_PROJ, /* Q, doubled when q_proj also yields the output gate */
    HR_DIM_EXPERTS,
    HR_DIM_MOE_INTER,
    HR_DIM_SHARED_INTER,
    HR_DIM_ONE,
    HR_DIM_PLE, /* gemma4 per-layer input width */
    /* rows of a 3-D expert tensor [experts, rows / experts, cols] (gemma4): */
    HR_DIM_EXPERTS_MOE_INTER2,
    HR_DIM_EXPERTS_HIDDEN,
    HR_DIM_LIN_QKVZ, /* 2 * key_dim + 2 * value_dim */
    HR_DIM_LIN_BA,   /* 2 * linear value heads */
    HR_DIM_LIN_CONV, /* conv channels: 2 * key_dim + value_dim */
    HR_DIM_LIN_V,    /* value_dim = value heads * value head dim */
    HR_DIM_LIN_VH,   /* linear value heads */
    HR_DIM_LIN_VHD,  /* linear value head dim */
    HR_DIM_CONV_K    /* conv kernel width */
} hr_dim;
typedef enum {
    HR_WHEN_ALWAYS,
    HR_WHEN_QKV_BIAS,
    HR_WHEN_O_BIAS,
    HR_WHEN_MLP_BIAS,
    HR_WHEN_QK_NORM,
    HR_WHEN_OWN_KV,
    HR_WHEN_K_NORM,
    HR_WHEN_SANDWICH,
    HR_WHEN_NOT_SANDWICH,
    HR_WHEN_PLE,
    HR_WHEN_LAYER_SCALAR,
    HR_WHEN_MOE,
    HR_WHEN_SHARED_EXPERT,
    HR_WHEN_LIN_FUSED,
    HR_WHEN_LIN_SPLIT
} hr_when;
/* Which layers carry a tensor: any, attention / linear-attention token mixers, dense / routed MLPs.
 */
typedef enum { HR_AT_ANY, HR_AT_ATTN, HR_AT_LINEAR, HR_AT_DENSE_MLP, HR_AT_MOE } hr_at;
typedef enum { HR_INIT_LINEAR, HR_INIT_NORM, HR_INIT_BIAS, HR_INIT_EMBED } hr_init;

typedef struct {
    const char *suffix; /* after "model.layers.N." */
    size_t field;       /* offsetof(hr_layer_weights, ...) */
    hr_dim rows, cols;  /* cols HR_DIM_NONE: a vector */
    hr_when when;
    hr_init init;   /* how mkmodel draws it */
    hr_at at;       /* which layers have it */
    int per_expert; /* suffix has a %d for the expert; field is a (const hr_tensor **) array */
    int conv;       /* stored as (rows, 1, cols) */
} hr_layer_tensor;

extern const hr_layer_tensor hr_dense_layer_tensors[];
extern const int hr_dense_layer_tensor_count;
/* The MoE and linear-attention tensors (layout_hybrid.c). */
extern const hr_layer_tensor hr_hybrid_layer_tensors[];
extern const int hr_hybrid_layer_tensor_count;

/* Every per-layer tensor kind, dense then hybrid: i in [0, hr_layout_count()). */
int hr_layout_count(void);
const hr_layer_tensor *hr_layout_tensor(int i);
/* 1 if layer `layer` of c has tensor t (config flags, layer kind, KV sharing). */
int hr_layer_has(const hr_model_config *c, const hr_layer_tensor *t, int layer);

int64_t hr_dim_value(const hr_model_config *c, hr_dim d);
int hr_when_holds(const hr_model_config *c, hr_when w);
/* hr_dim_value for layer l (per-layer head dims). */
int64_t hr_layer_dim_value(const hr_model_config *c, int l, hr_dim d);
/* Whether rows of d stack the experts (a 3-D tensor); the per-expert rows are value / E. */
int hr_dim_is_experts(hr_dim d);
/* The hybrid dims (layout_hybrid.c); 0 for others. */
int64_t hr_dim_value_hybrid(const hr_model_config *c, hr_dim d);

#endif
