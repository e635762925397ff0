/*
 * native_layout.h - byte layout of .ingot v1, shared by the reader and the writer.
 * docs/FORMAT.md is normative; this header must agree with it.
 *
 *   [0, 128)            fixed header (HDR_*)
 *   tensor table        n_tensors x 112-byte entries (TEN_*), file order = data order
 *   name index          n_tensors x u32 tensor indices sorted by name bytes, zero-padded to 8
 *   metadata table      n_meta x 32-byte entries (MET_*), sorted by key bytes
 *   pool                names, keys, string values (each followed by NUL), bytes, arrays
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

#define ING_HDR_SIZE 128
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
#define HDR_TENSOR_TABLE 56
#define HDR_NAME_INDEX 64
#define HDR_META_TABLE 72
#define HDR_POOL 80
#define HDR_POOL_SIZE 88
#define HDR_DATA 96
#define HDR_DATA_SIZE 104
#define HDR_RESERVED1 112
#define HDR_RESERVED2 120
#define HDR_CRC 124

#define ING_TEN_SIZE 112
#define TEN_NAME_OFF 0
#define TEN_NAME_LEN 8
#define TEN_DTYPE 12
#define TEN_RANK 14
#define TEN_FLAGS 15
#define TEN_PARAM_ID 16
#define TEN_OFFSET 24
#define TEN_NBYTES 32
#define TEN_CRC 40
#define TEN_RESERVED 44
#define TEN_SHAPE 48
#define TEN_FLAG_PARAM_ID 0x01u

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
