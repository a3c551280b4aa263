/* A JSON Schema number bound as the exact decimal a validator applies. Validators read
 * the instance into a double and compare doubles, so for minimum v a text is valid when
 * it rounds to a double >= v: when it is at least the midpoint between v and the double
 * below (the midpoint itself rounds to the even one of the two). A non-integer bound
 * becomes that midpoint, written out exactly (a double is M * 2^q, the midpoint is
 * N * 2^(q-1), and N * 2^-k = N * 5^k / 10^k, done in base-10^9 limbs); so "0.3" and
 * jansson's "0.29999999999999999" both meet a minimum of 0.3. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "grammar/schema_int.h"

#define LIMBS 24 /* 216 decimal digits: N < 2^55 times 5^160 < 10^129 */

/* a = M * 2^q with M an integer (53 bits) */
static void split(double a, uint64_t *m, int *q) {
    int e;
    double f = frexp(a, &e);
    *m = (uint64_t)ldexp(f, 53);
    *q = e - 53;
}

/* The exact midpoint of positive doubles a < b as N * 2^-k; 0 when k is out of range. */
static int midpoint(double a, double b, uint64_t *n, int *k) {
    uint64_t ma, mb;
    int qa, qb;
    split(a, &ma, &qa);
    split(b, &mb, &qb);
    int q = qa < qb ? qa : qb;
    if (q - 1 > 0 || 1 - q > HR_SC_FRAC_MAX || qa - q > 2 || qb - q > 2) return 0;
    *n = (ma << (qa - q)) + (mb << (qb - q));
    *k = 1 - q;
    return 1;
}

/* Writes N * 2^-k (k >= 1) as ip and fraction digits into d. */
static int to_decimal(uint64_t n, int k, hr_sc_dec *d) {
    uint32_t limb[LIMBS] = {0};
    int used = 0;
    for (uint64_t v = n; v; v /= 1000000000u)
        limb[used++] = (uint32_t)(v % 1000000000u);
    for (int i = 0; i < k; i++) { /* times 5^k */
        uint64_t carry = 0;
        for (int j = 0; j < used; j++) {
            uint64_t x = (uint64_t)limb[j] * 5 + carry;
            limb[j] = (uint32_t)(x % 1000000000u);
            carry = x / 1000000000u;
        }
        if (carry) {
            if (used == LIMBS) return 0;
            limb[used++] = (uint32_t)carry;
        }
    }
    char txt[LIMBS * 9 + 1];
    size_t len = 0;
    for (int j = used - 1; j >= 0; j--)
        len +=
            (size_t)snprintf(txt + len, sizeof txt - len, j == used - 1 ? "%u" : "%09u", limb[j]);
    if (used == 0) txt[len++] = '0';
    txt[len] = 0;
    /* the value is txt / 10^k: pad so that there are k fraction digits and one before */
    char pad[sizeof txt + HR_SC_FRAC_MAX + 2];
    size_t z = len <= (size_t)k ? (size_t)k + 1 - len : 0;
    memset(pad, '0', z);
    memcpy(pad + z, txt, len + 1);
    size_t all = z + len, ilen = all - (size_t)k;
    if (ilen > 19) return 0;
    d->ip = 0;
    for (size_t i = 0; i < ilen; i++)
        d->ip = d->ip * 10 + (uint64_t)(pad[i] - '0');
    size_t fl = (size_t)k;
    while (fl && pad[ilen + fl - 1] == '0')
        fl--;
    memcpy(d->frac, pad + ilen, fl);
    d->frac[fl] = 0;
    return 1;
}

int hr_sc_dec_bound(double v, int lower, int ex, hr_sc_dec *out) {
    *out = (hr_sc_dec){.has = 1, .ex = ex};
    double a = fabs(v);
    if (a > 9.2e18 || isnan(v)) return 0;
    if (v == floor(v)) {
        out->ip = (uint64_t)a;
        out->neg = v < 0;
        return 1;
    }
    /* the side of v the midpoint lies on: below v for an inclusive lower bound or an
     * exclusive upper one, above otherwise */
    int below = lower != ex;
    int toward_zero = v > 0 ? below : !below;
    double nb = nextafter(a, toward_zero ? 0 : INFINITY);
    uint64_t n;
    int k;
    if (!midpoint(toward_zero ? nb : a, toward_zero ? a : nb, &n, &k) || !to_decimal(n, k, out))
        return 0;
    uint64_t m;
    int q;
    split(a, &m, &q);
    /* the midpoint rounds to the even neighbour: it is allowed when that is v and v is
     * allowed, or when it is the other one and v is excluded */
    int v_even = (m & 1) == 0;
    out->ex = ex ? v_even : !v_even;
    out->neg = v < 0;
    return 1;
}
