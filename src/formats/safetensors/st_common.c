/*
 * st_common.c - the safetensors dtype table (../shared/formats/safetensors.md §2.1, the Rust enum
 * order is the reference writer's sort key) and the sort used by the reader and the index.
 */
#include <string.h>

#include "st_internal.h"

#define D(s, r, d) {s, (uint8_t)(sizeof s - 1), r, d}
static const st_dtype dtypes[] = {
    D("BOOL", 0, INGOT_DTYPE_BOOL),
    D("F4", 1, INGOT_DTYPE_F4),
    D("F6_E2M3", 2, INGOT_DTYPE_F6_E2M3),
    D("F6_E3M2", 3, INGOT_DTYPE_F6_E3M2),
    D("U8", 4, INGOT_DTYPE_U8),
    D("I8", 5, INGOT_DTYPE_I8),
    D("F8_E5M2", 6, INGOT_DTYPE_F8_E5M2),
    D("F8_E4M3", 7, INGOT_DTYPE_F8_E4M3),
    D("F8_E8M0", 8, INGOT_DTYPE_F8_E8M0),
    D("F8_E4M3FNUZ", 9, INGOT_DTYPE_F8_E4M3FNUZ),
    D("F8_E5M2FNUZ", 10, INGOT_DTYPE_F8_E5M2FNUZ),
    D("I16", 11, INGOT_DTYPE_I16),
    D("U16", 12, INGOT_DTYPE_U16),
    D("F16", 13, INGOT_DTYPE_F16),
    D("BF16", 14, INGOT_DTYPE_BF16),
    D("I32", 15, INGOT_DTYPE_I32),
    D("U32", 16, INGOT_DTYPE_U32),
    D("F32", 17, INGOT_DTYPE_F32),
    D("C64", 18, INGOT_DTYPE_C64),
    D("F64", 19, INGOT_DTYPE_F64),
    D("I64", 20, INGOT_DTYPE_I64),
    D("U64", 21, INGOT_DTYPE_U64),
};
#undef D

/* Constant-size comparisons (inlined by the compiler): this runs once per tensor at open. */
#define IS(lit) ingot__st_eq(s, lit, sizeof lit - 1)
const st_dtype *ingot__st_dtype_by_name(const uint8_t *s, size_t n)
{
    int i = -1;
    switch (n) {
    case 2:
        i = IS("F4") ? 1 : IS("U8") ? 4 : IS("I8") ? 5 : -1;
        break;
    case 3:
        i = IS("F32") ? 17 : IS("F16") ? 13 : IS("I64") ? 20 : IS("I32") ? 15 : IS("F64") ? 19
          : IS("U32") ? 16 : IS("U64") ? 21 : IS("I16") ? 11 : IS("U16") ? 12 : IS("C64") ? 18 : -1;
        break;
    case 4:
        i = IS("BF16") ? 14 : IS("BOOL") ? 0 : -1;
        break;
    case 7:
        i = IS("F8_E4M3") ? 7 : IS("F8_E5M2") ? 6 : IS("F8_E8M0") ? 8 : IS("F6_E2M3") ? 2
          : IS("F6_E3M2") ? 3 : -1;
        break;
    case 11:
        i = IS("F8_E4M3FNUZ") ? 9 : IS("F8_E5M2FNUZ") ? 10 : -1;
        break;
    default:
        break;
    }
    return i < 0 ? NULL : &dtypes[i];
}
#undef IS

const st_dtype *ingot__st_dtype_by_ingot(ingot_dtype dt)
{
    if (dt == INGOT_DTYPE_INVALID) return NULL;
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].dt == dt) return &dtypes[i];
    return NULL;
}

