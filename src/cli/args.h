/* Option parsing shared by every verb: a table of --name options (string, int, float,
 * flag), "--name value" or "--name=value", --help printing the table, and clear errors
 * for unknown options, missing values and malformed numbers. */
#ifndef HR_CLI_ARGS_H
#define HR_CLI_ARGS_H

#include "base/err.h"

typedef enum { HR_OPT_STR, HR_OPT_INT, HR_OPT_FLOAT, HR_OPT_FLAG } hr_opt_kind;

typedef struct {
    const char *name; /* without the leading dashes */
    hr_opt_kind kind;
    void *out;        /* const char **, long *, double *, int * */
    const char *help;
} hr_opt;

/* Parses argv[1..argc) (argv[0] is the verb). Sets *help when --help was given (the usage
 * has then been printed to stdout). */
hr_err *hr_opts_parse(int argc, char **argv, const hr_opt *opts, int n_opts, const char *usage,
                      int *help);

/* The --compute option: NULL or "f32" (exact products) gives 0, "bf16" 1. */
hr_err *hr_parse_compute(const char *s, int *bf16);

/* The --device option: NULL, "auto", "cpu" or "cuda"; anything else is a usage error. */
hr_err *hr_parse_device(const char *s);
#define HR_DEVICE_HELP "cpu, cuda or auto (default: cuda when hearth was built with it and a GPU is present, else cpu)"

/* Parses "1,5,17" into a heap array of ints. */
hr_err *hr_parse_int_list(const char *s, const char *what, int **out, int *n);

#endif
