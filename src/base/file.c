/* mmap, whole-file reads and atomic writes; see file.h. */
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

hr_err *hr_mmap_open(const char *path, hr_mmap *out) {
    out->data = NULL;
    out->size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return hr_errf("%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return hr_errf("%s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return hr_errf("%s: not a regular file", path);
    }
    if (st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return hr_errf("%s: mmap: %s", path, strerror(e));
        }
        out->data = p;
        out->size = (size_t)st.st_size;
    }
    close(fd);
    return NULL;
}

void hr_mmap_close(hr_mmap *m) {
    if (m->data) munmap(m->data, m->size);
    m->data = NULL;
    m->size = 0;
}

/* Reads fd to its end into a NUL-terminated heap buffer; more than max bytes is an error
 * (the file grew past the limit while being read). */
static hr_err *read_fd(int fd, const char *path, size_t max, char **out, size_t *out_len) {
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) return hr_err_oom();
        if (len + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) free(buf);
            buf = nb;
            cap *= 2;
            continue;
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            return hr_errf("%s: read error: %s", path, strerror(e));
        }
        if (n == 0) break;
        len += (size_t)n;
        if (len > max) {
            free(buf);
            return hr_errf("%s: more than %zu bytes, over the limit for this file", path, max);
        }
    }
    buf[len] = 0;
    *out = buf;
    if (out_len) *out_len = len;
    return NULL;
}

hr_err *hr_read_file(const char *path, char **out, size_t *out_len) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return hr_errf("%s: %s", path, strerror(errno));
    hr_err *e = read_fd(fd, path, SIZE_MAX - 1, out, out_len);
    close(fd);
    return e;
}

hr_err *hr_read_file_max(const char *path, size_t max, char **out, size_t *out_len) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* opening a FIFO would block */
    if (fd < 0) return hr_errf("%s: %s", path, strerror(errno));
    struct stat st;
    hr_err *e = NULL;
    if (fstat(fd, &st) != 0)
        e = hr_errf("%s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        e = hr_errf("%s: not a regular file", path);
    else if ((uint64_t)st.st_size > max)
        e = hr_errf("%s: %lld bytes, over the limit of %zu for this file", path,
                    (long long)st.st_size, max);
    if (!e) e = read_fd(fd, path, max, out, out_len);
    close(fd);
    return e;
}

hr_err *hr_atomic_open(const char *path, hr_atomic_file *f) {
    f->fd = -1;
    f->path = strdup(path);
    size_t n = strlen(path) + 32;
    f->tmp_path = malloc(n);
    if (!f->path || !f->tmp_path) {
        free(f->path);
        free(f->tmp_path);
        return hr_err_oom();
    }
    snprintf(f->tmp_path, n, "%s.tmp.%d", path, (int)getpid());
    f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd < 0) {
        hr_err *e = hr_errf("%s: %s", f->tmp_path, strerror(errno));
        free(f->path);
        free(f->tmp_path);
        return e;
    }
    return NULL;
}

hr_err *hr_atomic_write(hr_atomic_file *f, const void *data, size_t len) {
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(f->fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return hr_errf("%s: write: %s", f->tmp_path, strerror(errno));
        }
        p += w;
        len -= (size_t)w;
    }
    return NULL;
}

static void fsync_dir_of(const char *path) {
    char *copy = strdup(path);
    if (!copy) return;
    int dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    free(copy);
}

hr_err *hr_atomic_commit(hr_atomic_file *f) {
    hr_err *err = NULL;
    if (fsync(f->fd) != 0) err = hr_errf("%s: fsync: %s", f->tmp_path, strerror(errno));
    if (close(f->fd) != 0 && !err) err = hr_errf("%s: close: %s", f->tmp_path, strerror(errno));
    f->fd = -1;
    if (!err && rename(f->tmp_path, f->path) != 0)
        err = hr_errf("%s: rename: %s", f->path, strerror(errno));
    if (err)
        unlink(f->tmp_path);
    else
        fsync_dir_of(f->path);
    free(f->path);
    free(f->tmp_path);
    f->path = f->tmp_path = NULL;
    return err;
}

void hr_atomic_abort(hr_atomic_file *f) {
    if (f->fd >= 0) close(f->fd);
    if (f->tmp_path) unlink(f->tmp_path);
    free(f->path);
    free(f->tmp_path);
    f->fd = -1;
    f->path = f->tmp_path = NULL;
}

hr_err *hr_write_atomic(const char *path, const void *data, size_t len) {
    hr_atomic_file f;
    HR_TRY(hr_atomic_open(path, &f));
    hr_err *err = hr_atomic_write(&f, data, len);
    if (err) {
        hr_atomic_abort(&f);
        return err;
    }
    return hr_atomic_commit(&f);
}

int hr_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

char *hr_path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    size_t k = a;
    if (a > 0 && dir[a - 1] != '/') p[k++] = '/';
    memcpy(p + k, name, b + 1);
    return p;
}

hr_err *hr_mkdir_p(const char *path) {
    char *copy = strdup(path);
    if (!copy) return hr_err_oom();
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(copy, 0755) != 0 && errno != EEXIST) {
            hr_err *e = hr_errf("%s: mkdir: %s", copy, strerror(errno));
            free(copy);
            return e;
        }
        *p = '/';
    }
    hr_err *e = NULL;
    if (mkdir(copy, 0755) != 0 && errno != EEXIST)
        e = hr_errf("%s: mkdir: %s", copy, strerror(errno));
    free(copy);
    return e;
}
