/*
 * ingot/writer.h - streaming, crash-safe writer.
 *
 * A writer is filled in two phases:
 *   1. describe: metadata (ingot_writer_set_*) and tensors (ingot_writer_add_tensor) in the order
 *      they will be stored. Describing is cheap: no tensor data is needed yet.
 *   2. stream: ingot_writer_begin() fixes the layout and creates a temporary file beside the target;
 *      tensor data then flows in declaration order, either from the pointers given at
 *      add_tensor time or pushed with ingot_writer_write() in chunks of any size;
 *      ingot_writer_commit() completes the file and atomically replaces the target.
 * All tensor data is never required in memory at once.
 *
 * Crash safety: the target is never opened for writing. The data goes to a temporary file in the
 * same directory, is fsync()ed, renamed over the target, and the directory is fsync()ed. Any
 * failure, ingot_writer_free() before commit, or a kill at any point leaves the old target
 * untouched (complete old file or complete new file, never a mix). Saving over a file that is
 * open and mapped leaves that mapping's contents intact. The same input always produces
 * byte-identical output.
 *
 * Temporaries: on Linux file systems with O_TMPFILE (ext4, XFS, Btrfs, tmpfs, ...) the temporary
 * has no name while it is written; commit links it in through /proc/self/fd: straight to the
 * target's name when there is no target yet, else to "<target>.ingot-tmp-<hex>", which is then
 * renamed over the target. Nothing is left behind by any kill, kill -9 included, except a kill -9
 * after that link and before that rename (a close() apart), which leaves the name holding the
 * complete new file. Elsewhere (no O_TMPFILE, no /proc, or INGOT_NO_TMPFILE=1 in the
 * environment) the temporary is "<target>.ingot-tmp-<hex>" from begin to commit, created with
 * O_EXCL: kill -9 leaves it behind, and so does any signal that ends the process, unless a handler
 * calls ingot_writer_remove_temporaries() first (the ingot CLI's do, for SIGINT, SIGTERM, SIGHUP).
 * The renames of a commit run with SIGHUP, SIGINT, SIGQUIT and SIGTERM blocked in the calling
 * thread, so a sharded safetensors save is either all in place (shards, then index) or not
 * renamed at all when such a signal ends the process; kill -9 between two renames still can
 * replace some shards of an older checkpoint with the same shard names before its index.
 *
 * Example, streaming one tensor in chunks:
 *     ingot_writer *w;  ingot_error e;
 *     ingot_writer_new(NULL, &w, &e);
 *     ingot_writer_set_string(w, "model.name", "demo");
 *     uint64_t shape[2] = {4096, 4096};
 *     ingot_writer_add_tensor(w, "w", INGOT_DTYPE_F32, 2, shape, NULL, NULL, &e); // pushed later
 *     ingot_writer_begin(w, "model.ingot", &e);
 *     while (more) ingot_writer_write(w, chunk, chunk_len, &e);
 *     ingot_writer_commit(w, &e);
 *     ingot_writer_free(w);
 *
 * Threads: a writer is used by one thread at a time.
 */
#ifndef INGOT_WRITER_H
#define INGOT_WRITER_H

#include "ingot/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ingot_writer ingot_writer;

/** Writer options. Zero-initialise for the defaults. */
typedef struct ingot_writer_opts {
    const char *format;               /**< NULL or "ingot"; else a writer format name */
    uint32_t alignment;               /**< tensor data alignment; 0 = 256; power of two 64..65536 */
    const ingot_allocator *allocator; /**< NULL: libc */
    bool no_fsync;                    /**< skip fsync (tests, scratch files); rename stays atomic */
    /** .ingot only: write string/bytes arrays in the v1.0 reference form (16 bytes per element),
     *  for readers older than format minor 1. Default: the packed v1.1 form (docs/FORMAT.md §7.1,
     *  §8), which such readers refuse with BAD_FLAGS. */
    bool ingot_v1_0;
} ingot_writer_opts;

/** Per-tensor options; NULL for none. */
typedef struct ingot_tensor_opts {
    bool has_param_id;
    uint64_t param_id;
} ingot_tensor_opts;

/** Creates an empty writer. opts NULL for defaults. BAD_ALIGN for an invalid alignment,
 *  UNSUPPORTED for an unknown format. */
INGOT_API ingot_status ingot_writer_new(const ingot_writer_opts *opts, ingot_writer **out,
                                        ingot_error *err);

/** Frees the writer. If it was begun and not committed, the temporary file is removed and the
 *  target left as it was. NULL is a no-op. */
INGOT_API void ingot_writer_free(ingot_writer *w);

/** For a handler of a signal that ends the process (SIGINT, SIGTERM, SIGHUP): removes the name
 *  of every temporary file held by the writers of this process between ingot_writer_begin() and
 *  the end of commit or free, so that no temporary survives the signal; unnamed temporaries need
 *  nothing (see above). Async-signal-safe and lock-free; callable from any thread. A writer whose
 *  temporary was removed fails at commit with IO and leaves its target as it was. Writers running
 *  on other threads meanwhile may create new ones: let the handler's thread be the writing thread,
 *  or block the signals in the others. Returns how many names were removed. Typical handler:
 *      static void on_signal(int sig) {
 *          ingot_writer_remove_temporaries();
 *          signal(sig, SIG_DFL);
 *          raise(sig);   // delivered when the handler returns: exit status 128 + sig
 *      } */
INGOT_API size_t ingot_writer_remove_temporaries(void);

/* Metadata setters: key is UTF-8, 1..65535 bytes, unique (DUPLICATE otherwise). Keys and values are
 * copied. Only before ingot_writer_begin() (MISUSE after). */
INGOT_API ingot_status ingot_writer_set_u8(ingot_writer *w, const char *key, uint8_t v);
INGOT_API ingot_status ingot_writer_set_u16(ingot_writer *w, const char *key, uint16_t v);
INGOT_API ingot_status ingot_writer_set_u32(ingot_writer *w, const char *key, uint32_t v);
INGOT_API ingot_status ingot_writer_set_u64(ingot_writer *w, const char *key, uint64_t v);
INGOT_API ingot_status ingot_writer_set_i8(ingot_writer *w, const char *key, int8_t v);
INGOT_API ingot_status ingot_writer_set_i16(ingot_writer *w, const char *key, int16_t v);
INGOT_API ingot_status ingot_writer_set_i32(ingot_writer *w, const char *key, int32_t v);
INGOT_API ingot_status ingot_writer_set_i64(ingot_writer *w, const char *key, int64_t v);
INGOT_API ingot_status ingot_writer_set_f32(ingot_writer *w, const char *key, float v);
INGOT_API ingot_status ingot_writer_set_f64(ingot_writer *w, const char *key, double v);
INGOT_API ingot_status ingot_writer_set_bool(ingot_writer *w, const char *key, bool v);
/** NUL-terminated UTF-8 string (BAD_STRING if not valid UTF-8). */
INGOT_API ingot_status ingot_writer_set_string(ingot_writer *w, const char *key, const char *v);
INGOT_API ingot_status ingot_writer_set_stringn(ingot_writer *w, const char *key, const char *v,
                                                size_t len);
INGOT_API ingot_status ingot_writer_set_bytes(ingot_writer *w, const char *key, const void *v,
                                              size_t len);
/** Numeric or BOOL array: `count` elements of `type`, host byte order, copied. */
INGOT_API ingot_status ingot_writer_set_array(ingot_writer *w, const char *key,
                                              ingot_meta_type type, const void *elems,
                                              uint64_t count);
/** STRING or BYTES array: count elements given as pointers and lengths, copied. */
INGOT_API ingot_status ingot_writer_set_string_array(ingot_writer *w, const char *key,
                                                     ingot_meta_type type,
                                                     const void *const *elems,
                                                     const size_t *lens, uint64_t count);

/** Declares the next tensor. The name (UTF-8, 1..65535 bytes, unique) and shape are copied.
 *  `data`, if not NULL, must hold the tensor's nbytes and stay valid until it has been written
 *  (at the latest until commit); if NULL the bytes are pushed with ingot_writer_write().
 *  Errors: DUPLICATE, BAD_NAME, BAD_TYPE, BAD_NDIMS, BAD_SHAPE, BAD_SIZE, MISUSE after begin. */
INGOT_API ingot_status ingot_writer_add_tensor(ingot_writer *w, const char *name,
                                               ingot_dtype dtype, uint32_t rank,
                                               const uint64_t *shape,
                                               const ingot_tensor_opts *topts, const void *data,
                                               ingot_error *err);

/** Fixes the layout and starts writing to a temporary file beside `path`. Tensors given with a
 *  data pointer are written as soon as the stream reaches them. */
INGOT_API ingot_status ingot_writer_begin(ingot_writer *w, const char *path, ingot_error *err);

/** As ingot_writer_begin(), but builds the file in memory (retrieve with ingot_writer_commit_mem). */
INGOT_API ingot_status ingot_writer_begin_mem(ingot_writer *w, ingot_error *err);

/** Appends n bytes of data to the current pushed tensor (the first one, in declaration order, that
 *  was declared with data NULL and is not complete yet). A chunk may span several tensors.
 *  RANGE if more bytes are pushed than the remaining tensors hold. BAD_VALUE (err names the
 *  tensor and the byte) for a BOOL byte other than 0 or 1, pushed or given at add time: no
 *  reader would accept it, so the file is never written and the temporary is removed. */
INGOT_API ingot_status ingot_writer_write(ingot_writer *w, const void *chunk, size_t n,
                                          ingot_error *err);

/** Completes the file: every tensor must be complete (MISUSE otherwise). Writes the checksums,
 *  fsyncs, renames over the target and fsyncs the directory. On failure the target is unchanged
 *  and the temporary removed; the writer can then only be freed. */
INGOT_API ingot_status ingot_writer_commit(ingot_writer *w, ingot_error *err);

/** For a writer begun with ingot_writer_begin_mem(): completes the file and hands its bytes to
 *  the caller (*out allocated with the writer's allocator; release with ingot_writer_free_mem()). */
INGOT_API ingot_status ingot_writer_commit_mem(ingot_writer *w, void **out, size_t *size,
                                               ingot_error *err);
/** Frees a buffer from ingot_writer_commit_mem(). `w` must be the writer or one with the same
 *  allocator options; NULL uses libc. */
INGOT_API void ingot_writer_free_mem(const ingot_allocator *allocator, void *p, size_t size);

/** Convenience: begin + write every tensor from its data pointer + commit. */
INGOT_API ingot_status ingot_writer_save(ingot_writer *w, const char *path, ingot_error *err);

/** Progress callback (ingot_progress_fn, core.h), called between chunks during
 *  begin/write/commit with bytes of tensor data written so far and the total. NULL to disable. */
INGOT_API void ingot_writer_set_progress(ingot_writer *w, ingot_progress_fn fn, void *ctx);

/** Notice callback: the writer calls it once for every lossy step it takes on the way to the
 *  target format (a typed metadata value stored as a string, a key the format cannot hold
 *  dropped, ...), with a one-line UTF-8 message naming the key or tensor. Tensor data is never
 *  changed: a tensor the format cannot store exactly is refused with an error instead. Without a
 *  callback the steps are still taken, silently. NULL to disable. */
typedef void (*ingot_notice_fn)(void *ctx, const char *msg);
INGOT_API void ingot_writer_set_notice(ingot_writer *w, ingot_notice_fn fn, void *ctx);

/** Sets a format-specific option by name, before ingot_writer_begin(). Values are text, as on
 *  the command line (`ingot convert --opt KEY=VALUE`). Each format documents its options in
 *  docs/COMPAT.md (for example safetensors "max_shard_size", burnpack "layout"). UNSUPPORTED
 *  for an option the format does not have, BAD_METADATA for a value it cannot parse. */
INGOT_API ingot_status ingot_writer_set_option(ingot_writer *w, const char *key,
                                               const char *value, ingot_error *err);

/** The writer format a path's name selects ("model.safetensors" -> "safetensors", "x.npz" ->
 *  "npz", "x.ingot" -> "ingot"), or NULL if no writable format claims its extension. */
INGOT_API const char *ingot_writer_format_for_path(const char *path);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_WRITER_H */
