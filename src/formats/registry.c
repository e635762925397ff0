/*
 * registry.c - the list of format adapters and the public entry points that need it. Adding a
 * format = one folder under src/formats/ plus one line in the list below (STYLE.md §12) and its
 * folder name in INGOT_FORMATS (CMakeLists.txt). Detection never depends on the order: every probe
 * scores the first bytes and the highest score wins.
 */
#include <string.h>

#include "error.h"
#include "file.h"
#include "ingot/ingot.h"
#include "native_formats.h"
#include "safetensors_format.h"
#include "gguf_format.h"
#include "npy_format.h"
#include "torch_format.h"
#include "burnpack_format.h"
#include "mag_format.h"
#include "tenzor_format.h"
#include "rmd1_format.h"
#include "llama2c_format.h"
#include "writer_impl.h"

static const ingot__format *const formats[] = {
    &ingot__format_native,
    &ingot__format_safetensors,
    &ingot__format_safetensors_index,
    &ingot__format_gguf,
    &ingot__format_gguf_split,
    &ingot__format_npy,
    &ingot__format_npz,
    &ingot__format_torch,
    &ingot__format_burnpack,
    &ingot__format_mag,
    &ingot__format_mag_snapshot,
    &ingot__format_tenzor,
    &ingot__format_rmd1,
    &ingot__format_llama2c,
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

/* Longest matching suffix wins (".safetensors.index.json" before ".json"). */
const char *ingot_writer_format_for_path(const char *path)
{
    if (!path) return NULL;
    size_t plen = strlen(path);
    const char *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; formats[i]; i++) {
        if (!formats[i]->writer || !formats[i]->extensions) continue;
        for (const char *const *e = formats[i]->extensions; *e; e++) {
            size_t elen = strlen(*e);
            if (elen + 1 > plen || elen <= best_len) continue;
            if (path[plen - elen - 1] == '.' && strcmp(path + plen - elen, *e) == 0) {
                best = formats[i]->name;
                best_len = elen;
            }
        }
    }
    return best;
}
