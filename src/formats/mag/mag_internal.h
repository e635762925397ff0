/*
 * mag_internal.h - shared between the magnetron .mag reader (mag_read.c), writer (mag_write.c)
 * and helpers (mag_util.c). Two formats share the magic "MAG!": the storage archive (Format A,
 * versions 1 and 100) and the snapshot (Format B). Byte layouts: ../shared/formats/mag.md and
 * docs/formats/mag.md.
 */
#ifndef INGOT_MAG_INTERNAL_H
#define INGOT_MAG_INTERNAL_H

#include "order.h" /* ingot__bytes_cmp, ingot__index_sort */

#include "deps.h"
#include "ingot/core.h"
#include "writer_impl.h"

#define MAG_MAGIC "MAG!"
#define MAG_HDR_A 24u       /* storage archive header */
#define MAG_HDR_B 32u       /* snapshot header */
#define MAG_ALIGN_A 64u     /* storage data alignment (MAG_CPU_BUF_ALIGN) */
#define MAG_META_MIN 17u    /* smallest metadata record: 16 + a 1-byte key */
#define MAG_TENSOR_MIN 33u  /* smallest tensor record: 24 + 8 (rank 1) + a 1-byte key */
#define MAG_DESC_MIN 24u    /* smallest snapshot descriptor (rank 0) */
#define MAG_KEY_MAX 65535u
#define MAG_SNAP_RANK_LIMIT 64u /* snapshot: upstream writes rank <= 64, reads rank < 64 */
#define MAG_B_POOL_MAX (128u << 20) /* snapshot string blob limit of the reference reader */

/* dtype-code eras (spec §1.4, §7.3). */
enum { MAG_ERA_A1 = 1, MAG_ERA_A2 = 2, MAG_ERA_B = 3 };

/* ingot dtype for a code of an era, INGOT_DTYPE_INVALID if the era has no such code. */
ingot_dtype ingot__mag_dtype(int era, uint32_t code);
/* Code of an ingot dtype in an era, or -1. */
int ingot__mag_code(int era, ingot_dtype dt);
/* Number of codes of an era (the reference reader accepts codes below it). */
uint32_t ingot__mag_code_count(int era);

/* Low 64 bits of MurmurHash3_x86_128(key, seed 0): (h2 << 32) | h1 (magnetron's mag_hash). */
uint64_t ingot__mag_hash(const void *key, size_t len);

/* File order of n keys inserted in the given order into magnetron's open-addressing table
 * (32 slots, doubling before (count+1)*10 > slots*7, linear probing, emitted by ascending slot).
 * hashes[i] is the hash of the i-th inserted key; order[] receives indices into hashes. */
ingot_status ingot__mag_slot_order(const ingot_allocator *a, const uint64_t *hashes, size_t n,
                                   uint32_t *order);



extern const ingot__writer_ops ingot__writer_mag;
extern const ingot__writer_ops ingot__writer_mag_snapshot;

#endif
