/* Unix domain stream sockets: bind + listen, and non-blocking connect; see unix_socket.h. */
#include "server/unix_socket.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static hr_err *address(const char *path, struct sockaddr_un *a) {
    *a = (struct sockaddr_un){.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a->sun_path)
        return hr_errf("unix socket path %s is longer than %zu bytes", path,
                       sizeof a->sun_path - 1);
    memcpy(a->sun_path, path, strlen(path) + 1);
    return NULL;
}

hr_err *hr_unix_listen(const char *path, int *fd) {
    struct sockaddr_un a;
    HR_TRY(address(path, &a));
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return hr_errf("socket: %s", strerror(errno));
    if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, SOMAXCONN)) {
        hr_err *e = hr_errf("cannot listen on unix socket %s: %s", path, strerror(errno));
        close(s);
        return e;
    }
    *fd = s;
    return NULL;
}

hr_err *hr_unix_connect(const char *path, int *fd) {
    struct sockaddr_un a;
    HR_TRY(address(path, &a));
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0) return hr_errf("socket: %s", strerror(errno));
    /* A unix connect completes at once or fails (EAGAIN: the listener's backlog is full). */
    if (connect(s, (struct sockaddr *)&a, sizeof a)) {
        hr_err *e = hr_errf("cannot connect to %s: %s", path, strerror(errno));
        close(s);
        return e;
    }
    *fd = s;
    return NULL;
}
