/* The public listener of `hearth serve --isolate`: a reverse proxy (libmicrohttpd, one
 * thread per connection) in front of the supervised engine child. It answers GET /health
 * itself (never waiting on the child), forwards every other request over the child's unix
 * socket with its body as it arrives, and streams the reply back piece by piece (SSE by
 * whole events). A client that leaves closes its upstream connection, so the child cancels
 * the request. The child not ready: 503; gone before it answered: 502, or for a stream
 * that began, a last error event in the API's shape. A request that could not reach the
 * child at all is retried once on the next one. */
#ifndef HR_SERVER_PROXY_H
#define HR_SERVER_PROXY_H

#include <stddef.h>

#include "base/err.h"
#include "server/supervisor.h"

typedef struct {
    const char *host;         /* default 127.0.0.1 */
    int port;                 /* 0 = any free port */
    int timeout_s;            /* a silent client's, as hr_server_config's (0 = 60 s, < 0 never) */
    unsigned max_connections; /* 0 = 512 */
    /* The engine server's limits, enforced here too (hr_server_config's fields). */
    unsigned max_connections_per_ip; /* 0 = none */
    int request_timeout_s;           /* 0 = 30 s, negative = no deadline */
    const char *api_key;             /* NULL = none */
    size_t max_body;                 /* 0 = 8 MiB */
    double retry_wait_s;             /* how long a request that could not reach the child waits for
                                        the next one; 0 = 30 s */
} hr_proxy_config;

typedef struct hr_proxy hr_proxy;

/* Binds and starts listening (fails at once when the address cannot be bound); the
 * supervisor is borrowed for the proxy's life. */
hr_err *hr_proxy_start(const hr_proxy_config *cfg, hr_supervisor *sup, hr_proxy **out);
int hr_proxy_port(const hr_proxy *p);
/* Stops accepting connections (connects are refused); replies carry Connection: close. */
void hr_proxy_quiesce(hr_proxy *p);
/* Waits for connections to end (call once the child is gone), frees. */
void hr_proxy_stop(hr_proxy *p);

#endif
