/* gpu_check's checks of the 16-bit weight products on the CUDA backend in the bf16-products
 * mode (the GPU machine only): for bf16 and f16 weights, two weights uploaded and issued back to
 * back on one x as q and k are, with 5..HR_CU_MMW_MAX_T rows of x and rows past them. On a
 * device with wgmma, once more on a backend made with HEARTH_CUDA_MMW=HR_CU_MMW_MAX_T, where
 * HR_CU_MMW_MIN_T..HR_CU_MMW_MAX_T rows take mmw.cu (a launch per matrix, its rows not whole
 * tiles; K split over a cluster of 8 blocks for K = 2304, of 3 for K = 808, none for the 17000
 * rows of K = 256; two consumer warpgroups past 64 rows; a refused set fails). Otherwise a set of
 * 1000 and 260 rows takes mmh.cu (tiles past each matrix's end, a set boundary inside a tile;
 * K = 2304 splits over blocks, K = 808 ends in a partial chunk) and, from HR_CU_CAT_MIN_T rows
 * where the two lie contiguously (K = 2304: their bytes a multiple of the arena's alignment), one
 * cuBLAS product of both split into the outputs; past HR_CU_CAT_MAX_T rows, and for a set of two
 * 2100-row weights, cuBLAS a matrix at a time (deferred to its launch as a set); within 1e-5 of
 * the f64 product of x rounded to the weight's type: each takes every product of the rounded
 * values exactly and they differ only in the f32 order of the sums. Then gate and up on 1..4 rows
 * of f32 x, the GEMV with act_mul folded into it, against f64. Prints one line per check, "ok"
 * or "FAIL". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/cuda/kernels.h"
#include "tensor/dtype.h"

void hr_gpu_product_checks(int *failures);

static uint64_t pseed = 0x2545f4914f6cdd1dull;

static float prnd(void) { /* uniform in [-1, 1) */
    pseed ^= pseed << 13, pseed ^= pseed >> 7, pseed ^= pseed << 17;
    return (float)(pseed >> 40) / 8388608.0f - 1.0f;
}

/* v rounded to the 16-bit type t, as the device holds it (bits: its 16 bits). */
static float round16(hr_dtype t, float v, uint16_t *bits) {
    *bits = t == HR_BF16 ? hr_f32_to_bf16(v) : hr_f32_to_f16(v);
    return t == HR_BF16 ? hr_bf16_to_f32(*bits) : hr_f16_to_f32(*bits);
}

typedef struct {
    hr_tensor dev[2];
    float *w[2]; /* the rounded weights */
    long N[2], K;
} wset;

static hr_err *wset_make(hr_backend *be, hr_dtype t, long N0, long N1, long K, wset *s) {
    *s = (wset){.N = {N0, N1}, .K = K};
    hr_err *e = NULL;
    for (int m = 0; m < 2 && !e; m++) {
        size_t n = (size_t)s->N[m] * (size_t)K;
        uint16_t *bits = malloc(2 * n);
        s->w[m] = malloc(sizeof(float) * n);
        if (!bits || !s->w[m]) e = hr_err_oom();
        for (size_t i = 0; !e && i < n; i++)
            s->w[m][i] = round16(t, prnd(), &bits[i]);
        hr_tensor host = {.dtype = t, .ndim = 2, .shape = {s->N[m], K}, .data = bits};
        if (!e) e = be->vt->upload(be, &host, &s->dev[m]);
        free(bits);
    }
    return e;
}

static void wset_free(hr_backend *be, wset *s) {
    for (int m = 0; m < 2; m++) {
        if (s->dev[m].data) be->vt->release(be, &s->dev[m]);
        free(s->w[m]);
    }
}

/* max |y - ref| / max |ref| over both products of random x[T, K], as the engine issues them
 * (two matmuls of one x, back to back). */
static hr_err *set_err(hr_backend *be, hr_dtype t, const wset *s, int T, double *err) {
    size_t xb = sizeof(float) * (size_t)T * s->K;
    long most = s->N[0] > s->N[1] ? s->N[0] : s->N[1];
    float *x = malloc(xb), *xr = malloc(xb), *y = malloc(sizeof(float) * (size_t)T * most);
    void *dx = NULL, *dy[2] = {NULL, NULL};
    hr_err *e = x && xr && y ? NULL : hr_err_oom();
    for (size_t i = 0; !e && i < (size_t)T * s->K; i++) {
        uint16_t bits;
        x[i] = prnd();
        xr[i] = round16(t, x[i], &bits);
    }
    if (!e) e = be->vt->alloc(be, xb, &dx);
    for (int m = 0; m < 2 && !e; m++)
        e = be->vt->alloc(be, sizeof(float) * (size_t)T * s->N[m], &dy[m]);
    if (!e) e = be->vt->write(be, dx, x, xb);
    for (int m = 0; m < 2 && !e; m++)
        be->vt->matmul(be, dy[m], dx, &s->dev[m], NULL, T);
    double mx = 0, mr = 0;
    for (int m = 0; m < 2 && !e; m++) {
        e = be->vt->read(be, dy[m], y, sizeof(float) * (size_t)T * s->N[m]);
        for (int r = 0; !e && r < T; r++)
            for (long n = 0; n < s->N[m]; n++) {
                double ref = 0;
                for (long k = 0; k < s->K; k++)
                    ref += (double)xr[r * s->K + k] * s->w[m][n * s->K + k];
                mx = fmax(mx, fabs(y[r * s->N[m] + n] - ref));
                mr = fmax(mr, fabs(ref));
            }
    }
    *err = mr > 0 ? mx / mr : mx;
    if (dx) be->vt->free(be, dx);
    for (int m = 0; m < 2; m++)
        if (dy[m]) be->vt->free(be, dy[m]);
    free(x);
    free(xr);
    free(y);
    return e;
}

/* act(v) as the CPU computes it, in f64 */
static double act64(double v, hr_act_fn act) {
    if (act == HR_ACT_FN_SILU) return v / (1.0 + exp(-v));
    return 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
}

/* The GEMV of gate and up (s: two matrices of equal rows) on T <= 4 rows of f32 x followed by
 * act_mul, which folds into its launch (hr_cu_gemv_fold's act_y): max |error| / max |ref| over
 * gate, up and act(gate) * up against f64 (the GEMV takes x unrounded). */
static hr_err *act_err(hr_backend *be, const wset *s, int T, hr_act_fn act, double *err) {
    long N = s->N[0], K = s->K;
    size_t xb = sizeof(float) * (size_t)T * K, yb = sizeof(float) * (size_t)T * N;
    float *x = malloc(xb), *y = malloc(3 * yb);
    void *dx = NULL, *dy[3] = {NULL, NULL, NULL};
    hr_err *e = x && y ? NULL : hr_err_oom();
    for (size_t i = 0; !e && i < (size_t)T * K; i++)
        x[i] = prnd();
    if (!e) e = be->vt->alloc(be, xb, &dx);
    for (int m = 0; m < 3 && !e; m++)
        e = be->vt->alloc(be, yb, &dy[m]);
    if (!e) e = be->vt->write(be, dx, x, xb);
    if (!e) {
        be->vt->matmul(be, dy[0], dx, &s->dev[0], NULL, T);
        be->vt->matmul(be, dy[1], dx, &s->dev[1], NULL, T);
        be->vt->act_mul(be, dy[2], dy[0], dy[1], (long)T * N, act);
    }
    for (int m = 0; m < 3 && !e; m++)
        e = be->vt->read(be, dy[m], (char *)y + m * yb, yb);
    double mx = 0, mr = 0;
    for (long i = 0; !e && i < (long)T * N; i++) {
        long r = i / N, n = i % N;
        double ref[3] = {0, 0, 0};
        for (long k = 0; k < K; k++) {
            ref[0] += (double)x[r * K + k] * s->w[0][n * K + k];
            ref[1] += (double)x[r * K + k] * s->w[1][n * K + k];
        }
        ref[2] = act64(ref[0], act) * ref[1];
        for (int m = 0; m < 3; m++) {
            mx = fmax(mx, fabs(y[m * T * N + i] - ref[m]));
            mr = fmax(mr, fabs(ref[m]));
        }
    }
    *err = mr > 0 ? mx / mr : mx;
    if (dx) be->vt->free(be, dx);
    for (int m = 0; m < 3; m++)
        if (dy[m]) be->vt->free(be, dy[m]);
    free(x);
    free(y);
    return e;
}

/* One check's line: within 1e-5 of f64 is "ok". */
static void report(hr_dtype t, const char *what, int T, double err, int *failures) {
    printf("%-18s %-22s %10d %10.2e %13s %s\n", hr_dtype_name(t), what, T, err, "",
           err < 1e-5 ? "ok" : "FAIL");
    *failures += !(err < 1e-5);
}

/* A check that could not run (e set): its FAIL line; frees e. */
static void report_err(hr_dtype t, const char *what, hr_err *e, int *failures) {
    printf("%-18s %-22s FAIL: %s\n", hr_dtype_name(t), what, hr_err_msg(e));
    hr_err_free(e);
    ++*failures;
}

static void check_act(hr_backend *be, hr_dtype t, int *failures) {
    wset s;
    hr_err *e = wset_make(be, t, 1000, 1000, 2304, &s);
    for (int T = 1; T <= HR_CU_GEMV_MAX_T && !e; T++)
        for (int a = 0; a < 2 && !e; a++) {
            double err;
            e = act_err(be, &s, T, a ? HR_ACT_FN_GELU_TANH : HR_ACT_FN_SILU, &err);
            if (!e) report(t, a ? "GEMV + GELU fold" : "GEMV + SiLU fold", T, err, failures);
        }
    if (e) report_err(t, "GEMV + act fold", e, failures);
    wset_free(be, &s);
}

/* The path a set of N0 and N1 rows (contiguous: cat) takes at T rows (mmw: on). */
static const char *path_of(long N0, long N1, int cat, int T, int mmw) {
    hr_cu_gemv_set probe = {.n = 2, .start = {0, N0, N0 + N1}};
    int small = hr_cu_mmh_wins(&probe);
    return mmw && T >= HR_CU_MMW_MIN_T && T <= HR_CU_MMW_MAX_T            ? "mmw"
           : small && cat && T >= HR_CU_CAT_MIN_T && T <= HR_CU_CAT_MAX_T ? "cuBLAS cat"
           : small && T <= HR_CU_MMH_MAX_T                                ? "mmh"
                                                                          : "cuBLAS";
}

static void check_type(hr_backend *be, hr_dtype t, long N0, long N1, long K, int mmw,
                       int *failures) {
    wset s;
    hr_err *e = wset_make(be, t, N0, N1, K, &s);
    static const int Ts[] = {5, 8, 9, 16, 17, 32, 33, 48, 64, 65, 96, 127, 128, 129, 520};
    int cat = !e && (const char *)s.dev[0].data + N0 * K * 2 == s.dev[1].data;
    for (size_t i = 0; !e && i < sizeof Ts / sizeof *Ts; i++) {
        double err;
        long refused = hr_cu_mmw_refused;
        e = set_err(be, t, &s, Ts[i], &err);
        if (e) break;
        char what[32];
        const char *path = path_of(N0, N1, cat, Ts[i], mmw);
        snprintf(what, sizeof what, "%s K=%ld", path, K);
        if (hr_cu_mmw_refused != refused) {
            printf("%s %s T=%d: FAIL: mmw refused the set\n", hr_dtype_name(t), what, Ts[i]);
            ++*failures;
            continue;
        }
        report(t, what, Ts[i], err, failures);
    }
    if (e) report_err(t, "mmh", e, failures);
    wset_free(be, &s);
}

/* Every check on a backend made now (HEARTH_CUDA_MMW as the caller set it; mmw: whether it
 * is on). */
static void checks_on(int mmw, int *failures) {
    hr_backend_options o = {.device = "cuda", .cpu = {.compute_bf16 = 1}};
    hr_backend *be = NULL;
    hr_err *e = hr_backend_create(&o, &be);
    if (e) {
        printf("16-bit products: FAIL: %s\n", hr_err_msg(e));
        hr_err_free(e);
        ++*failures;
        return;
    }
    static const hr_dtype types[] = {HR_BF16, HR_F16};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        check_type(be, types[i], 1000, 260, 2304, mmw, failures);
        check_type(be, types[i], 1000, 260, 808, mmw, failures);
        check_type(be, types[i], 2100, 2100, 2304, mmw, failures);
        if (mmw)
            check_type(be, types[i], 16000, 1000, 256, mmw, failures);
        else
            check_act(be, types[i], failures);
    }
    hr_backend_destroy(be);
}

void hr_gpu_product_checks(int *failures) {
    checks_on(0, failures);
    if (!hr_cu_mmw_ok()) return;
    char rows[16];
    snprintf(rows, sizeof rows, "%d", HR_CU_MMW_MAX_T);
    setenv("HEARTH_CUDA_MMW", rows, 1);
    checks_on(1, failures);
    unsetenv("HEARTH_CUDA_MMW");
}
