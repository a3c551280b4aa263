/* The whole-request deadline (slowloris): a request's headers and body must arrive within
 * --request-timeout seconds however the bytes trickle in (libmicrohttpd's own timeout is
 * an idle one that every byte restarts). A watcher thread shuts down the socket of a
 * connection still reading its request past the deadline; libmicrohttpd then closes it. */
#ifndef HR_SERVER_CONN_GUARD_H
#define HR_SERVER_CONN_GUARD_H

#include <microhttpd.h>
#include <stdint.h>

#include "base/err.h"

typedef struct hr_conn_guard hr_conn_guard;

/* timeout_s: seconds for a request's headers and body; idle_s: the idle timeout (0 = none),
 * which a keep-alive connection may wait before its next request starts. */
hr_err *hr_conn_guard_start(unsigned timeout_s, unsigned idle_s, hr_conn_guard **out);
void hr_conn_guard_stop(hr_conn_guard *g);
/* MHD_OPTION_NOTIFY_CONNECTION: connections come and go (cls is the guard). */
void hr_conn_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code);
/* MHD_OPTION_URI_LOG_CALLBACK: a request line arrived, its deadline starts now. Returns
 * NULL (the request's first context). */
void *hr_conn_guard_request_line(void *cls, const char *uri, struct MHD_Connection *c);
/* The request on c is read whole: no deadline while it is answered. This and the next two
 * do nothing for a NULL guard (no deadline configured). */
void hr_conn_guard_read(hr_conn_guard *g, struct MHD_Connection *c);
/* The request on c was answered: the next one on the connection may idle first. */
void hr_conn_guard_answered(hr_conn_guard *g, struct MHD_Connection *c);
/* Connections cut at their deadline so far. */
uint64_t hr_conn_guard_cut(hr_conn_guard *g);

#endif
