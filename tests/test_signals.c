/*
 * test_signals.c - SIGINT, SIGTERM and SIGHUP during `ingot convert` and `ingot pack` (issue 13):
 * the CLI must die of the signal (a shell reports 130, 143, 129), leave no "*.ingot-tmp-*" file,
 * and leave the target complete: byte-identical to the old file(s) or to the new ones.
 *
 *   Random signals: the CLI writes 160 MiB (a .safetensors file; a sharded safetensors index with
 *   four shards over an older checkpoint with the same shard names; a .ingot by `pack`) over a
 *   small old target, and gets the signal after a random delay (seeded, spanning one write), with
 *   unnamed temporaries (O_TMPFILE) and with named ones (INGOT_NO_TMPFILE=1).
 *   In process: ingot_writer_remove_temporaries() removes the named temporaries of open writers,
 *   which then fail at commit and leave their targets alone. A SIGTERM sent during the renames of
 *   a sharded commit (from inside the second rename) ends the process only once every shard and
 *   the index are in place.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "test_faults_common.h"
#include "afile.h"
#include "io.h"

#define N_TENSORS 8
#define TENSOR_BYTES (20u << 20) /* 160 MiB in all; two tensors per 40 MiB shard */
#define N_SHARDS 4

static char root[256], in_dir[512], out_dir[512], ref_dir[512];
static char big_in[600], small_in[600], raw_in[600], raw_small[600];

static void cleanup(void)
{
    if (!root[0]) return;
    /* also what an in-process test that failed halfway left */
    const char *subs[] = {"in", "out", "ref", "api", "renames", "renames-ref"};
    for (int i = 0; i < 6; i++) {
        char d[600];
        snprintf(d, sizeof d, "%s/%s", root, subs[i]);
        remove_scratch(d);
    }
    rmdir(root);
    root[0] = '\0';
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Writes an .ingot of N_TENSORS U8 tensors of `bytes` each, filled from `seed`. */
static int make_input(const char *path, size_t bytes, uint64_t seed)
{
    uint8_t *buf = malloc(bytes);
    if (!buf) return -1;
    ingot_writer *w;
    ingot_error e;
    ingot_writer_opts wo = {.no_fsync = true};
    if (ingot_writer_new(&wo, &w, &e) != INGOT_OK) return -1;
    ingot_writer_set_string(w, "model.name", seed == 1 ? "big" : "small");
    for (int i = 0; i < N_TENSORS; i++) {
        char name[32];
        snprintf(name, sizeof name, "layer.%d.weight", i);
        uint64_t shape = bytes;
        if (ingot_writer_add_tensor(w, name, INGOT_DTYPE_U8, 1, &shape, NULL, NULL, &e) != INGOT_OK)
            return -1;
    }
    ingot_status st = ingot_writer_begin(w, path, &e);
    uint64_t s = seed;
    for (int i = 0; i < N_TENSORS && st == INGOT_OK; i++) {
        for (size_t k = 0; k < bytes; k += 8) {
            uint64_t r = splitmix(&s);
            memcpy(buf + k, &r, bytes - k < 8 ? bytes - k : 8);
        }
        st = ingot_writer_write(w, buf, bytes, &e);
    }
    if (st == INGOT_OK) st = ingot_writer_commit(w, &e);
    ingot_writer_free(w);
    free(buf);
    return st == INGOT_OK ? 0 : -1;
}

/* A sparse raw file of `bytes` with a few marked bytes (for `pack`). */
static int make_raw(const char *path, uint64_t bytes, uint8_t mark)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) return -1;
    for (uint64_t off = 0; off < bytes; off += bytes / 7)
        if (pwrite(fd, &mark, 1, (off_t)off) != 1) return -1;
    return close(fd);
}

/* ---------------------------------------------------------------------------------------------
 * Scenarios: what the CLI is asked to write, and the old and new file sets
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    const char *label;
    const char *target;      /* name in out_dir */
    const char *names[8];    /* every file of the result, target included */
    size_t n_names;
    uint8_t *old_img[8];     /* old contents, by name */
    size_t old_len[8];
    double seconds;          /* one uninterrupted write (calibration) */
} scenario;

static scenario sc_single = {"convert .safetensors", "model.safetensors", {"model.safetensors"}, 1,
                             {0}, {0}, 0};
static scenario sc_sharded = {"convert sharded", "model.safetensors.index.json",
                              {"model.safetensors.index.json", "model-00001-of-00004.safetensors",
                               "model-00002-of-00004.safetensors",
                               "model-00003-of-00004.safetensors",
                               "model-00004-of-00004.safetensors"},
                              5, {0}, {0}, 0};
static scenario sc_pack = {"pack .ingot", "model.ingot", {"model.ingot"}, 1, {0}, {0}, 0};

/* argv of the CLI writing `sc` (big input) or its old content (small input) into dir. */
static void cli_args(const scenario *sc, bool big, const char *dir, char *out, size_t cap,
                     char **argv, char *tensor_arg, size_t tcap)
{
    snprintf(out, cap, "%s/%s", dir, sc->target);
    int a = 0;
    argv[a++] = (char *)"ingot";
    if (sc == &sc_pack) {
        snprintf(tensor_arg, tcap, "w:U8:%llu=%s",
                 (unsigned long long)(big ? (uint64_t)N_TENSORS * TENSOR_BYTES : 4096),
                 big ? raw_in : raw_small);
        argv[a++] = (char *)"pack";
        argv[a++] = out;
        argv[a++] = (char *)"--tensor";
        argv[a++] = tensor_arg;
    } else {
        argv[a++] = (char *)"convert";
        argv[a++] = big ? big_in : small_in;
        argv[a++] = out;
        if (sc == &sc_sharded) {
            argv[a++] = (char *)"--opt";
            argv[a++] = big ? (char *)"max_shard_size=40MiB" : (char *)"max_shard_size=2KiB";
        }
    }
    argv[a] = NULL;
}

/* Starts the CLI on sc; `named` selects named temporaries; `ignore_int` starts it with SIGINT
 * ignored. Returns the pid. */
static pid_t spawn(const scenario *sc, bool big, const char *dir, bool named, bool ignore_int)
{
    char out[700], targ[700];
    char *argv[10];
    cli_args(sc, big, dir, out, sizeof out, argv, targ, sizeof targ);
    pid_t pid = fork();
    if (pid != 0) return pid;
    /* the child starts with the default dispositions, whatever ours are */
    signal(SIGINT, ignore_int ? SIG_IGN : SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (named) setenv("INGOT_NO_TMPFILE", "1", 1);
    else unsetenv("INGOT_NO_TMPFILE");
    int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
    dup2(nul, 1);
    dup2(nul, 2);
    execv(INGOT_CLI, argv);
    _exit(127);
}

static int run_to_end(const scenario *sc, bool big, const char *dir)
{
    pid_t pid = spawn(sc, big, dir, false, false);
    int ws = 0;
    if (pid < 0 || waitpid(pid, &ws, 0) != pid) return -1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

static int same_files(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    static uint8_t ba[1 << 20], bb[1 << 20];
    while (same) {
        size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
        if (na != nb || memcmp(ba, bb, na) != 0) same = 0;
        if (na < sizeof ba) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

/* Entries of dir (".", ".." aside). */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* Which set out_dir holds for sc: 'O' (old), 'N' (new, equal to ref_dir's), or 0 (a mix, a file
 * missing, extra files, or a target that does not open and verify). */
static int classify(const scenario *sc)
{
    int olds = 0, news = 0;
    for (size_t i = 0; i < sc->n_names; i++) {
        char p[800], r[800];
        snprintf(p, sizeof p, "%s/%s", out_dir, sc->names[i]);
        snprintf(r, sizeof r, "%s/%s", ref_dir, sc->names[i]);
        if (file_equals(p, sc->old_img[i], sc->old_len[i])) olds++;
        else if (same_files(p, r)) news++;
    }
    if (count_entries(out_dir) != (int)sc->n_names) return 0;
    char t[800];
    snprintf(t, sizeof t, "%s/%s", out_dir, sc->target);
    ingot_file *f;
    if (ingot_file_open(t, NULL, &f, NULL) != INGOT_OK) return 0;
    ingot_status st = ingot_file_verify(f, 1, NULL);
    ingot_file_close(f);
    if (st != INGOT_OK) return 0;
    return olds == (int)sc->n_names ? 'O' : news == (int)sc->n_names ? 'N' : 0;
}

static int restore_old(const scenario *sc)
{
    remove_scratch(out_dir);
    if (mkdir(out_dir, 0755) != 0) return -1;
    for (size_t i = 0; i < sc->n_names; i++) {
        char p[800];
        snprintf(p, sizeof p, "%s/%s", out_dir, sc->names[i]);
        if (put_file(p, sc->old_img[i], sc->old_len[i]) != 0) return -1;
    }
    return 0;
}

/* Builds the inputs, the reference outputs (timed) and the old file sets. */
static bool setup_ok;

static void setup_root(void)
{
    if (root[0]) return;
    make_scratch(root, sizeof root, "signals");
    atexit(cleanup);
    snprintf(in_dir, sizeof in_dir, "%s/in", root);
    snprintf(out_dir, sizeof out_dir, "%s/out", root);
    snprintf(ref_dir, sizeof ref_dir, "%s/ref", root);
    ASSERT_EQ(mkdir(in_dir, 0755), 0);
    ASSERT_EQ(mkdir(out_dir, 0755), 0);
    ASSERT_EQ(mkdir(ref_dir, 0755), 0);
}

static void setup(void)
{
    static bool tried;
    setup_root();
    if (tried || !root[0]) return;
    tried = true;
    snprintf(big_in, sizeof big_in, "%s/big.ingot", in_dir);
    snprintf(small_in, sizeof small_in, "%s/small.ingot", in_dir);
    snprintf(raw_in, sizeof raw_in, "%s/big.raw", in_dir);
    snprintf(raw_small, sizeof raw_small, "%s/small.raw", in_dir);
    ASSERT_EQ(make_input(big_in, TENSOR_BYTES, 1), 0);
    ASSERT_EQ(make_input(small_in, 1024, 2), 0);
    ASSERT_EQ(make_raw(raw_in, (uint64_t)N_TENSORS * TENSOR_BYTES, 0x5a), 0);
    ASSERT_EQ(make_raw(raw_small, 4096, 0xa5), 0);
    scenario *all[] = {&sc_single, &sc_sharded, &sc_pack};
    for (int s = 0; s < 3; s++) {
        scenario *sc = all[s];
        /* old set: written by the CLI from the small input, kept in memory */
        ASSERT_EQ(run_to_end(sc, false, out_dir), 0);
        ASSERT_EQ(count_entries(out_dir), (long long)sc->n_names);
        for (size_t i = 0; i < sc->n_names; i++) {
            char p[800];
            snprintf(p, sizeof p, "%s/%s", out_dir, sc->names[i]);
            sc->old_img[i] = slurp(p, &sc->old_len[i]);
            ASSERT_TRUE(sc->old_img[i] != NULL);
            ASSERT_EQ(unlink(p), 0);
        }
        /* new set: the uninterrupted write, twice (the second one is timed, cache warm) */
        ASSERT_EQ(run_to_end(sc, true, ref_dir), 0);
        double t0 = now_s();
        ASSERT_EQ(run_to_end(sc, true, ref_dir), 0);
        sc->seconds = now_s() - t0;
        for (size_t i = 0; i < sc->n_names; i++) {
            char p[800];
            snprintf(p, sizeof p, "%s/%s", ref_dir, sc->names[i]);
            ASSERT_TRUE(access(p, F_OK) == 0);
        }
        fprintf(stderr, "  %s: one uninterrupted write %.0f ms\n", sc->label, sc->seconds * 1e3);
    }
    ASSERT_EQ(count_entries(ref_dir), 7);
    setup_ok = true;
}

/* ---------------------------------------------------------------------------------------------
 * Random signals
 * ------------------------------------------------------------------------------------------- */

static uint64_t rng;
static int total_runs, total_failures;

typedef struct {
    int runs, died, exited, old_kept, new_in_place, tmp_seen, failures;
} tally;

static void signal_runs(scenario *sc, bool named, int trials, tally *t)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    static const int shell_status[] = {130, 143, 129};
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < trials; k++) {
            if (restore_old(sc) != 0) {
                t->failures++;
                return;
            }
            /* from the start to near the calibrated end */
            long max_us = (long)(sc->seconds * 0.9e6) + 1000;
            long delay = (long)(splitmix(&rng) % (uint64_t)max_us);
            pid_t pid = spawn(sc, true, out_dir, named, false);
            if (pid < 0) {
                t->failures++;
                return;
            }
            struct timespec ts = {delay / 1000000, (delay % 1000000) * 1000};
            nanosleep(&ts, NULL);
            int seen = count_tmps(out_dir, false); /* a named temporary exists right now */
            kill(pid, sigs[s]);
            int ws = 0;
            waitpid(pid, &ws, 0);
            t->runs++;
            t->tmp_seen += seen > 0;
            int left = count_tmps(out_dir, false);
            int c = classify(sc);
            bool died = WIFSIGNALED(ws) && WTERMSIG(ws) == sigs[s] &&
                        128 + WTERMSIG(ws) == shell_status[s];
            bool exited = WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
            t->died += died;
            t->exited += exited;
            if (exited) sc->seconds *= 0.75; /* faster than calibrated: aim earlier */
            t->old_kept += c == 'O';
            t->new_in_place += c == 'N';
            /* a write that finished before the signal came must have put the new set in place */
            bool ok = (died || exited) && left == 0 && c != 0 && !(exited && c != 'N');
            if (!ok) {
                t->failures++;
                fprintf(stderr,
                        "  FAIL %s, %s temporaries, %s after %ld us: status %s %d, %d "
                        "temporaries left, target %s\n",
                        sc->label, named ? "named" : "unnamed", strsignal(sigs[s]), delay,
                        WIFSIGNALED(ws) ? "signal" : "exit",
                        WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws), left,
                        c == 'O' ? "old" : c == 'N' ? "new" : "neither old nor new");
            }
        }
}

static void scenario_test(scenario *sc, int trials)
{
    setup();
    ASSERT_TRUE(setup_ok);
    if (!rng) {
        rng = 0x7369676e616c73ull;
        const char *env = getenv("INGOT_SIGNAL_SEED");
        if (env) rng = strtoull(env, NULL, 0);
        fprintf(stderr, "  seed 0x%llx (INGOT_SIGNAL_SEED)\n", (unsigned long long)rng);
    }
    bool have_unnamed = unnamed_tmp_works(out_dir);
    for (int named = 0; named < 2; named++) {
        tally t = {0};
        signal_runs(sc, named, trials, &t);
        total_runs += t.runs;
        total_failures += t.failures;
        fprintf(stderr,
                "  %s, %s temporaries: %d signals (INT, TERM, HUP), %d died of the signal, %d "
                "finished first; target old %d, new %d; a named temporary existed at %d of the "
                "signals; %d failures\n",
                sc->label, named ? "named" : "unnamed", t.runs, t.died, t.exited, t.old_kept,
                t.new_in_place, t.tmp_seen, t.failures);
        ASSERT_EQ(t.failures, 0);
        ASSERT_TRUE(t.died > 0 && t.old_kept > 0); /* signals landed mid-write */
        if (named || !have_unnamed) ASSERT_TRUE(t.tmp_seen > 0); /* ... while one existed */
        else ASSERT_EQ(t.tmp_seen, 0); /* unnamed: never one to see */
    }
}

TEST(test_signal_convert_single) { scenario_test(&sc_single, 2); }
TEST(test_signal_convert_sharded) { scenario_test(&sc_sharded, 2); }
TEST(test_signal_pack) { scenario_test(&sc_pack, 2); }

/* A CLI started with SIGINT ignored (nohup, `cmd &` in a script) keeps ignoring it. */
TEST(test_signal_ignored_stays_ignored)
{
    setup();
    ASSERT_TRUE(setup_ok);
    scenario *sc = &sc_single;
    ASSERT_EQ(restore_old(sc), 0);
    pid_t pid = spawn(sc, true, out_dir, true, true);
    ASSERT_TRUE(pid > 0);
    struct timespec ts = {0, (long)(sc->seconds * 0.3e9)};
    nanosleep(&ts, NULL);
    kill(pid, SIGINT);
    int ws = 0;
    ASSERT_EQ(waitpid(pid, &ws, 0), pid);
    ASSERT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    ASSERT_EQ(classify(sc), 'N');
    ASSERT_EQ(count_tmps(out_dir, false), 0);
}

/* ---------------------------------------------------------------------------------------------
 * In process: ingot_writer_remove_temporaries()
 * ------------------------------------------------------------------------------------------- */

static void remove_temporaries_case(int tmpfile_mode)
{
    setup_root();
    int saved = ingot__afile_tmpfile;
    ingot__afile_tmpfile = tmpfile_mode;
    char dir[600], t1[800], t2[800];
    snprintf(dir, sizeof dir, "%s/api", root);
    ASSERT_EQ(mkdir(dir, 0755), 0);
    snprintf(t1, sizeof t1, "%s/a.ingot", dir);
    snprintf(t2, sizeof t2, "%s/b.safetensors.index.json", dir);
    static const uint8_t old_bytes[] = "old";
    ASSERT_EQ(put_file(t1, old_bytes, 3), 0);
    ingot_writer *w1, *w2;
    ingot_error e;
    ingot_writer_opts so = {.format = "safetensors", .no_fsync = true};
    ASSERT_OK(ingot_writer_new(NULL, &w1, &e));
    ASSERT_OK(ingot_writer_new(&so, &w2, &e));
    ASSERT_OK(ingot_writer_set_option(w2, "max_shard_size", "100", &e));
    static uint8_t data[300];
    uint64_t shape = 100;
    for (int i = 0; i < 3; i++) {
        char name[8] = {'t', (char)('0' + i), 0};
        ASSERT_OK(ingot_writer_add_tensor(w1, name, INGOT_DTYPE_U8, 1, &shape, NULL, data, &e));
        ASSERT_OK(ingot_writer_add_tensor(w2, name, INGOT_DTYPE_U8, 1, &shape, NULL, data, &e));
    }
    ASSERT_OK(ingot_writer_begin(w1, t1, &e));
    ASSERT_OK(ingot_writer_begin(w2, t2, &e)); /* three shards and the index, all streamed */
    bool unnamed = tmpfile_mode && unnamed_tmp_works(dir);
    int before = count_tmps(dir, false);
    size_t removed = ingot_writer_remove_temporaries();
    ASSERT_EQ(count_tmps(dir, false), 0);
    ASSERT_EQ(removed, (size_t)before);
    ASSERT_EQ(before, unnamed ? 0 : 5);
    /* a second call finds nothing left */
    ASSERT_EQ(ingot_writer_remove_temporaries(), 0);
    if (!unnamed) {
        /* the temporaries are gone: commit fails, the targets stay as they were */
        ASSERT_ST(ingot_writer_commit(w1, &e), INGOT_IO);
        ASSERT_ST(ingot_writer_commit(w2, &e), INGOT_IO);
        ASSERT_TRUE(file_equals(t1, old_bytes, 3));
        ASSERT_EQ(count_entries(dir), 1);
    } else {
        /* unnamed temporaries were not touched: both commits put the new files in place */
        ASSERT_OK(ingot_writer_commit(w1, &e));
        ASSERT_OK(ingot_writer_commit(w2, &e));
        ASSERT_EQ(count_entries(dir), 5);
    }
    ingot_writer_free(w1);
    ingot_writer_free(w2);
    ASSERT_EQ(count_tmps(dir, false), 0);
    ASSERT_EQ(ingot_writer_remove_temporaries(), 0); /* the registry is empty again */
    ingot__afile_tmpfile = saved;
    remove_scratch(dir);
}

TEST(test_remove_temporaries_named) { remove_temporaries_case(0); }
TEST(test_remove_temporaries_unnamed) { remove_temporaries_case(1); }

/* The old and the new sharded checkpoint: the same shard names, different data. */
static ingot_status save_sharded(const char *path, uint8_t fill)
{
    ingot_writer_opts so = {.format = "safetensors", .no_fsync = true};
    ingot_writer *w;
    ingot_error e;
    ingot_status st = ingot_writer_new(&so, &w, &e);
    if (st != INGOT_OK) return st;
    st = ingot_writer_set_option(w, "max_shard_size", "1000", &e);
    static uint8_t data[4][1000];
    memset(data, fill, sizeof data);
    uint64_t shape = 1000;
    for (int i = 0; i < 4 && st == INGOT_OK; i++) {
        char name[8] = {'t', (char)('0' + i), 0};
        st = ingot_writer_add_tensor(w, name, INGOT_DTYPE_U8, 1, &shape, NULL, data[i], &e);
    }
    if (st == INGOT_OK) st = ingot_writer_save(w, path, &e);
    ingot_writer_free(w);
    return st;
}

static long renames;
static int r_rename(const char *a, const char *b)
{
    if (++renames == 2) kill(getpid(), SIGTERM); /* delivered at once unless blocked */
    return ingot__io_libc.rename(a, b);
}

static void signal_between_renames(int tmpfile_mode)
{
    setup_root();
    char d[600], ref[600], idx[700], ridx[700];
    snprintf(d, sizeof d, "%s/renames", root);
    snprintf(ref, sizeof ref, "%s/renames-ref", root);
    remove_scratch(d); /* left by an earlier failure */
    remove_scratch(ref);
    ASSERT_EQ(mkdir(d, 0755), 0);
    ASSERT_EQ(mkdir(ref, 0755), 0);
    snprintf(idx, sizeof idx, "%s/m.safetensors.index.json", d);
    snprintf(ridx, sizeof ridx, "%s/m.safetensors.index.json", ref);
    ASSERT_OK(save_sharded(idx, 0x11));  /* the old checkpoint */
    ASSERT_OK(save_sharded(ridx, 0x22)); /* what the new one must be */
    ASSERT_EQ(count_entries(d), 5);
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        ingot__afile_tmpfile = tmpfile_mode;
        ingot__io_ops ops = ingot__io_libc;
        ops.rename = r_rename;
        ingot__io_set(&ops);
        save_sharded(idx, 0x22);
        _exit(0); /* not reached: the signal is taken when the renames are done */
    }
    int ws = 0;
    ASSERT_EQ(waitpid(pid, &ws, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGTERM);
    ASSERT_EQ(count_entries(d), 5);
    const char *names[] = {"m.safetensors.index.json", "m-00001-of-00004.safetensors",
                           "m-00002-of-00004.safetensors", "m-00003-of-00004.safetensors",
                           "m-00004-of-00004.safetensors"};
    for (int i = 0; i < 5; i++) {
        char a[800], b[800];
        snprintf(a, sizeof a, "%s/%s", d, names[i]);
        snprintf(b, sizeof b, "%s/%s", ref, names[i]);
        if (!same_files(a, b)) FAIL_AT("%s is not the new file", names[i]);
    }
    remove_scratch(d);
    remove_scratch(ref);
}

TEST(test_signal_between_renames_named) { signal_between_renames(0); }
TEST(test_signal_between_renames_unnamed) { signal_between_renames(1); }

TEST(test_zz_summary)
{
    fprintf(stderr, "  figures: %d signals sent, %d failures\n", total_runs, total_failures);
    ASSERT_EQ(total_failures, 0);
    for (int s = 0; s < 3; s++) {
        scenario *sc = s == 0 ? &sc_single : s == 1 ? &sc_sharded : &sc_pack;
        for (size_t i = 0; i < sc->n_names; i++) free(sc->old_img[i]);
    }
}

RUN_TESTS(T(test_remove_temporaries_named), T(test_remove_temporaries_unnamed),
          T(test_signal_between_renames_named), T(test_signal_between_renames_unnamed),
          T(test_signal_convert_single), T(test_signal_convert_sharded), T(test_signal_pack),
          T(test_signal_ignored_stays_ignored), T(test_zz_summary))
