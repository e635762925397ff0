/* test_rank64.c - tensors of rank above 8, up to INGOT_MAX_RANK (64), in every format that can
 * hold them and in the backend. Vectors: tests/data/rank (numpy 1.24, torch 1.13, and files laid
 * out by hand per the npy and magnetron specs where those libraries stop short; see
 * gen_rank_vectors.py), each checked against its sidecar (names, dtypes, shapes, strides, sha256
 * of the C-order bytes, all computed by numpy/torch), opened every way, then converted with the
 * CLI through .ingot, safetensors, npz, npy and the mag snapshot and checked again. GGUF (4) and
 * rank 65 are refused with errors naming the limit.
 */
#include <json-c/json.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "files.h"
#include "sha256.h"

#define DATA INGOT_SOURCE_DIR "/tests/data/rank/"
#define OUTD INGOT_BINARY_DIR "/test_rank64_out"

static const char *const valid[] = {"rank16.npy", "rank32.npy",  "rank16_fortran.npy",
                                    "rank64.npy", "rank16.pt",   "rank64.pt",
                                    "rank64_snapshot.mag"};
static const char *const refused[] = {"rank65.npy", "rank65.pt"};

static int sh(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static json_object *sidecar(const char *file)
{
    char path[512];
    snprintf(path, sizeof path, DATA "%s.json", file);
    return json_object_from_file(path);
}

static const char *jstr(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

/* Opens path in mode 0 (mmap), 1 (pread) or 2 (a buffer, returned in *buf). */
static ingot_status open_mode(const char *path, int mode, ingot_file **f, ingot_error *e,
                              uint8_t **buf)
{
    *buf = NULL;
    if (mode < 2) {
        ingot_open_opts o = {.io = mode ? INGOT_IO_PREAD : INGOT_IO_MMAP};
        return ingot_file_open(path, &o, f, e);
    }
    size_t n = 0;
    *buf = test_read_file(path, &n);
    if (!*buf) return INGOT_NOT_FOUND;
    return ingot_file_open_buffer(*buf, n, NULL, f, e);
}

/* The file at path holds exactly the sidecar's tensors: dtype, shape, strides of strided views
 * (keep_views: a conversion materialises them), dense bytes by sha256. A tensor named `rename`
 * stands for the sidecar's only tensor (a .npy is named after its file). */
static bool matches(const char *path, json_object *tensors, bool keep_views, const char *rename)
{
    bool ok = true;
    for (int mode = 0; mode < 3; mode++) {
        ingot_file *f = NULL;
        ingot_error e;
        uint8_t *buf;
        ingot_status st = open_mode(path, mode, &f, &e, &buf);
        if (st != INGOT_OK) {
            CHECK(0, "%s mode %d: %s %s", path, mode, ingot_status_name(st), e.msg);
            free(buf);
            return false;
        }
        size_t nt = json_object_array_length(tensors);
        if (ingot_file_tensor_count(f) != nt) {
            CHECK(0, "%s: %llu tensors, sidecar %zu", path,
                  (unsigned long long)ingot_file_tensor_count(f), nt);
            ok = false;
        }
        for (size_t i = 0; i < nt; i++) {
            json_object *jt = json_object_array_get_idx(tensors, i), *shape, *stride;
            /* a .npy opened from a buffer has no file name: its tensor is "array" */
            size_t pl = strlen(path);
            bool npy = pl > 4 && strcmp(path + pl - 4, ".npy") == 0;
            const char *name = npy && mode == 2 ? "array" : rename ? rename : jstr(jt, "name");
            ingot_tensor_info t;
            if (ingot_file_tensor_find(f, name, &t) != INGOT_OK) {
                CHECK(0, "%s: no tensor '%s'", path, name);
                ok = false;
                continue;
            }
            json_object_object_get_ex(jt, "shape", &shape);
            bool same = strcmp(ingot_dtype_name(t.dtype), jstr(jt, "dtype")) == 0 &&
                        t.rank == json_object_array_length(shape);
            for (uint32_t d = 0; same && d < t.rank; d++)
                same = t.shape[d] ==
                       (uint64_t)json_object_get_int64(json_object_array_get_idx(shape, d));
            for (uint32_t d = t.rank; same && d < INGOT_MAX_RANK; d++)
                same = t.shape[d] == 0 && (t.strides[d] == 0);
            if (keep_views && json_object_object_get_ex(jt, "stride", &stride) &&
                (t.flags & INGOT_TENSOR_STRIDED))
                for (uint32_t d = 0; same && d < t.rank; d++)
                    same = t.strides[d] ==
                           json_object_get_int64(json_object_array_get_idx(stride, d));
            CHECK(same, "%s/%s mode %d: dtype %s rank %u differ from the sidecar", path, name,
                  mode, ingot_dtype_name(t.dtype), t.rank);
            void *b = malloc(t.nbytes ? t.nbytes : 1);
            char hex[65] = "";
            st = ingot_file_tensor_copy(f, t.index, b, t.nbytes, &e);
            CHECK(st == INGOT_OK, "%s/%s: copy %s", path, name, e.msg);
            test_sha256_hex(b, t.nbytes, hex);
            CHECK(strcmp(hex, jstr(jt, "sha256")) == 0, "%s/%s mode %d: sha256 %s, sidecar %s",
                  path, name, mode, hex, jstr(jt, "sha256"));
            same = same && st == INGOT_OK && strcmp(hex, jstr(jt, "sha256")) == 0;
            free(b);
            ok = ok && same;
        }
        st = ingot_file_verify(f, 2, &e);
        CHECK(st == INGOT_OK, "%s: verify %s", path, e.msg);
        ok = ok && st == INGOT_OK;
        ingot_file_close(f);
        free(buf);
    }
    return ok;
}

/* Real files of rank 16, 20 (a torch view), 32 and 64 open every way with their exact shapes
 * and bytes; rank 65 (torch writes it; NumPy 2 would not) is refused naming the limit. */
TEST(test_rank_vectors_open)
{
    for (size_t k = 0; k < sizeof valid / sizeof valid[0]; k++) {
        json_object *side = sidecar(valid[k]), *tensors;
        ASSERT_TRUE(side && json_object_object_get_ex(side, "tensors", &tensors));
        char path[512];
        snprintf(path, sizeof path, DATA "%s", valid[k]);
        CHECK(matches(path, tensors, true, NULL), "%s", valid[k]);
        json_object_put(side);
    }
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        json_object *side = sidecar(refused[k]);
        ASSERT_TRUE(side != NULL);
        char path[512];
        snprintf(path, sizeof path, DATA "%s", refused[k]);
        for (int mode = 0; mode < 3; mode++) {
            ingot_file *f = NULL;
            ingot_error e;
            uint8_t *buf;
            ingot_status st = open_mode(path, mode, &f, &e, &buf);
            CHECK(strcmp(ingot_status_name(st), jstr(side, "refuse")) == 0 && f == NULL,
                  "%s mode %d: %s", refused[k], mode, ingot_status_name(st));
            CHECK(strstr(e.msg, jstr(side, "msg")) != NULL, "%s: message '%s' lacks '%s'",
                  refused[k], e.msg, jstr(side, "msg"));
            CHECK(e.offset != INGOT_NO_OFFSET, "%s: no offset", refused[k]);
            free(buf);
        }
        json_object_put(side);
    }
}

/* Every vector through the CLI: -> .ingot -> .safetensors -> .npz (-> .npy for one tensor)
 * -> mag snapshot (rank < 64) -> .ingot, each output reopened and compared with the sidecar.
 * GGUF is refused (4 dimensions), a rank-64 snapshot too (magnetron's reader takes < 64). */
TEST(test_rank_convert_roundtrip)
{
    ASSERT_EQ(sh("mkdir -p " OUTD), 0);
    char cmd[2048], a[512], b[512];
    for (size_t k = 0; k < sizeof valid / sizeof valid[0]; k++) {
        json_object *side = sidecar(valid[k]), *tensors;
        ASSERT_TRUE(side && json_object_object_get_ex(side, "tensors", &tensors));
        size_t nt = json_object_array_length(tensors);
        uint32_t max_rank = 0;
        for (size_t i = 0; i < nt; i++) {
            json_object *shape;
            json_object_object_get_ex(json_object_array_get_idx(tensors, i), "shape", &shape);
            uint32_t r = (uint32_t)json_object_array_length(shape);
            if (r > max_rank) max_rank = r;
        }
        static const char *const chain[] = {"ingot", "safetensors", "npz", "npy", "mag",
                                            "ingot"};
        snprintf(a, sizeof a, DATA "%s", valid[k]);
        for (size_t c = 0; c < sizeof chain / sizeof chain[0]; c++) {
            bool snap = strcmp(chain[c], "mag") == 0;
            if (strcmp(chain[c], "npy") == 0 && nt != 1) continue;
            snprintf(b, sizeof b, OUTD "/k%zu_%zu.%s", k, c, chain[c]);
            snprintf(cmd, sizeof cmd, "'%s' convert '%s' '%s'%s >/dev/null 2> " OUTD "/err.txt",
                     INGOT_CLI, a, b, snap ? " --to mag-snapshot" : "");
            int rc = sh(cmd);
            if (snap && max_rank >= 64) {
                CHECK(rc == 1, "%s -> snapshot: exit %d", valid[k], rc);
                CHECK(sh("grep -q \"rank 64: magnetron's snapshot reader takes ranks below 64\" "
                         OUTD "/err.txt") == 0,
                      "%s -> snapshot: message", valid[k]);
                continue;
            }
            CHECK(rc == 0, "%s: %s", valid[k], cmd);
            if (rc != 0) break;
            const char *rename = NULL;
            char stem[64];
            if (strcmp(chain[c], "npy") == 0) { /* named after the file */
                snprintf(stem, sizeof stem, "k%zu_%zu", k, c);
                rename = stem;
            }
            CHECK(matches(b, tensors, false, rename), "%s -> %s", valid[k], chain[c]);
            if (rename) { /* later steps see the stem as the name: a fresh sidecar is not worth
                             it, stop the chain after the .npy for single tensors */
                snprintf(a, sizeof a, "%s", b);
                break;
            }
            snprintf(a, sizeof a, "%s", b);
        }
        /* GGUF holds 4 dimensions */
        snprintf(cmd, sizeof cmd, "'%s' convert '" DATA "%s' " OUTD "/x.gguf >/dev/null 2> " OUTD
                 "/err.txt; test $? = 1 && grep -q 'GGUF holds at most 4 dimensions "
                 "(GGML_MAX_DIMS)' " OUTD "/err.txt && test ! -e " OUTD "/x.gguf",
                 INGOT_CLI, valid[k]);
        CHECK(sh(cmd) == 0, "%s -> gguf: not refused as expected", valid[k]);
        json_object_put(side);
    }
}

/* The npy writer lays a high-rank header out as NumPy does: converting the numpy-written rank-16
 * and rank-32 files, and the rank-64 file laid out by the same rules, gives the same bytes. */
TEST(test_rank_npy_writer_byte_exact)
{
    static const char *const files[] = {"rank16.npy", "rank32.npy", "rank64.npy"};
    for (size_t k = 0; k < 3; k++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "mkdir -p " OUTD " && '%s' convert '" DATA "%s' " OUTD
                 "/same.npy >/dev/null 2>&1 && cmp -s '" DATA "%s' " OUTD "/same.npy",
                 INGOT_CLI, files[k], files[k]);
        CHECK(sh(cmd) == 0, "%s: rewritten bytes differ", files[k]);
    }
}

/* Writers: rank 64 in, rank 65 refused naming the limit; GGUF, .tenzor and .mag archives keep
 * their own limits (4, 5, 8) with messages naming them, at add_tensor or at the latest when the
 * file is laid out. */
static ingot_status write_one(const char *format, uint32_t rank, void **mem, size_t *n,
                              ingot_error *e)
{
    uint64_t ones[INGOT_MAX_RANK + 1];
    for (int d = 0; d <= INGOT_MAX_RANK; d++) ones[d] = 1;
    static const uint8_t data[8];
    ingot_writer_opts wo = {.format = format};
    ingot_writer *w;
    ingot_status st = ingot_writer_new(&wo, &w, e);
    if (st != INGOT_OK) return st;
    st = ingot_writer_add_tensor(w, "t", INGOT_DTYPE_F32, rank, ones, NULL, data, e);
    if (st == INGOT_OK) st = ingot_writer_begin_mem(w, e);
    if (st == INGOT_OK) st = ingot_writer_commit_mem(w, mem, n, e);
    ingot_writer_free(w);
    return st;
}

TEST(test_rank_writer_limits)
{
    static const struct {
        const char *format;
        uint32_t ok_rank, bad_rank;
        const char *msg;
    } rows[] = {
        {"ingot", 64, 65, "rank 65 exceeds 64 (INGOT_MAX_RANK)"},
        {"safetensors", 64, 65, "rank 65 exceeds 64"},
        {"npz", 64, 65, "rank 65 exceeds 64"},
        {"mag-snapshot", 63, 64, "rank 64: magnetron's snapshot reader takes ranks below 64"},
        {"mag", 8, 9, "rank 9: mag version 100 holds ranks 1..8"},
        {"gguf", 4, 5, "rank 5: GGUF holds at most 4 dimensions (GGML_MAX_DIMS)"},
        {"tenzor", 5, 6, "rank 6: tenzor stores at most 5 dimensions"},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        void *mem = NULL;
        size_t n = 0;
        ingot_error e;
        ingot_status st = write_one(rows[r].format, rows[r].bad_rank, &mem, &n, &e);
        CHECK(st != INGOT_OK && strstr(e.msg, rows[r].msg) != NULL, "%s rank %u: %s (%s)",
              rows[r].format, rows[r].bad_rank, ingot_status_name(st), e.msg);
        if (st == INGOT_OK) ingot_writer_free_mem(NULL, mem, n);
        st = write_one(rows[r].format, rows[r].ok_rank, &mem, &n, &e);
        CHECK(st == INGOT_OK, "%s rank %u: %s", rows[r].format, rows[r].ok_rank, e.msg);
        if (st != INGOT_OK) continue;
        ingot_file *f;
        ingot_tensor_info t = {0};
        ingot_open_opts oo = {.format = rows[r].format};
        if (ingot_file_open_buffer(mem, n, &oo, &f, &e) == INGOT_OK) {
            CHECK(ingot_file_tensor_at(f, 0, &t) == INGOT_OK && t.rank == rows[r].ok_rank &&
                      t.nelem == 1,
                  "%s: read back rank %u", rows[r].format, t.rank);
            ingot_file_close(f);
        } else {
            CHECK(0, "%s: reopen %s", rows[r].format, e.msg);
        }
        ingot_writer_free_mem(NULL, mem, n);
    }
}

/* Backend tensors of rank 64: the rank-64 .npy wrapped zero-copy, then a broadcast add, a
 * reduction over the last axis and a copy of the axis-reversed view, on both backends, checked
 * against index arithmetic done here (values v[i] = 1.5 i - 3 from the generator). */
TEST(test_rank64_backend)
{
    static const char *const names[] = {"ref", "cpu"};
    int64_t shape[64], rshape[64];
    for (int d = 0; d < 64; d++) shape[d] = 1;
    shape[0] = 2, shape[31] = 2, shape[40] = 2, shape[63] = 3;
    ingot_file *f;
    ASSERT_OK(ingot_file_open(DATA "rank64.npy", NULL, &f, NULL));
    for (int bi = 0; bi < 2; bi++) {
        ingot_backend *be;
        ingot_error e;
        ASSERT_OK(ingot_backend_new(names[bi], NULL, &be, &e));
        ingot_tensor x, y, c, r, p, q;
        ingot_buffer *xb, *yb, *cb, *rb, *qb;
        ASSERT_OK(ingot_tensor_from_file(be, f, "rank64", &x, &xb, &e));
        ASSERT_EQ(x.rank, 64);
        for (int d = 0; d < 64; d++) ASSERT_EQ(x.shape[d], shape[d]);
        ASSERT_EQ(ingot_tensor_nelem(&x), 24);
        /* c: shape [3] broadcast against the last axis: {10, 20, 30} */
        double cv[3] = {10, 20, 30};
        int64_t three = 3;
        ASSERT_OK(ingot_buffer_alloc(be, sizeof cv, &cb, &e));
        ASSERT_OK(ingot_buffer_write(cb, 0, cv, sizeof cv, &e));
        ASSERT_OK(ingot_tensor_init(&c, cb, 0, INGOT_DTYPE_F64, 1, &three, &e));
        ASSERT_OK(ingot_buffer_alloc(be, 24 * 8, &yb, &e));
        ASSERT_OK(ingot_tensor_init(&y, yb, 0, INGOT_DTYPE_F64, 64, shape, &e));
        ASSERT_OK(ingot_op_binary(be, INGOT_BINARY_ADD, &y, &x, &c, &e));
        const double *yv = ingot_tensor_host(&y);
        for (int i = 0; i < 24; i++) ASSERT_TRUE(yv[i] == 1.5 * i - 3 + cv[i % 3]);
        /* sum over axis 63 */
        for (int d = 0; d < 64; d++) rshape[d] = shape[d];
        rshape[63] = 1;
        ASSERT_OK(ingot_buffer_alloc(be, 8 * 8, &rb, &e));
        ASSERT_OK(ingot_tensor_init(&r, rb, 0, INGOT_DTYPE_F64, 64, rshape, &e));
        ASSERT_OK(ingot_op_reduce(be, INGOT_REDUCE_SUM, &r, &x, 63, &e));
        const double *rv = ingot_tensor_host(&r);
        for (int j = 0; j < 8; j++)
            ASSERT_TRUE(rv[j] == (1.5 * (3 * j) - 3) + (1.5 * (3 * j + 1) - 3) +
                                     (1.5 * (3 * j + 2) - 3));
        /* reverse all 64 axes, then materialise: element [i0..i63] of p is x[i63..i0] */
        uint32_t perm[64];
        for (uint32_t d = 0; d < 64; d++) perm[d] = 63 - d;
        ASSERT_OK(ingot_tensor_permute(&p, &x, perm, &e));
        ASSERT_OK(ingot_buffer_alloc(be, 24 * 8, &qb, &e));
        int64_t pshape[64];
        for (int d = 0; d < 64; d++) pshape[d] = shape[63 - d];
        ASSERT_OK(ingot_tensor_init(&q, qb, 0, INGOT_DTYPE_F64, 64, pshape, &e));
        ASSERT_OK(ingot_op_copy(be, &q, &p, &e));
        const double *qv = ingot_tensor_host(&q);
        /* q's shape: [3, 1.., 2 (axis 23 = 63-40), 1.., 2 (axis 32 = 63-31), 1.., 2 (63)] */
        for (int a0 = 0; a0 < 3; a0++)
            for (int a1 = 0; a1 < 2; a1++)
                for (int a2 = 0; a2 < 2; a2++)
                    for (int a3 = 0; a3 < 2; a3++) {
                        /* q[a0, a1, a2, a3] = x[a3, a2, a1, a0] (x's axes 0, 31, 40, 63) */
                        int qi = ((a0 * 2 + a1) * 2 + a2) * 2 + a3;
                        int xi = ((a3 * 2 + a2) * 2 + a1) * 3 + a0;
                        ASSERT_TRUE(qv[qi] == 1.5 * xi - 3);
                    }
        /* rank 65 is refused by the backend too */
        int64_t s65[65];
        for (int d = 0; d < 65; d++) s65[d] = 1;
        ASSERT_ST(ingot_tensor_init(&q, qb, 0, INGOT_DTYPE_F64, 65, s65, &e), INGOT_BAD_NDIMS);
        ingot_buffer_free(qb);
        ingot_buffer_free(rb);
        ingot_buffer_free(yb);
        ingot_buffer_free(cb);
        ingot_buffer_free(xb);
        ingot_backend_free(be);
    }
    ingot_file_close(f);
}

int main(int argc, char **argv)
{
    static const test_case cases[] = {
        T(test_rank_vectors_open),
        T(test_rank_convert_roundtrip),
        T(test_rank_npy_writer_byte_exact),
        T(test_rank_writer_limits),
        T(test_rank64_backend),
    };
    return harness_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
