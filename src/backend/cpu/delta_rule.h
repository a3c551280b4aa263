/* The gated delta rule of one value head, recurrent (reference) and chunked; see
 * delta_rule.c. */
#ifndef HR_BACKEND_CPU_DELTA_RULE_H
#define HR_BACKEND_CPU_DELTA_RULE_H

#include <stddef.h>

#include "backend/cpu/kernels.h"

/* Tokens per chunk of the chunked form (transformers uses 64). */
enum { HR_DELTA_CHUNK = 64 };

/* One value head's inputs over T tokens, prepared (normalised, gated). */
typedef struct {
    int T, dk, dv;
    const float *q, *k; /* (T, dk) each, l2-normalised; q also scaled by 1/sqrt(dk) */
    const float *v;     /* (T, v_ld) rows, dv used */
    long v_ld;
    const float *g, *beta; /* (T) log decay (<= 0) and write strength */
    float *out;            /* (T, out_ld) rows, dv written */
    long out_ld;
} hr_delta_head;

/* Token by token: S (dk, dv) <- S e^g; S += k (beta (v - S^T k))^T; out = S^T q.
 * d is scratch of dv floats. */
void hr_delta_recurrent(const hr_delta_head *h, float *S, float *d);
/* The same over chunks of HR_DELTA_CHUNK tokens; scratch holds
 * hr_delta_chunked_scratch(dk, dv) floats. */
void hr_delta_chunked(const hr_delta_head *h, float *S, float *scratch);
size_t hr_delta_chunked_scratch(int dk, int dv);

#endif
