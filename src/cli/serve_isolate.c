/* hearth serve --isolate: a private runtime directory, the public listener (the proxy),
 * the supervised engine child, and the shutdown order on SIGINT/SIGTERM: stop accepting,
 * SIGTERM the child (it finishes or ends its requests within its --shutdown-grace), wait
 * for it with a bound, let the proxied replies end, remove the directory. The parent never
 * loads the model or the tokenizer. A second signal exits at once (the child dies with
 * the parent: PR_SET_PDEATHSIG). */
#include "cli/serve_isolate.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/thread.h"
#include "server/http_internal.h"
#include "server/proxy.h"
#include "server/supervisor.h"

/* Seconds past --shutdown-grace the child gets to exit before SIGKILL (its cut replies'
 * own bound, HR_SHUTDOWN_END_S, plus a margin). */
#define STOP_MARGIN_S 5

typedef struct {
    const hr_isolate_opts *o;
    int port;
    char dir[PATH_MAX];
    sigset_t set;
} isolate_run;

static hr_err *make_runtime_dir(char *dir, size_t cap) {
    const char *base = getenv("XDG_RUNTIME_DIR");
    struct stat st;
    if (!base || !*base || stat(base, &st) || !S_ISDIR(st.st_mode) || access(base, W_OK))
        base = "/tmp";
    if ((size_t)snprintf(dir, cap, "%s/hearth-XXXXXX", base) >= cap)
        return hr_errf("runtime directory path too long");
    if (!mkdtemp(dir))
        return hr_errf("cannot create a runtime directory in %s: %s", base, strerror(errno));
    return NULL;
}

/* The directory holds only the children's sockets. */
static void remove_runtime_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[PATH_MAX + 256];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                unlink(path);
            }
        closedir(d);
    }
    rmdir(dir);
}

static void on_ready(void *ctx, int pid, int restarts) {
    const isolate_run *run = ctx;
    if (!restarts)
        fprintf(stderr, "hearth serve: %s ready on http://%s:%d (--isolate: engine pid %d)\n",
                run->o->model, run->o->host, run->port, pid);
    else
        fprintf(stderr, "hearth serve: engine restarted (pid %d, restart %d), serving again\n", pid,
                restarts);
}

/* A second signal while stopping: exit at once, the child with us. */
static void *exit_on_signal(void *arg) {
    isolate_run *run = arg;
    int sig;
    if (sigwait(&run->set, &sig) != 0) return NULL;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    fprintf(stderr, "hearth serve --isolate: signal %d while stopping, exiting\n", sig);
    remove_runtime_dir(run->dir);
    _exit(128 + sig);
}

static hr_err *start(isolate_run *run, hr_supervisor **sup, hr_proxy **proxy) {
    const hr_isolate_opts *o = run->o;
    hr_supervisor_config sc = {.argv = o->child_argv,
                               .runtime_dir = run->dir,
                               .probe_interval_s = o->probe_interval_s,
                               .probe_timeout_s = o->probe_timeout_s,
                               .load_timeout_s = o->load_timeout_s,
                               .stop_timeout_s = o->grace_s + HR_SHUTDOWN_END_S + STOP_MARGIN_S,
                               .on_ready = on_ready,
                               .ctx = run};
    HR_TRY(hr_supervisor_create(&sc, sup));
    hr_proxy_config pc = {.host = o->host,
                          .port = o->port,
                          .timeout_s = o->timeout_s,
                          .max_connections = o->max_connections,
                          .max_connections_per_ip = o->max_connections_per_ip,
                          .request_timeout_s = o->request_timeout_s,
                          .api_key = o->api_key,
                          .max_body = o->max_body};
    HR_TRY(hr_proxy_start(&pc, *sup, proxy)); /* the port is bound before any child runs */
    run->port = hr_proxy_port(*proxy);
    fprintf(stderr, "hearth serve: listening on http://%s:%d, engine starting (runtime dir %s)\n",
            o->host, run->port, run->dir);
    return hr_supervisor_run(*sup);
}

hr_err *hr_serve_isolated(const hr_isolate_opts *o) {
    isolate_run run = {.o = o};
    sigemptyset(&run.set);
    sigaddset(&run.set, SIGINT);
    sigaddset(&run.set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &run.set, NULL); /* every thread started from here inherits it */
    signal(SIGPIPE, SIG_IGN);
    HR_TRY(make_runtime_dir(run.dir, sizeof run.dir));
    hr_supervisor *sup = NULL;
    hr_proxy *proxy = NULL;
    hr_err *err = start(&run, &sup, &proxy);
    if (!err) {
        int sig;
        sigwait(&run.set, &sig);
        pthread_t watch;
        hr_err *we = hr_thread_start(&watch, exit_on_signal, &run, "signal watch");
        if (we) HR_WARN("%s; a second signal waits for the stop to finish", hr_err_msg(we));
        int watching = !we;
        hr_err_free(we);
        fprintf(stderr,
                "hearth serve --isolate: signal %d, stopping: no new connections; the engine "
                "child gets SIGTERM and up to %.0f s for requests in flight\n",
                sig, o->grace_s);
        hr_proxy_quiesce(proxy);
        hr_supervisor_stop(sup);
        hr_proxy_stop(proxy); /* the child is gone: the replies it cut have ended */
        proxy = NULL;
        if (watching) {
            pthread_cancel(watch);
            pthread_join(watch, NULL);
        }
    }
    hr_proxy_stop(proxy);
    hr_supervisor_destroy(sup);
    remove_runtime_dir(run.dir);
    return err;
}
