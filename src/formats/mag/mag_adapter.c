/* mag_adapter.c - mag adapter (placeholder). */
#include "mag_format.h"

/* Placeholder until the adapter lands: never claims a file, has no writer. */
static int probe_mag(const uint8_t *head, size_t n)
{
    (void)head;
    (void)n;
    return 0;
}

const ingot__format ingot__format_mag = {
    .name = "mag",
    .probe = probe_mag,
};

/* Placeholder until the adapter lands: never claims a file, has no writer. */
static int probe_mag_snapshot(const uint8_t *head, size_t n)
{
    (void)head;
    (void)n;
    return 0;
}

const ingot__format ingot__format_mag_snapshot = {
    .name = "mag-snapshot",
    .probe = probe_mag_snapshot,
};
