/*
 * writer_impl.h - the writer object shared by the public writer (writer.c) and the per-format
 * writer ops (src/formats/<f>/). The core owns the description (metadata, tensors), the output sink
 * (atomic file or memory), data streaming and CRC-32C; a format decides the bytes around the data.
 */
#ifndef INGOT_WRITER_IMPL_H
#define INGOT_WRITER_IMPL_H

#include "afile.h"
#include "deps.h"
#include "ingot/writer.h"

typedef struct ingot__wmeta {
    char *key; /* NUL-terminated copy */
    uint32_t key_len;
    ingot_meta_type type;
    bool is_array;
    uint64_t count;  /* as in ingot_meta_info */
    uint64_t scalar; /* numeric/bool scalar: value bits, little-endian semantics, zero-extended */
    uint8_t *blob;   /* string/bytes scalar: the bytes; numeric array: elements LE;
                        string array: elements back to back */
    size_t blob_len;
    uint64_t *lens; /* string/bytes array: element lengths (count of them) */
} ingot__wmeta;

typedef struct ingot__wtensor {
    char *name; /* owned block: name, NUL, padding to 8, then shape[rank] (ingot__wtensor_block) */
    uint32_t name_len;
    ingot_dtype dtype;
    uint32_t rank;
    uint64_t *shape; /* rank entries, in the name's block; NULL for rank 0 */
    uint64_t nbytes;
    bool has_param_id;
    uint64_t param_id;
    const void *data; /* borrowed, or NULL for pushed */
    uint32_t crc;     /* filled while streaming */
    uint64_t offset;  /* absolute file offset, set by the format's begin */
} ingot__wtensor;

/* Bytes of a tensor's owned block: the name and its NUL padded to 8, then the shape. One block per
 * tensor keeps a description at 8 bytes per dimension used, whatever INGOT_MAX_RANK is. */
static inline size_t ingot__wtensor_block(size_t name_len, uint32_t rank)
{
    return (name_len + 8) / 8 * 8 + 8 * (size_t)rank;
}

typedef struct ingot__writer_ops ingot__writer_ops;

struct ingot__writer_ops {
    /* Format restrictions on a tensor or a metadata entry (NULL: accept all). */
    ingot_status (*check_tensor)(ingot_writer *w, const ingot__wtensor *t, ingot_error *err);
    /* Lays out the file (sets every t->offset and *total), calls ingot__wsink_reserve(total),
     * then writes what precedes the data. */
    ingot_status (*begin)(ingot_writer *w, uint64_t *total, ingot_error *err);
    /* Writes what goes between the previous tensor and tensor i (padding). */
    ingot_status (*before_tensor)(ingot_writer *w, uint64_t i, ingot_error *err);
    /* Everything is streamed: patch headers (checksums) and write any trailer. */
    ingot_status (*finish)(ingot_writer *w, ingot_error *err);
    void (*free_state)(ingot_writer *w);
    /* Format-specific option (ingot_writer_set_option); NULL: the format has none. Return
     * UNSUPPORTED for an unknown key. Called only in the describe phase. */
    ingot_status (*set_option)(ingot_writer *w, const char *key, const char *value,
                               ingot_error *err);
    /* Called once by ingot__writer_create after the writer exists (allocate fmt_state for
     * options here if needed). NULL: nothing. */
    ingot_status (*init)(ingot_writer *w, ingot_error *err);
    /* Sees every chunk of tensor i's data as it streams, in order: data given by pointer or
     * pushed with ingot_writer_write, whole or cut into chunks (at most ingot__write_chunk bytes
     * each). Called after the core's CRC-32C of the chunk and before it is written, under the
     * same SIGBUS guard (p may point into a mapped file, so the call may be abandoned midway; the
     * writer then fails). For checksums a format stores itself (the npz writer's zip CRC-32): it
     * must not write to the sink, allocate or fail. NULL: nothing. */
    void (*data_chunk)(ingot_writer *w, uint64_t i, const void *p, size_t n);
    /* Puts the finished output in place (NULL: ingot__afile_commit of the sink). A format
     * that writes several files (safetensors shards) commits them together with the sink through
     * ingot__afile_commit_all, the sink last. Every afile it holds is finished on return. */
    ingot_status (*commit)(ingot_writer *w, ingot_error *err);
};

enum { WS_DESCRIBE, WS_STREAM, WS_DONE, WS_FAILED };

struct ingot_writer {
    ingot_allocator alloc;
    const ingot__writer_ops *ops;
    uint32_t alignment;
    bool no_fsync;
    bool ingot_v1_0; /* .ingot: string/bytes arrays in the v1.0 reference form */
    int state;

    ingot__wmeta *meta;
    size_t n_meta, cap_meta;
    ingot__wtensor *tensors;
    size_t n_tensors, cap_tensors;

    /* sink */
    bool to_mem;
    ingot__afile af;
    uint8_t *mem;
    size_t mem_len, mem_cap;
    uint64_t pos; /* bytes appended so far */

    /* streaming */
    size_t cur;          /* current tensor */
    uint64_t cur_done;   /* bytes of it written */
    uint32_t cur_crc;
    uint64_t data_done, data_total;
    ingot_progress_fn progress;
    void *progress_ctx;
    ingot_notice_fn notice;
    void *notice_ctx;

    void *fmt_state; /* the format's */
};

/* Sink primitives for format writers. */
ingot_status ingot__wsink_write(ingot_writer *w, const void *buf, size_t n, ingot_error *err);
ingot_status ingot__wsink_zeros(ingot_writer *w, uint64_t n, ingot_error *err);
/* Reserves the final size before anything is written (RELIABILITY.md §3: preallocate first, so a
 * full disk fails now). Formats call it from begin once they know the size. */
ingot_status ingot__wsink_reserve(ingot_writer *w, uint64_t total, ingot_error *err);
ingot_status ingot__wsink_pwrite(ingot_writer *w, uint64_t off, const void *buf, size_t n,
                                 ingot_error *err);

/* Reports a lossy step through the writer's notice callback (printf subset of error.h). */
void ingot__writer_notice(ingot_writer *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Parses a size option of the writers ("5GB", "500MB", "10KiB", "123"): decimal units are powers
 * of 1000 (as transformers' convert_file_size_to_int), binary ones (KiB, MiB, GiB, TiB) of 1024,
 * units case-insensitive, no space. False for anything else, an overflow or zero. */
bool ingot__writer_parse_size(const char *v, uint64_t *out);

/* Chunk size of streamed writes (CRC then write while the chunk is in cache); tests shrink it. */
extern size_t ingot__write_chunk;

/* Creates a writer for the given format ops. The public ingot_writer_new (src/formats/registry.c)
 * looks the ops up by format name: the core knows no format. */
ingot_status ingot__writer_create(const ingot__writer_ops *ops, const ingot_writer_opts *opts,
                                  ingot_writer **out, ingot_error *err);

#endif
