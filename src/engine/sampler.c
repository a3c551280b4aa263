/* Samplers: argmax, or softmax at a temperature over the candidates that survive top-k,
 * min-p, top-p (backend/sample.c, shared with the sample op), locally typical sampling and
 * XTC, then one uniform draw from the request's seeded generator. */
#define _GNU_SOURCE
#include "engine/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/sample.h"

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

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

double hr_sampler_uniform(hr_sampler *s) { return (double)(next_u64(s->rng) >> 11) * 0x1.0p-53; }

double hr_sampler_peek(const hr_sampler *s) {
    uint64_t rng[4];
    memcpy(rng, s->rng, sizeof rng);
    return (double)(next_u64(rng) >> 11) * 0x1.0p-53;
}

int hr_sampler_host_only(const hr_sampler *s) {
    return s->p.temperature != 0 &&
           ((s->p.typical_p > 0 && s->p.typical_p < 1) || s->p.xtc_probability > 0);
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
        if (keep < 0 || s->probs[id] < s->probs[keep] ||
            (s->probs[id] == s->probs[keep] && id > keep))
            keep = id;
    }
    if (above < 2) return n;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (s->probs[s->idx[i]] < cut || s->idx[i] == keep) s->idx[m++] = s->idx[i];
    return m;
}

/* The candidates after every filter that draws nothing (temperature > 0), in s->idx; 0 when
 * none is left (the argmax goes, without a draw). */
static int filtered(hr_sampler *s, const float *logits) {
    float pmax = hr_sample_softmax(s->probs, logits, s->vocab, s->p.temperature);
    int n = hr_sample_candidates(s->probs, s->idx, s->vocab, pmax, s->p.min_p, s->p.top_p,
                                 s->p.top_k, s->vocab);
    if (n > 0 && s->p.typical_p > 0 && s->p.typical_p < 1) n = typical(s, n);
    return n;
}

int hr_sampler_sample(hr_sampler *s, const float *logits) {
    if (s->p.temperature == 0) return hr_sample_argmax(logits, s->vocab);
    int n = filtered(s, logits);
    if (n == 0) return hr_sample_argmax(logits, s->vocab);
    if (s->p.xtc_probability > 0) n = xtc(s, n);
    return hr_sample_walk(s->probs, s->idx, n, hr_sampler_uniform(s));
}

int hr_sampler_sample_u(hr_sampler *s, const float *logits, double u, int *drew) {
    *drew = 0;
    if (s->p.temperature == 0) return hr_sample_argmax(logits, s->vocab);
    int n = filtered(s, logits);
    if (n == 0) return hr_sample_argmax(logits, s->vocab);
    *drew = 1;
    return hr_sample_walk(s->probs, s->idx, n, u);
}
