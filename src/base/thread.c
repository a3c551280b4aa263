/* hr_thread_start; see thread.h. */
#include "base/thread.h"

#include <errno.h>
#include <string.h>

hr_err *hr_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *what) {
    int rc = pthread_create(t, NULL, fn, arg);
    if (!rc) return NULL;
    return hr_errc(rc == EAGAIN ? HR_E_BUSY : HR_E_GENERIC, "cannot start the %s thread: %s", what,
                   strerror(rc));
}
