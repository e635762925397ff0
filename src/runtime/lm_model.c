/*
 * lm_model.c - opening a language model (include/ingot/lm.h): the config (GGUF keys or
 * config.json), then every weight of the architecture bound by role through the naming tables
 * (lm_names.c): zero-copy where the backend runs the stored dtype (F32; Q8_0 and Q4_0 linear
 * weights), converted to F32 once otherwise, with a notice. Also ingot_lm_open_path (a file or a
 * Hugging Face folder) and the plan estimates.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "backend_export.h"
#include "checked.h"
#include "error.h"
#include "io.h"
#include "ingot/quant.h"
#include "lm_internal.h"

/* ---- notices ---- */

void ingot__lm_notice(const ingot_lm *m, const char *msg)
{
    if (m->notice) m->notice(m->notice_ctx, msg);
}


/* ---- binding ---- */

/* Whether the backend runs ingot_op_linear with weights of dtype dt and F32 activations: asked
 * once per dtype by running it on one zero block (a capability probe through the public op, so
 * a backend that gains kernels for more block types is used for them without a change here). */
static bool native_linear(ingot_lm *m, ingot_dtype dt)
{
    if (dt == INGOT_DTYPE_F32) return true;
    for (uint32_t i = 0; i < m->n_probed; i++)
        if (m->probed[i].dtype == dt) return m->probed[i].native;
    uint32_t be = ingot_dtype_block_elems(dt), bb = ingot_dtype_block_bytes(dt);
    bool ok = false;
    if (be && bb && be <= 256 && m->n_probed < LM_MAX_PROBED) {
        ingot_buffer *wb = NULL, *xb = NULL, *yb = NULL;
        ingot_tensor w, x, y;
        int64_t ws[2] = {1, be}, ys[2] = {1, 1};
        ok = ingot_buffer_alloc(m->be, bb, &wb, NULL) == INGOT_OK &&
             ingot_buffer_alloc(m->be, (size_t)be * 4, &xb, NULL) == INGOT_OK &&
             ingot_buffer_alloc(m->be, 4, &yb, NULL) == INGOT_OK &&
             ingot_tensor_init(&w, wb, 0, dt, 2, ws, NULL) == INGOT_OK &&
             ingot_tensor_init(&x, xb, 0, INGOT_DTYPE_F32, 2, ws, NULL) == INGOT_OK &&
             ingot_tensor_init(&y, yb, 0, INGOT_DTYPE_F32, 2, ys, NULL) == INGOT_OK &&
             ingot_op_linear(m->be, &y, &x, &w, NULL, NULL) == INGOT_OK;
        ingot_buffer_free(wb);
        ingot_buffer_free(xb);
        ingot_buffer_free(yb);
        m->probed[m->n_probed].dtype = dt;
        m->probed[m->n_probed++].native = ok;
    }
    return ok;
}

/* Finds the tensor of `role` (HF GPT-2: also without the "transformer." prefix). */
static bool find_role(const ingot_lm *m, lm_role role, uint32_t layer, uint32_t expert,
                      char *name, size_t cap, bool *hf_t, ingot_tensor_info *ti)
{
    if (!ingot__lm_role_name(m->naming, m->cfg.arch, role, layer, expert, name, cap, hf_t))
        return false;
    if (ingot_file_tensor_find(m->f, name, ti) == INGOT_OK) return true;
    const char *pre = "transformer.";
    size_t pl = strlen(pre);
    if (m->naming == LM_NAMES_HF && !strncmp(name, pre, pl)) {
        memmove(name, name + pl, strlen(name + pl) + 1);
        if (ingot_file_tensor_find(m->f, name, ti) == INGOT_OK) return true;
        memmove(name + pl, name, strlen(name) + 1);
        memcpy(name, pre, pl);
    }
    return false;
}

static ingot_status shape_err(const char *name, const ingot_tensor_info *ti, uint32_t rank,
                              const int64_t *want, bool hf_t, ingot_error *err)
{
    char got[96], exp[96];
    size_t o = 0;
    for (uint32_t i = 0; i < ti->rank && o < sizeof got - 24; i++)
        o += ingot__fmt(got + o, sizeof got - o, i ? "x%llu" : "%llu",
                        (unsigned long long)ti->shape[i]);
    if (!ti->rank) ingot__fmt(got, sizeof got, "scalar");
    o = 0;
    for (uint32_t i = 0; i < rank; i++) {
        int64_t d = hf_t && rank == 2 ? want[1 - i] : want[i];
        o += ingot__fmt(exp + o, sizeof exp - o, i ? "x%lld" : "%lld", (long long)d);
    }
    return ingot__err(err, INGOT_E_BAD_SHAPE, INGOT_NO_OFFSET, name, strlen(name),
                      "lm: shape %s, the config needs %s%s", got, exp,
                      hf_t ? " ([in, out], Conv1D)" : "");
}

/* Group-quantized int8 (llama2.c v2): an I8 tensor NAME with an F32 vector NAME_scale whose
 * length divides its element count; x = q[i] * scale[i / group]. Returns the scale tensor. */
static bool grouped_scale(const ingot_lm *m, const ingot_tensor_info *ti, ingot_tensor_info *sc)
{
    char sn[176];
    if (ti->dtype != INGOT_DTYPE_I8 || ti->name_len > 160) return false;
    snprintf(sn, sizeof sn, "%s_scale", ti->name);
    return ingot_file_tensor_find(m->f, sn, sc) == INGOT_OK && sc->dtype == INGOT_DTYPE_F32 &&
           sc->rank == 1 && sc->nelem > 0 && ti->nelem % sc->nelem == 0;
}

/* Converts tensor ti to an owned F32 copy (any dtype ingot_dequantize decodes, or grouped int8),
 * with a notice. */
static ingot_status to_f32(ingot_lm *m, const ingot_tensor_info *ti, lm_w *w, const char *why,
                           ingot_error *err)
{
    const char *name = ti->name;
    ingot_tensor_info sc;
    bool grouped = grouped_scale(m, ti, &sc);
    if (!grouped && !ingot_dequantize_supported(ti->dtype))
        return ingot__err(err, INGOT_E_BAD_TYPE, INGOT_NO_OFFSET, name, strlen(name),
                          "lm: dtype %s cannot be run or converted", ingot_dtype_name(ti->dtype));
    if (ti->flags & (INGOT_TENSOR_FORTRAN | INGOT_TENSOR_STRIDED))
        return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, name, strlen(name),
                          "lm: a %s tensor stored column-major or strided",
                          ingot_dtype_name(ti->dtype));
    uint64_t nb;
    if (!ing_mul(ti->nelem, 4, &nb) || nb > SIZE_MAX / 2)
        return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, name, strlen(name),
                          "lm: tensor too large");
    ING_TRY(ingot_buffer_alloc(m->be, (size_t)nb, &w->buf, err));
    int64_t shape[INGOT_MAX_RANK];
    for (uint32_t i = 0; i < ti->rank; i++) shape[i] = (int64_t)ti->shape[i];
    float *dst = ingot_buffer_host(w->buf);
    ingot_status st = ingot_file_tensor_dequantize(m->f, ti->index, 0, ti->nelem, dst, err);
    float *scales = NULL;
    size_t sbytes = grouped ? (size_t)sc.nelem * 4 : 0;
    if (st == INGOT_OK && grouped) {
        scales = ingot__alloc(m->al, sbytes);
        if (!scales) st = ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, name, strlen(name),
                                     "lm: scales");
        if (st == INGOT_OK)
            st = ingot_file_tensor_dequantize(m->f, sc.index, 0, sc.nelem, scales, err);
        uint64_t gs = ti->nelem / sc.nelem;
        for (uint64_t i = 0; st == INGOT_OK && i < ti->nelem; i++) dst[i] *= scales[i / gs];
        if (scales) ingot__free(m->al, scales, sbytes);
    }
    if (st == INGOT_OK) st = ingot_tensor_init(&w->t, w->buf, 0, INGOT_DTYPE_F32, ti->rank, shape,
                                               err);
    if (st != INGOT_OK) {
        ingot_buffer_free(w->buf);
        w->buf = NULL;
        return st;
    }
    m->owned_bytes += nb;
    m->weight_bytes += nb;
    char msg[320];
    snprintf(msg, sizeof msg, "lm: %s: %s%s converted to F32 at load%s (%llu bytes)", name,
             ingot_dtype_name(ti->dtype), grouped ? " with group scales" : "", why,
             (unsigned long long)nb);
    ingot__lm_notice(m, msg);
    w->present = true;
    return INGOT_OK;
}

/* Binds the tensor of `role` as w, checking shape `want` (torch layout [out, in] for matrices;
 * the HF Conv1D [in, out] storage becomes a transposed view). linear: Q8_0/Q4_0 stay as they
 * are (the backend's quantized linear); everything else that is not F32 is converted to F32. */
static ingot_status bind(ingot_lm *m, lm_role role, uint32_t layer, uint32_t expert,
                         bool required, uint32_t rank, const int64_t *want, bool linear,
                         lm_w *w, ingot_error *err)
{
    char name[160];
    bool hf_t = false;
    ingot_tensor_info ti;
    memset(w, 0, sizeof *w);
    if (!find_role(m, role, layer, expert, name, sizeof name, &hf_t, &ti)) {
        if (!required) return INGOT_OK;
        if (!name[0] && !ingot__lm_role_name(m->naming, m->cfg.arch, role, layer, expert, name,
                                             sizeof name, &hf_t))
            return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, NULL, 0,
                              "lm: no tensor name for role %d in this naming", (int)role);
        return ingot__err(err, INGOT_E_NOT_FOUND, INGOT_NO_OFFSET, name, strlen(name),
                          "lm: tensor '%s' is missing (the %s architecture needs it)", name,
                          m->cfg.arch == INGOT_LM_ARCH_GPT2 ? "gpt2" : "llama");
    }
    bool ok = ti.rank == rank;
    for (uint32_t i = 0; ok && i < rank; i++)
        ok = (int64_t)ti.shape[i] == (hf_t && rank == 2 ? want[1 - i] : want[i]);
    if (!ok) return shape_err(name, &ti, rank, want, hf_t, err);
    ingot_status st;
    if (ti.dtype == INGOT_DTYPE_F32 || (linear && !hf_t && native_linear(m, ti.dtype))) {
        ING_TRY(ingot_tensor_from_file(m->be, m->f, name, &w->t, &w->buf, err));
        m->weight_bytes += ti.nbytes;
        w->mapped = true;
        w->findex = ti.index;
    } else {
        ING_TRY(to_f32(m, &ti, w, "", err));
    }
    if (hf_t) {
        st = ingot_tensor_transpose(&w->t, &w->t, err);
        if (st != INGOT_OK) return st;
    }
    w->present = true;
    return INGOT_OK;
}

static void unbind(lm_w *w)
{
    ingot_buffer_free(w->buf);
    ingot_buffer_free(w->lbuf);
    memset(w, 0, sizeof *w);
}

/* A 2-D expert matrix [rows, cols] = slice e of a bound 3-D [E, rows, cols] weight (no copy). */
static ingot_status expert_slice(const lm_w *all, uint32_t e, int64_t rows, int64_t cols,
                                 lm_w *out, ingot_error *err)
{
    ingot_dtype dt = all->t.dtype;
    uint64_t per = (uint64_t)rows * (uint64_t)cols / ingot_dtype_block_elems(dt) *
                   ingot_dtype_block_bytes(dt);
    int64_t shape[2] = {rows, cols};
    memset(out, 0, sizeof *out);
    ING_TRY(ingot_tensor_init(&out->t, all->t.buf, all->t.offset + per * e, dt, 2, shape, err));
    out->present = true;
    return INGOT_OK;
}

static ingot_status bind_experts(ingot_lm *m, uint32_t l, ingot_error *err)
{
    const ingot_lm_config *c = &m->cfg;
    lm_layer *ly = &m->layers[l];
    uint64_t before = m->weight_bytes;
    int64_t E = c->n_expert, D = c->dim, F = c->ffn_dim;
    int64_t rsh[2] = {E, D};
    ING_TRY(bind(m, LM_FFN_ROUTER, l, 0, true, 2, rsh, false, &ly->router, err));
    size_t n = (size_t)E * 3;
    ly->exp = ingot__calloc(m->al, n * sizeof *ly->exp);
    if (!ly->exp) return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0, "lm: experts");
    before = m->weight_bytes;
    const lm_role merged[3] = {LM_FFN_GATE_EXPS, LM_FFN_UP_EXPS, LM_FFN_DOWN_EXPS};
    const lm_role single[3] = {LM_FFN_GATE_EXP, LM_FFN_UP_EXP, LM_FFN_DOWN_EXP};
    for (int k = 0; k < 3; k++) {
        int64_t rows = k == 2 ? D : F, cols = k == 2 ? F : D;
        int64_t sh3[3] = {E, rows, cols};
        ING_TRY(bind(m, merged[k], l, 0, false, 3, sh3, true, &ly->exps[k], err));
        if (ly->exps[k].present) {
            for (uint32_t e = 0; e < (uint32_t)E; e++)
                ING_TRY(expert_slice(&ly->exps[k], e, rows, cols, &ly->exp[e * 3 + k], err));
            continue;
        }
        int64_t sh2[2] = {rows, cols};
        for (uint32_t e = 0; e < (uint32_t)E; e++)
            ING_TRY(bind(m, single[k], l, e, true, 2, sh2, true, &ly->exp[e * 3 + k], err));
    }
    m->expert_bytes += m->weight_bytes - before;
    m->weight_bytes = before;
    return INGOT_OK;
}

static ingot_status bind_layer(ingot_lm *m, uint32_t l, ingot_error *err)
{
    const ingot_lm_config *c = &m->cfg;
    lm_layer *ly = &m->layers[l];
    int64_t D = c->dim, F = c->ffn_dim, Q = (int64_t)c->n_head * c->head_dim,
            KV = (int64_t)c->n_head_kv * c->head_dim;
    int64_t vd[1] = {D};
    bool gpt2 = c->arch == INGOT_LM_ARCH_GPT2;
    ING_TRY(bind(m, LM_ATTN_NORM, l, 0, true, 1, vd, false, &ly->attn_norm, err));
    ING_TRY(bind(m, LM_FFN_NORM, l, 0, true, 1, vd, false, &ly->ffn_norm, err));
    if (gpt2) {
        int64_t qkv[2] = {3 * D, D}, qkvb[1] = {3 * D}, o[2] = {D, D}, up[2] = {F, D},
                upb[1] = {F}, dn[2] = {D, F};
        ING_TRY(bind(m, LM_ATTN_NORM_B, l, 0, true, 1, vd, false, &ly->attn_norm_b, err));
        ING_TRY(bind(m, LM_FFN_NORM_B, l, 0, true, 1, vd, false, &ly->ffn_norm_b, err));
        ING_TRY(bind(m, LM_ATTN_QKV, l, 0, true, 2, qkv, true, &ly->wqkv, err));
        ING_TRY(bind(m, LM_ATTN_QKV_B, l, 0, true, 1, qkvb, false, &ly->bqkv, err));
        ING_TRY(bind(m, LM_ATTN_OUT, l, 0, true, 2, o, true, &ly->wo, err));
        ING_TRY(bind(m, LM_ATTN_OUT_B, l, 0, true, 1, vd, false, &ly->bo, err));
        ING_TRY(bind(m, LM_FFN_UP, l, 0, true, 2, up, true, &ly->w_up, err));
        ING_TRY(bind(m, LM_FFN_UP_B, l, 0, true, 1, upb, false, &ly->b_up, err));
        ING_TRY(bind(m, LM_FFN_DOWN, l, 0, true, 2, dn, true, &ly->w_down, err));
        ING_TRY(bind(m, LM_FFN_DOWN_B, l, 0, true, 1, vd, false, &ly->b_down, err));
        return INGOT_OK;
    }
    int64_t wq[2] = {Q, D}, wk[2] = {KV, D}, bq[1] = {Q}, bk[1] = {KV}, wo[2] = {D, Q};
    ING_TRY(bind(m, LM_ATTN_Q, l, 0, true, 2, wq, true, &ly->wq, err));
    ING_TRY(bind(m, LM_ATTN_K, l, 0, true, 2, wk, true, &ly->wk, err));
    ING_TRY(bind(m, LM_ATTN_V, l, 0, true, 2, wk, true, &ly->wv, err));
    ING_TRY(bind(m, LM_ATTN_Q_B, l, 0, c->qkv_bias, 1, bq, false, &ly->bq, err));
    ING_TRY(bind(m, LM_ATTN_K_B, l, 0, c->qkv_bias, 1, bk, false, &ly->bk, err));
    ING_TRY(bind(m, LM_ATTN_V_B, l, 0, c->qkv_bias, 1, bk, false, &ly->bv, err));
    ING_TRY(bind(m, LM_ATTN_OUT, l, 0, true, 2, wo, true, &ly->wo, err));
    int64_t vdo[1] = {D}; /* HF Llama with attention_bias has an o_proj bias too */
    ING_TRY(bind(m, LM_ATTN_OUT_B, l, 0, false, 1, vdo, false, &ly->bo, err));
    if (c->n_expert) return bind_experts(m, l, err);
    int64_t up[2] = {F, D}, dn[2] = {D, F};
    ING_TRY(bind(m, LM_FFN_GATE, l, 0, true, 2, up, true, &ly->w_gate, err));
    ING_TRY(bind(m, LM_FFN_UP, l, 0, true, 2, up, true, &ly->w_up, err));
    ING_TRY(bind(m, LM_FFN_DOWN, l, 0, true, 2, dn, true, &ly->w_down, err));
    return INGOT_OK;
}

/* An embedding table [rows, dim] (rows 0: any), read row by row at run time. */
static ingot_status bind_table(ingot_lm *m, lm_role role, uint32_t rows, lm_table *t,
                               ingot_tensor_info *ti, ingot_error *err)
{
    char name[160];
    bool hf_t;
    if (!find_role(m, role, 0, 0, name, sizeof name, &hf_t, ti))
        return ingot__err(err, INGOT_E_NOT_FOUND, INGOT_NO_OFFSET, name, strlen(name),
                          "lm: tensor '%s' is missing (an embedding table)", name);
    if (ti->rank != 2 || ti->shape[1] != m->cfg.dim || ti->shape[0] < 1 ||
        (rows && ti->shape[0] != rows)) {
        int64_t want[2] = {rows ? (int64_t)rows : (int64_t)ti->shape[0], m->cfg.dim};
        return shape_err(name, ti, 2, want, false, err);
    }
    ingot_tensor_info sc;
    if (grouped_scale(m, ti, &sc)) {
        /* llama2.c v2: decoded once at load, as its runq.c does */
        uint64_t before = m->weight_bytes;
        ING_TRY(to_f32(m, ti, &t->copy, " (embedding)", err));
        m->weight_bytes = before;
    } else if (!ingot_dequantize_supported(ti->dtype) ||
               (ti->flags & (INGOT_TENSOR_FORTRAN | INGOT_TENSOR_STRIDED))) {
        return ingot__err(err, INGOT_E_BAD_TYPE, INGOT_NO_OFFSET, name, strlen(name),
                          "lm: embedding dtype %s (or its layout) cannot be decoded",
                          ingot_dtype_name(ti->dtype));
    }
    t->index = ti->index;
    t->dtype = ti->dtype;
    t->rows = ti->shape[0];
    t->present = true;
    return INGOT_OK;
}

static ingot_status bind_all(ingot_lm *m, ingot_error *err)
{
    ingot_lm_config *c = &m->cfg;
    ingot_tensor_info ti;
    ING_TRY(bind_table(m, LM_TOK_EMBD, c->vocab, &m->tok_embd, &ti, err));
    if (!c->vocab) c->vocab = (uint32_t)ti.shape[0];
    if (c->vocab > LM_MAX_VOCAB)
        return ingot__err(err, INGOT_E_BAD_SHAPE, INGOT_NO_OFFSET, ti.name, ti.name_len,
                          "lm: vocabulary of %u tokens (at most %u)", c->vocab, LM_MAX_VOCAB);
    if (c->arch == INGOT_LM_ARCH_GPT2) {
        ingot_tensor_info pi;
        ING_TRY(bind_table(m, LM_POS_EMBD, 0, &m->pos_embd, &pi, err));
        c->ctx_train = (uint32_t)(pi.shape[0] < LM_MAX_CTX ? pi.shape[0] : LM_MAX_CTX);
    }
    int64_t vd[1] = {c->dim}, head[2] = {c->vocab, c->dim};
    ING_TRY(bind(m, LM_OUT_NORM, 0, 0, true, 1, vd, false, &m->out_norm, err));
    if (c->arch == INGOT_LM_ARCH_GPT2)
        ING_TRY(bind(m, LM_OUT_NORM_B, 0, 0, true, 1, vd, false, &m->out_norm_b, err));
    /* Untied head when the file has one (a config saying "tied" while the file also carries
     * lm_head.weight: the file wins, as transformers' loader would tie over it only when the
     * tensors are the same). */
    bool tied_cfg = c->tied_head || c->arch == INGOT_LM_ARCH_GPT2 ||
                    m->naming == LM_NAMES_GGUF;
    ING_TRY(bind(m, LM_OUTPUT, 0, 0, !tied_cfg, 2, head, true, &m->output, err));
    c->tied_head = !m->output.present;
    if (c->tied_head) {
        /* The head reads the embedding table: zero-copy when the backend runs its dtype. */
        ING_TRY(ingot_file_tensor_at(m->f, m->tok_embd.index, &ti));
        if (m->tok_embd.copy.present) {
            m->output.t = m->tok_embd.copy.t; /* a view of the decoded table: no second copy */
            m->weight_bytes += ti.nelem * 4;
        } else if (native_linear(m, ti.dtype)) {
            ING_TRY(ingot_tensor_from_file(m->be, m->f, ti.name, &m->output.t, &m->output.buf,
                                           err));
            m->weight_bytes += ti.nbytes;
            m->output.mapped = true; /* (the embedding rows then fault back in as read) */
            m->output.findex = ti.index;
        } else {
            uint64_t nb = ti.nelem * 4;
            ING_TRY(ingot_buffer_alloc(m->be, (size_t)nb, &m->output.buf, err));
            ING_TRY(ingot_file_tensor_dequantize(m->f, ti.index, 0, ti.nelem,
                                                 ingot_buffer_host(m->output.buf), err));
            ING_TRY(ingot_tensor_init(&m->output.t, m->output.buf, 0, INGOT_DTYPE_F32, 2, head,
                                      err));
            m->owned_bytes += nb;
            m->weight_bytes += nb;
            char msg[256];
            snprintf(msg, sizeof msg, "lm: %s: %s converted to F32 at load for the tied head "
                     "(%llu bytes)", ti.name, ingot_dtype_name(ti.dtype), (unsigned long long)nb);
            ingot__lm_notice(m, msg);
        }
        m->output.present = true;
    }
    for (uint32_t l = 0; l < c->n_layer; l++) ING_TRY(bind_layer(m, l, err));
    return INGOT_OK;
}

/* ---- open / free ---- */

ingot_status ingot__lm_read_file(const ingot_allocator *al, const char *path, void **out,
                                 size_t *n, ingot_error *err)
{
    size_t pl = strlen(path);
    int fd = ingot__io->open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return ingot__err(err, errno == ENOENT ? INGOT_E_NOT_FOUND : INGOT_E_IO, INGOT_NO_OFFSET,
                          path, pl, "lm: cannot open %s (errno %d)", path, errno);
    struct stat st;
    ingot_status rc = INGOT_OK;
    uint8_t *buf = NULL;
    if (ingot__io->fstat(fd, &st) != 0) {
        rc = ingot__err(err, INGOT_E_IO, INGOT_NO_OFFSET, path, pl, "lm: fstat failed");
    } else if (st.st_size > (1 << 20)) {
        rc = ingot__err(err, INGOT_E_LIMIT, INGOT_NO_OFFSET, path, pl,
                        "lm: %s is larger than 1 MiB", path);
    } else {
        size_t sz = (size_t)st.st_size;
        buf = ingot__alloc(al, sz ? sz : 1);
        if (!buf) rc = ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, path, pl, "lm: config");
        size_t got = 0;
        while (rc == INGOT_OK && got < sz) {
            ssize_t r = ingot__io->pread(fd, buf + got, sz - got, (off_t)got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) rc = ingot__err(err, INGOT_E_IO, got, path, pl, "lm: read failed");
            else got += (size_t)r;
        }
        if (rc == INGOT_OK) {
            *out = buf;
            *n = sz;
        } else if (buf) {
            ingot__free(al, buf, sz ? sz : 1);
        }
    }
    ingot__io->close(fd);
    return rc;
}

/* Which naming the file's tensors use: the first distinctive name found decides; `dflt` when
 * none is (the missing tensor is then reported under the naming the config implies). */
static lm_naming detect_naming(const ingot_file *f, lm_naming dflt)
{
    static const struct { const char *name; lm_naming n; } probes[] = {
        {"token_embd.weight", LM_NAMES_GGUF}, {"blk.0.attn_norm.weight", LM_NAMES_GGUF},
        {"output_norm.weight", LM_NAMES_GGUF}, {"model.embed_tokens.weight", LM_NAMES_HF},
        {"model.layers.0.input_layernorm.weight", LM_NAMES_HF}, {"model.norm.weight", LM_NAMES_HF},
        {"transformer.wte.weight", LM_NAMES_HF}, {"wte.weight", LM_NAMES_HF},
        {"transformer.h.0.ln_1.weight", LM_NAMES_HF}, {"h.0.ln_1.weight", LM_NAMES_HF},
    };
    ingot_tensor_info ti;
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
        if (ingot_file_tensor_find(f, probes[i].name, &ti) == INGOT_OK) return probes[i].n;
    return dflt;
}

static ingot_status load_config(ingot_lm *m, const char *config_path, ingot_error *err)
{
    ingot_meta_info mi;
    const char *where = "config.json";
    if (ingot_file_meta_find(m->f, "general.architecture", &mi) == INGOT_OK) {
        ING_TRY(ingot__lm_config_gguf(m->f, &m->cfg, err));
        m->naming = detect_naming(m->f, LM_NAMES_GGUF);
        where = "general.architecture";
    } else {
        if (!config_path)
            return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, "config.json", 11,
                              "lm: the file has no model config (general.architecture) and no "
                              "config.json was given");
        void *buf = NULL;
        size_t n = 0;
        ING_TRY(ingot__lm_read_file(m->al, config_path, &buf, &n, err));
        ingot_status st = ingot__lm_config_json(buf, n, config_path, &m->cfg, err);
        ingot__free(m->al, buf, n ? n : 1);
        ING_TRY(st);
        m->naming = detect_naming(m->f, LM_NAMES_HF);
    }
    m->cfg.naming = m->naming == LM_NAMES_GGUF ? "gguf" : "hf";
    return ingot__lm_config_check(&m->cfg, where, err);
}

/* Scaled RoPE: the frequencies theta^(-2i/d) rescaled as config.json's rope_scaling or GGUF's
 * rope.scaling.* say (transformers' linear and llama3 rules), and divided by rope_freqs.weight
 * when a GGUF has it (llama.cpp's converter stores the Llama 3 rule that way). d is the rotated
 * dims (rope_dims: partial rotary rotates fewer than the head size, and also runs through the
 * session's tables). */
static double rope_divisor(const ingot_lm_config *c, uint32_t i)
{
    const double pi = 3.14159265358979323846;
    if (c->rope_scaling == INGOT_LM_ROPE_SCALING_LINEAR) return c->rope_factor;
    if (c->rope_scaling != INGOT_LM_ROPE_SCALING_LLAMA3) return 1.0;
    double f = pow(c->rope_theta, -2.0 * i / c->rope_dims), wl = 2 * pi / f;
    if (wl > c->rope_orig_ctx / c->rope_low_freq_factor) return c->rope_factor;
    if (wl < c->rope_orig_ctx / c->rope_high_freq_factor) return 1.0;
    double sm = (c->rope_orig_ctx / wl - c->rope_low_freq_factor) /
                (c->rope_high_freq_factor - c->rope_low_freq_factor); /* between: interpolated */
    return 1.0 / ((1 - sm) / c->rope_factor + sm);
}

ingot_status ingot_lm_rope_divisors(const ingot_lm_config *c, float *out, size_t n,
                                    ingot_error *err)
{
    if (!c || !out || c->arch != INGOT_LM_ARCH_LLAMA || n != c->rope_dims / 2)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "lm: rope divisors need a Llama-family config and n = rope_dims / 2");
    for (uint32_t i = 0; i < n; i++) out[i] = (float)rope_divisor(c, i);
    return INGOT_OK;
}

static ingot_status rope_setup(ingot_lm *m, ingot_error *err)
{
    ingot_lm_config *c = &m->cfg;
    if (c->arch != INGOT_LM_ARCH_LLAMA) return INGOT_OK;
    uint32_t half = c->rope_dims / 2;
    float div[LM_MAX_HEAD_DIM / 2];
    for (uint32_t i = 0; i < half; i++) div[i] = 1.0f;
    ingot_tensor_info ti;
    if (m->naming == LM_NAMES_GGUF &&
        ingot_file_tensor_find(m->f, "rope_freqs.weight", &ti) == INGOT_OK) {
        int64_t want = half;
        if (ti.rank != 1 || ti.shape[0] != half)
            return shape_err(ti.name, &ti, 1, &want, false, err);
        ING_TRY(ingot_file_tensor_dequantize(m->f, ti.index, 0, half, div, err));
        for (uint32_t i = 0; i < half; i++)
            if (!(div[i] > 0.0f && div[i] < 1e9f))
                return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, ti.name,
                                  ti.name_len, "lm: %s[%u] = %g (frequency divisors must be "
                                  "positive)", ti.name, i, (double)div[i]);
        if (c->rope_scaling == INGOT_LM_ROPE_SCALING_NONE)
            c->rope_scaling = INGOT_LM_ROPE_SCALING_FREQS;
    }
    if (c->rope_scaling == INGOT_LM_ROPE_SCALING_NONE && c->rope_dims == c->head_dim)
        return INGOT_OK;
    for (uint32_t i = 0; i < half; i++)
        m->rope_freq[i] = pow(c->rope_theta, -2.0 * i / c->rope_dims) / rope_divisor(c, i) / div[i];
    m->rope_scaled = true;
    return INGOT_OK;
}

/* ---- repacked Q4_K linears ---- */

/* Whether w is a Q4_K matrix with contiguous rows on the host, K a multiple of 256 and no
 * run-time LoRA: the linears that are repacked; *nb its bytes. */
static bool repackable(const lm_w *w, uint64_t *nb)
{
    const ingot_tensor *t = &w->t;
    if (!w->present || w->lora || w->rp || t->dtype != INGOT_DTYPE_Q4_K || t->rank != 2 ||
        t->strides[1] != 1 || t->strides[0] != t->shape[1] || t->shape[1] % 256 ||
        !ingot_tensor_host(t))
        return false;
    *nb = (uint64_t)t->shape[0] * (uint64_t)(t->shape[1] / 256) * 144;
    return true;
}

/* w's rows repacked (backend_export.h) into the arena at *at; then the pages of its stored bytes
 * are released from the process (ingot_file_tensor_release): every product reads the copy from
 * now on (ingot__lm_linear, ingot__lm_linears). */
static void repack_one(ingot_lm *m, lm_w *w, uint8_t *arena, uint64_t *at, uint32_t *count)
{
    uint64_t nb;
    if (!repackable(w, &nb)) return;
    ingot__q4kr_pack(m->be, ingot_tensor_host(&w->t), arena + *at, (size_t)(nb / 144));
    w->rp = arena + *at;
    *at += (nb + 63) & ~(uint64_t)63;
    (*count)++;
    uint64_t rel = 0;
    if (w->mapped && ingot_file_tensor_release(m->f, w->findex, &rel, NULL) == INGOT_OK)
        m->released_bytes += rel;
}

/* The mapped norm weights and biases (F32 vectors) of a model whose linears were repacked,
 * copied into one owned buffer, their pages released: reading them from the mapping at run time
 * maps back in whatever the kernel keeps in the same page-cache folio (on this VM's kernel up to
 * 2 MiB around each: half the repacked bytes came back in one decoded token). The copies are a
 * few KiB a layer. */
static ingot_status copy_vectors(ingot_lm *m, ingot_error *err)
{
    uint64_t total = 0, at = 0;
    for (int pass = 0; pass < 2; pass++) {
        uint8_t *base = pass ? ingot_buffer_host(m->vec_arena) : NULL;
        for (uint32_t l = 0; l <= m->cfg.n_layer; l++) {
            lm_layer *ly = &m->layers[l < m->cfg.n_layer ? l : 0];
            lm_w *ws[] = {&ly->attn_norm, &ly->attn_norm_b, &ly->ffn_norm, &ly->ffn_norm_b,
                          &ly->bq, &ly->bk, &ly->bv, &ly->bqkv, &ly->bo, &ly->b_up, &ly->b_down};
            size_t n = sizeof ws / sizeof ws[0];
            if (l == m->cfg.n_layer) ws[0] = &m->out_norm, ws[1] = &m->out_norm_b, n = 2;
            for (size_t i = 0; i < n; i++) {
                lm_w *w = ws[i];
                const ingot_tensor *t = &w->t;
                if (!w->present || !w->mapped || t->dtype != INGOT_DTYPE_F32 || t->rank != 1 ||
                    t->strides[0] != 1 || !ingot_tensor_host(t))
                    continue;
                uint64_t nb = ((uint64_t)t->shape[0] * 4 + 63) & ~(uint64_t)63;
                if (!pass) {
                    total += nb;
                    continue;
                }
                memcpy(base + at, ingot_tensor_host(t), (size_t)t->shape[0] * 4);
                int64_t shape[1] = {t->shape[0]};
                ING_TRY(ingot_tensor_init(&w->t, m->vec_arena, at, INGOT_DTYPE_F32, 1, shape,
                                          err));
                at += nb;
                w->mapped = false;
                uint64_t rel = 0;
                if (ingot_file_tensor_release(m->f, w->findex, &rel, NULL) == INGOT_OK)
                    m->released_bytes += rel;
            }
        }
        if (!total) return INGOT_OK;
        if (!pass) {
            ING_TRY(ingot_buffer_alloc(m->be, (size_t)total, &m->vec_arena, err));
            m->owned_bytes += total;
        }
    }
    return INGOT_OK;
}

/* Whether to repack: on unless opts->no_repack or INGOT_LM_REPACK=0 (any other value, or none,
 * leaves it on). */
static bool repack_wanted(const ingot_lm_opts *o)
{
    const char *env = getenv("INGOT_LM_REPACK");
    return !(o && o->no_repack) && !(env && !strcmp(env, "0"));
}

/* Repacks every dense Q4_K linear where the backend's kernel for the repacked layout runs
 * (ingot__q4kr_pays: AVX-512 VNNI with VBMI; elsewhere they stay zero-copy). The copies replace
 * the mapped weights (their pages released), so resident memory does not double; they cost
 * their size in owned memory and a pass over those bytes at open (docs/RUNTIME.md). */
static ingot_status repack_all(ingot_lm *m, const ingot_lm_opts *o, ingot_error *err)
{
    if (!repack_wanted(o) || !ingot__q4kr_pays(m->be)) return INGOT_OK;
    /* one allocation for all (separate ones each rounded up to the huge pages the allocator
     * asks for cost 40% more resident memory on the llama-bench model) */
    uint64_t total = 0, nb, at = 0;
    for (int pass = 0; pass < 2; pass++) {
        uint8_t *arena = pass ? m->rp_arena : NULL;
        uint32_t count = 0;
        for (uint32_t l = 0; l <= m->cfg.n_layer; l++) {
            lm_layer *ly = &m->layers[l < m->cfg.n_layer ? l : 0];
            lm_w *ws[] = {&ly->wq, &ly->wk, &ly->wv, &ly->wqkv, &ly->wo, &ly->w_gate, &ly->w_up,
                          &ly->w_down};
            size_t n = l < m->cfg.n_layer ? sizeof ws / sizeof ws[0] : 1;
            if (l == m->cfg.n_layer) ws[0] = &m->output; /* the head last */
            for (size_t i = 0; i < n; i++) {
                if (!pass && repackable(ws[i], &nb)) total += (nb + 63) & ~(uint64_t)63;
                if (pass) repack_one(m, ws[i], arena, &at, &count);
            }
        }
        if (!total) return INGOT_OK;
        if (!pass) {
            if (total > SIZE_MAX / 2)
                return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0,
                                  "lm: repacked linears too large");
            /* huge-page aligned and advised (2 MiB pages: 60 first-touch faults instead of
             * 29,000), not zeroed: the repacking's writes on the backend's threads are the
             * first touch (the buffer's zeroing pass and its faults were a quarter of the open) */
            m->rp_arena = ingot__alloc_table(m->al, (size_t)total, &m->rp_raw, &m->rp_raw_bytes);
            if (!m->rp_arena)
                return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0,
                                  "lm: %llu bytes of repacked linears",
                                  (unsigned long long)total);
            m->rp_arena_bytes = (size_t)total;
            m->owned_bytes += total;
            m->repacked_bytes = total;
            /* first, while nothing is released: a read of the mapping after the releases maps
             * back the folio around it */
            ING_TRY(copy_vectors(m, err));
            continue;
        }
        char msg[200];
        snprintf(msg, sizeof msg, "lm: %u Q4_K linears repacked (%llu bytes owned; %llu bytes of "
                 "mapped pages released)", count, (unsigned long long)m->repacked_bytes,
                 (unsigned long long)m->released_bytes);
        ingot__lm_notice(m, msg);
    }
    return INGOT_OK;
}

static ingot_status open_common(ingot_backend *b, const ingot_file *f, const ingot_lm_opts *o,
                                const char *config_path, ingot_file *owned, ingot_lm **out,
                                ingot_error *err)
{
    const ingot_allocator *al = ingot_backend_allocator(b);
    ingot_lm *m = ingot__calloc(al, sizeof *m);
    if (!m) {
        ingot_file_close(owned);
        return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0, "lm: model");
    }
    m->be = b;
    m->al = al;
    m->f = f;
    m->owned_file = owned;
    const char *fuse = getenv("INGOT_LM_FUSE");
    m->fuse_off = fuse && !strcmp(fuse, "0");
    if (o) {
        m->notice = o->notice;
        m->notice_ctx = o->notice_ctx;
    }
    ingot_status st = INGOT_OK;
    ingot_device_info di;
    ingot_backend_device_info(b, &di);
    if (!di.host_buffers)
        st = ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, NULL, 0,
                        "lm: backend '%s' has no host buffers", ingot_backend_name(b));
    if (st == INGOT_OK) st = load_config(m, config_path, err);
    if (st == INGOT_OK) {
        m->layers = ingot__calloc(al, (size_t)m->cfg.n_layer * sizeof *m->layers);
        if (!m->layers) st = ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0, "lm: layers");
    }
    if (st == INGOT_OK) st = bind_all(m, err);
    if (st == INGOT_OK) st = rope_setup(m, err);
    if (st == INGOT_OK && o && o->lora_path) st = ingot__lm_lora_apply(m, o, err);
    if (st == INGOT_OK) st = repack_all(m, o, err);
    if (st != INGOT_OK) {
        ingot_lm_free(m);
        return st;
    }
    *out = m;
    return INGOT_OK;
}

INGOT_API ingot_status ingot_lm_open(ingot_backend *b, const ingot_file *f,
                                     const ingot_lm_opts *opts, ingot_lm **out, ingot_error *err)
{
    if (!b || !f || !out)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0, "lm_open: NULL argument");
    *out = NULL;
    return open_common(b, f, opts, opts ? opts->config_path : NULL, NULL, out, err);
}

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

INGOT_API ingot_status ingot_lm_open_path(ingot_backend *b, const char *path,
                                          const ingot_lm_opts *opts, ingot_lm **out,
                                          ingot_error *err)
{
    if (!b || !path || !out)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "lm_open_path: NULL argument");
    *out = NULL;
    size_t pl = strlen(path);
    if (pl > 3000)
        return ingot__err(err, INGOT_E_BAD_PATH, INGOT_NO_OFFSET, NULL, 0, "lm: path too long");
    char weights[4096], config[4096];
    struct stat st;
    if (stat(path, &st) != 0)
        return ingot__err(err, INGOT_E_NOT_FOUND, INGOT_NO_OFFSET, path, pl,
                          "lm: no such file or folder: %s", path);
    if (S_ISDIR(st.st_mode)) {
        static const char *const names[] = {"model.safetensors", "model.safetensors.index.json",
                                            "pytorch_model.bin", "model.gguf", "model.ingot"};
        weights[0] = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0] && !weights[0]; i++) {
            snprintf(weights, sizeof weights, "%s/%s", path, names[i]);
            if (!is_file(weights)) weights[0] = 0;
        }
        if (!weights[0])
            return ingot__err(err, INGOT_E_NOT_FOUND, INGOT_NO_OFFSET, path, pl,
                              "lm: folder %s has none of model.safetensors, "
                              "model.safetensors.index.json, pytorch_model.bin", path);
        snprintf(config, sizeof config, "%s/config.json", path);
    } else {
        snprintf(weights, sizeof weights, "%s", path);
        const char *slash = strrchr(path, '/');
        int dl = slash ? (int)(slash - path) : 1;
        snprintf(config, sizeof config, "%.*s/config.json", dl, slash ? path : ".");
    }
    const char *cfg = opts && opts->config_path ? opts->config_path
                                                : (is_file(config) ? config : NULL);
    ingot_open_opts oo = {0};
    oo.allocator = ingot_backend_allocator(b);
    ingot_file *f = NULL;
    ING_TRY(ingot_file_open(weights, &oo, &f, err));
    return open_common(b, f, opts, cfg, f, out, err);
}

static void free_layer(const ingot_lm *m, lm_layer *ly)
{
    lm_w *ws[] = {&ly->attn_norm, &ly->attn_norm_b, &ly->wq, &ly->bq, &ly->wk, &ly->bk, &ly->wv,
                  &ly->bv, &ly->wqkv, &ly->bqkv, &ly->wo, &ly->bo, &ly->ffn_norm,
                  &ly->ffn_norm_b, &ly->w_gate, &ly->w_up, &ly->b_up, &ly->w_down, &ly->b_down,
                  &ly->router, &ly->exps[0], &ly->exps[1], &ly->exps[2]};
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) unbind(ws[i]);
    if (ly->exp) {
        for (size_t i = 0; i < (size_t)m->cfg.n_expert * 3; i++) unbind(&ly->exp[i]);
        ingot__free(m->al, ly->exp, (size_t)m->cfg.n_expert * 3 * sizeof *ly->exp);
    }
}

INGOT_API void ingot_lm_free(ingot_lm *m)
{
    if (!m) return;
    if (m->layers) {
        for (uint32_t l = 0; l < m->cfg.n_layer; l++) free_layer(m, &m->layers[l]);
        ingot__free(m->al, m->layers, (size_t)m->cfg.n_layer * sizeof *m->layers);
    }
    unbind(&m->output);
    unbind(&m->tok_embd.copy);
    unbind(&m->pos_embd.copy);
    unbind(&m->out_norm);
    unbind(&m->out_norm_b);
    if (m->rp_arena)
        ingot__free_table(m->al, m->rp_arena, m->rp_arena_bytes, m->rp_raw, m->rp_raw_bytes);
    ingot_buffer_free(m->vec_arena);
    ingot_file_close(m->owned_file);
    ingot__free(m->al, m, sizeof *m);
}

INGOT_API const ingot_lm_config *ingot_lm_get_config(const ingot_lm *m)
{
    return m ? &m->cfg : NULL;
}
INGOT_API const ingot_file *ingot_lm_file(const ingot_lm *m) { return m ? m->f : NULL; }
INGOT_API ingot_backend *ingot_lm_backend(const ingot_lm *m) { return m ? m->be : NULL; }

/* ---- estimates ---- */

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return ing_mul(a, b, &r) ? r : UINT64_MAX;
}
static uint64_t sat_add(uint64_t a, uint64_t b)
{
    uint64_t r;
    return ing_add(a, b, &r) ? r : UINT64_MAX;
}

INGOT_API void ingot_lm_estimate_plan(const ingot_lm *m, uint32_t n_ctx, ingot_dtype kv_dtype,
                                      uint32_t n_batch, ingot_lm_estimate *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!m) return;
    const ingot_lm_config *c = &m->cfg;
    uint64_t E = c->n_expert, U = c->n_expert_used;
    out->weight_bytes = sat_add(m->weight_bytes, E ? m->expert_bytes / E * U : 0);
    uint64_t D = c->dim, F = c->ffn_dim, Q = (uint64_t)c->n_head * c->head_dim,
             KV = (uint64_t)c->n_head_kv * c->head_dim;
    uint64_t attn = D * (c->arch == INGOT_LM_ARCH_GPT2 ? 3 * D : Q + 2 * KV) + Q * D;
    uint64_t ffn = c->arch == INGOT_LM_ARCH_GPT2 ? 2 * D * F : 3 * D * F;
    if (E) ffn = sat_add(sat_mul(ffn, U), D * E);
    uint64_t per_layer = sat_add(attn, ffn);
    out->flops_per_token = sat_mul(2, sat_add(sat_mul(per_layer, c->n_layer),
                                              (uint64_t)c->vocab * D));
    out->owned_bytes = m->owned_bytes;
    ingot_lm_session_opts so = {n_ctx, kv_dtype, n_batch};
    uint64_t kv = 0, scratch = 0;
    ingot__lm_session_sizes(m, &so, &kv, &scratch);
    out->kv_bytes = kv;
    out->scratch_bytes = scratch;
    out->peak_bytes = sat_add(sat_add(out->owned_bytes, kv), scratch);
}
