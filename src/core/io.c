/* io.c - default (libc) system call table; see io.h. */
#define _GNU_SOURCE
#include "io.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static int sys_open(const char *path, int flags, int mode) { return open(path, flags, mode); }
static int sys_fallocate(int fd, off_t off, off_t len) { return posix_fallocate(fd, off, len); }

const ingot__io_ops ingot__io_libc = {
    .open = sys_open,
    .write = write,
    .pwrite = pwrite,
    .pread = pread,
    .fsync = fsync,
    .close = close,
    .rename = rename,
    .linkat = linkat,
    .unlink = unlink,
    .fstat = fstat,
    .fallocate = sys_fallocate,
    .mmap = mmap,
    .munmap = munmap,
};

const ingot__io_ops *ingot__io = &ingot__io_libc;

void ingot__io_set(const ingot__io_ops *ops) { ingot__io = ops ? ops : &ingot__io_libc; }
