/*
 * torch_internal.h - state shared by the PyTorch adapter's files: torch_adapter.c (probe, getters),
 * torch_zip.c (torch >= 1.6 zip checkpoints), torch_legacy.c (the pre-1.6 stream) and torch_tar.c
 * (torch <= 0.1.9 tar archives).
 */
#ifndef INGOT_TORCH_INTERNAL_H
#define INGOT_TORCH_INTERNAL_H

#include "file.h"
#include "torch_pickle.h"
#include "zip.h"

typedef struct {
    tp_machine m;
    tp_flat fl;
    bool legacy;
    bool big_endian;     /* zip `byteorder` record says "big" */
    bool has_zip;
    ingot__zip zip;
    uint8_t *owned;      /* data.pkl copy (zip) or pickle window (tar) in pread mode */
    size_t owned_len;
    uint32_t *st_entry;  /* zip: storage -> zip entry index */
} tstate;

/* Legacy magic, the pickled int 0x1950A86A20F9469CFC6C as LONG1 bytes (little-endian). */
extern const uint8_t ingot__torch_legacy_magic[10];

ingot_status ingot__torch_open_zip(ingot_file *f, tstate *s, ingot_error *err);
ingot_status ingot__torch_open_legacy(ingot_file *f, tstate *s, ingot_error *err);
ingot_status ingot__torch_open_tar(ingot_file *f, tstate *s, ingot_error *err);
/* Shared last step: flatten, alignment. */
ingot_status ingot__torch_finish(ingot_file *f, tstate *s, uint32_t root, uint64_t root_off,
                                 ingot_error *err);

#endif
