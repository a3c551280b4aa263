/* The verb table: one line per verb, in the order `hearth --help` lists them. */
#include "cli/verbs.h"

#include <stdio.h>

const hr_verb hr_verbs[] = {
    {"template", hr_cmd_template, "render a chat request through the model's chat template"},
    {NULL, NULL, NULL},
};

int hr_cmd_fail(const char *verb, hr_err *err) {
    fprintf(stderr, "hearth %s: %s\n", verb, hr_err_msg(err));
    hr_err_free(err);
    return 1;
}
