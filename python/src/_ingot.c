/*
 * _ingot.c - the CPython extension behind `import ingot`: thin wrappers over the public C API
 * (include/ingot/) in CPython's limited API 3.9 (one abi3 build for every Python >= 3.9).
 * Arrays are not built here: the Python layer (ingot/_file.py) turns the raw facts returned
 * below (data addresses, shapes, dtype codes) into NumPy views through __array_interface__.
 * Buffers come in and go out as (address, size) integers that the Python caller keeps alive.
 */
#include "module.h"

#include <stdint.h>
#include <string.h>

/* ---- errors --------------------------------------------------------------------------------
 * Every failure raises the ingot.Error subclass that ingot._errors.make() picks for the code. */

static PyObject *make_error_fn; /* ingot._errors.make, imported on first use */

PyObject *ingot__py_raise(const ingot_error *e, ingot_status st)
{
    if (!make_error_fn) {
        PyObject *mod = PyImport_ImportModule("ingot._errors");
        if (!mod)
            return NULL;
        make_error_fn = PyObject_GetAttrString(mod, "make");
        Py_DECREF(mod);
        if (!make_error_fn)
            return NULL;
    }
    ingot_status code = e ? e->code : st;
    if (e && code == INGOT_OK)
        code = st;
    const char *msg = (e && e->msg[0]) ? e->msg : ingot_status_str(code);
    const char *where = e ? e->where : "";
    unsigned long long off = e ? (unsigned long long)e->offset
                               : (unsigned long long)INGOT_NO_OFFSET;
    PyObject *exc = PyObject_CallFunction(make_error_fn, "isNNK", (int)code,
                                          ingot_status_name(code), ingot__py_str(msg, strlen(msg)),
                                          ingot__py_str(where, strlen(where)), off);
    if (!exc)
        return NULL;
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

PyObject *ingot__py_raise_status(ingot_status st, const char *what)
{
    ingot_error e;
    memset(&e, 0, sizeof e);
    e.code = st;
    e.offset = INGOT_NO_OFFSET;
    snprintf(e.msg, sizeof e.msg, "%s", ingot_status_str(st));
    if (what)
        snprintf(e.where, sizeof e.where, "%s", what);
    return ingot__py_raise(&e, st);
}

PyObject *ingot__py_str(const char *s, size_t n)
{
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "replace");
}

/* ---- the file handle -----------------------------------------------------------------------
 * Owns one ingot_file. Python's File object and every array view hold a reference to it, so the
 * mapping lives until the last of them is gone (ingot.File.close() only drops its own). */

PyObject *ingot__py_handle_type;

static void handle_dealloc(PyObject *self)
{
    Handle *h = (Handle *)self;
    PyTypeObject *tp = Py_TYPE(self);
    ingot_file_close(h->f);
    h->f = NULL;
    freefunc fr = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    fr(self);
    Py_DECREF(tp);
}

int ingot__py_u64(PyObject *o, void *out)
{
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return 0;
    *(uint64_t *)out = v;
    return 1;
}

static PyObject *m_open(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *path = NULL;
    int verify = 0, io = 0;
    const char *format = NULL;
    unsigned threads = 0;
    if (!PyArg_ParseTuple(args, "O&ii|zI", PyUnicode_FSConverter, &path, &verify, &io, &format,
                          &threads))
        return NULL;
    ingot_open_opts o;
    memset(&o, 0, sizeof o);
    o.verify = (ingot_verify_mode)verify;
    o.io = (ingot_io_mode)io;
    o.format = format;
    o.threads = threads;
    ingot_file *f = NULL;
    ingot_error e;
    ingot_status st;
    const char *p = PyBytes_AsString(path);
    Py_BEGIN_ALLOW_THREADS
    st = ingot_file_open(p, &o, &f, &e);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (st != INGOT_OK)
        return ingot__py_raise(&e, st);
    Handle *h = PyObject_New(Handle, (PyTypeObject *)ingot__py_handle_type);
    if (!h) {
        ingot_file_close(f);
        return NULL;
    }
    h->f = f;
    return (PyObject *)h;
}

static PyObject *h_format(PyObject *self, PyObject *unused)
{
    (void)unused;
    Handle *h = (Handle *)self;
    return Py_BuildValue("(ssKKKK)", ingot_file_format(h->f), ingot_file_version(h->f),
                         (unsigned long long)ingot_file_size(h->f),
                         (unsigned long long)ingot_file_alignment(h->f),
                         (unsigned long long)ingot_file_tensor_count(h->f),
                         (unsigned long long)ingot_file_meta_count(h->f));
}

static PyObject *info_tuple(const ingot_tensor_info *t)
{
    PyObject *shape = PyTuple_New(t->rank);
    if (!shape)
        return NULL;
    for (uint32_t d = 0; d < t->rank; d++) {
        PyObject *v = PyLong_FromUnsignedLongLong(t->shape[d]);
        if (!v) {
            Py_DECREF(shape);
            return NULL;
        }
        PyTuple_SetItem(shape, d, v);
    }
    PyObject *strides;
    if (t->flags & INGOT_TENSOR_STRIDED) {
        strides = PyTuple_New(t->rank);
        if (!strides) {
            Py_DECREF(shape);
            return NULL;
        }
        for (uint32_t d = 0; d < t->rank; d++)
            PyTuple_SetItem(strides, d, PyLong_FromLongLong(t->strides[d]));
    } else {
        strides = Py_None;
        Py_INCREF(strides);
    }
    PyObject *name = ingot__py_str(t->name, t->name_len);
    if (!name) {
        Py_DECREF(shape);
        Py_DECREF(strides);
        return NULL;
    }
    return Py_BuildValue("(NiNNKKKKKII)", name, (int)t->dtype, shape, strides,
                         (unsigned long long)t->nelem, (unsigned long long)t->nbytes,
                         (unsigned long long)t->offset, (unsigned long long)(uintptr_t)t->data,
                         (unsigned long long)t->param_id, (unsigned)t->flags,
                         (unsigned)t->index);
}

static PyObject *h_info(PyObject *self, PyObject *args)
{
    Handle *h = (Handle *)self;
    uint64_t i;
    if (!PyArg_ParseTuple(args, "O&", ingot__py_u64, &i))
        return NULL;
    ingot_tensor_info t;
    ingot_status st = ingot_file_tensor_at(h->f, i, &t);
    if (st != INGOT_OK)
        return ingot__py_raise_status(st, "tensor index");
    return info_tuple(&t);
}

/* Index of a tensor by name, or -1. */
static PyObject *h_find(PyObject *self, PyObject *args)
{
    Handle *h = (Handle *)self;
    const char *name;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "s#", &name, &len))
        return NULL;
    ingot_tensor_info t;
    if (ingot_file_tensor_findn(h->f, name, (size_t)len, &t) != INGOT_OK)
        return PyLong_FromLong(-1);
    return PyLong_FromUnsignedLong(t.index);
}

static PyObject *h_names(PyObject *self, PyObject *unused)
{
    (void)unused;
    Handle *h = (Handle *)self;
    uint64_t n = ingot_file_tensor_count(h->f);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list)
        return NULL;
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info t;
        ingot_status st = ingot_file_tensor_at(h->f, i, &t);
        PyObject *s = st == INGOT_OK ? ingot__py_str(t.name, t.name_len) : NULL;
        if (!s) {
            Py_DECREF(list);
            return st == INGOT_OK ? NULL : ingot__py_raise_status(st, "tensor index");
        }
        PyList_SetItem(list, (Py_ssize_t)i, s);
    }
    return list;
}

static PyObject *meta_scalar(ingot_meta_type type, const ingot_meta_info *m)
{
    switch (type) {
    case INGOT_META_U8: case INGOT_META_U16: case INGOT_META_U32: case INGOT_META_U64:
        return PyLong_FromUnsignedLongLong(m->v.u);
    case INGOT_META_I8: case INGOT_META_I16: case INGOT_META_I32: case INGOT_META_I64:
        return PyLong_FromLongLong(m->v.i);
    case INGOT_META_F32: case INGOT_META_F64:
        return PyFloat_FromDouble(m->v.f);
    case INGOT_META_BOOL:
        return PyBool_FromLong(m->v.b);
    case INGOT_META_STRING:
        return ingot__py_str((const char *)m->data, (size_t)m->count);
    case INGOT_META_BYTES:
        return PyBytes_FromStringAndSize((const char *)m->data, (Py_ssize_t)m->count);
    default:
        Py_RETURN_NONE;
    }
}

static PyObject *array_elem(ingot_meta_type type, const unsigned char *p)
{
    switch (type) {
    case INGOT_META_U8: return PyLong_FromUnsignedLong(*p);
    case INGOT_META_I8: return PyLong_FromLong(*(const int8_t *)p);
    case INGOT_META_BOOL: return PyBool_FromLong(*p);
    case INGOT_META_U16: { uint16_t v; memcpy(&v, p, 2); return PyLong_FromUnsignedLong(v); }
    case INGOT_META_I16: { int16_t v; memcpy(&v, p, 2); return PyLong_FromLong(v); }
    case INGOT_META_U32: { uint32_t v; memcpy(&v, p, 4); return PyLong_FromUnsignedLong(v); }
    case INGOT_META_I32: { int32_t v; memcpy(&v, p, 4); return PyLong_FromLong(v); }
    case INGOT_META_U64: {
        uint64_t v; memcpy(&v, p, 8); return PyLong_FromUnsignedLongLong(v); }
    case INGOT_META_I64: { int64_t v; memcpy(&v, p, 8); return PyLong_FromLongLong(v); }
    case INGOT_META_F32: { float v; memcpy(&v, p, 4); return PyFloat_FromDouble(v); }
    case INGOT_META_F64: { double v; memcpy(&v, p, 8); return PyFloat_FromDouble(v); }
    default: Py_RETURN_NONE;
    }
}

static PyObject *meta_array(const ingot_file *f, const ingot_meta_info *m)
{
    PyObject *list = PyList_New((Py_ssize_t)m->count);
    if (!list)
        return NULL;
    if (m->type == INGOT_META_STRING || m->type == INGOT_META_BYTES) {
        for (uint64_t k = 0; k < m->count; k++) {
            const char *s;
            size_t len;
            ingot_status st = ingot_file_meta_array_string(f, m->index, k, &s, &len);
            if (st != INGOT_OK) {
                Py_DECREF(list);
                return ingot__py_raise_status(st, "metadata array");
            }
            PyObject *v = m->type == INGOT_META_STRING
                              ? ingot__py_str(s, len)
                              : PyBytes_FromStringAndSize(s, (Py_ssize_t)len);
            if (!v) {
                Py_DECREF(list);
                return NULL;
            }
            PyList_SetItem(list, (Py_ssize_t)k, v);
        }
        return list;
    }
    uint32_t size = ingot_meta_type_size(m->type);
    unsigned char buf[8 * 512];
    uint64_t per = sizeof buf / (size ? size : 1);
    for (uint64_t first = 0; first < m->count; first += per) {
        uint64_t n = m->count - first < per ? m->count - first : per;
        ingot_status st = ingot_file_meta_array_read(f, m->index, m->type, first, n, buf);
        if (st != INGOT_OK) {
            Py_DECREF(list);
            return ingot__py_raise_status(st, "metadata array");
        }
        for (uint64_t k = 0; k < n; k++) {
            PyObject *v = array_elem(m->type, buf + k * size);
            if (!v) {
                Py_DECREF(list);
                return NULL;
            }
            PyList_SetItem(list, (Py_ssize_t)(first + k), v);
        }
    }
    return list;
}

/* [(key, type name, is_array, value)] in file order. */
static PyObject *h_meta(PyObject *self, PyObject *unused)
{
    (void)unused;
    Handle *h = (Handle *)self;
    uint64_t n = ingot_file_meta_count(h->f);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list)
        return NULL;
    for (uint64_t i = 0; i < n; i++) {
        ingot_meta_info m;
        ingot_status st = ingot_file_meta_at(h->f, i, &m);
        if (st != INGOT_OK) {
            Py_DECREF(list);
            return ingot__py_raise_status(st, "metadata");
        }
        PyObject *v = m.is_array ? meta_array(h->f, &m) : meta_scalar(m.type, &m);
        PyObject *key = v ? ingot__py_str(m.key, m.key_len) : NULL;
        if (!key) {
            Py_XDECREF(v);
            Py_DECREF(list);
            return NULL;
        }
        PyObject *item = Py_BuildValue("(NsON)", key, ingot_meta_type_name(m.type),
                                       m.is_array ? Py_True : Py_False, v);
        if (!item) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SetItem(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *h_notices(PyObject *self, PyObject *unused)
{
    (void)unused;
    Handle *h = (Handle *)self;
    uint64_t n = ingot_file_notice_count(h->f);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list)
        return NULL;
    for (uint64_t i = 0; i < n; i++) {
        ingot_notice no;
        if (ingot_file_notice_at(h->f, i, &no) != INGOT_OK) {
            Py_DECREF(list);
            return ingot__py_raise_status(INGOT_RANGE, "notice");
        }
        PyObject *item = Py_BuildValue("(NsK)", ingot__py_str(no.name, no.name_len), no.reason,
                                       (unsigned long long)no.offset);
        if (!item) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SetItem(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *h_verify(PyObject *self, PyObject *args)
{
    Handle *h = (Handle *)self;
    unsigned threads = 1;
    if (!PyArg_ParseTuple(args, "|I", &threads))
        return NULL;
    ingot_error e;
    ingot_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ingot_file_verify(h->f, threads, &e);
    Py_END_ALLOW_THREADS
    if (st != INGOT_OK)
        return ingot__py_raise(&e, st);
    ingot_verify_plan p;
    st = ingot_file_verify_plan(h->f, &p);
    if (st != INGOT_OK)
        return ingot__py_raise_status(st, "verify plan");
    PyObject *checks = PyList_New(0);
    if (!checks)
        return NULL;
    for (uint32_t bit = 0; bit < 32; bit++) {
        const char *name = (p.checks >> bit) & 1u ? ingot_check_name(1u << bit) : NULL;
        if (!name)
            continue;
        PyObject *s = PyUnicode_FromString(name);
        if (!s || PyList_Append(checks, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(checks);
            return NULL;
        }
        Py_DECREF(s);
    }
    return Py_BuildValue("(NKKKK)", checks, (unsigned long long)p.tensors_with_checksum,
                         (unsigned long long)p.tensors_without,
                         (unsigned long long)p.checksums, (unsigned long long)p.data_bytes);
}

/* read(i, offset, addr, n): stored bytes [offset, offset+n) of tensor i into addr. */
static PyObject *h_read(PyObject *self, PyObject *args)
{
    Handle *h = (Handle *)self;
    uint64_t i, off, addr, n;
    if (!PyArg_ParseTuple(args, "O&O&O&O&", ingot__py_u64, &i, ingot__py_u64, &off,
                          ingot__py_u64, &addr, ingot__py_u64, &n))
        return NULL;
    ingot_error e;
    ingot_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ingot_file_tensor_read(h->f, i, off, (void *)(uintptr_t)addr, (size_t)n, &e);
    Py_END_ALLOW_THREADS
    if (st != INGOT_OK)
        return ingot__py_raise(&e, st);
    Py_RETURN_NONE;
}

/* copy(i, addr, cap): tensor i as dense C-order little-endian elements. */
static PyObject *h_copy(PyObject *self, PyObject *args)
{
    Handle *h = (Handle *)self;
    uint64_t i, addr, cap;
    if (!PyArg_ParseTuple(args, "O&O&O&", ingot__py_u64, &i, ingot__py_u64, &addr,
                          ingot__py_u64, &cap))
        return NULL;
    ingot_error e;
    ingot_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ingot_file_tensor_copy(h->f, i, (void *)(uintptr_t)addr, (size_t)cap, &e);
    Py_END_ALLOW_THREADS
    if (st != INGOT_OK)
        return ingot__py_raise(&e, st);
    Py_RETURN_NONE;
}

/* dequantize(i, first, n, addr): elements [first, first+n) decoded to F32 at addr. */
static PyObject *h_dequantize(PyObject *self, PyObject *args)
{
    Handle *h = (Handle *)self;
    uint64_t i, first, n, addr;
    if (!PyArg_ParseTuple(args, "O&O&O&O&", ingot__py_u64, &i, ingot__py_u64, &first,
                          ingot__py_u64, &n, ingot__py_u64, &addr))
        return NULL;
    ingot_error e;
    ingot_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ingot_file_tensor_dequantize(h->f, i, first, n, (float *)(uintptr_t)addr, &e);
    Py_END_ALLOW_THREADS
    if (st != INGOT_OK)
        return ingot__py_raise(&e, st);
    Py_RETURN_NONE;
}

static PyObject *digest_hex(const uint8_t d[32])
{
    char hex[65];
    static const char digits[] = "0123456789abcdef";
    for (int k = 0; k < 32; k++) {
        hex[2 * k] = digits[d[k] >> 4];
        hex[2 * k + 1] = digits[d[k] & 15];
    }
    hex[64] = 0;
    return PyUnicode_FromString(hex);
}

/* digest(i) -> hex of tensor i's content digest; digest(-1) -> the model's. */
static PyObject *h_digest(PyObject *self, PyObject *args)
{
    Handle *h = (Handle *)self;
    long long i;
    if (!PyArg_ParseTuple(args, "L", &i))
        return NULL;
    uint8_t d[32];
    ingot_error e;
    ingot_status st;
    Py_BEGIN_ALLOW_THREADS
    st = i < 0 ? ingot_file_digest(h->f, d, &e)
               : ingot_file_tensor_digest(h->f, (uint64_t)i, d, &e);
    Py_END_ALLOW_THREADS
    if (st != INGOT_OK)
        return ingot__py_raise(&e, st);
    return digest_hex(d);
}

static PyObject *h_stats(PyObject *self, PyObject *args)
{
    Handle *h = (Handle *)self;
    uint64_t i;
    if (!PyArg_ParseTuple(args, "O&", ingot__py_u64, &i))
        return NULL;
    ingot_tensor_stats s;
    ingot_error e;
    ingot_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ingot_file_tensor_stats(h->f, i, &s, &e);
    Py_END_ALLOW_THREADS
    if (st != INGOT_OK)
        return ingot__py_raise(&e, st);
    return Py_BuildValue("(KKKdddd)", (unsigned long long)s.count, (unsigned long long)s.nan,
                         (unsigned long long)s.inf, s.min, s.max, s.mean, s.std);
}

static PyMethodDef handle_methods[] = {
    {"format", h_format, METH_NOARGS,
     "(format, version, size, alignment, tensor count, metadata count)"},
    {"info", h_info, METH_VARARGS,
     "(name, dtype, shape, strides|None, nelem, nbytes, offset, data address, param id, flags, "
     "index) of tensor i"},
    {"find", h_find, METH_VARARGS, "index of the tensor named so, or -1"},
    {"names", h_names, METH_NOARGS, "tensor names in file order"},
    {"meta", h_meta, METH_NOARGS, "[(key, type, is_array, value)] in file order"},
    {"notices", h_notices, METH_NOARGS, "[(name, reason, offset)]: parts skipped at open"},
    {"verify", h_verify, METH_VARARGS, "verify(threads) -> (checks, with, without, checksums, "
     "bytes); the GIL is released"},
    {"read", h_read, METH_VARARGS, "read(i, offset, addr, n): stored bytes into addr"},
    {"copy", h_copy, METH_VARARGS, "copy(i, addr, cap): dense C-order little-endian copy"},
    {"dequantize", h_dequantize, METH_VARARGS, "dequantize(i, first, n, addr): F32 values"},
    {"digest", h_digest, METH_VARARGS, "digest(i) content digest (hex); i < 0: the model's"},
    {"stats", h_stats, METH_VARARGS, "stats(i) -> (count, nan, inf, min, max, mean, std)"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot handle_slots[] = {
    {Py_tp_dealloc, (void *)handle_dealloc},
    {Py_tp_methods, handle_methods},
    {Py_tp_doc, (void *)"An open ingot_file; closed when the last reference goes."},
    {0, NULL},
};

static PyType_Spec handle_spec = {
    "ingot._ingot.Handle", sizeof(Handle), 0, Py_TPFLAGS_DEFAULT, handle_slots,
};

/* ---- module-level helpers --------------------------------------------------------------- */

static PyObject *m_dtypes(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    PyObject *list = PyList_New(0);
    if (!list)
        return NULL;
#define X_(name, value, be, bb)                                                                  \
    do {                                                                                         \
        PyObject *t = Py_BuildValue("(siIIO)", #name, value, (unsigned)(be), (unsigned)(bb),   \
                                    ingot_dtype_is_quantized((ingot_dtype)(value)) ? Py_True   \
                                                                                 : Py_False); \
        if (!t || PyList_Append(list, t) < 0) {                                                  \
            Py_XDECREF(t);                                                                       \
            Py_DECREF(list);                                                                     \
            return NULL;                                                                         \
        }                                                                                        \
        Py_DECREF(t);                                                                            \
    } while (0);
    INGOT_DTYPE_LIST(X_)
#undef X_
    return list;
}

/* dequantize_buffer(dtype, src, src_n, dst, n_elems) over raw buffers. */
static PyObject *m_dequantize_buffer(PyObject *mod, PyObject *args)
{
    (void)mod;
    int dt;
    uint64_t src, srcn, dst, n;
    if (!PyArg_ParseTuple(args, "iO&O&O&O&", &dt, ingot__py_u64, &src, ingot__py_u64, &srcn,
                          ingot__py_u64, &dst, ingot__py_u64, &n))
        return NULL;
    ingot_error e;
    ingot_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ingot_dequantize((ingot_dtype)dt, (const void *)(uintptr_t)src, (size_t)srcn,
                          (float *)(uintptr_t)dst, n, &e);
    Py_END_ALLOW_THREADS
    if (st != INGOT_OK)
        return ingot__py_raise(&e, st);
    Py_RETURN_NONE;
}

static PyObject *m_version(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    return PyUnicode_FromString(ingot_version_string());
}

static PyObject *m_status_list(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    PyObject *list = PyList_New(0);
    if (!list)
        return NULL;
#define X_(name, value, msg)                                                                     \
    do {                                                                                         \
        PyObject *t = Py_BuildValue("(iss)", value, #name, msg);                                \
        if (!t || PyList_Append(list, t) < 0) {                                                  \
            Py_XDECREF(t);                                                                       \
            Py_DECREF(list);                                                                     \
            return NULL;                                                                         \
        }                                                                                        \
        Py_DECREF(t);                                                                            \
    } while (0);
    INGOT_STATUS_LIST(X_)
#undef X_
    return list;
}

static PyMethodDef module_methods[] = {
    {"open", m_open, METH_VARARGS, "open(path, verify, io, format=None, threads=0) -> Handle"},
    {"dtypes", m_dtypes, METH_NOARGS, "[(name, value, block_elems, block_bytes, quantized)]"},
    {"statuses", m_status_list, METH_NOARGS, "[(value, name, message)]"},
    {"dequantize_buffer", m_dequantize_buffer, METH_VARARGS,
     "dequantize_buffer(dtype, src, src_nbytes, dst, n_elems)"},
    {"version", m_version, METH_NOARGS, "the C library's version string"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "ingot._ingot", "Low-level bindings of the ingot C library.", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ingot(void);
PyMODINIT_FUNC PyInit__ingot(void)
{
    if (ingot_version_number() != INGOT_VERSION_NUMBER) {
        PyErr_SetString(PyExc_ImportError, "ingot: header and library versions differ");
        return NULL;
    }
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    if (PyModule_AddFunctions(m, ingot__py_save_methods) < 0 ||
        PyModule_AddFunctions(m, ingot__py_runtime_methods) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    ingot__py_handle_type = PyType_FromSpec(&handle_spec);
    if (!ingot__py_handle_type || ingot__py_runtime_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(ingot__py_handle_type);
    if (PyModule_AddObject(m, "Handle", ingot__py_handle_type) < 0) {
        Py_DECREF(ingot__py_handle_type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
