/* afile.c - crash-safe file replacement; see afile.h. All system calls go through ingot__io. */
#define _GNU_SOURCE
#include "afile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "io.h"

static ingot_status sys_err(ingot__afile *af, ingot_error *err, const char *what, int e)
{
    ingot_status code = INGOT_IO;
    const char *p = af->path ? af->path : "";
    return ingot__err(err, code, INGOT_NO_OFFSET, p, strlen(p), "%s: %s (errno %d)", what,
                      strerror(e), e);
}

/* Opens the directory holding `path` (for the fsync after rename). */
static int open_dir(const ingot_allocator *a, const char *path, size_t n, int *fd)
{
    size_t cut = n;
    while (cut > 0 && path[cut - 1] != '/') cut--;
    char *dir = cut ? ingot__strndup(a, path, cut) : ingot__strndup(a, ".", 1);
    if (!dir) return ENOMEM;
    int rc = 0;
    do *fd = ingot__io->open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    while (*fd < 0 && errno == EINTR);
    if (*fd < 0) rc = errno;
    ingot__free(a, dir, (cut ? cut : 1) + 1);
    return rc;
}

static atomic_uint counter;

ingot_status ingot__afile_create(ingot__afile *af, const ingot_allocator *a, const char *path,
                                 bool do_fsync, ingot_error *err)
{
    memset(af, 0, sizeof *af);
    af->alloc = a;
    af->fd = -1;
    af->dir_fd = -1;
    af->do_fsync = do_fsync;
    size_t n = strlen(path);
    if (n == 0) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "empty path");
    af->path = ingot__strndup(a, path, n);
    af->path_len = n;
    af->tmp_len = n + sizeof INGOT_TMP_INFIX + 24;
    af->tmp = ingot__alloc(a, af->tmp_len);
    if (!af->path || !af->tmp) {
        ingot__afile_abort(af);
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, path, n, "allocating paths");
    }
    if (do_fsync) {
        int e = open_dir(a, path, n, &af->dir_fd);
        if (e) {
            ingot_status st = e == ENOMEM ? ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, path, n,
                                                       "allocating the directory path")
                                          : sys_err(af, err, "opening the target's directory", e);
            ingot__afile_abort(af);
            return st;
        }
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned long long tag = ((unsigned long long)getpid() << 32) ^
                                 (unsigned long long)ts.tv_nsec ^
                                 ((unsigned long long)atomic_fetch_add(&counter, 1) << 16);
        ingot__fmt(af->tmp, af->tmp_len, "%s%s%llx", path, INGOT_TMP_INFIX, tag);
        af->fd = ingot__io->open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (af->fd >= 0) return INGOT_OK;
        if (errno == EINTR || errno == EEXIST) continue;
        int e = errno;
        ingot_status st = sys_err(af, err, "creating the temporary file", e);
        ingot__free(a, af->tmp, af->tmp_len);
        af->tmp = NULL;
        ingot__afile_abort(af);
        return st;
    }
    ingot__free(a, af->tmp, af->tmp_len);
    af->tmp = NULL;
    ingot__afile_abort(af);
    return ingot__err(err, INGOT_IO, INGOT_NO_OFFSET, path, n, "no free temporary name");
}

ingot_status ingot__afile_reserve(ingot__afile *af, uint64_t size, ingot_error *err)
{
    if (size == 0) return INGOT_OK;
    int e;
    do e = ingot__io->fallocate(af->fd, 0, (off_t)size);
    while (e == EINTR);
    if (e == ENOSPC || e == EFBIG || e == EIO) return sys_err(af, err, "preallocating", e);
    return INGOT_OK;
}

ingot_status ingot__afile_write(ingot__afile *af, const void *buf, size_t n, ingot_error *err)
{
    const uint8_t *p = buf;
    while (n) {
        ssize_t w = ingot__io->write(af->fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return sys_err(af, err, "write", errno);
        }
        if (w == 0) return sys_err(af, err, "write", ENOSPC);
        p += w;
        n -= (size_t)w;
    }
    return INGOT_OK;
}

ingot_status ingot__afile_pwrite(ingot__afile *af, uint64_t off, const void *buf, size_t n,
                                 ingot_error *err)
{
    const uint8_t *p = buf;
    while (n) {
        ssize_t w = ingot__io->pwrite(af->fd, p, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR) continue;
            return sys_err(af, err, "pwrite", errno);
        }
        if (w == 0) return sys_err(af, err, "pwrite", ENOSPC);
        p += w;
        off += (uint64_t)w;
        n -= (size_t)w;
    }
    return INGOT_OK;
}

ingot_status ingot__afile_commit(ingot__afile *af, ingot_error *err)
{
    ingot_status st;
    if (af->do_fsync && ingot__io->fsync(af->fd) != 0) {
        /* fsync failure is final: never retry into "success" (RELIABILITY.md §3). */
        st = sys_err(af, err, "fsync", errno);
        goto fail;
    }
    int fd = af->fd;
    af->fd = -1;
    if (ingot__io->close(fd) != 0 && errno != EINTR) {
        st = sys_err(af, err, "close", errno);
        goto fail;
    }
    if (ingot__io->rename(af->tmp, af->path) != 0) {
        st = sys_err(af, err, "rename", errno);
        goto fail;
    }
    ingot__free(af->alloc, af->tmp, af->tmp_len);
    af->tmp = NULL;
    st = INGOT_OK;
    if (af->do_fsync && ingot__io->fsync(af->dir_fd) != 0)
        st = sys_err(af, err, "fsync of the directory (the new file is in place)", errno);
    ingot__afile_abort(af);
    return st;
fail:
    ingot__afile_abort(af);
    return st;
}

void ingot__afile_abort(ingot__afile *af)
{
    if (af->fd >= 0) ingot__io->close(af->fd);
    af->fd = -1;
    if (af->dir_fd >= 0) ingot__io->close(af->dir_fd);
    af->dir_fd = -1;
    if (af->tmp) {
        ingot__io->unlink(af->tmp);
        ingot__free(af->alloc, af->tmp, af->tmp_len);
        af->tmp = NULL;
    }
    ingot__free(af->alloc, af->path, af->path_len + 1);
    af->path = NULL;
}
