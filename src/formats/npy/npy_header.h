/*
 * npy_header.h - the .npy preamble and header dictionary (NumPy's format, v1.0/2.0/3.0), shared by
 * the .npy and .npz readers and the writers. Layout (all little-endian):
 *
 *   0   6   magic "\x93NUMPY"
 *   6   1   major version 1, 2 or 3
 *   7   1   minor version 0
 *   8   2|4 header length HLEN (u16 for v1, u32 for v2/v3)
 *   10|12   HLEN bytes: a Python dict literal {'descr': .., 'fortran_order': .., 'shape': (..)},
 *           space padded, ending in '\n' (latin-1 for v1/v2, UTF-8 for v3)
 *   then    the array data, nelem * itemsize bytes
 *
 * The dictionary is parsed by a strict scanner (no Python evaluator): docs/formats/npy.md lists
 * the accepted grammar.
 */
#ifndef INGOT_NPY_HEADER_H
#define INGOT_NPY_HEADER_H

#include "deps.h"
#include "ingot/core.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
/* Headers larger than this are refused (BAD_HEADER_SIZE); NumPy itself refuses > 10000 bytes
 * unless told otherwise, and a valid header for ingot's dtypes and rank <= 64 is < 2 KiB. */
#define NPY_MAX_HEADER (1u << 20)
/* Room for any header ingot writes: 64 dimensions of 19 digits plus the fixed text and the
 * padding to 64 bytes stay below this (ingot__npy_format_header checks it). */
#define NPY_HDR_CAP 2048

typedef struct npy_header {
    uint8_t major;
    uint32_t header_len;  /* the HLEN field */
    uint64_t data_offset; /* preamble + HLEN: where the data starts, relative to the npy start */
    ingot_dtype dtype;
    bool big_endian;      /* '>' (or '=' on a big-endian host: never here) on a multi-byte type */
    bool fortran;
    uint32_t rank;
    uint64_t nelem, nbytes;
    char descr[24];       /* the descr string as written (for messages), NUL-terminated */
    bool text;            /* a string ('S', 'a') or unicode ('U') array, parsed only when the
                             caller allows it: dtype is INVALID, nbytes the stored size */
    uint64_t shape[INGOT_MAX_RANK]; /* last: the preamble zeroes the fields above it only;
                                       entries from rank on are unspecified */
} npy_header;

/* Checks magic and version in p[0..n) and reads HLEN. TRUNCATED if n is too short to tell,
 * BAD_MAGIC, BAD_VERSION, BAD_HEADER_SIZE (HLEN > NPY_MAX_HEADER). `base` is the file offset of
 * p[0] (for error offsets); `where` names the tensor/member. */
ingot_status ingot__npy_preamble(const uint8_t *p, size_t n, npy_header *h, uint64_t base,
                                 const char *where, size_t where_len, ingot_error *err);

/* Parses the dictionary: p[0..h->data_offset) must be the whole header (preamble included).
 * Fills dtype, byte order, fortran, shape, nelem, nbytes. A string or unicode descr is
 * UNSUPPORTED unless allow_text, which parses it and sets h->text instead (for .npz members,
 * which are skipped with a notice). */
ingot_status ingot__npy_parse(const uint8_t *p, npy_header *h, bool allow_text, uint64_t base,
                              const char *where, size_t where_len, ingot_error *err);

/* NumPy's descr for an ingot dtype written little-endian ("<f4", "|b1"), or NULL if .npy cannot
 * hold it. */
const char *ingot__npy_descr(ingot_dtype dt);

/* Writes the complete header (preamble + dict + padding + '\n') for a C-order little-endian
 * array exactly as NumPy 1.24's np.save does (version 1.0 unless the header needs 2.0; padded so
 * the data starts at a multiple of 64). Returns its length (a multiple of 64), or 0 if it does
 * not fit in cap. cap >= NPY_HDR_CAP always suffices (rank <= INGOT_MAX_RANK). */
size_t ingot__npy_format_header(uint8_t *out, size_t cap, ingot_dtype dt, uint32_t rank,
                                const uint64_t *shape);

#endif
