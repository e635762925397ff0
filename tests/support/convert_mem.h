/* convert_mem.h - test helper: every metadata entry and tensor of an open file written by a fresh
 * writer of another format into memory, through the public API only (what the CLI's convert does,
 * without the model-aware renames). */
#ifndef INGOT_TEST_CONVERT_MEM_H
#define INGOT_TEST_CONVERT_MEM_H

#include <stdbool.h>

#include "ingot/ingot.h"

/* Sets metadata entry m of f on w under the same key, type and value (arrays included). */
ingot_status test_copy_meta(ingot_writer *w, const ingot_file *f, const ingot_meta_info *m);

typedef struct {
    const char *format;  /* the writer's format name */
    uint32_t alignment;  /* 0: the format's default */
    bool pushed;         /* tensor data streamed by ingot_writer_write in f's order (as the CLI
                          * does) instead of given as pointers to add_tensor */
    ingot_notice_fn notice; /* optional: the writer's notices */
    void *notice_ctx;
} test_convert_opts;

/* Metadata in f's order, then tensors in f's order. *out / *n: the image from
 * ingot_writer_commit_mem (release with ingot_writer_free_mem(NULL, *out, *n)). */
ingot_status test_convert_mem(const ingot_file *f, const test_convert_opts *o, void **out,
                              size_t *n, ingot_error *e);

#endif
