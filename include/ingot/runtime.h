/*
 * ingot/runtime.h - model runtimes built on the backend interface (include/ingot/backend.h).
 *
 * Dense MLP (the RMD1 seed's engine): a stack of fully connected layers, each followed by an
 * activation, read from any open ingot_file that carries this convention (the RMD1 adapter
 * exposes exactly it; any format with the same keys and tensors works, e.g. .ingot):
 *   metadata  mlp.layer_count  u32 (u64 accepted)           L >= 1
 *             mlp.sizes        u64 array (u32 accepted)      in_0, out_0, ..., out_{L-1}
 *             mlp.activations  string array of L names       "identity", "relu", "sigmoid",
 *                              "tanh", "softmax", "log_softmax", "leaky_relu" (slope 0.01),
 *                              "gelu" (erf), "gelu_tanh", "silu", "softplus", "elu", ...
 *                              (ingot_act_op_from_name)
 *   tensors   layers.<k>.weight [out_k, in_k]  (torch layout: y = x . W^T + b)
 *             layers.<k>.bias   [out_k]
 *             F32 (used zero-copy when mapped and aligned) or F64/F16/BF16 (converted to F32
 *             once at open).
 * Layer k computes act_k(x . W_k^T + b_k); softmax variants run over the features of each row.
 *
 * Usage:
 *     ingot_mlp *m;  ingot_mlp_open(backend, file, NULL, &m, &e);
 *     size_t n = ingot_mlp_scratch_size(m, batch);   void *scratch = aligned_alloc(64, n);
 *     ingot_mlp_forward(m, x, batch, y, scratch, n, &e);   // x [batch, in], y [batch, out]
 *     ingot_mlp_free(m);
 *
 * Ownership: the mlp borrows the backend and the file (both must outlive it); weights that were
 * converted at open are owned by it. Threads: one mlp is used by one thread at a time (it binds
 * the caller's buffers into its own handles); several mlps may share one file but each needs
 * its own backend instance. Memory: ingot_mlp_forward never allocates (caller scratch; the cpu
 * backend's f32 linear runs on GEMM buffers reserved when the backend was created).
 * Determinism: results are bit-identical for any thread count. Splitting a batch may change the
 * last bits on "cpu" (one row runs the GEMV kernel, more rows the GEMM, whose small-M and
 * blocked paths round differently); "ref" gives the same bits for any split.
 */
#ifndef INGOT_RUNTIME_H
#define INGOT_RUNTIME_H

#include "ingot/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ingot_mlp ingot_mlp;

/** Options of ingot_mlp_open; NULL for defaults. */
typedef struct ingot_mlp_opts {
    uint64_t max_batch; /**< reserved for plans that pre-size device memory; 0 = none */
} ingot_mlp_opts;

/** Reads the topology and binds the weights (zero-copy where the file allows).
 *  Errors name the key or tensor: BAD_METADATA (missing/inconsistent keys), NOT_FOUND (tensor),
 *  BAD_SHAPE (a tensor disagrees with mlp.sizes), BAD_TYPE (weight dtype), UNSUPPORTED (an
 *  activation name the runtime does not know), NOMEM. */
INGOT_API ingot_status ingot_mlp_open(ingot_backend *b, const ingot_file *f,
                                      const ingot_mlp_opts *opts, ingot_mlp **out,
                                      ingot_error *err);
/** Releases the mlp (NULL is a no-op). */
INGOT_API void ingot_mlp_free(ingot_mlp *m);

INGOT_API uint32_t ingot_mlp_layer_count(const ingot_mlp *m);
INGOT_API uint64_t ingot_mlp_input_size(const ingot_mlp *m);
INGOT_API uint64_t ingot_mlp_output_size(const ingot_mlp *m);
/** Activation of layer k (INGOT_ACT_IDENTITY if out of range). */
INGOT_API ingot_act_op ingot_mlp_activation(const ingot_mlp *m, uint32_t k);

/** What a forward pass of `batch` rows costs. */
typedef struct ingot_mlp_estimate {
    uint64_t flops;          /**< 2*in*out per layer and row (multiply-add = 2) + bias and
                                  activation element ops */
    uint64_t weight_bytes;   /**< bytes of weights + biases read per pass */
    uint64_t owned_bytes;    /**< weights converted to F32 at open (held by the mlp) */
    uint64_t scratch_bytes;  /**< = ingot_mlp_scratch_size(m, batch) */
    uint64_t io_bytes;       /**< input + output bytes */
    uint64_t peak_bytes;     /**< owned + scratch + io: memory live during the pass, excluding
                                  mapped weights */
} ingot_mlp_estimate;

/** Fills *out for a pass of `batch` rows (no allocation; overflow saturates at UINT64_MAX). */
INGOT_API void ingot_mlp_estimate_plan(const ingot_mlp *m, uint64_t batch,
                                       ingot_mlp_estimate *out);
/** Bytes of scratch ingot_mlp_forward needs for `batch` rows (two ping-pong activation buffers
 *  of batch x the widest hidden layer, 64-byte aligned; 0 for a single layer). */
INGOT_API size_t ingot_mlp_scratch_size(const ingot_mlp *m, uint64_t batch);

/** Runs the stack on x [batch, in] (row-major f32) into y [batch, out]. `scratch` must hold
 *  ingot_mlp_scratch_size(m, batch) bytes (RANGE otherwise), be 4-byte aligned, and not overlap
 *  x or y. x and y must not overlap. batch 0 is a no-op. No allocation. */
INGOT_API ingot_status ingot_mlp_forward(ingot_mlp *m, const float *x, uint64_t batch, float *y,
                                         void *scratch, size_t scratch_size, ingot_error *err);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_RUNTIME_H */
