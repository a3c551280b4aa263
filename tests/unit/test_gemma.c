/* Gemma family pieces that the golden tests do not isolate: the config semantics of the
 * published shapes (mkmodel presets), the MoE ops against a dense all-experts reference at
 * odd sizes, the soft-cap / scale-free norm ops, and the per-slot KV geometry and window
 * info the engine reads. */
#include <math.h>

#include "backend/backend.h"
#include "engine/kv_pool.h"
#include "harness.h"
#include "model/mkmodel.h"
#include "tensor/dtype.h"
#include "tensor/view.h"

static unsigned rng = 777;
static float frand(void) {
    rng = rng * 1103515245u + 12345u;
    return ((float)((rng >> 8) & 0xffff) / 65536.0f) * 2.0f - 1.0f;
}

static void test_gemma3_preset(void) {
    hr_model_config c;
    HR_CHECK_OK(hr_config_parse("gemma3-1b", hr_mkmodel_preset("gemma3-1b"), &c));
    HR_CHECK(c.arch == HR_ARCH_GEMMA3 && c.norm_one_plus && c.sandwich_norm && c.qk_norm,
             "gemma3 flags");
    for (int l = 0; l < c.n_layers; l++)
        HR_CHECK(c.layer_kind[l] == ((l + 1) % 6 == 0 ? HR_LAYER_FULL : HR_LAYER_SLIDING),
                 "layer %d kind from sliding_window_pattern", l);
    HR_CHECK(c.rope.theta == 1e6 && c.rope_sliding.theta == 1e4, "rope bases %g %g", c.rope.theta,
             c.rope_sliding.theta);
    HR_CHECK(fabs(c.attn_scale - 1.0 / 16) < 1e-12 && c.sliding_window == 512, "scale/window");
    HR_CHECK(c.embed_scale == (double)(float)sqrt(1152.0) && c.tie_embeddings, "embed scale, tied");
}

static void test_gemma4_preset(void) {
    hr_model_config c;
    HR_CHECK_OK(hr_config_parse("gemma4-e4b", hr_mkmodel_preset("gemma4-e4b"), &c));
    HR_CHECK(c.arch == HR_ARCH_GEMMA4 && !c.norm_one_plus && c.v_norm && c.attn_scale == 1.0,
             "flags");
    HR_CHECK(c.layer_head_dim[0] == 256 && c.layer_head_dim[5] == 512, "head dims %d %d",
             c.layer_head_dim[0], c.layer_head_dim[5]);
    for (int l = 0; l < 24; l++)
        HR_CHECK(c.kv_source[l] == l, "layer %d owns its KV", l);
    /* shared layers read the last non-shared layer of their type: 22 (sliding), 23 (full) */
    for (int l = 24; l < 42; l++)
        HR_CHECK(c.kv_source[l] == (c.layer_kind[l] == HR_LAYER_FULL ? 23 : 22),
                 "layer %d source %d", l, c.kv_source[l]);
    HR_CHECK(c.rope.type == HR_ROPE_PROPORTIONAL && c.rope.partial_rotary == 0.25, "full rope");
    HR_CHECK(c.ple_dim == 256 && c.final_softcap == 30.0, "ple %d softcap %g", c.ple_dim,
             c.final_softcap);
}

/* Dense reference: every expert on every token, weighted by its routing weight or 0. */
static void moe_dense(float *y, const float *x, const int32_t *idx, const float *w, int T, int k,
                      int E, int H, int I, const float *gu, const float *dn) {
    for (int t = 0; t < T; t++)
        for (int c = 0; c < H; c++)
            y[t * H + c] = 0;
    float *h = malloc(sizeof(float) * (size_t)I);
    for (int e = 0; e < E; e++)
        for (int t = 0; t < T; t++) {
            float wt = 0;
            for (int j = 0; j < k; j++)
                if (idx[t * k + j] == e) wt = w[t * k + j];
            for (int i = 0; i < I; i++) {
                float g = 0, u = 0;
                for (int c = 0; c < H; c++) {
                    g += gu[((long)e * 2 * I + i) * H + c] * x[t * H + c];
                    u += gu[((long)e * 2 * I + I + i) * H + c] * x[t * H + c];
                }
                h[i] = 0.5f * g * (1.0f + tanhf(0.7978845608f * (g + 0.044715f * g * g * g))) * u;
            }
            for (int c = 0; c < H; c++) {
                float o = 0;
                for (int i = 0; i < I; i++)
                    o += dn[((long)e * H + c) * I + i] * h[i];
                y[t * H + c] += wt * o;
            }
        }
    free(h);
}

static void check_moe(hr_backend *be, int T, int E, int k, int H, int I) {
    float *x = malloc(sizeof(float) * (size_t)T * H),
          *logits = malloc(sizeof(float) * (size_t)T * E);
    float *gu = malloc(sizeof(float) * (size_t)E * 2 * I * H),
          *dn = malloc(sizeof(float) * (size_t)E * H * I);
    float *scale = malloc(sizeof(float) * (size_t)E), *w = malloc(sizeof(float) * (size_t)T * k);
    float *y0 = malloc(sizeof(float) * (size_t)T * H), *y1 = malloc(sizeof(float) * (size_t)T * H);
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)T * k);
    for (long i = 0; i < (long)T * H; i++)
        x[i] = frand();
    for (long i = 0; i < (long)T * E; i++)
        logits[i] = 3 * frand();
    for (long i = 0; i < (long)E * 2 * I * H; i++)
        gu[i] = frand() / sqrtf((float)H);
    for (long i = 0; i < (long)E * H * I; i++)
        dn[i] = frand() / sqrtf((float)I);
    for (int e = 0; e < E; e++)
        scale[e] = 1 + frand() / 2;
    hr_tensor st = {.data = scale, .dtype = HR_F32, .ndim = 1, .shape = {E}};
    be->vt->moe_route(be, idx, w, logits, T, E, k, 1);
    be->vt->mul_gather(be, w, idx, &st, (long)T * k);
    for (int t = 0; t < T; t++) { /* top-k of a softmax, renormalised, then scaled */
        float sum = 0;
        for (int j = 0; j < k; j++) {
            sum += w[t * k + j] / scale[idx[t * k + j]];
            if (j)
                HR_CHECK(logits[t * E + idx[t * k + j]] <= logits[t * E + idx[t * k + j - 1]],
                         "order");
        }
        HR_CHECK(fabsf(sum - 1) < 1e-5f, "token %d weights sum to %g", t, sum);
    }
    hr_tensor *gv = calloc((size_t)E * 3, sizeof *gv);
    const hr_tensor **gp = calloc((size_t)E * 3, sizeof *gp);
    hr_tensor sgu = {.data = gu, .dtype = HR_F32, .ndim = 3, .shape = {E, 2 * I, H}};
    hr_tensor sdn = {.data = dn, .dtype = HR_F32, .ndim = 3, .shape = {E, H, I}};
    for (int e = 0; e < E; e++) { /* gate, up = halves of gate_up[e]; down[e]: as the loader does */
        HR_CHECK_OK(hr_tensor_slab_rows(&sgu, e, 0, I, &gv[e]));
        HR_CHECK_OK(hr_tensor_slab_rows(&sgu, e, I, I, &gv[E + e]));
        HR_CHECK_OK(hr_tensor_slab_rows(&sdn, e, 0, H, &gv[2 * E + e]));
    }
    for (int i = 0; i < 3 * E; i++)
        gp[i] = &gv[i];
    hr_moe_weights mw = {E, H, I, gp, gp + E, gp + 2 * E, HR_ACT_FN_GELU_TANH};
    hr_step_meta meta = {.n_tokens = T};
    HR_CHECK_OK(be->vt->step_begin(be, &meta));
    be->vt->moe_experts(be, y1, x, idx, w, T, k, &mw);
    moe_dense(y0, x, idx, w, T, k, E, H, I, gu, dn);
    float worst = 0;
    for (long i = 0; i < (long)T * H; i++)
        worst = fmaxf(worst, fabsf(y0[i] - y1[i]) / (1 + fabsf(y0[i])));
    HR_CHECK(worst < 1e-4f, "moe T=%d E=%d k=%d H=%d I=%d: rel diff %g", T, E, k, H, I, worst);
    void *bufs[] = {x, logits, gu, dn, scale, w, y0, y1, idx, gv, gp};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        free(bufs[i]);
}

static void test_moe_ops(void) {
    hr_backend *be;
    HR_CHECK_OK(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2}, &be));
    int cases[][5] = {{1, 8, 2, 16, 8}, {7, 5, 3, 33, 17}, {13, 8, 1, 20, 9}, {31, 4, 4, 12, 5}};
    for (int i = 0; i < 4 && !hr_t_cur_failed; i++)
        check_moe(be, cases[i][0], cases[i][1], cases[i][2], cases[i][3], cases[i][4]);
    hr_backend_destroy(be);
}

static void test_small_ops(void) {
    hr_backend *be;
    HR_CHECK_OK(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 1}, &be));
    float y[7], x[7] = {3, -1, 0.5f, 2, -4, 1, 0};
    for (int i = 0; i < 7; i++)
        y[i] = x[i] * 20;
    be->vt->softcap(be, y, 30.0f, 7);
    for (int i = 0; i < 7; i++)
        HR_CHECK(fabsf(y[i] - 30 * tanhf(x[i] * 20 / 30)) < 1e-5f, "softcap %d", i);
    be->vt->rmsnorm(be, y, x, NULL, 1, 7, 1e-6f, 0);
    float ss = 0;
    for (int i = 0; i < 7; i++)
        ss += y[i] * y[i];
    HR_CHECK(fabsf(ss / 7 - 1) < 1e-4f, "scale-free rmsnorm has unit rms (%g)", ss / 7);
    float d[6] = {0};
    be->vt->copy2d(be, d, 3, x + 1, 3, 2, 2); /* 2 rows of 2, strides 3 */
    HR_CHECK(d[0] == x[1] && d[1] == x[2] && d[2] == 0 && d[3] == x[4] && d[4] == x[5], "copy2d");
    hr_backend_destroy(be);
}

/* tiny-gemma4: layers 4 and 5 share the KV of 3 and 2, so the store has 4 layers, each
 * packed at its own head_dim (32 or 64). */
static void test_kv_geometry(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", hr_fixture("models/tiny-gemma4"));
    hr_backend *be;
    hr_model *m;
    HR_CHECK_OK(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 1}, &be));
    HR_CHECK_OK(hr_model_load(dir, be, &m));
    hr_kv_store kv = {0};
    hr_model_kv_shape(m, &kv);
    HR_CHECK(kv.n_layers == 4 && kv.head_dim == 64, "slots %d width %d", kv.n_layers, kv.head_dim);
    HR_CHECK(kv.layer_head_dim[0] == 32 && kv.layer_head_dim[2] == 64, "per-slot head dims");
    int want[] = {16, 16, 0, 16};
    for (int s = 0; s < 4; s++)
        HR_CHECK(hr_model_kv_window(m, s) == want[s], "slot %d window", s);
    hr_model_free(m);
    hr_backend_destroy(be);
}

int main(void) {
    HR_RUN(test_gemma3_preset);
    HR_RUN(test_gemma4_preset);
    HR_RUN(test_moe_ops);
    HR_RUN(test_small_ops);
    HR_RUN(test_kv_geometry);
    return hr_test_summary();
}
