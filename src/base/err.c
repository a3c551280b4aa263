/* Heap-allocated error messages with context wrapping; see err.h. */
#include "base/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hr_err {
    char *msg;
    hr_err_code code;
};

static char oom_msg[] = "out of memory";
static hr_err oom_err = {oom_msg, HR_E_OOM};

hr_err *hr_err_oom(void) { return &oom_err; }

hr_err *hr_errv(const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) n = 0;
    hr_err *e = malloc(sizeof *e);
    char *m = malloc((size_t)n + 1);
    if (!e || !m) {
        free(e);
        free(m);
        return &oom_err;
    }
    vsnprintf(m, (size_t)n + 1, fmt, ap);
    e->msg = m;
    e->code = HR_E_GENERIC;
    return e;
}

hr_err *hr_errf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    hr_err *e = hr_errv(fmt, ap);
    va_end(ap);
    return e;
}

hr_err *hr_errc(hr_err_code code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    hr_err *e = hr_errv(fmt, ap);
    va_end(ap);
    if (e != &oom_err) e->code = code;
    return e;
}

hr_err_code hr_err_code_of(const hr_err *err) { return err ? err->code : HR_E_GENERIC; }

hr_err *hr_err_wrap(hr_err *err, const char *fmt, ...) {
    if (!err) return NULL;
    if (err == &oom_err) return err;
    va_list ap;
    va_start(ap, fmt);
    hr_err *ctx = hr_errv(fmt, ap);
    va_end(ap);
    if (ctx == &oom_err) return err;
    size_t a = strlen(ctx->msg), b = strlen(err->msg);
    char *m = malloc(a + b + 1);
    if (!m) {
        hr_err_free(ctx);
        return err;
    }
    memcpy(m, ctx->msg, a);
    memcpy(m + a, err->msg, b + 1);
    free(err->msg);
    err->msg = m;
    hr_err_free(ctx);
    return err;
}

const char *hr_err_msg(const hr_err *err) { return err ? err->msg : "ok"; }

void hr_err_free(hr_err *err) {
    if (!err || err == &oom_err) return;
    free(err->msg);
    free(err);
}
