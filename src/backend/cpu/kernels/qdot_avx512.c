/*
 * qdot_avx512.c - the AVX512 level's quantized dots (AVX-512 F/BW/VL/DQ: vpmaddubsw / vpmaddwd
 * on 512 bits): the kernels of qdot_x86_512.h with VNNI 0.
 */
#include "cpu/kernels/qdot.h"

#if defined(__x86_64__) || defined(__i386__)
#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define VNNI 0
#define QN(name) avx512_##name
#include "cpu/kernels/qdot_x86_512.h"

ingot__qdot_fn ingot__qdot_avx512(ingot_dtype wt)
{
    switch (wt) {
    case INGOT_DTYPE_I8: return avx512_i8;
    case INGOT_DTYPE_Q8_0: return avx512_q8_0;
    case INGOT_DTYPE_Q4_0: return avx512_q4_0;
    case INGOT_DTYPE_Q4_K: return avx512_q4_k;
    case INGOT_DTYPE_Q5_K: return avx512_q5_k;
    case INGOT_DTYPE_Q6_K: return avx512_q6_k;
    default: return NULL;
    }
}
#else
ingot__qdot_fn ingot__qdot_avx512(ingot_dtype wt)
{
    (void)wt;
    return NULL;
}
#endif
