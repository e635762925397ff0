/*
 * qdot_avx2.c - the AVX2 level's quantized dots (AVX2 + FMA + F16C): the 256-bit kernels of
 * qdot_x86_256.h with vpmaddubsw / vpmaddwd products.
 */
#include "cpu/kernels/qdot.h"

#if defined(__x86_64__) || defined(__i386__)
#define TGT __attribute__((target("avx2,fma,f16c")))
#define VNNI 0
#define QN(name) avx2_##name
#include "cpu/kernels/qdot_x86_256.h"

ingot__qdot_fn ingot__qdot_avx2(ingot_dtype wt)
{
    switch (wt) {
    case INGOT_DTYPE_I8: return avx2_i8;
    case INGOT_DTYPE_Q8_0: return avx2_q8_0;
    case INGOT_DTYPE_Q4_0: return avx2_q4_0;
    case INGOT_DTYPE_Q4_K: return avx2_q4_k;
    case INGOT_DTYPE_Q5_K: return avx2_q5_k;
    case INGOT_DTYPE_Q6_K: return avx2_q6_k;
    default: return NULL;
    }
}
#else
ingot__qdot_fn ingot__qdot_avx2(ingot_dtype wt)
{
    (void)wt;
    return NULL;
}
#endif
