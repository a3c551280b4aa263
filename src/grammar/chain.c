/* Chains of a byte DFA, for the masks' shortcut over whole trie subtrees. For a state s,
 * succ is where most printable ASCII bytes lead; the chain set is every byte class that
 * leads there (the control bytes as one class, the characters of each UTF-8 lead byte as
 * one, when each of them reaches succ through live states); chain_len
 * counts how many characters from that set the DFA is sure to survive: a string interior
 * loops (succ = s, unbounded), a maxLength counter steps along its states to its limit. */
#include <stdlib.h>
#include <string.h>

#include "grammar/gram_ir.h"

typedef struct {
    const hr_gdfa *d;
    uint32_t *memo; /* (n_states * 8) stamp << 2 | 1 yes / 2 no */
    uint32_t stamp;
} utf8_ctx;

/* From state t inside a character (validator state q), every valid rest of it reaches
 * target through live states. */
static int finishes_at(utf8_ctx *x, int target, int t, int q) {
    uint32_t *m = &x->memo[(size_t)t * 8 + q];
    if (*m >> 2 == x->stamp) return (*m & 3) == 1;
    int ok = 1;
    for (int b = 0x80; b <= 0xBF && ok; b++) {
        int q2 = hr_gutf8_step(q, (uint8_t)b);
        if (q2 < 0) continue;
        int t2 = x->d->trans[(size_t)t * 256 + b];
        ok = t2 >= 0 && (q2 == 0 ? t2 == target : finishes_at(x, target, t2, q2));
    }
    *m = x->stamp << 2 | (ok ? 1u : 2u);
    return ok;
}

static void set_bit(hr_gbytes *g, int k) { g->w[k >> 6] |= 1ull << (k & 63); }

/* The lead bytes L whose every character, read from s, reaches target through live states
 * (w[2] bit L - 0xC0), and bit 97 when all of them do. */
static void utf8_to(utf8_ctx *x, int s, int target, hr_gbytes *set) {
    x->stamp++;
    int all = 1;
    for (int b = 0xC2; b <= 0xF4; b++) {
        int t = x->d->trans[(size_t)s * 256 + b];
        if (t >= 0 && finishes_at(x, target, t, hr_gutf8_step(0, (uint8_t)b)))
            set->w[2] |= 1ull << (b - 0xC0);
        else
            all = 0;
    }
    if (all) set_bit(set, 97);
}

/* succ of s and its chain set; -1 when no printable byte lives. */
static int chain_set(utf8_ctx *x, int s, hr_gbytes *set) {
    const int32_t *row = x->d->trans + (size_t)s * 256;
    int32_t tgt[96];
    int cnt[96], k = 0, best = -1, best_n = 0;
    for (int b = 0x20; b < 0x80; b++) {
        if (row[b] < 0) continue;
        int j = 0;
        while (j < k && tgt[j] != row[b])
            j++;
        if (j == k) tgt[k] = row[b], cnt[k++] = 0;
        if (++cnt[j] > best_n) best = tgt[j], best_n = cnt[j];
    }
    memset(set, 0, sizeof *set);
    if (best < 0) return -1;
    int ctrl = 1;
    for (int b = 0; b < 0x80; b++) {
        if (b < 0x20)
            ctrl &= row[b] == best;
        else if (row[b] == best)
            set_bit(set, hr_gbytes_bit((uint8_t)b));
    }
    if (ctrl) set_bit(set, 96);
    utf8_to(x, s, best, set);
    return best;
}

static int covers(const hr_gbytes *a, const hr_gbytes *b) {
    return !(b->w[0] & ~a->w[0]) && !(b->w[1] & ~a->w[1]) && !(b->w[2] & ~a->w[2]);
}

/* chain_len along the successor graph (one successor per state): a state whose successor
 * covers its set survives one character more than its successor; cycles are unbounded. */
static void chain_lengths(hr_gdfa *d, const int32_t *succ, int32_t *path, uint8_t *color) {
    for (int s0 = 0; s0 < d->n_states; s0++) {
        if (color[s0] == 2) continue;
        int n = 0, t = s0;
        int64_t base;
        for (;;) {
            if (color[t] == 2) {
                base = d->chain_len[t];
                break;
            }
            if (color[t] == 1) {
                base = HR_G_CHAIN_INF;
                break;
            }
            if (succ[t] < 0) {
                d->chain_len[t] = 0, color[t] = 2, base = 0;
                break;
            }
            color[t] = 1;
            path[n++] = t;
            int u = succ[t];
            if (!covers(&d->chain_set[u], &d->chain_set[t])) {
                base = 0; /* one character into u, no further promise */
                break;
            }
            t = u;
        }
        while (n > 0) {
            int p = path[--n];
            base = base >= HR_G_CHAIN_INF ? HR_G_CHAIN_INF : base + 1;
            d->chain_len[p] = (int32_t)base;
            color[p] = 2;
        }
    }
}

hr_err *hr_gdfa_chains(hr_gdfa *d) {
    size_t n = (size_t)d->n_states + 1;
    d->chain_set = calloc(n, sizeof(hr_gbytes));
    d->chain_len = calloc(n, sizeof(int32_t));
    int32_t *succ = malloc(n * sizeof(int32_t)), *path = malloc(n * sizeof(int32_t));
    uint8_t *color = calloc(n, 1);
    utf8_ctx x = {d, calloc(n * 8, sizeof(uint32_t)), 0};
    hr_err *e =
        (d->chain_set && d->chain_len && succ && path && color && x.memo) ? NULL : hr_err_oom();
    for (int s = 0; !e && s < d->n_states; s++)
        succ[s] = chain_set(&x, s, &d->chain_set[s]);
    if (!e) chain_lengths(d, succ, path, color);
    free(succ), free(path), free(color), free(x.memo);
    return e;
}
