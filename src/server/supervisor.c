/* The --isolate supervisor: one thread that owns the engine child (fork + exec of
 * /proc/self/exe), waits on its pidfd, relays its stderr, probes its /health over the unix
 * socket without blocking, and restarts it with backoff. See supervisor.h.
 *
 * Invariants: only the supervisor thread forks, reaps, kills and probes; other threads read
 * the state under mu. The thread lives until the child is reaped at stop, which matters:
 * PR_SET_PDEATHSIG fires when the thread that forked the child exits. */
#define _GNU_SOURCE /* pipe2, close_range, sigabbrev_np */
#include "server/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/thread.h"
#include "server/unix_socket.h"

#define BACKOFF_FIRST_S 0.5
#define BACKOFF_MAX_S 30.0
#define STABLE_S 60.0   /* ready this long: the next death starts the backoff over */
#define FAILED_AFTER 5  /* quick deaths in a row that make the state failed */
#define PROBE_MAX 65536 /* bytes of a /health reply */

typedef enum { ST_STARTING, ST_READY, ST_RESTARTING, ST_FAILED, ST_STOPPING } sup_state;
static const char *const STATE_NAMES[] = {"starting", "ready", "restarting", "failed", "stopping"};

/* A /health request in flight to the child (fd -1: none). */
typedef struct {
    int fd;
    int connected;
    uint64_t deadline_ns;
    char *buf; /* the supervisor's probe_buf */
    size_t len;
} probe;

struct hr_supervisor {
    hr_supervisor_config cfg;
    char **argv; /* cfg.argv + "--unix-socket" PATH + NULL; PATH is sock_arg */
    int argc;
    char sock_arg[256];
    pthread_t thread;
    int running; /* the thread was started */
    int wake[2]; /* written by hr_supervisor_stop */
    /* Under mu: what other threads read. */
    pthread_mutex_t mu;
    pthread_cond_t changed;
    sup_state state;
    int pid; /* 0: no child */
    uint64_t generation;
    char sock[256];
    int restarts;
    int exits;                  /* children that ended */
    int last_code, last_signal; /* the last one's exit status, or its signal (else 0) */
    char reason[600];
    json_t *child_health; /* the last probe's answer */
    uint64_t ready_ns, last_ok_ns, started_ns;
    /* The supervisor thread's own. */
    int pidfd, err_fd;
    char line[300]; /* the child's stderr line being read */
    size_t line_len;
    char last_line[300];
    int quick_deaths;
    int hang_killed;
    char killed_why[96]; /* why the supervisor killed it (hang_killed) */
    uint64_t next_spawn_ns, next_probe_ns, term_deadline_ns;
    int stopping, termed;
    probe pr;
    char probe_buf[PROBE_MAX]; /* after the start, the thread allocates nothing of its own */
};

static uint64_t after_s(double s) { return hr_now_ns() + (uint64_t)(s * 1e9); }

static void set_state(hr_supervisor *s, sup_state st) {
    pthread_mutex_lock(&s->mu);
    s->state = st;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->mu);
}

/* In the forked child: only async-signal-safe calls until exec. */
static void exec_child(hr_supervisor *s, int err_w, pid_t parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127); /* the parent died before prctl */
    dup2(err_w, 2);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    close_range(3, ~0u, 0);
    execv("/proc/self/exe", s->argv);
    static const char msg[] = "hearth serve --isolate: cannot exec /proc/self/exe\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(127);
}

static hr_err *spawn(hr_supervisor *s) {
    uint64_t gen = s->generation + 1;
    char sock[256];
    int n = snprintf(sock, sizeof sock, "%s/engine.%llu.sock", s->cfg.runtime_dir,
                     (unsigned long long)gen);
    if (n < 0 || (size_t)n >= sizeof sock) return hr_errf("runtime directory path too long");
    memcpy(s->sock_arg, sock, sizeof sock);
    int errp[2];
    if (pipe2(errp, O_CLOEXEC)) return hr_errf("pipe: %s", strerror(errno));
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        close(errp[0]);
        close(errp[1]);
        return hr_errf("fork: %s", strerror(errno));
    }
    if (pid == 0) exec_child(s, errp[1], parent);
    close(errp[1]);
    fcntl(errp[0], F_SETFL, O_NONBLOCK);
    s->err_fd = errp[0];
    s->pidfd = pidfd_open(pid, 0); /* -1: fall back to polling waitpid */
    s->line_len = 0;
    s->last_line[0] = 0;
    s->hang_killed = 0;
    s->next_probe_ns = after_s(s->cfg.probe_interval_s < 0.1 ? s->cfg.probe_interval_s : 0.1);
    pthread_mutex_lock(&s->mu);
    s->pid = pid;
    s->generation = gen;
    if (gen > 1) s->restarts++;
    memcpy(s->sock, sock, sizeof sock);
    s->started_ns = hr_now_ns();
    s->ready_ns = 0;
    pthread_mutex_unlock(&s->mu);
    HR_INFO("isolate: engine child pid %d started (socket %s)", pid, sock);
    return NULL;
}

/* Passes the child's stderr through, keeping its last non-empty line. */
static void relay_stderr(hr_supervisor *s) {
    char buf[4096];
    ssize_t n;
    while ((n = read(s->err_fd, buf, sizeof buf)) > 0) {
        for (size_t off = 0; off < (size_t)n;) {
            ssize_t w = write(2, buf + off, (size_t)n - off);
            if (w <= 0) break;
            off += (size_t)w;
        }
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (s->line_len < sizeof s->line - 1) s->line[s->line_len++] = buf[i];
                continue;
            }
            if (s->line_len) {
                s->line[s->line_len] = 0;
                memcpy(s->last_line, s->line, s->line_len + 1);
            }
            s->line_len = 0;
        }
    }
    if (n == 0) { /* EOF: the child (and whatever it forked) closed its stderr */
        close(s->err_fd);
        s->err_fd = -1;
    }
}

/* While a child loads, probes come every 0.1 s at most, so that it is used soon after. */
static void probe_end(hr_supervisor *s) {
    if (s->pr.fd >= 0) close(s->pr.fd);
    s->pr = (probe){.fd = -1};
    double every = s->cfg.probe_interval_s;
    if (s->state != ST_READY && every > 0.1) every = 0.1;
    s->next_probe_ns = after_s(every);
}

static void probe_start(hr_supervisor *s) {
    static const char req[] = "GET /health HTTP/1.1\r\nHost: engine\r\nConnection: close\r\n\r\n";
    s->next_probe_ns = UINT64_MAX;
    s->pr = (probe){.fd = -1, .deadline_ns = after_s(s->cfg.probe_timeout_s)};
    hr_err *e = hr_unix_connect(s->sock, &s->pr.fd);
    if (e) { /* not listening yet (loading), or gone */
        hr_err_free(e);
        return probe_end(s);
    }
    s->pr.connected = 1;
    s->pr.buf = s->probe_buf;
    if (write(s->pr.fd, req, sizeof req - 1) != (ssize_t)sizeof req - 1) return probe_end(s);
}

/* The answer of a probe: 200 with a JSON object. */
static json_t *probe_parse(probe *p) {
    if (p->len < 12 || memcmp(p->buf, "HTTP/1.1 200", 12)) return NULL;
    char *body = memmem(p->buf, p->len, "\r\n\r\n", 4);
    if (!body) return NULL;
    body += 4;
    json_t *j = json_loadb(body, (size_t)(p->buf + p->len - body), 0, NULL);
    if (j && !json_is_object(j)) json_decref(j), j = NULL;
    return j;
}

static void became_ready(hr_supervisor *s, json_t *health) {
    pthread_mutex_lock(&s->mu);
    json_decref(s->child_health);
    s->child_health = health;
    s->last_ok_ns = hr_now_ns();
    int first = s->state != ST_READY;
    if (first) {
        s->state = ST_READY;
        s->ready_ns = s->last_ok_ns;
        pthread_cond_broadcast(&s->changed);
    }
    int pid = s->pid, restarts = s->restarts;
    pthread_mutex_unlock(&s->mu);
    if (!first) return;
    HR_INFO("isolate: engine child pid %d ready after %.2f s", pid,
            (double)(s->ready_ns - s->started_ns) * 1e-9);
    if (s->cfg.on_ready) s->cfg.on_ready(s->cfg.ctx, pid, restarts);
}

static void probe_read(hr_supervisor *s) {
    ssize_t n = 0;
    while (s->pr.len < PROBE_MAX &&
           (n = read(s->pr.fd, s->pr.buf + s->pr.len, PROBE_MAX - s->pr.len)) > 0)
        s->pr.len += (size_t)n;
    if (s->pr.len < PROBE_MAX && n < 0 && errno == EAGAIN) return; /* more to come */
    json_t *health = probe_parse(&s->pr);
    probe_end(s);
    if (health) became_ready(s, health);
}

static void kill_hung(hr_supervisor *s, const char *why) {
    if (s->hang_killed || !s->pid) return;
    HR_ERROR("isolate: engine child pid %d %s: killing it", s->pid, why);
    s->hang_killed = 1;
    snprintf(s->killed_why, sizeof s->killed_why, "%s", why);
    kill(s->pid, SIGKILL);
}

/* A child still loading past the load deadline (0: none). */
static int load_overdue(hr_supervisor *s, uint64_t now) {
    if (!(s->cfg.load_timeout_s > 0)) return 0;
    pthread_mutex_lock(&s->mu);
    int overdue =
        s->state != ST_READY && now - s->started_ns >= (uint64_t)(s->cfg.load_timeout_s * 1e9);
    pthread_mutex_unlock(&s->mu);
    return overdue;
}

/* A probe past its deadline, a ready child with no good answer for the timeout, or a child
 * that never got ready within the load timeout. */
static void check_hang(hr_supervisor *s, uint64_t now) {
    if (s->stopping || !s->pid || s->hang_killed) return;
    char why[96];
    if (load_overdue(s, now)) {
        snprintf(why, sizeof why, "was not ready within %.0f s (--load-timeout)",
                 s->cfg.load_timeout_s);
        return kill_hung(s, why);
    }
    snprintf(why, sizeof why, "did not answer /health within %.1f s", s->cfg.probe_timeout_s);
    if (s->pr.fd >= 0 && s->pr.connected && now >= s->pr.deadline_ns) {
        probe_end(s);
        return kill_hung(s, why);
    }
    pthread_mutex_lock(&s->mu);
    int stale =
        s->state == ST_READY && now - s->last_ok_ns >= (uint64_t)(s->cfg.probe_timeout_s * 1e9);
    pthread_mutex_unlock(&s->mu);
    if (stale) kill_hung(s, why);
}

static void describe_exit(hr_supervisor *s, int status, double up_s) {
    char what[96];
    s->last_code = s->last_signal = 0;
    if (WIFEXITED(status)) {
        s->last_code = WEXITSTATUS(status);
        snprintf(what, sizeof what, "exited with status %d", s->last_code);
    } else {
        s->last_signal = WTERMSIG(status);
        const char *name = sigabbrev_np(s->last_signal);
        snprintf(what, sizeof what, "was killed by signal %d (SIG%s)", s->last_signal,
                 name ? name : "?");
    }
    int said = WIFEXITED(status) && s->last_line[0];   /* why it gave up, as it said */
    int killed = !WIFEXITED(status) && s->hang_killed; /* why the supervisor killed it */
    snprintf(s->reason, sizeof s->reason, "engine child %s after %.1f s%s%.200s", what, up_s,
             said     ? "; its last line: "
             : killed ? ": it "
                      : "",
             said     ? s->last_line
             : killed ? s->killed_why
                      : "");
}

/* The wait before the next child after n quick deaths in a row. */
static double backoff_s(int n) {
    double delay = BACKOFF_FIRST_S;
    for (int i = 1; i < n && delay < BACKOFF_MAX_S; i++)
        delay *= 2;
    return delay > BACKOFF_MAX_S ? BACKOFF_MAX_S : delay;
}

/* No child could be started (pipe2 or fork failed: out of processes, memory or
 * descriptors): a quick death, so the tries back off and a run of them makes the state
 * failed, with the reason in /health. */
static void spawn_failed(hr_supervisor *s, hr_err *e) {
    pthread_mutex_lock(&s->mu);
    s->quick_deaths++;
    snprintf(s->reason, sizeof s->reason, "cannot start the engine child: %.500s", hr_err_msg(e));
    if (s->quick_deaths >= FAILED_AFTER) s->state = ST_FAILED;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->mu);
    hr_err_free(e);
    double delay = backoff_s(s->quick_deaths);
    s->next_spawn_ns = after_s(delay);
    HR_ERROR("isolate: %s; next try in %.1f s%s", s->reason, delay,
             s->quick_deaths >= FAILED_AFTER ? "; /health says failed" : "");
}

/* The child is gone: record why, schedule the next one. */
static void reaped(hr_supervisor *s, int status) {
    if (s->err_fd >= 0) relay_stderr(s); /* its last words: all in the pipe by now */
    if (s->err_fd >= 0) close(s->err_fd);
    s->err_fd = -1;
    if (s->pidfd >= 0) close(s->pidfd);
    s->pidfd = -1;
    if (s->pr.fd >= 0) probe_end(s);
    uint64_t now = hr_now_ns();
    pthread_mutex_lock(&s->mu);
    int pid = s->pid;
    double up_s = (double)(now - s->started_ns) * 1e-9;
    int stable = s->ready_ns && (double)(now - s->ready_ns) * 1e-9 >= STABLE_S;
    s->quick_deaths = stable ? 1 : s->quick_deaths + 1;
    s->exits++;
    describe_exit(s, status, up_s);
    unlink(s->sock);
    s->pid = 0;
    json_decref(s->child_health);
    s->child_health = NULL;
    if (!s->stopping) s->state = s->quick_deaths >= FAILED_AFTER ? ST_FAILED : ST_RESTARTING;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->mu);
    if (s->stopping) return;
    double delay = backoff_s(s->quick_deaths);
    s->next_spawn_ns = after_s(delay);
    if (s->quick_deaths >= FAILED_AFTER)
        HR_ERROR("isolate: crash loop (%d quick exits in a row): %s; /health says failed; "
                 "next try in %.1f s",
                 s->quick_deaths, s->reason, delay);
    else
        HR_WARN("isolate: pid %d: %s; restarting in %.1f s", pid, s->reason, delay);
}

static void reap(hr_supervisor *s) {
    int status;
    if (s->pid && waitpid(s->pid, &status, WNOHANG) == s->pid) reaped(s, status);
}

static int poll_timeout_ms(const hr_supervisor *s, uint64_t now) {
    uint64_t next = UINT64_MAX;
    if (s->pid && !s->stopping) next = s->next_probe_ns;
    if (s->pr.fd >= 0 && s->pr.deadline_ns < next) next = s->pr.deadline_ns;
    if (!s->pid && !s->stopping && s->next_spawn_ns < next) next = s->next_spawn_ns;
    if (s->termed && s->term_deadline_ns < next) next = s->term_deadline_ns;
    int ms = next == UINT64_MAX ? 1000 : next <= now ? 0 : (int)((next - now) / 1000000u) + 1;
    if (s->pid && s->pidfd < 0 && ms > 100) ms = 100; /* no pidfd: poll waitpid */
    return ms > 1000 ? 1000 : ms;
}

/* One turn of the loop: wait for something, then act on what is due. */
static void step(hr_supervisor *s) {
    struct pollfd p[4];
    int n = 0, i_wake = n, i_err = -1, i_probe = -1;
    p[n++] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
    if (s->pidfd >= 0) p[n++] = (struct pollfd){.fd = s->pidfd, .events = POLLIN};
    if (s->err_fd >= 0) i_err = n, p[n++] = (struct pollfd){.fd = s->err_fd, .events = POLLIN};
    if (s->pr.fd >= 0) i_probe = n, p[n++] = (struct pollfd){.fd = s->pr.fd, .events = POLLIN};
    poll(p, (nfds_t)n, poll_timeout_ms(s, hr_now_ns()));
    if (p[i_wake].revents) {
        char c;
        if (read(s->wake[0], &c, 1) == 1) s->stopping = 1;
    }
    if (i_err >= 0 && p[i_err].revents) relay_stderr(s);
    if (i_probe >= 0 && p[i_probe].revents) probe_read(s);
    reap(s);
    uint64_t now = hr_now_ns();
    if (s->stopping) {
        if (s->pid && !s->termed) {
            set_state(s, ST_STOPPING);
            kill(s->pid, SIGTERM);
            s->termed = 1;
            s->term_deadline_ns = after_s(s->cfg.stop_timeout_s);
        } else if (s->pid && now >= s->term_deadline_ns && !s->hang_killed) {
            kill_hung(s, "did not exit after SIGTERM");
        }
        return;
    }
    check_hang(s, now);
    if (s->pid && s->pr.fd < 0 && now >= s->next_probe_ns && !s->hang_killed) probe_start(s);
    if (!s->pid && now >= s->next_spawn_ns) {
        hr_err *e = spawn(s);
        if (e) spawn_failed(s, e);
    }
}

static void *run(void *arg) {
    hr_supervisor *s = arg;
    while (!s->stopping || s->pid)
        step(s);
    if (s->pr.fd >= 0) probe_end(s);
    return NULL;
}

static void sup_free(hr_supervisor *s) {
    if (s->argv)
        for (int i = 0; i <= s->argc; i++)
            free(s->argv[i]);
    free(s->argv);
    if (s->wake[0] >= 0) close(s->wake[0]);
    if (s->wake[1] >= 0) close(s->wake[1]);
    json_decref(s->child_health);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->changed);
    free(s);
}

static hr_err *copy_argv(hr_supervisor *s, char *const *argv) {
    while (argv[s->argc])
        s->argc++;
    s->argv = calloc((size_t)s->argc + 3, sizeof *s->argv);
    if (!s->argv) return hr_err_oom();
    for (int i = 0; i < s->argc; i++)
        if (!(s->argv[i] = strdup(argv[i]))) return hr_err_oom();
    if (!(s->argv[s->argc] = strdup("--unix-socket"))) return hr_err_oom();
    s->argv[s->argc + 1] = s->sock_arg;
    return NULL;
}

hr_err *hr_supervisor_create(const hr_supervisor_config *cfg, hr_supervisor **out) {
    if (!(cfg->probe_interval_s > 0) || !(cfg->probe_timeout_s > 0))
        return hr_errf("the probe interval and timeout must be positive");
    hr_supervisor *s = calloc(1, sizeof *s);
    if (!s) return hr_err_oom();
    s->cfg = *cfg;
    s->wake[0] = s->wake[1] = s->pidfd = s->err_fd = -1;
    s->pr.fd = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->changed, NULL);
    hr_err *e = copy_argv(s, cfg->argv);
    if (!e && pipe2(s->wake, O_CLOEXEC)) e = hr_errf("pipe: %s", strerror(errno));
    if (e) return sup_free(s), e;
    *out = s;
    return NULL;
}

hr_err *hr_supervisor_run(hr_supervisor *s) {
    HR_TRY(hr_thread_start(&s->thread, run, s, "isolate supervisor"));
    s->running = 1;
    return NULL;
}

int hr_supervisor_ready(hr_supervisor *s, char *path, size_t cap, uint64_t *generation) {
    pthread_mutex_lock(&s->mu);
    int ready = s->state == ST_READY;
    if (ready) {
        snprintf(path, cap, "%s", s->sock);
        *generation = s->generation;
    }
    pthread_mutex_unlock(&s->mu);
    return ready;
}

int hr_supervisor_wait_ready(hr_supervisor *s, uint64_t after, double timeout_s, char *path,
                             size_t cap, uint64_t *generation) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    uint64_t ns = (uint64_t)until.tv_nsec + (uint64_t)(timeout_s * 1e9);
    until.tv_sec += (time_t)(ns / 1000000000u);
    until.tv_nsec = (long)(ns % 1000000000u);
    pthread_mutex_lock(&s->mu);
    int rc = 0;
    for (;;) {
        if (s->state == ST_READY && s->generation > after) {
            snprintf(path, cap, "%s", s->sock);
            *generation = s->generation;
            rc = 1;
            break;
        }
        if (s->state == ST_FAILED || s->state == ST_STOPPING) {
            rc = -1;
            break;
        }
        if (pthread_cond_timedwait(&s->changed, &s->mu, &until) == ETIMEDOUT) break;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void hr_supervisor_health(hr_supervisor *s, json_t **state, json_t **child, int *ready) {
    pthread_mutex_lock(&s->mu);
    uint64_t now = hr_now_ns();
    json_t *o = json_pack("{s:s, s:i, s:i}", "state", STATE_NAMES[s->state], "pid", s->pid,
                          "restarts", s->restarts);
    int ok = o != NULL; /* a field that could not be set: no state at all, not one without it */
    if (ok && s->pid)
        ok = !json_object_set_new(o, "uptime_s", json_real((double)(now - s->started_ns) * 1e-9));
    if (ok && s->state == ST_READY)
        ok = !json_object_set_new(o, "probe_age_ms",
                                  json_real((double)(now - s->last_ok_ns) * 1e-6));
    if (ok && s->exits)
        ok = !json_object_set_new(o, "last_exit",
                                  s->last_signal ? json_pack("{s:i}", "signal", s->last_signal)
                                                 : json_pack("{s:i}", "code", s->last_code));
    if (ok && s->reason[0])
        ok = !json_object_set_new(o, "reason", hr_json_string_lossy(s->reason, strlen(s->reason)));
    if (!ok) json_decref(o);
    *state = ok ? o : NULL;
    *child = s->state == ST_READY && s->child_health ? hr_json_deep_copy(s->child_health) : NULL;
    *ready = s->state == ST_READY;
    pthread_mutex_unlock(&s->mu);
}

void hr_supervisor_stop(hr_supervisor *s) {
    if (s->running) {
        ssize_t w = write(s->wake[1], "x", 1);
        (void)w;
        pthread_join(s->thread, NULL);
        s->running = 0;
    }
    set_state(s, ST_STOPPING);
}

void hr_supervisor_destroy(hr_supervisor *s) {
    if (!s) return;
    hr_supervisor_stop(s);
    sup_free(s);
}
