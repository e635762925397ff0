/* files.h - test helpers for real files: one scratch folder per test process (mkdtemp, made on
 * first use, removed at exit when the test left it empty), paths in it, and reading a whole
 * file. */
#ifndef INGOT_TEST_FILES_H
#define INGOT_TEST_FILES_H

#include <stddef.h>

/* The folder: $TMPDIR/ingot-test-XXXXXX ($TMPDIR unset: /tmp), made on the first call of either
 * function; aborts when it cannot be made. */
const char *test_tmp_dir(void);

/* "<folder>/<name>" in a static buffer that the next call overwrites; aborts when it does not
 * fit. */
const char *test_tmp_path(const char *name);

/* The whole file at path in a malloc'd buffer of *n + 1 bytes, the last a NUL (so text files are
 * C strings); NULL when it cannot be opened or read (*n then 0). The caller frees it. n may be
 * NULL. */
void *test_read_file(const char *path, size_t *n);

#endif
