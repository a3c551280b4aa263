/* Sensitivity of a model's output to quantizing one tensor: the mean KL divergence of the
 * next-token distributions over a calibration sequence, with that tensor alone quantized
 * and dequantized (MLX affine, as hearth convert would write it) against the model as
 * loaded. Runs on the CPU backend, swapping one weight at a time. */
#ifndef HR_ENGINE_QUANT_SENS_H
#define HR_ENGINE_QUANT_SENS_H

#include "model/model.h"
#include "model/quant_plan.h"

/* logits[n * vocab] of every position of tokens[n] through m (a fresh KV pool). */
hr_err *hr_model_logits_all(hr_model *m, const int32_t *tokens, int n, float *logits);
/* Mean over n positions of KL(softmax(ref) || softmax(q)), rows of V logits, in nats. */
double hr_mean_kl(const float *ref, const float *q, int n, int V);

/* sens[i * HR_QPLAN_LEVELS + k]: the KL with plan entry i alone at hr_qplan_levels[k] bits,
 * for every allocatable candidate (others 0). An entry the model does not use as uploaded
 * (a split fused projection) gets the mean of the measured ones at each level. */
hr_err *hr_quant_sensitivity(hr_model *m, const hr_qplan *p, const int32_t *tokens, int n,
                             int progress, double *sens);

#endif
