/*
 * inspect.c - content digests and value statistics of tensors (include/ingot/inspect.h), on the
 * public read API only: SHA-256 (FIPS 180-4), tensor and model digests over C-order
 * little-endian bytes, values decoded to double for statistics and comparisons.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "ingot/inspect.h"
#include "ingot/quant.h"

/* ---------------------------------------------------------------------------------------------
 * SHA-256
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    size_t used;
} sha256;

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha_block(sha256 *s, const uint8_t *p)
{
    uint32_t w[64], a[8];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(a, s->h, sizeof a);
    for (int i = 0; i < 64; i++) {
        uint32_t S1 = rotr(a[4], 6) ^ rotr(a[4], 11) ^ rotr(a[4], 25);
        uint32_t ch = (a[4] & a[5]) ^ (~a[4] & a[6]);
        uint32_t t1 = a[7] + S1 + ch + K[i] + w[i];
        uint32_t S0 = rotr(a[0], 2) ^ rotr(a[0], 13) ^ rotr(a[0], 22);
        uint32_t mj = (a[0] & a[1]) ^ (a[0] & a[2]) ^ (a[1] & a[2]);
        uint32_t t2 = S0 + mj;
        memmove(a + 1, a, 7 * sizeof *a);
        a[4] += t1;
        a[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++) s->h[i] += a[i];
}

static void sha_init(sha256 *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->len = 0;
    s->used = 0;
}

static void sha_update(sha256 *s, const void *data, size_t n)
{
    const uint8_t *p = data;
    s->len += n;
    if (s->used) {
        size_t k = 64 - s->used < n ? 64 - s->used : n;
        memcpy(s->buf + s->used, p, k);
        s->used += k, p += k, n -= k;
        if (s->used < 64) return;
        sha_block(s, s->buf);
        s->used = 0;
    }
    for (; n >= 64; p += 64, n -= 64) sha_block(s, p);
    memcpy(s->buf, p, n);
    s->used = n;
}

static void sha_final(sha256 *s, uint8_t out[32])
{
    uint64_t bits = s->len * 8;
    uint8_t pad = 0x80, zero = 0, len[8];
    sha_update(s, &pad, 1);
    while (s->used != 56) sha_update(s, &zero, 1);
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha_update(s, len, 8);
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 4; k++) out[4 * i + k] = (uint8_t)(s->h[i] >> (24 - 8 * k));
}

void ingot_sha256(const void *data, size_t n, uint8_t out[32])
{
    sha256 s;
    sha_init(&s);
    sha_update(&s, data, n);
    sha_final(&s, out);
}

/* ---------------------------------------------------------------------------------------------
 * Streaming a tensor's dense bytes
 * ------------------------------------------------------------------------------------------- */

#define STEP_BYTES (1u << 20)

typedef bool (*bytes_fn)(void *ctx, const uint8_t *p, size_t n);

/* Calls fn with tensor i's C-order little-endian bytes, piece by piece (whole blocks). */
static ingot_status stream_dense(const ingot_file *f, uint64_t i, bytes_fn fn, void *ctx,
                                 ingot_error *err)
{
    ingot_tensor_info t;
    if (ingot_file_tensor_at(f, i, &t) != INGOT_OK)
        return ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, 0, 0, "no tensor %llu",
                          (unsigned long long)i);
    const uint32_t relayout = INGOT_TENSOR_BIG_ENDIAN | INGOT_TENSOR_FORTRAN | INGOT_TENSOR_STRIDED;
    uint32_t bb = ingot_dtype_block_bytes(t.dtype);
    if (t.flags & relayout) {
        size_t n = t.nbytes ? (size_t)t.nbytes : 1;
        uint8_t *d = ingot__alloc(NULL, n);
        if (!d)
            return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, t.name, t.name_len,
                              "out of memory");
        ingot_status st = ingot_file_tensor_copy(f, i, d, (size_t)t.nbytes, err);
        if (st == INGOT_OK)
            for (uint64_t at = 0; at < t.nbytes;) {
                size_t k =
                    t.nbytes - at < STEP_BYTES ? (size_t)(t.nbytes - at) : STEP_BYTES / bb * bb;
                if (!fn(ctx, d + at, k)) break;
                at += k;
            }
        ingot__free(NULL, d, n);
        return st;
    }
    uint8_t *buf = ingot__alloc(NULL, STEP_BYTES);
    if (!buf) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
    ingot_status st = INGOT_OK;
    for (uint64_t at = 0; at < t.nbytes;) {
        size_t k =
            t.nbytes - at < STEP_BYTES / bb * bb ? (size_t)(t.nbytes - at) : STEP_BYTES / bb * bb;
        if ((st = ingot_file_tensor_read(f, i, at, buf, k, err)) != INGOT_OK) break;
        if (!fn(ctx, buf, k)) break;
        at += k;
    }
    ingot__free(NULL, buf, STEP_BYTES);
    return st;
}

static bool sha_piece(void *ctx, const uint8_t *p, size_t n)
{
    sha_update(ctx, p, n);
    return true;
}

ingot_status ingot_file_tensor_digest(const ingot_file *f, uint64_t i, uint8_t out[32],
                                      ingot_error *err)
{
    ingot_tensor_info t;
    if (!f || !out) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL argument");
    if (ingot_file_tensor_at(f, i, &t) != INGOT_OK)
        return ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, 0, 0, "no tensor %llu",
                          (unsigned long long)i);
    sha256 s;
    sha_init(&s);
    static const char tag[] = "ingot-tensor-v1";
    const char *dn = ingot_dtype_name(t.dtype);
    sha_update(&s, tag, sizeof tag); /* with its NUL */
    sha_update(&s, dn, strlen(dn) + 1);
    uint8_t le[8];
    for (int k = 0; k < 4; k++) le[k] = (uint8_t)(t.rank >> (8 * k));
    sha_update(&s, le, 4);
    for (uint32_t d = 0; d < t.rank; d++) {
        for (int k = 0; k < 8; k++) le[k] = (uint8_t)(t.shape[d] >> (8 * k));
        sha_update(&s, le, 8);
    }
    ING_TRY(stream_dense(f, i, sha_piece, &s, err));
    sha_final(&s, out);
    return INGOT_OK;
}

static int cmp_str(const void *a, const void *b)
{
    const char *const *x = a, *const *y = b;
    return strcmp(*x, *y);
}

ingot_status ingot_file_digest(const ingot_file *f, uint8_t out[32], ingot_error *err)
{
    if (!f || !out) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL argument");
    uint64_t nt = ingot_file_tensor_count(f);
    /* names sorted by bytes; each entry points at the name, whose tensor we find again */
    const char **names = ingot__alloc(NULL, (size_t)(nt ? nt : 1) * sizeof *names);
    if (!names) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
    for (uint64_t i = 0; i < nt; i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        names[i] = t.name;
    }
    qsort(names, (size_t)nt, sizeof *names, cmp_str);
    sha256 s;
    sha_init(&s);
    static const char tag[] = "ingot-model-v1";
    sha_update(&s, tag, sizeof tag);
    ingot_status st = INGOT_OK;
    for (uint64_t k = 0; k < nt && st == INGOT_OK; k++) {
        ingot_tensor_info t;
        uint8_t d[32];
        ingot_file_tensor_find(f, names[k], &t);
        st = ingot_file_tensor_digest(f, t.index, d, err);
        sha_update(&s, t.name, t.name_len + 1);
        sha_update(&s, d, 32);
    }
    ingot__free(NULL, names, (size_t)(nt ? nt : 1) * sizeof *names);
    if (st == INGOT_OK) sha_final(&s, out);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Values
 * ------------------------------------------------------------------------------------------- */

#define STEP_ELEMS (1u << 16) /* a multiple of every block size */

typedef struct {
    ingot_dtype dt;
    ingot_values_fn fn;
    void *ctx;
    float *fb;
    double *db;
    ingot_status st;
    ingot_error *err;
} values_job;

static bool values_piece(void *ctx, const uint8_t *p, size_t n)
{
    values_job *j = ctx;
    uint32_t be = ingot_dtype_block_elems(j->dt), bb = ingot_dtype_block_bytes(j->dt);
    size_t step = STEP_ELEMS / be * bb;
    for (size_t at = 0; at < n; at += step) {
        size_t k = n - at < step ? n - at : step, ne = k / bb * be;
        if (j->dt == INGOT_DTYPE_F64) {
            for (size_t e = 0; e < ne; e++) {
                uint64_t u = 0;
                for (int b = 0; b < 8; b++) u |= (uint64_t)p[at + 8 * e + (size_t)b] << (8 * b);
                memcpy(&j->db[e], &u, 8);
            }
        } else {
            if ((j->st = ingot_dequantize(j->dt, p + at, k, j->fb, ne, j->err)) != INGOT_OK)
                return false;
            for (size_t e = 0; e < ne; e++) j->db[e] = j->fb[e];
        }
        if (!j->fn(j->ctx, j->db, ne)) return false;
    }
    return true;
}

ingot_status ingot_file_tensor_values(const ingot_file *f, uint64_t i, ingot_values_fn fn,
                                      void *ctx, ingot_error *err)
{
    ingot_tensor_info t;
    if (!f || !fn) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL argument");
    if (ingot_file_tensor_at(f, i, &t) != INGOT_OK)
        return ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, 0, 0, "no tensor %llu",
                          (unsigned long long)i);
    if (!ingot_dequantize_supported(t.dtype))
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t.name, t.name_len,
                          "no decoder for %s", ingot_dtype_name(t.dtype));
    values_job j = {t.dtype, fn, ctx, NULL, NULL, INGOT_OK, err};
    j.fb = ingot__alloc(NULL, STEP_ELEMS * sizeof *j.fb);
    j.db = ingot__alloc(NULL, STEP_ELEMS * sizeof *j.db);
    ingot_status st;
    if (!j.fb || !j.db) st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
    else st = stream_dense(f, i, values_piece, &j, err);
    if (st == INGOT_OK) st = j.st;
    if (j.fb) ingot__free(NULL, j.fb, STEP_ELEMS * sizeof *j.fb);
    if (j.db) ingot__free(NULL, j.db, STEP_ELEMS * sizeof *j.db);
    return st;
}

typedef struct {
    ingot_tensor_stats s;
    double m2;
    uint64_t finite;
} stats_job;

static bool stats_piece(void *ctx, const double *v, size_t n)
{
    stats_job *j = ctx;
    for (size_t k = 0; k < n; k++) {
        double x = v[k];
        j->s.count++;
        if (isnan(x)) {
            j->s.nan++;
            continue;
        }
        if (isinf(x)) {
            j->s.inf++;
            continue;
        }
        if (!j->finite || x < j->s.min) j->s.min = x;
        if (!j->finite || x > j->s.max) j->s.max = x;
        j->finite++;
        double d = x - j->s.mean;
        j->s.mean += d / (double)j->finite;
        j->m2 += d * (x - j->s.mean);
    }
    return true;
}

ingot_status ingot_file_tensor_stats(const ingot_file *f, uint64_t i, ingot_tensor_stats *out,
                                     ingot_error *err)
{
    if (!out) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL argument");
    stats_job j;
    memset(&j, 0, sizeof j);
    ING_TRY(ingot_file_tensor_values(f, i, stats_piece, &j, err));
    j.s.std = j.finite ? sqrt(j.m2 / (double)j.finite) : 0;
    *out = j.s;
    return INGOT_OK;
}
