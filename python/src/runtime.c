/*
 * runtime.c - the model runtime of the _ingot extension: MLP (runtime.h), LM with its session
 * (lm.h) and Tokenizer (tokenizer.h). Each object wraps handles of the C API; the GIL is
 * released while a model computes and retaken only to hand a generated token to Python.
 */
#include "module.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static PyObject *mlp_type, *lm_type, *tok_type;

static void generic_free(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    freefunc fr = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    fr(self);
    Py_DECREF(tp);
}

static ingot_status new_backend(const char *name, unsigned threads, ingot_backend **out,
                                ingot_error *e)
{
    ingot_backend_opts bo;
    memset(&bo, 0, sizeof bo);
    bo.threads = threads;
    return ingot_backend_new(name, &bo, out, e);
}

/* ---- Tokenizer ------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    ingot_tokenizer *t;
} Tok;

static void tok_dealloc(PyObject *self)
{
    ingot_tokenizer_close(((Tok *)self)->t);
    generic_free(self);
}

static PyObject *tok_wrap(ingot_tokenizer *t)
{
    Tok *o = PyObject_New(Tok, (PyTypeObject *)tok_type);
    if (!o) {
        ingot_tokenizer_close(t);
        return NULL;
    }
    o->t = t;
    return (PyObject *)o;
}

/* tokenizer_open(path or handle, word_cache_bytes, word_caches): a tokenizer from a file or an
 * open file; word_cache_bytes -1 for the library's default, 0 for none. */
static PyObject *m_tok_open(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *arg;
    long long wc_bytes = -1, wc_count = 0;
    if (!PyArg_ParseTuple(args, "O|LL", &arg, &wc_bytes, &wc_count))
        return NULL;
    if (wc_count < 0 || wc_count > (long long)UINT32_MAX)
        wc_count = UINT32_MAX; /* the library's LIMIT names the bound */
    ingot_tokenizer_opts o = {0};
    o.word_cache_bytes = wc_bytes < 0    ? 0
                         : wc_bytes == 0 ? INGOT_TOKENIZER_NO_WORD_CACHE
                                         : (size_t)wc_bytes;
    o.word_caches = (uint32_t)wc_count;
    ingot_tokenizer *t = NULL;
    ingot_error e;
    ingot_status st;
    if (PyObject_TypeCheck(arg, (PyTypeObject *)ingot__py_handle_type)) {
        st = ingot_tokenizer_open_file(((Handle *)arg)->f, &o, &t, &e);
    } else {
        PyObject *path = NULL;
        if (!PyUnicode_FSConverter(arg, &path))
            return NULL;
        st = ingot_tokenizer_open(PyBytes_AsString(path), &o, &t, &e);
        Py_DECREF(path);
    }
    if (st != INGOT_OK)
        return ingot__py_raise(&e, st);
    return tok_wrap(t);
}

static PyObject *tok_info(PyObject *self, PyObject *unused)
{
    (void)unused;
    ingot_tokenizer *t = ((Tok *)self)->t;
    const char *pre = ingot_tokenizer_pre(t);
    return Py_BuildValue("(szIiiOO)", ingot_tokenizer_kind(t), pre,
                         ingot_tokenizer_vocab_size(t),
                         (int)ingot_tokenizer_special(t, INGOT_TOKEN_BOS),
                         (int)ingot_tokenizer_special(t, INGOT_TOKEN_EOS),
                         ingot_tokenizer_adds_bos(t) ? Py_True : Py_False,
                         ingot_tokenizer_adds_eos(t) ? Py_True : Py_False);
}

/* word_cache_stats() -> (words, bytes, hits, hit_bytes) of the tokenizer's own word caches */
static PyObject *tok_wc_stats(PyObject *self, PyObject *unused)
{
    (void)unused;
    uint64_t w, b, h, hb;
    ingot_tokenizer_word_cache_stats(((Tok *)self)->t, &w, &b, &h, &hb);
    return Py_BuildValue("(KKKK)", (unsigned long long)w, (unsigned long long)b,
                         (unsigned long long)h, (unsigned long long)hb);
}

/* encode(text bytes, flags) -> bytes of int32 ids */
static PyObject *tok_encode(PyObject *self, PyObject *args)
{
    ingot_tokenizer *t = ((Tok *)self)->t;
    const char *text;
    Py_ssize_t len;
    unsigned flags;
    if (!PyArg_ParseTuple(args, "y#I", &text, &len, &flags))
        return NULL;
    size_t cap = ingot_tokenizer_max_tokens((size_t)len);
    PyObject *buf = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((cap ? cap : 1) * 4));
    if (!buf)
        return NULL;
    int32_t *ids = (int32_t *)(void *)PyBytes_AsString(buf);
    size_t n = 0;
    ingot_error e;
    ingot_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ingot_tokenizer_encode(t, text, (size_t)len, flags, ids, cap, &n, NULL, 0, &e);
    Py_END_ALLOW_THREADS
    if (st != INGOT_OK) {
        Py_DECREF(buf);
        return ingot__py_raise(&e, st);
    }
    PyObject *out = PyBytes_FromStringAndSize((const char *)ids, (Py_ssize_t)(n * 4));
    Py_DECREF(buf);
    return out;
}

/* encode_batch(tuple of utf8 bytes, flags, cache bytes) -> (int32 ids as bytes, int64 offsets
 * as bytes: text i's ids are [off[i], off[i + 1])). The texts are encoded one after another with
 * the GIL released (their pointers taken first: the tuple holds the bytes objects, which do not
 * change), through a word cache made for this call (cache bytes 0: none), so a call is as safe
 * from several threads at once as encode is; the ids are encode's. */
static PyObject *tok_encode_batch(PyObject *self, PyObject *args)
{
    ingot_tokenizer *t = ((Tok *)self)->t;
    PyObject *tup;
    unsigned flags;
    unsigned long long cache_bytes;
    if (!PyArg_ParseTuple(args, "O!IK", &PyTuple_Type, &tup, &flags, &cache_bytes))
        return NULL;
    Py_ssize_t n = PyTuple_Size(tup);
    const char **txt = PyMem_Malloc(((size_t)n + 1) * sizeof *txt);
    size_t *len = PyMem_Malloc(((size_t)n + 1) * sizeof *len);
    int64_t *off = PyMem_Malloc(((size_t)n + 1) * sizeof *off);
    if (!txt || !len || !off) {
        PyMem_Free(txt);
        PyMem_Free(len);
        PyMem_Free(off);
        return PyErr_NoMemory();
    }
    PyObject *out = NULL;
    void *scratch = NULL;
    ingot_tokenizer_cache *c = NULL;
    int32_t *ids = NULL;
    size_t maxlen = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GetItem(tup, i);
        if (!x || !PyBytes_Check(x)) {
            PyErr_Format(PyExc_TypeError, "encode_batch: text %zd is not bytes", i);
            goto done;
        }
        txt[i] = PyBytes_AsString(x);
        len[i] = (size_t)PyBytes_Size(x);
        maxlen = len[i] > maxlen ? len[i] : maxlen;
    }
    /* malloc's alignment (16) covers encode's 8; ss 0 (too long a text): encode says LIMIT */
    size_t ss = ingot_tokenizer_scratch_size(t, maxlen);
    if (ss && !(scratch = malloc(ss))) {
        PyErr_NoMemory();
        goto done;
    }
    ingot_error e;
    ingot_status st = INGOT_OK;
    if (cache_bytes && (st = ingot_tokenizer_cache_new(t, (size_t)cache_bytes, &c, &e)) != INGOT_OK) {
        ingot__py_raise(&e, st);
        goto done;
    }
    size_t used = 0, cap = 0;
    bool nomem = false;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        size_t need = ingot_tokenizer_max_tokens(len[i]);
        if (cap - used < need) {
            size_t ncap = cap ? cap : 4096;
            while (ncap - used < need) ncap *= 2;
            int32_t *p = realloc(ids, ncap * sizeof *ids);
            if (!p) {
                nomem = true;
                break;
            }
            ids = p;
            cap = ncap;
        }
        size_t k = 0;
        off[i] = (int64_t)used;
        st = ingot_tokenizer_encode_cached(t, c, txt[i], len[i], flags, ids + used, need, &k,
                                           scratch, ss, &e);
        if (st != INGOT_OK)
            break;
        used += k;
    }
    off[n] = (int64_t)used;
    Py_END_ALLOW_THREADS
    if (nomem) {
        PyErr_NoMemory();
    } else if (st != INGOT_OK) {
        ingot__py_raise(&e, st);
    } else {
        PyObject *a = PyBytes_FromStringAndSize(ids ? (const char *)ids : "",
                                                (Py_ssize_t)(used * sizeof *ids));
        PyObject *b = a ? PyBytes_FromStringAndSize((const char *)off,
                                                    (Py_ssize_t)(((size_t)n + 1) * sizeof *off))
                        : NULL;
        if (a && b)
            out = PyTuple_Pack(2, a, b);
        Py_XDECREF(a);
        Py_XDECREF(b);
    }
done:
    ingot_tokenizer_cache_free(c);
    free(scratch);
    free(ids);
    PyMem_Free(txt);
    PyMem_Free(len);
    PyMem_Free(off);
    return out;
}

/* decode(ids bytes (int32), flags) -> bytes of UTF-8 */
static PyObject *tok_decode(PyObject *self, PyObject *args)
{
    ingot_tokenizer *t = ((Tok *)self)->t;
    const char *ids;
    Py_ssize_t nb;
    unsigned flags;
    if (!PyArg_ParseTuple(args, "y#I", &ids, &nb, &flags))
        return NULL;
    size_t n = (size_t)nb / 4, cap = 256 + n * 16, len = 0;
    for (;;) {
        PyObject *buf = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)cap);
        if (!buf)
            return NULL;
        ingot_error e;
        ingot_status st = ingot_tokenizer_decode(t, (const int32_t *)(const void *)ids, n, flags,
                                                 PyBytes_AsString(buf), cap, &len, &e);
        if (st == INGOT_OK) {
            PyObject *out = PyBytes_FromStringAndSize(PyBytes_AsString(buf), (Py_ssize_t)len);
            Py_DECREF(buf);
            return out;
        }
        Py_DECREF(buf);
        if (st != INGOT_RANGE || cap > ((size_t)1 << 34))
            return ingot__py_raise(&e, st);
        cap *= 4;
    }
}

static PyObject *tok_is_control(PyObject *self, PyObject *args)
{
    int id;
    if (!PyArg_ParseTuple(args, "i", &id))
        return NULL;
    return PyBool_FromLong(ingot_tokenizer_is_control(((Tok *)self)->t, id));
}

static PyMethodDef tok_methods[] = {
    {"is_control", tok_is_control, METH_VARARGS, "whether id is a control token"},
    {"info", tok_info, METH_NOARGS, "(kind, pre, vocab, bos, eos, adds_bos, adds_eos)"},
    {"word_cache_stats", tok_wc_stats, METH_NOARGS, "(words, bytes, hits, hit_bytes)"},
    {"encode", tok_encode, METH_VARARGS, "encode(utf8, flags) -> int32 ids as bytes"},
    {"encode_batch", tok_encode_batch, METH_VARARGS,
     "encode_batch(tuple of utf8, flags, cache bytes) -> (int32 ids, int64 offsets) as bytes"},
    {"decode", tok_decode, METH_VARARGS, "decode(int32 ids as bytes, flags) -> utf8 bytes"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot tok_slots[] = {
    {Py_tp_dealloc, (void *)tok_dealloc},
    {Py_tp_methods, tok_methods},
    {0, NULL},
};

static PyType_Spec tok_spec = {"ingot._ingot.Tokenizer", sizeof(Tok), 0, Py_TPFLAGS_DEFAULT,
                               tok_slots};

/* ---- MLP --------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *handle; /* keeps the weights' file open */
    ingot_backend *be;
    ingot_mlp *m;
} Mlp;

static void mlp_dealloc(PyObject *self)
{
    Mlp *o = (Mlp *)self;
    ingot_mlp_free(o->m);
    ingot_backend_free(o->be);
    Py_XDECREF(o->handle);
    generic_free(self);
}

/* mlp_open(handle, backend name, threads) */
static PyObject *m_mlp_open(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *h;
    const char *backend;
    unsigned threads;
    if (!PyArg_ParseTuple(args, "O!zI", (PyTypeObject *)ingot__py_handle_type, &h, &backend,
                          &threads))
        return NULL;
    ingot_backend *be = NULL;
    ingot_mlp *m = NULL;
    ingot_error e;
    ingot_status st = new_backend(backend, threads, &be, &e);
    if (st == INGOT_OK)
        st = ingot_mlp_open(be, ((Handle *)h)->f, NULL, &m, &e);
    if (st != INGOT_OK) {
        ingot_backend_free(be);
        return ingot__py_raise(&e, st);
    }
    Mlp *o = PyObject_New(Mlp, (PyTypeObject *)mlp_type);
    if (!o) {
        ingot_mlp_free(m);
        ingot_backend_free(be);
        return NULL;
    }
    Py_INCREF(h);
    o->handle = h;
    o->be = be;
    o->m = m;
    return (PyObject *)o;
}

static PyObject *mlp_shape(PyObject *self, PyObject *unused)
{
    (void)unused;
    Mlp *o = (Mlp *)self;
    return Py_BuildValue("(KKI)", (unsigned long long)ingot_mlp_input_size(o->m),
                         (unsigned long long)ingot_mlp_output_size(o->m),
                         ingot_mlp_layer_count(o->m));
}

/* forward(x addr, batch, y addr): x [batch, in] f32 -> y [batch, out] f32 */
static PyObject *mlp_forward(PyObject *self, PyObject *args)
{
    Mlp *o = (Mlp *)self;
    uint64_t x, batch, y;
    if (!PyArg_ParseTuple(args, "O&O&O&", ingot__py_u64, &x, ingot__py_u64, &batch,
                          ingot__py_u64, &y))
        return NULL;
    size_t ss = ingot_mlp_scratch_size(o->m, batch);
    void *scratch = PyMem_Malloc(ss ? ss : 1);
    if (!scratch)
        return PyErr_NoMemory();
    ingot_error e;
    ingot_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ingot_mlp_forward(o->m, (const float *)(uintptr_t)x, batch, (float *)(uintptr_t)y,
                           scratch, ss, &e);
    Py_END_ALLOW_THREADS
    PyMem_Free(scratch);
    if (st != INGOT_OK)
        return ingot__py_raise(&e, st);
    Py_RETURN_NONE;
}

static PyMethodDef mlp_methods[] = {
    {"shape", mlp_shape, METH_NOARGS, "(input size, output size, layers)"},
    {"forward", mlp_forward, METH_VARARGS, "forward(x addr, batch, y addr)"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot mlp_slots[] = {
    {Py_tp_dealloc, (void *)mlp_dealloc},
    {Py_tp_methods, mlp_methods},
    {0, NULL},
};

static PyType_Spec mlp_spec = {"ingot._ingot.MLP", sizeof(Mlp), 0, Py_TPFLAGS_DEFAULT,
                               mlp_slots};

/* ---- LM ----------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    ingot_backend *be;
    ingot_lm *m;
    ingot_lm_session *s;
    int busy; /* a generate call is running (on another thread, without the GIL) */
} Lm;

static void lm_dealloc(PyObject *self)
{
    Lm *o = (Lm *)self;
    ingot_lm_session_free(o->s);
    ingot_lm_free(o->m);
    ingot_backend_free(o->be);
    generic_free(self);
}

/* lm_open(path, config path|None, lora path|None, lora scale, backend, threads, n_ctx, kv f16) */
static PyObject *m_lm_open(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *path = NULL;
    const char *config, *lora, *backend;
    double lora_scale;
    unsigned threads, n_ctx;
    int kv16;
    if (!PyArg_ParseTuple(args, "O&zzdzIIp", PyUnicode_FSConverter, &path, &config, &lora,
                          &lora_scale, &backend, &threads, &n_ctx, &kv16))
        return NULL;
    ingot_lm_opts lo;
    memset(&lo, 0, sizeof lo);
    lo.config_path = config;
    lo.lora_path = lora;
    lo.lora_scale = lora_scale;
    ingot_lm_session_opts so;
    memset(&so, 0, sizeof so);
    so.n_ctx = n_ctx;
    so.kv_dtype = kv16 ? INGOT_DTYPE_F16 : INGOT_DTYPE_F32;
    ingot_backend *be = NULL;
    ingot_lm *m = NULL;
    ingot_lm_session *s = NULL;
    ingot_error e;
    ingot_status st;
    const char *p = PyBytes_AsString(path);
    Py_BEGIN_ALLOW_THREADS
    st = new_backend(backend, threads, &be, &e);
    if (st == INGOT_OK)
        st = ingot_lm_open_path(be, p, &lo, &m, &e);
    if (st == INGOT_OK)
        st = ingot_lm_session_new(m, &so, &s, &e);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (st != INGOT_OK) {
        ingot_lm_free(m);
        ingot_backend_free(be);
        return ingot__py_raise(&e, st);
    }
    Lm *o = PyObject_New(Lm, (PyTypeObject *)lm_type);
    if (!o) {
        ingot_lm_session_free(s);
        ingot_lm_free(m);
        ingot_backend_free(be);
        return NULL;
    }
    o->be = be;
    o->m = m;
    o->s = s;
    o->busy = 0;
    return (PyObject *)o;
}

static PyObject *lm_config(PyObject *self, PyObject *unused)
{
    (void)unused;
    Lm *o = (Lm *)self;
    const ingot_lm_config *c = ingot_lm_get_config(o->m);
    return Py_BuildValue(
        "{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:d,s:d,s:O,s:O,s:i,s:i,s:I,s:s,s:I}",
        "arch", c->arch == INGOT_LM_ARCH_GPT2 ? "gpt2" : "llama", "n_layer", c->n_layer, "dim",
        c->dim, "n_head", c->n_head, "n_head_kv", c->n_head_kv, "head_dim", c->head_dim,
        "ffn_dim", c->ffn_dim, "vocab", c->vocab, "ctx_train", c->ctx_train, "n_expert",
        c->n_expert, "n_expert_used", c->n_expert_used, "norm_eps", c->norm_eps, "rope_theta",
        c->rope_theta, "tied_head", c->tied_head ? Py_True : Py_False, "qkv_bias",
        c->qkv_bias ? Py_True : Py_False, "bos", (int)c->bos, "eos", (int)c->eos,
        "sliding_window", c->sliding_window, "naming", c->naming ? c->naming : "",
        "n_ctx", ingot_lm_session_ctx(o->s));
}

static int lm_check_idle(Lm *o)
{
    if (o->busy) {
        ingot__py_raise_status(INGOT_MISUSE, "the model is generating on another thread");
        return -1;
    }
    return 0;
}

/* eval(int32 ids bytes, all) -> f32 logits bytes ([vocab] or [n, vocab]) */
static PyObject *lm_eval(PyObject *self, PyObject *args)
{
    Lm *o = (Lm *)self;
    const char *ids;
    Py_ssize_t nb;
    int all;
    if (!PyArg_ParseTuple(args, "y#p", &ids, &nb, &all) || lm_check_idle(o) < 0)
        return NULL;
    size_t n = (size_t)nb / 4, vocab = ingot_lm_get_config(o->m)->vocab;
    size_t cap = (all ? n : 1) * vocab;
    PyObject *buf = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((cap ? cap : 1) * 4));
    if (!buf)
        return NULL;
    ingot_error e;
    ingot_status st;
    o->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    st = ingot_lm_eval(o->s, (const int32_t *)(const void *)ids, n,
                       all ? INGOT_LM_LOGITS_ALL : INGOT_LM_LOGITS_LAST,
                       (float *)(void *)PyBytes_AsString(buf), cap, &e);
    Py_END_ALLOW_THREADS
    o->busy = 0;
    if (st != INGOT_OK) {
        Py_DECREF(buf);
        return ingot__py_raise(&e, st);
    }
    return buf;
}

static PyObject *lm_rewind(PyObject *self, PyObject *args)
{
    Lm *o = (Lm *)self;
    unsigned pos = 0;
    if (!PyArg_ParseTuple(args, "|I", &pos) || lm_check_idle(o) < 0)
        return NULL;
    ingot_error e;
    ingot_status st = ingot_lm_session_rewind(o->s, pos, &e);
    if (st != INGOT_OK)
        return ingot__py_raise(&e, st);
    Py_RETURN_NONE;
}

static PyObject *lm_pos(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromUnsignedLong(ingot_lm_session_pos(((Lm *)self)->s));
}

/* What the callbacks of a generate call need: the Python callable that receives (token, text
 * piece bytes) and returns whether to go on. With a tokenizer the library decodes (and holds back
 * text that could become a stop string): pieces come as (-1, text), tokens as (id, b""). */
typedef struct {
    PyObject *fn;
    int failed; /* the callable raised: stop, and re-raise after the call */
} gen_ctx;

static bool gen_emit(gen_ctx *g, int32_t token, const char *p, size_t n)
{
    PyGILState_STATE gs = PyGILState_Ensure();
    bool go_on = false;
    PyObject *r = PyObject_CallFunction(g->fn, "iy#", (int)token, p, (Py_ssize_t)n);
    if (!r) {
        g->failed = 1;
    } else {
        int t = PyObject_IsTrue(r);
        Py_DECREF(r);
        if (t < 0)
            g->failed = 1;
        go_on = t > 0;
    }
    PyGILState_Release(gs);
    return go_on;
}

static bool gen_on_token(void *ctx, int32_t token)
{
    return gen_emit(ctx, token, "", 0);
}

static bool gen_on_text(void *ctx, const char *text, size_t len)
{
    return gen_emit(ctx, -1, text, len);
}

/* generate(prompt ids bytes, max_tokens, temperature, top_k, top_p, min_p, repeat_penalty,
 *          seed, ignore_eos, tokenizer|None, keep_leading_space, stop strings (tuple of bytes),
 *          callback)
 *   -> (generated ids bytes, stop reason, prompt tokens, prefill ns, decode ns, stop string)
 * The callback gets (token, b"") for each token as it is sampled and, with a tokenizer,
 * (-1, text) for the text as the library resolves it (the GIL is taken for each call). */
static PyObject *lm_generate(PyObject *self, PyObject *args)
{
    Lm *o = (Lm *)self;
    const char *prompt;
    Py_ssize_t nb;
    unsigned max_tokens, top_k;
    double temp, top_p, min_p, rep;
    unsigned long long seed;
    int ignore_eos, keep_space;
    PyObject *toko, *stops, *fn;
    if (!PyArg_ParseTuple(args, "y#IdIdddKpOpO!O", &prompt, &nb, &max_tokens, &temp, &top_k,
                          &top_p, &min_p, &rep, &seed, &ignore_eos, &toko, &keep_space,
                          &PyTuple_Type, &stops, &fn) ||
        lm_check_idle(o) < 0)
        return NULL;
    if (toko != Py_None && !PyObject_TypeCheck(toko, (PyTypeObject *)tok_type)) {
        PyErr_SetString(PyExc_TypeError, "ingot: tokenizer expected");
        return NULL;
    }
    /* the stop strings: borrowed from the tuple's bytes objects, which outlive the call */
    Py_ssize_t nstop = PyTuple_Size(stops);
    const char **stop_p = PyMem_Calloc((size_t)nstop + 1, sizeof *stop_p);
    size_t *stop_n = PyMem_Calloc((size_t)nstop + 1, sizeof *stop_n);
    if (!stop_p || !stop_n) {
        PyMem_Free(stop_p);
        PyMem_Free(stop_n);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < nstop; i++) {
        char *p;
        Py_ssize_t len;
        if (PyBytes_AsStringAndSize(PyTuple_GetItem(stops, i), &p, &len) < 0) {
            PyMem_Free(stop_p);
            PyMem_Free(stop_n);
            return NULL;
        }
        stop_p[i] = p;
        stop_n[i] = (size_t)len;
    }
    const ingot_lm_config *c = ingot_lm_get_config(o->m);
    ingot_sampler_params sp;
    memset(&sp, 0, sizeof sp);
    sp.temperature = temp;
    sp.top_k = top_k;
    sp.top_p = top_p;
    sp.min_p = min_p;
    sp.repeat_penalty = rep;
    sp.seed = seed;
    ingot_sampler *smp = NULL;
    ingot_error e;
    ingot_status st = ingot_sampler_new(&sp, c->vocab, NULL, &smp, &e);
    if (st != INGOT_OK) {
        PyMem_Free(stop_p);
        PyMem_Free(stop_n);
        return ingot__py_raise(&e, st);
    }
    uint32_t room = ingot_lm_session_ctx(o->s);
    size_t cap = max_tokens ? max_tokens : (room ? room : 1);
    gen_ctx g;
    memset(&g, 0, sizeof g);
    g.fn = fn;
    PyObject *outb = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(cap * 4));
    if (!outb) {
        PyMem_Free(stop_p);
        PyMem_Free(stop_n);
        ingot_sampler_free(smp);
        return NULL;
    }
    ingot_lm_generate_opts go;
    memset(&go, 0, sizeof go);
    go.max_tokens = (uint32_t)cap;
    go.ignore_eos = ignore_eos != 0;
    go.on_token = gen_on_token;
    go.ctx = &g;
    if (toko != Py_None) {
        go.tokenizer = ((Tok *)toko)->t;
        go.decode_flags = keep_space ? INGOT_DECODE_KEEP_LEADING_SPACE : 0;
        go.on_text = gen_on_text;
    }
    go.stop_strings = stop_p;
    go.stop_lens = stop_n;
    go.n_stop_strings = (size_t)nstop;
    ingot_lm_stats stats;
    memset(&stats, 0, sizeof stats);
    size_t nout = 0;
    o->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    st = ingot_lm_generate(o->s, smp, (const int32_t *)(const void *)prompt, (size_t)nb / 4, &go,
                           (int32_t *)(void *)PyBytes_AsString(outb), cap, &nout, &stats, &e);
    Py_END_ALLOW_THREADS
    o->busy = 0;
    ingot_sampler_free(smp);
    PyMem_Free(stop_p);
    PyMem_Free(stop_n);
    if (g.failed || PyErr_Occurred()) {
        Py_DECREF(outb);
        return NULL;
    }
    if (st != INGOT_OK) {
        Py_DECREF(outb);
        return ingot__py_raise(&e, st);
    }
    PyObject *ids = PyBytes_FromStringAndSize(PyBytes_AsString(outb), (Py_ssize_t)(nout * 4));
    Py_DECREF(outb);
    return Py_BuildValue("(NiKKKi)", ids, (int)stats.stop,
                         (unsigned long long)stats.prompt_tokens,
                         (unsigned long long)stats.prefill_ns,
                         (unsigned long long)stats.decode_ns, (int)stats.stop_string);
}

static PyMethodDef lm_methods[] = {
    {"config", lm_config, METH_NOARGS, "the model's configuration as a dict"},
    {"eval", lm_eval, METH_VARARGS, "eval(ids, all) -> f32 logits bytes"},
    {"rewind", lm_rewind, METH_VARARGS, "rewind(pos=0)"},
    {"pos", lm_pos, METH_NOARGS, "positions filled"},
    {"generate", lm_generate, METH_VARARGS, "see runtime.c"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot lm_slots[] = {
    {Py_tp_dealloc, (void *)lm_dealloc},
    {Py_tp_methods, lm_methods},
    {0, NULL},
};

static PyType_Spec lm_spec = {"ingot._ingot.LM", sizeof(Lm), 0, Py_TPFLAGS_DEFAULT, lm_slots};

PyMethodDef ingot__py_runtime_methods[] = {
    {"tokenizer_open", m_tok_open, METH_VARARGS, "tokenizer_open(path or handle[, word_cache_bytes, word_caches])"},
    {"mlp_open", m_mlp_open, METH_VARARGS, "mlp_open(handle, backend, threads)"},
    {"lm_open", m_lm_open, METH_VARARGS,
     "lm_open(path, config, lora, lora_scale, backend, threads, n_ctx, kv_f16)"},
    {NULL, NULL, 0, NULL},
};

int ingot__py_runtime_init(PyObject *module)
{
    (void)module;
    mlp_type = PyType_FromSpec(&mlp_spec);
    lm_type = PyType_FromSpec(&lm_spec);
    tok_type = PyType_FromSpec(&tok_spec);
    return mlp_type && lm_type && tok_type ? 0 : -1;
}
