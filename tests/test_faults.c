/*
 * test_faults.c - fault injection for the writer and for opening files (RELIABILITY.md §3).
 *
 *   I/O loop:   the syscall table (ingot__io_set) is wrapped; call N fails with EIO, ENOSPC, EINTR
 *               (once) or returns a short count, for N = 1.. until a run no longer reaches N.
 *               Writer: success and the target is the complete new file, or INGOT_IO and the
 *               target is byte-identical to the old file. The one exception, by design: a failure
 *               of the directory fsync (or of opening the directory for it) happens after the
 *               rename, so the new file is in place and INGOT_IO is still returned. Always: no
 *               temporary left, no descriptor leaked. The writer loops run twice: with an
 *               unnamed temporary (O_TMPFILE, linkat at commit) and with a named one.
 *               Opening (mmap and pread mode): a clean INGOT_IO or success, no descriptor or
 *               mapping leaked.
 *               unlink and munmap (cleanup paths) are counted but never failed.
 *   OOM loop:   allocation N fails (once, or N and every later one) while writing and while
 *               opening/verifying/reading: INGOT_NOMEM, no leak, sizes passed to free() match,
 *               old target intact, library usable afterwards.
 *   Real limits: RLIMIT_FSIZE with SIGXFSZ ignored (EFBIG, short writes); a 64 KiB tmpfs when
 *               running as root and mount(2) is allowed (skipped with a message otherwise).
 * Figures (iterations per kind) are printed on stderr.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "test_faults_common.h"
#include "afile.h"
#include "file.h"
#include "io.h"
#include "writer_impl.h"

/* ---------------------------------------------------------------------------------------------
 * The fault-injecting syscall table
 * ------------------------------------------------------------------------------------------- */

enum { K_EIO, K_ENOSPC, K_EINTR, K_SHORT, K_NONE, N_KINDS };
static const char *const kind_names[] = {"EIO", "ENOSPC", "EINTR", "short", "none"};

enum {
    OP_OPEN, OP_WRITE, OP_PWRITE, OP_PREAD, OP_FSYNC, OP_CLOSE, OP_RENAME, OP_UNLINK, OP_FSTAT,
    OP_FALLOCATE, OP_MMAP, OP_MUNMAP, OP_LINKAT, N_OPS
};
static const char *const op_names[] = {"open",  "write",  "pwrite", "pread",     "fsync",
                                       "close", "rename", "unlink", "fstat",     "fallocate",
                                       "mmap",  "munmap", "linkat"};

static struct {
    int kind;
    long fault_at;        /* 1-based index among eligible calls; 0 never */
    bool short_always;    /* every eligible read/write is cut to a third */
    long calls;           /* eligible calls seen */
    bool fired;
    int fired_op;
    int fired_open_flags;
    bool renamed;            /* a rename succeeded */
    bool fired_after_rename; /* the fault hit after a successful rename */
    long short_cuts;
} fi;

static void fi_arm(int kind, long fault_at)
{
    memset(&fi, 0, sizeof fi);
    fi.kind = kind;
    fi.fault_at = fault_at;
    fi.fired_op = -1;
}

static int fi_errno(void)
{
    return fi.kind == K_EIO ? EIO : fi.kind == K_ENOSPC ? ENOSPC : EINTR;
}

/* Is this call the one to fail? Short counts only apply to reads and writes of 2+ bytes; cleanup
 * calls (unlink, munmap) are never failed. */
static bool fi_hit(int op, size_t n)
{
    if (op == OP_UNLINK || op == OP_MUNMAP || fi.kind == K_NONE) return false;
    bool rw = op == OP_WRITE || op == OP_PWRITE || op == OP_PREAD;
    if (fi.kind == K_SHORT && !(rw && n > 1)) return false;
    fi.calls++;
    if (fi.fired || fi.calls != fi.fault_at) return false;
    fi.fired = true;
    fi.fired_op = op;
    fi.fired_after_rename = fi.renamed;
    return true;
}

static size_t fi_cut(int op, size_t n)
{
    if (fi.short_always && n > 1) {
        fi.short_cuts++;
        return n / 3 ? n / 3 : 1;
    }
    if (fi.kind == K_SHORT && fi_hit(op, n)) {
        fi.short_cuts++;
        return n / 2;
    }
    return n;
}

static int w_open(const char *p, int flags, int mode)
{
    if (fi.kind != K_SHORT && fi_hit(OP_OPEN, 0)) {
        fi.fired_open_flags = flags;
        errno = fi_errno();
        return -1;
    }
    return ingot__io_libc.open(p, flags, mode);
}

static ssize_t w_write(int fd, const void *b, size_t n)
{
    if (fi.kind == K_SHORT || fi.short_always) return ingot__io_libc.write(fd, b, fi_cut(OP_WRITE, n));
    if (fi_hit(OP_WRITE, n)) {
        errno = fi_errno();
        return -1;
    }
    return ingot__io_libc.write(fd, b, n);
}

static ssize_t w_pwrite(int fd, const void *b, size_t n, off_t off)
{
    if (fi.kind == K_SHORT || fi.short_always)
        return ingot__io_libc.pwrite(fd, b, fi_cut(OP_PWRITE, n), off);
    if (fi_hit(OP_PWRITE, n)) {
        errno = fi_errno();
        return -1;
    }
    return ingot__io_libc.pwrite(fd, b, n, off);
}

static ssize_t w_pread(int fd, void *b, size_t n, off_t off)
{
    if (fi.kind == K_SHORT || fi.short_always)
        return ingot__io_libc.pread(fd, b, fi_cut(OP_PREAD, n), off);
    if (fi_hit(OP_PREAD, n)) {
        errno = fi_errno();
        return -1;
    }
    return ingot__io_libc.pread(fd, b, n, off);
}

static int w_fsync(int fd)
{
    if (fi_hit(OP_FSYNC, 0)) {
        errno = fi_errno();
        return -1;
    }
    return ingot__io_libc.fsync(fd);
}

/* Linux releases the descriptor even when close() reports an error: model exactly that. */
static int w_close(int fd)
{
    if (fi_hit(OP_CLOSE, 0)) {
        ingot__io_libc.close(fd);
        errno = fi_errno();
        return -1;
    }
    return ingot__io_libc.close(fd);
}

static int w_rename(const char *a, const char *b)
{
    if (fi_hit(OP_RENAME, 0)) {
        errno = fi_errno();
        return -1;
    }
    int r = ingot__io_libc.rename(a, b);
    if (r == 0) fi.renamed = true;
    return r;
}

static int w_linkat(int fd, const char *a, int nfd, const char *b, int flags)
{
    if (fi_hit(OP_LINKAT, 0)) {
        errno = fi_errno();
        return -1;
    }
    return ingot__io_libc.linkat(fd, a, nfd, b, flags);
}

static int w_unlink(const char *p)
{
    fi_hit(OP_UNLINK, 0);
    return ingot__io_libc.unlink(p);
}

static int w_fstat(int fd, struct stat *st)
{
    if (fi_hit(OP_FSTAT, 0)) {
        errno = fi_errno();
        return -1;
    }
    return ingot__io_libc.fstat(fd, st);
}

static int w_fallocate(int fd, off_t off, off_t len)
{
    if (fi_hit(OP_FALLOCATE, 0)) return fi_errno();
    return ingot__io_libc.fallocate(fd, off, len);
}

static void *w_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
    if (fi_hit(OP_MMAP, 0)) {
        errno = fi_errno();
        return MAP_FAILED;
    }
    return ingot__io_libc.mmap(a, n, prot, flags, fd, off);
}

static int w_munmap(void *a, size_t n)
{
    fi_hit(OP_MUNMAP, 0);
    return ingot__io_libc.munmap(a, n);
}

static const ingot__io_ops fault_ops = {
    .open = w_open, .write = w_write, .pwrite = w_pwrite, .pread = w_pread, .fsync = w_fsync,
    .close = w_close, .rename = w_rename, .linkat = w_linkat, .unlink = w_unlink,
    .fstat = w_fstat, .fallocate = w_fallocate, .mmap = w_mmap, .munmap = w_munmap,
};

/* Failure detail for the loops. */
static long ctx_n;
static int ctx_kind;
static ingot_status ctx_st;
#undef CHECK
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            FAIL_AT("%s [kind %s, N=%ld, op %s, status %s]", #c, kind_names[ctx_kind], ctx_n,      \
                    fi.fired_op >= 0 ? op_names[fi.fired_op] : "-", ingot_status_name(ctx_st));   \
    } while (0)

/* ---------------------------------------------------------------------------------------------
 * Models: the old target and the new content saved over it
 * ------------------------------------------------------------------------------------------- */

static model old_m, new_m;

static void models_init(void)
{
    if (new_m.n) return;
    old_m = (model){.tag = "old", .n = 2, .push_chunk = 1000};
    old_m.t[0] = (model_tensor){"a", INGOT_DTYPE_F32, 2, {16, 33}, false};
    old_m.t[1] = (model_tensor){"b", INGOT_DTYPE_U8, 1, {3000}, true};
    model_fill(&old_m, 1);
    model_build_image(&old_m);

    new_m = (model){.tag = "new-content", .n = 6, .push_chunk = 3000};
    new_m.t[0] = (model_tensor){"emb.weight", INGOT_DTYPE_F32, 2, {64, 64}, false};
    new_m.t[1] = (model_tensor){"l0.pushed", INGOT_DTYPE_U8, 1, {10000}, true};
    new_m.t[2] = (model_tensor){"l0.empty", INGOT_DTYPE_F16, 1, {0}, true};
    new_m.t[3] = (model_tensor){"l1.bf16", INGOT_DTYPE_BF16, 2, {3, 1000}, false};
    new_m.t[4] = (model_tensor){"l1.pushed", INGOT_DTYPE_I64, 1, {1500}, true};
    new_m.t[5] = (model_tensor){"scalar", INGOT_DTYPE_I32, 0, {0}, false};
    model_fill(&new_m, 2);
    model_build_image(&new_m);
}

static char dir[256], target[512];

static void scratch_cleanup(void)
{
    if (dir[0]) remove_scratch(dir);
    dir[0] = '\0';
}

static void scratch_init(void)
{
    if (dir[0]) return;
    make_scratch(dir, sizeof dir, "faults");
    atexit(scratch_cleanup); /* also when a filter skips the last test */
    snprintf(target, sizeof target, "%s/model.ingot", dir);
}

static int restore_old(void) { return put_file(target, old_m.image, old_m.image_len); }

/* ---------------------------------------------------------------------------------------------
 * I/O loop: the writer
 * ------------------------------------------------------------------------------------------- */

static bool eintr_may_fail(int op, int open_flags)
{
    /* fsync failure is final (never retried into success); rename and fstat do not return EINTR
     * on Linux and are not retried. Everything else (every open included) must be. */
    (void)open_flags;
    return op == OP_FSYNC || op == OP_RENAME || op == OP_FSTAT;
}

static long io_loop_writer_iters[N_KINDS];
static long op_fail[N_KINDS][N_OPS], op_pass[N_KINDS][N_OPS]; /* faulted runs by outcome */
static long io_loop_after_rename;

/* unnamed: an O_TMPFILE temporary (linked in at commit) or a named one (the fallback). */
static void writer_io_loop(int kind, bool unnamed)
{
    models_init();
    scratch_init();
    unnamed = unnamed && unnamed_tmp_works(dir);
    int saved_mode = ingot__afile_tmpfile;
    ingot__afile_tmpfile = unnamed;
    memset(op_fail[kind], 0, sizeof op_fail[kind]);
    memset(op_pass[kind], 0, sizeof op_pass[kind]);
    size_t saved_chunk = ingot__write_chunk;
    ingot__write_chunk = 4096;
    ASSERT_EQ(restore_old(), 0);
    long n;
    for (n = 1;; n++) {
        ctx_n = n;
        ctx_kind = kind;
        int fds0 = count_fds();
        ingot_error e;
        memset(&e, 0, sizeof e);
        fi_arm(kind, n);
        ingot__io_set(&fault_ops);
        ingot_status st = model_save(&new_m, target, NULL, &e);
        ingot__io_set(NULL);
        ctx_st = st;
        CHECK(count_fds() == fds0);
        CHECK(count_tmps(dir, false) == 0);
        if (st == INGOT_OK) {
            CHECK(file_equals(target, new_m.image, new_m.image_len));
            ingot_file *f;
            CHECK(ingot_file_open(target, NULL, &f, NULL) == INGOT_OK);
            CHECK(ingot_file_verify(f, 1, NULL) == INGOT_OK);
            int bad = model_check_open(&new_m, f);
            ingot_file_close(f);
            CHECK(bad == 0);
            if (fi.fired) {
                /* success despite the fault: only where the fault is absorbed by design */
                CHECK(kind == K_SHORT || kind == K_EINTR || fi.fired_op == OP_CLOSE);
                if (fi.fired_op == OP_CLOSE && kind != K_EINTR && kind != K_SHORT)
                    CHECK(fi.fired_after_rename); /* only the directory's close is unchecked */
            }
        } else {
            CHECK(fi.fired);
            CHECK(st == INGOT_IO);
            CHECK(e.code == INGOT_IO && e.msg[0] != '\0');
            CHECK(kind != K_SHORT);
            if (kind == K_EINTR) CHECK(eintr_may_fail(fi.fired_op, fi.fired_open_flags));
            if (fi.fired_after_rename) {
                /* the directory fsync (or the open of the directory for it) failed: the new file
                 * is in place and the failure is reported */
                CHECK(fi.fired_op == OP_FSYNC || fi.fired_op == OP_OPEN);
                CHECK(file_equals(target, new_m.image, new_m.image_len));
                io_loop_after_rename++;
            } else {
                CHECK(file_equals(target, old_m.image, old_m.image_len));
            }
        }
        if (!fi.fired) break;
        if (st == INGOT_OK) op_pass[kind][fi.fired_op]++;
        else op_fail[kind][fi.fired_op]++;
        CHECK(restore_old() == 0);
    }
    ingot__write_chunk = saved_chunk;
    ingot__afile_tmpfile = saved_mode;
    io_loop_writer_iters[kind] += n;
    char table[512];
    size_t at = 0;
    for (int op = 0; op < N_OPS; op++)
        if (op_pass[kind][op] + op_fail[kind][op])
            at += (size_t)snprintf(table + at, sizeof table - at, " %s %ld/%ld", op_names[op],
                                   op_fail[kind][op], op_pass[kind][op] + op_fail[kind][op]);
    fprintf(stderr, "  I/O loop writer %-6s, %s temporary: %ld runs (%ld faulted; errors/faults "
                    "by call:%s)\n",
            kind_names[kind], unnamed ? "unnamed" : "named", n, n - 1, table);
    /* the commit of an unnamed temporary links it (short counts hit reads and writes only) */
    long linkat_faults = op_pass[kind][OP_LINKAT] + op_fail[kind][OP_LINKAT];
    if (unnamed && kind != K_SHORT) CHECK(linkat_faults == 2); /* to the target, to a name */
    else CHECK(linkat_faults == 0);
}

TEST(test_io_loop_writer_eio) { writer_io_loop(K_EIO, false); writer_io_loop(K_EIO, true); }
TEST(test_io_loop_writer_enospc)
{
    writer_io_loop(K_ENOSPC, false);
    writer_io_loop(K_ENOSPC, true);
}
TEST(test_io_loop_writer_eintr) { writer_io_loop(K_EINTR, false); writer_io_loop(K_EINTR, true); }
TEST(test_io_loop_writer_short) { writer_io_loop(K_SHORT, false); writer_io_loop(K_SHORT, true); }

/* Every write and pwrite is cut to a third of what was asked: the writer must loop to success. */
TEST(test_io_writer_all_writes_short)
{
    models_init();
    scratch_init();
    size_t saved_chunk = ingot__write_chunk;
    ingot__write_chunk = 4096;
    ASSERT_EQ(restore_old(), 0);
    fi_arm(K_NONE, 0);
    fi.short_always = true;
    ingot__io_set(&fault_ops);
    ingot_error e;
    ingot_status st = model_save(&new_m, target, NULL, &e);
    ingot__io_set(NULL);
    ingot__write_chunk = saved_chunk;
    ASSERT_OK(st);
    ASSERT_TRUE(fi.short_cuts > 20);
    ASSERT_TRUE(file_equals(target, new_m.image, new_m.image_len));
    ASSERT_EQ(count_tmps(dir, false), 0);
}

/* A writer freed before commit (at every point of the stream) removes its temporary and leaves the
 * target alone; an unnamed temporary is never seen in the directory. */
TEST(test_abandoned_writer)
{
    models_init();
    scratch_init();
    ASSERT_EQ(restore_old(), 0);
    int fds0 = count_fds();
    int saved_mode = ingot__afile_tmpfile;
    bool have_unnamed = unnamed_tmp_works(dir);
    for (int stop = 0; stop < 8; stop++) {
        bool unnamed = stop >= 4 && have_unnamed;
        ingot__afile_tmpfile = unnamed;
        ingot_writer *w;
        ingot_error e;
        ASSERT_OK(ingot_writer_new(NULL, &w, &e));
        ASSERT_OK(model_describe(&new_m, w, &e));
        if (stop % 4 >= 1) ASSERT_OK(ingot_writer_begin(w, target, &e));
        if (stop % 4 >= 1) ASSERT_EQ(count_tmps(dir, false), unnamed ? 0 : 1);
        if (stop % 4 >= 2) ASSERT_OK(ingot_writer_write(w, new_m.data[1], 5000, &e));
        if (stop % 4 >= 3) {
            /* commit before every byte was pushed: MISUSE, and the writer is finished */
            ASSERT_ST(ingot_writer_commit(w, &e), INGOT_MISUSE);
            ASSERT_EQ(count_tmps(dir, false), 0);
        }
        ingot_writer_free(w);
        ASSERT_EQ(count_tmps(dir, false), 0);
        ASSERT_TRUE(file_equals(target, old_m.image, old_m.image_len));
    }
    ingot__afile_tmpfile = saved_mode;
    ASSERT_EQ(count_fds(), fds0);
}

/* ---------------------------------------------------------------------------------------------
 * I/O loop: opening (mmap and pread mode), verifying and reading
 * ------------------------------------------------------------------------------------------- */

static long io_loop_open_iters[2][N_KINDS];
static long open_fail[N_OPS], open_faults[N_OPS];

static void open_io_loop(ingot_io_mode mode, int kind)
{
    models_init();
    scratch_init();
    ASSERT_OK(model_save(&new_m, target, NULL, NULL));
    long n;
    memset(open_fail, 0, sizeof open_fail);
    memset(open_faults, 0, sizeof open_faults);
    for (n = 1;; n++) {
        ctx_n = n;
        ctx_kind = kind;
        int fds0 = count_fds();
        ingot_open_opts o = {.io = mode};
        ingot_file *f = (ingot_file *)&o; /* must be reset to NULL on failure */
        ingot_error e;
        fi_arm(kind, n);
        ingot__io_set(&fault_ops);
        ingot_status st_open = ingot_file_open(target, &o, &f, &e);
        ingot_status st_verify = INGOT_OK, st_read = INGOT_OK;
        bool data_ok = true, mapped = false;
        if (st_open == INGOT_OK) {
            st_verify = ingot_file_verify(f, 1, NULL);
            for (size_t i = 0; i < new_m.n && st_read == INGOT_OK; i++) {
                uint8_t *buf = malloc(new_m.nbytes[i] + 1);
                st_read = ingot_file_tensor_read(f, i, 0, buf, new_m.nbytes[i], NULL);
                if (st_read == INGOT_OK && memcmp(buf, new_m.data[i], new_m.nbytes[i]) != 0)
                    data_ok = false;
                free(buf);
                ingot_tensor_info t;
                if (ingot_file_tensor_at(f, i, &t) != INGOT_OK) data_ok = false;
                if (t.data) {
                    mapped = true;
                    if (memcmp(t.data, new_m.data[i], new_m.nbytes[i]) != 0) data_ok = false;
                } else if (!(t.flags & INGOT_TENSOR_NOT_MAPPED)) {
                    data_ok = false;
                }
            }
            ingot_file_close(f);
        }
        ingot__io_set(NULL);
        ctx_st = st_open != INGOT_OK ? st_open : st_verify != INGOT_OK ? st_verify : st_read;
        CHECK(count_fds() == fds0);
        CHECK(count_maps_of(target) == 0);
        CHECK(data_ok);
        CHECK(st_open == INGOT_OK || st_open == INGOT_IO);
        CHECK(st_verify == INGOT_OK || st_verify == INGOT_IO);
        CHECK(st_read == INGOT_OK || st_read == INGOT_IO);
        if (st_open != INGOT_OK) {
            CHECK(f == NULL);
            CHECK(e.code == INGOT_IO);
        }
        if (!fi.fired) {
            CHECK(ctx_st == INGOT_OK);
            CHECK(mapped == (mode == INGOT_IO_MMAP));
            break;
        }
        int op = fi.fired_op;
        open_faults[op]++;
        if (ctx_st != INGOT_OK) open_fail[op]++;
        bool must_succeed = kind == K_SHORT || op == OP_MMAP || op == OP_CLOSE ||
                            (kind == K_EINTR && (op == OP_PREAD || op == OP_OPEN));
        if (must_succeed) CHECK(ctx_st == INGOT_OK);
        if (op == OP_MMAP) CHECK(!mapped); /* fell back to pread */
        if ((op == OP_OPEN && kind != K_EINTR) || op == OP_FSTAT) CHECK(st_open == INGOT_IO);
        /* one failing call fails at most one step */
        CHECK((st_open != INGOT_OK) + (st_verify != INGOT_OK) + (st_read != INGOT_OK) <= 1);
    }
    io_loop_open_iters[mode][kind] = n;
    char table[512];
    size_t at = 0;
    table[0] = '\0';
    for (int op = 0; op < N_OPS; op++)
        if (open_faults[op])
            at += (size_t)snprintf(table + at, sizeof table - at, " %s %ld/%ld", op_names[op],
                                   open_fail[op], open_faults[op]);
    fprintf(stderr, "  I/O loop open %-5s %-6s: %ld runs (%ld faulted; errors/faults by call:%s)\n",
            mode == INGOT_IO_MMAP ? "mmap" : "pread", kind_names[kind], n, n - 1, table);
}

TEST(test_io_loop_open)
{
    for (int mode = 0; mode < 2; mode++)
        for (int kind = K_EIO; kind <= K_SHORT; kind++) {
            int before = harness_failed;
            open_io_loop((ingot_io_mode)mode, kind);
            if (harness_failed != before) return;
        }
}

TEST(test_io_open_all_reads_short)
{
    models_init();
    scratch_init();
    ASSERT_OK(model_save(&new_m, target, NULL, NULL));
    ingot_open_opts o = {.io = INGOT_IO_PREAD, .verify = INGOT_VERIFY_ALL, .threads = 2};
    fi_arm(K_NONE, 0);
    fi.short_always = true;
    ingot__io_set(&fault_ops);
    ingot_file *f;
    ingot_status st = ingot_file_open(target, &o, &f, NULL);
    int bad = -1;
    if (st == INGOT_OK) {
        bad = model_check_open(&new_m, f);
        ingot_file_close(f);
    }
    ingot__io_set(NULL);
    ASSERT_OK(st);
    ASSERT_EQ(bad, 0);
    ASSERT_TRUE(fi.short_cuts > 5);
}

TEST(test_open_not_regular)
{
    ingot_file *f;
    ingot_error e;
    ASSERT_ST(ingot_file_open("/dev/null", NULL, &f, &e), INGOT_IO);
    ASSERT_TRUE(f == NULL);
    ASSERT_ST(ingot_file_open("/", NULL, &f, &e), INGOT_IO);
    ASSERT_TRUE(f == NULL);
}

/* ---------------------------------------------------------------------------------------------
 * OOM loop
 * ------------------------------------------------------------------------------------------- */

static long oom_write_iters[2], oom_open_iters[2];

static void oom_writer_loop(bool persistent)
{
    models_init();
    scratch_init();
    talloc ta;
    talloc_init(&ta);
    ingot_allocator al = talloc_allocator(&ta);
    ingot_writer_opts wo = {.allocator = &al};
    size_t saved_chunk = ingot__write_chunk;
    ingot__write_chunk = 4096;
    ASSERT_EQ(restore_old(), 0);
    long n;
    long after_rename = 0;
    ingot_status after_rename_st = INGOT_OK;
    for (n = 1;; n++) {
        ctx_n = n;
        ctx_kind = K_NONE;
        int fds0 = count_fds();
        ingot_error e;
        talloc_arm(&ta, n, persistent);
        fi_arm(K_NONE, 0); /* pass-through table: records whether the rename happened */
        ingot__io_set(&fault_ops);
        ingot_status st = model_save(&new_m, target, &wo, &e);
        ingot__io_set(NULL);
        ctx_st = st;
        CHECK(ta.live_blocks == 0 && ta.live_bytes == 0);
        CHECK(ta.bad_frees == 0 && ta.bad_align == 0);
        CHECK(count_fds() == fds0);
        CHECK(count_tmps(dir, false) == 0);
        if (!ta.fired) {
            CHECK(st == INGOT_OK);
            CHECK(file_equals(target, new_m.image, new_m.image_len));
            break;
        }
        CHECK(st != INGOT_OK);
        if (fi.renamed) {
            /* the only allocation after the rename is the directory path for its fsync */
            CHECK(st == INGOT_NOMEM || st == INGOT_IO);
            CHECK(file_equals(target, new_m.image, new_m.image_len));
            after_rename++;
            after_rename_st = st;
        } else {
            CHECK(st == INGOT_NOMEM);
            CHECK(file_equals(target, old_m.image, old_m.image_len));
        }
        /* still usable: the same save with the same allocator, no failure */
        talloc_arm(&ta, 0, false);
        CHECK(model_save(&new_m, target, &wo, NULL) == INGOT_OK);
        CHECK(file_equals(target, new_m.image, new_m.image_len));
        CHECK(ta.live_blocks == 0 && ta.bad_frees == 0);
        CHECK(restore_old() == 0);
    }
    ingot__write_chunk = saved_chunk;
    talloc_destroy(&ta);
    ASSERT_TRUE(n > 20); /* every allocation of a save goes through the hook */
    oom_write_iters[persistent] = n;
    fprintf(stderr, "  OOM loop writer %-10s: %ld runs (%ld failed an allocation, %ld of them "
                    "after the rename, reported as %s)\n",
            persistent ? "persistent" : "once", n, n - 1, after_rename,
            ingot_status_name(after_rename_st));
}

TEST(test_oom_loop_writer_once) { oom_writer_loop(false); }
TEST(test_oom_loop_writer_persistent) { oom_writer_loop(true); }

/* One step of the open loop: OK, or NOMEM caused by the injected failure; once-only failures are
 * retried and must then succeed. Returns false (after failing the test) on a violation. */
static bool oom_step(talloc *ta, bool persistent, ingot_status st, const char *what,
                     ingot_status (*retry)(const ingot_file *, void *), const ingot_file *f,
                     void *arg)
{
    if (st == INGOT_OK) return true;
    if (st != INGOT_NOMEM || !ta->fired) {
        fprintf(stderr, "  FAIL %s: %s returned %s (allocation %ld %s)\n", harness_current, what,
                ingot_status_name(st), ctx_n, ta->fired ? "failed" : "not reached");
        harness_failed++;
        return false;
    }
    if (!persistent && retry) {
        ingot_status again = retry(f, arg);
        if (again != INGOT_OK) {
            fprintf(stderr, "  FAIL %s: %s retry after a once-only failure returned %s\n",
                    harness_current, what, ingot_status_name(again));
            harness_failed++;
            return false;
        }
    }
    return true;
}

static ingot_status do_verify(const ingot_file *f, void *arg)
{
    return ingot_file_verify(f, (uint32_t)(uintptr_t)arg, NULL);
}

static ingot_status do_tensor_verify(const ingot_file *f, void *arg)
{
    return ingot_file_tensor_verify(f, (uint64_t)(uintptr_t)arg, NULL);
}

/* Metadata getters and data reads: none of them allocates. */
static ingot_status do_getters(const ingot_file *f, void *arg)
{
    (void)arg;
    if (model_check_open(&new_m, f) != 0) return INGOT_BAD_METADATA;
    double d;
    uint64_t cnt;
    int32_t dims[5];
    const char *s;
    size_t sl;
    ingot_meta_info mi;
    if (ingot_file_meta_get_f64(f, "train.lr", &d) != INGOT_OK || d != 0.00025)
        return INGOT_BAD_METADATA;
    if (ingot_file_meta_get_array(f, "model.dims", INGOT_META_I32, &cnt) != INGOT_OK || cnt != 5)
        return INGOT_BAD_METADATA;
    if (ingot_file_meta_find(f, "model.dims", &mi) != INGOT_OK ||
        ingot_file_meta_array_read(f, mi.index, INGOT_META_I32, 0, 5, dims) != INGOT_OK ||
        dims[3] != 1 << 20)
        return INGOT_BAD_METADATA;
    if (ingot_file_meta_find(f, "tok.vocab", &mi) != INGOT_OK ||
        ingot_file_meta_array_string(f, mi.index, 1, &s, &sl) != INGOT_OK || sl != 4 ||
        memcmp(s, "</s>", 4) != 0)
        return INGOT_BAD_METADATA;
    const void *p;
    if (ingot_file_meta_get_bytes(f, "blob", &p, &sl) != INGOT_OK || sl != 6) return INGOT_BAD_METADATA;
    bool b;
    if (ingot_file_meta_get_bool(f, "flag", &b) != INGOT_OK || !b) return INGOT_BAD_METADATA;
    return INGOT_OK;
}

enum { SRC_MMAP, SRC_PREAD, SRC_BUFFER };

static void oom_open_loop(int src, ingot_verify_mode vm, bool persistent, long *iters)
{
    models_init();
    scratch_init();
    ASSERT_OK(model_save(&new_m, target, NULL, NULL));
    talloc ta;
    talloc_init(&ta);
    ingot_allocator al = talloc_allocator(&ta);
    size_t saved_vchunk = ingot__verify_chunk;
    ingot__verify_chunk = 8192; /* several chunks per tensor: 2 threads really share the work */
    long n;
    for (n = 1;; n++) {
        ctx_n = n;
        ctx_kind = K_NONE;
        int fds0 = count_fds();
        talloc_arm(&ta, n, persistent);
        ingot_open_opts o = {.io = src == SRC_PREAD ? INGOT_IO_PREAD : INGOT_IO_MMAP,
                             .verify = vm, .allocator = &al, .threads = 2};
        ingot_file *f = NULL;
        ingot_error e;
        ingot_status st = src == SRC_BUFFER
                              ? ingot_file_open_buffer(new_m.image, new_m.image_len, &o, &f, &e)
                              : ingot_file_open(target, &o, &f, &e);
        ctx_st = st;
        bool ok = true;
        if (st != INGOT_OK) {
            CHECK(st == INGOT_NOMEM && e.code == INGOT_NOMEM);
            CHECK(ta.fired);
            CHECK(f == NULL);
        } else {
            ok = oom_step(&ta, persistent, do_verify(f, (void *)1), "verify(1)", do_verify, f,
                          (void *)1) &&
                 oom_step(&ta, persistent, do_verify(f, (void *)2), "verify(2)", do_verify, f,
                          (void *)2);
            for (uintptr_t i = 0; ok && i < new_m.n; i++)
                ok = oom_step(&ta, persistent, do_tensor_verify(f, (void *)i), "tensor_verify",
                              do_tensor_verify, f, (void *)i);
            if (ok) ok = oom_step(&ta, persistent, do_getters(f, NULL), "getters", NULL, f, NULL);
            ingot_file_close(f);
        }
        CHECK(ta.live_blocks == 0 && ta.live_bytes == 0);
        CHECK(ta.bad_frees == 0 && ta.bad_align == 0);
        CHECK(count_fds() == fds0);
        CHECK(count_maps_of(target) == 0);
        if (!ok) break;
        if (!ta.fired) break;
    }
    /* usable afterwards */
    talloc_arm(&ta, 0, false);
    ingot_open_opts o = {.io = src == SRC_PREAD ? INGOT_IO_PREAD : INGOT_IO_MMAP, .allocator = &al};
    ingot_file *f;
    ASSERT_OK(ingot_file_open(target, &o, &f, NULL));
    ASSERT_OK(ingot_file_verify(f, 2, NULL));
    ASSERT_OK(do_getters(f, NULL));
    ingot_file_close(f);
    ASSERT_EQ(ta.live_blocks, 0);
    ingot__verify_chunk = saved_vchunk;
    talloc_destroy(&ta);
    *iters += n;
    fprintf(stderr, "  OOM loop open %-6s verify=%d %-10s: %ld runs\n",
            src == SRC_MMAP ? "mmap" : src == SRC_PREAD ? "pread" : "buffer", (int)vm,
            persistent ? "persistent" : "once", n);
}

TEST(test_oom_loop_open)
{
    for (int src = SRC_MMAP; src <= SRC_BUFFER; src++)
        for (int vm = INGOT_VERIFY_HEADER; vm <= INGOT_VERIFY_ALL; vm += 2)
            for (int p = 0; p < 2; p++) {
                int before = harness_failed;
                oom_open_loop(src, (ingot_verify_mode)vm, p, &oom_open_iters[p]);
                if (harness_failed != before) return;
            }
}

/* ---------------------------------------------------------------------------------------------
 * Real limits: RLIMIT_FSIZE (always), a 64 KiB tmpfs (root, when mount(2) works)
 * ------------------------------------------------------------------------------------------- */

static struct {
    long writes, short_writes, efbig, enospc;
} lim;

static ssize_t l_write(int fd, const void *b, size_t n)
{
    ssize_t r = ingot__io_libc.write(fd, b, n);
    lim.writes++;
    if (r >= 0 && (size_t)r < n) lim.short_writes++;
    if (r < 0 && errno == EFBIG) lim.efbig++;
    if (r < 0 && errno == ENOSPC) lim.enospc++;
    return r;
}

/* A file system that cannot preallocate: the limit is then met by the writes themselves. */
static int l_fallocate_unsupported(int fd, off_t off, off_t len)
{
    (void)fd, (void)off, (void)len;
    return EOPNOTSUPP;
}

typedef struct {
    int status;
    long writes, short_writes, efbig, enospc;
} limit_result;

/* Forked child: ignore SIGXFSZ, limit the file size, save new_m over the target, report. */
static limit_result save_under_limit(rlim_t limit, bool prealloc)
{
    limit_result res = {-1, 0, 0, 0, 0};
    int pfd[2];
    if (pipe(pfd) != 0) return res;
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {limit, limit};
        limit_result r = {-2, 0, 0, 0, 0};
        if (setrlimit(RLIMIT_FSIZE, &rl) == 0) {
            ingot__io_ops ops = ingot__io_libc;
            ops.write = l_write;
            if (!prealloc) ops.fallocate = l_fallocate_unsupported;
            ingot__io_set(&ops);
            r.status = (int)model_save(&new_m, target, NULL, NULL);
            ingot__io_set(NULL);
            r.writes = lim.writes;
            r.short_writes = lim.short_writes;
            r.efbig = lim.efbig;
            r.enospc = lim.enospc;
        }
        ssize_t w = write(pfd[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 3);
    }
    close(pfd[1]);
    if (pid > 0) {
        ssize_t got = read(pfd[0], &res, sizeof res);
        int ws = 0;
        waitpid(pid, &ws, 0);
        if (got != (ssize_t)sizeof res || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) res.status = -3;
    }
    close(pfd[0]);
    return res;
}

TEST(test_rlimit_fsize)
{
    models_init();
    scratch_init();
    size_t saved_chunk = ingot__write_chunk;
    ingot__write_chunk = 4096;
    /* Limits below the new file's size, including inside the header and mid tensor data. */
    const rlim_t limits[] = {0, 700, 5001, 20001, 33333, (rlim_t)new_m.image_len - 1};
    int runs = 0;
    for (int prealloc = 1; prealloc >= 0; prealloc--)
        for (size_t k = 0; k < sizeof limits / sizeof limits[0]; k++) {
            ASSERT_EQ(restore_old(), 0);
            limit_result r = save_under_limit(limits[k], prealloc);
            runs++;
            fprintf(stderr, "  limit %llu prealloc %d: status %d writes %ld short %ld efbig %ld\n",
                    (unsigned long long)limits[k], prealloc, r.status, r.writes, r.short_writes,
                    r.efbig);
            ctx_n = (long)limits[k];
            ctx_kind = K_NONE;
            ctx_st = (ingot_status)r.status;
            fi.fired_op = -1;
            CHECK(r.status == INGOT_IO);
            CHECK(file_equals(target, old_m.image, old_m.image_len));
            CHECK(count_tmps(dir, false) == 0);
            if (prealloc) {
                /* posix_fallocate reports EFBIG before any tensor data is written. (The header is
                 * written before the preallocation: one write, or a short one and an EFBIG when
                 * the limit falls inside it.) */
                CHECK(r.writes <= 2);
            } else {
                CHECK(r.efbig == 1); /* the writer stops at the first EFBIG */
                /* a limit that does not fall on a write boundary gives a short write first */
                CHECK(r.short_writes == (limits[k] == 0 ? 0 : 1));
            }
        }
    ingot__write_chunk = saved_chunk;
    /* and with the limit above the file size the same child path succeeds */
    ASSERT_EQ(restore_old(), 0);
    limit_result r = save_under_limit((rlim_t)new_m.image_len, false);
    ASSERT_EQ(r.status, INGOT_OK);
    ASSERT_TRUE(file_equals(target, new_m.image, new_m.image_len));
    fprintf(stderr, "  RLIMIT_FSIZE: %d limited saves, all INGOT_IO with the old file intact\n",
            runs);
}

static void tmpfs_body(const char *mnt)
{
    char path[512];
    snprintf(path, sizeof path, "%s/model.ingot", mnt);
    ASSERT_EQ(put_file(path, old_m.image, old_m.image_len), 0);
    /* a model larger than the file system */
    model big = {.tag = "big", .n = 2, .push_chunk = 50000};
    big.t[0] = (model_tensor){"x", INGOT_DTYPE_F32, 2, {128, 128}, false};
    big.t[1] = (model_tensor){"y", INGOT_DTYPE_U8, 1, {100000}, true};
    model_fill(&big, 9);
    for (int prealloc = 1; prealloc >= 0; prealloc--) {
        memset(&lim, 0, sizeof lim);
        ingot__io_ops ops = ingot__io_libc;
        ops.write = l_write;
        if (!prealloc) ops.fallocate = l_fallocate_unsupported;
        ingot__io_set(&ops);
        ingot_error e;
        ingot_status st = model_save(&big, path, NULL, &e);
        ingot__io_set(NULL);
        if (st != INGOT_IO) model_free(&big);
        ASSERT_ST(st, INGOT_IO);
        if (!prealloc) ASSERT_TRUE(lim.enospc >= 1);
        ASSERT_TRUE(file_equals(path, old_m.image, old_m.image_len));
        ASSERT_EQ(count_tmps(mnt, false), 0);
    }
    model_free(&big);
    /* the space of the removed temporary is back: a small save fits */
    ASSERT_OK(model_save(&new_m, path, NULL, NULL));
    ASSERT_TRUE(file_equals(path, new_m.image, new_m.image_len));
    unlink(path);
}

TEST(test_tmpfs_enospc)
{
    models_init();
    if (geteuid() != 0) {
        fprintf(stderr, "  SKIP tmpfs ENOSPC: not root\n");
        return;
    }
    char mnt[256];
    make_scratch(mnt, sizeof mnt, "tmpfs");
    if (mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k") != 0) {
        fprintf(stderr, "  SKIP tmpfs ENOSPC: mount failed: %s\n", strerror(errno));
        rmdir(mnt);
        return;
    }
    tmpfs_body(mnt);
    if (umount(mnt) != 0) fprintf(stderr, "  umount %s: %s\n", mnt, strerror(errno));
    rmdir(mnt);
    fprintf(stderr, "  tmpfs 64 KiB: ENOSPC reported as INGOT_IO, old file intact\n");
}

/* ---------------------------------------------------------------------------------------------
 * Summary
 * ------------------------------------------------------------------------------------------- */

TEST(test_zz_summary_and_cleanup)
{
    fprintf(stderr, "  figures: I/O-loop writer runs EIO %ld ENOSPC %ld EINTR %ld short %ld; "
                    "after-rename dir-fsync errors %ld\n",
            io_loop_writer_iters[K_EIO], io_loop_writer_iters[K_ENOSPC],
            io_loop_writer_iters[K_EINTR], io_loop_writer_iters[K_SHORT], io_loop_after_rename);
    fprintf(stderr, "  figures: OOM-loop writer runs once %ld persistent %ld; open runs once %ld "
                    "persistent %ld\n",
            oom_write_iters[0], oom_write_iters[1], oom_open_iters[0], oom_open_iters[1]);
    if (dir[0]) ASSERT_EQ(count_tmps(dir, false), 0);
    model_free(&old_m);
    model_free(&new_m);
}

RUN_TESTS(T(test_io_loop_writer_eio), T(test_io_loop_writer_enospc), T(test_io_loop_writer_eintr),
          T(test_io_loop_writer_short), T(test_io_writer_all_writes_short), T(test_abandoned_writer), T(test_io_loop_open),
          T(test_io_open_all_reads_short), T(test_open_not_regular), T(test_oom_loop_writer_once),
          T(test_oom_loop_writer_persistent), T(test_oom_loop_open), T(test_rlimit_fsize),
          T(test_tmpfs_enospc), T(test_zz_summary_and_cleanup))
