/* isa.c - run-time ISA selection for the CPU kernels (CPUID through the compiler builtins). */
#include <stdatomic.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "cpu/kernels/kernels.h"

static atomic_int chosen = -1;

ingot__isa ingot__cpu_isa(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    unsigned a = 0, b = 0, c = 0, d = 0;
    /* F16C is CPUID.1:ECX[29]; clang 14's __builtin_cpu_supports does not know "f16c". AVX2's
     * check already covers the OS saving the YMM state. */
    bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c)
        return INGOT__ISA_AVX2;
#endif
    return INGOT__ISA_SCALAR;
}

ingot__isa ingot__get_isa(void)
{
    int c = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (c < 0) {
        c = (int)ingot__cpu_isa();
        atomic_store_explicit(&chosen, c, memory_order_relaxed);
    }
    return (ingot__isa)c;
}

ingot__isa ingot__set_isa(ingot__isa isa)
{
    ingot__isa best = ingot__cpu_isa();
    if ((int)isa > (int)best) isa = best;
    atomic_store_explicit(&chosen, (int)isa, memory_order_relaxed);
    return isa;
}

const char *ingot__isa_name(ingot__isa isa)
{
    switch (isa) {
    case INGOT__ISA_AVX2: return "avx2";
    case INGOT__ISA_SCALAR: return "scalar";
    }
    return "?";
}
