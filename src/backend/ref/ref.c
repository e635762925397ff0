/*
 * ref.c - the "ref" backend's tables: every op group points at the scalar definitions in
 * ref_elem.c, ref_reduce.c, ref_module.c, ref_quant.c and ref_sample.c. Single-threaded, host
 * memory.
 */
#include "ref.h"

#define ELEM_OPS                                                                                   \
    .unary = ingot__ref_unary, .binary = ingot__ref_binary,                                        \
    .binary_scalar = ingot__ref_binary_scalar, .compare = ingot__ref_compare,                      \
    .where = ingot__ref_where, .mask_fill = ingot__ref_mask_fill, .copy = ingot__ref_copy,         \
    .cast = ingot__ref_cast, .fill = ingot__ref_fill

const ingot_tensor_ops ingot__ref_float_ops = {
    ELEM_OPS,
    .clamp = ingot__ref_clamp,
    .arange = ingot__ref_arange,
    .matmul = ingot__ref_matmul,
    .reduce = ingot__ref_reduce,
    .cumsum = ingot__ref_cumsum,
    .topk = ingot__ref_topk,
    .gather = ingot__ref_gather,
    .scatter_add = ingot__ref_scatter_add,
    .index_select = ingot__ref_index_select,
    .sort = ingot__ref_sort,
};

const ingot_tensor_ops ingot__ref_int_ops = {
    ELEM_OPS,
    .clamp = ingot__ref_clamp,
    .arange = ingot__ref_arange,
    .reduce = ingot__ref_reduce,
    .cumsum = ingot__ref_cumsum,
    .topk = ingot__ref_topk,
    .gather = ingot__ref_gather,
    .scatter_add = ingot__ref_scatter_add,
    .index_select = ingot__ref_index_select,
    .sort = ingot__ref_sort,
};

const ingot_tensor_ops ingot__ref_bool_ops = {
    ELEM_OPS,
    .reduce = ingot__ref_reduce,
    .gather = ingot__ref_gather,
    .index_select = ingot__ref_index_select,
};

const ingot_module_ops ingot__ref_module_ops = {
    .linear = ingot__ref_linear,
    .conv = ingot__ref_conv,
    .pool = ingot__ref_pool,
    .layer_norm = ingot__ref_layer_norm,
    .rms_norm = ingot__ref_rms_norm,
    .batch_norm = ingot__ref_batch_norm,
    .rope = ingot__ref_rope,
    .attention = ingot__ref_attention,
};

const ingot_activation_ops ingot__ref_activation_ops = {
    .activation = ingot__ref_activation,
    .softmax = ingot__ref_softmax,
};

const ingot_sampling_ops ingot__ref_sampling_ops = {
    .top_p = ingot__ref_top_p,
    .multinomial = ingot__ref_multinomial,
};

const ingot_quant_ops ingot__ref_quant_ops = {
    .quantize = ingot__ref_quantize,
    .dequantize = ingot__ref_dequantize,
    .linear = ingot__ref_qlinear,
};

static void ref_info(const ingot_backend *b, ingot_device_info *out)
{
    (void)b;
    out->description = "portable scalar C reference (double accumulation), 1 thread";
    out->threads = 1;
}

const ingot_backend_ops ingot__backend_ref = {
    .abi_version = INGOT_BACKEND_ABI,
    .name = "ref",
    .device_info = ref_info,
    .float_ops = &ingot__ref_float_ops,
    .int_ops = &ingot__ref_int_ops,
    .bool_ops = &ingot__ref_bool_ops,
    .quant_ops = &ingot__ref_quant_ops,
    .module_ops = &ingot__ref_module_ops,
    .activation_ops = &ingot__ref_activation_ops,
    .sampling_ops = &ingot__ref_sampling_ops,
};
