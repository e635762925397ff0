/* tmpdir.c - the per-process scratch folder of tests that write real files (tmpdir.h). */
#include "tmpdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[512];

static void remove_if_empty(void) { rmdir(dir); }

const char *test_tmp_dir(void)
{
    if (!dir[0]) {
        const char *base = getenv("TMPDIR");
        int n = snprintf(dir, sizeof dir, "%s/ingot-test-XXXXXX", base && base[0] ? base : "/tmp");
        if (n < 0 || (size_t)n >= sizeof dir || !mkdtemp(dir)) abort();
        atexit(remove_if_empty);
    }
    return dir;
}

const char *test_tmp_path(const char *name)
{
    static char buf[1024];
    int n = snprintf(buf, sizeof buf, "%s/%s", test_tmp_dir(), name);
    if (n < 0 || (size_t)n >= sizeof buf) abort();
    return buf;
}
