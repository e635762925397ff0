/*
 * test_convert_matrix.c - `ingot convert` between every pair of the general-purpose formats
 * (.ingot, safetensors, GGUF, .npz) and from .ingot into each seed format and back: every hop
 * keeps each tensor's name, dtype, shape and bytes, the output format is chosen from the
 * extension, and a tensor a format cannot hold is refused (exit 1, target not created) instead of
 * being changed. Runs the real CLI binary (INGOT_CLI) like a user would.
 * With --dequantize F32|F16|BF16 those tensors are decoded instead: F32 output equals the GGUF
 * fixtures' dequant_sha256_f32le (gguf-py), F16/BF16 output equals NumPy's/torch's rounding of
 * those values (tests/golden/quant/golden.txt, "fixture" lines), one "lossy:" line per dtype.
 */
#include <fcntl.h>
#include <json-c/json.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "files.h"
#include "sha256.h"

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

/* Runs the CLI with a NULL-terminated argument list (after "ingot"); stderr goes to errpath
 * and stdout to outpath (each /dev/null if NULL). Returns the exit status. */
static int run_argv_out(const char *outpath, const char *errpath, const char *const *args)
{
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)"ingot";
    for (; *args && n < 15; args++) argv[n++] = (char *)*args;
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        int fe = errpath ? open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644) : fd;
        int fo = outpath ? open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644) : fd;
        if (fo >= 0) dup2(fo, 1);
        if (fe >= 0) dup2(fe, 2);
        execv(INGOT_CLI, argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int run_argv(const char *errpath, const char *const *args)
{
    return run_argv_out(NULL, errpath, args);
}

static int count_lines_with(const char *text, const char *a, const char *b)
{
    int n = 0;
    for (const char *l = text; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), l);
        if (strstr(line, a) && (!b || strstr(line, b))) n++;
        l = e ? e + 1 : NULL;
    }
    return n;
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

/* ---- --dequantize ---------------------------------------------------------------------------- */

static json_object *jget(json_object *o, const char *k)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, k, &v) ? v : NULL;
}

/* sha256 of a tensor's stored bytes */
static void tensor_sha(const ingot_file *f, const ingot_tensor_info *t, char hex[65])
{
    uint8_t *b = malloc(t->nbytes ? (size_t)t->nbytes : 1);
    ingot_error e;
    if (!b || ingot_file_tensor_copy(f, t->index, b, (size_t)t->nbytes, &e) != INGOT_OK)
        snprintf(hex, 65, "unreadable");
    else
        test_sha256_hex(b, (size_t)t->nbytes, hex);
    free(b);
}

/* The "fixture FILE TENSOR DTYPE SHA" line of tests/golden/quant/golden.txt, or NULL. */
static const char *golden_fixture(const char *golden, const char *file, const char *tensor,
                                  const char *dtype, char out[65])
{
    char key[512];
    snprintf(key, sizeof key, "fixture %s %s %s ", file, tensor, dtype);
    const char *at = strstr(golden, key);
    if (!at || sscanf(at + strlen(key), "%64s", out) != 1) return NULL;
    return out;
}

/* Converts a GGUF fixture with --dequantize DT into `ext` and checks every tensor against the
 * sidecar: quantized ones are DT with the reference values, the others are kept byte for byte. */
static void check_dequantized(const char *fixture, const char *ext, const char *dt, int want_lossy)
{
    char in[600], side[640], out[600], err[600];
    snprintf(in, sizeof in, "%s/gguf/%s", INGOT_FIXTURES, fixture);
    snprintf(side, sizeof side, "%s.expected.json", in);
    snprintf(out, sizeof out, "%s/dq_%s_%s.%s", dir, dt, fixture, ext);
    snprintf(err, sizeof err, "%s/dq.err", dir);
    const char *args[] = {"convert", in, out, "--dequantize", dt, NULL};
    int rc = run_argv(err, args);
    char *msg = test_read_file(err, NULL);
    CHECK(rc == 0, "%s -> %s --dequantize %s: exit %d: %s", fixture, ext, dt, rc, msg ? msg : "");
    int lossy = count_lines_with(msg, "lossy: ", "dequantized to ");
    CHECK(lossy == want_lossy, "%s -> %s: %d dequantize lines, want %d:\n%s", fixture, ext, lossy,
          want_lossy, msg ? msg : "");
    free(msg);
    char *golden = test_read_file(INGOT_SOURCE_DIR "/tests/golden/quant/golden.txt", NULL);
    json_object *root = json_object_from_file(side);
    ingot_file *f = NULL;
    ingot_error e;
    if (rc == 0 && golden && root && ingot_file_open(out, NULL, &f, &e) == INGOT_OK) {
        ingot_dtype want_dt;
        ingot_dtype_from_name(dt, &want_dt);
        json_object *ts = jget(root, "tensors");
        for (size_t k = 0; k < json_object_array_length(ts); k++) {
            json_object *jt = json_object_array_get_idx(ts, k);
            const char *name = json_object_get_string(jget(jt, "name"));
            ingot_tensor_info t;
            if (ingot_file_tensor_find(f, name, &t) != INGOT_OK) {
                CHECK(0, "%s: %s missing", out, name);
                continue;
            }
            char hex[65], want[65];
            tensor_sha(f, &t, hex);
            json_object *dq = jget(jt, "dequant_sha256_f32le");
            if (!dq || !want_lossy) { /* kept as is */
                CHECK(strcmp(hex, json_object_get_string(jget(jt, "sha256"))) == 0,
                      "%s: %s changed", out, name);
                continue;
            }
            CHECK(t.dtype == want_dt, "%s: %s is %s", out, name, ingot_dtype_name(t.dtype));
            const char *ref = want_dt == INGOT_DTYPE_F32
                                  ? json_object_get_string(dq)
                                  : golden_fixture(golden, fixture, name, dt, want);
            CHECK(ref && strcmp(hex, ref) == 0, "%s: %s (%s) values differ: %s", out, name, dt, hex);
            json_object *shape = jget(jt, "shape");
            CHECK(t.rank == json_object_array_length(shape), "%s: %s rank %u", out, name, t.rank);
        }
        ingot_file_close(f);
    } else {
        CHECK(0, "%s: cannot check (rc %d)", out, rc);
    }
    json_object_put(root);
    free(golden);
    unlink(out);
}

TEST(dequantize_gguf)
{
    /* 5 block types in all_types; Q4_K and Q6_K in kquants; Q8_0 alone in align64 */
    check_dequantized("gguf_all_types.gguf", "safetensors", "F32", 5);
    check_dequantized("gguf_all_types.gguf", "safetensors", "BF16", 5);
    check_dequantized("gguf_kquants_random_blocks.gguf", "npz", "F16", 2);
    check_dequantized("gguf_kquants_random_blocks.gguf", "safetensors", "BF16", 2);
    check_dequantized("gguf_edge_shapes.gguf", "npz", "F32", 1);
    check_dequantized("gguf_align64.gguf", "safetensors", "F16", 1);
    /* .mag refuses the dtype only when writing begins: the description is redone */
    check_dequantized("gguf_kquants_random_blocks.gguf", "mag", "F32", 2);
    /* a target that holds the blocks keeps them: nothing to dequantize */
    check_dequantized("gguf_kquants_random_blocks.gguf", "ingot", "F32", 0);
}

TEST(dequantize_refusals)
{
    char in[600], out[600], err[600];
    snprintf(in, sizeof in, "%s/gguf/gguf_kquants_random_blocks.gguf", INGOT_FIXTURES);
    snprintf(out, sizeof out, "%s/refused_dq.safetensors", dir);
    snprintf(err, sizeof err, "%s/dq.err", dir);
    struct stat sb;
    /* without the flag: refused, and the message says how to get it */
    const char *a1[] = {"convert", in, out, NULL};
    CHECK(run_argv(err, a1) == 1, "Q4_K -> safetensors without --dequantize");
    char *msg = test_read_file(err, NULL);
    CHECK(msg && strstr(msg, "UNSUPPORTED") && strstr(msg, "--dequantize F32|F16|BF16"),
          "message: %s", msg ? msg : "");
    free(msg);
    CHECK(stat(out, &sb) != 0, "refused convert left %s", out);
    /* .mag refuses at begin: the same hint, offering only the float types .mag stores (its
     * storage archive has no BF16) */
    snprintf(out, sizeof out, "%s/refused_dq.mag", dir);
    const char *a2[] = {"convert", in, out, NULL};
    CHECK(run_argv(err, a2) == 1, "Q4_K -> mag without --dequantize");
    msg = test_read_file(err, NULL);
    CHECK(msg && strstr(msg, "--dequantize F32|F16 stores") && !strstr(msg, "BF16"),
          "mag message: %s", msg ? msg : "");
    free(msg);
    CHECK(stat(out, &sb) != 0, "refused convert left %s", out);
    /* a float type the target lacks too: refused, suggesting F32 */
    snprintf(out, sizeof out, "%s/refused_dq.npz", dir);
    const char *a3[] = {"convert", in, out, "--dequantize", "BF16", NULL};
    CHECK(run_argv(err, a3) == 1, "Q4_K -> npz as BF16");
    msg = test_read_file(err, NULL);
    CHECK(msg && strstr(msg, "try --dequantize F32"), "npz message: %s", msg ? msg : "");
    free(msg);
    CHECK(stat(out, &sb) != 0, "refused convert left %s", out);
    /* usage */
    const char *a4[] = {"convert", in, out, "--dequantize", "Q8_0", NULL};
    CHECK(run_argv(NULL, a4) == 2, "--dequantize Q8_0 is a usage error");
    const char *a5[] = {"convert", in, out, "--dequantize", NULL};
    CHECK(run_argv(NULL, a5) == 2, "--dequantize without a value");
    /* IQ2_XXS has no decoder: refused naming the tensor, even with the flag */
    char src[600];
    snprintf(src, sizeof src, "%s/iq2.ingot", dir);
    ingot_writer *w;
    ingot_error e;
    ingot_writer_opts o = {.no_fsync = true};
    static uint8_t iq[66];
    uint64_t shape[1] = {256};
    ASSERT_OK(ingot_writer_new(&o, &w, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "grid.weight", INGOT_DTYPE_IQ2_XXS, 1, shape, NULL, iq, &e));
    ASSERT_OK(ingot_writer_save(w, src, &e));
    ingot_writer_free(w);
    snprintf(out, sizeof out, "%s/refused_iq2.safetensors", dir);
    const char *a6[] = {"convert", src, out, "--dequantize", "F32", NULL};
    CHECK(run_argv(err, a6) == 1, "IQ2_XXS -> safetensors");
    msg = test_read_file(err, NULL);
    CHECK(msg && strstr(msg, "grid.weight") && strstr(msg, "IQ2_XXS"), "iq2 message: %s",
          msg ? msg : "");
    free(msg);
    CHECK(stat(out, &sb) != 0, "refused convert left %s", out);
    unlink(src);
}

/* F8 and BF16 tensors of safetensors into .npz (NumPy has neither): decoded to F32, the rest
 * (integers, bool, F16, F32, F64) kept byte for byte. */
TEST(dequantize_f8_to_npz)
{
    char in[600], side[640], out[600], err[600];
    snprintf(in, sizeof in, "%s/safetensors/st_all_dtypes.safetensors", INGOT_FIXTURES);
    snprintf(side, sizeof side, "%s.expected.json", in);
    snprintf(out, sizeof out, "%s/f8.npz", dir);
    snprintf(err, sizeof err, "%s/dq.err", dir);
    const char *args[] = {"convert", in, out, "--dequantize", "F32", NULL};
    int rc = run_argv(err, args);
    char *msg = test_read_file(err, NULL);
    CHECK(rc == 0, "exit %d: %s", rc, msg ? msg : "");
    CHECK(count_lines_with(msg, "lossy: ", "dequantized to F32") == 3, "lines:\n%s", msg ? msg : "");
    free(msg);
    json_object *root = json_object_from_file(side);
    ingot_file *f;
    ingot_error e;
    ASSERT_TRUE(root != NULL);
    ASSERT_OK(ingot_file_open(out, NULL, &f, &e));
    json_object *ts = jget(root, "tensors");
    int converted = 0;
    for (size_t k = 0; k < json_object_array_length(ts); k++) {
        json_object *jt = json_object_array_get_idx(ts, k);
        const char *name = json_object_get_string(jget(jt, "name"));
        const char *dt = json_object_get_string(jget(jt, "dtype"));
        ingot_tensor_info t;
        if (ingot_file_tensor_find(f, name, &t) != INGOT_OK) {
            CHECK(0, "%s missing", name);
            continue;
        }
        if (strcmp(dt, "BF16") && strncmp(dt, "F8_", 3)) {
            char hex[65];
            tensor_sha(f, &t, hex);
            CHECK(strcmp(hex, json_object_get_string(jget(jt, "sha256"))) == 0, "%s changed", name);
            continue;
        }
        CHECK(t.dtype == INGOT_DTYPE_F32, "%s is %s", name, ingot_dtype_name(t.dtype));
        float v[64];
        if (t.nelem > 64 || ingot_file_tensor_copy(f, t.index, v, sizeof v, &e) != INGOT_OK) {
            CHECK(0, "%s unreadable", name);
            continue;
        }
        json_object *f4 = jget(jt, "first4");
        for (size_t q = 0; q < json_object_array_length(f4); q++)
            CHECK((double)v[q] == json_object_get_double(json_object_array_get_idx(f4, q)),
                  "%s[%zu] = %.9g", name, q, v[q]);
        converted++;
    }
    CHECK(converted == 3, "%d converted", converted);
    ingot_file_close(f);
    json_object_put(root);
    unlink(out);
}

/* A tensor bigger than the CLI's conversion step (1 Mi elements) streams in several steps that
 * end on block boundaries: the output equals the whole tensor decoded at once. */
TEST(dequantize_streams_in_steps)
{
    char src[600], out[600];
    snprintf(src, sizeof src, "%s/big_q.ingot", dir);
    snprintf(out, sizeof out, "%s/big_q.safetensors", dir);
    uint64_t shape[2] = {3, 800 * 1024}; /* 2.4 Mi elements: 3 steps */
    uint64_t nb = shape[0] * shape[1] / 256;
    uint8_t *q = malloc((size_t)nb * 210);
    ASSERT_TRUE(q != NULL);
    uint32_t x = 12345;
    for (uint64_t i = 0; i < nb * 210; i++) {
        x = x * 1103515245u + 12345u;
        q[i] = (uint8_t)(x >> 16);
    }
    for (uint64_t b = 0; b < nb; b++) { /* finite f16 scales: d = 2^-10 */
        q[b * 210 + 208] = 0x00;
        q[b * 210 + 209] = 0x14;
    }
    ingot_writer *w;
    ingot_error e;
    ingot_writer_opts o = {.no_fsync = true};
    ASSERT_OK(ingot_writer_new(&o, &w, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "big", INGOT_DTYPE_Q6_K, 2, shape, NULL, q, &e));
    ASSERT_OK(ingot_writer_save(w, src, &e));
    ingot_writer_free(w);
    size_t n = (size_t)(shape[0] * shape[1]);
    float *want = malloc(n * sizeof *want);
    ASSERT_OK(ingot_dequantize(INGOT_DTYPE_Q6_K, q, (size_t)nb * 210, want, n, &e));
    const char *args[] = {"convert", src, out, "--dequantize", "F32", NULL};
    CHECK(run_argv(NULL, args) == 0, "big Q6_K -> safetensors");
    ingot_file *f;
    ASSERT_OK(ingot_file_open(out, NULL, &f, &e));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "big", &t));
    CHECK(t.dtype == INGOT_DTYPE_F32 && t.nbytes == n * 4, "%s %llu bytes", ingot_dtype_name(t.dtype),
          (unsigned long long)t.nbytes);
    CHECK(t.nbytes == n * 4 && memcmp(t.data, want, n * 4) == 0, "values differ");
    ingot_file_close(f);
    free(want);
    free(q);
    unlink(src);
    unlink(out);
}

/* dump --dequantize prints the decoded values: the sidecar's first four, then the count left. */
TEST(dump_dequantize)
{
    char in[600], out[600];
    snprintf(in, sizeof in, "%s/gguf/gguf_kquants_random_blocks.gguf", INGOT_FIXTURES);
    snprintf(out, sizeof out, "%s/dump.out", dir);
    const char *args[] = {"dump", in, "q6_k.3x256", "--dequantize", "--limit", "4", NULL};
    CHECK(run_argv_out(out, NULL, args) == 0, "dump --dequantize");
    char *text = test_read_file(out, NULL);
    char side[640];
    snprintf(side, sizeof side, "%s.expected.json", in);
    json_object *root = json_object_from_file(side);
    ASSERT_TRUE(text && root);
    json_object *t1 = json_object_array_get_idx(jget(root, "tensors"), 1);
    json_object *f4 = jget(jget(t1, "dequant"), "first4");
    char want[256];
    int n = snprintf(want, sizeof want, "q6_k.3x256: Q6_K 3x256, 768 elements, decoded to F32\n");
    for (int q = 0; q < 4; q++)
        n += snprintf(want + n, sizeof want - (size_t)n, "%.9g%s",
                      json_object_get_double(json_object_array_get_idx(f4, (size_t)q)),
                      q < 3 ? " " : "\n... (764 more elements)\n");
    CHECK(strcmp(text, want) == 0, "dump printed:\n%s\nwant:\n%s", text, want);
    free(text);
    json_object_put(root);
    /* a bad --limit is still a usage error */
    const char *bad[] = {"dump", in, "q6_k.3x256", "--dequantize", "--limit", "x", NULL};
    CHECK(run_argv(NULL, bad) == 2, "dump --limit x");
    unlink(out);
}

TEST(setup_dir)
{
    snprintf(dir, sizeof dir, "%s/convert_matrix", INGOT_BINARY_DIR);
    mkdir(dir, 0755);
    struct stat sb;
    ASSERT_TRUE(stat(dir, &sb) == 0);
}

RUN_TESTS(T(setup_dir), T(every_pair_of_general_formats), T(refusals_leave_nothing),
          T(dequantize_gguf), T(dequantize_refusals), T(dequantize_f8_to_npz),
          T(dequantize_streams_in_steps), T(dump_dequantize))
