/* GGUF reader: a bounds-checked cursor over the header, the metadata and the tensor infos,
 * then the tensors placed in the data section (aligned, inside the file, not overlapping).
 * Counts are bounded by what the remaining bytes could hold before anything is allocated. */
#include "model/gguf.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"

enum { MAX_KEY = 65535, MAX_NAME = 256, DEFAULT_ALIGN = 32 };

typedef struct {
    char *name;
    uint32_t ggml_type;
    hr_tensor t;
    uint64_t offset, bytes;
} gguf_tensor;

struct hr_gguf {
    hr_mmap map; /* empty for hr_gguf_parse */
    uint32_t version;
    hr_gguf_kv *kvs;
    char **strs;          /* NUL-terminated copies of string values (by kv index, NULL otherwise) */
    int n_kv, cap_kv;     /* entries past n_kv (a failed parse) are zero or partly read */
    gguf_tensor *tensors; /* sorted by name */
    int n_tensors, cap_tensors;
    size_t data_bytes;
};

typedef struct {
    const uint8_t *p;
    size_t size, pos;
    const char *what;
} cursor;

static const struct {
    const char *name;
    int hr; /* hr_dtype, -1: not read by hearth */
} ggml_types[] = {
    [0] = {"F32", HR_F32},        [1] = {"F16", HR_F16},    [2] = {"Q4_0", HR_Q4_0},
    [3] = {"Q4_1", HR_Q4_1},      [6] = {"Q5_0", HR_Q5_0},  [7] = {"Q5_1", HR_Q5_1},
    [8] = {"Q8_0", HR_Q8_0},      [9] = {"Q8_1", -1},       [10] = {"Q2_K", HR_Q2_K},
    [11] = {"Q3_K", HR_Q3_K},     [12] = {"Q4_K", HR_Q4_K}, [13] = {"Q5_K", HR_Q5_K},
    [14] = {"Q6_K", HR_Q6_K},     [15] = {"Q8_K", -1},      [16] = {"IQ2_XXS", -1},
    [17] = {"IQ2_XS", -1},        [18] = {"IQ3_XXS", -1},   [19] = {"IQ1_S", -1},
    [20] = {"IQ4_NL", HR_IQ4_NL}, [21] = {"IQ3_S", -1},     [22] = {"IQ2_S", -1},
    [23] = {"IQ4_XS", HR_IQ4_XS}, [24] = {"I8", HR_I8},     [25] = {"I16", -1},
    [26] = {"I32", HR_I32},       [27] = {"I64", HR_I64},   [28] = {"F64", -1},
    [29] = {"IQ1_M", -1},         [30] = {"BF16", HR_BF16}, [34] = {"TQ1_0", -1},
    [35] = {"TQ2_0", -1},         [39] = {"MXFP4", -1},     [40] = {"NVFP4", -1},
    [41] = {"Q1_0", -1},          [42] = {"Q2_0", -1},
};
enum { N_GGML_TYPES = sizeof ggml_types / sizeof *ggml_types };

const char *hr_gguf_ggml_type_name(uint32_t t) {
    return t < N_GGML_TYPES ? ggml_types[t].name : NULL;
}

int hr_gguf_ggml_type(hr_dtype d) {
    for (int i = 0; i < N_GGML_TYPES; i++)
        if (ggml_types[i].name && ggml_types[i].hr == (int)d) return i;
    return -1;
}

static const size_t scalar_size[HR_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
static const char *const type_names[HR_GGUF_TYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};

/* ---- the cursor ---- */

static hr_err *need(cursor *c, size_t n, const char *field) {
    if (n > c->size - c->pos)
        return hr_errf("%s: truncated GGUF: %s needs %zu bytes at offset %zu, the file has %zu",
                       c->what, field, n, c->pos, c->size);
    return NULL;
}

static hr_err *rd(cursor *c, void *out, size_t n, const char *field) {
    HR_TRY(need(c, n, field));
    memcpy(out, c->p + c->pos, n);
    c->pos += n;
    return NULL;
}

static hr_err *rd_u32(cursor *c, uint32_t *v, const char *field) { return rd(c, v, 4, field); }
static hr_err *rd_u64(cursor *c, uint64_t *v, const char *field) { return rd(c, v, 8, field); }

static int valid_utf8(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint8_t b = s[i];
        size_t k = b < 0x80             ? 1
                   : (b & 0xE0) == 0xC0 ? 2
                   : (b & 0xF0) == 0xE0 ? 3
                   : (b & 0xF8) == 0xF0 ? 4
                                        : 0;
        if (!k || k > n - i || (k == 2 && b < 0xC2)) return 0;
        uint32_t cp = k == 1 ? b : (uint32_t)(b & (0x7F >> k));
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (s[i + j] & 0x3F);
        }
        if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += k;
    }
    return 1;
}

/* A length-prefixed string; the bytes stay in the file. */
static hr_err *rd_str(cursor *c, hr_gguf_str *s, const char *field) {
    uint64_t n;
    HR_TRY(rd_u64(c, &n, field));
    if (n > c->size - c->pos)
        return hr_errf("%s: truncated GGUF: %s of %llu bytes at offset %zu, past the end (%zu)",
                       c->what, field, (unsigned long long)n, c->pos, c->size);
    s->p = (const char *)c->p + c->pos;
    s->len = (size_t)n;
    c->pos += (size_t)n;
    return NULL;
}

/* A key or tensor name: non-empty, valid UTF-8, at most max bytes; returns a copy. */
static hr_err *rd_name(cursor *c, size_t max, const char *field, char **out) {
    hr_gguf_str s;
    size_t at = c->pos;
    HR_TRY(rd_str(c, &s, field));
    if (s.len == 0) return hr_errf("%s: GGUF %s at offset %zu is empty", c->what, field, at);
    if (s.len > max)
        return hr_errf("%s: GGUF %s at offset %zu is %zu bytes long (at most %zu)", c->what, field,
                       at, s.len, max);
    if (!valid_utf8((const uint8_t *)s.p, s.len) || memchr(s.p, 0, s.len))
        return hr_errf("%s: GGUF %s at offset %zu is not valid UTF-8", c->what, field, at);
    *out = strndup(s.p, s.len);
    return *out ? NULL : hr_err_oom();
}

/* ---- metadata ---- */

static void widen(hr_gguf_kv *kv, const uint8_t *p) {
    int8_t i8;
    int16_t i16;
    int32_t i32;
    uint16_t u16;
    uint32_t u32;
    float f32;
    switch (kv->type) {
    case HR_GGUF_U8:
    case HR_GGUF_BOOL:
        kv->u = p[0];
        kv->i = p[0];
        break;
    case HR_GGUF_I8:
        memcpy(&i8, p, 1);
        kv->i = i8;
        kv->u = (uint64_t)i8;
        break;
    case HR_GGUF_U16:
        memcpy(&u16, p, 2);
        kv->u = u16;
        kv->i = u16;
        break;
    case HR_GGUF_I16:
        memcpy(&i16, p, 2);
        kv->i = i16;
        kv->u = (uint64_t)i16;
        break;
    case HR_GGUF_U32:
        memcpy(&u32, p, 4);
        kv->u = u32;
        kv->i = u32;
        break;
    case HR_GGUF_I32:
        memcpy(&i32, p, 4);
        kv->i = i32;
        kv->u = (uint64_t)i32;
        break;
    case HR_GGUF_U64:
        memcpy(&kv->u, p, 8);
        kv->i = (int64_t)kv->u;
        break;
    case HR_GGUF_I64:
        memcpy(&kv->i, p, 8);
        kv->u = (uint64_t)kv->i;
        break;
    case HR_GGUF_F32:
        memcpy(&f32, p, 4);
        kv->f = f32;
        break;
    case HR_GGUF_F64: memcpy(&kv->f, p, 8); break;
    default: break;
    }
    if (kv->type != HR_GGUF_F32 && kv->type != HR_GGUF_F64) kv->f = (double)kv->i;
}

static hr_err *rd_array(cursor *c, hr_gguf_kv *kv) {
    uint32_t et;
    uint64_t n;
    HR_TRY(rd_u32(c, &et, "array element type"));
    HR_TRY(rd_u64(c, &n, "array length"));
    if (et == HR_GGUF_ARRAY)
        return hr_errf("%s: GGUF key \"%s\": nested arrays are not supported", c->what, kv->key);
    if (et >= HR_GGUF_TYPE_COUNT)
        return hr_errf("%s: GGUF key \"%s\": unknown array element type %u", c->what, kv->key, et);
    kv->arr_type = (hr_gguf_type)et;
    kv->arr_n = n;
    kv->arr_data = c->p + c->pos;
    size_t left = c->size - c->pos;
    if (et != HR_GGUF_STRING) {
        if (n > left / scalar_size[et])
            return hr_errf(
                "%s: truncated GGUF: key \"%s\" has %llu elements of %s, more than the %zu bytes "
                "left hold",
                c->what, kv->key, (unsigned long long)n, type_names[et], left);
        c->pos += (size_t)n * scalar_size[et];
        return NULL;
    }
    if (n > left / 8)
        return hr_errf(
            "%s: truncated GGUF: key \"%s\" has %llu strings, more than the %zu bytes left hold",
            c->what, kv->key, (unsigned long long)n, left);
    uint64_t *off = malloc(sizeof *off * (size_t)(n ? n : 1));
    if (!off) return hr_err_oom();
    kv->str_off = off;
    for (uint64_t i = 0; i < n; i++) {
        off[i] = (uint64_t)(c->p + c->pos - kv->arr_data);
        hr_gguf_str s;
        HR_TRY(hr_err_wrap(rd_str(c, &s, "array string"), "key \"%s\" element %llu: ", kv->key,
                           (unsigned long long)i));
    }
    return NULL;
}

static hr_err *rd_kv(cursor *c, hr_gguf *g, int idx) {
    hr_gguf_kv *kv = &g->kvs[idx];
    char *key;
    HR_TRY(rd_name(c, MAX_KEY, "metadata key", &key));
    kv->key = key;
    for (int i = 0; i < idx; i++)
        if (strcmp(g->kvs[i].key, key) == 0)
            return hr_errf("%s: GGUF key \"%s\" appears twice", c->what, key);
    uint32_t type;
    HR_TRY(rd_u32(c, &type, "value type"));
    if (type >= HR_GGUF_TYPE_COUNT)
        return hr_errf("%s: GGUF key \"%s\" has unknown value type %u", c->what, key, type);
    kv->type = (hr_gguf_type)type;
    if (type == HR_GGUF_ARRAY) return rd_array(c, kv);
    if (type == HR_GGUF_STRING) {
        HR_TRY(rd_str(c, &kv->s, key));
        g->strs[idx] = strndup(kv->s.p, kv->s.len);
        return g->strs[idx] ? NULL : hr_err_oom();
    }
    HR_TRY(need(c, scalar_size[type], key));
    widen(kv, c->p + c->pos);
    c->pos += scalar_size[type];
    return NULL;
}

/* ---- tensor infos ---- */

static hr_err *tensor_dtype(const cursor *c, gguf_tensor *t) {
    const char *tn = hr_gguf_ggml_type_name(t->ggml_type);
    if (!tn)
        return hr_errf("%s: tensor \"%s\" has unknown ggml type id %u", c->what, t->name,
                       t->ggml_type);
    if (ggml_types[t->ggml_type].hr < 0)
        return hr_errf(
            "%s: tensor \"%s\" has type %s, not supported (supported: F32, F16, BF16, Q8_0, Q4_0, "
            "Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS)",
            c->what, t->name, tn);
    t->t.dtype = (hr_dtype)ggml_types[t->ggml_type].hr;
    return NULL;
}

static hr_err *rd_tensor_info(cursor *c, gguf_tensor *t) {
    HR_TRY(rd_name(c, MAX_NAME, "tensor name", &t->name));
    uint32_t nd;
    HR_TRY(rd_u32(c, &nd, "tensor dimension count"));
    if (nd < 1 || nd > HR_MAX_DIMS)
        return hr_errf("%s: tensor \"%s\" has %u dimensions (1 to %d supported)", c->what, t->name,
                       nd, HR_MAX_DIMS);
    t->t.ndim = (int)nd;
    uint64_t numel = 1, ne[HR_MAX_DIMS];
    for (uint32_t d = 0; d < nd; d++) {
        HR_TRY(rd_u64(c, &ne[d], "tensor dimension"));
        if (ne[d] > (1ull << 40) || (ne[d] && numel > (1ull << 50) / ne[d]))
            return hr_errf("%s: tensor \"%s\" dimension %u (%llu) is out of range", c->what,
                           t->name, d, (unsigned long long)ne[d]);
        numel *= ne[d];
        t->t.shape[nd - 1 - d] = (int64_t)ne[d]; /* ne[0] is the contiguous dimension */
    }
    HR_TRY(rd_u32(c, &t->ggml_type, "tensor type"));
    HR_TRY(rd_u64(c, &t->offset, "tensor offset"));
    HR_TRY(tensor_dtype(c, t));
    const hr_dtype_info *di = hr_dtype_get(t->t.dtype);
    if (ne[0] % (uint64_t)di->block)
        return hr_errf(
            "%s: tensor \"%s\" has rows of %llu elements, not a multiple of %s's block of %d",
            c->what, t->name, (unsigned long long)ne[0], di->name, di->block);
    t->bytes = numel / (uint64_t)di->block * (uint64_t)di->block_bytes;
    return NULL;
}

static int cmp_offset(const void *a, const void *b) {
    uint64_t x = ((const gguf_tensor *)a)->offset, y = ((const gguf_tensor *)b)->offset;
    return x < y ? -1 : x > y;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const gguf_tensor *)a)->name, ((const gguf_tensor *)b)->name);
}

/* Places every tensor in the data section [data, size): aligned, inside, not overlapping. */
static hr_err *place_tensors(hr_gguf *g, const cursor *c, uint64_t align) {
    size_t data = c->pos;
    if (data % align) data += (size_t)(align - data % align);
    if (g->n_tensors && data > c->size)
        return hr_errf("%s: truncated GGUF: the data section starts at %zu, past the end (%zu)",
                       c->what, data, c->size);
    uint64_t avail = data <= c->size ? c->size - data : 0;
    qsort(g->tensors, (size_t)g->n_tensors, sizeof *g->tensors, cmp_offset);
    for (int i = 0; i < g->n_tensors; i++) {
        gguf_tensor *t = &g->tensors[i];
        if (t->offset % align)
            return hr_errf("%s: tensor \"%s\" at data offset %llu is not aligned to %llu bytes",
                           c->what, t->name, (unsigned long long)t->offset,
                           (unsigned long long)align);
        if (t->offset > avail || t->bytes > avail - t->offset)
            return hr_errf("%s: tensor \"%s\" (%llu bytes at data offset %llu) lies outside the "
                           "file's %llu bytes "
                           "of data; the file is truncated or corrupt",
                           c->what, t->name, (unsigned long long)t->bytes,
                           (unsigned long long)t->offset, (unsigned long long)avail);
        if (i && t->offset < g->tensors[i - 1].offset + g->tensors[i - 1].bytes)
            return hr_errf("%s: tensors \"%s\" and \"%s\" overlap", c->what, g->tensors[i - 1].name,
                           t->name);
        t->t.data = (void *)(c->p + data + t->offset);
        g->data_bytes += t->bytes;
    }
    qsort(g->tensors, (size_t)g->n_tensors, sizeof *g->tensors, cmp_name);
    for (int i = 1; i < g->n_tensors; i++)
        if (strcmp(g->tensors[i - 1].name, g->tensors[i].name) == 0)
            return hr_errf("%s: tensor \"%s\" appears twice", c->what, g->tensors[i].name);
    return NULL;
}

static hr_err *alignment(const hr_gguf *g, const char *what, uint64_t *align) {
    int64_t a;
    HR_TRY(hr_err_wrap(hr_gguf_get_int(g, "general.alignment", DEFAULT_ALIGN, &a), "%s: ", what));
    if (a <= 0 || a > (1 << 16) || (a & (a - 1)))
        return hr_errf("%s: general.alignment %lld is not a power of two up to 65536", what,
                       (long long)a);
    *align = (uint64_t)a;
    return NULL;
}

static hr_err *parse(hr_gguf *g, cursor *c) {
    char magic[4];
    HR_TRY(rd(c, magic, 4, "magic"));
    if (memcmp(magic, "GGUF", 4)) return hr_errf("%s: not a GGUF file (bad magic)", c->what);
    HR_TRY(rd_u32(c, &g->version, "version"));
    if (g->version != 2 && g->version != 3)
        return hr_errf("%s: GGUF version %u is not supported (2 and 3 are)", c->what, g->version);
    uint64_t nt, nkv;
    HR_TRY(rd_u64(c, &nt, "tensor count"));
    HR_TRY(rd_u64(c, &nkv, "metadata count"));
    size_t left = c->size - c->pos;
    /* a key/value takes at least 13 bytes, a tensor info at least 29 */
    if (nkv > left / 13 || nt > left / 29 || nkv >= INT32_MAX || nt >= INT32_MAX)
        return hr_errf("%s: GGUF header claims %llu tensors and %llu metadata entries, more than "
                       "the file's %zu "
                       "bytes could hold",
                       c->what, (unsigned long long)nt, (unsigned long long)nkv, c->size);
    g->kvs = calloc((size_t)nkv + 1, sizeof *g->kvs);
    g->strs = calloc((size_t)nkv + 1, sizeof *g->strs);
    g->tensors = calloc((size_t)nt + 1, sizeof *g->tensors);
    if (!g->kvs || !g->strs || !g->tensors) return hr_err_oom();
    g->cap_kv = (int)nkv + 1;
    g->cap_tensors = (int)nt + 1;
    for (; g->n_kv < (int)nkv; g->n_kv++)
        HR_TRY(rd_kv(c, g, g->n_kv));
    for (; g->n_tensors < (int)nt; g->n_tensors++)
        HR_TRY(rd_tensor_info(c, &g->tensors[g->n_tensors]));
    uint64_t align = DEFAULT_ALIGN;
    HR_TRY(alignment(g, c->what, &align));
    return place_tensors(g, c, align);
}

hr_err *hr_gguf_parse(const void *data, size_t size, const char *what, hr_gguf **out) {
    *out = NULL;
    hr_gguf *g = calloc(1, sizeof *g);
    if (!g) return hr_err_oom();
    cursor c = {data, size, 0, what};
    hr_err *e = parse(g, &c);
    if (e) {
        hr_gguf_close(g);
        return e;
    }
    *out = g;
    return NULL;
}

hr_err *hr_gguf_open(const char *path, hr_gguf **out) {
    *out = NULL;
    hr_mmap m;
    HR_TRY(hr_mmap_open(path, &m));
    hr_err *e = hr_gguf_parse(m.data, m.size, path, out);
    if (e)
        hr_mmap_close(&m);
    else
        (*out)->map = m;
    return e;
}

void hr_gguf_close(hr_gguf *g) {
    if (!g) return;
    for (int i = 0; i < g->cap_kv; i++) {
        free((char *)g->kvs[i].key);
        free((void *)g->kvs[i].str_off);
        free(g->strs[i]);
    }
    for (int i = 0; i < g->cap_tensors; i++)
        free(g->tensors[i].name);
    free(g->kvs);
    free(g->strs);
    free(g->tensors);
    hr_mmap_close(&g->map);
    free(g);
}

/* Only a regular file can be one: reading a FIFO's magic would block startup. */
int hr_is_gguf(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return 0;
    struct stat st;
    char m[4];
    int yes = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read(fd, m, 4) == 4 &&
              memcmp(m, "GGUF", 4) == 0;
    close(fd);
    return yes;
}

/* ---- lookups ---- */

uint32_t hr_gguf_version(const hr_gguf *g) { return g->version; }
int hr_gguf_kv_count(const hr_gguf *g) { return g->n_kv; }
const hr_gguf_kv *hr_gguf_kv_at(const hr_gguf *g, int i) { return &g->kvs[i]; }

const hr_gguf_kv *hr_gguf_find(const hr_gguf *g, const char *key) {
    for (int i = 0; i < g->n_kv; i++)
        if (strcmp(g->kvs[i].key, key) == 0) return &g->kvs[i];
    return NULL;
}

static int is_int_type(hr_gguf_type t) {
    return t <= HR_GGUF_I32 || t == HR_GGUF_BOOL || t == HR_GGUF_U64 || t == HR_GGUF_I64;
}

static hr_err *wrong_type(const hr_gguf_kv *kv, const char *want) {
    return hr_errf("GGUF key \"%s\" is a %s, expected %s", kv->key, type_names[kv->type], want);
}

hr_err *hr_gguf_get_int(const hr_gguf *g, const char *key, int64_t def, int64_t *out) {
    const hr_gguf_kv *kv = hr_gguf_find(g, key);
    *out = def;
    if (!kv) return NULL;
    if (!is_int_type(kv->type)) return wrong_type(kv, "an integer");
    if (kv->type == HR_GGUF_U64 && kv->u > INT64_MAX)
        return hr_errf("GGUF key \"%s\" is out of range", key);
    *out = kv->i;
    return NULL;
}

hr_err *hr_gguf_get_num(const hr_gguf *g, const char *key, double def, double *out) {
    const hr_gguf_kv *kv = hr_gguf_find(g, key);
    *out = def;
    if (!kv) return NULL;
    if (!is_int_type(kv->type) && kv->type != HR_GGUF_F32 && kv->type != HR_GGUF_F64)
        return wrong_type(kv, "a number");
    *out = kv->f;
    return NULL;
}

hr_err *hr_gguf_get_bool(const hr_gguf *g, const char *key, int def, int *out) {
    int64_t v;
    HR_TRY(hr_gguf_get_int(g, key, def, &v));
    *out = v != 0;
    return NULL;
}

hr_err *hr_gguf_get_str(const hr_gguf *g, const char *key, const char **out) {
    *out = NULL;
    const hr_gguf_kv *kv = hr_gguf_find(g, key);
    if (!kv) return NULL;
    if (kv->type != HR_GGUF_STRING) return wrong_type(kv, "a string");
    *out = g->strs[kv - g->kvs];
    return NULL;
}

hr_err *hr_gguf_get_arr(const hr_gguf *g, const char *key, hr_gguf_type type,
                        const hr_gguf_kv **out) {
    *out = NULL;
    const hr_gguf_kv *kv = hr_gguf_find(g, key);
    if (!kv) return NULL;
    if (kv->type != HR_GGUF_ARRAY) return wrong_type(kv, "an array");
    if (kv->arr_type != type)
        return hr_errf("GGUF key \"%s\" is an array of %s, expected %s", key,
                       type_names[kv->arr_type], type_names[type]);
    *out = kv;
    return NULL;
}

hr_gguf_str hr_gguf_arr_str(const hr_gguf_kv *kv, uint64_t i) {
    const uint8_t *p = kv->arr_data + kv->str_off[i];
    uint64_t n;
    memcpy(&n, p, 8);
    return (hr_gguf_str){(const char *)p + 8, (size_t)n};
}

static hr_gguf_kv element(const hr_gguf_kv *kv, uint64_t i) {
    hr_gguf_kv e = {.type = kv->arr_type};
    widen(&e, kv->arr_data + i * scalar_size[kv->arr_type]);
    return e;
}

int64_t hr_gguf_arr_int(const hr_gguf_kv *kv, uint64_t i) { return element(kv, i).i; }
double hr_gguf_arr_num(const hr_gguf_kv *kv, uint64_t i) { return element(kv, i).f; }

int hr_gguf_tensor_count(const hr_gguf *g) { return g->n_tensors; }
const char *hr_gguf_tensor_name(const hr_gguf *g, int i) { return g->tensors[i].name; }
const hr_tensor *hr_gguf_tensor_at(const hr_gguf *g, int i) { return &g->tensors[i].t; }
size_t hr_gguf_data_bytes(const hr_gguf *g) { return g->data_bytes; }

const hr_tensor *hr_gguf_tensor(const hr_gguf *g, const char *name) {
    gguf_tensor key = {.name = (char *)name};
    gguf_tensor *t = bsearch(&key, g->tensors, (size_t)g->n_tensors, sizeof *g->tensors, cmp_name);
    return t ? &t->t : NULL;
}
