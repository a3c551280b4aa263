/* The sampling math in C (sample.h): softmax at a temperature, the min-p / top-k / top-p
 * candidates, the walk that turns a uniform draw into a token, log-probabilities, processor
 * edits, and the sample op on one row. engine/sampler.c samples on the host with these, the
 * CPU backend's sample op is hr_sample_ref, so a row the device leaves to the host and a row
 * the CPU op decides take the same steps. Top-p works on a candidate set pruned of tokens
 * whose total mass cannot reach the nucleus, so it sorts a few hundred tokens, not the
 * vocabulary. */
#define _GNU_SOURCE
#include "backend/sample.h"

#include <math.h>
#include <stdlib.h>

int32_t hr_sample_argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

float hr_sample_softmax(float *probs, const float *logits, int V, float temperature) {
    float mx = logits[hr_sample_argmax(logits, V)], inv_t = 1.0f / temperature, sum = 0;
    for (int i = 0; i < V; i++)
        sum += probs[i] = expf((logits[i] - mx) * inv_t);
    for (int i = 0; i < V; i++)
        probs[i] /= sum;
    return 1.0f / sum;
}

static int by_prob_desc(const void *a, const void *b, void *ctx) {
    const float *probs = ctx;
    float pa = probs[*(const int32_t *)a], pb = probs[*(const int32_t *)b];
    return pa < pb ? 1 : pa > pb ? -1 : *(const int32_t *)a - *(const int32_t *)b;
}

/* The nucleus: the shortest sorted prefix of idx[0..n) whose mass reaches top_p (all n if
 * none does). */
static int nucleus(const float *probs, const int32_t *idx, int n, float top_p) {
    float cum = 0;
    for (int i = 0; i < n; i++) {
        cum += probs[idx[i]];
        if (cum >= top_p) return i + 1;
    }
    return n;
}

int hr_sample_candidates(const float *probs, int32_t *idx, int V, float pmax, float min_p,
                         float top_p, int top_k, int cap) {
    int n = 0;
    float floor = min_p * pmax;
    if (top_p < 1) floor = fmaxf(floor, (1.0f - top_p) / (2.0f * (float)V));
    for (int i = 0; i < V; i++)
        if (probs[i] >= floor && probs[i] > 0) idx[n++] = i;
    int cut_k = top_k > 0 && top_k < n;
    if (!cut_k && top_p >= 1) return n; /* index order: no sort */
    if (top_p >= 1 && top_k > cap) return -1;
    qsort_r(idx, (size_t)n, sizeof *idx, by_prob_desc, (void *)probs);
    if (cut_k) n = top_k;
    if (top_p < 1) n = nucleus(probs, idx, n, top_p);
    return n > cap ? -1 : n;
}

int32_t hr_sample_walk(const float *probs, const int32_t *idx, int n, double u) {
    double total = 0, cum = 0;
    for (int i = 0; i < n; i++)
        total += probs[idx[i]];
    u *= total;
    for (int i = 0; i < n; i++) {
        cum += probs[idx[i]];
        if (u < cum) return idx[i];
    }
    return idx[n - 1];
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

void hr_sample_apply_edits(float *logits, const hr_logit_edit *e, int n) {
    for (int i = 0; i < n; i++) {
        float l = logits[e[i].id];
        if (e[i].add != 0) l += e[i].add;
        if (e[i].rep != 1) l = l > 0 ? l / e[i].rep : l * e[i].rep;
        if (e[i].sub != 0) l -= e[i].sub;
        logits[e[i].id] = l;
    }
}

void hr_sample_ref(hr_sample_out *out, float *logits, int V, const hr_sample_row *row,
                   const hr_logit_edit *edits, float *probs, int32_t *idx) {
    out->id = -1;
    out->logprob = 0;
    if (row->mode == HR_SAMPLE_HOST) return;
    hr_sample_apply_edits(logits, edits + row->edit_start, row->n_edits);
    if (row->mode == HR_SAMPLE_GREEDY) {
        out->id = hr_sample_argmax(logits, V);
    } else {
        float pmax = hr_sample_softmax(probs, logits, V, row->temperature);
        int n = hr_sample_candidates(probs, idx, V, pmax, row->min_p, row->top_p, row->top_k,
                                     HR_SAMPLE_CAP);
        if (n <= 0) return; /* the host decides (it takes the argmax when nothing is left) */
        out->id = hr_sample_walk(probs, idx, n, row->u);
    }
    if (row->logprob || row->n_top > 0)
        out->logprob = hr_logprobs(logits, V, out->id, row->n_top, out->top_ids, out->top_lp);
}
