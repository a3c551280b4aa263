/* hearth: the command-line entry point. Global options (--log-level, --log-format) may come before
 * or after the verb; the rest is the verb's own. */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "cli/verbs.h"

static void usage(FILE *f) {
    fprintf(f, "usage: hearth [--log-level debug|info|warn|error|off] [--log-format text|json] "
               "<verb> [options]\n\nverbs:\n");
    for (const hr_verb *v = hr_verbs; v->name; v++)
        fprintf(f, "  %-12s %s\n", v->name, v->summary);
    fprintf(f, "\n`hearth <verb> --help` shows a verb's options.\n");
}

/* The value of --NAME X or --NAME=X at argv[*r] (advancing *r past X), else NULL. */
static const char *global_opt(int argc, char **argv, int *r, const char *name) {
    size_t n = strlen(name);
    const char *a = argv[*r];
    if (strncmp(a, "--", 2) || strncmp(a + 2, name, n)) return NULL;
    if (a[2 + n] == '=') return a + 3 + n;
    if (a[2 + n] || *r + 1 >= argc) return NULL;
    return argv[++*r];
}

/* Removes --log-level X and --log-format X from argv (anywhere), applying them. Returns -1
 * on a bad value. */
static int take_log_options(int *argc, char **argv) {
    int w = 0;
    for (int r = 0; r < *argc; r++) {
        const char *level = global_opt(*argc, argv, &r, "log-level"), *format = NULL;
        if (!level) format = global_opt(*argc, argv, &r, "log-format");
        if (!level && !format) {
            argv[w++] = argv[r];
            continue;
        }
        if (level && hr_log_set_level(level) != 0) {
            fprintf(stderr, "hearth: unknown --log-level \"%s\" (debug|info|warn|error|off)\n",
                    level);
            return -1;
        }
        if (format && hr_log_set_format(format) != 0) {
            fprintf(stderr, "hearth: unknown --log-format \"%s\" (text|json)\n", format);
            return -1;
        }
    }
    *argc = w;
    return 0;
}

int main(int argc, char **argv) {
    if (take_log_options(&argc, argv) != 0) return 2;
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
