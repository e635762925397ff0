/* cmd_bench.c - `ingot bench` (placeholder until the backend lands). */
#include <stdio.h>

#include "cli.h"

int ingot_cli_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "ingot bench: no benchmarks in this build\n");
    return 2;
}
