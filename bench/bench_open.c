/*
 * bench_open.c - open latency of every reader on the file shapes of issue 17, each against its
 * baselines in the same run, and the UTF-8 validator against a plain scan of the same bytes.
 *
 * Files (generated once into --dir/bench_open/, reused while they exist):
 *   t1000.ingot   1000 tensors with llama.cpp names (BF16/F32/F16 matrices, F16 vectors), 16 MiB
 *   vocab.ingot   1003 tensors + the 32k-token vocab of ../shared/fixtures (tokens, scores,
 *                 token types) + 20 scalar KVs, the tokens packed (v1.1, FORMAT.md §7.1; an older
 *                 vocab.ingot is rewritten); vocab_v10.ingot: the same with the tokens as v1.0
 *                 16-byte references (ingot_v1_0); vocab.gguf: the same model as GGUF
 *   small.gguf    12 tensors, 200 KB; small.safetensors and small.npy (one 200 KB array) beside it;
 *                 tiny.gguf: the 704-byte fixture gguf_align64.gguf
 *   m1000.npz     1000 F32 members written by numpy's np.savez (/usr/bin/python3), 16 KiB each
 *   sd300.pt      300 F32 tensors written by torch.save (zip format), 64 KiB each
 *   m1000s.npz, sd300s.pt  the same with small members (3 KiB, 1 KiB): local headers close
 *                 enough to share reads (zip.c, PF_GAP)
 * Cases (--cases, default all): crc, utf8, native, vocab, small, zip. crc: ingot_crc32c at every
 * dispatch level, in cache, 512 B to 4 MiB (GB/s). Every open case times --iters
 * calls of ingot_file_open + one tensor_find + close per rep, against the floor (open + fstat +
 * mmap + munmap + close of the same file), reps alternating which goes first; where a peer is
 * installed it runs in a child process on the same file in the same rep: numpy's
 * np.load(mmap_mode="r") for .npy and lazy np.load for .npz (/usr/bin/python3, timed inside the
 * child). With --old-lib PATH (a libingot.so built from an earlier commit) the same open through
 * that library runs too ("old"). Printed: medians per op, and the median of the per-rep ratios.
 *
 *   bench_open [--dir DIR] [--reps N] [--iters N] [--cases LIST] [--old-lib PATH] [--io pread]
 *              [--wall]
 * Times are CPU time of the process (user + system; numpy's: time.process_time in its child)
 * unless --wall.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ingot/ingot.h"
#include "crc32c.h"
#include "utf8.h"
#include "bench_util.h"

#ifndef BENCH_DEFAULT_DIR
#define BENCH_DEFAULT_DIR "."
#endif
#ifndef INGOT_SOURCE_DIR
#define INGOT_SOURCE_DIR "."
#endif
#define FIXTURES INGOT_SOURCE_DIR "/../shared/fixtures"
#define PYTHON "/usr/bin/python3"
#define MAX_REPS 201

extern char **environ;

/* CPU time of this process by default (user + system: the system calls count), which a machine
 * shared with other work disturbs far less than wall time; --wall for wall time. */
static clockid_t bench_clock = CLOCK_PROCESS_CPUTIME_ID;

static void die(const char *what, const ingot_error *e)
{
    fprintf(stderr, "bench_open: %s: %s\n", what, e ? e->msg : "failed");
    exit(1);
}

static bool exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && sb.st_size > 0;
}

/* Runs argv; its stdout into out. False if it could not run or failed. */
static bool run_proc(char *const argv[], char *out, size_t cap)
{
    int fd[2];
    if (pipe(fd) != 0) return false;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (rc != 0) {
        close(fd[0]);
        return false;
    }
    size_t got = 0;
    ssize_t r;
    while ((r = read(fd[0], out + got, cap - 1 - got)) > 0) got += (size_t)r;
    out[got] = 0;
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ---- the files ---- */

static const char *const layer_parts[9] = {
    "attn_norm.weight", "attn_q.weight",   "attn_k.weight", "attn_v.weight",   "attn_output.weight",
    "ffn_norm.weight",  "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight",
};

static void tensor_name(char *name, size_t cap, int i)
{
    if (i == 0) snprintf(name, cap, "token_embd.weight");
    else if (i == 1) snprintf(name, cap, "output_norm.weight");
    else if (i == 2) snprintf(name, cap, "output.weight");
    else if (i == 3) snprintf(name, cap, "rope_freqs.weight");
    else snprintf(name, cap, "blk.%d.%s", (i - 4) / 9, layer_parts[(i - 4) % 9]);
}

/* n tensors of about `bytes` in all; with vocab, its three arrays; format "ingot", "gguf" or
 * "safetensors" (safetensors gets no metadata but general.name). */
static bool write_v10; /* .ingot string arrays as v1.0 references */

static void write_model(const char *path, const char *format, int n, uint64_t bytes,
                        const ingot_file *vocab)
{
    ingot_writer_opts wo = {.format = format, .no_fsync = true, .ingot_v1_0 = write_v10};
    ingot_writer *w;
    ingot_error e;
    if (ingot_writer_new(&wo, &w, &e)) die("writer", &e);
    bool st = strcmp(format, "safetensors") == 0;
    ingot_writer_set_string(w, "general.name", "bench model");
    if (!st) {
        ingot_writer_set_string(w, "general.architecture", "llama");
        static const char *const u32keys[] = {
            "llama.block_count", "llama.context_length", "llama.embedding_length",
            "llama.feed_forward_length", "llama.attention.head_count",
            "llama.attention.head_count_kv", "llama.rope.dimension_count", "llama.vocab_size",
            "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
            "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
            "general.file_type", "general.quantization_version"};
        for (size_t i = 0; i < sizeof u32keys / sizeof *u32keys; i++)
            ingot_writer_set_u32(w, u32keys[i], (uint32_t)(i * 1000 + 1));
        ingot_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
        ingot_writer_set_f32(w, "llama.rope.freq_base", 10000.0f);
        ingot_writer_set_string(w, "tokenizer.ggml.model", "llama");
        ingot_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true);
    }
    if (vocab) {
        ingot_meta_info m;
        if (ingot_file_meta_find(vocab, "tokenizer.ggml.tokens", &m)) die("vocab tokens", NULL);
        const void **p = malloc(m.count * sizeof *p);
        size_t *l = malloc(m.count * sizeof *l);
        for (uint64_t k = 0; k < m.count; k++) {
            const char *s;
            ingot_file_meta_array_string(vocab, m.index, k, &s, &l[k]);
            p[k] = s;
        }
        ingot_writer_set_string_array(w, "tokenizer.ggml.tokens", INGOT_META_STRING, p, l,
                                      m.count);
        free(p);
        free(l);
        static const char *const num[2] = {"tokenizer.ggml.scores", "tokenizer.ggml.token_type"};
        for (int k = 0; k < 2; k++) {
            if (ingot_file_meta_find(vocab, num[k], &m)) die("vocab arrays", NULL);
            void *buf = malloc(m.count * 4);
            ingot_file_meta_array_read(vocab, m.index, m.type, 0, m.count, buf);
            ingot_writer_set_array(w, num[k], m.type, buf, m.count);
            free(buf);
        }
    }
    uint64_t per = bytes / (uint64_t)n / 1024 * 1024;
    if (per < 1024) per = 1024;
    uint8_t *src = calloc(1, (size_t)per * 2);
    char name[64];
    for (int i = 0; i < n; i++) {
        tensor_name(name, sizeof name, i);
        ingot_dtype dt = i % 4 == 0 ? INGOT_DTYPE_BF16 : i % 4 == 1 ? INGOT_DTYPE_F32
                         : i % 4 == 2 ? INGOT_DTYPE_F16 : INGOT_DTYPE_F16;
        uint64_t shape[2] = {per / 512, 256};
        uint32_t rank = 2;
        if (dt == INGOT_DTYPE_F32) shape[0] = per / 1024;
        if (i % 4 == 3) rank = 1, shape[0] = 1024;
        if (ingot_writer_add_tensor(w, name, dt, rank, shape, NULL, src, &e)) die(name, &e);
    }
    if (ingot_writer_save(w, path, &e)) die("save", &e);
    ingot_writer_free(w);
    free(src);
}

static bool py(const char *script, const char *a1, const char *a2, const char *a3, char *out,
               size_t cap)
{
    char *argv[] = {PYTHON, "-c", (char *)script, (char *)a1, (char *)a2, (char *)a3,
                    bench_clock == CLOCK_MONOTONIC ? NULL : "cpu", NULL};
    return run_proc(argv, out, cap);
}

static const char *py_gen_npz =
    "import sys, numpy as np\n"
    "n, rows = int(sys.argv[2]), int(sys.argv[3] or 16)\n"
    "a = {('layer%04d' % i): np.full((rows, 256), i, dtype=np.float32) for i in range(n)}\n"
    "np.savez(sys.argv[1], **a)\n";

static const char *py_gen_pt =
    "import sys, collections, torch\n"
    "n, rows = int(sys.argv[2]), int(sys.argv[3] or 64)\n"
    "sd = collections.OrderedDict()\n"
    "for i in range(n): sd['layers.%d.weight' % i] = torch.full((rows, 256), float(i))\n"
    "torch.save(sd, sys.argv[1])\n";

/* Times `iters` opens of path by numpy in one child (reps rounds); prints "median_us". */
static const char *py_time =
    "import sys, time, numpy as np\n"
    "p, iters, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]\n"
    "def once():\n"
    "    if mode == 'npy':\n"
    "        a = np.load(p, mmap_mode='r'); del a\n"
    "    else:\n"
    "        z = np.load(p); z.files; z.close()\n"
    "once()\n"
    "clk = time.process_time if len(sys.argv) > 4 else time.perf_counter\n"
    "t = clk()\n"
    "for _ in range(iters): once()\n"
    "print('%.3f' % ((clk() - t) / iters * 1e6))\n";

typedef struct {
    char dir[512], t1000[600], vocab_ingot[600], vocab_v10[600], vocab_gguf[600], small_gguf[600],
        tiny_gguf[600],
        small_st[600], small_npy[600], npz[600], pt[600], npz_s[600], pt_s[600];
} files;

static void make_files(files *fs, const char *dir)
{
    snprintf(fs->dir, sizeof fs->dir, "%s/bench_open", dir);
    mkdir(fs->dir, 0755);
#define F(field, name) snprintf(fs->field, sizeof fs->field, "%s/" name, fs->dir)
    F(t1000, "t1000.ingot");
    F(vocab_ingot, "vocab.ingot");
    F(vocab_v10, "vocab_v10.ingot");
    F(vocab_gguf, "vocab.gguf");
    F(small_gguf, "small.gguf");
    F(small_st, "small.safetensors");
    F(small_npy, "small.npy");
    F(npz, "m1000.npz");
    F(pt, "sd300.pt");
    F(npz_s, "m1000s.npz");
    F(pt_s, "sd300s.pt");
#undef F
    snprintf(fs->tiny_gguf, sizeof fs->tiny_gguf, "%s/gguf/gguf_align64.gguf", FIXTURES);
    if (!exists(fs->t1000)) write_model(fs->t1000, "ingot", 1000, 16u << 20, NULL);
    bool packed = false; /* vocab.ingot in the packed form (older runs wrote references) */
    ingot_file *old;
    if (exists(fs->vocab_ingot) && ingot_file_open(fs->vocab_ingot, NULL, &old, NULL) == 0) {
        packed = strcmp(ingot_file_version(old), "1.1") == 0;
        ingot_file_close(old);
    }
    if (!packed || !exists(fs->vocab_v10) || !exists(fs->vocab_gguf)) {
        ingot_file *v;
        ingot_error e;
        if (ingot_file_open(FIXTURES "/gguf/ggml-vocab-llama-spm.gguf", NULL, &v, &e))
            die("vocab fixture", &e);
        write_model(fs->vocab_ingot, "ingot", 1003, 16u << 20, v);
        write_v10 = true;
        write_model(fs->vocab_v10, "ingot", 1003, 16u << 20, v);
        write_v10 = false;
        write_model(fs->vocab_gguf, "gguf", 1003, 16u << 20, v);
        ingot_file_close(v);
    }
    if (!exists(fs->small_gguf)) write_model(fs->small_gguf, "gguf", 12, 200000, NULL);
    if (!exists(fs->small_st)) write_model(fs->small_st, "safetensors", 12, 200000, NULL);
    if (!exists(fs->small_npy)) {
        ingot_writer_opts wo = {.format = "npy", .no_fsync = true};
        ingot_writer *w;
        ingot_error e;
        float *d = calloc(50000, 4);
        uint64_t shape[2] = {200, 250};
        if (ingot_writer_new(&wo, &w, &e) ||
            ingot_writer_add_tensor(w, "small", INGOT_DTYPE_F32, 2, shape, NULL, d, &e) ||
            ingot_writer_save(w, fs->small_npy, &e))
            die("small.npy", &e);
        ingot_writer_free(w);
        free(d);
    }
    char out[256];
    if (!exists(fs->npz) && !py(py_gen_npz, fs->npz, "1000", "", out, sizeof out))
        fs->npz[0] = 0;
    if (!exists(fs->pt) && !py(py_gen_pt, fs->pt, "300", "", out, sizeof out)) fs->pt[0] = 0;
    if (!exists(fs->npz_s) && !py(py_gen_npz, fs->npz_s, "1000", "3", out, sizeof out))
        fs->npz_s[0] = 0;
    if (!exists(fs->pt_s) && !py(py_gen_pt, fs->pt_s, "300", "1", out, sizeof out))
        fs->pt_s[0] = 0;
}

/* ---- open timing ---- */

typedef ingot_status (*open_fn)(const char *, const ingot_open_opts *, ingot_file **,
                                ingot_error *);
typedef void (*close_fn)(ingot_file *);
typedef ingot_status (*find_fn)(const ingot_file *, const char *, ingot_tensor_info *);
typedef struct {
    open_fn open;
    close_fn close;
    find_fn find;
} api;

static api cur_api = {ingot_file_open, ingot_file_close, ingot_file_tensor_find}, old_api;
static bool have_old;
static ingot_open_opts open_opts = {.io = INGOT_IO_MMAP};

static double time_floor(const char *path, int iters)
{
    double t0 = bench_clock_s(bench_clock);
    for (int i = 0; i < iters; i++) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat sb;
        if (fd < 0 || fstat(fd, &sb)) die(path, NULL);
        void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) die("mmap", NULL);
        munmap(p, (size_t)sb.st_size);
        close(fd);
    }
    return (bench_clock_s(bench_clock) - t0) / iters;
}

static double time_open(const api *a, const char *path, const char *tensor, int iters)
{
    double t0 = bench_clock_s(bench_clock);
    for (int i = 0; i < iters; i++) {
        ingot_file *f;
        ingot_error e;
        if (a->open(path, &open_opts, &f, &e)) die(path, &e);
        ingot_tensor_info t;
        if (tensor && a->find(f, tensor, &t)) die("find", NULL);
        a->close(f);
    }
    return (bench_clock_s(bench_clock) - t0) / iters;
}

/* numpy in a child: median microseconds per open, or -1 */
static double time_numpy(const char *path, const char *mode, int iters)
{
    char it[32], out[256];
    snprintf(it, sizeof it, "%d", iters);
    if (!py(py_time, path, it, mode, out, sizeof out)) return -1;
    return atof(out) * 1e-6;
}

typedef struct {
    double cur[MAX_REPS], floor[MAX_REPS], old[MAX_REPS], peer[MAX_REPS], other[MAX_REPS];
} samples;

static void line(const char *label, const double *a, const double *b, int reps, const char *vs)
{
    double r[MAX_REPS];
    for (int i = 0; i < reps; i++) r[i] = a[i] / b[i];
    printf("  %-30s %10.2f us  vs %-26s %10.2f us  ratio %7.3f\n", label,
           bench_median(a, reps) * 1e6, vs, bench_median(b, reps) * 1e6, bench_median(r, reps));
}

/* One open case: ingot against the floor, the old library and a numpy mode (NULL: none), and,
 * with other_path, ingot's open of another file (the same model in another format). */
static void open_case(const char *label, const char *path, const char *tensor, int reps,
                      int iters, const char *np_mode, const char *other_path,
                      const char *other_label)
{
    samples *s = calloc(1, sizeof *s);
    time_open(&cur_api, path, tensor, iters); /* page cache, allocator */
    if (have_old) time_open(&old_api, path, tensor, iters);
    for (int r = 0; r < reps; r++) {
        if (r % 2) {
            s->cur[r] = time_open(&cur_api, path, tensor, iters);
            s->floor[r] = time_floor(path, iters);
        } else {
            s->floor[r] = time_floor(path, iters);
            s->cur[r] = time_open(&cur_api, path, tensor, iters);
        }
        if (have_old) s->old[r] = time_open(&old_api, path, tensor, iters);
        if (other_path) s->other[r] = time_open(&cur_api, other_path, tensor, iters);
        if (np_mode) s->peer[r] = time_numpy(path, np_mode, iters);
    }
    printf("%s (%s)\n", label, path);
    line("ingot open + find + close", s->cur, s->floor, reps, "floor");
    if (have_old) line("", s->cur, s->old, reps, "old library");
    if (other_path) line("", s->cur, s->other, reps, other_label);
    if (np_mode && s->peer[0] > 0) line("", s->cur, s->peer, reps, np_mode[1] == 'p' &&
                                        np_mode[2] == 'y' ? "np.load(mmap_mode='r')"
                                                          : "np.load (lazy npz)");
    free(s);
}

/* ---- UTF-8 ---- */

static volatile uint64_t sink;

/* The baseline: every byte read and ORed, 32 bytes a step in four 8-byte words (what a plain
 * scan compiles to at -O2; a byte loop is printed too). */
__attribute__((noinline)) static uint64_t plain_scan(const uint8_t *p, size_t n)
{
    uint64_t a = 0, b = 0, c = 0, d = 0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, p + i, 32);
        a |= w[0], b |= w[1], c |= w[2], d |= w[3];
    }
    for (; i < n; i++) a |= p[i];
    return a | b | c | d;
}

__attribute__((noinline)) static uint64_t byte_scan(const uint8_t *p, size_t n)
{
    uint64_t acc = 0;
    for (size_t i = 0; i < n; i++) acc |= p[i];
    return acc;
}

static void utf8_case(int reps)
{
    /* the 32k tokens of the fixture, each followed by a NUL: the pool of a converted model */
    ingot_file *v;
    ingot_error e;
    if (ingot_file_open(FIXTURES "/gguf/ggml-vocab-llama-spm.gguf", NULL, &v, &e))
        die("vocab fixture", &e);
    ingot_meta_info m;
    if (ingot_file_meta_find(v, "tokenizer.ggml.tokens", &m)) die("tokens", NULL);
    size_t n = 0, cap = 1 << 20, high = 0;
    uint8_t *sec = malloc(cap);
    size_t *off = malloc(m.count * sizeof *off), *len = malloc(m.count * sizeof *len);
    for (uint64_t k = 0; k < m.count; k++) {
        const char *s;
        size_t l;
        ingot_file_meta_array_string(v, m.index, k, &s, &l);
        if (n + l + 1 > cap) die("vocab too large", NULL);
        memcpy(sec + n, s, l);
        off[k] = n, len[k] = l;
        for (size_t j = 0; j < l; j++) high += (uint8_t)s[j] >= 0x80;
        n += l;
        sec[n++] = 0;
    }
    ingot_file_close(v);
    printf("utf8: %" PRIu64 " tokens, %zu bytes with separators, %.1f %% of them >= 0x80\n",
           m.count, n, 100.0 * (double)high / (double)n);
    int inner = 200;
    double scan[MAX_REPS], lv[INGOT__UTF8_TOP + 1][MAX_REPS], per[MAX_REPS], mc[MAX_REPS], bs[MAX_REPS];
    int levels[INGOT__UTF8_TOP + 1], nl = 0, last = -1;
    for (int l = 0; l <= INGOT__UTF8_TOP; l++) {
        int got = ingot__utf8_limit(l);
        if (got != last) levels[nl++] = got;
        last = got;
    }
    ingot__utf8_limit(INGOT__UTF8_TOP);
    for (int r = 0; r < reps; r++) {
        double t = bench_clock_s(bench_clock);
        for (int i = 0; i < inner; i++) sink += plain_scan(sec, n);
        scan[r] = (bench_clock_s(bench_clock) - t) / inner;
        t = bench_clock_s(bench_clock);
        for (int i = 0; i < inner; i++) sink += (uintptr_t)memchr(sec, 0xFF, n);
        mc[r] = (bench_clock_s(bench_clock) - t) / inner;
        t = bench_clock_s(bench_clock);
        for (int i = 0; i < inner / 4; i++) sink += byte_scan(sec, n);
        bs[r] = (bench_clock_s(bench_clock) - t) / (inner / 4);
        for (int k = 0; k < nl; k++) {
            ingot__utf8_limit(levels[k]);
            t = bench_clock_s(bench_clock);
            for (int i = 0; i < inner; i++)
                if (!ingot__utf8_valid(sec, n, true)) die("vocab not UTF-8", NULL);
            lv[k][r] = (bench_clock_s(bench_clock) - t) / inner;
        }
        ingot__utf8_limit(INGOT__UTF8_TOP);
        t = bench_clock_s(bench_clock);
        for (int i = 0; i < inner / 10; i++)
            for (uint64_t k = 0; k < m.count; k++)
                sink += ingot__utf8_valid(sec + off[k], len[k], true);
        per[r] = (bench_clock_s(bench_clock) - t) / (inner / 10);
    }
    double gb = (double)n * 1e-9;
    printf("  %-40s %8.2f GB/s  (the baseline)\n", "plain scan (OR of every byte, by words)",
           gb / bench_median(scan, reps));
    printf("  %-40s %8.2f GB/s  (info)\n", "byte loop (OR of every byte)",
           gb / bench_median(bs, reps));
    printf("  %-40s %8.2f GB/s  (info)\n", "glibc memchr", gb / bench_median(mc, reps));
    static const char *const names[INGOT__UTF8_TOP + 1] = {"portable", "SSE4.1", "AVX2",
                                                            "AVX-512BW", "AVX-512 VBMI"};
    for (int k = 0; k < nl; k++) {
        double r[MAX_REPS];
        for (int i = 0; i < reps; i++) r[i] = scan[i] / lv[k][i];
        char lab[64];
        snprintf(lab, sizeof lab, "ingot__utf8_valid, section, %s%s", names[levels[k]],
                 k == nl - 1 ? " (default)" : "");
        printf("  %-40s %8.2f GB/s  ratio to the scan %6.3f\n", lab, gb / bench_median(lv[k], reps),
               bench_median(r, reps));
    }
    printf("  %-40s %8.2f GB/s  (info: one call per token)\n", "ingot__utf8_valid, per string",
           gb / bench_median(per, reps));
    free(sec);
    free(off);
    free(len);
}

/* ---- CRC-32C ---- */

/* ingot_crc32c at every dispatch level this CPU has, in cache (the same buffer hashed over and
 * over), against the plain scan of the same bytes; GB/s, medians of reps. */
static void crc_case(int reps)
{
    static const size_t sizes[] = {512, 1024, 4096, 16384, 52224, 262144, 1u << 20, 4u << 20};
    size_t max = 4u << 20;
    uint8_t *b = malloc(max);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < max; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[i] = (uint8_t)x;
    }
    int levels[INGOT__CRC32C_TOP + 1], nl = 0, last = -1;
    for (int l = 0; l <= INGOT__CRC32C_TOP; l++) {
        int got = ingot__crc32c_limit(l);
        if (got != last && got > 0) levels[nl++] = got;
        last = got;
    }
    static const char *const names[INGOT__CRC32C_TOP + 1] = {
        "portable", "crc32", "crc32 + PCLMULQDQ", "ymm VPCLMULQDQ + crc32", "zmm VPCLMULQDQ"};
    printf("crc32c, GB/s in cache (medians of %d reps); levels:", reps);
    for (int k = 0; k < nl; k++)
        printf(" %d %s%s", levels[k], names[levels[k]], k + 1 < nl ? "," : "");
    printf("\n  %10s %12s", "bytes", "plain scan");
    for (int k = 0; k < nl; k++) printf(" %10s%d", "level ", levels[k]);
    printf("\n");
    double t0[MAX_REPS], lv[INGOT__CRC32C_TOP + 1][MAX_REPS];
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        size_t n = sizes[z];
        int inner = (int)((16u << 20) / n);
        for (int r = 0; r < reps; r++) {
            double t = bench_clock_s(bench_clock);
            for (int i = 0; i < inner; i++) sink += plain_scan(b, n);
            t0[r] = (bench_clock_s(bench_clock) - t) / inner;
            for (int k = 0; k < nl; k++) {
                ingot__crc32c_limit(levels[k]);
                t = bench_clock_s(bench_clock);
                for (int i = 0; i < inner; i++) sink += ingot_crc32c((uint32_t)i, b, n);
                lv[k][r] = (bench_clock_s(bench_clock) - t) / inner;
            }
            ingot__crc32c_limit(INGOT__CRC32C_TOP);
        }
        double gb = (double)n * 1e-9;
        printf("  %10zu %12.2f", n, gb / bench_median(t0, reps));
        for (int k = 0; k < nl; k++) printf(" %11.2f", gb / bench_median(lv[k], reps));
        printf("\n");
    }
    free(b);
}

int main(int argc, char **argv)
{
    const char *dir = BENCH_DEFAULT_DIR, *cases = "crc,utf8,native,vocab,small,zip", *old = NULL;
    int reps = 11, iters = 200;
    for (int i = 1; i < argc; i++) {
        bool more = i + 1 < argc;
        if (!strcmp(argv[i], "--dir") && more) dir = argv[++i];
        else if (!strcmp(argv[i], "--reps") && more) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && more) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cases") && more) cases = argv[++i];
        else if (!strcmp(argv[i], "--old-lib") && more) old = argv[++i];
        else if (!strcmp(argv[i], "--wall")) bench_clock = CLOCK_MONOTONIC;
        else if (!strcmp(argv[i], "--io") && more && !strcmp(argv[i + 1], "pread"))
            open_opts.io = INGOT_IO_PREAD, i++;
        else {
            fprintf(stderr, "usage: bench_open [--dir DIR] [--reps N] [--iters N] [--cases "
                            "utf8,native,vocab,small,zip] [--old-lib PATH] [--io pread] [--wall]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > MAX_REPS || iters < 1) die("bad --reps/--iters", NULL);
    printf("command:");
    for (int i = 0; i < argc; i++) printf(" %s", argv[i]);
    printf("\n");
    if (old) {
        void *h = dlopen(old, RTLD_NOW | RTLD_LOCAL);
        if (!h) die(dlerror(), NULL);
        *(void **)&old_api.open = dlsym(h, "ingot_file_open");
        *(void **)&old_api.close = dlsym(h, "ingot_file_close");
        *(void **)&old_api.find = dlsym(h, "ingot_file_tensor_find");
        if (!old_api.open || !old_api.close || !old_api.find) die("old library symbols", NULL);
        have_old = true;
    }
    files fs;
    make_files(&fs, dir);
    if (strstr(cases, "crc")) crc_case(reps);
    if (strstr(cases, "utf8")) utf8_case(reps);
    if (strstr(cases, "native"))
        open_case("native, 1000 tensors", fs.t1000, "blk.50.ffn_up.weight", reps, iters, NULL,
                  NULL, NULL);
    if (strstr(cases, "vocab")) {
        open_case("native, 1003 tensors + 32k vocab, packed (v1.1)", fs.vocab_ingot,
                  "blk.50.ffn_up.weight", reps, iters / 4 + 1, NULL, fs.vocab_gguf,
                  "GGUF open, same model");
        open_case("native, 1003 tensors + 32k vocab, v1.0 references", fs.vocab_v10,
                  "blk.50.ffn_up.weight", reps, iters / 4 + 1, NULL, fs.vocab_gguf,
                  "GGUF open, same model");
    }
    if (strstr(cases, "vocab"))
        open_case("GGUF, 1003 tensors + 32k vocab", fs.vocab_gguf, "blk.50.ffn_up.weight", reps,
                  iters / 4 + 1, NULL, NULL, NULL);
    if (strstr(cases, "small")) {
        open_case("GGUF, 704-byte fixture", fs.tiny_gguf, NULL, reps, iters, NULL, NULL, NULL);
        open_case("GGUF, 12 tensors", fs.small_gguf, "output.weight", reps, iters, NULL, NULL,
                  NULL);
        open_case("safetensors, 12 tensors", fs.small_st, "output.weight", reps, iters, NULL,
                  NULL, NULL);
        open_case("npy, 200 KB", fs.small_npy, NULL, reps, iters, "npy", NULL, NULL);
    }
    if (strstr(cases, "zip")) {
        if (fs.npz[0])
            open_case("npz, 1000 members (np.savez)", fs.npz, "layer0500", reps, iters / 10 + 1,
                      "npz", NULL, NULL);
        else
            printf("npz: not generated (needs %s with numpy)\n", PYTHON);
        if (fs.pt[0])
            open_case("PyTorch zip, 300 tensors (torch.save)", fs.pt, "layers.150.weight", reps,
                      iters / 10 + 1, NULL, NULL, NULL);
        else
            printf("PyTorch: not generated (needs %s with torch)\n", PYTHON);
        if (fs.npz_s[0])
            open_case("npz, 1000 members of 3 KiB", fs.npz_s, "layer0500", reps, iters / 10 + 1,
                      "npz", NULL, NULL);
        if (fs.pt_s[0])
            open_case("PyTorch zip, 300 tensors of 1 KiB", fs.pt_s, "layers.150.weight", reps,
                      iters / 10 + 1, NULL, NULL, NULL);
    }
    return 0;
}
