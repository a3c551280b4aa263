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

/* The last-n windows of prompt and output (the window takes the output's tail first). */
static void windows(const hr_proc_params *p, const int32_t **prompt, int *n_prompt,
                    const int32_t **out, int *n_out) {
    if (p->last_n > 0 && *n_out > p->last_n) {
        *out += *n_out - p->last_n;
        *n_out = p->last_n;
    }
    if (p->last_n > 0 && *n_prompt > p->last_n - *n_out) {
        *prompt += *n_prompt - (p->last_n - *n_out);
        *n_prompt = p->last_n - *n_out;
    }
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
    windows(p, &prompt, &n_prompt, &out, &n_out);
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

/* The edit of token t in edits (slot[t]: 1 + its index), added as a no-op when t has none. */
static hr_logit_edit *edit_of(hr_logit_edit *edits, int *n, int *slot, int32_t t) {
    if (!slot[t]) {
        edits[*n] = (hr_logit_edit){t, 0, 1, 0};
        slot[t] = ++*n;
    }
    return &edits[slot[t] - 1];
}

int hr_proc_edits(const hr_proc_params *p, const int32_t *prompt, int n_prompt, const int32_t *out,
                  int n_out, int *counts, hr_logit_edit *edits) {
    int n = 0, dup = 0;
    for (int i = 0; i < p->n_bias; i++) {
        dup |= counts[p->bias_ids[i]] != 0;
        edit_of(edits, &n, counts, p->bias_ids[i])->add = p->bias_values[i];
    }
    windows(p, &prompt, &n_prompt, &out, &n_out);
    if (!dup && p->repetition_penalty > 0 && p->repetition_penalty != 1) {
        for (int i = 0; i < n_prompt; i++)
            edit_of(edits, &n, counts, prompt[i])->rep = p->repetition_penalty;
        for (int i = 0; i < n_out; i++)
            edit_of(edits, &n, counts, out[i])->rep = p->repetition_penalty;
    }
    if (!dup && (p->presence_penalty != 0 || p->frequency_penalty != 0)) {
        for (int i = 0; i < n_out; i++) /* sub counts the occurrences first */
            edit_of(edits, &n, counts, out[i])->sub += 1;
        for (int i = 0; i < n; i++)
            if (edits[i].sub > 0)
                edits[i].sub = p->presence_penalty + p->frequency_penalty * edits[i].sub;
    }
    for (int i = 0; i < n; i++)
        counts[edits[i].id] = 0;
    return dup ? -1 : n;
}
