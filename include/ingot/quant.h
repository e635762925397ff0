/*
 * ingot/quant.h - decoding stored tensor elements to F32 (GGML block types, the small float
 * types, integers) and encoding F32 into F16/BF16.
 *
 * Contents:
 *   1. ingot_dequantize_supported(), ingot_dequantize(): a buffer of stored elements -> F32
 *   2. ingot_file_tensor_dequantize(): a range of an open file's tensor -> F32
 *   3. ingot_f32_encode(): F32 -> F32/F64/F16/BF16
 *   4. ingot_cast(): float elements -> another float type (F64 F32 F16 BF16 F8_E4M3 F8_E5M2)
 *   5. ingot_quantize(): F32 -> GGML blocks (Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K)
 *
 * Nothing here allocates; every function is thread-safe (pure functions of their arguments).
 *
 * Decoded values are bit-exact with llama.cpp's Python package (gguf-py `gguf.quants.dequantize`)
 * for every GGML type it decodes; tests/test_quant.c checks them against sha256 digests it
 * computed (the GGUF fixtures' `dequant_sha256_f32le`, and tests/golden/quant/); Q8_1 and Q8_K,
 * which it does not decode, are d * q as the block layout defines. Supported:
 *
 *   GGML blocks  Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1 Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K IQ4_NL IQ4_XS
 *                TQ1_0 TQ2_0 MXFP4 NVFP4 Q1_0
 *   floats       F32 F64 F16 BF16 F8_E4M3 F8_E5M2 F8_E4M3FNUZ F8_E5M2FNUZ F8_E8M0
 *   integers     I8 I16 I32 I64 U8 U16 U32 U64 BOOL (0 or 1)
 *
 * Not supported (UNSUPPORTED): the IQ1/IQ2/IQ3 families (they need ggml's codebook grids),
 * Q2_0, the packed sub-byte F4/F6 types (their nibble order is not defined by any format that
 * stores them) and C64.
 *
 * Conventions: F16, BF16 and the F8 types convert exactly; F64 and wide integers round to
 * nearest even, as a C cast does (NumPy's astype agrees). NaN inputs: F16 and BF16 keep their bits
 * (sign, payload, signalling or quiet); F64 comes out quiet with its sign and top payload bits
 * (the cast); the F8 NaNs decode to the quiet NaN 0x7FC00000 with the input's sign (F8_E4M3,
 * F8_E5M2) or without it (the single NaN of the FNUZ types and of E8M0). Block
 * scales follow ggml: MXFP4's E8M0 scale is ggml's "half" scale 2^(e-128) (e = 0 and 1 give
 * subnormals, 0xFF no NaN), NVFP4's UE4M3 scale ignores the sign bit and reads 0x7F as 0.
 */
#ifndef INGOT_QUANT_H
#define INGOT_QUANT_H

#include "ingot/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * 1. Decoding a buffer
 * ------------------------------------------------------------------------------------------- */

/** True if ingot_dequantize() decodes dtype dt (see the list above). */
INGOT_API bool ingot_dequantize_supported(ingot_dtype dt);

/** Decodes n_elems elements of dtype src_dtype, stored as a tensor stores them (little-endian,
 *  GGML blocks back to back), into n_elems F32 values at dst (host order).
 *
 *  Any run of whole blocks decodes independently, so a tensor can be decoded in pieces: a GGML
 *  tensor of shape [..., cols] is rows of cols/block_elems blocks each, row r starting at byte
 *  r * cols / ingot_dtype_block_elems(dt) * ingot_dtype_block_bytes(dt) of its data; point src
 *  there and pass the elements of as many whole rows (or whole blocks) as dst has room for.
 *
 *  @param src_nbytes  must be exactly the bytes of n_elems elements: n_elems / block_elems *
 *                     block_bytes for block types (n_elems a multiple of block_elems), n_elems *
 *                     element size otherwise. BAD_SIZE otherwise (nothing is written).
 *  @param dst         room for n_elems floats; must not overlap src.
 *  @return OK; UNSUPPORTED for a valid dtype without a decoder (err names the dtype); BAD_TYPE
 *          for a value that is not a dtype; BAD_SIZE as above; MISUSE for NULL src/dst with
 *          n_elems > 0. */
INGOT_API ingot_status ingot_dequantize(ingot_dtype src_dtype, const void *src, size_t src_nbytes,
                                        float *dst, uint64_t n_elems, ingot_error *err);

/* ---------------------------------------------------------------------------------------------
 * 2. Decoding a tensor of an open file
 * ------------------------------------------------------------------------------------------- */

/** Decodes elements [first, first + n) of tensor i of f (row-major element order) into dst.
 *  Works in every I/O mode: the stored bytes are read with ingot_file_tensor_read() (under the
 *  SIGBUS guard) through a small stack buffer, so nothing is allocated. Big-endian tensors are
 *  byte-swapped on the way; column-major and strided tensors are refused (UNSUPPORTED: copy them
 *  with ingot_file_tensor_copy() and use ingot_dequantize()).
 *  For GGML block types, first and n must be multiples of the block (RANGE otherwise); RANGE
 *  also if the range exceeds the tensor. UNSUPPORTED (naming the tensor and its dtype) for a
 *  dtype without a decoder; I/O errors as ingot_file_tensor_read(). */
INGOT_API ingot_status ingot_file_tensor_dequantize(const ingot_file *f, uint64_t i,
                                                    uint64_t first, uint64_t n, float *dst,
                                                    ingot_error *err);

/* ---------------------------------------------------------------------------------------------
 * 3. Encoding F32
 * ------------------------------------------------------------------------------------------- */

/** Encodes n_elems F32 values into dtype dst_dtype at dst, little-endian, as a tensor stores them:
 *  F32 (copied), F64 (exact), F16 and BF16 (round to nearest, ties to even; overflow gives
 *  infinity; NaN stays NaN: F16 keeps the sign and the top 10 payload bits, setting the lowest if
 *  they are all zero, as NumPy does; BF16 keeps the sign and the top 7 payload bits and sets the
 *  quiet bit, as ggml does).
 *  @param dst_nbytes  must be exactly n_elems * element size (BAD_SIZE otherwise).
 *  @return OK; UNSUPPORTED for any other valid dtype; BAD_TYPE; BAD_SIZE; MISUSE for NULL
 *          pointers with n_elems > 0. dst must not overlap src. */
INGOT_API ingot_status ingot_f32_encode(ingot_dtype dst_dtype, const float *src, uint64_t n_elems,
                                        void *dst, size_t dst_nbytes, ingot_error *err);

/* ---------------------------------------------------------------------------------------------
 * 4. Casting between float types
 * ------------------------------------------------------------------------------------------- */

/** True if ingot_cast() converts src to dst: src one of F64 F32 F16 BF16 F8_E4M3 F8_E5M2
 *  F8_E4M3FNUZ F8_E5M2FNUZ F8_E8M0, dst one of F64 F32 F16 BF16 F8_E4M3 F8_E5M2 (src == dst
 *  copies). */
INGOT_API bool ingot_cast_supported(ingot_dtype src, ingot_dtype dst);

/** Converts n_elems little-endian elements of float type src to float type dst (little-endian),
 *  each rounded once to nearest, ties to even: the bits NumPy's astype gives (F64, F32, F16
 *  targets) and torch's .to() gives (BF16, F8_E4M3 as float8_e4m3fn, F8_E5M2 as float8_e5m2;
 *  an F64 value is rounded to F32 first for those targets, as torch converts through float).
 *  Every source value is exact in F32 except F64's, so only F64 -> F16 rounds from double
 *  (NumPy's npy_double_to_half).
 *  Overflow: infinity for F16, BF16, F32 and F8_E5M2 (which has infinities); NaN for F8_E4M3
 *  (|x| > 464, beyond its largest finite 448, and infinities, as torch does). NaN: sign kept;
 *  F16 keeps the top 10 payload bits, the lowest set if they are all zero (NumPy), BF16 the top
 *  7 with the quiet bit set (ggml), F32 from F16/BF16 the payload bits shifted (exact), F32
 *  from F64 and F64 from any the hardware conversion (a quiet NaN), F8 targets 0x7F | sign.
 *  @return OK; UNSUPPORTED (err names both dtypes) when !ingot_cast_supported(src, dst);
 *          BAD_SIZE when src_nbytes or dst_nbytes is not n_elems elements; MISUSE for NULL
 *          pointers with n_elems > 0. src and dst must not overlap. Allocates nothing. */
INGOT_API ingot_status ingot_cast(ingot_dtype src_dtype, const void *src, size_t src_nbytes,
                                  ingot_dtype dst_dtype, void *dst, size_t dst_nbytes,
                                  uint64_t n_elems, ingot_error *err);

/* ---------------------------------------------------------------------------------------------
 * 5. Quantizing
 * ------------------------------------------------------------------------------------------- */

/** True for the GGML types ingot_quantize() makes: Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K. */
INGOT_API bool ingot_quantize_supported(ingot_dtype dt);

/** Quantizes n_elems F32 values (a multiple of the type's block) into GGML blocks at dst, as
 *  llama.cpp's reference quantizers do (ggml's quantize_row_*_ref, without an importance
 *  matrix): Q8_0 d = max|x|/127, q = round(x/d) half away from zero; Q4_0/Q5_0 d = -m/8 (/16)
 *  for the value m of largest magnitude, q = trunc(x/d + 8.5 (16.5)); Q4_1/Q5_1 d =
 *  (max - min)/15 (/31), m = min; Q4_K/Q5_K 8 sub-blocks of 32 fitted by a weighted
 *  least-squares search over scale and min (weights sqrt(mean x^2) + |x|), 6-bit sub-scales;
 *  Q6_K 16 sub-blocks of 16 fitted by a search over 19 scales, 8-bit sub-scales. Decoding the
 *  result with ingot_dequantize() gives gguf-py's values for the same blocks, bit for bit.
 *  @return OK; UNSUPPORTED for another dtype; BAD_SIZE when n_elems is not a whole number of
 *          blocks or dst_nbytes not their size; BAD_VALUE naming the element when a value is
 *          NaN or infinite (nothing sensible to store); MISUSE for NULL pointers. */
INGOT_API ingot_status ingot_quantize(ingot_dtype dst_dtype, const float *src, uint64_t n_elems,
                                      void *dst, size_t dst_nbytes, ingot_error *err);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_QUANT_H */
