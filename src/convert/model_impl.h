/* model_impl.h - what the model-aware converters (model_to_gguf.c, model_to_hf.c) share:
 * row permutation and transposition of dense tensors, reading a tensor, small JSON and text
 * file helpers (model_util.c). */
#ifndef INGOT_MODEL_IMPL_H
#define INGOT_MODEL_IMPL_H

#include "ingot/convert.h"
#include "ingot/lm.h"
#include "ingot/tokenizer.h"

/* Reorders the `rows` rows (row_bytes each) of src into dst for llama.cpp's q/k permutation
 * with `heads` heads: HF -> GGUF (W.reshape(h, 2, n/2h, ...).swapaxes(1, 2)), or the inverse. */
void ingot__model_permute(const void *src, void *dst, uint64_t rows, uint64_t row_bytes,
                          uint32_t heads, bool inverse);
/* dst[c][r] = src[r][c] for elements of es bytes. */
void ingot__model_transpose(const void *src, void *dst, uint64_t r, uint64_t c, size_t es);

/* Tensor i of f as dense C-order little-endian bytes into a new buffer of *n bytes (free with
 * ingot__free(NULL, p, *n ? *n : 1)). */
ingot_status ingot__model_read(const ingot_file *f, uint64_t i, void **out, size_t *n,
                               ingot_error *err);

/* Reads a small file whole (at most 64 MiB) into an allocation of *n + 1 bytes (NUL added). */
ingot_status ingot__model_slurp(const char *path, char **out, size_t *n, ingot_error *err);
/* Writes text to path atomically (temporary, fsync unless no_fsync, rename). */
ingot_status ingot__model_write_text(const char *path, const char *text, size_t n, bool no_fsync,
                                     ingot_error *err);
/* The string value of top-level key `key` of a JSON object into buf (cap bytes, NUL-terminated):
 * true if present and a string that fits. */
bool ingot__model_json_string(const char *json, size_t n, const char *key, char *buf, size_t cap);
/* Whether top-level key `key` is present (any value but null). */
bool ingot__model_json_has(const char *json, size_t n, const char *key);
/* The shortest decimal that reads back as the float v (f32: as a float) into buf. */
void ingot__model_fmt_float(char *buf, size_t cap, double v, bool f32);

/* "dir/name" into buf; false if it does not fit. */
bool ingot__model_path(char *buf, size_t cap, const char *dir, const char *name);

#endif
