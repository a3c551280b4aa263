/* hearth logits: teacher-forced logits of every position of a token sequence, written to
 * a safetensors file as one F32 tensor "logits" of shape [T, vocab]. */
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/verbs.h"
#include "engine/kv_pool.h"
#include "engine/open.h"
#include "model/safetensors.h"

typedef struct {
    const float *logits;
} fill_ctx;

static hr_err *fill_logits(void *ctx, int index, size_t off, void *buf, size_t len) {
    memcpy(buf, (const char *)((fill_ctx *)ctx)->logits + off, len);
    return NULL;
}

static hr_err *compute(hr_model *m, const int32_t *ids, int n, float *logits) {
    hr_kv_pool pool;
    int bs = 16;
    HR_TRY(hr_kv_pool_create(&pool, m, (n + bs - 1) / bs, bs));
    hr_kv_seq seq = {0};
    hr_err *err = hr_kv_seq_reserve(&pool, &seq, n);
    if (!err) {
        hr_row row = {ids, n, 0, seq.blocks, HR_LOGITS_ALL, 0};
        err = hr_model_forward(m, &pool.store, &row, 1, logits);
    }
    hr_kv_seq_release(&pool, &seq);
    hr_kv_pool_destroy(&pool);
    return err;
}

static hr_err *run(const char *dir, const char *tokens, const char *out, long threads,
                   const hr_numerics_req *num, const char *device) {
    int *ids;
    int n;
    HR_TRY(hr_parse_int_list(tokens, "--tokens", &ids, &n));
    hr_opened_model om = {0};
    float *logits = NULL;
    hr_open_options oo = {.device = device,
                          .n_threads = (int)threads,
                          .weights_in_place = 1,
                          .no_tokenizer = 1,
                          .numerics = *num};
    hr_err *err = hr_model_open(dir, &oo, &om);
    hr_model *m = om.model;
    if (!err) {
        int V = hr_model_cfg(m)->vocab;
        logits = malloc(sizeof(float) * (size_t)n * (size_t)V);
        err = logits ? compute(m, (const int32_t *)ids, n, logits) : hr_err_oom();
        if (!err) {
            hr_st_spec spec = {"logits", HR_F32, 2, {n, V}};
            fill_ctx fc = {logits};
            err = hr_st_write(out, &spec, 1, fill_logits, &fc);
        }
    }
    free(logits);
    hr_model_close(&om);
    free(ids);
    return err;
}

int hr_cmd_logits(int argc, char **argv) {
    const char *model = NULL, *tokens = NULL, *out = NULL, *compute = NULL, *device = NULL,
               *kv_dtype = NULL;
    hr_numerics_req num;
    long threads = 0;
    hr_opt opts[] = {
        {"model", HR_OPT_STR, &model, "model directory (config.json + safetensors)"},
        {"tokens", HR_OPT_STR, &tokens, "comma-separated token ids, e.g. 1,5,17"},
        {"out", HR_OPT_STR, &out, "output .safetensors file (tensor \"logits\", F32 [T, vocab])"},
        {"device", HR_OPT_STR, &device, HR_DEVICE_HELP},
        {"threads", HR_OPT_INT, &threads, "CPU threads (default: all online CPUs)"},
        {"compute", HR_OPT_STR, &compute,
         "products of bf16 weights: f32 (exact, default) or bf16 (activations rounded to bf16; "
         "faster, AMX)"},
        {"kv-dtype", HR_OPT_STR, &kv_dtype, "KV cache: f32 (default), bf16, f16, q8_0 or q4_0"},
    };
    int help;
    hr_err *err = hr_opts_parse(
        argc, argv, opts, sizeof opts / sizeof *opts,
        "usage: hearth logits --model DIR --tokens 1,5,17 --out FILE.safetensors", &help);
    if (err) return hr_cmd_fail("logits", err), 2;
    if (help) return 0;
    if (!model || !tokens || !out)
        return hr_cmd_fail("logits", hr_errf("--model, --tokens and --out are required")), 2;
    if ((err = hr_parse_device(device))) return hr_cmd_fail("logits", err), 2;
    if ((err = hr_parse_numerics(compute, kv_dtype, 0, 0, &num)))
        return hr_cmd_fail("logits", err), 2;
    err = run(model, tokens, out, threads, &num, device);
    return err ? hr_cmd_fail("logits", err) : 0;
}
