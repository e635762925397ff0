/* cmd_run.c - `ingot run` (placeholder until the MLP runtime lands). */
#include <stdio.h>

#include "cli.h"

int ingot_cli_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "ingot run: no runtime in this build\n");
    return 2;
}
