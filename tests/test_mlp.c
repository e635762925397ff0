/*
 * test_mlp.c - the dense MLP runtime against torch goldens (the tests/golden/mlp files from
 * scripts/gen_backend_goldens.py): models are written as .ingot with the writer (F32 and F64
 * weights), opened, and run on every backend; plus the estimators, determinism across thread
 * counts, no allocation in the forward pass, and the errors for bad models and bad calls.
 */
#include <math.h>

#include "harness.h"
#include "ingot/backend.h"
#include "ingot/runtime.h"

#define GDIR INGOT_SOURCE_DIR "/tests/golden/mlp/"

typedef struct golden {
    uint32_t L, batch;
    uint64_t sizes[8];
    char acts[8][24];
    float *w[8], *b[8], *x, *y;
    uint8_t *file;
} golden;

static bool load_golden(const char *name, golden *g)
{
    memset(g, 0, sizeof *g);
    char path[512];
    snprintf(path, sizeof path, GDIR "%s.bin", name);
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    g->file = malloc((size_t)n);
    bool ok = g->file && fread(g->file, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    if (!ok || memcmp(g->file, "IGMLP001", 8)) return false;
    uint8_t *p = g->file + 8;
    memcpy(&g->L, p, 4);
    memcpy(&g->batch, p + 4, 4);
    p += 8;
    memcpy(g->sizes, p, 8 * (g->L + 1));
    p += 8 * (g->L + 1);
    for (uint32_t k = 0; k < g->L; k++) {
        uint16_t len;
        memcpy(&len, p, 2);
        memcpy(g->acts[k], p + 2, len);
        g->acts[k][len] = 0;
        p += 2 + len;
    }
    /* The float data follows variable-length names: move it to aligned storage. */
    size_t rest = (size_t)(g->file + n - p);
    float *fl = malloc(rest + 4);
    memcpy(fl, p, rest);
    memmove(g->file, fl, rest); /* g->file (malloc'd) is aligned for float */
    free(fl);
    p = g->file;
    for (uint32_t k = 0; k < g->L; k++) {
        g->w[k] = (float *)(void *)p;
        p += 4 * g->sizes[k] * g->sizes[k + 1];
        g->b[k] = (float *)(void *)p;
        p += 4 * g->sizes[k + 1];
    }
    g->x = (float *)(void *)p;
    p += 4 * g->batch * g->sizes[0];
    g->y = (float *)(void *)p;
    return true;
}

/* Writes the golden as an .ingot model; f64 stores the weights as F64. Returns the path. */
static void write_model(const golden *g, const char *path, bool f64, ingot_error *e)
{
    ingot_writer_opts wo = {0};
    wo.no_fsync = true;
    ingot_writer *w = NULL;
    ingot_writer_new(&wo, &w, e);
    ingot_writer_set_u32(w, "mlp.layer_count", g->L);
    ingot_writer_set_array(w, "mlp.sizes", INGOT_META_U64, g->sizes, g->L + 1);
    const void *names[8];
    size_t lens[8];
    for (uint32_t k = 0; k < g->L; k++) {
        names[k] = g->acts[k];
        lens[k] = strlen(g->acts[k]);
    }
    ingot_writer_set_string_array(w, "mlp.activations", INGOT_META_STRING, names, lens, g->L);
    static double *conv[16];
    int nconv = 0;
    for (uint32_t k = 0; k < g->L; k++) {
        char nm[32];
        uint64_t ws[2] = {g->sizes[k + 1], g->sizes[k]}, bs[1] = {g->sizes[k + 1]};
        const void *wd = g->w[k], *bd = g->b[k];
        if (f64) {
            double *a = malloc(8 * ws[0] * ws[1]), *c = malloc(8 * bs[0]);
            for (uint64_t i = 0; i < ws[0] * ws[1]; i++) a[i] = g->w[k][i];
            for (uint64_t i = 0; i < bs[0]; i++) c[i] = g->b[k][i];
            conv[nconv++] = a;
            conv[nconv++] = c;
            wd = a;
            bd = c;
        }
        snprintf(nm, sizeof nm, "layers.%u.weight", k);
        ingot_writer_add_tensor(w, nm, f64 ? INGOT_DTYPE_F64 : INGOT_DTYPE_F32, 2, ws, NULL, wd, e);
        snprintf(nm, sizeof nm, "layers.%u.bias", k);
        ingot_writer_add_tensor(w, nm, f64 ? INGOT_DTYPE_F64 : INGOT_DTYPE_F32, 1, bs, NULL, bd, e);
    }
    ingot_writer_save(w, path, e);
    ingot_writer_free(w);
    for (int i = 0; i < nconv; i++) free(conv[i]);
}

static const char *const MODELS[] = {"mlp_a", "mlp_b", "mlp_c"};

TEST(test_mlp_matches_torch)
{
    for (size_t mi = 0; mi < 3; mi++) {
        golden g;
        ASSERT_TRUE(load_golden(MODELS[mi], &g));
        for (int f64 = 0; f64 < 2; f64++) {
            char path[512];
            ingot_error e;
            snprintf(path, sizeof path, INGOT_BINARY_DIR "/test_mlp_%s_%d.ingot", MODELS[mi], f64);
            write_model(&g, path, f64, &e);
            ingot_file *f = NULL;
            ASSERT_OK(ingot_file_open(path, NULL, &f, &e));
            for (uint32_t bi = 0; bi < ingot_backend_count(); bi++) {
                ingot_backend *be = NULL;
                ASSERT_OK(ingot_backend_new(ingot_backend_name_at(bi), NULL, &be, &e));
                ingot_mlp *m = NULL;
                ingot_status st = ingot_mlp_open(be, f, NULL, &m, &e);
                CHECK(st == INGOT_OK, "%s open: %s", MODELS[mi], e.msg);
                if (st != INGOT_OK) {
                    ingot_backend_free(be);
                    continue;
                }
                ASSERT_U64(ingot_mlp_input_size(m), g.sizes[0]);
                ASSERT_U64(ingot_mlp_output_size(m), g.sizes[g.L]);
                size_t ns = ingot_mlp_scratch_size(m, g.batch);
                void *scratch = ns ? malloc(ns) : NULL;
                float *y = malloc(4 * g.batch * g.sizes[g.L]);
                ASSERT_OK(ingot_mlp_forward(m, g.x, g.batch, y, scratch, ns, &e));
                double num = 0, den = 0, worst = 0;
                for (uint64_t i = 0; i < g.batch * g.sizes[g.L]; i++) {
                    double d = fabs((double)y[i] - g.y[i]);
                    double lim = 1e-4 * fmax(1.0, fabs(g.y[i]));
                    if (d / lim > worst) worst = d / lim;
                    num += d * d;
                    den += (double)g.y[i] * g.y[i];
                }
                CHECK(worst <= 1.0 && num / den <= 1e-7,
                      "%s (%s weights) on %s: max |d| = %.3g of the limit, NMSE %.3g", MODELS[mi],
                      f64 ? "F64" : "F32", ingot_backend_name(be), worst, num / den);
                /* Same argmax per row. */
                for (uint32_t r = 0; r < g.batch; r++) {
                    uint64_t n = g.sizes[g.L], a = 0, c = 0;
                    for (uint64_t j = 1; j < n; j++) {
                        if (y[r * n + j] > y[r * n + a]) a = j;
                        if (g.y[r * n + j] > g.y[r * n + c]) c = j;
                    }
                    CHECK(a == c, "%s row %u: argmax %llu vs torch %llu", MODELS[mi], r,
                          (unsigned long long)a, (unsigned long long)c);
                }
                free(scratch);
                free(y);
                ingot_mlp_free(m);
                ingot_backend_free(be);
            }
            ingot_file_close(f);
            remove(path);
        }
        free(g.file);
    }
}

static size_t n_allocs;
static void *count_alloc(void *ctx, size_t n, size_t align)
{
    (void)ctx;
    (void)align;
    n_allocs++;
    return aligned_alloc(64, (n + 63) / 64 * 64);
}
static void count_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    free(p);
}

TEST(test_mlp_forward_no_alloc_deterministic_estimate)
{
    golden g;
    ASSERT_TRUE(load_golden("mlp_c", &g));
    char path[512];
    ingot_error e;
    snprintf(path, sizeof path, INGOT_BINARY_DIR "/test_mlp_det.ingot");
    write_model(&g, path, false, &e);
    ingot_file *f = NULL;
    ASSERT_OK(ingot_file_open(path, NULL, &f, &e));
    ingot_allocator al = {count_alloc, count_free, NULL};
    float *ys[3];
    for (int t = 1; t <= 3; t++) {
        ingot_backend_opts o = {0};
        o.allocator = &al;
        o.threads = (uint32_t)t;
        ingot_backend *be = NULL;
        ASSERT_OK(ingot_backend_new("cpu", &o, &be, &e));
        ingot_mlp *m = NULL;
        ASSERT_OK(ingot_mlp_open(be, f, NULL, &m, &e));
        /* 64 rows of input: the golden rows repeated with small changes. */
        uint64_t batch = 64, in = g.sizes[0], out = g.sizes[g.L];
        float *x = malloc(4 * batch * in);
        for (uint64_t i = 0; i < batch * in; i++) x[i] = g.x[i % (g.batch * in)] + 0.001f * (float)(i % 7);
        size_t ns = ingot_mlp_scratch_size(m, batch);
        void *scratch = malloc(ns);
        ys[t - 1] = malloc(4 * batch * out);
        size_t before = n_allocs;
        ASSERT_OK(ingot_mlp_forward(m, x, batch, ys[t - 1], scratch, ns, &e));
        ASSERT_EQ(n_allocs, before); /* no allocation in the hot path */
        if (t == 1) {
            ingot_mlp_estimate est;
            ingot_mlp_estimate_plan(m, batch, &est);
            uint64_t fl = 0, wb = 0;
            for (uint32_t k = 0; k < g.L; k++) {
                fl += batch * (2 * g.sizes[k] * g.sizes[k + 1] + 2 * g.sizes[k + 1]);
                wb += 4 * (g.sizes[k] * g.sizes[k + 1] + g.sizes[k + 1]);
            }
            ASSERT_U64(est.flops, fl);
            ASSERT_U64(est.weight_bytes, wb);
            ASSERT_U64(est.owned_bytes, 0); /* F32 weights are mapped, not copied */
            ASSERT_U64(est.scratch_bytes, ns);
            ASSERT_U64(ns, 2 * ((batch * 40 * 4 + 63) / 64 * 64));
            ASSERT_U64(est.io_bytes, 4 * batch * (in + out));
            /* Scratch one byte short is refused. */
            ASSERT_ST(ingot_mlp_forward(m, x, batch, ys[0], scratch, ns - 1, &e), INGOT_E_RANGE);
            ASSERT_ST(ingot_mlp_forward(m, x, batch, (float *)scratch, scratch, ns, &e),
                      INGOT_E_MISUSE);
        }
        free(x);
        free(scratch);
        ingot_mlp_free(m);
        ingot_backend_free(be);
    }
    ASSERT_MEM(ys[0], ys[1], 4 * 64 * g.sizes[g.L]); /* bit-identical for 1, 2, 3 threads */
    ASSERT_MEM(ys[0], ys[2], 4 * 64 * g.sizes[g.L]);
    for (int i = 0; i < 3; i++) free(ys[i]);
    ingot_file_close(f);
    remove(path);
    free(g.file);
}

/* A model file with one thing wrong; expect `code` and `where` naming the culprit. */
static void bad_model(int variant, ingot_status code, const char *where)
{
    ingot_writer_opts wo = {0};
    wo.no_fsync = true;
    ingot_writer *w = NULL;
    ingot_error e;
    ingot_writer_new(&wo, &w, &e);
    uint64_t sizes[3] = {4, 3, 2};
    float wd[12] = {0}, bd[3] = {0};
    if (variant != 0) ingot_writer_set_u32(w, "mlp.layer_count", variant == 1 ? 3 : 2);
    ingot_writer_set_array(w, "mlp.sizes", INGOT_META_U64, sizes, 3);
    const void *names[2] = {"relu", variant == 2 ? "swishy" : "identity"};
    size_t lens[2] = {4, strlen(names[1])};
    ingot_writer_set_string_array(w, "mlp.activations", INGOT_META_STRING, names, lens, 2);
    uint64_t ws0[2] = {3, 4}, bs0[1] = {3}, ws1[2] = {2, 3}, bs1[1] = {2}, bad[2] = {3, 2};
    ingot_writer_add_tensor(w, "layers.0.weight", INGOT_DTYPE_F32, 2, ws0, NULL, wd, &e);
    ingot_writer_add_tensor(w, "layers.0.bias", INGOT_DTYPE_F32, 1, bs0, NULL, bd, &e);
    ingot_writer_add_tensor(w, "layers.1.weight", INGOT_DTYPE_F32, 2, variant == 3 ? bad : ws1,
                            NULL, wd, &e);
    if (variant != 4) ingot_writer_add_tensor(w, "layers.1.bias", INGOT_DTYPE_F32, 1, bs1, NULL, bd, &e);
    void *mem = NULL;
    size_t size = 0;
    ingot_writer_begin_mem(w, &e);
    ingot_status st = ingot_writer_commit_mem(w, &mem, &size, &e);
    ingot_writer_free(w);
    if (st != INGOT_OK) {
        CHECK(false, "variant %d: writer %s", variant, e.msg);
        return;
    }
    ingot_file *f = NULL;
    CHECK(ingot_file_open_buffer(mem, size, NULL, &f, &e) == INGOT_OK, "open variant %d", variant);
    ingot_backend *be = NULL;
    ingot_backend_new("ref", NULL, &be, &e);
    ingot_mlp *m = NULL;
    memset(&e, 0, sizeof e);
    st = ingot_mlp_open(be, f, NULL, &m, &e);
    CHECK(st == code, "variant %d: got %s (%s), want %s", variant, ingot_status_name(st), e.msg,
          ingot_status_name(code));
    CHECK(strstr(e.where, where) != NULL, "variant %d: where '%s' should name '%s'", variant,
          e.where, where);
    CHECK(m == NULL, "variant %d: out must stay NULL", variant);
    ingot_backend_free(be);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, mem, size);
}

TEST(test_mlp_bad_models)
{
    bad_model(0, INGOT_E_BAD_METADATA, "mlp.layer_count");  /* missing */
    bad_model(1, INGOT_E_BAD_METADATA, "mlp.sizes");        /* 3 layers, 3 sizes */
    bad_model(2, INGOT_E_UNSUPPORTED, "mlp.activations");   /* unknown name */
    bad_model(3, INGOT_E_BAD_SHAPE, "layers.1.weight");     /* [3,2] instead of [2,3] */
    bad_model(4, INGOT_E_NOT_FOUND, "layers.1.bias");       /* missing tensor */
}

/* `ingot run MODEL --input X.npy -o Y.npy` end to end (npy reader and writer via the public API). */
TEST(test_mlp_cli_run)
{
    golden g;
    ASSERT_TRUE(load_golden("mlp_a", &g));
    ingot_error e;
    const char *model = INGOT_BINARY_DIR "/test_mlp_cli.ingot";
    const char *xin = INGOT_BINARY_DIR "/test_mlp_cli_x.npy";
    const char *yout = INGOT_BINARY_DIR "/test_mlp_cli_y.npy";
    write_model(&g, model, false, &e);
    ingot_writer_opts wo = {0};
    wo.format = "npy";
    wo.no_fsync = true;
    ingot_writer *w = NULL;
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    uint64_t xs[2] = {g.batch, g.sizes[0]};
    ASSERT_OK(ingot_writer_add_tensor(w, "x", INGOT_DTYPE_F32, 2, xs, NULL, g.x, &e));
    ASSERT_OK(ingot_writer_save(w, xin, &e));
    ingot_writer_free(w);
    for (int bi = 0; bi < 2; bi++) {
        char cmd[1024];
        remove(yout);
        snprintf(cmd, sizeof cmd, "%s run %s --input %s -o %s --backend %s --threads 2", INGOT_CLI,
                 model, xin, yout, bi ? "ref" : "cpu");
        ASSERT_EQ(system(cmd), 0);
        ingot_file *f = NULL;
        ASSERT_OK(ingot_file_open(yout, NULL, &f, &e));
        ingot_tensor_info ti;
        ASSERT_OK(ingot_file_tensor_at(f, 0, &ti));
        ASSERT_EQ(ti.dtype, INGOT_DTYPE_F32);
        ASSERT_EQ(ti.rank, 2);
        ASSERT_U64(ti.shape[0], g.batch);
        ASSERT_U64(ti.shape[1], g.sizes[g.L]);
        float *y = malloc((size_t)ti.nbytes);
        ASSERT_OK(ingot_file_tensor_copy(f, ti.index, y, (size_t)ti.nbytes, &e));
        for (uint64_t i = 0; i < ti.nelem; i++)
            CHECK(fabsf(y[i] - g.y[i]) <= 1e-4f * fmaxf(1.0f, fabsf(g.y[i])), "y[%llu] %g vs %g",
                  (unsigned long long)i, y[i], g.y[i]);
        free(y);
        ingot_file_close(f);
    }
    /* Wrong input width: exit code 1 and a message, no output. */
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    uint64_t bad[2] = {2, 5};
    ASSERT_OK(ingot_writer_add_tensor(w, "x", INGOT_DTYPE_F32, 2, bad, NULL, g.x, &e));
    ASSERT_OK(ingot_writer_save(w, xin, &e));
    ingot_writer_free(w);
    char cmd[1024];
    remove(yout);
    snprintf(cmd, sizeof cmd, "%s run %s --input %s -o %s 2>/dev/null", INGOT_CLI, model, xin,
             yout);
    ASSERT_TRUE(system(cmd) != 0);
    FILE *fy = fopen(yout, "rb");
    ASSERT_TRUE(fy == NULL);
    remove(model);
    remove(xin);
    free(g.file);
}

RUN_TESTS(T(test_mlp_matches_torch), T(test_mlp_cli_run), T(test_mlp_forward_no_alloc_deterministic_estimate),
          T(test_mlp_bad_models))
