/*
 * ingot/inspect.h - looking at a model's contents independently of its format: content digests
 * (the same tensor hashes the same in every format) and value statistics.
 *
 * Nothing here changes a file; every function reads tensor data under the SIGBUS guard, streams
 * it through a bounded buffer (a big-endian, column-major or strided tensor is materialised
 * alone, in C order), and is thread-safe like the getters of core.h.
 */
#ifndef INGOT_INSPECT_H
#define INGOT_INSPECT_H

#include "ingot/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/** SHA-256 (FIPS 180-4) of n bytes. */
INGOT_API void ingot_sha256(const void *data, size_t n, uint8_t out[32]);

/** The content digest of tensor i: SHA-256 of the text "ingot-tensor-v1", a NUL, the dtype name
 *  (ingot_dtype_name), a NUL, the rank as u32 and each dimension (outermost first) as u64, both
 *  little-endian, then the tensor's elements in C order as little-endian bytes (GGML blocks as
 *  stored). The name, offsets, alignment and format do not enter it: a tensor converted between
 *  formats without a change of dtype keeps its digest. Errors as ingot_file_tensor_read(). */
INGOT_API ingot_status ingot_file_tensor_digest(const ingot_file *f, uint64_t i, uint8_t out[32],
                                                ingot_error *err);

/** The content digest of the whole model: SHA-256 of "ingot-model-v1", a NUL, then for each
 *  tensor in byte order of name: the name, a NUL and its 32-byte tensor digest. Metadata is not
 *  included (formats store it with different types). */
INGOT_API ingot_status ingot_file_digest(const ingot_file *f, uint8_t out[32], ingot_error *err);

/** Statistics of one tensor's values. */
typedef struct ingot_tensor_stats {
    uint64_t count;      /**< elements */
    uint64_t nan, inf;   /**< NaN and infinite elements */
    double min, max;     /**< over the finite elements (0 if none) */
    double mean, std;    /**< over the finite elements: mean and population standard deviation */
} ingot_tensor_stats;

/** Statistics of tensor i's values, decoded as ingot_file_tensor_dequantize() decodes them (F64
 *  read as double; every other dtype through F32, so 32- and 64-bit integers above 2^24 are
 *  rounded). UNSUPPORTED for a dtype without a decoder. Sums in double (Welford). */
INGOT_API ingot_status ingot_file_tensor_stats(const ingot_file *f, uint64_t i,
                                               ingot_tensor_stats *out, ingot_error *err);

/** Calls fn on tensor i's values in C order, decoded as for the statistics, `n` at a time (at most
 *  a few hundred thousand per call; GGML types in whole blocks): the building block of
 *  statistics and comparisons. fn returns false to stop (the call then returns OK). */
typedef bool (*ingot_values_fn)(void *ctx, const double *v, size_t n);
INGOT_API ingot_status ingot_file_tensor_values(const ingot_file *f, uint64_t i,
                                                ingot_values_fn fn, void *ctx, ingot_error *err);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_INSPECT_H */
