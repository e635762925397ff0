/* tmpdir.h - test helper: one scratch folder per test process (mkdtemp, made on first use,
 * removed at exit when the test left it empty) and paths of files in it. */
#ifndef INGOT_TEST_TMPDIR_H
#define INGOT_TEST_TMPDIR_H

/* The folder: $TMPDIR/ingot-test-XXXXXX ($TMPDIR unset: /tmp), made on the first call of either
 * function; aborts when it cannot be made. */
const char *test_tmp_dir(void);

/* "<folder>/<name>" in a static buffer that the next call overwrites; aborts when it does not
 * fit. */
const char *test_tmp_path(const char *name);

#endif
