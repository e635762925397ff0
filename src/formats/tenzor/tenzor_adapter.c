/* tenzor_adapter.c - tenzor adapter (placeholder). */
#include "tenzor_format.h"

/* Placeholder until the adapter lands: never claims a file, has no writer. */
static int probe_tenzor(const uint8_t *head, size_t n)
{
    (void)head;
    (void)n;
    return 0;
}

const ingot__format ingot__format_tenzor = {
    .name = "tenzor",
    .probe = probe_tenzor,
};
