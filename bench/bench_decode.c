/* Batch-1 decode and prefill speed of a model on the CPU backend, at several context
 * lengths, against this machine's streaming-read roofline (weights + the KV read per token,
 * in the KV dtype):
 *   bench_decode MODEL_DIR [threads=2] [runs=3] [kv_dtype=f32|bf16|f16|q8_0] [f32|bf16 products]
 * Make a real-shape model first: hearth mkmodel --preset qwen3-0.6b --out DIR. */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "engine/generate.h"
#include "engine/numerics.h"
#include "hearth/hearth.h"

static int bench_ctx(hr_model *m, int ctx, int n_gen, int runs, double gbs) {
    const hr_model_config *c = hr_model_cfg(m);
    int32_t *prompt = malloc(sizeof(int32_t) * (size_t)ctx);
    for (int i = 0; i < ctx; i++) prompt[i] = (int32_t)((i * 7919 + 13) % c->vocab);
    double dec[16], pre[16];
    for (int r = 0; r < runs; r++) {
        hr_gen_request req = {prompt, ctx, n_gen, {.top_p = 1}, NULL, 0, 256};
        hr_gen_stats st;
        hr_err *err = hr_generate(m, &req, NULL, NULL, &st);
        if (err) {
            fprintf(stderr, "bench: %s\n", hr_err_msg(err));
            hr_err_free(err);
            free(prompt);
            return 1;
        }
        dec[r] = (st.n_generated - 1) / st.decode_s;
        pre[r] = ctx / st.prefill_s;
    }
    qsort(dec, (size_t)runs, sizeof *dec, cmp_double);
    qsort(pre, (size_t)runs, sizeof *pre, cmp_double);
    hr_kv_store shape;
    hr_model_kv_shape(m, &shape);
    double kv = (double)(ctx + n_gen / 2) * (double)hr_kv_token_bytes(&shape);
    double bytes = (double)hr_model_weight_bytes(m) + kv;
    double roof = gbs * 1e9 / bytes;
    printf("ctx %5d | decode %6.2f tok/s (%.2f..%.2f) | roofline %6.2f tok/s | %5.1f%% | prefill %7.1f tok/s\n",
           ctx, dec[runs / 2], dec[0], dec[runs - 1], roof, 100 * dec[runs / 2] / roof, pre[runs / 2]);
    free(prompt);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_decode MODEL_DIR [threads] [runs] [kv_dtype] [f32|bf16]\n");
        return 2;
    }
    int threads = argc > 2 ? atoi(argv[2]) : 2, runs = argc > 3 ? atoi(argv[3]) : 3;
    if (runs < 1 || runs > 16) runs = 3;
    double gbs = bench_read_bandwidth(threads, NULL, NULL);
    hr_backend *be;
    hr_model *m;
    int kv = argc > 4 ? hr_kv_type_parse(argv[4]) : HR_KV_F32;
    int bf16 = argc > 5 && !strcmp(argv[5], "bf16");
    if (!kv) {
        fprintf(stderr, "bench: kv_dtype must be f32, bf16, f16 or q8_0\n");
        return 2;
    }
    hr_err *err = hr_backend_cpu_create(&(hr_cpu_options){.n_threads = threads, .compute_bf16 = bf16}, &be);
    if (!err) err = hr_model_load(argv[1], be, &m);
    if (!err) hr_model_set_kv_dtype(m, hr_kv_type_dtype(kv));
    if (err) {
        fprintf(stderr, "bench: %s\n", hr_err_msg(err));
        return 1;
    }
    printf("model %s (%s, %.2f GB weights), %d threads, %s kernels, %s products, %s KV, read "
           "bandwidth %.1f GB/s, %d runs\n",
           argv[1], hr_model_cfg(m)->model_type, hr_model_weight_bytes(m) / 1e9, threads,
           hr_cpu_level_name(hr_cpu()->level), bf16 ? "bf16" : "f32",
           hr_kv_dtype_flag(hr_kv_type_dtype(kv)), gbs, runs);
    int rc = bench_ctx(m, 128, 33, runs, gbs) || bench_ctx(m, 2048, 33, runs, gbs);
    hr_model_free(m);
    hr_backend_destroy(be);
    return rc;
}
