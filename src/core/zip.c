/* zip.c - zip container reader (placeholder). */
#include "zip.h"

int ingot__zip_placeholder(void);
int ingot__zip_placeholder(void) { return 0; }
