/*
 * test_killsafe.c - kill -9 during saves (RELIABILITY.md §3), with unnamed temporaries (O_TMPFILE,
 * the default where the file system has it) and with named ones (the fallback).
 *
 *   Random kills: a child saves A, B, A, B, ... (each about 3 MiB, verifiable) over one target;
 *   the parent kills it with SIGKILL after a random delay (seeded, spanning about four saves), then
 *   opens the target: it must pass ingot_file_verify and be byte-identical to A or to B.
 *   Syscall kills: the child saves B over A through a syscall table that raises SIGKILL before
 *   call N, for N = 1 .. (calls of one save); the target must be exactly A while the rename has
 *   not run and exactly B afterwards. A save to a new target (no old file) is killed the same way.
 * Temporaries left by a kill: named ones are expected (counted, checked against the kill point
 * where it is known, and removed). Unnamed ones leave nothing, except a kill between the link to
 * a temporary name and the rename over an existing target, which leaves that name holding the
 * complete new file: the syscall kills pin exactly that, the random kills check that every name
 * left holds a complete save.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "test_faults_common.h"
#include "afile.h"
#include "io.h"
#include "writer_impl.h"

static model A, B;
static char dir[256], target[512];

static void cleanup(void)
{
    if (dir[0]) remove_scratch(dir);
    dir[0] = '\0';
}

static void setup(void)
{
    if (A.n) return;
    make_scratch(dir, sizeof dir, "kill");
    atexit(cleanup); /* children end with _exit() or SIGKILL and never run it */
    snprintf(target, sizeof target, "%s/ckpt.ingot", dir);
    A = (model){.tag = "checkpoint-A", .n = 3, .push_chunk = 300000};
    A.t[0] = (model_tensor){"w1", INGOT_DTYPE_F32, 2, {512, 512}, false};
    A.t[1] = (model_tensor){"w2", INGOT_DTYPE_U8, 1, {1536 * 1024}, true};
    A.t[2] = (model_tensor){"w3", INGOT_DTYPE_BF16, 2, {256, 1024}, false};
    model_fill(&A, 101);
    model_build_image(&A);
    B = (model){.tag = "checkpoint-B", .n = 3, .push_chunk = 250000};
    B.t[0] = (model_tensor){"w1", INGOT_DTYPE_F32, 2, {400, 600}, false};
    B.t[1] = (model_tensor){"w2", INGOT_DTYPE_U8, 1, {2 * 1024 * 1024}, true};
    B.t[2] = (model_tensor){"x", INGOT_DTYPE_I16, 1, {1000}, false};
    model_fill(&B, 202);
    model_build_image(&B);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Which content the target holds after a kill: 'A', 'B', or 0 (neither, or it does not verify). */
static int classify_target(void)
{
    ingot_file *f;
    ingot_error e;
    if (ingot_file_open(target, NULL, &f, &e) != INGOT_OK) {
        fprintf(stderr, "  open after kill: %s\n", e.msg);
        return 0;
    }
    ingot_status st = ingot_file_verify(f, 2, &e);
    const model *m = NULL;
    const char *s;
    size_t sl;
    if (st == INGOT_OK && ingot_file_meta_get_string(f, "model.name", &s, &sl) == INGOT_OK)
        m = sl == strlen(A.tag) && memcmp(s, A.tag, sl) == 0 ? &A : &B;
    int bad = m ? model_check_open(m, f) : -1;
    ingot_file_close(f);
    if (st != INGOT_OK) {
        fprintf(stderr, "  verify after kill: %s\n", e.msg);
        return 0;
    }
    if (!m || bad) return 0;
    return file_equals(target, m->image, m->image_len) ? (m == &A ? 'A' : 'B') : 0;
}

static int kill_runs, kill_failures;

/* Temporaries in dir that hold a complete save (A or B) and those that do not; removes them. */
static void count_left(int *complete, int *partial)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char p[1024];
    while (d && (de = readdir(d)) != NULL) {
        if (!strstr(de->d_name, TMP_INFIX)) continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (file_equals(p, A.image, A.image_len) || file_equals(p, B.image, B.image_len))
            (*complete)++;
        else
            (*partial)++;
        unlink(p);
    }
    if (d) closedir(d);
}

static void kill9_random(bool unnamed)
{
    setup();
    unnamed = unnamed && unnamed_tmp_works(dir);
    int saved_mode = ingot__afile_tmpfile;
    ingot__afile_tmpfile = unnamed;
    ASSERT_OK(model_save(&A, target, NULL, NULL));
    /* calibrate: how long one save takes here */
    double t0 = now_s();
    ASSERT_OK(model_save(&B, target, NULL, NULL));
    ASSERT_OK(model_save(&A, target, NULL, NULL));
    double per_save = (now_s() - t0) / 2;
    uint64_t seed = 0x6b696c6c39ull; /* fixed: the run is reproducible */
    const char *env = getenv("INGOT_KILL_SEED");
    if (env) seed = strtoull(env, NULL, 0);
    uint64_t rng = seed;
    long max_delay_us = (long)(per_save * 4.2e6) + 200;
    int runs = 0, failures = 0, got_a = 0, got_b = 0, tmps_left = 0, partial = 0;
    const int want_runs = 150;
    const double budget_s = 5.0;
    double start = now_s();
    /* On a loaded machine each kill cycle is slower: keep going past the budget (up to 5x)
     * until the minimum number of runs is reached. */
    while ((runs < want_runs && now_s() - start < budget_s) ||
           (runs < 50 && now_s() - start < 5 * budget_s)) {
        pid_t pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
            for (unsigned i = 0;; i++) model_save(i % 2 ? &A : &B, target, NULL, NULL);
        }
        long delay = (long)(splitmix(&rng) % (uint64_t)max_delay_us);
        struct timespec ts = {delay / 1000000, (delay % 1000000) * 1000};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int ws = 0;
        ASSERT_EQ(waitpid(pid, &ws, 0), pid);
        ASSERT_TRUE(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
        runs++;
        int c = classify_target();
        if (c == 'A') got_a++;
        else if (c == 'B') got_b++;
        else {
            failures++;
            fprintf(stderr, "  run %d (delay %ld us): target is neither A nor B\n", runs, delay);
        }
        count_left(&tmps_left, &partial);
        /* the calibration may have run on a faster disk than now: widen the window until kills
         * land on both sides of the first rename */
        if (runs % 25 == 0 && (got_a == 0 || got_b == 0)) max_delay_us *= 2;
    }
    ingot__afile_tmpfile = saved_mode;
    kill_runs += runs;
    kill_failures += failures;
    fprintf(stderr,
            "  kill -9 random, %s temporaries: seed 0x%llx, one save %.1f ms, %d kills in %.1f s, "
            "%d failures (target A %d, B %d; temporaries left and removed: %d partial, %d "
            "complete)\n",
            unnamed ? "unnamed" : "named", (unsigned long long)seed, per_save * 1e3, runs,
            now_s() - start, failures, got_a, got_b, partial, tmps_left);
    ASSERT_EQ(failures, 0);
    ASSERT_TRUE(runs >= 50);
    ASSERT_TRUE(got_a > 0 && got_b > 0); /* kills landed on both sides of renames */
    if (unnamed) {
        /* only the link-then-rename window (two system calls) can leave a name */
        ASSERT_EQ(partial, 0);
        ASSERT_TRUE(tmps_left <= runs / 10);
    } else {
        ASSERT_TRUE(partial > 0); /* kills landed in the middle of saves */
    }
}

TEST(test_kill9_random_named) { kill9_random(false); }
TEST(test_kill9_random_unnamed) { kill9_random(true); }

/* ---------------------------------------------------------------------------------------------
 * Kill at every Nth system call
 * ------------------------------------------------------------------------------------------- */

enum { C_OPEN, C_WRITE, C_PWRITE, C_PREAD, C_FSYNC, C_CLOSE, C_RENAME, C_UNLINK, C_FSTAT,
       C_FALLOCATE, C_MMAP, C_MUNMAP, C_LINKAT, C_LINKAT_FAILED };
static const char *const call_names[] = {"open", "write", "pwrite", "pread", "fsync", "close",
                                         "rename", "unlink", "fstat", "fallocate", "mmap",
                                         "munmap", "linkat", "linkat (failed)"};

static long calls, kill_at;
static int seq[4096];

static void tick(int op)
{
    if (calls < (long)(sizeof seq / sizeof seq[0])) seq[calls] = op;
    if (++calls == kill_at) kill(getpid(), SIGKILL);
}

static int k_open(const char *p, int fl, int m) { tick(C_OPEN); return ingot__io_libc.open(p, fl, m); }
static ssize_t k_write(int fd, const void *b, size_t n)
{
    tick(C_WRITE);
    return ingot__io_libc.write(fd, b, n);
}
static ssize_t k_pwrite(int fd, const void *b, size_t n, off_t o)
{
    tick(C_PWRITE);
    return ingot__io_libc.pwrite(fd, b, n, o);
}
static ssize_t k_pread(int fd, void *b, size_t n, off_t o)
{
    tick(C_PREAD);
    return ingot__io_libc.pread(fd, b, n, o);
}
static int k_fsync(int fd) { tick(C_FSYNC); return ingot__io_libc.fsync(fd); }
static int k_close(int fd) { tick(C_CLOSE); return ingot__io_libc.close(fd); }
static int k_rename(const char *a, const char *b) { tick(C_RENAME); return ingot__io_libc.rename(a, b); }
static int k_linkat(int fd, const char *a, int nfd, const char *b, int fl)
{
    long at = calls;
    tick(C_LINKAT);
    int r = ingot__io_libc.linkat(fd, a, nfd, b, fl);
    if (r != 0 && at < (long)(sizeof seq / sizeof seq[0])) seq[at] = C_LINKAT_FAILED;
    return r;
}
static int k_unlink(const char *p) { tick(C_UNLINK); return ingot__io_libc.unlink(p); }
static int k_fstat(int fd, struct stat *s) { tick(C_FSTAT); return ingot__io_libc.fstat(fd, s); }
static int k_fallocate(int fd, off_t o, off_t l)
{
    tick(C_FALLOCATE);
    return ingot__io_libc.fallocate(fd, o, l);
}
static void *k_mmap(void *a, size_t n, int p, int fl, int fd, off_t o)
{
    tick(C_MMAP);
    return ingot__io_libc.mmap(a, n, p, fl, fd, o);
}
static int k_munmap(void *a, size_t n) { tick(C_MUNMAP); return ingot__io_libc.munmap(a, n); }

static const ingot__io_ops kill_ops = {
    .open = k_open, .write = k_write, .pwrite = k_pwrite, .pread = k_pread, .fsync = k_fsync,
    .close = k_close, .rename = k_rename, .linkat = k_linkat, .unlink = k_unlink,
    .fstat = k_fstat, .fallocate = k_fallocate, .mmap = k_mmap, .munmap = k_munmap,
};

/* Kills a save of `to` over `from` (NULL: no target yet, want_old '-') before each of its system
 * calls in turn, with named or unnamed temporaries. */
static void kill_every_call(const model *from, const model *to, char want_old, char want_new,
                            bool do_fsync, bool unnamed)
{
    ingot_writer_opts wo = {.no_fsync = !do_fsync};
    unnamed = unnamed && unnamed_tmp_works(dir);
    int saved_mode = ingot__afile_tmpfile;
    ingot__afile_tmpfile = unnamed;
    /* count the calls of one save and where the temporary gets its name and the target */
    if (from) ASSERT_OK(model_save(from, target, NULL, NULL));
    else unlink(target);
    calls = 0;
    kill_at = 0;
    ingot__io_set(&kill_ops);
    ingot_status st = model_save(to, target, &wo, NULL);
    ingot__io_set(NULL);
    ASSERT_OK(st);
    long total = calls, named_at = 0, placed_at = 0;
    ASSERT_TRUE(total < (long)(sizeof seq / sizeof seq[0]));
    /* the call that puts the file in place: the rename, or (unnamed, no target yet) the link */
    for (long i = 0; i < total; i++)
        if (seq[i] == C_RENAME || (seq[i] == C_LINKAT && !from)) placed_at = i + 1;
    /* the call that gives the temporary a name: named, the last open before the rename (with
     * fsync on, the target's directory is opened first, for the fsync after the rename);
     * unnamed, the link to the temporary name after the link to the target failed (EEXIST) */
    for (long i = 0; i < placed_at - 1; i++)
        if (seq[i] == (unnamed ? C_LINKAT : C_OPEN)) named_at = i + 1;
    bool tried_target = false;
    for (long i = 0; i < total; i++) tried_target |= seq[i] == C_LINKAT_FAILED;
    ASSERT_TRUE(placed_at > 0);
    ASSERT_EQ(seq[placed_at - 1], from ? C_RENAME : unnamed ? C_LINKAT : C_RENAME);
    if (unnamed && from) ASSERT_TRUE(tried_target && named_at > 0);
    if (unnamed && !from) ASSERT_TRUE(!tried_target && named_at == 0);
    if (!unnamed) ASSERT_TRUE(named_at >= 1 && !tried_target);
    int failures = 0, tmps = 0;
    for (long n = 1; n <= total; n++) {
        if (!from) unlink(target);
        else if (!file_equals(target, from->image, from->image_len))
            ASSERT_EQ(put_file(target, from->image, from->image_len), 0);
        pid_t pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
            calls = 0;
            kill_at = n;
            ingot__io_set(&kill_ops);
            model_save(to, target, &wo, NULL);
            _exit(7); /* not reached: call n always comes */
        }
        int ws = 0;
        ASSERT_EQ(waitpid(pid, &ws, 0), pid);
        ASSERT_TRUE(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
        int c = access(target, F_OK) != 0 ? '-' : classify_target();
        /* killed before call n ran: the file is in place only if n > placed_at */
        char want = n > placed_at ? want_new : want_old;
        int left = count_tmps(dir, true);
        tmps += left;
        int want_left = named_at && n > named_at && n <= placed_at ? 1 : 0;
        if (c != want || left != want_left) {
            failures++;
            fprintf(stderr, "  kill before call %ld (%s): target %c (want %c), %d temporaries "
                            "(want %d)\n",
                    n, call_names[seq[n - 1]], c ? c : '?', want, left, want_left);
        }
    }
    ingot__afile_tmpfile = saved_mode;
    kill_runs += (int)total;
    kill_failures += failures;
    fprintf(stderr, "  kill -9 at every syscall (%c over %c, fsync %s, %s temporary): %ld calls "
                    "per save, %ld kills, %d failures, %d temporaries left and removed\n",
            want_new, want_old, do_fsync ? "on" : "off", unnamed ? "unnamed" : "named", total,
            total, failures, tmps);
    ASSERT_EQ(failures, 0);
}

TEST(test_kill9_every_syscall)
{
    setup();
    size_t saved = ingot__write_chunk;
    ingot__write_chunk = 256 * 1024; /* more write calls, more kill points */
    for (int unnamed = 0; unnamed < 2; unnamed++) {
        kill_every_call(&A, &B, 'A', 'B', true, unnamed);
        kill_every_call(&B, &A, 'B', 'A', false, unnamed);
    }
    ingot__write_chunk = saved;
}

/* A new target (no old file): with an unnamed temporary no kill leaves any file but the complete
 * target; with a named one the temporary is left between its creation and the rename. */
TEST(test_kill9_new_target)
{
    setup();
    size_t saved = ingot__write_chunk;
    ingot__write_chunk = 256 * 1024;
    kill_every_call(NULL, &B, '-', 'B', true, true);
    kill_every_call(NULL, &A, '-', 'A', false, true);
    kill_every_call(NULL, &B, '-', 'B', true, false);
    ingot__write_chunk = saved;
}

TEST(test_zz_summary)
{
    fprintf(stderr, "  figures: kill-9 runs %d, failures %d\n", kill_runs, kill_failures);
    ASSERT_EQ(kill_failures, 0);
    model_free(&A);
    model_free(&B);
}

RUN_TESTS(T(test_kill9_random_named), T(test_kill9_random_unnamed), T(test_kill9_every_syscall),
          T(test_kill9_new_target), T(test_zz_summary))
