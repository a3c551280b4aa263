/* Exact regexes for bounded JSON integers and numbers (integer bounds), built digit by
 * digit like a range check: [lo, hi] splits into runs of equal digit count, and a run
 * into a shared prefix, one partial first digit on each side and a full middle. */
#include <stdio.h>
#include <string.h>

#include "grammar/schema_int.h"

#define FRAC_ANY "(?:\\.[0-9]+)?"
#define FRAC_ZERO "(?:\\.0+)?"
#define FRAC_NONZERO "\\.[0-9]*[1-9][0-9]*"

static int all_same(const char *s, size_t n, char c) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != c) return 0;
    return 1;
}

/* Digit strings a..b of the same length n (a <= b), leading zeros allowed past the first. */
static void same_len(hr_sc_buf *o, const char *a, const char *b, size_t n) {
    if (n == 0) return;
    if (a[0] == b[0]) {
        hr_sc_add(o, a, 1);
        same_len(o, a + 1, b + 1, n - 1);
        return;
    }
    int a_low = all_same(a + 1, n - 1, '0'), b_high = all_same(b + 1, n - 1, '9');
    char nines[24], zeros[24];
    memset(nines, '9', n - 1);
    memset(zeros, '0', n - 1);
    char lo = a[0], hi = b[0];
    int alts = 0;
    hr_sc_puts(o, "(?:");
    if (!a_low) {
        hr_sc_add(o, a, 1);
        same_len(o, a + 1, nines, n - 1);
        lo++;
        alts++;
    }
    if (!b_high) hi--;
    if (lo <= hi) {
        if (alts++) hr_sc_puts(o, "|");
        if (lo == hi) hr_sc_add(o, &lo, 1);
        else hr_sc_printf(o, "[%c-%c]", lo, hi);
        if (n > 1) hr_sc_printf(o, "[0-9]{%zu}", n - 1);
    }
    if (!b_high) {
        if (alts++) hr_sc_puts(o, "|");
        hr_sc_add(o, b, 1);
        same_len(o, zeros, b + 1, n - 1);
    }
    hr_sc_puts(o, ")");
}

/* Non-negative integers a..b without leading zeros (has_b 0: no upper bound), as one
 * group. Requires a <= b. */
static void nonneg(hr_sc_buf *o, uint64_t a, int has_b, uint64_t b) {
    char as[24], bs[24], lo[24], hi[24];
    size_t la = (size_t)snprintf(as, sizeof as, "%llu", (unsigned long long)a);
    size_t lb = has_b ? (size_t)snprintf(bs, sizeof bs, "%llu", (unsigned long long)b) : la;
    hr_sc_puts(o, "(?:");
    for (size_t len = la; len <= lb; len++) {
        if (len > la) hr_sc_puts(o, "|");
        if (len == la) memcpy(lo, as, la);
        else {
            lo[0] = '1';
            memset(lo + 1, '0', len - 1);
        }
        if (has_b && len == lb) memcpy(hi, bs, lb);
        else memset(hi, '9', len);
        same_len(o, lo, hi, len);
    }
    if (!has_b) hr_sc_printf(o, "|[1-9][0-9]{%zu,}", la);
    hr_sc_puts(o, ")");
}

void hr_sc_int_range(hr_sc_buf *o, int has_lo, int64_t lo, int has_hi, int64_t hi) {
    int alts = 0;
    hr_sc_puts(o, "(?:");
    if (!has_hi || hi >= 0) {
        nonneg(o, has_lo && lo > 0 ? (uint64_t)lo : 0, has_hi, has_hi ? (uint64_t)hi : 0);
        alts++;
    }
    if (!has_lo || lo < 0) {
        if (alts++) hr_sc_puts(o, "|");
        uint64_t mlo = has_hi && hi < 0 ? (uint64_t)0 - (uint64_t)hi : 1;
        hr_sc_puts(o, "-");
        nonneg(o, mlo, has_lo, has_lo ? (uint64_t)0 - (uint64_t)lo : 0);
    }
    hr_sc_puts(o, ")");
}

/* Magnitudes m = I(.F)? with L < m (l_ex) or L <= m, and m < U (u_ex) or m <= U. */
static int magnitude(hr_sc_buf *o, uint64_t l, int l_ex, int has_u, uint64_t u, int u_ex,
                     int alts) {
    uint64_t a = l_ex ? l + 1 : l;
    if (!has_u || (u > 0 && a <= u - 1)) { /* I in [a, u-1]: any fraction */
        if (alts++) hr_sc_puts(o, "|");
        nonneg(o, a, has_u, has_u ? u - 1 : 0);
        hr_sc_puts(o, FRAC_ANY);
    }
    if (l_ex && (!has_u || l < u)) { /* I == l with a nonzero fraction: l < m < l+1 */
        if (alts++) hr_sc_puts(o, "|");
        hr_sc_printf(o, "%llu" FRAC_NONZERO, (unsigned long long)l);
    }
    if (has_u && !u_ex && u >= a) { /* m == u */
        if (alts++) hr_sc_puts(o, "|");
        hr_sc_printf(o, "%llu" FRAC_ZERO, (unsigned long long)u);
    }
    return alts;
}

int hr_sc_num_range(hr_sc_buf *o, int has_lo, int64_t lo, int lo_ex, int has_hi, int64_t hi,
                    int hi_ex) {
    if (!has_lo && !has_hi) {
        hr_sc_puts(o, "-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][-+]?[0-9]+)?");
        return 1;
    }
    int alts = 0;
    hr_sc_puts(o, "(?:");
    if (!has_hi || hi > 0 || (hi == 0 && !hi_ex)) { /* x >= 0 */
        int pos_lo = has_lo && lo >= 0;
        alts = magnitude(o, pos_lo ? (uint64_t)lo : 0, pos_lo && lo_ex, has_hi,
                         has_hi ? (uint64_t)hi : 0, hi_ex, alts);
    }
    if (!has_lo || lo < 0) { /* x < 0: m = -x > 0 */
        uint64_t ml = 0;
        int ml_ex = 1;
        if (has_hi && hi < 0) {
            ml = (uint64_t)0 - (uint64_t)hi;
            ml_ex = hi_ex;
        }
        hr_sc_buf neg = {0};
        int n = magnitude(&neg, ml, ml_ex, has_lo, has_lo ? (uint64_t)0 - (uint64_t)lo : 0,
                          lo_ex, 0);
        if (n) {
            if (alts++) hr_sc_puts(o, "|");
            hr_sc_puts(o, "-(?:");
            hr_sc_add(o, neg.p, neg.n);
            hr_sc_puts(o, ")");
        }
        if (neg.oom) o->oom = 1;
        hr_sc_buf_free(&neg);
    }
    hr_sc_puts(o, ")");
    return alts;
}
