/*
 * mlp.c - the dense MLP runtime (include/ingot/runtime.h): reads the mlp.* topology of
 * an open file, binds layers.<k>.weight/bias as backend tensors (zero-copy when the file allows),
 * and runs linear + activation per layer through the checked backend ops, ping-ponging between
 * two halves of caller scratch. The forward pass allocates nothing: it rebinds three pre-made
 * buffer handles (input, output, scratch) to the caller's memory.
 */
#include <string.h>

#include "alloc.h"
#include "backend_export.h"
#include "checked.h"
#include "error.h"
#include "ingot/runtime.h"

typedef struct mlp_layer {
    ingot_tensor w, b;
    ingot_buffer *wbuf, *bbuf;
    ingot_act_op act;
    uint64_t in, out;
} mlp_layer;

struct ingot_mlp {
    ingot_backend *be;
    uint32_t nlayers;
    mlp_layer *layers;
    uint64_t max_hidden, owned_bytes, weight_bytes;
    ingot_buffer *xbuf, *ybuf, *sbuf; /* rebound per call */
};

#define MAX_LAYERS 65536

static ingot_status meta_uint(const ingot_file *f, const char *key, uint64_t *out,
                              ingot_error *err)
{
    ingot_meta_info mi;
    if (ingot_file_meta_find(f, key, &mi) != INGOT_OK)
        return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, key, ing_strlen(key),
                          "mlp: missing key (an MLP model needs mlp.layer_count, mlp.sizes and "
                          "mlp.activations)");
    if (mi.is_array || (mi.type != INGOT_META_U32 && mi.type != INGOT_META_U64 &&
                        mi.type != INGOT_META_U16 && mi.type != INGOT_META_U8))
        return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, key, ing_strlen(key),
                          "mlp: expected an unsigned integer scalar");
    *out = mi.v.u;
    return INGOT_OK;
}

static ingot_status load_sizes(const ingot_file *f, uint64_t L, uint64_t *sizes, ingot_error *err)
{
    const char *key = "mlp.sizes";
    ingot_meta_info mi;
    if (ingot_file_meta_find(f, key, &mi) != INGOT_OK)
        return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, key, 9, "mlp: missing key");
    if (!mi.is_array || (mi.type != INGOT_META_U64 && mi.type != INGOT_META_U32))
        return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, key, 9,
                          "mlp: expected a u64 (or u32) array");
    if (mi.count != L + 1)
        return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, key, 9,
                          "mlp: %llu entries, mlp.layer_count %llu needs %llu",
                          (unsigned long long)mi.count, (unsigned long long)L,
                          (unsigned long long)(L + 1));
    for (uint64_t i = 0; i <= L; i++) {
        if (mi.type == INGOT_META_U64) {
            ING_TRY(ingot_file_meta_array_read(f, mi.index, INGOT_META_U64, i, 1, &sizes[i]));
        } else {
            uint32_t v;
            ING_TRY(ingot_file_meta_array_read(f, mi.index, INGOT_META_U32, i, 1, &v));
            sizes[i] = v;
        }
        if (sizes[i] == 0 || sizes[i] > (1ull << 31))
            return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, key, 9,
                              "mlp: size %llu at index %llu is out of range 1..2^31",
                              (unsigned long long)sizes[i], (unsigned long long)i);
    }
    return INGOT_OK;
}

static ingot_status load_acts(const ingot_file *f, ingot_mlp *m, ingot_error *err)
{
    const char *key = "mlp.activations";
    ingot_meta_info mi;
    if (ingot_file_meta_find(f, key, &mi) != INGOT_OK)
        return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, key, 15, "mlp: missing key");
    if (!mi.is_array || mi.type != INGOT_META_STRING || mi.count != m->nlayers)
        return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, key, 15,
                          "mlp: expected a string array of %u activation names", m->nlayers);
    for (uint32_t k = 0; k < m->nlayers; k++) {
        const char *s;
        size_t n;
        ING_TRY(ingot_file_meta_array_string(f, mi.index, k, &s, &n));
        if (ingot_act_op_from_name(s, n, &m->layers[k].act) != INGOT_OK)
            return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, key, 15,
                              "mlp: layer %u activation '%.*s' is not known", k,
                              (int)(n > 40 ? 40 : n), s);
    }
    return INGOT_OK;
}

/* Binds tensor `name` as an F32 tensor of the given shape (converting F64/F16/BF16 once). */
static ingot_status bind(ingot_mlp *m, const ingot_file *f, const char *name, uint32_t rank,
                         const int64_t *shape, ingot_tensor *t, ingot_buffer **buf,
                         ingot_error *err)
{
    ingot_tensor raw;
    ingot_buffer *rbuf = NULL;
    ING_TRY(ingot_tensor_from_file(m->be, f, name, &raw, &rbuf, err));
    ingot_status st = INGOT_OK;
    bool shape_ok = raw.rank == rank;
    for (uint32_t i = 0; shape_ok && i < rank; i++) shape_ok = raw.shape[i] == shape[i];
    if (!shape_ok) {
        if (rank == 2)
            st = ingot__err(err, INGOT_E_BAD_SHAPE, INGOT_NO_OFFSET, name, ing_strlen(name),
                            "mlp: expected [%lld, %lld] ([out, in]) from mlp.sizes",
                            (long long)shape[0], (long long)shape[1]);
        else
            st = ingot__err(err, INGOT_E_BAD_SHAPE, INGOT_NO_OFFSET, name, ing_strlen(name),
                            "mlp: expected [%lld] from mlp.sizes", (long long)shape[0]);
        goto fail;
    }
    if (raw.dtype == INGOT_DTYPE_F32) {
        *t = raw;
        *buf = rbuf;
        m->weight_bytes += ingot_tensor_nelem(&raw) * 4;
        return INGOT_OK;
    }
    if (raw.dtype != INGOT_DTYPE_F64 && raw.dtype != INGOT_DTYPE_F16 &&
        raw.dtype != INGOT_DTYPE_BF16) {
        st = ingot__err(err, INGOT_E_BAD_TYPE, INGOT_NO_OFFSET, name, ing_strlen(name),
                        "mlp: dtype %s, expected F32, F64, F16 or BF16",
                        ingot_dtype_name(raw.dtype));
        goto fail;
    }
    size_t nb = (size_t)ingot_tensor_nelem(&raw) * 4;
    st = ingot_buffer_alloc(m->be, nb, buf, err);
    if (st == INGOT_OK) st = ingot_tensor_init(t, *buf, 0, INGOT_DTYPE_F32, rank, shape, err);
    if (st == INGOT_OK) st = ingot_op_cast(m->be, t, &raw, err);
    if (st != INGOT_OK) {
        ingot_buffer_free(*buf);
        *buf = NULL;
        goto fail;
    }
    m->owned_bytes += nb;
    m->weight_bytes += nb;
fail:
    ingot_buffer_free(rbuf);
    return st;
}

INGOT_API ingot_status ingot_mlp_open(ingot_backend *b, const ingot_file *f,
                                      const ingot_mlp_opts *opts, ingot_mlp **out,
                                      ingot_error *err)
{
    (void)opts;
    if (!b || !f || !out)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0, "mlp_open: NULL argument");
    *out = NULL;
    uint64_t L = 0;
    ING_TRY(meta_uint(f, "mlp.layer_count", &L, err));
    if (L < 1 || L > MAX_LAYERS)
        return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, "mlp.layer_count", 15,
                          "mlp: %llu layers, expected 1..%d", (unsigned long long)L, MAX_LAYERS);
    const ingot_allocator *al = ingot_backend_allocator(b);
    ingot_mlp *m = ingot__calloc(al, sizeof *m);
    uint64_t *sizes = ingot__alloc(al, (size_t)(L + 1) * sizeof *sizes);
    if (m) m->layers = ingot__calloc(al, (size_t)L * sizeof *m->layers);
    ingot_status st = INGOT_OK;
    if (!m || !sizes || !m->layers) {
        st = ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0, "mlp: %llu layers",
                        (unsigned long long)L);
        goto done;
    }
    m->be = b;
    m->nlayers = (uint32_t)L;
    st = load_sizes(f, L, sizes, err);
    if (st == INGOT_OK) st = load_acts(f, m, err);
    for (uint32_t k = 0; st == INGOT_OK && k < m->nlayers; k++) {
        mlp_layer *ly = &m->layers[k];
        ly->in = sizes[k];
        ly->out = sizes[k + 1];
        if (k + 1 < m->nlayers && ly->out > m->max_hidden) m->max_hidden = ly->out;
        char name[48];
        int64_t wshape[2] = {(int64_t)ly->out, (int64_t)ly->in}, bshape[1] = {(int64_t)ly->out};
        ingot__fmt(name, sizeof name, "layers.%u.weight", k);
        st = bind(m, f, name, 2, wshape, &ly->w, &ly->wbuf, err);
        if (st != INGOT_OK) break;
        ingot__fmt(name, sizeof name, "layers.%u.bias", k);
        st = bind(m, f, name, 1, bshape, &ly->b, &ly->bbuf, err);
    }
    if (st == INGOT_OK) st = ingot_buffer_wrap(b, "", 0, false, &m->xbuf, err);
    if (st == INGOT_OK) st = ingot_buffer_wrap(b, "", 0, true, &m->ybuf, err);
    if (st == INGOT_OK) st = ingot_buffer_wrap(b, "", 0, true, &m->sbuf, err);
    if (st == INGOT_OK) {
        ingot_device_info di;
        ingot_backend_device_info(b, &di);
        if (!di.host_buffers || !di.zero_copy_wrap || !ingot_buffer_host(m->xbuf))
            st = ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, NULL, 0,
                            "mlp: backend '%s' has no zero-copy host buffers",
                            ingot_backend_name(b));
    }
done:
    if (sizes) ingot__free(al, sizes, (size_t)(L + 1) * sizeof *sizes);
    if (st != INGOT_OK) {
        ingot_mlp_free(m);
        return st;
    }
    *out = m;
    return INGOT_OK;
}

INGOT_API void ingot_mlp_free(ingot_mlp *m)
{
    if (!m) return;
    const ingot_allocator *al = ingot_backend_allocator(m->be);
    if (m->layers) {
        for (uint32_t k = 0; k < m->nlayers; k++) {
            ingot_buffer_free(m->layers[k].wbuf);
            ingot_buffer_free(m->layers[k].bbuf);
        }
        ingot__free(al, m->layers, (size_t)m->nlayers * sizeof *m->layers);
    }
    ingot_buffer_free(m->xbuf);
    ingot_buffer_free(m->ybuf);
    ingot_buffer_free(m->sbuf);
    ingot__free(al, m, sizeof *m);
}

INGOT_API uint32_t ingot_mlp_layer_count(const ingot_mlp *m) { return m ? m->nlayers : 0; }
INGOT_API uint64_t ingot_mlp_input_size(const ingot_mlp *m) { return m ? m->layers[0].in : 0; }
INGOT_API uint64_t ingot_mlp_output_size(const ingot_mlp *m)
{
    return m ? m->layers[m->nlayers - 1].out : 0;
}
INGOT_API ingot_act_op ingot_mlp_activation(const ingot_mlp *m, uint32_t k)
{
    return m && k < m->nlayers ? m->layers[k].act : INGOT_ACT_IDENTITY;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return ing_mul(a, b, &r) ? r : UINT64_MAX;
}
static uint64_t sat_add(uint64_t a, uint64_t b)
{
    uint64_t r;
    return ing_add(a, b, &r) ? r : UINT64_MAX;
}

static uint64_t half_bytes(const ingot_mlp *m, uint64_t batch)
{
    uint64_t h = sat_mul(sat_mul(batch, m->max_hidden), 4), r;
    return ing_round_up(h, 64, &r) ? r : UINT64_MAX;
}

INGOT_API size_t ingot_mlp_scratch_size(const ingot_mlp *m, uint64_t batch)
{
    if (!m || m->nlayers < 2 || batch == 0) return 0;
    uint64_t n = sat_mul(half_bytes(m, batch), m->nlayers > 2 ? 2 : 1);
    return n > SIZE_MAX ? SIZE_MAX : (size_t)n;
}

INGOT_API void ingot_mlp_estimate_plan(const ingot_mlp *m, uint64_t batch,
                                       ingot_mlp_estimate *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!m) return;
    for (uint32_t k = 0; k < m->nlayers; k++) {
        const mlp_layer *ly = &m->layers[k];
        uint64_t per_row = sat_add(sat_mul(2 * ly->in, ly->out), sat_mul(2, ly->out));
        out->flops = sat_add(out->flops, sat_mul(per_row, batch));
    }
    out->weight_bytes = m->weight_bytes;
    out->owned_bytes = m->owned_bytes;
    out->scratch_bytes = ingot_mlp_scratch_size(m, batch);
    out->io_bytes = sat_mul(sat_add(ingot_mlp_input_size(m), ingot_mlp_output_size(m)),
                            sat_mul(batch, 4));
    out->peak_bytes = sat_add(sat_add(out->owned_bytes, out->scratch_bytes), out->io_bytes);
}

static bool overlaps(const void *a, size_t an, const void *b, size_t bn)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return an && bn && x < y + bn && y < x + an;
}

INGOT_API ingot_status ingot_mlp_forward(ingot_mlp *m, const float *x, uint64_t batch, float *y,
                                         void *scratch, size_t scratch_size, ingot_error *err)
{
    if (!m) return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, "mlp", 3, "mlp is NULL");
    if (batch == 0) return INGOT_OK;
    if (!x || !y || batch > (uint64_t)INT64_MAX / 4)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, "mlp", 3,
                          "mlp_forward: x or y is NULL, or batch too large");
    size_t need = ingot_mlp_scratch_size(m, batch);
    if (scratch_size < need || (need && !scratch))
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "scratch", 7,
                          "mlp_forward: scratch of %zu bytes, %zu needed for batch %llu",
                          scratch_size, need, (unsigned long long)batch);
    if ((uintptr_t)scratch % 4)
        return ingot__err(err, INGOT_E_BAD_ALIGN, INGOT_NO_OFFSET, "scratch", 7,
                          "mlp_forward: scratch must be 4-byte aligned");
    uint64_t xin = sat_mul(sat_mul(batch, ingot_mlp_input_size(m)), 4);
    uint64_t yout = sat_mul(sat_mul(batch, ingot_mlp_output_size(m)), 4);
    if (xin > SIZE_MAX || yout > SIZE_MAX)
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "mlp", 3, "batch too large");
    if (overlaps(x, (size_t)xin, y, (size_t)yout) || overlaps(x, (size_t)xin, scratch, need) ||
        overlaps(y, (size_t)yout, scratch, need))
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, "mlp", 3,
                          "mlp_forward: x, y and scratch must not overlap");
    ingot__buffer_rebind(m->xbuf, (void *)(uintptr_t)x, (size_t)xin, false);
    ingot__buffer_rebind(m->ybuf, y, (size_t)yout, true);
    ingot__buffer_rebind(m->sbuf, scratch, need, true);
    uint64_t half = m->nlayers > 1 ? half_bytes(m, batch) : 0;
    ingot_tensor cur;
    int64_t shape[2] = {(int64_t)batch, (int64_t)m->layers[0].in};
    ING_TRY(ingot_tensor_init(&cur, m->xbuf, 0, INGOT_DTYPE_F32, 2, shape, err));
    ingot_status st = INGOT_OK;
    for (uint32_t k = 0; k < m->nlayers && st == INGOT_OK; k++) {
        const mlp_layer *ly = &m->layers[k];
        ingot_tensor nxt;
        shape[1] = (int64_t)ly->out;
        bool last = k + 1 == m->nlayers;
        st = ingot_tensor_init(&nxt, last ? m->ybuf : m->sbuf, last ? 0 : (k % 2) * half,
                               INGOT_DTYPE_F32, 2, shape, err);
        if (st == INGOT_OK) st = ingot_op_linear(m->be, &nxt, &cur, &ly->w, &ly->b, err);
        if (st == INGOT_OK && ly->act != INGOT_ACT_IDENTITY)
            st = ingot_op_activation(m->be, ly->act, &nxt, &nxt, 0.0, err);
        cur = nxt;
    }
    /* Leave no pointer to caller memory behind. */
    ingot__buffer_rebind(m->xbuf, (void *)(uintptr_t)"", 0, false);
    ingot__buffer_rebind(m->ybuf, (void *)(uintptr_t)"", 0, true);
    ingot__buffer_rebind(m->sbuf, (void *)(uintptr_t)"", 0, true);
    return st;
}
