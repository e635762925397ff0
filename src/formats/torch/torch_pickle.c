/*
 * torch_pickle.c - the restricted pickle machine (../shared/formats/pytorch.md §3): Tier A and B
 * opcodes, the allow-listed globals of §3.4, persistent ids and the storage table of §3.5 and the
 * tensor rebuild checks of §3.6. Nothing here calls, imports or executes anything named by the
 * pickle: a GLOBAL only becomes an enum value, REDUCE only builds values the table describes.
 * Flattening into names and metadata lives in torch_flatten.c.
 */
#include <stdarg.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "torch_pickle.h"
#include "utf8.h"

/* ---------------------------------------------------------------------------------------------
 * Opcodes
 * ------------------------------------------------------------------------------------------- */

enum {
    OP_MARK = 0x28, OP_STOP = 0x2E, OP_POP = 0x30, OP_POP_MARK = 0x31, OP_DUP = 0x32,
    OP_FLOAT = 0x46, OP_INT = 0x49, OP_BININT = 0x4A, OP_BININT1 = 0x4B, OP_LONG = 0x4C,
    OP_BININT2 = 0x4D, OP_NONE = 0x4E, OP_PERSID = 0x50, OP_BINPERSID = 0x51, OP_REDUCE = 0x52,
    OP_STRING = 0x53, OP_BINSTRING = 0x54, OP_SHORT_BINSTRING = 0x55, OP_UNICODE = 0x56,
    OP_BINUNICODE = 0x58, OP_APPEND = 0x61, OP_BUILD = 0x62, OP_GLOBAL = 0x63, OP_DICT = 0x64,
    OP_EMPTY_DICT = 0x7D, OP_APPENDS = 0x65, OP_GET = 0x67, OP_BINGET = 0x68, OP_INST = 0x69,
    OP_LONG_BINGET = 0x6A, OP_LIST = 0x6C, OP_EMPTY_LIST = 0x5D, OP_OBJ = 0x6F, OP_PUT = 0x70,
    OP_BINPUT = 0x71, OP_LONG_BINPUT = 0x72, OP_SETITEM = 0x73, OP_TUPLE = 0x74,
    OP_EMPTY_TUPLE = 0x29, OP_SETITEMS = 0x75, OP_BINFLOAT = 0x47, OP_PROTO = 0x80,
    OP_NEWOBJ = 0x81, OP_EXT1 = 0x82, OP_EXT2 = 0x83, OP_EXT4 = 0x84, OP_TUPLE1 = 0x85,
    OP_TUPLE2 = 0x86, OP_TUPLE3 = 0x87, OP_NEWTRUE = 0x88, OP_NEWFALSE = 0x89, OP_LONG1 = 0x8A,
    OP_LONG4 = 0x8B, OP_BINBYTES = 0x42, OP_SHORT_BINBYTES = 0x43, OP_SHORT_BINUNICODE = 0x8C,
    OP_BINUNICODE8 = 0x8D, OP_BINBYTES8 = 0x8E, OP_EMPTY_SET = 0x8F, OP_ADDITEMS = 0x90,
    OP_FROZENSET = 0x91, OP_NEWOBJ_EX = 0x92, OP_STACK_GLOBAL = 0x93, OP_MEMOIZE = 0x94,
    OP_FRAME = 0x95, OP_BYTEARRAY8 = 0x96, OP_NEXT_BUFFER = 0x97, OP_READONLY_BUFFER = 0x98,
};

const char *ingot__tp_opcode_name(uint8_t op)
{
    switch (op) {
    case OP_MARK: return "MARK";
    case OP_STOP: return "STOP";
    case OP_POP: return "POP";
    case OP_POP_MARK: return "POP_MARK";
    case OP_DUP: return "DUP";
    case OP_FLOAT: return "FLOAT";
    case OP_INT: return "INT";
    case OP_BININT: return "BININT";
    case OP_BININT1: return "BININT1";
    case OP_LONG: return "LONG";
    case OP_BININT2: return "BININT2";
    case OP_NONE: return "NONE";
    case OP_PERSID: return "PERSID";
    case OP_BINPERSID: return "BINPERSID";
    case OP_REDUCE: return "REDUCE";
    case OP_STRING: return "STRING";
    case OP_BINSTRING: return "BINSTRING";
    case OP_SHORT_BINSTRING: return "SHORT_BINSTRING";
    case OP_UNICODE: return "UNICODE";
    case OP_BINUNICODE: return "BINUNICODE";
    case OP_APPEND: return "APPEND";
    case OP_BUILD: return "BUILD";
    case OP_GLOBAL: return "GLOBAL";
    case OP_DICT: return "DICT";
    case OP_EMPTY_DICT: return "EMPTY_DICT";
    case OP_APPENDS: return "APPENDS";
    case OP_GET: return "GET";
    case OP_BINGET: return "BINGET";
    case OP_INST: return "INST";
    case OP_LONG_BINGET: return "LONG_BINGET";
    case OP_LIST: return "LIST";
    case OP_EMPTY_LIST: return "EMPTY_LIST";
    case OP_OBJ: return "OBJ";
    case OP_PUT: return "PUT";
    case OP_BINPUT: return "BINPUT";
    case OP_LONG_BINPUT: return "LONG_BINPUT";
    case OP_SETITEM: return "SETITEM";
    case OP_TUPLE: return "TUPLE";
    case OP_EMPTY_TUPLE: return "EMPTY_TUPLE";
    case OP_SETITEMS: return "SETITEMS";
    case OP_BINFLOAT: return "BINFLOAT";
    case OP_PROTO: return "PROTO";
    case OP_NEWOBJ: return "NEWOBJ";
    case OP_EXT1: return "EXT1";
    case OP_EXT2: return "EXT2";
    case OP_EXT4: return "EXT4";
    case OP_TUPLE1: return "TUPLE1";
    case OP_TUPLE2: return "TUPLE2";
    case OP_TUPLE3: return "TUPLE3";
    case OP_NEWTRUE: return "NEWTRUE";
    case OP_NEWFALSE: return "NEWFALSE";
    case OP_LONG1: return "LONG1";
    case OP_LONG4: return "LONG4";
    case OP_BINBYTES: return "BINBYTES";
    case OP_SHORT_BINBYTES: return "SHORT_BINBYTES";
    case OP_SHORT_BINUNICODE: return "SHORT_BINUNICODE";
    case OP_BINUNICODE8: return "BINUNICODE8";
    case OP_BINBYTES8: return "BINBYTES8";
    case OP_EMPTY_SET: return "EMPTY_SET";
    case OP_ADDITEMS: return "ADDITEMS";
    case OP_FROZENSET: return "FROZENSET";
    case OP_NEWOBJ_EX: return "NEWOBJ_EX";
    case OP_STACK_GLOBAL: return "STACK_GLOBAL";
    case OP_MEMOIZE: return "MEMOIZE";
    case OP_FRAME: return "FRAME";
    case OP_BYTEARRAY8: return "BYTEARRAY8";
    case OP_NEXT_BUFFER: return "NEXT_BUFFER";
    case OP_READONLY_BUFFER: return "READONLY_BUFFER";
    default: return NULL;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Globals (spec §3.4) and type tables (§3.5)
 * ------------------------------------------------------------------------------------------- */

enum {
    TG_ORDEREDDICT = 1, TG_REBUILD_V2, TG_REBUILD_V3, TG_REBUILD, TG_PARAM, TG_PARAM_STATE,
    TG_FROM_TYPE_V2, TG_CLS_TENSOR, TG_CLS_PARAM, TG_STORAGE, TG_SIZE, TG_DEVICE, TG_ENCODE,
    TG_SET, TG_FROZENSET, TG_DTYPE,
};

typedef struct {
    const char *module, *name;
    uint8_t id;
    uint8_t arg; /* storage type or dtype index */
} global_def;

/* torch dtypes a pickle can name (`torch float16`), with ingot's dtype where one exists. */
typedef struct {
    const char *name;
    uint16_t dtype;
    uint8_t esize;
} dtype_def;

static const dtype_def dtypes[] = {
    {"float64", INGOT_DTYPE_F64, 8},          {"float32", INGOT_DTYPE_F32, 4},
    {"float16", INGOT_DTYPE_F16, 2},          {"bfloat16", INGOT_DTYPE_BF16, 2},
    {"int64", INGOT_DTYPE_I64, 8},            {"int32", INGOT_DTYPE_I32, 4},
    {"int16", INGOT_DTYPE_I16, 2},            {"int8", INGOT_DTYPE_I8, 1},
    {"uint8", INGOT_DTYPE_U8, 1},             {"bool", INGOT_DTYPE_BOOL, 1},
    {"complex64", INGOT_DTYPE_C64, 8},        {"complex128", INGOT_DTYPE_C128, 16},
    {"complex32", 0, 4},                      {"uint16", INGOT_DTYPE_U16, 2},
    {"uint32", INGOT_DTYPE_U32, 4},           {"uint64", INGOT_DTYPE_U64, 8},
    {"float8_e5m2", INGOT_DTYPE_F8_E5M2, 1},  {"float8_e4m3fn", INGOT_DTYPE_F8_E4M3, 1},
    {"float8_e5m2fnuz", INGOT_DTYPE_F8_E5M2FNUZ, 1}, {"float8_e4m3fnuz", INGOT_DTYPE_F8_E4M3FNUZ, 1},
    {"float8_e8m0fnu", INGOT_DTYPE_F8_E8M0, 1}, {"float4_e2m1fn_x2", 0, 1},
    {"bits8", 0, 1},                          {"bits16", 0, 2},
    {"bits1x8", 0, 1},                        {"bits2x4", 0, 1},
    {"bits4x2", 0, 1},
};
#define N_DTYPES (sizeof dtypes / sizeof dtypes[0])

const char *ingot__tp_dtype_torch_name(uint16_t id)
{
    return id < N_DTYPES ? dtypes[id].name : "?";
}

typedef struct {
    const char *name;
    uint16_t dtype;
    uint8_t esize;
    const char *torch_name;
} stype_def;

/* Indexed by tp_stype. */
static const stype_def stypes[] = {
    [TPS_DOUBLE] = {"DoubleStorage", INGOT_DTYPE_F64, 8, "float64"},
    [TPS_FLOAT] = {"FloatStorage", INGOT_DTYPE_F32, 4, "float32"},
    [TPS_HALF] = {"HalfStorage", INGOT_DTYPE_F16, 2, "float16"},
    [TPS_BFLOAT16] = {"BFloat16Storage", INGOT_DTYPE_BF16, 2, "bfloat16"},
    [TPS_LONG] = {"LongStorage", INGOT_DTYPE_I64, 8, "int64"},
    [TPS_INT] = {"IntStorage", INGOT_DTYPE_I32, 4, "int32"},
    [TPS_SHORT] = {"ShortStorage", INGOT_DTYPE_I16, 2, "int16"},
    [TPS_CHAR] = {"CharStorage", INGOT_DTYPE_I8, 1, "int8"},
    [TPS_BYTE] = {"ByteStorage", INGOT_DTYPE_U8, 1, "uint8"},
    [TPS_BOOL] = {"BoolStorage", INGOT_DTYPE_BOOL, 1, "bool"},
    [TPS_CFLOAT] = {"ComplexFloatStorage", INGOT_DTYPE_C64, 8, "complex64"},
    [TPS_CDOUBLE] = {"ComplexDoubleStorage", INGOT_DTYPE_C128, 16, "complex128"},
    [TPS_UNTYPED] = {"UntypedStorage", 0, 1, "uint8"},
};

static const global_def allowed[] = {
    {"collections", "OrderedDict", TG_ORDEREDDICT, 0},
    {"torch._utils", "_rebuild_tensor_v2", TG_REBUILD_V2, 0},
    {"torch._utils", "_rebuild_tensor_v3", TG_REBUILD_V3, 0},
    {"torch._utils", "_rebuild_tensor", TG_REBUILD, 0},
    {"torch._utils", "_rebuild_parameter", TG_PARAM, 0},
    {"torch._utils", "_rebuild_parameter_with_state", TG_PARAM_STATE, 0},
    {"torch._tensor", "_rebuild_from_type_v2", TG_FROM_TYPE_V2, 0},
    {"torch", "Tensor", TG_CLS_TENSOR, 0},
    {"torch.nn.parameter", "Parameter", TG_CLS_PARAM, 0},
    {"torch", "DoubleStorage", TG_STORAGE, TPS_DOUBLE},
    {"torch", "FloatStorage", TG_STORAGE, TPS_FLOAT},
    {"torch", "HalfStorage", TG_STORAGE, TPS_HALF},
    {"torch", "BFloat16Storage", TG_STORAGE, TPS_BFLOAT16},
    {"torch", "LongStorage", TG_STORAGE, TPS_LONG},
    {"torch", "IntStorage", TG_STORAGE, TPS_INT},
    {"torch", "ShortStorage", TG_STORAGE, TPS_SHORT},
    {"torch", "CharStorage", TG_STORAGE, TPS_CHAR},
    {"torch", "ByteStorage", TG_STORAGE, TPS_BYTE},
    {"torch", "BoolStorage", TG_STORAGE, TPS_BOOL},
    {"torch", "ComplexFloatStorage", TG_STORAGE, TPS_CFLOAT},
    {"torch", "ComplexDoubleStorage", TG_STORAGE, TPS_CDOUBLE},
    {"torch.storage", "UntypedStorage", TG_STORAGE, TPS_UNTYPED},
    {"torch", "UntypedStorage", TG_STORAGE, TPS_UNTYPED},
    {"torch", "Size", TG_SIZE, 0},
    {"torch", "device", TG_DEVICE, 0},
    {"_codecs", "encode", TG_ENCODE, 0},
    {"builtins", "set", TG_SET, 0},
    {"__builtin__", "set", TG_SET, 0},
    {"builtins", "frozenset", TG_FROZENSET, 0},
    {"__builtin__", "frozenset", TG_FROZENSET, 0},
};

/* Recognised, refused with a reason (module "" = any module with that prefix in `name`). */
typedef struct {
    const char *module, *name, *why;
} refused_def;

static const refused_def refused[] = {
    {"torch._utils", "_rebuild_qtensor", "quantized tensors are not supported"},
    {"torch", "per_tensor_affine", "quantized tensors are not supported"},
    {"torch", "per_channel_affine", "quantized tensors are not supported"},
    {"torch", "per_tensor_symmetric", "quantized tensors are not supported"},
    {"torch", "per_channel_symmetric", "quantized tensors are not supported"},
    {"torch", "per_channel_affine_float_qparams", "quantized tensors are not supported"},
    {"torch", "QInt8Storage", "quantized tensors are not supported"},
    {"torch", "QUInt8Storage", "quantized tensors are not supported"},
    {"torch", "QInt32Storage", "quantized tensors are not supported"},
    {"torch", "QUInt4x2Storage", "quantized tensors are not supported"},
    {"torch", "QUInt2x4Storage", "quantized tensors are not supported"},
    {"torch", "qint8", "quantized tensors are not supported"},
    {"torch", "quint8", "quantized tensors are not supported"},
    {"torch", "qint32", "quantized tensors are not supported"},
    {"torch", "quint4x2", "quantized tensors are not supported"},
    {"torch", "quint2x4", "quantized tensors are not supported"},
    {"torch._utils", "_rebuild_sparse_tensor", "sparse tensors are not supported"},
    {"torch._utils", "_rebuild_sparse_csr_tensor", "sparse tensors are not supported"},
    {"torch.serialization", "_get_layout", "sparse tensors are not supported"},
    {"torch", "sparse_coo", "sparse tensors are not supported"},
    {"torch", "sparse_csr", "sparse tensors are not supported"},
    {"torch", "sparse_csc", "sparse tensors are not supported"},
    {"torch", "sparse_bsr", "sparse tensors are not supported"},
    {"torch", "sparse_bsc", "sparse tensors are not supported"},
    {"torch._utils", "_rebuild_nested_tensor", "nested tensors are not supported"},
    {"torch._utils", "_rebuild_meta_tensor_no_storage", "meta tensors hold no data"},
    {"torch._utils", "_rebuild_wrapper_subclass", "tensor subclasses are not supported"},
    {"torch._utils", "_rebuild_device_tensor_from_numpy", "numpy-backed tensors are not supported"},
    {"torch._utils", "_rebuild_device_tensor_from_cpu_tensor",
     "device (XLA/HPU) tensors are not supported"},
    {"torch.storage", "_load_from_bytes",
     "tensors pickled with plain pickle run a nested torch.load: save with torch.save"},
};

static bool bytes_eq(const uint8_t *a, size_t al, const char *z)
{
    size_t zl = ing_strlen(z);
    return al == zl && (zl == 0 || ING_MEMCMP(a, z, zl) == 0);
}

static bool has_prefix(const uint8_t *a, size_t al, const char *z)
{
    size_t zl = ing_strlen(z);
    return al >= zl && ING_MEMCMP(a, z, zl) == 0 && (al == zl || a[zl] == '.');
}

/* ---------------------------------------------------------------------------------------------
 * Machine plumbing
 * ------------------------------------------------------------------------------------------- */

bool ingot__tp_reserve(const ingot_allocator *a, void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2 / elem) return false;
        n *= 2;
    }
    if (n > SIZE_MAX / elem) return false;
    if (!ingot__grow(a, p, *cap * elem, n * elem)) return false;
    *cap = n;
    return true;
}

void ingot__tp_init(tp_machine *m, const ingot_allocator *alloc, const uint8_t *buf,
                    uint64_t buf_len, uint64_t base_off, uint32_t pid_len)
{
    ING_MEMSET(m, 0, sizeof *m);
    m->alloc = alloc;
    m->buf = buf;
    m->buf_len = buf_len;
    m->base_off = base_off;
    m->pid_len = pid_len;
    ING_MEMSET(m->int_cache, 0xFF, sizeof m->int_cache);
    m->none_node = m->bool_node[0] = m->bool_node[1] = m->empty_tuple = TP_NONE_IDX;
}

void ingot__tp_free(tp_machine *m)
{
    const ingot_allocator *a = m->alloc;
    ingot__free(a, m->nodes, m->cap_nodes * sizeof *m->nodes);
    ingot__free(a, m->cells, m->cap_cells * sizeof *m->cells);
    ingot__free(a, m->stack, m->cap_stack * sizeof *m->stack);
    ingot__free(a, m->memo, m->cap_memo * sizeof *m->memo);
    ingot__free(a, m->pool, m->cap_pool);
    ingot__free(a, m->storages, m->cap_storages * sizeof *m->storages);
    ingot__free(a, m->st_hash, m->st_hash_cap * sizeof *m->st_hash);
    ingot__free(a, m->tensors, m->cap_tensors * sizeof *m->tensors);
    ingot__free(a, m->dims, m->cap_dims * sizeof *m->dims);
    ingot__free(a, m->pkeys, m->cap_pkeys * sizeof *m->pkeys);
    ingot__free(a, m->pnodes, m->cap_pnodes * sizeof *m->pnodes);
    ING_MEMSET(m, 0, sizeof *m);
}

static ingot_status perr(const tp_machine *m, ingot_error *err, ingot_status code, uint64_t at,
                         const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static ingot_status perr(const tp_machine *m, ingot_error *err, ingot_status code, uint64_t at,
                         const char *fmt, ...)
{
    char msg[192];
    va_list ap;
    va_start(ap, fmt);
    ingot__vfmt(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ingot__err(err, code, m->base_off + at, "pickle", 6, "%s", msg);
}

static ingot_status nomem(const tp_machine *m, ingot_error *err, uint64_t at)
{
    return perr(m, err, INGOT_NOMEM, at, "out of memory in the pickle machine");
}

const uint8_t *ingot__tp_bytes(const tp_machine *m, uint32_t node, uint64_t *len)
{
    const tp_node *n = &m->nodes[node];
    *len = n->b;
    return (n->flags & TPN_POOL) ? m->pool + n->a : m->buf + n->a;
}

/* The three makers below run once or twice per opcode: their common case (room left) is inline,
 * growing is not. */
static ingot_status grow_nodes(tp_machine *m, uint64_t at, ingot_error *err)
{
    if (m->n_nodes >= UINT32_MAX - 1) return perr(m, err, INGOT_LIMIT, at, "too many values");
    if (!ingot__tp_reserve(m->alloc, (void **)&m->nodes, &m->cap_nodes, m->n_nodes + 1,
                           sizeof(tp_node)))
        return nomem(m, err, at);
    return INGOT_OK;
}

static inline ingot_status new_node(tp_machine *m, uint8_t kind, uint64_t at, uint32_t *out,
                                    ingot_error *err)
{
    if (m->n_nodes >= m->cap_nodes || m->n_nodes >= UINT32_MAX - 1)
        ING_TRY(grow_nodes(m, at, err));
    tp_node *n = &m->nodes[m->n_nodes];
    ING_MEMSET(n, 0, sizeof *n);
    n->kind = kind;
    n->attrs = n->head = n->tail = TP_NONE_IDX;
    *out = (uint32_t)m->n_nodes++;
    return INGOT_OK;
}

static ingot_status grow_cells(tp_machine *m, uint64_t at, ingot_error *err)
{
    if (m->n_cells >= UINT32_MAX - 1) return perr(m, err, INGOT_LIMIT, at, "too many items");
    if (!ingot__tp_reserve(m->alloc, (void **)&m->cells, &m->cap_cells, m->n_cells + 1,
                           sizeof(tp_cell)))
        return nomem(m, err, at);
    return INGOT_OK;
}

static inline ingot_status add_cell(tp_machine *m, uint32_t node, uint32_t key, uint32_t val,
                                    uint64_t at, ingot_error *err)
{
    if (m->n_cells >= m->cap_cells || m->n_cells >= UINT32_MAX - 1)
        ING_TRY(grow_cells(m, at, err));
    uint32_t c = (uint32_t)m->n_cells++;
    m->cells[c] = (tp_cell){key, val, TP_NONE_IDX};
    tp_node *n = &m->nodes[node];
    if (n->tail == TP_NONE_IDX) n->head = c;
    else m->cells[n->tail].next = c;
    n->tail = c;
    n->count++;
    return INGOT_OK;
}

static ingot_status grow_stack(tp_machine *m, uint64_t at, ingot_error *err)
{
    if (!ingot__tp_reserve(m->alloc, (void **)&m->stack, &m->cap_stack, m->n_stack + 1,
                           sizeof(uint32_t)))
        return nomem(m, err, at);
    return INGOT_OK;
}

static inline ingot_status push(tp_machine *m, uint32_t v, uint64_t at, ingot_error *err)
{
    if (m->n_stack >= m->cap_stack) ING_TRY(grow_stack(m, at, err));
    m->stack[m->n_stack++] = v;
    return INGOT_OK;
}

static size_t seg_base(const tp_machine *m) { return m->n_marks ? m->marks[m->n_marks - 1] : 0; }

static ingot_status underflow(const tp_machine *m, ingot_error *err, uint64_t at, uint8_t op)
{
    return perr(m, err, INGOT_BAD_LAYOUT, at, "%s: stack underflow%s", ingot__tp_opcode_name(op),
                m->n_marks ? " (below the mark)" : "");
}

/* Pops k values of the current segment into out[0..k) (out[0] pushed first). */
static ingot_status pop_n(tp_machine *m, uint32_t *out, size_t k, uint64_t at, uint8_t op,
                          ingot_error *err)
{
    if (m->n_stack - seg_base(m) < k) return underflow(m, err, at, op);
    m->n_stack -= k;
    for (size_t i = 0; i < k; i++) out[i] = m->stack[m->n_stack + i];
    return INGOT_OK;
}

static inline ingot_status top(tp_machine *m, uint32_t *out, uint64_t at, uint8_t op,
                                ingot_error *err)
{
    if (m->n_stack <= seg_base(m)) return underflow(m, err, at, op);
    *out = m->stack[m->n_stack - 1];
    return INGOT_OK;
}

/* Pushes the shared node in *slot, making it first (kind, value a) when there is none yet. */
static ingot_status push_shared(tp_machine *m, uint32_t *slot, uint8_t kind, uint64_t a,
                                uint64_t at, ingot_error *err)
{
    if (*slot == TP_NONE_IDX || m->nodes[*slot].kind != kind || m->nodes[*slot].a != a) {
        uint32_t n = 0;
        ING_TRY(new_node(m, kind, at, &n, err));
        m->nodes[n].a = a;
        *slot = n;
    }
    return push(m, *slot, at, err);
}

static ingot_status new_int(tp_machine *m, int64_t v, uint64_t at, ingot_error *err)
{
    /* torch.save repeats a few ints (offsets 0, strides 1, the same shapes) thousands of times */
    uint64_t u = (uint64_t)v;
    return push_shared(m, &m->int_cache[(u * 0x9E3779B97F4A7C15ull) >> 58], TPV_INT, u, at, err);
}

static const char *kind_name(uint8_t k)
{
    static const char *const names[] = {
        "?",     "None",   "bool",   "int",  "int",  "float",   "str",    "bytes",
        "tuple", "list",   "dict",   "set",  "global", "storage", "tensor", "dtype", "device",
        "class placeholder", "object placeholder",
    };
    return k < sizeof names / sizeof names[0] ? names[k] : "?";
}

/* Items of a tuple node into out[0..max); *n the count. */
static bool tuple_items(const tp_machine *m, uint32_t node, uint32_t *out, size_t max, size_t *n)
{
    const tp_node *t = &m->nodes[node];
    if (t->kind != TPV_TUPLE || t->count > max) return false;
    size_t k = 0;
    for (uint32_t c = t->head; c != TP_NONE_IDX; c = m->cells[c].next) out[k++] = m->cells[c].val;
    *n = k;
    return true;
}

static bool is_kind(const tp_machine *m, uint32_t node, uint8_t kind)
{
    return m->nodes[node].kind == kind;
}

static bool str_is(const tp_machine *m, uint32_t node, const char *z)
{
    if (!is_kind(m, node, TPV_STR)) return false;
    uint64_t len;
    const uint8_t *p = ingot__tp_bytes(m, node, &len);
    return bytes_eq(p, (size_t)len, z);
}

/* Pool bytes: appends n bytes, returns their offset. */
static ingot_status pool_add(tp_machine *m, const void *src, size_t n, uint64_t at, uint64_t *off,
                             ingot_error *err)
{
    if (!ingot__tp_reserve(m->alloc, (void **)&m->pool, &m->cap_pool, m->n_pool + n + 1, 1))
        return nomem(m, err, at);
    *off = m->n_pool;
    if (n) ING_MEMCPY(m->pool + m->n_pool, src, n);
    m->n_pool += n;
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Storage table (spec §3.5)
 * ------------------------------------------------------------------------------------------- */

static uint64_t hash_bytes(const uint8_t *p, uint64_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (uint64_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static ingot_status st_rehash(tp_machine *m, uint64_t at, ingot_error *err)
{
    size_t cap = m->st_hash_cap ? m->st_hash_cap * 2 : 64;
    if (cap > SIZE_MAX / sizeof(uint32_t)) return nomem(m, err, at);
    uint32_t *h = ingot__alloc(m->alloc, cap * sizeof *h);
    if (!h) return nomem(m, err, at);
    for (size_t i = 0; i < cap; i++) h[i] = TP_NONE_IDX;
    for (size_t s = 0; s < m->n_storages; s++) {
        uint64_t len;
        const uint8_t *k = tp_storage_key(m, s, &len);
        size_t i = (size_t)(hash_bytes(k, len) & (cap - 1));
        while (h[i] != TP_NONE_IDX) i = (i + 1) & (cap - 1);
        h[i] = (uint32_t)s;
    }
    ingot__free(m->alloc, m->st_hash, m->st_hash_cap * sizeof *m->st_hash);
    m->st_hash = h;
    m->st_hash_cap = cap;
    return INGOT_OK;
}

int64_t ingot__tp_storage_find(const tp_machine *m, const uint8_t *key, uint64_t len)
{
    if (!m->st_hash_cap) return -1;
    size_t i = (size_t)(hash_bytes(key, len) & (m->st_hash_cap - 1));
    for (; m->st_hash[i] != TP_NONE_IDX; i = (i + 1) & (m->st_hash_cap - 1)) {
        uint64_t l2;
        const uint8_t *k2 = tp_storage_key(m, m->st_hash[i], &l2);
        if (l2 == len && (len == 0 || ING_MEMCMP(k2, key, len) == 0)) return m->st_hash[i];
    }
    return -1;
}

/* BINPERSID: ('storage', storage_type, key, location, numel[, view_metadata]) -> STORAGE. */
static ingot_status persid(tp_machine *m, uint32_t pid, uint64_t at, uint32_t *out,
                           ingot_error *err)
{
    uint32_t it[6] = {0};
    size_t n = 0;
    /* Legacy whole-module saves: ('module', class, source file, source) stands for the class; the
     * source text is never looked at, the class becomes a placeholder like any unknown global. */
    if (m->pid_len == 6 && tuple_items(m, pid, it, 6, &n) && n == 4 && str_is(m, it[0], "module") &&
        is_kind(m, it[1], TPV_CLASS)) {
        *out = it[1];
        return INGOT_OK;
    }
    if (!tuple_items(m, pid, it, 6, &n) || n != m->pid_len)
        return perr(m, err, INGOT_UNSUPPORTED, at,
                    "BINPERSID: persistent id is a %s, not a ('storage', type, key, location, "
                    "numel%s) tuple", kind_name(m->nodes[pid].kind),
                    m->pid_len == 6 ? ", view" : "");
    if (!str_is(m, it[0], "storage"))
        return perr(m, err, INGOT_UNSUPPORTED, at,
                    "BINPERSID: persistent id does not start with 'storage' (a pickled module?)");
    const tp_node *ty = &m->nodes[it[1]];
    if (ty->kind != TPV_GLOBAL || ty->aux != TG_STORAGE)
        return perr(m, err, INGOT_BAD_LAYOUT, at, "BINPERSID: field 2 is a %s, not a storage type",
                    kind_name(ty->kind));
    uint8_t stype = (uint8_t)ty->a;
    if (!is_kind(m, it[2], TPV_STR) || m->nodes[it[2]].b == 0)
        return perr(m, err, INGOT_BAD_LAYOUT, at, "BINPERSID: storage key is not a non-empty str");
    if (!is_kind(m, it[3], TPV_STR))
        return perr(m, err, INGOT_BAD_LAYOUT, at, "BINPERSID: storage location is not a str");
    const tp_node *ne = &m->nodes[it[4]];
    if (ne->kind != TPV_INT || (int64_t)ne->a < 0)
        return perr(m, err, INGOT_BAD_LAYOUT, at,
                    "BINPERSID: storage element count is not an int >= 0");
    if (m->pid_len == 6 && !is_kind(m, it[5], TPV_NONE))
        return perr(m, err, INGOT_UNSUPPORTED, at,
                    "BINPERSID: legacy storage views (view_metadata) are not supported");
    uint64_t numel = ne->a, nbytes;
    if (!ing_mul(numel, stypes[stype].esize, &nbytes))
        return perr(m, err, INGOT_BAD_SIZE, at, "BINPERSID: storage of %llu elements overflows",
                    (unsigned long long)numel);
    uint64_t klen;
    const uint8_t *key = ingot__tp_bytes(m, it[2], &klen);
    if (m->st_hash_cap) {
        size_t i = (size_t)(hash_bytes(key, klen) & (m->st_hash_cap - 1));
        for (; m->st_hash[i] != TP_NONE_IDX; i = (i + 1) & (m->st_hash_cap - 1)) {
            tp_storage *s = &m->storages[m->st_hash[i]];
            uint64_t l2;
            const uint8_t *k2 = ingot__tp_bytes(m, s->key_node, &l2);
            if (l2 != klen || ING_MEMCMP(k2, key, klen) != 0) continue;
            if (s->stype != stype || s->numel != numel)
                return perr(m, err, INGOT_BAD_LAYOUT, at,
                            "BINPERSID: storage '%.*s' redefined with another type or size",
                            (int)(klen > 40 ? 40 : klen), (const char *)key);
            ING_TRY(new_node(m, TPV_STORAGE, at, out, err));
            m->nodes[*out].a = m->st_hash[i];
            return INGOT_OK;
        }
    }
    if (m->n_storages >= UINT32_MAX / 2) return perr(m, err, INGOT_LIMIT, at, "too many storages");
    if ((m->n_storages + 1) * 2 > m->st_hash_cap) ING_TRY(st_rehash(m, at, err));
    if (!ingot__tp_reserve(m->alloc, (void **)&m->storages, &m->cap_storages, m->n_storages + 1,
                    sizeof(tp_storage)))
        return nomem(m, err, at);
    size_t s = m->n_storages++;
    tp_storage *st = &m->storages[s];
    ING_MEMSET(st, 0, sizeof *st);
    st->key_node = it[2];
    st->stype = stype;
    st->esize = stypes[stype].esize;
    st->numel = numel;
    st->nbytes = nbytes;
    st->pid_offset = m->base_off + at;
    size_t i = (size_t)(hash_bytes(key, klen) & (m->st_hash_cap - 1));
    while (m->st_hash[i] != TP_NONE_IDX) i = (i + 1) & (m->st_hash_cap - 1);
    m->st_hash[i] = (uint32_t)s;
    ING_TRY(new_node(m, TPV_STORAGE, at, out, err));
    m->nodes[*out].a = s;
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Tensors (spec §3.6)
 * ------------------------------------------------------------------------------------------- */

/* Appends t with its t->ndim sizes and strides (t->dims is set here). */
static ingot_status add_tensor(tp_machine *m, const tp_tensor *t, const uint64_t *size,
                               const int64_t *stride, uint64_t at, uint32_t *node,
                               ingot_error *err)
{
    if (m->n_tensors >= UINT32_MAX / 2) return perr(m, err, INGOT_LIMIT, at, "too many tensors");
    if (!ingot__tp_reserve(m->alloc, (void **)&m->tensors, &m->cap_tensors, m->n_tensors + 1,
                    sizeof(tp_tensor)) ||
        !ingot__tp_reserve(m->alloc, (void **)&m->dims, &m->cap_dims, m->n_dims + 2 * t->ndim,
                           sizeof *m->dims))
        return nomem(m, err, at);
    tp_tensor *x = &m->tensors[m->n_tensors];
    *x = *t;
    x->dims = m->n_dims;
    for (uint32_t k = 0; k < t->ndim; k++) {
        m->dims[m->n_dims + k] = size[k];
        m->dims[m->n_dims + t->ndim + k] = (uint64_t)stride[k];
    }
    m->n_dims += 2 * t->ndim;
    if (node) {
        ING_TRY(new_node(m, TPV_TENSOR, at, node, err));
        m->nodes[*node].a = m->n_tensors;
    }
    m->n_tensors++;
    return INGOT_OK;
}

static bool contiguous(const tp_tensor *t, const uint64_t *size, const int64_t *stride)
{
    if (t->nelem == 0) return true;
    uint64_t expect = 1;
    for (uint32_t k = t->ndim; k-- > 0;) {
        if (size[k] == 1) continue;
        if ((uint64_t)stride[k] != expect) return false;
        expect *= size[k]; /* <= nelem: cannot overflow */
    }
    return true;
}

static ingot_status finish_tensor(tp_machine *m, tp_tensor *tp, const uint64_t *size,
                                  const int64_t *stride, const tp_storage *st, uint64_t at,
                                  uint32_t *out, ingot_error *err);

/* dtype_node: TP_NONE_IDX for v2 (the storage's type), else the DTYPE argument of v3. */
static ingot_status rebuild(tp_machine *m, const uint32_t *it, uint32_t dtype_node, uint64_t at,
                            uint32_t *out, ingot_error *err)
{
    tp_tensor t;
    uint64_t size[INGOT_MAX_RANK];
    int64_t stride[INGOT_MAX_RANK];
    ING_MEMSET(&t, 0, sizeof t);
    t.pid_offset = m->base_off + at;
    if (!is_kind(m, it[0], TPV_STORAGE))
        return perr(m, err, INGOT_BAD_LAYOUT, at, "tensor rebuild: argument 1 is a %s, not a storage",
                    kind_name(m->nodes[it[0]].kind));
    t.storage = (uint32_t)m->nodes[it[0]].a;
    const tp_storage *st = &m->storages[t.storage];
    const tp_node *off = &m->nodes[it[1]];
    if (off->kind != TPV_INT || (int64_t)off->a < 0)
        return perr(m, err, INGOT_BAD_LAYOUT, at, "tensor rebuild: storage offset is not an int >= 0");
    t.offset = off->a;
    const tp_node *sz = &m->nodes[it[2]], *sd = &m->nodes[it[3]];
    if (sz->kind != TPV_TUPLE || sd->kind != TPV_TUPLE)
        return perr(m, err, INGOT_BAD_SHAPE, at, "tensor rebuild: size/stride are not tuples");
    if (sz->count != sd->count)
        return perr(m, err, INGOT_BAD_SHAPE, at, "tensor rebuild: %u sizes but %u strides",
                    sz->count, sd->count);
    if (sz->count > INGOT_MAX_RANK)
        return perr(m, err, INGOT_BAD_NDIMS, at,
                    "tensor rebuild: %u dimensions (ingot's limit is %d, INGOT_MAX_RANK)",
                    sz->count, INGOT_MAX_RANK);
    t.ndim = sz->count;
    uint32_t k = 0;
    t.nelem = 1;
    for (uint32_t c = sz->head, d = sd->head; c != TP_NONE_IDX;
         c = m->cells[c].next, d = m->cells[d].next, k++) {
        const tp_node *a = &m->nodes[m->cells[c].val], *b = &m->nodes[m->cells[d].val];
        if (a->kind != TPV_INT || (int64_t)a->a < 0)
            return perr(m, err, INGOT_BAD_SHAPE, at, "tensor rebuild: size %u is not an int >= 0", k);
        if (b->kind != TPV_INT || (int64_t)b->a < 0)
            return perr(m, err, INGOT_BAD_SHAPE, at, "tensor rebuild: stride %u is not an int >= 0", k);
        size[k] = a->a;
        stride[k] = (int64_t)b->a;
        if (!ing_mul(t.nelem, size[k], &t.nelem) || t.nelem > (uint64_t)INT64_MAX)
            return perr(m, err, INGOT_BAD_SHAPE, at, "tensor rebuild: element count overflows");
    }
    /* Element type. */
    if (dtype_node == TP_NONE_IDX) {
        if (st->stype == TPS_UNTYPED)
            return perr(m, err, INGOT_UNSUPPORTED, at,
                        "_rebuild_tensor_v2 on an UntypedStorage (needs _rebuild_tensor_v3)");
        if (!stypes[st->stype].dtype)
            return perr(m, err, INGOT_BAD_TYPE, at, "torch.%s has no ingot dtype",
                        stypes[st->stype].torch_name);
        t.dtype = stypes[st->stype].dtype;
        t.esize = st->esize;
    } else {
        const tp_node *dn = &m->nodes[dtype_node];
        if (dn->kind != TPV_DTYPE)
            return perr(m, err, INGOT_BAD_LAYOUT, at, "_rebuild_tensor_v3: dtype argument is a %s",
                        kind_name(dn->kind));
        if (st->stype != TPS_UNTYPED)
            return perr(m, err, INGOT_BAD_LAYOUT, at,
                        "_rebuild_tensor_v3 on a typed storage (torch writes UntypedStorage)");
        if (!dtypes[dn->aux].dtype)
            return perr(m, err, INGOT_BAD_TYPE, at, "torch.%s has no ingot dtype",
                        dtypes[dn->aux].name);
        t.dtype = dtypes[dn->aux].dtype;
        t.esize = dtypes[dn->aux].esize;
    }
    return finish_tensor(m, &t, size, stride, st, at, out, err);
}

/* Byte size, bounds against the storage, contiguity; then appends the tensor (and a TENSOR node
 * when out is not NULL). */
static ingot_status finish_tensor(tp_machine *m, tp_tensor *tp, const uint64_t *size,
                                  const int64_t *stride, const tp_storage *st, uint64_t at,
                                  uint32_t *out, ingot_error *err)
{
    tp_tensor t = *tp;
    uint32_t k;
    uint64_t dense;
    if (!ing_mul(t.nelem, t.esize, &dense))
        return perr(m, err, INGOT_BAD_SIZE, at, "tensor rebuild: %llu elements overflow a byte size",
                    (unsigned long long)t.nelem);
    /* Bounds, in elements then bytes (storage_nbytes is in bytes). */
    uint64_t last = t.offset, need;
    if (t.nelem > 0) {
        for (k = 0; k < t.ndim; k++) {
            uint64_t span;
            if (!ing_mul(size[k] - 1, (uint64_t)stride[k], &span) || !ing_add(last, span, &last))
                return perr(m, err, INGOT_BAD_LAYOUT, at, "tensor rebuild: extent overflows");
        }
        if (!ing_add(last, 1, &last) || !ing_mul(last, t.esize, &need) || need > st->nbytes)
            return perr(m, err, INGOT_BAD_LAYOUT, at,
                        "tensor reaches past its storage (%llu bytes)",
                        (unsigned long long)st->nbytes);
    } else if (!ing_mul(t.offset, t.esize, &need) || need > st->nbytes) {
        return perr(m, err, INGOT_BAD_LAYOUT, at, "storage offset past the storage (%llu bytes)",
                    (unsigned long long)st->nbytes);
    }
    t.contiguous = contiguous(&t, size, stride);
    return add_tensor(m, &t, size, stride, at, out, err);
}

ingot_status ingot__tp_storage_tensor(tp_machine *m, uint32_t storage, uint32_t *out,
                                      ingot_error *err)
{
    const tp_storage *st = &m->storages[storage];
    if (st->stype == TPS_UNTYPED || !stypes[st->stype].dtype)
        return ingot__err(err, INGOT_BAD_TYPE, st->pid_offset, "pickle", 6,
                          "a bare %s cannot be exposed as a tensor", stypes[st->stype].name);
    tp_tensor t;
    ING_MEMSET(&t, 0, sizeof t);
    t.storage = storage;
    t.ndim = 1;
    uint64_t size = st->numel;
    int64_t stride = 1;
    t.nelem = st->numel;
    t.dtype = stypes[st->stype].dtype;
    t.esize = st->esize;
    t.contiguous = true;
    t.pid_offset = st->pid_offset;
    *out = (uint32_t)m->n_tensors;
    return add_tensor(m, &t, &size, &stride, st->pid_offset - m->base_off, NULL, err);
}

/* ---------------------------------------------------------------------------------------------
 * Tar checkpoints: storages and tensors made outside the pickle, found by persistent key
 * ------------------------------------------------------------------------------------------- */

bool ingot__tp_storage_type(const tp_machine *m, uint32_t node, uint8_t *stype, uint8_t *esize)
{
    const tp_node *n = &m->nodes[node];
    if (n->kind != TPV_GLOBAL || n->aux != TG_STORAGE || n->a == TPS_UNTYPED) return false;
    *stype = (uint8_t)n->a;
    *esize = stypes[n->a].esize;
    return true;
}

static ingot_status persist_add(tp_machine *m, int64_t key, uint32_t node, uint64_t at,
                                ingot_error *err)
{
    if (!ingot__tp_reserve(m->alloc, (void **)&m->pkeys, &m->cap_pkeys, m->n_pkeys + 1,
                           sizeof *m->pkeys) ||
        !ingot__tp_reserve(m->alloc, (void **)&m->pnodes, &m->cap_pnodes, m->n_pkeys + 1,
                           sizeof *m->pnodes))
        return nomem(m, err, at);
    m->pkeys[m->n_pkeys] = key;
    m->pnodes[m->n_pkeys++] = node;
    return INGOT_OK;
}

ingot_status ingot__tp_tar_storage(tp_machine *m, int64_t key, uint8_t stype, uint64_t numel,
                                   uint64_t data_offset, uint64_t at, uint32_t *index,
                                   ingot_error *err)
{
    uint64_t nbytes;
    if (!ing_mul(numel, stypes[stype].esize, &nbytes))
        return perr(m, err, INGOT_BAD_SIZE, at, "storage of %llu elements overflows",
                    (unsigned long long)numel);
    if (m->n_storages >= UINT32_MAX / 2) return perr(m, err, INGOT_LIMIT, at, "too many storages");
    char txt[24];
    size_t tl = ingot__fmt(txt, sizeof txt, "%lld", (long long)key);
    uint64_t off;
    ING_TRY(pool_add(m, txt, tl, at, &off, err));
    uint32_t kn, sn;
    ING_TRY(new_node(m, TPV_STR, at, &kn, err));
    m->nodes[kn].flags = TPN_POOL;
    m->nodes[kn].a = off;
    m->nodes[kn].b = tl;
    if (!ingot__tp_reserve(m->alloc, (void **)&m->storages, &m->cap_storages, m->n_storages + 1,
                           sizeof(tp_storage)))
        return nomem(m, err, at);
    size_t si = m->n_storages++;
    tp_storage *st = &m->storages[si];
    ING_MEMSET(st, 0, sizeof *st);
    st->key_node = kn;
    st->stype = stype;
    st->esize = stypes[stype].esize;
    st->numel = numel;
    st->nbytes = nbytes;
    st->pid_offset = m->base_off + at;
    st->data_offset = data_offset;
    st->used = true;
    ING_TRY(new_node(m, TPV_STORAGE, at, &sn, err));
    m->nodes[sn].a = si;
    *index = (uint32_t)si;
    return persist_add(m, key, sn, at, err);
}

ingot_status ingot__tp_tar_tensor(tp_machine *m, int64_t key, uint32_t storage, uint64_t offset,
                                  uint32_t ndim, const uint64_t *size, const int64_t *stride,
                                  uint64_t at, ingot_error *err)
{
    const tp_storage *st = &m->storages[storage];
    if (ndim > INGOT_MAX_RANK)
        return perr(m, err, INGOT_BAD_NDIMS, at, "tensor of %u dimensions (ingot's limit is %d)",
                    ndim, INGOT_MAX_RANK);
    if (!stypes[st->stype].dtype)
        return perr(m, err, INGOT_BAD_TYPE, at, "torch.%s has no ingot dtype",
                    stypes[st->stype].torch_name);
    tp_tensor t;
    ING_MEMSET(&t, 0, sizeof t);
    t.pid_offset = m->base_off + at;
    t.storage = storage;
    t.offset = offset;
    t.ndim = ndim;
    t.nelem = 1;
    for (uint32_t k = 0; k < ndim; k++) {
        if (stride[k] < 0 || size[k] > (uint64_t)INT64_MAX)
            return perr(m, err, INGOT_BAD_SHAPE, at, "tensor: size or stride %u is negative", k);
        if (!ing_mul(t.nelem, size[k], &t.nelem) || t.nelem > (uint64_t)INT64_MAX)
            return perr(m, err, INGOT_BAD_SHAPE, at, "tensor: element count overflows");
    }
    t.dtype = stypes[st->stype].dtype;
    t.esize = st->esize;
    uint32_t node;
    ING_TRY(finish_tensor(m, &t, size, stride, st, at, &node, err));
    return persist_add(m, key, node, at, err);
}

ingot_status ingot__tp_tar_seal(tp_machine *m, uint64_t at, ingot_error *err)
{
    /* insertion sort runs are fine for the few hundred keys of a 2017 file; use a merge sort to
     * stay O(n log n) on hostile counts */
    size_t n = m->n_pkeys;
    if (n < 2) return INGOT_OK;
    int64_t *tk = ingot__alloc(m->alloc, n * sizeof *tk);
    uint32_t *tn = ingot__alloc(m->alloc, n * sizeof *tn);
    if (!tk || !tn) {
        ingot__free(m->alloc, tk, n * sizeof *tk);
        ingot__free(m->alloc, tn, n * sizeof *tn);
        return nomem(m, err, at);
    }
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid || j < hi) {
                bool right = i >= mid || (j < hi && m->pkeys[j] < m->pkeys[i]);
                size_t src = right ? j++ : i++;
                tk[k] = m->pkeys[src];
                tn[k++] = m->pnodes[src];
            }
        }
        ING_MEMCPY(m->pkeys, tk, n * sizeof *tk);
        ING_MEMCPY(m->pnodes, tn, n * sizeof *tn);
    }
    ingot__free(m->alloc, tk, n * sizeof *tk);
    ingot__free(m->alloc, tn, n * sizeof *tn);
    for (size_t i = 1; i < n; i++)
        if (m->pkeys[i] == m->pkeys[i - 1])
            return perr(m, err, INGOT_DUPLICATE, at, "persistent key %lld names two objects",
                        (long long)m->pkeys[i]);
    return INGOT_OK;
}

/* Tar pickles: BINPERSID of an int or its decimal str -> the tensor or storage with that key
 * (torch.load: deserialized_objects[int(saved_id)]); a tuple (class, source file, source) is a
 * pickled module's class. */
static ingot_status tar_persid(tp_machine *m, uint32_t pid, uint64_t at, uint32_t *out,
                               ingot_error *err)
{
    const tp_node *n = &m->nodes[pid];
    int64_t key = 0;
    if (n->kind == TPV_TUPLE && n->count == 3 &&
        m->nodes[m->cells[n->head].val].kind == TPV_CLASS) {
        *out = m->cells[n->head].val;
        return INGOT_OK;
    }
    if (n->kind == TPV_INT) {
        key = (int64_t)n->a;
    } else if (n->kind == TPV_STR) {
        uint64_t len;
        const uint8_t *s = ingot__tp_bytes(m, pid, &len);
        uint64_t i = len && s[0] == '-' ? 1 : 0, v = 0;
        if (i == len || len > 20)
            return perr(m, err, INGOT_BAD_LAYOUT, at, "BINPERSID: key is not a decimal int");
        for (; i < len; i++) {
            if (s[i] < '0' || s[i] > '9' || v > (uint64_t)INT64_MAX / 10)
                return perr(m, err, INGOT_BAD_LAYOUT, at, "BINPERSID: key is not a decimal int");
            v = v * 10 + (uint64_t)(s[i] - '0');
        }
        if (v > (uint64_t)INT64_MAX)
            return perr(m, err, INGOT_BAD_LAYOUT, at, "BINPERSID: key out of range");
        key = s[0] == '-' ? -(int64_t)v : (int64_t)v;
    } else {
        return perr(m, err, INGOT_BAD_LAYOUT, at,
                    "BINPERSID: persistent id is a %s, not a tensor or storage key",
                    kind_name(n->kind));
    }
    size_t lo = 0, hi = m->n_pkeys;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->pkeys[mid] == key) {
            uint32_t v = m->pnodes[mid], node;
            ING_TRY(new_node(m, m->nodes[v].kind, at, &node, err)); /* a fresh reference */
            m->nodes[node].a = m->nodes[v].a;
            *out = node;
            return INGOT_OK;
        }
        if (m->pkeys[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return perr(m, err, INGOT_BAD_LAYOUT, at, "BINPERSID: no tensor or storage has key %lld",
                (long long)key);
}

/* Validates the optional trailing `metadata` dict of v2/v3: conj/neg bits set -> refuse. */
static ingot_status tensor_metadata(tp_machine *m, uint32_t node, uint64_t at, ingot_error *err)
{
    const tp_node *d = &m->nodes[node];
    if (d->kind != TPV_DICT)
        return perr(m, err, INGOT_BAD_LAYOUT, at, "tensor rebuild: metadata is a %s, not a dict",
                    kind_name(d->kind));
    for (uint32_t c = d->head; c != TP_NONE_IDX; c = m->cells[c].next) {
        const tp_node *v = &m->nodes[m->cells[c].val];
        if (v->kind != TPV_BOOL)
            return perr(m, err, INGOT_BAD_LAYOUT, at, "tensor rebuild: metadata value is not a bool");
        if (v->a)
            return perr(m, err, INGOT_UNSUPPORTED, at,
                        "tensor with a lazy conj/neg bit: the stored bytes are not its values");
    }
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * REDUCE (spec §3.4)
 * ------------------------------------------------------------------------------------------- */

/* REDUCE / NEWOBJ / NEWOBJ_EX of a placeholder: an OBJECT placeholder holding its class and
 * arguments as data. Nothing is called. */
static ingot_status placeholder_object(tp_machine *m, uint32_t cls, uint32_t args, uint8_t op,
                                       uint64_t at, uint32_t *out, ingot_error *err)
{
    ING_TRY(new_node(m, TPV_OBJECT, at, out, err));
    tp_node *n = &m->nodes[*out];
    n->aux = op;
    n->a = (uint64_t)cls | (uint64_t)args << 32;
    n->b = at;
    return INGOT_OK;
}

void ingot__tp_place_describe(const tp_machine *m, uint32_t node, const uint8_t **cls,
                              uint64_t *cls_len, const char **op, uint64_t *at)
{
    const tp_node *n = &m->nodes[node];
    if (n->kind == TPV_OBJECT) {
        *op = ingot__tp_opcode_name((uint8_t)n->aux);
        *at = n->b;
        uint32_t c = (uint32_t)n->a;
        while (m->nodes[c].kind == TPV_OBJECT) c = (uint32_t)m->nodes[c].a; /* made earlier */
        *cls = ingot__tp_bytes(m, c, cls_len);
        return;
    }
    *op = "GLOBAL";
    *at = n->count;
    *cls = ingot__tp_bytes(m, node, cls_len);
}

static ingot_status reduce(tp_machine *m, uint32_t fn, uint32_t args, uint64_t at, int depth,
                           uint32_t *out, ingot_error *err)
{
    const tp_node *g = &m->nodes[fn];
    if ((g->kind == TPV_CLASS || g->kind == TPV_OBJECT) && depth == 0) {
        if (!is_kind(m, args, TPV_TUPLE))
            return perr(m, err, INGOT_BAD_LAYOUT, at, "REDUCE: arguments are a %s, not a tuple",
                        kind_name(m->nodes[args].kind));
        return placeholder_object(m, fn, args, OP_REDUCE, at, out, err);
    }
    if (g->kind != TPV_GLOBAL)
        return perr(m, err, INGOT_UNSUPPORTED, at, "REDUCE: callable is a %s, not an allowed global",
                    kind_name(g->kind));
    uint16_t id = g->aux;
    uint32_t it[8] = {0};
    size_t n = 0;
    if (!is_kind(m, args, TPV_TUPLE))
        return perr(m, err, INGOT_BAD_LAYOUT, at, "REDUCE: arguments are a %s, not a tuple",
                    kind_name(m->nodes[args].kind));
    if (!tuple_items(m, args, it, 8, &n))
        return perr(m, err, INGOT_BAD_LAYOUT, at, "REDUCE: too many arguments (%u)",
                    m->nodes[args].count);
    switch (id) {
    case TG_ORDEREDDICT:
        if (n != 0)
            return perr(m, err, INGOT_UNSUPPORTED, at, "REDUCE: OrderedDict() with arguments");
        ING_TRY(new_node(m, TPV_DICT, at, out, err));
        m->nodes[*out].flags |= TPN_ORDERED;
        return INGOT_OK;
    case TG_REBUILD_V2:
    case TG_REBUILD_V3:
    case TG_REBUILD: {
        size_t base = id == TG_REBUILD ? 4 : id == TG_REBUILD_V2 ? 6 : 7;
        if (n != base && !(id != TG_REBUILD && n == base + 1))
            return perr(m, err, INGOT_BAD_LAYOUT, at, "REDUCE: %s with %zu arguments",
                        id == TG_REBUILD ? "_rebuild_tensor" : id == TG_REBUILD_V2
                                                                ? "_rebuild_tensor_v2"
                                                                : "_rebuild_tensor_v3",
                        n);
        if (id != TG_REBUILD) {
            if (!is_kind(m, it[4], TPV_BOOL))
                return perr(m, err, INGOT_BAD_LAYOUT, at, "tensor rebuild: requires_grad not a bool");
            if (!is_kind(m, it[5], TPV_DICT))
                return perr(m, err, INGOT_BAD_LAYOUT, at,
                            "tensor rebuild: backward_hooks not a dict");
            if (n == base + 1) ING_TRY(tensor_metadata(m, it[base], at, err));
        }
        ING_TRY(rebuild(m, it, id == TG_REBUILD_V3 ? it[6] : TP_NONE_IDX, at, out, err));
        if (id != TG_REBUILD && m->nodes[it[4]].a)
            m->tensors[m->nodes[*out].a].flags |= TPT_REQUIRES_GRAD;
        return INGOT_OK;
    }
    case TG_PARAM:
    case TG_PARAM_STATE:
        if (n != (id == TG_PARAM ? 3u : 4u) || !is_kind(m, it[0], TPV_TENSOR) ||
            !is_kind(m, it[1], TPV_BOOL) || !is_kind(m, it[2], TPV_DICT))
            return perr(m, err, INGOT_BAD_LAYOUT, at,
                        "REDUCE: _rebuild_parameter wants (tensor, bool, dict%s)",
                        id == TG_PARAM ? "" : ", state");
        ING_TRY(new_node(m, TPV_TENSOR, at, out, err));
        m->nodes[*out].a = m->nodes[it[0]].a;
        m->tensors[m->nodes[it[0]].a].flags |=
            (uint8_t)(TPT_PARAMETER | (m->nodes[it[1]].a ? TPT_REQUIRES_GRAD : 0));
        return INGOT_OK;
    case TG_FROM_TYPE_V2: {
        if (n != 4 || depth > 0)
            return perr(m, err, INGOT_BAD_LAYOUT, at,
                        "REDUCE: _rebuild_from_type_v2 wants (func, cls, args, state)");
        const tp_node *f2 = &m->nodes[it[0]], *cls = &m->nodes[it[1]];
        if (f2->kind != TPV_GLOBAL ||
            (f2->aux != TG_REBUILD_V2 && f2->aux != TG_REBUILD_V3 && f2->aux != TG_REBUILD))
            return perr(m, err, INGOT_UNSUPPORTED, at,
                        "_rebuild_from_type_v2: func is not a tensor rebuild function");
        if (cls->kind != TPV_GLOBAL || (cls->aux != TG_CLS_TENSOR && cls->aux != TG_CLS_PARAM))
            return perr(m, err, INGOT_UNSUPPORTED, at,
                        "_rebuild_from_type_v2: class is not torch.Tensor or Parameter");
        ING_TRY(reduce(m, it[0], it[2], at, depth + 1, out, err));
        if (cls->aux == TG_CLS_PARAM) m->tensors[m->nodes[*out].a].flags |= TPT_PARAMETER;
        return INGOT_OK;
    }
    case TG_SIZE: {
        if (n != 1 || !is_kind(m, it[0], TPV_TUPLE))
            return perr(m, err, INGOT_BAD_LAYOUT, at, "REDUCE: torch.Size wants one tuple");
        const tp_node *t = &m->nodes[it[0]];
        for (uint32_t c = t->head; c != TP_NONE_IDX; c = m->cells[c].next)
            if (!is_kind(m, m->cells[c].val, TPV_INT))
                return perr(m, err, INGOT_BAD_LAYOUT, at, "REDUCE: torch.Size of non-ints");
        *out = it[0];
        return INGOT_OK;
    }
    case TG_DEVICE: {
        if (n < 1 || n > 2 || !is_kind(m, it[0], TPV_STR) ||
            (n == 2 && !is_kind(m, it[1], TPV_INT) && !is_kind(m, it[1], TPV_NONE)))
            return perr(m, err, INGOT_BAD_LAYOUT, at, "REDUCE: torch.device wants (str[, int])");
        uint64_t len, off = 0;
        const uint8_t *s = ingot__tp_bytes(m, it[0], &len);
        char idx[24];
        size_t il = 0;
        if (n == 2 && is_kind(m, it[1], TPV_INT))
            il = ingot__fmt(idx, sizeof idx, ":%lld", (long long)(int64_t)m->nodes[it[1]].a);
        if (len > 256) return perr(m, err, INGOT_LIMIT, at, "torch.device name too long");
        ING_TRY(pool_add(m, NULL, 0, at, &off, err));
        uint64_t o2;
        ING_TRY(pool_add(m, s, (size_t)len, at, &o2, err));
        ING_TRY(pool_add(m, idx, il, at, &o2, err));
        ING_TRY(new_node(m, TPV_DEVICE, at, out, err));
        m->nodes[*out].flags = TPN_POOL;
        m->nodes[*out].a = off;
        m->nodes[*out].b = len + il;
        return INGOT_OK;
    }
    case TG_ENCODE: {
        if (n != 2 || !is_kind(m, it[0], TPV_STR) ||
            !(str_is(m, it[1], "latin1") || str_is(m, it[1], "latin-1")))
            return perr(m, err, INGOT_UNSUPPORTED, at,
                        "REDUCE: _codecs.encode wants (str, 'latin1')");
        uint64_t len, off = 0;
        const uint8_t *s = ingot__tp_bytes(m, it[0], &len);
        ING_TRY(pool_add(m, NULL, 0, at, &off, err));
        if (!ingot__tp_reserve(m->alloc, (void **)&m->pool, &m->cap_pool, m->n_pool + len + 1, 1))
            return nomem(m, err, at);
        s = ingot__tp_bytes(m, it[0], &len); /* the pool may have moved */
        size_t o = 0;
        for (uint64_t i = 0; i < len;) { /* valid UTF-8: decode code points <= 0xFF */
            uint8_t c = s[i];
            if (c < 0x80) {
                m->pool[off + o++] = c;
                i++;
            } else if ((c & 0xE0) == 0xC0 && c <= 0xC3) {
                m->pool[off + o++] = (uint8_t)(((c & 0x1F) << 6) | (s[i + 1] & 0x3F));
                i += 2;
            } else {
                return perr(m, err, INGOT_BAD_STRING, at,
                            "_codecs.encode: code point above U+00FF in latin1 text");
            }
        }
        m->n_pool += o;
        ING_TRY(new_node(m, TPV_BYTES, at, out, err));
        m->nodes[*out].flags = TPN_POOL;
        m->nodes[*out].a = off;
        m->nodes[*out].b = o;
        return INGOT_OK;
    }
    case TG_SET:
    case TG_FROZENSET: {
        uint8_t src = n == 1 ? m->nodes[it[0]].kind : 0;
        if (n > 1 || (n == 1 && src != TPV_LIST && src != TPV_TUPLE && src != TPV_SET))
            return perr(m, err, INGOT_BAD_LAYOUT, at, "REDUCE: set() wants () or (list,)");
        ING_TRY(new_node(m, TPV_SET, at, out, err));
        if (n == 1)
            for (uint32_t c = m->nodes[it[0]].head; c != TP_NONE_IDX; c = m->cells[c].next)
                ING_TRY(add_cell(m, *out, TP_NONE_IDX, m->cells[c].val, at, err));
        return INGOT_OK;
    }
    default:
        return perr(m, err, INGOT_UNSUPPORTED, at,
                    "REDUCE: this global (a class or storage type token) cannot be called");
    }
}

/* ---------------------------------------------------------------------------------------------
 * GLOBAL lookup
 * ------------------------------------------------------------------------------------------- */

/* Globals whose only use in a pickle is to run code when Python unpickles it. The machine would
 * hold them as inert placeholders like any other class, but a checkpoint that names one was
 * crafted to attack torch.load, not written by torch.save: it is refused so that a file ingot
 * opens is never one that runs code elsewhere. A deny-list cannot be complete; ingot's own
 * safety does not depend on it (nothing here is ever called). */
static const char *code_runner(const uint8_t *mod, size_t ml, const uint8_t *name, size_t nl)
{
    static const char *const modules[] = {
        "os", "posix", "nt", "subprocess", "sys", "shutil", "socket", "ctypes", "importlib",
        "runpy", "pickle", "_pickle", "marshal", "code", "codeop", "pty", "webbrowser",
        "multiprocessing", "pdb", "timeit", "torch.hub", "torch.jit", "torch.package",
    };
    static const char *const builtins[] = {
        "eval", "exec", "compile", "getattr", "setattr", "delattr", "__import__", "open",
        "breakpoint", "input", "globals", "locals", "vars", "exit", "quit", "apply", "execfile",
        "file", "reload",
    };
    static const char *const why = "can run code when Python unpickles this file (a crafted "
                                   "pickle, not a torch.save checkpoint)";
    for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++)
        if (has_prefix(mod, ml, modules[i])) return why;
    if (bytes_eq(mod, ml, "builtins") || bytes_eq(mod, ml, "__builtin__"))
        for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
            if (bytes_eq(name, nl, builtins[i])) return why;
    if (bytes_eq(mod, ml, "torch") && (bytes_eq(name, nl, "load") || bytes_eq(name, nl, "save")))
        return why;
    if (bytes_eq(mod, ml, "torch.serialization") && !bytes_eq(name, nl, "_get_layout"))
        return why;
    return NULL;
}

/* An unknown global becomes a CLASS placeholder: its qualified name is kept as text, nothing is
 * looked up. */
static ingot_status placeholder_class(tp_machine *m, const uint8_t *mod, size_t ml,
                                      const uint8_t *name, size_t nl, uint64_t at,
                                      ingot_error *err)
{
    uint64_t off = 0, o2;
    ING_TRY(pool_add(m, mod, ml, at, &off, err));
    ING_TRY(pool_add(m, ".", 1, at, &o2, err));
    ING_TRY(pool_add(m, name, nl, at, &o2, err));
    uint32_t node;
    ING_TRY(new_node(m, TPV_CLASS, at, &node, err));
    tp_node *n = &m->nodes[node];
    n->flags = TPN_POOL;
    n->a = off;
    n->b = ml + 1 + nl;
    n->count = (uint32_t)at;
    return push(m, node, at, err);
}

static ingot_status global(tp_machine *m, const uint8_t *mod, size_t ml, const uint8_t *name,
                           size_t nl, uint64_t at, uint8_t op, ingot_error *err)
{
    uint32_t node;
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
        if (!bytes_eq(mod, ml, allowed[i].module) || !bytes_eq(name, nl, allowed[i].name)) continue;
        ING_TRY(new_node(m, TPV_GLOBAL, at, &node, err));
        m->nodes[node].aux = allowed[i].id;
        m->nodes[node].a = allowed[i].arg;
        return push(m, node, at, err);
    }
    if (bytes_eq(mod, ml, "torch"))
        for (size_t i = 0; i < N_DTYPES; i++)
            if (bytes_eq(name, nl, dtypes[i].name)) {
                ING_TRY(new_node(m, TPV_DTYPE, at, &node, err));
                m->nodes[node].aux = (uint16_t)i;
                return push(m, node, at, err);
            }
    /* torch 0.x pickled GPU storages by their own class before normalize_storage_type existed:
     * the bytes in the file are the same, so torch.cuda.<X>Storage reads as torch.<X>Storage. */
    if (bytes_eq(mod, ml, "torch.cuda"))
        for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
            if (allowed[i].id == TG_STORAGE && bytes_eq((const uint8_t *)allowed[i].module,
                                                        ing_strlen(allowed[i].module), "torch") &&
                bytes_eq(name, nl, allowed[i].name)) {
                ING_TRY(new_node(m, TPV_GLOBAL, at, &node, err));
                m->nodes[node].aux = allowed[i].id;
                m->nodes[node].a = allowed[i].arg;
                return push(m, node, at, err);
            }
    const char *why = NULL;
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (bytes_eq(mod, ml, refused[i].module) && bytes_eq(name, nl, refused[i].name))
            why = refused[i].why;
    if (has_prefix(mod, ml, "torch.distributed")) why = "distributed tensors are not supported";
    if ((bytes_eq(mod, ml, "torch._utils") || bytes_eq(mod, ml, "torch._tensor")) && nl >= 8 &&
        ING_MEMCMP(name, "_rebuild", 8) == 0 && !why)
        why = "a tensor rebuild ingot does not know: the tensor cannot be read";
    if (!why) why = code_runner(mod, ml, name, nl);
    if (!why) return placeholder_class(m, mod, ml, name, nl, at, err);
    char where[64];
    size_t wl = ingot__fmt(where, sizeof where, "%.*s.%.*s", (int)(ml > 30 ? 30 : ml),
                           (const char *)mod, (int)(nl > 30 ? 30 : nl), (const char *)name);
    char msg[192];
    ingot__fmt(msg, sizeof msg, "%s of '%.*s.%.*s' refused: %s", ingot__tp_opcode_name(op),
               (int)(ml > 48 ? 48 : ml), (const char *)mod, (int)(nl > 48 ? 48 : nl),
               (const char *)name, why);
    return ingot__err(err, INGOT_UNSUPPORTED, m->base_off + at, where, wl, "%s", msg);
}

/* ---------------------------------------------------------------------------------------------
 * The interpreter
 * ------------------------------------------------------------------------------------------- */

static uint64_t ld_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}

/* Operand length of a length-prefixed opcode: prefix bytes and the value it holds. */
static int len_prefix(uint8_t op)
{
    switch (op) {
    case OP_SHORT_BINUNICODE:
    case OP_SHORT_BINBYTES:
    case OP_SHORT_BINSTRING:
    case OP_LONG1: return 1;
    case OP_BINUNICODE:
    case OP_BINBYTES:
    case OP_BINSTRING: return 4;
    case OP_BINUNICODE8:
    case OP_BINBYTES8: return 8;
    default: return 0;
    }
}

static int fixed_operand(uint8_t op)
{
    switch (op) {
    case OP_PROTO:
    case OP_BINPUT:
    case OP_BINGET:
    case OP_BININT1: return 1;
    case OP_BININT2: return 2;
    case OP_LONG_BINPUT:
    case OP_LONG_BINGET:
    case OP_BININT: return 4;
    case OP_BINFLOAT:
    case OP_FRAME: return 8;
    default: return 0;
    }
}

static bool tier_ab(uint8_t op)
{
    switch (op) {
    case OP_PROTO: case OP_STOP: case OP_GLOBAL: case OP_BINPUT: case OP_LONG_BINPUT:
    case OP_BINGET: case OP_LONG_BINGET: case OP_MARK: case OP_TUPLE: case OP_EMPTY_TUPLE:
    case OP_TUPLE1: case OP_TUPLE2: case OP_TUPLE3: case OP_EMPTY_DICT: case OP_SETITEM:
    case OP_SETITEMS: case OP_EMPTY_LIST: case OP_APPEND: case OP_APPENDS: case OP_NONE:
    case OP_NEWTRUE: case OP_NEWFALSE: case OP_BININT1: case OP_BININT2: case OP_BININT:
    case OP_LONG1: case OP_BINFLOAT: case OP_BINUNICODE: case OP_BINPERSID: case OP_REDUCE:
    case OP_BUILD: case OP_SHORT_BINUNICODE: case OP_BINUNICODE8: case OP_MEMOIZE:
    case OP_FRAME: case OP_STACK_GLOBAL: case OP_SHORT_BINBYTES: case OP_BINBYTES:
    case OP_BINBYTES8: case OP_SHORT_BINSTRING: case OP_BINSTRING: case OP_EMPTY_SET:
    case OP_ADDITEMS: case OP_FROZENSET: case OP_POP: case OP_POP_MARK: case OP_DUP:
    case OP_NEWOBJ: case OP_NEWOBJ_EX:
        return true;
    default:
        return false;
    }
}

ingot_status ingot__tp_scan_end(const uint8_t *buf, uint64_t len, uint64_t start, uint64_t base_off,
                         uint64_t *end, bool *stopped, ingot_error *err)
{
    uint64_t p = start, at = start;
    /* Where the scan cannot go on (a refused opcode or operand), the machine must see enough
     * bytes past the opcode to name the problem exactly as it would over the whole input. */
    uint64_t slack = 16 + 2 * (uint64_t)(TP_MAX_GLOBAL_LINE + 1);
    if (stopped) *stopped = false;
    while (p < len) {
        at = p;
        uint8_t op = buf[p++];
        if (op == OP_STOP) {
            *end = p;
            if (stopped) *stopped = true;
            return INGOT_OK;
        }
        if (!tier_ab(op)) goto refused;
        uint64_t n = (uint64_t)fixed_operand(op);
        int lp = len_prefix(op);
        if (lp) {
            if (len - p < (uint64_t)lp) break;
            n = lp == 1 ? buf[p] : lp == 4 ? ing_ld32(buf + p) : ing_ld64(buf + p);
            if (op == OP_BINSTRING && (n >> 31)) goto refused;
            p += (uint64_t)lp;
        } else if (op == OP_GLOBAL) {
            for (int line = 0; line < 2; line++) {
                uint64_t q = p;
                while (q < len && buf[q] != '\n' && q - p <= TP_MAX_GLOBAL_LINE) q++;
                if (q >= len) goto truncated;
                if (buf[q] != '\n') goto refused;
                p = q + 1;
            }
        }
        if (len - p < n) break;
        p += n;
    }
truncated:
    return ingot__err(err, INGOT_TRUNCATED, base_off + len, "pickle", 6,
                      "pickle ends before its STOP opcode");
refused:
    *end = len - at > slack ? at + slack : len;
    return INGOT_OK;
}

#define NEED(k)                                                                                    \
    do {                                                                                           \
        if (end - p < (uint64_t)(k))                                                               \
            return perr(m, err, INGOT_TRUNCATED, at,                                               \
                        "%s: operand runs past the end of the pickle", ingot__tp_opcode_name(op)); \
    } while (0)

static ingot_status push_str(tp_machine *m, uint8_t kind, uint64_t off, uint64_t len, uint64_t at,
                             uint8_t op, ingot_error *err)
{
    if (kind == TPV_STR && !ingot__utf8_valid(m->buf + off, (size_t)len, true))
        return perr(m, err, INGOT_BAD_STRING, at, "%s: invalid UTF-8", ingot__tp_opcode_name(op));
    uint32_t n = 0;
    ING_TRY(new_node(m, kind, at, &n, err));
    m->nodes[n].a = off;
    m->nodes[n].b = len;
    return push(m, n, at, err);
}

static ingot_status grow_memo(tp_machine *m, uint64_t idx, uint64_t at, ingot_error *err)
{
    size_t old = m->cap_memo;
    if (!ingot__tp_reserve(m->alloc, (void **)&m->memo, &m->cap_memo, (size_t)idx + 1,
                           sizeof(uint32_t)))
        return nomem(m, err, at);
    for (size_t i = old; i < m->cap_memo; i++) m->memo[i] = TP_NONE_IDX;
    return INGOT_OK;
}

static inline ingot_status memo_put(tp_machine *m, uint64_t idx, uint64_t at, uint8_t op,
                                    uint64_t limit, ingot_error *err)
{
    uint32_t v = 0;
    ING_TRY(top(m, &v, at, op, err));
    if (idx > limit)
        return perr(m, err, INGOT_LIMIT, at, "%s: memo index %llu beyond the cap (%llu)",
                    ingot__tp_opcode_name(op), (unsigned long long)idx, (unsigned long long)limit);
    if (idx >= m->cap_memo) ING_TRY(grow_memo(m, idx, at, err));
    if (m->memo[idx] == TP_NONE_IDX) m->memo_count++;
    m->memo[idx] = v;
    return INGOT_OK;
}

static ingot_status memo_get(tp_machine *m, uint64_t idx, uint64_t at, uint8_t op,
                             ingot_error *err)
{
    if (idx >= m->cap_memo || m->memo[idx] == TP_NONE_IDX)
        return perr(m, err, INGOT_BAD_LAYOUT, at, "%s: memo entry %llu was never stored",
                    ingot__tp_opcode_name(op), (unsigned long long)idx);
    return push(m, m->memo[idx], at, err);
}

/* Items of the current segment become cells of `node`; pairs when `pairs`. */
static ingot_status segment_into(tp_machine *m, uint32_t node, bool pairs, uint64_t at, uint8_t op,
                                 ingot_error *err)
{
    size_t base = seg_base(m), k = m->n_stack - base, step = pairs ? 2 : 1;
    if (pairs && (k & 1))
        return perr(m, err, INGOT_BAD_LAYOUT, at, "%s: odd number of items (%zu)",
                    ingot__tp_opcode_name(op), k);
    if (pairs)
        for (size_t i = base; i < m->n_stack; i += 2) {
            uint8_t kk = m->nodes[m->stack[i]].kind;
            if (kk == TPV_LIST || kk == TPV_DICT || kk == TPV_SET || kk == TPV_TENSOR ||
                kk == TPV_STORAGE)
                return perr(m, err, INGOT_BAD_LAYOUT, at, "%s: a %s used as a dict key",
                            ingot__tp_opcode_name(op), kind_name(kk));
        }
    size_t items = k / step;
    if (items == 0) return INGOT_OK;
    /* the items' cells in one block, linked in order (add_cell's checks, once) */
    if (m->n_cells + items > UINT32_MAX - 1) return perr(m, err, INGOT_LIMIT, at, "too many items");
    if (!ingot__tp_reserve(m->alloc, (void **)&m->cells, &m->cap_cells, m->n_cells + items,
                           sizeof(tp_cell)))
        return nomem(m, err, at);
    uint32_t first = (uint32_t)m->n_cells, c = first;
    for (size_t i = base; i < m->n_stack; i += step, c++)
        m->cells[c] = (tp_cell){pairs ? m->stack[i] : TP_NONE_IDX, m->stack[i + step - 1], c + 1};
    m->cells[c - 1].next = TP_NONE_IDX;
    tp_node *t = &m->nodes[node];
    if (t->tail == TP_NONE_IDX) t->head = first;
    else m->cells[t->tail].next = first;
    t->tail = c - 1;
    t->count += (uint32_t)items;
    m->n_cells = c;
    m->n_stack = base;
    return INGOT_OK;
}

ingot_status ingot__tp_run(tp_machine *m, uint64_t start, uint64_t end, uint32_t *root,
                    uint64_t *stop_end, ingot_error *err)
{
    const uint8_t *buf = m->buf;
    if (end > m->buf_len) end = m->buf_len;
    m->n_stack = 0;
    m->n_marks = 0;
    m->memo_count = 0;
    for (size_t i = 0; i < m->cap_memo; i++) m->memo[i] = TP_NONE_IDX;
    uint64_t memo_limit = (end - start) / 2;
    /* Room for the values and items of a torch.save pickle (a state dict needs about one node per
     * 11 bytes and one cell per 6) sized once from its length, so that they are not grown and
     * copied a doubling at a time: each copy touches fresh heap pages, which cost a page fault
     * each when libc returned them between opens. Only the pages used are touched; past the
     * guess (or past 1 << 20 entries) the arrays grow by doubling as before. Neither array is
     * reserved past m->reserve_max bytes (the file's size; a reservation rounds up to at most
     * twice what it asks), so a file that is all pickle gets no allocation larger than itself. */
    uint64_t guess = (end - start) / 8 > (1u << 20) ? (1u << 20) : (end - start) / 8;
    uint64_t lim = m->reserve_max ? m->reserve_max : end - start;
    uint64_t gn = guess, gc = guess * 3 / 2;
    if (gn > lim / (2 * sizeof(tp_node))) gn = lim / (2 * sizeof(tp_node));
    if (gc > lim / (2 * sizeof(tp_cell))) gc = lim / (2 * sizeof(tp_cell));
    if (!ingot__tp_reserve(m->alloc, (void **)&m->nodes, &m->cap_nodes, m->n_nodes + (size_t)gn,
                           sizeof(tp_node)) ||
        !ingot__tp_reserve(m->alloc, (void **)&m->cells, &m->cap_cells, m->n_cells + (size_t)gc,
                           sizeof(tp_cell)))
        return nomem(m, err, start);
    uint64_t p = start;
    for (;;) {
        uint64_t at = p;
        if (p >= end)
            return perr(m, err, INGOT_TRUNCATED, at, "pickle ends without a STOP opcode");
        uint8_t op = buf[p++];
        m->opcodes++;
        if (at == start && op != OP_PROTO)
            return perr(m, err, INGOT_BAD_VERSION, at,
                        "pickle does not start with PROTO (protocol 0 or 1): torch cannot load it "
                        "either");
        uint32_t v[3] = {0, 0, 0}, node = 0;
        switch (op) {
        case OP_PROTO:
            NEED(1);
            if (at != start)
                return perr(m, err, INGOT_BAD_LAYOUT, at, "PROTO is allowed only as the first opcode");
            if (buf[p] < 2 || buf[p] > 5)
                return perr(m, err, INGOT_BAD_VERSION, at, "pickle protocol %u (2 to 5 are read)",
                            buf[p]);
            m->protocol = buf[p++];
            break;
        case OP_FRAME:
            NEED(8);
            if (ing_ld64(buf + p) > end - p - 8)
                return perr(m, err, INGOT_TRUNCATED, at, "FRAME longer than the rest of the pickle");
            p += 8;
            break;
        case OP_STOP:
            if (m->n_marks)
                return perr(m, err, INGOT_BAD_LAYOUT, at, "STOP with an open MARK");
            if (m->n_stack != 1)
                return perr(m, err, INGOT_BAD_LAYOUT, at, "STOP with %zu values on the stack",
                            m->n_stack);
            *root = m->stack[0];
            *stop_end = p;
            return INGOT_OK;
        case OP_MARK:
            if (m->n_marks >= TP_MAX_MARKS)
                return perr(m, err, INGOT_LIMIT, at, "more than %u open MARKs", TP_MAX_MARKS);
            m->marks[m->n_marks++] = (uint32_t)m->n_stack;
            break;
        case OP_POP:
            if (m->n_stack > seg_base(m)) m->n_stack--;
            else if (m->n_marks) m->n_stack = m->marks[--m->n_marks];
            else return underflow(m, err, at, op);
            break;
        case OP_POP_MARK:
            if (!m->n_marks) return perr(m, err, INGOT_BAD_LAYOUT, at, "POP_MARK without a MARK");
            m->n_stack = m->marks[--m->n_marks];
            break;
        case OP_DUP:
            ING_TRY(top(m, &v[0], at, op, err));
            ING_TRY(push(m, v[0], at, err));
            break;
        case OP_GLOBAL: {
            const uint8_t *line[2];
            size_t ll[2];
            for (int k = 0; k < 2; k++) {
                uint64_t q = p;
                while (q < end && buf[q] != '\n' && q - p <= TP_MAX_GLOBAL_LINE) q++;
                if (q >= end)
                    return perr(m, err, INGOT_TRUNCATED, at, "GLOBAL: line without its newline");
                if (buf[q] != '\n')
                    return perr(m, err, INGOT_LIMIT, at, "GLOBAL: line longer than %u bytes",
                                TP_MAX_GLOBAL_LINE);
                line[k] = buf + p;
                ll[k] = (size_t)(q - p);
                p = q + 1;
            }
            ING_TRY(global(m, line[0], ll[0], line[1], ll[1], at, op, err));
            break;
        }
        case OP_STACK_GLOBAL: {
            ING_TRY(pop_n(m, v, 2, at, op, err));
            if (!is_kind(m, v[0], TPV_STR) || !is_kind(m, v[1], TPV_STR))
                return perr(m, err, INGOT_BAD_LAYOUT, at, "STACK_GLOBAL: module/name not strs");
            uint64_t ml, nl;
            const uint8_t *mod = ingot__tp_bytes(m, v[0], &ml),
                          *name = ingot__tp_bytes(m, v[1], &nl);
            if (ml > TP_MAX_GLOBAL_LINE || nl > TP_MAX_GLOBAL_LINE)
                return perr(m, err, INGOT_LIMIT, at, "STACK_GLOBAL: name longer than %u bytes",
                            TP_MAX_GLOBAL_LINE);
            ING_TRY(global(m, mod, (size_t)ml, name, (size_t)nl, at, op, err));
            break;
        }
        case OP_BINPUT:
            NEED(1);
            ING_TRY(memo_put(m, buf[p], at, op, memo_limit, err));
            p += 1;
            break;
        case OP_LONG_BINPUT:
            NEED(4);
            ING_TRY(memo_put(m, ing_ld32(buf + p), at, op, memo_limit, err));
            p += 4;
            break;
        case OP_MEMOIZE:
            ING_TRY(memo_put(m, m->memo_count, at, op, memo_limit, err));
            break;
        case OP_BINGET:
            NEED(1);
            ING_TRY(memo_get(m, buf[p], at, op, err));
            p += 1;
            break;
        case OP_LONG_BINGET:
            NEED(4);
            ING_TRY(memo_get(m, ing_ld32(buf + p), at, op, err));
            p += 4;
            break;
        case OP_TUPLE:
            if (!m->n_marks) return perr(m, err, INGOT_BAD_LAYOUT, at, "TUPLE without a MARK");
            ING_TRY(new_node(m, TPV_TUPLE, at, &node, err));
            ING_TRY(segment_into(m, node, false, at, op, err));
            m->n_marks--;
            ING_TRY(push(m, node, at, err));
            break;
        case OP_EMPTY_TUPLE:
            ING_TRY(push_shared(m, &m->empty_tuple, TPV_TUPLE, 0, at, err));
            break;
        case OP_TUPLE1:
        case OP_TUPLE2:
        case OP_TUPLE3: {
            size_t k = (size_t)(op - OP_TUPLE1 + 1);
            ING_TRY(pop_n(m, v, k, at, op, err));
            ING_TRY(new_node(m, TPV_TUPLE, at, &node, err));
            for (size_t i = 0; i < k; i++) ING_TRY(add_cell(m, node, TP_NONE_IDX, v[i], at, err));
            ING_TRY(push(m, node, at, err));
            break;
        }
        case OP_EMPTY_DICT:
        case OP_EMPTY_LIST:
        case OP_EMPTY_SET:
            ING_TRY(new_node(m, op == OP_EMPTY_DICT ? TPV_DICT
                                : op == OP_EMPTY_LIST ? TPV_LIST
                                                      : TPV_SET,
                             at, &node, err));
            ING_TRY(push(m, node, at, err));
            break;
        case OP_FROZENSET:
            if (!m->n_marks) return perr(m, err, INGOT_BAD_LAYOUT, at, "FROZENSET without a MARK");
            ING_TRY(new_node(m, TPV_SET, at, &node, err));
            ING_TRY(segment_into(m, node, false, at, op, err));
            m->n_marks--;
            ING_TRY(push(m, node, at, err));
            break;
        case OP_SETITEM: {
            ING_TRY(pop_n(m, v, 2, at, op, err));
            ING_TRY(top(m, &node, at, op, err));
            if (!is_kind(m, node, TPV_DICT) && !is_kind(m, node, TPV_OBJECT))
                return perr(m, err, INGOT_BAD_LAYOUT, at, "SETITEM on a %s, not a dict",
                            kind_name(m->nodes[node].kind));
            uint8_t kk = m->nodes[v[0]].kind;
            if (kk == TPV_LIST || kk == TPV_DICT || kk == TPV_SET || kk == TPV_TENSOR ||
                kk == TPV_STORAGE)
                return perr(m, err, INGOT_BAD_LAYOUT, at, "SETITEM: a %s used as a dict key",
                            kind_name(kk));
            ING_TRY(add_cell(m, node, v[0], v[1], at, err));
            break;
        }
        case OP_APPEND:
            ING_TRY(pop_n(m, v, 1, at, op, err));
            ING_TRY(top(m, &node, at, op, err));
            if (!is_kind(m, node, TPV_LIST) && !is_kind(m, node, TPV_OBJECT))
                return perr(m, err, INGOT_BAD_LAYOUT, at, "APPEND on a %s, not a list",
                            kind_name(m->nodes[node].kind));
            ING_TRY(add_cell(m, node, TP_NONE_IDX, v[0], at, err));
            break;
        case OP_SETITEMS:
        case OP_APPENDS:
        case OP_ADDITEMS: {
            if (!m->n_marks)
                return perr(m, err, INGOT_BAD_LAYOUT, at, "%s without a MARK",
                            ingot__tp_opcode_name(op));
            size_t below = m->n_marks >= 2 ? m->marks[m->n_marks - 2] : 0;
            size_t base = seg_base(m);
            if (base <= below)
                return perr(m, err, INGOT_BAD_LAYOUT, at, "%s: no target below the MARK",
                            ingot__tp_opcode_name(op));
            node = m->stack[base - 1];
            uint8_t want = op == OP_SETITEMS ? TPV_DICT : op == OP_APPENDS ? TPV_LIST : TPV_SET;
            if (!is_kind(m, node, want) && !is_kind(m, node, TPV_OBJECT))
                return perr(m, err, INGOT_BAD_LAYOUT, at, "%s on a %s, not a %s",
                            ingot__tp_opcode_name(op), kind_name(m->nodes[node].kind),
                            kind_name(want));
            ING_TRY(segment_into(m, node, op == OP_SETITEMS, at, op, err));
            m->n_marks--;
            break;
        }
        case OP_NONE:
            ING_TRY(push_shared(m, &m->none_node, TPV_NONE, 0, at, err));
            break;
        case OP_NEWTRUE:
        case OP_NEWFALSE:
            ING_TRY(push_shared(m, &m->bool_node[op == OP_NEWTRUE], TPV_BOOL, op == OP_NEWTRUE,
                                at, err));
            break;
        case OP_BININT1:
            NEED(1);
            ING_TRY(new_int(m, buf[p], at, err));
            p += 1;
            break;
        case OP_BININT2:
            NEED(2);
            ING_TRY(new_int(m, ing_ld16(buf + p), at, err));
            p += 2;
            break;
        case OP_BININT:
            NEED(4);
            ING_TRY(new_int(m, (int32_t)ing_ld32(buf + p), at, err));
            p += 4;
            break;
        case OP_LONG1: {
            NEED(1);
            uint32_t n = buf[p++];
            NEED(n);
            if (n <= 8) {
                uint64_t x = 0;
                for (uint32_t i = 0; i < n; i++) x |= (uint64_t)buf[p + i] << (8 * i);
                if (n && n < 8 && (buf[p + n - 1] & 0x80)) x |= ~0ull << (8 * n);
                ING_TRY(new_int(m, (int64_t)x, at, err));
            } else {
                ING_TRY(new_node(m, TPV_BIGINT, at, &node, err));
                m->nodes[node].a = p;
                m->nodes[node].b = n;
                ING_TRY(push(m, node, at, err));
            }
            p += n;
            break;
        }
        case OP_BINFLOAT: {
            NEED(8);
            ING_TRY(new_node(m, TPV_FLOAT, at, &node, err));
            m->nodes[node].a = ld_be64(buf + p);
            ING_TRY(push(m, node, at, err));
            p += 8;
            break;
        }
        case OP_BINUNICODE:
        case OP_SHORT_BINUNICODE:
        case OP_BINUNICODE8:
        case OP_SHORT_BINBYTES:
        case OP_BINBYTES:
        case OP_BINBYTES8:
        case OP_SHORT_BINSTRING:
        case OP_BINSTRING: {
            int lp = len_prefix(op);
            NEED(lp);
            uint64_t n = lp == 1 ? buf[p] : lp == 4 ? ing_ld32(buf + p) : ing_ld64(buf + p);
            if (op == OP_BINSTRING && (n >> 31))
                return perr(m, err, INGOT_BAD_STRING, at, "BINSTRING with a negative length");
            p += (uint64_t)lp;
            if (n > end - p)
                return perr(m, err, INGOT_TRUNCATED, at,
                            "%s of %llu bytes runs past the end of the pickle",
                            ingot__tp_opcode_name(op), (unsigned long long)n);
            bool bytes = op == OP_SHORT_BINBYTES || op == OP_BINBYTES || op == OP_BINBYTES8;
            ING_TRY(push_str(m, bytes ? TPV_BYTES : TPV_STR, p, n, at, op, err));
            p += n;
            break;
        }
        case OP_BINPERSID:
            ING_TRY(pop_n(m, v, 1, at, op, err));
            if (m->pid_len == 0) ING_TRY(tar_persid(m, v[0], at, &node, err));
            else ING_TRY(persid(m, v[0], at, &node, err));
            ING_TRY(push(m, node, at, err));
            break;
        case OP_REDUCE:
            ING_TRY(pop_n(m, v, 1, at, op, err));
            ING_TRY(top(m, &v[1], at, op, err));
            ING_TRY(reduce(m, v[1], v[0], at, 0, &node, err));
            m->stack[m->n_stack - 1] = node;
            break;
        case OP_NEWOBJ:
        case OP_NEWOBJ_EX: {
            /* cls args [kwargs] -> obj: only a placeholder class may be instantiated, and only
             * as a placeholder (torch.save's own values never use NEWOBJ). */
            size_t k = op == OP_NEWOBJ ? 1 : 2;
            ING_TRY(pop_n(m, v, k, at, op, err));
            ING_TRY(top(m, &v[2], at, op, err));
            uint8_t ck = m->nodes[v[2]].kind;
            if (ck != TPV_CLASS && ck != TPV_OBJECT)
                return perr(m, err, INGOT_UNSUPPORTED, at,
                            "%s of a %s (only classes outside the allow-list become placeholders)",
                            ingot__tp_opcode_name(op), kind_name(ck));
            if (!is_kind(m, v[0], TPV_TUPLE) || (k == 2 && !is_kind(m, v[1], TPV_DICT)))
                return perr(m, err, INGOT_BAD_LAYOUT, at, "%s: arguments are not a tuple%s",
                            ingot__tp_opcode_name(op), k == 2 ? " and a dict" : "");
            ING_TRY(placeholder_object(m, v[2], v[0], op, at, &node, err));
            m->stack[m->n_stack - 1] = node;
            break;
        }
        case OP_BUILD: {
            ING_TRY(pop_n(m, v, 1, at, op, err));
            ING_TRY(top(m, &node, at, op, err));
            tp_node *d = &m->nodes[node];
            if (d->kind == TPV_OBJECT) { /* state kept as data; __setstate__ is never run */
                d->attrs = v[0];
                break;
            }
            if (d->kind != TPV_DICT || !(d->flags & TPN_ORDERED))
                return perr(m, err, INGOT_UNSUPPORTED, at,
                            "BUILD on a %s (only an OrderedDict() may receive attributes)",
                            kind_name(d->kind));
            const tp_node *s = &m->nodes[v[0]];
            if (s->kind != TPV_DICT)
                return perr(m, err, INGOT_UNSUPPORTED, at, "BUILD with a %s state, not a dict",
                            kind_name(s->kind));
            for (uint32_t c = s->head; c != TP_NONE_IDX; c = m->cells[c].next)
                if (!is_kind(m, m->cells[c].key, TPV_STR))
                    return perr(m, err, INGOT_UNSUPPORTED, at, "BUILD state with a non-str key");
            d->attrs = v[0];
            break;
        }
        default: {
            const char *name = ingot__tp_opcode_name(op);
            if (name)
                return perr(m, err, INGOT_UNSUPPORTED, at, "opcode %s (0x%02x) refused", name, op);
            return perr(m, err, INGOT_UNSUPPORTED, at, "undefined pickle opcode 0x%02x", op);
        }
        }
    }
}
