/* Internals of hr_model shared by the loader (model.c) and the forward pass (forward.c). */
#ifndef HR_MODEL_INTERNAL_H
#define HR_MODEL_INTERNAL_H

#include "model/model.h"
#include "model/safetensors.h"

typedef struct {
    const hr_tensor *attn_norm;          /* (hidden) */
    const hr_tensor *wq, *wk, *wv, *wo;  /* (H*hd, hidden) (KVH*hd, hidden) x2 (hidden, H*hd) */
    const hr_tensor *bq, *bk, *bv, *bo;  /* biases or NULL */
    const hr_tensor *q_norm, *k_norm;    /* (hd) or NULL */
    const hr_tensor *mlp_norm;           /* (hidden) */
    const hr_tensor *w_gate, *w_up;      /* (inter, hidden) */
    const hr_tensor *w_down;             /* (hidden, inter) */
    const hr_tensor *b_gate, *b_up, *b_down;
} hr_layer_weights;

/* Per-step activation buffers on the backend, grown to the largest step seen. */
typedef struct {
    int cap_tokens, cap_logit_rows;
    float *x;      /* (T, hidden) residual stream */
    float *h;      /* (T, hidden) normed input / sublayer output */
    float *q;      /* (T, H*hd) */
    float *k, *v;  /* (T, KVH*hd) */
    float *attn;   /* (T, H*hd) */
    float *gate, *up; /* (T, inter) */
    float *sel;    /* (R, hidden) rows that produce logits */
    float *logits; /* (R, vocab) */
} hr_scratch;

struct hr_model {
    hr_model_config cfg;
    hr_backend *be;
    hr_safetensors *st;
    hr_tensor *dev; /* uploaded tensors, owned */
    int n_dev, cap_dev;
    const hr_tensor *embed, *final_norm, *lm_head;
    hr_layer_weights *layers;
    float *inv_freq_host; /* (rot_dim/2) */
    const hr_tensor *inv_freq;
    int rot_dim;
    hr_scratch s;
    int32_t *meta_pos, *meta_row; /* (cap_tokens) */
    const int32_t **meta_tables;  /* (cap rows) */
    int cap_rows;
};

/* Fills m->inv_freq_host for the config's rope type (rope.c). */
hr_err *hr_rope_init(hr_model *m);

#endif
