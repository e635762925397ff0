/*
 * fuzz_torch_pickle.c - libFuzzer target: the PyTorch adapter's restricted pickle machine on raw
 * bytes (../shared/formats/pytorch.md §3). The first input byte picks the persistent-id shape
 * (zip 5-tuples or legacy 6-tuples) and whether to chain pickles as the legacy stream does; the
 * rest is run as pickle(s), then flattened. Checks: the status is a defined code with a consistent
 * error record; on success every tensor lies inside its storage, every name is NUL-terminated
 * UTF-8 without NUL inside, names are unique and found again by binary search, every metadata
 * entry's strings and arrays are addressable; placeholders (objects outside the allow-list) are
 * distinct, in node order, and name a class and an opcode inside the input.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "torch_pickle.h"

static void check_success(tp_machine *m, tp_flat *fl)
{
    for (size_t i = 0; i < m->n_tensors; i++) {
        const tp_tensor *t = &m->tensors[i];
        FZ_CHECK(t->storage < m->n_storages);
        FZ_CHECK(t->ndim <= INGOT_MAX_RANK);
        const tp_storage *s = &m->storages[t->storage];
        uint64_t n = 1, last = t->offset;
        const uint64_t *size = tp_size(m, t);
        const int64_t *stride = tp_stride(m, t);
        FZ_CHECK(t->dims + 2 * (size_t)t->ndim <= m->n_dims);
        for (uint32_t k = 0; k < t->ndim; k++) {
            FZ_CHECK(!__builtin_mul_overflow(n, size[k], &n));
            FZ_CHECK(stride[k] >= 0);
        }
        FZ_CHECK(n == t->nelem);
        if (n) {
            for (uint32_t k = 0; k < t->ndim; k++) last += (size[k] - 1) * (uint64_t)stride[k];
            FZ_CHECK((last + 1) * t->esize <= s->nbytes);
        } else {
            FZ_CHECK(t->offset * t->esize <= s->nbytes);
        }
        FZ_CHECK(ingot_dtype_valid((ingot_dtype)t->dtype));
        FZ_CHECK(ingot_dtype_block_bytes((ingot_dtype)t->dtype) == t->esize);
    }
    for (size_t i = 0; i < fl->n_entries; i++) {
        const tp_entry *e = &fl->entries[i];
        const char *name = fl->names + e->name_off;
        FZ_CHECK(e->tensor < m->n_tensors);
        FZ_CHECK(e->name_len >= 1 && strlen(name) == e->name_len);
        FZ_CHECK(fz_utf8((const uint8_t *)name, e->name_len, false));
        FZ_CHECK(ingot__tp_flat_find(fl, name, e->name_len) == (int64_t)i);
        FZ_CHECK(ingot__tp_flat_meta_find(fl, name, e->name_len) < 0);
    }
    for (size_t i = 0; i < fl->n_places; i++) { /* placeholders: distinct, in node order */
        const tp_place *pl = &fl->places[i];
        FZ_CHECK(pl->node < m->n_nodes);
        FZ_CHECK(i == 0 || fl->places[i - 1].node < pl->node);
        uint8_t k = m->nodes[pl->node].kind;
        FZ_CHECK(k == TPV_CLASS || k == TPV_OBJECT);
        FZ_CHECK(fl->names[pl->name_off + pl->name_len] == '\0'); /* a str key may hold NULs */
        const uint8_t *cls;
        uint64_t cl, at;
        const char *op;
        ingot__tp_place_describe(m, pl->node, &cls, &cl, &op, &at);
        FZ_CHECK(op != NULL && cl >= 1 && at < m->buf_len);
        FZ_CHECK(cls[0] == cls[0] && cls[cl - 1] == cls[cl - 1]);
    }
    for (size_t i = 0; i < fl->n_metas; i++) {
        const tp_meta *mt = &fl->metas[i];
        FZ_CHECK(mt->key_len >= 1);
        FZ_CHECK(ingot__tp_flat_meta_find(fl, fl->names + mt->key_off, mt->key_len) == (int64_t)i);
        if (mt->is_array) {
            FZ_CHECK(mt->count >= 1);
            if (mt->type == INGOT_META_STRING) {
                FZ_CHECK(mt->value + mt->count <= fl->n_refs);
                for (uint64_t k = 0; k < mt->count; k++) {
                    uint64_t len;
                    const uint8_t *s = ingot__tp_bytes(m, fl->refs[mt->value + k], &len);
                    FZ_CHECK(fz_utf8(s, len, true));
                }
            } else {
                FZ_CHECK(mt->value + mt->count <= fl->n_vals);
            }
        } else if (mt->type == INGOT_META_STRING || mt->type == INGOT_META_BYTES) {
            uint64_t len = mt->count;
            const uint8_t *s = mt->src == TPM_NAMES ? (const uint8_t *)fl->names + mt->value
                                                    : ingot__tp_bytes(m, (uint32_t)mt->value, &len);
            FZ_CHECK(len == mt->count);
            if (len) FZ_CHECK(s[0] == s[0] && s[len - 1] == s[len - 1]);
            if (mt->type == INGOT_META_STRING) FZ_CHECK(fz_utf8(s, len, true));
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t mode = data[0];
    data++, size--;
    uint8_t *buf = malloc(size ? size : 1); /* exact size: reads past the end are caught */
    memcpy(buf, data, size);
    tp_machine m;
    tp_flat fl;
    memset(&fl, 0, sizeof fl);
    ingot_allocator a = {0};
    ingot__tp_init(&m, &a, buf, size, 1000, (mode & 1) ? 6 : 5);
    ingot_error e;
    fz_err_reset(&e);
    uint64_t p = 0, end = 0;
    uint32_t root = 0;
    ingot_status st = INGOT_OK;
    int runs = (mode & 2) ? 5 : 1;
    for (int k = 0; k < runs && st == INGOT_OK; k++) {
        st = ingot__tp_run(&m, p, size, &root, &end, &e);
        if (st == INGOT_OK) {
            FZ_CHECK(end > p && end <= size);
            FZ_CHECK(buf[end - 1] == '.');
            p = end;
        }
    }
    if (st == INGOT_OK) st = ingot__tp_flatten(&m, root, 1000, &fl, &e);
    fz_err_check(&e, st);
    if (st != INGOT_OK) FZ_CHECK(e.offset == INGOT_NO_OFFSET || e.offset >= 1000);
    if (st == INGOT_OK) check_success(&m, &fl);
    /* The opcode-length scanner agrees with the machine on where the first pickle ends. */
    uint64_t scan_end;
    ingot_error e2;
    if (runs == 1 && ingot__tp_scan_end(buf, size, 0, 0, &scan_end, NULL, &e2) == INGOT_OK &&
        st == INGOT_OK)
        FZ_CHECK(scan_end == end);
    ingot__tp_flat_free(&fl, &a);
    ingot__tp_free(&m);
    free(buf);
    return 0;
}
