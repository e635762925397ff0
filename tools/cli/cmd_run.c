/* cmd_run.c - `ingot run MODEL --input X.npy -o Y.npy [--backend NAME] [--threads N]`: runs the
 * dense MLP stored in MODEL (any format carrying the mlp.* topology, see ingot/runtime.h) on the
 * float32 [batch, in] array of X (any readable file whose first tensor it is; .npy normally) and
 * writes float32 [batch, out] to Y (format from the extension; .npy normally). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ingot/ingot.h"
#include "ingot/backend.h"
#include "ingot/runtime.h"

static int usage(void)
{
    fprintf(stderr, "usage: ingot run MODEL --input X.npy -o Y.npy [--backend cpu|ref] "
                    "[--threads N] [--stats]\n");
    return 2;
}

static int fail(const char *what, const ingot_error *e)
{
    char buf[320];
    fprintf(stderr, "ingot run: %s: %s\n", what, ingot_error_format(e, buf, sizeof buf));
    return 1;
}

/* Reads the first tensor of `path` as float32 [batch, in] (rank 1 = one row; F64 converted). */
static int read_input(const char *path, uint64_t in, float **out, uint64_t *batch)
{
    ingot_file *f = NULL;
    ingot_error e = {0};
    if (ingot_file_open(path, NULL, &f, &e) != INGOT_OK) return fail(path, &e);
    int rc = 1;
    ingot_tensor_info ti;
    void *raw = NULL;
    if (ingot_file_tensor_count(f) < 1 || ingot_file_tensor_at(f, 0, &ti) != INGOT_OK) {
        fprintf(stderr, "ingot run: %s: no tensor\n", path);
        goto done;
    }
    if ((ti.dtype != INGOT_DTYPE_F32 && ti.dtype != INGOT_DTYPE_F64) || ti.rank < 1 ||
        ti.rank > 2 || ti.shape[ti.rank - 1] != in) {
        fprintf(stderr, "ingot run: %s: input '%s' must be float32 [batch, %llu] (got %s, rank "
                        "%u, last dimension %llu)\n", path, ti.name, (unsigned long long)in,
                ingot_dtype_name(ti.dtype), ti.rank,
                (unsigned long long)(ti.rank ? ti.shape[ti.rank - 1] : 0));
        goto done;
    }
    *batch = ti.rank == 2 ? ti.shape[0] : 1;
    raw = malloc(ti.nbytes ? (size_t)ti.nbytes : 1);
    *out = malloc(ti.nelem ? (size_t)ti.nelem * 4 : 4);
    if (!raw || !*out) {
        fprintf(stderr, "ingot run: out of memory for the input\n");
        goto done;
    }
    if (ingot_file_tensor_copy(f, ti.index, raw, (size_t)ti.nbytes, &e) != INGOT_OK) {
        fail(path, &e);
        goto done;
    }
    if (ti.dtype == INGOT_DTYPE_F32) {
        memcpy(*out, raw, (size_t)ti.nbytes);
    } else {
        for (uint64_t i = 0; i < ti.nelem; i++) {
            double v;
            memcpy(&v, (const char *)raw + 8 * i, 8);
            (*out)[i] = (float)v;
        }
    }
    rc = 0;
done:
    free(raw);
    if (rc) {
        free(*out);
        *out = NULL;
    }
    ingot_file_close(f);
    return rc;
}

int ingot_cli_run(int argc, char **argv)
{
    const char *model = NULL, *input = NULL, *output = NULL, *backend = "cpu";
    unsigned threads = 0;
    int stats = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--input") && i + 1 < argc) input = argv[++i];
        else if (!strcmp(argv[i], "-o") && i + 1 < argc) output = argv[++i];
        else if (!strcmp(argv[i], "--output") && i + 1 < argc) output = argv[++i];
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc) backend = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--stats")) stats = 1;
        else if (argv[i][0] == '-' || model) return usage();
        else model = argv[i];
    }
    if (!model || !input || !output) return usage();

    ingot_error e = {0};
    ingot_file *mf = NULL;
    ingot_backend *be = NULL;
    ingot_mlp *m = NULL;
    float *x = NULL, *y = NULL;
    void *scratch = NULL;
    ingot_writer *w = NULL;
    int rc = 1;
    if (ingot_file_open(model, NULL, &mf, &e) != INGOT_OK) return fail(model, &e);
    ingot_backend_opts bo = {0};
    bo.threads = threads;
    if (ingot_backend_new(backend, &bo, &be, &e) != INGOT_OK) {
        fail(backend, &e);
        goto done;
    }
    if (ingot_mlp_open(be, mf, NULL, &m, &e) != INGOT_OK) {
        fail(model, &e);
        goto done;
    }
    uint64_t batch = 0, in = ingot_mlp_input_size(m), out = ingot_mlp_output_size(m);
    if (read_input(input, in, &x, &batch)) goto done;
    size_t ns = ingot_mlp_scratch_size(m, batch);
    scratch = ns ? malloc(ns) : NULL;
    y = malloc(batch != 0 && out != 0 ? (size_t)(batch * out) * 4 : 4);
    if ((ns && !scratch) || !y) {
        fprintf(stderr, "ingot run: out of memory\n");
        goto done;
    }
    if (ingot_mlp_forward(m, x, batch, y, scratch, ns, &e) != INGOT_OK) {
        fail("forward", &e);
        goto done;
    }
    ingot_writer_opts wo = {0};
    wo.format = ingot_writer_format_for_path(output);
    if (!wo.format) wo.format = "npy";
    uint64_t shape[2] = {batch, out};
    if (ingot_writer_new(&wo, &w, &e) != INGOT_OK ||
        ingot_writer_add_tensor(w, "y", INGOT_DTYPE_F32, 2, shape, NULL, y, &e) != INGOT_OK ||
        ingot_writer_save(w, output, &e) != INGOT_OK) {
        fail(output, &e);
        goto done;
    }
    if (stats) {
        ingot_mlp_estimate est;
        ingot_device_info di;
        ingot_mlp_estimate_plan(m, batch, &est);
        ingot_backend_device_info(be, &di);
        fprintf(stderr, "ingot run: %u layers, %llu -> %llu, batch %llu on %s (%s); %llu FLOPs, "
                        "weights %llu bytes, scratch %llu bytes\n",
                ingot_mlp_layer_count(m), (unsigned long long)in, (unsigned long long)out,
                (unsigned long long)batch, di.backend, di.description,
                (unsigned long long)est.flops, (unsigned long long)est.weight_bytes,
                (unsigned long long)est.scratch_bytes);
    }
    rc = 0;
done:
    ingot_writer_free(w);
    free(scratch);
    free(x);
    free(y);
    ingot_mlp_free(m);
    ingot_backend_free(be);
    ingot_file_close(mf);
    return rc;
}
