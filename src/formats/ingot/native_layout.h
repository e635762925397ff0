/*
 * native_layout.h - byte layout of .ingot v1, shared by the reader and the writer.
 * docs/FORMAT.md is normative; this header must agree with it.
 *
 *   [0, 192)            fixed header (HDR_*)
 *   tensor table        n_tensors x 24-byte entries (TEN_*), file order = data order
 *   name index          n_tensors x u32 tensor indices sorted by name bytes, zero-padded to 8
 *   shape records       n_shapes x 16-byte records (SHP_*): each distinct (dtype, rank, dims) once,
 *                       strictly increasing in (dtype, rank, dims) order
 *   dims                n_dims x u64: the records' dimensions in record order
 *   param ids           n_params x u64, n_params = 0 or n_tensors: per tensor in table order
 *   metadata table      n_meta x 32-byte entries (MET_*), sorted by key bytes
 *   pool                metadata keys, string values (each followed by NUL), bytes, arrays;
 *                       string/bytes arrays as 16-byte references or packed (u32 offsets, blob)
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
#define ING_VERSION_MINOR 1 /* the newest minor this code knows */
/* flags_required bit 0 (minor >= 1): metadata entries may use the packed array form */
#define ING_FREQ_PACKED 0x01u

#define ING_HDR_SIZE 192
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
#define HDR_N_SHAPES 56
#define HDR_N_DIMS 64
#define HDR_N_PARAMS 72
#define HDR_TENSOR_TABLE 80
#define HDR_NAME_INDEX 88
#define HDR_SHAPES 96
#define HDR_DIMS 104
#define HDR_PARAMS 112
#define HDR_META_TABLE 120
#define HDR_POOL 128
#define HDR_POOL_SIZE 136
#define HDR_NAMES 144
#define HDR_NAMES_SIZE 152
#define HDR_DATA 160
#define HDR_DATA_SIZE 168
#define HDR_RESERVED1 176
#define HDR_RESERVED2 184
#define HDR_CRC 188

#define ING_TEN_SIZE 24
#define TEN_NAME_OFF 0 /* u32, names-relative */
#define TEN_SHAPE 4    /* u32, index of the tensor's shape record */
#define TEN_OFFSET 8   /* u64, data-relative */
#define TEN_CRC 16     /* u32 */
#define TEN_FLAGS 20   /* u32 */
#define TEN_FLAG_PARAM_ID 0x01u

#define ING_SHP_SIZE 16
#define SHP_DTYPE 0   /* u16 */
#define SHP_RANK 2    /* u8 */
#define SHP_RESERVED 3 /* u8, 0 */
#define SHP_DIMS_AT 4 /* u32, index of the record's first dimension in the dims section */
#define SHP_NBYTES 8  /* u64, byte size of a tensor of this dtype and shape */

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
/* v1.1: a string/bytes array as count + 1 u32 offsets, then the elements back to back */
#define MET_FLAG_PACKED 0x02u

#define ING_STRREF_SIZE 16 /* string/bytes array element: u64 pool offset, u64 length */

#define ING_NAME_MAX 65535u
#define ING_ALIGN_MIN 64u
#define ING_ALIGN_MAX 65536u
#define ING_ALIGN_DEFAULT 256u

#endif
