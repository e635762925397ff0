/*
 * qdot_avx512_vnni.c - the AVX512_VNNI level's quantized dots (AVX-512 with AVX512-VNNI:
 * vpdpbusd / vpdpwssd on 512 bits): the kernels of qdot_x86_512.h with VNNI 1.
 */
#include "cpu/kernels/qdot.h"

#if defined(__x86_64__) || defined(__i386__)
#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define VNNI 1
#define QN(name) avx512_vnni_##name
#include "cpu/kernels/qdot_x86_512.h"

ingot__qdot_fn ingot__qdot_avx512_vnni(ingot_dtype wt)
{
    switch (wt) {
    case INGOT_DTYPE_I8: return avx512_vnni_i8;
    case INGOT_DTYPE_Q8_0: return avx512_vnni_q8_0;
    case INGOT_DTYPE_Q4_0: return avx512_vnni_q4_0;
    case INGOT_DTYPE_Q4_K: return avx512_vnni_q4_k;
    case INGOT_DTYPE_Q5_K: return avx512_vnni_q5_k;
    case INGOT_DTYPE_Q6_K: return avx512_vnni_q6_k;
    default: return NULL;
    }
}

ingot__qdot_fn ingot__qdot_q4kr_avx512_vnni(void) { return avx512_vnni_q4kr; }
#else
ingot__qdot_fn ingot__qdot_avx512_vnni(ingot_dtype wt)
{
    (void)wt;
    return NULL;
}

ingot__qdot_fn ingot__qdot_q4kr_avx512_vnni(void) { return NULL; }
#endif
