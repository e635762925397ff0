/* test_crc32c_large.c - the one-call CRC-32C paths over real buffers of 2-8.6 GB at every dispatch
 * level, against a chunked reference (ctest label "large"). The buffer costs 64 MiB of memory: one
 * memfd of pseudo-random bytes mapped again and again, back to back, into one reserved range, so
 * the reference is the bitwise CRC of one slot joined with the matrix shift of tests/crc32c_ref.h.
 * The three-stream and four-stream paths shift by n/3 and about n/8 bytes inside one call. */
#define _GNU_SOURCE /* memfd_create, MAP_ANONYMOUS, MAP_NORESERVE */
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "crc32c_ref.h"
#include "harness.h"

/* The slot is not a power of two, so no stream boundary of the paths under test lines up with the
 * repetition of the data. */
#define SLOT ((size_t)(64u << 20) + 3 * 4096)

static uint8_t *slot_data; /* the memfd's bytes, mapped once more on their own */
static uint8_t *big;       /* nslots copies of them, back to back */
static size_t big_len;
static uint32_t crc_slot; /* CRC-32C of one whole slot */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Maps the memfd nslots times into one reserved range; NULL plus a message on failure. */
static const char *map_big(size_t nslots)
{
    int fd = memfd_create("ingot-crc32c-large", 0);
    if (fd < 0) return "memfd_create failed";
    const char *err = NULL;
    if (ftruncate(fd, (off_t)SLOT) != 0) {
        err = "ftruncate of the memfd failed";
        goto out;
    }
    slot_data = mmap(NULL, SLOT, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (slot_data == MAP_FAILED) {
        slot_data = NULL;
        err = "mapping the memfd failed";
        goto out;
    }
    uint64_t x = 0x243F6A8885A308D3ull;
    for (size_t i = 0; i < SLOT; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(slot_data + i, &x, 8);
    }
    big_len = nslots * SLOT;
    void *r = mmap(NULL, big_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) {
        err = "reserving the address range failed";
        goto out;
    }
    big = r;
    for (size_t s = 0; s < nslots; s++)
        if (mmap(big + s * SLOT, SLOT, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
            err = "mapping a slot failed";
            goto out;
        }
out:
    close(fd);
    return err;
}

/* CRC-32C of big[off, off + n) from crc, without a one-call pass over it: the CRC of the piece of
 * the first slot, then whole slots joined with the matrix reference, then the start of the last. */
static uint32_t reference(uint32_t crc, size_t off, size_t n)
{
    size_t in = off % SLOT, first = SLOT - in < n ? SLOT - in : n;
    crc = ingot__crc32c_sw(crc, slot_data + in, first);
    n -= first;
    for (; n >= SLOT; n -= SLOT) crc = ref_combine(crc, crc_slot, SLOT);
    return ingot__crc32c_sw(crc, slot_data, n);
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* The levels (bit L: level L) that run a span: all in a plain build (~12 s here); in the ASan
 * build (-O0 and instrumented: 10-25x slower) only the length at the three levels with
 * internal shifts (~40 s here; the sequential portable code alone would take ~80 s). */
#define LEVELS(plain, asan) (UNDER_ASAN ? (asan) : (plain))

typedef struct {
    size_t off, n;
    uint32_t init;
    unsigned levels;
} span;

/* Lengths that straddle 2^31, the 4.6 GB (n/8 > 2^29 in the four-stream loop; n/3 > 2^30
 * in the three-stream code) and 2^33 (n/8 > 2^30, n/3 > 2^31), at odd offsets, from various CRCs.
 * The portable code has no internal shift: one span checks it for a truncated length; the zmm
 * folding (level 4) has none either, but it runs every span (it is the default where it exists). */
static const span spans[] = {
    {4093, ((size_t)1 << 31) + 1, 0, LEVELS(0x1E, 0x0)},
    {5, 4600000000u, 0x8BADF00Du, LEVELS(0x1F, 0x1E)},
    {SLOT - 1001, ((size_t)1 << 33) + 12345, 0xFFFFFFFFu, LEVELS(0x1E, 0x0)},
};

TEST(test_crc32c_large_one_call)
{
    ASSERT_TRUE(sizeof(size_t) >= 8);
    size_t need = 0;
    for (size_t i = 0; i < sizeof spans / sizeof spans[0]; i++)
        if (spans[i].levels && spans[i].off + spans[i].n > need) need = spans[i].off + spans[i].n;
    const char *err = map_big((need + SLOT - 1) / SLOT);
    if (err) FAIL_AT("%s", err);
    double t0 = now_s();
    crc_slot = crc_bitwise(0, slot_data, SLOT);
    ASSERT_EQ(ingot__crc32c_sw(0, slot_data, SLOT), crc_slot);
    /* The mapping really repeats the slot, and the reference agrees with a direct pass where one
     * is cheap: two whole slots and a piece across a slot boundary. */
    ASSERT_MEM(big + 7 * SLOT, slot_data, SLOT);
    ASSERT_EQ(reference(0, SLOT - 4000, SLOT + 9000),
              ingot__crc32c_sw(0, big + SLOT - 4000, SLOT + 9000));
    fprintf(stderr, "  reference: %.1f s\n", now_s() - t0);

    int top = ingot__crc32c_limit(INGOT__CRC32C_TOP);
    for (int level = INGOT__CRC32C_TOP; level >= 0; level--) {
        int got_level = ingot__crc32c_limit(level);
        ASSERT_EQ(got_level, level < top ? level : top);
        for (size_t i = 0; i < sizeof spans / sizeof spans[0]; i++) {
            const span *s = &spans[i];
            if (!(s->levels >> level & 1)) continue;
            uint32_t want = reference(s->init, s->off, s->n);
            double t = now_s();
            uint32_t got = ingot_crc32c(s->init, big + s->off, s->n);
            double dt = now_s() - t;
            fprintf(stderr, "  level %d (in force %d), %zu bytes: %.2f s\n", level, got_level, s->n,
                    dt);
            CHECK(got == want, "level %d: ingot_crc32c over %zu bytes at offset %zu from 0x%08x: "
                  "0x%08x, want 0x%08x", got_level, s->n, s->off, s->init, got, want);
            if (level == 3 && i == 1 && !UNDER_ASAN) {
                /* The other entry points of the top level: folding alone, the three-stream crc32
                 * code (the level-2 path, also taken by ingot__crc32c_sse42) and the stream
                 * variant (the four-stream loop, as verify calls it). */
                uint32_t f = ingot__crc32c_fold(s->init, big + s->off, s->n);
                uint32_t st = ingot__crc32c_stream(s->init, big + s->off, s->n);
                CHECK(f == want && st == want,
                      "level %d over %zu bytes: fold 0x%08x, stream 0x%08x, want 0x%08x", got_level,
                      s->n, f, st, want);
            }
        }
    }
    ingot__crc32c_limit(INGOT__CRC32C_TOP);
    fprintf(stderr, "  total: %.1f s\n", now_s() - t0);
    munmap(big, big_len);
    munmap(slot_data, SLOT);
}

RUN_TESTS(T(test_crc32c_large_one_call))
