/* Option table parsing; see args.h. */
#include "cli/args.h"

#include "backend/backend.h"
#include "hearth/hearth.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_usage(const char *usage, const hr_opt *opts, int n) {
    printf("%s\n\noptions:\n", usage);
    for (int i = 0; i < n; i++) {
        if (!opts[i].help) continue; /* hidden: for hearth's own use */
        const char *arg = opts[i].kind == HR_OPT_FLAG  ? ""
                          : opts[i].kind == HR_OPT_STR ? " S"
                          : opts[i].kind == HR_OPT_INT ? " N"
                                                       : " X";
        char left[64];
        snprintf(left, sizeof left, "--%s%s", opts[i].name, arg);
        printf("  %-22s %s\n", left, opts[i].help);
    }
    printf("  %-22s %s\n", "--help", "show this help");
}

static hr_err *set_value(const hr_opt *o, const char *v) {
    char *end;
    errno = 0;
    switch (o->kind) {
    case HR_OPT_STR: *(const char **)o->out = v; return NULL;
    case HR_OPT_INT: {
        long x = strtol(v, &end, 10);
        if (errno || end == v || *end) return hr_errf("--%s: \"%s\" is not an integer", o->name, v);
        *(long *)o->out = x;
        return NULL;
    }
    case HR_OPT_FLOAT: {
        double x = strtod(v, &end);
        if (errno || end == v || *end) return hr_errf("--%s: \"%s\" is not a number", o->name, v);
        *(double *)o->out = x;
        return NULL;
    }
    case HR_OPT_FLAG: *(int *)o->out = 1; return NULL;
    }
    return NULL;
}

hr_err *hr_opts_parse(int argc, char **argv, const hr_opt *opts, int n_opts, const char *usage,
                      int *help) {
    *help = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            print_usage(usage, opts, n_opts);
            *help = 1;
            return NULL;
        }
        if (strncmp(a, "--", 2) != 0) return hr_errf("unexpected argument \"%s\" (see --help)", a);
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const hr_opt *o = NULL;
        for (int k = 0; k < n_opts; k++)
            if (strlen(opts[k].name) == len && strncmp(opts[k].name, name, len) == 0) o = &opts[k];
        if (!o) return hr_errf("unknown option --%.*s (see --help)", (int)len, name);
        if (o->kind == HR_OPT_FLAG) {
            if (eq) return hr_errf("--%s takes no value", o->name);
            HR_TRY(set_value(o, NULL));
            continue;
        }
        const char *v = eq ? eq + 1 : NULL;
        if (!v) {
            if (i + 1 >= argc) return hr_errf("--%s needs a value", o->name);
            v = argv[++i];
        }
        HR_TRY(set_value(o, v));
    }
    return NULL;
}

hr_err *hr_parse_numerics(const char *compute, const char *kv_dtype, int exact, int fast,
                          hr_numerics_req *out) {
    *out = (hr_numerics_req){HR_COMPUTE_AUTO, HR_KV_AUTO, fast && !exact};
    if (compute && !strcmp(compute, "bf16"))
        out->compute = HR_COMPUTE_BF16;
    else if (compute && !strcmp(compute, "f32"))
        out->compute = HR_COMPUTE_F32;
    else if (compute)
        return hr_errf("--compute must be f32 or bf16, not \"%s\"", compute);
    if (kv_dtype && !(out->kv_dtype = hr_kv_type_parse(kv_dtype)))
        return hr_errf("--kv-dtype must be f32, bf16, f16, q8_0 or q4_0, not \"%s\"", kv_dtype);
    if (exact && out->compute == HR_COMPUTE_BF16)
        return hr_errf("--exact keeps f32 products; it cannot go with --compute bf16");
    if (exact && out->kv_dtype > HR_KV_F32)
        return hr_errf("--exact keeps an f32 KV cache; it cannot go with --kv-dtype %s", kv_dtype);
    return NULL;
}

hr_err *hr_parse_device(const char *s) {
    hr_err *err = hr_backend_device_check(s);
    return err ? hr_err_wrap(err, "--device: ") : NULL;
}

hr_err *hr_parse_int_list(const char *s, const char *what, int **out, int *n) {
    *out = NULL;
    *n = 0;
    int cap = 16, count = 0;
    int *v = malloc(sizeof(int) * (size_t)cap);
    if (!v) return hr_err_oom();
    const char *p = s;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p) break;
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (errno || end == p || x < INT_MIN || x > INT_MAX ||
            (*end && *end != ',' && *end != ' ')) {
            free(v);
            return hr_errf("%s: \"%s\" is not a comma-separated list of integers", what, s);
        }
        if (count == cap) {
            int *nv = realloc(v, sizeof(int) * (size_t)(cap *= 2));
            if (!nv) {
                free(v);
                return hr_err_oom();
            }
            v = nv;
        }
        v[count++] = (int)x;
        p = end;
    }
    if (count == 0) {
        free(v);
        return hr_errf("%s: empty list", what);
    }
    *out = v;
    *n = count;
    return NULL;
}

hr_err *hr_parse_gpu_memory(double f) {
    if (f == 0 || (f > 0 && f <= 1)) return NULL;
    return hr_errf("--gpu-memory must be a fraction in (0, 1], e.g. 0.9");
}
