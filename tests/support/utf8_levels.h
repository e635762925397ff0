/*
 * utf8_levels.h - the distinct SIMD levels of the UTF-8 validator (src/core/utf8.c) this CPU
 * runs, for the tests that repeat a check at each of them (test_native_fast, test_native_packed,
 * test_open_fast). Header-only: each test program takes its copy.
 */
#ifndef INGOT_TEST_UTF8_LEVELS_H
#define INGOT_TEST_UTF8_LEVELS_H

#include "utf8.h"

static int levels[INGOT__UTF8_TOP + 1], n_levels;

/* Fills levels[0..n_levels) with the levels ingot__utf8_limit grants, then lifts the cap. */
static inline void find_levels(void)
{
    int last = -1;
    n_levels = 0;
    for (int l = 0; l <= INGOT__UTF8_TOP; l++) {
        int got = ingot__utf8_limit(l);
        if (got != last) levels[n_levels++] = got;
        last = got;
    }
    ingot__utf8_limit(INGOT__UTF8_TOP);
}

#endif
