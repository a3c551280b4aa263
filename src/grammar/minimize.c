/* Hopcroft's DFA minimization: partition refinement by the preimages of blocks under each
 * byte class, always queueing the smaller half of a split block, O(k n log n). The DFA's
 * missing transitions (-1) go to one extra sink state, which (every real state reaching an
 * accepting one) ends up alone in its block. Moore's round-by-round refinement was
 * quadratic on the long chains a counted repetition makes. */
#include <stdlib.h>
#include <string.h>

#include "grammar/gram_ir.h"

typedef struct {
    int n, k;                /* states including the sink (n - 1), byte classes */
    int w;                   /* row width of the transition table */
    int *elems, *pos;        /* states grouped by block; where each state sits in elems */
    int *block;              /* (n) block of each state */
    int *beg, *end, *marked; /* per block: [beg, end) in elems, marked ones first */
    int n_blocks;
    uint8_t *in_work;   /* (n, k) the splitter (block, class) is queued */
    int *work, n_work;  /* queued splitters as block * k + class */
    int *inv_off, *inv; /* preimages: states s with trans(s, class c) = t at
                           inv[inv_off[c * n + t], inv_off[c * n + t + 1]) */
    int *touched, n_touched;
    int *pre, n_pre;
} hop;

static void queue(hop *h, int b, int c) {
    size_t i = (size_t)b * h->k + c;
    if (h->in_work[i]) return;
    h->in_work[i] = 1;
    h->work[h->n_work++] = b * h->k + c;
}

static void mark(hop *h, int s) {
    int b = h->block[s], p = h->pos[s], q = h->beg[b] + h->marked[b];
    if (p < q) return; /* already marked */
    if (!h->marked[b]) h->touched[h->n_touched++] = b;
    int other = h->elems[q];
    h->elems[q] = s, h->pos[s] = q;
    h->elems[p] = other, h->pos[other] = p;
    h->marked[b]++;
}

/* Splits each touched block into its marked and unmarked parts. */
static void split(hop *h) {
    for (int i = 0; i < h->n_touched; i++) {
        int b = h->touched[i], m = h->marked[b], size = h->end[b] - h->beg[b];
        h->marked[b] = 0;
        if (m == size) continue;
        int z = h->n_blocks++;
        h->beg[z] = h->beg[b], h->end[z] = h->beg[b] + m, h->marked[z] = 0;
        h->beg[b] += m;
        for (int j = h->beg[z]; j < h->end[z]; j++)
            h->block[h->elems[j]] = z;
        for (int c = 0; c < h->k; c++) {
            if (h->in_work[(size_t)b * h->k + c])
                queue(h, z, c);
            else
                queue(h, m <= size - m ? z : b, c);
        }
    }
    h->n_touched = 0;
}

static int step(const hop *h, const int32_t *trans, const uint8_t *rep, int s, int c) {
    int n_real = h->n - 1;
    if (s == n_real) return n_real;
    int t = trans[(size_t)s * (size_t)h->w + rep[c]];
    return t < 0 ? n_real : t;
}

static int build_inverse(hop *h, const int32_t *trans, const uint8_t *rep) {
    int n = h->n, k = h->k;
    h->inv_off = calloc((size_t)k * n + 1, sizeof(int));
    h->inv = malloc((size_t)k * n * sizeof(int));
    if (!h->inv_off || !h->inv) return -1;
    for (int c = 0; c < k; c++)
        for (int s = 0; s < n; s++)
            h->inv_off[c * n + step(h, trans, rep, s, c) + 1]++;
    for (int i = 0; i < k * n; i++)
        h->inv_off[i + 1] += h->inv_off[i];
    int *fill = calloc((size_t)k * n, sizeof(int));
    if (!fill) return -1;
    for (int c = 0; c < k; c++)
        for (int s = 0; s < n; s++) {
            int t = step(h, trans, rep, s, c);
            h->inv[h->inv_off[c * n + t] + fill[c * n + t]++] = s;
        }
    free(fill);
    return 0;
}

static int alloc(hop *h) {
    size_t n = (size_t)h->n;
    h->elems = malloc(n * sizeof(int));
    h->pos = malloc(n * sizeof(int));
    h->block = malloc(n * sizeof(int));
    h->beg = malloc(n * sizeof(int));
    h->end = malloc(n * sizeof(int));
    h->marked = calloc(n, sizeof(int));
    h->in_work = calloc(n * (size_t)h->k, 1);
    h->work = malloc(n * (size_t)h->k * sizeof(int));
    h->touched = malloc(n * sizeof(int));
    h->pre = malloc(n * sizeof(int));
    return h->elems && h->pos && h->block && h->beg && h->end && h->marked && h->in_work &&
                   h->work && h->touched && h->pre
               ? 0
               : -1;
}

static void release(hop *h) {
    free(h->elems), free(h->pos), free(h->block), free(h->beg), free(h->end), free(h->marked);
    free(h->in_work), free(h->work), free(h->inv_off), free(h->inv), free(h->touched), free(h->pre);
}

/* Initial blocks: accepting states, then the rest with the sink. */
static void init_blocks(hop *h, const uint8_t *accept) {
    int n = h->n, a = 0;
    for (int s = 0; s < n - 1; s++)
        if (accept[s]) h->elems[a++] = s;
    int r = a;
    for (int s = 0; s < n; s++)
        if (s == n - 1 || !accept[s]) h->elems[r++] = s;
    h->n_blocks = 0;
    if (a) h->beg[0] = 0, h->end[0] = a, h->n_blocks = 1;
    h->beg[h->n_blocks] = a, h->end[h->n_blocks] = n, h->n_blocks++;
    for (int b = 0; b < h->n_blocks; b++)
        for (int j = h->beg[b]; j < h->end[b]; j++)
            h->block[h->elems[j]] = b, h->pos[h->elems[j]] = j;
    for (int c = 0; c < h->k; c++)
        queue(h, 0, c);
    if (h->n_blocks == 2)
        for (int c = 0; c < h->k; c++)
            queue(h, 1, c);
}

int hr_gdfa_partition(const int32_t *trans, int w, const uint8_t *accept, int n_real,
                      const uint8_t *rep, int n_rep, int *cls) {
    hop h = {.n = n_real + 1, .k = n_rep, .w = w};
    if (alloc(&h) || build_inverse(&h, trans, rep)) {
        release(&h);
        return -1;
    }
    init_blocks(&h, accept);
    while (h.n_work) {
        int w = h.work[--h.n_work], a = w / h.k, c = w % h.k;
        h.in_work[w] = 0;
        h.n_pre = 0;
        for (int j = h.beg[a]; j < h.end[a]; j++) {
            int t = h.elems[j];
            for (int i = h.inv_off[c * h.n + t]; i < h.inv_off[c * h.n + t + 1]; i++)
                h.pre[h.n_pre++] = h.inv[i];
        }
        for (int i = 0; i < h.n_pre; i++)
            mark(&h, h.pre[i]);
        split(&h);
    }
    /* number the real states' blocks 0.. in order of first appearance (state 0 first) */
    int *num = malloc((size_t)h.n_blocks * sizeof(int)), k = 0;
    if (!num) {
        release(&h);
        return -1;
    }
    for (int b = 0; b < h.n_blocks; b++)
        num[b] = -1;
    for (int s = 0; s < n_real; s++) {
        int b = h.block[s];
        if (num[b] < 0) num[b] = k++;
        cls[s] = num[b];
    }
    free(num);
    release(&h);
    return k;
}
