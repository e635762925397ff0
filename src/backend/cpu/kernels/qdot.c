/*
 * qdot.c - quantized dots: activation rows quantized once to int8 (the layout in qdot.h), the
 * scalar kernels that define each weight type's dot (GGML block layouts of
 * ../shared/formats/gguf.md §5: Q8_0, Q4_0, Q4_K, Q5_K, Q6_K; per-row int8), the level dispatch
 * and the GEMV/GEMM driver over the pool. The SIMD kernels live in one file per level.
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "cpu/kernels/amx.h"
#include "cpu/kernels/igemm.h"
#include "cpu/kernels/qdot.h"
#include "ingot/quant.h"

float ingot__kq_f16_to_f32(uint16_t h)
{
    uint32_t e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0)
        v = ldexpf((float)m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexpf((float)(m | 1024), (int)e - 25);
    return (h >> 15) ? -v : v;
}

static uint16_t ld16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* ---- activation rows ---- */

bool ingot__qdot_supported(ingot_dtype wt)
{
    return wt == INGOT_DTYPE_I8 || wt == INGOT_DTYPE_Q8_0 || wt == INGOT_DTYPE_Q4_0 ||
           wt == INGOT_DTYPE_Q4_K || wt == INGOT_DTYPE_Q5_K || wt == INGOT_DTYPE_Q6_K;
}

static size_t block_of(ingot_dtype wt, size_t K)
{
    if (wt == INGOT_DTYPE_I8) return K ? K : 1;
    return wt == INGOT_DTYPE_Q8_0 || wt == INGOT_DTYPE_Q4_0 ? 32 : 256;
}

static bool kquant(ingot_dtype wt)
{
    return wt == INGOT_DTYPE_Q4_K || wt == INGOT_DTYPE_Q5_K || wt == INGOT_DTYPE_Q6_K;
}

bool ingot__qdot_k_ok(ingot_dtype wt, size_t K)
{
    if (!ingot__qdot_supported(wt) || K == 0) return false;
    if (wt == INGOT_DTYPE_I8) return K <= 65536;
    return K % block_of(wt, K) == 0;
}

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

size_t ingot__qx_bytes(ingot_dtype wt, size_t K)
{
    size_t nb = K / block_of(wt, K), n = up64(K) + up64(nb * 4);
    return kquant(wt) ? n + up64(K / 16 * 2) : n + up64(nb * 4);
}

void ingot__qx_view(ingot_dtype wt, size_t K, const void *xq, ingot__qx *v)
{
    const uint8_t *p = xq;
    size_t nb = K / block_of(wt, K);
    v->K = K;
    v->nb = nb;
    v->q = (const int8_t *)p;
    p += up64(K);
    v->d = (const float *)(const void *)p;
    p += up64(nb * 4);
    v->s = kquant(wt) ? NULL : (const int32_t *)(const void *)p;
    v->bs = kquant(wt) ? (const int16_t *)(const void *)p : NULL;
}

void ingot__qx_quantize(ingot_dtype wt, const float *x, size_t K, void *out)
{
    /* Per block: the AVX-512 step (qx_avx512.c, the same bits) where the level has it, else the
     * loop below, which defines the values. */
    size_t B = block_of(wt, K), nb = K / B;
    uint8_t *p = out;
    int8_t *q = (int8_t *)p;
    float *d = (float *)(void *)(p + up64(K));
    int32_t *s = (int32_t *)(void *)(p + up64(K) + up64(nb * 4));
    int16_t *bs = (int16_t *)(void *)s;
    memset(q + K, 0, up64(K) - K);
    bool simd = ingot__get_isa() >= INGOT__ISA_AVX512 && ingot__isa_supported(INGOT__ISA_AVX512);
    for (size_t b = 0; b < nb; b++) {
        const float *xb = x + b * B;
        if (simd && ingot__qx_block_avx512(xb, B, q + b * B, d + b, kquant(wt) ? NULL : s + b,
                                           kquant(wt) ? bs + b * B / 16 : NULL))
            continue; /* the same bits as the loop below */
        float amax = 0.0f;
        bool nan = false;
        for (size_t i = 0; i < B; i++) {
            float a = fabsf(xb[i]);
            nan |= a != a;
            amax = a > amax ? a : amax;
        }
        float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
        bool bad = nan || isinf(amax); /* q = 0 (and sums 0): the row's dots come out NaN */
        if (bad) db = NAN, id = 0.0f;
        d[b] = db;
        int32_t sum = 0;
        for (size_t i = 0; i < B; i++) {
            /* (inf or NaN times 0 is NaN, whose conversion to int is undefined) */
            float v = bad ? 0.0f : roundf(xb[i] * id); /* half away from zero, as GGML */
            int qi = v > 127.0f ? 127 : v < -127.0f ? -127 : (int)v;
            q[b * B + i] = (int8_t)qi;
            sum += qi;
        }
        if (!kquant(wt)) s[b] = sum;
        for (size_t g = b * B / 16; kquant(wt) && g < (b + 1) * B / 16; g++) {
            int gs = 0;
            for (int i = 0; i < 16; i++) gs += q[g * 16 + (size_t)i];
            bs[g] = (int16_t)gs;
        }
    }
    if (wt == INGOT_DTYPE_Q4_K || wt == INGOT_DTYPE_Q5_K)
        for (size_t e = 0; e < K; e += 128) { /* sub-blocks 0, 2, 1, 3 (ingot__qx_index) */
            int8_t t[32];
            memcpy(t, q + e + 32, 32);
            memcpy(q + e + 32, q + e + 64, 32);
            memcpy(q + e + 64, t, 32);
        }
}

/* ---- scalar kernels: the definition of each dot ---- */

static int32_t dot_i8(const int8_t *a, const int8_t *b, size_t n)
{
    int32_t s = 0;
    for (size_t k = 0; k < n; k++) s += (int32_t)a[k] * b[k];
    return s;
}

static void put(float *y, bool acc, float v) { *y = acc ? *y + v : v; }

static void sc_i8(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                  const float *wscale, bool acc, float *y)
{
    for (size_t r = 0; r < rows; r++, w += ldw) {
        int32_t d = dot_i8((const int8_t *)w, x->q, x->K);
        put(y + r, acc, (float)d * (wscale[r] * x->d[0]));
    }
}

static void sc_q8_0(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                    const float *wscale, bool acc, float *y)
{
    (void)wscale;
    for (size_t r = 0; r < rows; r++, w += ldw) {
        float sum = 0.0f;
        for (size_t b = 0; b < x->nb; b++) {
            const uint8_t *blk = w + b * 34;
            int32_t d = dot_i8((const int8_t *)(blk + 2), x->q + b * 32, 32);
            sum += (float)d * (ingot__kq_f16_to_f32(ld16(blk)) * x->d[b]);
        }
        put(y + r, acc, sum);
    }
}

static void sc_q4_0(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                    const float *wscale, bool acc, float *y)
{
    (void)wscale;
    for (size_t r = 0; r < rows; r++, w += ldw) {
        float sum = 0.0f;
        for (size_t b = 0; b < x->nb; b++) {
            const uint8_t *blk = w + b * 18;
            const int8_t *xq = x->q + b * 32;
            int32_t d = 0;
            for (int j = 0; j < 16; j++)
                d += (blk[2 + j] & 15) * xq[j] + (blk[2 + j] >> 4) * xq[16 + j];
            d -= 8 * x->s[b];
            sum += (float)d * (ingot__kq_f16_to_f32(ld16(blk)) * x->d[b]);
        }
        put(y + r, acc, sum);
    }
}

/* Q4_K and Q5_K: sum_k sc_k * dot_k and sum_k mn_k * (sum of x over sub-block k), exact. */
static void sc_q45_k(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x, bool acc,
                     float *y, bool five)
{
    size_t bb = five ? 176 : 144;
    for (size_t r = 0; r < rows; r++, w += ldw) {
        float sum = 0.0f;
        for (size_t b = 0; b < x->nb; b++) {
            const uint8_t *blk = w + b * bb, *qh = blk + 16, *qs = blk + (five ? 48 : 16);
            uint8_t sc[8], mn[8];
            ingot__k_scale_min(blk + 4, sc, mn);
            const int8_t *xq = x->q + b * 256;
            const int16_t *bs = x->bs + b * 16;
            int32_t A = 0, M = 0;
            for (int k = 0; k < 8; k++) {
                const uint8_t *q = qs + (k / 2) * 32;
                int sh = 4 * (k & 1), dk = 0;
                for (int l = 0; l < 32; l++) {
                    int v = (q[l] >> sh) & 15;
                    if (five) v |= ((qh[l] >> k) & 1) << 4;
                    dk += v * xq[ingot__qx_index(INGOT_DTYPE_Q4_K, (size_t)(k * 32 + l))];
                }
                A += sc[k] * dk;
                M += mn[k] * (bs[2 * k] + bs[2 * k + 1]);
            }
            float d = ingot__kq_f16_to_f32(ld16(blk)), dmin = ingot__kq_f16_to_f32(ld16(blk + 2));
            sum += x->d[b] * (d * (float)A - dmin * (float)M);
        }
        put(y + r, acc, sum);
    }
}

static void sc_q4_k(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                    const float *wscale, bool acc, float *y)
{
    (void)wscale;
    sc_q45_k(w, ldw, rows, x, acc, y, false);
}

static void sc_q5_k(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                    const float *wscale, bool acc, float *y)
{
    (void)wscale;
    sc_q45_k(w, ldw, rows, x, acc, y, true);
}

/* Repacked Q4_K (kernels.h): the same sums as sc_q45_k, read from the repacked block and the
 * reordered activations. */
static void sc_q4kr(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                    const float *wscale, bool acc, float *y)
{
    (void)wscale;
    for (size_t r = 0; r < rows; r++, w += ldw) {
        float sum = 0.0f;
        for (size_t b = 0; b < x->nb; b++) {
            const uint8_t *blk = w + b * 144, *qs = blk + 16;
            const int8_t *xq = x->q + b * 256;
            const int16_t *bs = x->bs + b * 16;
            uint64_t scf = 0, mnf = 0;
            for (int i = 0; i < 6; i++) {
                scf |= (uint64_t)blk[i] << 8 * i;
                mnf |= (uint64_t)blk[8 + i] << 8 * i;
            }
            int32_t A = 0, M = 0;
            for (int k = 0; k < 8; k++) {
                int h = k / 4, L = k % 4, dk = 0;
                for (int e = 0; e < 16; e++) {
                    int v = qs[64 * h + 16 * L + e];
                    dk += (v & 15) * xq[128 * h + 16 * L + e];
                    dk += (v >> 4) * xq[128 * h + 64 + 16 * L + e];
                }
                A += (int32_t)(scf >> 6 * k & 63) * dk;
                M += (int32_t)(mnf >> 6 * k & 63) * (bs[2 * k] + bs[2 * k + 1]);
            }
            float d = ingot__kq_f16_to_f32(ld16(blk + 6));
            float dmin = ingot__kq_f16_to_f32(ld16(blk + 14));
            sum += x->d[b] * (d * (float)A - dmin * (float)M);
        }
        put(y + r, acc, sum);
    }
}

/* Q6_K: sum_j sc_j * (dot_j - 32 * sum of x over the 16 elements of group j), exact. */
static void sc_q6_k(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                    const float *wscale, bool acc, float *y)
{
    (void)wscale;
    for (size_t r = 0; r < rows; r++, w += ldw) {
        float sum = 0.0f;
        for (size_t b = 0; b < x->nb; b++) {
            const uint8_t *blk = w + b * 210, *ql = blk, *qh = blk + 128;
            const int8_t *sc = (const int8_t *)(blk + 192), *xq = x->q + b * 256;
            const int16_t *bs = x->bs + b * 16;
            int32_t A = 0;
            for (int g = 0; g < 16; g++) { /* elements e = g*16 .. g*16+15 */
                int dg = 0;
                for (int e = g * 16; e < g * 16 + 16; e++) {
                    int h = e / 128, rr = e % 128, l = rr % 32, s = rr / 32;
                    int lo = (ql[h * 64 + (s & 1) * 32 + l] >> (4 * (s >> 1))) & 15;
                    int hi = (qh[h * 32 + l] >> (2 * s)) & 3;
                    dg += (lo | hi << 4) * xq[e];
                }
                A += sc[g] * (dg - 32 * bs[g]);
            }
            sum += x->d[b] * (ingot__kq_f16_to_f32(ld16(blk + 208)) * (float)A);
        }
        put(y + r, acc, sum);
    }
}

ingot__qdot_fn ingot__qdot_scalar(ingot_dtype wt)
{
    switch (wt) {
    case INGOT_DTYPE_I8: return sc_i8;
    case INGOT_DTYPE_Q8_0: return sc_q8_0;
    case INGOT_DTYPE_Q4_0: return sc_q4_0;
    case INGOT_DTYPE_Q4_K: return sc_q4_k;
    case INGOT_DTYPE_Q5_K: return sc_q5_k;
    case INGOT_DTYPE_Q6_K: return sc_q6_k;
    default: return NULL;
    }
}

/* The kernel of the level in effect: its own, or the nearest level below that has one. */
static ingot__qdot_fn pick(ingot__isa isa, ingot_dtype wt)
{
    ingot__qdot_fn f = NULL;
    switch (isa) {
    case INGOT__ISA_AMX: /* AMX tiles serve the GEMM path; dots are AVX-512 VNNI's */
    case INGOT__ISA_AVX512_VNNI:
        f = ingot__qdot_avx512_vnni(wt);
        if (f) break; /* fall through */
    case INGOT__ISA_AVX512:
        f = ingot__qdot_avx512(wt);
        if (f) break; /* fall through */
    case INGOT__ISA_AVX2: f = ingot__qdot_avx2(wt); break;
    case INGOT__ISA_AVX_VNNI:
        f = ingot__qdot_avx_vnni(wt);
        if (!f) f = ingot__qdot_avx2(wt);
        break;
    default: break;
    }
    return f ? f : ingot__qdot_scalar(wt);
}

/* ---- repacked Q4_K (kernels.h) ---- */

void ingot__q4kr_head(const uint8_t *s, uint8_t *out)
{
    uint8_t sc[8], mn[8];
    ingot__k_scale_min(s + 4, sc, mn);
    uint64_t scf = 0, mnf = 0;
    for (int k = 0; k < 8; k++) {
        scf |= (uint64_t)sc[k] << 6 * k;
        mnf |= (uint64_t)mn[k] << 6 * k;
    }
    for (int i = 0; i < 6; i++) {
        out[i] = (uint8_t)(scf >> 8 * i);
        out[8 + i] = (uint8_t)(mnf >> 8 * i);
    }
    memcpy(out + 6, s, 2);      /* d */
    memcpy(out + 14, s + 2, 2); /* dmin */
}

void ingot__q4kr_repack(const void *src, void *dst, size_t nblocks)
{
    /* the nibbles 64 bytes a step at the AVX-512 levels (qx_avx512.c, the same bytes) */
    if (ingot__get_isa() >= INGOT__ISA_AVX512 && ingot__isa_supported(INGOT__ISA_AVX512) &&
        ingot__q4kr_repack_avx512(src, dst, nblocks))
        return;
    const uint8_t *s = src;
    uint8_t *o = dst;
    for (size_t b = 0; b < nblocks; b++, s += 144, o += 144) {
        uint8_t out[144];
        ingot__q4kr_head(s, out);
        const uint8_t *qs = s + 16;
        const uint64_t m4 = 0x0F0F0F0F0F0F0F0Full;
        for (int k = 0; k < 8; k++) { /* sub-block k: GGML bytes 32 (k / 2) .., nibble k & 1 */
            int h = k / 4, L = k % 4, sh = 4 * (k & 1);
            for (int half = 0; half < 16; half += 8) { /* elements half.. and 16 + half.. */
                uint64_t a, c;
                memcpy(&a, qs + 32 * (k / 2) + half, 8);
                memcpy(&c, qs + 32 * (k / 2) + 16 + half, 8);
                uint64_t v = (a >> sh & m4) | (c >> sh & m4) << 4;
                memcpy(out + 16 + 64 * h + 16 * L + half, &v, 8);
            }
        }
        memcpy(o, out, 144); /* (src == dst allowed) */
    }
}

void ingot__q4kr_unpack(const void *src, void *dst, size_t nblocks)
{
    const uint8_t *s = src;
    uint8_t *o = dst;
    for (size_t b = 0; b < nblocks; b++, s += 144, o += 144) {
        uint8_t out[144], sc[8], mn[8];
        uint64_t scf = 0, mnf = 0;
        for (int i = 0; i < 6; i++) {
            scf |= (uint64_t)s[i] << 8 * i;
            mnf |= (uint64_t)s[8 + i] << 8 * i;
        }
        for (int k = 0; k < 8; k++) {
            sc[k] = (uint8_t)(scf >> 6 * k & 63);
            mn[k] = (uint8_t)(mnf >> 6 * k & 63);
        }
        memcpy(out, s + 6, 2);
        memcpy(out + 2, s + 14, 2);
        for (int i = 0; i < 4; i++) { /* the inverse of ingot__k_scale_min */
            out[4 + i] = (uint8_t)(sc[i] | (sc[4 + i] >> 4) << 6);
            out[8 + i] = (uint8_t)(mn[i] | (mn[4 + i] >> 4) << 6);
            out[12 + i] = (uint8_t)((sc[4 + i] & 15) | (mn[4 + i] & 15) << 4);
        }
        /* GGML byte e (< 16) of pair p: element e of sub-blocks 2p (low nibble) and 2p + 1
         * (high); byte 16 + e: their element 16 + e. Eight bytes at a time (the prefill route
         * below the AMX level unpacks every row it multiplies). */
        const uint64_t m4 = 0x0F0F0F0F0F0F0F0Full;
        for (int p = 0; p < 4; p++) {
            const uint8_t *a = s + 16 + 64 * (p / 2) + 32 * (p % 2), *c = a + 16;
            for (int half = 0; half < 16; half += 8) {
                uint64_t x, y;
                memcpy(&x, a + half, 8); /* sub-block 2p */
                memcpy(&y, c + half, 8); /* sub-block 2p + 1 */
                uint64_t lo = (x & m4) | (y & m4) << 4, hi = (x >> 4 & m4) | (y & ~m4);
                memcpy(out + 16 + 32 * p + half, &lo, 8);
                memcpy(out + 16 + 32 * p + 16 + half, &hi, 8);
            }
        }
        memcpy(o, out, 144);
    }
}

void ingot__qx_q4kr_order(void *xq, size_t K)
{
    /* Q4_K order per 128 elements, in 16-byte pieces: sub-blocks 0a 0b 2a 2b 1a 1b 3a 3b (a:
     * elements 0-15, b: 16-31); repacked: 0a 1a 2a 3a 0b 1b 2b 3b */
    static const int from[8] = {0, 4, 2, 6, 1, 5, 3, 7};
    int8_t *q = xq, t[128];
    for (size_t e = 0; e < K; e += 128) {
        memcpy(t, q + e, 128);
        for (int j = 0; j < 8; j++) memcpy(q + e + 16 * j, t + 16 * from[j], 16);
    }
}

static ingot__qdot_fn pick_q4kr(void)
{
    ingot__isa isa = ingot__get_isa();
    ingot__qdot_fn f = NULL;
    if ((isa == INGOT__ISA_AVX512_VNNI || isa == INGOT__ISA_AMX) && ingot__cpu_vbmi())
        f = ingot__qdot_q4kr_avx512_vnni();
    return f ? f : sc_q4kr;
}

bool ingot__q4kr_fast(void) { return pick_q4kr() != sc_q4kr; }

/* ---- driver ---- */

#define TASKS_PER_THREAD 4
#define SMALL_BYTES ((size_t)256 << 10)
#define GEMM_BLOCK_BYTES ((size_t)32 << 10)
/* Most weight bytes per task of a one-row product (decode): the pool's counter then evens out
 * the threads to within about 15 us (the 32000-row output head was 8 tasks of 2-4 MiB). Smaller
 * tasks break the streams the prefetchers follow: 64 KiB ran Q8_0 decode 5% slower at 2
 * threads on the Xeon, 128-512 KiB within noise of each other (docs/PERFORMANCE.md). */
#define TASK_BYTES ((size_t)256 << 10)
/* One-row jobs under this many weight bytes go in one task per thread: the runtime's q/k/v and o
 * products of the llama-bench shape (885 and 590 KB) ran their steps 0.91x and 0.82x as long
 * (medians of 12 alternated pairs, two threads) than in four tasks a thread, each task a new set
 * of read streams the prefetchers must find (docs/PERFORMANCE.md). */
#define FEW_TASKS_BYTES ((size_t)1 << 20)

typedef struct {
    ingot__qdot_fn fn;
    ingot_dtype wt;
    size_t M, K, ldw, nx, xbytes, ldy, rows;
    const uint8_t *W, *xq;
    const float *wscale;
    bool acc;
    float *Y;
} qjob;

static void qtask(void *ctx, size_t t, unsigned worker)
{
    (void)worker;
    const qjob *j = ctx;
    size_t lo = t * j->rows, hi = j->M - lo < j->rows ? j->M : lo + j->rows;
    if (j->nx == 1) {
        ingot__qx x;
        ingot__qx_view(j->wt, j->K, j->xq, &x);
        j->fn(j->W + lo * j->ldw, j->ldw, hi - lo, &x, j->wscale ? j->wscale + lo : NULL, j->acc,
              j->Y + lo);
        return;
    }
    /* Blocks of weight rows that stay in cache while every activation row meets them. */
    size_t br = GEMM_BLOCK_BYTES / (j->ldw ? j->ldw : 1);
    br = br < 4 ? 4 : br & ~(size_t)3;
    for (size_t r0 = lo; r0 < hi; r0 += br) {
        size_t n = hi - r0 < br ? hi - r0 : br;
        for (size_t i = 0; i < j->nx; i++) {
            ingot__qx x;
            ingot__qx_view(j->wt, j->K, j->xq + i * j->xbytes, &x);
            j->fn(j->W + r0 * j->ldw, j->ldw, n, &x, j->wscale ? j->wscale + r0 : NULL, j->acc,
                  j->Y + i * j->ldy + r0);
        }
    }
}

/* ---- prefill through f32: a panel of weight rows widened, then the blocked GEMM ---- */

typedef struct {
    ingot_dtype wt;
    size_t M, K, ldw, nx, ldx, ldy, rows; /* rows per panel */
    const uint8_t *W;
    const float *X;
    bool acc;
    bool rp; /* repacked Q4_K rows (ingot__qgemm_q4kr): unpacked a row at a time first */
    float *Y;
    ingot__pool *pool_;
    atomic_int failed;
} dq_job;

static void dq_task(void *ctx, size_t t, unsigned worker)
{
    dq_job *j = ctx;
    size_t r0 = t * j->rows, n = j->M - r0 < j->rows ? j->M - r0 : j->rows;
    size_t gs = ingot__sgemm_scratch_bytes();
    size_t pb = j->rows * j->K * sizeof(float), rb = j->rp ? (j->ldw + 63) & ~(size_t)63 : 0;
    uint8_t *s = ingot__pool_scratch(j->pool_, worker, gs + pb + rb);
    if (!s) {
        atomic_store(&j->failed, 1);
        return;
    }
    float *panel = (float *)(void *)(s + gs);
    for (size_t r = 0; r < n; r++) {
        const uint8_t *w = j->W + (r0 + r) * j->ldw;
        if (j->rp) { /* back to GGML's order: the same values, so the same bits */
            ingot__q4kr_unpack(w, s + gs + pb, j->ldw / 144);
            w = s + gs + pb;
        }
        if (j->wt == INGOT_DTYPE_F16 || j->wt == INGOT_DTYPE_BF16)
            ingot__half_to_f32(j->wt, w, panel + r * j->K, j->K);
        else
            (void)ingot_dequantize(j->wt, w, j->ldw, panel + r * j->K, j->K, NULL);
    }
    ingot__sgemm_serial(false, true, j->nx, n, j->K, 1.0f, j->X, j->ldx, panel, j->K,
                        j->acc ? 1.0f : 0.0f, j->Y + r0, j->ldy, s);
}

static ingot_status dequant_gemm(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K,
                                 const void *W, size_t ldw, const float *X, size_t ldx, size_t nx,
                                 bool accumulate, float *Y, size_t ldy, bool rp)
{
    if (M == 0 || nx == 0) return INGOT_OK;
    ingot__pool *own = NULL;
    if (!pool && !(pool = own = ingot__pool_create(NULL, 1))) return INGOT_NOMEM;
    /* Panels of about 2 MiB of f32 (an L2), 32 to 256 rows, a multiple of the AVX-512 tile's
     * 32 columns; fixed by K alone, so the results do not depend on the thread count. */
    size_t rows = ((size_t)2 << 20) / (K * sizeof(float) + 1);
    rows = rows < 32 ? 32 : rows > 256 ? 256 : rows & ~(size_t)31;
    dq_job j = {.wt = wt,
                .M = M,
                .K = K,
                .ldw = ldw,
                .nx = nx,
                .ldx = ldx,
                .ldy = ldy,
                .rows = rows,
                .W = W,
                .X = X,
                .acc = accumulate,
                .Y = Y,
                .rp = rp,
                .pool_ = pool};
    atomic_init(&j.failed, 0);
    ingot__pool_run(pool, dq_task, &j, (M + rows - 1) / rows);
    ingot__pool_destroy(own);
    return atomic_load(&j.failed) ? INGOT_NOMEM : INGOT_OK;
}

ingot_status ingot__dequant_gemm(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K,
                                 const void *W, size_t ldw, const float *X, size_t ldx, size_t nx,
                                 bool accumulate, float *Y, size_t ldy)
{
    return dequant_gemm(pool, wt, M, K, W, ldw, X, ldx, nx, accumulate, Y, ldy, false);
}

bool ingot__qgemm_reads_f32(ingot_dtype wt, size_t K, size_t nx)
{
    /* at every level (AMX tiles, the AVX-512 VNNI int8 GEMM, f32 GEMM on dequantized panels) */
    return wt != INGOT_DTYPE_I8 && ingot__qdot_k_ok(wt, K) && nx >= INGOT__QGEMM_DEQUANT_ROWS;
}

static ingot_status qgemm(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K, const void *W,
                          size_t ldw, const float *wscale, const void *xq, const float *X,
                          size_t ldx, size_t nx, bool accumulate, float *Y, size_t ldy, bool rp)
{
    if (M == 0 || nx == 0) return INGOT_OK;
    if (ingot__get_isa() == INGOT__ISA_AMX && ingot__amx_ok(wt, K, nx, X != NULL))
        return rp ? ingot__amx_gemm_q4kr(pool, M, K, W, ldw, X, ldx, nx, accumulate, Y, ldy)
                  : ingot__amx_gemm(pool, wt, M, K, W, ldw, wscale, xq, ingot__qx_bytes(wt, K),
                                    X, ldx, nx, accumulate, Y, ldy);
    if (X && wt != INGOT_DTYPE_I8 && nx >= INGOT__QGEMM_DEQUANT_ROWS) {
        /* AVX-512 VNNI: int8 tiles on activations quantized per 32 (igemm.h) */
        if (ingot__get_isa() == INGOT__ISA_AVX512_VNNI && ingot__igemm_ok(wt, K)) {
            bool taken;
            ingot_status st = ingot__igemm(pool, wt, rp, M, K, W, ldw, X, ldx, nx, accumulate, Y,
                                           ldy, &taken);
            if (taken) return st;
        }
        return dequant_gemm(pool, wt, M, K, W, ldw, X, ldx, nx, accumulate, Y, ldy, rp);
    }
    qjob j = {rp ? pick_q4kr() : pick(ingot__get_isa(), wt),
              wt,
              M,
              K,
              ldw,
              nx,
              ingot__qx_bytes(wt, K),
              ldy,
              M,
              W,
              xq,
              wt == INGOT_DTYPE_I8 ? wscale : NULL,
              accumulate,
              Y};
    /* A few contiguous row ranges per worker, in multiples of 8 rows (the pool's counter
     * balances them); everything in one task when the work is small (waking workers costs
     * more). Results do not depend on it: every row is reduced the same way. */
    if (M * ldw * nx > SMALL_BYTES) {
        size_t parts = (size_t)ingot__pool_threads(pool) * TASKS_PER_THREAD;
        size_t r = (M + parts - 1) / parts;
        if (nx == 1 && r * ldw > TASK_BYTES) r = TASK_BYTES / ldw; /* decode: finer */
        r = (r + 7) / 8 * 8;
        j.rows = r < 16 ? 16 : r;
    }
    ingot__pool_run(pool, qtask, &j, (M + j.rows - 1) / j.rows);
    return INGOT_OK;
}

ingot_status ingot__qgemm(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K, const void *W,
                          size_t ldw, const float *wscale, const void *xq, const float *X,
                          size_t ldx, size_t nx, bool accumulate, float *Y, size_t ldy)
{
    return qgemm(pool, wt, M, K, W, ldw, wscale, xq, X, ldx, nx, accumulate, Y, ldy, false);
}

ingot_status ingot__qgemm_q4kr(ingot__pool *pool, size_t M, size_t K, const void *W,
                               const void *xq, const float *X, size_t ldx, size_t nx,
                               bool accumulate, float *Y, size_t ldy)
{
    return qgemm(pool, INGOT_DTYPE_Q4_K, M, K, W, K / 256 * 144, NULL, xq, X, ldx, nx, accumulate,
                 Y, ldy, true);
}

/* ---- several one-row products as one job ---- */

typedef struct {
    const ingot__qseg *seg;
    size_t K;
    ingot__qdot_fn fn[INGOT__QSEG_MAX];
    ingot__qx x[INGOT__QSEG_MAX];
    size_t rows[INGOT__QSEG_MAX];      /* rows per task of each segment */
    size_t first[INGOT__QSEG_MAX + 1]; /* its first task */
} qmjob;

static void qmtask(void *ctx, size_t t, unsigned worker)
{
    (void)worker;
    const qmjob *j = ctx;
    size_t s = 0;
    while (t >= j->first[s + 1]) s++;
    const ingot__qseg *g = &j->seg[s];
    size_t r = j->rows[s], lo = (t - j->first[s]) * r, hi = g->M - lo < r ? g->M : lo + r;
    if (!j->fn[s]) { /* F16 / BF16 */
        ingot__half_rows(g->wt, (const uint8_t *)g->W + lo * g->ldw, g->ldw / 2, hi - lo, j->K,
                         g->xq, g->acc, g->Y + lo);
        return;
    }
    j->fn[s]((const uint8_t *)g->W + lo * g->ldw, g->ldw, hi - lo, &j->x[s], NULL, g->acc,
             g->Y + lo);
}

void ingot__qgemv_multi(ingot__pool *pool, size_t K, const ingot__qseg *seg, size_t nseg)
{
    if (nseg > INGOT__QSEG_MAX) { /* in jobs of at most INGOT__QSEG_MAX */
        ingot__qgemv_multi(pool, K, seg, INGOT__QSEG_MAX);
        ingot__qgemv_multi(pool, K, seg + INGOT__QSEG_MAX, nseg - INGOT__QSEG_MAX);
        return;
    }
    qmjob j;
    j.seg = seg;
    size_t bytes = 0;
    j.K = K;
    for (size_t s = 0; s < nseg; s++) {
        j.fn[s] = NULL;
        if (seg[s].wt != INGOT_DTYPE_F16 && seg[s].wt != INGOT_DTYPE_BF16) {
            j.fn[s] = seg[s].rp ? pick_q4kr() : pick(ingot__get_isa(), seg[s].wt);
            ingot__qx_view(seg[s].wt, K, seg[s].xq, &j.x[s]);
        }
        bytes += seg[s].M * seg[s].ldw;
    }
    /* tasks of about bytes / (threads * TASKS_PER_THREAD) (under FEW_TASKS_BYTES: one a
     * thread), at most TASK_BYTES, in multiples of 8 rows; one task per segment when the whole
     * is small (waking workers costs more) */
    size_t parts = (size_t)ingot__pool_threads(pool);
    if (bytes >= FEW_TASKS_BYTES) parts *= TASKS_PER_THREAD;
    size_t tb = bytes > SMALL_BYTES ? (bytes + parts - 1) / parts : bytes;
    if (bytes > SMALL_BYTES && tb > TASK_BYTES) tb = TASK_BYTES;
    j.first[0] = 0;
    for (size_t s = 0; s < nseg; s++) {
        size_t r = seg[s].ldw ? (tb + seg[s].ldw - 1) / seg[s].ldw : seg[s].M;
        r = (r + 7) / 8 * 8;
        if (r < 16) r = 16;
        j.rows[s] = r;
        j.first[s + 1] = j.first[s] + (seg[s].M + r - 1) / r;
    }
    ingot__pool_run(pool, qmtask, &j, j.first[nseg]);
}

/* ---- GGML Q8_0 blocks (tests and benchmarks build weights with it) ---- */

static uint16_t f32_to_f16(float f) /* round to nearest even */
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffff;
    if (ax >= 0x7f800000) return (uint16_t)(sign | (ax > 0x7f800000 ? 0x7e00 : 0x7c00));
    if (ax >= 0x477ff000) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (ax < 0x38800000) {                                  /* subnormal half (or zero) */
        float a;
        memcpy(&a, &ax, 4);
        return (uint16_t)(sign | (uint32_t)lrintf(a * 16777216.0f)); /* a / 2^-24 */
    }
    uint32_t mant = ax & 0x7fffff, exp = (ax >> 23) - 112;
    uint32_t h = exp << 10 | mant >> 13, rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

void ingot__quantize_q8_0(const float *x, size_t K, void *out)
{
    uint8_t *o = out;
    for (size_t b = 0; b < K / 32; b++, x += 32, o += 34) {
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[i]));
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        uint16_t h = f32_to_f16(d);
        memcpy(o, &h, 2);
        for (int i = 0; i < 32; i++) /* GGML rounds half away from zero */
            o[2 + i] = (uint8_t)(int8_t)roundf(x[i] * id);
    }
}
