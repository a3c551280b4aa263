/* CPU attention of one layer at long context, qwen3-0.6b shape (16 q heads, 8 kv heads,
 * head_dim 128): a prefill chunk of C query tokens at the end of a context of N positions
 * (the last chunk of an N-token prompt), and one decode token at N. Reports ms and GFLOP/s
 * (Q K^T and P V, causal: 4 * hd * heads * visible positions per query) of the wall
 * time, and the process's CPU time of the same call (less sensitive to other load on a
 * shared machine; the pool's threads yield while they wait). Usage:
 * bench_attention [--threads T] [--chunk C] [--kv f32|bf16|q8_0] [--compute f32|bf16]
 * [--reps R] [N ...] (defaults 2, 512, bf16, bf16, 9 decode calls, 2048 8192 16384). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bench/common.h"
#include "backend/backend.h"

enum { HEADS = 16, KVH = 8, HD = 128, BS = 16, MAX_REPS = 256 };

static float frand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return ((float)((*s >> 8) & 0xffff) / 65536.0f) * 2.0f - 1.0f;
}

typedef struct {
    int32_t *tok, *pos, *row, *table;
    int32_t qs[2], slot;
} meta_bufs;

/* Step metadata for tokens at positions [p0, p0 + n) of row 0 over nb blocks. */
static hr_step_meta meta_of(meta_bufs *b, int p0, int n, int nb) {
    for (int i = 0; i < n; i++)
        b->tok[i] = 0, b->pos[i] = p0 + i, b->row[i] = 0;
    b->qs[0] = 0, b->qs[1] = n, b->slot = 0;
    return (hr_step_meta){n,  1,        b->tok,   b->pos,         b->row, b->qs,
                          nb, b->table, &b->slot, HR_HEAD_LOGITS, 0,      NULL};
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Median wall seconds of reps calls of attention over tokens [p0, p0 + n); *cpu: the median
 * CPU seconds. */
static double timed(hr_backend *be, hr_kv_store *kv, meta_bufs *mb, int p0, int n, int nb,
                    const float *q, float *out, int reps, double *cpu) {
    const hr_attn_params ap = {0, HEADS, KVH, HD, 0.08838835f, 0, 0};
    double t[MAX_REPS], c[MAX_REPS];
    hr_step_meta m = meta_of(mb, p0, n, nb);
    for (int r = 0; r < reps; r++) {
        if (be->vt->step_begin(be, &m)) abort(); /* no weights: nothing to reserve */
        uint64_t t0 = hr_now_ns();
        double c0 = cpu_s();
        be->vt->attention(be, out, q, kv, &ap);
        c[r] = cpu_s() - c0;
        t[r] = (double)(hr_now_ns() - t0) / 1e9;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    qsort(c, (size_t)reps, sizeof *c, cmp_double);
    *cpu = c[reps / 2];
    return t[reps / 2];
}

static int bench(int N, int C, int threads, hr_dtype kvd, int bf16, int reps) {
    hr_backend *be;
    hr_err *err =
        hr_backend_cpu_create(&(hr_cpu_options){.n_threads = threads, .compute_bf16 = bf16}, &be);
    if (err) return fprintf(stderr, "backend: %s\n", hr_err_msg(err)), 1;
    int nb = (N + BS - 1) / BS;
    hr_kv_store kv = {.dtype = kvd,
                      .n_layers = 1,
                      .n_blocks = nb,
                      .block_size = BS,
                      .n_kv_heads = KVH,
                      .head_dim = HD};
    if ((err = be->vt->kv_create(be, &kv))) return fprintf(stderr, "kv: %s\n", hr_err_msg(err)), 1;
    meta_bufs mb = {malloc(sizeof(int32_t) * (size_t)N),
                    malloc(sizeof(int32_t) * (size_t)N),
                    malloc(sizeof(int32_t) * (size_t)N),
                    malloc(sizeof(int32_t) * (size_t)nb),
                    {0, 0},
                    0};
    float *k = malloc(sizeof(float) * (size_t)N * KVH * HD),
          *v = malloc(sizeof(float) * (size_t)N * KVH * HD),
          *q = malloc(sizeof(float) * (size_t)C * HEADS * HD),
          *out = malloc(sizeof(float) * (size_t)C * HEADS * HD);
    if (!mb.tok || !mb.pos || !mb.row || !mb.table || !k || !v || !q || !out)
        return fprintf(stderr, "out of memory\n"), 1;
    unsigned s = 1;
    for (size_t i = 0; i < (size_t)N * KVH * HD; i++)
        k[i] = frand(&s), v[i] = frand(&s);
    for (size_t i = 0; i < (size_t)C * HEADS * HD; i++)
        q[i] = frand(&s) * 4;
    for (int i = 0; i < nb; i++)
        mb.table[i] = i;
    hr_step_meta all = meta_of(&mb, 0, N, nb);
    if (be->vt->step_begin(be, &all)) return fprintf(stderr, "step_begin failed\n"), 1;
    be->vt->kv_write(be, &kv, 0, k, v);
    double pc, dc, pre = timed(be, &kv, &mb, N - C, C, nb, q, out, 3, &pc);
    double dec = timed(be, &kv, &mb, N - 1, 1, nb, q, out, reps, &dc);
    double vis = (double)C * (N - C) + (double)C * (C + 1) / 2;
    printf("ctx %5d: prefill chunk %d %7.1f ms (cpu %7.1f) %6.1f GFLOP/s | decode %6.2f ms (cpu "
           "%6.2f) %5.1f GFLOP/s\n",
           N, C, pre * 1e3, pc * 1e3, 4.0 * HD * HEADS * vis / pre / 1e9, dec * 1e3, dc * 1e3,
           4.0 * HD * HEADS * N / dec / 1e9);
    be->vt->kv_destroy(be, &kv);
    hr_backend_destroy(be);
    free(mb.tok), free(mb.pos), free(mb.row), free(mb.table), free(k), free(v), free(q), free(out);
    return 0;
}

int main(int argc, char **argv) {
    int threads = 2, C = 512, bf16 = 1, reps = 9, ns[16], n = 0;
    hr_dtype kvd = HR_BF16;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
            C = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
            if (reps < 1 || reps > MAX_REPS)
                return fprintf(stderr, "--reps: 1 to %d\n", MAX_REPS), 2;
        } else if (!strcmp(argv[i], "--kv") && i + 1 < argc) {
            const char *d = argv[++i];
            kvd = !strcmp(d, "f32") ? HR_F32 : !strcmp(d, "q8_0") ? HR_Q8_0 : HR_BF16;
            if (kvd == HR_BF16 && strcmp(d, "bf16"))
                return fprintf(stderr, "--kv: f32, bf16 or q8_0, not %s\n", d), 2;
        } else if (!strcmp(argv[i], "--compute") && i + 1 < argc) {
            const char *c = argv[++i];
            if (strcmp(c, "f32") && strcmp(c, "bf16"))
                return fprintf(stderr, "--compute: f32 or bf16, not %s\n", c), 2;
            bf16 = !strcmp(c, "bf16");
        } else if (argv[i][0] != '-' && n < 16 && atoi(argv[i]) > 0)
            ns[n++] = atoi(argv[i]);
        else
            return fprintf(stderr,
                           "usage: %s [--threads T] [--chunk C] [--kv f32|bf16|q8_0] "
                           "[--compute f32|bf16] [--reps R] [N ...]\n",
                           argv[0]),
                   2;
    }
    if (!n) ns[n++] = 2048, ns[n++] = 8192, ns[n++] = 16384;
    char load[64] = "?";
    FILE *la = fopen("/proc/loadavg", "r");
    if (la && !fgets(load, sizeof load, la)) strcpy(load, "?\n");
    if (la) fclose(la);
    printf("attention, 16 q / 8 kv heads x 128, %d threads, kv %s, compute %s, load %s", threads,
           hr_dtype_name(kvd), bf16 ? "bf16" : "f32", load);
    for (int i = 0; i < n; i++) {
        if (ns[i] < C)
            return fprintf(stderr, "context %d is shorter than the chunk %d\n", ns[i], C), 2;
        if (bench(ns[i], C, threads, kvd, bf16, reps)) return 1;
    }
    return 0;
}
