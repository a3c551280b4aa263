/* Internals of hr_model shared by the loader (model.c) and the forward pass (forward.c). */
#ifndef HR_MODEL_INTERNAL_H
#define HR_MODEL_INTERNAL_H

#include "model/mlx_load.h"
#include "model/model.h"
#include "model/weights.h"

typedef struct {
    const hr_tensor *attn_norm;         /* (hidden) */
    const hr_tensor *wq, *wk, *wv, *wo; /* (H*hd, hidden) (KVH*hd, hidden) x2 (hidden, H*hd) */
    const hr_tensor *bq, *bk, *bv, *bo; /* biases or NULL */
    const hr_tensor *q_norm, *k_norm;   /* (hd) or NULL */
    const hr_tensor *mlp_norm;          /* (hidden) */
    const hr_tensor *w_gate, *w_up;     /* (inter, hidden) */
    const hr_tensor *w_down;            /* (hidden, inter) */
    const hr_tensor *b_gate, *b_up, *b_down;
    const hr_tensor *post_attn_norm, *post_mlp_norm; /* (hidden) sandwich norms or NULL */
    const hr_tensor *layer_scalar;    /* (1) or NULL; its value is in hr_model.layer_scale */
    const hr_tensor *ple_gate;        /* (ple, hidden) per-layer input gate or NULL */
    const hr_tensor *ple_proj;        /* (hidden, ple) */
    const hr_tensor *ple_norm;        /* (hidden) */
    const hr_tensor *router;          /* (E, hidden) MoE router (gemma4 block or routed MLP) */
    const hr_tensor *router_scale;    /* (hidden) */
    const hr_tensor *expert_scale;    /* (E) */
    const hr_tensor *experts_gate_up; /* (E, 2*moe_intermediate, hidden): gate rows, then up rows */
    const hr_tensor *experts_down;    /* (E, hidden, moe_intermediate) */
    const hr_tensor *moe_norm, *post_mlp_norm1, *post_moe_norm; /* (hidden) */
    /* routed MLP (moe_layer) */
    const hr_tensor **exp_gate, **exp_up, **exp_down; /* [experts]: (mi, hidden) x2, (hidden, mi) */
    const hr_tensor *sh_gate, *sh_up, *sh_down; /* shared expert (si, hidden) x2, (hidden, si) */
    const hr_tensor *sh_router;                 /* shared_expert_gate (1, hidden) */
    /* gated DeltaNet (HR_LAYER_LINEAR); qwen3_next's fused projections are split at load */
    const hr_tensor *lin_qkvz, *lin_ba; /* (2kd + 2vd, hidden) (2 nv, hidden) */
    const hr_tensor *lin_qkv, *lin_z, *lin_b,
        *lin_a;                       /* (conv, hidden) (vd, hidden) (nv, hidden) x2 */
    const hr_tensor *conv_w;          /* (conv, 1, K) */
    const hr_tensor *a_log, *dt_bias; /* (nv) */
    const hr_tensor *lin_norm;        /* (dv) gated RMSNorm */
    const hr_tensor *lin_out;         /* (hidden, vd) */
} hr_layer_weights;

/* Per-step activation buffers on the backend, grown to the largest step seen. */
typedef struct {
    int cap_tokens, cap_logit_rows;
    float *x;               /* (T, hidden) residual stream */
    float *h;               /* (T, hidden) normed input / sublayer output */
    float *q;               /* (T, H*hd) */
    float *k, *v;           /* (T, KVH*hd) */
    float *attn;            /* (T, H*hd) */
    float *gate, *up;       /* (T, inter) */
    float *sel;             /* (R, hidden) rows that produce logits */
    float *logits;          /* (R, vocab) */
    int32_t *ids;           /* (R) greedy tokens (hr_model_forward_greedy) */
    hr_sample_out *sampled; /* (R) the sample op's results (hr_model_forward_sample) */
    int logit_rows;         /* R of the last step: rows of logits on the device */
    float *ple;             /* (T, n_layers*ple) per-layer inputs */
    float *ple_g;           /* (T, ple) */
    float *ple_l;           /* (T, ple) this layer's slice of ple */
    float *moe_x;           /* (T, hidden) gemma4's expert input */
    /* MoE (both gemma4's block and routed MLPs) and hybrid layers (forward_hybrid.c) */
    float *qg;      /* (T, 2*H*hd) q_proj output with the gate interleaved per head */
    float *agate;   /* (T, H*hd) attention output gate */
    float *rlogits; /* (T, experts) router logits */
    float *rweight; /* (T, top_k) routing weights */
    int32_t *rids;  /* (T, top_k) routed experts */
    float *mix;     /* (T, conv) DeltaNet projections, then conv output */
    float *z;       /* (T, vd) */
    float *ab;      /* (T, 2 nv): a then b */
    float *lin;     /* (T, vd) delta-rule output */
    float *y2;      /* (T, hidden) routed-experts output */
} hr_scratch;

struct hr_model {
    hr_model_config cfg;
    hr_backend *be;
    hr_weights *w;      /* where config and tensors came from */
    hr_mlx_qconfig mlx; /* config.json's MLX quantization block (q NULL: none) */
    hr_tensor *dev;     /* uploaded tensors, owned */
    char **dev_name;    /* (cap_dev) the file tensor each was uploaded from as is, or NULL */
    int n_dev, cap_dev;
    const hr_tensor *embed, *final_norm, *lm_head;
    /* ids n_token_ids .. vocab - 1 have no token (a vocabulary padded past the tokenizer's):
     * the head writes no_token (backend memory, vocab - n_token_ids of -inf) over their logits */
    int n_token_ids;
    float *no_token;
    hr_layer_weights *layers;
    float *inv_freq_host; /* (rot_dim/2) */
    const hr_tensor *inv_freq;
    int rot_dim;
    hr_scratch s;
    /* the step's metadata (hr_step_meta's flat host arrays), grown as steps need */
    int32_t *meta_tokens, *meta_pos, *meta_row; /* (cap_tokens) */
    int32_t *meta_qstart;                       /* (cap_rows + 1) */
    int32_t *meta_table;                        /* (cap_table) [n_rows, max_blocks] */
    size_t cap_table;
    int cap_rows;
    /* per-layer geometry (see docs/families.md) */
    int max_head_dim;           /* largest layer_head_dim: scratch and KV slot size */
    int kv_slot[HR_MAX_LAYERS]; /* KV store layer of each attention layer */
    int n_kv_slots;
    int kv_slot_head_dim[HR_MAX_LAYERS]; /* (n_kv_slots) */
    hr_dtype kv_dtype;                   /* of the KV stores made for it (F32 unless set) */
    float layer_scale[HR_MAX_LAYERS];    /* layer_scalar values (1 when absent) */
    const hr_tensor *inv_freq_sliding;   /* rope table of sliding layers */
    float *inv_freq_sliding_host;
    int rot_dim_sliding;
    const hr_tensor *ple_embed;      /* (ple_vocab, n_layers*ple) or NULL */
    const hr_tensor *ple_model_proj; /* (n_layers*ple, hidden) */
    const hr_tensor *ple_proj_norm;  /* (ple) */
    hr_tensor *expert_views;         /* (n_layers, 3, E) gate, up, down views, owned */
    const hr_tensor **expert_ptrs;   /* (n_layers, 3, E) pointers to them */
    hr_moe_weights *moe;             /* (n_layers) the experts as the MoE op takes them */
    const hr_tensor **expert_slots;  /* (n_layers * 3 * experts) backing the exp_* arrays */
    void **owned_host;               /* host copies made at load (split projections) */
    int n_owned;
    int state_layer[HR_MAX_LAYERS]; /* linear layer -> recurrent state layer */
    int n_state_layers;
    int32_t *meta_slots; /* (cap rows) */
};

/* Replaces *buf with a fresh backend buffer of `bytes` (scratch growth, forward.c). */
hr_err *hr_scratch_grow(hr_model *m, void **buf, size_t bytes);

/* Hybrid pieces of the loader (load_hybrid.c) and forward (forward_hybrid.c). */
hr_err *hr_load_hybrid_prepare(hr_model *m);
hr_err *hr_load_hybrid_finish(hr_model *m);
void hr_free_hybrid(hr_model *m);
hr_err *hr_hybrid_scratch(hr_model *m, int T);
hr_err *hr_check_state_slots(const hr_model *m, const hr_kv_store *kv, const hr_row *rows,
                             int n_rows);
/* Records the positions the step's rows have consumed (after the step was issued). */
void hr_advance_state_slots(const hr_model *m, hr_kv_store *kv, const hr_row *rows, int n_rows);
void hr_linear_attn_block(hr_model *m, hr_kv_store *kv, int l, int T);
void hr_moe_block(hr_model *m, int l, int T);

/* Fills m->inv_freq_host for the config's rope type, divided by a GGUF rope_freqs.weight
 * when the weights have one (rope.c). */
hr_err *hr_rope_init(hr_model *m);

#endif
