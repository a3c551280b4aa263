/* Error values: a function that can fail returns hr_err * (NULL on success). The error
 * carries a message a user can act on; callers add context with hr_err_wrap and the
 * owner of the final error prints it and frees it with hr_err_free. */
#ifndef HR_BASE_ERR_H
#define HR_BASE_ERR_H

#include <stdarg.h>

typedef struct hr_err hr_err;

/* Creates an error with a printf-style message. Never returns NULL: when memory is
 * exhausted it returns a static "out of memory" error that hr_err_free ignores. */
hr_err *hr_errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
hr_err *hr_errv(const char *fmt, va_list ap);

/* Prefixes context to err ("loading x: " + old message); takes ownership of err and
 * returns the (possibly new) error. Returns NULL if err is NULL. */
hr_err *hr_err_wrap(hr_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

const char *hr_err_msg(const hr_err *err);
void hr_err_free(hr_err *err);

/* What kind of failure an error is, for callers that answer differently (an HTTP status,
 * a client's retry): most errors are HR_E_GENERIC. */
typedef enum {
    HR_E_GENERIC,
    HR_E_CONTEXT,  /* the input does not fit the context a sequence can have */
    HR_E_BUSY,     /* refused for load (a full queue); retrying later can succeed */
    HR_E_NOTFOUND, /* a named thing (a stored response) does not exist */
    HR_E_LIMIT,    /* a server-side limit was hit (the chat template engine's memory, steps,
                      output or nesting depth): the server's fault, not the request's */
    HR_E_OOM,      /* memory ran out (hr_err_oom): the server's fault, may pass */
} hr_err_code;

/* As hr_errf, with a code other than HR_E_GENERIC. */
hr_err *hr_errc(hr_err_code code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The error's code (HR_E_GENERIC for NULL and plain errors, HR_E_OOM for hr_err_oom). */
hr_err_code hr_err_code_of(const hr_err *err);

/* The shared out-of-memory error. */
hr_err *hr_err_oom(void);

/* Evaluates expr (an hr_err *); on error returns it from the current function. */
#define HR_TRY(expr)                                                                               \
    do {                                                                                           \
        hr_err *hr_try_err_ = (expr);                                                              \
        if (hr_try_err_) return hr_try_err_;                                                       \
    } while (0)

#endif
