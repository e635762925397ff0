/*
 * harness.h - minimal test harness: each test_*.c holds TEST(name) functions registered in a
 * RUN_TESTS list; ASSERT_* print both sides and the location, then fail the current test.
 */
#ifndef INGOT_TEST_HARNESS_H
#define INGOT_TEST_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingot/ingot.h"

static int harness_failed;
static const char *harness_current;

#define FAIL_AT(...)                                                                               \
    do {                                                                                           \
        fprintf(stderr, "  FAIL %s (%s:%d): ", harness_current, __FILE__, __LINE__);               \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        harness_failed++;                                                                          \
        return;                                                                                    \
    } while (0)

/* Non-fatal: reports the failure and carries on, so a loop over many cases reports every bad
 * one. A test file may #undef it and define its own. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "  FAIL %s (%s:%d): ", harness_current, __FILE__, __LINE__);           \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            harness_failed++;                                                                      \
        }                                                                                          \
    } while (0)

#define ASSERT_TRUE(c)                                                                             \
    do {                                                                                           \
        if (!(c)) FAIL_AT("expected true: %s", #c);                                                \
    } while (0)

#define ASSERT_EQ(a, b)                                                                            \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) FAIL_AT("%s == %s: %lld != %lld", #a, #b, a_, b_);                           \
    } while (0)

#define ASSERT_U64(a, b)                                                                           \
    do {                                                                                           \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                           \
        if (a_ != b_) FAIL_AT("%s == %s: %" PRIu64 " != %" PRIu64, #a, #b, a_, b_);                \
    } while (0)

#define ASSERT_STR(a, b)                                                                           \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                                     \
            FAIL_AT("%s == %s: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
    } while (0)

#define ASSERT_MEM(a, b, n)                                                                        \
    do {                                                                                           \
        if (memcmp((a), (b), (n)) != 0) FAIL_AT("%s and %s differ in %zu bytes", #a, #b, (size_t)(n)); \
    } while (0)

/* Asserts a status, printing names and the error detail on mismatch. */
#define ASSERT_ST(expr, want)                                                                      \
    do {                                                                                           \
        ingot_status got_ = (expr);                                                                \
        if (got_ != (want))                                                                        \
            FAIL_AT("%s: got %s, want %s", #expr, ingot_status_name(got_), ingot_status_name(want)); \
    } while (0)

#define ASSERT_OK(expr) ASSERT_ST(expr, INGOT_OK)

typedef void (*test_fn)(void);
typedef struct {
    const char *name;
    test_fn fn;
} test_case;

#define TEST(name) static void name(void)
#define T(name) {#name, name}

static inline int harness_run(const test_case *cases, size_t n, int argc, char **argv)
{
    int ran = 0;
    for (size_t i = 0; i < n; i++) {
        if (argc > 1 && !strstr(cases[i].name, argv[1])) continue;
        harness_current = cases[i].name;
        int before = harness_failed;
        cases[i].fn();
        ran++;
        fprintf(stderr, "%s %s\n", harness_failed == before ? "ok  " : "FAIL", cases[i].name);
    }
    fprintf(stderr, "%d tests, %d failed\n", ran, harness_failed);
    if (ran == 0) return 1; /* a run that tested nothing is a failure */
    return harness_failed ? 1 : 0;
}

#define RUN_TESTS(...)                                                                             \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        static const test_case cases_[] = {__VA_ARGS__};                                           \
        return harness_run(cases_, sizeof cases_ / sizeof cases_[0], argc, argv);                  \
    }

#endif
