/* Files: read-only memory maps, whole-file reads, and atomic writes (tmp + fsync +
 * rename, then fsync of the directory) so a crash never leaves a half-written file. */
#ifndef HR_BASE_FILE_H
#define HR_BASE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct {
    void *data; /* NULL for an empty file */
    size_t size;
} hr_mmap;

hr_err *hr_mmap_open(const char *path, hr_mmap *out);
void hr_mmap_close(hr_mmap *m);

/* Reads a whole file into a NUL-terminated heap buffer (caller frees); any kind of file,
 * a pipe included (a command's --file /dev/stdin). */
hr_err *hr_read_file(const char *path, char **out, size_t *out_len);
/* As hr_read_file for the files a model load reads (configs, tokenizer files, chat
 * templates): a FIFO, device or directory is an error ("not a regular file") instead of a
 * read that blocks or never ends, and so is a file over max bytes. */
hr_err *hr_read_file_max(const char *path, size_t max, char **out, size_t *out_len);

/* Writes len bytes to path atomically. */
hr_err *hr_write_atomic(const char *path, const void *data, size_t len);

/* A file being written atomically: write chunks, then commit (rename) or abort. */
typedef struct {
    int fd;
    char *path;
    char *tmp_path;
} hr_atomic_file;

hr_err *hr_atomic_open(const char *path, hr_atomic_file *f);
hr_err *hr_atomic_write(hr_atomic_file *f, const void *data, size_t len);
hr_err *hr_atomic_commit(hr_atomic_file *f);
void hr_atomic_abort(hr_atomic_file *f);

int hr_file_exists(const char *path);
/* Joins dir and name into a new heap string. */
char *hr_path_join(const char *dir, const char *name);
/* Creates a directory (and parents); ok if it exists. */
hr_err *hr_mkdir_p(const char *path);

#endif
