/*
 * ingot/native.h - the freestanding reader core of the native .ingot format.
 *
 * Everything here builds with -ffreestanding: no allocation, no stdio, no libc beyond what a
 * freestanding C11 compiler provides (plus memcpy/memset/memcmp, which compilers may emit). It is
 * meant for embedded targets that hold a model in flash or in a buffer they own, and it is the code
 * ingot_file_open() itself uses for .ingot files.
 *
 * The caller provides two buffers:
 *   - the file image (or only its first ingot_native_header_size() bytes, when data lives
 *     elsewhere), which must stay valid and unchanged while the reader is used;
 *   - a workspace of INGOT_NATIVE_WORKSPACE bytes, aligned to 8, holding the reader state.
 *
 *     static unsigned char ws[INGOT_NATIVE_WORKSPACE] __attribute__((aligned(8)));
 *     ingot_native *r;
 *     if (ingot_native_open(ws, sizeof ws, image, image_len, image_len, 0, &r, &err) == INGOT_OK) {
 *         ingot_tensor_info t;
 *         ingot_native_tensor_find(r, "fc1.weight", 10, &t);   // t.data points into image
 *     }
 *
 * The byte layout is specified in docs/FORMAT.md. Thread-safety: after open the reader is
 * immutable; concurrent calls on one reader are safe.
 */
#ifndef INGOT_NATIVE_H
#define INGOT_NATIVE_H

#include "ingot/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ingot_native ingot_native;

/** Workspace bytes ingot_native_open() needs (an upper bound; checked at run time). */
#define INGOT_NATIVE_WORKSPACE 256

/** Fixed header size of .ingot v1. */
#define INGOT_NATIVE_HEADER_BYTES 192

enum {
    INGOT_NATIVE_SKIP_HEADER_CRC = 1u << 0, /**< skip the header checksum (structure still checked) */
};

/** Given at least the first INGOT_NATIVE_HEADER_BYTES of a file, tells how many leading bytes
 *  ingot_native_open() needs (everything before the tensor data). Validates only the fixed
 *  header's magic, version and data offset. */
INGOT_API ingot_status ingot_native_header_size(const void *head, size_t n, uint64_t *needed,
                                                ingot_error *err);

/** Validates and opens a .ingot image.
 *  @param ws,ws_size  workspace, at least INGOT_NATIVE_WORKSPACE bytes, 8-aligned; must outlive r.
 *  @param buf,avail   the first `avail` bytes of the file; avail >= ingot_native_header_size().
 *                     When avail < file_size, tensor data pointers are NULL (NOT_MAPPED).
 *  @param file_size   the real size of the whole file.
 *  @param flags       INGOT_NATIVE_* flags.
 *  Every field is validated before use; the header checksum is verified unless skipped. */
INGOT_API ingot_status ingot_native_open(void *ws, size_t ws_size, const void *buf, size_t avail,
                                         uint64_t file_size, uint32_t flags, ingot_native **out,
                                         ingot_error *err);

INGOT_API uint64_t ingot_native_tensor_count(const ingot_native *r);
INGOT_API ingot_status ingot_native_tensor_at(const ingot_native *r, uint64_t i,
                                              ingot_tensor_info *out);
/** Binary search over the stored name index: O(log n), no allocation. */
INGOT_API ingot_status ingot_native_tensor_find(const ingot_native *r, const char *name,
                                                size_t len, ingot_tensor_info *out);
/** The stored CRC-32C of tensor i. */
INGOT_API ingot_status ingot_native_tensor_crc(const ingot_native *r, uint64_t i, uint32_t *crc);
/** Verifies tensor i against its checksum and the zero padding that follows it up to the next
 *  tensor. Needs the data in the buffer (UNSUPPORTED when only the header was given). */
INGOT_API ingot_status ingot_native_tensor_verify(const ingot_native *r, uint64_t i,
                                                  ingot_error *err);

INGOT_API uint64_t ingot_native_meta_count(const ingot_native *r);
INGOT_API ingot_status ingot_native_meta_at(const ingot_native *r, uint64_t i,
                                            ingot_meta_info *out);
INGOT_API ingot_status ingot_native_meta_find(const ingot_native *r, const char *key, size_t len,
                                              ingot_meta_info *out);
INGOT_API ingot_status ingot_native_meta_array_read(const ingot_native *r, uint64_t index,
                                                    ingot_meta_type type, uint64_t first,
                                                    uint64_t n, void *dst);
INGOT_API ingot_status ingot_native_meta_array_string(const ingot_native *r, uint64_t index,
                                                      uint64_t elem, const char **s, size_t *len);

/** Header facts. */
INGOT_API uint32_t ingot_native_alignment(const ingot_native *r);
INGOT_API uint64_t ingot_native_data_offset(const ingot_native *r);
INGOT_API uint32_t ingot_native_version_minor(const ingot_native *r);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_NATIVE_H */
