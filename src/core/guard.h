/*
 * guard.h - run a bulk read of mapped memory so that SIGBUS (file truncated under the mapping)
 * becomes INGOT_IO_FAULT instead of killing the process (RELIABILITY.md §4).
 */
#ifndef INGOT_GUARD_H
#define INGOT_GUARD_H

#include "ingot/core.h"

typedef ingot_status (*ingot__guarded_fn)(void *arg);

/* Calls fn(arg) under a per-thread sigsetjmp guard. Returns fn's status, or INGOT_IO_FAULT if a
 * SIGBUS was raised inside. Nested guards are supported. fn must not hold locks or allocate (it may
 * be abandoned midway). */
ingot_status ingot__guard(ingot__guarded_fn fn, void *arg);

#endif
