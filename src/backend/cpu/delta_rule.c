/* The gated delta rule of one value head over T tokens, in two forms that compute the same
 * sums in different orders: the recurrent form (token by token, the reference and the decode
 * path) and the chunked form of transformers' torch_chunk_gated_delta_rule (WY
 * representation: within a chunk of HR_DELTA_CHUNK tokens the updates become small
 * triangular solves and matmuls, and the state is touched once per chunk instead of once per
 * token). Inputs are already prepared: q and k l2-normalised (q scaled by 1/sqrt(dk)),
 * g the log decay (<= 0), beta in (0, 1). */
#include <math.h>
#include <string.h>

#include "backend/cpu/delta_rule.h"

void hr_delta_recurrent(const hr_delta_head *h, float *S, float *d) {
    const hr_cpu_kernels *kn = hr_cpu_kernels_get();
    int dk = h->dk, dv = h->dv;
    for (int t = 0; t < h->T; t++) {
        const float *q = h->q + (long)t * dk, *k = h->k + (long)t * dk;
        const float *v = h->v + (long)t * h->v_ld;
        float *o = h->out + (long)t * h->out_ld, decay = expf(h->g[t]);
        memset(d, 0, sizeof(float) * (size_t)dv);
        for (int i = 0; i < dk; i++) { /* decay, and d = S^T k */
            kn->scale(S + (long)i * dv, decay, dv);
            kn->axpy(d, k[i], S + (long)i * dv, dv);
        }
        for (int j = 0; j < dv; j++)
            d[j] = (v[j] - d[j]) * h->beta[t];
        memset(o, 0, sizeof(float) * (size_t)dv);
        for (int i = 0; i < dk; i++) { /* S += k d^T, and o = S^T q */
            kn->axpy(S + (long)i * dv, k[i], d, dv);
            kn->axpy(o, q[i], S + (long)i * dv, dv);
        }
    }
}

size_t hr_delta_chunked_scratch(int dk, int dv) {
    size_t C = HR_DELTA_CHUNK;
    return 2 * C * C + C + 4 * C * ((size_t)dk + (size_t)dv) + 2 * (size_t)dk * (size_t)dv;
}

/* Scratch of one chunk (C = HR_DELTA_CHUNK rows of everything). */
typedef struct {
    float *A, *QK, *G;         /* (C, C), (C, C), (C) */
    float *bvT, *U, *vn, *vnT; /* (dv, C), (C, dv), (C, dv), (dv, C) */
    float *bkT, *W, *eq, *kdT; /* (dk, C), (C, dk), (C, dk), (dk, C) */
    float *St, *dS;            /* (dv, dk): the state transposed, and its update */
} chunk_scratch;

static chunk_scratch carve(float *p, int dk, int dv) {
    long C = HR_DELTA_CHUNK;
    chunk_scratch s;
    s.A = p, p += C * C;
    s.QK = p, p += C * C;
    s.G = p, p += C;
    s.bvT = p, p += C * dv;
    s.U = p, p += C * dv;
    s.vn = p, p += C * dv;
    s.vnT = p, p += C * dv;
    s.bkT = p, p += C * dk;
    s.W = p, p += C * dk;
    s.eq = p, p += C * dk;
    s.kdT = p, p += C * dk;
    s.St = p, p += (long)dk * dv;
    s.dS = p;
    return s;
}

/* A = (I + strictly-lower(beta_i k_i.k_j e^(G_i - G_j)))^-1 by forward substitution (the
 * reference's row loop), from KK = k k^T; rows of length C, zero above the diagonal. */
static void wy_inverse(float *A, const float *KK, const float *beta, const float *G, int n) {
    int C = HR_DELTA_CHUNK;
    for (int i = 0; i < n; i++) {
        float *Ai = A + (long)i * C;
        for (int j = 0; j < i; j++)
            Ai[j] = -beta[i] * KK[(long)i * C + j] * expf(G[i] - G[j]);
        for (int j = 0; j < i; j++) { /* uses the not yet updated Ai[m], m > j */
            float a = 0;
            for (int m = j + 1; m < i; m++)
                a += Ai[m] * A[(long)m * C + j];
            Ai[j] += a;
        }
        Ai[i] = 1;
        for (int j = i + 1; j < C; j++)
            Ai[j] = 0;
    }
}

static void transpose(float *dst, const float *src, int rows, int cols, long ld_src) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            dst[(long)c * rows + r] = src[(long)r * ld_src + c];
}

/* One chunk of n tokens starting at token t0, on the state transposed (s->St). Every product
 * is a matmul y = x w^T on the dispatched kernel. */
static void chunk(const hr_delta_head *h, int t0, int n, chunk_scratch *s,
                  const hr_cpu_kernels *kn) {
    int C = HR_DELTA_CHUNK, dk = h->dk, dv = h->dv;
    const float *q = h->q + (long)t0 * dk, *k = h->k + (long)t0 * dk, *beta = h->beta + t0;
    const float *v = h->v + (long)t0 * h->v_ld;
    float *out = h->out + (long)t0 * h->out_ld, *G = s->G;
    for (int i = 0; i < n; i++)
        G[i] = (i ? G[i - 1] : 0) + h->g[t0 + i];
    kn->mm_f32(s->QK, C, k, dk, k, dk, n, 0, n); /* k k^T */
    wy_inverse(s->A, s->QK, beta, G, n);
    for (int j = 0; j < n; j++) { /* (beta v)^T, (beta e^G k)^T */
        float bg = beta[j] * expf(G[j]);
        for (int c = 0; c < dv; c++)
            s->bvT[(long)c * n + j] = beta[j] * v[(long)j * h->v_ld + c];
        for (int r = 0; r < dk; r++)
            s->bkT[(long)r * n + j] = bg * k[(long)j * dk + r];
    }
    kn->mm_f32(s->U, dv, s->A, C, s->bvT, n, n, 0, dv);   /* U = A beta v */
    kn->mm_f32(s->W, dk, s->A, C, s->bkT, n, n, 0, dk);   /* W = A beta e^G k */
    kn->mm_f32(s->vn, dv, s->W, dk, s->St, dk, n, 0, dv); /* W S */
    for (long i = 0; i < (long)n * dv; i++)
        s->vn[i] = s->U[i] - s->vn[i]; /* the chunk's new values */
    for (int i = 0; i < n; i++) {
        float eg = expf(G[i]);
        for (int r = 0; r < dk; r++)
            s->eq[(long)i * dk + r] = eg * q[(long)i * dk + r];
    }
    kn->mm_f32(out, h->out_ld, s->eq, dk, s->St, dk, n, 0, dv); /* e^G q S */
    kn->mm_f32(s->QK, C, q, dk, k, dk, n, 0, n);                /* q k^T, causal, decayed */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            s->QK[(long)i * C + j] = j <= i ? s->QK[(long)i * C + j] * expf(G[i] - G[j]) : 0;
    transpose(s->vnT, s->vn, n, dv, dv);
    kn->mm_f32(s->U, dv, s->QK, C, s->vnT, n, n, 0, dv);
    for (int i = 0; i < n; i++)
        kn->axpy(out + (long)i * h->out_ld, 1.0f, s->U + (long)i * dv, dv);
    /* S^T = e^G_last S^T + vn^T (e^(G_last - G) k) */
    float last = G[n - 1];
    for (int j = 0; j < n; j++) {
        float e = expf(last - G[j]);
        for (int r = 0; r < dk; r++)
            s->kdT[(long)r * n + j] = k[(long)j * dk + r] * e;
    }
    kn->mm_f32(s->dS, dk, s->vnT, n, s->kdT, n, dv, 0, dk);
    kn->scale(s->St, expf(last), dk * dv);
    kn->axpy(s->St, 1.0f, s->dS, dk * dv);
}

void hr_delta_chunked(const hr_delta_head *h, float *S, float *scratch) {
    const hr_cpu_kernels *kn = hr_cpu_kernels_get();
    chunk_scratch s = carve(scratch, h->dk, h->dv);
    transpose(s.St, S, h->dk, h->dv, h->dv);
    for (int t0 = 0; t0 < h->T; t0 += HR_DELTA_CHUNK) {
        int n = h->T - t0 < HR_DELTA_CHUNK ? h->T - t0 : HR_DELTA_CHUNK;
        chunk(h, t0, n, &s, kn);
    }
    transpose(S, s.St, h->dv, h->dk, h->dk);
}
