/*
 * ingot/core.h - the format-agnostic read API of ingot.
 *
 * ingot opens model weight files of any known format zero-copy and exposes one view of them:
 * a list of named tensors (dtype, shape, data) and a list of typed metadata entries.
 *
 * Contents, simplest first:
 *   1. version, export macro, status codes, the caller-owned error record
 *   2. allocator hooks
 *   3. the dtype table
 *   4. opening and closing a file (path + mmap, path + pread, caller buffer)
 *   5. tensors: count, by index, by name, bounded reads, checksum verification
 *   6. typed metadata
 *   7. notices: parts of a file that were skipped at open
 *
 * Ownership, in one place:
 *   - ingot_file_open*() return an owned handle; release it with ingot_file_close() (NULL is a no-op).
 *   - Every pointer a getter hands out (names, keys, strings, tensor data) is borrowed and valid
 *     until ingot_file_close() on that handle. Tensor data is read-only.
 *   - A failed call leaves its out-parameters NULL/zero and owns nothing.
 *
 * Threads: an open ingot_file is immutable after open. Any number of threads may call the
 * getters, ingot_file_tensor_read() and the verify functions on one handle concurrently.
 * ingot_file_close() must not race with any other call on the same handle.
 *
 * The mmap contract (read this if you open files by path in the default mode):
 *   - Files are mapped read-only and private (PROT_READ, MAP_PRIVATE). Every extent the format
 *     declares is validated against the file size taken by fstat() at open, so no pointer handed
 *     out ever lies beyond the end of the file as it was at open.
 *   - Do not truncate or rewrite a file in place while it is open: a page that no longer exists
 *     raises SIGBUS in whoever touches it. Replace files by rename() instead (this is what every
 *     ingot writer does): an existing mapping keeps the old contents for its whole life.
 *     MAP_POPULATE or mlock() do not protect against truncation.
 *   - ingot's own bulk reads (checksum verification, ingot_file_tensor_read(), conversions) run
 *     under a per-thread SIGBUS guard and report INGOT_E_IO_FAULT instead of crashing. The guard
 *     chains to any handler installed before. Pointers you dereference yourself are not guarded.
 *   - Where mmap is unwanted (network or FUSE file systems, shared directories) open with
 *     INGOT_IO_PREAD: only the header is read into memory; tensor data is then read on demand with
 *     ingot_file_tensor_read(), and ingot_tensor_info.data is NULL with INGOT_TENSOR_NOT_MAPPED
 *     (except where the header read already covered the data, e.g. a file of empty tensors).
 */
#ifndef INGOT_CORE_H
#define INGOT_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * 1. Version, export macro, status codes, errors
 * ------------------------------------------------------------------------------------------- */

#if defined(INGOT_STATIC_DEFINE) || !defined(__GNUC__)
#define INGOT_API
#else
#define INGOT_API __attribute__((visibility("default")))
#endif

#if defined(__GNUC__)
#define INGOT_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define INGOT_DEPRECATED(msg)
#endif

#define INGOT_VERSION_MAJOR 0
#define INGOT_VERSION_MINOR 1
#define INGOT_VERSION_PATCH 0
#define INGOT_VERSION_NUMBER \
    (INGOT_VERSION_MAJOR * 10000 + INGOT_VERSION_MINOR * 100 + INGOT_VERSION_PATCH)

/** The library's INGOT_VERSION_NUMBER; compare with the header's to catch a mismatched install. */
INGOT_API unsigned ingot_version_number(void);
/** "MAJOR.MINOR.PATCH", static storage. */
INGOT_API const char *ingot_version_string(void);

/* Status codes: X(ENUM_SUFFIX, value, static message). Values never change once released; new
 * codes are appended. Broad primaries; the detail goes into ingot_error. */
#define INGOT_STATUS_LIST(X)                                                                     \
    X(OK, 0, "success")                                                                          \
    X(TRUNCATED, 1, "file or buffer ends before the data it declares")                           \
    X(BAD_MAGIC, 2, "not a file of the expected format (magic bytes)")                           \
    X(BAD_VERSION, 3, "unsupported format version")                                              \
    X(BAD_HEADER_SIZE, 4, "header size field out of range")                                      \
    X(BAD_COUNT, 5, "element count out of range")                                                \
    X(BAD_STRING, 6, "malformed string (length, encoding or terminator)")                        \
    X(BAD_ARRAY, 7, "malformed array (length or element type)")                                  \
    X(BAD_TYPE, 8, "unknown type code")                                                          \
    X(WRONG_TYPE, 9, "value has a different type than requested")                                \
    X(DUPLICATE, 10, "duplicate tensor name or metadata key")                                    \
    X(BAD_NDIMS, 11, "tensor rank out of range")                                                 \
    X(BAD_SHAPE, 12, "tensor shape invalid or its element count overflows")                      \
    X(BAD_SIZE, 13, "byte size inconsistent with dtype and shape, or overflowing")               \
    X(BAD_LAYOUT, 14, "data offsets overlap, leave gaps, or fall outside the data section")      \
    X(BAD_ALIGN, 15, "alignment invalid or data misaligned")                                     \
    X(BAD_NAME, 16, "tensor name or key empty, too long or malformed")                           \
    X(LIMIT, 17, "input exceeds a configured limit")                                             \
    X(BAD_METADATA, 18, "metadata inconsistent with the tensors or the format's rules")          \
    X(UNSUPPORTED, 19, "feature not supported")                                                  \
    X(BAD_PATH, 20, "path refused (external, absolute or traversing)")                           \
    X(BAD_CHECKSUM, 21, "checksum mismatch: data is corrupt")                                    \
    X(NOMEM, 22, "out of memory")                                                                \
    X(IO, 23, "input/output error")                                                              \
    X(IO_FAULT, 24, "mapped file changed under us (SIGBUS while reading)")                       \
    X(NOT_FOUND, 25, "no such tensor or key")                                                    \
    X(RANGE, 26, "index or range out of bounds")                                                 \
    X(MISUSE, 27, "API misuse (invalid argument or call order)")                                 \
    X(UNKNOWN_FORMAT, 28, "file format not recognised")                                          \
    X(BAD_FLAGS, 29, "unknown required feature flag set")                                        \
    X(BAD_VALUE, 30, "element value invalid for its dtype (a BOOL byte other than 0 or 1)")      \
    X(CANCELLED, 31, "operation cancelled by the caller")

typedef enum ingot_status {
#define INGOT_X_(name, value, msg) INGOT_##name = value,
    INGOT_STATUS_LIST(INGOT_X_)
#undef INGOT_X_
} ingot_status;

/* INGOT_OK is spelled without E_; every failure also has an INGOT_E_ alias for readability. */
#define INGOT_E_TRUNCATED INGOT_TRUNCATED
#define INGOT_E_BAD_MAGIC INGOT_BAD_MAGIC
#define INGOT_E_BAD_VERSION INGOT_BAD_VERSION
#define INGOT_E_BAD_HEADER_SIZE INGOT_BAD_HEADER_SIZE
#define INGOT_E_BAD_COUNT INGOT_BAD_COUNT
#define INGOT_E_BAD_STRING INGOT_BAD_STRING
#define INGOT_E_BAD_ARRAY INGOT_BAD_ARRAY
#define INGOT_E_BAD_TYPE INGOT_BAD_TYPE
#define INGOT_E_WRONG_TYPE INGOT_WRONG_TYPE
#define INGOT_E_DUPLICATE INGOT_DUPLICATE
#define INGOT_E_BAD_NDIMS INGOT_BAD_NDIMS
#define INGOT_E_BAD_SHAPE INGOT_BAD_SHAPE
#define INGOT_E_BAD_SIZE INGOT_BAD_SIZE
#define INGOT_E_BAD_LAYOUT INGOT_BAD_LAYOUT
#define INGOT_E_BAD_ALIGN INGOT_BAD_ALIGN
#define INGOT_E_BAD_NAME INGOT_BAD_NAME
#define INGOT_E_LIMIT INGOT_LIMIT
#define INGOT_E_BAD_METADATA INGOT_BAD_METADATA
#define INGOT_E_UNSUPPORTED INGOT_UNSUPPORTED
#define INGOT_E_BAD_PATH INGOT_BAD_PATH
#define INGOT_E_BAD_CHECKSUM INGOT_BAD_CHECKSUM
#define INGOT_E_NOMEM INGOT_NOMEM
#define INGOT_E_IO INGOT_IO
#define INGOT_E_IO_FAULT INGOT_IO_FAULT
#define INGOT_E_NOT_FOUND INGOT_NOT_FOUND
#define INGOT_E_RANGE INGOT_RANGE
#define INGOT_E_MISUSE INGOT_MISUSE
#define INGOT_E_UNKNOWN_FORMAT INGOT_UNKNOWN_FORMAT
#define INGOT_E_BAD_FLAGS INGOT_BAD_FLAGS
#define INGOT_E_BAD_VALUE INGOT_BAD_VALUE
#define INGOT_E_CANCELLED INGOT_CANCELLED

/** Static English text for a status ("checksum mismatch: data is corrupt"). Never NULL. */
INGOT_API const char *ingot_status_str(ingot_status s);
/** The enum name without prefix ("BAD_CHECKSUM"). Never NULL ("UNKNOWN" for foreign values). */
INGOT_API const char *ingot_status_name(ingot_status s);

/** Offset value meaning "no particular byte offset". */
#define INGOT_NO_OFFSET UINT64_MAX

/** Caller-owned detail of a failure: pass one as the optional last argument of any call that can
 *  fail on input. Nothing in it is allocated; it is fully written on failure and left untouched
 *  on success. `where` names the tensor, key or region ("header", "tensor table") involved, or is
 *  empty; `offset` is the byte offset in the file of the offending field, or INGOT_NO_OFFSET. */
typedef struct ingot_error {
    ingot_status code;
    uint64_t offset;
    char where[64];
    char msg[192];
} ingot_error;

/** Formats "CODE_NAME: msg [where 'x'] [at byte N]" into buf (always NUL-terminated, truncated to
 *  cap). Returns buf. */
INGOT_API char *ingot_error_format(const ingot_error *e, char *buf, size_t cap);

/* ---------------------------------------------------------------------------------------------
 * 2. Allocator hooks (per object, never process-wide)
 * ------------------------------------------------------------------------------------------- */

/** All members NULL means libc. alloc returns memory aligned to at least `align` (a power of two
 *  no larger than 4096) or NULL; free receives the size that was requested. */
typedef struct ingot_allocator {
    void *(*alloc)(void *ctx, size_t size, size_t align);
    void (*free)(void *ctx, void *p, size_t size);
    void *ctx;
} ingot_allocator;

/* ---------------------------------------------------------------------------------------------
 * 3. The dtype table
 *
 * One list for every format. Values are stored on disk by .ingot and never change; new dtypes are
 * appended. GGML block types are 256 + their ggml_type id so the two numberings stay related.
 * X(NAME, value, block_elems, block_bytes). Names are what the CLI prints.
 * ------------------------------------------------------------------------------------------- */
#define INGOT_DTYPE_LIST(X)                                                                      \
    X(F64, 1, 1, 8)                                                                              \
    X(F32, 2, 1, 4)                                                                              \
    X(F16, 3, 1, 2)                                                                              \
    X(BF16, 4, 1, 2)                                                                             \
    X(F8_E4M3, 5, 1, 1)                                                                          \
    X(F8_E5M2, 6, 1, 1)                                                                          \
    X(I64, 7, 1, 8)                                                                              \
    X(I32, 8, 1, 4)                                                                              \
    X(I16, 9, 1, 2)                                                                              \
    X(I8, 10, 1, 1)                                                                              \
    X(U64, 11, 1, 8)                                                                             \
    X(U32, 12, 1, 4)                                                                             \
    X(U16, 13, 1, 2)                                                                             \
    X(U8, 14, 1, 1)                                                                              \
    X(BOOL, 15, 1, 1)                                                                            \
    X(F8_E8M0, 16, 1, 1)                                                                         \
    X(F4, 17, 2, 1)                                                                              \
    X(F6_E2M3, 18, 4, 3)                                                                         \
    X(F6_E3M2, 19, 4, 3)                                                                         \
    X(C64, 20, 1, 8)                                                                             \
    X(F8_E4M3FNUZ, 21, 1, 1)                                                                     \
    X(F8_E5M2FNUZ, 22, 1, 1)                                                                     \
    X(C128, 23, 1, 16)                                                                           \
    X(Q4_0, 258, 32, 18)                                                                         \
    X(Q4_1, 259, 32, 20)                                                                         \
    X(Q5_0, 262, 32, 22)                                                                         \
    X(Q5_1, 263, 32, 24)                                                                         \
    X(Q8_0, 264, 32, 34)                                                                         \
    X(Q8_1, 265, 32, 36)                                                                         \
    X(Q2_K, 266, 256, 84)                                                                        \
    X(Q3_K, 267, 256, 110)                                                                       \
    X(Q4_K, 268, 256, 144)                                                                       \
    X(Q5_K, 269, 256, 176)                                                                       \
    X(Q6_K, 270, 256, 210)                                                                       \
    X(Q8_K, 271, 256, 292)                                                                       \
    X(IQ2_XXS, 272, 256, 66)                                                                     \
    X(IQ2_XS, 273, 256, 74)                                                                      \
    X(IQ3_XXS, 274, 256, 98)                                                                     \
    X(IQ1_S, 275, 256, 50)                                                                       \
    X(IQ4_NL, 276, 32, 18)                                                                       \
    X(IQ3_S, 277, 256, 110)                                                                      \
    X(IQ2_S, 278, 256, 82)                                                                       \
    X(IQ4_XS, 279, 256, 136)                                                                     \
    X(IQ1_M, 285, 256, 56)                                                                       \
    X(TQ1_0, 290, 256, 54)                                                                       \
    X(TQ2_0, 291, 256, 66)                                                                       \
    X(MXFP4, 295, 32, 17)                                                                        \
    X(NVFP4, 296, 64, 36)                                                                        \
    X(Q1_0, 297, 128, 18)                                                                        \
    X(Q2_0, 298, 64, 18)

typedef enum ingot_dtype {
    INGOT_DTYPE_INVALID = 0,
#define INGOT_X_(name, value, be, bb) INGOT_DTYPE_##name = value,
    INGOT_DTYPE_LIST(INGOT_X_)
#undef INGOT_X_
} ingot_dtype;

/** "F32", "Q4_K", ...; NULL for a value not in the table. */
INGOT_API const char *ingot_dtype_name(ingot_dtype dt);
/** Parses a name as printed by ingot_dtype_name (exact, case-sensitive). */
INGOT_API ingot_status ingot_dtype_from_name(const char *name, ingot_dtype *out);
/** True if dt is in the table. */
INGOT_API bool ingot_dtype_valid(ingot_dtype dt);
/** Elements per block: 1 for scalar types, 2 (F4) or 4 (F6_*) for the packed sub-byte types,
 *  32/64/128/256 for GGML block types; 0 if invalid. */
INGOT_API uint32_t ingot_dtype_block_elems(ingot_dtype dt);
/** Bytes per block (bytes per element for scalar types); 0 if invalid. */
INGOT_API uint32_t ingot_dtype_block_bytes(ingot_dtype dt);
/** True for GGML block types (opaque blocks; the innermost dimension is a multiple of the block).
 *  False for the packed sub-byte types F4/F6_*, whose total element count is a multiple of the
 *  block instead (safetensors' rule: prod(shape) x bits is a whole number of bytes). */
INGOT_API bool ingot_dtype_is_quantized(ingot_dtype dt);

/** The largest rank any tensor may have, in every format and the backend: NumPy 2's limit (NumPy
 *  1.x allows 32, magnetron snapshots 63, PyTorch more). Formats with a smaller limit of their
 *  own keep it and say so in their error (GGUF 4, .tenzor 5, .mag storage archives 8). */
#define INGOT_MAX_RANK 64

/** Element count and byte size of a tensor, with every multiplication checked.
 *  Errors: BAD_TYPE (unknown dtype), BAD_NDIMS (rank > INGOT_MAX_RANK), BAD_SHAPE (a dimension
 *  or the element count exceeds 2^63-1; a zero dimension does not excuse the others), BAD_SIZE
 *  (byte size overflows uint64, or the innermost dimension is not a whole number of blocks).
 *  A rank-0 tensor is a scalar of one element. */
INGOT_API ingot_status ingot_dtype_nbytes(ingot_dtype dt, uint32_t rank, const uint64_t *shape,
                                          uint64_t *nelem, uint64_t *nbytes);

/** Checksums used by .ingot (docs/FORMAT.md). */
/** CRC-32C (Castagnoli, reflected 0x82F63B78, init and final xor 0xFFFFFFFF) of buf, continuing
 *  from `crc` (0 to start). Uses SSE4.2 when the CPU has it. crc32c("123456789") == 0xE3069283. */
INGOT_API uint32_t ingot_crc32c(uint32_t crc, const void *buf, size_t n);
/** CRC of A||B from crc(A), crc(B) and len(B). */
INGOT_API uint32_t ingot_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* ---------------------------------------------------------------------------------------------
 * 4. Opening a file
 * ------------------------------------------------------------------------------------------- */

typedef struct ingot_file ingot_file;

typedef enum ingot_io_mode {
    INGOT_IO_MMAP = 0,  /**< map the file read-only (default) */
    INGOT_IO_PREAD = 1, /**< read the header only; tensor data through ingot_file_tensor_read() */
    /** Map the file copy-on-write (MAP_PRIVATE, readable and writable, no swap reserved): the
     *  tensor memory of ingot_tensor_info.data may be written through a cast; a written page
     *  becomes this process's private copy, the file and other handles never see it. For
     *  frameworks without read-only tensors (torch): an in-place write into a tensor of a
     *  read-only mapping kills the process. Otherwise as INGOT_IO_MMAP; pages not written stay
     *  shared with the page cache. */
    INGOT_IO_MMAP_PRIVATE = 2,
} ingot_io_mode;

typedef enum ingot_verify_mode {
    INGOT_VERIFY_HEADER = 0, /**< default: header checksum (every structural check always runs) */
    INGOT_VERIFY_NONE = 1,   /**< skip checksums at open; structure is still fully validated */
    INGOT_VERIFY_ALL = 2,    /**< also run ingot_file_verify() (tensor checksums, padding, BOOL
                                  values) before returning */
} ingot_verify_mode;

/** Open options. Zero-initialise ({0}) for the defaults. */
typedef struct ingot_open_opts {
    ingot_io_mode io;
    ingot_verify_mode verify;
    const ingot_allocator *allocator; /**< NULL: libc; copied, ctx must outlive the file */
    const char *format;               /**< NULL: detect from content; else an adapter name */
    uint32_t threads;                 /**< threads for INGOT_VERIFY_ALL; 0 = 1 */
} ingot_open_opts;

/** Opens a model file of any known format; the format is detected from content, never from the
 *  file name. In INGOT_IO_MMAP mode cost is O(header), independent of the size of the data.
 *  @param opts  NULL for defaults.
 *  @param out   owned handle, release with ingot_file_close(); NULL on failure.
 *  @param err   optional failure detail.
 *  Thread-safe. */
INGOT_API ingot_status ingot_file_open(const char *path, const ingot_open_opts *opts,
                                       ingot_file **out, ingot_error *err);

/** Opens a file image held in memory. `buf` is borrowed: it must stay valid and unchanged until
 *  ingot_file_close(). opts->io is ignored. */
INGOT_API ingot_status ingot_file_open_buffer(const void *buf, size_t size,
                                              const ingot_open_opts *opts, ingot_file **out,
                                              ingot_error *err);

/** Releases the handle, its mapping and every pointer it handed out. NULL is a no-op. */
INGOT_API void ingot_file_close(ingot_file *f);

/** Adapter name of the open file ("ingot", ...). Static storage. */
INGOT_API const char *ingot_file_format(const ingot_file *f);
/** Size of the file in bytes (fstat at open, or the buffer size). */
INGOT_API uint64_t ingot_file_size(const ingot_file *f);
/** Format version as the format spells it (static or file-owned storage, valid until close):
 *  "1.0" or "1.1" for .ingot, "3" for GGUF v3, "100" for .mag; a range such as "0.20-0.21"
 *  where the file is valid, byte for byte, in several versions (Burnpack); "-" for unversioned
 *  formats (safetensors). */
INGOT_API const char *ingot_file_version(const ingot_file *f);
/** Data alignment the file guarantees for every tensor (1 if the format has none). */
INGOT_API uint64_t ingot_file_alignment(const ingot_file *f);

/* ---------------------------------------------------------------------------------------------
 * 5. Tensors
 * ------------------------------------------------------------------------------------------- */

/** Flags of ingot_tensor_info. Bits not listed are zero. */
enum {
    INGOT_TENSOR_HAS_PARAM_ID = 1u << 0,  /**< param_id is meaningful */
    INGOT_TENSOR_BIG_ENDIAN = 1u << 1,    /**< stored elements are big-endian */
    INGOT_TENSOR_FORTRAN = 1u << 2,       /**< stored in column-major order */
    INGOT_TENSOR_STRIDED = 1u << 3,       /**< strides[] describe a non-contiguous view */
    INGOT_TENSOR_NOT_MAPPED = 1u << 4,    /**< data is NULL: read with ingot_file_tensor_read() */
    INGOT_TENSOR_UNALIGNED = 1u << 5,     /**< data not aligned to the dtype's element size */
    INGOT_TENSOR_HAS_CHECKSUM = 1u << 6,  /**< the format stores a checksum for this tensor */
};

/** A view of one tensor. Caller-allocated, filled by ingot_file_tensor_at()/_find().
 *  Frozen for this major version. About 1.1 KiB: shape and strides have room for INGOT_MAX_RANK
 *  (64) dimensions (8 before 0.1 was released: code built against that header must be
 *  rebuilt). Adapters keep shapes compactly; only this caller-side view is that wide. */
typedef struct ingot_tensor_info {
    const char *name;                 /**< UTF-8, NUL-terminated, borrowed until close */
    size_t name_len;                  /**< bytes, without the NUL */
    ingot_dtype dtype;
    uint32_t rank;                    /**< 0 (scalar) .. INGOT_MAX_RANK */
    uint64_t shape[INGOT_MAX_RANK];   /**< outermost first; entries >= rank are 0 */
    int64_t strides[INGOT_MAX_RANK];  /**< in elements; only with INGOT_TENSOR_STRIDED, else 0.
                                           With STRIDED, offset/data locate element [0,...,0],
                                           nbytes = nelem * element size (the dense copy) and
                                           views may share storage with other tensors */
    uint64_t nelem;                   /**< product of shape (1 for a scalar) */
    uint64_t nbytes;                  /**< bytes stored */
    uint64_t offset;                  /**< absolute byte offset of the data in the file */
    const void *data;                 /**< borrowed, read-only, valid until close; NULL if not mapped */
    uint64_t param_id;                /**< with INGOT_TENSOR_HAS_PARAM_ID */
    uint32_t flags;                   /**< INGOT_TENSOR_* */
    uint32_t index;                   /**< position in the file's tensor list */
} ingot_tensor_info;

/** Number of tensors. */
INGOT_API uint64_t ingot_file_tensor_count(const ingot_file *f);

/** Fills *out for tensor i (0-based, in file order). RANGE if i >= count. */
INGOT_API ingot_status ingot_file_tensor_at(const ingot_file *f, uint64_t i,
                                            ingot_tensor_info *out);

/** Looks a tensor up by its exact name (NUL-terminated). O(log n), no allocation.
 *  NOT_FOUND if absent (out is zeroed). */
INGOT_API ingot_status ingot_file_tensor_find(const ingot_file *f, const char *name,
                                              ingot_tensor_info *out);
/** As ingot_file_tensor_find() with an explicit length (name need not be NUL-terminated). */
INGOT_API ingot_status ingot_file_tensor_findn(const ingot_file *f, const char *name,
                                               size_t len, ingot_tensor_info *out);

/** Copies n bytes of tensor i's stored bytes, starting at byte `offset` of the tensor, into dst.
 *  Works in every I/O mode; in mmap mode the copy runs under the SIGBUS guard (IO_FAULT if the
 *  file was truncated under us). RANGE if offset+n exceeds the tensor. Stored bytes are the
 *  format's element bytes in its order (big-endian or column-major if the flags say so; a
 *  deflated member is inflated). UNSUPPORTED for a strided view (it has no contiguous stored
 *  bytes): use ingot_file_tensor_copy(). BAD_VALUE if the tensor is BOOL and a byte read is
 *  neither 0 nor 1 (`offset` of the error is that byte's file offset, INGOT_NO_OFFSET for an
 *  inflated member; dst then holds the bytes as stored). Open does not look at tensor data, and a
 *  data pointer (ingot_tensor_info.data) gives the bytes unchecked. */
INGOT_API ingot_status ingot_file_tensor_read(const ingot_file *f, uint64_t i, uint64_t offset,
                                              void *dst, size_t n, ingot_error *err);

/** Materializes tensor i as a dense, C-order (row-major) array of little-endian elements, the
 *  layout a zero-copy tensor without layout flags already has, into dst (cap >= nbytes, else
 *  RANGE). This is the explicit conversion for tensors whose view says the stored bytes are not
 *  that: INGOT_TENSOR_BIG_ENDIAN (bytes swapped), _FORTRAN (transposed), _STRIDED (gathered
 *  through strides[]; nbytes is then the dense size) and _NOT_MAPPED (read, inflated). For a
 *  plain tensor it equals ingot_file_tensor_read() of all its bytes. Block-quantized dtypes can
 *  only be copied as stored (BAD_TYPE with a layout flag). BAD_VALUE, as for
 *  ingot_file_tensor_read(), for a BOOL element that is neither 0 nor 1 (the first in C order;
 *  the error's offset is its byte in the file). Runs under the SIGBUS guard. */
INGOT_API ingot_status ingot_file_tensor_copy(const ingot_file *f, uint64_t i, void *dst,
                                              size_t cap, ingot_error *err);

/** Tells the system that the caller will not read tensor i's stored bytes again (it holds its
 *  own copy of them): where the file is mapped read-only (INGOT_IO_MMAP), the whole pages inside
 *  the tensor's bytes leave the process's resident memory (madvise MADV_DONTNEED on the clean
 *  file mapping; the page cache keeps them, and a later read of the tensor maps them back in:
 *  still correct, only slower). A no-op (*released = 0) in pread mode, for copy-on-write
 *  mappings (INGOT_IO_MMAP_PRIVATE: pages may hold the caller's writes), files opened from a
 *  buffer and tensors outside the mapping (inflated members). released (may be NULL): bytes
 *  advised. RANGE if i >= count. */
INGOT_API ingot_status ingot_file_tensor_release(const ingot_file *f, uint64_t i,
                                                 uint64_t *released, ingot_error *err);

/** Verifies tensor i's stored checksum (BAD_CHECKSUM naming the tensor on mismatch), the padding
 *  after it where the format fixes it, and for a BOOL tensor that every element is 0 or 1
 *  (BAD_VALUE naming the tensor and the byte offset). For formats that store no checksum it
 *  checks only that the bytes are readable (and padding and BOOL values): see
 *  ingot_file_verify_plan() for what a file has. */
INGOT_API ingot_status ingot_file_tensor_verify(const ingot_file *f, uint64_t i,
                                                ingot_error *err);

/** Runs every check the format allows: header checksum, every tensor checksum, padding bytes, BOOL
 *  values. Many formats store no checksum at all (safetensors, GGUF, .npy, ...): for those a
 *  success means the structure is valid and every byte is readable, not that the data is intact.
 *  ingot_file_verify_plan() says which checks run on a given file.
 *  `threads` 0 or 1 runs on the calling thread; more splits the work (results do not depend on
 *  the thread count). The first failure in file order is reported. */
INGOT_API ingot_status ingot_file_verify(const ingot_file *f, uint32_t threads,
                                         ingot_error *err);

/** Progress callback: `done` of `total` bytes processed so far (writers, verification). */
typedef void (*ingot_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/** ingot_file_verify() reporting progress: runs exactly the same checks with the same threads and
 *  the same result, and calls `fn` (when not NULL) on the calling thread only, each time a piece
 *  of tensor data (at most a few MiB) has been checked, with the bytes of tensor data checked so
 *  far and the sum of the tensors' nbytes; the last call has done == total. */
INGOT_API ingot_status ingot_file_verify_progress(const ingot_file *f, uint32_t threads,
                                                  ingot_progress_fn fn, void *ctx,
                                                  ingot_error *err);

/* The checks verification can run: X(NAME, bit, name). INGOT_CHECK_<NAME> is 1u << bit; the name
 * (ingot_check_name(), the `checked` list of `ingot verify --json`) is stable. New checks are
 * appended.
 *   STRUCTURE      header and tensor table parsed and validated (every open does it)
 *   HEADER_CRC32C  a CRC-32C of the header region stored in the file (.ingot, .mag)
 *   TENSOR_CRC32C  a CRC-32C of each tensor's data stored in the file (.ingot)
 *   ZIP_CRC32      the zip CRC-32 of each member holding tensor data (.npz, PyTorch zip files)
 *   READABLE       every byte of tensor data read (no I/O error, no SIGBUS)
 *   PADDING        padding bytes whose value the format fixes (zero, or 0xFF for .mag)
 *   BOOL_VALUES    every element of the BOOL tensors is 0 or 1 */
#define INGOT_CHECK_LIST(X)                                                                      \
    X(STRUCTURE, 0, "structure")                                                                 \
    X(HEADER_CRC32C, 1, "header_crc32c")                                                         \
    X(TENSOR_CRC32C, 2, "tensor_crc32c")                                                         \
    X(ZIP_CRC32, 3, "zip_crc32")                                                                 \
    X(READABLE, 4, "readable")                                                                   \
    X(PADDING, 5, "padding")                                                                     \
    X(BOOL_VALUES, 6, "bool_values")

enum {
#define INGOT_X_(name, bit, str) INGOT_CHECK_##name = 1u << (bit),
    INGOT_CHECK_LIST(INGOT_X_)
#undef INGOT_X_
};

/** "structure", "zip_crc32", ... for one INGOT_CHECK_* bit (static storage); NULL for a value
 *  that is not exactly one known bit. */
INGOT_API const char *ingot_check_name(uint32_t check);

/** What ingot_file_verify() checks on one file. Caller-allocated; filled by
 *  ingot_file_verify_plan(). Frozen for this major version. */
typedef struct ingot_verify_plan {
    uint32_t checks;                /**< INGOT_CHECK_* bits: the checks ingot_file_verify() runs */
    uint64_t tensors_with_checksum; /**< tensors whose data a checksum stored in the file covers */
    uint64_t tensors_without;       /**< tensors whose data no stored checksum covers: verify can
                                         only read it (and check padding and BOOL values) */
    uint64_t checksums;             /**< distinct stored checksums covering tensor data: one per
                                         tensor for .ingot, one per zip member (tensors sharing a
                                         PyTorch storage share its record's CRC-32) */
    uint64_t data_bytes;            /**< sum of the tensors' nbytes */
} ingot_verify_plan;

/** Says which checks ingot_file_verify() runs on this file, without reading tensor data: costs
 *  O(tensor count). ingot_file_verify() runs all of them and stops at the first failure, so on
 *  its success every check in out->checks ran and passed. A checksum bit (TENSOR_CRC32C,
 *  ZIP_CRC32) is set only if some tensor has that checksum; READABLE only if the file has
 *  tensors; BOOL_VALUES only if it has a BOOL tensor. A format that stores no checksums
 *  (safetensors, GGUF, .npy, Burnpack, .tenzor, RMD1, legacy PyTorch) gets
 *  tensors_with_checksum 0.
 *  @param out  filled on success; zeroed on failure.
 *  @return OK, NOMEM (PyTorch files count distinct storages with a small bitmap) or MISUSE.
 *  Thread-safe like the getters. */
INGOT_API ingot_status ingot_file_verify_plan(const ingot_file *f, ingot_verify_plan *out);

/* ---------------------------------------------------------------------------------------------
 * 6. Typed metadata
 *
 * Each entry has a key (UTF-8, unique in the file), a type and a value that is either a scalar or
 * an array of that type. Keys and string values are borrowed (not necessarily NUL-terminated: use
 * the lengths). Iteration order is the file's order (sorted by key for .ingot).
 * ------------------------------------------------------------------------------------------- */

#define INGOT_META_TYPE_LIST(X)                                                                  \
    X(U8, 1, 1)                                                                                  \
    X(U16, 2, 2)                                                                                 \
    X(U32, 3, 4)                                                                                 \
    X(U64, 4, 8)                                                                                 \
    X(I8, 5, 1)                                                                                  \
    X(I16, 6, 2)                                                                                 \
    X(I32, 7, 4)                                                                                 \
    X(I64, 8, 8)                                                                                 \
    X(F32, 9, 4)                                                                                 \
    X(F64, 10, 8)                                                                                \
    X(BOOL, 11, 1)                                                                               \
    X(STRING, 12, 0)                                                                             \
    X(BYTES, 13, 0)

typedef enum ingot_meta_type {
    INGOT_META_INVALID = 0,
#define INGOT_X_(name, value, size) INGOT_META_##name = value,
    INGOT_META_TYPE_LIST(INGOT_X_)
#undef INGOT_X_
} ingot_meta_type;

/** "u8".."f64", "bool", "string", "bytes"; NULL if invalid. */
INGOT_API const char *ingot_meta_type_name(ingot_meta_type t);
/** Size of one element in bytes (1,2,4,8; 0 for STRING/BYTES and invalid). */
INGOT_API uint32_t ingot_meta_type_size(ingot_meta_type t);

/** One metadata entry. Caller-allocated; pointers borrowed until close. */
typedef struct ingot_meta_info {
    const char *key;
    size_t key_len;
    ingot_meta_type type;
    bool is_array;
    uint64_t count; /**< array: element count. Scalar string/bytes: byte length. Else 1. */
    uint64_t index; /**< position in the file's metadata list */
    union {
        uint64_t u; /**< U8..U64 widened */
        int64_t i;  /**< I8..I64 widened */
        double f;   /**< F32/F64 widened (a signalling F32 NaN reads back quiet) */
        bool b;     /**< BOOL */
    } v;            /**< scalar numeric and bool values */
    const void *data; /**< scalar STRING/BYTES: the bytes (count of them); else NULL */
} ingot_meta_info;

/** Number of metadata entries. */
INGOT_API uint64_t ingot_file_meta_count(const ingot_file *f);
/** Entry i (0-based). RANGE if out of bounds. */
INGOT_API ingot_status ingot_file_meta_at(const ingot_file *f, uint64_t i, ingot_meta_info *out);
/** Entry by exact key (NUL-terminated). NOT_FOUND if absent. O(log n) for .ingot. */
INGOT_API ingot_status ingot_file_meta_find(const ingot_file *f, const char *key,
                                            ingot_meta_info *out);

/* Typed scalar getters. NOT_FOUND if the key is absent; WRONG_TYPE if the entry has another type or
 * is an array (types are never converted). Out-parameters are untouched on failure. */
INGOT_API ingot_status ingot_file_meta_get_u8(const ingot_file *f, const char *key, uint8_t *out);
INGOT_API ingot_status ingot_file_meta_get_u16(const ingot_file *f, const char *key, uint16_t *out);
INGOT_API ingot_status ingot_file_meta_get_u32(const ingot_file *f, const char *key, uint32_t *out);
INGOT_API ingot_status ingot_file_meta_get_u64(const ingot_file *f, const char *key, uint64_t *out);
INGOT_API ingot_status ingot_file_meta_get_i8(const ingot_file *f, const char *key, int8_t *out);
INGOT_API ingot_status ingot_file_meta_get_i16(const ingot_file *f, const char *key, int16_t *out);
INGOT_API ingot_status ingot_file_meta_get_i32(const ingot_file *f, const char *key, int32_t *out);
INGOT_API ingot_status ingot_file_meta_get_i64(const ingot_file *f, const char *key, int64_t *out);
INGOT_API ingot_status ingot_file_meta_get_f32(const ingot_file *f, const char *key, float *out);
INGOT_API ingot_status ingot_file_meta_get_f64(const ingot_file *f, const char *key, double *out);
INGOT_API ingot_status ingot_file_meta_get_bool(const ingot_file *f, const char *key, bool *out);
/** String value: *s points at *len bytes of UTF-8 (not NUL-terminated in general). */
INGOT_API ingot_status ingot_file_meta_get_string(const ingot_file *f, const char *key,
                                                  const char **s, size_t *len);
INGOT_API ingot_status ingot_file_meta_get_bytes(const ingot_file *f, const char *key,
                                                 const void **p, size_t *len);

/** Array entry of element type `type`: *count receives the element count.
 *  WRONG_TYPE if the entry is a scalar or has another element type. */
INGOT_API ingot_status ingot_file_meta_get_array(const ingot_file *f, const char *key,
                                                 ingot_meta_type type, uint64_t *count);
/** Copies elements [first, first+n) of numeric/bool array entry `index` into dst, converted to
 *  host byte order (BOOL as one byte 0/1). `type` must match the stored element type. */
INGOT_API ingot_status ingot_file_meta_array_read(const ingot_file *f, uint64_t index,
                                                  ingot_meta_type type, uint64_t first,
                                                  uint64_t n, void *dst);
/** Element `elem` of STRING or BYTES array entry `index`: borrowed bytes. */
INGOT_API ingot_status ingot_file_meta_array_string(const ingot_file *f, uint64_t index,
                                                    uint64_t elem, const char **s, size_t *len);

/* ---------------------------------------------------------------------------------------------
 * 7. Notices: what an open file left out
 *
 * A file may open without some of its parts when they cannot be tensors and refusing the whole
 * file would be worse: an .npz member holding strings (every scipy.sparse.save_npz file has one)
 * is skipped and the numeric members open. Each such part gets one notice, in file order.
 * Nothing is ever skipped silently: a file with a notice opens, the notice says what is missing.
 * ------------------------------------------------------------------------------------------- */

typedef enum ingot_notice_kind {
    INGOT_NOTICE_SKIPPED = 1, /**< a part of the file not exposed as a tensor or metadata */
} ingot_notice_kind;

/** One notice. Caller-allocated; pointers borrowed until close. */
typedef struct ingot_notice {
    ingot_notice_kind kind;
    const char *name;   /**< what it concerns (the tensor name the part would have had), UTF-8,
                             NUL-terminated */
    size_t name_len;    /**< bytes, without the NUL */
    const char *reason; /**< why, in English, NUL-terminated ("dtype '<U3': ...") */
    uint64_t offset;    /**< byte offset in the file of the part, or INGOT_NO_OFFSET */
} ingot_notice;

/** Number of notices of the open file (0 for most files). */
INGOT_API uint64_t ingot_file_notice_count(const ingot_file *f);
/** Notice i (0-based). RANGE if out of bounds (out is zeroed). */
INGOT_API ingot_status ingot_file_notice_at(const ingot_file *f, uint64_t i, ingot_notice *out);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_CORE_H */
