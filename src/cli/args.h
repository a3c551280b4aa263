/* Option parsing shared by every verb: a table of --name options (string, int, float,
 * flag), "--name value" or "--name=value", --help printing the table, and clear errors
 * for unknown options, missing values and malformed numbers. */
#ifndef HR_CLI_ARGS_H
#define HR_CLI_ARGS_H

#include "base/err.h"
#include "engine/numerics.h"

typedef enum { HR_OPT_STR, HR_OPT_INT, HR_OPT_FLOAT, HR_OPT_FLAG } hr_opt_kind;

typedef struct {
    const char *name; /* without the leading dashes */
    hr_opt_kind kind;
    void *out;        /* const char **, long *, double *, int * */
    const char *help; /* NULL: a hidden option, left out of --help */
} hr_opt;

/* Parses argv[1..argc) (argv[0] is the verb). Sets *help when --help was given (the usage
 * has then been printed to stdout). */
hr_err *hr_opts_parse(int argc, char **argv, const hr_opt *opts, int n_opts, const char *usage,
                      int *help);

/* --compute f32|bf16, --kv-dtype f32|bf16|f16|q8_0 and --exact (NULL / 0 when absent) into
 * a numerics request. fast: the verb's default is the fast numerics (serve, run, bench,
 * bench-serve) unless --exact. Unknown values and --exact with --compute bf16 or a narrow
 * --kv-dtype are usage errors. */
hr_err *hr_parse_numerics(const char *compute, const char *kv_dtype, int exact, int fast,
                          hr_numerics_req *out);
#define HR_COMPUTE_HELP                                                                            \
    "products of bf16 weights: f32 (exact) or bf16 (activations rounded to bf16; faster, AMX); "   \
    "default bf16 for bf16 weights unless --exact"
#define HR_KV_DTYPE_HELP                                                                           \
    "KV cache: f32, bf16, f16, q8_0 or q4_0 (default bf16 for bf16 weights unless --exact, else "  \
    "f32)"
#define HR_EXACT_HELP                                                                              \
    "f32 products and f32 KV for reference work (the default for bf16 weights is bf16)"

/* The --device option: NULL, "auto", "cpu" or "cuda"; anything else is a usage error. */
hr_err *hr_parse_device(const char *s);
#define HR_GPU_MEMORY_HELP                                                                         \
    "on a GPU, the fraction of the memory the weights leave free that the KV cache takes "         \
    "(default 0.9; without --kv-memory)"
/* NULL when f (a --gpu-memory value; 0 = not given) is in (0, 1]. */
hr_err *hr_parse_gpu_memory(double f);
#define HR_DEVICE_HELP                                                                             \
    "cpu, cuda or auto (default: cuda when hearth was built with it and a GPU is present, else "   \
    "cpu)"

/* Parses "1,5,17" into a heap array of ints. */
hr_err *hr_parse_int_list(const char *s, const char *what, int **out, int *n);

#endif
