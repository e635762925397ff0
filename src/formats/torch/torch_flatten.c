/*
 * torch_flatten.c - turns the value the pickle machine built into ingot's view
 * (../shared/formats/pytorch.md §6): tensors named by their container path joined with '/',
 * scalar leaves and homogeneous scalar lists as typed metadata under the same path. Bounded by
 * the nesting and visit caps of §3.7, so a shared-subtree DAG cannot expand exponentially.
 */
#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "order.h"
#include "torch_pickle.h"

typedef struct {
    tp_machine *m;
    tp_flat *fl;
    const ingot_allocator *a;
    char *path;
    size_t path_len, path_cap;
    uint64_t visits, max_visits;
    uint64_t max_names; /* bytes of names and strings the flattening may produce */
    uint64_t root_off;
    ingot_error *err;
} walker;

static ingot_status ferr(walker *w, ingot_status code, const char *msg)
{
    size_t wl = w->path_len > 63 ? 63 : w->path_len;
    return ingot__err(w->err, code, w->root_off, w->path, wl, "%s", msg);
}

static ingot_status oom(walker *w) { return ferr(w, INGOT_NOMEM, "out of memory while naming"); }

/* Appends bytes (plus NUL) to the name pool; *off receives where. */
static ingot_status names_add(walker *w, const void *s, size_t n, uint64_t *off)
{
    tp_flat *fl = w->fl;
    if (fl->n_names + n + 1 > w->max_names)
        return ferr(w, INGOT_LIMIT, "flattened names exceed 4 MiB + 16 x the pickle size");
    if (!ingot__tp_reserve(w->a, (void **)&fl->names, &fl->cap_names, fl->n_names + n + 1, 1))
        return oom(w);
    *off = fl->n_names;
    if (n) ING_MEMCPY(fl->names + fl->n_names, s, n);
    fl->names[fl->n_names + n] = '\0';
    fl->n_names += n + 1;
    return INGOT_OK;
}

static ingot_status path_push(walker *w, const void *s, size_t n, size_t *saved)
{
    *saved = w->path_len;
    size_t need = w->path_len + (w->path_len ? 1 : 0) + n;
    if (need > TP_MAX_NAME)
        return ferr(w, INGOT_BAD_NAME, "flattened name longer than 65535 bytes");
    if (!ingot__tp_reserve(w->a, (void **)&w->path, &w->path_cap, need + 1, 1)) return oom(w);
    if (w->path_len) w->path[w->path_len++] = '/';
    if (n) ING_MEMCPY(w->path + w->path_len, s, n);
    w->path_len += n;
    w->path[w->path_len] = '\0';
    return INGOT_OK;
}

static void path_pop(walker *w, size_t saved)
{
    w->path_len = saved;
    if (w->path) w->path[saved] = '\0';
}

/* Decimal text of a little-endian two's complement integer of n <= 255 bytes. */
static size_t bigint_decimal(const uint8_t *le, size_t n, char *out /* >= 620 */)
{
    uint8_t mag[256];
    bool neg = n && (le[n - 1] & 0x80);
    unsigned carry = 1;
    for (size_t i = 0; i < n; i++) { /* big-endian magnitude */
        uint8_t b = neg ? (uint8_t)~le[i] : le[i];
        if (neg) {
            unsigned s = b + carry;
            b = (uint8_t)s;
            carry = s >> 8;
        }
        mag[n - 1 - i] = b;
    }
    char rev[640];
    size_t nd = 0, start = 0;
    while (start < n && mag[start] == 0) start++;
    while (start < n) {
        unsigned rem = 0;
        for (size_t i = start; i < n; i++) {
            unsigned cur = (rem << 8) | mag[i];
            mag[i] = (uint8_t)(cur / 10);
            rem = cur % 10;
        }
        rev[nd++] = (char)('0' + rem);
        while (start < n && mag[start] == 0) start++;
    }
    if (nd == 0) rev[nd++] = '0';
    size_t k = 0;
    if (neg) out[k++] = '-';
    while (nd) out[k++] = rev[--nd];
    return k;
}

/* Path component of a dict key; false if the key cannot be named (float, bytes, tuple, ...). */
static bool key_text(walker *w, uint32_t key, const char **s, size_t *n, char *tmp)
{
    const tp_node *k = &w->m->nodes[key];
    uint64_t len;
    switch (k->kind) {
    case TPV_STR:
        *s = (const char *)ingot__tp_bytes(w->m, key, &len);
        *n = (size_t)len;
        return true;
    case TPV_INT:
        *n = ingot__fmt(tmp, 640, "%lld", (long long)(int64_t)k->a);
        *s = tmp;
        return true;
    case TPV_BIGINT: {
        const uint8_t *b = ingot__tp_bytes(w->m, key, &len);
        *n = bigint_decimal(b, (size_t)len, tmp);
        *s = tmp;
        return true;
    }
    case TPV_BOOL:
        *s = k->a ? "True" : "False";
        *n = k->a ? 4 : 5;
        return true;
    case TPV_NONE:
        *s = "None";
        *n = 4;
        return true;
    default:
        return false;
    }
}

static ingot_status add_entry(walker *w, uint32_t tensor, bool root)
{
    tp_flat *fl = w->fl;
    const char *name = w->path_len ? w->path : "tensor";
    size_t len = w->path_len ? w->path_len : 6;
    if (!w->path_len && !root) return ferr(w, INGOT_BAD_NAME, "tensor with an empty name");
    for (size_t i = 0; i < len; i++)
        if (name[i] == '\0') return ferr(w, INGOT_BAD_NAME, "tensor name contains a NUL byte");
    if (fl->n_entries >= UINT32_MAX / 2) return ferr(w, INGOT_LIMIT, "too many tensors");
    if (!ingot__tp_reserve(w->a, (void **)&fl->entries, &fl->cap_entries, fl->n_entries + 1,
                    sizeof(tp_entry)))
        return oom(w);
    uint64_t off;
    ING_TRY(names_add(w, name, len, &off));
    fl->entries[fl->n_entries++] = (tp_entry){off, (uint32_t)len, tensor};
    return INGOT_OK;
}

static ingot_status add_meta(walker *w, const tp_meta *mt, bool root)
{
    tp_flat *fl = w->fl;
    const char *key = w->path_len ? w->path : "value";
    size_t len = w->path_len ? w->path_len : 5;
    if (!w->path_len && !root) return ferr(w, INGOT_BAD_NAME, "metadata with an empty key");
    if (fl->n_metas >= UINT32_MAX / 2) return ferr(w, INGOT_LIMIT, "too many metadata entries");
    if (!ingot__tp_reserve(w->a, (void **)&fl->metas, &fl->cap_metas, fl->n_metas + 1,
                           sizeof(tp_meta)))
        return oom(w);
    uint64_t off;
    ING_TRY(names_add(w, key, len, &off));
    tp_meta *d = &fl->metas[fl->n_metas++];
    *d = *mt;
    d->key_off = off;
    d->key_len = (uint32_t)len;
    return INGOT_OK;
}

static bool scalar_kind(uint8_t k)
{
    return k == TPV_INT || k == TPV_FLOAT || k == TPV_BOOL || k == TPV_STR;
}

static ingot_status scalar_meta(walker *w, uint32_t node, bool root)
{
    const tp_node *n = &w->m->nodes[node];
    tp_meta mt;
    ING_MEMSET(&mt, 0, sizeof mt);
    mt.count = 1;
    switch (n->kind) {
    case TPV_INT: mt.type = INGOT_META_I64; mt.value = n->a; break;
    case TPV_FLOAT: mt.type = INGOT_META_F64; mt.value = n->a; break;
    case TPV_BOOL: mt.type = INGOT_META_BOOL; mt.value = n->a; break;
    case TPV_STR:
    case TPV_DEVICE:
    case TPV_BYTES:
        mt.type = n->kind == TPV_BYTES ? INGOT_META_BYTES : INGOT_META_STRING;
        mt.value = node;
        mt.count = n->b;
        break;
    case TPV_BIGINT: {
        char tmp[640];
        uint64_t len, off;
        const uint8_t *b = ingot__tp_bytes(w->m, node, &len);
        size_t k = bigint_decimal(b, (size_t)len, tmp);
        ING_TRY(names_add(w, tmp, k, &off));
        mt.type = INGOT_META_STRING;
        mt.value = off;
        mt.count = k;
        mt.src = TPM_NAMES;
        break;
    }
    case TPV_DTYPE: {
        char tmp[64];
        size_t k = ingot__fmt(tmp, sizeof tmp, "torch.%s", ingot__tp_dtype_torch_name(n->aux));
        uint64_t off;
        ING_TRY(names_add(w, tmp, k, &off));
        mt.type = INGOT_META_STRING;
        mt.value = off;
        mt.count = k;
        mt.src = TPM_NAMES;
        break;
    }
    default:
        return INGOT_OK; /* None, globals: omitted */
    }
    return add_meta(w, &mt, root);
}

/* A non-empty list/tuple/set whose items are all INT, all FLOAT, all BOOL or all STR. */
static ingot_status array_meta(walker *w, const tp_node *n, bool *done)
{
    tp_machine *m = w->m;
    *done = false;
    if (n->count == 0 || n->head == TP_NONE_IDX) return INGOT_OK;
    uint8_t k0 = m->nodes[m->cells[n->head].val].kind;
    if (!scalar_kind(k0)) return INGOT_OK;
    for (uint32_t c = n->head; c != TP_NONE_IDX; c = m->cells[c].next)
        if (m->nodes[m->cells[c].val].kind != k0) return INGOT_OK;
    tp_flat *fl = w->fl;
    tp_meta mt;
    ING_MEMSET(&mt, 0, sizeof mt);
    mt.is_array = true;
    mt.count = n->count;
    w->visits += n->count;
    if (w->visits > w->max_visits) return ferr(w, INGOT_LIMIT, "flattening visits over the cap");
    if (k0 == TPV_STR) {
        mt.type = INGOT_META_STRING;
        mt.value = fl->n_refs;
        if (!ingot__tp_reserve(w->a, (void **)&fl->refs, &fl->cap_refs, fl->n_refs + n->count,
                        sizeof(uint32_t)))
            return oom(w);
        for (uint32_t c = n->head; c != TP_NONE_IDX; c = m->cells[c].next)
            fl->refs[fl->n_refs++] = m->cells[c].val;
    } else {
        mt.type = k0 == TPV_INT ? INGOT_META_I64 : k0 == TPV_FLOAT ? INGOT_META_F64 : INGOT_META_BOOL;
        mt.value = fl->n_vals;
        if (!ingot__tp_reserve(w->a, (void **)&fl->vals, &fl->cap_vals, fl->n_vals + n->count,
                        sizeof(uint64_t)))
            return oom(w);
        for (uint32_t c = n->head; c != TP_NONE_IDX; c = m->cells[c].next)
            fl->vals[fl->n_vals++] = m->nodes[m->cells[c].val].a;
    }
    ING_TRY(add_meta(w, &mt, false));
    *done = true;
    return INGOT_OK;
}

static ingot_status walk(walker *w, uint32_t node, uint32_t depth, bool unnamed);

/* Items of a dict, or of a placeholder made from a dict/list subclass (SETITEM(S) cells carry a
 * key, APPEND(S)/ADDITEMS cells none and are numbered): key or index path components. */
static ingot_status walk_items(walker *w, const tp_node *n, uint32_t depth, bool unnamed)
{
    tp_machine *m = w->m;
    char tmp[640];
    uint64_t i = 0;
    for (uint32_t c = n->head; c != TP_NONE_IDX; c = m->cells[c].next) {
        const char *s = tmp;
        size_t len, saved;
        uint32_t key = m->cells[c].key, val = m->cells[c].val;
        if (key == TP_NONE_IDX) {
            len = ingot__fmt(tmp, sizeof tmp, "%llu", (unsigned long long)i++);
        } else if (unnamed || !key_text(w, key, &s, &len, tmp)) {
            ING_TRY(walk(w, val, depth + 1, true));
            continue;
        }
        ING_TRY(path_push(w, s, len, &saved));
        ING_TRY(walk(w, val, depth + 1, unnamed));
        path_pop(w, saved);
    }
    return INGOT_OK;
}

static bool is_container(uint8_t k)
{
    return k == TPV_DICT || k == TPV_LIST || k == TPV_TUPLE || k == TPV_SET || k == TPV_OBJECT;
}

/* A placeholder: one notice (at the first path that reaches it), then its contents as plain data
 * under the same path: the items of a dict/list subclass; else the BUILD state (attributes:
 * argparse.Namespace's options); else the constructor arguments (a 1-tuple's item in place:
 * collections.Counter's dict). A placeholder met again inside its own contents (a cycle) is not
 * walked twice. */
static ingot_status walk_place(walker *w, uint32_t node, uint32_t depth, bool unnamed)
{
    tp_machine *m = w->m;
    tp_flat *fl = w->fl;
    if (!(m->nodes[node].flags & TPN_NOTICED)) {
        m->nodes[node].flags |= TPN_NOTICED;
        if (!ingot__tp_reserve(w->a, (void **)&fl->places, &fl->cap_places, fl->n_places + 1,
                               sizeof(tp_place)))
            return oom(w);
        uint64_t off;
        ING_TRY(names_add(w, w->path_len ? w->path : "", w->path_len, &off));
        fl->places[fl->n_places++] = (tp_place){node, (uint32_t)w->path_len, off};
    }
    const tp_node *n = &m->nodes[node];
    if (n->kind == TPV_CLASS || (n->flags & TPN_WALKING)) return INGOT_OK;
    uint32_t content = TP_NONE_IDX;
    if (n->count == 0) {
        if (n->attrs != TP_NONE_IDX && m->nodes[n->attrs].kind != TPV_NONE) {
            content = n->attrs;
        } else {
            const tp_node *args = &m->nodes[(uint32_t)(n->a >> 32)];
            if (args->count == 1) content = m->cells[args->head].val;
            else if (args->count > 1) content = (uint32_t)(n->a >> 32);
        }
        if (content == TP_NONE_IDX) return INGOT_OK;
    }
    m->nodes[node].flags |= TPN_WALKING;
    ingot_status st;
    if (content == TP_NONE_IDX) {
        st = walk_items(w, n, depth, unnamed);
    } else {
        /* A scalar or tensor content at the root keeps the root's names ("value", "tensor"). */
        bool root = w->path_len == 0 && !is_container(m->nodes[content].kind);
        st = walk(w, content, root ? 0 : depth + 1, unnamed);
    }
    m->nodes[node].flags &= (uint8_t)~TPN_WALKING;
    return st;
}

static ingot_status walk(walker *w, uint32_t node, uint32_t depth, bool unnamed)
{
    if (++w->visits > w->max_visits)
        return ferr(w, INGOT_LIMIT, "flattening visits over the cap (shared-subtree bomb?)");
    if (depth > TP_MAX_NEST) return ferr(w, INGOT_LIMIT, "containers nested deeper than 64");
    tp_machine *m = w->m;
    const tp_node *n = &m->nodes[node];
    switch (n->kind) {
    case TPV_TENSOR:
    case TPV_STORAGE: {
        if (unnamed)
            return ferr(w, INGOT_UNSUPPORTED,
                        "a tensor below a dict key that cannot be named (float, bytes, tuple)");
        uint32_t t = (uint32_t)n->a;
        if (n->kind == TPV_STORAGE)
            ING_TRY(ingot__tp_storage_tensor(m, (uint32_t)n->a, &t, w->err));
        return add_entry(w, t, depth == 0);
    }
    case TPV_DICT:
        return walk_items(w, n, depth, unnamed);
    case TPV_CLASS:
    case TPV_OBJECT:
        return walk_place(w, node, depth, unnamed);
    case TPV_LIST:
    case TPV_TUPLE:
    case TPV_SET: {
        if (!unnamed && depth > 0) {
            bool done;
            ING_TRY(array_meta(w, n, &done));
            if (done) return INGOT_OK;
        }
        uint64_t i = 0;
        for (uint32_t c = n->head; c != TP_NONE_IDX; c = m->cells[c].next, i++) {
            char tmp[24];
            size_t len = ingot__fmt(tmp, sizeof tmp, "%llu", (unsigned long long)i), saved;
            ING_TRY(path_push(w, tmp, len, &saved));
            ING_TRY(walk(w, m->cells[c].val, depth + 1, unnamed));
            path_pop(w, saved);
        }
        return INGOT_OK;
    }
    default:
        if (unnamed) return INGOT_OK;
        return scalar_meta(w, node, depth == 0);
    }
}

/* Index arrays by name: the names are pool strings at each item's uint64 offset and uint32
 * length fields. */
typedef struct {
    const char *names;
    const void *items;
    size_t stride, off_at, len_at; /* byte offsets of the uint64 off and uint32 len fields */
} sort_ctx;

static const void *item_key(const void *ctx, uint32_t i, size_t *len)
{
    const sort_ctx *c = ctx;
    const uint8_t *it = (const uint8_t *)c->items + (size_t)i * c->stride;
    uint64_t off;
    uint32_t l;
    ING_MEMCPY(&off, it + c->off_at, 8);
    ING_MEMCPY(&l, it + c->len_at, 4);
    *len = l;
    return c->names + off;
}

static int item_cmp(const void *ctx, uint32_t a, uint32_t b)
{
    size_t la, lb;
    const void *ka = item_key(ctx, a, &la), *kb = item_key(ctx, b, &lb);
    return ingot__bytes_cmp(ka, la, kb, lb);
}

static ingot_status sort_index(walker *w, const void *items, size_t n, size_t stride,
                               size_t off_at, size_t len_at, uint32_t **out)
{
    uint32_t *v = ingot__alloc(w->a, (n ? n : 1) * sizeof *v);
    uint32_t *tmp = ingot__alloc(w->a, (n ? n : 1) * sizeof *tmp);
    if (!v || !tmp) {
        ingot__free(w->a, v, (n ? n : 1) * sizeof *v);
        ingot__free(w->a, tmp, (n ? n : 1) * sizeof *tmp);
        return oom(w);
    }
    for (size_t i = 0; i < n; i++) v[i] = (uint32_t)i;
    sort_ctx c = {w->fl->names, items, stride, off_at, len_at};
    ingot__index_sort(v, tmp, n, item_cmp, &c);
    ingot__free(w->a, tmp, (n ? n : 1) * sizeof *tmp);
    *out = v;
    return INGOT_OK;
}

/* Places in node order, which is the order of the opcodes that made them (file order). */
static ingot_status sort_places(walker *w)
{
    tp_flat *fl = w->fl;
    size_t n = fl->n_places;
    if (n < 2) return INGOT_OK;
    tp_place *tmp = ingot__alloc(w->a, n * sizeof *tmp);
    if (!tmp) return oom(w);
    tp_place *v = fl->places;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = v[j].node < v[i].node ? v[j++] : v[i++];
            while (i < mid) tmp[k++] = v[i++];
            while (j < hi) tmp[k++] = v[j++];
        }
        ING_MEMCPY(v, tmp, n * sizeof *v);
    }
    ingot__free(w->a, tmp, n * sizeof *tmp);
    return INGOT_OK;
}

static ingot_status dup_err(walker *w, const char *name, size_t len, const char *what)
{
    return ingot__err(w->err, INGOT_DUPLICATE, w->root_off, name, len > 63 ? 63 : len,
                      "two %s flatten to the same name", what);
}

ingot_status ingot__tp_flatten(tp_machine *m, uint32_t root, uint64_t root_off, tp_flat *fl,
                        ingot_error *err)
{
    walker w = {.m = m, .fl = fl, .a = m->alloc, .root_off = root_off, .err = err};
    w.max_visits = m->opcodes * 2 > TP_MIN_VISITS ? m->opcodes * 2 : TP_MIN_VISITS;
    w.max_names = TP_MIN_NAMES + 16 * m->buf_len;
    ingot_status st = walk(&w, root, 0, false);
    ingot__free(w.a, w.path, w.path_cap);
    if (st != INGOT_OK) return st;
    ING_TRY(sort_places(&w));
    ING_TRY(sort_index(&w, fl->entries, fl->n_entries, sizeof(tp_entry),
                       offsetof(tp_entry, name_off), offsetof(tp_entry, name_len), &fl->sorted));
    ING_TRY(sort_index(&w, fl->metas, fl->n_metas, sizeof(tp_meta), offsetof(tp_meta, key_off),
                       offsetof(tp_meta, key_len), &fl->msorted));
    for (size_t i = 1; i < fl->n_entries; i++) {
        const tp_entry *a = &fl->entries[fl->sorted[i - 1]], *b = &fl->entries[fl->sorted[i]];
        if (a->name_len == b->name_len &&
            ING_MEMCMP(fl->names + a->name_off, fl->names + b->name_off, a->name_len) == 0)
            return dup_err(&w, fl->names + a->name_off, a->name_len, "tensors");
    }
    for (size_t i = 1; i < fl->n_metas; i++) {
        const tp_meta *a = &fl->metas[fl->msorted[i - 1]], *b = &fl->metas[fl->msorted[i]];
        if (a->key_len == b->key_len &&
            ING_MEMCMP(fl->names + a->key_off, fl->names + b->key_off, a->key_len) == 0)
            return dup_err(&w, fl->names + a->key_off, a->key_len, "metadata entries");
    }
    for (size_t i = 0; i < fl->n_metas; i++) {
        const tp_meta *a = &fl->metas[i];
        if (ingot__tp_flat_find(fl, fl->names + a->key_off, a->key_len) >= 0)
            return dup_err(&w, fl->names + a->key_off, a->key_len, "a tensor and a metadata entry");
    }
    return INGOT_OK;
}

void ingot__tp_flat_free(tp_flat *fl, const ingot_allocator *a)
{
    ingot__free(a, fl->names, fl->cap_names);
    ingot__free(a, fl->entries, fl->cap_entries * sizeof *fl->entries);
    ingot__free(a, fl->sorted, (fl->n_entries ? fl->n_entries : 1) * sizeof *fl->sorted);
    ingot__free(a, fl->metas, fl->cap_metas * sizeof *fl->metas);
    ingot__free(a, fl->msorted, (fl->n_metas ? fl->n_metas : 1) * sizeof *fl->msorted);
    ingot__free(a, fl->vals, fl->cap_vals * sizeof *fl->vals);
    ingot__free(a, fl->refs, fl->cap_refs * sizeof *fl->refs);
    ingot__free(a, fl->places, fl->cap_places * sizeof *fl->places);
    ING_MEMSET(fl, 0, sizeof *fl);
}

int64_t ingot__tp_flat_find(const tp_flat *fl, const char *name, size_t len)
{
    if (!fl->sorted) return -1;
    sort_ctx c = {fl->names, fl->entries, sizeof(tp_entry), offsetof(tp_entry, name_off),
                  offsetof(tp_entry, name_len)};
    uint32_t i;
    if (!ingot__index_find(fl->sorted, fl->n_entries, item_key, &c, name, len, &i)) return -1;
    return i;
}

int64_t ingot__tp_flat_meta_find(const tp_flat *fl, const char *key, size_t len)
{
    if (!fl->msorted) return -1;
    sort_ctx c = {fl->names, fl->metas, sizeof(tp_meta), offsetof(tp_meta, key_off),
                  offsetof(tp_meta, key_len)};
    uint32_t i;
    if (!ingot__index_find(fl->msorted, fl->n_metas, item_key, &c, key, len, &i)) return -1;
    return i;
}
