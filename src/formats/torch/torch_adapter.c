/* torch_adapter.c - torch adapter (placeholder). */
#include "torch_format.h"

/* Placeholder until the adapter lands: never claims a file, has no writer. */
static int probe_torch(const uint8_t *head, size_t n)
{
    (void)head;
    (void)n;
    return 0;
}

const ingot__format ingot__format_torch = {
    .name = "torch",
    .probe = probe_torch,
};
