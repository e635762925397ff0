/*
 * test_order.c - the shared index orderings of src/core/order.c that every format adapter's name
 * and key index uses: the stable sort, the sort with its uniqueness check, and the binary search
 * of a sorted index, each against a brute-force answer worked out here (memcmp order, a proper
 * prefix first) on seeded random names with shared prefixes, empty names and duplicates.
 */
#include "harness.h"
#include "order.h"

enum { MAXN = 300, MAXLEN = 12 };

typedef struct {
    char name[MAXN][MAXLEN];
    size_t len[MAXN];
    size_t n;
} table;

static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

/* Names over a three-letter alphabet (plus a byte above 0x7f), so prefixes and repeats abound. */
static void random_name(char *s, size_t *len)
{
    static const char alpha[] = {'a', 'b', 'c', (char)0xe9};
    *len = rnd() % (MAXLEN - 1);
    for (size_t k = 0; k < *len; k++) s[k] = alpha[rnd() % 4];
}

static const void *key_of(const void *ctx, uint32_t i, size_t *len)
{
    const table *t = ctx;
    *len = t->len[i];
    return t->name[i];
}

static int cmp_of(const void *ctx, uint32_t a, uint32_t b)
{
    const table *t = ctx;
    return ingot__bytes_cmp(t->name[a], t->len[a], t->name[b], t->len[b]);
}

/* memcmp order with a proper prefix first, written out byte by byte. */
static int brute_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    for (size_t k = 0; k < al && k < bl; k++)
        if (a[k] != b[k]) return (unsigned char)a[k] < (unsigned char)b[k] ? -1 : 1;
    return al < bl ? -1 : al > bl ? 1 : 0;
}

TEST(sort_is_stable_and_ordered)
{
    static table t;
    static uint32_t v[MAXN], tmp[MAXN];
    for (int round = 0; round < 200; round++) {
        rng_state = 1000 + (uint64_t)round;
        t.n = rnd() % MAXN;
        for (size_t i = 0; i < t.n; i++) random_name(t.name[i], &t.len[i]);
        for (size_t i = 0; i < t.n; i++) v[i] = (uint32_t)i;
        ingot__index_sort(v, tmp, t.n, cmp_of, &t);
        bool seen[MAXN] = {0};
        for (size_t i = 0; i < t.n; i++) {
            CHECK(v[i] < t.n && !seen[v[i]], "round %d: v[%zu] = %u is not a permutation", round,
                  i, v[i]);
            if (v[i] < t.n) seen[v[i]] = true;
        }
        for (size_t i = 1; i < t.n; i++) {
            int c = brute_cmp(t.name[v[i - 1]], t.len[v[i - 1]], t.name[v[i]], t.len[v[i]]);
            CHECK(c < 0 || (c == 0 && v[i - 1] < v[i]), "round %d: positions %zu, %zu out of order",
                  round, i - 1, i);
        }
    }
}

TEST(sort_unique_finds_every_duplicate)
{
    static table t;
    static uint32_t v[MAXN], tmp[MAXN];
    int with_dup = 0, without = 0;
    for (int round = 0; round < 400; round++) {
        rng_state = 5000 + (uint64_t)round;
        t.n = rnd() % 40;
        for (size_t i = 0; i < t.n; i++) random_name(t.name[i], &t.len[i]);
        bool dup = false;
        for (size_t i = 0; i < t.n; i++)
            for (size_t j = i + 1; j < t.n; j++)
                if (brute_cmp(t.name[i], t.len[i], t.name[j], t.len[j]) == 0) dup = true;
        for (size_t i = 0; i < t.n; i++) v[i] = (uint32_t)i;
        bool unique = ingot__index_sort_unique(v, tmp, t.n, cmp_of, &t);
        CHECK(unique == !dup, "round %d (%zu names): unique %d, duplicates %d", round, t.n, unique,
              dup);
        if (unique)
            for (size_t i = 1; i < t.n; i++)
                CHECK(cmp_of(&t, v[i - 1], v[i]) < 0, "round %d: not strictly increasing at %zu",
                      round, i);
        dup ? with_dup++ : without++;
    }
    CHECK(with_dup > 50 && without > 50, "cases: %d with duplicates, %d without", with_dup,
          without);
}

TEST(find_agrees_with_a_linear_scan)
{
    static table t;
    static uint32_t v[MAXN], tmp[MAXN];
    int found = 0, missing = 0;
    for (int round = 0; round < 200; round++) {
        rng_state = 9000 + (uint64_t)round;
        /* Unique names: draw, then drop repeats. */
        size_t want = rnd() % MAXN;
        t.n = 0;
        for (size_t tries = 0; t.n < want && tries < 4 * MAXN; tries++) {
            random_name(t.name[t.n], &t.len[t.n]);
            bool rep = false;
            for (size_t j = 0; j < t.n; j++)
                if (brute_cmp(t.name[j], t.len[j], t.name[t.n], t.len[t.n]) == 0) rep = true;
            if (!rep) t.n++;
        }
        for (size_t i = 0; i < t.n; i++) v[i] = (uint32_t)i;
        CHECK(ingot__index_sort_unique(v, tmp, t.n, cmp_of, &t), "round %d: not unique", round);
        for (int q = 0; q < 200; q++) {
            char key[MAXLEN];
            size_t len;
            random_name(key, &len);
            size_t expect = SIZE_MAX;
            for (size_t j = 0; j < t.n; j++)
                if (brute_cmp(t.name[j], t.len[j], key, len) == 0) expect = j;
            uint32_t got = UINT32_MAX;
            bool hit = ingot__index_find(v, t.n, key_of, &t, key, len, &got);
            if (expect == SIZE_MAX) {
                CHECK(!hit && got == UINT32_MAX, "round %d: absent key found as %u", round, got);
                missing++;
            } else {
                CHECK(hit && got == expect, "round %d: key of entry %zu found as %u (hit %d)",
                      round, expect, got, hit);
                found++;
            }
        }
        for (size_t j = 0; j < t.n; j++) { /* every entry by its own name */
            uint32_t got = UINT32_MAX;
            CHECK(ingot__index_find(v, t.n, key_of, &t, t.name[j], t.len[j], &got) && got == j,
                  "round %d: entry %zu found as %u", round, j, got);
        }
    }
    CHECK(found > 1000 && missing > 1000, "queries: %d found, %d missing", found, missing);
}

TEST(find_in_an_empty_index)
{
    uint32_t got = 7;
    CHECK(!ingot__index_find(NULL, 0, key_of, NULL, "a", 1, &got) && got == 7,
          "empty index: found, or *entry changed to %u", got);
}

RUN_TESTS(T(sort_is_stable_and_ordered), T(sort_unique_finds_every_duplicate),
          T(find_agrees_with_a_linear_scan), T(find_in_an_empty_index))
