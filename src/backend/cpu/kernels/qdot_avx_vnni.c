/*
 * qdot_avx_vnni.c - the AVX_VNNI level's quantized dots (AVX2 + AVX-VNNI, VEX-encoded
 * vpdpbusd / vpdpwssd on 256 bits): the kernels of qdot_x86_256.h with VNNI 1.
 */
#include "cpu/kernels/qdot.h"

#if defined(__x86_64__) || defined(__i386__)
#define TGT __attribute__((target("avx2,fma,f16c,avxvnni")))
#define VNNI 1
#define QN(name) avxvnni_##name
#include "cpu/kernels/qdot_x86_256.h"

ingot__qdot_fn ingot__qdot_avx_vnni(ingot_dtype wt)
{
    switch (wt) {
    case INGOT_DTYPE_I8: return avxvnni_i8;
    case INGOT_DTYPE_Q8_0: return avxvnni_q8_0;
    case INGOT_DTYPE_Q4_0: return avxvnni_q4_0;
    case INGOT_DTYPE_Q4_K: return avxvnni_q4_k;
    case INGOT_DTYPE_Q5_K: return avxvnni_q5_k;
    case INGOT_DTYPE_Q6_K: return avxvnni_q6_k;
    default: return NULL;
    }
}
#else
ingot__qdot_fn ingot__qdot_avx_vnni(ingot_dtype wt)
{
    (void)wt;
    return NULL;
}
#endif
