/*
 * io.h - the table of system calls ingot's file code goes through. Tests swap it to fail the Nth
 * call with EIO, ENOSPC, EINTR or a short count (RELIABILITY.md §3, SQLite's test_vfs idea).
 * Process-wide and not thread-safe to swap: a test facility, not an API.
 */
#ifndef INGOT_IO_H
#define INGOT_IO_H

#include <sys/stat.h>
#include <sys/types.h>

typedef struct ingot__io_ops {
    int (*open)(const char *path, int flags, int mode);
    ssize_t (*write)(int fd, const void *buf, size_t n);
    ssize_t (*pwrite)(int fd, const void *buf, size_t n, off_t off);
    ssize_t (*pread)(int fd, void *buf, size_t n, off_t off);
    int (*fsync)(int fd);
    int (*close)(int fd);
    int (*rename)(const char *from, const char *to);
    int (*linkat)(int from_dir, const char *from, int to_dir, const char *to, int flags);
    int (*unlink)(const char *path);
    int (*fstat)(int fd, struct stat *st);
    int (*fallocate)(int fd, off_t off, off_t len); /* returns an errno value, like posix_fallocate */
    void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
    int (*munmap)(void *addr, size_t len);
} ingot__io_ops;

extern const ingot__io_ops ingot__io_libc;
extern const ingot__io_ops *ingot__io;

/* Installs ops (NULL restores libc). */
void ingot__io_set(const ingot__io_ops *ops);

#endif
