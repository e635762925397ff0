/*
 * ingot/convert.h - converting a model file: a plan of source tensors to target tensors, then a
 * run that streams the result through the crash-safe writer (writer.h).
 *
 * Contents:
 *   1. the plan: one entry per source tensor (keep, rename, drop, cast, quantize, dequantize,
 *      permute rows), the metadata list with its edits
 *   2. building a plan in bulk: select by glob, rename by regex, cast by dtype, quantize (with
 *      llama.cpp's rules for the tensors that stay in higher precision)
 *   3. running a plan: target format and options, progress, cancellation; every lossy step
 *      reported as a structured record (ingot_lossy), never printed by the library
 *
 * A plan borrows its source: the ingot_file must stay open until ingot_convert_plan_free().
 * A new plan keeps every tensor as it is, under its own name, and copies every metadata entry;
 * each call then changes it. Nothing is read or written before ingot_convert_run().
 *
 * Example, `ingot convert model.safetensors model.gguf --exclude 'optimizer*'
 * --rename '^model/=' --quantize Q4_K_M --set general.name=demo`:
 *     ingot_convert_plan *p;  ingot_error e;
 *     ingot_convert_plan_new(src, &p, &e);
 *     ingot_convert_rule rules[] = {{"optimizer*", false}};
 *     ingot_convert_plan_select(p, rules, 1, &e);
 *     ingot_convert_plan_rename(p, "^model/", "", &e);
 *     ingot_convert_plan_quantize(p, "Q4_K_M", &e);
 *     ingot_convert_plan_meta_set_text(p, "general.name=demo", &e);
 *     ingot_convert_opts o = {0};                     // format from the path, writer defaults
 *     ingot_convert_result *r;
 *     ingot_convert_run(p, "model.gguf", &o, &r, &e); // atomic: the old target or the new one
 *     ingot_convert_result_free(r);
 *     ingot_convert_plan_free(p);
 *
 * Threads: a plan is used by one thread at a time; the source file may be shared.
 */
#ifndef INGOT_CONVERT_H
#define INGOT_CONVERT_H

#include "ingot/core.h"
#include "ingot/writer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * 1. The plan
 * ------------------------------------------------------------------------------------------- */

typedef struct ingot_convert_plan ingot_convert_plan;

/** What happens to one source tensor. */
typedef enum ingot_convert_action {
    /** Stored with its own dtype, as dense C-order little-endian bytes (big-endian, column-major
     *  and strided sources are materialised). If the target cannot store the dtype, the run's
     *  `dequantize` option may still turn it into DEQUANTIZE (see ingot_convert_opts). */
    INGOT_CONVERT_KEEP = 0,
    /** Left out of the target. */
    INGOT_CONVERT_DROP = 1,
    /** A float tensor (F64, F32, F16, BF16, F8_*) stored as another of F64, F32, F16, BF16,
     *  F8_E4M3, F8_E5M2: each value rounded once, to nearest, ties to even (the same bits as
     *  NumPy's astype and torch's .to()). Overflow: to infinity for F16, BF16, F32 and F8_E5M2;
     *  to NaN for F8_E4M3, which has no infinity (|x| > 464 rounds past its largest finite value
     *  448, as torch's float8_e4m3fn does). NaN stays NaN, sign kept: F16 and F32 keep the top
     *  payload bits (F16 sets the lowest if they are all zero, as NumPy does), BF16 the top 7
     *  with the quiet bit set (ggml's rule; torch writes 0x7FC0 for every NaN), F8 give 0x7F or
     *  0xFF. */
    INGOT_CONVERT_CAST = 2,
    /** A float tensor stored as a GGML block type (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K,
     *  Q6_K) by ingot_quantize() (quant.h); its innermost dimension must be a whole number of
     *  blocks. A NaN or infinite value is refused (BAD_VALUE naming the tensor). */
    INGOT_CONVERT_QUANTIZE = 3,
    /** A GGML block tensor or float tensor decoded bit-exactly (quant.h) and stored as F32, F16
     *  or BF16 (float sources are cast as CAST does, block sources decoded to F32 first). */
    INGOT_CONVERT_DEQUANTIZE = 4,
} ingot_convert_action;

/** One entry of a plan: what becomes of source tensor `src_index`. */
typedef struct ingot_convert_tensor {
    uint64_t src_index;          /**< the source tensor (its position in the file) */
    const char *name;            /**< target name, NUL-terminated; owned by the plan, valid until
                                      the next call that changes the plan */
    ingot_convert_action action;
    ingot_dtype dtype;           /**< target dtype (the source's for KEEP and DROP) */
    /** Row permutation of llama.cpp's converter for the q and k projections of Llama-family
     *  models: 0 for none, else the number of heads h. Rows (outermost dimension, n of them, n
     *  a multiple of 2h) are regrouped as W.reshape(h, 2, n/2h, ...).swapaxes(1, 2) (Hugging Face
     *  -> GGUF order), or the inverse with `permute_inverse`. */
    uint32_t permute_heads;
    bool permute_inverse;
} ingot_convert_tensor;

/** A plan over `src` (borrowed: keep it open until the plan is freed): every tensor KEEP under
 *  its own name, every metadata entry copied, in file order. NOMEM or MISUSE. */
INGOT_API ingot_status ingot_convert_plan_new(const ingot_file *src, ingot_convert_plan **out,
                                              ingot_error *err);
/** NULL is a no-op. */
INGOT_API void ingot_convert_plan_free(ingot_convert_plan *p);

/** Number of entries: one per source tensor, dropped ones included. */
INGOT_API uint64_t ingot_convert_plan_tensor_count(const ingot_convert_plan *p);
/** Entry i (the source tensor of index i). RANGE if out of bounds. */
INGOT_API ingot_status ingot_convert_plan_tensor_at(const ingot_convert_plan *p, uint64_t i,
                                                    ingot_convert_tensor *out);
/** Replaces entry i with *t (t->src_index must be i; t->name NULL keeps the current name; the
 *  name is copied). Checked against the source tensor: CAST needs a float source and one of the
 *  CAST dtypes; QUANTIZE a float source, a type ingot_quantize() makes and an innermost dimension
 *  of whole blocks; DEQUANTIZE a decodable source and F32, F16 or BF16; a permutation rows that
 *  split into 2 * permute_heads groups. UNSUPPORTED or BAD_SHAPE naming the tensor otherwise;
 *  DUPLICATE if the name is another kept tensor's target name. */
INGOT_API ingot_status ingot_convert_plan_set_tensor(ingot_convert_plan *p, uint64_t i,
                                                     const ingot_convert_tensor *t,
                                                     ingot_error *err);

/* ---------------------------------------------------------------------------------------------
 * 2. Building a plan in bulk
 * ------------------------------------------------------------------------------------------- */

/** One selection rule: a glob (fnmatch(3): * ? [..], '/' and '.' not special) on the source
 *  tensor's name, keeping (include) or dropping (exclude) what it matches. */
typedef struct ingot_convert_rule {
    const char *glob;
    bool include;
} ingot_convert_rule;

/** Selects tensors: for each tensor the first rule that matches its source name decides; a
 *  tensor that no rule matches is kept if every rule is an exclude, dropped if any is an
 *  include (rsync's convention). Only ever drops: a tensor already dropped stays dropped.
 *  MISUSE for a NULL glob. */
INGOT_API ingot_status ingot_convert_plan_select(ingot_convert_plan *p,
                                                 const ingot_convert_rule *rules, size_t n,
                                                 ingot_error *err);

/** Renames kept tensors: the first match of the POSIX extended regular expression `regex` in
 *  each target name is replaced by `repl`, in which \1..\9 stand for the groups, & for the
 *  whole match and \\ and \& for themselves. Calls apply in order, each to the names the
 *  previous left. A name left empty or two tensors ending with the same name are errors
 *  (BAD_NAME; DUPLICATE naming both sources), and the plan is then unchanged. BAD_METADATA for
 *  a regex that does not compile (the message says why). */
INGOT_API ingot_status ingot_convert_plan_rename(ingot_convert_plan *p, const char *regex,
                                                 const char *repl, ingot_error *err);

/** Casts float tensors: every kept tensor of dtype `from` (INGOT_DTYPE_INVALID: of any float
 *  dtype CAST accepts, GGML blocks excepted) becomes CAST to `to`; tensors already of dtype
 *  `to` stay KEEP. UNSUPPORTED if `to` is not a CAST target. Later calls override earlier
 *  ones tensor by tensor (a map F32=BF16 after a cast of everything to F16 leaves the F32
 *  tensors BF16). */
INGOT_API ingot_status ingot_convert_plan_cast(ingot_convert_plan *p, ingot_dtype from,
                                               ingot_dtype to, ingot_error *err);

/** Quantizes as llama.cpp's llama-quantize does (without an importance matrix). `type`: Q8_0,
 *  Q4_0, Q4_1, Q5_0, Q5_1, Q6_K, or a mix Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M (Q4_K and Q5_K are
 *  llama-quantize's aliases of Q4_K_M and Q5_K_M). Kept float tensors (not GGML blocks) whose
 *  name ends in "weight" and that have a dimension other than the innermost larger than 1 are
 *  quantized, except norms ("_norm.weight"), MoE routers ("ffn_gate_inp.weight"), position and
 *  token-type embeddings; the rest stay as the plan had them. The output tensor
 *  ("output.weight" or "lm_head.weight"; the token embedding when there is none) gets Q6_K
 *  unless the type is Q8_0 (Q8_0 too when its rows are not whole 256-blocks). The mixes, with
 *  use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2 over the attn_v tensors and
 *  over the ffn_down tensors in file order: _M gives attn_v and ffn_down Q6_K where
 *  use_more_bits, fused attn_qkv one type more (Q5_K, Q6_K); Q4_K_S gives attn_v Q5_K for the
 *  first 4 and ffn_down Q5_K for the first n/8; with 8 experts (`{arch}.expert_count` 8) attn_v
 *  and attn_k get Q8_0 and, with Q4_K_S/_M, attn_output Q5_K. Hugging Face names count as their
 *  GGUF counterparts (v_proj, k_proj, o_proj, down_proj, w2, lm_head, embed_tokens). A row
 *  (innermost dimension) that is not a whole number of 256-element blocks falls back from Q4_K
 *  to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0; one not a whole number of 32-element blocks gets F16.
 *  Sets general.quantization_version (u32 2) and general.file_type (u32, llama.cpp's
 *  LLAMA_FTYPE number) in the metadata. UNSUPPORTED for another type. */
INGOT_API ingot_status ingot_convert_plan_quantize(ingot_convert_plan *p, const char *type,
                                                   ingot_error *err);

/* Metadata edits, applied in call order to the plan's list (the source's entries at first).
 * Keys are UTF-8, 1..65535 bytes. */

/** Removes `key`. NOT_FOUND if the list has no such key. */
INGOT_API ingot_status ingot_convert_plan_meta_delete(ingot_convert_plan *p, const char *key,
                                                      ingot_error *err);
/** Renames `from` to `to`, keeping its place, type and value. NOT_FOUND, or DUPLICATE if `to`
 *  exists. */
INGOT_API ingot_status ingot_convert_plan_meta_rename(ingot_convert_plan *p, const char *from,
                                                      const char *to, ingot_error *err);

/** A STRING or BYTES element given by pointer and length. */
typedef struct ingot_bytes {
    const void *data;
    size_t len;
} ingot_bytes;

/** Sets `key` (replacing its value in place, or appended if new), copied:
 *  - scalar numeric or BOOL: `value` points at one host-order value of the type (bool for BOOL),
 *    count 1;
 *  - scalar STRING or BYTES: `value` points at `count` bytes (STRING: valid UTF-8);
 *  - array of numbers or BOOL: `count` host-order elements;
 *  - array of STRING or BYTES: `value` points at `count` ingot_bytes.
 *  BAD_TYPE, BAD_STRING (not UTF-8), BAD_NAME (key), MISUSE. */
INGOT_API ingot_status ingot_convert_plan_meta_set(ingot_convert_plan *p, const char *key,
                                                   ingot_meta_type type, bool is_array,
                                                   const void *value, uint64_t count,
                                                   ingot_error *err);
/** The text form of the CLI: "KEY=VALUE" (a string), "KEY:TYPE=VALUE" with TYPE as `ingot info`
 *  prints it (u8..u64, i8..i64, f32, f64, bool, string, bytes as hex digits), or
 *  "KEY:TYPE[]=V1,V2,..." for an array. The type is after the last ':' before the first '=',
 *  so keys may hold ':'. BAD_METADATA naming the key when the value does not parse as the type
 *  (integers out of range, trailing text, odd hex). */
INGOT_API ingot_status ingot_convert_plan_meta_set_text(ingot_convert_plan *p, const char *arg,
                                                        ingot_error *err);

/** Number of metadata entries the target will get, and entry i of them: the source's (`from_src`
 *  true, `src_index` its index) or one set by the plan. Keys borrowed until the next change. */
INGOT_API uint64_t ingot_convert_plan_meta_count(const ingot_convert_plan *p);
INGOT_API ingot_status ingot_convert_plan_meta_at(const ingot_convert_plan *p, uint64_t i,
                                                  const char **key, bool *from_src,
                                                  uint64_t *src_index);

/* ---------------------------------------------------------------------------------------------
 * 3. Running a plan
 * ------------------------------------------------------------------------------------------- */

/** Kinds of lossy steps. */
typedef enum ingot_lossy_kind {
    INGOT_LOSSY_SKIPPED = 1,     /**< a part of the source that opened as no tensor (notices) */
    INGOT_LOSSY_METADATA = 2,    /**< a step the target's writer took on metadata (its notice) */
    INGOT_LOSSY_DEQUANTIZED = 3, /**< tensors of one dtype decoded (the target cannot store it) */
    INGOT_LOSSY_CAST = 4,        /**< tensors of one dtype cast to a type that cannot hold every
                                      value of it (F32 -> F16, never F16 -> F32) */
    INGOT_LOSSY_QUANTIZED = 5,   /**< tensors of one dtype quantized to one block type */
} ingot_lossy_kind;

/** One lossy step, for one part, key, or one (from, to) pair of dtypes. */
typedef struct ingot_lossy {
    ingot_lossy_kind kind;
    const char *message; /**< one line of English, UTF-8, what `ingot convert` prints after
                              "lossy: " */
    const char *name;    /**< the part, or the first tensor concerned (source name); "" for
                              METADATA */
    ingot_dtype from, to; /**< DEQUANTIZED, CAST, QUANTIZED; INVALID otherwise */
    uint64_t count;      /**< tensors concerned (1 for SKIPPED and METADATA) */
} ingot_lossy;

/** Called once per lossy step as soon as it is certain (before the data flows): every SKIPPED,
 *  then the METADATA steps, then one record per dtype pair. The record is valid during the
 *  call only. */
typedef void (*ingot_lossy_fn)(void *ctx, const ingot_lossy *l);

/** Run options. Zero-initialise for the defaults. */
typedef struct ingot_convert_opts {
    const char *format;          /**< writer format; NULL: ingot_writer_format_for_path(path) */
    uint32_t alignment;          /**< 0: the writer's default; .ingot -> .ingot keeps the
                                      source's alignment */
    const char *const *options;  /**< writer options "KEY=VALUE" (ingot_writer_set_option) */
    size_t n_options;
    /** INVALID: a KEEP tensor the target cannot store fails the run. F32, F16 or BF16: such a
     *  tensor (GGML blocks, or a float type the target lacks; never integers or BOOL) is
     *  DEQUANTIZED to it instead, one INGOT_LOSSY_DEQUANTIZED record per source dtype. A format
     *  that refuses a dtype only when writing begins gets the description again with that dtype
     *  converted (at most once per dtype). */
    ingot_dtype dequantize;
    bool no_fsync;               /**< ingot_writer_opts.no_fsync */
    ingot_progress_fn progress;  /**< bytes of target tensor data written, of the total */
    void *progress_ctx;
    ingot_lossy_fn lossy;        /**< NULL: records are only kept in the result */
    void *lossy_ctx;
    /** Polled between chunks of data (at most a few MiB apart): returning true stops the run
     *  with CANCELLED, the target left as it was and the temporary removed. NULL: never. */
    bool (*cancel)(void *ctx);
    void *cancel_ctx;
} ingot_convert_opts;

/** Where a failed run failed, for callers that name the file in their message. */
typedef enum ingot_convert_stage {
    INGOT_CONVERT_STAGE_NONE = 0,   /**< it did not fail */
    INGOT_CONVERT_STAGE_PLAN = 1,   /**< the plan or the options (no file touched) */
    INGOT_CONVERT_STAGE_OPTION = 2, /**< a writer option was refused */
    INGOT_CONVERT_STAGE_METADATA = 3, /**< the writer refused a metadata entry (err->where) */
    INGOT_CONVERT_STAGE_SOURCE = 4, /**< reading the source */
    INGOT_CONVERT_STAGE_TARGET = 5, /**< describing or writing the target */
} ingot_convert_stage;

typedef struct ingot_convert_result ingot_convert_result;

/** What a run did (or got to). Caller-allocated, filled by ingot_convert_result_summary(). */
typedef struct ingot_convert_summary {
    const char *format;        /**< writer format used (static storage) */
    uint32_t alignment;        /**< alignment asked of the writer (0: its default) */
    uint64_t tensors;          /**< tensors written */
    uint64_t dropped;          /**< entries dropped */
    uint64_t metadata_lossy;   /**< INGOT_LOSSY_METADATA records */
    uint64_t dequantized;      /**< tensors dequantized because the target could not store them */
    uint64_t cast;             /**< tensors cast */
    uint64_t quantized;        /**< tensors quantized */
    uint64_t skipped;          /**< parts of the source skipped at open */
    ingot_convert_stage failed_stage;
    uint64_t failed_tensor;    /**< source index of the tensor a failure concerns, or UINT64_MAX */
} ingot_convert_summary;

/** Runs the plan: describes every kept tensor and the metadata list to a new writer for `path`
 *  and streams the data through a bounded buffer (never all of it in memory; a big-endian,
 *  column-major or strided source tensor, and a permuted one, is materialised alone), then
 *  commits atomically: on any failure the target is as it was and no temporary remains.
 *  Writing over the source's own path is safe (the source stays mapped; the writer renames).
 *  @param result  optional: receives the records and the summary, on success and on failure
 *                 (release with ingot_convert_result_free); NULL if it could not be allocated.
 *  @return OK; the writer's or the reader's error; CANCELLED; NOMEM. Per-tensor errors name
 *          the tensor in err->where. */
INGOT_API ingot_status ingot_convert_run(const ingot_convert_plan *p, const char *path,
                                         const ingot_convert_opts *opts,
                                         ingot_convert_result **result, ingot_error *err);

/** NULL is a no-op. */
INGOT_API void ingot_convert_result_free(ingot_convert_result *r);
INGOT_API void ingot_convert_result_summary(const ingot_convert_result *r,
                                            ingot_convert_summary *out);
/** The lossy records, in the order they were reported. Pointers valid until the result is
 *  freed. */
INGOT_API uint64_t ingot_convert_result_lossy_count(const ingot_convert_result *r);
INGOT_API ingot_status ingot_convert_result_lossy_at(const ingot_convert_result *r, uint64_t i,
                                                     ingot_lossy *out);

/** Whether the target (format and options of `opts`; format NULL means .ingot here) stores source
 *  tensor i's name and shape as dtype dt: a one-tensor description begun in memory. Only a
 *  refusal (UNSUPPORTED, BAD_TYPE) counts as no; anything else cannot tell and says yes. */
INGOT_API bool ingot_convert_target_accepts(const ingot_convert_plan *p,
                                            const ingot_convert_opts *opts, uint64_t i,
                                            ingot_dtype dt);

/** True for the dtypes `dequantize` may convert (GGML blocks with a decoder and the float
 *  types; never integers or BOOL). */
INGOT_API bool ingot_dtype_is_float_like(ingot_dtype dt);


/* ---------------------------------------------------------------------------------------------
 * 4. Model-aware conversion: a Hugging Face folder <-> GGUF (llama.cpp's naming and keys)
 *
 * For GPT-2, the Llama family (Llama, Mistral, TinyLlama; Qwen2 with its q/k/v biases) and
 * Mixtral, what llama.cpp's convert_hf_to_gguf.py writes: the tensor names of the runtime's
 * table (ingot_lm_name_to_gguf, lm.h), q/k rows permuted from HF's half-split RoPE order to
 * interleaved pairs for the "llama" architecture (not "qwen2"), GPT-2's Conv1D weights
 * transposed, Mixtral's experts stacked into ffn_{gate,up,down}_exps, the general.* and {arch}.*
 * keys, and the tokenizer.ggml.* arrays from tokenizer.json (+ tokenizer_config.json). Tensor
 * data keeps its dtype (cast or quantize afterwards with a plan). Each target tensor is
 * materialised alone (the largest one, or one layer's experts, is the peak memory).
 * ------------------------------------------------------------------------------------------- */

typedef struct ingot_convert_model_opts {
    const char *name;              /**< general.name (HF -> GGUF) or _name_or_path (GGUF -> HF);
                                        NULL: config.json's _name_or_path, general.name, else
                                        the folder's name */
    const char *format;            /**< HF -> GGUF: writer format (NULL: from the path) */
    const char *const *options;    /**< writer options "KEY=VALUE" (max_shard_size, ...) */
    size_t n_options;
    bool no_fsync;
    ingot_notice_fn notice;        /**< one line per fact a user should know (a vocabulary
                                        padded, scores tokenizer.json cannot hold); NULL: none */
    void *notice_ctx;
} ingot_convert_model_opts;

/** What a model conversion wrote. */
typedef struct ingot_convert_model_summary {
    const char *arch;   /**< GGUF architecture ("llama", "qwen2", "gpt2"; static storage) */
    uint64_t tensors;   /**< tensors written */
    bool tokenizer;     /**< the vocabulary was converted */
    bool sharded;       /**< GGUF -> HF: model.safetensors.index.json + shards */
} ingot_convert_model_summary;

/** Converts the Hugging Face folder `hf_dir` (config.json; model.safetensors, a sharded
 *  model.safetensors.index.json or pytorch_model.bin; tokenizer.json or the other vocabularies
 *  ingot_tokenizer_open() reads, optional) into `path` (atomic, as ingot_convert_run()).
 *  Errors name the key or tensor: UNSUPPORTED (config.json's model_type, a tensor the
 *  architecture has no GGUF name for), NOT_FOUND (a tensor the config implies is missing,
 *  named as in the folder), BAD_SHAPE (a tensor disagrees with config.json), BAD_METADATA.
 *  summary may be NULL. */
INGOT_API ingot_status ingot_convert_hf_to_gguf(const char *hf_dir, const char *path,
                                                const ingot_convert_model_opts *opts,
                                                ingot_convert_model_summary *summary,
                                                ingot_error *err);

/** Converts a model with GGUF naming and keys (a GGUF, or any file a plan wrote from one) into
 *  the folder `dir` (created if missing): model.safetensors (model.safetensors.index.json and
 *  shards with a max_shard_size option, or above 5 GB), config.json (architectures, model_type,
 *  the hyperparameters, tie_word_embeddings, torch_dtype), and tokenizer.json +
 *  tokenizer_config.json when the file has tokenizer.ggml.* keys. The inverse of
 *  ingot_convert_hf_to_gguf. Each file is written atomically. GGML block types are refused
 *  (BAD_TYPE naming the tensor: dequantize with a plan first). */
INGOT_API ingot_status ingot_convert_gguf_to_hf(const ingot_file *src, const char *dir,
                                                const ingot_convert_model_opts *opts,
                                                ingot_convert_model_summary *summary,
                                                ingot_error *err);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_CONVERT_H */
