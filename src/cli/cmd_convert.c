/* hearth convert: writes the MLX affine layout of a bf16 / f16 / f32 checkpoint (engine/
 * convert.h) and prints the sizes before and after. --keep may repeat and takes
 * comma-separated globs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/verbs.h"
#include "engine/convert.h"

enum { MAX_KEEP = 64 };

/* Moves every "--keep X" / "--keep=X" out of argv into keep (split at commas, pointing into
 * the copy in *buf); returns the new argc. */
static int take_keeps(int argc, char **argv, char **buf, const char **keep, int *n_keep,
                      hr_err **err) {
    int out = 0;
    size_t cap = 1;
    for (int i = 0; i < argc; i++)
        cap += strlen(argv[i]) + 1;
    char *b = *buf = malloc(cap), *p = b;
    *n_keep = 0;
    for (int i = 0; i < argc && b; i++) {
        const char *v = NULL;
        if (i > 0 && strcmp(argv[i], "--keep") == 0)
            v = i + 1 < argc ? argv[++i] : "";
        else if (i > 0 && strncmp(argv[i], "--keep=", 7) == 0)
            v = argv[i] + 7;
        if (!v) {
            argv[out++] = argv[i];
            continue;
        }
        strcpy(p, v);
        for (char *t = strtok(p, ","); t; t = strtok(NULL, ",")) {
            if (*n_keep == MAX_KEEP)
                *err = hr_errf("--keep: more than %d globs", MAX_KEEP);
            else
                keep[(*n_keep)++] = t;
        }
        if (!*v) *err = hr_errf("--keep needs a glob");
        p += strlen(v) + 1;
    }
    if (!b) *err = hr_err_oom();
    return out;
}

static void print_stats(const hr_convert_opts *o, const hr_convert_stats *s) {
    printf("%s -> %s: %d of %d tensors quantized, %.3f bits per weight over the matrices\n",
           o->model, o->out, s->n_quantized, s->n_tensors, s->bpw);
    printf("size: %.2f MiB -> %.2f MiB (%.1f%%)\n", (double)s->bytes_before / (1 << 20),
           (double)s->bytes_after / (1 << 20),
           s->bytes_before ? 100.0 * (double)s->bytes_after / (double)s->bytes_before : 0.0);
}

int hr_cmd_convert(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *mixed = NULL, *calib = NULL, *keep[MAX_KEEP];
    long bits = 4, group = 64, threads = 0;
    double target = 0;
    char *buf = NULL;
    int n_keep = 0;
    hr_err *err = NULL;
    argc = take_keeps(argc, argv, &buf, keep, &n_keep, &err);
    hr_opt opts[] = {
        {"model", HR_OPT_STR, &model, "source checkpoint directory (bf16, f16 or f32)"},
        {"out", HR_OPT_STR, &out, "output directory (must not exist)"},
        {"bits", HR_OPT_INT, &bits, "bits per weight: 2, 3, 4, 5, 6 or 8 (default 4)"},
        {"group-size", HR_OPT_INT, &group,
         "elements per scale and bias: 32, 64 or 128 (default 64)"},
        {"mixed", HR_OPT_STR, &mixed,
         "mlx-lm recipe: mixed_2_6, mixed_3_4, mixed_3_6 or mixed_4_6"},
        {"target-bpw", HR_OPT_FLOAT, &target,
         "average bits per weight, bits placed by measured sensitivity"},
        {"keep", HR_OPT_STR, NULL,
         "glob(s) of tensors left unquantized (repeatable, comma-separated)"},
        {"calib", HR_OPT_STR, &calib,
         "calibration text for --target-bpw (default: fixed random tokens)"},
        {"threads", HR_OPT_INT, &threads, "threads for --target-bpw's measurements (default: all)"},
    };
    int help = 0;
    if (!err)
        err = hr_opts_parse(
            argc, argv, opts, sizeof opts / sizeof *opts,
            "usage: hearth convert --model DIR --out DIR [--bits 4|8] [--group-size 64] "
            "[--mixed RECIPE] [--target-bpw B] [--keep GLOB]...",
            &help);
    if (!err && !help && (!model || !out)) err = hr_errf("--model and --out are required");
    hr_convert_opts o = {model, out,    (int)bits, (int)group, mixed,       target,
                         keep,  n_keep, calib,     1,          (int)threads};
    if (!err && !help) err = hr_convert_check_opts(&o);
    hr_convert_stats s;
    if (!err && !help) {
        hr_err *e = hr_convert(&o, &s);
        free(buf);
        if (e) return hr_cmd_fail("convert", e);
        print_stats(&o, &s);
        return 0;
    }
    free(buf);
    if (err) return hr_cmd_fail("convert", err), 2;
    return 0;
}
