/* files.c - the per-process scratch folder of tests that write real files, and whole-file reads
 * (files.h). */
#include "files.h"

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

void *test_read_file(const char *path, size_t *n)
{
    if (n) *n = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    long len = -1;
    if (fseek(fp, 0, SEEK_END) == 0) len = ftell(fp);
    char *p = len >= 0 && fseek(fp, 0, SEEK_SET) == 0 ? malloc((size_t)len + 1) : NULL;
    if (p && fread(p, 1, (size_t)len, fp) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(fp);
    if (!p) return NULL;
    p[len] = 0;
    if (n) *n = (size_t)len;
    return p;
}
