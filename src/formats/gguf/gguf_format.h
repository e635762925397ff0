/* gguf_format.h - what the gguf adapter exports to the registry (src/formats/registry.c). */
#ifndef INGOT_GGUF_FORMAT_H
#define INGOT_GGUF_FORMAT_H

#include "file.h"

extern const ingot__format ingot__format_gguf;
/* llama.cpp's split GGUF models opened as one (gguf_split.c). */
extern const ingot__format ingot__format_gguf_split;
/* GGUF v3 writer ops (gguf_write.c). */
extern const struct ingot__writer_ops ingot__writer_gguf;

#endif
