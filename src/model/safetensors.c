/* safetensors reader: mmaps each file, parses and validates the JSON header (dtype known,
 * shape non-negative with an element count that fits, data_offsets inside the file and
 * matching the shape's size, and — as Hugging Face's loader requires — the tensors' byte
 * ranges tiling the data exactly: no gap, no overlap, no trailing bytes), and indexes tensors
 * by name. Sharded checkpoints are read through their index.json. */
#include "model/safetensors.h"

#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/json.h"

typedef struct {
    char *name;
    hr_tensor t;
} st_entry;

struct hr_safetensors {
    hr_mmap *maps;
    int n_maps;
    st_entry *entries; /* sorted by name */
    int n, cap;
    void **owned; /* aligned copies of misaligned tensors */
    int n_owned;
    size_t data_bytes;
};

static const struct {
    const char *name;
    hr_dtype dtype;
} dtype_names[] = {
    {"F32", HR_F32}, {"F16", HR_F16}, {"BF16", HR_BF16}, {"I8", HR_I8},
    {"U8", HR_U8},   {"I32", HR_I32}, {"U32", HR_U32},   {"I64", HR_I64},
};

const char *hr_st_dtype_name(hr_dtype t) {
    for (size_t i = 0; i < sizeof dtype_names / sizeof *dtype_names; i++)
        if (dtype_names[i].dtype == t) return dtype_names[i].name;
    return NULL;
}

static int parse_dtype(const char *s, hr_dtype *out) {
    for (size_t i = 0; i < sizeof dtype_names / sizeof *dtype_names; i++)
        if (strcmp(dtype_names[i].name, s) == 0) {
            *out = dtype_names[i].dtype;
            return 0;
        }
    return -1;
}

static hr_err *add_entry(hr_safetensors *st, const char *name, const hr_tensor *t) {
    if (st->n == st->cap) {
        int cap = st->cap ? st->cap * 2 : 64;
        st_entry *e = realloc(st->entries, sizeof *e * (size_t)cap);
        if (!e) return hr_err_oom();
        st->entries = e;
        st->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) return hr_err_oom();
    st->entries[st->n++] = (st_entry){copy, *t};
    return NULL;
}

enum { MAX_ELEMENTS_LOG2 = 48 }; /* 2^48 elements: more than any file, and no overflow after */

static hr_err *parse_shape(const json_t *shape, const char *name, hr_tensor *t) {
    if (!json_is_array(shape) || json_array_size(shape) > HR_MAX_DIMS)
        return hr_errf("tensor \"%s\": shape must be an array of at most %d integers", name,
                       HR_MAX_DIMS);
    t->ndim = (int)json_array_size(shape);
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) {
        const json_t *v = json_array_get(shape, (size_t)d);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (1ll << 40))
            return hr_errf("tensor \"%s\": bad shape dimension %d", name, d);
        t->shape[d] = json_integer_value(v);
        if (n > 0 && t->shape[d] > (1ll << MAX_ELEMENTS_LOG2) / n)
            return hr_errf("tensor \"%s\": shape has more than 2^%d elements", name,
                           MAX_ELEMENTS_LOG2);
        n *= t->shape[d];
    }
    return NULL;
}

/* Validates one header entry and fills t (data pointing into base) and its byte range. */
static hr_err *parse_entry(hr_safetensors *st, const char *name, const json_t *info,
                           const uint8_t *base, size_t data_len, hr_tensor *t, int64_t span[2]) {
    memset(t, 0, sizeof *t);
    const char *dt = json_string_value(json_object_get(info, "dtype"));
    if (!dt) return hr_errf("tensor \"%s\": missing dtype", name);
    if (parse_dtype(dt, &t->dtype) != 0)
        return hr_errf("tensor \"%s\": unsupported dtype %s", name, dt);
    HR_TRY(parse_shape(json_object_get(info, "shape"), name, t));
    const json_t *off = json_object_get(info, "data_offsets");
    const json_t *b = json_array_get(off, 0), *e = json_array_get(off, 1);
    if (!json_is_array(off) || json_array_size(off) != 2 || !json_is_integer(b) ||
        !json_is_integer(e))
        return hr_errf("tensor \"%s\": data_offsets must be [begin, end]", name);
    int64_t begin = json_integer_value(b), end = json_integer_value(e);
    span[0] = begin, span[1] = end;
    if (begin < 0 || end < begin || (uint64_t)end > data_len)
        return hr_errf("tensor \"%s\": data_offsets [%lld, %lld] outside the data (%zu bytes); "
                       "the file is truncated or corrupt",
                       name, (long long)begin, (long long)end, data_len);
    size_t want = hr_tensor_bytes(t);
    if ((size_t)(end - begin) != want)
        return hr_errf("tensor \"%s\": %lld bytes for a %s tensor of %lld elements (want %zu)",
                       name, (long long)(end - begin), dt, (long long)hr_tensor_numel(t), want);
    t->data = (void *)(base + begin);
    size_t elem = (size_t)hr_dtype_get(t->dtype)->block_bytes;
    if (((uintptr_t)t->data % elem) != 0 && want > 0) {
        void *copy = aligned_alloc(64, (want + 63) / 64 * 64);
        void **owned = realloc(st->owned, sizeof *owned * (size_t)(st->n_owned + 1));
        if (!copy || !owned) {
            free(copy);
            if (owned) st->owned = owned;
            return hr_err_oom();
        }
        memcpy(copy, t->data, want);
        st->owned = owned;
        st->owned[st->n_owned++] = copy;
        t->data = copy;
    }
    st->data_bytes += want;
    return NULL;
}

static int cmp_span(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] < y[1] ? -1 : x[1] > y[1];
}

/* The n byte ranges must tile [0, data_len): a shifted header (one byte short or long),
 * overlapping tensors and bytes no tensor owns are all corruption. Sorts spans. */
static hr_err *check_tiling(int64_t (*spans)[2], int n, size_t data_len) {
    if (n > 0) qsort(spans, (size_t)n, sizeof *spans, cmp_span);
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        if (spans[i][0] != at)
            return hr_errf("tensor data at byte %lld %s (a tensor starts at %lld): the header is "
                           "corrupt",
                           (long long)at, spans[i][0] > at ? "is owned by no tensor" : "overlaps",
                           (long long)spans[i][0]);
        at = spans[i][1];
    }
    if ((uint64_t)at != data_len)
        return hr_errf("%zu bytes of data but the tensors end at byte %lld: the header length or "
                       "offsets are wrong, or the file has trailing bytes",
                       data_len, (long long)at);
    return NULL;
}

static hr_err *parse_header(hr_safetensors *st, const hr_mmap *m, const char *path) {
    if (m->size < 8)
        return hr_errf("%s: too short for a safetensors file (%zu bytes)", path, m->size);
    uint64_t hlen;
    memcpy(&hlen, m->data, 8);
    if (hlen > m->size - 8 || hlen > (100u << 20))
        return hr_errf("%s: header length %llu beyond the file (%zu bytes); truncated or not "
                       "safetensors",
                       path, (unsigned long long)hlen, m->size);
    json_t *h;
    HR_TRY(
        hr_err_wrap(hr_json_load_buf("header", (const char *)m->data + 8, hlen, &h), "%s: ", path));
    hr_err *err = NULL;
    if (!json_is_object(h)) err = hr_errf("%s: header is not a JSON object", path);
    const uint8_t *base = (const uint8_t *)m->data + 8 + hlen;
    size_t data_len = m->size - 8 - hlen;
    int64_t(*spans)[2] = err ? NULL : malloc(sizeof *spans * (json_object_size(h) + 1));
    if (!err && !spans) err = hr_err_oom();
    int n = 0;
    const char *name;
    json_t *info;
    json_object_foreach(h, name, info) {
        if (err) break;
        if (strcmp(name, "__metadata__") == 0) continue;
        if (!json_is_object(info)) {
            err = hr_errf("%s: tensor \"%s\": entry is not an object", path, name);
            break;
        }
        hr_tensor t;
        err = parse_entry(st, name, info, base, data_len, &t, spans[n++]);
        if (!err) err = add_entry(st, name, &t);
        err = hr_err_wrap(err, "%s: ", path);
    }
    if (!err) err = hr_err_wrap(check_tiling(spans, n, data_len), "%s: ", path);
    free(spans);
    json_decref(h);
    return err;
}

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const st_entry *)a)->name, ((const st_entry *)b)->name);
}

static hr_err *open_file(hr_safetensors *st, const char *path) {
    hr_mmap *maps = realloc(st->maps, sizeof *maps * (size_t)(st->n_maps + 1));
    if (!maps) return hr_err_oom();
    st->maps = maps;
    HR_TRY(hr_mmap_open(path, &st->maps[st->n_maps]));
    st->n_maps++;
    return parse_header(st, &st->maps[st->n_maps - 1], path);
}

static int has_suffix(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    return strndup(path, (size_t)(slash - path));
}

/* Opens every shard named in an index.json's weight_map, each once. */
static hr_err *open_index(hr_safetensors *st, const char *index_path) {
    json_t *idx;
    HR_TRY(hr_json_load_file(index_path, &idx));
    json_t *wm = json_object_get(idx, "weight_map");
    hr_err *err = NULL;
    if (!json_is_object(wm)) err = hr_errf("%s: missing \"weight_map\" object", index_path);
    char *dir = dir_of(index_path);
    json_t *seen = json_object();
    if (!dir || !seen) err = err ? err : hr_err_oom();
    const char *tname;
    json_t *file;
    json_object_foreach(wm, tname, file) {
        if (err) break;
        const char *f = json_string_value(file);
        if (!f || strchr(f, '/')) {
            err = hr_errf("%s: bad shard name for \"%s\"", index_path, tname);
            break;
        }
        if (json_object_get(seen, f)) continue;
        json_object_set_new(seen, f, json_true());
        char *p = hr_path_join(dir, f);
        err = p ? open_file(st, p) : hr_err_oom();
        free(p);
    }
    json_decref(seen);
    free(dir);
    json_decref(idx);
    return err;
}

static hr_err *open_any(hr_safetensors *st, const char *path) {
    if (has_suffix(path, ".json")) return open_index(st, path);
    if (has_suffix(path, ".safetensors")) return open_file(st, path);
    char *single = hr_path_join(path, "model.safetensors");
    char *index = hr_path_join(path, "model.safetensors.index.json");
    hr_err *err;
    if (!single || !index)
        err = hr_err_oom();
    else if (hr_file_exists(single))
        err = open_file(st, single);
    else if (hr_file_exists(index))
        err = open_index(st, index);
    else
        err = hr_errf("%s: no model.safetensors or model.safetensors.index.json", path);
    free(single);
    free(index);
    return err;
}

hr_err *hr_st_open(const char *path, hr_safetensors **out) {
    *out = NULL;
    hr_safetensors *st = calloc(1, sizeof *st);
    if (!st) return hr_err_oom();
    hr_err *err = open_any(st, path);
    if (!err && st->n > 0) {
        qsort(st->entries, (size_t)st->n, sizeof *st->entries, cmp_entry);
        for (int i = 1; i < st->n && !err; i++)
            if (strcmp(st->entries[i - 1].name, st->entries[i].name) == 0)
                err = hr_errf("%s: tensor \"%s\" appears twice", path, st->entries[i].name);
    }
    if (err) {
        hr_st_close(st);
        return err;
    }
    *out = st;
    return NULL;
}

void hr_st_close(hr_safetensors *st) {
    if (!st) return;
    for (int i = 0; i < st->n_maps; i++)
        hr_mmap_close(&st->maps[i]);
    for (int i = 0; i < st->n; i++)
        free(st->entries[i].name);
    for (int i = 0; i < st->n_owned; i++)
        free(st->owned[i]);
    free(st->owned);
    free(st->maps);
    free(st->entries);
    free(st);
}

const hr_tensor *hr_st_get(const hr_safetensors *st, const char *name) {
    if (st->n == 0) return NULL; /* bsearch of a NULL array is undefined */
    st_entry key = {(char *)name, {0}};
    st_entry *e = bsearch(&key, st->entries, (size_t)st->n, sizeof *st->entries, cmp_entry);
    return e ? &e->t : NULL;
}

int hr_st_count(const hr_safetensors *st) { return st->n; }
const char *hr_st_name(const hr_safetensors *st, int i) { return st->entries[i].name; }
size_t hr_st_data_bytes(const hr_safetensors *st) { return st->data_bytes; }

hr_dtype hr_st_main_dtype(const hr_safetensors *st) {
    size_t bytes[HR_DTYPE_COUNT] = {0};
    for (int i = 0; i < hr_st_count(st); i++) {
        const hr_tensor *t = hr_st_get(st, hr_st_name(st, i));
        if (t) bytes[t->dtype] += hr_tensor_bytes(t);
    }
    int best = HR_F32;
    for (int d = 0; d < HR_DTYPE_COUNT; d++)
        if (bytes[d] > bytes[best]) best = d;
    return (hr_dtype)best;
}
