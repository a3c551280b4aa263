/* Thread creation: every thread libhearth starts goes through hr_thread_start, so a failure
 * reads the same everywhere (which thread, and why) and the fault sweep
 * (tests/unit/test_alloc_fail.c, docs/reliability.md) reaches each creation site through
 * one call. */
#ifndef HR_BASE_THREAD_H
#define HR_BASE_THREAD_H

#include <pthread.h>

#include "base/err.h"

/* Starts fn(arg) on a new joinable thread. On failure *t is unset and the error says
 * "cannot start the <what> thread: <reason>"; a lack of resources (EAGAIN: threads or
 * memory) has the code HR_E_BUSY (the server answers 503: retrying later can succeed). */
hr_err *hr_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *what);

#endif
