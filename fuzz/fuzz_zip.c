/*
 * fuzz_zip.c - libFuzzer target for the zip container reader (src/core/zip.h): open the input as a
 * byte image, through a read callback (pread mode), and through the callback with the local
 * headers prefetched in one pass (what npz and PyTorch opens do), and require the same result;
 * locate every entry; check every extent lies inside the file, before the central directory and without
 * overlap; look every name up; run the stored-CRC check.
 */
#include "fuzz_common.h"
#include "zip.h"

typedef struct {
    const uint8_t *p;
    size_t n;
} cbsrc;

static ingot_status cb_read(void *ctx, uint64_t off, void *dst, size_t n, ingot_error *err)
{
    const cbsrc *c = ctx;
    (void)err;
    FZ_CHECK(off <= c->n && n <= c->n - off); /* the reader only asks for bytes that exist */
    memcpy(dst, c->p + off, n);
    return INGOT_OK;
}

static ingot_status walk(ingot__zip *z, size_t size)
{
    FZ_CHECK(z->cd_offset <= size && z->cd_size <= size - z->cd_offset);
    FZ_CHECK(z->count <= z->cd_size / 46);
    ingot_status first = INGOT_OK;
    for (uint64_t i = 0; i < z->count; i++) {
        const ingot__zip_entry *e = &z->entries[i];
        FZ_CHECK(e->name_len >= 1 && fz_utf8((const uint8_t *)e->name, e->name_len, false));
        FZ_CHECK(e->lho < z->cd_offset && e->limit <= z->cd_offset && e->lho < e->limit);
        uint64_t idx = UINT64_MAX;
        FZ_ST(ingot__zip_find(z, e->name, e->name_len, &idx), INGOT_OK);
        FZ_CHECK(idx == i);
        ingot_status st = ingot__zip_locate(z, i, NULL);
        FZ_CHECK(fz_known_status(st));
        if (st == INGOT_OK) {
            FZ_CHECK(e->data_offset > e->lho && e->data_offset <= e->limit);
            FZ_CHECK(e->comp_size <= e->limit - e->data_offset);
            if (e->method == 0) {
                FZ_CHECK(e->comp_size == e->size);
                st = ingot__zip_check_stored_crc(z, i, false, NULL);
                FZ_CHECK(st == INGOT_OK || st == INGOT_BAD_CHECKSUM);
                if (st == INGOT_OK) FZ_ST(ingot__zip_locate(z, i, NULL), INGOT_OK);
            }
        }
        if (first == INGOT_OK) first = st;
    }
    /* located members never overlap */
    for (uint64_t i = 0; i < z->count; i++)
        for (uint64_t j = i + 1; j < z->count && j < i + 64; j++) {
            const ingot__zip_entry *a = &z->entries[i], *b = &z->entries[j];
            if (!(a->info & b->info & INGOT__ZIP_ENTRY_LOCATED)) continue;
            FZ_CHECK(a->data_offset + a->comp_size <= b->lho ||
                     b->data_offset + b->comp_size <= a->lho);
        }
    return first;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ingot__zip z1, z2;
    ingot__zip_source s1 = {data, size, NULL, NULL, 0};
    cbsrc c = {data, size};
    ingot__zip_source s2 = {NULL, size, cb_read, &c, 0};
    ingot_error e1, e2;
    fz_err_reset(&e1);
    fz_err_reset(&e2);
    ingot__zip_limits lim = {1u << 16, 1u << 24};
    ingot_status a = ingot__zip_open(&z1, &s1, NULL, &lim, &e1);
    ingot_status b = ingot__zip_open(&z2, &s2, NULL, &lim, &e2);
    fz_err_check(&e1, a);
    fz_err_check(&e2, b);
    FZ_ST(a, b);
    if (a == INGOT_OK) {
        FZ_CHECK(z1.count == z2.count && z1.cd_offset == z2.cd_offset);
        ingot_status w1 = walk(&z1, size), w2 = walk(&z2, size);
        FZ_ST(w1, w2);
        /* the prefetched windows: a data prefix from 0 to 255 bytes, taken from the input */
        ingot__zip z3;
        ingot_error e3;
        fz_err_reset(&e3);
        FZ_ST(ingot__zip_open(&z3, &s2, NULL, &lim, &e3), INGOT_OK);
        ingot_status p3 = ingot__zip_prefetch(&z3, size ? data[size - 1] : 0, &e3);
        fz_err_check(&e3, p3);
        if (p3 == INGOT_OK) FZ_ST(walk(&z3, size), w1);
        ingot__zip_close(&z3);
    } else {
        FZ_CHECK(z1.entries == NULL && z2.entries == NULL && z1.count == 0);
    }
    ingot__zip_close(&z1);
    ingot__zip_close(&z2);
    return 0;
}
