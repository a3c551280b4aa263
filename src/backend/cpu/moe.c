/* CPU mixture-of-experts ops. Routing: softmax over the router logits, top-k, optional
 * renormalisation. Experts: tokens are grouped by expert (a counting sort of the (token,
 * slot) pairs), the rows are gathered in that order, then one pool run computes gate and up
 * of every hit expert on its rows and another the down projections; the weighted outputs
 * are added back. Experts nobody chose cost nothing. With --compute bf16 and bf16 experts
 * each expert's rows are packed for AMX tiles (or, without AMX, rounded to bf16 for the f32
 * kernels) before each phase. hr_cpu_moe_ref is the plain per-token definition the grouped
 * version is tested against. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/matmul_bf16.h"
#include "tensor/dtype.h"

void hr_cpu_moe_route(hr_backend *be, int32_t *ids, float *weights, const float *logits, int T,
                      int n_experts, int k, int renorm) {
    (void)be;
    for (int t = 0; t < T; t++) {
        const float *l = logits + (long)t * n_experts;
        float mx = -INFINITY, sum = 0;
        for (int e = 0; e < n_experts; e++)
            mx = fmaxf(mx, l[e]);
        for (int e = 0; e < n_experts; e++)
            sum += expf(l[e] - mx);
        int32_t *id = ids + (long)t * k;
        float *w = weights + (long)t * k, wsum = 0;
        for (int j = 0; j < k; j++) {
            int best = -1;
            for (int e = 0; e < n_experts; e++) {
                int taken = 0;
                for (int i = 0; i < j; i++)
                    taken |= id[i] == e;
                if (!taken && (best < 0 || l[e] > l[best])) best = e;
            }
            id[j] = best;
            w[j] = expf(l[best] - mx) / sum;
            wsum += w[j];
        }
        if (renorm)
            for (int j = 0; j < k; j++)
                w[j] /= wsum;
    }
}

/* Scratch of one moe_experts call: pairs sorted by expert and the gathered activations; pair
 * i of the sorted order owns row i of xs, g, u and o. */
typedef struct {
    int *start; /* (n_experts + 1) first pair of each expert */
    int *fill;  /* (n_experts) */
    int *pair;  /* (T*k) token*k + slot, grouped by expert */
    int *hit;   /* (n_experts) experts with at least one pair */
    int n_hit;
    float *xs;    /* (T*k, hidden) gathered rows */
    float *g, *u; /* (T*k, inter) */
    float *o;     /* (T*k, hidden) */
    uint16_t *xp; /* AMX: the current phase's input rows packed per hit expert */
    long *xp_off; /* (n_experts) where hit expert i's packed rows start in xp */
} moe_scratch;

static int scratch_alloc(moe_scratch *s, int T, int k, const hr_moe_weights *w, int amx) {
    size_t n = (size_t)T * k;
    if (amx) {
        size_t groups = n < (size_t)w->n_experts ? n : (size_t)w->n_experts;
        size_t K = (size_t)(w->hidden > w->inter ? w->hidden : w->inter);
        s->xp = malloc(sizeof(uint16_t) * (n + 15 * groups) * K);
        s->xp_off = malloc(sizeof(long) * (size_t)w->n_experts);
        if (!s->xp || !s->xp_off) return 0;
    }
    s->start = calloc((size_t)w->n_experts + 1, sizeof(int));
    s->fill = malloc(sizeof(int) * (size_t)w->n_experts);
    s->hit = malloc(sizeof(int) * (size_t)w->n_experts);
    s->pair = malloc(sizeof(int) * n);
    s->xs = malloc(sizeof(float) * n * (size_t)w->hidden);
    s->o = malloc(sizeof(float) * n * (size_t)w->hidden);
    s->g = malloc(sizeof(float) * n * (size_t)w->inter);
    s->u = malloc(sizeof(float) * n * (size_t)w->inter);
    return s->start && s->fill && s->hit && s->pair && s->xs && s->o && s->g && s->u;
}

static void scratch_free(moe_scratch *s) {
    void *p[] = {s->start, s->fill, s->hit, s->pair, s->xs, s->o, s->g, s->u, s->xp, s->xp_off};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        free(p[i]);
}

/* Counting sort of the (token, slot) pairs by expert (pairs of one expert keep token order),
 * the list of hit experts, and the gathered input rows. */
static void group(moe_scratch *s, const float *x, const int32_t *ids, int n, int k,
                  const hr_moe_weights *w) {
    for (int i = 0; i < n; i++)
        s->start[ids[i] + 1]++;
    s->n_hit = 0;
    for (int e = 0; e < w->n_experts; e++) {
        if (s->start[e + 1] > 0) s->hit[s->n_hit++] = e;
        s->start[e + 1] += s->start[e];
    }
    memcpy(s->fill, s->start, sizeof(int) * (size_t)w->n_experts);
    for (int i = 0; i < n; i++)
        s->pair[s->fill[ids[i]]++] = i;
    for (int i = 0; i < n; i++)
        memcpy(s->xs + (long)i * w->hidden, x + (long)(s->pair[i] / k) * w->hidden,
               sizeof(float) * (size_t)w->hidden);
}

/* One pool run computes a matmul for every hit expert: phase 0 gate and up (g, u = xs W^T),
 * phase 1 down (o = g W^T). Work units are 16 output columns of one (expert, matrix); each
 * chunk of units (claimed from the pool) issues one kernel call per run of units of the
 * same matrix. */
typedef struct {
    moe_scratch *s;
    const hr_moe_weights *w;
    const hr_cpu_kernels *k;
    int phase;
    long units; /* per (expert, matrix) */
    int amx;    /* inputs are packed in s->xp */
} ex_ctx;

static void ex_run(const ex_ctx *c, long mat, long u0, long u1) {
    const moe_scratch *s = c->s;
    const hr_moe_weights *w = c->w;
    int e = s->hit[mat / (c->phase == 0 ? 2 : 1)], b = s->start[e], n = s->start[e + 1] - b;
    const hr_tensor *wt = c->phase == 1 ? w->down[e] : mat % 2 ? w->up[e] : w->gate[e];
    long N = wt->shape[0], K = wt->shape[1];
    const float *x = c->phase == 1 ? s->g + (long)b * K : s->xs + (long)b * K;
    float *y = c->phase == 1 ? s->o : mat % 2 ? s->u : s->g;
    long n1 = u1 * 16 < N ? u1 * 16 : N;
    if (c->amx)
        hr_amx_mm(y + (long)b * N, N, s->xp + s->xp_off[mat / (c->phase == 0 ? 2 : 1)], wt->data,
                  (int)K, n, u0 * 16, n1);
    else
        hr_cpu_mm_for(c->k, wt)(y + (long)b * N, N, x, K, wt->data, (int)K, n, u0 * 16, n1);
}

/* Units [b, e) of the phase: unit i is 16 output columns (i % units) of matrix i / units. */
static void ex_task(void *ctx, int th, long b, long e) {
    ex_ctx *c = ctx;
    while (b < e) {
        long mat = b / c->units, u0 = b % c->units;
        long u1 = e - mat * c->units < c->units ? e - mat * c->units : c->units;
        ex_run(c, mat, u0, u1);
        b = mat * c->units + u1;
    }
}

/* The phase's units in chunks, about 4 per thread. */
static void run_phase(hr_pool *pool, ex_ctx *c) {
    long units = (c->phase == 0 ? 2L * c->s->n_hit : c->s->n_hit) * c->units;
    hr_pool_for(pool, units, hr_pool_grain(pool, units, 1, 4, 0), ex_task, c);
}

/* Packs (AMX) or rounds to bf16 in place (other CPUs) the rows of every hit expert in
 * rows[(T*k), K], the input of the coming phase. */
typedef struct {
    moe_scratch *s;
    float *rows;
    int K, amx;
} prep_ctx;

static void prep_task(void *ctx, int th, int nth) {
    prep_ctx *c = ctx;
    moe_scratch *s = c->s;
    long b, e;
    hr_split_range(s->n_hit, 1, th, nth, &b, &e);
    for (long i = b; i < e; i++) {
        int ex = s->hit[i], r0 = s->start[ex], n = s->start[ex + 1] - r0;
        float *x = c->rows + (long)r0 * c->K;
        if (c->amx) {
            hr_amx_pack(s->xp + s->xp_off[i], x, c->K, c->K, n, 0, (n + 15) / 16);
            continue;
        }
        for (long j = 0; j < (long)n * c->K; j++)
            x[j] = hr_bf16_to_f32(hr_f32_to_bf16(x[j]));
    }
}

static void prepare_bf16(hr_pool *pool, moe_scratch *s, float *rows, int K, int amx) {
    long off = 0;
    for (int i = 0; amx && i < s->n_hit; i++) {
        s->xp_off[i] = off;
        off += hr_amx_pack_elems(s->start[s->hit[i] + 1] - s->start[s->hit[i]], K);
    }
    prep_ctx c = {s, rows, K, amx};
    hr_pool_run(pool, prep_task, &c);
}

/* --compute bf16 applies: 0 no, 1 through the rounded f32 path, 2 on AMX tiles. */
static int bf16_mode(const hr_cpu_backend *cb, const hr_moe_weights *w) {
    if (!cb->opt.compute_bf16 || w->gate[0]->dtype != HR_BF16) return 0;
    return !w->gate[0]->row_tile && hr_amx_fits(w->inter, w->hidden) &&
                   hr_amx_fits(w->hidden, w->inter)
               ? 2
               : 1;
}

void hr_cpu_moe_experts(hr_backend *be, float *y, const float *x, const int32_t *ids,
                        const float *weights, int T, int k, const hr_moe_weights *w) {
    long H = w->hidden, I = w->inter, n = (long)T * k;
    memset(y, 0, sizeof(float) * (size_t)T * H);
    moe_scratch s = {0};
    int bf16 = bf16_mode((hr_cpu_backend *)be, w);
    if (!scratch_alloc(&s, T, k, w, bf16 == 2)) {
        /* out of memory: fall back to the per-token reference, which needs no scratch */
        scratch_free(&s);
        hr_cpu_moe_ref(y, x, ids, weights, T, k, w);
        return;
    }
    group(&s, x, ids, (int)n, k, w);
    hr_pool *pool = ((hr_cpu_backend *)be)->pool;
    ex_ctx c = {&s, w, hr_cpu_kernels_get(), 0, (I + 15) / 16, bf16 == 2};
    if (bf16) prepare_bf16(pool, &s, s.xs, (int)H, bf16 == 2);
    run_phase(pool, &c);
    for (long i = 0; i < n * I; i++)
        s.g[i] = hr_cpu_act(s.g[i], w->act) * s.u[i];
    if (bf16) prepare_bf16(pool, &s, s.g, (int)I, bf16 == 2);
    c.phase = 1;
    c.units = (H + 15) / 16;
    run_phase(pool, &c);
    /* weighted sum in expert order, as the reference accumulates */
    for (long i = 0; i < n; i++) {
        int p = s.pair[i];
        float wt = weights[p], *yr = y + (long)(p / k) * H;
        for (long h = 0; h < H; h++)
            yr[h] += wt * s.o[i * H + h];
    }
    scratch_free(&s);
}

/* One expert on one row: out[hidden] = down(act(gate x) * up x); g holds inter floats. */
static void expert_row(float *out, const float *x, const hr_moe_weights *w, int e, float *g) {
    float wr[1];
    for (int i = 0; i < w->inter; i++) {
        float sg = 0, su = 0;
        for (int h = 0; h < w->hidden; h++) {
            hr_cpu_to_f32(wr, w->gate[e], (long)i * w->hidden + h, 1);
            sg += wr[0] * x[h];
            hr_cpu_to_f32(wr, w->up[e], (long)i * w->hidden + h, 1);
            su += wr[0] * x[h];
        }
        g[i] = hr_cpu_act(sg, w->act) * su;
    }
    for (int h = 0; h < w->hidden; h++) {
        float s = 0;
        for (int i = 0; i < w->inter; i++) {
            hr_cpu_to_f32(wr, w->down[e], (long)h * w->inter + i, 1);
            s += wr[0] * g[i];
        }
        out[h] = s;
    }
}

void hr_cpu_moe_ref(float *y, const float *x, const int32_t *ids, const float *weights, int T,
                    int k, const hr_moe_weights *w) {
    float *tmp = malloc(sizeof(float) * (size_t)(w->inter + w->hidden));
    if (!tmp) return;
    float *o = tmp + w->inter;
    for (int t = 0; t < T; t++) {
        float *yr = y + (long)t * w->hidden;
        for (int h = 0; h < w->hidden; h++)
            yr[h] = 0;
        for (int j = 0; j < k; j++) {
            expert_row(o, x + (long)t * w->hidden, w, ids[t * k + j], tmp);
            for (int h = 0; h < w->hidden; h++)
                yr[h] += weights[t * k + j] * o[h];
        }
    }
    free(tmp);
}
