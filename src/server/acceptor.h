/* The accept loop of a listener, outside libmicrohttpd: libmicrohttpd binds the socket and
 * is quiesced at once, and this thread accepts and hands each connection to the daemon
 * (MHD_add_connection: its per-address limit and thread per connection; the connection
 * limit is the owner's, see listener.c). accept failing for want of descriptors or memory (EMFILE,
 * ENFILE, ENOBUFS, ENOMEM) backs off from 10 ms doubling to 1 s, with a warning, where
 * libmicrohttpd's own loop retries at once while no connection is open (a core at 100%). */
#ifndef HR_SERVER_ACCEPTOR_H
#define HR_SERVER_ACCEPTOR_H

#include <microhttpd.h>

#include "base/err.h"

typedef struct hr_acceptor hr_acceptor;

/* Starts accepting on listen_fd (the acceptor owns it from here, on failure too) for d; a
 * connection that comes while full(cls) is closed at once. full is the fast path of the
 * owner's connection limit, read before each hand-over: connections handed over but not yet
 * started by the daemon are not in it, so the owner checks again as each starts. */
hr_err *hr_acceptor_start(int listen_fd, struct MHD_Daemon *d, int (*full)(void *cls), void *cls,
                          hr_acceptor **out);
/* Stops accepting: new connects are refused at once (the socket is shut down, closed at
 * hr_acceptor_free). */
void hr_acceptor_stop(hr_acceptor *a);
/* Stops it if need be and frees it, closing the socket (NULL: nothing). */
void hr_acceptor_free(hr_acceptor *a);

#endif
