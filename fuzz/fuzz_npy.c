/*
 * fuzz_npy.c - libFuzzer target for the .npy and .npz readers and writers: open a buffer (content
 * detection, then forced "npy" and "npz"), check every tensor view against the buffer (rank,
 * sizes, data inside the image, flags consistent), read first/last stored bytes, materialise the
 * C-order little-endian copy, verify, look every name up; then write the tensors back with the
 * npz writer (and npy for one tensor), reopen and compare the copies (convert round trip), and
 * write twice to check determinism.
 */
#include "fuzz_common.h"

#define MAX_COPY (1u << 20)

static void roundtrip(const ingot_file *f, const char *format)
{
    uint64_t n = ingot_file_tensor_count(f);
    if (strcmp(format, "npy") == 0 && n != 1) return;
    ingot_writer_opts wo = {0};
    wo.format = format;
    ingot_writer *w;
    FZ_ST(ingot_writer_new(&wo, &w, NULL), INGOT_OK);
    void **bufs = calloc(n + 1, sizeof *bufs);
    FZ_CHECK(bufs);
    bool ok = true;
    for (uint64_t i = 0; i < n && ok; i++) {
        ingot_tensor_info t;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        if (t.nbytes > MAX_COPY) {
            ok = false;
            break;
        }
        bufs[i] = malloc(t.nbytes + 1);
        FZ_CHECK(bufs[i]);
        if (ingot_file_tensor_copy(f, i, bufs[i], t.nbytes, NULL) != INGOT_OK) {
            ok = false; /* a deflated member may be corrupt past its header */
            break;
        }
        FZ_ST(ingot_writer_add_tensor(w, t.name, t.dtype, t.rank, t.shape, NULL, bufs[i], NULL),
              INGOT_OK);
    }
    if (ok) {
        void *out = NULL, *out2 = NULL;
        size_t size = 0, size2 = 0;
        FZ_ST(ingot_writer_begin_mem(w, NULL), INGOT_OK);
        FZ_ST(ingot_writer_commit_mem(w, &out, &size, NULL), INGOT_OK);
        ingot_file *g;
        ingot_open_opts oo = {0};
        oo.format = format;
        FZ_ST(ingot_file_open_buffer(out, size, &oo, &g, NULL), INGOT_OK);
        FZ_CHECK(ingot_file_tensor_count(g) == n);
        FZ_ST(ingot_file_verify(g, 1, NULL), INGOT_OK);
        for (uint64_t i = 0; i < n; i++) {
            ingot_tensor_info a, b;
            ingot_file_tensor_at(f, i, &a);
            FZ_ST(ingot_file_tensor_at(g, i, &b), INGOT_OK);
            FZ_CHECK(a.dtype == b.dtype && a.rank == b.rank && a.nbytes == b.nbytes);
            FZ_CHECK(memcmp(a.shape, b.shape, sizeof a.shape) == 0);
            if (strcmp(format, "npz") == 0) FZ_CHECK(strcmp(a.name, b.name) == 0);
            FZ_CHECK(b.flags == 0 || b.flags == INGOT_TENSOR_UNALIGNED);
            FZ_CHECK(b.data && memcmp(b.data, bufs[i], b.nbytes) == 0);
        }
        ingot_file_close(g);
        /* determinism: the same description gives the same bytes */
        ingot_writer *w2;
        FZ_ST(ingot_writer_new(&wo, &w2, NULL), INGOT_OK);
        for (uint64_t i = 0; i < n; i++) {
            ingot_tensor_info t;
            ingot_file_tensor_at(f, i, &t);
            FZ_ST(ingot_writer_add_tensor(w2, t.name, t.dtype, t.rank, t.shape, NULL, bufs[i],
                                          NULL),
                  INGOT_OK);
        }
        FZ_ST(ingot_writer_begin_mem(w2, NULL), INGOT_OK);
        FZ_ST(ingot_writer_commit_mem(w2, &out2, &size2, NULL), INGOT_OK);
        FZ_CHECK(size == size2 && memcmp(out, out2, size) == 0);
        ingot_writer_free(w2);
        ingot_writer_free_mem(NULL, out, size);
        ingot_writer_free_mem(NULL, out2, size2);
    }
    for (uint64_t i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    ingot_writer_free(w);
}

static void exercise(const ingot_file *f, const uint8_t *d, size_t size)
{
    uint64_t n = ingot_file_tensor_count(f);
    bool npz = strcmp(ingot_file_format(f), "npz") == 0;
    FZ_CHECK(npz || n == 1);
    FZ_CHECK(ingot_file_meta_count(f) == 0);
    uint64_t a = ingot_file_alignment(f);
    FZ_CHECK(a >= 1 && a <= 64 && (a & (a - 1)) == 0);
    /* skipped string members: npz only, each a name that is no tensor and a reason */
    uint64_t ns = ingot_file_notice_count(f);
    FZ_CHECK(npz || ns == 0);
    for (uint64_t i = 0; i <= ns; i++) {
        ingot_notice no;
        ingot_tensor_info t;
        if (i == ns) {
            FZ_ST(ingot_file_notice_at(f, i, &no), INGOT_RANGE);
            break;
        }
        FZ_ST(ingot_file_notice_at(f, i, &no), INGOT_OK);
        FZ_CHECK(no.kind == INGOT_NOTICE_SKIPPED && no.name && strlen(no.name) == no.name_len);
        FZ_CHECK(no.reason && strstr(no.reason, "skipped") && no.offset <= size);
        FZ_ST(ingot_file_tensor_find(f, no.name, &t), INGOT_NOT_FOUND);
    }
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info t, u;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        FZ_CHECK(t.index == i && t.name && strlen(t.name) == t.name_len && t.name_len > 0);
        FZ_CHECK(fz_utf8((const uint8_t *)t.name, t.name_len, false));
        FZ_CHECK(t.rank <= INGOT_MAX_RANK);
        uint64_t ne, nb;
        FZ_ST(ingot_dtype_nbytes(t.dtype, t.rank, t.shape, &ne, &nb), INGOT_OK);
        FZ_CHECK(ne == t.nelem && nb == t.nbytes);
        FZ_CHECK(!(t.flags & ~(uint32_t)(INGOT_TENSOR_BIG_ENDIAN | INGOT_TENSOR_FORTRAN |
                                        INGOT_TENSOR_NOT_MAPPED | INGOT_TENSOR_UNALIGNED)));
        if (t.flags & INGOT_TENSOR_NOT_MAPPED) {
            FZ_CHECK(t.data == NULL && npz);
        } else {
            FZ_CHECK(t.offset <= size && t.nbytes <= size - t.offset);
            FZ_CHECK(t.data == d + t.offset);
            uint32_t es = ingot_dtype_block_bytes(t.dtype);
            FZ_CHECK(!!(t.flags & INGOT_TENSOR_UNALIGNED) == ((uintptr_t)t.data % es != 0));
        }
        FZ_ST(ingot_file_tensor_find(f, t.name, &u), INGOT_OK);
        FZ_CHECK(u.index == i);
        uint8_t b;
        if (t.nbytes) {
            ingot_status s1 = ingot_file_tensor_read(f, i, 0, &b, 1, NULL);
            ingot_status s2 = ingot_file_tensor_read(f, i, t.nbytes - 1, &b, 1, NULL);
            if (!(t.flags & INGOT_TENSOR_NOT_MAPPED)) { /* a BOOL byte must be 0 or 1 */
                const uint8_t *p = t.data;
                FZ_ST(s1, fz_values_status(t.dtype, p, 1));
                FZ_ST(s2, fz_values_status(t.dtype, p + t.nbytes - 1, 1));
            }
            FZ_CHECK(fz_known_status(s1) && fz_known_status(s2));
        }
        FZ_ST(ingot_file_tensor_read(f, i, t.nbytes, &b, 1, NULL), INGOT_RANGE);
        if (t.nbytes <= MAX_COPY) {
            uint8_t *c = malloc(t.nbytes + 1);
            FZ_CHECK(c);
            ingot_error e;
            fz_err_reset(&e);
            ingot_status st = ingot_file_tensor_copy(f, i, c, t.nbytes, &e);
            fz_err_check(&e, st);
            if (!(t.flags & INGOT_TENSOR_NOT_MAPPED))
                FZ_ST(st, fz_values_status(t.dtype, t.data, t.nbytes));
            if (st == INGOT_OK && !(t.flags & ~(uint32_t)INGOT_TENSOR_UNALIGNED))
                FZ_CHECK(memcmp(c, t.data, t.nbytes) == 0);
            free(c);
        }
        ingot_error e;
        fz_err_reset(&e);
        ingot_status st = ingot_file_tensor_verify(f, i, &e);
        fz_err_check(&e, st);
    }
    ingot_tensor_info t;
    FZ_ST(ingot_file_tensor_at(f, n, &t), INGOT_RANGE);
    FZ_ST(ingot_file_tensor_findn(f, "\xff", 1, &t), INGOT_NOT_FOUND);
    ingot_error e;
    fz_err_reset(&e);
    fz_err_check(&e, ingot_file_verify(f, 1, &e));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const fmts[] = {NULL, "npy", "npz"};
    for (int k = 0; k < 3; k++) {
        ingot_open_opts o = {0};
        o.format = fmts[k];
        ingot_file *f = (ingot_file *)1;
        ingot_error e;
        fz_err_reset(&e);
        ingot_status st = ingot_file_open_buffer(data, size, &o, &f, &e);
        fz_err_check(&e, st);
        FZ_CHECK((st == INGOT_OK) == (f != NULL));
        if (st != INGOT_OK) continue;
        const char *fmt = ingot_file_format(f);
        if (strcmp(fmt, "npy") == 0 || strcmp(fmt, "npz") == 0) {
            exercise(f, data, size);
            if (k > 0) {
                roundtrip(f, "npz");
                roundtrip(f, "npy");
            }
        }
        ingot_file_close(f);
    }
    return 0;
}
