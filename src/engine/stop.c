/* Stop-string matching with hold-back; see stop.h. */
#define _GNU_SOURCE
#include "engine/stop.h"

#include <stdlib.h>
#include <string.h>

hr_err *hr_stop_init(hr_stop_matcher *m, const char *const *stops, int n) {
    memset(m, 0, sizeof *m);
    if (n <= 0) return NULL;
    m->stops = calloc((size_t)n, sizeof *m->stops);
    if (!m->stops) return hr_err_oom();
    for (int i = 0; i < n; i++) {
        if (!stops[i] || !stops[i][0]) {
            hr_stop_free(m);
            return hr_errf("stop strings must not be empty");
        }
        m->stops[m->n++] = strdup(stops[i]);
        if (!m->stops[m->n - 1]) {
            hr_stop_free(m);
            return hr_err_oom();
        }
    }
    return NULL;
}

void hr_stop_free(hr_stop_matcher *m) {
    for (int i = 0; i < m->n; i++)
        free(m->stops[i]);
    free(m->stops);
    free(m->buf);
    memset(m, 0, sizeof *m);
}

static int append(hr_stop_matcher *m, const char *text, size_t len) {
    if (m->released) {
        memmove(m->buf, m->buf + m->released, m->len - m->released);
        m->len -= m->released;
        m->released = 0;
    }
    if (m->len + len + 1 > m->cap) {
        size_t cap = 2 * (m->len + len + 1);
        char *b = realloc(m->buf, cap);
        if (!b) return 0;
        m->buf = b;
        m->cap = cap;
    }
    if (len) memcpy(m->buf + m->len, text, len);
    m->len += len;
    m->buf[m->len] = 0;
    return 1;
}

/* Length of the longest tail of buf that is a proper prefix of some stop string. */
static size_t held_tail(const hr_stop_matcher *m) {
    size_t best = 0;
    for (int i = 0; i < m->n; i++) {
        size_t sl = strlen(m->stops[i]);
        for (size_t k = sl - 1 < m->len ? sl - 1 : m->len; k > best; k--)
            if (memcmp(m->buf + m->len - k, m->stops[i], k) == 0) {
                best = k;
                break;
            }
    }
    return best;
}

int hr_stop_push(hr_stop_matcher *m, const char *text, size_t len, const char **out,
                 size_t *out_len) {
    if (m->n == 0) {
        *out = text;
        *out_len = len;
        return 0;
    }
    if (!append(m, text, len)) { /* out of memory: stream unmatched rather than fail */
        *out = text;
        *out_len = len;
        return 0;
    }
    const char *first = NULL;
    int which = 0;
    for (int i = 0; i < m->n; i++) {
        const char *p = memmem(m->buf, m->len, m->stops[i], strlen(m->stops[i]));
        if (p && (!first || p < first)) {
            first = p;
            which = i;
        }
    }
    *out = m->buf;
    if (first) {
        *out_len = (size_t)(first - m->buf);
        m->released = m->len;
        return which + 1;
    }
    *out_len = m->len - held_tail(m);
    m->released = *out_len;
    return 0;
}

void hr_stop_flush(hr_stop_matcher *m, const char **out, size_t *out_len) {
    *out = m->buf ? m->buf + m->released : "";
    *out_len = m->len - m->released;
    m->released = m->len;
}
