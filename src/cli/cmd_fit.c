/* hearth fit: will a model with a context of N positions for S sequences fit this
 * machine's RAM? Reads config.json and the safetensors headers (or the GGUF header) only (the
 * tensor data is mapped, never read) and prints weight bytes, KV bytes per token (in the KV dtype
 * serve would choose, or --kv-dtype / --exact), the recurrent state of hybrid models and the total,
 * from the sizes the KV pool allocates (backend.h). */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/verbs.h"
#include "model/model.h"
#include "model/weights.h"

static double gib(double b) { return b / (1024.0 * 1024.0 * 1024.0); }

/* Free and total bytes of the memory the model would live in: the GPU's for CUDA (asked of a
 * backend made for the purpose), else the host's; *what names it. */
static hr_err *memory_of(const char *device, size_t *avail, size_t *total, const char **what) {
    hr_backend *be;
    HR_TRY(
        hr_backend_create(&(hr_backend_options){.device = device, .cpu = {.n_threads = 1}}, &be));
    hr_err *err = be->vt->mem_info(be, avail, total);
    *what = strcmp(be->vt->name, "cpu") ? "GPU memory" : "RAM";
    hr_backend_destroy(be);
    return err;
}

static hr_err *fit(const char *dir, long ctx, long seqs, const hr_numerics_req *num,
                   const char *device) {
    hr_model_config c;
    hr_weights *w;
    HR_TRY(hr_weights_open(dir, &c, &w));
    size_t weights = hr_weights_data_bytes(w);
    hr_dtype wdt = hr_weights_main_dtype(w);
    hr_weights_close(w);
    hr_backend_caps caps;
    hr_numerics n;
    device = hr_backend_device_for(device, wdt); /* as hr_model_open */
    HR_TRY(hr_backend_caps_of(device, &caps));
    HR_TRY(hr_numerics_choose(num, wdt, &caps, &n));
    if (ctx > c.max_pos && c.max_pos > 0)
        fprintf(stderr, "note: --ctx %ld is beyond the model's max_position_embeddings (%d)\n", ctx,
                c.max_pos);
    hr_kv_store shape;
    int head_dims[HR_MAX_LAYERS];
    hr_config_kv_shape(&c, n.kv, &shape, head_dims);
    HR_TRY(hr_kv_dtype_check(&shape));
    size_t per_token = hr_kv_token_bytes(&shape), state = hr_kv_state_bytes(&shape);
    double kv = (double)per_token * (double)ctx * (double)seqs + (double)state * (double)seqs;
    double total = (double)weights + kv;
    size_t avail_b, total_b;
    const char *what;
    HR_TRY(memory_of(device, &avail_b, &total_b, &what));
    double ram = (double)total_b, free_ram = (double)avail_b;
    printf("model          %s (%s, %d layers, %d KV heads x %d)\n", dir, c.model_type, c.n_layers,
           c.n_kv_heads, c.head_dim);
    printf("weights        %.0f bytes (%.2f GiB)\n", (double)weights, gib((double)weights));
    printf("kv per token   %zu bytes (%s K and V, %d of %d layers store KV)\n", per_token,
           hr_kv_dtype_flag(n.kv), shape.n_layers, c.n_layers);
    if (state)
        printf("state per seq  %zu bytes (f32 recurrent state of %d linear-attention layers; "
               "each prefix-cache snapshot takes as much)\n",
               state, shape.n_state_layers);
    printf("kv total       %.0f bytes (%.2f GiB) for %ld positions x %ld sequences\n", kv, gib(kv),
           ctx, seqs);
    printf("total          %.0f bytes (%.2f GiB)\n", total, gib(total));
    printf("%-14s %.2f GiB total, %.2f GiB available\n",
           !strcmp(what, "RAM") ? "machine RAM" : what, gib(ram), gib(free_ram));
    printf("verdict        %s %s\n",
           total <= free_ram ? "fits in available"
           : total <= ram    ? "fits in total"
                             : "does NOT fit in",
           what);
    if (total > free_ram && total <= ram) printf("               (free memory first)\n");
    return NULL;
}

int hr_cmd_fit(int argc, char **argv) {
    const char *model = NULL, *kv_dtype = NULL, *device = NULL;
    long ctx = 0, seqs = 1;
    int exact = 0;
    hr_opt opts[] = {
        {"model", HR_OPT_STR, &model, "model directory"},
        {"ctx", HR_OPT_INT, &ctx, "context length in positions (per sequence)"},
        {"seqs", HR_OPT_INT, &seqs, "concurrent sequences (default 1)"},
        {"kv-dtype", HR_OPT_STR, &kv_dtype, HR_KV_DTYPE_HELP},
        {"exact", HR_OPT_FLAG, &exact, "count the f32 KV cache of --exact"},
        {"device", HR_OPT_STR, &device, "whose memory: " HR_DEVICE_HELP},
    };
    int help;
    hr_err *err =
        hr_opts_parse(argc, argv, opts, sizeof opts / sizeof *opts,
                      "usage: hearth fit --model DIR --ctx N [--seqs S] [--kv-dtype T]", &help);
    if (err) return hr_cmd_fail("fit", err), 2;
    if (help) return 0;
    if (!model || ctx <= 0)
        return hr_cmd_fail("fit", hr_errf("--model and --ctx N (N > 0) are required")), 2;
    if (seqs <= 0 || seqs > 1000000 || ctx > 100000000)
        return hr_cmd_fail("fit", hr_errf("--ctx or --seqs out of range")), 2;
    hr_numerics_req num;
    if ((err = hr_parse_numerics(NULL, kv_dtype, exact, 1, &num)))
        return hr_cmd_fail("fit", err), 2;
    if ((err = hr_parse_device(device))) return hr_cmd_fail("fit", err), 2;
    err = fit(model, ctx, seqs, &num, device);
    return err ? hr_cmd_fail("fit", err) : 0;
}
