/* Logits processors and log-probabilities; see logits_proc.h. Penalties touch only the
 * tokens that occur, found by one pass over the history with a vocab-sized count array
 * shared by all rows (cleared by a second pass), so no row keeps a vocab-sized array. */
#include "engine/logits_proc.h"

#include <math.h>
#include <stddef.h>

hr_err *hr_proc_params_check(const hr_proc_params *p, int vocab) {
    if (!(p->repetition_penalty >= 0) || p->repetition_penalty > 100)
        return hr_errf("repetition_penalty must be in (0, 100]");
    if (!(fabsf(p->presence_penalty) <= 2)) return hr_errf("presence_penalty must be in [-2, 2]");
    if (!(fabsf(p->frequency_penalty) <= 2)) return hr_errf("frequency_penalty must be in [-2, 2]");
    if (p->last_n < 0) return hr_errf("the penalty window must be >= 0 tokens (0 = all)");
    if (p->n_bias < 0 || (p->n_bias > 0 && (!p->bias_ids || !p->bias_values)))
        return hr_errf("logit_bias: ids and values are required");
    for (int i = 0; i < p->n_bias; i++) {
        if (p->bias_ids[i] < 0 || p->bias_ids[i] >= vocab)
            return hr_errf("logit_bias: token id %d out of range (vocab %d)", p->bias_ids[i],
                           vocab);
        if (!(fabsf(p->bias_values[i]) <= 100))
            return hr_errf("logit_bias: values must be in [-100, 100]");
    }
    return NULL;
}

int hr_proc_active(const hr_proc_params *p) {
    return (p->repetition_penalty > 0 && p->repetition_penalty != 1) || p->presence_penalty != 0 ||
           p->frequency_penalty != 0 || p->n_bias > 0;
}

static void repetition(float *logits, float pen, const int32_t *ids, int n, int *seen) {
    for (int i = 0; i < n; i++) {
        int t = ids[i];
        if (seen[t]) continue;
        seen[t] = 1;
        logits[t] = logits[t] > 0 ? logits[t] / pen : logits[t] * pen;
    }
}

void hr_proc_apply(const hr_proc_params *p, float *logits, int vocab, const int32_t *prompt,
                   int n_prompt, const int32_t *out, int n_out, int *counts) {
    (void)vocab;
    for (int i = 0; i < p->n_bias; i++)
        logits[p->bias_ids[i]] += p->bias_values[i];
    if (p->last_n > 0 && n_out > p->last_n) { /* the window lies inside the output */
        out += n_out - p->last_n;
        n_out = p->last_n;
    }
    if (p->last_n > 0 && n_prompt > p->last_n - n_out) { /* and takes the prompt's tail */
        prompt += n_prompt - (p->last_n - n_out);
        n_prompt = p->last_n - n_out;
    }
    if (p->repetition_penalty > 0 && p->repetition_penalty != 1) {
        repetition(logits, p->repetition_penalty, prompt, n_prompt, counts);
        repetition(logits, p->repetition_penalty, out, n_out, counts);
        for (int i = 0; i < n_prompt; i++)
            counts[prompt[i]] = 0;
        for (int i = 0; i < n_out; i++)
            counts[out[i]] = 0;
    }
    if (p->presence_penalty == 0 && p->frequency_penalty == 0) return;
    for (int i = 0; i < n_out; i++)
        counts[out[i]]++;
    for (int i = 0; i < n_out; i++) {
        int t = out[i];
        if (!counts[t]) continue;
        logits[t] -= p->presence_penalty + p->frequency_penalty * (float)counts[t];
        counts[t] = 0;
    }
}

float hr_logprobs(const float *logits, int vocab, int32_t token, int top_n, int32_t *top_ids,
                  float *top_lp) {
    float mx = -INFINITY;
    for (int i = 0; i < vocab; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0;
    for (int i = 0; i < vocab; i++)
        sum += exp((double)(logits[i] - mx));
    float lse = mx + (float)log(sum);
    int n = 0; /* insertion into a sorted top list: top_n is small (<= 20) */
    for (int i = 0; i < vocab && top_n > 0; i++) {
        if (n == top_n && logits[i] <= logits[top_ids[n - 1]]) continue;
        int j = n < top_n ? n++ : n - 1;
        while (j > 0 && logits[top_ids[j - 1]] < logits[i]) {
            top_ids[j] = top_ids[j - 1];
            j--;
        }
        top_ids[j] = i;
    }
    for (int i = 0; i < n; i++)
        top_lp[i] = logits[top_ids[i]] - lse;
    return logits[token] - lse;
}
