/*
 * native_layout.h - byte layout of .ingot v1, shared by the reader and the writer.
 * docs/FORMAT.md is normative; this header must agree with it.
 *
 *   [0, 160)            fixed header (HDR_*)
 *   tensor table        n_tensors x 24-byte entries (TEN_*), file order = data order
 *   name index          n_tensors x u32 tensor indices sorted by name bytes, zero-padded to 8
 *   shape words         n_words x u64: per tensor in table order its dims, then its param id
 *   metadata table      n_meta x 32-byte entries (MET_*), sorted by key bytes
 *   pool                metadata keys, string values (each followed by NUL), bytes, arrays
 *   names               the tensor names in table order, each followed by NUL, no gaps
 *   zero padding        up to data_offset, a multiple of the alignment
 *   data                tensors in table order, each at a multiple of the alignment, zero padding
 *                       between them, nothing after the last one
 */
#ifndef INGOT_NATIVE_LAYOUT_H
#define INGOT_NATIVE_LAYOUT_H

#define ING_MAGIC "\x89INGOT\r\n"
#define ING_MAGIC_LEN 8
#define ING_VERSION_MAJOR 1
#define ING_VERSION_MINOR 0 /* the newest minor this code knows */

#define ING_HDR_SIZE 160
#define HDR_MAGIC 0
#define HDR_MAJOR 8
#define HDR_MINOR 10
#define HDR_HEADER_SIZE 12
#define HDR_FLAGS_REQUIRED 16
#define HDR_FLAGS_OPTIONAL 20
#define HDR_ALIGNMENT 24
#define HDR_RESERVED0 28
#define HDR_FILE_SIZE 32
#define HDR_N_TENSORS 40
#define HDR_N_META 48
#define HDR_N_WORDS 56
#define HDR_TENSOR_TABLE 64
#define HDR_NAME_INDEX 72
#define HDR_WORDS 80
#define HDR_META_TABLE 88
#define HDR_POOL 96
#define HDR_POOL_SIZE 104
#define HDR_NAMES 112
#define HDR_NAMES_SIZE 120
#define HDR_DATA 128
#define HDR_DATA_SIZE 136
#define HDR_RESERVED1 144
#define HDR_RESERVED2 152
#define HDR_CRC 156

#define ING_TEN_SIZE 24
#define TEN_NAME_OFF 0  /* u32, names-relative */
#define TEN_SHAPE_AT 4  /* u32, index of the tensor's first shape word */
#define TEN_OFFSET 8    /* u64, data-relative */
#define TEN_CRC 16      /* u32 */
#define TEN_DTYPE 20    /* u16 */
#define TEN_RANK 22     /* u8 */
#define TEN_FLAGS 23    /* u8 */
#define TEN_FLAG_PARAM_ID 0x01u

/* Bytes a tensor needs at least in the header region: its entry, its index slot, a 1-byte name
 * and its NUL. Bounds n_tensors before anything is multiplied. */
#define ING_TEN_MIN_BYTES (ING_TEN_SIZE + 4 + 2)

#define ING_MET_SIZE 32
#define MET_KEY_OFF 0
#define MET_KEY_LEN 8
#define MET_TYPE 12
#define MET_FLAGS 13
#define MET_RESERVED 14
#define MET_COUNT 16
#define MET_VALUE 24
#define MET_FLAG_ARRAY 0x01u

#define ING_STRREF_SIZE 16 /* string/bytes array element: u64 pool offset, u64 length */

#define ING_NAME_MAX 65535u
#define ING_ALIGN_MIN 64u
#define ING_ALIGN_MAX 65536u
#define ING_ALIGN_DEFAULT 256u

#endif
