/* Quantized GGUF files end to end, against references made without hearth
 * (../shared/fixtures/gguf/reference.json): brown-llama-8m-Q4_K_M's held-out NLL on the HF ids
 * against transformers loading the file (weights dequantized to f32), and llama-perplexity's
 * quantity on llama.cpp's ids (which hearth's GGUF tokenizer reproduces, test_gguf_tokenizer)
 * against both transformers and llama-perplexity itself; e2e-qwen3-Q8_0's logits against
 * transformers' at every position. Each file runs twice: as loaded (8-bit activations in the
 * quantized products, as llama.cpp) within the tolerances derived below (TOL_*), and as its
 * "twin", every block-typed weight dequantized to f32 at upload, which must match transformers
 * to f32 rounding: that separates the loader and the weights (exact) from the fast products. */
#include "base/json.h"
#include "harness.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "model_logits.h"
#include "tensor/quant.h"

static hr_backend *be, *twin; /* twin: the CPU backend, uploading block types as f32 */
static json_t *gref;          /* ../shared/fixtures/gguf/reference.json */
static hr_backend_vt twin_vt;
static hr_err *(*cpu_upload)(hr_backend *, const hr_tensor *, hr_tensor *);
static void *twin_bufs[512]; /* the CPU backend may keep pointing at small uploads */
static int n_twin_bufs;

/* Tolerances. The twin's products are f32, like transformers', in another order: TOL_EXACT
 * (relative NLL and perplexity; absolute logits are TOL_EXACT_LOGIT). The fast products round
 * each activation to within d/2 = max|x| / 254 of its 32-element block (the 1/254 bound:
 * |error| <= sum_k |w_k| max|x| / 254 per product), which is llama.cpp's rounding too (its
 * llama-perplexity is 0.22% / 0.09% from transformers on this Q4_K_M file). Brown-llama's mean
 * NLL moves by the measured +0.0014 (+0.07%/+0.11% in perplexity): TOL_NLL, 0.003, is 2x that
 * and half the Q4_K_M - F16 gap (0.006), TOL_PPL 0.3% in perplexity. e2e-qwen3 has random
 * weights and |logit| up to 55, so a 1/254 error of sum |w h| is large: measured 0.41-0.45 in
 * the last position's logits (0.8% of max |logit|), 0.23-0.25 in the top-5 logits;
 * TOL_LOGIT_REL is 2% of max |logit| (the bound test_quant_model uses for tiny-qwen3), and
 * argmax must be equal at every position. */
#define TOL_EXACT 1e-5
#define TOL_EXACT_LOGIT 1e-3
#define TOL_NLL 0.003
#define TOL_PPL 0.003
#define TOL_LOGIT_REL 0.02

/* A GGUF block-typed tensor goes up as the f32 of its dequantization. */
static hr_err *twin_upload(hr_backend *b, const hr_tensor *host, hr_tensor *dev) {
    if (host->dtype < HR_Q8_0 || host->dtype > HR_IQ4_XS) return cpu_upload(b, host, dev);
    int64_t K = host->shape[host->ndim - 1], R = hr_tensor_numel(host) / K;
    hr_tensor t = *host;
    t.dtype = HR_F32;
    t.data = n_twin_bufs < 512 ? malloc(sizeof(float) * (size_t)(R * K)) : NULL;
    if (!t.data) return hr_err_oom();
    twin_bufs[n_twin_bufs++] = t.data;
    size_t row = hr_dtype_bytes(host->dtype, K);
    for (int64_t r = 0; r < R; r++)
        hr_dequant_row(host->dtype, (const char *)host->data + r * row, (float *)t.data + r * K, K);
    return cpu_upload(b, &t, dev);
}

/* Logits of ids (every position) from the model at path on backend b; *out is n x vocab. The
 * twin backend's f32 copies are freed with the model. */
static hr_err *logits_of(hr_backend *b, const char *path, const int32_t *ids, int n, float **out,
                         int *vocab) {
    hr_err *e = hr_t_logits(b, path, ids, n, out, vocab);
    while (n_twin_bufs)
        free(twin_bufs[--n_twin_bufs]);
    return e;
}

static double logsumexp(const float *r, int V) {
    double mx = r[0], s = 0;
    for (int i = 1; i < V; i++)
        mx = fmax(mx, r[i]);
    for (int i = 0; i < V; i++)
        s += exp(r[i] - mx);
    return mx + log(s);
}

static int argmax(const float *r, int V) {
    int best = 0;
    for (int i = 1; i < V; i++)
        if (r[i] > r[best]) best = i;
    return best;
}

static int32_t *ids_from(const json_t *arr, int *n) {
    *n = (int)json_array_size(arr);
    int32_t *ids = malloc(sizeof *ids * (size_t)*n);
    for (int i = 0; i < *n; i++)
        ids[i] = (int32_t)json_integer_value(json_array_get(arr, (size_t)i));
    return ids;
}

static const json_t *file_ref(const char *file) {
    return json_object_get(json_object_get(gref, "files"), file);
}

/* Mean NLL of ids[1..n) given their prefixes, one forward pass. */
static hr_err *mean_nll(hr_backend *b, const char *path, const int32_t *ids, int n, double *out) {
    float *l;
    int V;
    HR_TRY(logits_of(b, path, ids, n, &l, &V));
    double nll = 0;
    for (int t = 0; t + 1 < n; t++)
        nll += logsumexp(l + (size_t)t * V, V) - l[(size_t)t * V + ids[t + 1]];
    free(l);
    *out = nll / (n - 1);
    return NULL;
}

static void test_brown_q4km_heldout_nll(void) {
    json_t *mref;
    HR_CHECK_OK(hr_json_load_file(hr_fixture("models/brown-llama-8m/reference.json"), &mref));
    int n;
    int32_t *ids = ids_from(json_object_get(mref, "heldout_ids"), &n);
    json_decref(mref);
    const char *path = hr_fixture("gguf/brown-llama-8m-Q4_K_M.gguf");
    double nll = 0, nll_twin = 0;
    hr_err *e = mean_nll(be, path, ids, n, &nll);
    if (!e) e = mean_nll(twin, path, ids, n, &nll_twin);
    free(ids);
    HR_CHECK_OK(e);
    const json_t *tq = json_object_get(file_ref("brown-llama-8m-Q4_K_M.gguf"), "transformers");
    const json_t *tf = json_object_get(file_ref("brown-llama-8m-F16.gguf"), "transformers");
    double want = json_real_value(json_object_get(tq, "heldout_ids_mean_nll"));
    double f16 = json_real_value(json_object_get(tf, "heldout_ids_mean_nll"));
    printf("  Q4_K_M mean NLL %.6f (twin %.6f), transformers %.6f (diff %+.6f / %+.2g), F16 %.6f\n",
           nll, nll_twin, want, nll - want, nll_twin - want, f16);
    HR_CHECK(fabs(nll_twin - want) <= TOL_EXACT * want, "twin NLL %.7f, transformers %.7f",
             nll_twin, want);
    HR_CHECK(fabs(nll - want) <= TOL_NLL, "NLL %.6f, transformers %.6f", nll, want);
}

/* llama-perplexity's quantity: chunks of n_ctx ids, the first of each replaced by BOS, the
 * second half of each chunk scored; returns the mean NLL over all chunks. */
static hr_err *chunked_nll(hr_backend *b, const char *path, const int32_t *ids, int n, int n_ctx,
                           double *out) {
    int32_t *chunk = malloc(sizeof *chunk * (size_t)n_ctx);
    if (!chunk) return hr_err_oom();
    double sum = 0;
    int scored = 0;
    hr_err *e = NULL;
    for (int c = 0; c < n / n_ctx && !e; c++) {
        memcpy(chunk, ids + c * n_ctx, sizeof *chunk * (size_t)n_ctx);
        chunk[0] = ids[0]; /* BOS */
        float *l;
        int V;
        e = logits_of(b, path, chunk, n_ctx, &l, &V);
        for (int j = n_ctx / 2; !e && j + 1 < n_ctx; j++, scored++)
            sum += logsumexp(l + (size_t)j * V, V) - l[(size_t)j * V + chunk[j + 1]];
        if (!e) free(l);
    }
    free(chunk);
    *out = scored ? sum / scored : NAN;
    return e;
}

/* reference.json's final_ppl of FILE at n_ctx: transformers on llama.cpp's ids, or
 * llama-perplexity. */
static double ref_ppl(const char *file, int n_ctx, int llama) {
    char key[32];
    const json_t *f = file_ref(file);
    if (llama) {
        snprintf(key, sizeof key, "c%d", n_ctx);
        f = json_object_get(json_object_get(f, "llama_perplexity"), key);
    } else {
        snprintf(key, sizeof key, "llamacpp_ids.%d", n_ctx);
        f = json_object_get(json_object_get(json_object_get(f, "transformers"), "ppl_equivalent"),
                            key);
    }
    return json_real_value(json_object_get(f, "final_ppl"));
}

/* FILE's llama-perplexity quantity at c = 128 and 256 on llama.cpp's ids (relative, in
 * perplexity): the twin within TOL_EXACT of transformers, as loaded within tol_tf of
 * transformers and tol_lc of llama-perplexity. */
static void perplexity(const char *file, double tol_tf, double tol_lc) {
    const json_t *ids_ref = json_object_get(
        json_object_get(json_object_get(gref, "tokenizer_check"), "brown-llama-8m heldout ids"),
        "llamacpp_ids");
    int n;
    int32_t *ids = ids_from(ids_ref, &n);
    char rel[128];
    snprintf(rel, sizeof rel, "gguf/%s", file);
    double ppl[2][2] = {{0}}; /* [n_ctx 128, 256][fast, twin] */
    hr_err *e = NULL;
    for (int c = 0; c < 2 && !e; c++)
        for (int tw = 0; tw < 2 && !e; tw++) {
            e = chunked_nll(tw ? twin : be, hr_fixture(rel), ids, n, 128 << c, &ppl[c][tw]);
            ppl[c][tw] = exp(ppl[c][tw]);
        }
    free(ids);
    HR_CHECK_OK(e);
    for (int c = 0; c < 2; c++) {
        double tf = ref_ppl(file, 128 << c, 0), lc = ref_ppl(file, 128 << c, 1), p = ppl[c][0];
        printf("  c=%d: ppl %.4f (twin %.4f), transformers %.4f (%+.3f%%, twin %+.1e), "
               "llama-perplexity %.4f (%+.3f%%)\n",
               128 << c, p, ppl[c][1], tf, 100 * (p / tf - 1), ppl[c][1] / tf - 1, lc,
               100 * (p / lc - 1));
        HR_CHECK(fabs(ppl[c][1] / tf - 1) <= TOL_EXACT, "c=%d: twin %.4f, transformers %.4f",
                 128 << c, ppl[c][1], tf);
        HR_CHECK(fabs(p / tf - 1) <= tol_tf, "c=%d: ppl %.4f, transformers %.4f", 128 << c, p, tf);
        HR_CHECK(fabs(p / lc - 1) <= tol_lc, "c=%d: ppl %.4f, llama-perplexity %.4f", 128 << c, p,
                 lc);
    }
}

/* F16 is exact (no block types); llama.cpp rounds activations to f16 in its F16 products
 * (4e-5 from transformers), hence 2e-4 from it. */
static void test_brown_f16_perplexity(void) {
    perplexity("brown-llama-8m-F16.gguf", TOL_EXACT, 2e-4);
}

/* Q4_K_M: llama-perplexity rounds activations to 8 bits too (in its own block layout), so it
 * is within TOL_PPL of transformers as hearth is: 2 x TOL_PPL from each other. */
static void test_brown_q4km_perplexity(void) {
    perplexity("brown-llama-8m-Q4_K_M.gguf", TOL_PPL, 2 * TOL_PPL);
}

typedef struct {
    double top5, lse, last, scale; /* max |diff| of top-5 logits, logsumexp, last row; max |ref| */
    int bad_argmax;
} logit_diffs;

/* Logits l[n x V] against reference case c (per-position argmax, top-5 and logsumexp) and the
 * last position's full row ref[V]. */
static logit_diffs compare_case(const float *l, int n, int V, const json_t *c, const float *ref) {
    logit_diffs d = {0};
    for (int t = 0; t < n; t++) {
        const float *r = l + (size_t)t * V;
        const json_t *top = json_array_get(json_object_get(c, "top5_ids"), (size_t)t);
        const json_t *topl = json_array_get(json_object_get(c, "top5_logits"), (size_t)t);
        for (size_t k = 0; k < json_array_size(top); k++) {
            int id = (int)json_integer_value(json_array_get(top, k));
            d.top5 = fmax(d.top5, fabs(r[id] - json_real_value(json_array_get(topl, k))));
        }
        double lse = json_real_value(
            json_array_get(json_object_get(c, "logsumexp_per_position"), (size_t)t));
        d.lse = fmax(d.lse, fabs(logsumexp(r, V) - lse));
        d.bad_argmax += argmax(r, V) !=
                        json_integer_value(json_array_get(json_object_get(c, "argmax"), (size_t)t));
    }
    for (int i = 0; i < V; i++) {
        d.last = fmax(d.last, fabs(l[(size_t)(n - 1) * V + i] - ref[i]));
        d.scale = fmax(d.scale, fabs(ref[i]));
    }
    d.scale = fmax(d.scale, json_real_value(json_object_get(c, "max_abs")));
    return d;
}

/* e2e-qwen3-Q8_0 case `name`, as loaded and as the twin, against transformers. */
static void qwen3_case(const char *name, const hr_safetensors *st) {
    const json_t *c = json_object_get(
        json_object_get(json_object_get(file_ref("e2e-qwen3-Q8_0.gguf"), "transformers_logits"),
                        "cases"),
        name);
    char key[64];
    snprintf(key, sizeof key, "%s.logits", name);
    const hr_tensor *ref = hr_st_get(st, key);
    int n;
    int32_t *ids = ids_from(json_object_get(c, "tokens"), &n);
    float *l[2] = {NULL, NULL};
    int V = 0;
    hr_err *e = NULL;
    for (int tw = 0; tw < 2 && !e; tw++)
        e = logits_of(tw ? twin : be, hr_fixture("gguf/e2e-qwen3-Q8_0.gguf"), ids, n, &l[tw], &V);
    free(ids);
    int ok_shape = !e && ref && ref->dtype == HR_F32 && hr_tensor_numel(ref) == V;
    logit_diffs d[2] = {{0}};
    for (int tw = 0; tw < 2 && ok_shape; tw++)
        d[tw] = compare_case(l[tw], n, V, c, ref->data);
    free(l[0]);
    free(l[1]);
    HR_CHECK_OK(e);
    HR_CHECK(ok_shape, "%s: missing or not F32 [%d]", key, V);
    for (int tw = 0; tw < 2; tw++)
        printf("  %s%s: max |diff| top-5 logits %.4f, logsumexp %.4f, last position (all %d) "
               "%.4f; max |logit| %.1f\n",
               name, tw ? " twin" : "", d[tw].top5, d[tw].lse, V, d[tw].last, d[tw].scale);
    double tol = TOL_LOGIT_REL * d[0].scale;
    HR_CHECK(d[1].bad_argmax == 0 && d[1].top5 <= TOL_EXACT_LOGIT && d[1].lse <= TOL_EXACT_LOGIT &&
                 d[1].last <= TOL_EXACT_LOGIT,
             "%s: the twin's logits differ by more than %g", name, TOL_EXACT_LOGIT);
    HR_CHECK(d[0].bad_argmax == 0, "%s: argmax differs at %d of %d positions", name,
             d[0].bad_argmax, n);
    HR_CHECK(d[0].top5 <= tol && d[0].lse <= tol && d[0].last <= tol,
             "%s: logits differ by more than %g", name, tol);
}

static void test_qwen3_q8_logits(void) {
    hr_safetensors *st;
    HR_CHECK_OK(hr_st_open(hr_fixture("gguf/e2e-qwen3-Q8_0.logits.safetensors"), &st));
    qwen3_case("case1", st);
    qwen3_case("case2", st);
    hr_st_close(st);
}

int main(void) {
    hr_err *e = hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2}, &be);
    if (!e) e = hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2}, &twin);
    if (!e) e = hr_json_load_file(hr_fixture("gguf/reference.json"), &gref);
    if (e) {
        printf("FAIL setup: %s\n", hr_err_msg(e));
        return 1;
    }
    cpu_upload = twin->vt->upload;
    twin_vt = *twin->vt;
    twin_vt.upload = twin_upload;
    twin->vt = &twin_vt;
    HR_RUN(test_brown_q4km_heldout_nll);
    HR_RUN(test_brown_f16_perplexity);
    HR_RUN(test_brown_q4km_perplexity);
    HR_RUN(test_qwen3_q8_logits);
    json_decref(gref);
    hr_backend_destroy(twin);
    hr_backend_destroy(be);
    return hr_test_summary();
}
