/*
 * isa.c - run-time ISA levels of the CPU kernels: what the CPU and the OS allow (CPUID, XCR0
 * through XGETBV, and on Linux the AMX tile-data permission asked for with arch_prctl), the cap
 * from the INGOT_ISA environment variable or ingot_cpu_isa_set_cap(), and the level in effect.
 * Feature bits: Intel SDM vol. 2A, CPUID leaf 1 and leaf 7 (sub-leaves 0 and 1).
 */
#define _DEFAULT_SOURCE /* syscall() */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "cpu/kernels/kernels.h"

static const char *const names[INGOT__ISA_COUNT] = {
#define INGOT_X_(n, v, s) [v] = s,
    INGOT_CPU_ISA_LIST(INGOT_X_)
#undef INGOT_X_
};

#if defined(__x86_64__) || defined(__i386__)
static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

/* Linux gives a process the AMX tile data state only once it asks (arch_prctl
 * ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA = 18, kernel 5.16+); until then a tile
 * instruction faults. Asked once per process; the grant is process-wide. */
static bool amx_permitted(void)
{
#if defined(__linux__) && defined(__x86_64__)
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18) == 0;
#else
    return false;
#endif
}

static unsigned probe(void)
{
    unsigned a, b, c, d, mask = 1u << INGOT__ISA_SCALAR;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return mask;
    bool fma = c >> 12 & 1, osxsave = c >> 27 & 1, avx = c >> 28 & 1, f16c = c >> 29 & 1;
    if (!osxsave || !avx || __get_cpuid_max(0, NULL) < 7) return mask;
    uint64_t xcr0 = xgetbv0();
    bool ymm_os = (xcr0 & 6) == 6, zmm_os = (xcr0 & 0xe6) == 0xe6;
    bool tile_os = (xcr0 & 0x60000) == 0x60000;
    unsigned b7, c7, d7, a71 = 0, t;
    __cpuid_count(7, 0, a, b7, c7, d7);
    unsigned max7 = a;
    if (max7 >= 1) __cpuid_count(7, 1, a71, t, t, t);
    bool avx2 = b7 >> 5 & 1, f = b7 >> 16 & 1, dq = b7 >> 17 & 1, bw = b7 >> 30 & 1;
    bool vl = b7 >> 31 & 1, vnni512 = c7 >> 11 & 1, amx_bf16 = d7 >> 22 & 1;
    bool amx_tile = d7 >> 24 & 1, amx_int8 = d7 >> 25 & 1;
    bool avx_vnni = a71 >> 4 & 1, bf16_512 = a71 >> 5 & 1;
    bool l_avx2 = ymm_os && avx2 && fma && f16c;
    bool l_512 = l_avx2 && zmm_os && f && dq && bw && vl;
    if (l_avx2) mask |= 1u << INGOT__ISA_AVX2;
    if (l_avx2 && avx_vnni) mask |= 1u << INGOT__ISA_AVX_VNNI;
    if (l_512) mask |= 1u << INGOT__ISA_AVX512;
    if (l_512 && vnni512) mask |= 1u << INGOT__ISA_AVX512_VNNI;
    if (l_512 && vnni512 && bf16_512 && tile_os && amx_tile && amx_int8 && amx_bf16 &&
        amx_permitted())
        mask |= 1u << INGOT__ISA_AMX;
    return mask;
}
#else
static unsigned probe(void) { return 1u << INGOT__ISA_SCALAR; }
#endif

bool ingot__cpu_vbmi(void)
{
#if defined(__x86_64__) || defined(__i386__)
    static atomic_int v = -1;
    int r = atomic_load_explicit(&v, memory_order_relaxed);
    if (r < 0) {
        unsigned a, b = 0, c = 0, d = 0;
        r = ingot__isa_supported(INGOT__ISA_AVX512) && __get_cpuid_max(0, NULL) >= 7;
        if (r) __cpuid_count(7, 0, a, b, c, d);
        r = r && (c >> 1 & 1); /* CPUID.7.0:ECX bit 1, AVX512_VBMI */
        atomic_store_explicit(&v, r, memory_order_relaxed);
    }
    return r;
#else
    return false;
#endif
}

/* The CPU's vendor and family (CPUID leaf 0 and 1), read once: 0 unknown, 1 Intel, 2 AMD with
 * family >= 0x1A (Zen 5), 3 other AMD. */
static int cpu_kind(void)
{
#if defined(__x86_64__) || defined(__i386__)
    static atomic_int v = -1;
    int r = atomic_load_explicit(&v, memory_order_relaxed);
    if (r < 0) {
        unsigned a, b = 0, c = 0, d = 0;
        r = 0;
        if (__get_cpuid(0, &a, &b, &c, &d)) {
            if (b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e) /* "GenuineIntel" */
                r = 1;
            else if (b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163) { /* "AuthenticAMD" */
                unsigned fam = 0;
                if (__get_cpuid(1, &a, &b, &c, &d)) {
                    fam = (a >> 8) & 15;
                    if (fam == 15) fam += (a >> 20) & 255;
                }
                r = fam >= 0x1A ? 2 : 3;
            }
        }
        atomic_store_explicit(&v, r, memory_order_relaxed);
    }
    return r;
#else
    return 0;
#endif
}

/* Software prefetch in the streaming kernels: on Intel it lifts the quantized GEMVs from about
 * 0.5-0.85 to 0.85-1.0 of the read rate (Xeon, one thread), on Zen 5 (AMD family 0x1A) the
 * quantized decode 1.2-1.7x; there the F16 / BF16 dots, reading four streams, ran 0.85-0.95x as
 * fast with it (ingot__cpu_prefetch_half); on the Zen 4 of issue 5 (its AVX2 kernels) it slowed
 * every kernel, so other CPUs go without (docs/PERFORMANCE.md). INGOT_PREFETCH=0|1 (read at
 * first use) sets both. [0] quantized, [1] F16 / BF16; -1 = not chosen yet. */
static atomic_int prefetch[2] = {-1, -1};

static bool prefetch_get(int half)
{
    int r = atomic_load_explicit(&prefetch[half], memory_order_relaxed);
    if (r < 0) {
        int k = cpu_kind();
        r = k == 1 || (k == 2 && !half);
        const char *env = getenv("INGOT_PREFETCH");
        if (env && (!strcmp(env, "0") || !strcmp(env, "1"))) r = env[0] == '1';
        atomic_store_explicit(&prefetch[half], r, memory_order_relaxed);
    }
    return r;
}

bool ingot__cpu_prefetch(void) { return prefetch_get(0); }
bool ingot__cpu_prefetch_half(void) { return prefetch_get(1); }

/* L2 size of one core (ingot__cpu_l2_bytes): 0 = not read yet, SIZE_MAX = not known. */
static atomic_size_t l2_cpu, l2_set;

static size_t l2_probe(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d, max = (unsigned)__get_cpuid_max(0, &b);
    bool intel = false;
    if (__get_cpuid(0, &a, &b, &c, &d))
        intel = b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e; /* "GenuineIntel" */
    /* Leaf 4 (Intel SDM vol. 2A, "Deterministic Cache Parameters"): one sub-leaf per cache;
     * EAX[4:0] type (0: no more, 1 data, 3 unified), EAX[7:5] level; size = ways x partitions x
     * line size x sets, from EBX[31:22], EBX[21:12], EBX[11:0] and ECX, each minus one. */
    if (intel && max >= 4)
        for (unsigned i = 0; i < 16; i++) {
            __cpuid_count(4, i, a, b, c, d);
            unsigned type = a & 31, level = a >> 5 & 7;
            if (type == 0) break;
            if (level == 2 && (type == 1 || type == 3))
                return (size_t)((b >> 22) + 1) * ((b >> 12 & 0x3ff) + 1) * ((b & 0xfff) + 1) *
                       ((size_t)c + 1);
        }
    /* Leaf 0x80000006 (AMD and Intel): ECX[31:16] the L2 size in KB. */
    if ((unsigned)__get_cpuid_max(0x80000000u, NULL) >= 0x80000006u &&
        __get_cpuid(0x80000006u, &a, &b, &c, &d) && c >> 16)
        return (size_t)(c >> 16) * 1024;
#endif
    return 0;
}

/* INGOT_L2_BYTES: digits, then an optional K or M (x 1024, x 1048576); 0 if absent or not that. */
static size_t l2_env(void)
{
    const char *e = getenv("INGOT_L2_BYTES");
    if (!e || *e < '0' || *e > '9') return 0;
    size_t v = 0;
    for (; *e >= '0' && *e <= '9'; e++) {
        if (v > SIZE_MAX / 16) return 0;
        v = v * 10 + (size_t)(*e - '0');
    }
    size_t mul = *e == 'K' ? 1024 : *e == 'M' ? 1048576 : 1;
    if (mul > 1) e++;
    if (*e || v > SIZE_MAX / mul) return 0;
    return v * mul;
}

size_t ingot__cpu_l2_bytes(void)
{
    size_t s = atomic_load_explicit(&l2_set, memory_order_relaxed);
    if (s) return s;
    s = atomic_load_explicit(&l2_cpu, memory_order_relaxed);
    if (!s) {
        s = l2_env();
        if (!s) s = l2_probe();
        if (!s) s = SIZE_MAX;
        atomic_store_explicit(&l2_cpu, s, memory_order_relaxed);
    }
    return s == SIZE_MAX ? 0 : s;
}

void ingot__set_l2_bytes(size_t bytes)
{
    atomic_store_explicit(&l2_set, bytes, memory_order_relaxed);
}

/* Read streams per one-row GEMV task: [0] the quantized dots (ingot__gemv_streams), [1] the
 * F16 / BF16 ones (ingot__gemv_streams_half); 0 = not chosen yet. */
static atomic_uint streams[2];

/* *slot once chosen, else def or the environment variable name when it holds one of the values
 * in allowed (0-terminated); a concurrent setter (ingot__set_*) wins. */
static unsigned choose_once(atomic_uint *slot, unsigned def, const char *name,
                            const unsigned *allowed)
{
    unsigned v = atomic_load_explicit(slot, memory_order_relaxed);
    if (v) return v;
    const char *env = getenv(name);
    char *end = NULL;
    unsigned long e = env ? strtoul(env, &end, 10) : 0;
    for (const unsigned *a = allowed; env && end != env && !*end && *a; a++)
        if (e == *a) def = *a;
    unsigned expect = 0;
    atomic_compare_exchange_strong(slot, &expect, def);
    return atomic_load_explicit(slot, memory_order_relaxed);
}

static unsigned streams_get(int half)
{
    static const unsigned allowed[] = {1, 2, 4, 8, 0};
    /* Intel: 4 for both; Zen 5: 1 for the quantized dots (4 read 0.6-0.9x as fast as 1) and 4
     * for F16 / BF16 (1.0-1.05 of the read rate, against 0.51-0.55 with one); elsewhere 1 */
    int k = cpu_kind();
    return choose_once(&streams[half], k == 1 || (k == 2 && half) ? 4 : 1, "INGOT_GEMV_STREAMS",
                       allowed);
}

unsigned ingot__gemv_streams(void) { return streams_get(0); }
unsigned ingot__gemv_streams_half(void) { return streams_get(1); }

unsigned ingot__set_gemv_streams(unsigned s)
{
    s = s >= 8 ? 8 : s >= 4 ? 4 : s >= 2 ? 2 : s; /* 0: back to the defaults */
    atomic_store_explicit(&streams[0], s, memory_order_relaxed);
    atomic_store_explicit(&streams[1], s, memory_order_relaxed);
    return s ? s : ingot__gemv_streams();
}

/* Rows the f32 GEMV reads together (ingot__sgemv_rows): 0 = not chosen yet. */
static atomic_uint sgemv_rows;

unsigned ingot__sgemv_rows(void)
{
    static const unsigned allowed[] = {1, 8, 16, 0};
    /* Zen 5: one row (one read stream) at a time; the F32 decode of the llama-bench model ran
     * 1.6-1.8x as fast as with eight or sixteen (docs/PERFORMANCE.md) */
    return choose_once(&sgemv_rows, cpu_kind() == 2 ? 1 : 16, "INGOT_SGEMV_ROWS", allowed);
}

unsigned ingot__set_sgemv_rows(unsigned r)
{
    r = r >= 16 ? 16 : r >= 8 ? 8 : r; /* 0: back to the default */
    atomic_store_explicit(&sgemv_rows, r, memory_order_relaxed);
    return r ? r : ingot__sgemv_rows();
}

static atomic_uint supported_mask; /* 0: not probed yet */
static atomic_int chosen = -1;     /* the level in effect; -1: not chosen yet */
static atomic_int env_state;       /* 0 unread, 1 unset or valid, 2 set to an unknown name */

static unsigned supported(void)
{
    unsigned m = atomic_load_explicit(&supported_mask, memory_order_relaxed);
    if (!m) {
        m = probe();
        atomic_store_explicit(&supported_mask, m, memory_order_relaxed);
    }
    return m;
}

bool ingot__isa_supported(ingot__isa isa)
{
    return (unsigned)isa < INGOT__ISA_COUNT && (supported() >> isa & 1);
}

/* The best supported level at or below cap (levels are not nested: a CPU may have AVX-512
 * without AVX-VNNI, whose level sits below it). */
static ingot__isa best_below(int cap)
{
    unsigned m = supported();
    if (cap >= INGOT__ISA_COUNT) cap = INGOT__ISA_COUNT - 1;
    for (int l = cap; l > 0; l--)
        if (m >> l & 1) return (ingot__isa)l;
    return INGOT__ISA_SCALAR;
}

ingot__isa ingot__cpu_isa(void) { return best_below(INGOT__ISA_COUNT - 1); }

ingot__isa ingot__get_isa(void)
{
    int c = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (c >= 0) return (ingot__isa)c;
    int cap = INGOT__ISA_COUNT - 1;
    const char *env = getenv("INGOT_ISA");
    int st = 1;
    if (env && *env) {
        int l = ingot__isa_from_name(env);
        if (l >= 0)
            cap = l;
        else
            st = 2;
    }
    atomic_store_explicit(&env_state, st, memory_order_relaxed);
    ingot__isa isa = best_below(cap);
    int expect = -1; /* a concurrent ingot__set_isa wins */
    atomic_compare_exchange_strong(&chosen, &expect, (int)isa);
    return (ingot__isa)atomic_load_explicit(&chosen, memory_order_relaxed);
}

ingot__isa ingot__set_isa(ingot__isa isa)
{
    ingot__isa l = best_below((int)isa < 0 ? 0 : (int)isa);
    atomic_store_explicit(&chosen, (int)l, memory_order_relaxed);
    return l;
}

void ingot__isa_reset(void) { atomic_store_explicit(&chosen, -1, memory_order_relaxed); }

bool ingot__isa_env_ignored(void)
{
    (void)ingot__get_isa();
    return atomic_load_explicit(&env_state, memory_order_relaxed) == 2;
}

const char *ingot__isa_name(ingot__isa isa)
{
    return (unsigned)isa < INGOT__ISA_COUNT ? names[isa] : "?";
}

int ingot__isa_from_name(const char *s)
{
    for (int l = 0; l < INGOT__ISA_COUNT; l++)
        if (strcmp(s, names[l]) == 0) return l;
    return -1;
}
