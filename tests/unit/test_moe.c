/* The CPU MoE ops: routing (softmax, top-k, renormalisation, ties) on hand-made logits, and
 * the grouped expert op against the per-token reference on random inputs at odd sizes, with
 * f32 and bf16 experts, at every kernel level. */
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "base/cpu.h"
#include "harness.h"
#include "tensor/dtype.h"
#include "tensor/view.h"

static unsigned rng = 777;
static float frand(void) {
    rng = rng * 1103515245u + 12345u;
    return ((float)((rng >> 8) & 0xffff) / 65536.0f) * 2.0f - 1.0f;
}

static void test_route(void) {
    hr_backend *be;
    HR_CHECK_OK(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 1}, &be));
    float logits[2 * 4] = {0.5f, 2.0f, 1.0f, 2.0f, /* tie between 1 and 3 */ -1, -2, -3, 4};
    int32_t ids[4];
    float w[4];
    be->vt->moe_route(be, ids, w, logits, 2, 4, 2, 0);
    HR_CHECK(ids[0] == 1 && ids[1] == 3 && ids[2] == 3 && ids[3] == 0, "top-k ids %d %d %d %d",
             ids[0], ids[1], ids[2], ids[3]);
    float z = expf(0.5f) + 2 * expf(2.0f) + expf(1.0f);
    HR_CHECK(fabsf(w[0] - expf(2.0f) / z) < 1e-6f && fabsf(w[1] - w[0]) < 1e-6f,
             "softmax weights %g %g", w[0], w[1]);
    be->vt->moe_route(be, ids, w, logits, 2, 4, 2, 1);
    HR_CHECK(fabsf(w[0] + w[1] - 1) < 1e-6f && fabsf(w[2] + w[3] - 1) < 1e-6f,
             "renormalised weights do not sum to 1");
    hr_backend_destroy(be);
}

/* n tensors of shape (rows, cols) in dtype, filled with random values; data in buf. */
static void make_experts(hr_tensor *t, const hr_tensor **ptr, void **buf, int n, int rows, int cols,
                         hr_dtype dt) {
    for (int e = 0; e < n; e++) {
        size_t cnt = (size_t)rows * cols;
        buf[e] = malloc(cnt * 4);
        for (size_t i = 0; i < cnt; i++) {
            float v = frand() / sqrtf((float)cols);
            if (dt == HR_F32)
                ((float *)buf[e])[i] = v;
            else
                ((uint16_t *)buf[e])[i] = hr_f32_to_bf16(v);
        }
        t[e] = (hr_tensor){.data = buf[e], .dtype = dt, .ndim = 2, .shape = {rows, cols}};
        ptr[e] = &t[e];
    }
}

/* One random MoE input: E experts of (H, I) in dtype dt, T tokens routed to k experts each
 * by be, and an output buffer. */
typedef struct {
    int T, k, H;
    hr_tensor tg[16], tu[16], td[16];
    const hr_tensor *pg[16], *pu[16], *pd[16];
    void *bg[16], *bu[16], *bd[16];
    hr_moe_weights w;
    float *x, *logits, *wt, *y;
    int32_t *ids;
} moe_case;

static void moe_case_init(moe_case *c, hr_backend *be, int T, int E, int k, int H, int I,
                          hr_dtype dt, float x_scale) {
    c->T = T, c->k = k, c->H = H;
    make_experts(c->tg, c->pg, c->bg, E, I, H, dt);
    make_experts(c->tu, c->pu, c->bu, E, I, H, dt);
    make_experts(c->td, c->pd, c->bd, E, H, I, dt);
    c->w = (hr_moe_weights){E, H, I, c->pg, c->pu, c->pd, HR_ACT_FN_SILU};
    c->x = malloc(sizeof(float) * (size_t)T * H);
    c->logits = malloc(sizeof(float) * (size_t)T * E);
    c->y = malloc(sizeof(float) * (size_t)T * H);
    c->wt = malloc(sizeof(float) * (size_t)T * k);
    c->ids = malloc(sizeof(int32_t) * (size_t)T * k);
    for (int i = 0; i < T * H; i++)
        c->x[i] = x_scale * frand();
    for (int i = 0; i < T * E; i++)
        c->logits[i] = 3 * frand();
    be->vt->moe_route(be, c->ids, c->wt, c->logits, T, E, k, 1);
}

/* be's moe_experts on the case, into c->y. */
static void moe_case_run(moe_case *c, hr_backend *be) {
    be->vt->moe_experts(be, c->y, c->x, c->ids, c->wt, c->T, c->k, &c->w);
}

static void moe_case_free(moe_case *c) {
    for (int e = 0; e < c->w.n_experts; e++) {
        free(c->bg[e]);
        free(c->bu[e]);
        free(c->bd[e]);
    }
    free(c->x);
    free(c->logits);
    free(c->y);
    free(c->wt);
    free(c->ids);
}

static void check_experts(hr_backend *be, int T, int E, int k, int H, int I, hr_dtype dt) {
    moe_case c;
    moe_case_init(&c, be, T, E, k, H, I, dt, 1);
    float *y0 = malloc(sizeof(float) * (size_t)T * H);
    hr_cpu_moe_ref(y0, c.x, c.ids, c.wt, T, k, &c.w);
    moe_case_run(&c, be);
    float worst = 0;
    for (int i = 0; i < T * H; i++)
        worst = fmaxf(worst, fabsf(y0[i] - c.y[i]) / (1.0f + fabsf(y0[i])));
    free(y0);
    moe_case_free(&c);
    HR_CHECK(worst < 1e-4f, "moe_experts T=%d E=%d k=%d H=%d I=%d dtype %s: rel diff %g", T, E, k,
             H, I, hr_dtype_name(dt), worst);
}

static void test_experts(void) {
    hr_backend *be;
    HR_CHECK_OK(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 3}, &be));
    hr_cpu_level levels[] = {HR_CPU_GENERIC, HR_CPU_AVX2, HR_CPU_AVX512};
    int Ts[] = {1, 2, 7, 33},
        cfg[][4] = {{8, 2, 32, 16}, {7, 3, 33, 19}, {5, 5, 17, 1}, {16, 1, 40, 24}};
    for (int l = 0; l < 3; l++) {
        hr_cpu_set_level(levels[l]);
        for (int a = 0; a < 4; a++)
            for (int c = 0; c < 4; c++)
                for (int d = 0; d < 2; d++) {
                    check_experts(be, Ts[a], cfg[c][0], cfg[c][1], cfg[c][2], cfg[c][3],
                                  d ? HR_BF16 : HR_F32);
                    if (hr_t_cur_failed) break;
                }
    }
    hr_cpu_set_level(HR_CPU_AVX512);
    hr_backend_destroy(be);
}

static float round_bf16(float v) { return hr_bf16_to_f32(hr_f32_to_bf16(v)); }

/* --compute bf16 reference: x rounded before gate/up, act(gate) * up rounded before down,
 * exact products summed in double. */
static void moe_bf16_ref(float *y, const float *x, const int32_t *ids, const float *wt, int T,
                         int k, const hr_moe_weights *w) {
    int H = w->hidden, I = w->inter;
    float *g = malloc(sizeof(float) * (size_t)I), wr[1];
    memset(y, 0, sizeof(float) * (size_t)T * H);
    for (int t = 0; t < T; t++)
        for (int j = 0; j < k; j++) {
            int e = ids[t * k + j];
            for (int i = 0; i < I; i++) {
                double sg = 0, su = 0;
                for (int h = 0; h < H; h++) {
                    double xv = round_bf16(x[t * H + h]);
                    hr_cpu_to_f32(wr, w->gate[e], (long)i * H + h, 1);
                    sg += wr[0] * xv;
                    hr_cpu_to_f32(wr, w->up[e], (long)i * H + h, 1);
                    su += wr[0] * xv;
                }
                g[i] = round_bf16(hr_cpu_act((float)sg, w->act) * (float)su);
            }
            for (int h = 0; h < H; h++) {
                double s = 0;
                for (int i = 0; i < I; i++) {
                    hr_cpu_to_f32(wr, w->down[e], (long)h * I + i, 1);
                    s += wr[0] * g[i];
                }
                y[t * H + h] += wt[t * k + j] * (float)s;
            }
        }
    free(g);
}

/* The bf16 mode on AMX-sized experts (H, I multiples of 32) and odd ones (rounded f32 path)
 * against moe_bf16_ref; the exact f32 op must differ from that reference by much more, or
 * the test could not tell the modes apart. */
static void test_experts_bf16(void) {
    hr_backend *be16, *be32;
    HR_CHECK_OK(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2, .compute_bf16 = 1}, &be16));
    HR_CHECK_OK(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2}, &be32));
    int cfg[][5] = {{1, 8, 2, 64, 32}, {7, 8, 2, 64, 96}, {33, 6, 3, 32, 64}, {9, 5, 2, 40, 24}};
    for (size_t i = 0; i < sizeof cfg / sizeof *cfg && !hr_t_cur_failed; i++) {
        int T = cfg[i][0], H = cfg[i][3], I = cfg[i][4];
        moe_case c;
        moe_case_init(&c, be16, T, cfg[i][1], cfg[i][2], H, I, HR_BF16, 4);
        float *yr = malloc(sizeof(float) * (size_t)T * H),
              *y32 = malloc(sizeof(float) * (size_t)T * H);
        moe_bf16_ref(yr, c.x, c.ids, c.wt, T, c.k, &c.w);
        moe_case_run(&c, be32);
        memcpy(y32, c.y, sizeof(float) * (size_t)T * H);
        moe_case_run(&c, be16);
        float mx = 0, d16 = 0, d32 = 0;
        for (int j = 0; j < T * H; j++) {
            mx = fmaxf(mx, fabsf(yr[j]));
            d16 = fmaxf(d16, fabsf(c.y[j] - yr[j]));
            d32 = fmaxf(d32, fabsf(y32[j] - yr[j]));
        }
        HR_CHECK(d16 <= 1e-4f * mx, "T=%d H=%d I=%d: bf16 mode off its reference by %g (max %g)", T,
                 H, I, d16, mx);
        HR_CHECK(d32 >= 10 * d16, "T=%d H=%d I=%d: exact path as close (%g vs %g)", T, H, I, d32,
                 d16);
        free(yr);
        free(y32);
        moe_case_free(&c);
    }
    hr_backend_destroy(be16);
    hr_backend_destroy(be32);
}

/* Experts stacked as gate_up [E, 2I, H] and down [E, H, I] (gemma4's layout) addressed through
 * slab views give exactly what separate per-expert tensors give. */
static void test_stacked_views(void) {
    enum { E = 5, H = 24, I = 12, T = 9, K = 2 };
    hr_backend *be;
    HR_CHECK_OK(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2}, &be));
    static float gu[E][2 * I][H], dn[E][H][I], x[T][H], logits[T][E], y0[T][H], y1[T][H], wt[T][K];
    static float sg[E][I][H], su[E][I][H];
    for (int e = 0; e < E; e++) {
        for (int r = 0; r < 2 * I; r++)
            for (int h = 0; h < H; h++) {
                gu[e][r][h] = frand();
                if (r < I)
                    sg[e][r][h] = gu[e][r][h];
                else
                    su[e][r - I][h] = gu[e][r][h];
            }
        for (int h = 0; h < H; h++)
            for (int i = 0; i < I; i++)
                dn[e][h][i] = frand();
    }
    for (int t = 0; t < T; t++) {
        for (int h = 0; h < H; h++)
            x[t][h] = frand();
        for (int e = 0; e < E; e++)
            logits[t][e] = frand();
    }
    hr_tensor st_gu = {.data = gu, .dtype = HR_F32, .ndim = 3, .shape = {E, 2 * I, H}};
    hr_tensor st_dn = {.data = dn, .dtype = HR_F32, .ndim = 3, .shape = {E, H, I}};
    hr_tensor v[3][E], s[3][E];
    const hr_tensor *pv[3][E], *ps[3][E];
    for (int e = 0; e < E; e++) {
        HR_CHECK_OK(hr_tensor_slab_rows(&st_gu, e, 0, I, &v[0][e]));
        HR_CHECK_OK(hr_tensor_slab_rows(&st_gu, e, I, I, &v[1][e]));
        HR_CHECK_OK(hr_tensor_slab_rows(&st_dn, e, 0, H, &v[2][e]));
        s[0][e] = (hr_tensor){.data = sg[e], .dtype = HR_F32, .ndim = 2, .shape = {I, H}};
        s[1][e] = (hr_tensor){.data = su[e], .dtype = HR_F32, .ndim = 2, .shape = {I, H}};
        s[2][e] = (hr_tensor){.data = dn[e], .dtype = HR_F32, .ndim = 2, .shape = {H, I}};
        for (int m = 0; m < 3; m++) {
            pv[m][e] = &v[m][e];
            ps[m][e] = &s[m][e];
        }
    }
    int32_t ids[T][K];
    be->vt->moe_route(be, &ids[0][0], &wt[0][0], &logits[0][0], T, E, K, 0);
    hr_moe_weights wv = {E, H, I, pv[0], pv[1], pv[2], HR_ACT_FN_GELU_TANH};
    hr_moe_weights ws = {E, H, I, ps[0], ps[1], ps[2], HR_ACT_FN_GELU_TANH};
    be->vt->moe_experts(be, &y0[0][0], &x[0][0], &ids[0][0], &wt[0][0], T, K, &wv);
    be->vt->moe_experts(be, &y1[0][0], &x[0][0], &ids[0][0], &wt[0][0], T, K, &ws);
    HR_CHECK(memcmp(y0, y1, sizeof y0) == 0, "stacked views differ from separate experts");
    hr_tensor bad;
    hr_err *err = hr_tensor_slab_rows(&st_gu, E, 0, I, &bad);
    HR_CHECK(err && strstr(hr_err_msg(err), "outside"), "out-of-range slab accepted");
    hr_err_free(err);
    hr_backend_destroy(be);
}

int main(void) {
    HR_RUN(test_route);
    HR_RUN(test_experts);
    HR_RUN(test_experts_bf16);
    HR_RUN(test_stacked_views);
    return hr_test_summary();
}
