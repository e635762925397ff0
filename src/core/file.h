/*
 * file.h - the ingot_file object and the format adapter interface (STYLE.md §7).
 *
 * A format adapter is one `ingot__format` descriptor. The core opens the file (mmap, pread or a
 * caller buffer), asks every registered adapter to probe the first bytes, and hands the file to the
 * best one. The adapter validates the header, keeps its state in f->state, and answers tensor and
 * metadata queries. No format type reaches the public API.
 */
#ifndef INGOT_FILE_H
#define INGOT_FILE_H

#include "deps.h"
#include "ingot/core.h"
#include "ingot/writer.h"

typedef struct ingot__writer_ops ingot__writer_ops;

/* An adapter's open returning this declines the file (see ingot__format.open); never seen by
 * callers. */
#define INGOT__DECLINED ((ingot_status)1000)

typedef struct ingot__format {
    const char *name;
    /* File name suffixes that select this format as a conversion target ("safetensors", "npz"),
     * NULL-terminated list or NULL. Reading never looks at the extension. */
    const char *const *extensions;
    /* How sure the first n bytes (n may be small) are this format: 0 no, 100 full magic. */
    int (*probe)(const uint8_t *head, size_t n);
    /* Validates and indexes the file. On failure frees everything it allocated. May return
     * INGOT__DECLINED, having changed nothing, when the probe matched but the file is another
     * adapter's after all: the next best probe score then gets it. */
    ingot_status (*open)(ingot_file *f, ingot_error *err);
    void (*close)(ingot_file *f);

    uint64_t (*tensor_count)(const ingot_file *f);
    ingot_status (*tensor_at)(const ingot_file *f, uint64_t i, ingot_tensor_info *out);
    ingot_status (*tensor_find)(const ingot_file *f, const char *name, size_t len,
                                ingot_tensor_info *out);
    /* Integrity facts of tensor i: stored CRC-32C (has_crc false if none) and the number of
     * bytes after its data that the format requires to be zero. NULL: no checksums, no padding. */
    ingot_status (*tensor_check)(const ingot_file *f, uint64_t i, bool *has_crc, uint32_t *crc,
                                 uint64_t *zero_after);
    /* Optional. Copies stored bytes [off, off+n) of tensor i (range already checked) when they
     * are not one plain extent of this file (a deflated member, another shard). NULL: the core
     * reads [t.offset+off, +n) of the file. */
    ingot_status (*tensor_read)(const ingot_file *f, uint64_t i, uint64_t off, void *dst,
                                size_t n, ingot_error *err);
    /* Optional. Verifies tensor i with the format's own integrity data (zip CRC-32, ...). When
     * set, the core calls it instead of its CRC-32C scan (tensor_check is then unused). */
    ingot_status (*tensor_verify)(const ingot_file *f, uint64_t i, ingot_error *err);
    /* Re-verifies the header checksum (for ingot_file_verify). NULL: nothing to verify. */
    ingot_status (*verify_header)(const ingot_file *f, ingot_error *err);
    /* INGOT_CHECK_* bits this format's verification runs on every file beyond what the core
     * finds itself (STRUCTURE, READABLE, BOOL_VALUES, TENSOR_CRC32C where tensor_check reports a
     * CRC, and what verify_plan adds): HEADER_CRC32C, PADDING. */
    uint32_t checks;
    /* Optional, for checksums other than a CRC-32C per tensor (zip members): sets
     * p->tensors_with_checksum and p->checksums and ORs their INGOT_CHECK_* bit into p->checks.
     * May allocate (NOMEM). NULL: the core asks tensor_check. */
    ingot_status (*verify_plan)(const ingot_file *f, ingot_verify_plan *p);

    uint64_t (*meta_count)(const ingot_file *f);
    ingot_status (*meta_at)(const ingot_file *f, uint64_t i, ingot_meta_info *out);
    ingot_status (*meta_find)(const ingot_file *f, const char *key, size_t len,
                              ingot_meta_info *out);
    ingot_status (*meta_array_read)(const ingot_file *f, uint64_t index, ingot_meta_type type,
                                    uint64_t first, uint64_t n, void *dst);
    ingot_status (*meta_array_string)(const ingot_file *f, uint64_t index, uint64_t elem,
                                      const char **s, size_t *len);

    /* Writer for this format, or NULL if read-only. */
    const ingot__writer_ops *writer;

    /* Optional, for a format without magic bytes that is recognised only when the file's size is
     * exactly what its header implies (llama2.c's legacy checkpoints): as probe, also given the
     * file size. The core takes the larger of the two scores. */
    int (*probe_size)(const uint8_t *head, size_t n, uint64_t file_size);
} ingot__format;

struct ingot_file {
    ingot_allocator alloc;
    const ingot__format *fmt;
    void *state; /* the adapter's */

    const uint8_t *base; /* whole file image (mapping or caller buffer); NULL in pread mode */
    uint64_t size;
    int fd;              /* pread mode: open descriptor; else -1 */
    void *map;           /* our mapping, or NULL */
    size_t map_len;

    uint8_t *head; /* pread mode: the first head_len bytes, read at open */
    size_t head_len;

    const char *path;   /* the path it was opened by (NUL-terminated copy), NULL for a buffer;
                           for adapters that resolve sibling files (shards) or name by stem */
    size_t path_len;
    uint64_t alignment; /* set by the adapter */
    char version[16];   /* set by the adapter: "1.0" */
    ingot_open_opts opts;

    struct ingot__notice *notices; /* ingot__file_notice; freed at close */
    size_t n_notices, cap_notices;
};

typedef struct ingot__notice {
    ingot_notice_kind kind;
    uint64_t offset;
    char *name; /* owned copy, NUL-terminated */
    size_t name_len;
    char reason[192];
} ingot__notice;

/* For adapters, while opening: records a notice (copies name and the formatted reason). NOMEM is
 * the only failure; notices of a failed open are freed with the file. */
ingot_status ingot__file_notice(ingot_file *f, ingot_notice_kind kind, const char *name,
                                size_t name_len, uint64_t offset, ingot_error *err,
                                const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 7, 8)))
#endif
    ;

/* For adapters: makes the first n bytes available (pread mode reads them once, at open) and points
 * *p at them. TRUNCATED if the file is shorter. Not thread-safe: call only from open. */
ingot_status ingot__file_head(ingot_file *f, uint64_t n, const uint8_t **p, ingot_error *err);

/* As ingot__file_head, but in mmap mode, while the adapter's open runs, reads the bytes with pread
 * into a private copy (f->head, valid until close) instead of pointing into the mapping: on a fresh
 * mapping that saves the page faults, which cost more than the copy up to INGOT__HEAD_COPY_MAX
 * bytes. Larger headers are read through the mapping (*p == f->base): the kernel maps 16 pages
 * per fault there, which beats copying them (docs/PERFORMANCE.md, "Opening: pread or page
 * faults"). Data pointers must come from f->base, not from *p. Elsewhere (pread mode, a caller's
 * buffer) it is ingot__file_head. */
ingot_status ingot__file_head_copy(ingot_file *f, uint64_t n, const uint8_t **p,
                                   ingot_error *err);

/* As ingot__file_read, but by pread whenever the descriptor is open (mmap mode while the adapter
 * opens the file, pread mode): for structures read once at open, where a pread costs less than
 * the page faults of a fresh mapping. */
ingot_status ingot__file_pread(const ingot_file *f, uint64_t off, void *dst, size_t n,
                               ingot_error *err);

/* Copies [off, off+n) of the file into dst: guarded memcpy from the mapping or pread. */
ingot_status ingot__file_read(const ingot_file *f, uint64_t off, void *dst, size_t n,
                              ingot_error *err);

/* Opens with the given adapters (a NULL-terminated list, most distinctive magic first). The public
 * ingot_file_open* live in the formats layer (src/formats/registry.c), which owns the list: the
 * core knows no format. */
ingot_status ingot__file_open_path(const ingot__format *const *formats, const char *path,
                                   const ingot_open_opts *opts, ingot_file **out,
                                   ingot_error *err);
ingot_status ingot__file_open_buffer(const ingot__format *const *formats, const void *buf,
                                     size_t size, const ingot_open_opts *opts, ingot_file **out,
                                     ingot_error *err);

/* Index of the first byte of p[0..n) that is neither 0 nor 1 (an invalid BOOL), or n. */
size_t ingot__first_non_bool(const uint8_t *p, size_t n);

/* For verification: BAD_VALUE (naming the tensor and the byte offset) if tensor i is BOOL and an
 * element it reaches is neither 0 nor 1; OK for every other dtype. Reads through the SIGBUS guard
 * or pread (src/core/copy.c). */
ingot_status ingot__tensor_check_values(const ingot_file *f, uint64_t i, ingot_error *err);

/* Headers up to this size are copied with pread in mmap mode (ingot__file_head_copy). Measured on
 * the Xeon of issue 17 (CPU time of open + fstat + mmap + read + munmap + close): 64 KiB by pread
 * 4.5 us over the floor, through the mapping 10 us; 1 MiB by pread 85 us, through the mapping
 * 15 us. */
#define INGOT__HEAD_COPY_MAX (128u * 1024u)

/* Number of bytes every probe may see (fewer only if the file is shorter). */
#define INGOT__PROBE_BYTES 4096

/* Chunk size of parallel verification; tests shrink it to hit boundaries. */
extern size_t ingot__verify_chunk;

#endif
