/* gpu_check's checks of the 16-bit weight products on the CUDA backend in the bf16-products
 * mode (the GPU machine only): for bf16 and f16 weights, two weights issued back to back on one x
 * as q and k are, with 5..HR_CU_MMH_MAX_T rows of x and one row past them: a set of 1000 and 260
 * rows takes mmh.cu (tiles past each matrix's end, a set boundary inside a tile; K = 2304 splits
 * over blocks, K = 808 ends in a partial chunk), a set of two 2100-row weights cuBLAS (deferred
 * to its launch as a set); within 1e-5 of the f64 product of x rounded to the weight's type: both
 * take every product of the rounded values exactly and differ only in the f32 order of the sums.
 * Prints one line per check, "ok" or "FAIL". */
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

static void check_type(hr_backend *be, hr_dtype t, long N0, long N1, long K, int *failures) {
    wset s;
    hr_err *e = wset_make(be, t, N0, N1, K, &s);
    hr_cu_gemv_set probe = {.n = 2, .start = {0, N0, N0 + N1}};
    static const int Ts[] = {5, 8, 9, 16, 17, 33, 48, 64, HR_CU_MMH_MAX_T + 1};
    for (size_t i = 0; !e && i < sizeof Ts / sizeof *Ts; i++) {
        double err;
        e = set_err(be, t, &s, Ts[i], &err);
        if (e) break;
        char what[32];
        int mmh = Ts[i] <= HR_CU_MMH_MAX_T && hr_cu_mmh_wins(&probe);
        snprintf(what, sizeof what, "%s K=%ld", mmh ? "mmh" : "cuBLAS", K);
        printf("%-18s %-22s %10d %10.2e %13s %s\n", hr_dtype_name(t), what, Ts[i], err, "",
               err < 1e-5 ? "ok" : "FAIL");
        *failures += !(err < 1e-5);
    }
    if (e) {
        printf("%-18s %-22s FAIL: %s\n", hr_dtype_name(t), "mmh", hr_err_msg(e));
        hr_err_free(e);
        ++*failures;
    }
    wset_free(be, &s);
}

void hr_gpu_product_checks(int *failures) {
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
        check_type(be, types[i], 1000, 260, 2304, failures);
        check_type(be, types[i], 1000, 260, 808, failures);
        check_type(be, types[i], 2100, 2100, 2304, failures);
    }
    hr_backend_destroy(be);
}
