/*
 * test_torch_pickle.c - the restricted pickle machine of the PyTorch adapter on hand-made pickles
 * (../shared/formats/pytorch.md §3, §6, §7): values and memo semantics, one refusal test per
 * forbidden construct (Tier C opcodes, arbitrary GLOBAL / STACK_GLOBAL / REDUCE, INST/OBJ, BUILD
 * on anything but an OrderedDict, protocols 0/1, pickled modules, quantized and sparse tensors),
 * structural errors, every cap of §3.7, tensor rebuild checks and flattening rules. Each refusal
 * asserts the status, the byte offset and that the message names the opcode or global.
 */
#include "harness.h"
#include "torch_pickle.h"

typedef struct {
    uint8_t b[1 << 16];
    size_t n;
} pk;

static void by(pk *p, uint8_t v) { p->b[p->n++] = v; }
static void raw(pk *p, const void *s, size_t n)
{
    memcpy(p->b + p->n, s, n);
    p->n += n;
}
static void u32le(pk *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) by(p, (uint8_t)(v >> (8 * i)));
}
static void start(pk *p)
{
    p->n = 0;
    by(p, 0x80);
    by(p, 2);
}
static void str(pk *p, const char *s)
{
    by(p, 'X');
    u32le(p, (uint32_t)strlen(s));
    raw(p, s, strlen(s));
}
static void glob(pk *p, const char *mod, const char *name)
{
    by(p, 'c');
    raw(p, mod, strlen(mod));
    by(p, '\n');
    raw(p, name, strlen(name));
    by(p, '\n');
}
static void int1(pk *p, uint8_t v)
{
    by(p, 'K');
    by(p, v);
}
static void bint(pk *p, int32_t v)
{
    by(p, 'J');
    u32le(p, (uint32_t)v);
}
static void stop(pk *p) { by(p, '.'); }

/* ('storage', torch.<stype>, key, 'cpu', numel) BINPERSID */
static void pid(pk *p, const char *stype_mod, const char *stype, const char *key, int32_t numel)
{
    by(p, '(');
    str(p, "storage");
    glob(p, stype_mod, stype);
    str(p, key);
    str(p, "cpu");
    bint(p, numel);
    by(p, 't');
    by(p, 'Q');
}

/* _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict()) on a FloatStorage. */
static void tensor_v2n(pk *p, const char *key, int32_t numel, int32_t offset, int nd,
                       const int32_t *size, int ns, const int32_t *stride)
{
    glob(p, "torch._utils", "_rebuild_tensor_v2");
    by(p, '(');
    pid(p, "torch", "FloatStorage", key, numel);
    bint(p, offset);
    by(p, '(');
    for (int i = 0; i < nd; i++) bint(p, size[i]);
    by(p, 't');
    by(p, '(');
    for (int i = 0; i < ns; i++) bint(p, stride[i]);
    by(p, 't');
    by(p, 0x89);
    glob(p, "collections", "OrderedDict");
    by(p, ')');
    by(p, 'R');
    by(p, 't');
    by(p, 'R');
}

static void tensor_v2(pk *p, const char *key, int32_t numel, int32_t offset, int nd,
                      const int32_t *size, const int32_t *stride)
{
    tensor_v2n(p, key, numel, offset, nd, size, nd, stride);
}

static void tensor1(pk *p, const char *key, int32_t n)
{
    int32_t one = 1;
    tensor_v2(p, key, n, 0, 1, &n, &one);
}

typedef struct {
    tp_machine m;
    tp_flat fl;
    ingot_error e;
    ingot_status st;
    uint32_t root;
} res;

static ingot_allocator libc_alloc; /* zeroed: libc */

static void run_pk(const pk *p, res *r, bool flatten)
{
    memset(&r->e, 0, sizeof r->e);
    memset(&r->fl, 0, sizeof r->fl);
    ingot__tp_init(&r->m, &libc_alloc, p->b, p->n, 0, 5);
    uint64_t end;
    r->st = ingot__tp_run(&r->m, 0, p->n, &r->root, &end, &r->e);
    if (r->st == INGOT_OK && end != p->n) r->st = INGOT_BAD_LAYOUT;
    if (r->st == INGOT_OK && flatten) r->st = ingot__tp_flatten(&r->m, r->root, 0, &r->fl, &r->e);
}

static void done(res *r)
{
    ingot__tp_flat_free(&r->fl, &libc_alloc);
    ingot__tp_free(&r->m);
}

/* Runs p; expects `want`, the error at byte `off` (UINT64_MAX: any) and `needle` in the message
 * or the where field. */
#define EXPECT(p, want, off, needle)                                                               \
    do {                                                                                           \
        res r_;                                                                                    \
        run_pk((p), &r_, true);                                                                    \
        ingot_status st_ = r_.st;                                                                  \
        ingot_error e_ = r_.e;                                                                     \
        done(&r_);                                                                                 \
        if (st_ != (want))                                                                         \
            FAIL_AT("got %s (%s), want %s", ingot_status_name(st_), e_.msg,                        \
                    ingot_status_name(want));                                                      \
        if ((uint64_t)(off) != UINT64_MAX && e_.offset != (uint64_t)(off))                         \
            FAIL_AT("error at byte %" PRIu64 ", want %" PRIu64 " (%s)", e_.offset,                 \
                    (uint64_t)(off), e_.msg);                                                      \
        const char *nd_ = (needle);                                                                \
        if (nd_ && !strstr(e_.msg, nd_) && !strstr(e_.where, nd_))                                 \
            FAIL_AT("message '%s' [%s] does not name '%s'", e_.msg, e_.where, nd_);                \
    } while (0)

/* ---------------------------------------------------------------------------------------------
 * Values, memo, flattening
 * ------------------------------------------------------------------------------------------- */

TEST(scalars_become_typed_metadata)
{
    pk p;
    start(&p);
    by(&p, '}');
    by(&p, '(');
    str(&p, "i"), int1(&p, 200);
    str(&p, "j"), bint(&p, -7);
    str(&p, "m"), by(&p, 'M'), by(&p, 0x34), by(&p, 0x12);
    str(&p, "f"), by(&p, 'G'), raw(&p, "\x3f\xf8\0\0\0\0\0\0", 8); /* 1.5 big-endian */
    str(&p, "t"), by(&p, 0x88);
    str(&p, "s"), str(&p, "h\xc3\xa9");
    str(&p, "big"), by(&p, 0x8A), by(&p, 9), raw(&p, "\0\0\0\0\0\0\0\0\x80", 9); /* -2^71 */
    str(&p, "l8"), by(&p, 0x8A), by(&p, 2), raw(&p, "\xff\x7f", 2);              /* 32767 */
    str(&p, "neg"), by(&p, 0x8A), by(&p, 1), by(&p, 0xFE);                         /* -2 */
    str(&p, "none"), by(&p, 'N');
    str(&p, "arr"), by(&p, ']'), by(&p, '('), int1(&p, 1), int1(&p, 2), int1(&p, 3), by(&p, 'e');
    str(&p, "mixed"), by(&p, '('), by(&p, 0x88), int1(&p, 4), by(&p, 't');
    str(&p, "empty"), by(&p, ']');
    str(&p, "strs"), by(&p, '('), str(&p, "a"), str(&p, "bc"), by(&p, 't');
    by(&p, 'u');
    stop(&p);
    res r;
    run_pk(&p, &r, true);
    ASSERT_OK(r.st);
    ASSERT_U64(r.fl.n_entries, 0);
    ASSERT_U64(r.fl.n_metas, 13);
    struct {
        const char *key;
        uint8_t type;
        bool arr;
        uint64_t count;
        int64_t v;
    } want[] = {
        {"i", INGOT_META_I64, false, 1, 200},    {"j", INGOT_META_I64, false, 1, -7},
        {"m", INGOT_META_I64, false, 1, 0x1234}, {"f", INGOT_META_F64, false, 1, 0},
        {"t", INGOT_META_BOOL, false, 1, 1},     {"s", INGOT_META_STRING, false, 3, 0},
        {"big", INGOT_META_STRING, false, 23, 0}, {"l8", INGOT_META_I64, false, 1, 32767},
        {"neg", INGOT_META_I64, false, 1, -2},   {"arr", INGOT_META_I64, true, 3, 0},
        {"mixed/0", INGOT_META_BOOL, false, 1, 1}, {"mixed/1", INGOT_META_I64, false, 1, 4},
        {"strs", INGOT_META_STRING, true, 2, 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int64_t k = ingot__tp_flat_meta_find(&r.fl, want[i].key, strlen(want[i].key));
        CHECK(k >= 0, "missing %s", want[i].key);
        if (k < 0) continue;
        const tp_meta *mt = &r.fl.metas[k];
        CHECK(mt->type == want[i].type && mt->is_array == want[i].arr &&
                  mt->count == want[i].count,
              "%s: type %u arr %d count %" PRIu64, want[i].key, mt->type, mt->is_array, mt->count);
        if (!mt->is_array && (mt->type == INGOT_META_I64 || mt->type == INGOT_META_BOOL))
            CHECK((int64_t)mt->value == want[i].v, "%s value %" PRId64, want[i].key,
                  (int64_t)mt->value);
    }
    int64_t k = ingot__tp_flat_meta_find(&r.fl, "big", 3);
    ASSERT_TRUE(k >= 0 && r.fl.metas[k].src == TPM_NAMES);
    ASSERT_MEM(r.fl.names + r.fl.metas[k].value, "-2361183241434822606848", 23);
    k = ingot__tp_flat_meta_find(&r.fl, "f", 1);
    double d;
    memcpy(&d, &r.fl.metas[k].value, 8);
    ASSERT_TRUE(d == 1.5);
    ASSERT_TRUE(ingot__tp_flat_meta_find(&r.fl, "none", 4) < 0);
    ASSERT_TRUE(ingot__tp_flat_meta_find(&r.fl, "empty", 5) < 0);
    done(&r);
}

TEST(memo_references_share_nodes)
{
    /* d = {}; memo0 = d; ... BINGET 0 later sees d filled; LONG_BINPUT 300 / LONG_BINGET 300 */
    pk p;
    start(&p);
    by(&p, '}');
    by(&p, 'q'), by(&p, 0);
    char pad[701];
    memset(pad, 'z', 700);
    pad[700] = 0;
    str(&p, "pad"), str(&p, pad), by(&p, 's'); /* the memo cap is pickle size / 2 */
    str(&p, "x");
    by(&p, ']'), by(&p, 'r'), u32le(&p, 300); /* memo300 = list */
    by(&p, 's');                              /* d['x'] = list */
    by(&p, 'j'), u32le(&p, 300);              /* the same list */
    int1(&p, 9), by(&p, 'a');                 /* list.append(9) */
    by(&p, '0');                              /* POP */
    str(&p, "y"), by(&p, 'h'), by(&p, 0), by(&p, 's'); /* d['y'] = d: a cycle, not flattened */
    stop(&p);
    res r;
    run_pk(&p, &r, false);
    ASSERT_OK(r.st);
    const tp_node *d = &r.m.nodes[r.root];
    ASSERT_EQ(d->kind, TPV_DICT);
    ASSERT_EQ(d->count, 3);
    const tp_node *l = &r.m.nodes[r.m.cells[r.m.cells[d->head].next].val];
    ASSERT_EQ(l->kind, TPV_LIST);
    ASSERT_EQ(l->count, 1); /* appended through the memo reference */
    /* The cycle is cut by the nesting cap when flattening. */
    ASSERT_ST(ingot__tp_flatten(&r.m, r.root, 0, &r.fl, &r.e), INGOT_LIMIT);
    done(&r);
}

TEST(protocol4_opcodes)
{
    pk p;
    start(&p);
    p.b[1] = 4;
    by(&p, 0x95), raw(&p, "\x10\0\0\0\0\0\0\0", 8); /* FRAME */
    by(&p, '}'), by(&p, 0x94);                      /* MEMOIZE -> memo0 */
    by(&p, 0x8C), by(&p, 1), by(&p, 'k');           /* SHORT_BINUNICODE */
    by(&p, 0x8C), by(&p, 11), raw(&p, "collections", 11), by(&p, 0x94);
    by(&p, 0x8C), by(&p, 11), raw(&p, "OrderedDict", 11), by(&p, 0x94);
    by(&p, 0x93), by(&p, ')'), by(&p, 'R');         /* STACK_GLOBAL, OrderedDict() */
    by(&p, 's');
    by(&p, 'h'), by(&p, 2), by(&p, '2'), by(&p, '0'); /* DUP then POP */
    by(&p, '0');
    str(&p, "b"), by(&p, 'C'), by(&p, 2), raw(&p, "\x01\x02", 2), by(&p, 's'); /* SHORT_BINBYTES */
    str(&p, "s"), by(&p, 0x8F), by(&p, '('), int1(&p, 5), by(&p, 0x90), by(&p, 's'); /* set */
    str(&p, "u"), by(&p, 'U'), by(&p, 2), raw(&p, "py", 2), by(&p, 's'); /* SHORT_BINSTRING */
    stop(&p);
    res r;
    run_pk(&p, &r, true);
    ASSERT_OK(r.st);
    ASSERT_U64(r.m.protocol, 4);
    ASSERT_TRUE(ingot__tp_flat_meta_find(&r.fl, "b", 1) >= 0);
    ASSERT_TRUE(ingot__tp_flat_meta_find(&r.fl, "s", 1) >= 0);
    ASSERT_TRUE(ingot__tp_flat_meta_find(&r.fl, "u", 1) >= 0);
    done(&r);
}

TEST(state_dict_with_views_and_tied_names)
{
    pk p;
    start(&p);
    glob(&p, "collections", "OrderedDict");
    by(&p, ')'), by(&p, 'R'), by(&p, 'q'), by(&p, 1);
    by(&p, '(');
    str(&p, "w");
    int32_t sz[2] = {2, 3}, sd[2] = {3, 1}, tsd[2] = {1, 2};
    tensor_v2(&p, "0", 6, 0, 2, sz, sd);
    by(&p, 'q'), by(&p, 2);
    str(&p, "wt");
    tensor_v2(&p, "0", 6, 0, 2, sz, tsd); /* a transposed view of the same storage */
    str(&p, "tied"), by(&p, 'h'), by(&p, 2);
    by(&p, 'u');
    by(&p, '}'), str(&p, "_metadata"), by(&p, '}'), by(&p, 's'), by(&p, 'b'); /* BUILD */
    stop(&p);
    res r;
    run_pk(&p, &r, true);
    ASSERT_OK(r.st);
    ASSERT_U64(r.m.n_storages, 1);
    ASSERT_U64(r.m.n_tensors, 2);
    ASSERT_U64(r.fl.n_entries, 3);
    ASSERT_U64(r.fl.n_metas, 0);
    int64_t w = ingot__tp_flat_find(&r.fl, "w", 1), t = ingot__tp_flat_find(&r.fl, "tied", 4),
            wt = ingot__tp_flat_find(&r.fl, "wt", 2);
    ASSERT_TRUE(w >= 0 && t >= 0 && wt >= 0);
    ASSERT_EQ(r.fl.entries[w].tensor, r.fl.entries[t].tensor);
    ASSERT_TRUE(r.m.tensors[r.fl.entries[w].tensor].contiguous);
    ASSERT_TRUE(!r.m.tensors[r.fl.entries[wt].tensor].contiguous);
    done(&r);
}

TEST(root_tensor_and_placeholders)
{
    pk p;
    start(&p);
    tensor1(&p, "0", 4);
    stop(&p);
    res r;
    run_pk(&p, &r, true);
    ASSERT_OK(r.st);
    ASSERT_U64(r.fl.n_entries, 1);
    ASSERT_STR(r.fl.names + r.fl.entries[0].name_off, "tensor");
    done(&r);
    /* keys: int, negative int, bool, None; a float key drops metadata below it */
    start(&p);
    by(&p, '}'), by(&p, '(');
    int1(&p, 3), tensor1(&p, "0", 1);
    bint(&p, -4), int1(&p, 1);
    by(&p, 0x88), int1(&p, 2);
    by(&p, 'N'), int1(&p, 3);
    by(&p, 'G'), raw(&p, "\x3f\xf8\0\0\0\0\0\0", 8), int1(&p, 4);
    by(&p, 'u');
    stop(&p);
    run_pk(&p, &r, true);
    ASSERT_OK(r.st);
    ASSERT_TRUE(ingot__tp_flat_find(&r.fl, "3", 1) >= 0);
    ASSERT_TRUE(ingot__tp_flat_meta_find(&r.fl, "-4", 2) >= 0);
    ASSERT_TRUE(ingot__tp_flat_meta_find(&r.fl, "True", 4) >= 0);
    ASSERT_TRUE(ingot__tp_flat_meta_find(&r.fl, "None", 4) >= 0);
    ASSERT_U64(r.fl.n_metas, 3);
    done(&r);
}

TEST(allowed_reduces)
{
    pk p;
    start(&p);
    by(&p, '}'), by(&p, '(');
    str(&p, "dev"), glob(&p, "torch", "device"), str(&p, "cuda"), int1(&p, 2), by(&p, 0x86),
        by(&p, 'R');
    str(&p, "bytes"), glob(&p, "_codecs", "encode"), str(&p, "\xc3\xbf" "a"), str(&p, "latin1"),
        by(&p, 0x86), by(&p, 'R');
    str(&p, "size"), glob(&p, "torch", "Size"), int1(&p, 2), int1(&p, 3), by(&p, 0x86),
        by(&p, 0x85), by(&p, 'R');
    str(&p, "set"), glob(&p, "__builtin__", "set"), by(&p, ']'), by(&p, '('), str(&p, "a"),
        by(&p, 'e'), by(&p, 0x85), by(&p, 'R');
    str(&p, "dt"), glob(&p, "torch", "bfloat16");
    str(&p, "param"), glob(&p, "torch._utils", "_rebuild_parameter"), tensor1(&p, "0", 2),
        by(&p, 0x88), glob(&p, "collections", "OrderedDict"), by(&p, ')'), by(&p, 'R'),
        by(&p, 0x87), by(&p, 'R');
    by(&p, 'u');
    stop(&p);
    res r;
    run_pk(&p, &r, true);
    ASSERT_OK(r.st);
    int64_t k = ingot__tp_flat_meta_find(&r.fl, "dev", 3);
    ASSERT_TRUE(k >= 0);
    uint64_t len;
    const uint8_t *s = ingot__tp_bytes(&r.m, (uint32_t)r.fl.metas[k].value, &len);
    ASSERT_U64(len, 6);
    ASSERT_MEM(s, "cuda:2", 6);
    k = ingot__tp_flat_meta_find(&r.fl, "bytes", 5);
    ASSERT_TRUE(k >= 0 && r.fl.metas[k].type == INGOT_META_BYTES);
    s = ingot__tp_bytes(&r.m, (uint32_t)r.fl.metas[k].value, &len);
    ASSERT_U64(len, 2);
    ASSERT_MEM(s, "\xff" "a", 2);
    k = ingot__tp_flat_meta_find(&r.fl, "size", 4);
    ASSERT_TRUE(k >= 0 && r.fl.metas[k].is_array && r.fl.metas[k].count == 2);
    ASSERT_TRUE(ingot__tp_flat_meta_find(&r.fl, "set", 3) >= 0);
    k = ingot__tp_flat_meta_find(&r.fl, "dt", 2);
    ASSERT_TRUE(k >= 0 && r.fl.metas[k].src == TPM_NAMES);
    ASSERT_STR(r.fl.names + r.fl.metas[k].value, "torch.bfloat16");
    k = ingot__tp_flat_find(&r.fl, "param", 5);
    ASSERT_TRUE(k >= 0);
    ASSERT_TRUE(r.m.tensors[r.fl.entries[k].tensor].flags & TPT_PARAMETER);
    ASSERT_TRUE(r.m.tensors[r.fl.entries[k].tensor].flags & TPT_REQUIRES_GRAD);
    done(&r);
}

TEST(rebuild_v3_and_from_type)
{
    pk p;
    start(&p);
    by(&p, '}'), by(&p, '(');
    str(&p, "f8");
    glob(&p, "torch._utils", "_rebuild_tensor_v3");
    by(&p, '(');
    pid(&p, "torch.storage", "UntypedStorage", "0", 8);
    int1(&p, 0), by(&p, '('), int1(&p, 8), by(&p, 't'), by(&p, '('), int1(&p, 1), by(&p, 't');
    by(&p, 0x89), by(&p, '}'), glob(&p, "torch", "float8_e4m3fn");
    by(&p, 't'), by(&p, 'R');
    str(&p, "sub");
    glob(&p, "torch._tensor", "_rebuild_from_type_v2");
    by(&p, '(');
    glob(&p, "torch._utils", "_rebuild_tensor_v2");
    glob(&p, "torch.nn.parameter", "Parameter");
    by(&p, '(');
    pid(&p, "torch", "FloatStorage", "1", 2);
    int1(&p, 0), by(&p, '('), int1(&p, 2), by(&p, 't'), by(&p, '('), int1(&p, 1), by(&p, 't');
    by(&p, 0x89), by(&p, '}'), by(&p, '}'), str(&p, "neg"), by(&p, 0x89), by(&p, 's');
    by(&p, 't');
    by(&p, '}');
    by(&p, 't'), by(&p, 'R');
    by(&p, 'u');
    stop(&p);
    res r;
    run_pk(&p, &r, true);
    ASSERT_OK(r.st);
    int64_t k = ingot__tp_flat_find(&r.fl, "f8", 2);
    ASSERT_TRUE(k >= 0);
    const tp_tensor *t = &r.m.tensors[r.fl.entries[k].tensor];
    ASSERT_EQ(t->dtype, INGOT_DTYPE_F8_E4M3);
    ASSERT_EQ(t->esize, 1);
    k = ingot__tp_flat_find(&r.fl, "sub", 3);
    ASSERT_TRUE(k >= 0);
    t = &r.m.tensors[r.fl.entries[k].tensor];
    ASSERT_EQ(t->dtype, INGOT_DTYPE_F32);
    ASSERT_TRUE(t->flags & TPT_PARAMETER);
    done(&r);
    /* v3 on a typed storage; a dtype ingot lacks */
    start(&p);
    glob(&p, "torch._utils", "_rebuild_tensor_v3");
    by(&p, '('), pid(&p, "torch", "FloatStorage", "0", 1), int1(&p, 0), by(&p, ')'), by(&p, ')'),
        by(&p, 0x89), by(&p, '}'), glob(&p, "torch", "float32"), by(&p, 't'), by(&p, 'R');
    stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, p.n - 2, "typed storage");
    start(&p);
    glob(&p, "torch._utils", "_rebuild_tensor_v3");
    by(&p, '('), pid(&p, "torch.storage", "UntypedStorage", "0", 4), int1(&p, 0), by(&p, ')'),
        by(&p, ')'), by(&p, 0x89), by(&p, '}'), glob(&p, "torch", "complex32"), by(&p, 't'),
        by(&p, 'R');
    stop(&p);
    EXPECT(&p, INGOT_BAD_TYPE, p.n - 2, "complex32");
}

/* ---------------------------------------------------------------------------------------------
 * Placeholders: objects outside the allow-list (issue 18 §5)
 * ------------------------------------------------------------------------------------------- */

/* Class name, opcode and offset of place i; the name it was found under. */
static void place(const res *r, size_t i, const char **name, char cls[128], const char **op,
                  uint64_t *at)
{
    const uint8_t *c;
    uint64_t cl;
    ingot__tp_place_describe(&r->m, r->fl.places[i].node, &c, &cl, op, at);
    snprintf(cls, 128, "%.*s", (int)cl, (const char *)c);
    *name = r->fl.names + r->fl.places[i].name_off;
}

static int64_t meta_i64(const res *r, const char *key)
{
    int64_t k = ingot__tp_flat_meta_find(&r->fl, key, strlen(key));
    if (k < 0 || r->fl.metas[k].type != INGOT_META_I64 || r->fl.metas[k].is_array) return -999;
    return (int64_t)r->fl.metas[k].value;
}

TEST(placeholder_namespace_and_tensors_around_it)
{
    /* {'opt': argparse.Namespace(layers=2, lr=0.5, gpuid=[0, 1]), 'w': tensor} at protocol 2:
     * GLOBAL, EMPTY_TUPLE, NEWOBJ, state dict, BUILD (how Python pickles a plain object). */
    pk p;
    start(&p);
    by(&p, '}'), by(&p, '(');
    str(&p, "opt");
    size_t g = p.n;
    glob(&p, "argparse", "Namespace");
    by(&p, ')');
    size_t nw = p.n;
    by(&p, 0x81);
    by(&p, '}'), by(&p, '(');
    str(&p, "layers"), int1(&p, 2);
    str(&p, "lr"), by(&p, 'G'), raw(&p, "\x3f\xe0\0\0\0\0\0\0", 8);
    str(&p, "gpuid"), by(&p, ']'), by(&p, '('), int1(&p, 0), int1(&p, 1), by(&p, 'e');
    by(&p, 'u'), by(&p, 'b');
    str(&p, "w"), tensor1(&p, "0", 3);
    by(&p, 'u');
    stop(&p);
    res r;
    run_pk(&p, &r, true);
    ASSERT_OK(r.st);
    ASSERT_U64(r.fl.n_entries, 1);
    ASSERT_TRUE(ingot__tp_flat_find(&r.fl, "w", 1) >= 0);
    ASSERT_U64(r.fl.n_metas, 3);
    ASSERT_EQ(meta_i64(&r, "opt/layers"), 2);
    int64_t k = ingot__tp_flat_meta_find(&r.fl, "opt/lr", 6);
    ASSERT_TRUE(k >= 0 && r.fl.metas[k].type == INGOT_META_F64);
    double lr;
    memcpy(&lr, &r.fl.metas[k].value, 8);
    ASSERT_TRUE(lr == 0.5);
    k = ingot__tp_flat_meta_find(&r.fl, "opt/gpuid", 9);
    ASSERT_TRUE(k >= 0 && r.fl.metas[k].is_array && r.fl.metas[k].count == 2);
    ASSERT_U64(r.fl.n_places, 1);
    const char *name, *op;
    char cls[128];
    uint64_t at;
    place(&r, 0, &name, cls, &op, &at);
    ASSERT_STR(name, "opt");
    ASSERT_STR(cls, "argparse.Namespace");
    ASSERT_STR(op, "NEWOBJ");
    ASSERT_U64(at, nw);
    ASSERT_TRUE(g < nw);
    done(&r);
}

TEST(placeholder_containers_counter_and_bare_globals)
{
    pk p;
    start(&p);
    by(&p, '}'), by(&p, '(');
    /* an OrderedDict subclass: REDUCE (cls, ()), SETITEMS of its items, then BUILD of its
     * __dict__: the items are flattened, the attributes are not (as for OrderedDict) */
    str(&p, "sd");
    glob(&p, "mylib.state", "StateDict"), by(&p, ')'), by(&p, 'R');
    by(&p, '('), str(&p, "fc.weight"), tensor1(&p, "0", 4), str(&p, "fc.bias"),
        tensor1(&p, "1", 2), by(&p, 'u');
    by(&p, '}'), str(&p, "_metadata"), int1(&p, 7), by(&p, 's'), by(&p, 'b');
    /* a list subclass with APPENDS */
    str(&p, "hist");
    glob(&p, "mylib", "History"), by(&p, ')'), by(&p, 0x81);
    by(&p, '('), int1(&p, 5), tensor1(&p, "2", 1), by(&p, 'e');
    /* collections.Counter: REDUCE (Counter, ({'a': 3},)): the data is the argument */
    str(&p, "freqs");
    glob(&p, "collections", "Counter"), by(&p, '}'), str(&p, "the"), int1(&p, 3), by(&p, 's'),
        by(&p, 0x85), by(&p, 'R');
    /* a defaultdict: REDUCE (defaultdict, (factory,)) then SETITEMS; the factory is a bare
     * global that is never walked (the items are the content) */
    str(&p, "stoi");
    glob(&p, "collections", "defaultdict"), glob(&p, "torchtext.vocab", "_default_unk_index"),
        by(&p, 0x85), by(&p, 'R');
    by(&p, '('), str(&p, "cat"), int1(&p, 4), by(&p, 'u');
    /* a bare global as a value */
    str(&p, "fn");
    size_t fg = p.n;
    glob(&p, "mylib", "make");
    by(&p, 'u');
    stop(&p);
    res r;
    run_pk(&p, &r, true);
    ASSERT_OK(r.st);
    ASSERT_U64(r.fl.n_entries, 3);
    ASSERT_TRUE(ingot__tp_flat_find(&r.fl, "sd/fc.weight", 12) >= 0);
    ASSERT_TRUE(ingot__tp_flat_find(&r.fl, "sd/fc.bias", 10) >= 0);
    ASSERT_TRUE(ingot__tp_flat_find(&r.fl, "hist/1", 6) >= 0);
    ASSERT_EQ(meta_i64(&r, "hist/0"), 5);
    ASSERT_EQ(meta_i64(&r, "freqs/the"), 3);
    ASSERT_EQ(meta_i64(&r, "stoi/cat"), 4);
    ASSERT_TRUE(ingot__tp_flat_meta_find(&r.fl, "sd/_metadata", 12) < 0);
    ASSERT_U64(r.fl.n_metas, 3);
    static const char *const want[][3] = {{"sd", "mylib.state.StateDict", "REDUCE"},
                                           {"hist", "mylib.History", "NEWOBJ"},
                                           {"freqs", "collections.Counter", "REDUCE"},
                                           {"stoi", "collections.defaultdict", "REDUCE"},
                                           {"fn", "mylib.make", "GLOBAL"}};
    ASSERT_U64(r.fl.n_places, 5);
    for (size_t i = 0; i < 5; i++) {
        const char *name, *op;
        char cls[128];
        uint64_t at;
        place(&r, i, &name, cls, &op, &at);
        ASSERT_STR(name, want[i][0]);
        ASSERT_STR(cls, want[i][1]);
        ASSERT_STR(op, want[i][2]);
        ASSERT_TRUE(p.b[at] == (op[0] == 'G' ? 'c' : op[0] == 'R' ? 'R' : 0x81));
        if (i == 4) ASSERT_U64(at, fg);
    }
    done(&r);
}

TEST(placeholder_cycles_sharing_and_root)
{
    /* obj.__dict__ = {'self': obj, 'x': 1}; the root is the object itself, reached again by a
     * second key through the memo: one notice, its contents walked once per path, no loop */
    pk p;
    start(&p);
    glob(&p, "__main__", "Node"), by(&p, ')'), by(&p, 0x81), by(&p, 'q'), by(&p, 0);
    by(&p, '}'), str(&p, "self"), by(&p, 'h'), by(&p, 0), by(&p, 's');
    str(&p, "x"), int1(&p, 1), by(&p, 's');
    str(&p, "t"), tensor1(&p, "0", 2), by(&p, 's');
    by(&p, 'b');
    stop(&p);
    res r;
    run_pk(&p, &r, true);
    ASSERT_OK(r.st);
    ASSERT_U64(r.fl.n_places, 1);
    ASSERT_STR(r.fl.names + r.fl.places[0].name_off, "");
    ASSERT_EQ(meta_i64(&r, "x"), 1);
    ASSERT_TRUE(ingot__tp_flat_find(&r.fl, "t", 1) >= 0);
    ASSERT_U64(r.fl.n_entries, 1);
    done(&r);
    /* a root object whose content is one tensor keeps the root name */
    start(&p);
    glob(&p, "mylib", "Wrap"), tensor1(&p, "0", 2), by(&p, 0x85), by(&p, 'R');
    stop(&p);
    run_pk(&p, &r, true);
    ASSERT_OK(r.st);
    ASSERT_U64(r.fl.n_entries, 1);
    ASSERT_STR(r.fl.names + r.fl.entries[0].name_off, "tensor");
    done(&r);
    /* placeholders as dict keys are legal but cannot be named: metadata below is dropped, a
     * tensor below is refused */
    start(&p);
    by(&p, '}'), glob(&p, "enum", "Color"), int1(&p, 1), by(&p, 0x85), by(&p, 'R'), int1(&p, 9),
        by(&p, 's');
    stop(&p);
    run_pk(&p, &r, true);
    ASSERT_OK(r.st);
    ASSERT_U64(r.fl.n_metas, 0);
    done(&r);
    start(&p);
    by(&p, '}'), glob(&p, "enum", "Color"), int1(&p, 1), by(&p, 0x85), by(&p, 'R');
    tensor1(&p, "0", 1), by(&p, 's');
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, UINT64_MAX, "cannot be named");
    /* NEWOBJ_EX keeps args and ignores kwargs; a GPU storage class reads as the CPU one */
    start(&p);
    p.b[1] = 4;
    by(&p, '}'), by(&p, '(');
    str(&p, "o"), glob(&p, "mylib", "K"), int1(&p, 6), by(&p, 0x85), by(&p, '}'), by(&p, 0x92);
    str(&p, "g");
    glob(&p, "torch._utils", "_rebuild_tensor_v2");
    by(&p, '(');
    pid(&p, "torch.cuda", "FloatStorage", "0", 2);
    int1(&p, 0), by(&p, '('), int1(&p, 2), by(&p, 't'), by(&p, '('), int1(&p, 1), by(&p, 't');
    by(&p, 0x89), by(&p, '}'), by(&p, 't'), by(&p, 'R');
    by(&p, 'u');
    stop(&p);
    run_pk(&p, &r, true);
    ASSERT_OK(r.st);
    ASSERT_EQ(meta_i64(&r, "o"), 6);
    int64_t k = ingot__tp_flat_find(&r.fl, "g", 1);
    ASSERT_TRUE(k >= 0);
    ASSERT_EQ(r.m.tensors[r.fl.entries[k].tensor].dtype, INGOT_DTYPE_F32);
    done(&r);
}

TEST(placeholder_misuse_refused)
{
    pk p;
    /* NEWOBJ of an allow-listed global, of a str; NEWOBJ_EX with non-dict kwargs */
    start(&p);
    glob(&p, "collections", "OrderedDict"), by(&p, ')');
    size_t at = p.n;
    by(&p, 0x81);
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, at, "NEWOBJ");
    start(&p);
    str(&p, "x"), by(&p, ')');
    at = p.n;
    by(&p, 0x81);
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, at, "NEWOBJ");
    start(&p);
    glob(&p, "mylib", "K"), by(&p, ')'), by(&p, ')');
    at = p.n;
    by(&p, 0x92);
    stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, at, "NEWOBJ_EX");
    start(&p); /* REDUCE of a placeholder with non-tuple arguments */
    glob(&p, "mylib", "K"), by(&p, ']');
    at = p.n;
    by(&p, 'R');
    stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, at, "tuple");
    start(&p); /* BUILD on a bare class token */
    glob(&p, "mylib", "K"), by(&p, '}');
    at = p.n;
    by(&p, 'b');
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, at, "BUILD");
    start(&p); /* a placeholder as the storage type of a persistent id */
    pid(&p, "mylib", "FloatStorage", "0", 1);
    stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, UINT64_MAX, "storage type");
    start(&p); /* a code-running global stays refused when reached through NEWOBJ's class */
    glob(&p, "subprocess", "Popen");
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, 2, "run code");
}

/* ---------------------------------------------------------------------------------------------
 * Refusals (spec §7)
 * ------------------------------------------------------------------------------------------- */

TEST(refuses_tier_c_opcodes)
{
    static const struct {
        uint8_t op;
        const char *name;
    } tc[] = {
        {'i', "INST"},         {'o', "OBJ"},
        {0x82, "EXT1"},        {0x83, "EXT2"},      {0x84, "EXT4"},       {'P', "PERSID"},
        {'I', "INT"},          {'L', "LONG"},       {'F', "FLOAT"},       {'S', "STRING"},
        {'V', "UNICODE"},      {'g', "GET"},        {'p', "PUT"},         {'d', "DICT"},
        {'l', "LIST"},         {0x8B, "LONG4"},     {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"},
        {0x98, "READONLY_BUFFER"}, {0xFF, "0xff"},  {0x00, "0x00"},       {'A', "0x41"},
    };
    for (size_t i = 0; i < sizeof tc / sizeof tc[0]; i++) {
        pk p;
        start(&p);
        by(&p, '(');
        by(&p, tc[i].op);
        raw(&p, "os\nsystem\n", 10);
        stop(&p);
        EXPECT(&p, INGOT_UNSUPPORTED, 3, tc[i].name);
    }
}

TEST(refuses_arbitrary_globals)
{
    static const char *const g[][3] = {
        {"os", "system", "run code"},
        {"posix", "system", "run code"},
        {"builtins", "eval", "run code"},
        {"__builtin__", "getattr", "run code"},
        {"subprocess", "Popen", "run code"},
        {"torch", "load", "run code"},
        {"os.path", "join", "run code"},
        {"runpy", "run_path", "run code"},
        {"torch.serialization", "load", "run code"},
        {"torch._utils", "_rebuild_xla_tensor", "rebuild ingot does not know"},
        {"torch._utils", "_rebuild_qtensor", "quantized"},
        {"torch", "QInt8Storage", "quantized"},
        {"torch", "per_tensor_affine", "quantized"},
        {"torch._utils", "_rebuild_sparse_tensor", "sparse"},
        {"torch._utils", "_rebuild_sparse_csr_tensor", "sparse"},
        {"torch", "sparse_coo", "sparse"},
        {"torch._utils", "_rebuild_nested_tensor", "nested"},
        {"torch.storage", "_load_from_bytes", "plain pickle"},
        {"torch.distributed._tensor.api", "DTensor", "distributed"},
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        pk p;
        start(&p);
        by(&p, '}');
        glob(&p, g[i][0], g[i][1]);
        stop(&p);
        EXPECT(&p, INGOT_UNSUPPORTED, 3, g[i][2]);
        EXPECT(&p, INGOT_UNSUPPORTED, 3, g[i][1]); /* the where field names the global */
        /* the same through STACK_GLOBAL */
        start(&p);
        p.b[1] = 4;
        by(&p, 0x8C), by(&p, (uint8_t)strlen(g[i][0])), raw(&p, g[i][0], strlen(g[i][0]));
        by(&p, 0x8C), by(&p, (uint8_t)strlen(g[i][1])), raw(&p, g[i][1], strlen(g[i][1]));
        size_t at = p.n;
        by(&p, 0x93);
        stop(&p);
        EXPECT(&p, INGOT_UNSUPPORTED, at, "STACK_GLOBAL");
    }
}

TEST(refuses_bad_reduce)
{
    pk p;
    /* calling a storage type, a dtype, a class token */
    static const char *const tok[][2] = {
        {"torch", "FloatStorage"}, {"torch", "float16"}, {"torch", "Tensor"},
        {"torch.nn.parameter", "Parameter"}};
    for (size_t i = 0; i < 4; i++) {
        start(&p);
        glob(&p, tok[i][0], tok[i][1]);
        by(&p, ')');
        size_t at = p.n;
        by(&p, 'R');
        stop(&p);
        EXPECT(&p, INGOT_UNSUPPORTED, at, "REDUCE");
    }
    start(&p); /* OrderedDict with arguments */
    glob(&p, "collections", "OrderedDict");
    by(&p, ']'), by(&p, 0x85), by(&p, 'R');
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, p.n - 2, "OrderedDict");
    start(&p); /* REDUCE on a str */
    str(&p, "os.system"), by(&p, ')'), by(&p, 'R');
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, p.n - 2, "REDUCE");
    start(&p); /* arguments not a tuple */
    glob(&p, "collections", "OrderedDict"), by(&p, ']'), by(&p, 'R');
    stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, p.n - 2, "tuple");
    start(&p); /* _codecs.encode with another codec */
    glob(&p, "_codecs", "encode"), str(&p, "x"), str(&p, "rot13"), by(&p, 0x86), by(&p, 'R');
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, p.n - 2, "latin1");
    start(&p); /* latin1 text above U+00FF */
    glob(&p, "_codecs", "encode"), str(&p, "\xe2\x82\xac"), str(&p, "latin1"), by(&p, 0x86),
        by(&p, 'R');
    stop(&p);
    EXPECT(&p, INGOT_BAD_STRING, p.n - 2, "U+00FF");
    start(&p); /* _rebuild_from_type_v2 with a non-rebuild func */
    glob(&p, "torch._tensor", "_rebuild_from_type_v2");
    by(&p, '(');
    glob(&p, "collections", "OrderedDict"), glob(&p, "torch", "Tensor"), by(&p, ')'), by(&p, '}');
    by(&p, 't'), by(&p, 'R');
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, p.n - 2, "rebuild");
}

TEST(refuses_build_on_anything_but_ordereddict)
{
    pk p;
    start(&p);
    by(&p, '}'), by(&p, '}'), by(&p, 'b'); /* plain dict */
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, 4, "BUILD");
    start(&p);
    by(&p, ']'), by(&p, '}'), by(&p, 'b'); /* list */
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, 4, "BUILD");
    start(&p);
    glob(&p, "collections", "OrderedDict"), by(&p, ')'), by(&p, 'R');
    by(&p, ']'), by(&p, 'b'); /* state not a dict */
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, p.n - 2, "state");
    start(&p);
    glob(&p, "collections", "OrderedDict"), by(&p, ')'), by(&p, 'R');
    by(&p, '}'), int1(&p, 1), int1(&p, 2), by(&p, 's'), by(&p, 'b'); /* non-str key */
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, p.n - 2, "key");
    start(&p);
    glob(&p, "torch", "device"), by(&p, '}'), by(&p, 'b'); /* a global */
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, p.n - 2, "BUILD");
}

TEST(refuses_protocols_0_and_1)
{
    pk p;
    p.n = 0;
    raw(&p, "(dp0\nS'a'\np1\nI1\ns.", 19); /* protocol 0 */
    EXPECT(&p, INGOT_BAD_VERSION, 0, "PROTO");
    p.n = 0;
    raw(&p, "}q\0(X\1\0\0\0aK\1u.", 15); /* protocol 1: binary but no PROTO */
    EXPECT(&p, INGOT_BAD_VERSION, 0, "PROTO");
    static const uint8_t bad[] = {0, 1, 6, 255};
    for (size_t i = 0; i < sizeof bad; i++) {
        start(&p);
        p.b[1] = bad[i];
        by(&p, 'N');
        stop(&p);
        EXPECT(&p, INGOT_BAD_VERSION, 0, "protocol");
    }
    start(&p);
    by(&p, 0x80), by(&p, 2), by(&p, 'N'); /* PROTO twice */
    stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, 2, "PROTO");
}

TEST(refuses_bad_persistent_ids)
{
    pk p;
    start(&p);
    by(&p, '('), str(&p, "module"), glob(&p, "torch", "FloatStorage"), str(&p, "0"), str(&p, "cpu"),
        int1(&p, 1), by(&p, 't');
    size_t at = p.n;
    by(&p, 'Q');
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, at, "storage");
    start(&p); /* a 6-tuple in a zip pickle */
    by(&p, '('), str(&p, "storage"), glob(&p, "torch", "FloatStorage"), str(&p, "0"),
        str(&p, "cpu"), int1(&p, 1), by(&p, 'N'), by(&p, 't'), by(&p, 'Q');
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, p.n - 2, "BINPERSID");
    start(&p); /* a str pid */
    str(&p, "storage"), by(&p, 'Q');
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, p.n - 2, "BINPERSID");
    start(&p); /* type field not a storage type */
    by(&p, '('), str(&p, "storage"), glob(&p, "collections", "OrderedDict"), str(&p, "0"),
        str(&p, "cpu"), int1(&p, 1), by(&p, 't'), by(&p, 'Q');
    stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, p.n - 2, "storage type");
    start(&p); /* empty key, negative numel */
    pid(&p, "torch", "FloatStorage", "", 1);
    stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, p.n - 2, "key");
    start(&p);
    pid(&p, "torch", "FloatStorage", "0", -1);
    stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, p.n - 2, "count");
    start(&p); /* numel x element size overflows */
    by(&p, '('), str(&p, "storage"), glob(&p, "torch", "DoubleStorage"), str(&p, "0"),
        str(&p, "cpu"), by(&p, 0x8A), by(&p, 8), raw(&p, "\0\0\0\0\0\0\0\x7f", 8), by(&p, 't'),
        by(&p, 'Q');
    stop(&p);
    EXPECT(&p, INGOT_BAD_SIZE, p.n - 2, "overflows");
    start(&p); /* the same key with another size */
    by(&p, '(');
    pid(&p, "torch", "FloatStorage", "0", 4);
    pid(&p, "torch", "FloatStorage", "0", 5);
    by(&p, 't');
    stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, p.n - 3, "redefined");
}

TEST(refuses_bad_tensors)
{
    pk p;
    int32_t s2[2] = {2, 3}, d2[2] = {3, 1};
    start(&p);
    tensor_v2(&p, "0", 5, 0, 2, s2, d2); /* 6 elements on a 5-element storage */
    stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, p.n - 2, "past its storage");
    start(&p);
    tensor_v2(&p, "0", 6, 1, 2, s2, d2); /* offset 1 */
    stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, p.n - 2, "past its storage");
    int32_t zero[2] = {0, 3};
    start(&p);
    tensor_v2(&p, "0", 6, 7, 2, zero, d2); /* empty tensor, offset past the storage */
    stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, p.n - 2, "offset");
    start(&p);
    tensor_v2(&p, "0", 6, 6, 2, zero, d2); /* at the end: fine */
    stop(&p);
    EXPECT(&p, INGOT_OK, UINT64_MAX, NULL);
    int32_t neg[2] = {-1, 3};
    start(&p);
    tensor_v2(&p, "0", 6, 0, 2, neg, d2);
    stop(&p);
    EXPECT(&p, INGOT_BAD_SHAPE, p.n - 2, "size");
    int32_t negs[2] = {3, -1};
    start(&p);
    tensor_v2(&p, "0", 6, 0, 2, s2, negs);
    stop(&p);
    EXPECT(&p, INGOT_BAD_SHAPE, p.n - 2, "stride");
    start(&p);
    tensor_v2n(&p, "0", 6, 0, 2, s2, 1, d2); /* 2 sizes, 1 stride */
    stop(&p);
    EXPECT(&p, INGOT_BAD_SHAPE, p.n - 2, "strides");
    int32_t s65[INGOT_MAX_RANK + 1], d65[INGOT_MAX_RANK + 1];
    for (int k = 0; k <= INGOT_MAX_RANK; k++) s65[k] = d65[k] = 1;
    start(&p); /* rank 64 (INGOT_MAX_RANK): accepted */
    tensor_v2(&p, "0", 6, 0, INGOT_MAX_RANK, s65, d65);
    stop(&p);
    EXPECT(&p, INGOT_OK, UINT64_MAX, NULL);
    start(&p); /* rank 65 (torch allows it): refused naming the limit */
    tensor_v2(&p, "0", 6, 0, INGOT_MAX_RANK + 1, s65, d65);
    stop(&p);
    EXPECT(&p, INGOT_BAD_NDIMS, p.n - 2, "65 dimensions (ingot's limit is 64");
    int32_t big[3] = {65536, 65536, 65536}, bd[3] = {0, 0, 0};
    start(&p); /* 2^48 elements on stride 0: bounded, allowed (a broadcast) */
    tensor_v2(&p, "0", 1, 0, 3, big, bd);
    stop(&p);
    EXPECT(&p, INGOT_OK, UINT64_MAX, NULL);
    int32_t huge[4] = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff}, hd[4] = {0, 0, 0, 0};
    int32_t h3[3] = {0x40000000, 0x40000000, 4}, h3d[3] = {0, 0, 0};
    start(&p); /* 2^62 elements fit int64, 2^64 bytes do not */
    tensor_v2(&p, "0", 1, 0, 3, h3, h3d);
    stop(&p);
    EXPECT(&p, INGOT_BAD_SIZE, p.n - 2, "byte size");
    start(&p); /* element count overflows int64 */
    tensor_v2(&p, "0", 1, 0, 4, huge, hd);
    stop(&p);
    EXPECT(&p, INGOT_BAD_SHAPE, p.n - 2, "overflows");
    /* complex128 is C128 (complex32 without a dtype: rebuild_v3_and_from_type); UntypedStorage
     * needs v3 */
    start(&p);
    glob(&p, "torch._utils", "_rebuild_tensor_v2");
    by(&p, '('), pid(&p, "torch", "ComplexDoubleStorage", "0", 1), int1(&p, 0), by(&p, ')'),
        by(&p, ')'), by(&p, 0x89), by(&p, '}'), by(&p, 't'), by(&p, 'R');
    stop(&p);
    {
        res r;
        run_pk(&p, &r, true);
        ASSERT_OK(r.st);
        ASSERT_EQ(r.m.tensors[0].dtype, INGOT_DTYPE_C128);
        ASSERT_EQ(r.m.tensors[0].esize, 16);
        done(&r);
    }
    start(&p);
    glob(&p, "torch._utils", "_rebuild_tensor_v2");
    by(&p, '('), pid(&p, "torch.storage", "UntypedStorage", "0", 1), int1(&p, 0), by(&p, ')'),
        by(&p, ')'), by(&p, 0x89), by(&p, '}'), by(&p, 't'), by(&p, 'R');
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, p.n - 2, "v3");
    /* requires_grad not a bool; conj bit set; conj False is fine */
    start(&p);
    glob(&p, "torch._utils", "_rebuild_tensor_v2");
    by(&p, '('), pid(&p, "torch", "FloatStorage", "0", 1), int1(&p, 0), by(&p, ')'), by(&p, ')'),
        int1(&p, 0), by(&p, '}'), by(&p, 't'), by(&p, 'R');
    stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, p.n - 2, "requires_grad");
    for (int conj = 0; conj < 2; conj++) {
        start(&p);
        glob(&p, "torch._utils", "_rebuild_tensor_v2");
        by(&p, '('), pid(&p, "torch", "FloatStorage", "0", 1), int1(&p, 0), by(&p, ')'),
            by(&p, ')'), by(&p, 0x89), by(&p, '}'), by(&p, '}'), str(&p, "conj"),
            by(&p, conj ? 0x88 : 0x89), by(&p, 's'), by(&p, 't'), by(&p, 'R');
        stop(&p);
        if (conj) EXPECT(&p, INGOT_UNSUPPORTED, p.n - 2, "conj");
        else EXPECT(&p, INGOT_OK, UINT64_MAX, NULL);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Structure and limits (spec §3.2, §3.7)
 * ------------------------------------------------------------------------------------------- */

TEST(refuses_structural_errors)
{
    pk p;
    start(&p), int1(&p, 1), by(&p, 'a'), stop(&p); /* APPEND with one value */
    EXPECT(&p, INGOT_BAD_LAYOUT, 4, "underflow");
    start(&p), by(&p, '('), by(&p, 'q'), by(&p, 0), stop(&p); /* BINPUT right after MARK */
    EXPECT(&p, INGOT_BAD_LAYOUT, 3, "underflow");
    start(&p), by(&p, 'h'), by(&p, 3), stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, 2, "memo");
    start(&p), by(&p, ']'), int1(&p, 1), int1(&p, 2), by(&p, 's'), stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, 7, "SETITEM");
    start(&p), by(&p, '}'), int1(&p, 1), by(&p, 'a'), stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, 5, "APPEND");
    start(&p), by(&p, '}'), by(&p, '('), int1(&p, 1), by(&p, 'u'), stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, 6, "odd");
    start(&p), by(&p, '}'), by(&p, '('), by(&p, ']'), int1(&p, 1), by(&p, 'u'), stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, 7, "key");
    start(&p), by(&p, '}'), by(&p, '}'), int1(&p, 1), by(&p, 's'), stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, 6, "key");
    start(&p), by(&p, '('), int1(&p, 1), by(&p, 'u'), stop(&p); /* nothing below the mark */
    EXPECT(&p, INGOT_BAD_LAYOUT, 5, "below");
    start(&p), by(&p, ']'), by(&p, '('), int1(&p, 1), by(&p, 'u'), stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, 6, "SETITEMS");
    start(&p), by(&p, 'N'), by(&p, 'N'), stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, 4, "STOP");
    start(&p), by(&p, 'N'), by(&p, '('), stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, 4, "MARK");
    start(&p), stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, 2, "STOP");
    start(&p), int1(&p, 1), by(&p, 't'), stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, 4, "MARK");
    start(&p), by(&p, 0x31), stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, 2, "POP_MARK");
    start(&p), by(&p, '0'), stop(&p);
    EXPECT(&p, INGOT_BAD_LAYOUT, 2, "underflow");
    start(&p), by(&p, 'N'), by(&p, '('), by(&p, '0'), stop(&p); /* POP of an empty segment pops the mark */
    EXPECT(&p, INGOT_OK, UINT64_MAX, NULL);
    p.n = 0;
    EXPECT(&p, INGOT_TRUNCATED, 0, "STOP");
    start(&p), by(&p, 'N');
    EXPECT(&p, INGOT_TRUNCATED, 3, "STOP");
}

TEST(limits)
{
    pk p;
    start(&p);
    for (int i = 0; i < 257; i++) by(&p, '(');
    stop(&p);
    EXPECT(&p, INGOT_LIMIT, 2 + 256, "MARK");
    start(&p), by(&p, 'N'), by(&p, 'r'), u32le(&p, 0x7fffffff), stop(&p);
    EXPECT(&p, INGOT_LIMIT, 3, "memo");
    start(&p), by(&p, 'N'), by(&p, 'r'), u32le(&p, 4), stop(&p); /* < size / 2: fine */
    EXPECT(&p, INGOT_OK, UINT64_MAX, NULL);
    start(&p);
    by(&p, 'c');
    for (int i = 0; i < 300; i++) by(&p, 'a');
    raw(&p, "\nb\n", 3);
    stop(&p);
    EXPECT(&p, INGOT_LIMIT, 2, "GLOBAL");
    start(&p), raw(&p, "cos", 3);
    EXPECT(&p, INGOT_TRUNCATED, 2, "GLOBAL");
    start(&p), by(&p, 'X'), u32le(&p, 0xffffffffu), stop(&p);
    EXPECT(&p, INGOT_TRUNCATED, 2, "BINUNICODE");
    start(&p), by(&p, 0x8D), raw(&p, "\xff\xff\xff\xff\xff\xff\xff\xff", 8), stop(&p);
    EXPECT(&p, INGOT_TRUNCATED, 2, "BINUNICODE8");
    start(&p), by(&p, 0x8E), raw(&p, "\xf0\xff\xff\xff\xff\xff\xff\xff", 8), stop(&p);
    EXPECT(&p, INGOT_TRUNCATED, 2, "BINBYTES8");
    start(&p), by(&p, 0x8A), by(&p, 200), stop(&p);
    EXPECT(&p, INGOT_TRUNCATED, 2, "LONG1");
    start(&p), by(&p, 0x95), raw(&p, "\x40\0\0\0\0\0\0\0", 8), by(&p, 'N'), stop(&p);
    EXPECT(&p, INGOT_TRUNCATED, 2, "FRAME");
    start(&p), by(&p, 'T'), u32le(&p, 0x80000000u), stop(&p);
    EXPECT(&p, INGOT_BAD_STRING, 2, "negative");
    start(&p), by(&p, 'X'), u32le(&p, 2), raw(&p, "\xc3\x28", 2), stop(&p);
    EXPECT(&p, INGOT_BAD_STRING, 2, "UTF-8");
    start(&p), by(&p, 'X'), u32le(&p, 3), raw(&p, "\xed\xa0\x80", 3), stop(&p); /* surrogate */
    EXPECT(&p, INGOT_BAD_STRING, 2, "UTF-8");
    start(&p), by(&p, 'J'), by(&p, 1);
    EXPECT(&p, INGOT_TRUNCATED, 2, "BININT");
}

TEST(flatten_limits)
{
    pk p;
    /* x0 = [1]; x(k+1) = [xk, xk]: 2^40 leaves from a few hundred bytes */
    start(&p);
    by(&p, ']'), int1(&p, 1), by(&p, 'a');
    for (int k = 0; k < 40; k++) {
        by(&p, 'q'), by(&p, 0), by(&p, '0');
        by(&p, ']'), by(&p, 'h'), by(&p, 0), by(&p, 'a'), by(&p, 'h'), by(&p, 0), by(&p, 'a');
    }
    stop(&p);
    res r;
    run_pk(&p, &r, true);
    ASSERT_ST(r.st, INGOT_LIMIT);
    ASSERT_TRUE(strstr(r.e.msg, "names exceed"));
    done(&r);
    /* the same with ints instead of [1] lists: no names, the visit cap stops it */
    start(&p);
    int1(&p, 1);
    for (int k = 0; k < 40; k++) {
        by(&p, 'q'), by(&p, 0), by(&p, '0');
        by(&p, '('), by(&p, 'h'), by(&p, 0), by(&p, 'h'), by(&p, 0), by(&p, 0x88), by(&p, 't');
    }
    stop(&p);
    run_pk(&p, &r, true);
    ASSERT_ST(r.st, INGOT_LIMIT);
    done(&r);
    /* 70 nested lists */
    start(&p);
    for (int k = 0; k < 70; k++) by(&p, ']');
    for (int k = 0; k < 69; k++) by(&p, 'a');
    stop(&p);
    run_pk(&p, &r, true);
    if (r.st != INGOT_LIMIT) FAIL_AT("%s: %s", ingot_status_name(r.st), r.e.msg);
    ASSERT_TRUE(strstr(r.e.msg, "nested"));
    done(&r);
    /* 60 nested dicts hold one tensor: fine */
    start(&p);
    for (int k = 0; k < 60; k++) by(&p, '}'), str(&p, "k");
    tensor1(&p, "0", 1);
    for (int k = 0; k < 60; k++) by(&p, 's');
    stop(&p);
    run_pk(&p, &r, true);
    ASSERT_OK(r.st);
    ASSERT_U64(r.fl.entries[0].name_len, 60 * 2 - 1);
    done(&r);
}

TEST(flatten_duplicates_and_unnamed)
{
    pk p;
    /* {'a/b': t0, 'a': {'b': t1}} */
    start(&p);
    by(&p, '}'), by(&p, '(');
    str(&p, "a/b"), tensor1(&p, "0", 1);
    str(&p, "a"), by(&p, '}'), str(&p, "b"), tensor1(&p, "1", 1), by(&p, 's');
    by(&p, 'u');
    stop(&p);
    EXPECT(&p, INGOT_DUPLICATE, UINT64_MAX, "same name");
    /* key 1 and key '1' */
    start(&p);
    by(&p, '}'), by(&p, '(');
    int1(&p, 1), tensor1(&p, "0", 1);
    str(&p, "1"), tensor1(&p, "1", 1);
    by(&p, 'u');
    stop(&p);
    EXPECT(&p, INGOT_DUPLICATE, UINT64_MAX, "same name");
    /* a tensor and a metadata entry with one name; two metadata entries */
    start(&p);
    by(&p, '}'), by(&p, '(');
    str(&p, "x/0"), int1(&p, 1);
    str(&p, "x"), by(&p, '('), tensor1(&p, "0", 1), by(&p, 't');
    by(&p, 'u');
    stop(&p);
    EXPECT(&p, INGOT_DUPLICATE, UINT64_MAX, "tensor and a metadata");
    start(&p);
    by(&p, '}'), by(&p, '('), int1(&p, 2), int1(&p, 1), str(&p, "2"), int1(&p, 1), by(&p, 'u');
    stop(&p);
    EXPECT(&p, INGOT_DUPLICATE, UINT64_MAX, "metadata");
    /* a tensor below a float key cannot be named */
    start(&p);
    by(&p, '}'), by(&p, 'G'), raw(&p, "\x3f\xf8\0\0\0\0\0\0", 8), tensor1(&p, "0", 1), by(&p, 's');
    stop(&p);
    EXPECT(&p, INGOT_UNSUPPORTED, UINT64_MAX, "cannot be named");
    /* an empty key */
    start(&p);
    by(&p, '}'), str(&p, ""), tensor1(&p, "0", 1), by(&p, 's');
    stop(&p);
    EXPECT(&p, INGOT_BAD_NAME, UINT64_MAX, "empty");
    /* a NUL in a tensor name */
    start(&p);
    by(&p, '}'), by(&p, 'X'), u32le(&p, 3), raw(&p, "a\0b", 3), tensor1(&p, "0", 1), by(&p, 's');
    stop(&p);
    EXPECT(&p, INGOT_BAD_NAME, UINT64_MAX, "NUL");
}

TEST(scan_end_finds_stops)
{
    pk q;
    start(&q);
    by(&q, '}'), str(&q, "a.b"), by(&q, 'G'), raw(&q, "........", 8), by(&q, 's');
    glob(&q, "x.y", "z.w"), by(&q, '0'), stop(&q);
    size_t one = q.n;
    raw(&q, "\x80\x02N.", 4);
    uint64_t end;
    ingot_error e;
    ASSERT_OK(ingot__tp_scan_end(q.b, q.n, 0, 0, &end, NULL, &e));
    ASSERT_U64(end, one);
    ASSERT_OK(ingot__tp_scan_end(q.b, q.n, one, 0, &end, NULL, &e));
    ASSERT_U64(end, q.n);
    ASSERT_ST(ingot__tp_scan_end(q.b, q.n - 1, one, 0, &end, NULL, &e), INGOT_TRUNCATED);
}

/* Ints, None, the bools and () are immutable: the machine makes one node per value and shares it
 * (a direct-mapped cache for ints). Every value must still read back as written, also when many
 * distinct ints evict each other from the cache. */
TEST(immutable_values_shared)
{
    static const int32_t reps[] = {0, 1, 64, 256, 16384, -5};
    pk p;
    start(&p);
    by(&p, ']'), by(&p, '(');
    for (int k = 0; k < 300; k++)
        for (size_t j = 0; j < sizeof reps / sizeof reps[0]; j++) bint(&p, reps[j]);
    by(&p, 'N'), by(&p, 0x89), by(&p, 0x88), by(&p, ')'), by(&p, 'N'), by(&p, 0x89), by(&p, ')');
    by(&p, 'e');
    stop(&p);
    res r;
    run_pk(&p, &r, false);
    ASSERT_OK(r.st);
    const tp_node *l = &r.m.nodes[r.root];
    ASSERT_EQ(l->count, 300 * 6 + 7);
    uint32_t c = l->head;
    for (int k = 0; k < 300; k++)
        for (size_t j = 0; j < sizeof reps / sizeof reps[0]; j++, c = r.m.cells[c].next) {
            const tp_node *v = &r.m.nodes[r.m.cells[c].val];
            ASSERT_EQ(v->kind, TPV_INT);
            ASSERT_U64(v->a, (uint64_t)(int64_t)reps[j]);
        }
    static const uint8_t kinds[] = {TPV_NONE, TPV_BOOL, TPV_BOOL, TPV_TUPLE,
                                    TPV_NONE, TPV_BOOL, TPV_TUPLE};
    static const uint64_t vals[] = {0, 0, 1, 0, 0, 0, 0};
    for (int j = 0; j < 7; j++, c = r.m.cells[c].next) {
        const tp_node *v = &r.m.nodes[r.m.cells[c].val];
        ASSERT_EQ(v->kind, kinds[j]);
        ASSERT_U64(v->a, vals[j]);
        if (v->kind == TPV_TUPLE) ASSERT_EQ(v->count, 0);
    }
    /* the list, six ints, None, False, True, (): 1,807 nodes when each opcode made its own */
    ASSERT_TRUE(r.m.n_nodes <= 11);
    done(&r);

    /* 512 distinct ints, twice over, through a 64-slot cache: each reads back as written */
    start(&p);
    by(&p, ']'), by(&p, '(');
    for (int k = 0; k < 2; k++)
        for (int32_t v = 0; v < 512; v++) bint(&p, v * 7919 - 100000);
    by(&p, 'e');
    stop(&p);
    run_pk(&p, &r, false);
    ASSERT_OK(r.st);
    c = r.m.nodes[r.root].head;
    for (int k = 0; k < 2; k++)
        for (int32_t v = 0; v < 512; v++, c = r.m.cells[c].next) {
            const tp_node *n = &r.m.nodes[r.m.cells[c].val];
            ASSERT_EQ(n->kind, TPV_INT);
            ASSERT_U64(n->a, (uint64_t)(int64_t)(v * 7919 - 100000));
        }
    done(&r);
}

/* SETITEMS / APPENDS / ADDITEMS batches add to what a container already holds, in order; an
 * empty batch adds nothing; a bad key anywhere in a batch refuses it. */
TEST(segments_append_in_order)
{
    pk p;
    start(&p);
    by(&p, '('); /* a tuple (d, l, s) */
    by(&p, '}');
    by(&p, '('), str(&p, "a"), int1(&p, 1), str(&p, "b"), int1(&p, 2), by(&p, 'u');
    by(&p, '('), by(&p, 'u');
    by(&p, '('), str(&p, "c"), int1(&p, 3), str(&p, "d"), int1(&p, 4), str(&p, "e"), int1(&p, 5);
    by(&p, 'u');
    by(&p, ']');
    by(&p, '('), int1(&p, 10), int1(&p, 11), by(&p, 'e');
    int1(&p, 12), by(&p, 'a');
    by(&p, '('), int1(&p, 13), by(&p, 'e');
    by(&p, 0x8f); /* EMPTY_SET */
    by(&p, '('), int1(&p, 20), by(&p, 0x90), by(&p, '('), int1(&p, 21), int1(&p, 22), by(&p, 0x90);
    by(&p, 't');
    stop(&p);
    p.b[1] = 4; /* EMPTY_SET and ADDITEMS are protocol 4 */
    res r;
    run_pk(&p, &r, false);
    ASSERT_OK(r.st);
    const tp_node *tu = &r.m.nodes[r.root];
    ASSERT_EQ(tu->count, 3);
    uint32_t parts[3], c = tu->head;
    for (int i = 0; i < 3; i++, c = r.m.cells[c].next) parts[i] = r.m.cells[c].val;
    const tp_node *d = &r.m.nodes[parts[0]], *l = &r.m.nodes[parts[1]], *st = &r.m.nodes[parts[2]];
    ASSERT_EQ(d->kind, TPV_DICT);
    ASSERT_EQ(d->count, 5);
    const char *keys = "abcde";
    int k = 0;
    for (c = d->head; c != TP_NONE_IDX; c = r.m.cells[c].next, k++) {
        uint64_t len;
        const uint8_t *kb = ingot__tp_bytes(&r.m, r.m.cells[c].key, &len);
        ASSERT_U64(len, 1);
        ASSERT_EQ(kb[0], keys[k]);
        ASSERT_U64(r.m.nodes[r.m.cells[c].val].a, (uint64_t)k + 1);
        if (k == 4) ASSERT_EQ(c, d->tail);
    }
    ASSERT_EQ(k, 5);
    ASSERT_EQ(l->kind, TPV_LIST);
    ASSERT_EQ(l->count, 4);
    k = 0;
    for (c = l->head; c != TP_NONE_IDX; c = r.m.cells[c].next, k++) {
        ASSERT_TRUE(r.m.cells[c].key == TP_NONE_IDX);
        ASSERT_U64(r.m.nodes[r.m.cells[c].val].a, (uint64_t)k + 10);
    }
    ASSERT_EQ(k, 4);
    ASSERT_EQ(st->kind, TPV_SET);
    ASSERT_EQ(st->count, 3);
    k = 0;
    for (c = st->head; c != TP_NONE_IDX; c = r.m.cells[c].next, k++)
        ASSERT_U64(r.m.nodes[r.m.cells[c].val].a, (uint64_t)k + 20);
    done(&r);

    /* a list as the key of the third pair: refused, nothing about the order of the checks */
    start(&p);
    by(&p, '}'), by(&p, '(');
    str(&p, "a"), int1(&p, 1), str(&p, "b"), int1(&p, 2), by(&p, ']'), int1(&p, 3);
    by(&p, 'u'), stop(&p);
    run_pk(&p, &r, false);
    ASSERT_ST(r.st, INGOT_BAD_LAYOUT);
    ASSERT_TRUE(strstr(r.e.msg, "SETITEMS: a list used as a dict key") != NULL);
    ASSERT_U64(r.e.offset, p.n - 2);
    done(&r);
}

typedef struct {
    int allocs;
    size_t largest;
} alloc_count;

static void *counted_alloc(void *ctx, size_t size, size_t align)
{
    (void)align;
    alloc_count *c = ctx;
    c->allocs++;
    if (size > c->largest) c->largest = size;
    return malloc(size);
}

static void counted_free(void *ctx, void *q, size_t size)
{
    (void)ctx, (void)size;
    free(q);
}

/* The node and cell arrays are sized once from the pickle's length (a state-dict-like pickle of
 * 500 entries: 1,500 nodes and 1,500 cells), not grown a doubling at a time (16 allocations). */
TEST(values_sized_from_the_pickle_length)
{
    pk p;
    start(&p);
    by(&p, '}');
    for (int i = 0; i < 500; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%03d", i);
        str(&p, key);
        bint(&p, i), bint(&p, i + 1), by(&p, 0x86);
        by(&p, 's');
    }
    stop(&p);
    alloc_count cnt = {0};
    ingot_allocator a = {counted_alloc, counted_free, &cnt};
    tp_machine m;
    ingot__tp_init(&m, &a, p.b, p.n, 0, 5);
    m.reserve_max = 64 * (uint64_t)p.n; /* a file that also holds tensor data */
    uint32_t root;
    uint64_t end;
    ingot_error e;
    ASSERT_OK(ingot__tp_run(&m, 0, p.n, &root, &end, &e));
    ASSERT_U64(end, p.n);
    ASSERT_EQ(m.nodes[root].count, 500);
    /* nodes, cells, the stack */
    ASSERT_TRUE(cnt.allocs <= 3);
    uint32_t c = m.nodes[root].head;
    for (int i = 0; i < 500; i++, c = m.cells[c].next) {
        uint64_t len;
        const uint8_t *k = ingot__tp_bytes(&m, m.cells[c].key, &len);
        char key[16];
        snprintf(key, sizeof key, "k%03d", i);
        ASSERT_U64(len, strlen(key));
        ASSERT_MEM(k, key, len);
        const tp_node *t = &m.nodes[m.cells[c].val];
        ASSERT_EQ(t->count, 2);
        ASSERT_U64(m.nodes[m.cells[t->head].val].a, (uint64_t)i);
        ASSERT_U64(m.nodes[m.cells[t->tail].val].a, (uint64_t)i + 1);
    }
    ingot__tp_free(&m);
}

/* A file that is all pickle (reserve_max 0: the pickle's length) gets no reservation larger than
 * the pickle; past it the arrays grow as the pickle's values ask (3,000 list items in 3 KB),
 * with the same values. */
TEST(reservation_bounded_by_the_file)
{
    pk p;
    start(&p);
    by(&p, ']');
    by(&p, '(');
    for (int i = 0; i < 3000; i++) by(&p, 'N'); /* one byte a value: more nodes than bytes / 40 */
    by(&p, 'e');
    stop(&p);
    alloc_count cnt = {0};
    ingot_allocator a = {counted_alloc, counted_free, &cnt};
    tp_machine m;
    ingot__tp_init(&m, &a, p.b, p.n, 0, 5);
    uint32_t root;
    uint64_t end;
    ingot_error e;
    ASSERT_OK(ingot__tp_run(&m, 0, p.n, &root, &end, &e));
    ASSERT_EQ(m.nodes[root].count, 3000);
    uint32_t c = m.nodes[root].head;
    for (int i = 0; i < 3000; i++, c = m.cells[c].next)
        ASSERT_EQ(m.nodes[m.cells[c].val].kind, TPV_NONE);
    ingot__tp_free(&m);
    /* the first reservation alone stays within the pickle */
    pk q;
    start(&q);
    by(&q, 'N');
    stop(&q);
    for (int i = 0; i < 4000; i++) by(&q, 0x95); /* FRAME-free padding the run never reaches */
    alloc_count c2 = {0};
    ingot_allocator a2 = {counted_alloc, counted_free, &c2};
    ingot__tp_init(&m, &a2, q.b, q.n, 0, 5);
    ASSERT_OK(ingot__tp_run(&m, 0, q.n, &root, &end, &e));
    ASSERT_TRUE(c2.largest <= q.n);
    ingot__tp_free(&m);
}

RUN_TESTS(T(scalars_become_typed_metadata), T(memo_references_share_nodes), T(protocol4_opcodes),
          T(state_dict_with_views_and_tied_names), T(root_tensor_and_placeholders),
          T(allowed_reduces), T(rebuild_v3_and_from_type),
          T(placeholder_namespace_and_tensors_around_it),
          T(placeholder_containers_counter_and_bare_globals),
          T(placeholder_cycles_sharing_and_root), T(placeholder_misuse_refused),
          T(refuses_tier_c_opcodes),
          T(refuses_arbitrary_globals), T(refuses_bad_reduce),
          T(refuses_build_on_anything_but_ordereddict), T(refuses_protocols_0_and_1),
          T(refuses_bad_persistent_ids), T(refuses_bad_tensors), T(refuses_structural_errors),
          T(limits), T(flatten_limits), T(flatten_duplicates_and_unnamed), T(scan_end_finds_stops),
          T(immutable_values_shared), T(values_sized_from_the_pickle_length), T(reservation_bounded_by_the_file),
          T(segments_append_in_order))
