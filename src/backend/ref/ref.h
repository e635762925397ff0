/*
 * ref.h - the "ref" backend's op definitions (plain scalar C, computed in double), exported to
 * the other host backends of this box: "cpu" points every op it does not accelerate here.
 */
#ifndef INGOT_REF_H
#define INGOT_REF_H

#include "backend_internal.h"

/* ref_elem.c */
ingot_status ingot__ref_unary(ingot_backend *b, ingot_unary_op op, ingot_tensor *dst,
                              const ingot_tensor *a, ingot_error *err);
ingot_status ingot__ref_binary(ingot_backend *b, ingot_binary_op op, ingot_tensor *dst,
                               const ingot_tensor *a, const ingot_tensor *c, ingot_error *err);
ingot_status ingot__ref_binary_scalar(ingot_backend *b, ingot_binary_op op, ingot_tensor *dst,
                                      const ingot_tensor *a, double s, ingot_error *err);
ingot_status ingot__ref_compare(ingot_backend *b, ingot_cmp_op op, ingot_tensor *dst,
                                const ingot_tensor *a, const ingot_tensor *c, ingot_error *err);
ingot_status ingot__ref_clamp(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a, double lo,
                              double hi, ingot_error *err);
ingot_status ingot__ref_where(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *cond,
                              const ingot_tensor *a, const ingot_tensor *c, ingot_error *err);
ingot_status ingot__ref_mask_fill(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                                  const ingot_tensor *mask, double v, ingot_error *err);
ingot_status ingot__ref_copy(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                             ingot_error *err);
ingot_status ingot__ref_cast(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                             ingot_error *err);
ingot_status ingot__ref_fill(ingot_backend *b, ingot_tensor *dst, double v, ingot_error *err);
ingot_status ingot__ref_arange(ingot_backend *b, ingot_tensor *dst, double start, double step,
                               ingot_error *err);
ingot_status ingot__ref_activation(ingot_backend *b, ingot_act_op op, ingot_tensor *dst,
                                   const ingot_tensor *a, double param, ingot_error *err);
double ingot__ref_act1(ingot_act_op op, double x, double param);

/* ref_reduce.c */
ingot_status ingot__ref_matmul(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                               const ingot_tensor *c, ingot_error *err);
ingot_status ingot__ref_reduce(ingot_backend *b, ingot_reduce_op op, ingot_tensor *dst,
                               const ingot_tensor *a, uint32_t axis, ingot_error *err);
ingot_status ingot__ref_cumsum(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                               uint32_t axis, ingot_error *err);
ingot_status ingot__ref_topk(ingot_backend *b, ingot_tensor *values, ingot_tensor *indices,
                             const ingot_tensor *a, uint32_t k, bool largest, ingot_error *err);
ingot_status ingot__ref_gather(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                               uint32_t axis, const ingot_tensor *index, ingot_error *err);
ingot_status ingot__ref_scatter_add(ingot_backend *b, ingot_tensor *dst, uint32_t axis,
                                    const ingot_tensor *index, const ingot_tensor *src,
                                    ingot_error *err);
ingot_status ingot__ref_index_select(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                                     uint32_t axis, const ingot_tensor *index, ingot_error *err);

/* ref_module.c */
ingot_status ingot__ref_linear(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                               const ingot_tensor *w, const ingot_tensor *bias, ingot_error *err);
ingot_status ingot__ref_conv(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                             const ingot_tensor *w, const ingot_tensor *bias,
                             const ingot_conv_params *p, ingot_error *err);
ingot_status ingot__ref_pool(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                             const ingot_pool_params *p, ingot_error *err);
ingot_status ingot__ref_layer_norm(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                   const ingot_tensor *w, const ingot_tensor *bias, double eps,
                                   ingot_error *err);
ingot_status ingot__ref_rms_norm(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                 const ingot_tensor *w, double eps, ingot_error *err);
ingot_status ingot__ref_batch_norm(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                   const ingot_tensor *mean, const ingot_tensor *var,
                                   const ingot_tensor *w, const ingot_tensor *bias, double eps,
                                   ingot_error *err);
ingot_status ingot__ref_rope(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                             const ingot_tensor *pos, double theta, ingot_rope_mode mode,
                             ingot_error *err);
ingot_status ingot__ref_attention(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *q,
                                  const ingot_tensor *k, const ingot_tensor *v,
                                  const ingot_attn_params *p, ingot_error *err);
ingot_status ingot__ref_softmax(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                                uint32_t axis, bool log, ingot_error *err);

/* ref_quant.c */
ingot_status ingot__ref_quantize(ingot_backend *b, ingot_tensor *dst, ingot_tensor *scale,
                                 const ingot_tensor *src, ingot_error *err);
ingot_status ingot__ref_dequantize(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                                   const ingot_tensor *scale, ingot_error *err);
ingot_status ingot__ref_qlinear(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                const ingot_tensor *w, const ingot_tensor *scale,
                                const ingot_tensor *bias, ingot_error *err);
/* Dequantizes row r of a Q8_0 / Q4_0 / I8(+scale) [rows, cols] tensor into out[cols]. */
void ingot__ref_dequant_row(const ingot_tensor *w, const ingot_tensor *scale, int64_t r,
                            float *out);

/* ref_sample.c */
ingot_status ingot__ref_sort(ingot_backend *b, ingot_tensor *values, ingot_tensor *indices,
                             const ingot_tensor *a, uint32_t axis, bool descending,
                             ingot_error *err);
ingot_status ingot__ref_top_p(ingot_backend *b, ingot_tensor *dst, ingot_tensor *keep,
                              const ingot_tensor *a, double p, bool logits, ingot_error *err);
ingot_status ingot__ref_multinomial(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *probs,
                                    ingot_error *err);

extern const ingot_tensor_ops ingot__ref_float_ops;
extern const ingot_tensor_ops ingot__ref_int_ops;
extern const ingot_tensor_ops ingot__ref_bool_ops;
extern const ingot_module_ops ingot__ref_module_ops;
extern const ingot_activation_ops ingot__ref_activation_ops;
extern const ingot_quant_ops ingot__ref_quant_ops;
extern const ingot_sampling_ops ingot__ref_sampling_ops;

#endif
