/*
 * ingot/backend.h - tensor backends: devices, buffers, tensors and ops (issue 5).
 *
 * A backend is a named, versioned, append-only table of op groups modelled on Burn's `Backend`
 * trait: float, int and bool tensor ops, quantized ops, module ops (linear, conv, pool, norms,
 * RoPE, attention) and activations. Two backends are built in:
 *   "ref"  plain scalar C: the readable definition of every op (the oracle of the other backends);
 *   "cpu"  the fast host backend: persistent thread pool, SIMD chosen at run time; every op it
 *          does not accelerate runs the ref definition.
 * More can be registered by name (ingot_backend_register).
 *
 * Contents, simplest first:
 *   1. ABI version, op codes (X-macro lists with names)
 *   2. backends: find by name, create, free, seed, sync, device info
 *   3. buffers: allocate, wrap host memory without a copy, copy in and out
 *   4. tensors: a small caller-owned view (dtype, shape, strides, buffer + byte offset); views
 *      (permute, slice, reshape, broadcast) are metadata only and never touch data
 *   5. ops: one checked wrapper per op; it validates dtypes, shapes and aliasing, then calls the
 *      backend's table; an op a backend lacks is UNSUPPORTED or a documented fallback
 *   6. implementing a backend: the op-group tables and registration
 *
 * Usage:
 *     ingot_backend *be;  ingot_error e;
 *     ingot_backend_new("cpu", NULL, &be, &e);
 *     ingot_buffer *wb;  ingot_tensor w;                       // mapped weights, zero copy
 *     ingot_tensor_from_file(be, file, "layers.0.weight", &w, &wb, &e);
 *     ingot_buffer *xb;  ingot_buffer_alloc(be, 4 * 8 * 784, &xb, &e);
 *     ingot_tensor x, y;  int64_t xs[2] = {8, 784}, ys[2] = {8, 128};
 *     ingot_tensor_init(&x, xb, 0, INGOT_DTYPE_F32, 2, xs);   ... ingot_tensor_init(&y, yb, ...)
 *     ingot_op_linear(be, &y, &x, &w, NULL, &e);              // y = x . w^T  (w is [out,in])
 *     ingot_backend_sync(be);  ingot_buffer_read(yb, 0, host, 4 * 8 * 128, &e);
 *     ingot_buffer_free(xb); ...; ingot_backend_free(be);
 *
 * Ownership: ingot_backend_new / ingot_buffer_alloc / ingot_buffer_wrap / ingot_tensor_from_file
 * return owned handles (free with ingot_backend_free / ingot_buffer_free; NULL is a no-op).
 * Buffers must be freed before their backend. ingot_tensor is a plain value: it borrows its
 * buffer and owns nothing; copying the struct copies the view. A wrapped buffer borrows the
 * host memory, which must outlive it (for tensors of an ingot_file: until the file is closed).
 *
 * Memory: every allocation of a backend, its buffers and its scratch goes through the
 * ingot_allocator given in ingot_backend_opts (libc when NULL). Ops never allocate except where
 * documented (cpu: its thread pool and GEMM packing buffers at ingot_backend_new, packed copies
 * of operands the kernels cannot read in place and quantized activations in instance scratch
 * grown on demand; ref: sort/top_p index scratch and attention scores per call; conv: none).
 *
 * Threads: a backend instance is used by one thread at a time (ops on one instance are not
 * reentrant: the cpu backend's thread pool belongs to the instance). Distinct instances are
 * independent. Registration and lookup are thread-safe. Buffers and tensors may be read by any
 * number of ops concurrently on distinct instances as long as nobody writes them.
 *
 * Determinism: every op of "ref" and "cpu" gives bit-identical results for identical inputs on
 * the same build and machine, independent of the thread count: work is split by output elements,
 * and each output element is computed by the same sequence of operations whatever the split.
 * "cpu" and "ref" may differ in the last bits (different summation order / FMA); the
 * conformance suite bounds that difference (NMSE <= 1e-7 for f32).
 *
 * Devices: ops only take tensors; where the data lives is the buffer's business. A host backend
 * ("ref", "cpu") has host-visible buffers (ingot_buffer_host returns the pointer). A device
 * backend (GPU) allocates device buffers and implements buffer_write/buffer_read/buffer_wrap in
 * its table; callers that use ingot_buffer_write/ingot_buffer_read to move data in and out run
 * unchanged on it. ingot_backend_sync waits for queued work (a no-op on host backends).
 */
#ifndef INGOT_BACKEND_H
#define INGOT_BACKEND_H

#include "ingot/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * 1. ABI version and op codes
 * ------------------------------------------------------------------------------------------- */

/** Version of ingot_backend_ops. Members are only ever appended (to the backend table and to
 *  its op-group tables); a table declares the version it was written against and the wrappers
 *  never read members past it: a version-1 table keeps working, its missing members count as
 *  NULL (fallback or UNSUPPORTED, as documented per op).
 *    1  the initial op set.
 *    2  ingot_tensor_ops.sort; ingot_backend_ops.sampling_ops (top_p, multinomial). */
#define INGOT_BACKEND_ABI 2

/* Element-wise unary ops: X(NAME, value, "name"). Float group: all; int group: NEG ABS SIGN
 * SQUARE; bool group: NOT. ROUND rounds half to even (torch.round). */
#define INGOT_UNARY_LIST(X)                                                                      \
    X(NEG, 1, "neg") X(ABS, 2, "abs") X(EXP, 3, "exp") X(LOG, 4, "log") X(SQRT, 5, "sqrt")       \
    X(RSQRT, 6, "rsqrt") X(SIN, 7, "sin") X(COS, 8, "cos") X(TANH, 9, "tanh") X(ERF, 10, "erf")  \
    X(RECIP, 11, "recip") X(SQUARE, 12, "square") X(FLOOR, 13, "floor") X(CEIL, 14, "ceil")      \
    X(ROUND, 15, "round") X(SIGN, 16, "sign") X(NOT, 17, "not") X(LOG1P, 18, "log1p")           \
    X(EXPM1, 19, "expm1")

/* Broadcasting binary ops. Float: ADD..MIN, REM (sign of divisor, torch.remainder);
 * int: ADD SUB MUL DIV (truncating, as C; division by zero gives 0) REM MAX MIN AND OR XOR;
 * bool: AND OR XOR. */
#define INGOT_BINARY_LIST(X)                                                                     \
    X(ADD, 1, "add") X(SUB, 2, "sub") X(MUL, 3, "mul") X(DIV, 4, "div") X(POW, 5, "pow")         \
    X(MAX, 6, "maximum") X(MIN, 7, "minimum") X(REM, 8, "remainder") X(AND, 9, "and")            \
    X(OR, 10, "or") X(XOR, 11, "xor")

/* Comparisons; dst is BOOL. NaN compares false except NE (IEEE). */
#define INGOT_CMP_LIST(X)                                                                        \
    X(EQ, 1, "eq") X(NE, 2, "ne") X(LT, 3, "lt") X(LE, 4, "le") X(GT, 5, "gt") X(GE, 6, "ge")

/* Reductions over one axis; dst has the same rank with that axis of size 1 (keepdim). ARGMAX
 * and ARGMIN write I64 and return the first index of the extreme (NaN counts as largest for
 * ARGMAX, like torch). ANY/ALL: bool group. MEAN: float group only. A reduction over an empty
 * axis gives the identity (0 for SUM, 1 for PROD, NaN for MEAN) and RANGE for MAX/MIN/ARG*. */
#define INGOT_REDUCE_LIST(X)                                                                     \
    X(SUM, 1, "sum") X(MEAN, 2, "mean") X(MAX, 3, "max") X(MIN, 4, "min") X(PROD, 5, "prod")     \
    X(ARGMAX, 6, "argmax") X(ARGMIN, 7, "argmin") X(ANY, 8, "any") X(ALL, 9, "all")

/* Activations (element-wise, float group). `param`: LEAKY_RELU negative slope (torch default
 * 0.01), SOFTPLUS beta (1; threshold 20 as torch), ELU alpha (1); 0 selects the default; other
 * activations ignore it.
 * GELU_ERF is 0.5x(1+erf(x/sqrt2)) (torch default); GELU_TANH is the tanh approximation
 * (GPT-2's "gelu_new", torch approximate='tanh'). The two differ by up to ~1e-3: never
 * interchange them. SOFTMAX / LOG_SOFTMAX over the last axis are accepted here too (they are
 * not element-wise; ingot_op_softmax takes any axis). */
#define INGOT_ACT_LIST(X)                                                                        \
    X(IDENTITY, 1, "identity") X(RELU, 2, "relu") X(GELU_ERF, 3, "gelu")                         \
    X(GELU_TANH, 4, "gelu_tanh") X(SILU, 5, "silu") X(SIGMOID, 6, "sigmoid") X(TANH, 7, "tanh")  \
    X(SOFTPLUS, 8, "softplus") X(LEAKY_RELU, 9, "leaky_relu") X(ELU, 10, "elu")                  \
    X(SOFTMAX, 11, "softmax") X(LOG_SOFTMAX, 12, "log_softmax") X(RELU6, 13, "relu6")            \
    X(HARDSIGMOID, 14, "hardsigmoid")

typedef enum ingot_unary_op {
#define INGOT_X_(n, v, s) INGOT_UNARY_##n = v,
    INGOT_UNARY_LIST(INGOT_X_)
#undef INGOT_X_
} ingot_unary_op;
typedef enum ingot_binary_op {
#define INGOT_X_(n, v, s) INGOT_BINARY_##n = v,
    INGOT_BINARY_LIST(INGOT_X_)
#undef INGOT_X_
} ingot_binary_op;
typedef enum ingot_cmp_op {
#define INGOT_X_(n, v, s) INGOT_CMP_##n = v,
    INGOT_CMP_LIST(INGOT_X_)
#undef INGOT_X_
} ingot_cmp_op;
typedef enum ingot_reduce_op {
#define INGOT_X_(n, v, s) INGOT_REDUCE_##n = v,
    INGOT_REDUCE_LIST(INGOT_X_)
#undef INGOT_X_
} ingot_reduce_op;
typedef enum ingot_act_op {
#define INGOT_X_(n, v, s) INGOT_ACT_##n = v,
    INGOT_ACT_LIST(INGOT_X_)
#undef INGOT_X_
} ingot_act_op;

/** Lower-case names as in the lists ("exp", "maximum", "gelu_tanh"); NULL for unknown values. */
INGOT_API const char *ingot_unary_op_name(ingot_unary_op op);
INGOT_API const char *ingot_binary_op_name(ingot_binary_op op);
INGOT_API const char *ingot_cmp_op_name(ingot_cmp_op op);
INGOT_API const char *ingot_reduce_op_name(ingot_reduce_op op);
INGOT_API const char *ingot_act_op_name(ingot_act_op op);
/** Parses an activation name (exact, lower case; "gelu_erf" is accepted for "gelu",
 *  "linear"/"none" for "identity"). n is the length (names need not be NUL-terminated).
 *  NOT_FOUND if unknown. */
INGOT_API ingot_status ingot_act_op_from_name(const char *name, size_t n, ingot_act_op *out);

/* ---------------------------------------------------------------------------------------------
 * 2. Backends
 * ------------------------------------------------------------------------------------------- */

typedef struct ingot_backend ingot_backend;
typedef struct ingot_buffer ingot_buffer;
typedef struct ingot_backend_ops ingot_backend_ops;

/** Options of ingot_backend_new. Zero-initialise for the defaults. */
typedef struct ingot_backend_opts {
    const ingot_allocator *allocator; /**< NULL: libc; copied, ctx must outlive the backend */
    uint32_t threads;                 /**< cpu: worker threads incl. the caller; 0 = online cores */
    uint32_t device;                  /**< device index for multi-device backends; 0 */
    uint64_t seed;                    /**< initial RNG seed (see ingot_backend_seed) */
    bool track_grad;                  /**< ask for gradient tracking; UNSUPPORTED where the backend
                                           has none (no built-in backend has: an autodiff
                                           decorator will wrap them) */
} ingot_backend_opts;

typedef enum ingot_device_kind {
    INGOT_DEVICE_CPU = 0,
    INGOT_DEVICE_GPU = 1,
    INGOT_DEVICE_OTHER = 2,
} ingot_device_kind;

/** What a backend instance runs on. Strings are static or owned by the backend. */
typedef struct ingot_device_info {
    const char *backend;     /**< "ref", "cpu" */
    const char *description; /**< "x86-64 AVX2+FMA, 2 threads" */
    ingot_device_kind kind;
    bool host_buffers;       /**< buffers are host memory (ingot_buffer_host is not NULL) */
    bool zero_copy_wrap;     /**< ingot_buffer_wrap shares host memory instead of copying */
    uint32_t threads;
    uint64_t memory_bytes;   /**< device memory; 0 = host memory / unknown */
} ingot_device_info;

/** Number of registered backends (built-in first: "ref", "cpu"). Thread-safe. */
INGOT_API uint32_t ingot_backend_count(void);
/** Name of backend i (static storage) or NULL if out of range. */
INGOT_API const char *ingot_backend_name_at(uint32_t i);

/** Creates an instance of the backend registered as `name` (NULL = "cpu").
 *  NOT_FOUND for an unknown name, UNSUPPORTED for an option it cannot honour (track_grad),
 *  NOMEM. The instance owns its threads and scratch until ingot_backend_free(). */
INGOT_API ingot_status ingot_backend_new(const char *name, const ingot_backend_opts *opts,
                                         ingot_backend **out, ingot_error *err);
/** Releases the instance (NULL is a no-op). Every buffer of it must have been freed. */
INGOT_API void ingot_backend_free(ingot_backend *b);
/** Registered name of the instance's backend. */
INGOT_API const char *ingot_backend_name(const ingot_backend *b);
/** Fills *out. */
INGOT_API void ingot_backend_device_info(const ingot_backend *b, ingot_device_info *out);
/** Reseeds the instance's RNG (used by ingot_op_multinomial; streams never match torch's). */
INGOT_API void ingot_backend_seed(ingot_backend *b, uint64_t seed);
/** Next 64 random bits of the instance's RNG (splitmix64 stream from the seed). */
INGOT_API uint64_t ingot_backend_random_u64(ingot_backend *b);
/** Waits for all work queued on the instance (a no-op for synchronous host backends). */
INGOT_API ingot_status ingot_backend_sync(ingot_backend *b, ingot_error *err);
/** True if the instance records operations for gradients (always false for ref/cpu). */
INGOT_API bool ingot_backend_tracks_grad(const ingot_backend *b);
/** Threads the instance uses (1 for ref). */
INGOT_API uint32_t ingot_backend_threads(const ingot_backend *b);

/* Instruction-set levels of the cpu backend's kernels, lowest first: X(NAME, value, "name").
 *   SCALAR       portable C (what the compiler makes of it for the baseline target)
 *   AVX2         AVX2 + FMA + F16C (Haswell, Zen 1 and later)
 *   AVX_VNNI     AVX2 + AVX-VNNI: 256-bit int8 dot instructions (Alder Lake, Sapphire Rapids)
 *   AVX512       AVX-512 F/BW/VL/DQ (Skylake-SP, Zen 4)
 *   AVX512_VNNI  AVX512 + AVX512-VNNI (Cascade Lake, Ice Lake, Zen 4)
 *   AMX          AVX512_VNNI + AVX512-BF16 + AMX tiles (INT8, BF16), which the OS must grant
 *                (Linux: arch_prctl, asked once) (Sapphire Rapids)
 * Levels are not nested (a CPU may have AVX512 without AVX_VNNI); a cap selects the best level the
 * CPU and OS support at or below it. Every level computes the same ops; results differ between
 * levels in the last bits (summation order) and are identical for any thread count. */
#define INGOT_CPU_ISA_LIST(X)                                                                    \
    X(SCALAR, 0, "scalar") X(AVX2, 1, "avx2") X(AVX_VNNI, 2, "avx_vnni") X(AVX512, 3, "avx512")  \
    X(AVX512_VNNI, 4, "avx512_vnni") X(AMX, 5, "amx")
typedef enum ingot_cpu_isa {
#define INGOT_X_(n, v, s) INGOT_CPU_ISA_##n = v,
    INGOT_CPU_ISA_LIST(INGOT_X_)
#undef INGOT_X_
} ingot_cpu_isa;
#define INGOT_CPU_ISA_COUNT 6

/** "avx512_vnni", ...; NULL for a value not in the list. */
INGOT_API const char *ingot_cpu_isa_name(ingot_cpu_isa isa);
/** Parses a level name (exact, lower case). NOT_FOUND if unknown. */
INGOT_API ingot_status ingot_cpu_isa_from_name(const char *name, ingot_cpu_isa *out);
/** True if this CPU and OS can run the level's kernels. Thread-safe. */
INGOT_API bool ingot_cpu_isa_supported(ingot_cpu_isa isa);
/** The level the cpu backend's kernels use now: the best supported level, capped by the
 *  environment variable INGOT_ISA (a level name; read at first use; an unknown name is ignored,
 *  and the cpu backend's device description says so) or by ingot_cpu_isa_set_cap(). */
INGOT_API ingot_cpu_isa ingot_cpu_isa_current(void);
/** Caps the level for the whole process (overriding INGOT_ISA): the best supported level at or
 *  below cap is used from the next op on (an op already running keeps its level). Returns the
 *  level now in effect. For tests and comparisons; INGOT_CPU_ISA_AMX removes the cap. */
INGOT_API ingot_cpu_isa ingot_cpu_isa_set_cap(ingot_cpu_isa cap);

/* ---------------------------------------------------------------------------------------------
 * 3. Buffers
 * ------------------------------------------------------------------------------------------- */

/** Allocates n bytes (aligned to 64) owned by the buffer. Contents are zero. */
INGOT_API ingot_status ingot_buffer_alloc(ingot_backend *b, size_t n, ingot_buffer **out,
                                          ingot_error *err);
/** Wraps n bytes of host memory. On host backends nothing is copied: the buffer borrows `host`,
 *  which must stay valid until ingot_buffer_free(). `writable` false makes every op that would
 *  write the buffer fail with MISUSE (mapped weights are read-only pages). On a device backend
 *  without zero-copy wrap the bytes are copied to the device (see ingot_device_info). */
INGOT_API ingot_status ingot_buffer_wrap(ingot_backend *b, const void *host, size_t n,
                                         bool writable, ingot_buffer **out, ingot_error *err);
/** Releases the buffer (borrowed memory is left alone). NULL is a no-op. */
INGOT_API void ingot_buffer_free(ingot_buffer *buf);
INGOT_API size_t ingot_buffer_size(const ingot_buffer *buf);
/** Host address of byte 0, or NULL for device memory. */
INGOT_API void *ingot_buffer_host(const ingot_buffer *buf);
INGOT_API bool ingot_buffer_writable(const ingot_buffer *buf);
INGOT_API ingot_backend *ingot_buffer_backend(const ingot_buffer *buf);
/** Copies n bytes from host memory into the buffer at `offset` (RANGE past the end). */
INGOT_API ingot_status ingot_buffer_write(ingot_buffer *buf, size_t offset, const void *src,
                                          size_t n, ingot_error *err);
/** Copies n bytes of the buffer at `offset` into host memory. */
INGOT_API ingot_status ingot_buffer_read(const ingot_buffer *buf, size_t offset, void *dst,
                                         size_t n, ingot_error *err);

/* ---------------------------------------------------------------------------------------------
 * 4. Tensors (views)
 *
 * Strides are in elements and may be 0 (broadcast) or negative (flip); they are never used for
 * block-quantized dtypes, which must be contiguous (their shape counts elements; the innermost
 * dimension is a multiple of the block). Supported element dtypes: F64 F32 F16 BF16 I64 I32 I16
 * I8 U8 BOOL (ops document which). A tensor with a zero dimension is empty: every op accepts it
 * and writes nothing. Rank 0 is a scalar; the largest rank is INGOT_MAX_RANK (64), so a tensor
 * value is about 1 KiB (it held 8 dimensions before 0.1 was released: code built against that
 * header must be rebuilt).
 * ------------------------------------------------------------------------------------------- */

typedef struct ingot_tensor {
    ingot_buffer *buf;                /**< borrowed; NULL only for an empty tensor */
    uint64_t offset;                  /**< byte offset of element [0,..,0] in buf */
    ingot_dtype dtype;
    uint32_t rank;
    int64_t shape[INGOT_MAX_RANK];    /**< entries >= rank are 0 */
    int64_t strides[INGOT_MAX_RANK];  /**< elements; entries >= rank are 0 */
} ingot_tensor;

/** Fills *t as a contiguous C-order tensor at byte `offset` of buf; checks that it fits
 *  (RANGE), the dtype (BAD_TYPE), the rank (BAD_NDIMS) and the shape (BAD_SHAPE). */
INGOT_API ingot_status ingot_tensor_init(ingot_tensor *t, ingot_buffer *buf, uint64_t offset,
                                         ingot_dtype dtype, uint32_t rank, const int64_t *shape,
                                         ingot_error *err);
/** As ingot_tensor_init with explicit strides (elements); checks every reachable element lies
 *  inside the buffer. */
INGOT_API ingot_status ingot_tensor_init_strided(ingot_tensor *t, ingot_buffer *buf,
                                                 uint64_t offset, ingot_dtype dtype, uint32_t rank,
                                                 const int64_t *shape, const int64_t *strides,
                                                 ingot_error *err);
/** Element count (1 for a scalar, 0 if empty). */
INGOT_API uint64_t ingot_tensor_nelem(const ingot_tensor *t);
/** True if the elements are dense in C order (an empty or one-element tensor is). */
INGOT_API bool ingot_tensor_is_contiguous(const ingot_tensor *t);
/** Host address of element [0,..,0] or NULL (device buffer / empty tensor). */
INGOT_API void *ingot_tensor_host(const ingot_tensor *t);

/** Wraps tensor `name` of an open file as a backend tensor: zero-copy (a read-only wrapped
 *  buffer) when its data is mapped little-endian and aligned to the element size; FORTRAN
 *  layouts become a column-major strided view; otherwise (BIG_ENDIAN, NOT_MAPPED, UNALIGNED,
 *  STRIDED) the dense copy (ingot_file_tensor_copy) is made into a new buffer. *buf_out owns the
 *  wrapper/copy (free it before closing f and before the backend). NOT_FOUND if absent. */
INGOT_API ingot_status ingot_tensor_from_file(ingot_backend *b, const ingot_file *f,
                                              const char *name, ingot_tensor *t,
                                              ingot_buffer **buf_out, ingot_error *err);

/* View constructors: metadata only. `out` may equal `in`. */
/** Reorders axes: out.shape[i] = in.shape[perm[i]]. BAD_SHAPE unless perm is a permutation. */
INGOT_API ingot_status ingot_tensor_permute(ingot_tensor *out, const ingot_tensor *in,
                                            const uint32_t *perm, ingot_error *err);
/** Swaps the last two axes (rank >= 2). */
INGOT_API ingot_status ingot_tensor_transpose(ingot_tensor *out, const ingot_tensor *in,
                                              ingot_error *err);
/** Elements start, start+step, ... < end of `axis` (0 <= start <= end <= shape, step >= 1;
 *  negative start/end count from the end as in Python). */
INGOT_API ingot_status ingot_tensor_slice(ingot_tensor *out, const ingot_tensor *in,
                                          uint32_t axis, int64_t start, int64_t end, int64_t step,
                                          ingot_error *err);
/** New shape with the same element count; one entry may be -1. Needs a contiguous input
 *  (UNSUPPORTED otherwise: copy it with ingot_op_copy first). */
INGOT_API ingot_status ingot_tensor_reshape(ingot_tensor *out, const ingot_tensor *in,
                                            uint32_t rank, const int64_t *shape,
                                            ingot_error *err);
/** Broadcasts to `shape` (numpy rules, leading axes added) with zero strides. */
INGOT_API ingot_status ingot_tensor_broadcast_to(ingot_tensor *out, const ingot_tensor *in,
                                                 uint32_t rank, const int64_t *shape,
                                                 ingot_error *err);
/** Reverses `axis` (negative stride). */
INGOT_API ingot_status ingot_tensor_flip(ingot_tensor *out, const ingot_tensor *in, uint32_t axis,
                                         ingot_error *err);

/* ---------------------------------------------------------------------------------------------
 * 5. Ops
 *
 * Common rules for every ingot_op_*():
 *   - dst is allocated by the caller with the exact result shape (given per op) and dtype;
 *     BAD_SHAPE / BAD_TYPE otherwise, with err naming the op and the operand ("add: operand 'b'
 *     shape [3,4] does not broadcast to dst [2,3,5]").
 *   - Inputs may be any views (broadcast, permuted, sliced, flipped); dst may be any view without
 *     zero strides (a broadcast dst is MISUSE).
 *   - Aliasing: element-wise ops (unary, binary, compare, activation, cast, copy, clamp, where,
 *     mask_fill) allow dst to be exactly the same view as an input (in place); any other overlap
 *     between dst and an input is MISUSE naming the operand. dst in a read-only buffer is MISUSE.
 *   - All tensors of one call belong to the same backend instance (MISUSE otherwise).
 *   - Float ops accept F32 F16 BF16 F64 (computed in at least f32, accumulated in f64 by ref);
 *     int ops I64 I32 I16 I8 U8; bool ops BOOL. Mixed-dtype inputs are BAD_TYPE: cast first.
 *   - An op the backend's table lacks falls back as documented, or returns UNSUPPORTED with
 *     err naming the op, dtype and backend.
 * ------------------------------------------------------------------------------------------- */

/** dst = op(a). */
INGOT_API ingot_status ingot_op_unary(ingot_backend *b, ingot_unary_op op, ingot_tensor *dst,
                                      const ingot_tensor *a, ingot_error *err);
/** dst = a op c with numpy broadcasting (dst has the broadcast shape). */
INGOT_API ingot_status ingot_op_binary(ingot_backend *b, ingot_binary_op op, ingot_tensor *dst,
                                       const ingot_tensor *a, const ingot_tensor *c,
                                       ingot_error *err);
/** dst = a op s (s converted to a's dtype first for int tensors). */
INGOT_API ingot_status ingot_op_binary_scalar(ingot_backend *b, ingot_binary_op op,
                                              ingot_tensor *dst, const ingot_tensor *a, double s,
                                              ingot_error *err);
/** dst (BOOL, broadcast shape) = a cmp c. */
INGOT_API ingot_status ingot_op_compare(ingot_backend *b, ingot_cmp_op op, ingot_tensor *dst,
                                        const ingot_tensor *a, const ingot_tensor *c,
                                        ingot_error *err);
/** dst = min(max(a, lo), hi). */
INGOT_API ingot_status ingot_op_clamp(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                                      double lo, double hi, ingot_error *err);
/** dst = cond ? a : c (cond BOOL; all three broadcast to dst). */
INGOT_API ingot_status ingot_op_where(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *cond,
                                      const ingot_tensor *a, const ingot_tensor *c,
                                      ingot_error *err);
/** dst = mask ? value : a (mask BOOL broadcast to a's shape). */
INGOT_API ingot_status ingot_op_mask_fill(ingot_backend *b, ingot_tensor *dst,
                                          const ingot_tensor *a, const ingot_tensor *mask,
                                          double value, ingot_error *err);
/** dst = src materialised (same dtype; any view in, any non-broadcast view out). */
INGOT_API ingot_status ingot_op_copy(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                                     ingot_error *err);
/** dst = src converted to dst's dtype, among F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL.
 *  Float to int truncates toward zero (C / torch); NaN and out-of-range values are
 *  unspecified. Float to F16/BF16 rounds to nearest even. Anything to BOOL is x != 0. */
INGOT_API ingot_status ingot_op_cast(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                                     ingot_error *err);
/** Every element of dst = v. */
INGOT_API ingot_status ingot_op_fill(ingot_backend *b, ingot_tensor *dst, double v,
                                     ingot_error *err);
/** dst[..., i, ...] = start + i * step along the last axis (float or int dst). */
INGOT_API ingot_status ingot_op_arange(ingot_backend *b, ingot_tensor *dst, double start,
                                       double step, ingot_error *err);

/** Batched matrix product dst[..., m, n] = a[..., m, k] . c[..., k, n]; batch axes broadcast.
 *  Float group. 1-D operands are not promoted: reshape them. */
INGOT_API ingot_status ingot_op_matmul(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                                       const ingot_tensor *c, ingot_error *err);
/** Reduction over `axis`; dst has a's shape with shape[axis] = 1. */
INGOT_API ingot_status ingot_op_reduce(ingot_backend *b, ingot_reduce_op op, ingot_tensor *dst,
                                       const ingot_tensor *a, uint32_t axis, ingot_error *err);
/** Inclusive prefix sum along `axis` (float and int). */
INGOT_API ingot_status ingot_op_cumsum(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                                       uint32_t axis, ingot_error *err);
/** k largest (or smallest) along the last axis, sorted (descending for largest). values has a's
 *  dtype, indices I64; both have a's shape with the last axis k. Ties: the lower index first
 *  (torch leaves the tie order unspecified; compare tied indices as sets). NaN is largest. */
INGOT_API ingot_status ingot_op_topk(ingot_backend *b, ingot_tensor *values, ingot_tensor *indices,
                                     const ingot_tensor *a, uint32_t k, bool largest,
                                     ingot_error *err);
/** torch.gather: dst[i][j][k] = src[i][index[i][j][k]][k] for axis 1; index I64/I32 has dst's
 *  shape. RANGE for an index outside [-n, n) (negative counts from the end). */
INGOT_API ingot_status ingot_op_gather(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                                       uint32_t axis, const ingot_tensor *index, ingot_error *err);
/** In place: dst[.. index[i][j] ..] += src[i][j] along `axis` (torch.scatter_add_). */
INGOT_API ingot_status ingot_op_scatter_add(ingot_backend *b, ingot_tensor *dst, uint32_t axis,
                                            const ingot_tensor *index, const ingot_tensor *src,
                                            ingot_error *err);
/** torch.index_select: dst = src with `axis` replaced by the 1-D index's entries. */
INGOT_API ingot_status ingot_op_index_select(ingot_backend *b, ingot_tensor *dst,
                                             const ingot_tensor *src, uint32_t axis,
                                             const ingot_tensor *index, ingot_error *err);
/** Stable sort along `axis` (float and int groups), as torch.sort(stable=True): `values` (a's
 *  dtype and shape) receives the sorted elements and `indices` (I64, a's shape) their positions
 *  along the axis; either may be NULL (not both). Ascending, or descending with `descending`;
 *  equal elements keep their original order in both directions (so -0.0 and 0.0 stay in input
 *  order); NaN counts as larger than every number (last ascending, first descending, as torch).
 *  Ints compare exactly (I64 beyond 2^53 included). Fallback for a table without the member
 *  (ABI 1): topk with k = the axis length on the last axis, whose tie order is the same. */
INGOT_API ingot_status ingot_op_sort(ingot_backend *b, ingot_tensor *values,
                                     ingot_tensor *indices, const ingot_tensor *a, uint32_t axis,
                                     bool descending, ingot_error *err);
/** Concatenation along `axis` (fallback: slice views of dst + copy; no backend member). */
INGOT_API ingot_status ingot_op_cat(ingot_backend *b, ingot_tensor *dst,
                                    const ingot_tensor *const *srcs, uint32_t n, uint32_t axis,
                                    ingot_error *err);

/* Activations (float group). */
/** dst = act(a; param). SOFTMAX/LOG_SOFTMAX use the last axis. */
INGOT_API ingot_status ingot_op_activation(ingot_backend *b, ingot_act_op op, ingot_tensor *dst,
                                           const ingot_tensor *a, double param, ingot_error *err);
/** Softmax along `axis`, computed as exp(x - max) / sum. A row of only -inf gives NaN, as
 *  torch does (pin: test_backend_traps). log=true gives log_softmax. */
INGOT_API ingot_status ingot_op_softmax(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                                        uint32_t axis, bool log, ingot_error *err);

/* Sampling (float group; ingot_sampling_ops, ABI 2; UNSUPPORTED for a table without them). */
/** Nucleus (top-p) filter over the last axis of `a` [..., V]: each row is a distribution, given
 *  as probabilities (logits false: used as they are, not renormalised first) or as logits (logits
 *  true: softmax over the row first, in double). The row's tokens are ranked by probability,
 *  descending, ties by lower index first (a stable sort); the token at rank j is kept when the
 *  probability mass of the tokens ranked before it is < p (summed in rank order, in double),
 *  and the top-ranked token is always kept. So p <= 0 keeps exactly the most probable token (the
 *  lowest index among equals), and p >= 1 keeps every token (no filtering, tokens of
 *  probability 0 included). Outputs, each optional (NULL) but not both:
 *    dst   a's dtype and shape: prob / S for kept tokens (S = the kept mass), 0 for the others;
 *          the filtered, renormalised distribution;
 *    keep  BOOL, a's shape: true for kept tokens.
 *  Probabilities must be >= 0 (negative values give unspecified rows). A NaN ranks first (as in
 *  ingot_op_sort), so for p < 1 it is the only kept token (dst NaN there, 0 elsewhere); a
 *  logits row with a NaN or of only -inf softmaxes to NaN (as ingot_op_softmax), so the same.
 *  ref and cpu share this definition (pins: test_backend_traps, the conformance goldens). */
INGOT_API ingot_status ingot_op_top_p(ingot_backend *b, ingot_tensor *dst, ingot_tensor *keep,
                                      const ingot_tensor *a, double p, bool logits,
                                      ingot_error *err);
/** Draws dst.shape[-1] token indices per row, with replacement, from the distribution along the
 *  last axis of `probs` [..., V] (weights >= 0, finite, not all 0; they need not sum to 1: token
 *  i is drawn with probability probs[i] / sum). dst is I64 [..., S] (probs' shape with the last
 *  axis S). Each draw takes the next 64 bits u of the instance's RNG (ingot_backend_seed /
 *  ingot_backend_random_u64; rows in C order, draws in order) and returns the first index whose
 *  running sum (in index order, double) exceeds (u >> 11) * 2^-53 * sum; a token of weight 0 is
 *  never drawn. The same seed gives the same tokens on ref and cpu, for any thread count. RNG
 *  streams never match torch.multinomial's: test sampling by frequencies or greedily (argmax).
 *  RANGE, naming the operand and row, for a negative, NaN or infinite weight or a row of zeros
 *  (dst is then unspecified). */
INGOT_API ingot_status ingot_op_multinomial(ingot_backend *b, ingot_tensor *dst,
                                            const ingot_tensor *probs, ingot_error *err);

/* Module ops (float group). */
/** Fully connected layer y = x . w^T + bias, torch/HF/GGUF layout: w is [out, in] (NOT Burn's
 *  [in, out]: transpose a Burn weight view first). x [..., in], y [..., out], bias [out] or NULL.
 *  w may be F32/F16/BF16/F64 (float linear, x of the same dtype), a GGML block type (Q8_0, Q4_0,
 *  Q4_K, Q5_K, Q6_K: dequantised on the fly, see ingot_op_qlinear), or F16/BF16 with F32 x
 *  (also routed to ingot_op_qlinear: the weights are widened exactly as they are read). */
INGOT_API ingot_status ingot_op_linear(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                       const ingot_tensor *w, const ingot_tensor *bias,
                                       ingot_error *err);

/** Convolution parameters; arrays indexed by spatial axis (first `ndim` entries used). */
typedef struct ingot_conv_params {
    uint32_t ndim;          /**< 1, 2 or 3 */
    uint32_t stride[3];     /**< 0 means 1 */
    uint32_t padding[3];    /**< zero padding on both sides */
    uint32_t dilation[3];   /**< 0 means 1 */
    uint32_t groups;        /**< 0 means 1 */
} ingot_conv_params;
/** torch.nn.functional.conv{1,2,3}d: x [N, Cin, *spatial], w [Cout, Cin/groups, *kernel],
 *  bias [Cout] or NULL, dst [N, Cout, *out] with out = (in + 2p - d(k-1) - 1)/s + 1. */
INGOT_API ingot_status ingot_op_conv(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                     const ingot_tensor *w, const ingot_tensor *bias,
                                     const ingot_conv_params *p, ingot_error *err);

typedef enum ingot_pool_kind { INGOT_POOL_MAX = 1, INGOT_POOL_AVG = 2 } ingot_pool_kind;
typedef struct ingot_pool_params {
    ingot_pool_kind kind;
    uint32_t ndim;           /**< 1, 2 or 3 */
    uint32_t kernel[3];
    uint32_t stride[3];      /**< 0 means kernel */
    uint32_t padding[3];     /**< implicit -inf (max) or 0 (avg) padding, <= kernel/2 */
    uint32_t dilation[3];    /**< max pooling only; 0 means 1 */
    bool count_include_pad;  /**< avg: divide by the full kernel size (torch default true) */
} ingot_pool_params;
/** torch max_pool{1,2,3}d / avg_pool{1,2,3}d (ceil_mode false): x [N, C, *spatial]. */
INGOT_API ingot_status ingot_op_pool(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                     const ingot_pool_params *p, ingot_error *err);
/** Row gather: dst[..., :] = table[ids[...], :]; table [vocab, dim], ids I32/I64 any shape,
 *  dst ids.shape + [dim] (fallback: index_select on the flattened ids). */
INGOT_API ingot_status ingot_op_embedding(ingot_backend *b, ingot_tensor *dst,
                                          const ingot_tensor *table, const ingot_tensor *ids,
                                          ingot_error *err);
/** LayerNorm over the last axis (biased variance, as torch): w, bias [dim] or NULL. */
INGOT_API ingot_status ingot_op_layer_norm(ingot_backend *b, ingot_tensor *dst,
                                           const ingot_tensor *x, const ingot_tensor *w,
                                           const ingot_tensor *bias, double eps, ingot_error *err);
/** RMSNorm over the last axis: x / sqrt(mean(x^2) + eps) * w (w [dim] or NULL). */
INGOT_API ingot_status ingot_op_rms_norm(ingot_backend *b, ingot_tensor *dst,
                                         const ingot_tensor *x, const ingot_tensor *w, double eps,
                                         ingot_error *err);
/** Inference batch norm over axis 1 of x [N, C, ...]: (x - mean) / sqrt(var + eps) * w + bias;
 *  mean, var [C] required, w, bias [C] or NULL. */
INGOT_API ingot_status ingot_op_batch_norm(ingot_backend *b, ingot_tensor *dst,
                                           const ingot_tensor *x, const ingot_tensor *mean,
                                           const ingot_tensor *var, const ingot_tensor *w,
                                           const ingot_tensor *bias, double eps, ingot_error *err);

/** RoPE pairing. The two are silently different: pick the one the checkpoint was trained with. */
typedef enum ingot_rope_mode {
    INGOT_ROPE_INTERLEAVED = 0, /**< pairs (x[2i], x[2i+1]): original/Meta, Burn, ggml NORMAL */
    INGOT_ROPE_HALF = 1,        /**< pairs (x[i], x[i + d/2]): HF "rotate_half", ggml NEOX */
} ingot_rope_mode;
/** Rotary embedding of x [..., seq, d] (d even): position of row s is pos[s] (pos I32/I64
 *  [seq]); angle = pos * theta^(-2i/d). */
INGOT_API ingot_status ingot_op_rope(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                     const ingot_tensor *pos, double theta, ingot_rope_mode mode,
                                     ingot_error *err);

typedef struct ingot_attn_params {
    double scale;  /**< 0 means 1/sqrt(d_head) */
    bool causal;   /**< mask keys after the query's position. Bottom-right aligned: query i
                        (of q_len) sees keys j <= i + (kv_len - q_len), the KV-cache rule */
} ingot_attn_params;
/** Scaled dot-product attention: q [B, H, Lq, D], k [B, Hkv, Lk, D], v [B, Hkv, Lk, Dv],
 *  H a multiple of Hkv (grouped-query: head h reads kv head h / (H/Hkv)); dst [B, H, Lq, Dv].
 *  A query row whose keys are all masked gives zeros (softmax of an empty row is defined as 0
 *  here, unlike ingot_op_softmax of an all -inf row). Fallback: matmul + mask + softmax. */
INGOT_API ingot_status ingot_op_attention(ingot_backend *b, ingot_tensor *dst,
                                          const ingot_tensor *q, const ingot_tensor *k,
                                          const ingot_tensor *v, const ingot_attn_params *p,
                                          ingot_error *err);

/* Quantized ops. Block formats are GGML's (docs: ../shared/formats/gguf.md): Q8_0 = 32 values
 * as f16 d + 32 int8 (x = d q), Q4_0 = f16 d + 16 bytes of nibbles (x = d (q - 8); element j in
 * the low nibble of byte j, element j+16 in the high nibble); Q4_K, Q5_K, Q6_K = super-blocks of
 * 256 values with 6- or 8-bit sub-block scales, decoded as ggml's dequantize_row_q*_K (and
 * ingot_dequantize) do. Per-row int8 is an I8 tensor [rows, cols] with an F32 scale tensor
 * [rows] (x = scale[r] q, scale = max|row| / 127, q = round-half-away(x / scale)). */
/** Quantizes F32 src [rows, cols] into dst Q8_0 / Q4_0 (cols multiple of 32; GGML's reference
 *  rounding) or I8 with `scale` (F32 [rows]); scale must be NULL for the block types. */
INGOT_API ingot_status ingot_op_quantize(ingot_backend *b, ingot_tensor *dst, ingot_tensor *scale,
                                         const ingot_tensor *src, ingot_error *err);
/** Inverse of ingot_op_quantize into F32 dst; also decodes Q4_K, Q5_K and Q6_K src. */
INGOT_API ingot_status ingot_op_dequantize(ingot_backend *b, ingot_tensor *dst,
                                           const ingot_tensor *src, const ingot_tensor *scale,
                                           ingot_error *err);
/** y = x . deq(w)^T + bias with w [out, in] of Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, F16 or BF16 (scale
 *  NULL) or I8 with scale [out]; x F32 [..., in]. ref computes exactly that in f64. cpu: F16 /
 *  BF16 weights are widened exactly (f32 sums, NMSE <= 1e-7 against ref); the other types
 *  quantize x once per row to int8 (per 32 elements for Q8_0 / Q4_0, per 256 for the K-quants,
 *  per row for I8) and use exact integer dots, or for batches of 32 and more rows widen the
 *  weights to f32 a panel at a time (NMSE <= 5e-4 against ref either way). */
INGOT_API ingot_status ingot_op_qlinear(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                        const ingot_tensor *w, const ingot_tensor *scale,
                                        const ingot_tensor *bias, ingot_error *err);

/* ---------------------------------------------------------------------------------------------
 * 6. Implementing a backend
 *
 * Tables are static const with designated initializers; NULL members mean "not implemented":
 * the wrapper then applies the documented fallback or returns UNSUPPORTED. Wrappers validate
 * everything before calling a member, so members trust their arguments: dtypes belong to the
 * group, shapes match the op's rule, dst is writable and does not overlap an input except as the
 * op allows, and no tensor is empty (wrappers return OK for empty outputs without calling).
 * A member returns INGOT_OK, or UNSUPPORTED for a case it does not handle (filling err), or
 * NOMEM. Members never see NULL tensors except where "or NULL" is documented.
 * ------------------------------------------------------------------------------------------- */

/** Element ops shared in shape by the float, int and bool groups (Burn's FloatTensorOps,
 *  IntTensorOps, BoolTensorOps). The group used is chosen by the dtype of the first input. */
typedef struct ingot_tensor_ops {
    ingot_status (*unary)(ingot_backend *, ingot_unary_op, ingot_tensor *dst, const ingot_tensor *a,
                          ingot_error *);
    ingot_status (*binary)(ingot_backend *, ingot_binary_op, ingot_tensor *dst, const ingot_tensor *a,
                           const ingot_tensor *c, ingot_error *);
    ingot_status (*binary_scalar)(ingot_backend *, ingot_binary_op, ingot_tensor *dst, const ingot_tensor *a,
                                  double s, ingot_error *);
    ingot_status (*compare)(ingot_backend *, ingot_cmp_op, ingot_tensor *dst, const ingot_tensor *a,
                            const ingot_tensor *c, ingot_error *);
    ingot_status (*clamp)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *a, double lo, double hi,
                          ingot_error *);
    ingot_status (*where)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *cond, const ingot_tensor *a,
                          const ingot_tensor *c, ingot_error *);
    ingot_status (*mask_fill)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *a, const ingot_tensor *mask,
                              double v, ingot_error *);
    ingot_status (*copy)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *src, ingot_error *);
    /** dst of this group's dtype from src of any supported dtype. */
    ingot_status (*cast)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *src, ingot_error *);
    ingot_status (*fill)(ingot_backend *, ingot_tensor *dst, double v, ingot_error *);
    ingot_status (*arange)(ingot_backend *, ingot_tensor *dst, double start, double step,
                           ingot_error *);
    ingot_status (*matmul)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *a, const ingot_tensor *c,
                           ingot_error *);
    ingot_status (*reduce)(ingot_backend *, ingot_reduce_op, ingot_tensor *dst, const ingot_tensor *a,
                           uint32_t axis, ingot_error *);
    ingot_status (*cumsum)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *a, uint32_t axis,
                           ingot_error *);
    ingot_status (*topk)(ingot_backend *, ingot_tensor *values, ingot_tensor *indices, const ingot_tensor *a,
                         uint32_t k, bool largest, ingot_error *);
    ingot_status (*gather)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *src, uint32_t axis,
                           const ingot_tensor *index, ingot_error *);
    ingot_status (*scatter_add)(ingot_backend *, ingot_tensor *dst, uint32_t axis, const ingot_tensor *index,
                                const ingot_tensor *src, ingot_error *);
    ingot_status (*index_select)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *src, uint32_t axis,
                                 const ingot_tensor *index, ingot_error *);
    /* members above: ABI 1 */
    /** values or indices may be NULL (not both). */
    ingot_status (*sort)(ingot_backend *, ingot_tensor *values, ingot_tensor *indices,
                         const ingot_tensor *a, uint32_t axis, bool descending, ingot_error *);
    /* members above: ABI 2 */
} ingot_tensor_ops;
typedef ingot_tensor_ops ingot_float_ops;
typedef ingot_tensor_ops ingot_int_ops;
typedef ingot_tensor_ops ingot_bool_ops;

/** Burn's ModuleOps (members NULL: fallback or UNSUPPORTED, see each op). */
typedef struct ingot_module_ops {
    ingot_status (*linear)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *x, const ingot_tensor *w,
                           const ingot_tensor *bias, ingot_error *);
    ingot_status (*conv)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *x, const ingot_tensor *w,
                         const ingot_tensor *bias, const ingot_conv_params *, ingot_error *);
    ingot_status (*pool)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *x,
                         const ingot_pool_params *, ingot_error *);
    ingot_status (*layer_norm)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *x, const ingot_tensor *w,
                               const ingot_tensor *bias, double eps, ingot_error *);
    ingot_status (*rms_norm)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *x, const ingot_tensor *w,
                             double eps, ingot_error *);
    ingot_status (*batch_norm)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *x,
                               const ingot_tensor *mean, const ingot_tensor *var, const ingot_tensor *w,
                               const ingot_tensor *bias, double eps, ingot_error *);
    ingot_status (*rope)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *x, const ingot_tensor *pos,
                         double theta, ingot_rope_mode, ingot_error *);
    ingot_status (*attention)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *q, const ingot_tensor *k,
                              const ingot_tensor *v, const ingot_attn_params *, ingot_error *);
    /* members above: ABI 1 */
} ingot_module_ops;

/** Burn's ActivationOps. */
typedef struct ingot_activation_ops {
    ingot_status (*activation)(ingot_backend *, ingot_act_op, ingot_tensor *dst, const ingot_tensor *a,
                               double param, ingot_error *);
    ingot_status (*softmax)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *a, uint32_t axis,
                            bool log, ingot_error *);
    /* members above: ABI 1 */
} ingot_activation_ops;

/** Burn's QTensorOps. */
typedef struct ingot_quant_ops {
    ingot_status (*quantize)(ingot_backend *, ingot_tensor *dst, ingot_tensor *scale, const ingot_tensor *src,
                             ingot_error *);
    ingot_status (*dequantize)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *src,
                               const ingot_tensor *scale, ingot_error *);
    ingot_status (*linear)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *x, const ingot_tensor *w,
                           const ingot_tensor *scale, const ingot_tensor *bias, ingot_error *);
    /* members above: ABI 1 */
} ingot_quant_ops;

/** Sampling ops (ABI 2). dst or keep of top_p may be NULL (not both). multinomial draws from
 *  ingot_backend_random_u64(b). */
typedef struct ingot_sampling_ops {
    ingot_status (*top_p)(ingot_backend *, ingot_tensor *dst, ingot_tensor *keep,
                          const ingot_tensor *a, double p, bool logits, ingot_error *);
    ingot_status (*multinomial)(ingot_backend *, ingot_tensor *dst, const ingot_tensor *probs,
                                ingot_error *);
    /* members above: ABI 2 */
} ingot_sampling_ops;

/** The backend table. Append-only; abi_version tells which members exist. */
struct ingot_backend_ops {
    uint32_t abi_version; /**< INGOT_BACKEND_ABI the table was written against */
    const char *name;     /**< registry name, [a-z0-9_]{1,31} */
    /** Sets up instance state (ingot_backend_set_ctx); NULL: nothing to do. */
    ingot_status (*init)(ingot_backend *b, const ingot_backend_opts *o, ingot_error *err);
    void (*fini)(ingot_backend *b);
    void (*device_info)(const ingot_backend *b, ingot_device_info *out);
    ingot_status (*sync)(ingot_backend *b, ingot_error *err);
    /* Buffers. All NULL: host memory from the instance's allocator, zero-copy wraps, memcpy for
     * write/read. A device backend sets them all; `handle` is its device-side object. */
    ingot_status (*buffer_alloc)(ingot_backend *b, size_t n, void **handle, void **host,
                                 ingot_error *err);
    ingot_status (*buffer_wrap)(ingot_backend *b, const void *host, size_t n, void **handle,
                                void **host_out, ingot_error *err);
    void (*buffer_release)(ingot_backend *b, void *handle, void *host, size_t n);
    ingot_status (*buffer_write)(ingot_backend *b, void *handle, size_t off, const void *src,
                                 size_t n, ingot_error *err);
    ingot_status (*buffer_read)(ingot_backend *b, void *handle, size_t off, void *dst, size_t n,
                                ingot_error *err);
    const ingot_float_ops *float_ops;
    const ingot_int_ops *int_ops;
    const ingot_bool_ops *bool_ops;
    const ingot_quant_ops *quant_ops;
    const ingot_module_ops *module_ops;
    const ingot_activation_ops *activation_ops;
    /* members above: ABI 1 */
    const ingot_sampling_ops *sampling_ops;
    /* members above: ABI 2 */
};

/** Registers a backend table under ops->name (the table must outlive the process or every use:
 *  it is borrowed). DUPLICATE if the name is taken, LIMIT past 32 backends, BAD_VERSION if
 *  abi_version is 0 or newer than this library's INGOT_BACKEND_ABI, BAD_NAME. Thread-safe. */
INGOT_API ingot_status ingot_backend_register(const ingot_backend_ops *ops, ingot_error *err);
/** The table registered as `name`, or NULL. */
INGOT_API const ingot_backend_ops *ingot_backend_find(const char *name);
/** Instance state for the table's members. */
INGOT_API void *ingot_backend_ctx(const ingot_backend *b);
INGOT_API void ingot_backend_set_ctx(ingot_backend *b, void *ctx);
/** The instance's allocator (never NULL; members all NULL means libc). */
INGOT_API const ingot_allocator *ingot_backend_allocator(const ingot_backend *b);
/** Device-side object of a buffer created by the table's buffer_alloc/wrap (NULL for host). */
INGOT_API void *ingot_buffer_handle(const ingot_buffer *buf);
/** The "ref" table: a backend may point its NULL-free tables' members at ref's for ops it does
 *  not accelerate (the "cpu" backend does). */
INGOT_API const ingot_backend_ops *ingot_backend_ref_ops(void);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_BACKEND_H */
