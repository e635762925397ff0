/*
 * afile.h - crash-safe replacement of a file (RELIABILITY.md §3): temporary beside the target with
 * O_EXCL, preallocate, write all (short writes and EINTR looped), fsync, checked close, rename,
 * fsync the directory. The target is never opened for writing.
 */
#ifndef INGOT_AFILE_H
#define INGOT_AFILE_H

#include "deps.h"
#include "ingot/core.h"

typedef struct ingot__afile {
    const ingot_allocator *alloc;
    int fd;
    int dir_fd; /* the target's directory, opened at create so commit allocates nothing */
    char *path, *tmp; /* owned */
    size_t path_len, tmp_len;
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
 * temporary is removed; afterwards the new file is in place and the error is still reported. */
ingot_status ingot__afile_commit(ingot__afile *af, ingot_error *err);
/* Closes and removes the temporary (no-op after commit). */
void ingot__afile_abort(ingot__afile *af);

/* Name prefix of temporaries: "<target>.ingot-tmp-". */
#define INGOT_TMP_INFIX ".ingot-tmp-"

#endif
