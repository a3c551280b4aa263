/* Reading MLX-quantized checkpoints: the config block and the packed weights with their
 * companions, validated against the shapes the model expects; see mlx_load.h. */
#include "model/mlx_load.h"

#include <stdio.h>
#include <string.h>

#include "tensor/mlx_quant.h"

static hr_err *check_params(const char *what, int bits, int group) {
    if (hr_mlx_dtype(bits) == HR_DTYPE_COUNT)
        return hr_errf("config.json %s: bits %d is not supported (2, 3, 4, 5, 6 or 8)", what, bits);
    if (!hr_mlx_group_ok(group))
        return hr_errf("config.json %s: group_size %d is not supported (32, 64 or 128)", what,
                       group);
    return NULL;
}

/* bits / group_size of one quantization object, defaults from def (NULL: both required). */
static hr_err *read_params(const json_t *o, const char *what, const hr_mlx_qconfig *def, int *bits,
                           int *group) {
    int64_t b = def ? def->bits : -1, g = def ? def->group_size : -1;
    HR_TRY(hr_json_int(o, "bits", b, what, &b));
    HR_TRY(hr_json_int(o, "group_size", g, what, &g));
    if (b < 0 || g < 0) return hr_errf("config.json %s: needs bits and group_size", what);
    const char *mode;
    HR_TRY(hr_json_str(o, "mode", "affine", what, &mode));
    if (strcmp(mode, "affine") != 0)
        return hr_errf("config.json %s: mode \"%s\" is not supported (only affine)", what, mode);
    *bits = (int)b;
    *group = (int)g;
    return check_params(what, *bits, *group);
}

hr_err *hr_mlx_qconfig_parse(const json_t *config, hr_mlx_qconfig *out) {
    *out = (hr_mlx_qconfig){0};
    const json_t *text = json_object_get(config, "text_config");
    const json_t *q = json_object_get(config, "quantization");
    if (!json_is_object(q)) q = json_object_get(config, "quantization_config");
    if (!json_is_object(q) && json_is_object(text)) q = json_object_get(text, "quantization");
    if (!json_is_object(q) && json_is_object(text))
        q = json_object_get(text, "quantization_config");
    if (!json_is_object(q)) return NULL;
    const char *method;
    HR_TRY(hr_json_str(q, "quant_method", NULL, "config.json quantization", &method));
    if (method && !json_object_get(q, "bits"))
        return hr_errf("config.json: quantization method \"%s\" is not supported (MLX affine only)",
                       method);
    HR_TRY(read_params(q, "quantization", NULL, &out->bits, &out->group_size));
    out->q = json_incref((json_t *)q);
    return NULL;
}

hr_err *hr_mlx_qconfig_load(const char *dir, hr_mlx_qconfig *out) {
    char path[1024];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *j;
    HR_TRY(hr_json_load_file(path, &j));
    hr_err *err = hr_mlx_qconfig_parse(j, out);
    json_decref(j);
    return err;
}

void hr_mlx_qconfig_free(hr_mlx_qconfig *q) {
    json_decref(q->q);
    *q = (hr_mlx_qconfig){0};
}

hr_err *hr_mlx_qconfig_module(const hr_mlx_qconfig *q, const char *path, int *bits, int *group) {
    *bits = q->bits;
    *group = q->group_size;
    const json_t *o = json_object_get(q->q, path);
    if (!o || json_is_true(o)) return NULL;
    if (json_is_false(o)) {
        *bits = 0;
        return NULL;
    }
    char what[256];
    snprintf(what, sizeof what, "quantization \"%s\"", path);
    if (!json_is_object(o)) return hr_errf("config.json %s: must be an object or false", what);
    return read_params(o, what, q, bits, group);
}

/* "<m>.weight" -> "<m>" + suffix. */
static void companion_name(const char *name, const char *suffix, char *out, size_t len) {
    size_t n = strlen(name);
    if (n > 7 && strcmp(name + n - 7, ".weight") == 0) n -= 7;
    snprintf(out, len, "%.*s%s", (int)n, name, suffix);
}

int hr_mlx_has_scales(const hr_weights *st, const char *name) {
    char s[512];
    companion_name(name, ".scales", s, sizeof s);
    return hr_weights_get(st, s) != NULL;
}

static hr_err *check_companion(const hr_weights *st, const char *name, const char *suffix,
                               int64_t rows, int64_t groups, const hr_tensor **out) {
    char cn[512], got[64];
    companion_name(name, suffix, cn, sizeof cn);
    const hr_tensor *t = hr_weights_get(st, cn);
    if (!t) return hr_errf("quantized weight \"%s\": missing \"%s\"", name, cn);
    if (t->dtype != HR_F32 && t->dtype != HR_F16 && t->dtype != HR_BF16)
        return hr_errf("\"%s\": dtype %s, expected F32, F16 or BF16", cn, hr_dtype_name(t->dtype));
    if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != groups)
        return hr_errf("\"%s\" has shape %s, expected [%lld, %lld] (one per group)", cn,
                       hr_tensor_shape_str(t, got, sizeof got), (long long)rows, (long long)groups);
    *out = t;
    return NULL;
}

hr_err *hr_mlx_weight(const hr_mlx_qconfig *q, const hr_weights *st, const char *name, int64_t rows,
                      int64_t cols, hr_mlx_parts *out, int *quantized) {
    *quantized = 0;
    const hr_tensor *t = hr_weights_get(st, name);
    if (!t) return hr_errf("missing tensor \"%s\"", name);
    int has_scales = hr_mlx_has_scales(st, name);
    if (!q->q) {
        if (has_scales || t->dtype == HR_U32)
            return hr_errf("tensor \"%s\" is quantized but config.json has no quantization block",
                           name);
        return NULL;
    }
    char path[512];
    companion_name(name, "", path, sizeof path);
    int bits, group;
    HR_TRY(hr_mlx_qconfig_module(q, path, &bits, &group));
    int listed = json_object_get(q->q, path) != NULL;
    if (bits == 0 || (!listed && !has_scales)) {
        if (t->dtype == HR_U32)
            return hr_errf("tensor \"%s\" is packed U32 but config.json does not quantize \"%s\"",
                           name, path);
        return NULL;
    }
    char got[64];
    if (t->dtype != HR_U32)
        return hr_errf("quantized weight \"%s\": dtype %s, expected U32", name,
                       hr_dtype_name(t->dtype));
    if (cols % group)
        return hr_errf("quantized weight \"%s\": %lld columns are not a multiple of group_size %d",
                       name, (long long)cols, group);
    if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] * 32 != cols * bits)
        return hr_errf(
            "quantized weight \"%s\" has shape %s, expected [%lld, %lld] (%lld columns at %d bits)",
            name, hr_tensor_shape_str(t, got, sizeof got), (long long)rows,
            (long long)(cols * bits / 32), (long long)cols, bits);
    HR_TRY(check_companion(st, name, ".scales", rows, cols / group, &out->scales));
    HR_TRY(check_companion(st, name, ".biases", rows, cols / group, &out->biases));
    out->w = (hr_tensor){.data = t->data,
                         .dtype = hr_mlx_dtype(bits),
                         .ndim = 2,
                         .shape = {rows, cols},
                         .group_size = group};
    *quantized = 1;
    return NULL;
}
