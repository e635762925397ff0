/*
 * zip.h - read-only, hostile-input-safe zip container reader shared by the .npz and PyTorch
 * adapters. No inflate here (adapters that accept DEFLATE inflate with zlib themselves); CRC-32
 * (IEEE, zip's) is our own code. Rules: docs/formats/npy.md "The zip reader", and
 * ../shared/formats/pytorch.md §2.5.
 *
 * What it checks at ingot__zip_open (every number bounded by the bytes that exist before use):
 *   - End of central directory: searched backwards over at most 65535 + 22 bytes; its comment must
 *     end exactly at the end of the file (trailing bytes: BAD_LAYOUT). Multi-disk: UNSUPPORTED.
 *   - zip64: if the 20 bytes before the EOCD are a zip64 locator, the zip64 EOCD record must sit
 *     right before it (record size >= 44, disks 0, entries on disk == total); every classic EOCD
 *     field must equal its zip64 value or be the 0xFFFF/0xFFFFFFFF sentinel. Without a locator a
 *     sentinel in the classic EOCD is BAD_LAYOUT.
 *   - The central directory ends exactly where the end records start (no gap); entries <=
 *     cd_size / 46; the walk of exactly `entries` headers consumes the directory exactly.
 *   - Per entry: signature, name/extra/comment inside the directory, extra fields well formed,
 *     zip64 extra present with every field whose 32-bit value is the sentinel (uncompressed,
 *     compressed, local header offset, disk, in that order), disk 0, encryption flag (bit 0 or 6)
 *     -> UNSUPPORTED naming the member, stored members have compressed == uncompressed size,
 *     name non-empty, valid UTF-8 without NUL and without a trailing '/' unless the entry is an
 *     empty directory entry (flagged as such); duplicate names -> DUPLICATE.
 *   - Member extents: sorted by local header offset, [lho, lho + 30 + name_len + comp_size) of
 *     one member must end before the next member's local header (or the central directory): no
 *     overlap, BAD_LAYOUT. After the local header is read (ingot__zip_locate), the exact extent
 *     [lho, data_offset + comp_size) is held to the same bound.
 *   - Local header (ingot__zip_locate): signature, name bytes equal the central name, method
 *     equal; when flag bit 3 (data descriptor) is clear, CRC and sizes equal the central ones
 *     unless the local field holds the zip64 sentinel (the central directory is authoritative).
 *   - Methods other than 0 (stored) and 8 (deflate) are kept as is: the adapter reports them
 *     (ingot__zip_method_name gives the name for messages).
 *
 * Memory: one allocation for the entry table (count * sizeof(ingot__zip_entry)), one index of
 * count * 4 bytes, plus, when the source has no byte image (pread mode), a copy of the central
 * directory and a transient buffer for the EOCD search (<= 65557 + 76 bytes). Count is bounded by
 * cd_size / 46 and by limits->max_entries, so the total stays within about 1.6x the file size.
 * Every allocation goes through the allocator given to ingot__zip_open.
 *
 * Threads: an opened ingot__zip is read-only except for ingot__zip_locate, which writes the
 * entry it locates: locate in the adapter's open (single-threaded), read afterwards.
 *
 * Usage:
 *     ingot__zip z;
 *     ingot__zip_source src;
 *     ingot__zip_source_file(&src, f);                       // or a byte image: {base, size}
 *     ING_TRY(ingot__zip_open(&z, &src, &f->alloc, NULL, err));
 *     for (uint64_t i = 0; i < z.count; i++) {
 *         st = ingot__zip_locate(&z, i, err);                 // reads the local header
 *         ... z.entries[i].data_offset, .comp_size, .method ...
 *     }
 *     ingot__zip_close(&z);
 */
/* API stable */
#ifndef INGOT_ZIP_H
#define INGOT_ZIP_H

#include "deps.h"
#include "ingot/core.h"

struct ingot_file;

/* Where the archive bytes come from: a whole byte image (base != NULL), or a read callback
 * (pread mode; base == NULL). `read` copies [off, off+n) into dst; the reader only asks for
 * ranges inside [0, size). */
typedef struct ingot__zip_source {
    const uint8_t *base;
    uint64_t size;
    ingot_status (*read)(void *ctx, uint64_t off, void *dst, size_t n, ingot_error *err);
    void *ctx;
    /* With base set: structures of at most this many bytes (the end records, a central directory,
     * the local headers of ingot__zip_prefetch) are copied with `read` rather than read through
     * base, because base is a fresh mapping whose page faults cost more than a pread. 0: never. */
    uint64_t copy_max;
} ingot__zip_source;

/* Fills *src for an open ingot_file: its mapping/buffer when it has one, else pread. While a
 * mapped file is being opened, `read` is a real pread and copy_max INGOT__HEAD_COPY_MAX (see
 * file.h). The file must outlive the source. */
void ingot__zip_source_file(ingot__zip_source *src, const struct ingot_file *f);

/* Zip compression methods the adapters know. */
enum { INGOT__ZIP_STORED = 0, INGOT__ZIP_DEFLATE = 8 };

/* Entry flags (ingot__zip_entry.flags holds the general-purpose bit flags of the central
 * directory; these are ours, in .info). */
enum {
    INGOT__ZIP_ENTRY_LOCATED = 1u << 0, /* local header read and checked: data_offset valid */
    INGOT__ZIP_ENTRY_DIR = 1u << 1,     /* name ends in '/' and size 0: a directory entry */
    INGOT__ZIP_ENTRY_ZIP64 = 1u << 2,   /* the central entry carried a zip64 extra */
    INGOT__ZIP_ENTRY_DESCRIPTOR = 1u << 3, /* flag bit 3: sizes/CRC follow the data */
};

typedef struct ingot__zip_entry {
    const char *name;     /* borrowed: into the image or the reader's CD copy; NOT NUL-terminated */
    uint32_t name_len;    /* 1..65535 */
    uint16_t method;      /* 0 stored, 8 deflate, other: unsupported (reported by the adapter) */
    uint16_t flags;       /* general-purpose bit flags from the central directory */
    uint32_t crc32;       /* from the central directory (0 may mean "not computed": torch) */
    uint32_t info;        /* INGOT__ZIP_ENTRY_* */
    uint64_t comp_size;   /* bytes stored in the archive */
    uint64_t size;        /* uncompressed bytes */
    uint64_t lho;         /* offset of the local header */
    uint64_t data_offset; /* absolute offset of the member data; valid once LOCATED */
    uint64_t limit;       /* the member's extent must end at or before this offset */
    uint64_t cd_pos;      /* offset of its central directory header in the file */
} ingot__zip_entry;

/* Limits applied at open; NULL means the defaults below. */
typedef struct ingot__zip_limits {
    uint64_t max_entries;  /* default 1 << 24 (LIMIT beyond) */
    uint64_t max_cd_bytes; /* default 1 GiB (LIMIT beyond) */
} ingot__zip_limits;

typedef struct ingot__zip {
    ingot__zip_entry *entries; /* `count` entries in central directory order */
    uint64_t count;
    uint32_t *by_name;         /* entry indexes sorted by name (bytewise, shorter first on ties) */
    uint32_t *by_lho;          /* entry indexes sorted by local header offset */
    uint8_t *pf;               /* ingot__zip_prefetch: the windows, back to back */
    uint64_t *pf_at;           /* per entry: its window's start in pf; pf_len[i] bytes from lho */
    uint32_t *pf_len;
    size_t pf_size;
    uint64_t cd_offset, cd_size;
    uint64_t end_records;      /* offset of the first end record (zip64 EOCD or classic EOCD) */
    bool zip64;                /* zip64 end records present */
    const uint8_t *cd;         /* the central directory bytes (image or owned copy) */
    uint8_t *cd_owned;         /* owned copy in pread mode, else NULL */
    ingot__zip_source src;
    ingot_allocator alloc;
} ingot__zip;

/* Parses and validates the end records and the central directory (see the rules above). On
 * failure everything is freed and *z is zeroed. Errors name the member (where) and the offset:
 * TRUNCATED (file shorter than 22 bytes; a file that starts with a local header but has no end
 * record; a record past the end), BAD_MAGIC (no EOCD signature in the searched tail and no local
 * header at 0), BAD_LAYOUT (inconsistent offsets, sentinels, overlap, gaps, trailing bytes),
 * BAD_COUNT (entry count vs. directory size), BAD_NAME, DUPLICATE, UNSUPPORTED (multi-disk,
 * encryption), LIMIT, NOMEM. */
ingot_status ingot__zip_open(ingot__zip *z, const ingot__zip_source *src,
                             const ingot_allocator *alloc, const ingot__zip_limits *limits,
                             ingot_error *err);

/* Frees what ingot__zip_open allocated; a zeroed *z is a no-op. */
void ingot__zip_close(ingot__zip *z);

/* Reads and checks entry i's local header and sets data_offset (idempotent). BAD_MAGIC-free by
 * design: a wrong local signature, name or method, or an extent past `limit` is BAD_LAYOUT; a
 * header past the end is TRUNCATED. */
ingot_status ingot__zip_locate(ingot__zip *z, uint64_t i, ingot_error *err);

/* Reads, for every entry, the bytes [lho, lho + 30 + name length + 96 + data_prefix) (fewer
 * where the next member or the central directory starts sooner: the window never leaves the
 * member's extent) in one pass ordered by offset, with one read per run of windows that lie at
 * most 4 KiB apart (at most 64 KiB per read; zip.c says why 4 KiB). ingot__zip_locate and
 * ingot__zip_peek then take the bytes from there: no page fault per member on a fresh mapping,
 * no read per header in pread mode. A no-op when the source is a byte image without copy_max.
 * One allocation of at most the archive's size (the windows are disjoint) plus a 64 KiB
 * transient buffer. IO errors only. */
ingot_status ingot__zip_prefetch(ingot__zip *z, uint32_t data_prefix, ingot_error *err);

/* Bytes [off, off+n) of the archive from entry i's prefetched window, or from the image when the
 * source has one and nothing was prefetched; NULL when neither holds them (read them instead). */
const uint8_t *ingot__zip_peek(const ingot__zip *z, uint64_t i, uint64_t off, size_t n);

/* Entry index by exact name (bytes, no NUL needed). NOT_FOUND if absent. O(log n). */
ingot_status ingot__zip_find(const ingot__zip *z, const char *name, size_t len, uint64_t *index);

/* "stored", "deflate", "bzip2", "lzma", "zstd", "xz", "aes", ... or "unknown". Static. */
const char *ingot__zip_method_name(uint16_t method);

/* Zip's CRC-32 (IEEE 802.3, reflected, poly 0xEDB88320, init/final xor 0xFFFFFFFF), continuing
 * from crc (0 to start). ingot__crc32("123456789") == 0xCBF43926. Carry-less multiply folding on
 * x86-64 with PCLMULQDQ (chosen once from CPUID) for 256 bytes and more, else slicing-by-8
 * tables. */
uint32_t ingot__crc32(uint32_t crc, const void *buf, size_t n);
/* The slicing-by-8 code alone (tests compare the two; benchmarks). */
uint32_t ingot__crc32_table(uint32_t crc, const void *buf, size_t n);
/* True when ingot__crc32 uses PCLMULQDQ on this CPU. */
bool ingot__crc32_clmul(void);

/* Checks the CRC-32 of a located STORED entry against the central directory: straight from the
 * image under the SIGBUS guard (IO_FAULT if the file shrank), or through the read callback in
 * 64 KiB chunks (one transient allocation). BAD_CHECKSUM naming the member on mismatch. A CRC of
 * 0 with non-empty data is accepted as "not computed" only if accept_zero_crc is true (torch >= 2
 * may write such files). UNSUPPORTED for a member that is not stored (inflate it yourself). */
ingot_status ingot__zip_check_stored_crc(const ingot__zip *z, uint64_t i, bool accept_zero_crc,
                                         ingot_error *err);

#endif
