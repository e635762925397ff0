/* burnpack_adapter.c - burnpack adapter (placeholder). */
#include "burnpack_format.h"

/* Placeholder until the adapter lands: never claims a file, has no writer. */
static int probe_burnpack(const uint8_t *head, size_t n)
{
    (void)head;
    (void)n;
    return 0;
}

const ingot__format ingot__format_burnpack = {
    .name = "burnpack",
    .probe = probe_burnpack,
};
