/* The GGUF container: a file made by the writer reads back (every value type, arrays,
 * tensors with reversed dims); hand-made corrupt files (truncated at every length, bad
 * magic/version, huge counts, out-of-range/misaligned/overlapping tensors, bad keys,
 * nested arrays, unknown and unsupported types) are errors that name the problem. */
#include "harness.h"
#include "model/config.h"
#include "model/gguf.h"
#include "model/gguf_write.h"

/* ---- a raw byte builder for hand-made files ---- */
typedef struct {
    uint8_t p[1 << 17];
    size_t n;
} raw;

static void r_bytes(raw *r, const void *p, size_t n) { memcpy(r->p + r->n, p, n), r->n += n; }
static void r_u32(raw *r, uint32_t v) { r_bytes(r, &v, 4); }
static void r_u64(raw *r, uint64_t v) { r_bytes(r, &v, 8); }
static void r_str(raw *r, const char *s) { r_u64(r, strlen(s)), r_bytes(r, s, strlen(s)); }
static void r_header(raw *r, uint32_t version, uint64_t nt, uint64_t nkv) {
    r->n = 0;
    r_bytes(r, "GGUF", 4), r_u32(r, version), r_u64(r, nt), r_u64(r, nkv);
}
static void r_tensor(raw *r, const char *name, uint64_t ne0, uint64_t ne1, uint32_t type,
                     uint64_t off) {
    r_str(r, name), r_u32(r, 2), r_u64(r, ne0), r_u64(r, ne1), r_u32(r, type), r_u64(r, off);
}
static void r_pad(raw *r, size_t total) {
    while (r->n % 32)
        r->p[r->n++] = 0;
    memset(r->p + r->n, 0, total), r->n += total;
}

/* Parsing r fails with a message containing want. */
static void bad(const raw *r, const char *want) {
    hr_gguf *g = NULL;
    hr_err *e = hr_gguf_parse(r->p, r->n, "t.gguf", &g);
    const char *msg = e ? hr_err_msg(e) : "";
    int ok = e && strstr(msg, want);
    if (!ok) printf("  got \"%s\", want \"%s\"\n", msg, want);
    hr_err_free(e);
    hr_gguf_close(g);
    HR_CHECK(ok, "corrupt file not refused as wanted");
}

static hr_err *sample(uint8_t **buf, size_t *len) {
    hr_gguf_writer *w;
    HR_TRY(hr_gguf_writer_new(&w));
    int8_t i8 = -5;
    uint16_t u16 = 65000;
    int64_t i64 = -(1ll << 40);
    double f64 = 2.5;
    uint8_t yes = 1;
    const char *strs[] = {"a", "", "\xE2\x96\x81x"};
    int32_t ints[] = {3, -4, 5};
    float f[6] = {1, 2, 3, 4, 5, 6};
    hr_err *e = hr_gguf_put_str(w, "general.architecture", "llama");
    if (!e) e = hr_gguf_put(w, "t.i8", HR_GGUF_I8, &i8);
    if (!e) e = hr_gguf_put(w, "t.u16", HR_GGUF_U16, &u16);
    if (!e) e = hr_gguf_put(w, "t.i64", HR_GGUF_I64, &i64);
    if (!e) e = hr_gguf_put(w, "t.f64", HR_GGUF_F64, &f64);
    if (!e) e = hr_gguf_put(w, "t.bool", HR_GGUF_BOOL, &yes);
    if (!e) e = hr_gguf_put_f32(w, "t.f32", 0.25f);
    if (!e) e = hr_gguf_put_arr(w, "t.strs", HR_GGUF_STRING, strs, 3);
    if (!e) e = hr_gguf_put_arr(w, "t.ints", HR_GGUF_I32, ints, 3);
    if (!e) e = hr_gguf_put_tensor(w, "a", HR_F32, 2, (int64_t[]){2, 3}, f);
    if (!e) e = hr_gguf_put_tensor(w, "b", HR_F32, 1, (int64_t[]){5}, f);
    if (!e) e = hr_gguf_writer_bytes(w, buf, len);
    hr_gguf_writer_free(w);
    return e;
}

static void test_roundtrip(void) {
    uint8_t *buf;
    size_t len;
    HR_CHECK_OK(sample(&buf, &len));
    hr_gguf *g;
    hr_err *e = hr_gguf_parse(buf, len, "sample", &g);
    if (e) free(buf);
    HR_CHECK_OK(e);
    int64_t i;
    double d;
    int b;
    const char *s;
    const hr_gguf_kv *strs, *ints;
    int ok = !hr_gguf_get_int(g, "t.i8", 0, &i) && i == -5 && !hr_gguf_get_int(g, "t.u16", 0, &i) &&
             i == 65000 && !hr_gguf_get_int(g, "t.i64", 0, &i) && i == -(1ll << 40) &&
             !hr_gguf_get_num(g, "t.f64", 0, &d) && d == 2.5 &&
             !hr_gguf_get_num(g, "t.f32", 0, &d) && d == 0.25 &&
             !hr_gguf_get_bool(g, "t.bool", 0, &b) && b &&
             !hr_gguf_get_str(g, "general.architecture", &s) && !strcmp(s, "llama") &&
             !hr_gguf_get_arr(g, "t.strs", HR_GGUF_STRING, &strs) && strs && strs->arr_n == 3 &&
             hr_gguf_arr_str(strs, 2).len == 4 && hr_gguf_arr_str(strs, 1).len == 0 &&
             !hr_gguf_get_arr(g, "t.ints", HR_GGUF_I32, &ints) && hr_gguf_arr_int(ints, 1) == -4 &&
             !hr_gguf_get_int(g, "absent", 7, &i) && i == 7;
    const hr_tensor *a = hr_gguf_tensor(g, "a");
    int tensors = a && a->ndim == 2 && a->shape[0] == 2 && a->shape[1] == 3 &&
                  ((float *)a->data)[5] == 6 && hr_gguf_tensor(g, "b") && !hr_gguf_tensor(g, "c") &&
                  hr_gguf_data_bytes(g) == 44;
    hr_err *wrong = hr_gguf_get_str(g, "t.i8", &s);
    int typed = wrong && strstr(hr_err_msg(wrong), "t.i8");
    hr_err_free(wrong);
    hr_gguf_close(g);
    free(buf);
    HR_CHECK(ok, "metadata values do not read back");
    HR_CHECK(tensors, "tensors do not read back");
    HR_CHECK(typed, "a string getter on an i8 is not an error naming the key");
}

/* Every prefix that cuts into the data is refused (and nothing crashes); only the last
 * tensor's padding may go. */
static void test_truncated_everywhere(void) {
    uint8_t *buf;
    size_t len;
    HR_CHECK_OK(sample(&buf, &len));
    int accepted = -1;
    for (size_t n = 0; n + 31 < len && accepted < 0; n++) {
        hr_gguf *g = NULL;
        hr_err *e = hr_gguf_parse(buf, n, "cut", &g);
        if (!e) accepted = (int)n;
        hr_err_free(e);
        hr_gguf_close(g);
    }
    free(buf);
    HR_CHECK(accepted < 0, "a file cut to %d bytes was accepted", accepted);
}

static void test_header(void) {
    raw *r = calloc(1, sizeof *r);
    r_header(r, 3, 0, 0);
    memcpy(r->p, "GGUG", 4);
    bad(r, "bad magic");
    r_header(r, 1, 0, 0);
    bad(r, "version 1 is not supported");
    r_header(r, 4, 0, 0);
    bad(r, "version 4");
    r_header(r, 3, 1ull << 60, 0);
    bad(r, "more than the file");
    r_header(r, 3, 0, 1ull << 62);
    bad(r, "more than the file");
    r_header(r, 2, 0, 0); /* version 2, empty: fine */
    hr_gguf *g;
    HR_CHECK_OK(hr_gguf_parse(r->p, r->n, "v2", &g));
    HR_CHECK(hr_gguf_version(g) == 2, "version");
    hr_gguf_close(g);
    free(r);
}

static void test_bad_metadata(void) {
    raw *r = calloc(1, sizeof *r);
    r_header(r, 3, 0, 1), r_str(r, "k\xC3"), r_u32(r, HR_GGUF_U8), r->p[r->n++] = 1;
    bad(r, "not valid UTF-8");
    r_header(r, 3, 0, 1), r_str(r, "k\xC0\x80"), r_u32(r, HR_GGUF_U8), r->p[r->n++] = 1;
    bad(r, "not valid UTF-8");
    r_header(r, 3, 0, 1), r_u64(r, 70000), memset(r->p + r->n, 'a', 70000), r->n += 70000,
        r_u32(r, 0), r->p[r->n++] = 1;
    bad(r, "at most 65535");
    r_header(r, 3, 0, 1), r_str(r, ""), r_u32(r, 0), r->p[r->n++] = 1;
    bad(r, "is empty");
    r_header(r, 3, 0, 1), r_str(r, "k"), r_u32(r, 13);
    bad(r, "unknown value type 13");
    r_header(r, 3, 0, 1), r_str(r, "k"), r_u32(r, HR_GGUF_ARRAY), r_u32(r, HR_GGUF_ARRAY),
        r_u64(r, 1);
    bad(r, "nested arrays");
    r_header(r, 3, 0, 1), r_str(r, "k"), r_u32(r, HR_GGUF_ARRAY), r_u32(r, HR_GGUF_U64),
        r_u64(r, 1ull << 61);
    bad(r, "elements of u64");
    r_header(r, 3, 0, 1), r_str(r, "k"), r_u32(r, HR_GGUF_ARRAY), r_u32(r, HR_GGUF_STRING),
        r_u64(r, 1ull << 40);
    bad(r, "strings, more than");
    r_header(r, 3, 0, 1), r_str(r, "k"), r_u32(r, HR_GGUF_STRING), r_u64(r, ~0ull);
    bad(r, "past the end");
    r_header(r, 3, 0, 2), r_str(r, "k"), r_u32(r, 0), r->p[r->n++] = 1, r_str(r, "k"), r_u32(r, 0),
                                                      r->p[r->n++] = 1;
    bad(r, "appears twice");
    r_header(r, 3, 0, 1), r_str(r, "general.alignment"), r_u32(r, HR_GGUF_U32), r_u32(r, 24);
    bad(r, "not a power of two");
    free(r);
}

static void test_bad_tensors(void) {
    raw *r = calloc(1, sizeof *r);
    r_header(r, 3, 1, 0), r_tensor(r, "w", 4, 2, 0, 0), r_pad(r, 16);
    bad(r, "outside the file");
    r_header(r, 3, 1, 0), r_tensor(r, "w", 4, 2, 0, ~0ull - 8), r_pad(r, 64);
    bad(r, "not aligned");
    r_header(r, 3, 1, 0), r_tensor(r, "w", 4, 2, 0, 1ull << 62), r_pad(r, 64);
    bad(r, "outside the file");
    r_header(r, 3, 1, 0), r_tensor(r, "w", 4, 2, 0, 4), r_pad(r, 64);
    bad(r, "not aligned to 32");
    r_header(r, 3, 2, 0), r_tensor(r, "a", 16, 2, 0, 0), r_tensor(r, "b", 8, 1, 0, 96),
        r_pad(r, 256);
    bad(r, "overlap");
    r_header(r, 3, 2, 0), r_tensor(r, "a", 8, 1, 0, 0), r_tensor(r, "a", 8, 1, 0, 32), r_pad(r, 64);
    bad(r, "appears twice");
    r_header(r, 3, 1, 0), r_tensor(r, "w", 256, 1, 16, 0), r_pad(r, 1024);
    bad(r, "type IQ2_XXS, not supported");
    r_header(r, 3, 1, 0), r_tensor(r, "w", 8, 1, 99, 0), r_pad(r, 64);
    bad(r, "unknown ggml type id 99");
    r_header(r, 3, 1, 0), r_tensor(r, "w", 33, 1, 8, 0), r_pad(r, 64);
    bad(r, "not a multiple of Q8_0's block of 32");
    r_header(r, 3, 1, 0), r_tensor(r, "w", 1ull << 41, 1, 0, 0), r_pad(r, 64);
    bad(r, "out of range");
    r_header(r, 3, 1, 0), r_str(r, "w"), r_u32(r, 5), r_pad(r, 64);
    bad(r, "5 dimensions");
    /* a valid one: two tensors back to back at aligned offsets */
    r_header(r, 3, 2, 0), r_tensor(r, "a", 8, 1, 0, 0), r_tensor(r, "b", 4, 2, 1, 32), r_pad(r, 64);
    hr_gguf *g;
    HR_CHECK_OK(hr_gguf_parse(r->p, r->n, "ok", &g));
    const hr_tensor *b = hr_gguf_tensor(g, "b");
    HR_CHECK(b && b->dtype == HR_F16 && b->shape[0] == 2 && b->shape[1] == 4,
             "tensor b: dims reversed, F16");
    hr_gguf_close(g);
    free(r);
}

/* The llama.cpp-made fixtures parse: version 3, their tensor counts. */
static void test_fixtures(void) {
    const char *files[] = {"gguf/brown-llama-8m-F16.gguf", "gguf/brown-llama-8m-Q4_K_M.gguf",
                           "gguf/e2e-qwen3-Q8_0.gguf"};
    const int counts[] = {56, 56, 24};
    for (int i = 0; i < 3; i++) {
        hr_gguf *g;
        HR_CHECK_OK(hr_gguf_open(hr_fixture(files[i]), &g));
        int n = hr_gguf_tensor_count(g), v = (int)hr_gguf_version(g);
        hr_gguf_close(g);
        HR_CHECK(n == counts[i] && v == 3, "%s: %d tensors, version %d", files[i], n, v);
    }
    HR_CHECK(!hr_is_gguf(hr_fixture("models/brown-llama-8m")) && hr_is_gguf(hr_fixture(files[0])),
             "hr_is_gguf");
}

/* A gemma3 header with 2^30 blocks is refused before any per-layer array is built (fuzz_gguf
 * found it allocating gigabytes). */
static void test_huge_block_count(void) {
    hr_gguf_writer *w;
    HR_CHECK_OK(hr_gguf_writer_new(&w));
    int64_t shape[2] = {8, 32};
    static uint16_t embd[8 * 32];
    hr_err *e = hr_gguf_put_str(w, "general.architecture", "gemma3");
    if (!e) e = hr_gguf_put_u32(w, "gemma3.block_count", 1u << 30);
    if (!e) e = hr_gguf_put_u32(w, "gemma3.embedding_length", 32);
    if (!e) e = hr_gguf_put_u32(w, "gemma3.attention.head_count", 2);
    if (!e) e = hr_gguf_put_tensor(w, "token_embd.weight", HR_F16, 2, shape, embd);
    uint8_t *buf = NULL;
    size_t len = 0;
    if (!e) e = hr_gguf_writer_bytes(w, &buf, &len);
    hr_gguf_writer_free(w);
    hr_gguf *g = NULL;
    if (!e) e = hr_gguf_parse(buf, len, "mem", &g);
    hr_model_config c;
    hr_err *ce = e ? NULL : hr_config_from_gguf(g, &c);
    int named = ce && strstr(hr_err_msg(ce), "block_count") != NULL;
    hr_err_free(ce);
    hr_gguf_close(g);
    free(buf);
    HR_CHECK_OK(e);
    HR_CHECK(named, "a block_count of 2^30 was not refused by name");
}

int main(void) {
    HR_RUN(test_roundtrip);
    HR_RUN(test_truncated_everywhere);
    HR_RUN(test_header);
    HR_RUN(test_bad_metadata);
    HR_RUN(test_bad_tensors);
    HR_RUN(test_fixtures);
    HR_RUN(test_huge_block_count);
    return hr_test_summary();
}
