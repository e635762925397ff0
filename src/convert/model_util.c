/*
 * model_util.c - helpers of the model-aware converters (model_impl.h): the q/k row permutation,
 * transposition, whole-tensor reads, small JSON lookups and atomic text files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "afile.h"
#include "alloc.h"
#include "error.h"
#include "json.h"
#include "model_impl.h"

void ingot__model_permute(const void *src, void *dst, uint64_t rows, uint64_t row_bytes,
                          uint32_t heads, bool inverse)
{
    uint64_t g = rows / (2 * (uint64_t)heads); /* rows per half of a head */
    const uint8_t *s = src;
    uint8_t *d = dst;
    for (uint64_t h = 0; h < heads; h++)
        for (uint64_t j = 0; j < g; j++)
            for (uint64_t two = 0; two < 2; two++) {
                uint64_t hf = h * 2 * g + two * g + j;   /* half-split row */
                uint64_t gg = h * 2 * g + j * 2 + two;   /* interleaved row */
                uint64_t from = inverse ? gg : hf, to = inverse ? hf : gg;
                memcpy(d + to * row_bytes, s + from * row_bytes, (size_t)row_bytes);
            }
}

void ingot__model_transpose(const void *src, void *dst, uint64_t r, uint64_t c, size_t es)
{
    const uint8_t *s = src;
    uint8_t *d = dst;
    for (uint64_t i = 0; i < r; i++)
        for (uint64_t j = 0; j < c; j++)
            memcpy(d + (j * r + i) * es, s + (i * c + j) * es, es);
}

ingot_status ingot__model_read(const ingot_file *f, uint64_t i, void **out, size_t *n,
                               ingot_error *err)
{
    ingot_tensor_info t;
    ING_TRY(ingot_file_tensor_at(f, i, &t));
    if (t.nbytes > SIZE_MAX)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, t.name, t.name_len,
                          "tensor too large for memory");
    size_t nb = (size_t)t.nbytes;
    void *p = ingot__alloc(NULL, nb ? nb : 1);
    if (!p)
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, t.name, t.name_len,
                          "no memory for %zu bytes of tensor data", nb);
    ingot_status st = nb ? ingot_file_tensor_copy(f, i, p, nb, err) : INGOT_OK;
    if (st != INGOT_OK) {
        ingot__free(NULL, p, nb ? nb : 1);
        return st;
    }
    *out = p;
    *n = nb;
    return INGOT_OK;
}

ingot_status ingot__model_slurp(const char *path, char **out, size_t *n, ingot_error *err)
{
    size_t pl = strlen(path);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return ingot__err(err, errno == ENOENT ? INGOT_NOT_FOUND : INGOT_IO, INGOT_NO_OFFSET,
                          path, pl, "cannot open %s (errno %d)", path, errno);
    size_t cap = 4096, len = 0;
    char *buf = ingot__alloc(NULL, cap);
    ingot_status st = INGOT_OK;
    while (buf) {
        if (len + 1 >= cap) {
            if (cap >= ((size_t)64 << 20)) {
                st = ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, path, pl,
                                "%s is larger than 64 MiB", path);
                break;
            }
            if (!ingot__grow(NULL, (void **)&buf, cap, cap * 2)) {
                ingot__free(NULL, buf, cap);
                buf = NULL;
                break;
            }
            cap *= 2;
        }
        size_t r = fread(buf + len, 1, cap - 1 - len, fp);
        len += r;
        if (r == 0) {
            if (ferror(fp)) st = ingot__err(err, INGOT_IO, len, path, pl, "read failed");
            break;
        }
    }
    fclose(fp);
    if (!buf) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, path, pl, "reading %s", path);
    if (st != INGOT_OK) {
        ingot__free(NULL, buf, cap);
        return st;
    }
    buf[len] = 0;
    /* hand out exactly len + 1 bytes */
    if (!ingot__grow(NULL, (void **)&buf, cap, len + 1)) {
        ingot__free(NULL, buf, cap);
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, path, pl, "reading %s", path);
    }
    *out = buf;
    *n = len;
    return INGOT_OK;
}

ingot_status ingot__model_write_text(const char *path, const char *text, size_t n, bool no_fsync,
                                     ingot_error *err)
{
    ingot__afile af;
    ING_TRY(ingot__afile_create(&af, NULL, path, !no_fsync, err));
    ingot_status st = ingot__afile_write(&af, text, n, err);
    if (st != INGOT_OK) {
        ingot__afile_abort(&af);
        return st;
    }
    return ingot__afile_commit(&af, err);
}

/* Positions the scanner on the value of top-level key `key`; false if absent. */
static bool find_key(ingot__json *j, ingot__json_tok *t, const char *json, size_t n,
                     const char *key)
{
    ingot__json_init(j, json, n, 64, 0);
    if (ingot__json_next(j, t, NULL) != INGOT_OK || t->type != ING_JSON_OBJECT) return false;
    for (;;) {
        if (ingot__json_next(j, t, NULL) != INGOT_OK || t->type == ING_JSON_OBJECT_END)
            return false;
        bool hit = ingot__json_str_eq(t, key, strlen(key));
        if (ingot__json_next(j, t, NULL) != INGOT_OK) return false;
        if (hit) return true;
        if (ingot__json_skip(j, t, NULL) != INGOT_OK) return false;
    }
}

bool ingot__model_json_string(const char *json, size_t n, const char *key, char *buf, size_t cap)
{
    ingot__json j;
    ingot__json_tok t;
    if (!find_key(&j, &t, json, n, key) || t.type != ING_JSON_STRING || t.dlen >= cap)
        return false;
    size_t len;
    if (ingot__json_str(&t, buf, cap - 1, &len, NULL) != INGOT_OK) return false;
    buf[len] = 0;
    return true;
}

bool ingot__model_json_has(const char *json, size_t n, const char *key)
{
    ingot__json j;
    ingot__json_tok t;
    return find_key(&j, &t, json, n, key) && t.type != ING_JSON_NULL;
}

void ingot__model_fmt_float(char *buf, size_t cap, double v, bool f32)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        double back = strtod(buf, NULL);
        if (f32 ? (float)back == (float)v : back == v) break;
    }
    /* JSON wants a number that reads as a float: "1e-05" is fine, "10000" too */
}

bool ingot__model_path(char *buf, size_t cap, const char *dir, const char *name)
{
    int k = snprintf(buf, cap, "%s/%s", dir, name);
    return k > 0 && (size_t)k < cap;
}
