/* rmd1_format.h - what the rmd1 adapter exports to the registry (src/formats/registry.c), and the
 * pieces its reader (rmd1_adapter.c) and writer (rmd1_write.c) share. Spec:
 * ../shared/formats/rmd1.md; ingot's mapping: docs/formats/rmd1.md. */
#ifndef INGOT_RMD1_FORMAT_H
#define INGOT_RMD1_FORMAT_H

#include "file.h"

extern const ingot__format ingot__format_rmd1;
extern const ingot__writer_ops ingot__writer_rmd1;

/* Byte layout (all little-endian). */
#define RMD1_MAGIC "RMD1"
#define RMD1_HDR 20u    /* magic, u16 version, u8 dtype, u8 reserved, u32 L, u32 W, u32 B */
#define RMD1_REC 20u    /* u32 in, u32 out, u32 w_off, u32 b_off, u8 activation, 3 reserved */
#define RMD1_VERSION 1u
#define RMD1_ACT_COUNT 5u /* ids 0..4; 4 (softmax output) exists in the crate's 0.4 line only */

/* Lower-case activation name of an RMD1 id (NULL if the id is unknown), and the reverse (-1). */
const char *ingot__rmd1_act_name(uint32_t id);
int ingot__rmd1_act_id(const char *name, size_t len);

/* Parses "layers.<k>.weight" / "layers.<k>.bias" (k decimal, no leading zero, < 2^32): returns
 * true and sets *k and *is_bias. */
bool ingot__rmd1_parse_name(const char *name, size_t len, uint32_t *k, bool *is_bias);

#endif
