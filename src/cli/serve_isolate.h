/* hearth serve --isolate: the parent process that keeps the API up while the engine child
 * loads, crashes or hangs (server/supervisor.c, server/proxy.c). */
#ifndef HR_CLI_SERVE_ISOLATE_H
#define HR_CLI_SERVE_ISOLATE_H

#include <stddef.h>

#include "base/err.h"

typedef struct {
    char *const *child_argv; /* the engine child's command line (NULL-terminated) */
    const char *model;       /* for the ready line */
    const char *host;
    int port, timeout_s;
    unsigned max_connections;
    /* The engine server's limits that the public listener enforces too. */
    unsigned max_connections_per_ip;
    int request_timeout_s; /* as hr_server_config's: negative = none */
    const char *api_key;
    size_t max_body;
    double grace_s; /* the child's --shutdown-grace */
    double probe_interval_s, probe_timeout_s;
    double load_timeout_s; /* a child not ready this long is killed and restarted (0: none) */
} hr_isolate_opts;

/* Binds host:port, starts the child, proxies until SIGINT/SIGTERM, then stops the child
 * (SIGTERM: its own graceful shutdown) and removes the runtime directory. */
hr_err *hr_serve_isolated(const hr_isolate_opts *o);

#endif
