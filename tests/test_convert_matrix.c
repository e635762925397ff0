/*
 * test_convert_matrix.c - `ingot convert` between every pair of the general-purpose formats
 * (.ingot, safetensors, GGUF, .npz) and from .ingot into each seed format and back: every hop
 * keeps each tensor's name, dtype, shape and bytes, the output format is chosen from the
 * extension, and a tensor a format cannot hold is refused (exit 1, target not created) instead of
 * being changed. Runs the real CLI binary (INGOT_CLI) like a user would.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

typedef struct {
    const char *name;
    ingot_dtype dt;
    uint32_t rank;
    uint64_t shape[3];
} spec;

/* Dtypes every general-purpose format holds. GGUF, like ggml, has no unsigned integers or bool. */
static const spec tensors[] = {
    {"embed.weight", INGOT_DTYPE_F32, 2, {5, 8}},
    {"layers.0.norm", INGOT_DTYPE_F16, 1, {8}},
    {"layers.0.proj", INGOT_DTYPE_F32, 3, {2, 3, 4}},
    {"step", INGOT_DTYPE_I32, 1, {3}},
    {"ids", INGOT_DTYPE_I64, 2, {2, 2}},
};
#define NT (sizeof tensors / sizeof tensors[0])

static uint8_t data[NT][256];

static char dir[512];

static void path_of(char *out, size_t cap, const char *base, const char *ext)
{
    snprintf(out, cap, "%s/%s.%s", dir, base, ext);
}

static int run_cli(const char *a, const char *b, const char *c, const char *d)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
        execl(INGOT_CLI, "ingot", a, b, c, d, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void write_source(const char *path)
{
    ingot_writer *w;
    ingot_error e;
    ingot_writer_opts o = {.no_fsync = true};
    if (ingot_writer_new(&o, &w, &e) != INGOT_OK) return;
    for (size_t i = 0; i < NT; i++) {
        uint64_t nb;
        ingot_dtype_nbytes(tensors[i].dt, tensors[i].rank, tensors[i].shape, NULL, &nb);
        for (uint64_t k = 0; k < nb; k++) data[i][k] = (uint8_t)(k * 37 + i * 11 + 1);
        if (tensors[i].dt == INGOT_DTYPE_F16) /* keep halves finite */
            for (uint64_t k = 1; k < nb; k += 2) data[i][k] &= 0x3b;
        if (tensors[i].dt == INGOT_DTYPE_F32)
            for (uint64_t k = 3; k < nb; k += 4) data[i][k] &= 0x3f;
        ingot_writer_add_tensor(w, tensors[i].name, tensors[i].dt, tensors[i].rank,
                                tensors[i].shape, NULL, data[i], &e);
    }
    ingot_writer_save(w, path, &e);
    ingot_writer_free(w);
}

/* Every tensor of `path` equals the source (order may differ: looked up by name). */
static void check_same(const char *path, const char *hop)
{
    ingot_file *f = NULL;
    ingot_error e;
    ingot_status st = ingot_file_open(path, NULL, &f, &e);
    CHECK(st == INGOT_OK, "%s: open %s: %s %s", hop, path, ingot_status_name(st), e.msg);
    if (st != INGOT_OK) return;
    CHECK(ingot_file_tensor_count(f) == NT, "%s: %llu tensors", hop,
          (unsigned long long)ingot_file_tensor_count(f));
    for (size_t i = 0; i < NT; i++) {
        ingot_tensor_info t;
        st = ingot_file_tensor_find(f, tensors[i].name, &t);
        CHECK(st == INGOT_OK, "%s: tensor %s missing", hop, tensors[i].name);
        if (st != INGOT_OK) continue;
        CHECK(t.dtype == tensors[i].dt, "%s: %s dtype %s", hop, tensors[i].name,
              ingot_dtype_name(t.dtype));
        CHECK(t.rank == tensors[i].rank, "%s: %s rank %u", hop, tensors[i].name, t.rank);
        for (uint32_t d = 0; d < t.rank && d < 3; d++)
            CHECK(t.shape[d] == tensors[i].shape[d], "%s: %s dim %u = %llu", hop, tensors[i].name,
                  d, (unsigned long long)t.shape[d]);
        uint8_t got[256];
        if (t.nbytes <= sizeof got) {
            st = ingot_file_tensor_copy(f, t.index, got, sizeof got, &e);
            CHECK(st == INGOT_OK && memcmp(got, data[i], (size_t)t.nbytes) == 0,
                  "%s: %s bytes differ", hop, tensors[i].name);
        }
    }
    CHECK(ingot_file_verify(f, 1, &e) == INGOT_OK, "%s: verify: %s", hop, e.msg);
    ingot_file_close(f);
}

TEST(every_pair_of_general_formats)
{
    static const char *fmts[] = {"ingot", "safetensors", "gguf", "npz"};
    char src[600];
    path_of(src, sizeof src, "src", "ingot");
    write_source(src);
    for (int a = 0; a < 4; a++) {
        char pa[600];
        path_of(pa, sizeof pa, "a", fmts[a]);
        int rc = run_cli("convert", src, pa, NULL);
        CHECK(rc == 0, "ingot -> %s: exit %d", fmts[a], rc);
        check_same(pa, fmts[a]);
        for (int b = 0; b < 4; b++) {
            char pb[600], hop[64];
            snprintf(pb, sizeof pb, "%s/%s_to.%s", dir, fmts[a], fmts[b]);
            snprintf(hop, sizeof hop, "%s -> %s", fmts[a], fmts[b]);
            rc = run_cli("convert", pa, pb, NULL);
            CHECK(rc == 0, "%s: exit %d", hop, rc);
            check_same(pb, hop);
            unlink(pb);
        }
        unlink(pa);
    }
    unlink(src);
}

TEST(refusals_leave_nothing)
{
    /* A Q8_0 tensor cannot go to safetensors or .npz, a BF16 one cannot go to .npz: refused. */
    char src[600], out[600];
    path_of(src, sizeof src, "q", "ingot");
    ingot_writer *w;
    ingot_error e;
    ingot_writer_opts o = {.no_fsync = true};
    ASSERT_EQ(ingot_writer_new(&o, &w, &e), INGOT_OK);
    static uint8_t q[34 * 2], h[8];
    uint64_t qs[1] = {64}, hs[1] = {4};
    ASSERT_EQ(ingot_writer_add_tensor(w, "q", INGOT_DTYPE_Q8_0, 1, qs, NULL, q, &e), INGOT_OK);
    ASSERT_EQ(ingot_writer_add_tensor(w, "h", INGOT_DTYPE_BF16, 1, hs, NULL, h, &e), INGOT_OK);
    ASSERT_EQ(ingot_writer_save(w, src, &e), INGOT_OK);
    ingot_writer_free(w);
    static const char *targets[] = {"safetensors", "npz"};
    for (int i = 0; i < 2; i++) {
        path_of(out, sizeof out, "refused", targets[i]);
        int rc = run_cli("convert", src, out, NULL);
        CHECK(rc == 1, "Q8_0 -> %s: exit %d, want 1", targets[i], rc);
        struct stat sb;
        CHECK(stat(out, &sb) != 0, "refused convert to %s left %s", targets[i], out);
    }
    /* GGUF holds both: Q8_0 as is, BF16 as is */
    path_of(out, sizeof out, "kept", "gguf");
    CHECK(run_cli("convert", src, out, NULL) == 0, "Q8_0/BF16 -> gguf");
    unlink(out);
    unlink(src);
}

TEST(setup_dir)
{
    snprintf(dir, sizeof dir, "%s/convert_matrix", INGOT_BINARY_DIR);
    mkdir(dir, 0755);
    struct stat sb;
    ASSERT_TRUE(stat(dir, &sb) == 0);
}

RUN_TESTS(T(setup_dir), T(every_pair_of_general_formats), T(refusals_leave_nothing))
