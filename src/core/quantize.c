/*
 * quantize.c - F32 -> GGML blocks (ingot_quantize, include/ingot/quant.h): Q8_0 Q4_0 Q4_1 Q5_0
 * Q5_1 Q4_K Q5_K Q6_K, written from the published description of llama.cpp's reference
 * quantizers (ggml's quantize_row_*_ref, no importance matrix). Block layouts:
 * ../shared/formats/gguf.md §5; the decoders are in quant.c. Hosted core; allocates nothing.
 */
#include "ingot/quant.h"

#include <math.h>

#include "deps.h"
#include "error.h"
#include "half.h"

/* Products and sums are rounded one by one, in the reference's order: no contraction to FMA
 * (GCC does not contract in ISO C mode; clang honours the pragma). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

static inline float fabs_f(float x) { return x < 0 ? -x : x; }

/* Round to nearest, ties to even, for |x| < 2^22: ggml's nearest_int (adding 1.5 * 2^23 leaves
 * the rounded integer in the low mantissa bits). */
static inline int nearest_int(float x)
{
    float v = x + 12582912.f;
    int32_t i;
    ING_MEMCPY(&i, &v, 4);
    return (i & 0x007FFFFF) - 0x00400000;
}

/* roundf: half away from zero (exact for the |x| <= 127.5 of Q8_0). */
static inline float round_away(float x)
{
    float a = fabs_f(x), t = (float)(int32_t)a;
    if (a - t >= 0.5f) t += 1.0f;
    return x < 0 ? -t : t;
}

#define GROUP_MAX_EPS 1e-15f

/* ---------------------------------------------------------------------------------------------
 * 32-element blocks
 * ------------------------------------------------------------------------------------------- */

/* Q8_0: f16 d; i8 qs[32]. d = max|x| / 127, q = roundf(x / d). */
static void q_q8_0(const float *x, uint8_t *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, x += 32, y += 34) {
        float amax = 0;
        for (int j = 0; j < 32; j++) {
            float a = fabs_f(x[j]);
            if (a > amax) amax = a;
        }
        const float d = amax / 127.f, id = d != 0 ? 1.0f / d : 0.0f;
        ing_st16(y, ingot__f32_to_f16(d));
        for (int j = 0; j < 32; j++) y[2 + j] = (uint8_t)(int8_t)round_away(x[j] * id);
    }
}

/* The value of largest magnitude (the first one on ties). */
static float signed_max(const float *x, int n)
{
    float amax = 0, max = 0;
    for (int j = 0; j < n; j++) {
        float a = fabs_f(x[j]);
        if (amax < a) amax = a, max = x[j];
    }
    return max;
}

/* Q4_0: f16 d; u8 qs[16]; element j low nibble of qs[j], j+16 high nibble. d = max / -8. */
static void q_q4_0(const float *x, uint8_t *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, x += 32, y += 18) {
        const float d = signed_max(x, 32) / -8.f, id = d != 0 ? 1.0f / d : 0.0f;
        ing_st16(y, ingot__f32_to_f16(d));
        for (int j = 0; j < 16; j++) {
            int a = (int)(int8_t)(x[j] * id + 8.5f), c = (int)(int8_t)(x[j + 16] * id + 8.5f);
            a = a < 15 ? a : 15;
            c = c < 15 ? c : 15;
            y[2 + j] = (uint8_t)(a | (c << 4));
        }
    }
}

static void min_max(const float *x, int n, float *mn, float *mx)
{
    float lo = x[0], hi = x[0];
    for (int j = 1; j < n; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *mn = lo, *mx = hi;
}

/* Q4_1: f16 d; f16 m; u8 qs[16]. d = (max - min) / 15, m = min. */
static void q_q4_1(const float *x, uint8_t *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, x += 32, y += 20) {
        float mn, mx;
        min_max(x, 32, &mn, &mx);
        const float d = (mx - mn) / 15.f, id = d != 0 ? 1.0f / d : 0.0f;
        ing_st16(y, ingot__f32_to_f16(d));
        ing_st16(y + 2, ingot__f32_to_f16(mn));
        for (int j = 0; j < 16; j++) {
            int a = (int)(int8_t)((x[j] - mn) * id + 0.5f);
            int c = (int)(int8_t)((x[j + 16] - mn) * id + 0.5f);
            a = a < 15 ? a : 15;
            c = c < 15 ? c : 15;
            y[4 + j] = (uint8_t)(a | (c << 4));
        }
    }
}

/* Q5_0: f16 d; u32 qh (bit j: 5th bit of element j); u8 qs[16]. d = max / -16. */
static void q_q5_0(const float *x, uint8_t *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, x += 32, y += 22) {
        const float d = signed_max(x, 32) / -16.f, id = d != 0 ? 1.0f / d : 0.0f;
        uint32_t qh = 0;
        ing_st16(y, ingot__f32_to_f16(d));
        for (int j = 0; j < 16; j++) {
            int a = (int)(int8_t)(x[j] * id + 16.5f), c = (int)(int8_t)(x[j + 16] * id + 16.5f);
            a = a < 31 ? a : 31;
            c = c < 31 ? c : 31;
            y[6 + j] = (uint8_t)((a & 15) | ((c & 15) << 4));
            qh |= (uint32_t)((a >> 4) & 1) << j | (uint32_t)((c >> 4) & 1) << (j + 16);
        }
        ing_st32(y + 2, qh);
    }
}

/* Q5_1: f16 d; f16 m; u32 qh; u8 qs[16]. d = (max - min) / 31, m = min. */
static void q_q5_1(const float *x, uint8_t *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, x += 32, y += 24) {
        float mn, mx;
        min_max(x, 32, &mn, &mx);
        const float d = (mx - mn) / 31.f, id = d != 0 ? 1.0f / d : 0.0f;
        uint32_t qh = 0;
        ing_st16(y, ingot__f32_to_f16(d));
        ing_st16(y + 2, ingot__f32_to_f16(mn));
        for (int j = 0; j < 16; j++) {
            int a = (int)(uint8_t)((x[j] - mn) * id + 0.5f);
            int c = (int)(uint8_t)((x[j + 16] - mn) * id + 0.5f);
            y[8 + j] = (uint8_t)((a & 15) | ((c & 15) << 4));
            qh |= (uint32_t)((a >> 4) & 1) << j | (uint32_t)((c >> 4) & 1) << (j + 16);
        }
        ing_st32(y + 4, qh);
    }
}

/* ---------------------------------------------------------------------------------------------
 * K-quants (256-element super-blocks)
 * ------------------------------------------------------------------------------------------- */

/* Fits x[0..n) ~ scale * L + min (L in 0..nmax, min <= 0) minimising sum w * (error)^2: the
 * plain min/max fit first, then nstep + 1 candidate inverse scales (rmin + rdelta * is + nmax) /
 * (max - min), each followed by the weighted least-squares scale and min for its levels; the
 * best fit wins. Returns the scale; *neg_min receives -min. (ggml's make_qkx2_quants.) */
static float fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L,
                           float *neg_min, uint8_t *Laux, float rmin, float rdelta, int nstep)
{
    float mn = x[0], mx = x[0], sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < mn) mn = x[i];
        if (x[i] > mx) mx = x[i];
        float wi = w[i];
        sum_w += wi;
        sum_x += wi * x[i];
    }
    if (mn > 0) mn = 0;
    if (mx == mn) {
        for (int i = 0; i < n; i++) L[i] = 0;
        *neg_min = -mn;
        return 0.f;
    }
    float iscale = (float)nmax / (mx - mn), scale = 1 / iscale, best_error = 0;
    for (int i = 0; i < n; i++) {
        int l = nearest_int(iscale * (x[i] - mn));
        L[i] = (uint8_t)(l < 0 ? 0 : l > nmax ? nmax : l);
        float diff = scale * L[i] + mn - x[i];
        best_error += w[i] * (diff * diff);
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (mx - mn);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = nearest_int(iscale * (x[i] - mn));
            l = l < 0 ? 0 : l > nmax ? nmax : l;
            Laux[i] = (uint8_t)l;
            float wl = w[i] * (float)l;
            sum_l += wl;
            sum_l2 += wl * (float)l;
            sum_xl += wl * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; i++) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                cur_error += w[i] * (diff * diff);
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; i++) L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                mn = this_min;
            }
        }
    }
    *neg_min = -mn;
    return scale;
}

/* The 12 bytes of 6-bit scales and mins of Q4_K/Q5_K: j < 4 in the low 6 bits of bytes j and
 * j+4; j >= 4 split: low nibbles in byte j+4, top 2 bits in the top of bytes j-4 and j. */
static void pack_scale_min(uint8_t *s, const uint8_t ls[8], const uint8_t lm[8])
{
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            s[j] = ls[j];
            s[j + 4] = lm[j];
        } else {
            s[j + 4] = (uint8_t)((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
            s[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
            s[j] |= (uint8_t)((lm[j] >> 4) << 6);
        }
    }
}

static void unpack_scale_min(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* Q4_K (nmax 15) and Q5_K (nmax 31): f16 d; f16 dmin; u8 scales[12]; [Q5_K: u8 qh[32];]
 * u8 qs[128]. Eight sub-blocks of 32, each fitted by fit_scale_min with weights
 * sqrt(mean(x^2)) + |x|; sub-scales and mins quantized to 6 bits against the largest; levels
 * then recomputed with the stored (rounded) scales. */
static void q_k45(const float *x, uint8_t *y, size_t nb, bool q5)
{
    const int nmax = q5 ? 31 : 15;
    const size_t bytes = q5 ? 176 : 144;
    for (size_t b = 0; b < nb; b++, x += 256, y += bytes) {
        uint8_t L[256], Laux[32], ls[8], lm[8];
        float w[32], mins[8], scales[8], max_scale = 0, max_min = 0;
        for (int j = 0; j < 8; j++) {
            float sum_x2 = 0;
            for (int l = 0; l < 32; l++) sum_x2 += x[32 * j + l] * x[32 * j + l];
            float av_x = sqrtf(sum_x2 / 32);
            for (int l = 0; l < 32; l++) w[l] = av_x + fabs_f(x[32 * j + l]);
            scales[j] = q5 ? fit_scale_min(32, 31, x + 32 * j, w, L + 32 * j, &mins[j], Laux,
                                           -0.5f, 0.1f, 15)
                           : fit_scale_min(32, 15, x + 32 * j, w, L + 32 * j, &mins[j], Laux,
                                           -1.f, 0.1f, 20);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
        float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
        for (int j = 0; j < 8; j++) {
            int a = nearest_int(inv_scale * scales[j]), c = nearest_int(inv_min * mins[j]);
            ls[j] = (uint8_t)(a < 63 ? a : 63);
            lm[j] = (uint8_t)(c < 63 ? c : 63);
        }
        uint8_t *sc = y + 4;
        for (int k = 0; k < 12; k++) sc[k] = 0;
        pack_scale_min(sc, ls, lm);
        uint16_t dh = ingot__f32_to_f16(max_scale / 63.f), mh = ingot__f32_to_f16(max_min / 63.f);
        ing_st16(y, dh);
        ing_st16(y + 2, mh);
        const float dd = ingot__f16_to_f32(dh), dm = ingot__f16_to_f32(mh);
        for (int j = 0; j < 8; j++) {
            uint8_t s, m;
            unpack_scale_min(j, sc, &s, &m);
            const float d = dd * (float)s;
            if (d == 0) continue;
            const float dmj = dm * (float)m;
            for (int i = 0; i < 32; i++) {
                int l = nearest_int((x[32 * j + i] + dmj) / d);
                L[32 * j + i] = (uint8_t)(l < 0 ? 0 : l > nmax ? nmax : l);
            }
        }
        if (!q5) {
            uint8_t *q = y + 16;
            for (int j = 0; j < 256; j += 64, q += 32)
                for (int l = 0; l < 32; l++) q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
        } else {
            uint8_t *qh = y + 16, *ql = y + 48;
            for (int k = 0; k < 32; k++) qh[k] = 0;
            uint8_t m1 = 1, m2 = 2;
            for (int j = 0; j < 256; j += 64, ql += 32) {
                for (int l = 0; l < 32; l++) {
                    int l1 = L[j + l], l2 = L[j + l + 32];
                    if (l1 > 15) l1 -= 16, qh[l] |= m1;
                    if (l2 > 15) l2 -= 16, qh[l] |= m2;
                    ql[l] = (uint8_t)(l1 | (l2 << 4));
                }
                m1 = (uint8_t)(m1 << 2);
                m2 = (uint8_t)(m2 << 2);
            }
        }
    }
}

/* Fits x[0..n) ~ scale * (L - nmax) with symmetric levels -nmax..nmax-1, weights x^2: the
 * level set of the inverse scale -nmax / max (max the value of largest magnitude), then 18
 * neighbours -(nmax + 0.1 is) / max, keeping the one that maximises (sum w x l)^2 / sum w l^2.
 * Returns the scale. (ggml's make_qx_quants with rmse_type 1.) */
static float fit_scale_sym(int n, int nmax, const float *x, uint8_t *L)
{
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        float ax = fabs_f(x[i]);
        if (ax > amax) amax = ax, max = x[i];
    }
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; i++) L[i] = 0;
        return 0.f;
    }
    float iscale = -(float)nmax / max, sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = nearest_int(iscale * x[i]);
        l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
        L[i] = (uint8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f, best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = nearest_int(iscale * x[i]);
            l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
            float w = x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) {
                int l = nearest_int(iscale * x[i]);
                L[i] = (uint8_t)(nmax + (l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Q6_K: u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d. Sixteen sub-blocks of 16 fitted by
 * fit_scale_sym (32 levels); sub-scales as i8 against the largest magnitude (d = max / -128);
 * levels recomputed with the stored scales. */
static void q_q6_k(const float *x, uint8_t *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, x += 256, y += 210) {
        uint8_t L[256];
        float scales[16], max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < 16; ib++) {
            float s = fit_scale_sym(16, 32, x + 16 * ib, L + 16 * ib);
            scales[ib] = s;
            if (fabs_f(s) > max_abs_scale) max_abs_scale = fabs_f(s), max_scale = s;
        }
        uint8_t *ql = y, *qh = y + 128;
        int8_t *sc = (int8_t *)(y + 192);
        if (max_abs_scale < GROUP_MAX_EPS) {
            for (int k = 0; k < 210; k++) y[k] = 0;
            continue;
        }
        float iscale = -128.f / max_scale;
        uint16_t dh = ingot__f32_to_f16(1 / iscale);
        ing_st16(y + 208, dh);
        for (int ib = 0; ib < 16; ib++) {
            int v = nearest_int(iscale * scales[ib]);
            sc[ib] = (int8_t)(v < 127 ? v : 127);
        }
        const float dd = ingot__f16_to_f32(dh);
        for (int j = 0; j < 16; j++) {
            const float d = dd * (float)sc[j];
            if (d == 0) continue;
            for (int i = 0; i < 16; i++) {
                int l = nearest_int(x[16 * j + i] / d);
                l = l < -32 ? -32 : l > 31 ? 31 : l;
                L[16 * j + i] = (uint8_t)(l + 32);
            }
        }
        for (int j = 0; j < 256; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; l++) {
                const uint8_t q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
                const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
                ql[l] = (uint8_t)(q1 | (q3 << 4));
                ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
                qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                  ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
            }
        }
    }
}

/* ---------------------------------------------------------------------------------------------
 * Dispatch
 * ------------------------------------------------------------------------------------------- */

bool ingot_quantize_supported(ingot_dtype dt)
{
    switch (dt) {
    case INGOT_DTYPE_Q8_0: case INGOT_DTYPE_Q4_0: case INGOT_DTYPE_Q4_1: case INGOT_DTYPE_Q5_0:
    case INGOT_DTYPE_Q5_1: case INGOT_DTYPE_Q4_K: case INGOT_DTYPE_Q5_K: case INGOT_DTYPE_Q6_K:
        return true;
    default: return false;
    }
}

ingot_status ingot_quantize(ingot_dtype dst_dtype, const float *src, uint64_t n_elems, void *dst,
                            size_t dst_nbytes, ingot_error *err)
{
    const char *name = ingot_dtype_name(dst_dtype);
    if (!name)
        return ingot__err(err, INGOT_BAD_TYPE, INGOT_NO_OFFSET, 0, 0, "dtype %u is not a dtype",
                          (unsigned)dst_dtype);
    size_t nl = ing_strlen(name);
    if (!ingot_quantize_supported(dst_dtype))
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, name, nl,
                          "no quantizer for %s (Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K)", name);
    if (n_elems && (!src || !dst))
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, name, nl, "NULL buffer");
    uint64_t be = ingot_dtype_block_elems(dst_dtype), bb = ingot_dtype_block_bytes(dst_dtype);
    if (n_elems % be || n_elems / be > SIZE_MAX / bb || n_elems / be * bb != dst_nbytes)
        return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, name, nl,
                          "%llu elements and %zu bytes are not whole %s blocks of each other",
                          (unsigned long long)n_elems, dst_nbytes, name);
    for (uint64_t i = 0; i < n_elems; i++) {
        uint32_t u;
        ING_MEMCPY(&u, &src[i], 4);
        if ((u & 0x7F800000u) == 0x7F800000u)
            return ingot__err(err, INGOT_BAD_VALUE, INGOT_NO_OFFSET, name, nl,
                              "element %llu is %s: a %s block cannot store it",
                              (unsigned long long)i, (u & 0x7FFFFF) ? "NaN" : "infinite", name);
    }
    size_t nb = (size_t)(n_elems / be);
    uint8_t *y = dst;
    switch (dst_dtype) {
    case INGOT_DTYPE_Q8_0: q_q8_0(src, y, nb); break;
    case INGOT_DTYPE_Q4_0: q_q4_0(src, y, nb); break;
    case INGOT_DTYPE_Q4_1: q_q4_1(src, y, nb); break;
    case INGOT_DTYPE_Q5_0: q_q5_0(src, y, nb); break;
    case INGOT_DTYPE_Q5_1: q_q5_1(src, y, nb); break;
    case INGOT_DTYPE_Q4_K: q_k45(src, y, nb, false); break;
    case INGOT_DTYPE_Q5_K: q_k45(src, y, nb, true); break;
    default: q_q6_k(src, y, nb); break;
    }
    return INGOT_OK;
}
