/* rmd1_adapter.c - rmd1 adapter (placeholder). */
#include "rmd1_format.h"

/* Placeholder until the adapter lands: never claims a file, has no writer. */
static int probe_rmd1(const uint8_t *head, size_t n)
{
    (void)head;
    (void)n;
    return 0;
}

const ingot__format ingot__format_rmd1 = {
    .name = "rmd1",
    .probe = probe_rmd1,
};
