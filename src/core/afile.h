/*
 * afile.h - crash-safe replacement of a file (RELIABILITY.md §3): temporary beside the target,
 * preallocate, write all (short writes and EINTR looped), fsync, checked close, rename, fsync the
 * directory. The target is never opened for writing.
 *
 * The temporary is unnamed where the file system allows it (Linux O_TMPFILE in the target's
 * directory, linked in through /proc/self/fd when published), so no kill leaves it behind; else
 * it is "<target>.ingot-tmp-<hex>", created with O_EXCL. Every name a temporary has, or is about
 * to get, is listed in a process-wide registry that ingot__afile_unlink_all() (a signal handler's
 * tool) walks without locks.
 */
#ifndef INGOT_AFILE_H
#define INGOT_AFILE_H

#include "deps.h"
#include "ingot/core.h"

typedef struct ingot__tmpname ingot__tmpname;

typedef struct ingot__afile {
    const ingot_allocator *alloc;
    int fd;
    int dir_fd; /* the target's directory, opened at create so commit allocates nothing */
    char *path; /* owned */
    size_t path_len;
    ingot__tmpname *tmp; /* owned: the temporary's name, registered while the name may exist */
    bool unnamed;        /* fd is an O_TMPFILE file: it is named only when published */
    bool do_fsync;
} ingot__afile;

ingot_status ingot__afile_create(ingot__afile *af, const ingot_allocator *a, const char *path,
                                 bool do_fsync, ingot_error *err);
/* Reserves space so a full disk is reported now (errors other than ENOSPC/EFBIG are ignored:
 * some file systems cannot preallocate). */
ingot_status ingot__afile_reserve(ingot__afile *af, uint64_t size, ingot_error *err);
ingot_status ingot__afile_write(ingot__afile *af, const void *buf, size_t n, ingot_error *err);
ingot_status ingot__afile_pwrite(ingot__afile *af, uint64_t off, const void *buf, size_t n,
                                 ingot_error *err);
/* fsync, close, rename over the target, fsync the directory. On failure before the rename the
 * temporary is removed; afterwards the new file is in place and the error is still reported.
 * The afile is finished either way (ingot__afile_abort is then a no-op). */
ingot_status ingot__afile_commit(ingot__afile *af, ingot_error *err);
/* Commits n files as one step: every file is fsynced first, then all are renamed into place in
 * the order given (shards, then the index that names them) with SIGHUP, SIGINT, SIGQUIT and
 * SIGTERM blocked in the calling thread, so such a signal cannot end the process between two
 * renames; then the directories are fsynced. On a failure the files renamed so far stay, the
 * others are removed. Every afile is finished on return. */
ingot_status ingot__afile_commit_all(ingot__afile *const *afs, size_t n, ingot_error *err);
/* Closes and removes the temporary (no-op after commit). */
void ingot__afile_abort(ingot__afile *af);

/* Async-signal-safe and lock-free: unlinks every name in the registry (temporaries of writers
 * of this process that have not been committed or freed). Returns how many were removed. */
size_t ingot__afile_unlink_all(void);

/* Test hook: -1 (default) unnamed temporaries where the file system has them, unless the
 * environment sets INGOT_NO_TMPFILE (to anything but "" or "0"); 0 never; 1 where possible. */
extern int ingot__afile_tmpfile;

/* Name prefix of temporaries: "<target>.ingot-tmp-". */
#define INGOT_TMP_INFIX ".ingot-tmp-"

#endif
