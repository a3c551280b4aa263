/* hearth: the command-line entry point. Global options (--log-level) may come before or
 * after the verb; the rest is the verb's own. */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "cli/verbs.h"

static void usage(FILE *f) {
    fprintf(f, "usage: hearth [--log-level debug|info|warn|error|off] <verb> [options]\n\nverbs:\n");
    for (const hr_verb *v = hr_verbs; v->name; v++) fprintf(f, "  %-12s %s\n", v->name, v->summary);
    fprintf(f, "\n`hearth <verb> --help` shows a verb's options.\n");
}

/* Removes --log-level X from argv (anywhere), applying it. Returns -1 on a bad level. */
static int take_log_level(int *argc, char **argv) {
    int w = 0;
    for (int r = 0; r < *argc; r++) {
        const char *a = argv[r];
        const char *val = NULL;
        if (strcmp(a, "--log-level") == 0 && r + 1 < *argc) val = argv[++r];
        else if (strncmp(a, "--log-level=", 12) == 0) val = a + 12;
        else {
            argv[w++] = argv[r];
            continue;
        }
        if (hr_log_set_level(val) != 0) {
            fprintf(stderr, "hearth: unknown --log-level \"%s\" (debug|info|warn|error|off)\n", val);
            return -1;
        }
    }
    *argc = w;
    return 0;
}

int main(int argc, char **argv) {
    if (take_log_level(&argc, argv) != 0) return 2;
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (const hr_verb *v = hr_verbs; v->name; v++)
        if (strcmp(v->name, argv[1]) == 0) return v->fn(argc - 1, argv + 1);
    fprintf(stderr, "hearth: unknown verb \"%s\"\n", argv[1]);
    usage(stderr);
    return 2;
}
