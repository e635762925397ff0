/*
 * registry.c - the list of format adapters and the public entry points that need it. Adding a
 * format = one folder under src/formats/ plus one line in each list below (STYLE.md §12).
 * Order: most distinctive magic first.
 */
#include <string.h>

#include "error.h"
#include "file.h"
#include "ingot/ingot.h"
#include "native_formats.h"
#include "writer_impl.h"

static const ingot__format *const formats[] = {
    &ingot__format_native,
    NULL,
};

ingot_status ingot_file_open(const char *path, const ingot_open_opts *opts, ingot_file **out,
                             ingot_error *err)
{
    return ingot__file_open_path(formats, path, opts, out, err);
}

ingot_status ingot_file_open_buffer(const void *buf, size_t size, const ingot_open_opts *opts,
                                    ingot_file **out, ingot_error *err)
{
    return ingot__file_open_buffer(formats, buf, size, opts, out, err);
}

ingot_status ingot_writer_new(const ingot_writer_opts *opts, ingot_writer **out, ingot_error *err)
{
    const char *name = opts && opts->format ? opts->format : "ingot";
    for (size_t i = 0; formats[i]; i++)
        if (strcmp(formats[i]->name, name) == 0 && formats[i]->writer)
            return ingot__writer_create(formats[i]->writer, opts, out, err);
    if (out) *out = NULL;
    return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, name, strlen(name),
                      "no writer for this format");
}
