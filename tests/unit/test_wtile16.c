/* bf16 / f16 weights in 4-row tiles (tensor/tile16.h, backend/cpu/wtile16.h): the layout
 * read back element by element; every level's tile kernel bit for bit its row kernel, over
 * column ranges as threads split them; every token of a batch bit for bit the same token alone
 * (the prefill strips against the decode tiles, K tails, several column sweeps, more tokens
 * than one strip pass); the CPU backend tiling what it should, reading tiled tensors back and
 * multiplying them as the rows; and every fixture architecture in bf16 giving the same logits
 * from tiled weights as from its weights in place (embeddings, experts, convolutions and
 * per-layer projections read through the tiles). */
#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/wtile16.h"
#include "base/cpu.h"
#include "base/file.h"
#include "harness.h"
#include "model/mkmodel.h"
#include "model_logits.h"
#include "tensor/dtype.h"
#include "tensor/mlx_quant.h"
#include "tensor/tile16.h"

static unsigned rng = 4242;
static float frand(void) {
    rng = rng * 1103515245u + 12345u;
    return ((float)((rng >> 8) & 0xffff) / 65536.0f) * 2.0f - 1.0f;
}

static const hr_cpu_kernels *levels[3];
static int n_levels;

static void pick_levels(void) {
    hr_cpu_level hw = hr_cpu()->level;
    levels[n_levels++] = &hr_cpu_kernels_ref;
    if (hw >= HR_CPU_AVX2) levels[n_levels++] = &hr_cpu_kernels_avx2;
    if (hw >= HR_CPU_AVX512) levels[n_levels++] = &hr_cpu_kernels_avx512;
}

/* n random 2-byte weights of dtype d (bf16 or f16). */
static uint16_t *rand_w(long n, hr_dtype d) {
    uint16_t *w = malloc(sizeof(uint16_t) * (size_t)n);
    for (long i = 0; i < n; i++)
        w[i] = d == HR_BF16 ? hr_f32_to_bf16(frand()) : hr_f32_to_f16(frand());
    return w;
}

static float *rand_x(long n) {
    float *x = malloc(sizeof(float) * (size_t)n);
    for (long i = 0; i < n; i++)
        x[i] = frand() * 2.0f;
    return x;
}

static void test_layout(void) {
    int Ns[] = {4, 5, 7, 8, 13}, Ks[] = {8, 24};
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 2; b++) {
            int N = Ns[a], K = Ks[b];
            uint16_t *src = malloc(sizeof(uint16_t) * (size_t)N * K),
                     *dst = calloc((size_t)N * K, 2);
            for (int i = 0; i < N * K; i++)
                src[i] = (uint16_t)(i + 1);
            hr_wtile16_pack(NULL, src, dst, N, K);
            hr_tensor t = {
                .data = dst, .dtype = HR_BF16, .ndim = 2, .shape = {N, K}, .row_tile = 4};
            int bad = 0;
            for (int i = 0; i < N * K; i++)
                bad += dst[hr_tensor_elem_off(&t, i)] != src[i];
            /* a tile's first 8 elements are row 4t's first 8, then row 4t + 1's */
            if (N >= 4) bad += dst[8] != src[K];
            free(src);
            free(dst);
            HR_CHECK(bad == 0, "N=%d K=%d: %d elements misplaced", N, K, bad);
        }
}

/* y = x w^T of T tokens through fn over [0, mid) and [mid, N). */
static void mm_split(hr_mm_fn fn, float *y, const float *x, const void *w, int K, int T, int N) {
    long mid = N / 32 * 16;
    fn(y, N, x, K, w, K, T, 0, mid);
    fn(y, N, x, K, w, K, T, mid, N);
}

static int same_bits(const float *a, const float *b, long n) {
    return memcmp(a, b, sizeof(float) * (size_t)n) == 0;
}

/* The tile kernel of each level equals its row kernel bit for bit. */
static void test_tiles_equal_rows(void) {
    int shapes[][3] = {{1, 8, 4},    {2, 40, 7},    {3, 64, 37},   {5, 1032, 21},
                       {7, 2056, 9}, {64, 136, 64}, {389, 48, 13}, {1, 2056, 70}};
    for (int l = 0; l < n_levels; l++)
        for (int d = 0; d < 2; d++)
            for (size_t s = 0; s < sizeof shapes / sizeof *shapes && !hr_t_cur_failed; s++) {
                int T = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
                hr_dtype dt = d ? HR_F16 : HR_BF16;
                uint16_t *w = rand_w((long)N * K, dt),
                         *wt = malloc(sizeof(uint16_t) * (size_t)N * K);
                hr_wtile16_pack(NULL, w, wt, N, K);
                float *x = rand_x((long)T * K), *y0 = calloc((size_t)T * N, 4),
                      *y1 = calloc((size_t)T * N, 4);
                const hr_cpu_kernels *k = levels[l];
                mm_split(d ? k->mm_f16 : k->mm_bf16, y0, x, w, K, T, N);
                mm_split(d ? k->mm_f16_t4 : k->mm_bf16_t4, y1, x, wt, K, T, N);
                int ok = same_bits(y0, y1, (long)T * N);
                free(w), free(wt), free(x), free(y0), free(y1);
                HR_CHECK(ok, "%s %s T=%d K=%d N=%d: tiles differ from rows", k->name,
                         hr_dtype_name(dt), T, K, N);
            }
}

/* One weight (row-major dtype 0 f32 / 1 bf16 / 2 f16, or 3 bf16 tiled) at one level: each
 * token of a T-token batch equals the token alone. */
static void check_invariant(const hr_cpu_kernels *k, int form, int T, int K, int N) {
    long n = (long)N * K;
    void *w = form == 0 ? (void *)rand_x(n) : rand_w(n, form == 2 ? HR_F16 : HR_BF16);
    hr_mm_fn fn = form == 0 ? k->mm_f32 : form == 2 ? k->mm_f16 : k->mm_bf16;
    if (form == 3) {
        uint16_t *wt = malloc(sizeof(uint16_t) * (size_t)n);
        hr_wtile16_pack(NULL, w, wt, N, K);
        free(w);
        w = wt;
        fn = k->mm_bf16_t4;
    }
    float *x = rand_x((long)T * K), *yb = calloc((size_t)T * N, 4), *y1 = calloc((size_t)N, 4);
    mm_split(fn, yb, x, w, K, T, N);
    int bad = -1;
    for (int t = 0; t < T && bad < 0; t++) {
        mm_split(fn, y1, x + (long)t * K, w, K, 1, N);
        if (!same_bits(y1, yb + (long)t * N, N)) bad = t;
    }
    free(w), free(x), free(yb), free(y1);
    HR_CHECK(bad < 0, "%s form %d T=%d K=%d N=%d: token %d differs from itself alone", k->name,
             form, T, K, N, bad);
}

static void test_batch_invariance(void) {
    int shapes[][3] = {{3, 8, 5}, {4, 131, 9}, {7, 1032, 6}, {5, 2059, 7}, {390, 40, 5}};
    for (int l = 1; l < n_levels; l++) /* the reference sums each output alone anyway */
        for (int form = 0; form < 4; form++)
            for (size_t s = 0; s < sizeof shapes / sizeof *shapes && !hr_t_cur_failed; s++) {
                int K = shapes[s][1];
                if (form == 3 && K % 8) continue; /* tiles need whole 8-column blocks */
                check_invariant(levels[l], form, shapes[s][0], K, shapes[s][2]);
            }
}

/* The backend tiles 2-D bf16 / f16 matrices of whole blocks at the AVX2 level only, reads them
 * back element by element, and multiplies them as it multiplies the rows. */
static void check_upload(hr_backend *be, hr_backend *flat, hr_dtype dt, int ndim, int N, int K,
                         int want_tile) {
    long n = (long)N * K;
    uint16_t *w = rand_w(n, dt);
    hr_tensor host = {.data = w, .dtype = dt, .ndim = ndim, .shape = {N, K}}, dev, dev_flat;
    if (ndim == 3) host.shape[0] = 1, host.shape[1] = N, host.shape[2] = K;
    HR_CHECK_OK(be->vt->upload(be, &host, &dev));
    HR_CHECK_OK(flat->vt->upload(flat, &host, &dev_flat));
    int tiled = dev.row_tile == HR_TILE16_ROWS, bad = 0;
    float *back = malloc(sizeof(float) * (size_t)n);
    hr_cpu_to_f32(back, &dev, 0, n);
    for (long i = 0; i < n; i++)
        bad += back[i] != (dt == HR_BF16 ? hr_bf16_to_f32(w[i]) : hr_f16_to_f32(w[i])) ||
               hr_mlx_companion(&dev, i) != back[i];
    int same = 1;
    if (ndim == 2)
        for (int T = 1; T <= 9; T += 8) {
            float *x = rand_x((long)T * K), *y0 = calloc((size_t)T * N, 4),
                  *y1 = calloc((size_t)T * N, 4);
            hr_cpu_matmul(flat, y0, x, &dev_flat, NULL, T);
            hr_cpu_matmul(be, y1, x, &dev, NULL, T);
            same &= same_bits(y0, y1, (long)T * N);
            free(x), free(y0), free(y1);
        }
    be->vt->release(be, &dev);
    flat->vt->release(flat, &dev_flat);
    free(w), free(back);
    HR_CHECK(tiled == want_tile, "%s [%d, %d] ndim %d: tiled %d, want %d", hr_dtype_name(dt), N, K,
             ndim, tiled, want_tile);
    HR_CHECK(bad == 0, "%s [%d, %d]: %d elements read back wrong", hr_dtype_name(dt), N, K, bad);
    HR_CHECK(same, "%s [%d, %d]: tiled matmul differs from the rows'", hr_dtype_name(dt), N, K);
}

/* At the AVX2 level, a backend that tiles (*be) and one that uses weights in place (*flat);
 * NULL (said) where the CPU has no AVX2. */
static hr_err *two_backends(hr_backend **be, hr_backend **flat) {
    *be = *flat = NULL;
    if (hr_cpu()->level < HR_CPU_AVX2) {
        printf("  note: no AVX2 on this CPU; the backend never tiles\n");
        return NULL;
    }
    hr_cpu_set_level(HR_CPU_AVX2);
    HR_TRY(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2}, be));
    return hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2, .weights_in_place = 1}, flat);
}

static void test_backend_upload(void) {
    hr_cpu_level hw = hr_cpu()->level;
    hr_backend *be, *flat;
    HR_CHECK_OK(two_backends(&be, &flat));
    if (!be) return;
    check_upload(be, flat, HR_BF16, 2, 37, 40, 1);
    check_upload(be, flat, HR_F16, 2, 8, 1032, 1);
    check_upload(be, flat, HR_BF16, 2, 3, 40, 0);  /* less than a tile */
    check_upload(be, flat, HR_BF16, 2, 16, 36, 0); /* a partial 8-column block */
    check_upload(be, flat, HR_BF16, 3, 16, 40, 0); /* stacked experts are sliced by rows */
    hr_cpu_set_level(hw);
    if (hw > HR_CPU_AVX2) check_upload(be, flat, HR_BF16, 2, 37, 40, 0);
    hr_backend_destroy(be);
    hr_backend_destroy(flat);
}

/* A random bf16 model of each fixture's config: 7 tokens' logits, every position, on a
 * backend that tiles and on one that uses the weights in place. */
static void test_fixture_models(void) {
    const char *names[] = {"tiny-llama",       "tiny-qwen2",      "tiny-qwen3",     "tiny-gemma3",
                           "tiny-gemma4",      "tiny-gemma4_moe", "tiny-qwen3_moe", "tiny-qwen3_5",
                           "tiny-qwen3_5_moe", "tiny-qwen3_next"};
    hr_cpu_level hw = hr_cpu()->level;
    hr_backend *be, *flat;
    HR_CHECK_OK(two_backends(&be, &flat));
    if (!be) return;
    int32_t ids[7] = {1, 5, 9, 2, 7, 3, 11};
    for (size_t i = 0; i < sizeof names / sizeof *names && !hr_t_cur_failed; i++) {
        char cfg_path[512], dir[] = "/tmp/hearth-wtile16-XXXXXX", *cfg = NULL;
        snprintf(cfg_path, sizeof cfg_path, "models/%s/config.json", names[i]);
        size_t len;
        HR_CHECK_OK(hr_read_file(hr_fixture(cfg_path), &cfg, &len));
        HR_CHECK(mkdtemp(dir), "mkdtemp");
        hr_err *e = hr_mkmodel_write(dir, cfg, HR_BF16, 7, 1u << 30);
        free(cfg);
        float *a = NULL, *b = NULL;
        int V = 0, V2 = 0;
        if (!e) e = hr_t_logits(be, dir, ids, 7, &a, &V);
        if (!e) e = hr_t_logits(flat, dir, ids, 7, &b, &V2);
        hr_test_remove_tree(dir);
        int same = !e && V == V2 && same_bits(a, b, 7L * V);
        free(a), free(b);
        HR_CHECK_OK(e);
        HR_CHECK(same, "%s: logits from tiled weights differ from the weights in place", names[i]);
    }
    hr_cpu_set_level(hw);
    hr_backend_destroy(be);
    hr_backend_destroy(flat);
}

int main(void) {
    pick_levels();
    HR_RUN(test_layout);
    HR_RUN(test_tiles_equal_rows);
    HR_RUN(test_batch_invariance);
    HR_RUN(test_backend_upload);
    HR_RUN(test_fixture_models);
    return hr_test_summary();
}
