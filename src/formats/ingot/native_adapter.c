/*
 * native_adapter.c - plugs the freestanding .ingot reader (native_read.c) into ingot_file: gives it
 * the header region (a pread copy when the file is mapped, the caller's buffer, or the pread-mode
 * head), points tensor data into the mapping, and forwards the queries.
 */
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "file.h"
#include "ingot/native.h"
#include "native_formats.h"
#include "native_layout.h"

typedef struct {
    _Alignas(8) unsigned char ws[INGOT_NATIVE_WORKSPACE];
    ingot_native *r;
    const uint8_t *head;
    uint64_t head_len;
} state;

#define R(f) (((const state *)(f)->state)->r)

static int probe(const uint8_t *head, size_t n)
{
    return n >= ING_MAGIC_LEN && memcmp(head, ING_MAGIC, ING_MAGIC_LEN) == 0 ? 100 : 0;
}

static ingot_status open_native(ingot_file *f, ingot_error *err)
{
    const uint8_t *head;
    uint64_t need;
    uint64_t fixed = f->size < ING_HDR_SIZE ? f->size : ING_HDR_SIZE;
    ING_TRY(ingot__file_head_copy(f, fixed, &head, err));
    ING_TRY(ingot_native_header_size(head, (size_t)fixed, &need, err));
    /* If the data offset lies beyond the file, hand over what there is and let the reader name
     * the first inconsistent field, exactly as it does for a buffer. */
    uint64_t avail = need > f->size ? f->size : need;
    /* The header region only, read in one go: by pread into a private copy when the file was
     * mapped (no page faults on the fresh mapping; tensor data pointers then come from f->base),
     * else from the caller's buffer or the pread-mode head. */
    ING_TRY(ingot__file_head_copy(f, avail, &head, err));
    if (f->base && head == f->base) avail = f->size; /* the data is addressable too */
    state *s = ingot__alloc(&f->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the reader");
    uint32_t flags = f->opts.verify == INGOT_VERIFY_NONE ? INGOT_NATIVE_SKIP_HEADER_CRC : 0;
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    flags |= INGOT_NATIVE_SKIP_HEADER_CRC; /* let the fuzzer reach past the checksum */
#endif
    ingot_status st = ingot_native_open(s->ws, sizeof s->ws, head, (size_t)avail, f->size, flags,
                                        &s->r, err);
    if (st != INGOT_OK) {
        ingot__free(&f->alloc, s, sizeof *s);
        return st;
    }
    s->head = head;
    s->head_len = avail;
    f->state = s;
    f->alignment = ingot_native_alignment(s->r);
    ingot__fmt(f->version, sizeof f->version, "1.%u", ingot_native_version_minor(s->r));
    return INGOT_OK;
}

static void close_native(ingot_file *f)
{
    ingot__free(&f->alloc, f->state, sizeof(state));
    f->state = NULL;
}

static uint64_t tensor_count(const ingot_file *f) { return ingot_native_tensor_count(R(f)); }

/* With the header in a private copy, the reader sees only that and marks data NOT_MAPPED: point
 * it into the mapping (or the caller's buffer, where it already points). */
static ingot_status with_data(const ingot_file *f, ingot_status st, ingot_tensor_info *out)
{
    if (st == INGOT_OK && f->base) {
        out->data = f->base + out->offset;
        out->flags &= ~(uint32_t)INGOT_TENSOR_NOT_MAPPED;
    }
    return st;
}

static ingot_status tensor_at(const ingot_file *f, uint64_t i, ingot_tensor_info *out)
{
    return with_data(f, ingot_native_tensor_at(R(f), i, out), out);
}

static ingot_status tensor_find(const ingot_file *f, const char *name, size_t len,
                                ingot_tensor_info *out)
{
    return with_data(f, ingot_native_tensor_find(R(f), name, len, out), out);
}

static ingot_status tensor_check(const ingot_file *f, uint64_t i, bool *has_crc, uint32_t *crc,
                                 uint64_t *zero_after)
{
    ING_TRY(ingot_native_tensor_crc(R(f), i, crc));
    *has_crc = true;
    ingot_tensor_info t, next;
    ING_TRY(ingot_native_tensor_at(R(f), i, &t));
    *zero_after = ingot_native_tensor_at(R(f), i + 1, &next) == INGOT_OK
                      ? next.offset - (t.offset + t.nbytes)
                      : 0;
    return INGOT_OK;
}

static ingot_status verify_header(const ingot_file *f, ingot_error *err)
{
    const state *s = f->state;
    _Alignas(8) unsigned char ws[INGOT_NATIVE_WORKSPACE];
    ingot_native *r;
    return ingot_native_open(ws, sizeof ws, s->head, (size_t)s->head_len, f->size, 0, &r, err);
}

static uint64_t meta_count(const ingot_file *f) { return ingot_native_meta_count(R(f)); }

static ingot_status meta_at(const ingot_file *f, uint64_t i, ingot_meta_info *out)
{
    return ingot_native_meta_at(R(f), i, out);
}

static ingot_status meta_find(const ingot_file *f, const char *key, size_t len,
                              ingot_meta_info *out)
{
    return ingot_native_meta_find(R(f), key, len, out);
}

static ingot_status meta_array_read(const ingot_file *f, uint64_t index, ingot_meta_type type,
                                    uint64_t first, uint64_t n, void *dst)
{
    return ingot_native_meta_array_read(R(f), index, type, first, n, dst);
}

static ingot_status meta_array_string(const ingot_file *f, uint64_t index, uint64_t elem,
                                      const char **s, size_t *len)
{
    return ingot_native_meta_array_string(R(f), index, elem, s, len);
}

static const char *const native_extensions[] = {"ingot", NULL};

const ingot__format ingot__format_native = {
    .name = "ingot",
    .extensions = native_extensions,
    .probe = probe,
    .open = open_native,
    .close = close_native,
    .tensor_count = tensor_count,
    .tensor_at = tensor_at,
    .tensor_find = tensor_find,
    .tensor_check = tensor_check,
    .verify_header = verify_header,
    .checks = INGOT_CHECK_HEADER_CRC32C | INGOT_CHECK_PADDING,
    .meta_count = meta_count,
    .meta_at = meta_at,
    .meta_find = meta_find,
    .meta_array_read = meta_array_read,
    .meta_array_string = meta_array_string,
    .writer = &ingot__writer_native,
};
