/*
 * cpu.c - the "cpu" backend: the ref op set with fast paths for what the MLP/GPT-2/Llama hot
 * loops need: f32 linear (threaded, SIMD picked at run time), Q8_0 linear with int8 x int8 dots
 * on activations quantized per 32-block (as ggml), contiguous f32 activations and softmax. Every
 * other op, and every case a fast path does not cover (strided views, other dtypes), runs the
 * ref definition.
 *
 * Kernels plug in through cpu_kernels (cpu.h): src/backend/cpu/kernels/ (the dedicated GEMM /
 * GEMV / int8 work) replaces ingot__cpu_pick_kernels' choices; nothing else here changes.
 */
#include <unistd.h>

#include "cpu.h"
#include "ref/ref.h"

static cpu_ctx *ctx_of(ingot_backend *b) { return ingot_backend_ctx(b); }

/* ---- f32 linear ---- */

typedef struct lin_job {
    const cpu_kernels *k;
    const float *x, *w, *bias;
    float *y;
    int64_t M, OUT, IN, ldw;
    bool by_rows;
} lin_job;

static void lin_task(void *arg, int64_t b, int64_t e)
{
    const lin_job *j = arg;
    if (j->by_rows)
        j->k->linear_f32(j->x + b * j->IN, j->IN, j->w, j->ldw, j->bias, j->y + b * j->OUT,
                         j->OUT, e - b, 0, j->OUT, j->IN);
    else
        j->k->linear_f32(j->x, j->IN, j->w, j->ldw, j->bias, j->y, j->OUT, j->M, b, e, j->IN);
}

static bool unit_last(const ingot_tensor *t) { return t->rank && t->strides[t->rank - 1] == 1; }

static ingot_status cpu_linear(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                               const ingot_tensor *w, const ingot_tensor *bias, ingot_error *err)
{
    if (x->dtype != INGOT_DTYPE_F32 || !ingot_tensor_is_contiguous(x) ||
        !ingot_tensor_is_contiguous(dst) || !unit_last(w) || (bias && bias->strides[0] != 1) ||
        w->shape[0] < 1)
        return ingot__ref_linear(b, dst, x, w, bias, err);
    cpu_ctx *c = ctx_of(b);
    int64_t IN = w->shape[1], OUT = w->shape[0], M = ing_nelem(x) / (IN ? IN : 1);
    if (IN == 0) return ingot__ref_linear(b, dst, x, w, bias, err);
    lin_job j = {&c->k, (const float *)(const void *)ing_ptr(x),
                 (const float *)(const void *)ing_ptr(w),
                 bias ? (const float *)(const void *)ing_ptr(bias) : NULL,
                 (float *)(void *)ing_ptr(dst), M, OUT, IN, w->strides[0], false};
    /* Split over output columns (weights stream once) unless there are too few of them. */
    int64_t T = c->threads;
    j.by_rows = OUT < 16 * T && M >= 2 * T;
    if (j.by_rows) ingot__cpu_pool_run(c->pool, M, 2, lin_task, &j);
    else {
        /* Column chunks of ~128 KiB of weights (they stay in L2 while x streams past), but at
         * least two chunks per thread. */
        int64_t chunk = (32768 / IN + 3) & ~(int64_t)3;
        if (chunk < 4) chunk = 4;
        while (chunk > 4 && OUT / chunk < 2 * T) chunk = (chunk / 2 + 3) & ~(int64_t)3;
        ingot__cpu_pool_run(c->pool, OUT, chunk, lin_task, &j);
    }
    return INGOT_OK;
}

/* ---- Q8_0 linear ---- */

typedef struct qlin_job {
    const cpu_kernels *k;
    const uint8_t *w;
    const int8_t *qa;
    const float *da, *bias;
    float *y;
    int64_t M, OUT, nb;
} qlin_job;

static void qlin_task(void *arg, int64_t b, int64_t e)
{
    const qlin_job *j = arg;
    for (int64_t o = b; o < e; o++) {
        const uint8_t *wr = j->w + o * j->nb * 34;
        float bv = j->bias ? j->bias[o] : 0.0f;
        for (int64_t m = 0; m < j->M; m++)
            j->y[m * j->OUT + o] =
                j->k->dot_q8_0(wr, j->qa + m * j->nb * 32, j->da + m * j->nb, j->nb) + bv;
    }
}

static ingot_status scratch(ingot_backend *b, size_t n, void **out, ingot_error *err)
{
    cpu_ctx *c = ctx_of(b);
    if (c->scratch_size < n) {
        void *p = ingot__alloc(&b->alloc, n);
        if (!p)
            return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, "qlinear", 7,
                              "qlinear: %zu bytes of activation scratch", n);
        ingot__free(&b->alloc, c->scratch, c->scratch_size);
        c->scratch = p;
        c->scratch_size = n;
    }
    *out = c->scratch;
    return INGOT_OK;
}

static ingot_status cpu_qlinear(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                const ingot_tensor *w, const ingot_tensor *scale,
                                const ingot_tensor *bias, ingot_error *err)
{
    int64_t IN = w->shape[1], OUT = w->shape[0];
    if (w->dtype != INGOT_DTYPE_Q8_0 || IN == 0 || !ingot_tensor_is_contiguous(x) ||
        !ingot_tensor_is_contiguous(dst) || (bias && bias->strides[0] != 1) || IN % 32)
        return ingot__ref_qlinear(b, dst, x, w, scale, bias, err);
    cpu_ctx *c = ctx_of(b);
    int64_t M = ing_nelem(x) / IN, nb = IN / 32;
    size_t qbytes = (size_t)(M * IN), need = qbytes + (size_t)(M * nb) * sizeof(float) + 16;
    void *s = NULL;
    ING_TRY(scratch(b, need, &s, err));
    int8_t *qa = s;
    float *da = (float *)(void *)((uint8_t *)s + ((qbytes + 15) & ~(size_t)15));
    const float *px = (const float *)(const void *)ing_ptr(x);
    /* Activations to int8 per 32-block (ggml quantize_row_q8_0 rounding). */
    for (int64_t i = 0; i < M * nb; i++) {
        const float *v = px + i * 32;
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(v[j]));
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        da[i] = d;
        for (int j = 0; j < 32; j++) qa[i * 32 + j] = (int8_t)roundf(v[j] * id);
    }
    qlin_job j = {&c->k, ing_ptr(w), qa, da,
                  bias ? (const float *)(const void *)ing_ptr(bias) : NULL,
                  (float *)(void *)ing_ptr(dst), M, OUT, nb};
    ingot__cpu_pool_run(c->pool, OUT, 8, qlin_task, &j);
    return INGOT_OK;
}

/* ---- f32 activations and softmax on contiguous tensors ---- */

typedef struct act_job {
    ingot_act_op op;
    double param;
    const float *a;
    float *d;
    int64_t n; /* softmax: row length */
    bool log;
} act_job;

static void act_task(void *arg, int64_t b, int64_t e)
{
    const act_job *j = arg;
    const float *a = j->a;
    float *d = j->d;
    switch (j->op) {
    case INGOT_ACT_RELU:
        for (int64_t i = b; i < e; i++) d[i] = a[i] < 0 ? 0.0f : a[i];
        break;
    case INGOT_ACT_SIGMOID:
        for (int64_t i = b; i < e; i++) d[i] = 1.0f / (1.0f + expf(-a[i]));
        break;
    case INGOT_ACT_TANH:
        for (int64_t i = b; i < e; i++) d[i] = tanhf(a[i]);
        break;
    case INGOT_ACT_SILU:
        for (int64_t i = b; i < e; i++) d[i] = a[i] / (1.0f + expf(-a[i]));
        break;
    default:
        for (int64_t i = b; i < e; i++) d[i] = (float)ingot__ref_act1(j->op, a[i], j->param);
        break;
    }
}

static ingot_status cpu_activation(ingot_backend *b, ingot_act_op op, ingot_tensor *dst,
                                   const ingot_tensor *a, double param, ingot_error *err)
{
    if (a->dtype != INGOT_DTYPE_F32 || !ingot_tensor_is_contiguous(a) ||
        !ingot_tensor_is_contiguous(dst))
        return ingot__ref_activation(b, op, dst, a, param, err);
    act_job j = {op, param, (const float *)(const void *)ing_ptr(a),
                 (float *)(void *)ing_ptr(dst), 0, false};
    ingot__cpu_pool_run(ctx_of(b)->pool, ing_nelem(a), 16384, act_task, &j);
    return INGOT_OK;
}

static void smax_task(void *arg, int64_t b, int64_t e)
{
    const act_job *j = arg;
    for (int64_t r = b; r < e; r++) {
        const float *a = j->a + r * j->n;
        float *d = j->d + r * j->n;
        float mx = -INFINITY;
        bool nan = false;
        for (int64_t i = 0; i < j->n; i++) {
            if (a[i] != a[i]) nan = true;
            if (a[i] > mx) mx = a[i];
        }
        if (nan) mx = NAN;
        double sum = 0;
        for (int64_t i = 0; i < j->n; i++) sum += exp((double)a[i] - mx);
        double ls = log(sum);
        for (int64_t i = 0; i < j->n; i++) {
            double v = (double)a[i] - mx;
            d[i] = (float)(j->log ? v - ls : exp(v) / sum);
        }
    }
}

static ingot_status cpu_softmax(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                                uint32_t axis, bool log, ingot_error *err)
{
    if (a->dtype != INGOT_DTYPE_F32 || axis != a->rank - 1 || !ingot_tensor_is_contiguous(a) ||
        !ingot_tensor_is_contiguous(dst))
        return ingot__ref_softmax(b, dst, a, axis, log, err);
    int64_t n = a->shape[axis];
    act_job j = {INGOT_ACT_SOFTMAX, 0, (const float *)(const void *)ing_ptr(a),
                 (float *)(void *)ing_ptr(dst), n, log};
    ingot__cpu_pool_run(ctx_of(b)->pool, ing_nelem(a) / n, 8, smax_task, &j);
    return INGOT_OK;
}

/* ---- instance ---- */

static ingot_status cpu_init(ingot_backend *b, const ingot_backend_opts *o, ingot_error *err)
{
    cpu_ctx *c = ingot__calloc(&b->alloc, sizeof *c);
    if (!c) return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, "cpu", 3, "cpu context");
    uint32_t t = o->threads;
    if (t == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        t = n > 0 ? (uint32_t)n : 1;
    }
    if (t > 256) t = 256;
    ingot__cpu_pick_kernels(&c->k);
    if (ingot__cpu_pool_new(&b->alloc, t, &c->pool) != INGOT_OK) {
        ingot__free(&b->alloc, c, sizeof *c);
        return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, "cpu", 3, "thread pool");
    }
    c->threads = ingot__cpu_pool_threads(c->pool);
    ingot__fmt(c->desc, sizeof c->desc, "host CPU, %s kernels, %u threads", c->k.isa, c->threads);
    ingot_backend_set_ctx(b, c);
    return INGOT_OK;
}

static void cpu_fini(ingot_backend *b)
{
    cpu_ctx *c = ctx_of(b);
    if (!c) return;
    ingot__cpu_pool_free(c->pool);
    if (c->scratch) ingot__free(&b->alloc, c->scratch, c->scratch_size);
    ingot__free(&b->alloc, c, sizeof *c);
}

static void cpu_info(const ingot_backend *b, ingot_device_info *out)
{
    const cpu_ctx *c = ingot_backend_ctx(b);
    out->description = c->desc;
    out->threads = c->threads;
}

static const ingot_module_ops cpu_module_ops = {
    .linear = cpu_linear,
    .conv = ingot__ref_conv,
    .pool = ingot__ref_pool,
    .layer_norm = ingot__ref_layer_norm,
    .rms_norm = ingot__ref_rms_norm,
    .batch_norm = ingot__ref_batch_norm,
    .rope = ingot__ref_rope,
    .attention = ingot__ref_attention,
};

static const ingot_activation_ops cpu_activation_ops = {
    .activation = cpu_activation,
    .softmax = cpu_softmax,
};

static const ingot_quant_ops cpu_quant_ops = {
    .quantize = ingot__ref_quantize,
    .dequantize = ingot__ref_dequantize,
    .linear = cpu_qlinear,
};

const ingot_backend_ops ingot__backend_cpu = {
    .abi_version = INGOT_BACKEND_ABI,
    .name = "cpu",
    .init = cpu_init,
    .fini = cpu_fini,
    .device_info = cpu_info,
    .float_ops = &ingot__ref_float_ops,
    .int_ops = &ingot__ref_int_ops,
    .bool_ops = &ingot__ref_bool_ops,
    .quant_ops = &cpu_quant_ops,
    .module_ops = &cpu_module_ops,
    .activation_ops = &cpu_activation_ops,
};
