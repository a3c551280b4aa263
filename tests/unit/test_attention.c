/* CPU attention over long rows (many 64-position tiles, odd tails): a query's output bits
 * never depend on how its prompt was chunked (one shot through the blocked path, chunks of
 * 7, token by token through the decode path), with sliding windows, soft-capping, GQA
 * groups of 1 to 40 heads and every KV dtype, at every kernel level; the bf16-product path
 * (--compute bf16 over a bf16 store) stays close to f32 attention over the same values; 1, 2, 3
 * and 7 threads give the same bits; and
 * its kernels (attn_bx.h) against plain C. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/attn_bx.h"
#include "backend/cpu/kernels.h"
#include "harness.h"
#include "tensor/dtype.h"

static unsigned rng = 777;
static float frand(void) {
    rng = rng * 1103515245u + 12345u;
    return ((float)((rng >> 8) & 0xffff) / 65536.0f) * 2.0f - 1.0f;
}

enum { BS = 16 };

typedef struct {
    int P, heads, kvh, hd, window;
    float softcap;
    hr_dtype dtype;
} shape;

/* Attention outputs [P, heads, hd] of P tokens of one row written and attended in chunks of
 * C (the last one shorter) on nt threads. */
static hr_err *attend(const shape *s, int C, int bf16, int nt, const float *k, const float *v,
                      const float *q, float *out) {
    hr_backend *be;
    HR_TRY(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = nt, .compute_bf16 = bf16}, &be));
    int nb = (s->P + BS - 1) / BS;
    hr_kv_store kv = {.dtype = s->dtype,
                      .n_layers = 1,
                      .n_blocks = nb,
                      .block_size = BS,
                      .n_kv_heads = s->kvh,
                      .head_dim = s->hd};
    hr_err *err = be->vt->kv_create(be, &kv);
    int32_t *tok = calloc((size_t)s->P, 4), *pos = calloc((size_t)s->P, 4),
            *row = calloc((size_t)s->P, 4), *table = calloc((size_t)nb, 4), slot = 0;
    if (!err && (!tok || !pos || !row || !table)) err = hr_errf("out of memory");
    for (int i = 0; !err && i < nb; i++)
        table[i] = nb - 1 - i; /* blocks out of order */
    hr_attn_params ap = {0,         s->heads,  s->kvh, s->hd, 1 / sqrtf((float)s->hd),
                         s->window, s->softcap};
    size_t kr = (size_t)s->kvh * s->hd, qr = (size_t)s->heads * s->hd;
    for (int t0 = 0; !err && t0 < s->P; t0 += C) {
        int n = s->P - t0 < C ? s->P - t0 : C, qs[2] = {0, n};
        for (int i = 0; i < n; i++)
            pos[i] = t0 + i;
        hr_step_meta m = {n, 1, tok, pos, row, qs, nb, table, &slot, HR_HEAD_LOGITS, 0, NULL};
        err = be->vt->step_begin(be, &m);
        if (err) break;
        be->vt->kv_write(be, &kv, 0, k + t0 * kr, v + t0 * kr);
        be->vt->attention(be, out + t0 * qr, q + t0 * qr, &kv, &ap);
    }
    free(tok), free(pos), free(row), free(table);
    be->vt->kv_destroy(be, &kv);
    hr_backend_destroy(be);
    return err;
}

typedef struct {
    float *k, *v, *q, *one, *part;
    size_t nk, nq;
} bufs;

static int fill(bufs *b, const shape *s) {
    b->nk = (size_t)s->P * s->kvh * s->hd, b->nq = (size_t)s->P * s->heads * s->hd;
    b->k = malloc(sizeof(float) * b->nk), b->v = malloc(sizeof(float) * b->nk);
    b->q = malloc(sizeof(float) * b->nq), b->one = malloc(sizeof(float) * b->nq);
    b->part = malloc(sizeof(float) * b->nq);
    if (!b->k || !b->v || !b->q || !b->one || !b->part) return 0;
    for (size_t i = 0; i < b->nk; i++)
        b->k[i] = frand(), b->v[i] = frand();
    for (size_t i = 0; i < b->nq; i++)
        b->q[i] = frand() * 3; /* peaked enough that rescaling runs */
    return 1;
}

static void drop(bufs *b) { free(b->k), free(b->v), free(b->q), free(b->one), free(b->part); }

/* One shot, chunks of 100 and of 7, and token by token give the same bits. */
static void check_chunking(const shape *s, int bf16) {
    bufs b;
    HR_CHECK(fill(&b, s), "out of memory");
    if (!hr_t_cur_failed) {
        HR_CHECK_OK(attend(s, s->P, bf16, 2, b.k, b.v, b.q, b.one));
        int chunks[] = {100, 7, 1}; /* blocks at other offsets, then the per-token path */
        for (int c = 0; c < 3 && !hr_t_cur_failed; c++) {
            HR_CHECK_OK(attend(s, chunks[c], bf16, 2, b.k, b.v, b.q, b.part));
            HR_CHECK(!memcmp(b.one, b.part, sizeof(float) * b.nq),
                     "%s level %d P=%d heads %d/%d hd %d window %d softcap %g bf16 %d: chunks of "
                     "%d changed the bits",
                     hr_dtype_name(s->dtype), (int)hr_cpu()->level, s->P, s->heads, s->kvh, s->hd,
                     s->window, (double)s->softcap, bf16, chunks[c]);
        }
    }
    drop(&b);
}

static const shape shapes[] = {
    {300, 4, 2, 64, 0, 0, HR_F32},    /* five tiles, an odd tail */
    {300, 4, 2, 64, 0, 0, HR_BF16},   /* the same, bf16 products */
    {200, 8, 8, 128, 0, 0, HR_BF16},  /* no GQA */
    {200, 8, 2, 128, 70, 0, HR_BF16}, /* groups of 4, a sliding window */
    {150, 8, 2, 64, 0, 30, HR_BF16},  /* soft-capping */
    {150, 4, 1, 64, 100, 20, HR_F16}, /* both, f16 KV */
    {150, 4, 2, 64, 45, 0, HR_Q8_0},  /* quantized KV, a window */
    {150, 4, 2, 64, 0, 0, HR_Q4_0},   /* 4-bit KV */
    {100, 40, 1, 32, 0, 0, HR_BF16},  /* a group past MAX_GROUP: token by token */
    {100, 4, 2, 48, 0, 0, HR_BF16},   /* head_dim not a multiple of 32: f32 products */
    {130, 16, 8, 128, 0, 0, HR_BF16}, /* qwen3-0.6b's heads */
    {70, 4, 2, 36, 0, 0, HR_F16},     /* head_dim not a multiple of 8: scores row by row */
};

static void test_chunking_invariance(void) {
    hr_cpu_level levels[] = {HR_CPU_GENERIC, HR_CPU_AVX2, HR_CPU_AVX512};
    hr_cpu_set_level(HR_CPU_AVX512);
    hr_cpu_level hw = hr_cpu()->level;
    for (size_t l = 0; l < 3 && levels[l] <= hw; l++) {
        hr_cpu_set_level(levels[l]);
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes && !hr_t_cur_failed; i++)
            for (int bf16 = 0; bf16 < 2; bf16++)
                check_chunking(&shapes[i], bf16);
    }
    hr_cpu_set_level(HR_CPU_AVX512);
}

/* 1, 2, 3 and 7 threads give the same bits on the blocked prefill path and the decode path
 * (chunks of (token, kv head) items claimed from the pool, their size set by the thread count). */
static void test_thread_counts(void) {
    const shape *ss[] = {&shapes[3], &shapes[10]};
    int nts[] = {2, 3, 7};
    for (int i = 0; i < 2 && !hr_t_cur_failed; i++) {
        const shape *s = ss[i];
        bufs b;
        HR_CHECK(fill(&b, s), "out of memory");
        int steps[] = {s->P, 1};
        for (int j = 0; j < 2 && !hr_t_cur_failed; j++) {
            int C = steps[j];
            HR_CHECK_OK(attend(s, C, 0, 1, b.k, b.v, b.q, b.one));
            for (int t = 0; t < 3 && !hr_t_cur_failed; t++) {
                memset(b.part, 0xff, sizeof(float) * b.nq); /* NaNs where nothing writes */
                HR_CHECK_OK(attend(s, C, 0, nts[t], b.k, b.v, b.q, b.part));
                HR_CHECK(!memcmp(b.one, b.part, sizeof(float) * b.nq),
                         "heads %d/%d, steps of %d: %d threads differ from 1", s->heads, s->kvh, C,
                         nts[t]);
            }
        }
        drop(&b);
    }
}

/* bf16 products against f32 attention over the same stored values: within what rounding q
 * and the weights to bf16 gives (outputs are averages of values in [-1, 1]). The two must
 * differ where the bf16 path runs. */
static void test_bf16_products_close(void) {
    hr_cpu_set_level(HR_CPU_AVX512);
    int bx = hr_cpu()->level >= HR_CPU_AVX512 && hr_cpu()->avx512bf16;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const shape *s = &shapes[i];
        if (s->dtype != HR_BF16) continue;
        bufs b;
        HR_CHECK(fill(&b, s), "out of memory");
        if (!hr_t_cur_failed) {
            HR_CHECK_OK(attend(s, s->P, 0, 2, b.k, b.v, b.q, b.one));
            HR_CHECK_OK(attend(s, s->P, 1, 2, b.k, b.v, b.q, b.part));
            float worst = 0;
            for (size_t j = 0; j < b.nq; j++)
                worst = fmaxf(worst, fabsf(b.one[j] - b.part[j]));
            int ran = bx && s->hd % 32 == 0;
            HR_CHECK(worst < 0.03f && (worst > 0) == ran,
                     "P=%d heads %d/%d hd %d window %d softcap %g: bf16 products differ by %g "
                     "(bf16 path %s)",
                     s->P, s->heads, s->kvh, s->hd, s->window, (double)s->softcap, (double)worst,
                     ran ? "on" : "off");
        }
        drop(&b);
    }
}

static float bf(uint16_t h) { return hr_bf16_to_f32(h); }

/* The kernels: round is nearest even; kt and pairs lay out the rows (NULL rows, the pad and
 * positions past n zeros); pv near the plain sum of its pairs, for P V and for Q K^T. */
static void test_bx_kernels(void) {
    hr_cpu_set_level(HR_CPU_AVX512);
    if (hr_cpu()->level < HR_CPU_AVX512 || !hr_cpu()->avx512bf16) {
        printf("  skipped: no AVX-512 BF16 here\n");
        return;
    }
    const hr_attn_bx *x = &hr_attn_bx_avx512;
    enum { HD = 128, NJ = 21, NQ = 7, W = 32 };
    static uint16_t q[NQ * HD], k[NJ * HD], kt[HD / 2 * W * 2], vp[(NJ + 1) * HD], pb[NQ * W];
    static float qf[NQ * HD], s[NQ][W], o[NQ][HD], want[NQ][HD], w[NQ * W];
    const uint16_t *rows[NJ];
    for (int i = 0; i < NQ * HD; i++)
        qf[i] = frand();
    for (int i = 0; i < NJ * HD; i++)
        k[i] = hr_f32_to_bf16(frand());
    for (int j = 0; j < NJ; j++)
        rows[j] = j % 6 == 4 ? NULL : k + j * HD;
    x->round(q, qf, NQ * HD);
    for (int i = 0; i < NQ * HD; i++)
        HR_CHECK(q[i] == hr_f32_to_bf16(qf[i]), "round [%d]: %g -> %g", i, (double)qf[i],
                 (double)bf(q[i]));
    memset(kt, 0xff, sizeof kt);
    x->kt(kt, rows, NJ, HD);
    for (int e = 0; e < HD; e++)
        for (int j = 0; j < W; j++) {
            uint16_t got = kt[((e / 2) * W + j) * 2 + e % 2];
            uint16_t exp = j < NJ && rows[j] ? rows[j][e] : 0;
            HR_CHECK(got == exp, "kt (%d, %d): %04x, want %04x", e, j, got, exp);
            if (hr_t_cur_failed) return;
        }
    memset(vp, 0xff, sizeof vp);
    x->pairs(vp, rows, NJ, HD);
    for (int j = 0; j < NJ + 1; j++)
        for (int d = 0; d < HD; d++) {
            uint16_t got = vp[(j / 2) * 2 * HD + 2 * d + j % 2];
            uint16_t exp = j < NJ && rows[j] ? rows[j][d] : 0;
            HR_CHECK(got == exp, "pairs (%d, %d): %04x, want %04x", j, d, got, exp);
            if (hr_t_cur_failed) return;
        }
    float *sp[NQ], *op[NQ], worst = 0;
    for (int r = 0; r < NQ; r++)
        sp[r] = s[r], op[r] = o[r];
    memset(s, 0, sizeof s);
    x->pv(sp, q, HD, NQ, kt, HD / 2, W); /* Q K^T */
    for (int r = 0; r < NQ; r++)
        for (int j = 0; j < W; j++) {
            double e = 0;
            for (int d = 0; j < NJ && rows[j] && d < HD; d++)
                e += (double)bf(q[r * HD + d]) * bf(rows[j][d]);
            worst = fmaxf(worst, fabsf(s[r][j] - (float)e));
        }
    HR_CHECK(worst < 1e-5f, "Q K^T on pv differs by %g", (double)worst);
    for (int r = 0; r < NQ; r++) {
        for (int j = 0; j < W; j++)
            w[r * W + j] = j < NJ && (r + j) % 4 ? fabsf(frand()) : 0;
        x->round(pb + r * W, w + r * W, W);
        for (int d = 0; d < HD; d++) {
            o[r][d] = frand();
            want[r][d] = o[r][d];
            for (int j = 0; j < NJ; j++)
                want[r][d] += rows[j] ? bf(pb[r * W + j]) * bf(rows[j][d]) : 0;
        }
    }
    x->pv(op, pb, W, NQ, vp, (NJ + 1) / 2, HD); /* P V */
    worst = 0;
    for (int r = 0; r < NQ; r++)
        for (int d = 0; d < HD; d++)
            worst = fmaxf(worst, fabsf(o[r][d] - want[r][d]));
    HR_CHECK(worst < 1e-5f, "P V on pv differs by %g", (double)worst);
}

int main(void) {
    HR_RUN(test_chunking_invariance);
    HR_RUN(test_thread_counts);
    HR_RUN(test_bf16_products_close);
    HR_RUN(test_bx_kernels);
    return hr_test_summary();
}
