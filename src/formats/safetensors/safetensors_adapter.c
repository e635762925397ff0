/* safetensors_adapter.c - safetensors adapter (placeholder). */
#include "safetensors_format.h"

/* Placeholder until the adapter lands: never claims a file, has no writer. */
static int probe_safetensors(const uint8_t *head, size_t n)
{
    (void)head;
    (void)n;
    return 0;
}

const ingot__format ingot__format_safetensors = {
    .name = "safetensors",
    .probe = probe_safetensors,
};

/* Placeholder until the adapter lands: never claims a file, has no writer. */
static int probe_safetensors_index(const uint8_t *head, size_t n)
{
    (void)head;
    (void)n;
    return 0;
}

const ingot__format ingot__format_safetensors_index = {
    .name = "safetensors-index",
    .probe = probe_safetensors_index,
};
