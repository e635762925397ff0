/* convert_mem.c - the conversion helper the format tests share (see convert_mem.h). */
#include "convert_mem.h"

#include <stdio.h>
#include <stdlib.h>

ingot_status test_copy_meta(ingot_writer *w, const ingot_file *f, const ingot_meta_info *m)
{
    char key[1024];
    snprintf(key, sizeof key, "%.*s", (int)m->key_len, m->key);
    if (m->is_array) {
        if (m->type == INGOT_META_STRING || m->type == INGOT_META_BYTES) {
            const void **p = malloc((m->count + 1) * sizeof *p);
            size_t *l = malloc((m->count + 1) * sizeof *l);
            ingot_status st = p && l ? INGOT_OK : INGOT_NOMEM;
            for (uint64_t k = 0; k < m->count && st == INGOT_OK; k++) {
                const char *s;
                st = ingot_file_meta_array_string(f, m->index, k, &s, &l[k]);
                p[k] = s;
            }
            if (st == INGOT_OK) st = ingot_writer_set_string_array(w, key, m->type, p, l, m->count);
            free(p);
            free(l);
            return st;
        }
        size_t esz = ingot_meta_type_size(m->type);
        void *buf = malloc(m->count * esz + 1);
        if (!buf) return INGOT_NOMEM;
        ingot_status st = ingot_file_meta_array_read(f, m->index, m->type, 0, m->count, buf);
        if (st == INGOT_OK) st = ingot_writer_set_array(w, key, m->type, buf, m->count);
        free(buf);
        return st;
    }
    switch (m->type) {
    case INGOT_META_U8: return ingot_writer_set_u8(w, key, (uint8_t)m->v.u);
    case INGOT_META_U16: return ingot_writer_set_u16(w, key, (uint16_t)m->v.u);
    case INGOT_META_U32: return ingot_writer_set_u32(w, key, (uint32_t)m->v.u);
    case INGOT_META_U64: return ingot_writer_set_u64(w, key, m->v.u);
    case INGOT_META_I8: return ingot_writer_set_i8(w, key, (int8_t)m->v.i);
    case INGOT_META_I16: return ingot_writer_set_i16(w, key, (int16_t)m->v.i);
    case INGOT_META_I32: return ingot_writer_set_i32(w, key, (int32_t)m->v.i);
    case INGOT_META_I64: return ingot_writer_set_i64(w, key, m->v.i);
    case INGOT_META_F32: return ingot_writer_set_f32(w, key, (float)m->v.f);
    case INGOT_META_F64: return ingot_writer_set_f64(w, key, m->v.f);
    case INGOT_META_BOOL: return ingot_writer_set_bool(w, key, m->v.b);
    case INGOT_META_STRING: return ingot_writer_set_stringn(w, key, m->data, (size_t)m->count);
    case INGOT_META_BYTES: return ingot_writer_set_bytes(w, key, m->data, (size_t)m->count);
    default: return INGOT_BAD_TYPE;
    }
}

ingot_status test_convert_mem(const ingot_file *f, const test_convert_opts *o, void **out,
                              size_t *n, ingot_error *e)
{
    ingot_writer_opts wo = {.format = o->format, .alignment = o->alignment, .no_fsync = true};
    ingot_writer *w;
    ingot_status st = ingot_writer_new(&wo, &w, e);
    if (st != INGOT_OK) return st;
    if (o->notice) ingot_writer_set_notice(w, o->notice, o->notice_ctx);
    for (uint64_t i = 0; i < ingot_file_meta_count(f) && st == INGOT_OK; i++) {
        ingot_meta_info m;
        ingot_file_meta_at(f, i, &m);
        st = test_copy_meta(w, f, &m);
    }
    uint64_t nt = ingot_file_tensor_count(f);
    for (uint64_t i = 0; i < nt && st == INGOT_OK; i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        st = ingot_writer_add_tensor(w, t.name, t.dtype, t.rank, t.shape, NULL,
                                     o->pushed ? NULL : t.data, e);
    }
    if (st == INGOT_OK) st = ingot_writer_begin_mem(w, e);
    for (uint64_t i = 0; o->pushed && i < nt && st == INGOT_OK; i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        st = ingot_writer_write(w, t.data, (size_t)t.nbytes, e);
    }
    if (st == INGOT_OK) st = ingot_writer_commit_mem(w, out, n, e);
    ingot_writer_free(w);
    return st;
}
