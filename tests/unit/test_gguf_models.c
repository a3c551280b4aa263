/* GGUF models against their safetensors checkpoints: brown-llama-8m-F16.gguf (made by
 * llama.cpp's converter) gives the checkpoint's logits and reference.json's held-out NLL;
 * the tiny fixtures of each family, converted by hr_gguf_convert (llama.cpp's conventions:
 * q/k permutation, gemma norms 1 + w, stacked experts, F16), give the checkpoint's logits;
 * the quantized fixture files load their container and config, with reference.json's
 * tensor types, and hr_gguf_convert_as's Q4_K_M gives llama-quantize's types. Tolerance of the
 * logit comparisons: the weights are equal (bf16 -> f16 is exact for them), but f16 and bf16
 * products go through different kernels whose f32 sums run in different orders, so logits agree to
 * 1e-4 (measured: a few 1e-6). */
#include <unistd.h>

#include "base/json.h"
#include "harness.h"
#include "model/gguf.h"
#include "model/gguf_write.h"
#include "model/model.h"
#include "model_logits.h"

static hr_backend *be;
static json_t *gref; /* ../shared/fixtures/gguf/reference.json */

/* Logits of ids (every position) from the model at path; *out is n x vocab. */
static hr_err *logits_of(const char *path, const int32_t *ids, int n, float **out, int *vocab) {
    return hr_t_logits(be, path, ids, n, out, vocab);
}

static double max_diff(const float *a, const float *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

/* The two models' logits on ids agree to tol. */
static void compare(const char *a, const char *b, const int32_t *ids, int n, double tol) {
    float *la = NULL, *lb = NULL;
    int va = 0, vb = 0;
    HR_CHECK_OK(logits_of(a, ids, n, &la, &va));
    hr_err *e = logits_of(b, ids, n, &lb, &vb);
    double d = e || va != vb ? INFINITY : max_diff(la, lb, (size_t)n * va);
    free(la);
    free(lb);
    HR_CHECK_OK(e);
    printf("  %s: max |logit difference| %.3g\n", a, d);
    HR_CHECK(d <= tol, "%s vs %s: logits differ by %g (vocab %d vs %d)", a, b, d, va, vb);
}

static void test_brown_f16_logits(void) {
    const int32_t ids[] = {1,     415, 2936, 9060,  12459, 28744, 6483,
                           28713, 754, 272,  17898, 3914,  28723};
    compare(hr_fixture("gguf/brown-llama-8m-F16.gguf"), hr_fixture("models/brown-llama-8m"), ids,
            13, 1e-4);
}

static void test_brown_f16_nll(void) {
    json_t *mref;
    HR_CHECK_OK(hr_json_load_file(hr_fixture("models/brown-llama-8m/reference.json"), &mref));
    const json_t *arr = json_object_get(mref, "heldout_ids");
    int n = (int)json_array_size(arr);
    int32_t *ids = malloc(sizeof *ids * (size_t)n);
    for (int i = 0; i < n; i++)
        ids[i] = (int32_t)json_integer_value(json_array_get(arr, (size_t)i));
    json_decref(mref);
    float *l = NULL;
    int V = 0;
    hr_err *e = logits_of(hr_fixture("gguf/brown-llama-8m-F16.gguf"), ids, n, &l, &V);
    double nll = 0;
    for (int t = 0; !e && t + 1 < n; t++) {
        const float *r = l + (size_t)t * V;
        double mx = r[0], s = 0;
        for (int i = 1; i < V; i++)
            mx = fmax(mx, r[i]);
        for (int i = 0; i < V; i++)
            s += exp(r[i] - mx);
        nll += mx + log(s) - r[ids[t + 1]];
    }
    nll /= n - 1;
    free(l);
    free(ids);
    HR_CHECK_OK(e);
    const json_t *f = json_object_get(json_object_get(gref, "files"), "brown-llama-8m-F16.gguf");
    double want = json_real_value(
        json_object_get(json_object_get(f, "transformers"), "heldout_ids_mean_nll"));
    printf("  mean NLL %.7f, transformers on the GGUF %.7f\n", nll, want);
    HR_CHECK(fabs(nll - want) <= 1e-5 * want, "NLL %.7f, want %.7f", nll, want);
}

/* tiny-FAMILY converted to GGUF gives the checkpoint's logits. */
static void converted(const char *family) {
    char dir[256], path[256];
    snprintf(dir, sizeof dir, "models/tiny-%s", family);
    snprintf(path, sizeof path, "/tmp/hearth-test-gguf-%d-%s.gguf", (int)getpid(), family);
    HR_CHECK_OK(hr_gguf_convert(hr_fixture(dir), path));
    const int32_t ids[] = {1,  17,  300, 42, 5,   99, 260, 7,  511, 3,
                           64, 128, 2,   77, 400, 12, 13,  14, 200, 201};
    compare(path, hr_fixture(dir), ids, 20, 1e-4);
    unlink(path);
}

static void test_converted_llama(void) { converted("llama"); }
static void test_converted_qwen2(void) { converted("qwen2"); }
static void test_converted_qwen3(void) { converted("qwen3"); }
static void test_converted_qwen3_moe(void) { converted("qwen3_moe"); }
static void test_converted_gemma3(void) { converted("gemma3"); }

/* How many of g's tensors have another type than llama-quantize gave them in reference.json's
 * `file` (printed), or -1 when the tensor counts differ. */
static int type_mismatches(const hr_gguf *g, const char *file) {
    const json_t *tt = json_object_get(
        json_object_get(json_object_get(json_object_get(gref, "files"), file), "tensor_types"),
        "per_tensor");
    int n = hr_gguf_tensor_count(g), bad = 0;
    for (int i = 0; i < n; i++) {
        const char *want = json_string_value(json_object_get(tt, hr_gguf_tensor_name(g, i)));
        const char *got = hr_dtype_name(hr_gguf_tensor_at(g, i)->dtype);
        if (!want || strcmp(want, got))
            printf("  %s: %s, reference %s\n", hr_gguf_tensor_name(g, i), got, want), bad++;
    }
    return n == (int)json_object_size(tt) ? bad : -1;
}

/* Every tensor of a llama.cpp-quantized file has reference.json's type; the config loads. */
static void quantized(const char *file, int layers, int hidden, int heads, int kv_heads,
                      int head_dim) {
    char rel[128];
    snprintf(rel, sizeof rel, "gguf/%s", file);
    hr_gguf *g;
    HR_CHECK_OK(hr_gguf_open(hr_fixture(rel), &g));
    int bad = type_mismatches(g, file);
    hr_model_config c;
    hr_err *e = hr_config_from_gguf(g, &c);
    const hr_tensor *q = hr_gguf_tensor(g, "blk.0.attn_q.weight");
    int64_t q_rows = q ? q->shape[0] : -1, q_cols = q ? q->shape[1] : -1;
    hr_gguf_close(g);
    HR_CHECK_OK(e);
    HR_CHECK(!bad, "%d tensors of another type (-1: another count)", bad);
    HR_CHECK(c.n_layers == layers && c.hidden == hidden &&
                 (!heads || (c.n_heads == heads && c.n_kv_heads == kv_heads)) &&
                 c.head_dim == head_dim,
             "config %d layers, hidden %d, heads %d/%d x %d", c.n_layers, c.hidden, c.n_heads,
             c.n_kv_heads, c.head_dim);
    HR_CHECK(q_rows == c.n_heads * head_dim && q_cols == hidden, "attn_q shape");
}

static void test_quantized_brown(void) {
    quantized("brown-llama-8m-Q4_K_M.gguf", 6, 192, 6, 2, 32);
}
static void test_quantized_qwen3(void) { quantized("e2e-qwen3-Q8_0.gguf", 2, 64, 0, 0, 32); }

/* hr_gguf_convert_as's Q4_K_M of brown-llama-8m gives every tensor the type llama-quantize
 * gave brown-llama-8m-Q4_K_M.gguf: rows of 192 fall back (Q4_K -> Q5_0, Q6_K -> Q8_0, the
 * tied head Q8_0), ffn_down's rows of 512 are Q4_K, and Q6_K in use_more_bits' layers 2, 5. */
static void test_q4_k_m_types_match_llama_quantize(void) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/hearth-test-gguf-%d-q4km.gguf", (int)getpid());
    HR_CHECK_OK(hr_gguf_convert_as(hr_fixture("models/brown-llama-8m"), path, HR_Q4_K, 1));
    hr_gguf *g;
    hr_err *e = hr_gguf_open(path, &g);
    unlink(path);
    HR_CHECK_OK(e);
    int bad = type_mismatches(g, "brown-llama-8m-Q4_K_M.gguf");
    hr_gguf_close(g);
    HR_CHECK(!bad, "%d tensors of another type than llama-quantize's (-1: another count)", bad);
}

/* The recipe's other branches: rows of 256, an untied head, Q5_K_M, 8 experts, 70B, routers,
 * the --pure types' fallbacks. */
static void test_mix_rules(void) {
    const hr_gguf_mix q4m = {HR_Q4_K, 1, 8, 0, 0, 0}, q5m = {HR_Q5_K, 1, 8, 0, 1, 0},
                      moe8 = {HR_Q4_K, 1, 8, 8, 0, 0}, l70 = {HR_Q4_K, 1, 80, 0, 0, 1},
                      q6 = {HR_Q6_K, 0, 8, 0, 0, 0}, q5 = {HR_Q5_K, 0, 8, 0, 0, 0},
                      q40 = {HR_Q4_0, 0, 8, 0, 1, 0}, f16 = {HR_F16, 1, 8, 0, 0, 0};
    const struct {
        const hr_gguf_mix *m;
        const char *name;
        int64_t cols;
        hr_dtype want;
    } cases[] = {
        {&q4m, "token_embd.weight", 256, HR_Q4_K},
        {&q4m, "output.weight", 256, HR_Q6_K},
        {&q4m, "output.weight", 288, HR_Q8_0},
        {&q4m, "output.weight", 48, HR_F16},
        {&q4m, "blk.0.attn_v.weight", 256, HR_Q6_K},
        {&q4m, "blk.1.attn_v.weight", 256, HR_Q4_K},
        {&q4m, "blk.3.ffn_down.weight", 512, HR_Q6_K},
        {&q4m, "blk.4.ffn_down.weight", 512, HR_Q4_K},
        {&q4m, "blk.6.attn_v.weight", 256, HR_Q6_K},
        {&q4m, "blk.7.ffn_down.weight", 512, HR_Q6_K},
        {&q4m, "blk.3.attn_q.weight", 256, HR_Q4_K},
        {&q4m, "blk.3.attn_q.weight", 128, HR_Q5_0},
        {&q4m, "blk.3.ffn_gate.weight", 48, HR_F16},
        {&q5m, "token_embd.weight", 256, HR_Q6_K},
        {&q5m, "blk.2.ffn_up.weight", 256, HR_Q5_K},
        {&q5m, "blk.2.ffn_up.weight", 96, HR_Q5_1},
        {&q5m, "blk.0.ffn_down.weight", 512, HR_Q6_K},
        {&moe8, "blk.1.attn_v.weight", 256, HR_Q8_0},
        {&moe8, "blk.1.attn_k.weight", 256, HR_Q8_0},
        {&moe8, "blk.1.attn_output.weight", 256, HR_Q5_K},
        {&moe8, "blk.1.ffn_gate_inp.weight", 256, HR_F16},
        {&l70, "blk.11.attn_v.weight", 256, HR_Q5_K},
        {&l70, "blk.12.attn_v.weight", 256, HR_Q6_K},
        {&q6, "output.weight", 256, HR_Q6_K},
        {&q6, "blk.0.attn_v.weight", 64, HR_Q8_0},
        {&q5, "blk.0.attn_v.weight", 64, HR_Q5_1},
        {&q40, "token_embd.weight", 64, HR_Q4_0},
        {&q40, "blk.0.attn_q.weight", 48, HR_F16},
        {&f16, "output.weight", 256, HR_F16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hr_dtype got = hr_gguf_mix_type(cases[i].m, cases[i].name, cases[i].cols);
        HR_CHECK(got == cases[i].want, "case %zu: %s of %lld is %s, want %s", i, cases[i].name,
                 (long long)cases[i].cols, hr_dtype_name(got), hr_dtype_name(cases[i].want));
    }
}

int main(void) {
    hr_err *e = hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2}, &be);
    if (!e) e = hr_json_load_file(hr_fixture("gguf/reference.json"), &gref);
    if (e) {
        printf("FAIL setup: %s\n", hr_err_msg(e));
        return 1;
    }
    HR_RUN(test_brown_f16_logits);
    HR_RUN(test_brown_f16_nll);
    HR_RUN(test_converted_llama);
    HR_RUN(test_converted_qwen2);
    HR_RUN(test_converted_qwen3);
    HR_RUN(test_converted_qwen3_moe);
    HR_RUN(test_converted_gemma3);
    HR_RUN(test_quantized_brown);
    HR_RUN(test_quantized_qwen3);
    HR_RUN(test_q4_k_m_types_match_llama_quantize);
    HR_RUN(test_mix_rules);
    json_decref(gref);
    hr_backend_destroy(be);
    return hr_test_summary();
}
