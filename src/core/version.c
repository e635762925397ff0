/* version.c - library version, to compare with the header's INGOT_VERSION_NUMBER. */
#include "ingot/core.h"

#define STR_(x) #x
#define STR(x) STR_(x)

unsigned ingot_version_number(void) { return INGOT_VERSION_NUMBER; }

const char *ingot_version_string(void)
{
    return STR(INGOT_VERSION_MAJOR) "." STR(INGOT_VERSION_MINOR) "." STR(INGOT_VERSION_PATCH);
}
