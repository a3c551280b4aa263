/* Quantization plans for hearth convert; see quant_plan.h. */
#include "model/quant_plan.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const int hr_qplan_levels[HR_QPLAN_LEVELS] = {2, 3, 4, 5, 6, 8};

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int kept(const char *name, const char *const *keep, int n_keep) {
    char path[512];
    size_t n = strlen(name) - strlen(".weight");
    snprintf(path, sizeof path, "%.*s", (int)n, name);
    for (int i = 0; i < n_keep; i++)
        if (fnmatch(keep[i], name, 0) == 0 || fnmatch(keep[i], path, 0) == 0) return 1;
    return 0;
}

/* The MoE router rules of mlx-lm's qwen3_moe / qwen3_next / qwen3_5 / gemma4 predicates. */
static int is_router(const char *name) {
    return ends_with(name, "mlp.gate.weight") || ends_with(name, "shared_expert_gate.weight") ||
           ends_with(name, "router.proj.weight");
}

static int is_float(hr_dtype t) { return t == HR_F32 || t == HR_F16 || t == HR_BF16; }

static void plan_entry(const hr_tensor *t, const char *name, int bits, int group,
                       const char *const *keep, int n_keep, hr_qplan_entry *e) {
    *e = (hr_qplan_entry){.name = name, .dtype = t->dtype};
    if (t->ndim != 2 || !is_float(t->dtype) || !ends_with(name, ".weight")) return;
    /* hearth's MoE expert kernels read floats */
    if (strstr(name, ".experts.")) return;
    e->rows = t->shape[0];
    e->cols = t->shape[1];
    if (kept(name, keep, n_keep)) return;
    if (is_router(name)) {
        if (e->cols % 64) return;
        *e = (hr_qplan_entry){name, t->dtype, e->rows, e->cols, 1, 1, 8, 64};
        return;
    }
    if (e->cols % group) return; /* mlx-lm leaves these unquantized too */
    e->candidate = 1;
    e->bits = bits;
    e->group = group;
}

hr_err *hr_qplan_build(const hr_safetensors *st, int bits, int group, const char *const *keep,
                       int n_keep, hr_qplan *out) {
    out->n = hr_st_count(st);
    out->e = calloc((size_t)out->n, sizeof *out->e);
    if (!out->e) return hr_err_oom();
    for (int i = 0; i < out->n; i++) {
        const char *name = hr_st_name(st, i);
        plan_entry(hr_st_get(st, name), name, bits, group, keep, n_keep, &out->e[i]);
    }
    return NULL;
}

void hr_qplan_free(hr_qplan *p) {
    free(p->e);
    p->e = NULL;
    p->n = 0;
}

/* The first all-digit component of a dotted name (the layer index), else 0 as in mlx-lm. */
static int layer_of(const char *name) {
    for (const char *p = name; *p;) {
        const char *e = strchr(p, '.');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        size_t d = 0;
        while (d < n && isdigit((unsigned char)p[d]))
            d++;
        if (n && d == n) return atoi(p);
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

hr_err *hr_qplan_mixed(hr_qplan *p, const char *recipe, int n_layers, int tied) {
    int low, high = 6;
    if (strcmp(recipe, "mixed_2_6") == 0)
        low = 2;
    else if (strcmp(recipe, "mixed_3_4") == 0)
        low = 3, high = 4;
    else if (strcmp(recipe, "mixed_3_6") == 0)
        low = 3;
    else if (strcmp(recipe, "mixed_4_6") == 0)
        low = 4;
    else
        return hr_errf(
            "--mixed: unknown recipe \"%s\" (mixed_2_6, mixed_3_4, mixed_3_6, mixed_4_6)", recipe);
    for (int i = 0; i < p->n; i++) {
        hr_qplan_entry *e = &p->e[i];
        if (!e->candidate && !e->fixed) continue;
        int idx = layer_of(e->name), n8 = n_layers / 8;
        int more = idx < n8 || idx >= 7 * n_layers / 8 || (idx - n8) % 3 == 2;
        int sensitive = (strstr(e->name, "v_proj") || strstr(e->name, "down_proj")) && more;
        int head = strstr(e->name, "lm_head") || (tied && strstr(e->name, "embed_tokens.weight"));
        e->candidate = 1; /* the recipe replaces the router rule, as in mlx-lm */
        e->fixed = 0;
        e->bits = sensitive || head ? high : low;
    }
    return NULL;
}

static double entry_bpw(const hr_qplan_entry *e, int bits) {
    double cb = e->dtype == HR_F32 ? 4 : 2;
    return bits ? bits + 16.0 * cb / e->group : 8 * cb;
}

double hr_qplan_bpw(const hr_qplan *p) {
    double bits = 0, n = 0;
    for (int i = 0; i < p->n; i++) {
        const hr_qplan_entry *e = &p->e[i];
        if (!e->candidate && !e->fixed) continue;
        bits += entry_bpw(e, e->bits) * (double)(e->rows * e->cols);
        n += (double)(e->rows * e->cols);
    }
    return n ? bits / n : 0;
}

/* The allocatable entry and level whose step up gains the most KL per added bit within the
 * budget, or -1. */
static int best_step(const hr_qplan *p, const int *lvl, const double *sens, double room) {
    int best = -1;
    double best_gain = -1e300;
    for (int i = 0; i < p->n; i++) {
        const hr_qplan_entry *e = &p->e[i];
        if (!e->candidate || e->fixed || lvl[i] + 1 >= HR_QPLAN_LEVELS) continue;
        double n = (double)(e->rows * e->cols);
        double cost =
            (entry_bpw(e, hr_qplan_levels[lvl[i] + 1]) - entry_bpw(e, hr_qplan_levels[lvl[i]])) * n;
        if (cost > room) continue;
        const double *s = sens + (size_t)i * HR_QPLAN_LEVELS;
        double gain = (s[lvl[i]] - s[lvl[i] + 1]) / cost;
        if (gain > best_gain) best_gain = gain, best = i;
    }
    return best;
}

hr_err *hr_qplan_target(hr_qplan *p, double target, const double *sens) {
    int *lvl = calloc((size_t)p->n, sizeof *lvl);
    if (!lvl) return hr_err_oom();
    double n = 0, used = 0;
    for (int i = 0; i < p->n; i++) {
        hr_qplan_entry *e = &p->e[i];
        if (!e->candidate && !e->fixed) continue;
        if (e->candidate && !e->fixed) e->bits = hr_qplan_levels[0];
        n += (double)(e->rows * e->cols);
        used += entry_bpw(e, e->bits) * (double)(e->rows * e->cols);
    }
    if (n == 0 || used > target * n + 1e-9 * n) {
        free(lvl);
        return hr_errf("--target-bpw %.3f is below the smallest reachable average (%.3f)", target,
                       n ? used / n : 0.0);
    }
    for (int i; (i = best_step(p, lvl, sens, target * n - used)) >= 0;) {
        hr_qplan_entry *e = &p->e[i];
        used += (entry_bpw(e, hr_qplan_levels[lvl[i] + 1]) - entry_bpw(e, e->bits)) *
                (double)(e->rows * e->cols);
        e->bits = hr_qplan_levels[++lvl[i]];
    }
    free(lvl);
    return NULL;
}
