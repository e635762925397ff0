/*
 * sgemm.c - cache-blocked f32 GEMM (the Goto/BLIS loop nest): B is packed in KC x NC blocks of
 * NR-wide panels, A in MC x KC blocks of MR-high panels, and a register-blocked micro-kernel
 * computes each MR x NR tile of C from one A panel and one B panel. Threads split C into
 * column (or, for tall-thin shapes, row) ranges; each range runs the whole loop nest with its own
 * packing buffers, so every element of C is reduced in the same order whatever the thread count.
 *
 * What made the AVX2 path match OpenBLAS on Zen (docs/PERFORMANCE.md): the micro-kernel
 * prefetches its C tile before the k loop (C is read back once per KC block and, for large
 * matrices, lives in memory: without it every tile waited on six cache misses); B panels are
 * packed with 256-bit loads and, for B^T, 8 x 8 register transposes; a B panel is packed just
 * before its first use, and when there is a single A block (small M) into one panel-sized buffer
 * that stays in L1 instead of a 3 MB block. The AVX-512 level (12 x 32 tiles) walks C along its
 * rows instead, with a 1 MB B block in L2 and the next C tile prefetched during the current one
 * (see KC5); so does the AVX2 level where a core's L2 is larger than 1 MiB (see L2_LARGE).
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) /* not i386: the assembly k loops name x86-64's registers (zmm16-31) */
#include <immintrin.h>
#define HAVE_X86 1
#endif

#include "cpu/kernels/kernels.h"

/* Tile of the micro-kernel: MR x NR (scalar and AVX2: 6 x 16, two ymm columns; AVX-512:
 * 12 x 32, two zmm columns, 24 accumulators). MR and NR below are the job's. */
#define MR_MAX 12
#define NR_MAX 32
#define KC 256
#define MC_MAX 120 /* the largest MC (a multiple of the MRs); an A block (MC x KC floats) in L2 */
#define NC 3072    /* multiple of both NRs; a B block (KC x NC floats, 3 MB) stays in L3 */
/* The AVX-512 level's blocks: KC 512, NC 512 (a 1 MB B block, which stays in L2), and its loop
 * order (job.rowfirst): each 12-row strip of the A block (one A panel, 24 KB, in L1) runs across
 * the whole B block, so that C is walked along its rows, twelve sequential streams, and the
 * next tile of C is prefetched during the current one. C tiles walked down the columns (the
 * AVX2 order) touch twelve 4 KB pages per tile, a few lines each: at 4096^2, where C lives in
 * memory, the micro-kernel ran 0.85-0.87x OpenBLAS SkylakeX's (docs/PERFORMANCE.md, issue 16,
 * "Eighth round"). The previous blocks, KC 512 / NC 1536 (a 3 MB B block in L3), measured
 * 0.81-0.91 -> 0.90-0.95 against KC 256 / NC 3072 in the second round. */
#define KC5 512
#define NC5 512
/* The AVX2 level where a core's L2 is larger than L2_LARGE (ingot__cpu_l2_bytes; Intel's server
 * cores: 2 MB on the Xeon of issue 16) walks C along its rows as the AVX-512 level does, with a
 * B block of KC2L x NC2L floats in L2 and the next C tile prefetched during the current one
 * (docs/PERFORMANCE.md, issue 16, "Ninth round"). Up to L2_LARGE (Zen: 512 KB to 1 MB) it keeps
 * the column walk and the KC / NC / MC 120 blocks measured on Zen (issue 5). */
#define L2_LARGE ((size_t)1 << 20)
#define KC2L 384
#define NC2L 768
#define MC2L 72

typedef struct {
    bool ta, tb;
    size_t M, N, K;
    float alpha, beta;
    const float *A, *B;
    size_t lda, ldb, ldc;
    float *C;
    size_t chunk;      /* small-M path: columns per task */
    size_t rows, cols; /* blocked path: each task's tile of C (multiples of mr, nr) */
    size_t col_tasks;  /* tiles across N */
    const float *X; /* small-M path: op(A) as rows (A itself, or a copy of A^T) */
    size_t ldx;
    ingot__pool *pool;
    ingot__isa isa;
    size_t mr, nr, mc; /* tile and A block of the level */
    size_t kcb, ncb;   /* k and column blocks of the level (kcb * ncb <= KC * NC) */
    bool rowfirst;     /* A panels outside, B panels inside (AVX-512; see KC5) */
    bool nextc;        /* the micro-kernel prefetches the next C tile (AVX-512, AVX2L) */
    bool bgroup;       /* rows-first: B panels packed BGROUP at a time (AVX2L) */
    atomic_int failed;
} job;

/* The AVX2 micro-kernel's tile (the scalar one uses it too) and the AVX-512 one's. */
#define MR2 6
#define NR2 16
#define MR5 12
#define NR5 32

/* ---- packing: zero-padded panels, k-major inside a panel ---- */


#ifdef HAVE_X86
#define AVX2_TARGET __attribute__((target("avx2,fma")))
/* Prefetch of the line holding p + off bytes. The address may lie past the array (a prefetch
 * never faults), so it is formed as an integer rather than by pointer arithmetic. */
#define PREFETCH(p, off) _mm_prefetch((const char *)((uintptr_t)(p) + (off)), _MM_HINT_T0)
/* 8 x 8 transpose: rows r[0..7] in, columns out in r[0..7]. */
AVX2_TARGET static inline void tr8(__m256 r[8])
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20), r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20), r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31), r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31), r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* One full NR-wide panel of op(B) (the scalar packer does the zero-padded last one). Rows of
 * B (or, for B^T, columns) are prefetched a little ahead: the reads are strided, which the
 * hardware prefetchers do not follow across pages. */
AVX2_TARGET static void pack_b_panel_avx2(const job *j, size_t pc, size_t kc, size_t col,
                                          float *bp)
{
    size_t NR = j->nr;
    if (!j->tb) {
        const float *src = j->B + pc * j->ldb + col;
        for (size_t k = 0; k < kc; k++, src += j->ldb) {
            PREFETCH(src, 16 * j->ldb * sizeof(float));
            for (size_t h = 0; h < NR; h += 8)
                _mm256_store_ps(bp + k * NR + h, _mm256_loadu_ps(src + h));
        }
        return;
    }
    /* B^T: op(B) column col + c is row col + c of B; 8 x 8 blocks transposed in registers. */
    size_t k = 0;
    for (; k + 8 <= kc; k += 8)
        for (size_t h = 0; h < NR; h += 8) {
            const float *src = j->B + (col + h) * j->ldb + pc + k;
            if (!(k & 15))
                for (int q = 0; q < 8; q++)
                    PREFETCH(src, ((size_t)q * j->ldb + 64) * sizeof(float));
            __m256 r[8];
            for (int q = 0; q < 8; q++) r[q] = _mm256_loadu_ps(src + (size_t)q * j->ldb);
            tr8(r);
            for (int q = 0; q < 8; q++) _mm256_store_ps(bp + (k + (size_t)q) * NR + h, r[q]);
        }
    for (; k < kc; k++)
        for (size_t c = 0; c < NR; c++) bp[k * NR + c] = j->B[(col + c) * j->ldb + pc + k];
}
/* np full NR-wide panels of B (not transposed) from column col: each row of the np panels read
 * in one run, the next rows prefetched 8 ahead (all np x 64 bytes of each). */
AVX2_TARGET static void pack_b_panels_avx2(const job *j, size_t pc, size_t kc, size_t col,
                                           size_t np, float *bp)
{
    size_t NR = j->nr, step = kc * NR;
    const float *src = j->B + pc * j->ldb + col;
    for (size_t k = 0; k < kc; k++, src += j->ldb) {
        for (size_t p = 0; p < np; p++) PREFETCH(src, (8 * j->ldb + p * NR) * sizeof(float));
        for (size_t p = 0; p < np; p++)
            for (size_t h = 0; h < NR; h += 8)
                _mm256_store_ps(bp + p * step + k * NR + h, _mm256_loadu_ps(src + p * NR + h));
    }
}
/* One full MR-high panel of A (not transposed; MR 6 or 12): 8 k at a time, rows 0-7 by one 8 x 8
 * register transpose and the rest (2 or 4 rows, padded with zeros) by another, each k's MR
 * values stored together. At the AVX-512 level's 512-column B blocks A is packed 8 times at
 * 4096^3, and the scalar loop (12 strided loads and 12 stores per k) took 3% of the time. */
AVX2_TARGET static void pack_a_panel_avx2(const float *s, size_t lda, size_t kc, size_t MR,
                                          float *d)
{
    size_t k = 0;
    for (; k + 8 <= kc; k += 8, d += 8 * MR) {
        __m256 r[8], t[8];
        for (int q = 0; q < 8; q++) /* MR 6: rows 6 and 7 are not the panel's (may not exist) */
            r[q] = (size_t)q < MR ? _mm256_loadu_ps(s + (size_t)q * lda + k) : _mm256_setzero_ps();
        for (int q = 0; q < 8; q++)
            t[q] = (size_t)q + 8 < MR ? _mm256_loadu_ps(s + ((size_t)q + 8) * lda + k)
                                      : _mm256_setzero_ps();
        tr8(r);
        if (MR == 12) {
            tr8(t);
            for (int q = 0; q < 8; q++) {
                _mm256_storeu_ps(d + (size_t)q * 12, r[q]);
                _mm_storeu_ps(d + (size_t)q * 12 + 8, _mm256_castps256_ps128(t[q]));
            }
        } else { /* MR 6: rows 0-5 of the one transpose */
            for (int q = 0; q < 8; q++) {
                _mm_storeu_ps(d + (size_t)q * 6, _mm256_castps256_ps128(r[q]));
                _mm_storel_pi((__m64 *)(void *)(d + (size_t)q * 6 + 4),
                              _mm256_extractf128_ps(r[q], 1));
            }
        }
    }
    for (; k < kc; k++, d += MR)
        for (size_t q = 0; q < MR; q++) d[q] = s[q * lda + k];
}
#endif


/* One NR-wide panel of op(B): columns [col, col + nr) of rows [pc, pc + kc), zero-padded. */
static void pack_b(const job *j, size_t pc, size_t kc, size_t col, size_t nr, float *bp)
{
#ifdef HAVE_X86
    if (j->isa >= INGOT__ISA_AVX2 && nr == j->nr) {
        pack_b_panel_avx2(j, pc, kc, col, bp);
        return;
    }
#endif
    size_t NR = j->nr;
    if (!j->tb) {
        for (size_t k = 0; k < kc; k++) {
            const float *src = j->B + (pc + k) * j->ldb + col;
            float *dst = bp + k * NR;
            memcpy(dst, src, nr * sizeof(float));
            memset(dst + nr, 0, (NR - nr) * sizeof(float));
        }
    } else {
        for (size_t c = 0; c < nr; c++) {
            const float *src = j->B + (col + c) * j->ldb + pc;
            for (size_t k = 0; k < kc; k++) bp[k * NR + c] = src[k];
        }
        for (size_t c = nr; c < NR; c++)
            for (size_t k = 0; k < kc; k++) bp[k * NR + c] = 0.0f;
    }
}

/* The rows-first walk packs B panels as the first A panel of a block reaches them; with
 * j->bgroup (the large-L2 AVX2 blocks), BGROUP panels at a time where B is not transposed:
 * each row of B is then read in runs of 1 KB instead of 64 bytes, one page and one strided
 * miss per 16 panels instead of one per panel (issue 16, ninth round: 256 x 4096 x 4096 ran
 * 0.84x OpenBLAS Haswell with one panel at a time, 0.90 with 4, 0.93 with 8, 0.94 with 16,
 * 0.93 with all 48 of a block). Otherwise, or at the AVX-512 level, one panel; cols: the
 * columns left in the B block from col. */
#define BGROUP 16
static void pack_b_group(const job *j, size_t pc, size_t kc, size_t col, size_t cols, float *bp)
{
    size_t NR = j->nr;
#ifdef HAVE_X86
    if (j->bgroup && !j->tb && cols >= 2 * NR) {
        size_t np = cols / NR < BGROUP ? cols / NR : BGROUP; /* full panels */
        pack_b_panels_avx2(j, pc, kc, col, np, bp);
        if (np < BGROUP && cols > np * NR)
            pack_b(j, pc, kc, col + np * NR, cols - np * NR, bp + np * NR * kc);
        return;
    }
#endif
    size_t n = j->bgroup ? (cols < BGROUP * NR ? cols : BGROUP * NR) : (cols < NR ? cols : NR);
    for (size_t c = 0; c < n; c += NR)
        pack_b(j, pc, kc, col + c, n - c < NR ? n - c : NR, bp + c * kc);
}

static void pack_a(const job *j, size_t ic, size_t mc, size_t pc, size_t kc, float *ap)
{
    size_t MR = j->mr;
    for (size_t ir = 0; ir < mc; ir += MR, ap += MR * kc) {
        size_t mr = mc - ir < MR ? mc - ir : MR;
        if (!j->ta && mr == MR) {
            const float *s0 = j->A + (ic + ir) * j->lda + pc;
#ifdef HAVE_X86
            if (j->isa >= INGOT__ISA_AVX2) {
                pack_a_panel_avx2(s0, j->lda, kc, MR, ap);
                continue;
            }
#endif
            for (size_t k = 0; k < kc; k++) {
                float *d = ap + k * MR;
                for (size_t r = 0; r < MR; r++) d[r] = s0[r * j->lda + k];
            }
            continue;
        }
        if (!j->ta) {
            for (size_t r = 0; r < mr; r++) {
                const float *src = j->A + (ic + ir + r) * j->lda + pc;
                for (size_t k = 0; k < kc; k++) ap[k * MR + r] = src[k];
            }
        } else {
            for (size_t k = 0; k < kc; k++) {
                const float *src = j->A + (pc + k) * j->lda + ic + ir;
                for (size_t r = 0; r < mr; r++) ap[k * MR + r] = src[r];
            }
        }
        if (mr < MR)
            for (size_t k = 0; k < kc; k++)
                for (size_t r = mr; r < MR; r++) ap[k * MR + r] = 0.0f;
    }
}

/* C tile = alpha * acc + beta * C (beta == 0: C not read); acc rows are lda floats apart. */
static void store_tile(const float *acc, size_t lda, float *c, size_t ldc, float alpha, float beta,
                       size_t mr, size_t nr)
{
    for (size_t r = 0; r < mr; r++)
        for (size_t q = 0; q < nr; q++) {
            float v = alpha * acc[r * lda + q];
            c[r * ldc + q] = beta == 0.0f ? v : v + beta * c[r * ldc + q];
        }
}

/* ---- micro-kernels: C[mr x nr] (+)= A panel (kc x MR) . B panel (kc x NR) ---- */

static void ukr_scalar(size_t kc, const float *a, const float *b, float *c, size_t ldc,
                       float alpha, float beta, size_t mr, size_t nr, const float *cn, bool pre)
{
    (void)cn, (void)pre;
    float acc[MR2 * NR2] = {0};
    for (size_t k = 0; k < kc; k++, a += MR2, b += NR2)
        for (size_t r = 0; r < MR2; r++)
            for (size_t q = 0; q < NR2; q++) acc[r * NR2 + q] += a[r] * b[q];
    store_tile(acc, NR2, c, ldc, alpha, beta, mr, nr);
}

#ifdef HAVE_X86
/* 6 x 16: 12 ymm accumulators; its own tile's rows are prefetched before the k loop (cn, pre:
 * not used; the large-L2 blocks run ukr_avx2l). */
AVX2_TARGET static void ukr_avx2(size_t kc, const float *a, const float *b, float *c, size_t ldc,
                                 float alpha, float beta, size_t mr, size_t nr, const float *cn,
                                 bool pre)
{
    (void)cn, (void)pre;
    __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
    __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
    __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
    __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
    __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
    __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
#define STEP(o)                                                                                    \
    do {                                                                                           \
        __m256 b0 = _mm256_load_ps(b + (o) * NR2), b1 = _mm256_load_ps(b + (o) * NR2 + 8);         \
        __m256 av = _mm256_broadcast_ss(a + (o) * MR2 + 0);                                        \
        c00 = _mm256_fmadd_ps(av, b0, c00), c01 = _mm256_fmadd_ps(av, b1, c01);                    \
        av = _mm256_broadcast_ss(a + (o) * MR2 + 1);                                               \
        c10 = _mm256_fmadd_ps(av, b0, c10), c11 = _mm256_fmadd_ps(av, b1, c11);                    \
        av = _mm256_broadcast_ss(a + (o) * MR2 + 2);                                               \
        c20 = _mm256_fmadd_ps(av, b0, c20), c21 = _mm256_fmadd_ps(av, b1, c21);                    \
        av = _mm256_broadcast_ss(a + (o) * MR2 + 3);                                               \
        c30 = _mm256_fmadd_ps(av, b0, c30), c31 = _mm256_fmadd_ps(av, b1, c31);                    \
        av = _mm256_broadcast_ss(a + (o) * MR2 + 4);                                               \
        c40 = _mm256_fmadd_ps(av, b0, c40), c41 = _mm256_fmadd_ps(av, b1, c41);                    \
        av = _mm256_broadcast_ss(a + (o) * MR2 + 5);                                               \
        c50 = _mm256_fmadd_ps(av, b0, c50), c51 = _mm256_fmadd_ps(av, b1, c51);                    \
    } while (0)
    for (size_t r = 0; r < mr; r++) {
        PREFETCH(c + r * ldc, 0);
        PREFETCH(c + r * ldc, (nr - 1) * sizeof(float));
    }
    size_t k = 0;
    for (; k + 4 <= kc; k += 4, a += 4 * MR2, b += 4 * NR2) {
        PREFETCH(b, 8 * NR2 * sizeof(float));
        STEP(0);
        STEP(1);
        STEP(2);
        STEP(3);
    }
    for (; k < kc; k++, a += MR2, b += NR2) STEP(0);
#undef STEP
    if (mr == MR2 && nr == NR2) {
        __m256 va = _mm256_set1_ps(alpha);
        __m256 rows[MR2][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                              {c30, c31}, {c40, c41}, {c50, c51}};
        if (beta == 0.0f) {
            for (int r = 0; r < MR2; r++) {
                _mm256_storeu_ps(c + r * ldc, _mm256_mul_ps(va, rows[r][0]));
                _mm256_storeu_ps(c + r * ldc + 8, _mm256_mul_ps(va, rows[r][1]));
            }
        } else {
            __m256 vb = _mm256_set1_ps(beta);
            for (int r = 0; r < MR2; r++) {
                float *cr = c + r * ldc;
                _mm256_storeu_ps(cr, _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr),
                                                     _mm256_mul_ps(va, rows[r][0])));
                _mm256_storeu_ps(cr + 8, _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr + 8),
                                                         _mm256_mul_ps(va, rows[r][1])));
            }
        }
        return;
    }
    float acc[MR2 * NR2];
    _mm256_storeu_ps(acc + 0 * NR2, c00), _mm256_storeu_ps(acc + 0 * NR2 + 8, c01);
    _mm256_storeu_ps(acc + 1 * NR2, c10), _mm256_storeu_ps(acc + 1 * NR2 + 8, c11);
    _mm256_storeu_ps(acc + 2 * NR2, c20), _mm256_storeu_ps(acc + 2 * NR2 + 8, c21);
    _mm256_storeu_ps(acc + 3 * NR2, c30), _mm256_storeu_ps(acc + 3 * NR2 + 8, c31);
    _mm256_storeu_ps(acc + 4 * NR2, c40), _mm256_storeu_ps(acc + 4 * NR2 + 8, c41);
    _mm256_storeu_ps(acc + 5 * NR2, c50), _mm256_storeu_ps(acc + 5 * NR2 + 8, c51);
    store_tile(acc, NR2, c, ldc, alpha, beta, mr, nr);
}
/* The large-L2 AVX2 kernel (job.nextc; see L2_LARGE): the 6 x 16 tile of ukr_avx2 with its k
 * loop in assembly, as the AVX-512 one (ukr_avx512_acc): ymm0-11 the accumulators (row r in
 * ymm(2r), ymm(2r + 1)), ymm12-13 B, ymm14-15 the broadcasts, one pointer step per four k, and
 * every line of the B panel (which streams from L2 in the rows-first walk) prefetched 8 k ahead.
 * Each C element is the same chain of FMAs in k order as ukr_avx2's (the same bits). */
#define U2_ROW(o, r, c0, c1, t)                                                                    \
    "vbroadcastss 24*" #o "+4*" #r "(%[a]), %%ymm" #t "\n\t"                                       \
    "vfmadd231ps %%ymm12, %%ymm" #t ", %%ymm" #c0 "\n\t"                                           \
    "vfmadd231ps %%ymm13, %%ymm" #t ", %%ymm" #c1 "\n\t"
#define U2_STEP(o)                                                                                 \
    "vmovaps 64*" #o "(%[b]), %%ymm12\n\t"                                                         \
    "vmovaps 64*" #o "+32(%[b]), %%ymm13\n\t"                                                      \
    U2_ROW(o, 0, 0, 1, 14) U2_ROW(o, 1, 2, 3, 15) U2_ROW(o, 2, 4, 5, 14)                           \
    U2_ROW(o, 3, 6, 7, 15) U2_ROW(o, 4, 8, 9, 14) U2_ROW(o, 5, 10, 11, 15)
#define U2_ZERO(x) "vxorps %%ymm" #x ", %%ymm" #x ", %%ymm" #x "\n\t"
#define U2_SAVE(x) "vmovaps %%ymm" #x ", 32*" #x "(%[t])\n\t"
#define U2_ALL(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

/* t[r * 16 + q] = sum over k < kc of a[k * 6 + r] * b[k * 16 + q], fused in k order; the first
 * six passes of the 4-k loop each prefetch one row (two lines) of the next C tile cn, rows
 * ldcb bytes apart. */
#pragma GCC diagnostic push /* one asm string of about 5 KB, past C99's 4095 */
#pragma GCC diagnostic ignored "-Woverlength-strings"
AVX2_TARGET static void ukr_avx2l_acc(size_t kc, const float *a, const float *b, float *t,
                                      const float *cn, size_t ldcb)
{
    size_t n4 = kc / 4, n1 = kc % 4, np = cn ? MR2 : 0;
    uintptr_t pc = (uintptr_t)cn; /* an integer: the rows may lie past C (prefetch never faults) */
    __asm__ volatile(U2_ALL(U2_ZERO)
                     "test %[n4], %[n4]\n\t"
                     "jz 2f\n\t"
                     "1:\n\t"
                     "prefetcht0 512(%[b])\n\t"
                     "prefetcht0 576(%[b])\n\t"
                     "prefetcht0 640(%[b])\n\t"
                     "prefetcht0 704(%[b])\n\t"
                     "test %[np], %[np]\n\t"
                     "jz 5f\n\t"
                     "prefetcht0 (%[pc])\n\t"
                     "prefetcht0 60(%[pc])\n\t"
                     "add %[ldcb], %[pc]\n\t"
                     "dec %[np]\n\t"
                     "5:\n\t"
                     U2_STEP(0) U2_STEP(1) U2_STEP(2) U2_STEP(3)
                     "add $96, %[a]\n\t"
                     "add $256, %[b]\n\t"
                     "dec %[n4]\n\t"
                     "jnz 1b\n\t"
                     "2:\n\t"
                     "test %[n1], %[n1]\n\t"
                     "jz 4f\n\t"
                     "3:\n\t"
                     U2_STEP(0)
                     "add $24, %[a]\n\t"
                     "add $64, %[b]\n\t"
                     "dec %[n1]\n\t"
                     "jnz 3b\n\t"
                     "4:\n\t"
                     U2_ALL(U2_SAVE)
                     : [a] "+r"(a), [b] "+r"(b), [n4] "+r"(n4), [n1] "+r"(n1), [np] "+r"(np),
                       [pc] "+r"(pc)
                     : [t] "r"(t), [ldcb] "r"(ldcb)
                     : "cc", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
                       "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
                       "xmm15");
}
#pragma GCC diagnostic pop
#undef U2_ROW
#undef U2_STEP
#undef U2_ZERO
#undef U2_SAVE
#undef U2_ALL

AVX2_TARGET static void ukr_avx2l(size_t kc, const float *a, const float *b, float *c, size_t ldc,
                                  float alpha, float beta, size_t mr, size_t nr, const float *cn,
                                  bool pre)
{
    if (!pre)
        for (size_t r = 0; r < mr; r++) {
            PREFETCH(c + r * ldc, 0);
            PREFETCH(c + r * ldc, (nr - 1) * sizeof(float));
        }
    _Alignas(32) float t[MR2 * NR2];
    ukr_avx2l_acc(kc, a, b, t, cn, ldc * sizeof(float));
    if (mr == MR2 && nr == NR2) {
        __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
        for (size_t r = 0; r < MR2; r++) {
            float *cr = c + r * ldc;
            __m256 v0 = _mm256_mul_ps(va, _mm256_load_ps(t + r * NR2));
            __m256 v1 = _mm256_mul_ps(va, _mm256_load_ps(t + r * NR2 + 8));
            if (beta != 0.0f) {
                v0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr), v0);
                v1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr + 8), v1);
            }
            _mm256_storeu_ps(cr, v0);
            _mm256_storeu_ps(cr + 8, v1);
        }
        return;
    }
    store_tile(t, NR2, c, ldc, alpha, beta, mr, nr);
}
/* 12 x 32: 24 zmm accumulators, two zmm of B per k, each A element broadcast once into a
 * register that feeds two FMAs. The k loop is written in assembly: compiled from intrinsics,
 * GCC hoisted the broadcasts of the unrolled steps ahead of their FMAs, ran out of the 32
 * registers and kept one accumulator on the stack (a store and a reload inside the loop, plus
 * five register moves per four k; docs/PERFORMANCE.md, issue 16, "Eighth round"). Registers:
 * zmm0-23 the accumulators (row r in zmm(2r), zmm(2r + 1)), zmm24-25 B, zmm26-31 the
 * broadcasts. Each C element is still one chain of FMAs in k order (the same bits as before). */
#define AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
/* Row r of k step o: broadcast A[o][r] into zmm t, then two FMAs. */
#define U5_ROW(o, r, c0, c1, t)                                                                    \
    "vbroadcastss 48*" #o "+4*" #r "(%[a]), %%zmm" #t "\n\t"                                       \
    "vfmadd231ps %%zmm24, %%zmm" #t ", %%zmm" #c0 "\n\t"                                           \
    "vfmadd231ps %%zmm25, %%zmm" #t ", %%zmm" #c1 "\n\t"
#define U5_STEP(o)                                                                                 \
    "vmovaps 128*" #o "(%[b]), %%zmm24\n\t"                                                        \
    "vmovaps 128*" #o "+64(%[b]), %%zmm25\n\t"                                                     \
    U5_ROW(o, 0, 0, 1, 26) U5_ROW(o, 1, 2, 3, 27) U5_ROW(o, 2, 4, 5, 28)                           \
    U5_ROW(o, 3, 6, 7, 29) U5_ROW(o, 4, 8, 9, 30) U5_ROW(o, 5, 10, 11, 31)                         \
    U5_ROW(o, 6, 12, 13, 26) U5_ROW(o, 7, 14, 15, 27) U5_ROW(o, 8, 16, 17, 28)                     \
    U5_ROW(o, 9, 18, 19, 29) U5_ROW(o, 10, 20, 21, 30) U5_ROW(o, 11, 22, 23, 31)
#define U5_ZERO2(x, y) "vpxord %%zmm" #x ", %%zmm" #x ", %%zmm" #x "\n\t"                          \
    "vpxord %%zmm" #y ", %%zmm" #y ", %%zmm" #y "\n\t"
#define U5_SAVE2(x, y) "vmovaps %%zmm" #x ", 64*" #x "(%[t])\n\t"                                  \
    "vmovaps %%zmm" #y ", 64*" #y "(%[t])\n\t"
#define U5_PAIRS(X) X(0, 1) X(2, 3) X(4, 5) X(6, 7) X(8, 9) X(10, 11) X(12, 13) X(14, 15)         \
    X(16, 17) X(18, 19) X(20, 21) X(22, 23)

/* t[r * 32 + q] = sum over k < kc of a[k * 12 + r] * b[k * 32 + q], fused in k order. The
 * first twelve passes of the 4-k loop each prefetch one row (two lines) of the next C tile,
 * cn with rows ldcb bytes apart, so that its misses overlap this tile's arithmetic instead of
 * all being issued at the next tile's start. */
#pragma GCC diagnostic push /* one asm string of about 9 KB, past C99's 4095 */
#pragma GCC diagnostic ignored "-Woverlength-strings"
AVX512_TARGET static void ukr_avx512_acc(size_t kc, const float *a, const float *b, float *t,
                                         const float *cn, size_t ldcb)
{
    size_t n4 = kc / 4, n1 = kc % 4, np = cn ? MR5 : 0; /* no next tile: no prefetches */
    uintptr_t pc = (uintptr_t)cn; /* an integer: the rows may lie past C (prefetch never faults) */
    __asm__ volatile(U5_PAIRS(U5_ZERO2)
                     "test %[n4], %[n4]\n\t"
                     "jz 2f\n\t"
                     "1:\n\t"
                     /* B 8 k ahead (two lines), A 8 k ahead */
                     "prefetcht0 1024(%[b])\n\t"
                     "prefetcht0 1088(%[b])\n\t"
                     "prefetcht0 384(%[a])\n\t"
                     "test %[np], %[np]\n\t"
                     "jz 5f\n\t"
                     "prefetcht0 (%[pc])\n\t"
                     "prefetcht0 64(%[pc])\n\t"
                     "add %[ldcb], %[pc]\n\t"
                     "dec %[np]\n\t"
                     "5:\n\t"
                     U5_STEP(0) U5_STEP(1) U5_STEP(2) U5_STEP(3)
                     "add $192, %[a]\n\t"
                     "add $512, %[b]\n\t"
                     "dec %[n4]\n\t"
                     "jnz 1b\n\t"
                     "2:\n\t"
                     "test %[n1], %[n1]\n\t"
                     "jz 4f\n\t"
                     "3:\n\t"
                     U5_STEP(0)
                     "add $48, %[a]\n\t"
                     "add $128, %[b]\n\t"
                     "dec %[n1]\n\t"
                     "jnz 3b\n\t"
                     "4:\n\t"
                     U5_PAIRS(U5_SAVE2)
                     : [a] "+r"(a), [b] "+r"(b), [n4] "+r"(n4), [n1] "+r"(n1), [np] "+r"(np),
                       [pc] "+r"(pc)
                     : [t] "r"(t), [ldcb] "r"(ldcb)
                     : "cc", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
                       "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
                       "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22",
                       "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30",
                       "xmm31");
}
#pragma GCC diagnostic pop
#undef U5_ROW
#undef U5_STEP
#undef U5_ZERO2
#undef U5_SAVE2
#undef U5_PAIRS

/* cn: the next tile of C (its rows are prefetched during this one's k loop; this tile's were
 * prefetched during the previous one's, or here when cn_prev says they were not). */
AVX512_TARGET static void ukr_avx512(size_t kc, const float *a, const float *b, float *c,
                                     size_t ldc, float alpha, float beta, size_t mr, size_t nr,
                                     const float *cn, bool pre)
{
    if (!pre)
        for (size_t r = 0; r < mr; r++) {
            PREFETCH(c + r * ldc, 0);
            PREFETCH(c + r * ldc, (nr - 1) * sizeof(float));
        }
    _Alignas(64) float t[MR5 * NR5];
    ukr_avx512_acc(kc, a, b, t, cn, ldc * sizeof(float));
    if (mr == MR5 && nr == NR5) {
        __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
        for (size_t r = 0; r < MR5; r++) {
            float *cr = c + r * ldc;
            __m512 v0 = _mm512_mul_ps(va, _mm512_load_ps(t + r * NR5));
            __m512 v1 = _mm512_mul_ps(va, _mm512_load_ps(t + r * NR5 + 16));
            if (beta != 0.0f) {
                v0 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(cr), v0);
                v1 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(cr + 16), v1);
            }
            _mm512_storeu_ps(cr, v0);
            _mm512_storeu_ps(cr + 16, v1);
        }
        return;
    }
    store_tile(t, NR5, c, ldc, alpha, beta, mr, nr);
}
#endif

/* cn: the tile of C the next call computes (NULL: none, or not to be prefetched: the AVX2
 * level's column walk, job.nextc); pre: this call's tile was prefetched by the previous call
 * (AVX-512 and AVX2; the scalar kernel prefetches nothing). */
typedef void (*ukr_fn)(size_t, const float *, const float *, float *, size_t, float, float, size_t,
                       size_t, const float *, bool);

/* The whole loop nest over rows [m0, m1) and columns [n0, n1) of C. */
static void block_gemm(const job *j, size_t m0, size_t m1, size_t n0, size_t n1, float *ap,
                       float *bp)
{
    ukr_fn ukr = ukr_scalar;
#ifdef HAVE_X86
    if (j->isa >= INGOT__ISA_AVX512) ukr = ukr_avx512;
    else if (j->isa >= INGOT__ISA_AVX2) ukr = j->nextc ? ukr_avx2l : ukr_avx2;
#endif
    size_t MR = j->mr, NR = j->nr, MC = j->mc;
    /* One A block: every B panel is used once, right after packing, so one panel's buffer
     * (which stays in L1) replaces the whole block's. */
    bool once = m1 - m0 <= MC;
    size_t NCB = j->ncb, KCB = j->kcb;
    for (size_t jc = n0; jc < n1; jc += NCB) {
        size_t nc = n1 - jc < NCB ? n1 - jc : NCB;
        for (size_t pc = 0; pc < j->K; pc += KCB) {
            size_t kc = j->K - pc < KCB ? j->K - pc : KCB;
            float beta = pc == 0 ? j->beta : 1.0f;
            for (size_t ic = m0; ic < m1; ic += MC) {
                size_t mc = m1 - ic < MC ? m1 - ic : MC;
                pack_a(j, ic, mc, pc, kc, ap);
                bool pre = false;
                if (!once && j->rowfirst) {
                    for (size_t ir = 0; ir < mc; ir += MR) {
                        size_t mr = mc - ir < MR ? mc - ir : MR;
                        for (size_t jr = 0; jr < nc; jr += NR) {
                            size_t nr = nc - jr < NR ? nc - jr : NR;
                            if (ic == m0 && ir == 0 && (!j->bgroup || jr % (BGROUP * NR) == 0))
                                pack_b_group(j, pc, kc, jc + jr, nc - jr, bp + jr * kc);
                            float *ct = j->C + (ic + ir) * j->ldc + jc + jr;
                            const float *cn = !j->nextc      ? NULL
                                              : jr + NR < nc ? ct + NR
                                              : ir + MR < mc ? j->C + (ic + ir + MR) * j->ldc + jc
                                                             : NULL;
                            ukr(kc, ap + ir * kc, bp + jr * kc, ct, j->ldc, j->alpha, beta, mr, nr,
                                cn, pre);
                            pre = cn && kc >= 4 * MR;
                        }
                    }
                    continue;
                }
                for (size_t jr = 0; jr < nc; jr += NR) {
                    size_t nr = nc - jr < NR ? nc - jr : NR;
                    /* B panels are packed when the first A block first needs them. */
                    float *bpanel = once ? bp : bp + jr * kc;
                    if (ic == m0) pack_b(j, pc, kc, jc + jr, nr, bpanel);
                    for (size_t ir = 0; ir < mc; ir += MR) {
                        size_t mr = mc - ir < MR ? mc - ir : MR;
                        float *ct = j->C + (ic + ir) * j->ldc + jc + jr;
                        /* the next tile: MR rows down, or the top of the next panel's */
                        const float *cn = !j->nextc           ? NULL
                                          : ir + MR < mc        ? ct + MR * j->ldc
                                          : jr + NR < nc      ? j->C + ic * j->ldc + jc + jr + NR
                                                              : NULL;
                        ukr(kc, ap + ir * kc, bpanel, ct, j->ldc, j->alpha, beta, mr, nr, cn, pre);
                        pre = cn && kc >= 4 * MR;
                    }
                }
            }
        }
    }
}

/* ---- small M: stream B once instead of packing it ----
 * With a few rows of C the packed path spends most of its time packing B (each packed element
 * is used M times). Up to SMALL_M rows, B is read once, in long contiguous runs, and the
 * arithmetic is done straight from it:
 *  - B^T (rows of B are columns of C, as for [out, in] weights): every C element is a dot
 *    product of an X row and a B row, accumulated in 8 lanes over k, summed horizontally in a
 *    fixed order, then the k tail with fmaf; tiles of 2 x 4 elements share the loads;
 *  - B: axpy form, C rows += X[i,k] * B row k, eight k at a time, over column strips whose
 *    accumulators stay in cache; each element is a chain of fused multiply-adds in k order.
 * Either way an element's operations do not depend on the tile or strip it falls in, so the
 * results do not depend on the thread count. */
#define SMALL_M 16
#define SMALL_COLS 2048 /* columns per strip: SMALL_M x 2048 accumulators (128 KB) stay in L2 */
/* Accumulator rows are this far apart: 16 floats more than a multiple of 4 KiB, so that the rows
 * do not all fall into the same L1 set (which halved the speed). */
#define ACC_LD (SMALL_COLS + 16)

#ifdef HAVE_X86
AVX2_TARGET static inline float hsum8(__m256 v)
{
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

static inline void small_store(const job *j, size_t i, size_t c, float s)
{
    float *d = j->C + i * j->ldc + c, v = j->alpha * s;
    *d = j->beta == 0.0f ? v : v + j->beta * *d;
}

/* One element: x . b over K (the reference shape of the tiles below). */
AVX2_TARGET static void small_tb_1x1(const job *j, size_t i, size_t c)
{
    const float *x = j->X + i * j->ldx, *b = j->B + c * j->ldb;
    __m256 acc = _mm256_setzero_ps();
    size_t k = 0;
    for (; k + 8 <= j->K; k += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(b + k), acc);
    float s = hsum8(acc);
    for (; k < j->K; k++) s = fmaf(x[k], b[k], s);
    small_store(j, i, c, s);
}

/* Rows i, i + 1 of C by columns c .. c + 3. */
AVX2_TARGET static void small_tb_2x4(const job *j, size_t i, size_t c)
{
    const float *x0 = j->X + i * j->ldx, *x1 = x0 + j->ldx;
    const float *b0 = j->B + c * j->ldb, *b1 = b0 + j->ldb, *b2 = b1 + j->ldb, *b3 = b2 + j->ldb;
    __m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a03 = a00;
    __m256 a10 = a00, a11 = a00, a12 = a00, a13 = a00;
    size_t k = 0;
    for (; k + 8 <= j->K; k += 8) {
        __m256 v0 = _mm256_loadu_ps(x0 + k), v1 = _mm256_loadu_ps(x1 + k);
        __m256 w = _mm256_loadu_ps(b0 + k);
        a00 = _mm256_fmadd_ps(v0, w, a00), a10 = _mm256_fmadd_ps(v1, w, a10);
        w = _mm256_loadu_ps(b1 + k);
        a01 = _mm256_fmadd_ps(v0, w, a01), a11 = _mm256_fmadd_ps(v1, w, a11);
        w = _mm256_loadu_ps(b2 + k);
        a02 = _mm256_fmadd_ps(v0, w, a02), a12 = _mm256_fmadd_ps(v1, w, a12);
        w = _mm256_loadu_ps(b3 + k);
        a03 = _mm256_fmadd_ps(v0, w, a03), a13 = _mm256_fmadd_ps(v1, w, a13);
    }
    float s[8] = {hsum8(a00), hsum8(a01), hsum8(a02), hsum8(a03),
                  hsum8(a10), hsum8(a11), hsum8(a12), hsum8(a13)};
    const float *bq[4] = {b0, b1, b2, b3};
    for (int r = 0; r < 2; r++)
        for (int q = 0; q < 4; q++) {
            const float *x = r ? x1 : x0, *b = bq[q];
            float t = s[r * 4 + q];
            for (size_t kk = k; kk < j->K; kk++) t = fmaf(x[kk], b[kk], t);
            small_store(j, i + (size_t)r, c + (size_t)q, t);
        }
}

/* Row i of C by columns c .. c + 3 (an odd last row). */
AVX2_TARGET static void small_tb_1x4(const job *j, size_t i, size_t c)
{
    const float *x0 = j->X + i * j->ldx;
    const float *b0 = j->B + c * j->ldb, *b1 = b0 + j->ldb, *b2 = b1 + j->ldb, *b3 = b2 + j->ldb;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t k = 0;
    for (; k + 8 <= j->K; k += 8) {
        __m256 v0 = _mm256_loadu_ps(x0 + k);
        a0 = _mm256_fmadd_ps(v0, _mm256_loadu_ps(b0 + k), a0);
        a1 = _mm256_fmadd_ps(v0, _mm256_loadu_ps(b1 + k), a1);
        a2 = _mm256_fmadd_ps(v0, _mm256_loadu_ps(b2 + k), a2);
        a3 = _mm256_fmadd_ps(v0, _mm256_loadu_ps(b3 + k), a3);
    }
    float s[4] = {hsum8(a0), hsum8(a1), hsum8(a2), hsum8(a3)};
    const float *bq[4] = {b0, b1, b2, b3};
    for (int q = 0; q < 4; q++) {
        float t = s[q];
        for (size_t kk = k; kk < j->K; kk++) t = fmaf(x0[kk], bq[q][kk], t);
        small_store(j, i, c + (size_t)q, t);
    }
}

/* Columns [c0, c1) of every row; acc holds M rows of ACC_LD floats. Eight rows of B at a time
 * are loaded once into registers and applied to every row of C's strip. */
AVX2_TARGET static void small_nn(const job *j, size_t c0, size_t c1, float *acc)
{
    size_t M = j->M, K = j->K, ldb = j->ldb;
    for (size_t cs = c0; cs < c1; cs += SMALL_COLS) {
        size_t w = c1 - cs < SMALL_COLS ? c1 - cs : SMALL_COLS, wv = w / 8 * 8;
        for (size_t i = 0; i < M; i++) memset(acc + i * ACC_LD, 0, w * sizeof(float));
        size_t k = 0;
        for (; k + 8 <= K; k += 8) {
            const float *b = j->B + k * ldb + cs;
            for (size_t c = 0; c < wv; c += 8) {
                __m256 w0 = _mm256_loadu_ps(b + c), w1 = _mm256_loadu_ps(b + ldb + c);
                __m256 w2 = _mm256_loadu_ps(b + 2 * ldb + c), w3 = _mm256_loadu_ps(b + 3 * ldb + c);
                __m256 w4 = _mm256_loadu_ps(b + 4 * ldb + c), w5 = _mm256_loadu_ps(b + 5 * ldb + c);
                __m256 w6 = _mm256_loadu_ps(b + 6 * ldb + c), w7 = _mm256_loadu_ps(b + 7 * ldb + c);
                for (size_t i = 0; i < M; i++) {
                    const float *x = j->X + i * j->ldx + k;
                    float *a = acc + i * ACC_LD + c;
                    __m256 v = _mm256_fmadd_ps(_mm256_broadcast_ss(x), w0, _mm256_load_ps(a));
                    v = _mm256_fmadd_ps(_mm256_broadcast_ss(x + 1), w1, v);
                    v = _mm256_fmadd_ps(_mm256_broadcast_ss(x + 2), w2, v);
                    v = _mm256_fmadd_ps(_mm256_broadcast_ss(x + 3), w3, v);
                    v = _mm256_fmadd_ps(_mm256_broadcast_ss(x + 4), w4, v);
                    v = _mm256_fmadd_ps(_mm256_broadcast_ss(x + 5), w5, v);
                    v = _mm256_fmadd_ps(_mm256_broadcast_ss(x + 6), w6, v);
                    _mm256_store_ps(a, _mm256_fmadd_ps(_mm256_broadcast_ss(x + 7), w7, v));
                }
            }
            for (size_t i = 0; i < M; i++) {
                const float *x = j->X + i * j->ldx + k;
                float *a = acc + i * ACC_LD;
                for (size_t c = wv; c < w; c++)
                    for (size_t q = 0; q < 8; q++) a[c] = fmaf(x[q], b[q * ldb + c], a[c]);
            }
        }
        for (; k < K; k++) {
            const float *b = j->B + k * ldb + cs;
            for (size_t i = 0; i < M; i++) {
                float xs = j->X[i * j->ldx + k], *a = acc + i * ACC_LD;
                __m256 xv = _mm256_set1_ps(xs);
                for (size_t c = 0; c < wv; c += 8)
                    _mm256_store_ps(a + c, _mm256_fmadd_ps(xv, _mm256_loadu_ps(b + c), _mm256_load_ps(a + c)));
                for (size_t c = wv; c < w; c++) a[c] = fmaf(xs, b[c], a[c]);
            }
        }
        for (size_t i = 0; i < M; i++)
            for (size_t c = 0; c < w; c++) small_store(j, i, cs + c, acc[i * ACC_LD + c]);
    }
}

static void small_task(void *ctx, size_t t, unsigned worker)
{
    job *j = ctx;
    size_t lo = t * j->chunk, hi = j->N - lo < j->chunk ? j->N : lo + j->chunk;
    if (j->tb) {
        size_t c = lo;
        for (; c + 4 <= hi; c += 4) {
            size_t i = 0;
            for (; i + 2 <= j->M; i += 2) small_tb_2x4(j, i, c);
            if (i < j->M) small_tb_1x4(j, i, c);
        }
        for (; c < hi; c++)
            for (size_t i = 0; i < j->M; i++) small_tb_1x1(j, i, c);
        return;
    }
    float *acc = ingot__pool_scratch(j->pool, worker, (size_t)SMALL_M * ACC_LD * sizeof(float));
    if (!acc) {
        atomic_store(&j->failed, 1);
        return;
    }
    small_nn(j, lo, hi, acc);
}
#endif

#define AP_FLOATS ((size_t)MC_MAX * KC)
#define BP_FLOATS ((size_t)KC * NC)
_Static_assert(48 * KC5 <= AP_FLOATS && KC5 * NC5 <= BP_FLOATS, "AVX-512 blocks fit the scratch");
_Static_assert(MC2L * KC2L <= AP_FLOATS && KC2L * NC2L <= BP_FLOATS, "AVX2L blocks fit scratch");
_Static_assert(MC2L % MR2 == 0 && NC2L % NR2 == 0, "AVX2L blocks are whole tiles");

bool ingot__sgemm_avx2_large_l2(void) { return ingot__cpu_l2_bytes() > L2_LARGE; }

/* Tile, blocks and walk of the level in effect. */
static void set_blocks(job *j)
{
    bool wide = j->isa >= INGOT__ISA_AVX512;
    j->mr = wide ? MR5 : MR2, j->nr = wide ? NR5 : NR2;
    if (wide) {
        /* AVX-512: an A block of 48 rows (48 KB), small beside AVX2's 120: on the Xeon of
         * issue 16 (thread CPU time, best of 15) MC = 36-60 ran 0.89-1.03x OpenBLAS SkylakeX
         * at 1024^3 and 2048^3, 72-96 0.81-0.96x, 144 0.82-0.89x, 288 0.83x; KC = 192 / 384
         * were no better. */
        j->mc = 48, j->kcb = KC5, j->ncb = NC5, j->rowfirst = j->nextc = true, j->bgroup = false;
    } else if (j->isa >= INGOT__ISA_AVX2 && ingot__sgemm_avx2_large_l2()) {
        j->mc = MC2L, j->kcb = KC2L, j->ncb = NC2L, j->rowfirst = j->nextc = j->bgroup = true;
    } else {
        j->mc = 120, j->kcb = KC, j->ncb = NC, j->rowfirst = j->nextc = j->bgroup = false;
    }
}
#define SCRATCH_BYTES ((AP_FLOATS + BP_FLOATS) * sizeof(float))

size_t ingot__sgemm_scratch_bytes(void)
{
    size_t n = SCRATCH_BYTES;
#ifdef HAVE_X86
    size_t acc = (size_t)SMALL_M * ACC_LD * sizeof(float); /* the small-M path's accumulators */
    if (acc > n) n = acc;
#endif
    return n;
}

static void task(void *ctx, size_t t, unsigned worker)
{
    job *j = ctx;
    float *ap = ingot__pool_scratch(j->pool, worker, SCRATCH_BYTES);
    if (!ap) {
        atomic_store(&j->failed, 1);
        return;
    }
    float *bp = ap + AP_FLOATS;
    size_t m0 = t / j->col_tasks * j->rows, n0 = t % j->col_tasks * j->cols;
    size_t m1 = j->M - m0 < j->rows ? j->M : m0 + j->rows;
    size_t n1 = j->N - n0 < j->cols ? j->N : n0 + j->cols;
    block_gemm(j, m0, m1, n0, n1, ap, bp);
}

void ingot__sgemm_serial(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha,
                         const float *A, size_t lda, const float *B, size_t ldb, float beta,
                         float *C, size_t ldc, void *scratch)
{
    if (M == 0 || N == 0 || K == 0) return;
    job j = {.ta = trans_a, .tb = trans_b, .M = M, .N = N, .K = K, .alpha = alpha, .beta = beta,
             .A = A, .B = B, .lda = lda, .ldb = ldb, .ldc = ldc, .C = C, .isa = ingot__get_isa()};
    set_blocks(&j);
    float *ap = scratch;
    block_gemm(&j, 0, M, 0, N, ap, ap + AP_FLOATS);
}

ingot_status ingot__sgemm(ingot__pool *pool, bool trans_a, bool trans_b, size_t M, size_t N,
                          size_t K, float alpha, const float *A, size_t lda, const float *B,
                          size_t ldb, float beta, float *C, size_t ldc)
{
    if (M == 0 || N == 0) return INGOT_OK;
    if (K == 0 || alpha == 0.0f) { /* C = beta * C */
        for (size_t i = 0; i < M; i++)
            for (size_t q = 0; q < N; q++) C[i * ldc + q] = beta == 0.0f ? 0.0f : beta * C[i * ldc + q];
        return INGOT_OK;
    }
    if (M == 1 && !trans_a && trans_b) { /* C = alpha B a + beta C: the GEMV streams best */
        ingot__sgemv(pool, false, N, K, alpha, B, ldb, A, beta, C);
        return INGOT_OK;
    }
    ingot__pool *own = NULL;
    if (!pool && !(pool = own = ingot__pool_create(NULL, 1))) return INGOT_NOMEM;
    job j = {.ta = trans_a, .tb = trans_b, .M = M, .N = N, .K = K, .alpha = alpha, .beta = beta,
             .A = A, .B = B, .lda = lda, .ldb = ldb, .ldc = ldc, .C = C, .pool = pool,
             .isa = ingot__get_isa()};
    set_blocks(&j);
    atomic_init(&j.failed, 0);
    size_t threads = ingot__pool_threads(pool);
    /* Small problems are not worth waking workers for. */
    if ((double)M * (double)N * (double)K < 64.0 * 64 * 64) threads = 1;
#ifdef HAVE_X86
    if (j.isa >= INGOT__ISA_AVX2 && M <= SMALL_M && !trans_a) {
        j.X = A, j.ldx = lda;
        size_t unit = trans_b ? 4 : 64, units = (N + unit - 1) / unit;
        j.chunk = (units + threads - 1) / threads * unit;
        ingot__pool_run(pool, small_task, &j, (N + j.chunk - 1) / j.chunk);
        ingot__pool_destroy(own);
        return atomic_load(&j.failed) ? INGOT_NOMEM : INGOT_OK;
    }
#endif
    /* C in rg x cg tiles, rg * cg >= threads: a task packs its rows of A and its columns of B, so
     * A is packed cg times in all and B rg times; the pair that packs least is taken (2
     * threads: two column halves of a square C; 64: 8 x 8 tiles, where one column range per
     * thread would pack A 64 times). Tiles are multiples of the micro-kernel's tile and every
     * element is reduced over k in the same order whatever tile holds it, so the results do not
     * depend on the thread count. */
    size_t um = (M + j.mr - 1) / j.mr, un = (N + j.nr - 1) / j.nr, rg = 1, cg = 1;
    double best = -1, most = (double)um * (double)un < (double)threads ? (double)um * (double)un
                                                                       : (double)threads;
    for (size_t r = 1; r <= threads && r <= um; r++) {
        size_t c = (threads + r - 1) / r;
        c = c < un ? c : un;
        if ((double)r * (double)c < most) continue; /* leaves threads idle */
        double cost = (double)M * (double)c + (double)N * (double)r;
        if (best < 0 || cost < best) best = cost, rg = r, cg = c;
    }
    j.rows = (um + rg - 1) / rg * j.mr;
    j.cols = (un + cg - 1) / cg * j.nr;
    j.col_tasks = (N + j.cols - 1) / j.cols;
    size_t ntasks = (M + j.rows - 1) / j.rows * j.col_tasks;
    ingot__pool_run(pool, task, &j, ntasks);
    ingot__pool_destroy(own);
    return atomic_load(&j.failed) ? INGOT_NOMEM : INGOT_OK;
}
