/* Samplers: argmax, or softmax at a temperature over the candidates that survive top-k,
 * min-p, top-p, locally typical sampling and XTC. Top-p works on a candidate set pruned of
 * tokens whose total mass cannot reach the nucleus, so it sorts a few hundred tokens, not
 * the vocabulary. */
#define _GNU_SOURCE
#include "engine/sampler.h"

#include <math.h>
#include <stdlib.h>

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

static uint64_t next_u64(uint64_t *s) { /* xoshiro256** */
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

double hr_sampler_uniform(hr_sampler *s) {
    return (double)(next_u64(s->rng) >> 11) * 0x1.0p-53;
}

hr_err *hr_sampler_params_check(const hr_sampler_params *p) {
    if (!(p->temperature >= 0) || p->temperature > 1e4) return hr_errf("temperature must be >= 0");
    if (!(p->top_p > 0 && p->top_p <= 1)) return hr_errf("top_p must be in (0, 1]");
    if (p->top_k < 0) return hr_errf("top_k must be >= 0");
    if (!(p->min_p >= 0 && p->min_p <= 1)) return hr_errf("min_p must be in [0, 1]");
    if (!(p->typical_p >= 0 && p->typical_p <= 1)) return hr_errf("typical_p must be in [0, 1]");
    if (!(p->xtc_probability >= 0 && p->xtc_probability <= 1))
        return hr_errf("xtc_probability must be in [0, 1]");
    if (!(p->xtc_threshold >= 0 && p->xtc_threshold <= 1))
        return hr_errf("xtc_threshold must be in [0, 1]");
    return NULL;
}

hr_err *hr_sampler_init(hr_sampler *s, const hr_sampler_params *p, int vocab) {
    HR_TRY(hr_sampler_params_check(p));
    s->p = *p;
    s->vocab = vocab;
    uint64_t x = p->seed;
    for (int i = 0; i < 4; i++)
        s->rng[i] = splitmix64(&x);
    s->probs = malloc(sizeof(float) * (size_t)vocab);
    s->idx = malloc(sizeof(int32_t) * (size_t)vocab);
    if (!s->probs || !s->idx) {
        hr_sampler_free(s);
        return hr_err_oom();
    }
    return NULL;
}

void hr_sampler_free(hr_sampler *s) {
    free(s->probs);
    free(s->idx);
    s->probs = NULL;
    s->idx = NULL;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static int by_prob_desc(const void *a, const void *b, void *ctx) {
    const float *probs = ctx;
    float pa = probs[*(const int32_t *)a], pb = probs[*(const int32_t *)b];
    return pa < pb ? 1 : pa > pb ? -1 : *(const int32_t *)a - *(const int32_t *)b;
}

/* probs = softmax(logits / T) over the whole vocabulary; returns the max probability. */
static float softmax(hr_sampler *s, const float *logits) {
    int V = s->vocab;
    float mx = logits[argmax(logits, V)], inv_t = 1.0f / s->p.temperature, sum = 0;
    for (int i = 0; i < V; i++)
        sum += s->probs[i] = expf((logits[i] - mx) * inv_t);
    for (int i = 0; i < V; i++)
        s->probs[i] /= sum;
    return 1.0f / sum;
}

/* Candidate tokens (in s->idx) after the cheap filters; returns their count. */
static int candidates(hr_sampler *s, float pmax) {
    int V = s->vocab, n = 0;
    float floor = s->p.min_p * pmax;
    if (s->p.top_p < 1) floor = fmaxf(floor, (1.0f - s->p.top_p) / (2.0f * (float)V));
    for (int i = 0; i < V; i++)
        if (s->probs[i] >= floor && s->probs[i] > 0) s->idx[n++] = i;
    int need_sort = s->p.top_p < 1 || (s->p.top_k > 0 && s->p.top_k < n);
    if (need_sort) qsort_r(s->idx, (size_t)n, sizeof *s->idx, by_prob_desc, s->probs);
    if (s->p.top_k > 0 && s->p.top_k < n) n = s->p.top_k;
    if (s->p.top_p < 1) {
        float cum = 0;
        for (int i = 0; i < n; i++) {
            cum += s->probs[s->idx[i]];
            if (cum >= s->p.top_p) {
                n = i + 1;
                break;
            }
        }
    }
    return n;
}

static double mass(const hr_sampler *s, int n) {
    double total = 0;
    for (int i = 0; i < n; i++)
        total += s->probs[s->idx[i]];
    return total;
}

/* Typical-score order: |-log q - H| ascending (ties by id), q the renormalized candidate
 * probability; the context is {probs, log-normalizer + entropy}. */
typedef struct {
    const float *probs;
    double log_total, entropy;
} typical_ctx;

static double typical_score(const typical_ctx *c, int32_t id) {
    return fabs(-(log((double)c->probs[id]) - c->log_total) - c->entropy);
}

static int by_typical(const void *a, const void *b, void *ctx) {
    int32_t ia = *(const int32_t *)a, ib = *(const int32_t *)b;
    double sa = typical_score(ctx, ia), sb = typical_score(ctx, ib);
    return sa < sb ? -1 : sa > sb ? 1 : ia - ib;
}

/* Locally typical sampling (Meister et al.; HF's TypicalLogitsWarper): keeps the tokens
 * whose surprisal is closest to the entropy until their mass reaches typical_p. */
static int typical(hr_sampler *s, int n) {
    double total = mass(s, n), h = 0;
    for (int i = 0; i < n; i++) {
        double q = s->probs[s->idx[i]] / total;
        h -= q * log(q);
    }
    typical_ctx c = {s->probs, log(total), h};
    qsort_r(s->idx, (size_t)n, sizeof *s->idx, by_typical, &c);
    double cum = 0;
    for (int i = 0; i < n; i++) {
        cum += s->probs[s->idx[i]] / total;
        if (cum >= s->p.typical_p) return i + 1;
    }
    return n;
}

/* XTC ("exclude top choices"): with probability xtc_probability, when two or more
 * candidates reach xtc_threshold (renormalized), all of them but the least likely go. */
static int xtc(hr_sampler *s, int n) {
    if (hr_sampler_uniform(s) >= s->p.xtc_probability) return n;
    double cut = s->p.xtc_threshold * mass(s, n);
    int above = 0, keep = -1;
    for (int i = 0; i < n; i++) {
        int32_t id = s->idx[i];
        if (s->probs[id] < cut) continue;
        above++;
        if (keep < 0 || s->probs[id] < s->probs[keep] || (s->probs[id] == s->probs[keep] && id > keep))
            keep = id;
    }
    if (above < 2) return n;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (s->probs[s->idx[i]] < cut || s->idx[i] == keep) s->idx[m++] = s->idx[i];
    return m;
}

int hr_sampler_sample(hr_sampler *s, const float *logits) {
    if (s->p.temperature == 0) return argmax(logits, s->vocab);
    float pmax = softmax(s, logits);
    int n = candidates(s, pmax);
    if (n == 0) return argmax(logits, s->vocab);
    if (s->p.typical_p > 0 && s->p.typical_p < 1) n = typical(s, n);
    if (s->p.xtc_probability > 0) n = xtc(s, n);
    double total = mass(s, n);
    double u = hr_sampler_uniform(s) * total, cum = 0;
    for (int i = 0; i < n; i++) {
        cum += s->probs[s->idx[i]];
        if (u < cum) return s->idx[i];
    }
    return s->idx[n - 1];
}
