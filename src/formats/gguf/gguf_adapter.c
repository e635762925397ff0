/* gguf_adapter.c - gguf adapter (placeholder). */
#include "gguf_format.h"

/* Placeholder until the adapter lands: never claims a file, has no writer. */
static int probe_gguf(const uint8_t *head, size_t n)
{
    (void)head;
    (void)n;
    return 0;
}

const ingot__format ingot__format_gguf = {
    .name = "gguf",
    .probe = probe_gguf,
};
