/*
 * test_backend_conformance.c - runs every golden case of tests/golden/backend/cases.bin (made by
 * scripts/gen_backend_goldens.py with torch/numpy) on every registered backend and compares:
 * floats by NMSE = sum((a-b)^2)/sum(a^2) against the case's limit (1e-7 f32, 5e-4 f16/bf16 and
 * quantized paths; limit 0 = exact), ints, bools and quantized blocks exactly. Prints totals
 * (cases, ops, op x dtype pairs) per backend; the cpu backend runs once per ISA level the CPU has
 * (ingot_cpu_isa_set_cap), and the levels it lacks are named as not run.
 */
#include <math.h>

#include "backend_internal.h"
#include "harness.h"
#include "files.h"
#include "ingot/backend.h"

#define GOLDEN INGOT_SOURCE_DIR "/tests/golden/backend/cases.bin"
#define MAXT 6

typedef struct gtensor {
    uint32_t dtype, rank;
    int64_t shape[INGOT_MAX_RANK], strides[INGOT_MAX_RANK], offset;
    uint64_t nbytes;
    const uint8_t *raw;
} gtensor;

typedef struct gcase {
    char name[96], op[48];
    uint32_t nparams, nin, nout;
    double params[24];
    gtensor in[MAXT], out[MAXT];
    double limit;
} gcase;

typedef struct reader {
    const uint8_t *p, *end;
    bool bad;
} reader;

static void rd(reader *r, void *dst, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = true;
        memset(dst, 0, n);
        return;
    }
    memcpy(dst, r->p, n);
    r->p += n;
}

static void rd_str(reader *r, char *dst, size_t cap)
{
    uint16_t n = 0;
    rd(r, &n, 2);
    if (n >= cap) {
        r->bad = true;
        return;
    }
    rd(r, dst, n);
    dst[n] = 0;
}

static void rd_tensor(reader *r, gtensor *t)
{
    rd(r, &t->dtype, 4);
    rd(r, &t->rank, 4);
    if (t->rank > INGOT_MAX_RANK) {
        r->bad = true;
        return;
    }
    rd(r, t->shape, 8 * t->rank);
    rd(r, t->strides, 8 * t->rank);
    rd(r, &t->offset, 8);
    rd(r, &t->nbytes, 8);
    if (r->bad || (uint64_t)(r->end - r->p) < t->nbytes) {
        r->bad = true;
        return;
    }
    t->raw = r->p;
    r->p += t->nbytes;
}

static bool rd_case(reader *r, gcase *c)
{
    memset(c, 0, sizeof *c);
    rd_str(r, c->name, sizeof c->name);
    rd_str(r, c->op, sizeof c->op);
    rd(r, &c->nparams, 4);
    if (c->nparams > 24) return false;
    rd(r, c->params, 8 * c->nparams);
    rd(r, &c->nin, 4);
    if (c->nin > MAXT) return false;
    for (uint32_t i = 0; i < c->nin; i++) rd_tensor(r, &c->in[i]);
    rd(r, &c->nout, 4);
    if (c->nout > MAXT) return false;
    for (uint32_t i = 0; i < c->nout; i++) rd_tensor(r, &c->out[i]);
    rd(r, &c->limit, 8);
    return !r->bad;
}

static size_t esz(uint32_t dt)
{
    size_t s = ing_esize((ingot_dtype)dt);
    return s ? s : 1;
}

/* Runs one case's op on backend b. */
static ingot_status run_op(ingot_backend *b, const gcase *c, ingot_tensor *in, ingot_tensor *out,
                           ingot_error *e)
{
    const char *op = c->op;
    const double *p = c->params;
    size_t n;
#define PFX(s) (n = strlen(s), strncmp(op, s, n) == 0)
    if (PFX("unary.")) {
        for (int u = 1; u <= 19; u++)
            if (ingot_unary_op_name((ingot_unary_op)u) &&
                !strcmp(op + n, ingot_unary_op_name((ingot_unary_op)u)))
                return ingot_op_unary(b, (ingot_unary_op)u, &out[0], &in[0], e);
        return INGOT_E_NOT_FOUND;
    }
    if (PFX("binary.") || PFX("binary_scalar.")) {
        bool scalar = op[6] == '_';
        for (int u = 1; u <= 11; u++)
            if (!strcmp(op + n, ingot_binary_op_name((ingot_binary_op)u)))
                return scalar ? ingot_op_binary_scalar(b, (ingot_binary_op)u, &out[0], &in[0],
                                                       p[0], e)
                              : ingot_op_binary(b, (ingot_binary_op)u, &out[0], &in[0], &in[1], e);
        return INGOT_E_NOT_FOUND;
    }
    if (PFX("cmp.")) {
        for (int u = 1; u <= 6; u++)
            if (!strcmp(op + n, ingot_cmp_op_name((ingot_cmp_op)u)))
                return ingot_op_compare(b, (ingot_cmp_op)u, &out[0], &in[0], &in[1], e);
        return INGOT_E_NOT_FOUND;
    }
    if (PFX("reduce.")) {
        for (int u = 1; u <= 9; u++)
            if (!strcmp(op + n, ingot_reduce_op_name((ingot_reduce_op)u)))
                return ingot_op_reduce(b, (ingot_reduce_op)u, &out[0], &in[0], (uint32_t)p[0], e);
        return INGOT_E_NOT_FOUND;
    }
    if (PFX("act.")) {
        ingot_act_op a;
        if (ingot_act_op_from_name(op + n, strlen(op + n), &a) != INGOT_OK)
            return INGOT_E_NOT_FOUND;
        return ingot_op_activation(b, a, &out[0], &in[0], p[0], e);
    }
    if (!strcmp(op, "clamp")) return ingot_op_clamp(b, &out[0], &in[0], p[0], p[1], e);
    if (!strcmp(op, "where")) return ingot_op_where(b, &out[0], &in[0], &in[1], &in[2], e);
    if (!strcmp(op, "mask_fill")) return ingot_op_mask_fill(b, &out[0], &in[0], &in[1], p[0], e);
    if (!strcmp(op, "copy")) return ingot_op_copy(b, &out[0], &in[0], e);
    if (!strcmp(op, "cast")) return ingot_op_cast(b, &out[0], &in[0], e);
    if (!strcmp(op, "matmul")) return ingot_op_matmul(b, &out[0], &in[0], &in[1], e);
    if (!strcmp(op, "cumsum")) return ingot_op_cumsum(b, &out[0], &in[0], (uint32_t)p[0], e);
    if (!strcmp(op, "topk"))
        return ingot_op_topk(b, &out[0], &out[1], &in[0], (uint32_t)p[0], p[1] != 0, e);
    if (!strcmp(op, "sort"))
        return ingot_op_sort(b, &out[0], &out[1], &in[0], (uint32_t)p[0], p[1] != 0, e);
    if (!strcmp(op, "top_p")) return ingot_op_top_p(b, &out[0], &out[1], &in[0], p[0], p[1] != 0, e);
    if (!strcmp(op, "gather"))
        return ingot_op_gather(b, &out[0], &in[0], (uint32_t)p[0], &in[1], e);
    if (!strcmp(op, "scatter_add")) {
        ING_TRY(ingot_op_copy(b, &out[0], &in[0], e));
        return ingot_op_scatter_add(b, &out[0], (uint32_t)p[0], &in[1], &in[2], e);
    }
    if (!strcmp(op, "index_select"))
        return ingot_op_index_select(b, &out[0], &in[0], (uint32_t)p[0], &in[1], e);
    if (!strcmp(op, "cat")) {
        const ingot_tensor *srcs[MAXT];
        for (uint32_t i = 0; i < c->nin; i++) srcs[i] = &in[i];
        return ingot_op_cat(b, &out[0], srcs, c->nin, (uint32_t)p[0], e);
    }
    if (!strcmp(op, "softmax") || !strcmp(op, "log_softmax"))
        return ingot_op_softmax(b, &out[0], &in[0], (uint32_t)p[0], op[0] == 'l', e);
    if (!strcmp(op, "linear"))
        return ingot_op_linear(b, &out[0], &in[0], &in[1], p[0] != 0 ? &in[2] : NULL, e);
    if (!strcmp(op, "conv")) {
        ingot_conv_params cp = {0};
        cp.ndim = (uint32_t)p[0];
        for (int i = 0; i < 3; i++) {
            cp.stride[i] = (uint32_t)p[2];
            cp.padding[i] = (uint32_t)p[3];
            cp.dilation[i] = (uint32_t)p[4];
        }
        cp.groups = (uint32_t)p[5];
        return ingot_op_conv(b, &out[0], &in[0], &in[1], p[1] != 0 ? &in[2] : NULL, &cp, e);
    }
    if (!strcmp(op, "pool")) {
        ingot_pool_params pp = {0};
        pp.kind = (ingot_pool_kind)(int)p[0];
        pp.ndim = (uint32_t)p[1];
        for (int i = 0; i < 3; i++) {
            pp.kernel[i] = (uint32_t)p[2];
            pp.stride[i] = (uint32_t)p[3];
            pp.padding[i] = (uint32_t)p[4];
            pp.dilation[i] = (uint32_t)p[5];
        }
        pp.count_include_pad = p[6] != 0;
        return ingot_op_pool(b, &out[0], &in[0], &pp, e);
    }
    if (!strcmp(op, "embedding")) return ingot_op_embedding(b, &out[0], &in[0], &in[1], e);
    if (!strcmp(op, "layer_norm")) {
        uint32_t k = 1;
        const ingot_tensor *w = p[1] != 0 ? &in[k++] : NULL;
        const ingot_tensor *bb = p[2] != 0 ? &in[k++] : NULL;
        return ingot_op_layer_norm(b, &out[0], &in[0], w, bb, p[0], e);
    }
    if (!strcmp(op, "rms_norm"))
        return ingot_op_rms_norm(b, &out[0], &in[0], p[1] != 0 ? &in[1] : NULL, p[0], e);
    if (!strcmp(op, "batch_norm"))
        return ingot_op_batch_norm(b, &out[0], &in[0], &in[1], &in[2], &in[3], &in[4], p[0], e);
    if (!strcmp(op, "rope"))
        return ingot_op_rope(b, &out[0], &in[0], &in[1], p[0], (ingot_rope_mode)(int)p[1], e);
    if (!strcmp(op, "attention")) {
        ingot_attn_params ap = {p[0], p[1] != 0};
        return ingot_op_attention(b, &out[0], &in[0], &in[1], &in[2], &ap, e);
    }
    if (!strcmp(op, "quantize"))
        return ingot_op_quantize(b, &out[0], c->nout > 1 ? &out[1] : NULL, &in[0], e);
    if (!strcmp(op, "dequantize"))
        return ingot_op_dequantize(b, &out[0], &in[0], c->nin > 1 ? &in[1] : NULL, e);
    if (!strcmp(op, "qlinear")) {
        bool i8 = in[1].dtype == INGOT_DTYPE_I8;
        return ingot_op_qlinear(b, &out[0], &in[0], &in[1], i8 ? &in[2] : NULL,
                                (!i8 && p[0] != 0) ? &in[2] : NULL, e);
    }
#undef PFX
    return INGOT_E_NOT_FOUND;
}

/* Compares got (dense, dtype dt) with the golden; returns true on a match and sets *nmse. */
static bool compare(const gtensor *want, const uint8_t *got, double limit, double *nmse)
{
    ingot_dtype dt = (ingot_dtype)want->dtype;
    *nmse = 0;
    uint64_t n = 1;
    for (uint32_t i = 0; i < want->rank; i++) n *= (uint64_t)want->shape[i];
    int k = ing_kind(dt);
    if (k == ING_K_QUANT) return memcmp(got, want->raw, want->nbytes) == 0;
    if (k != ING_K_FLOAT || limit == 0) {
        size_t es = ing_esize(dt);
        for (uint64_t i = 0; i < n; i++) {
            double a = ing_ld(dt, want->raw + i * es), b = ing_ld(dt, got + i * es);
            if (k == ING_K_INT ? ing_ldi(dt, want->raw + i * es) != ing_ldi(dt, got + i * es)
                               : !(a == b || (a != a && b != b))) {
                *nmse = INFINITY;
                return false;
            }
        }
        return true;
    }
    double num = 0, den = 0;
    size_t es = ing_esize(dt);
    for (uint64_t i = 0; i < n; i++) {
        double a = ing_ld(dt, want->raw + i * es), b = ing_ld(dt, got + i * es);
        if (a != a || b != b) {
            if ((a != a) != (b != b)) {
                *nmse = INFINITY;
                return false;
            }
            continue;
        }
        if (isinf(a) || isinf(b)) {
            if (a != b) {
                *nmse = INFINITY;
                return false;
            }
            continue;
        }
        num += (a - b) * (a - b);
        den += a * a;
    }
    *nmse = den > 0 ? num / den : num;
    return *nmse <= limit;
}

typedef struct tally {
    int cases, passed;
    char ops[128][48];
    int nops;
    char pairs[512][64];
    int npairs;
} tally;

static void tally_add(tally *t, const char *name)
{
    char op[48] = {0}, pair[64] = {0};
    const char *s1 = strchr(name, '/');
    const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    if (!s1 || !s2) return;
    snprintf(op, sizeof op, "%.*s", (int)(s1 - name), name);
    snprintf(pair, sizeof pair, "%.*s", (int)(s2 - name), name);
    bool f = false;
    for (int i = 0; i < t->nops && !f; i++) f = !strcmp(t->ops[i], op);
    if (!f && t->nops < 128) strcpy(t->ops[t->nops++], op);
    f = false;
    for (int i = 0; i < t->npairs && !f; i++) f = !strcmp(t->pairs[i], pair);
    if (!f && t->npairs < 512) strcpy(t->pairs[t->npairs++], pair);
}

static void run_backend(const char *bname, const uint8_t *file, size_t size)
{
    ingot_backend *b = NULL;
    ingot_error e;
    ingot_backend_opts o = {0};
    o.threads = 2;
    ASSERT_OK(ingot_backend_new(bname, &o, &b, &e));
    reader r = {file + 12, file + size, false};
    uint32_t ncases;
    memcpy(&ncases, file + 8, 4);
    static tally t;
    memset(&t, 0, sizeof t);
    for (uint32_t ci = 0; ci < ncases; ci++) {
        gcase c;
        if (!rd_case(&r, &c)) {
            CHECK(false, "golden file malformed at case %u", ci);
            break;
        }
        ingot_tensor in[MAXT], out[MAXT];
        ingot_buffer *bufs[2 * MAXT] = {0};
        int nb = 0;
        bool ok = true;
        for (uint32_t i = 0; i < c.nin && ok; i++) {
            const gtensor *g = &c.in[i];
            ok = ingot_buffer_alloc(b, (size_t)g->nbytes, &bufs[nb], &e) == INGOT_OK &&
                 ingot_buffer_write(bufs[nb], 0, g->raw, (size_t)g->nbytes, &e) == INGOT_OK &&
                 ingot_tensor_init_strided(&in[i], bufs[nb], (uint64_t)g->offset * esz(g->dtype),
                                           (ingot_dtype)g->dtype, g->rank, g->shape, g->strides,
                                           &e) == INGOT_OK;
            nb++;
        }
        for (uint32_t i = 0; i < c.nout && ok; i++) {
            const gtensor *g = &c.out[i];
            ok = ingot_buffer_alloc(b, (size_t)g->nbytes, &bufs[nb], &e) == INGOT_OK &&
                 ingot_tensor_init(&out[i], bufs[nb], 0, (ingot_dtype)g->dtype, g->rank, g->shape,
                                   &e) == INGOT_OK;
            nb++;
        }
        t.cases++;
        ingot_status st = ok ? run_op(b, &c, in, out, &e) : e.code;
        bool pass = st == INGOT_OK;
        double worst = 0;
        for (uint32_t i = 0; pass && i < c.nout; i++) {
            double nm;
            pass = compare(&c.out[i], ingot_buffer_host(bufs[c.nin + i]), c.limit, &nm);
            if (nm > worst) worst = nm;
        }
        if (pass) {
            t.passed++;
            tally_add(&t, c.name);
        } else if (st != INGOT_OK) {
            char msg[300];
            CHECK(false, "%s %s: %s", bname, c.name, ingot_error_format(&e, msg, sizeof msg));
        } else {
            CHECK(false, "%s %s: NMSE %.3g > limit %.3g", bname, c.name, worst, c.limit);
        }
        for (int i = 0; i < nb; i++) ingot_buffer_free(bufs[i]);
    }
    fprintf(stderr, "  conformance %-4s: %d/%d cases passed, %d ops, %d op x dtype pairs\n", bname,
            t.passed, t.cases, t.nops, t.npairs);
    ingot_backend_free(b);
}

TEST(test_conformance_all_backends)
{
    size_t size = 0;
    uint8_t *file = test_read_file(GOLDEN, &size);
    ASSERT_TRUE(file != NULL);
    ASSERT_TRUE(size > 12 && memcmp(file, "IGBK0001", 8) == 0);
    for (uint32_t i = 0; i < ingot_backend_count(); i++) {
        const char *name = ingot_backend_name_at(i);
        if (strcmp(name, "cpu") != 0) {
            run_backend(name, file, size);
            continue;
        }
        /* cpu: once per ISA level this CPU runs; the others are named as not run */
        for (int l = 0; l < INGOT_CPU_ISA_COUNT; l++) {
            if (!ingot_cpu_isa_supported((ingot_cpu_isa)l)) {
                fprintf(stderr, "  conformance cpu at %s: not run (this CPU lacks it)\n",
                        ingot_cpu_isa_name((ingot_cpu_isa)l));
                continue;
            }
            ASSERT_EQ(ingot_cpu_isa_set_cap((ingot_cpu_isa)l), l);
            fprintf(stderr, "  conformance cpu at %s:\n", ingot_cpu_isa_name((ingot_cpu_isa)l));
            run_backend(name, file, size);
        }
        ingot_cpu_isa_set_cap(INGOT_CPU_ISA_AMX);
    }
    free(file);
}

RUN_TESTS(T(test_conformance_all_backends))
