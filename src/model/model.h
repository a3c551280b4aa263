/* A loaded model: config, weights on a backend, and the batched forward pass. A forward
 * call takes rows (one per sequence: a prefill chunk, one decode token, or k speculative
 * tokens, with positions and a KV block table) and returns logits for the positions each
 * row asks for. The model never owns sequences or the block allocator (engine/ does). */
#ifndef HR_MODEL_MODEL_H
#define HR_MODEL_MODEL_H

#include <stdint.h>

#include "backend/backend.h"
#include "model/config.h"

typedef struct hr_model hr_model;

typedef enum { HR_LOGITS_NONE, HR_LOGITS_LAST, HR_LOGITS_ALL } hr_logits_mode;

typedef struct {
    const int32_t *tokens; /* [n_tokens] */
    int n_tokens;
    int pos0;                   /* position of tokens[0]; KV of [0, pos0) is already stored */
    const int32_t *block_table; /* covers positions [0, pos0 + n_tokens) */
    hr_logits_mode logits;
    int state_slot; /* hybrid models: the sequence's recurrent-state slot (docs/hybrid.md) */
} hr_row;

/* Loads dir (config.json + safetensors) or a .gguf file onto be. The model keeps be (not owned). */
hr_err *hr_model_load(const char *dir, hr_backend *be, hr_model **out);
void hr_model_free(hr_model *m);
const hr_model_config *hr_model_cfg(const hr_model *m);
hr_backend *hr_model_backend(const hr_model *m);
/* Bytes of weights as stored (what one decode step reads). */
size_t hr_model_weight_bytes(const hr_model *m);
/* A hash of the weights' contents, sampled (model.c says how): what the prefix cache's
 * fingerprint (engine/fingerprint.c) takes so that another checkpoint of one shape never
 * shares KV. */
uint64_t hr_model_weight_hash(const hr_model *m);

/* The uploaded tensor made as is from file tensor `name` (not a split or gathered one), or
 * NULL. Mutable for convert's sensitivity measurement, which swaps in perturbed f32 copies
 * on the CPU backend and restores the original before anything else runs. */
hr_tensor *hr_model_weight_dev(hr_model *m, const char *name);

/* The KV geometry of a config: dtype, the per-slot head dims (written to slot_head_dim,
 * HR_MAX_LAYERS entries, which kv->layer_head_dim then points at), n_kv_heads and the
 * recurrent-state sizes; no blocks, slots or memory. `hearth fit` sizes from it without
 * loading weights; hr_model_kv_shape is the same for a loaded model. */
void hr_config_kv_shape(const hr_model_config *c, hr_dtype dtype, hr_kv_store *kv,
                        int *slot_head_dim);
/* The KV geometry this model needs, in its KV dtype, for hr_kv_store creation. */
void hr_model_kv_shape(const hr_model *m, hr_kv_store *kv);
/* The dtype of the KV stores made from now on (hr_model_open sets the chosen one). */
void hr_model_set_kv_dtype(hr_model *m, hr_dtype dtype);
/* Only ids [0, n) are tokens (the tokenizer's size; the vocab may be padded past it): from
 * now on every logit row has -inf at ids n .. vocab - 1, written in the backend, so the device
 * argmax, the sample op and the host all skip them. n >= vocab: every id is a token. */
hr_err *hr_model_set_token_ids(hr_model *m, int n);

/* The sliding window (0 = none) of KV store layer `slot`. Positions before pos - window + 1
 * of that layer are never read again; a block can be freed once every layer that uses it
 * is past it (see docs/families.md for what the engine must do). */
int hr_model_kv_window(const hr_model *m, int slot);

/* Runs one step. logits (host, may be NULL if no row wants any) receives, in row order,
 * n_tokens x vocab floats for HR_LOGITS_ALL rows and vocab floats for HR_LOGITS_LAST. */
hr_err *hr_model_forward(hr_model *m, hr_kv_store *kv, const hr_row *rows, int n_rows,
                         float *logits);
/* The same step, but for each logit row only its argmax (the first index of the largest
 * logit, as greedy sampling picks) comes back, in ids: the logits stay on the device. */
hr_err *hr_model_forward_greedy(hr_model *m, hr_kv_store *kv, const hr_row *rows, int n_rows,
                                int32_t *ids);
/* The same step, each logit row sampled on the device by the backend's sample op
 * (hr_model_can_sample) with sample's parameters (one row per logit row, in order): out[r]
 * is row r's token and logprobs, or id -1 where the host must decide. The logits stay on the
 * device, with the edits of every row but HOST rows applied, until the next step:
 * hr_model_logits_row reads one back. */
hr_err *hr_model_forward_sample(hr_model *m, hr_kv_store *kv, const hr_row *rows, int n_rows,
                                const hr_sample_step *sample, hr_sample_out *out);
/* Whether the model's backend has the sample op. */
int hr_model_can_sample(const hr_model *m);
/* Copies logit row r (vocab floats) of the last step into dst (host). */
hr_err *hr_model_logits_row(hr_model *m, int r, float *dst);

#endif
