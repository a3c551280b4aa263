/* hearth fit: will a model with a context of N positions for S sequences fit this
 * machine's RAM? Reads config.json and the safetensors headers (or the GGUF header) only (the tensor data is
 * mapped, never read) and prints weight bytes, KV bytes per token and the total. */
#include <stdio.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/verbs.h"
#include "engine/kv_pool.h"
#include "model/weights.h"

static double gib(double b) {
    return b / (1024.0 * 1024.0 * 1024.0);
}

static hr_err *fit(const char *dir, long ctx, long seqs) {
    hr_model_config c;
    hr_weights *w;
    HR_TRY(hr_weights_open(dir, &c, &w));
    size_t weights = hr_weights_data_bytes(w);
    hr_weights_close(w);
    if (ctx > c.max_pos && c.max_pos > 0)
        fprintf(stderr, "note: --ctx %ld is beyond the model's max_position_embeddings (%d)\n", ctx,
                c.max_pos);
    size_t per_token = hr_kv_bytes_per_token(&c);
    double kv = (double)per_token * (double)ctx * (double)seqs, total = (double)weights + kv;
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES),
         page = sysconf(_SC_PAGESIZE);
    double ram = (double)pages * (double)page, free_ram = (double)avail * (double)page;
    printf("model          %s (%s, %d layers, %d KV heads x %d)\n", dir, c.model_type, c.n_layers,
           c.n_kv_heads, c.head_dim);
    printf("weights        %.0f bytes (%.2f GiB)\n", (double)weights, gib((double)weights));
    printf("kv per token   %zu bytes (f32 K and V, all layers)\n", per_token);
    printf("kv total       %.0f bytes (%.2f GiB) for %ld positions x %ld sequences\n", kv, gib(kv),
           ctx, seqs);
    printf("total          %.0f bytes (%.2f GiB)\n", total, gib(total));
    printf("machine RAM    %.2f GiB total, %.2f GiB available\n", gib(ram), gib(free_ram));
    printf("verdict        %s\n", total <= free_ram ? "fits in available RAM"
                                  : total <= ram    ? "fits in total RAM only (free memory first)"
                                                    : "does NOT fit in RAM");
    return NULL;
}

int hr_cmd_fit(int argc, char **argv) {
    const char *model = NULL;
    long ctx = 0, seqs = 1;
    hr_opt opts[] = {
        {"model", HR_OPT_STR, &model, "model directory"},
        {"ctx", HR_OPT_INT, &ctx, "context length in positions (per sequence)"},
        {"seqs", HR_OPT_INT, &seqs, "concurrent sequences (default 1)"},
    };
    int help;
    hr_err *err = hr_opts_parse(argc, argv, opts, sizeof opts / sizeof *opts,
                                "usage: hearth fit --model DIR --ctx N [--seqs S]", &help);
    if (err) return hr_cmd_fail("fit", err), 2;
    if (help) return 0;
    if (!model || ctx <= 0)
        return hr_cmd_fail("fit", hr_errf("--model and --ctx N (N > 0) are required")), 2;
    if (seqs <= 0 || seqs > 1000000 || ctx > 100000000)
        return hr_cmd_fail("fit", hr_errf("--ctx or --seqs out of range")), 2;
    err = fit(model, ctx, seqs);
    return err ? hr_cmd_fail("fit", err) : 0;
}
