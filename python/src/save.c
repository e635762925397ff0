/*
 * save.c - ingot.save() and ingot.convert() of the _ingot extension: the crash-safe writer
 * (writer.h) and the conversion plans (convert.h). The Python layer normalises the arguments
 * (types, contiguous little-endian arrays kept alive) and passes plain tuples here.
 */
#include "module.h"

#include <stdint.h>
#include <string.h>

/* Writer notices, appended to a Python list. The writer calls back on the saving thread, which
 * may be running without the GIL (inside ingot_writer_save): take it for the append. A failed
 * append is dropped (the notice is informational; the save goes on). */
static void acc_notice(void *ctx, const char *msg)
{
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *s = ingot__py_str(msg, strlen(msg));
    if (!s || PyList_Append((PyObject *)ctx, s) < 0)
        PyErr_Clear();
    Py_XDECREF(s);
    PyGILState_Release(g);
}

static int bytes_of(PyObject *o, const char **p, Py_ssize_t *n)
{
    if (!PyBytes_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "ingot: expected bytes");
        return -1;
    }
    return PyBytes_AsStringAndSize(o, (char **)p, n);
}

/* One metadata entry (key: bytes, type, is_array, value) onto the writer. Scalars arrive as
 * Python int/float/bool/bytes; numeric arrays as (address, count); string arrays as a list of
 * bytes. */
static int set_meta(ingot_writer *w, PyObject *item)
{
    PyObject *keyo, *val;
    int type, is_array;
    if (!PyArg_ParseTuple(item, "SipO", &keyo, &type, &is_array, &val))
        return -1;
    const char *key = PyBytes_AsString(keyo);
    ingot_status st;
    ingot_meta_type t = (ingot_meta_type)type;
    if (is_array && (t == INGOT_META_STRING || t == INGOT_META_BYTES)) {
        Py_ssize_t n = PyList_Size(val);
        if (n < 0)
            return -1;
        const void **ptrs = PyMem_Malloc(sizeof(void *) * (size_t)(n ? n : 1));
        size_t *lens = PyMem_Malloc(sizeof(size_t) * (size_t)(n ? n : 1));
        if (!ptrs || !lens) {
            PyMem_Free(ptrs);
            PyMem_Free(lens);
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t k = 0; k < n; k++) {
            const char *p;
            Py_ssize_t len;
            if (bytes_of(PyList_GetItem(val, k), &p, &len) < 0) {
                PyMem_Free(ptrs);
                PyMem_Free(lens);
                return -1;
            }
            ptrs[k] = p;
            lens[k] = (size_t)len;
        }
        st = ingot_writer_set_string_array(w, key, t, (const void *const *)ptrs, lens,
                                           (uint64_t)n);
        PyMem_Free(ptrs);
        PyMem_Free(lens);
    } else if (is_array) {
        uint64_t addr, count;
        if (!PyArg_ParseTuple(val, "O&O&", ingot__py_u64, &addr, ingot__py_u64, &count))
            return -1;
        st = ingot_writer_set_array(w, key, t, (const void *)(uintptr_t)addr, count);
    } else if (t == INGOT_META_STRING || t == INGOT_META_BYTES) {
        const char *p;
        Py_ssize_t len;
        if (bytes_of(val, &p, &len) < 0)
            return -1;
        st = t == INGOT_META_STRING ? ingot_writer_set_stringn(w, key, p, (size_t)len)
                                    : ingot_writer_set_bytes(w, key, p, (size_t)len);
    } else if (t == INGOT_META_F32 || t == INGOT_META_F64) {
        double d = PyFloat_AsDouble(val);
        if (d == -1.0 && PyErr_Occurred())
            return -1;
        st = t == INGOT_META_F32 ? ingot_writer_set_f32(w, key, (float)d)
                                 : ingot_writer_set_f64(w, key, d);
    } else if (t == INGOT_META_BOOL) {
        int b = PyObject_IsTrue(val);
        if (b < 0)
            return -1;
        st = ingot_writer_set_bool(w, key, b != 0);
    } else if (t == INGOT_META_U8 || t == INGOT_META_U16 || t == INGOT_META_U32 ||
               t == INGOT_META_U64) {
        unsigned long long u = PyLong_AsUnsignedLongLong(val);
        if (u == (unsigned long long)-1 && PyErr_Occurred())
            return -1;
        st = t == INGOT_META_U8    ? ingot_writer_set_u8(w, key, (uint8_t)u)
             : t == INGOT_META_U16 ? ingot_writer_set_u16(w, key, (uint16_t)u)
             : t == INGOT_META_U32 ? ingot_writer_set_u32(w, key, (uint32_t)u)
                                   : ingot_writer_set_u64(w, key, (uint64_t)u);
    } else if (t == INGOT_META_I8 || t == INGOT_META_I16 || t == INGOT_META_I32 ||
               t == INGOT_META_I64) {
        long long v = PyLong_AsLongLong(val);
        if (v == -1 && PyErr_Occurred())
            return -1;
        st = t == INGOT_META_I8    ? ingot_writer_set_i8(w, key, (int8_t)v)
             : t == INGOT_META_I16 ? ingot_writer_set_i16(w, key, (int16_t)v)
             : t == INGOT_META_I32 ? ingot_writer_set_i32(w, key, (int32_t)v)
                                   : ingot_writer_set_i64(w, key, (int64_t)v);
    } else {
        st = INGOT_BAD_TYPE;
    }
    if (st != INGOT_OK) {
        ingot_error e;
        memset(&e, 0, sizeof e);
        e.code = st;
        e.offset = INGOT_NO_OFFSET;
        snprintf(e.msg, sizeof e.msg, "metadata entry refused: %s", ingot_status_str(st));
        snprintf(e.where, sizeof e.where, "%s", key);
        ingot__py_raise(&e, st);
        return -1;
    }
    return 0;
}

/* save(path, format|None, alignment, no_fsync, meta, tensors, options) -> [notices]
 *   meta:    [(key bytes, type, is_array, value)]
 *   tensors: [(name bytes, dtype, shape tuple, address, param id or None)]
 *   options: [(key, value)] writer options */
static PyObject *m_save(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *path = NULL, *meta, *tensors, *options;
    const char *format;
    unsigned align;
    int no_fsync;
    if (!PyArg_ParseTuple(args, "O&zIpO!O!O!", PyUnicode_FSConverter, &path, &format, &align,
                          &no_fsync, &PyList_Type, &meta, &PyList_Type, &tensors, &PyList_Type,
                          &options))
        return NULL;
    ingot_writer_opts wo;
    memset(&wo, 0, sizeof wo);
    wo.format = format;
    wo.alignment = align;
    wo.no_fsync = no_fsync != 0;
    ingot_writer *w = NULL;
    ingot_error e;
    PyObject *ret = NULL;
    PyObject *notices = PyList_New(0);
    if (!notices) {
        Py_DECREF(path);
        return NULL;
    }
    ingot_status st = ingot_writer_new(&wo, &w, &e);
    if (st != INGOT_OK) {
        ingot__py_raise(&e, st);
        goto done;
    }
    ingot_writer_set_notice(w, acc_notice, notices);
    for (Py_ssize_t k = 0; k < PyList_Size(options); k++) {
        const char *key, *value;
        if (!PyArg_ParseTuple(PyList_GetItem(options, k), "ss", &key, &value))
            goto done;
        st = ingot_writer_set_option(w, key, value, &e);
        if (st != INGOT_OK) {
            ingot__py_raise(&e, st);
            goto done;
        }
    }
    for (Py_ssize_t k = 0; k < PyList_Size(meta); k++)
        if (set_meta(w, PyList_GetItem(meta, k)) < 0)
            goto done;
    for (Py_ssize_t k = 0; k < PyList_Size(tensors); k++) {
        PyObject *nameo, *shape, *pid;
        int dtype;
        uint64_t addr;
        if (!PyArg_ParseTuple(PyList_GetItem(tensors, k), "SiO!O&O", &nameo, &dtype,
                              &PyTuple_Type, &shape, ingot__py_u64, &addr, &pid))
            goto done;
        Py_ssize_t rank = PyTuple_Size(shape);
        if (rank > INGOT_MAX_RANK) {
            ingot__py_raise_status(INGOT_BAD_NDIMS, PyBytes_AsString(nameo));
            goto done;
        }
        uint64_t dims[INGOT_MAX_RANK];
        for (Py_ssize_t d = 0; d < rank; d++)
            if (!ingot__py_u64(PyTuple_GetItem(shape, d), &dims[d]))
                goto done;
        ingot_tensor_opts to;
        memset(&to, 0, sizeof to);
        if (pid != Py_None) {
            if (!ingot__py_u64(pid, &to.param_id))
                goto done;
            to.has_param_id = true;
        }
        st = ingot_writer_add_tensor(w, PyBytes_AsString(nameo), (ingot_dtype)dtype,
                                     (uint32_t)rank, dims, &to, (const void *)(uintptr_t)addr,
                                     &e);
        if (st != INGOT_OK) {
            ingot__py_raise(&e, st);
            goto done;
        }
    }
    const char *p = PyBytes_AsString(path);
    Py_BEGIN_ALLOW_THREADS
    st = ingot_writer_save(w, p, &e);
    Py_END_ALLOW_THREADS
    if (st != INGOT_OK) {
        ingot__py_raise(&e, st);
        goto done;
    }
    ret = notices;
    notices = NULL;
done:
    ingot_writer_free(w);
    Py_XDECREF(notices);
    Py_XDECREF(path);
    return ret;
}

/* One step of a conversion plan, a tuple whose first item names it. */
static int plan_step(ingot_convert_plan *p, PyObject *step, ingot_error *e, ingot_status *st)
{
    const char *kind;
    if (!PyTuple_Check(step) || PyTuple_Size(step) < 1) {
        PyErr_SetString(PyExc_TypeError, "ingot: bad plan step");
        return -1;
    }
    PyObject *k0 = PyTuple_GetItem(step, 0);
    PyObject *kb = PyUnicode_AsUTF8String(k0);
    if (!kb)
        return -1;
    kind = PyBytes_AsString(kb);
    int rc = 0;
    if (!strcmp(kind, "select")) {
        PyObject *rules;
        if (!PyArg_ParseTuple(step, "sO!", &kind, &PyList_Type, &rules)) {
            rc = -1;
            goto out;
        }
        Py_ssize_t n = PyList_Size(rules);
        ingot_convert_rule *r = PyMem_Malloc(sizeof *r * (size_t)(n ? n : 1));
        if (!r) {
            PyErr_NoMemory();
            rc = -1;
            goto out;
        }
        for (Py_ssize_t k = 0; k < n; k++) {
            int inc;
            if (!PyArg_ParseTuple(PyList_GetItem(rules, k), "sp", &r[k].glob, &inc)) {
                PyMem_Free(r);
                rc = -1;
                goto out;
            }
            r[k].include = inc != 0;
        }
        *st = ingot_convert_plan_select(p, r, (size_t)n, e);
        PyMem_Free(r);
    } else if (!strcmp(kind, "rename")) {
        const char *rx, *repl;
        if (!PyArg_ParseTuple(step, "sss", &kind, &rx, &repl)) {
            rc = -1;
            goto out;
        }
        *st = ingot_convert_plan_rename(p, rx, repl, e);
    } else if (!strcmp(kind, "cast")) {
        int from, to;
        if (!PyArg_ParseTuple(step, "sii", &kind, &from, &to)) {
            rc = -1;
            goto out;
        }
        *st = ingot_convert_plan_cast(p, (ingot_dtype)from, (ingot_dtype)to, e);
    } else if (!strcmp(kind, "quantize") || !strcmp(kind, "set") || !strcmp(kind, "delete")) {
        const char *a;
        if (!PyArg_ParseTuple(step, "ss", &kind, &a)) {
            rc = -1;
            goto out;
        }
        *st = kind[0] == 'q'   ? ingot_convert_plan_quantize(p, a, e)
              : kind[0] == 's' ? ingot_convert_plan_meta_set_text(p, a, e)
                               : ingot_convert_plan_meta_delete(p, a, e);
    } else if (!strcmp(kind, "meta_rename")) {
        const char *a, *b;
        if (!PyArg_ParseTuple(step, "sss", &kind, &a, &b)) {
            rc = -1;
            goto out;
        }
        *st = ingot_convert_plan_meta_rename(p, a, b, e);
    } else {
        PyErr_Format(PyExc_ValueError, "ingot: unknown plan step %s", kind);
        rc = -1;
    }
out:
    Py_DECREF(kb);
    return rc;
}

/* convert(handle, path, format|None, alignment, dequantize dtype, no_fsync, options, steps)
 *   -> ((format, alignment, tensors, dropped, metadata_lossy, dequantized, cast, quantized,
 *        skipped), [(kind, message, name, from, to, count)]) */
static PyObject *m_convert(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *ho, *path = NULL, *options, *steps;
    const char *format;
    unsigned align;
    int deq, no_fsync;
    if (!PyArg_ParseTuple(args, "O!O&zIipO!O!", (PyTypeObject *)ingot__py_handle_type, &ho,
                          PyUnicode_FSConverter, &path, &format, &align, &deq, &no_fsync,
                          &PyList_Type, &options, &PyList_Type, &steps))
        return NULL;
    Handle *h = (Handle *)ho;
    ingot_convert_plan *p = NULL;
    ingot_convert_result *r = NULL;
    const char **opts = NULL;
    PyObject *ret = NULL;
    ingot_error e;
    ingot_status st = ingot_convert_plan_new(h->f, &p, &e);
    if (st != INGOT_OK) {
        ingot__py_raise(&e, st);
        goto done;
    }
    for (Py_ssize_t k = 0; k < PyList_Size(steps); k++) {
        st = INGOT_OK;
        if (plan_step(p, PyList_GetItem(steps, k), &e, &st) < 0)
            goto done;
        if (st != INGOT_OK) {
            ingot__py_raise(&e, st);
            goto done;
        }
    }
    Py_ssize_t nopt = PyList_Size(options);
    opts = PyMem_Malloc(sizeof *opts * (size_t)(nopt ? nopt : 1));
    if (!opts) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < nopt; k++) {
        opts[k] = PyBytes_AsString(PyList_GetItem(options, k)); /* "KEY=VALUE" bytes */
        if (!opts[k])
            goto done;
    }
    ingot_convert_opts co;
    memset(&co, 0, sizeof co);
    co.format = format;
    co.alignment = align;
    co.options = opts;
    co.n_options = (size_t)nopt;
    co.dequantize = (ingot_dtype)deq;
    co.no_fsync = no_fsync != 0;
    const char *pp = PyBytes_AsString(path);
    Py_BEGIN_ALLOW_THREADS
    st = ingot_convert_run(p, pp, &co, &r, &e);
    Py_END_ALLOW_THREADS
    if (st != INGOT_OK) {
        ingot__py_raise(&e, st);
        goto done;
    }
    ingot_convert_summary s;
    ingot_convert_result_summary(r, &s);
    uint64_t n = ingot_convert_result_lossy_count(r);
    PyObject *lossy = PyList_New((Py_ssize_t)n);
    if (!lossy)
        goto done;
    for (uint64_t k = 0; k < n; k++) {
        ingot_lossy l;
        ingot_convert_result_lossy_at(r, k, &l);
        PyObject *item = Py_BuildValue("(iNNiiK)", (int)l.kind,
                                       ingot__py_str(l.message, strlen(l.message)),
                                       ingot__py_str(l.name, strlen(l.name)), (int)l.from,
                                       (int)l.to, (unsigned long long)l.count);
        if (!item) {
            Py_DECREF(lossy);
            goto done;
        }
        PyList_SetItem(lossy, (Py_ssize_t)k, item);
    }
    ret = Py_BuildValue("((sIKKKKKKK)N)", s.format ? s.format : "", s.alignment,
                        (unsigned long long)s.tensors, (unsigned long long)s.dropped,
                        (unsigned long long)s.metadata_lossy,
                        (unsigned long long)s.dequantized, (unsigned long long)s.cast,
                        (unsigned long long)s.quantized, (unsigned long long)s.skipped, lossy);
done:
    PyMem_Free(opts);
    ingot_convert_result_free(r);
    ingot_convert_plan_free(p);
    Py_XDECREF(path);
    return ret;
}

static PyObject *m_format_for_path(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *path = NULL;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path))
        return NULL;
    const char *f = ingot_writer_format_for_path(PyBytes_AsString(path));
    Py_DECREF(path);
    if (!f)
        Py_RETURN_NONE;
    return PyUnicode_FromString(f);
}

PyMethodDef ingot__py_save_methods[] = {
    {"save", m_save, METH_VARARGS,
     "save(path, format, alignment, no_fsync, meta, tensors, options) -> [notices]"},
    {"convert", m_convert, METH_VARARGS,
     "convert(handle, path, format, alignment, dequantize, no_fsync, options, steps)"},
    {"format_for_path", m_format_for_path, METH_VARARGS,
     "the writer format a path's extension selects, or None"},
    {NULL, NULL, 0, NULL},
};
