/*
 * afile.c - crash-safe file replacement and the registry of temporary names; see afile.h. All
 * file system calls go through ingot__io, except the stat() that checks /proc/self/fd once before
 * the first unnamed temporary (its failure only selects named ones).
 */
#define _GNU_SOURCE
#include "afile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "io.h"

#if defined(__linux__) && defined(O_TMPFILE)
#define HAVE_TMPFILE 1
#else
#define HAVE_TMPFILE 0
#endif

#if ATOMIC_POINTER_LOCK_FREE != 2 || ATOMIC_INT_LOCK_FREE != 2
#error "the registry of temporaries needs lock-free atomics to be async-signal-safe"
#endif

int ingot__afile_tmpfile = -1;

/* ---------------------------------------------------------------------------------------------
 * The registry: a doubly linked list that mutators change under a spin lock and signal handlers
 * walk forwards without one. A name is listed before the file can exist under it and unlisted
 * only once it no longer does (renamed or unlinked), so a handler that unlinks every listed name
 * leaves none of ours behind. Nodes are freed only after reg_remove() has seen no walker.
 * ------------------------------------------------------------------------------------------- */

struct ingot__tmpname {
    ingot__tmpname *_Atomic next; /* walked by signal handlers */
    ingot__tmpname *prev;         /* mutators only, under reg_lock */
    size_t size;                  /* of this allocation */
    bool listed;
    char path[]; /* "<target>.ingot-tmp-<hex>" */
};

static ingot__tmpname *_Atomic reg_head;
static atomic_flag reg_lock = ATOMIC_FLAG_INIT;
static atomic_int reg_walkers;

static void reg_take(void)
{
    while (atomic_flag_test_and_set_explicit(&reg_lock, memory_order_acquire)) {
    }
}

static void reg_drop(void) { atomic_flag_clear_explicit(&reg_lock, memory_order_release); }

/* Lists t, whose path is complete: from here on a handler may unlink that name. */
static void reg_add(ingot__tmpname *t)
{
    reg_take();
    ingot__tmpname *h = atomic_load(&reg_head);
    t->prev = NULL;
    atomic_store(&t->next, h);
    if (h) h->prev = t;
    atomic_store(&reg_head, t);
    reg_drop();
    t->listed = true;
}

/* Unlists t, then waits until no handler can still be looking at it (it may then be renamed or
 * freed). The stores and the load of reg_walkers are sequentially consistent: a walker that
 * started before the unlinking store is counted; one that starts after it cannot reach t. */
static void reg_remove(ingot__tmpname *t)
{
    if (!t || !t->listed) return;
    reg_take();
    ingot__tmpname *n = atomic_load(&t->next);
    if (t->prev) atomic_store(&t->prev->next, n);
    else atomic_store(&reg_head, n);
    if (n) n->prev = t->prev;
    reg_drop();
    t->listed = false;
    while (atomic_load(&reg_walkers) != 0) {
    }
}

size_t ingot__afile_unlink_all(void)
{
    int saved = errno; /* a handler must not change what the interrupted code sees */
    size_t n = 0;
    atomic_fetch_add(&reg_walkers, 1);
    for (ingot__tmpname *t = atomic_load(&reg_head); t; t = atomic_load(&t->next))
        if (ingot__io->unlink(t->path) == 0) n++;
    atomic_fetch_sub(&reg_walkers, 1);
    errno = saved;
    return n;
}

/* ---------------------------------------------------------------------------------------------
 * The atomic file
 * ------------------------------------------------------------------------------------------- */

static ingot_status sys_err(ingot__afile *af, ingot_error *err, const char *what, int e)
{
    const char *p = af->path ? af->path : "";
    return ingot__err(err, INGOT_IO, INGOT_NO_OFFSET, p, strlen(p), "%s: %s (errno %d)", what,
                      strerror(e), e);
}

static atomic_uint counter;

/* Writes a fresh "<target>.ingot-tmp-<hex>" into af->tmp, which must not be listed. */
static void name_tmp(ingot__afile *af)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    unsigned long long tag = ((unsigned long long)getpid() << 32) ^
                             (unsigned long long)ts.tv_nsec ^
                             ((unsigned long long)atomic_fetch_add(&counter, 1) << 16);
    ingot__fmt(af->tmp->path, af->tmp->size - sizeof *af->tmp, "%s%s%llx", af->path,
               INGOT_TMP_INFIX, tag);
}

/* Whether /proc/self/fd/N links work here: 0 not known yet, 1 yes, -1 no. */
static atomic_int proc_fd_ok;

static bool want_unnamed(void)
{
    if (!HAVE_TMPFILE || ingot__afile_tmpfile == 0 || atomic_load(&proc_fd_ok) < 0) return false;
    if (ingot__afile_tmpfile > 0) return true;
    const char *e = getenv("INGOT_NO_TMPFILE");
    return !e || !e[0] || (e[0] == '0' && !e[1]);
}

/* Tries an unnamed temporary in directory `dir`. INGOT_OK with af->fd set, INGOT_OK with
 * af->fd < 0 when the file system (or a missing /proc) rules it out, or an error. */
static ingot_status open_unnamed(ingot__afile *af, const char *dir, ingot_error *err)
{
#if HAVE_TMPFILE
    int fd;
    do fd = ingot__io->open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        /* EOPNOTSUPP: the file system has no O_TMPFILE; EISDIR: the kernel has none (it opened
         * the directory); EINVAL: some file systems say so instead. Other errors are real. */
        int e = errno;
        if (e == EOPNOTSUPP || e == EISDIR || e == EINVAL) return INGOT_OK;
        return sys_err(af, err, "creating the temporary file", e);
    }
    /* Publishing links the file in through /proc/self/fd/N: check once per process that this
     * works (a chroot or container without /proc gets named temporaries instead). */
    if (atomic_load(&proc_fd_ok) == 0) {
        char proc[48];
        struct stat sb;
        ingot__fmt(proc, sizeof proc, "/proc/self/fd/%d", fd);
        bool ok = stat(proc, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_nlink == 0;
        atomic_store(&proc_fd_ok, ok ? 1 : -1);
    }
    if (atomic_load(&proc_fd_ok) < 0) {
        ingot__io->close(fd);
        return INGOT_OK;
    }
    af->fd = fd;
    af->unnamed = true;
#else
    (void)af, (void)dir, (void)err;
#endif
    return INGOT_OK;
}

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
    size_t cut = n;
    while (cut > 0 && path[cut - 1] != '/') cut--;
    size_t dir_len = cut ? cut : 1;
    char *dir = cut ? ingot__strndup(a, path, cut) : ingot__strndup(a, ".", 1);
    size_t tsize = sizeof(ingot__tmpname) + n + sizeof INGOT_TMP_INFIX + 16;
    af->path = ingot__strndup(a, path, n);
    af->path_len = n;
    af->tmp = ingot__calloc(a, tsize);
    if (af->tmp) af->tmp->size = tsize;
    ingot_status st = INGOT_OK;
    if (!dir || !af->path || !af->tmp) {
        st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, path, n, "allocating paths");
        goto done;
    }
    if (do_fsync) {
        do af->dir_fd = ingot__io->open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        while (af->dir_fd < 0 && errno == EINTR);
        if (af->dir_fd < 0) {
            st = sys_err(af, err, "opening the target's directory", errno);
            goto done;
        }
    }
    if (want_unnamed()) {
        st = open_unnamed(af, dir, err);
        if (st != INGOT_OK || af->fd >= 0) goto done;
    }
    for (int attempt = 0; attempt < 100; attempt++) {
        name_tmp(af);
        reg_add(af->tmp); /* listed before it exists: a signal now leaves nothing */
        af->fd = ingot__io->open(af->tmp->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (af->fd >= 0) goto done;
        int e = errno;
        reg_remove(af->tmp);
        if (e == EINTR || e == EEXIST) continue;
        st = sys_err(af, err, "creating the temporary file", e);
        goto done;
    }
    st = ingot__err(err, INGOT_IO, INGOT_NO_OFFSET, path, n, "no free temporary name");
done:
    if (dir) ingot__free(a, dir, dir_len + 1);
    if (st != INGOT_OK) ingot__afile_abort(af);
    return st;
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

/* Closes af->fd, checked (Linux releases the descriptor even when close reports an error, and
 * EINTR from close means it is closed). */
static int close_fd(ingot__afile *af)
{
    int fd = af->fd;
    af->fd = -1;
    return ingot__io->close(fd) != 0 && errno != EINTR ? errno : 0;
}

/* Commit, step 1: the data is made durable; a named temporary is also closed. */
static ingot_status prepare(ingot__afile *af, ingot_error *err)
{
    /* fsync failure is final: never retry into "success" (RELIABILITY.md §3). */
    if (af->do_fsync && ingot__io->fsync(af->fd) != 0) return sys_err(af, err, "fsync", errno);
    if (!af->unnamed) {
        int e = close_fd(af);
        if (e) return sys_err(af, err, "close", e);
    }
    return INGOT_OK;
}

#if HAVE_TMPFILE
static int link_fd(const char *proc, const char *to)
{
    int r;
    do r = ingot__io->linkat(AT_FDCWD, proc, AT_FDCWD, to, AT_SYMLINK_FOLLOW);
    while (r != 0 && errno == EINTR);
    return r == 0 ? 0 : errno;
}
#endif

/* Commit, step 2: the file takes the target's name. *placed tells whether it did (an error can
 * come after that). */
static ingot_status publish(ingot__afile *af, bool *placed, ingot_error *err)
{
    *placed = false;
    ingot__tmpname *t = af->tmp;
    if (!af->unnamed) {
        if (ingot__io->rename(t->path, af->path) != 0) return sys_err(af, err, "rename", errno);
        *placed = true;
        reg_remove(t); /* the name is gone */
        return INGOT_OK;
    }
#if HAVE_TMPFILE
    char proc[48];
    ingot__fmt(proc, sizeof proc, "/proc/self/fd/%d", af->fd);
    /* A target that does not exist yet is linked in directly: the file never has another name. */
    int e = link_fd(proc, af->path);
    if (e == 0) {
        *placed = true;
        e = close_fd(af);
        return e ? sys_err(af, err, "close (the new file is in place)", e) : INGOT_OK;
    }
    if (e != EEXIST) return sys_err(af, err, "linking the new file into place", e);
    /* linkat never replaces: link to a fresh name beside the target, then rename that over it.
     * A kill -9 between the two leaves that name, holding the complete new file. */
    for (int attempt = 0;; attempt++) {
        if (attempt == 100)
            return ingot__err(err, INGOT_IO, INGOT_NO_OFFSET, af->path, af->path_len,
                              "no free temporary name");
        name_tmp(af);
        reg_add(t);
        e = link_fd(proc, t->path);
        if (e == 0) break;
        reg_remove(t);
        if (e != EEXIST) return sys_err(af, err, "linking the temporary file", e);
    }
    e = close_fd(af);
    if (e) return sys_err(af, err, "close", e); /* abort unlinks the listed name */
    if (ingot__io->rename(t->path, af->path) != 0) return sys_err(af, err, "rename", errno);
    *placed = true;
    reg_remove(t);
    return INGOT_OK;
#else
    return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "unnamed temporary unsupported");
#endif
}

ingot_status ingot__afile_commit_all(ingot__afile *const *afs, size_t n, ingot_error *err)
{
    ingot_status st = INGOT_OK;
    for (size_t k = 0; k < n && st == INGOT_OK; k++) st = prepare(afs[k], err);
    size_t placed = 0;
    if (st == INGOT_OK) {
        /* No termination signal between the first rename and the last: the caller's handler
         * (or the default action) runs once every file is in place. */
        sigset_t block, old;
        sigemptyset(&block);
        sigaddset(&block, SIGHUP);
        sigaddset(&block, SIGINT);
        sigaddset(&block, SIGQUIT);
        sigaddset(&block, SIGTERM);
        bool masked = pthread_sigmask(SIG_BLOCK, &block, &old) == 0;
        for (size_t k = 0; k < n && st == INGOT_OK; k++) {
            bool in_place;
            st = publish(afs[k], &in_place, err);
            if (in_place) placed = k + 1;
        }
        if (masked) pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    /* Make the new directory entries durable, also those renamed before a failure. */
    for (size_t k = 0; k < placed; k++) {
        ingot__afile *af = afs[k];
        if (af->do_fsync && ingot__io->fsync(af->dir_fd) != 0 && st == INGOT_OK)
            st = sys_err(af, err, "fsync of the directory (the new file is in place)", errno);
    }
    for (size_t k = 0; k < n; k++) ingot__afile_abort(afs[k]);
    return st;
}

ingot_status ingot__afile_commit(ingot__afile *af, ingot_error *err)
{
    return ingot__afile_commit_all(&af, 1, err);
}

void ingot__afile_abort(ingot__afile *af)
{
    if (af->fd >= 0) ingot__io->close(af->fd); /* an unnamed temporary vanishes here */
    af->fd = -1;
    if (af->dir_fd >= 0) ingot__io->close(af->dir_fd);
    af->dir_fd = -1;
    if (af->tmp) {
        if (af->tmp->listed) {
            ingot__io->unlink(af->tmp->path);
            reg_remove(af->tmp);
        }
        ingot__free(af->alloc, af->tmp, af->tmp->size);
        af->tmp = NULL;
    }
    ingot__free(af->alloc, af->path, af->path_len + 1);
    af->path = NULL;
    af->unnamed = false;
}
