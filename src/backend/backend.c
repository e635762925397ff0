/*
 * backend.c - the backend registry, instances, buffers and tensor views (include/ingot/backend.h
 * sections 1-4). The checked op wrappers live in ops.c, the op definitions in ref/ and cpu/.
 */
#include <pthread.h>

#include "backend_internal.h"
#include "checked.h"

/* ---- names ---- */

#define NAME_FN(fn, type, LIST)                                                                    \
    const char *fn(type op)                                                                        \
    {                                                                                              \
        switch ((int)op) {                                                                         \
            LIST(NAME_CASE_)                                                                       \
        default: return NULL;                                                                      \
        }                                                                                          \
    }
#define NAME_CASE_(n, v, s)                                                                        \
    case v: return s;
INGOT_API NAME_FN(ingot_unary_op_name, ingot_unary_op, INGOT_UNARY_LIST)
INGOT_API NAME_FN(ingot_binary_op_name, ingot_binary_op, INGOT_BINARY_LIST)
INGOT_API NAME_FN(ingot_cmp_op_name, ingot_cmp_op, INGOT_CMP_LIST)
INGOT_API NAME_FN(ingot_reduce_op_name, ingot_reduce_op, INGOT_REDUCE_LIST)
INGOT_API NAME_FN(ingot_act_op_name, ingot_act_op, INGOT_ACT_LIST)

static bool name_eq(const char *a, size_t n, const char *z)
{
    size_t zl = ing_strlen(z);
    return zl == n && memcmp(a, z, n) == 0;
}

INGOT_API ingot_status ingot_act_op_from_name(const char *name, size_t n, ingot_act_op *out)
{
    if (!name || !out) return INGOT_E_MISUSE;
#define ACT_FROM_(nm, v, s)                                                                        \
    if (name_eq(name, n, s)) {                                                                     \
        *out = (ingot_act_op)v;                                                                    \
        return INGOT_OK;                                                                           \
    }
    INGOT_ACT_LIST(ACT_FROM_)
#undef ACT_FROM_
    if (name_eq(name, n, "gelu_erf")) return *out = INGOT_ACT_GELU_ERF, INGOT_OK;
    if (name_eq(name, n, "gelu_new") || name_eq(name, n, "gelu_pytorch_tanh"))
        return *out = INGOT_ACT_GELU_TANH, INGOT_OK;
    if (name_eq(name, n, "linear") || name_eq(name, n, "none"))
        return *out = INGOT_ACT_IDENTITY, INGOT_OK;
    if (name_eq(name, n, "swish")) return *out = INGOT_ACT_SILU, INGOT_OK;
    return INGOT_E_NOT_FOUND;
}

/* ---- registry ---- */

#define MAX_BACKENDS 32
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static const ingot_backend_ops *reg_user[MAX_BACKENDS];
static uint32_t reg_nuser;

static const ingot_backend_ops *const builtin[] = {&ingot__backend_ref, &ingot__backend_cpu};
#define NBUILTIN (sizeof builtin / sizeof builtin[0])

INGOT_API uint32_t ingot_backend_count(void)
{
    pthread_mutex_lock(&reg_lock);
    uint32_t n = (uint32_t)NBUILTIN + reg_nuser;
    pthread_mutex_unlock(&reg_lock);
    return n;
}

static const ingot_backend_ops *ops_at(uint32_t i)
{
    if (i < NBUILTIN) return builtin[i];
    const ingot_backend_ops *o = NULL;
    pthread_mutex_lock(&reg_lock);
    if (i - NBUILTIN < reg_nuser) o = reg_user[i - NBUILTIN];
    pthread_mutex_unlock(&reg_lock);
    return o;
}

INGOT_API const char *ingot_backend_name_at(uint32_t i)
{
    const ingot_backend_ops *o = ops_at(i);
    return o ? o->name : NULL;
}

static const ingot_backend_ops *find_locked(const char *name)
{
    for (size_t i = 0; i < NBUILTIN; i++)
        if (!strcmp(builtin[i]->name, name)) return builtin[i];
    for (uint32_t i = 0; i < reg_nuser; i++)
        if (!strcmp(reg_user[i]->name, name)) return reg_user[i];
    return NULL;
}

INGOT_API const ingot_backend_ops *ingot_backend_find(const char *name)
{
    if (!name) return NULL;
    pthread_mutex_lock(&reg_lock);
    const ingot_backend_ops *o = find_locked(name);
    pthread_mutex_unlock(&reg_lock);
    return o;
}

INGOT_API ingot_status ingot_backend_register(const ingot_backend_ops *ops, ingot_error *err)
{
    if (!ops || !ops->name) return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                                              "backend table or its name is NULL");
    size_t n = ing_strlen(ops->name);
    bool ok = n >= 1 && n <= 31;
    for (size_t i = 0; ok && i < n; i++) {
        char c = ops->name[i];
        ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    }
    if (!ok)
        return ingot__err(err, INGOT_E_BAD_NAME, INGOT_NO_OFFSET, ops->name, n,
                          "backend name must match [a-z0-9_]{1,31}");
    if (ops->abi_version == 0 || ops->abi_version > INGOT_BACKEND_ABI)
        return ingot__err(err, INGOT_E_BAD_VERSION, INGOT_NO_OFFSET, ops->name, n,
                          "backend table ABI %u, this library knows 1..%u", ops->abi_version,
                          (unsigned)INGOT_BACKEND_ABI);
    ingot_status st = INGOT_OK;
    pthread_mutex_lock(&reg_lock);
    if (find_locked(ops->name))
        st = ingot__err(err, INGOT_E_DUPLICATE, INGOT_NO_OFFSET, ops->name, n,
                        "a backend with this name is already registered");
    else if (reg_nuser >= MAX_BACKENDS)
        st = ingot__err(err, INGOT_E_LIMIT, INGOT_NO_OFFSET, ops->name, n,
                        "at most %d backends can be registered", MAX_BACKENDS);
    else
        reg_user[reg_nuser++] = ops;
    pthread_mutex_unlock(&reg_lock);
    return st;
}

INGOT_API const ingot_backend_ops *ingot_backend_ref_ops(void) { return &ingot__backend_ref; }

/* ---- instances ---- */

INGOT_API ingot_status ingot_backend_new(const char *name, const ingot_backend_opts *opts,
                                         ingot_backend **out, ingot_error *err)
{
    if (!out) return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0, "out is NULL");
    *out = NULL;
    if (!name) name = "cpu";
    const ingot_backend_ops *ops = ingot_backend_find(name);
    if (!ops)
        return ingot__err(err, INGOT_E_NOT_FOUND, INGOT_NO_OFFSET, name, ing_strlen(name),
                          "no backend registered under this name");
    ingot_backend_opts o = {0};
    if (opts) o = *opts;
    ingot_allocator al = {0};
    if (o.allocator) al = *o.allocator;
    if (o.track_grad)
        return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, name, ing_strlen(name),
                          "backend does not track gradients (wrap it in an autodiff decorator)");
    ingot_backend *b = ingot__calloc(&al, sizeof *b);
    if (!b) return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, name, ing_strlen(name),
                              "backend instance");
    b->ops = ops;
    b->alloc = al;
    b->opts = o;
    b->opts.allocator = &b->alloc;
    b->rng = o.seed;
    if (ops->init) {
        ingot_status st = ops->init(b, &b->opts, err);
        if (st != INGOT_OK) {
            ingot__free(&al, b, sizeof *b);
            return st;
        }
    }
    *out = b;
    return INGOT_OK;
}

INGOT_API void ingot_backend_free(ingot_backend *b)
{
    if (!b) return;
    if (b->ops->fini) b->ops->fini(b);
    ingot_allocator al = b->alloc;
    ingot__free(&al, b, sizeof *b);
}

INGOT_API const char *ingot_backend_name(const ingot_backend *b) { return b ? b->ops->name : NULL; }

INGOT_API void ingot_backend_device_info(const ingot_backend *b, ingot_device_info *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!b) return;
    out->backend = b->ops->name;
    out->description = b->ops->name;
    out->kind = INGOT_DEVICE_CPU;
    out->host_buffers = true;
    out->zero_copy_wrap = true;
    out->threads = 1;
    if (b->ops->device_info) b->ops->device_info(b, out);
}

INGOT_API void ingot_backend_seed(ingot_backend *b, uint64_t seed)
{
    if (b) b->rng = seed;
}

INGOT_API uint64_t ingot_backend_random_u64(ingot_backend *b)
{
    /* splitmix64 */
    uint64_t z = (b->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

INGOT_API ingot_status ingot_backend_sync(ingot_backend *b, ingot_error *err)
{
    if (!b) return INGOT_E_MISUSE;
    return b->ops->sync ? b->ops->sync(b, err) : INGOT_OK;
}

INGOT_API bool ingot_backend_tracks_grad(const ingot_backend *b)
{
    return b && b->opts.track_grad;
}

INGOT_API uint32_t ingot_backend_threads(const ingot_backend *b)
{
    ingot_device_info di;
    ingot_backend_device_info(b, &di);
    return di.threads ? di.threads : 1;
}

INGOT_API void *ingot_backend_ctx(const ingot_backend *b) { return b ? b->ctx : NULL; }
INGOT_API void ingot_backend_set_ctx(ingot_backend *b, void *ctx)
{
    if (b) b->ctx = ctx;
}
INGOT_API const ingot_allocator *ingot_backend_allocator(const ingot_backend *b)
{
    return b ? &b->alloc : NULL;
}

/* ---- buffers ---- */

#define BUF_ALIGN 64

INGOT_API ingot_status ingot_buffer_alloc(ingot_backend *b, size_t n, ingot_buffer **out,
                                          ingot_error *err)
{
    if (!out || !b) return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                                      "buffer_alloc: backend or out is NULL");
    *out = NULL;
    ingot_buffer *buf = ingot__calloc(&b->alloc, sizeof *buf);
    if (!buf) return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0, "buffer header");
    buf->owner = b;
    buf->size = n;
    buf->writable = true;
    if (b->ops->buffer_alloc) {
        ingot_status st = b->ops->buffer_alloc(b, n, &buf->handle, &buf->host, err);
        if (st != INGOT_OK) {
            ingot__free(&b->alloc, buf, sizeof *buf);
            return st;
        }
        buf->device = true;
    } else {
        uint64_t raw;
        if (!ing_add(n, BUF_ALIGN, &raw) || raw > SIZE_MAX) {
            ingot__free(&b->alloc, buf, sizeof *buf);
            return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0,
                              "buffer of %zu bytes", n);
        }
        buf->raw = ingot__calloc(&b->alloc, (size_t)raw);
        if (!buf->raw) {
            ingot__free(&b->alloc, buf, sizeof *buf);
            return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0,
                              "buffer of %zu bytes", n);
        }
        buf->raw_size = (size_t)raw;
        uintptr_t p = ((uintptr_t)buf->raw + BUF_ALIGN - 1) & ~(uintptr_t)(BUF_ALIGN - 1);
        buf->host = (void *)p;
    }
    b->nbuffers++;
    *out = buf;
    return INGOT_OK;
}

INGOT_API ingot_status ingot_buffer_wrap(ingot_backend *b, const void *host, size_t n,
                                         bool writable, ingot_buffer **out, ingot_error *err)
{
    if (!out || !b || (!host && n))
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "buffer_wrap: backend, host or out is NULL");
    *out = NULL;
    ingot_buffer *buf = ingot__calloc(&b->alloc, sizeof *buf);
    if (!buf) return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0, "buffer header");
    buf->owner = b;
    buf->size = n;
    buf->writable = writable;
    if (b->ops->buffer_wrap) {
        ingot_status st = b->ops->buffer_wrap(b, host, n, &buf->handle, &buf->host, err);
        if (st != INGOT_OK) {
            ingot__free(&b->alloc, buf, sizeof *buf);
            return st;
        }
        buf->device = true;
    } else {
        buf->host = (void *)(uintptr_t)host;
    }
    b->nbuffers++;
    *out = buf;
    return INGOT_OK;
}

void ingot__buffer_rebind(ingot_buffer *buf, void *host, size_t n, bool writable)
{
    buf->host = host;
    buf->size = n;
    buf->writable = writable;
}

INGOT_API void ingot_buffer_free(ingot_buffer *buf)
{
    if (!buf) return;
    ingot_backend *b = buf->owner;
    if (buf->device && b->ops->buffer_release)
        b->ops->buffer_release(b, buf->handle, buf->host, buf->size);
    if (buf->raw) ingot__free(&b->alloc, buf->raw, buf->raw_size);
    b->nbuffers--;
    ingot__free(&b->alloc, buf, sizeof *buf);
}

INGOT_API size_t ingot_buffer_size(const ingot_buffer *buf) { return buf ? buf->size : 0; }
INGOT_API void *ingot_buffer_host(const ingot_buffer *buf) { return buf ? buf->host : NULL; }
INGOT_API bool ingot_buffer_writable(const ingot_buffer *buf) { return buf && buf->writable; }
INGOT_API ingot_backend *ingot_buffer_backend(const ingot_buffer *buf)
{
    return buf ? buf->owner : NULL;
}
INGOT_API void *ingot_buffer_handle(const ingot_buffer *buf) { return buf ? buf->handle : NULL; }

INGOT_API ingot_status ingot_buffer_write(ingot_buffer *buf, size_t offset, const void *src,
                                          size_t n, ingot_error *err)
{
    if (!buf || (!src && n))
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0, "buffer_write: NULL");
    if (!buf->writable)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "buffer_write: buffer is read-only");
    if (!ing_in_bounds(offset, n, buf->size))
        return ingot__err(err, INGOT_E_RANGE, offset, NULL, 0,
                          "buffer_write: %zu bytes at %zu past the buffer's %zu", n, offset,
                          buf->size);
    if (n == 0) return INGOT_OK;
    if (buf->device && buf->owner->ops->buffer_write)
        return buf->owner->ops->buffer_write(buf->owner, buf->handle, offset, src, n, err);
    memcpy((uint8_t *)buf->host + offset, src, n);
    return INGOT_OK;
}

INGOT_API ingot_status ingot_buffer_read(const ingot_buffer *buf, size_t offset, void *dst,
                                         size_t n, ingot_error *err)
{
    if (!buf || (!dst && n))
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0, "buffer_read: NULL");
    if (!ing_in_bounds(offset, n, buf->size))
        return ingot__err(err, INGOT_E_RANGE, offset, NULL, 0,
                          "buffer_read: %zu bytes at %zu past the buffer's %zu", n, offset,
                          buf->size);
    if (n == 0) return INGOT_OK;
    if (buf->device && buf->owner->ops->buffer_read)
        return buf->owner->ops->buffer_read(buf->owner, buf->handle, offset, dst, n, err);
    memcpy(dst, (const uint8_t *)buf->host + offset, n);
    return INGOT_OK;
}

/* ---- tensors ---- */

static bool elem_dtype_ok(ingot_dtype dt)
{
    int k = ing_kind(dt);
    return k == ING_K_FLOAT || k == ING_K_INT || k == ING_K_BOOL || k == ING_K_QUANT;
}

INGOT_API ingot_status ingot_tensor_init_strided(ingot_tensor *t, ingot_buffer *buf,
                                                 uint64_t offset, ingot_dtype dtype, uint32_t rank,
                                                 const int64_t *shape, const int64_t *strides,
                                                 ingot_error *err)
{
    if (!t || (rank && !shape))
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0, "tensor_init: NULL");
    memset(t, 0, sizeof *t);
    if (!elem_dtype_ok(dtype))
        return ingot__err(err, INGOT_E_BAD_TYPE, INGOT_NO_OFFSET, NULL, 0,
                          "tensor_init: dtype %s is not a backend dtype",
                          ingot_dtype_name(dtype) ? ingot_dtype_name(dtype) : "?");
    if (rank > INGOT_MAX_RANK)
        return ingot__err(err, INGOT_E_BAD_NDIMS, INGOT_NO_OFFSET, NULL, 0,
                          "tensor_init: rank %u > %d", rank, INGOT_MAX_RANK);
    bool quant = ing_kind(dtype) == ING_K_QUANT;
    uint64_t n = 1;
    bool empty = false;
    for (uint32_t i = 0; i < rank; i++) {
        if (shape[i] < 0)
            return ingot__err(err, INGOT_E_BAD_SHAPE, INGOT_NO_OFFSET, NULL, 0,
                              "tensor_init: negative dimension %u", i);
        if (shape[i] == 0) empty = true;
        if (!ing_mul(n, (uint64_t)shape[i], &n) || n > (uint64_t)INT64_MAX)
            return ingot__err(err, INGOT_E_BAD_SHAPE, INGOT_NO_OFFSET, NULL, 0,
                              "tensor_init: element count overflows");
    }
    if (quant) {
        if (rank == 0 || shape[rank - 1] % ingot_dtype_block_elems(dtype))
            return ingot__err(err, INGOT_E_BAD_SHAPE, INGOT_NO_OFFSET, NULL, 0,
                              "tensor_init: %s innermost dimension must be a multiple of %u",
                              ingot_dtype_name(dtype), ingot_dtype_block_elems(dtype));
    }
    t->buf = buf;
    t->offset = offset;
    t->dtype = dtype;
    t->rank = rank;
    for (uint32_t i = 0; i < rank; i++) t->shape[i] = shape[i];
    if (quant || !strides) {
        int64_t s = 1;
        for (uint32_t i = rank; i-- > 0;) {
            t->strides[i] = s;
            s *= shape[i] ? shape[i] : 1;
        }
    } else {
        for (uint32_t i = 0; i < rank; i++) t->strides[i] = strides[i];
    }
    if (empty) return INGOT_OK;
    if (!buf)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "tensor_init: a non-empty tensor needs a buffer");
    /* Byte extent of every reachable element. */
    uint64_t lo = offset, hi;
    if (quant) {
        uint64_t bytes;
        if (!ing_mul(n / ingot_dtype_block_elems(dtype), ingot_dtype_block_bytes(dtype), &bytes))
            bytes = UINT64_MAX;
        if (!ing_add(offset, bytes, &hi)) hi = UINT64_MAX;
    } else {
        int64_t es = (int64_t)ing_esize(dtype), neg = 0, pos = 0;
        for (uint32_t i = 0; i < rank; i++) {
            int64_t ext;
            if (__builtin_mul_overflow(shape[i] - 1, t->strides[i], &ext) ||
                ext > INT64_MAX / 16 || ext < -(INT64_MAX / 16) ||
                __builtin_add_overflow(ext < 0 ? neg : pos, ext, ext < 0 ? &neg : &pos) ||
                pos > INT64_MAX / 16 || neg < -(INT64_MAX / 16))
                return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, NULL, 0,
                                  "tensor_init: strides reach outside the buffer");
        }
        if ((uint64_t)(-neg) * (uint64_t)es > offset)
            return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, NULL, 0,
                              "tensor_init: negative strides reach before the buffer");
        lo = offset - (uint64_t)(-neg) * (uint64_t)es;
        hi = offset + ((uint64_t)pos + 1) * (uint64_t)es;
    }
    (void)lo;
    if (hi > buf->size || hi < offset)
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, NULL, 0,
                          "tensor_init: tensor ends at byte %llu, buffer has %zu",
                          (unsigned long long)hi, buf->size);
    return INGOT_OK;
}

INGOT_API ingot_status ingot_tensor_init(ingot_tensor *t, ingot_buffer *buf, uint64_t offset,
                                         ingot_dtype dtype, uint32_t rank, const int64_t *shape,
                                         ingot_error *err)
{
    return ingot_tensor_init_strided(t, buf, offset, dtype, rank, shape, NULL, err);
}

INGOT_API uint64_t ingot_tensor_nelem(const ingot_tensor *t)
{
    return t ? (uint64_t)ing_nelem(t) : 0;
}

INGOT_API bool ingot_tensor_is_contiguous(const ingot_tensor *t)
{
    if (ing_nelem(t) <= 1) return true;
    int64_t s = 1;
    for (uint32_t i = t->rank; i-- > 0;) {
        if (t->shape[i] != 1 && t->strides[i] != s) return false;
        s *= t->shape[i];
    }
    return true;
}

INGOT_API void *ingot_tensor_host(const ingot_tensor *t)
{
    if (!t || ing_nelem(t) == 0) return NULL;
    return ing_ptr(t);
}

INGOT_API ingot_status ingot_tensor_from_file(ingot_backend *b, const ingot_file *f,
                                              const char *name, ingot_tensor *t,
                                              ingot_buffer **buf_out, ingot_error *err)
{
    if (!b || !f || !name || !t || !buf_out)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0, "tensor_from_file: NULL");
    *buf_out = NULL;
    memset(t, 0, sizeof *t);
    ingot_tensor_info ti;
    size_t nl = ing_strlen(name);
    if (ingot_file_tensor_find(f, name, &ti) != INGOT_OK)
        return ingot__err(err, INGOT_E_NOT_FOUND, INGOT_NO_OFFSET, name, nl, "no such tensor");
    if (!elem_dtype_ok(ti.dtype))
        return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, name, nl,
                          "dtype %s has no backend ops", ingot_dtype_name(ti.dtype));
    if (ti.nbytes > SIZE_MAX)
        return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, name, nl, "tensor too large");
    int64_t shape[INGOT_MAX_RANK];
    for (uint32_t i = 0; i < ti.rank; i++) shape[i] = (int64_t)ti.shape[i];
    size_t es = ing_esize(ti.dtype);
    bool quant = ing_kind(ti.dtype) == ING_K_QUANT;
    uint32_t copy_flags = INGOT_TENSOR_BIG_ENDIAN | INGOT_TENSOR_NOT_MAPPED |
                          INGOT_TENSOR_UNALIGNED | INGOT_TENSOR_STRIDED;
    if (quant) copy_flags |= INGOT_TENSOR_FORTRAN;
    bool aligned = quant || !ti.data || ((uintptr_t)ti.data % es) == 0;
    ingot_status st;
    if (!(ti.flags & copy_flags) && aligned && (ti.data || ti.nbytes == 0)) {
        ING_TRY(ingot_buffer_wrap(b, ti.data ? ti.data : (const void *)"", (size_t)ti.nbytes,
                                  false, buf_out, err));
        int64_t strides[INGOT_MAX_RANK];
        const int64_t *sp = NULL;
        if (ti.flags & INGOT_TENSOR_FORTRAN) {
            int64_t s = 1;
            for (uint32_t i = 0; i < ti.rank; i++) {
                strides[i] = s;
                s *= shape[i] ? shape[i] : 1;
            }
            sp = strides;
        }
        st = ingot_tensor_init_strided(t, *buf_out, 0, ti.dtype, ti.rank, shape, sp, err);
    } else {
        ING_TRY(ingot_buffer_alloc(b, (size_t)ti.nbytes, buf_out, err));
        st = (*buf_out)->host ? ingot_file_tensor_copy(f, ti.index, (*buf_out)->host,
                                                       (size_t)ti.nbytes, err)
                              : ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, name, nl,
                                           "device copy of a non-mapped tensor");
        if (st == INGOT_OK)
            st = ingot_tensor_init(t, *buf_out, 0, ti.dtype, ti.rank, shape, err);
    }
    if (st != INGOT_OK) {
        ingot_buffer_free(*buf_out);
        *buf_out = NULL;
        memset(t, 0, sizeof *t);
    }
    return st;
}

/* ---- views ---- */

static ingot_status view_check(const ingot_tensor *in, ingot_tensor *out, const char *op,
                               ingot_error *err)
{
    if (!in || !out)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, op, ing_strlen(op), "NULL tensor");
    if (ing_kind(in->dtype) == ING_K_QUANT)
        return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, op, ing_strlen(op),
                          "views of block-quantized tensors (dequantize first)");
    return INGOT_OK;
}

INGOT_API ingot_status ingot_tensor_permute(ingot_tensor *out, const ingot_tensor *in,
                                            const uint32_t *perm, ingot_error *err)
{
    ING_TRY(view_check(in, out, "permute", err));
    ingot_tensor r = *in;
    bool seen[INGOT_MAX_RANK] = {0};
    for (uint32_t i = 0; i < in->rank; i++) {
        if (perm[i] >= in->rank || seen[perm[i]])
            return ingot__err(err, INGOT_E_BAD_SHAPE, INGOT_NO_OFFSET, "permute", 7,
                              "axis list is not a permutation of 0..%u", in->rank - 1);
        seen[perm[i]] = true;
        r.shape[i] = in->shape[perm[i]];
        r.strides[i] = in->strides[perm[i]];
    }
    *out = r;
    return INGOT_OK;
}

INGOT_API ingot_status ingot_tensor_transpose(ingot_tensor *out, const ingot_tensor *in,
                                              ingot_error *err)
{
    ING_TRY(view_check(in, out, "transpose", err));
    if (in->rank < 2)
        return ingot__err(err, INGOT_E_BAD_NDIMS, INGOT_NO_OFFSET, "transpose", 9,
                          "needs rank >= 2, got %u", in->rank);
    uint32_t perm[INGOT_MAX_RANK];
    for (uint32_t i = 0; i < in->rank; i++) perm[i] = i;
    perm[in->rank - 2] = in->rank - 1;
    perm[in->rank - 1] = in->rank - 2;
    return ingot_tensor_permute(out, in, perm, err);
}

INGOT_API ingot_status ingot_tensor_slice(ingot_tensor *out, const ingot_tensor *in,
                                          uint32_t axis, int64_t start, int64_t end, int64_t step,
                                          ingot_error *err)
{
    ING_TRY(view_check(in, out, "slice", err));
    if (axis >= in->rank)
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "slice", 5,
                          "axis %u out of range for rank %u", axis, in->rank);
    int64_t n = in->shape[axis];
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (step < 1 || start < 0 || end > n || start > end)
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "slice", 5,
                          "range [%lld:%lld:%lld] invalid for a dimension of %lld",
                          (long long)start, (long long)end, (long long)step, (long long)n);
    ingot_tensor r = *in;
    r.shape[axis] = (end - start + step - 1) / step;
    if (r.shape[axis] > 0)
        r.offset = in->offset + (uint64_t)(start * in->strides[axis] *
                                           (int64_t)ing_esize(in->dtype));
    r.strides[axis] = in->strides[axis] * step;
    *out = r;
    return INGOT_OK;
}

INGOT_API ingot_status ingot_tensor_reshape(ingot_tensor *out, const ingot_tensor *in,
                                            uint32_t rank, const int64_t *shape, ingot_error *err)
{
    if (!in || !out || (rank && !shape))
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, "reshape", 7, "NULL argument");
    if (rank > INGOT_MAX_RANK)
        return ingot__err(err, INGOT_E_BAD_NDIMS, INGOT_NO_OFFSET, "reshape", 7, "rank %u", rank);
    int64_t n = ing_nelem(in), known = 1;
    int free_axis = -1;
    for (uint32_t i = 0; i < rank; i++) {
        if (shape[i] == -1 && free_axis < 0) {
            free_axis = (int)i;
        } else if (shape[i] < 0) {
            return ingot__err(err, INGOT_E_BAD_SHAPE, INGOT_NO_OFFSET, "reshape", 7,
                              "invalid dimension %lld", (long long)shape[i]);
        } else {
            if (__builtin_mul_overflow(known, shape[i], &known))
                return ingot__err(err, INGOT_E_BAD_SHAPE, INGOT_NO_OFFSET, "reshape", 7,
                                  "element count overflows");
        }
    }
    int64_t fill = 0;
    if (free_axis >= 0) {
        if (known == 0 || n % known)
            return ingot__err(err, INGOT_E_BAD_SHAPE, INGOT_NO_OFFSET, "reshape", 7,
                              "cannot infer -1 for %lld elements", (long long)n);
        fill = n / known;
        known *= fill;
    }
    if (known != n)
        return ingot__err(err, INGOT_E_BAD_SHAPE, INGOT_NO_OFFSET, "reshape", 7,
                          "%lld elements cannot take a shape of %lld", (long long)n,
                          (long long)known);
    if (!ingot_tensor_is_contiguous(in))
        return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, "reshape", 7,
                          "input view is not contiguous: ingot_op_copy it first");
    ingot_tensor r = *in;
    r.rank = rank;
    int64_t s = 1;
    for (uint32_t i = rank; i-- > 0;) {
        r.shape[i] = (int)i == free_axis ? fill : shape[i];
        r.strides[i] = s;
        s *= r.shape[i] ? r.shape[i] : 1;
    }
    for (uint32_t i = rank; i < INGOT_MAX_RANK; i++) r.shape[i] = r.strides[i] = 0;
    *out = r;
    return INGOT_OK;
}

INGOT_API ingot_status ingot_tensor_broadcast_to(ingot_tensor *out, const ingot_tensor *in,
                                                 uint32_t rank, const int64_t *shape,
                                                 ingot_error *err)
{
    ING_TRY(view_check(in, out, "broadcast_to", err));
    if (rank > INGOT_MAX_RANK || rank < in->rank)
        return ingot__err(err, INGOT_E_BAD_NDIMS, INGOT_NO_OFFSET, "broadcast_to", 12,
                          "rank %u cannot hold rank %u", rank, in->rank);
    ingot_tensor r = *in;
    r.rank = rank;
    for (uint32_t i = 0; i < rank; i++) {
        int64_t src = i >= rank - in->rank ? in->shape[i - (rank - in->rank)] : 1;
        int64_t st = i >= rank - in->rank ? in->strides[i - (rank - in->rank)] : 0;
        if (src != shape[i] && src != 1)
            return ingot__err(err, INGOT_E_BAD_SHAPE, INGOT_NO_OFFSET, "broadcast_to", 12,
                              "dimension %u: %lld does not broadcast to %lld", i, (long long)src,
                              (long long)shape[i]);
        r.shape[i] = shape[i];
        r.strides[i] = src == shape[i] ? st : 0;
    }
    for (uint32_t i = rank; i < INGOT_MAX_RANK; i++) r.shape[i] = r.strides[i] = 0;
    *out = r;
    return INGOT_OK;
}

INGOT_API ingot_status ingot_tensor_flip(ingot_tensor *out, const ingot_tensor *in, uint32_t axis,
                                         ingot_error *err)
{
    ING_TRY(view_check(in, out, "flip", err));
    if (axis >= in->rank)
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "flip", 4,
                          "axis %u out of range for rank %u", axis, in->rank);
    ingot_tensor r = *in;
    if (in->shape[axis] > 1)
        r.offset = in->offset + (uint64_t)((in->shape[axis] - 1) * in->strides[axis] *
                                           (int64_t)ing_esize(in->dtype));
    r.strides[axis] = -in->strides[axis];
    *out = r;
    return INGOT_OK;
}
