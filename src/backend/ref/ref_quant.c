/*
 * ref_quant.c - "ref" quantized ops: GGML Q8_0 / Q4_0 blocks (reference rounding of ggml's
 * quantize_row_q8_0_ref / quantize_row_q4_0_ref, ../shared/formats/gguf.md) and per-row int8
 * with an F32 scale; dequantize (also Q4_K, Q5_K, Q6_K through the core decoder); qlinear as
 * dequantize-then-f64-dot, for those and F16 / BF16 weights (the definition the fast
 * int8 paths are measured against).
 */
#include "ingot/quant.h"
#include "ref.h"

/* ggml's rounding is defined without fused multiply-add. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

static void q8_0_block(const float *x, uint8_t *blk)
{
    float amax = 0;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint16_t h = ing_f32_to_f16(d);
    memcpy(blk, &h, 2);
    for (int j = 0; j < 32; j++) blk[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
}

static void q4_0_block(const float *x, uint8_t *blk)
{
    float amax = 0, max = 0;
    for (int j = 0; j < 32; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint16_t h = ing_f32_to_f16(d);
    memcpy(blk, &h, 2);
    for (int j = 0; j < 16; j++) {
        int a = (int)(int8_t)(x[j] * id + 8.5f), c = (int)(int8_t)(x[16 + j] * id + 8.5f);
        if (a > 15) a = 15;
        if (c > 15) c = 15;
        blk[2 + j] = (uint8_t)(a | (c << 4));
    }
}

static float scale_at(const ingot_tensor *scale, int64_t r)
{
    float s;
    memcpy(&s, ing_ptr(scale) + r * scale->strides[0] * 4, 4);
    return s;
}

void ingot__ref_dequant_row(const ingot_tensor *w, const ingot_tensor *scale, int64_t r,
                            float *out)
{
    int64_t cols = w->shape[w->rank - 1];
    if (w->dtype == INGOT_DTYPE_I8) {
        const int8_t *q = (const int8_t *)(ing_ptr(w) + r * w->strides[0]);
        float s = scale_at(scale, r);
        for (int64_t j = 0; j < cols; j++) out[j] = s * (float)q[j];
        return;
    }
    if (w->dtype == INGOT_DTYPE_F16 || w->dtype == INGOT_DTYPE_BF16) {
        const uint8_t *p = ing_ptr(w) + r * w->strides[0] * 2;
        for (int64_t j = 0; j < cols; j++)
            out[j] = (float)ing_ld(w->dtype, p + j * w->strides[1] * 2);
        return;
    }
    uint32_t bb = ingot_dtype_block_bytes(w->dtype), be = ingot_dtype_block_elems(w->dtype);
    if (be != 32) { /* K-quants: the core decoder (bit-exact with gguf-py) */
        const uint8_t *row = ing_ptr(w) + r * (cols / be) * bb;
        (void)ingot_dequantize(w->dtype, row, (size_t)(cols / be) * bb, out, (uint64_t)cols, NULL);
        return;
    }
    const uint8_t *row = ing_ptr(w) + r * (cols / 32) * bb;
    for (int64_t blk = 0; blk < cols / 32; blk++) {
        const uint8_t *p = row + blk * bb;
        uint16_t h;
        memcpy(&h, p, 2);
        float d = ing_f16_to_f32(h);
        float *o = out + blk * 32;
        if (w->dtype == INGOT_DTYPE_Q8_0) {
            for (int j = 0; j < 32; j++) o[j] = d * (float)(int8_t)p[2 + j];
        } else {
            for (int j = 0; j < 16; j++) {
                o[j] = d * (float)((p[2 + j] & 0x0f) - 8);
                o[j + 16] = d * (float)((p[2 + j] >> 4) - 8);
            }
        }
    }
}

/* Rows of a [.., cols] F32 tensor walked row by row through a 32-float staging block. */
ingot_status ingot__ref_quantize(ingot_backend *b, ingot_tensor *dst, ingot_tensor *scale,
                                 const ingot_tensor *src, ingot_error *err)
{
    (void)b;
    (void)err;
    int64_t rows = dst->shape[0], cols = dst->shape[1];
    const uint8_t *ps = ing_ptr(src);
    int64_t s0 = src->strides[0] * 4, s1 = src->strides[1] * 4;
    if (dst->dtype == INGOT_DTYPE_I8) {
        for (int64_t r = 0; r < rows; r++) {
            float amax = 0;
            for (int64_t j = 0; j < cols; j++) {
                float v;
                memcpy(&v, ps + r * s0 + j * s1, 4);
                amax = fmaxf(amax, fabsf(v));
            }
            float s = amax / 127.0f;
            memcpy(ing_ptr(scale) + r * scale->strides[0] * 4, &s, 4);
            int8_t *q = (int8_t *)(ing_ptr(dst) + r * dst->strides[0]);
            for (int64_t j = 0; j < cols; j++) {
                float v;
                memcpy(&v, ps + r * s0 + j * s1, 4);
                double t = s != 0 ? (double)v / (double)s : 0.0;
                t = t < 0 ? -floor(-t + 0.5) : floor(t + 0.5);
                if (t > 127) t = 127;
                if (t < -127) t = -127;
                q[j * dst->strides[1]] = (int8_t)t;
            }
        }
        return INGOT_OK;
    }
    uint32_t bb = ingot_dtype_block_bytes(dst->dtype);
    uint8_t *pd = ing_ptr(dst);
    float blk[32];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c0 = 0; c0 < cols; c0 += 32) {
            for (int j = 0; j < 32; j++) memcpy(&blk[j], ps + r * s0 + (c0 + j) * s1, 4);
            uint8_t *out = pd + (r * (cols / 32) + c0 / 32) * bb;
            if (dst->dtype == INGOT_DTYPE_Q8_0) q8_0_block(blk, out);
            else q4_0_block(blk, out);
        }
    return INGOT_OK;
}

ingot_status ingot__ref_dequantize(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                                   const ingot_tensor *scale, ingot_error *err)
{
    int64_t rows = src->shape[0], cols = src->shape[1];
    size_t nbytes = (size_t)cols * sizeof(float);
    float *row = ingot__alloc(&b->alloc, nbytes); /* documented scratch: one row */
    if (!row)
        return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, "dequantize", 10,
                          "dequantize: %zu bytes of row scratch", nbytes);
    uint8_t *pd = ing_ptr(dst);
    for (int64_t r = 0; r < rows; r++) {
        ingot__ref_dequant_row(src, scale, r, row);
        for (int64_t j = 0; j < cols; j++)
            memcpy(pd + (r * dst->strides[0] + j * dst->strides[1]) * 4, &row[j], 4);
    }
    ingot__free(&b->alloc, row, nbytes);
    return INGOT_OK;
}

ingot_status ingot__ref_qlinear(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                const ingot_tensor *w, const ingot_tensor *scale,
                                const ingot_tensor *bias, ingot_error *err)
{
    int64_t OUT = w->shape[0], IN = w->shape[1];
    size_t nbytes = (size_t)IN * sizeof(float);
    float *row = ingot__alloc(&b->alloc, nbytes); /* documented scratch: one weight row */
    if (!row)
        return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, "qlinear", 7,
                          "qlinear: %zu bytes of row scratch", nbytes);
    uint32_t r = x->rank;
    int64_t xs = x->strides[r - 1] * 4, ds = dst->strides[r - 1] * 4;
    ingot_tensor vx = *x, vd = *dst;
    vx.rank = vd.rank = r - 1;
    /* Output column o for every row of x: dequantize w's row o once, then walk x's rows. */
    for (int64_t o = 0; o < OUT; o++) {
        ingot__ref_dequant_row(w, scale, o, row);
        double bv = bias ? ing_ld(INGOT_DTYPE_F32, ing_ptr(bias) + o * bias->strides[0] * 4) : 0;
        const ingot_tensor *ops[2] = {&vd, &vx};
        ing_it it;
        ing_it_init(&it, r - 1, x->shape, 2, ops);
        do {
            double acc = bv;
            for (int64_t i = 0; i < IN; i++) acc += ing_ld(INGOT_DTYPE_F32, it.p[1] + i * xs) * row[i];
            ing_st(INGOT_DTYPE_F32, it.p[0] + o * ds, acc);
        } while (ing_it_next(&it));
    }
    ingot__free(&b->alloc, row, nbytes);
    return INGOT_OK;
}
