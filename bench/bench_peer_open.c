/*
 * bench_peer_open.c - ingot's open against the peers' own readers on the same files, in the same
 * process and the same minutes (issue 17's "faster than ggml's plain gguf_init_from_file" and
 * "than the Rust safetensors deserialize"). Neither peer is in Debian 12, so each comes as a
 * shared library loaded with dlopen and nothing here is built against it (docs/PERFORMANCE.md,
 * "Peers on the same machine", gives how each was obtained):
 *   --ggml-lib PATH/libggml-base.so  ggml's gguf_init_from_file with no_alloc (the header parsed
 *       and checked, no tensor data read) + gguf_find_tensor + gguf_free, for FILE.gguf;
 *   --st-lib PATH/libst_peer.so      st_peer_open_find: open + fstat + mmap + the safetensors
 *       crate's SafeTensors::deserialize + tensor(name) + munmap + close, for FILE.safetensors.
 *
 *   bench_peer_open [--ggml-lib LIB] [--st-lib LIB] [--reps N] [--iters N] FILE...
 *
 * Per file and rep, three loops of --iters calls, in an order that rotates with the rep:
 * ingot_file_open (mmap mode) + one tensor_find of the last tensor + close; the peer's open of
 * the same file with a lookup of the same name; and the floor, open + fstat + mmap + munmap +
 * close. Times are CPU time of the process (user + system); printed: medians per call and the
 * median of the per-rep ratios.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ingot/ingot.h"
#include "bench_util.h"

#define MAX_REPS 201

/* ggml's gguf.h, as declared there: the parameters are passed by value. */
struct peer_gguf_params {
    bool no_alloc;
    void **ctx;
};
typedef void *(*gguf_init_fn)(const char *, struct peer_gguf_params);
typedef void (*gguf_free_fn)(void *);
typedef int64_t (*gguf_find_fn)(const void *, const char *);
typedef int64_t (*gguf_count_fn)(const void *);

static gguf_init_fn g_init;
static gguf_free_fn g_free;
static gguf_find_fn g_find;
static gguf_count_fn g_count;

static void die(const char *what)
{
    fprintf(stderr, "bench_peer_open: %s\n", what);
    exit(1);
}

static double time_floor(const char *path, int iters)
{
    double t0 = bench_process_cpu_s();
    for (int i = 0; i < iters; i++) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat sb;
        if (fd < 0 || fstat(fd, &sb)) die(path);
        void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) die("mmap");
        munmap(p, (size_t)sb.st_size);
        close(fd);
    }
    return (bench_process_cpu_s() - t0) / iters;
}

static double time_ingot(const char *path, const char *name, int iters)
{
    ingot_open_opts o = {.io = INGOT_IO_MMAP};
    double t0 = bench_process_cpu_s();
    for (int i = 0; i < iters; i++) {
        ingot_file *f;
        ingot_error e;
        ingot_tensor_info ti;
        if (ingot_file_open(path, &o, &f, &e)) die(e.msg);
        if (name[0] && ingot_file_tensor_find(f, name, &ti)) die("ingot: tensor not found");
        ingot_file_close(f);
    }
    return (bench_process_cpu_s() - t0) / iters;
}

/* The peers, each behind one call: the file's tensor count, or -1 when the open or the lookup
 * failed. */
static int ggml_open_find(const char *path, const char *name)
{
    void *g = g_init(path, (struct peer_gguf_params){true, NULL});
    if (!g) return -1;
    int n = name[0] && g_find(g, name) < 0 ? -1 : (int)g_count(g);
    g_free(g);
    return n;
}

typedef int (*st_open_find_fn)(const char *, const char *);
static st_open_find_fn st_open_find;

static int st_peer(const char *path, const char *name) { return st_open_find(path, name); }

static double time_peer(int (*peer)(const char *, const char *), const char *path,
                        const char *name, int iters)
{
    double t0 = bench_process_cpu_s();
    for (int i = 0; i < iters; i++)
        if (peer(path, name) < 0) die("peer: open or lookup failed");
    return (bench_process_cpu_s() - t0) / iters;
}

static void *load(const char *lib)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) die(dlerror());
    return h;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

int main(int argc, char **argv)
{
    const char *glib = getenv("INGOT_GGML_LIB"), *slib = NULL;
    int reps = 21, iters = 200, first = 1;
    for (; first < argc && argv[first][0] == '-' && first + 1 < argc; first += 2) {
        if (!strcmp(argv[first], "--ggml-lib")) glib = argv[first + 1];
        else if (!strcmp(argv[first], "--st-lib")) slib = argv[first + 1];
        else if (!strcmp(argv[first], "--reps")) reps = atoi(argv[first + 1]);
        else if (!strcmp(argv[first], "--iters")) iters = atoi(argv[first + 1]);
        else first = argc;
    }
    if ((!glib && !slib) || first >= argc || reps < 1 || reps > MAX_REPS || iters < 1) {
        fprintf(stderr, "usage: bench_peer_open [--ggml-lib PATH/libggml-base.so] [--st-lib "
                        "PATH/libst_peer.so] [--reps N] [--iters N] FILE.gguf|FILE.safetensors...\n");
        return 2;
    }
    void *gh = NULL, *sh = NULL;
    if (glib) {
        gh = load(glib);
        /* dlsym returns an object pointer: stored through a void ** view of each (POSIX) */
        *(void **)&g_init = dlsym(gh, "gguf_init_from_file");
        *(void **)&g_free = dlsym(gh, "gguf_free");
        *(void **)&g_find = dlsym(gh, "gguf_find_tensor");
        *(void **)&g_count = dlsym(gh, "gguf_get_n_tensors");
        if (!g_init || !g_free || !g_find || !g_count) die("ggml: gguf_* symbols missing");
        printf("ggml: %s\n", glib);
    }
    if (slib) {
        sh = load(slib);
        *(void **)&st_open_find = dlsym(sh, "st_peer_open_find");
        if (!st_open_find) die("safetensors peer: st_peer_open_find missing");
        printf("safetensors (Rust): %s\n", slib);
    }
    printf("CPU time of the process; medians of %d reps of %d calls\n", reps, iters);
    for (int a = first; a < argc; a++) {
        const char *path = argv[a];
        bool gg = ends_with(path, ".gguf");
        int (*peer)(const char *, const char *) = gg ? ggml_open_find : st_peer;
        if (gg ? !gh : !sh || !ends_with(path, ".safetensors")) {
            fprintf(stderr, "bench_peer_open: %s: no peer loaded for this file\n", path);
            continue;
        }
        ingot_file *f;
        ingot_error e;
        if (ingot_file_open(path, NULL, &f, &e)) die(e.msg);
        uint64_t nt = ingot_file_tensor_count(f);
        char name[512] = "";
        ingot_tensor_info ti;
        if (nt && ingot_file_tensor_at(f, nt - 1, &ti) == INGOT_OK && ti.name_len < sizeof name)
            memcpy(name, ti.name, ti.name_len), name[ti.name_len] = 0;
        ingot_file_close(f);
        if (peer(path, name) != (int)nt) die("the peer disagrees on the tensor count");
        double ti_[MAX_REPS], tg[MAX_REPS], tf[MAX_REPS], rg[MAX_REPS], rf[MAX_REPS];
        time_ingot(path, name, iters); /* page cache, allocators */
        time_peer(peer, path, name, iters);
        for (int r = 0; r < reps; r++) {
            for (int k = 0; k < 3; k++) switch ((k + r) % 3) {
                case 0: ti_[r] = time_ingot(path, name, iters); break;
                case 1: tg[r] = time_peer(peer, path, name, iters); break;
                default: tf[r] = time_floor(path, iters); break;
                }
            rg[r] = tg[r] / ti_[r];
            rf[r] = ti_[r] / tf[r];
        }
        const char *pn = gg ? "ggml" : "safetensors-rs";
        printf("%s (%" PRIu64 " tensors)\n  ingot %.2f us, %s %.2f us, floor %.2f us: "
               "%s / ingot %.2fx, ingot / floor %.2fx\n",
               path, nt, bench_median(ti_, reps) * 1e6, pn, bench_median(tg, reps) * 1e6,
               bench_median(tf, reps) * 1e6, pn, bench_median(rg, reps), bench_median(rf, reps));
    }
    if (gh) dlclose(gh);
    if (sh) dlclose(sh);
    return 0;
}
