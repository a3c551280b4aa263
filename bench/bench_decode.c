/* Batch-1 decode and prefill speed of a model on the CPU backend, at several context
 * lengths, against this machine's streaming-read roofline (weights + the KV read per token,
 * in the KV dtype):
 *   bench_decode MODEL [threads=2] [runs=3] [contexts=128,2048] [kv_dtype=f32|bf16|f16|q8_0]
 *                [f32|bf16 products of bf16 weights]
 * MODEL is a checkpoint directory or a GGUF file. Each context is one prefill of that many
 * tokens, then 32 decoded ones. Make a real-shape model first: hearth mkmodel --preset
 * qwen3-0.6b --out DIR [--gguf FILE]. */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "engine/generate.h"
#include "engine/numerics.h"
#include "hearth/hearth.h"

static int bench_ctx(hr_model *m, int ctx, int n_gen, int runs, double gbs) {
    const hr_model_config *c = hr_model_cfg(m);
    int32_t *prompt = malloc(sizeof(int32_t) * (size_t)ctx);
    for (int i = 0; i < ctx; i++)
        prompt[i] = (int32_t)((i * 7919 + 13) % c->vocab);
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
    printf("ctx %5d | decode %6.2f tok/s (%.2f..%.2f) | roofline %6.2f tok/s | %5.1f%% | prefill "
           "%7.1f tok/s\n",
           ctx, dec[runs / 2], dec[0], dec[runs - 1], roof, 100 * dec[runs / 2] / roof,
           pre[runs / 2]);
    free(prompt);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr,
                "usage: bench_decode MODEL [threads] [runs] [contexts] [kv_dtype] [f32|bf16]\n");
        return 2;
    }
    int threads = argc > 2 ? atoi(argv[2]) : 2, runs = argc > 3 ? atoi(argv[3]) : 3;
    if (runs < 1 || runs > 16) runs = 3;
    double gbs = bench_read_bandwidth(threads, NULL, NULL);
    hr_backend *be;
    hr_model *m;
    const char *ctxs = argc > 4 ? argv[4] : "128,2048";
    int kv = argc > 5 ? hr_kv_type_parse(argv[5]) : HR_KV_F32;
    int bf16 = argc > 6 && !strcmp(argv[6], "bf16");
    if (!kv) {
        fprintf(stderr, "bench: kv_dtype must be f32, bf16, f16 or q8_0\n");
        return 2;
    }
    hr_err *err =
        hr_backend_cpu_create(&(hr_cpu_options){.n_threads = threads, .compute_bf16 = bf16}, &be);
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
    int rc = 0;
    for (const char *p = ctxs; *p && !rc; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        int ctx = atoi(p);
        rc = ctx < 1 || bench_ctx(m, ctx, 33, runs, gbs);
    }
    hr_model_free(m);
    hr_backend_destroy(be);
    return rc;
}
