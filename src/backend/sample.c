/* The sampling math in C (sample.h): softmax at a temperature, the min-p / top-k / top-p
 * candidates, the walk that turns a uniform draw into a token, log-probabilities, processor
 * edits, and the sample op on one row. engine/sampler.c samples on the host with these, the
 * CPU backend's sample op is hr_sample_ref, so a row the device leaves to the host and a row
 * the CPU op decides take the same steps. Top-p works on a candidate set pruned of tokens
 * whose total mass cannot reach the nucleus, so it sorts a few hundred tokens, not the
 * vocabulary. A row's token mask (a grammar's) is applied during the loops, run by run of
 * allowed ids, not written into the logits. */
#define _GNU_SOURCE
#include "backend/sample.h"

#include <math.h>
#include <stdlib.h>

/* The next run of allowed ids at or after *lo, as [*lo, *hi); 0 when none is left. A NULL
 * mask allows every id. Masked loops go run by run, so a disallowed word costs one test. */
static int next_run(const uint32_t *mask, int V, int *lo, int *hi) {
    int i = *lo;
    if (i >= V) return 0;
    if (!mask) {
        *hi = V;
        return 1;
    }
    int w = i >> 5, words = (V + 31) >> 5;
    uint32_t b = mask[w] & (~0u << (i & 31));
    while (!b) {
        if (++w >= words) return 0;
        b = mask[w];
    }
    i = w * 32 + __builtin_ctz(b);
    if (i >= V) return 0;
    uint32_t c = ~mask[w] & (~0u << (i & 31));
    while (!c && ++w < words)
        c = ~mask[w];
    int end = c ? w * 32 + __builtin_ctz(c) : V;
    *lo = i;
    *hi = end < V ? end : V;
    return 1;
}

/* The first index of the largest allowed x, or -1 when mask allows none. */
static int32_t argmax_in(const float *x, int V, const uint32_t *mask) {
    int best = -1;
    for (int lo = 0, hi; next_run(mask, V, &lo, &hi); lo = hi) {
        int i = lo;
        if (best < 0) best = i++;
        for (; i < hi; i++)
            if (x[i] > x[best]) best = i;
    }
    return best;
}

int32_t hr_sample_argmax(const float *x, int n) { return argmax_in(x, n, NULL); }

/* probs = softmax(logits / temperature) over the allowed ids (the others' probs are left
 * unset: masked loops never read them), mx their largest logit; returns the largest
 * probability. The sum runs in index order, so it equals the sum over a row whose disallowed
 * logits are -inf (each of those adds exp(-inf) = +0); in double: a float running sum drops
 * the tail's terms below half its ulp, which on a peaked 152k-token row moved every
 * probability by up to 0.4% (measured on qwen3-tools-20m at temperature 1.2). */
static float softmax_in(float *probs, const float *logits, int V, float temperature, float mx,
                        const uint32_t *mask) {
    float inv_t = 1.0f / temperature;
    double sum = 0;
    for (int lo = 0, hi; next_run(mask, V, &lo, &hi); lo = hi)
        for (int i = lo; i < hi; i++)
            sum += probs[i] = expf((logits[i] - mx) * inv_t);
    float fsum = (float)sum;
    for (int lo = 0, hi; next_run(mask, V, &lo, &hi); lo = hi)
        for (int i = lo; i < hi; i++)
            probs[i] /= fsum;
    return 1.0f / fsum;
}

float hr_sample_softmax(float *probs, const float *logits, int V, float temperature) {
    return softmax_in(probs, logits, V, temperature, logits[hr_sample_argmax(logits, V)], NULL);
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

/* hr_sample_candidates over the allowed ids. */
static int candidates_in(const float *probs, int32_t *idx, int V, float pmax, float min_p,
                         float top_p, int top_k, int cap, const uint32_t *mask) {
    int n = 0;
    float floor = min_p * pmax;
    if (top_p < 1) floor = fmaxf(floor, (1.0f - top_p) / (2.0f * (float)V));
    for (int lo = 0, hi; next_run(mask, V, &lo, &hi); lo = hi)
        for (int i = lo; i < hi; i++)
            if (probs[i] >= floor && probs[i] > 0) idx[n++] = i;
    int cut_k = top_k > 0 && top_k < n;
    if (!cut_k && top_p >= 1) return n; /* index order: no sort */
    if (top_p >= 1 && top_k > cap) return -1;
    qsort_r(idx, (size_t)n, sizeof *idx, by_prob_desc, (void *)probs);
    if (cut_k) n = top_k;
    if (top_p < 1) n = nucleus(probs, idx, n, top_p);
    return n > cap ? -1 : n;
}

int hr_sample_candidates(const float *probs, int32_t *idx, int V, float pmax, float min_p,
                         float top_p, int top_k, int cap) {
    return candidates_in(probs, idx, V, pmax, min_p, top_p, top_k, cap, NULL);
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

/* hr_logprobs over the allowed ids; *n_top_found: the top entries filled (fewer than top_n
 * when fewer ids are allowed). */
static float logprobs_in(const float *logits, int vocab, int32_t token, int top_n, int32_t *top_ids,
                         float *top_lp, const uint32_t *mask, int *n_top_found) {
    float mx = -INFINITY;
    for (int lo = 0, hi; next_run(mask, vocab, &lo, &hi); lo = hi)
        for (int i = lo; i < hi; i++)
            mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0;
    for (int lo = 0, hi; next_run(mask, vocab, &lo, &hi); lo = hi)
        for (int i = lo; i < hi; i++)
            sum += exp((double)(logits[i] - mx));
    float lse = mx + (float)log(sum);
    int n = 0; /* insertion into a sorted top list: top_n is small (<= 20) */
    for (int lo = 0, hi; top_n > 0 && next_run(mask, vocab, &lo, &hi); lo = hi)
        for (int i = lo; i < hi; i++) {
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
    *n_top_found = n;
    return logits[token] - lse;
}

float hr_logprobs(const float *logits, int vocab, int32_t token, int top_n, int32_t *top_ids,
                  float *top_lp) {
    int n;
    return logprobs_in(logits, vocab, token, top_n, top_ids, top_lp, NULL, &n);
}

void hr_sample_mask_logits(float *logits, int V, const uint32_t *mask) {
    for (int w = 0; w * 32 < V; w++) {
        uint32_t b = mask[w];
        int lim = V - w * 32 < 32 ? V - w * 32 : 32;
        if (b == UINT32_MAX && lim == 32) continue;
        float *l = logits + w * 32;
        if (b == 0)
            for (int i = 0; i < lim; i++)
                l[i] = -INFINITY;
        else
            for (int i = 0; i < lim; i++)
                if (!(b >> i & 1)) l[i] = -INFINITY;
    }
}

const uint32_t *hr_sample_row_mask(const hr_sample_step *s, int r) {
    int m = s->rows[r].mask - 1;
    return m >= 0 ? s->masks + (size_t)m * (size_t)s->mask_words : NULL;
}

int hr_sample_masks_fit(const hr_sample_step *s, int rows, int V) {
    for (int r = 0; r < rows; r++) {
        int m = s->rows[r].mask - 1;
        if (m >= 0 && (m >= s->n_masks || !s->masks || s->mask_words * 32 < V)) return 0;
    }
    return 1;
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

/* The chosen token's logprobs on a row; a masked row whose top list is short of allowed ids
 * or reaches a -inf (where the -inf ids in index order come next) gets its mask written into
 * the logits and the unmasked pass. */
static void row_logprobs(hr_sample_out *out, float *logits, int V, const hr_sample_row *row,
                         const uint32_t *mask) {
    int n;
    out->logprob = logprobs_in(logits, V, out->id, row->n_top, out->top_ids, out->top_lp, mask, &n);
    if (mask && row->n_top > 0 && (n < row->n_top || logits[out->top_ids[n - 1]] == -INFINITY)) {
        hr_sample_mask_logits(logits, V, mask);
        out->logprob = hr_logprobs(logits, V, out->id, row->n_top, out->top_ids, out->top_lp);
    }
}

void hr_sample_ref(hr_sample_out *out, float *logits, int V, const hr_sample_row *row,
                   const hr_logit_edit *edits, const uint32_t *mask, float *probs, int32_t *idx) {
    out->id = -1;
    out->logprob = 0;
    if (row->mode == HR_SAMPLE_HOST) return;
    hr_sample_apply_edits(logits, edits + row->edit_start, row->n_edits);
    int32_t best = argmax_in(logits, V, mask);
    if (mask && (best < 0 || logits[best] == -INFINITY)) return; /* nothing allowed is left */
    if (row->mode == HR_SAMPLE_GREEDY) {
        out->id = best;
    } else {
        float pmax = softmax_in(probs, logits, V, row->temperature, logits[best], mask);
        int n = candidates_in(probs, idx, V, pmax, row->min_p, row->top_p, row->top_k,
                              HR_SAMPLE_CAP, mask);
        if (n <= 0) return; /* the host decides (it takes the argmax when nothing is left) */
        out->id = hr_sample_walk(probs, idx, n, row->u);
    }
    if (row->logprob || row->n_top > 0) row_logprobs(out, logits, V, row, mask);
}
