/* npy_adapter.c - npy adapter (placeholder). */
#include "npy_format.h"

/* Placeholder until the adapter lands: never claims a file, has no writer. */
static int probe_npy(const uint8_t *head, size_t n)
{
    (void)head;
    (void)n;
    return 0;
}

const ingot__format ingot__format_npy = {
    .name = "npy",
    .probe = probe_npy,
};

/* Placeholder until the adapter lands: never claims a file, has no writer. */
static int probe_npz(const uint8_t *head, size_t n)
{
    (void)head;
    (void)n;
    return 0;
}

const ingot__format ingot__format_npz = {
    .name = "npz",
    .probe = probe_npz,
};
