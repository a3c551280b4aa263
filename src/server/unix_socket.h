/* Unix domain stream sockets: the engine child of `hearth serve --isolate` listens on one
 * in the supervisor's private runtime directory, and the supervisor connects to it. */
#ifndef HR_SERVER_UNIX_SOCKET_H
#define HR_SERVER_UNIX_SOCKET_H

#include "base/err.h"

/* A listening socket bound at path (close-on-exec); an existing socket file there is
 * replaced. */
hr_err *hr_unix_listen(const char *path, int *fd);
/* A connected, non-blocking, close-on-exec socket to path; the error says why not
 * (no socket there, refused, the listener's backlog full). */
hr_err *hr_unix_connect(const char *path, int *fd);

#endif
