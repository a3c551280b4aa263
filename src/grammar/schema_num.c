/* Exact regexes for bounded JSON integers and numbers, built digit by digit like a range
 * check: an integer range splits into runs of equal digit count, and a run into a shared
 * prefix, one partial first digit on each side and a full middle; a number's integer part
 * is such a range and its fraction is compared digit by digit with the bounds' fraction
 * digits (decimal bounds of any length: schema_dec.c gives them). */
#include <stdio.h>
#include <string.h>

#include "grammar/schema_int.h"

#define FRAC_ANY "(?:\\.[0-9]+)?"

static int all_same(const char *s, size_t n, char c) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != c) return 0;
    return 1;
}

/* Digit strings a..b of the same length n (a <= b), leading zeros allowed past the first. */
static void same_len(hr_gbuf *o, const char *a, const char *b, size_t n) {
    if (n == 0) return;
    if (a[0] == b[0]) {
        hr_gbuf_add(o, a, 1);
        same_len(o, a + 1, b + 1, n - 1);
        return;
    }
    int a_low = all_same(a + 1, n - 1, '0'), b_high = all_same(b + 1, n - 1, '9');
    char nines[24], zeros[24];
    memset(nines, '9', n - 1);
    memset(zeros, '0', n - 1);
    char lo = a[0], hi = b[0];
    int alts = 0;
    hr_gbuf_puts(o, "(?:");
    if (!a_low) {
        hr_gbuf_add(o, a, 1);
        same_len(o, a + 1, nines, n - 1);
        lo++;
        alts++;
    }
    if (!b_high) hi--;
    if (lo <= hi) {
        if (alts++) hr_gbuf_puts(o, "|");
        if (lo == hi)
            hr_gbuf_add(o, &lo, 1);
        else
            hr_gbuf_printf(o, "[%c-%c]", lo, hi);
        if (n > 1) hr_gbuf_printf(o, "[0-9]{%zu}", n - 1);
    }
    if (!b_high) {
        if (alts++) hr_gbuf_puts(o, "|");
        hr_gbuf_add(o, b, 1);
        same_len(o, zeros, b + 1, n - 1);
    }
    hr_gbuf_puts(o, ")");
}

/* Non-negative integers a..b without leading zeros (has_b 0: no upper bound), as one
 * group. Requires a <= b. */
static void nonneg(hr_gbuf *o, uint64_t a, int has_b, uint64_t b) {
    char as[24], bs[24], lo[24], hi[24];
    size_t la = (size_t)snprintf(as, sizeof as, "%llu", (unsigned long long)a);
    size_t lb = has_b ? (size_t)snprintf(bs, sizeof bs, "%llu", (unsigned long long)b) : la;
    hr_gbuf_puts(o, "(?:");
    for (size_t len = la; len <= lb; len++) {
        if (len > la) hr_gbuf_puts(o, "|");
        if (len == la)
            memcpy(lo, as, la);
        else {
            lo[0] = '1';
            memset(lo + 1, '0', len - 1);
        }
        if (has_b && len == lb)
            memcpy(hi, bs, lb);
        else
            memset(hi, '9', len);
        same_len(o, lo, hi, len);
    }
    if (!has_b) hr_gbuf_printf(o, "|[1-9][0-9]{%zu,}", la);
    hr_gbuf_puts(o, ")");
}

void hr_sc_int_range(hr_gbuf *o, int has_lo, int64_t lo, int has_hi, int64_t hi) {
    int alts = 0;
    hr_gbuf_puts(o, "(?:");
    if (!has_hi || hi >= 0) {
        nonneg(o, has_lo && lo > 0 ? (uint64_t)lo : 0, has_hi, has_hi ? (uint64_t)hi : 0);
        alts++;
    }
    if (!has_lo || lo < 0) {
        if (alts++) hr_gbuf_puts(o, "|");
        uint64_t mlo = has_hi && hi < 0 ? (uint64_t)0 - (uint64_t)hi : 1;
        hr_gbuf_puts(o, "-");
        nonneg(o, mlo, has_lo, has_lo ? (uint64_t)0 - (uint64_t)lo : 0);
    }
    hr_gbuf_puts(o, ")");
}

/* One side of a fraction's comparison: the digits left to compare (no trailing zeros),
 * strict or not; has 0: no bound on this side (or already satisfied). */
typedef struct {
    int has, ex;
    const char *d;
} side;

enum { FAIL, SAT, EQ };

static int step(const side *s, int c, int lower, side *next) {
    *next = *s;
    if (!s->has) return SAT;
    int d0 = s->d[0] ? s->d[0] - '0' : 0;
    if (c == d0) {
        if (s->d[0]) next->d++;
        return EQ;
    }
    if (lower ? c > d0 : c < d0) {
        next->has = 0;
        return SAT;
    }
    return FAIL;
}

/* Digit strings R (the digits after the point; need: at least one) with 0.R above lo and
 * below hi. Appends one group; returns 0 (appending nothing) when there is none. */
static int frac_digits(hr_gbuf *o, side lo, side hi, int need) {
    if (lo.has && !lo.d[0] && !lo.ex) lo.has = 0;
    int lo_zero = !lo.has, hi_zero = !hi.has || hi.d[0] || !hi.ex;
    if (!lo.has && !hi.has) return hr_gbuf_puts(o, need ? "[0-9]+" : "[0-9]*"), 1;
    if (!lo.has && !hi.d[0]) return hi.ex ? 0 : (hr_gbuf_puts(o, need ? "0+" : "0*"), 1);
    if (!lo.d[0] && !hi.has) return hr_gbuf_puts(o, "[0-9]*[1-9][0-9]*"), 1;
    if (!lo.d[0] && !hi.d[0]) return 0;
    hr_gbuf b = {0};
    int alts = 0;
    for (int c = 0; c <= 9;) {
        side nl, nh;
        int tl = step(&lo, c, 1, &nl), th = step(&hi, c, 0, &nh), e = c;
        side xl, xh;
        while (e < 9 && step(&lo, e + 1, 1, &xl) == tl && step(&hi, e + 1, 0, &xh) == th &&
               tl != EQ && th != EQ)
            e++;
        if (tl != FAIL && th != FAIL) {
            hr_gbuf sub = {0};
            if (frac_digits(&sub, nl, nh, 0)) {
                if (alts++) hr_gbuf_puts(&b, "|");
                if (c == e)
                    hr_gbuf_printf(&b, "%d", c);
                else
                    hr_gbuf_printf(&b, "[%d-%d]", c, e);
                hr_gbuf_add(&b, sub.p ? sub.p : "", sub.n);
            }
            if (sub.oom) b.oom = 1;
            hr_gbuf_free(&sub);
        }
        c = e + 1;
    }
    int empty = !need && lo_zero && hi_zero;
    if (alts) hr_gbuf_printf(o, "(?:%s)%s", b.p, empty ? "?" : "");
    if (b.oom) o->oom = 1;
    hr_gbuf_free(&b);
    return alts || empty;
}

/* The fraction part (absent, or "." and digits) of a number with its integer part fixed,
 * 0.F bounded by lo and hi. Returns 0 (appending nothing) when none fits. */
static int fraction(hr_gbuf *o, side lo, side hi) {
    if (lo.has && !lo.d[0] && !lo.ex) lo.has = 0;
    int absent = !lo.has && (!hi.has || hi.d[0] || !hi.ex);
    hr_gbuf d = {0};
    int some = frac_digits(&d, lo, hi, 1);
    if (some) hr_gbuf_printf(o, absent ? "(?:\\.%s)?" : "\\.%s", d.p);
    if (d.oom) o->oom = 1;
    hr_gbuf_free(&d);
    return some || absent;
}

/* Magnitudes m = I(.F)? with a below m (or equal unless a->ex) and, when b, m below b
 * (or equal unless b->ex). */
static int magnitude(hr_gbuf *o, const hr_sc_dec *a, const hr_sc_dec *b, int alts) {
    side none = {0, 0, ""}, la = {1, a->ex, a->frac}, hb = {0, 0, ""};
    if (b) hb = (side){1, b->ex, b->frac};
    if (b && a->ip > b->ip) return alts;
    hr_gbuf f = {0};
    if (b && a->ip == b->ip) {
        if (fraction(&f, la, hb)) {
            if (alts++) hr_gbuf_puts(o, "|");
            hr_gbuf_printf(o, "%llu%s", (unsigned long long)a->ip, f.p ? f.p : "");
        }
    } else {
        if (fraction(&f, la, none)) {
            if (alts++) hr_gbuf_puts(o, "|");
            hr_gbuf_printf(o, "%llu%s", (unsigned long long)a->ip, f.p ? f.p : "");
        }
        if (!b || b->ip - a->ip > 1) {
            if (alts++) hr_gbuf_puts(o, "|");
            nonneg(o, a->ip + 1, b != NULL, b ? b->ip - 1 : 0);
            hr_gbuf_puts(o, FRAC_ANY);
        }
        hr_gbuf_free(&f);
        if (b && fraction(&f, none, hb)) {
            if (alts++) hr_gbuf_puts(o, "|");
            hr_gbuf_printf(o, "%llu%s", (unsigned long long)b->ip, f.p ? f.p : "");
        }
    }
    if (f.oom) o->oom = 1;
    hr_gbuf_free(&f);
    return alts;
}

static int is_zero(const hr_sc_dec *d) { return d->ip == 0 && !d->frac[0]; }

int hr_sc_num_range(hr_gbuf *o, const hr_sc_dec *lo, const hr_sc_dec *hi) {
    if (!lo->has && !hi->has) {
        hr_gbuf_puts(o, "-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][-+]?[0-9]+)?");
        return 1;
    }
    int alts = 0;
    hr_gbuf_puts(o, "(?:");
    if (!hi->has || !hi->neg) { /* x >= 0 */
        hr_sc_dec zero = {0};
        alts = magnitude(o, lo->has && !lo->neg ? lo : &zero, hi->has ? hi : NULL, alts);
    }
    if (!lo->has || lo->neg) { /* x <= 0 written with a sign: m = -x */
        hr_sc_dec a = {.has = 1, .ex = hi->has && !hi->neg && is_zero(hi) && hi->ex};
        if (hi->has && hi->neg) a = *hi;
        a.neg = 0;
        hr_sc_dec b = lo->has ? *lo : (hr_sc_dec){0};
        b.neg = 0;
        hr_gbuf neg = {0};
        int n = magnitude(&neg, &a, lo->has ? &b : NULL, 0);
        if (n) {
            if (alts++) hr_gbuf_puts(o, "|");
            hr_gbuf_puts(o, "-(?:");
            hr_gbuf_add(o, neg.p, neg.n);
            hr_gbuf_puts(o, ")");
        }
        if (neg.oom) o->oom = 1;
        hr_gbuf_free(&neg);
    }
    hr_gbuf_puts(o, ")");
    return alts;
}
