/* json.c - strict JSON scanner (placeholder). */
#include "json.h"

int ingot__json_placeholder(void);
int ingot__json_placeholder(void) { return 0; }
