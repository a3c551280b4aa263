/* The MLX checkpoint writer of hearth convert; see mlx_write.h. */
#include "model/mlx_write.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/json.h"
#include "tensor/mlx_quant.h"

typedef struct {
    const hr_safetensors *st;
    const hr_qplan *plan;
    const hr_st_spec *specs;
    int *entry;   /* (n specs) plan entry of each spec */
    int *part;    /* (n specs) 0 weight, 1 scales, 2 biases */
    int cached;   /* plan entry whose quantized parts are in buf, or -1 */
    uint8_t *buf; /* packed weight, then scales, then biases */
    size_t at[3]; /* byte offsets of the three parts in buf */
    int progress, done, total;
} write_ctx;

static void bar(write_ctx *c) {
    if (!c->progress) return;
    int w = 40, f = c->total ? c->done * w / c->total : w;
    fprintf(stderr, "\r[%.*s%*s] %d/%d tensors", f, "########################################",
            w - f, "", c->done, c->total);
    if (c->done == c->total) fputc('\n', stderr);
}

static void put_companion(uint8_t *p, int64_t i, float v, hr_dtype t) {
    if (t == HR_F32)
        memcpy(p + 4 * i, &v, 4);
    else {
        uint16_t h = t == HR_BF16 ? hr_f32_to_bf16(v) : hr_f32_to_f16(v);
        memcpy(p + 2 * i, &h, 2);
    }
}

/* Quantizes plan entry i into c->buf, row by row. */
static hr_err *quantize_entry(write_ctx *c, int i) {
    const hr_qplan_entry *e = &c->plan->e[i];
    const hr_tensor *t = hr_st_get(c->st, e->name);
    int64_t G = e->cols / e->group;
    size_t cb = hr_dtype_bytes(e->dtype, 1);
    c->at[0] = 0;
    c->at[1] = (size_t)(e->rows * e->cols * e->bits / 8);
    c->at[2] = c->at[1] + (size_t)(e->rows * G) * cb;
    free(c->buf);
    c->buf = malloc(c->at[2] + (size_t)(e->rows * G) * cb);
    float *x = malloc(sizeof(float) * (size_t)(e->cols + 2 * G));
    if (!c->buf || !x) {
        free(x);
        return hr_err_oom();
    }
    float *s = x + e->cols, *b = s + G;
    for (int64_t r = 0; r < e->rows; r++) {
        for (int64_t k = 0; k < e->cols; k++)
            x[k] = hr_mlx_companion(t, r * e->cols + k);
        hr_mlx_quantize(x, e->cols, e->bits, e->group, c->buf + r * (e->cols * e->bits / 8), s, b);
        for (int64_t g = 0; g < G; g++) {
            put_companion(c->buf + c->at[1], r * G + g, s[g], e->dtype);
            put_companion(c->buf + c->at[2], r * G + g, b[g], e->dtype);
        }
    }
    free(x);
    c->cached = i;
    return NULL;
}

static size_t spec_bytes(const hr_st_spec *s) {
    int64_t n = 1;
    for (int d = 0; d < s->ndim; d++)
        n *= s->shape[d];
    return hr_dtype_bytes(s->dtype, n);
}

/* A quantized entry's three specs are consecutive: weight, scales, biases. */
static hr_err *fill(void *ctx, int index, size_t off, void *out, size_t len) {
    write_ctx *c = ctx;
    int i = c->entry[index], part = c->part[index];
    const hr_qplan_entry *e = &c->plan->e[i];
    if (!e->bits) {
        memcpy(out, (const char *)hr_st_get(c->st, e->name)->data + off, len);
    } else {
        if (c->cached != i) HR_TRY(quantize_entry(c, i));
        memcpy(out, c->buf + c->at[part] + off, len);
    }
    if (off + len == spec_bytes(&c->specs[index]) && (!e->bits || part == 2)) {
        c->done++;
        bar(c);
    }
    return NULL;
}

/* "<m>.weight" -> "<m><suffix>" in a new string. */
static char *companion(const char *name, const char *suffix) {
    size_t n = strlen(name) - strlen(".weight");
    char *s = malloc(n + strlen(suffix) + 1);
    if (s) sprintf(s, "%.*s%s", (int)n, name, suffix);
    return s;
}

/* The specs: every tensor in file order, each quantized one as three. */
static hr_err *build_specs(write_ctx *c, hr_st_spec *specs, char **names, int *n_out) {
    int n = 0;
    for (int i = 0; i < c->plan->n; i++) {
        const hr_qplan_entry *e = &c->plan->e[i];
        const hr_tensor *t = hr_st_get(c->st, e->name);
        if (!e->bits) {
            specs[n] = (hr_st_spec){e->name, t->dtype, t->ndim, {0}};
            memcpy(specs[n].shape, t->shape, sizeof t->shape);
            c->entry[n] = i;
            c->part[n++] = 0;
            continue;
        }
        int64_t G = e->cols / e->group;
        specs[n] = (hr_st_spec){e->name, HR_U32, 2, {e->rows, e->cols * e->bits / 32}};
        names[2 * i] = companion(e->name, ".scales");
        names[2 * i + 1] = companion(e->name, ".biases");
        if (!names[2 * i] || !names[2 * i + 1]) return hr_err_oom();
        specs[n + 1] = (hr_st_spec){names[2 * i], e->dtype, 2, {e->rows, G}};
        specs[n + 2] = (hr_st_spec){names[2 * i + 1], e->dtype, 2, {e->rows, G}};
        for (int k = 0; k < 3; k++) {
            c->entry[n + k] = i;
            c->part[n + k] = k;
        }
        n += 3;
    }
    *n_out = n;
    return NULL;
}

static hr_err *write_tensors(const hr_safetensors *st, const hr_qplan *plan, int progress,
                             const char *path, size_t *bytes) {
    int cap = 3 * plan->n, n = 0;
    write_ctx c = {.st = st, .plan = plan, .cached = -1, .progress = progress};
    hr_st_spec *specs = calloc((size_t)cap, sizeof *specs);
    char **names = calloc((size_t)(2 * plan->n), sizeof *names);
    c.entry = calloc((size_t)cap, sizeof *c.entry);
    c.part = calloc((size_t)cap, sizeof *c.part);
    hr_err *err = specs && names && c.entry && c.part ? NULL : hr_err_oom();
    if (!err) err = build_specs(&c, specs, names, &n);
    c.specs = specs;
    c.total = plan->n;
    *bytes = 0;
    for (int i = 0; i < n && !err; i++)
        *bytes += spec_bytes(&specs[i]);
    if (!err) err = hr_st_write(path, specs, n, fill, &c);
    for (int i = 0; names && i < 2 * plan->n; i++)
        free(names[i]);
    free(names);
    free(specs);
    free(c.entry);
    free(c.part);
    free(c.buf);
    return err;
}

static json_t *module_params(const hr_qplan_entry *e) {
    return json_pack("{s:i,s:i,s:s}", "group_size", e->group, "bits", e->bits, "mode", "affine");
}

/* The config with its quantization block: defaults, then an override for every matrix that
 * differs from them (false for one kept as is). */
static hr_err *write_config(const json_t *config, const hr_qplan *plan, const hr_mlx_write_opts *o,
                            const char *path) {
    json_t *c = hr_json_deep_copy(config);
    json_t *q =
        json_pack("{s:i,s:i,s:s}", "group_size", o->group, "bits", o->bits, "mode", "affine");
    if (!c || !q) return json_decref(c), json_decref(q), hr_err_oom();
    for (int i = 0; i < plan->n; i++) {
        const hr_qplan_entry *e = &plan->e[i];
        if (!e->rows || (e->bits == o->bits && e->group == o->group)) continue;
        char *m = companion(e->name, "");
        if (m) json_object_set_new(q, m, e->bits ? module_params(e) : json_false());
        free(m);
    }
    json_object_set(c, "quantization", q);
    json_object_set_new(c, "quantization_config", q);
    char *text = hr_json_dumps(c, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(c);
    if (!text) return hr_err_oom();
    hr_err *err = hr_write_atomic(path, text, strlen(text));
    free(text);
    return err;
}

/* The source's other files (tokenizer, generation config, templates): not its weights or
 * its config. */
static int copied(const char *name) {
    size_t n = strlen(name);
    if (name[0] == '.' || strcmp(name, "config.json") == 0) return 0;
    if (n > 12 && strcmp(name + n - 12, ".safetensors") == 0) return 0;
    return strcmp(name, "model.safetensors.index.json") != 0;
}

static hr_err *copy_files(const char *src, const char *dst) {
    DIR *d = opendir(src);
    if (!d) return hr_errf("%s: %s", src, strerror(errno));
    hr_err *err = NULL;
    for (struct dirent *de; !err && (de = readdir(d));) {
        char *from = hr_path_join(src, de->d_name), *to = hr_path_join(dst, de->d_name);
        struct stat sb;
        char *data = NULL;
        size_t len;
        if (!from || !to)
            err = hr_err_oom();
        else if (copied(de->d_name) && stat(from, &sb) == 0 && S_ISREG(sb.st_mode)) {
            err = hr_read_file(from, &data, &len);
            if (!err) err = hr_write_atomic(to, data, len);
        }
        free(data);
        free(from);
        free(to);
    }
    closedir(d);
    return err;
}

static void remove_dir(const char *path) {
    DIR *d = opendir(path);
    for (struct dirent *de; d && (de = readdir(d));) {
        char *p = de->d_name[0] == '.' && (!de->d_name[1] || de->d_name[1] == '.')
                      ? NULL
                      : hr_path_join(path, de->d_name);
        if (p) unlink(p);
        free(p);
    }
    if (d) closedir(d);
    rmdir(path);
}

hr_err *hr_mlx_write(const char *src_dir, const hr_safetensors *st, const json_t *config,
                     const hr_qplan *plan, const hr_mlx_write_opts *o, const char *out_dir,
                     size_t *bytes_out) {
    struct stat sb;
    if (stat(out_dir, &sb) == 0)
        return hr_errf("--out %s already exists (convert never overwrites)", out_dir);
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", out_dir, (int)getpid());
    if (mkdir(tmp, 0755) != 0) return hr_errf("%s: %s", tmp, strerror(errno));
    char *w = hr_path_join(tmp, "model.safetensors"), *cfg = hr_path_join(tmp, "config.json");
    hr_err *err = w && cfg ? NULL : hr_err_oom();
    if (!err) err = copy_files(src_dir, tmp);
    if (!err) err = write_config(config, plan, o, cfg);
    if (!err) err = write_tensors(st, plan, o->progress, w, bytes_out);
    if (!err && rename(tmp, out_dir) != 0)
        err = hr_errf("%s: rename: %s", out_dir, strerror(errno));
    if (err) remove_dir(tmp);
    free(w);
    free(cfg);
    return err;
}
