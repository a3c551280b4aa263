/* Every hearth verb: int hr_cmd_<verb>(int argc, char **argv), argv[0] being the verb.
 * Returns the process exit code (0 ok, 1 error, 2 usage error). */
#ifndef HR_CLI_VERBS_H
#define HR_CLI_VERBS_H

#include "base/err.h"

typedef int (*hr_cmd_fn)(int argc, char **argv);

typedef struct {
    const char *name;
    hr_cmd_fn fn;
    const char *summary;
} hr_verb;

/* The verb table, ended by a zeroed entry (verbs.c). */
extern const hr_verb hr_verbs[];

/* Prints "hearth <verb>: <message>" to stderr, frees err, returns exit code 1. */
int hr_cmd_fail(const char *verb, hr_err *err);

int hr_cmd_tokenize(int argc, char **argv);
int hr_cmd_detokenize(int argc, char **argv);
int hr_cmd_grammar(int argc, char **argv);

int hr_cmd_logits(int argc, char **argv);

int hr_cmd_run(int argc, char **argv);

int hr_cmd_mkmodel(int argc, char **argv);
int hr_cmd_convert(int argc, char **argv);
int hr_cmd_template(int argc, char **argv);
int hr_cmd_bench(int argc, char **argv);
int hr_cmd_fit(int argc, char **argv);
int hr_cmd_bench_serve(int argc, char **argv);

int hr_cmd_serve(int argc, char **argv);

#endif
