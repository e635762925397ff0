/* convert_impl.h - the plan's representation, shared by plan.c (building) and run.c (running). */
#ifndef INGOT_CONVERT_IMPL_H
#define INGOT_CONVERT_IMPL_H

#include "ingot/convert.h"
#include "ingot/quant.h"

typedef struct {
    char *name; /* owned, NUL-terminated, or NULL: the source tensor's own name */
    ingot_convert_action action;
    ingot_dtype dtype;
    uint32_t permute_heads;
    bool permute_inverse;
} ingot__plan_tensor;

/* A metadata entry of the plan: the source's entry src_index (under `key`), or a value the plan
 * owns. Owned arrays of STRING/BYTES keep their elements in `elems` pointing into `data`. */
typedef struct {
    char *key; /* owned, NUL-terminated */
    size_t key_len;
    bool from_src;
    uint64_t src_index;
    ingot_meta_type type;
    bool is_array;
    uint64_t count;   /* elements; scalar STRING/BYTES: bytes */
    void *data;       /* numeric: count host-order values; STRING/BYTES scalar: the bytes */
    size_t data_len;
    ingot_bytes *elems; /* STRING/BYTES arrays */
} ingot__plan_meta;

struct ingot_convert_plan {
    const ingot_file *src;
    uint64_t nt;
    ingot__plan_tensor *t;
    uint64_t nm, cap_m;
    ingot__plan_meta *m;
};

/* The target name of entry i (the source's unless renamed) and its length. */
const char *ingot__plan_name(const ingot_convert_plan *p, uint64_t i, size_t *len);
/* True for the float dtypes a cast reads (not GGML blocks). */
bool ingot__is_float_dtype(ingot_dtype dt);

#endif
