/* The engine child of `hearth serve --isolate`: started, probed, restarted and stopped by
 * one supervisor thread. The child is the same binary serving on a unix socket in the
 * runtime directory (a new socket name per child); its stderr passes through the parent
 * (the last line is kept as the reason of a death). A child that dies, or that stops
 * answering GET /health within the probe timeout, or that is not ready within the load
 * timeout (then it is killed), is restarted after an exponential backoff; quick deaths in
 * a row mark the state failed (it keeps retrying at the longest backoff). Every function is safe to
 * call from any thread. */
#ifndef HR_SERVER_SUPERVISOR_H
#define HR_SERVER_SUPERVISOR_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct {
    /* The child's command line up to (without) the socket option, NULL-terminated; argv[0]
     * is only a name: the program run is /proc/self/exe. Copied. */
    char *const *argv;
    const char *runtime_dir; /* private (0700); sockets go here; borrowed */
    double probe_interval_s, probe_timeout_s;
    double load_timeout_s; /* a child not ready this long after its start is killed (0: none) */
    double stop_timeout_s; /* after SIGTERM at stop, the child's time before SIGKILL */
    /* Called from the supervisor thread each time a child gets ready (may be NULL). */
    void (*on_ready)(void *ctx, int pid, int restarts);
    void *ctx;
} hr_supervisor_config;

typedef struct hr_supervisor hr_supervisor;

/* A supervisor with no child yet (hr_supervisor_run starts it). */
hr_err *hr_supervisor_create(const hr_supervisor_config *cfg, hr_supervisor **out);
/* Starts the supervisor thread, which spawns the first child at once. */
hr_err *hr_supervisor_run(hr_supervisor *s);
/* When a child is ready: 1, its socket path (into path) and generation (each child has
 * its own, increasing). Else 0. */
int hr_supervisor_ready(hr_supervisor *s, char *path, size_t cap, uint64_t *generation);
/* Waits up to timeout_s for a ready child newer than after (a generation): 1 when there is
 * one (as hr_supervisor_ready), 0 on timeout, -1 when none will come soon (the state is
 * failed, or the supervisor is stopping). */
int hr_supervisor_wait_ready(hr_supervisor *s, uint64_t after, double timeout_s, char *path,
                             size_t cap, uint64_t *generation);
/* The supervisor's part of /health: {"state": starting|ready|restarting|failed|stopping,
 * "pid", "restarts", "last_exit", "reason", ...}, and the child's last /health answer
 * (when ready; the caller owns both; *child may be NULL). Out of memory: *state NULL, or,
 * ready, *child NULL. */
void hr_supervisor_health(hr_supervisor *s, json_t **state, json_t **child, int *ready);
/* SIGTERM to the child, up to stop_timeout_s for it to exit (then SIGKILL), its socket
 * removed; joins the thread. The state stays "stopping" (other threads may still ask). */
void hr_supervisor_stop(hr_supervisor *s);
/* Stops (if not yet) and frees; no other thread may use s any more. */
void hr_supervisor_destroy(hr_supervisor *s);

#endif
