/* Which tensors `hearth convert` quantizes, and to how many bits: the 2-D matrices mlx-lm
 * quantizes (Linear and Embedding weights; not norms, biases, conv weights or MoE experts,
 * whose hearth kernels are float only; MoE routers at 8 bits as mlx-lm's model predicates),
 * minus --keep globs; mlx-lm's mixed recipes; and the --target-bpw allocation from measured
 * sensitivities. Costs count the scales and biases: a tensor at b bits and group g with
 * companions of c bytes costs b + 16 c / g bits per weight. */
#ifndef HR_MODEL_QUANT_PLAN_H
#define HR_MODEL_QUANT_PLAN_H

#include "model/safetensors.h"

enum { HR_QPLAN_LEVELS = 6 };
/* The bit widths an allocation picks from, low to high. */
extern const int hr_qplan_levels[HR_QPLAN_LEVELS];

typedef struct {
    const char *name;   /* file tensor name (points into the safetensors) */
    hr_dtype dtype;     /* its dtype (the companions' too) */
    int64_t rows, cols; /* 0 for tensors that are not matrices */
    int candidate;      /* quantizable and not kept */
    int fixed;          /* bits set by a rule (routers), not by an allocation */
    int bits, group;    /* 0 bits: written as is */
} hr_qplan_entry;

typedef struct {
    hr_qplan_entry *e; /* one per file tensor, in the file's order */
    int n;
} hr_qplan;

/* Every tensor of st, at `bits` / `group` where quantizable. */
hr_err *hr_qplan_build(const hr_safetensors *st, int bits, int group, const char *const *keep,
                       int n_keep, hr_qplan *out);
void hr_qplan_free(hr_qplan *p);
/* mlx-lm's recipe (n_layers: the model's; tied: the embedding is the head) (mixed_2_6, mixed_3_4,
 * mixed_3_6, mixed_4_6): high bits for lm_head (and a tied embedding), and for v_proj / down_proj
 * of the first and last eighth of the layers and every third layer between; low bits elsewhere. */
hr_err *hr_qplan_mixed(hr_qplan *p, const char *recipe, int n_layers, int tied);
/* Average bits per weight over the candidates (kept ones at their float width). */
double hr_qplan_bpw(const hr_qplan *p);
/* Picks each non-fixed candidate's bits from hr_qplan_levels to reach `target` bits per
 * weight, greedily where the measured KL falls most per bit: sens[i * HR_QPLAN_LEVELS + k] is
 * the KL with only entry i at level k. */
hr_err *hr_qplan_target(hr_qplan *p, double target, const double *sens);

#endif
