/* llama.cpp's tensor names and conventions against the Hugging Face names hearth's loader
 * asks for: blk.N.attn_q.weight <-> model.layers.N.self_attn.q_proj.weight and the rest, per
 * GGUF architecture, and the rotary row permutation convert_hf_to_gguf.py applies to llama
 * q/k projections (docs/gguf.md). */
#ifndef HR_MODEL_GGUF_NAMES_H
#define HR_MODEL_GGUF_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* The HF name of GGUF tensor `gguf` in a file of architecture `arch` into hf (n bytes); for
 * the stacked experts (ffn_*_exps) hf is a pattern with %d for the expert and *stacked is
 * 1. Returns 0 for a name with no HF counterpart. */
int hr_gguf_to_hf(const char *arch, const char *gguf, char *hf, size_t n, int *stacked);
/* The reverse: the GGUF name of HF tensor `hf` (*expert: the expert index of a per-expert
 * HF tensor, which goes into the stacked GGUF tensor, else -1). Returns 0 when unmapped. */
int hr_hf_to_gguf(const char *arch, const char *hf, char *gguf, size_t n, int *expert);

/* 1 when the converter permutes q/k rows of this architecture (llama, and Mistral files,
 * which are llama). kind: 'q' or 'k' for q_proj / k_proj (weight or bias), else 0. */
int hr_gguf_permutes(const char *arch);
char hr_gguf_qk_kind(const char *hf);
/* dst = src with rows permuted as the converter does (inverse = 0) or undone (inverse =
 * 1): per head of `rows / n_head` rows, row j*half + i of HF order sits at 2i + j. */
void hr_gguf_permute_rows(const void *src, void *dst, int64_t rows, size_t row_bytes, int n_head,
                          int inverse);

#endif
