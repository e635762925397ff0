/*
 * torch_pickle.h - the restricted pickle machine of the PyTorch adapter
 * (../shared/formats/pytorch.md §3, §4, §6).
 *
 * The machine decodes only the opcodes and globals the spec allows and builds plain values, a
 * storage table and a tensor table; nothing is ever called, imported or executed. Every other
 * opcode or global is refused with an error naming it and its byte offset. Values are nodes in
 * one arena addressed by index; the stack and the memo hold indices, so a container filled after
 * it was memoized is seen filled through every reference, as in Python.
 *
 * One machine can run several pickles one after the other (the legacy format has five): each run
 * has its own stack and memo; the arena, storage table and tensor table persist.
 */
#ifndef INGOT_TORCH_PICKLE_H
#define INGOT_TORCH_PICKLE_H

#include "deps.h"
#include "ingot/core.h"

/* Caps (spec §3.7). */
#define TP_MAX_PICKLE (256ull << 20) /* data.pkl / one legacy pickle */
#define TP_MAX_MARKS 256u
#define TP_MAX_GLOBAL_LINE 256u
#define TP_MAX_NEST 64u             /* container nesting while flattening */
#define TP_MIN_VISITS (1ull << 22)  /* flattening visits: max(this, 2 x opcodes) */
#define TP_MAX_NAME 65535u          /* flattened name length */
#define TP_MIN_NAMES (4ull << 20)   /* flattened name bytes: this + 16 x the pickle bytes */
#define TP_NONE_IDX UINT32_MAX

typedef enum {
    TPV_NONE = 1,
    TPV_BOOL,
    TPV_INT,
    TPV_BIGINT, /* LONG1 with > 8 bytes: little-endian two's complement bytes */
    TPV_FLOAT,
    TPV_STR,
    TPV_BYTES,
    TPV_TUPLE,
    TPV_LIST,
    TPV_DICT,
    TPV_SET,
    TPV_GLOBAL,
    TPV_STORAGE,
    TPV_TENSOR,
    TPV_DTYPE,
    TPV_DEVICE,
    TPV_CLASS,  /* placeholder: a GLOBAL outside the allow-list (a tag, never imported) */
    TPV_OBJECT, /* placeholder: what REDUCE / NEWOBJ / NEWOBJ_EX made of a TPV_CLASS */
} tp_kind;

/* Node flags. */
enum {
    TPN_POOL = 1,      /* STR/BYTES/DEVICE bytes live in the machine's pool, not in the pickle */
    TPN_ORDERED = 2,   /* DICT made by OrderedDict() (BUILD allowed on it) */
    TPN_NOTICED = 4,   /* CLASS/OBJECT already described by a notice (flattening) */
    TPN_WALKING = 8,   /* OBJECT whose contents are being flattened (cycle guard) */
};

typedef struct {
    uint8_t kind;
    uint8_t flags;
    uint16_t aux;   /* GLOBAL: tp_global id; DTYPE: torch dtype id; GLOBAL storage type: stype */
    uint32_t count; /* containers: items (dict: pairs) */
    uint32_t attrs; /* DICT: node of the BUILD state, or TP_NONE_IDX */
    uint32_t head, tail; /* containers: first/last cell, TP_NONE_IDX when empty */
    uint64_t a;     /* INT value, FLOAT bits, BOOL; STR/BYTES/BIGINT offset; STORAGE/TENSOR index */
    uint64_t b;     /* STR/BYTES/BIGINT length */
} tp_node;
/* Placeholders (spec §3.4 lists what is allowed; everything else the pickle names becomes one):
 *   CLASS   a, b: "module.name" in the pool (TPN_POOL, so ingot__tp_bytes works); count: offset of
 *           the GLOBAL / STACK_GLOBAL opcode (relative to buf; buffers are < 4 GiB).
 *   OBJECT  a: the CLASS (or OBJECT) node it was made from | the args node << 32; b: offset of the
 *           REDUCE / NEWOBJ / NEWOBJ_EX opcode; attrs: the BUILD state or TP_NONE_IDX; head, tail,
 *           count: items added by SETITEM(S) (key set), APPEND(S) and ADDITEMS (key unset). */

typedef struct {
    uint32_t key; /* dict cells: key node; else TP_NONE_IDX */
    uint32_t val;
    uint32_t next;
} tp_cell;

/* Storage types (spec §3.5). */
typedef enum {
    TPS_DOUBLE = 1, TPS_FLOAT, TPS_HALF, TPS_BFLOAT16, TPS_LONG, TPS_INT, TPS_SHORT, TPS_CHAR,
    TPS_BYTE, TPS_BOOL, TPS_CFLOAT, TPS_CDOUBLE, TPS_UNTYPED,
} tp_stype;

typedef struct {
    uint32_t key_node; /* STR node of the key */
    uint8_t stype;
    uint8_t esize;
    uint64_t numel;
    uint64_t nbytes;
    uint64_t pid_offset; /* byte offset of the first BINPERSID that named it (errors) */
    /* Filled by the adapter: */
    uint64_t data_offset; /* absolute file offset of the storage bytes */
    uint32_t record;      /* adapter's record index */
    uint32_t crc;
    bool has_crc;
    bool used;
} tp_storage;

enum { TPT_REQUIRES_GRAD = 1, TPT_PARAMETER = 2 };

/* A tensor's sizes and strides live in the machine's dims pool (tp_size, tp_stride), so a tensor
 * costs 16 bytes per dimension it has, not per dimension it could have (INGOT_MAX_RANK). */
typedef struct {
    uint32_t storage;
    uint32_t ndim;
    uint64_t offset; /* storage offset in elements */
    size_t dims;     /* m->dims[dims, +ndim): sizes; [dims + ndim, +ndim): strides (>= 0) */
    uint64_t nelem;
    uint16_t dtype; /* ingot_dtype */
    uint8_t esize;
    uint8_t flags;
    bool contiguous;
    uint64_t pid_offset; /* byte offset of the REDUCE that built it (errors) */
} tp_tensor;

typedef struct tp_machine {
    const ingot_allocator *alloc;
    const uint8_t *buf; /* all pickles of one run sit in buf[0, buf_len) */
    uint64_t buf_len;
    uint64_t base_off; /* file offset of buf[0], for error offsets */
    uint32_t pid_len;  /* 5 (zip), 6 (legacy) or 0 (tar: ids are keys of the persist table) */
    /* The most bytes ingot__tp_run reserves up front for each of its node and cell arrays
     * (RELIABILITY: no allocation past the file's size): the caller's file size, or 0 for the
     * pickle's own length. Past it the arrays grow as the pickle asks. */
    uint64_t reserve_max;

    tp_node *nodes;
    size_t n_nodes, cap_nodes;
    tp_cell *cells;
    size_t n_cells, cap_cells;
    uint32_t *stack;
    size_t n_stack, cap_stack;
    uint32_t marks[TP_MAX_MARKS];
    uint32_t n_marks;
    uint32_t *memo;
    size_t cap_memo;
    uint64_t memo_count;
    uint8_t *pool;
    size_t n_pool, cap_pool;

    tp_storage *storages;
    size_t n_storages, cap_storages;
    uint32_t *st_hash; /* open addressing over storages, TP_NONE_IDX empty */
    size_t st_hash_cap;
    tp_tensor *tensors;
    size_t n_tensors, cap_tensors;
    uint64_t *dims; /* sizes and strides of every tensor */
    size_t n_dims, cap_dims;

    /* Tar checkpoints: persistent id (an int or its decimal str) -> TENSOR / STORAGE node, sorted
     * by key once sealed. */
    int64_t *pkeys;
    uint32_t *pnodes;
    size_t n_pkeys, cap_pkeys, cap_pnodes;

    uint64_t opcodes; /* executed, over every run */
    uint32_t protocol; /* of the last run */

    /* Immutable values made once and shared by every opcode that makes them again (no node per
     * BININT / NEWFALSE / EMPTY_TUPLE): ints by a direct-mapped cache keyed by value, None,
     * False, True and the empty tuple; TP_NONE_IDX until made. Nothing writes to such a node
     * after it is made, so sharing is invisible (as in CPython, where small ints and () are
     * singletons). */
    uint32_t int_cache[64];
    uint32_t none_node, bool_node[2], empty_tuple;
} tp_machine;

/* Initialises an empty machine over buf (kept borrowed until ingot__tp_free). */
void ingot__tp_init(tp_machine *m, const ingot_allocator *alloc, const uint8_t *buf,
                    uint64_t buf_len, uint64_t base_off, uint32_t pid_len);
void ingot__tp_free(tp_machine *m);

/* Runs one pickle starting at buf[start]; it must end (STOP) at or before buf[end]. On success
 * *root is the result node and *stop_end the offset just past STOP. */
ingot_status ingot__tp_run(tp_machine *m, uint64_t start, uint64_t end, uint32_t *root,
                    uint64_t *stop_end, ingot_error *err);

/* Finds the end of a pickle (just past its STOP; *stopped true) by decoding opcode lengths only;
 * TRUNCATED if buf ends first (the caller may retry with more bytes). At an opcode or operand the
 * scan cannot pass, *stopped is false and *end leaves ingot__tp_run enough bytes to name the
 * problem. */
ingot_status ingot__tp_scan_end(const uint8_t *buf, uint64_t len, uint64_t start, uint64_t base_off,
                         uint64_t *end, bool *stopped, ingot_error *err);

/* Bytes of a STR/BYTES/DEVICE/BIGINT node. */
const uint8_t *ingot__tp_bytes(const tp_machine *m, uint32_t node, uint64_t *len);

/* Index of the storage with this key, or -1. */
int64_t ingot__tp_storage_find(const tp_machine *m, const uint8_t *key, uint64_t len);

/* Appends the tensor exposing a bare storage (1-D, all elements); *out its index. */
ingot_status ingot__tp_storage_tensor(tp_machine *m, uint32_t storage, uint32_t *out,
                                      ingot_error *err);

/* ---- Tar checkpoints (torch <= 0.1.9, torch_tar.c): storages and tensors are described outside
 * the object pickle and found by persistent id. `at` is an offset relative to m->buf. */

/* If node is a storage type global (torch.FloatStorage), its tp_stype and element size. */
bool ingot__tp_storage_type(const tp_machine *m, uint32_t node, uint8_t *stype, uint8_t *esize);
/* Appends a storage of numel elements at absolute file offset data_offset under persistent key
 * `key`; *index its index. */
ingot_status ingot__tp_tar_storage(tp_machine *m, int64_t key, uint8_t stype, uint64_t numel,
                                   uint64_t data_offset, uint64_t at, uint32_t *index,
                                   ingot_error *err);
/* Appends a tensor viewing storage `storage` (the checks of a tensor rebuild) under key `key`. */
ingot_status ingot__tp_tar_tensor(tp_machine *m, int64_t key, uint32_t storage, uint64_t offset,
                                  uint32_t ndim, const uint64_t *size, const int64_t *stride,
                                  uint64_t at, ingot_error *err);
/* Sorts the persistent keys; DUPLICATE if one is used twice. */
ingot_status ingot__tp_tar_seal(tp_machine *m, uint64_t at, ingot_error *err);

/* torch's name of a DTYPE node's dtype ("float16"). */
const char *ingot__tp_dtype_torch_name(uint16_t id);

/* Name of a pickle opcode ("INST"), or NULL for an undefined byte. */
const char *ingot__tp_opcode_name(uint8_t op);

/* Sizes (t->ndim of them) and strides (in elements) of a tensor of machine m. */
static inline const uint64_t *tp_size(const tp_machine *m, const tp_tensor *t)
{
    return m->dims + t->dims;
}
static inline const int64_t *tp_stride(const tp_machine *m, const tp_tensor *t)
{
    return (const int64_t *)(const void *)(m->dims + t->dims + t->ndim);
}

/* The storage key bytes. */
static inline const uint8_t *tp_storage_key(const tp_machine *m, size_t s, uint64_t *len)
{
    return ingot__tp_bytes(m, m->storages[s].key_node, len);
}

/* Growth helper: makes room for `need` elements of `elem` bytes in *p (capacity *cap). */
bool ingot__tp_reserve(const ingot_allocator *a, void **p, size_t *cap, size_t need, size_t elem);

/* ------------------------------------------------------------------------------------------
 * Flattening (torch_flatten.c): names and typed metadata of spec §6.
 * ---------------------------------------------------------------------------------------- */

typedef struct {
    uint64_t name_off; /* into tp_flat.names (NUL-terminated) */
    uint32_t name_len;
    uint32_t tensor; /* index into the machine's tensor table */
} tp_entry;

enum { TPM_NODE = 0, TPM_NAMES = 1 };

typedef struct {
    uint64_t key_off;
    uint32_t key_len;
    uint8_t type;     /* ingot_meta_type */
    bool is_array;
    uint8_t src;      /* scalar STRING/BYTES: TPM_NODE (value = node) or TPM_NAMES (offset) */
    uint64_t count;   /* array elements, or string/bytes length, or 1 */
    uint64_t value;   /* scalar numeric bits; array: first index into vals/refs; str: node */
} tp_meta;

/* A placeholder reached while flattening, described by a notice: the first path reaching it. */
typedef struct {
    uint32_t node;
    uint32_t name_len;
    uint64_t name_off; /* into tp_flat.names */
} tp_place;

typedef struct {
    char *names;
    size_t n_names, cap_names;
    tp_entry *entries;
    size_t n_entries, cap_entries;
    uint32_t *sorted; /* entry indices by name */
    tp_meta *metas;
    size_t n_metas, cap_metas;
    uint32_t *msorted;
    uint64_t *vals; /* numeric array elements (I64 / F64 bits / BOOL 0-1) */
    size_t n_vals, cap_vals;
    uint32_t *refs; /* string array elements: nodes */
    size_t n_refs, cap_refs;
    tp_place *places; /* placeholders, sorted by node (= by the offset of their opcode) */
    size_t n_places, cap_places;
} tp_flat;

/* Walks the root and fills fl. Tensor names that end up equal, or equal to a metadata key, are
 * DUPLICATE. */
ingot_status ingot__tp_flatten(tp_machine *m, uint32_t root, uint64_t root_off, tp_flat *fl,
                        ingot_error *err);
void ingot__tp_flat_free(tp_flat *fl, const ingot_allocator *a);
/* Class name ("argparse.Namespace"), opcode name and offset (relative to the machine's buf) of a
 * CLASS or OBJECT node. */
void ingot__tp_place_describe(const tp_machine *m, uint32_t node, const uint8_t **cls,
                              uint64_t *cls_len, const char **op, uint64_t *at);
/* Index of entry / metadata named [name, +len) in sorted order, or -1. */
int64_t ingot__tp_flat_find(const tp_flat *fl, const char *name, size_t len);
int64_t ingot__tp_flat_meta_find(const tp_flat *fl, const char *key, size_t len);

#endif
