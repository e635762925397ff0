/*
 * plan.c - building a conversion plan (include/ingot/convert.h sections 1 and 2): per-tensor
 * entries, selection by glob, renaming by POSIX regex, casts, llama.cpp's quantization rules,
 * and the metadata list with its edits. Nothing here reads tensor data; run.c runs the plan.
 */
#include <errno.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "convert_impl.h"
#include "error.h"
#include "utf8.h"

/* ---------------------------------------------------------------------------------------------
 * Entries
 * ------------------------------------------------------------------------------------------- */

bool ingot__is_float_dtype(ingot_dtype dt)
{
    switch (dt) {
    case INGOT_DTYPE_F64: case INGOT_DTYPE_F32: case INGOT_DTYPE_F16: case INGOT_DTYPE_BF16:
    case INGOT_DTYPE_F8_E4M3: case INGOT_DTYPE_F8_E5M2: case INGOT_DTYPE_F8_E4M3FNUZ:
    case INGOT_DTYPE_F8_E5M2FNUZ: case INGOT_DTYPE_F8_E8M0:
        return true;
    default: return false;
    }
}

bool ingot_dtype_is_float_like(ingot_dtype dt)
{
    if (!ingot_dequantize_supported(dt)) return false;
    return ingot_dtype_is_quantized(dt) || ingot__is_float_dtype(dt);
}

const char *ingot__plan_name(const ingot_convert_plan *p, uint64_t i, size_t *len)
{
    if (p->t[i].name) {
        if (len) *len = strlen(p->t[i].name);
        return p->t[i].name;
    }
    ingot_tensor_info t;
    ingot_file_tensor_at(p->src, i, &t);
    if (len) *len = t.name_len;
    return t.name;
}

static void free_str(char *s)
{
    if (s) ingot__free(NULL, s, strlen(s) + 1);
}

static void meta_free_value(ingot__plan_meta *m)
{
    if (m->data) ingot__free(NULL, m->data, m->data_len ? m->data_len : 1);
    if (m->elems) ingot__free(NULL, m->elems, (size_t)m->count * sizeof *m->elems);
    m->data = NULL;
    m->elems = NULL;
    m->data_len = 0;
}

ingot_status ingot_convert_plan_new(const ingot_file *src, ingot_convert_plan **out,
                                    ingot_error *err)
{
    if (out) *out = NULL;
    if (!src || !out) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL argument");
    ingot_convert_plan *p = ingot__calloc(NULL, sizeof *p);
    if (!p) goto nomem;
    p->src = src;
    p->nt = ingot_file_tensor_count(src);
    p->t = ingot__calloc(NULL, (size_t)(p->nt ? p->nt : 1) * sizeof *p->t);
    if (!p->t) goto nomem;
    for (uint64_t i = 0; i < p->nt; i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(src, i, &t);
        p->t[i].dtype = t.dtype;
    }
    uint64_t nm = ingot_file_meta_count(src);
    p->cap_m = nm + 8;
    p->m = ingot__calloc(NULL, (size_t)p->cap_m * sizeof *p->m);
    if (!p->m) goto nomem;
    for (uint64_t i = 0; i < nm; i++) {
        ingot_meta_info m;
        ingot_file_meta_at(src, i, &m);
        ingot__plan_meta *e = &p->m[p->nm];
        if (!(e->key = ingot__strndup(NULL, m.key, m.key_len))) goto nomem;
        p->nm++;
        e->key_len = m.key_len;
        e->from_src = true;
        e->src_index = i;
        e->type = m.type;
        e->is_array = m.is_array;
    }
    *out = p;
    return INGOT_OK;
nomem:
    ingot_convert_plan_free(p);
    return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory for the plan");
}

void ingot_convert_plan_free(ingot_convert_plan *p)
{
    if (!p) return;
    for (uint64_t i = 0; p->t && i < p->nt; i++) free_str(p->t[i].name);
    if (p->t) ingot__free(NULL, p->t, (size_t)(p->nt ? p->nt : 1) * sizeof *p->t);
    for (uint64_t i = 0; i < p->nm; i++) {
        free_str(p->m[i].key);
        meta_free_value(&p->m[i]);
    }
    if (p->m) ingot__free(NULL, p->m, (size_t)p->cap_m * sizeof *p->m);
    ingot__free(NULL, p, sizeof *p);
}

uint64_t ingot_convert_plan_tensor_count(const ingot_convert_plan *p) { return p ? p->nt : 0; }

ingot_status ingot_convert_plan_tensor_at(const ingot_convert_plan *p, uint64_t i,
                                          ingot_convert_tensor *out)
{
    if (!p || !out || i >= p->nt) {
        if (out) memset(out, 0, sizeof *out);
        return p && out ? INGOT_RANGE : INGOT_MISUSE;
    }
    const ingot__plan_tensor *e = &p->t[i];
    out->src_index = i;
    out->name = ingot__plan_name(p, i, NULL);
    out->action = e->action;
    out->dtype = e->dtype;
    out->permute_heads = e->permute_heads;
    out->permute_inverse = e->permute_inverse;
    return INGOT_OK;
}

/* Checks that entry i may become (action, dt, heads); fills err naming the source tensor. */
static ingot_status check_entry(const ingot_convert_plan *p, uint64_t i,
                                ingot_convert_action action, ingot_dtype dt, uint32_t heads,
                                ingot_error *err)
{
    ingot_tensor_info t;
    ingot_file_tensor_at(p->src, i, &t);
    const char *sn = ingot_dtype_name(t.dtype), *dn = ingot_dtype_name(dt);
    if (!dn) dn = "?";
    switch (action) {
    case INGOT_CONVERT_KEEP: case INGOT_CONVERT_DROP:
        if (dt != t.dtype)
            return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, t.name, t.name_len,
                              "KEEP and DROP take the source dtype %s, not %s", sn, dn);
        break;
    case INGOT_CONVERT_CAST:
        if (!ingot__is_float_dtype(t.dtype) || !ingot_cast_supported(t.dtype, dt))
            return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t.name, t.name_len,
                              "cannot cast %s to %s (float types to F64 F32 F16 BF16 F8_E4M3 "
                              "F8_E5M2)",
                              sn, dn);
        break;
    case INGOT_CONVERT_QUANTIZE: {
        if (!ingot__is_float_dtype(t.dtype) || !ingot_quantize_supported(dt))
            return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t.name, t.name_len,
                              "cannot quantize %s to %s (float types to Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 "
                              "Q4_K Q5_K Q6_K)",
                              sn, dn);
        uint64_t row = t.rank ? t.shape[t.rank - 1] : 1;
        if (row % ingot_dtype_block_elems(dt))
            return ingot__err(err, INGOT_BAD_SHAPE, INGOT_NO_OFFSET, t.name, t.name_len,
                              "rows of %llu elements are not whole %s blocks of %u",
                              (unsigned long long)row, dn, ingot_dtype_block_elems(dt));
        break;
    }
    case INGOT_CONVERT_DEQUANTIZE:
        if (!ingot_dtype_is_float_like(t.dtype) ||
            (dt != INGOT_DTYPE_F32 && dt != INGOT_DTYPE_F16 && dt != INGOT_DTYPE_BF16))
            return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t.name, t.name_len,
                              "cannot dequantize %s to %s (decodable blocks or floats to F32, "
                              "F16 or BF16)",
                              sn, dn);
        break;
    default:
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, t.name, t.name_len,
                          "unknown action %d", (int)action);
    }
    if (heads) {
        uint64_t rows = t.rank ? t.shape[0] : 0;
        if (t.rank < 1 || rows % (2 * (uint64_t)heads))
            return ingot__err(err, INGOT_BAD_SHAPE, INGOT_NO_OFFSET, t.name, t.name_len,
                              "%llu rows do not split into 2 x %u heads",
                              (unsigned long long)rows, heads);
    }
    return INGOT_OK;
}

/* Index of the kept entry other than `self` whose target name is (name, len), or UINT64_MAX. */
static uint64_t kept_named(const ingot_convert_plan *p, const char *name, size_t len, uint64_t self)
{
    for (uint64_t k = 0; k < p->nt; k++) {
        if (k == self || p->t[k].action == INGOT_CONVERT_DROP) continue;
        size_t kl;
        const char *kn = ingot__plan_name(p, k, &kl);
        if (kl == len && memcmp(kn, name, len) == 0) return k;
    }
    return UINT64_MAX;
}

static ingot_status dup_err(const ingot_convert_plan *p, uint64_t a, uint64_t b, const char *name,
                            ingot_error *err)
{
    ingot_tensor_info ta, tb;
    ingot_file_tensor_at(p->src, a, &ta);
    ingot_file_tensor_at(p->src, b, &tb);
    return ingot__err(err, INGOT_DUPLICATE, INGOT_NO_OFFSET, name, strlen(name),
                      "tensors '%s' and '%s' would both be named '%s'", ta.name, tb.name, name);
}

ingot_status ingot_convert_plan_set_tensor(ingot_convert_plan *p, uint64_t i,
                                           const ingot_convert_tensor *t, ingot_error *err)
{
    if (!p || !t || t->src_index != i)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "bad arguments");
    if (i >= p->nt)
        return ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, 0, 0, "no entry %llu",
                          (unsigned long long)i);
    ING_TRY(check_entry(p, i, t->action, t->dtype, t->permute_heads, err));
    char *name = NULL;
    if (t->name) {
        size_t len = strlen(t->name);
        if (!len || !ingot__utf8_valid((const uint8_t *)t->name, len, false))
            return ingot__err(err, INGOT_BAD_NAME, INGOT_NO_OFFSET, t->name, len,
                              "a tensor name is 1 or more bytes of UTF-8");
        if (t->action != INGOT_CONVERT_DROP) {
            uint64_t k = kept_named(p, t->name, len, i);
            if (k != UINT64_MAX) return dup_err(p, i, k, t->name, err);
        }
        if (!(name = ingot__strndup(NULL, t->name, len)))
            return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
    } else if (t->action != INGOT_CONVERT_DROP && p->t[i].action == INGOT_CONVERT_DROP) {
        size_t len;
        const char *cur = ingot__plan_name(p, i, &len);
        uint64_t k = kept_named(p, cur, len, i);
        if (k != UINT64_MAX) return dup_err(p, i, k, cur, err);
    }
    ingot__plan_tensor *e = &p->t[i];
    if (name) {
        free_str(e->name);
        e->name = name;
    }
    e->action = t->action;
    e->dtype = t->dtype;
    e->permute_heads = t->permute_heads;
    e->permute_inverse = t->permute_inverse;
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Select, rename, cast
 * ------------------------------------------------------------------------------------------- */

static void drop(ingot_convert_plan *p, uint64_t i)
{
    ingot_tensor_info t;
    ingot_file_tensor_at(p->src, i, &t);
    p->t[i].action = INGOT_CONVERT_DROP;
    p->t[i].dtype = t.dtype;
    p->t[i].permute_heads = 0;
}

ingot_status ingot_convert_plan_select(ingot_convert_plan *p, const ingot_convert_rule *rules,
                                       size_t n, ingot_error *err)
{
    if (!p || (n && !rules)) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL");
    bool any_include = false;
    for (size_t r = 0; r < n; r++) {
        if (!rules[r].glob)
            return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "rule %zu: NULL glob", r);
        any_include |= rules[r].include;
    }
    for (uint64_t i = 0; i < p->nt; i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(p->src, i, &t);
        bool keep = !any_include;
        for (size_t r = 0; r < n; r++)
            if (fnmatch(rules[r].glob, t.name, 0) == 0) {
                keep = rules[r].include;
                break;
            }
        if (!keep) drop(p, i);
    }
    return INGOT_OK;
}

/* Appends s[0..n) to the buffer *b (length *len, capacity *cap). */
static bool append(char **b, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = (*len + n + 1) * 2;
        if (!ingot__grow(NULL, (void **)b, *cap, nc)) return false;
        *cap = nc;
    }
    memcpy(*b + *len, s, n);
    *len += n;
    (*b)[*len] = '\0';
    return true;
}

/* name with its first match of re replaced by repl (sed's \1..\9, &, \\, \&); NULL if no match
 * (*matched false) or out of memory. */
static char *substitute(const regex_t *re, const char *name, const char *repl, bool *matched,
                        size_t *cap_out)
{
    regmatch_t m[10];
    *matched = regexec(re, name, 10, m, 0) == 0;
    if (!*matched) return NULL;
    char *b = NULL;
    size_t len = 0, cap = 0;
    bool ok = append(&b, &len, &cap, name, (size_t)m[0].rm_so);
    for (const char *r = repl; ok && *r; r++) {
        if (*r == '\\' && r[1] >= '0' && r[1] <= '9') {
            int g = r[1] - '0';
            if (m[g].rm_so >= 0)
                ok = append(&b, &len, &cap, name + m[g].rm_so, (size_t)(m[g].rm_eo - m[g].rm_so));
            r++;
        } else if (*r == '\\' && (r[1] == '\\' || r[1] == '&')) {
            ok = append(&b, &len, &cap, r + 1, 1);
            r++;
        } else if (*r == '&') {
            ok = append(&b, &len, &cap, name + m[0].rm_so, (size_t)(m[0].rm_eo - m[0].rm_so));
        } else {
            ok = append(&b, &len, &cap, r, 1);
        }
    }
    if (ok) ok = append(&b, &len, &cap, name + m[0].rm_eo, strlen(name + m[0].rm_eo));
    if (!ok) {
        if (b) ingot__free(NULL, b, cap);
        return NULL;
    }
    /* shrink to len + 1 so that free_str's size is right */
    char *s = ingot__strndup(NULL, b, len);
    ingot__free(NULL, b, cap);
    *cap_out = len + 1;
    return s;
}

static int cmp_names(const void *a, const void *b)
{
    const char *const *x = a, *const *y = b;
    return strcmp(x[0], y[0]);
}

ingot_status ingot_convert_plan_rename(ingot_convert_plan *p, const char *regex, const char *repl,
                                       ingot_error *err)
{
    if (!p || !regex || !repl)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL argument");
    regex_t re;
    int rc = regcomp(&re, regex, REG_EXTENDED);
    if (rc != 0) {
        char why[128];
        regerror(rc, &re, why, sizeof why);
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, regex, strlen(regex),
                          "regular expression '%s' does not compile: %s", regex, why);
    }
    ingot_status st = INGOT_OK;
    char **fresh = ingot__calloc(NULL, (size_t)(p->nt ? p->nt : 1) * sizeof *fresh);
    /* sort key: name pointer, then the entry index (as a pointer-sized integer) */
    const char **order = ingot__calloc(NULL, (size_t)(p->nt ? p->nt : 1) * 2 * sizeof *order);
    if (!fresh || !order) {
        st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
        goto done;
    }
    size_t nk = 0;
    for (uint64_t i = 0; i < p->nt; i++) {
        if (p->t[i].action == INGOT_CONVERT_DROP) continue;
        const char *cur = ingot__plan_name(p, i, NULL);
        bool matched;
        size_t cap = 0;
        fresh[i] = substitute(&re, cur, repl, &matched, &cap);
        if (matched && !fresh[i]) {
            st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
            goto done;
        }
        const char *nn = fresh[i] ? fresh[i] : cur;
        if (!*nn || !ingot__utf8_valid((const uint8_t *)nn, strlen(nn), false)) {
            st = ingot__err(err, INGOT_BAD_NAME, INGOT_NO_OFFSET, cur, strlen(cur),
                            "--rename '%s' leaves tensor '%s' %s", regex, cur,
                            *nn ? "a name that is not UTF-8" : "without a name");
            goto done;
        }
        order[2 * nk] = nn;
        order[2 * nk + 1] = (const char *)(uintptr_t)i;
        nk++;
    }
    qsort(order, nk, 2 * sizeof *order, cmp_names);
    for (size_t k = 1; k < nk; k++)
        if (strcmp(order[2 * k - 2], order[2 * k]) == 0) {
            uint64_t a = (uintptr_t)order[2 * k - 1], b = (uintptr_t)order[2 * k + 1];
            st = dup_err(p, a < b ? a : b, a < b ? b : a, order[2 * k], err);
            goto done;
        }
    for (uint64_t i = 0; i < p->nt; i++)
        if (fresh[i]) {
            free_str(p->t[i].name);
            p->t[i].name = fresh[i];
            fresh[i] = NULL;
        }
done:
    for (uint64_t i = 0; fresh && i < p->nt; i++) free_str(fresh[i]);
    if (fresh) ingot__free(NULL, fresh, (size_t)(p->nt ? p->nt : 1) * sizeof *fresh);
    if (order) ingot__free(NULL, order, (size_t)(p->nt ? p->nt : 1) * 2 * sizeof *order);
    regfree(&re);
    return st;
}

ingot_status ingot_convert_plan_cast(ingot_convert_plan *p, ingot_dtype from, ingot_dtype to,
                                     ingot_error *err)
{
    if (!p) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL plan");
    const char *tn = ingot_dtype_name(to);
    if (!ingot_cast_supported(INGOT_DTYPE_F32, to))
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, tn ? tn : "",
                          tn ? strlen(tn) : 0,
                          "cannot cast to %s: the targets are F64 F32 F16 BF16 F8_E4M3 F8_E5M2",
                          tn ? tn : "an unknown dtype");
    if (from != INGOT_DTYPE_INVALID && !ingot__is_float_dtype(from)) {
        const char *fn = ingot_dtype_name(from);
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, fn ? fn : "",
                          fn ? strlen(fn) : 0, "cannot cast from %s: only float types cast",
                          fn ? fn : "an unknown dtype");
    }
    for (uint64_t i = 0; i < p->nt; i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(p->src, i, &t);
        ingot__plan_tensor *e = &p->t[i];
        if (e->action == INGOT_CONVERT_DROP || !ingot__is_float_dtype(t.dtype)) continue;
        if (from != INGOT_DTYPE_INVALID && t.dtype != from) continue;
        e->action = t.dtype == to ? INGOT_CONVERT_KEEP : INGOT_CONVERT_CAST;
        e->dtype = to;
    }
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Metadata edits
 * ------------------------------------------------------------------------------------------- */

static ingot__plan_meta *meta_find(ingot_convert_plan *p, const char *key, size_t len)
{
    for (uint64_t i = 0; i < p->nm; i++)
        if (p->m[i].key_len == len && memcmp(p->m[i].key, key, len) == 0) return &p->m[i];
    return NULL;
}

static ingot_status check_key(const char *key, ingot_error *err)
{
    if (!key) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL key");
    size_t n = strlen(key);
    if (n == 0 || n > 65535 || !ingot__utf8_valid((const uint8_t *)key, n, false))
        return ingot__err(err, INGOT_BAD_NAME, INGOT_NO_OFFSET, key, n,
                          "a key is 1..65535 bytes of UTF-8");
    return INGOT_OK;
}

ingot_status ingot_convert_plan_meta_delete(ingot_convert_plan *p, const char *key,
                                            ingot_error *err)
{
    if (!p) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL plan");
    ING_TRY(check_key(key, err));
    ingot__plan_meta *m = meta_find(p, key, strlen(key));
    if (!m)
        return ingot__err(err, INGOT_NOT_FOUND, INGOT_NO_OFFSET, key, strlen(key),
                          "no metadata key '%s' to delete", key);
    free_str(m->key);
    meta_free_value(m);
    size_t at = (size_t)(m - p->m);
    memmove(m, m + 1, (size_t)(p->nm - at - 1) * sizeof *m);
    p->nm--;
    return INGOT_OK;
}

ingot_status ingot_convert_plan_meta_rename(ingot_convert_plan *p, const char *from,
                                            const char *to, ingot_error *err)
{
    if (!p) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL plan");
    ING_TRY(check_key(from, err));
    ING_TRY(check_key(to, err));
    ingot__plan_meta *m = meta_find(p, from, strlen(from));
    if (!m)
        return ingot__err(err, INGOT_NOT_FOUND, INGOT_NO_OFFSET, from, strlen(from),
                          "no metadata key '%s' to rename", from);
    ingot__plan_meta *o = meta_find(p, to, strlen(to));
    if (o && o != m)
        return ingot__err(err, INGOT_DUPLICATE, INGOT_NO_OFFSET, to, strlen(to),
                          "cannot rename '%s' to '%s': that key exists", from, to);
    char *k = ingot__strndup(NULL, to, strlen(to));
    if (!k) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
    free_str(m->key);
    m->key = k;
    m->key_len = strlen(to);
    return INGOT_OK;
}

ingot_status ingot_convert_plan_meta_set(ingot_convert_plan *p, const char *key,
                                         ingot_meta_type type, bool is_array, const void *value,
                                         uint64_t count, ingot_error *err)
{
    if (!p) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL plan");
    ING_TRY(check_key(key, err));
    size_t kl = strlen(key);
    if (!ingot_meta_type_name(type))
        return ingot__err(err, INGOT_BAD_TYPE, INGOT_NO_OFFSET, key, kl, "metadata type %d",
                          (int)type);
    bool strs = type == INGOT_META_STRING || type == INGOT_META_BYTES;
    if (!is_array && !strs && count != 1)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, key, kl, "a scalar has count 1");
    if (count && !value)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, key, kl, "NULL value");
    if (count > (SIZE_MAX >> 4))
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, key, kl, "value too large");
    ingot__plan_meta v = {0};
    v.type = type;
    v.is_array = is_array;
    v.count = count;
    if (strs && is_array) {
        const ingot_bytes *in = value;
        size_t total = 0;
        for (uint64_t k = 0; k < count; k++) {
            if (in[k].len && !in[k].data)
                return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, key, kl, "NULL element");
            if (type == INGOT_META_STRING &&
                !ingot__utf8_valid(in[k].data, in[k].len, true))
                return ingot__err(err, INGOT_BAD_STRING, INGOT_NO_OFFSET, key, kl,
                                  "element %llu is not UTF-8", (unsigned long long)k);
            total += in[k].len;
        }
        v.data_len = total;
        v.data = ingot__alloc(NULL, total ? total : 1);
        v.elems = ingot__alloc(NULL, (size_t)(count ? count : 1) * sizeof *v.elems);
        if (!v.data || !v.elems) {
            v.count = count ? count : 1;
            meta_free_value(&v);
            return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
        }
        size_t at = 0;
        for (uint64_t k = 0; k < count; k++) {
            if (in[k].len) memcpy((char *)v.data + at, in[k].data, in[k].len);
            v.elems[k].data = (char *)v.data + at;
            v.elems[k].len = in[k].len;
            at += in[k].len;
        }
    } else {
        size_t n = strs ? (size_t)count : (size_t)count * ingot_meta_type_size(type);
        if (type == INGOT_META_STRING && !ingot__utf8_valid(value, n, true))
            return ingot__err(err, INGOT_BAD_STRING, INGOT_NO_OFFSET, key, kl,
                              "the value of '%s' is not UTF-8", key);
        v.data_len = n;
        v.data = ingot__alloc(NULL, n ? n : 1);
        if (!v.data) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
        if (n) memcpy(v.data, value, n);
        if (type == INGOT_META_BOOL) /* normalise to 0/1 bytes */
            for (size_t k = 0; k < n; k++) ((uint8_t *)v.data)[k] = ((uint8_t *)v.data)[k] != 0;
    }
    ingot__plan_meta *m = meta_find(p, key, kl);
    if (!m) {
        if (p->nm == p->cap_m) {
            uint64_t nc = p->cap_m * 2 + 8;
            if (!ingot__grow(NULL, (void **)&p->m, (size_t)p->cap_m * sizeof *p->m,
                             (size_t)nc * sizeof *p->m)) {
                meta_free_value(&v);
                return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
            }
            memset(p->m + p->cap_m, 0, (size_t)(nc - p->cap_m) * sizeof *p->m);
            p->cap_m = nc;
        }
        m = &p->m[p->nm];
        if (!(m->key = ingot__strndup(NULL, key, kl))) {
            meta_free_value(&v);
            return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
        }
        m->key_len = kl;
        p->nm++;
    } else {
        meta_free_value(m);
    }
    char *k = m->key;
    *m = v;
    m->key = k;
    m->key_len = kl;
    m->from_src = false;
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * "KEY[:TYPE[[]]]=VALUE"
 * ------------------------------------------------------------------------------------------- */

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One scalar of `type` from text into out (host order, the type's size). */
static bool parse_scalar(ingot_meta_type t, const char *s, size_t n, void *out)
{
    char buf[128];
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    uint32_t sz = ingot_meta_type_size(t);
    switch (t) {
    case INGOT_META_U8: case INGOT_META_U16: case INGOT_META_U32: case INGOT_META_U64: {
        if (buf[0] == '-' || buf[0] == '+' || buf[0] == ' ') return false;
        errno = 0;
        unsigned long long v = strtoull(buf, &end, 0);
        if (errno || *end || (sz < 8 && v >> (8 * sz))) return false;
        uint64_t u = v;
        if (sz == 1) { uint8_t x = (uint8_t)u; memcpy(out, &x, 1); }
        else if (sz == 2) { uint16_t x = (uint16_t)u; memcpy(out, &x, 2); }
        else if (sz == 4) { uint32_t x = (uint32_t)u; memcpy(out, &x, 4); }
        else memcpy(out, &u, 8);
        return true;
    }
    case INGOT_META_I8: case INGOT_META_I16: case INGOT_META_I32: case INGOT_META_I64: {
        if (buf[0] == ' ') return false;
        errno = 0;
        long long v = strtoll(buf, &end, 0);
        if (errno || *end) return false;
        if (sz < 8) {
            long long lim = 1ll << (8 * sz - 1);
            if (v < -lim || v >= lim) return false;
        }
        if (sz == 1) { int8_t x = (int8_t)v; memcpy(out, &x, 1); }
        else if (sz == 2) { int16_t x = (int16_t)v; memcpy(out, &x, 2); }
        else if (sz == 4) { int32_t x = (int32_t)v; memcpy(out, &x, 4); }
        else { int64_t x = v; memcpy(out, &x, 8); }
        return true;
    }
    case INGOT_META_F32: {
        float v = strtof(buf, &end);
        if (*end || buf[0] == ' ') return false;
        memcpy(out, &v, 4);
        return true;
    }
    case INGOT_META_F64: {
        double v = strtod(buf, &end);
        if (*end || buf[0] == ' ') return false;
        memcpy(out, &v, 8);
        return true;
    }
    case INGOT_META_BOOL: {
        bool b;
        if (!strcmp(buf, "true") || !strcmp(buf, "1")) b = true;
        else if (!strcmp(buf, "false") || !strcmp(buf, "0")) b = false;
        else return false;
        memcpy(out, &b, 1);
        return true;
    }
    default: return false;
    }
}

static ingot_meta_type type_from(const char *s, size_t n)
{
    for (int t = INGOT_META_U8; t <= INGOT_META_BYTES; t++) {
        const char *name = ingot_meta_type_name((ingot_meta_type)t);
        if (strlen(name) == n && memcmp(name, s, n) == 0) return (ingot_meta_type)t;
    }
    return INGOT_META_INVALID;
}

/* Hex digits to bytes; false on odd length or a non-digit. */
static bool unhex(const char *s, size_t n, uint8_t *out)
{
    if (n % 2) return false;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = (uint8_t)(hi * 16 + lo);
    }
    return true;
}

static ingot_status set_text_value(ingot_convert_plan *p, const char *key, size_t klen,
                                   ingot_meta_type type, bool array, const char *val,
                                   ingot_error *err);

ingot_status ingot_convert_plan_meta_set_text(ingot_convert_plan *p, const char *arg,
                                              ingot_error *err)
{
    if (!p || !arg) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL argument");
    const char *eq = strchr(arg, '=');
    if (!eq)
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, arg, strlen(arg),
                          "'%s': expected KEY=VALUE or KEY:TYPE=VALUE", arg);
    const char *colon = NULL;
    for (const char *c = arg; c < eq; c++)
        if (*c == ':') colon = c;
    ingot_meta_type type = INGOT_META_STRING;
    bool array = false;
    size_t klen = (size_t)(eq - arg);
    if (colon) {
        const char *ts = colon + 1;
        size_t tn = (size_t)(eq - ts);
        bool arr = tn > 2 && ts[tn - 2] == '[' && ts[tn - 1] == ']';
        ingot_meta_type t = type_from(ts, arr ? tn - 2 : tn);
        if (t != INGOT_META_INVALID) {
            type = t;
            array = arr;
            klen = (size_t)(colon - arg);
        } else if (arr) {
            return ingot__err(err, INGOT_BAD_TYPE, INGOT_NO_OFFSET, arg, klen,
                              "'%.*s': unknown type (u8..u64 i8..i64 f32 f64 bool string bytes)",
                              (int)tn, ts);
        }
    }
    if (klen == 0 || klen > 65535)
        return ingot__err(err, INGOT_BAD_NAME, INGOT_NO_OFFSET, arg, klen, "empty or long key");
    char *key = ingot__strndup(NULL, arg, klen);
    if (!key) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
    ingot_status st = set_text_value(p, key, klen, type, array, eq + 1, err);
    ingot__free(NULL, key, klen + 1);
    return st;
}

/* The value part of meta_set_text for key (klen bytes), already split from its type. */
static ingot_status set_text_value(ingot_convert_plan *p, const char *key, size_t klen,
                                   ingot_meta_type type, bool array, const char *val,
                                   ingot_error *err)
{
    size_t vlen = strlen(val);
    ingot_status st;
    const char *tname = ingot_meta_type_name(type);
    if (!array && type == INGOT_META_STRING)
        return ingot_convert_plan_meta_set(p, key, type, false, val, vlen, err);
    if (!array && type == INGOT_META_BYTES) {
        uint8_t *b = ingot__alloc(NULL, vlen / 2 + 1);
        if (!b) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
        st = unhex(val, vlen, b)
                 ? ingot_convert_plan_meta_set(p, key, type, false, b, vlen / 2, err)
                 : ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, klen,
                              "'%s': bytes are an even number of hex digits", val);
        ingot__free(NULL, b, vlen / 2 + 1);
        return st;
    }
    if (!array) {
        uint64_t bits = 0;
        if (!parse_scalar(type, val, vlen, &bits))
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, klen,
                              "'%s' does not parse as %s", val, tname);
        return ingot_convert_plan_meta_set(p, key, type, false, &bits, 1, err);
    }
    /* arrays: comma-separated (no escaping; "" is the empty array) */
    size_t n = vlen ? 1 : 0;
    for (const char *c = val; *c; c++) n += *c == ',';
    uint32_t esz = ingot_meta_type_size(type);
    bool strs = type == INGOT_META_STRING || type == INGOT_META_BYTES;
    size_t cap = n ? n : 1, bytes = strs ? cap * sizeof(ingot_bytes) + vlen + 1 : cap * esz;
    uint8_t *buf = ingot__alloc(NULL, bytes);
    if (!buf) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
    ingot_bytes *elems = (ingot_bytes *)(void *)buf;
    uint8_t *hexbuf = buf + cap * sizeof(ingot_bytes);
    st = INGOT_OK;
    const char *c = val;
    for (size_t k = 0; k < n && st == INGOT_OK; k++) {
        const char *e = strchr(c, ',');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (type == INGOT_META_STRING) {
            elems[k].data = c;
            elems[k].len = len;
        } else if (type == INGOT_META_BYTES) {
            if (!unhex(c, len, hexbuf))
                st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, klen,
                                "element %zu: bytes are an even number of hex digits", k);
            elems[k].data = hexbuf;
            elems[k].len = len / 2;
            hexbuf += len / 2;
        } else if (!parse_scalar(type, c, len, buf + k * esz)) {
            st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, klen,
                            "element %zu '%.*s' does not parse as %s", k, (int)len, c, tname);
        }
        c = e ? e + 1 : c + len;
    }
    if (st == INGOT_OK) st = ingot_convert_plan_meta_set(p, key, type, true, buf, n, err);
    ingot__free(NULL, buf, bytes);
    return st;
}

uint64_t ingot_convert_plan_meta_count(const ingot_convert_plan *p) { return p ? p->nm : 0; }

ingot_status ingot_convert_plan_meta_at(const ingot_convert_plan *p, uint64_t i, const char **key,
                                        bool *from_src, uint64_t *src_index)
{
    if (!p || i >= p->nm) return p ? INGOT_RANGE : INGOT_MISUSE;
    if (key) *key = p->m[i].key;
    if (from_src) *from_src = p->m[i].from_src;
    if (src_index) *src_index = p->m[i].from_src ? p->m[i].src_index : UINT64_MAX;
    return INGOT_OK;
}
