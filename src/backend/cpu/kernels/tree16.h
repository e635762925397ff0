/*
 * tree16.h - sixteen 16-lane AVX-512 vectors summed to one vector of their sixteen lane sums by
 * one transposed tree (the quantized GEMVs' row sums, qdot_x86_512.h; the decode attention's
 * scores, attn_keys8.c). A macro, so that each includer expands it under its own target
 * attributes.
 */
#ifndef INGOT_TREE16_H
#define INGOT_TREE16_H

#include <immintrin.h>

/* The transposed tree of gemv.c's dot16_avx512: sixteen vectors of 16 lanes to one vector of
 * their sixteen lane sums, in order, in 30 shuffles and 15 additions (sixteen horizontal sums
 * take 64 shuffles); lane i is added to lane i + 8, then + 4, + 2, + 1, the order of hsum_f32
 * (_mm512_reduce_add_ps), so the float form gives each vector's hsum_f32 bits. */
#define TREE16(T, ADD, SH4, SH, CAST_OUT, p)                                                       \
    do {                                                                                           \
        T q_[8], s4_[4], u_[2];                                                                    \
        _Pragma("GCC unroll 8")                                                                    \
        for (int j = 0; j < 8; j++)                                                                \
            q_[j] = ADD(SH4(p[2 * j], p[2 * j + 1], 0x44), SH4(p[2 * j], p[2 * j + 1], 0xEE));     \
        _Pragma("GCC unroll 8")                                                                    \
        for (int j = 0; j < 4; j++)                                                                \
            s4_[j] = ADD(SH4(q_[2 * j], q_[2 * j + 1], 0x88),                                      \
                         SH4(q_[2 * j], q_[2 * j + 1], 0xDD));                                     \
        _Pragma("GCC unroll 8")                                                                    \
        for (int j = 0; j < 2; j++)                                                                \
            u_[j] = ADD(SH(s4_[2 * j], s4_[2 * j + 1], 0x44),                                      \
                        SH(s4_[2 * j], s4_[2 * j + 1], 0xEE));                                     \
        T v_ = ADD(SH(u_[0], u_[1], 0x88), SH(u_[0], u_[1], 0xDD));                                \
        const __m512i order_ =                                                                     \
            _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);               \
        CAST_OUT = _mm512_permutexvar_epi32(order_, v_);                                           \
    } while (0)

#define SHI(a, b, imm)                                                                             \
    _mm512_castps_si512(_mm512_shuffle_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b), imm))

/* The float form: out (an __m512) = the sixteen lane sums of the __m512 vectors p[0..16). */
#define TREE16_ADDF(a, b)                                                                          \
    _mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b)))
#define TREE16_PS(out, p)                                                                          \
    do {                                                                                           \
        __m512i r_;                                                                                \
        const __m512i *pi_ = (const __m512i *)(const void *)(p);                                   \
        TREE16(__m512i, TREE16_ADDF, _mm512_shuffle_i32x4, SHI, r_, pi_);                          \
        out = _mm512_castsi512_ps(r_);                                                             \
    } while (0)

#endif
