/*
 * fs_test.c - proves the .ingot reader core runs freestanding: compiled with -ffreestanding and
 * linked only against libingot_native_fs (no allocation, no stdio). The file image is a static
 * buffer generated at build time from tests/data/tiny.ingot. The exit status is the result.
 */
#include <stddef.h>
#include <stdint.h>

#include "ingot/native.h"
#include "tiny_ingot.h" /* static const unsigned char tiny_ingot[]; tiny_ingot_len */

static _Alignas(8) unsigned char workspace[INGOT_NATIVE_WORKSPACE];

static int eq(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

int main(void)
{
    ingot_native *r;
    ingot_error err;
    if (ingot_native_open(workspace, sizeof workspace, tiny_ingot, tiny_ingot_len, tiny_ingot_len,
                          0, &r, &err) != INGOT_OK)
        return 10;
    if (ingot_native_tensor_count(r) != 2) return 11;
    ingot_tensor_info t;
    if (ingot_native_tensor_find(r, "fc.weight", 9, &t) != INGOT_OK) return 12;
    if (t.dtype != INGOT_DTYPE_F32 || t.rank != 2 || t.shape[0] != 2 || t.shape[1] != 3) return 13;
    if (((uintptr_t)t.data - (uintptr_t)tiny_ingot) % 64 != 0) return 14;
    const float *w = (const float *)t.data;
    for (int i = 0; i < 6; i++)
        if (w[i] != (float)i * 0.25f) return 15;
    if (ingot_native_tensor_verify(r, t.index, &err) != INGOT_OK) return 16;
    ingot_meta_info m;
    if (ingot_native_meta_find(r, "model", 5, &m) != INGOT_OK || m.type != INGOT_META_STRING ||
        m.count != 4 || !eq(m.data, "tiny", 4))
        return 17;
    if (ingot_native_meta_find(r, "layers", 6, &m) != INGOT_OK || m.v.u != 1) return 18;
    if (ingot_native_tensor_find(r, "missing", 7, &t) != INGOT_NOT_FOUND) return 19;
    /* A corrupted copy is rejected by the header checksum: flip a bit of the first tensor's CRC
     * field (tensor table right after the fixed header, CRC at +16), which no structural check
     * looks at. */
    static unsigned char copy[sizeof tiny_ingot];
    for (size_t i = 0; i < tiny_ingot_len; i++) copy[i] = tiny_ingot[i];
    copy[INGOT_NATIVE_HEADER_BYTES + 16] ^= 1;
    if (ingot_native_open(workspace, sizeof workspace, copy, tiny_ingot_len, tiny_ingot_len, 0, &r,
                          &err) != INGOT_BAD_CHECKSUM)
        return 20;
    return 0;
}
