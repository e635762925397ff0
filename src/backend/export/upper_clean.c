/*
 * upper_clean.c - ingot__cpu_clean_upper (backend_export.h): vzeroupper, for the runtime to call
 * after a GEMM-path linear. Some of the cpu kernels return with the upper halves of the vector
 * registers dirty (sgemm.c's ukr_avx2 calls store_tile, plain SSE code, without a vzeroupper
 * first, and the quantized GEMM path likewise), after which every non-VEX instruction (ref ops,
 * libm) runs up to 40 times slower on Intel cores until some AVX code clears them. The pool
 * (kernels/pool.c) now clears them after every job as well; this stays for kernels called
 * outside a pool job.
 */
#include "cpu/cpu.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
__attribute__((target("avx"))) static void zero_upper(void) { _mm256_zeroupper(); }
#endif

void ingot__cpu_clean_upper(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (ingot__isa_supported(INGOT__ISA_AVX2)) zero_upper();
#endif
}
