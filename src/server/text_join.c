/* Linear text joins (text_join.h). */
#include "server/text_join.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int grow(hr_text_join *j, size_t more) {
    if (more > SIZE_MAX / 2 - j->len) return 0;
    size_t need = j->len + more + 1;
    if (need <= j->cap) return 1;
    size_t cap = j->cap ? j->cap : 64;
    while (cap < need)
        cap *= 2;
    char *p = realloc(j->s, cap);
    if (!p) return 0;
    j->s = p;
    j->cap = cap;
    return 1;
}

void hr_text_join_add(hr_text_join *j, const char *sep, const char *text, size_t n) {
    size_t k = j->len ? strlen(sep) : 0;
    if (j->oom || !grow(j, k + n)) {
        j->oom = 1;
        return;
    }
    memcpy(j->s + j->len, sep, k);
    memcpy(j->s + j->len + k, text, n);
    j->len += k + n;
    j->s[j->len] = 0;
}

json_t *hr_text_join_take(hr_text_join *j, hr_err **err) {
    json_t *s = j->oom ? NULL : json_stringn_nocheck(j->len ? j->s : "", j->len);
    hr_text_join_free(j);
    if (!s) *err = hr_err_oom();
    return s;
}

void hr_text_join_free(hr_text_join *j) {
    free(j->s);
    *j = (hr_text_join){0};
}
