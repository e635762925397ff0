/*
 * ingot/lm.h - decoder-only language models run straight from mapped weights (issue 15): the
 * Llama family (Llama 1/2/3, Mistral, TinyLlama, the llama2.c "stories" models, Qwen2-style
 * q/k/v biases, Mixtral-style mixture of experts) and GPT-2, from any format ingot opens.
 *
 * Contents, simplest first:
 *   1. the model: open from an ingot_file or a path (file or Hugging Face folder), its config
 *   2. sessions: a KV cache preallocated for a context length, eval(tokens) -> logits
 *   3. sampling: greedy, temperature, top-k, top-p, min-p, repetition/frequency/presence
 *      penalties, seeded
 *   4. the generate loop, with a per-token callback, streamed text and stop strings
 *   5. beam search
 *
 * Where the weights and the config come from (docs/RUNTIME.md has the tables):
 *   - GGUF: llama.cpp's names (token_embd, blk.N.attn_q, ...) and keys ({arch}.block_count,
 *     {arch}.attention.head_count_kv, {arch}.rope.freq_base, ...); missing optional keys take
 *     explicit defaults (rope.freq_base 10000, head_count_kv = head_count, eps 1e-5); RoPE
 *     rotates interleaved pairs (llama.cpp's converter permuted q/k for that).
 *   - Hugging Face names (model.layers.N.self_attn.q_proj, transformer.h.N.attn.c_attn, ...) in
 *     safetensors (single or sharded), PyTorch state dicts, .ingot or any other format, with the
 *     config from config.json (beside the file, in the folder, or ingot_lm_opts.config_path);
 *     RoPE rotates half-split pairs (HF's rotate_half).
 *   - llama2.c checkpoints (the format adapter "llama2c" exposes the header as metadata and the
 *     arrays under GGUF names); RoPE interleaved.
 * Weights are bound zero-copy where the backend runs their dtype natively; anything else is
 * converted once at open, and the notice callback says so (tensor, from, to).
 *
 * Usage:
 *     ingot_lm *m;  ingot_lm_session *s;  ingot_error e;
 *     ingot_lm_open_path(backend, "stories260K.gguf", NULL, &m, &e);
 *     ingot_lm_session_new(m, NULL, &s, &e);                 // KV cache for the default context
 *     int32_t prompt[] = {1, 403, 407};
 *     float *logits = malloc(ingot_lm_get_config(m)->vocab * sizeof(float));
 *     ingot_lm_eval(s, prompt, 3, INGOT_LM_LOGITS_LAST, logits, vocab, &e);   // prefill
 *     int32_t next = argmax(logits);
 *     ingot_lm_eval(s, &next, 1, INGOT_LM_LOGITS_LAST, logits, vocab, &e);    // one decode step
 *     ingot_lm_session_free(s);  ingot_lm_free(m);
 *
 * Ownership: ingot_lm_open borrows the backend and the file (both must outlive the model);
 * ingot_lm_open_path owns the file(s) it opened. Weights converted at open are owned by the
 * model. A session borrows its model (free sessions first) and owns its KV cache and scratch.
 *
 * Threads: a model may serve several sessions, but every session runs ops on the model's
 * backend instance, and an instance is used by one thread at a time: run sessions of one model
 * from one thread, or open the model once per backend instance. Results are bit-identical for
 * any thread count of the backend (and sampling draws from the sampler's own seeded RNG, so
 * the same seed gives the same tokens whatever the thread count).
 *
 * Memory: ingot_lm_session_new allocates the KV cache and every scratch buffer the session will
 * ever use (sized by n_ctx and n_batch); ingot_lm_eval, ingot_sampler_sample and the decode loop
 * of ingot_lm_generate allocate nothing.
 *
 * Errors: a file that lacks what the architecture needs fails at open with the tensor or key
 * named in ingot_error.where: NOT_FOUND (a tensor), BAD_METADATA (a key missing or
 * inconsistent), BAD_SHAPE (a tensor disagrees with the config), BAD_TYPE (a dtype the runtime
 * cannot use), UNSUPPORTED (an architecture it does not run).
 */
#ifndef INGOT_LM_H
#define INGOT_LM_H

#include "ingot/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * 1. The model
 * ------------------------------------------------------------------------------------------- */

typedef struct ingot_lm ingot_lm;
typedef struct ingot_lm_session ingot_lm_session;
typedef struct ingot_sampler ingot_sampler;
typedef struct ingot_tokenizer ingot_tokenizer; /* include/ingot/tokenizer.h */

typedef enum ingot_lm_arch {
    INGOT_LM_ARCH_LLAMA = 1, /**< RMSNorm, RoPE, GQA, SwiGLU (or MoE of SwiGLU experts) */
    INGOT_LM_ARCH_GPT2 = 2,  /**< LayerNorm, learned positions, fused qkv + biases, tanh GELU */
} ingot_lm_arch;

/** RoPE scaling (Llama family): how the rotation frequencies theta^(-2i/d) are rescaled. */
typedef enum ingot_lm_rope_scaling {
    INGOT_LM_ROPE_SCALING_NONE = 0,
    INGOT_LM_ROPE_SCALING_LINEAR = 1, /**< every frequency / rope_factor (position p as p/f) */
    INGOT_LM_ROPE_SCALING_LLAMA3 = 2, /**< Llama 3.1's rule: low frequencies / rope_factor, high
                                           ones kept, the band between interpolated */
    INGOT_LM_ROPE_SCALING_FREQS = 3,  /**< frequency i / the file's rope_freqs.weight[i] (GGUF:
                                           how llama.cpp's converter stores the Llama 3 rule) */
} ingot_lm_rope_scaling;

/** The hyper-parameters every architecture shares (filled at open; read-only). */
typedef struct ingot_lm_config {
    ingot_lm_arch arch;
    uint32_t n_layer;
    uint32_t dim;           /**< residual width */
    uint32_t n_head;        /**< query heads */
    uint32_t n_head_kv;     /**< key/value heads (grouped-query: head h reads h / (n_head /
                                 n_head_kv)) */
    uint32_t head_dim;      /**< dim / n_head */
    uint32_t ffn_dim;       /**< hidden width of the MLP (of each expert for MoE) */
    uint32_t vocab;
    uint32_t ctx_train;     /**< trained context (GPT-2: the position table's length) */
    uint32_t n_expert;      /**< 0: dense MLP */
    uint32_t n_expert_used; /**< experts per token (top-k of the router) */
    double norm_eps;        /**< RMSNorm / LayerNorm epsilon */
    double rope_theta;      /**< RoPE base (Llama) */
    ingot_rope_mode rope_mode; /**< INTERLEAVED (GGUF, llama2.c) or HALF (Hugging Face) */
    bool tied_head;         /**< the LM head is the token embedding */
    bool qkv_bias;          /**< q/k/v projections have biases (GPT-2, Qwen2) */
    int32_t bos;            /**< beginning-of-sequence token, -1 if unknown */
    int32_t eos;            /**< end-of-sequence token, -1 if unknown */
    uint32_t sliding_window; /**< attention window (Mistral); 0: none. Sessions longer than the
                                  window are refused: full attention would differ past it */
    const char *naming;     /**< "gguf" or "hf": which tensor names the weights had */
    /* appended after the first release of this struct: */
    ingot_lm_rope_scaling rope_scaling; /**< config.json rope_scaling, GGUF
                                             {arch}.rope.scaling.type / rope_freqs.weight */
    double rope_factor;                 /**< LINEAR and LLAMA3: the factor (else 1) */
    double rope_low_freq_factor;        /**< LLAMA3 */
    double rope_high_freq_factor;       /**< LLAMA3 */
    uint32_t rope_orig_ctx;             /**< LLAMA3: original_max_position_embeddings */
    /** Dims of each head RoPE rotates: the first rope_dims (pairs within them, interleaved or
     *  half-split; frequencies theta^(-2i/rope_dims)), the rest pass unrotated. head_dim unless
     *  partial rotary (GGUF {arch}.rope.dimension_count, config.json partial_rotary_factor:
     *  int(head_dim * factor), as transformers). Even, 2..head_dim; 0 for GPT-2. */
    uint32_t rope_dims;
} ingot_lm_config;

/** Receives one line per notice at open (a tensor converted, a default applied). */
typedef void (*ingot_lm_notice_fn)(void *ctx, const char *msg);

/** Options of ingot_lm_open; zero-initialise for the defaults. */
typedef struct ingot_lm_opts {
    /** config.json for weights that carry no config of their own (safetensors, PyTorch, ...).
     *  NULL: "config.json" in the folder given to ingot_lm_open_path or beside the file. */
    const char *config_path;
    ingot_lm_notice_fn notice; /**< NULL: notices are dropped */
    void *notice_ctx;
    /** A PEFT LoRA adapter: a folder holding adapter_config.json (r, lora_alpha,
     *  target_modules matched as PEFT matches them, optional use_rslora; fan_in_fan_out for
     *  GPT-2's Conv1D layers) and adapter_model.safetensors, or that .safetensors file with
     *  adapter_config.json beside it. Targets: Llama-family attention and MLP projections,
     *  Mixtral's router ("gate") and experts (w1/w2/w3), GPT-2's c_attn, c_proj and c_fc. Each
     *  targeted matrix W [out, in] becomes W + s * B A with s = lora_scale * lora_alpha / r
     *  (/ sqrt(r) with use_rslora). NULL: none. Every tensor of the adapter must be used
     *  (UNSUPPORTED naming the first one that is not). */
    const char *lora_path;
    double lora_scale;   /**< 0 means 1 */
    bool lora_runtime;   /**< keep W as stored and add s * B (A x) at run time (two thin linears
                              per targeted matrix) instead of merging into an F32 copy at open */
    /* appended after the first release of this struct: */
    /** Keep the dense Q4_K linears zero-copy. By default, where the backend has a kernel for it
     *  (the cpu backend at AVX-512 VNNI with VBMI), each one with contiguous rows, K a multiple
     *  of 256 and no run-time LoRA is repacked once at open into memory the model owns
     *  (counted in ingot_lm_estimate.owned_bytes; the same results, faster decode) and its
     *  mapped pages are released (ingot_file_tensor_release). The environment variable
     *  INGOT_LM_REPACK=0 at open does the same as true here. */
    bool no_repack;
} ingot_lm_opts;

/** Reads the config (GGUF keys, llama2.c header, or config.json) and binds every weight of the
 *  architecture (zero-copy where possible). The file must stay open until ingot_lm_free.
 *  Errors name the tensor or key (see the top of this header); NOMEM. */
INGOT_API ingot_status ingot_lm_open(ingot_backend *b, const ingot_file *f,
                                     const ingot_lm_opts *opts, ingot_lm **out, ingot_error *err);
/** As ingot_lm_open on a path: a model file of any format, or a folder in the Hugging Face
 *  layout (config.json + model.safetensors or model.safetensors.index.json with its shards, or
 *  pytorch_model.bin). The model owns the files it opened. */
INGOT_API ingot_status ingot_lm_open_path(ingot_backend *b, const char *path,
                                          const ingot_lm_opts *opts, ingot_lm **out,
                                          ingot_error *err);
/** Releases the model (NULL is a no-op). Every session of it must have been freed. */
INGOT_API void ingot_lm_free(ingot_lm *m);

/** The config (borrowed, valid until ingot_lm_free). */
INGOT_API const ingot_lm_config *ingot_lm_get_config(const ingot_lm *m);
/** The weights file (borrowed): what a tokenizer that lives in the model file is read from. */
INGOT_API const ingot_file *ingot_lm_file(const ingot_lm *m);
/** The backend the model runs on (borrowed). */
INGOT_API ingot_backend *ingot_lm_backend(const ingot_lm *m);

/** What running the model costs (the MLP runtime's estimators, for a decoder). */
typedef struct ingot_lm_estimate {
    uint64_t weight_bytes;       /**< bytes of weights read per decoded token (the memory-bound
                                      numerator; MoE counts the experts a token uses) */
    uint64_t flops_per_token;    /**< matmul FLOPs (2 per multiply-add) of one token at position
                                      0 (attention over the context adds 4 * n_layer * n_head *
                                      head_dim per cached position) */
    uint64_t owned_bytes;        /**< weights converted or repacked at open (held by the model) */
    uint64_t kv_bytes;           /**< KV cache of a session with n_ctx positions */
    uint64_t scratch_bytes;      /**< session activations for n_batch rows */
    uint64_t peak_bytes;         /**< owned + kv + scratch (mapped weights excluded) */
} ingot_lm_estimate;

/** Fills *out for a session of n_ctx positions, kv_dtype (F32 or F16; 0 = F32) and prefill
 *  chunks of n_batch rows (0 = the session defaults). No allocation; overflow saturates. */
INGOT_API void ingot_lm_estimate_plan(const ingot_lm *m, uint32_t n_ctx, ingot_dtype kv_dtype,
                                      uint32_t n_batch, ingot_lm_estimate *out);

/* ---------------------------------------------------------------------------------------------
 * 2. Sessions: KV cache and eval
 * ------------------------------------------------------------------------------------------- */

/** Options of ingot_lm_session_new; zero-initialise for the defaults. */
typedef struct ingot_lm_session_opts {
    uint32_t n_ctx;       /**< positions the KV cache holds; 0: min(ctx_train, 4096, the
                               sliding window if any) */
    ingot_dtype kv_dtype; /**< INGOT_DTYPE_F32 (0 means F32) or INGOT_DTYPE_F16 */
    uint32_t n_batch;     /**< prefill rows per forward pass (through the GEMM); 0: 128 */
} ingot_lm_session_opts;

/** Allocates the KV cache and all scratch. RANGE if n_ctx exceeds what the model can address
 *  (GPT-2: its position table), BAD_TYPE for another kv_dtype, NOMEM. */
INGOT_API ingot_status ingot_lm_session_new(ingot_lm *m, const ingot_lm_session_opts *opts,
                                            ingot_lm_session **out, ingot_error *err);
/** Releases the session (NULL is a no-op). */
INGOT_API void ingot_lm_session_free(ingot_lm_session *s);
/** Positions filled so far (the next token goes there). */
INGOT_API uint32_t ingot_lm_session_pos(const ingot_lm_session *s);
/** Capacity of the KV cache in positions. */
INGOT_API uint32_t ingot_lm_session_ctx(const ingot_lm_session *s);
/** The tokens evaluated so far (pos of them; borrowed, valid until the next eval/rewind). */
INGOT_API const int32_t *ingot_lm_session_tokens(const ingot_lm_session *s);
/** Forgets positions >= pos (0 starts over). RANGE if pos is past the current position. */
INGOT_API ingot_status ingot_lm_session_rewind(ingot_lm_session *s, uint32_t pos,
                                               ingot_error *err);

/** Makes dst hold what src holds: its tokens, its cache up to its position and its last logits
 *  (both sessions of the same model, dst's capacity at least src's position; RANGE otherwise,
 *  MISUSE for sessions of different models or KV dtypes). No allocation. Beam search uses it to
 *  fork hypotheses. */
INGOT_API ingot_status ingot_lm_session_copy(ingot_lm_session *dst, const ingot_lm_session *src,
                                             ingot_error *err);

/** Which logits ingot_lm_eval writes. */
typedef enum ingot_lm_logits {
    INGOT_LM_LOGITS_NONE = 0, /**< none (fill the cache only) */
    INGOT_LM_LOGITS_LAST = 1, /**< [vocab] of the last token */
    INGOT_LM_LOGITS_ALL = 2,  /**< [n, vocab]: every position (teacher forcing) */
} ingot_lm_logits;

/** Runs tokens[0..n) at positions pos..pos+n-1, appending their keys and values to the cache:
 *  prefill in chunks of n_batch rows through the GEMM, a single token through the GEMV. The
 *  logits asked for go to `logits` (cap floats; RANGE if too small). Decoding token by token
 *  gives the same logits as one call with all the tokens, within float rounding (the GEMV and
 *  the GEMM sum in different orders). RANGE if a token is outside [0, vocab) (naming its index)
 *  or the cache would overflow (nothing is evaluated then). No allocation. */
INGOT_API ingot_status ingot_lm_eval(ingot_lm_session *s, const int32_t *tokens, size_t n,
                                     ingot_lm_logits which, float *logits, size_t cap,
                                     ingot_error *err);
/** Logits [vocab] of the last position evaluated (borrowed, valid until the next eval), NULL
 *  before the first. */
INGOT_API const float *ingot_lm_session_logits(const ingot_lm_session *s);

/* ---------------------------------------------------------------------------------------------
 * 3. Sampling
 *
 * The chain, in llama.cpp's order: penalties (repetition, frequency, presence over the last
 * penalty_last_n tokens of the history), top-k, top-p, min-p (the last three on the
 * temperature-1 distribution), then temperature and a draw from the sampler's own splitmix64
 * RNG. Temperature <= 0 is greedy: the first maximum of the penalised logits, nothing drawn.
 * Ties keep the lower token id first. The same params, seed and logits give the same tokens on
 * any machine thread count.
 * ------------------------------------------------------------------------------------------- */

typedef struct ingot_sampler_params {
    double temperature;       /**< <= 0: greedy */
    uint32_t top_k;           /**< keep the k most probable; 0: off */
    double top_p;             /**< nucleus: keep while the mass before a token is < p (always
                                   one); 0 or >= 1: off */
    double min_p;             /**< keep tokens with p >= min_p * p_max; 0: off */
    double repeat_penalty;    /**< logit / r if > 0 else logit * r, for tokens in the window;
                                   0 or 1: off */
    double frequency_penalty; /**< logit -= count * f; 0: off */
    double presence_penalty;  /**< logit -= p if the token occurs; 0: off */
    uint32_t penalty_last_n;  /**< the window: last n history tokens; 0: 64 */
    uint64_t seed;
} ingot_sampler_params;

/** A sampler for vocab-sized logits: params copied, scratch allocated here (a is NULL: libc).
 *  RANGE for a negative or NaN parameter or vocab 0. */
INGOT_API ingot_status ingot_sampler_new(const ingot_sampler_params *p, uint32_t vocab,
                                         const ingot_allocator *a, ingot_sampler **out,
                                         ingot_error *err);
INGOT_API void ingot_sampler_free(ingot_sampler *s);
/** Restarts the RNG stream at `seed`. */
INGOT_API void ingot_sampler_reseed(ingot_sampler *s, uint64_t seed);
/** Picks the next token from logits[vocab] (left unchanged) given the history (the tokens so far,
 *  for the penalties; may be NULL when n_history is 0). No allocation. RANGE if every logit is
 *  NaN or -inf after filtering. */
INGOT_API ingot_status ingot_sampler_sample(ingot_sampler *s, const float *logits,
                                            const int32_t *history, size_t n_history,
                                            int32_t *token, ingot_error *err);

/* ---------------------------------------------------------------------------------------------
 * 4. Generate
 * ------------------------------------------------------------------------------------------- */

/** Called with each generated token that is neither a stop token nor the token completing a
 *  stop string, before it is evaluated (after on_text got what its text resolved); return false
 *  to stop there. */
typedef bool (*ingot_lm_token_fn)(void *ctx, int32_t token);
/** Called with generated text as it is resolved (opts.on_text): bytes that can no longer be part
 *  of a stop string, in order, never the stop string itself or anything after it; not
 *  NUL-terminated, len >= 1. Return false to stop there. */
typedef bool (*ingot_lm_text_fn)(void *ctx, const char *text, size_t len);

/** Most stop strings per call, and most bytes in one (LIMIT beyond). */
#define INGOT_LM_MAX_STOP_STRINGS 1024u
#define INGOT_LM_MAX_STOP_LEN 65536u

typedef struct ingot_lm_generate_opts {
    uint32_t max_tokens;          /**< 0: until a stop or the cache is full */
    bool ignore_eos;              /**< do not stop at the config's eos */
    const int32_t *stop_tokens;   /**< more tokens that stop generation (kept in the output) */
    size_t n_stop_tokens;
    ingot_lm_token_fn on_token;   /**< NULL: none */
    void *ctx;                    /**< passed to on_token and on_text */
    /* appended after the first release of this struct: text and stop strings. The generated
     * tokens are decoded with `tokenizer` through its streaming decoder (the text starts at the
     * first generated token, never the prompt; bytes of an incomplete UTF-8 character wait for
     * the rest, bytes that cannot form one become U+FFFD, a token outside the tokenizer's
     * vocabulary decodes to nothing), and that text is what stop strings match and on_text
     * receives. */
    const ingot_tokenizer *tokenizer; /**< needed for stop_strings and on_text; NULL: none */
    /** Flags of the streaming decoder: INGOT_DECODE_KEEP_LEADING_SPACE when the text goes on
     *  from prompt text (SentencePiece's space before the first word is kept), as
     *  `ingot generate` does; INGOT_DECODE_SPECIAL */
    uint32_t decode_flags;
    /** Stop strings (byte strings, 1 .. INGOT_LM_MAX_STOP_LEN bytes each, at most
     *  INGOT_LM_MAX_STOP_STRINGS): generation stops after the token whose text makes the text
     *  generated so far contain one of them (it may span tokens, start and end inside a token).
     *  The text before the earliest occurrence is all on_text gets; the generated ids include
     *  the token that completed the match (it is not evaluated, as any last token), and
     *  stats.stop is INGOT_LM_STOP_STRING. While the end of the text could still become a stop
     *  string it is held back from on_text. An empty or NULL string is MISUSE (naming it), so is
     *  stop strings without a tokenizer. */
    const char *const *stop_strings;
    const size_t *stop_lens;      /**< their lengths; NULL: each is NUL-terminated */
    size_t n_stop_strings;
    ingot_lm_text_fn on_text;     /**< the resolved text as it comes (needs tokenizer); NULL */
} ingot_lm_generate_opts;

typedef enum ingot_lm_stop {
    INGOT_LM_STOP_LENGTH = 0,   /**< max_tokens reached */
    INGOT_LM_STOP_EOS = 1,      /**< the eos or a stop token was generated */
    INGOT_LM_STOP_CALLBACK = 2, /**< on_token or on_text returned false */
    INGOT_LM_STOP_CONTEXT = 3,  /**< the KV cache is full */
    INGOT_LM_STOP_STRING = 4,   /**< the text contains a stop string (stats.stop_string: which) */
} ingot_lm_stop;

typedef struct ingot_lm_stats {
    uint64_t prompt_tokens, prefill_ns;
    uint64_t generated_tokens, decode_ns; /**< decode_ns covers the tokens after the first */
    ingot_lm_stop stop;
    /* appended after the first release of this struct: */
    int32_t stop_string;  /**< INGOT_LM_STOP_STRING: the index of the string found (the
                               earliest occurrence; at one place, the lowest index); else -1 */
    uint64_t text_bytes;  /**< bytes handed to on_text (0 without a tokenizer) */
} ingot_lm_stats;

/** Evaluates the prompt (appended to what the session holds; an empty prompt on an empty
 *  session starts from the config's bos; an empty prompt on a session that already ran
 *  continues from its last logits), then samples and evaluates tokens one at a time until
 *  max_tokens, eos, a stop token, a stop string, a callback or a full cache. Generated tokens
 *  go to out (out_cap of them at most: generation stops there too) and *n_out; a stop token
 *  (eos included), or the token that completed a stop string, is the last one there. The last
 *  token written is not evaluated (the session ends just before it), so a continuation passes
 *  it as the next prompt. At the end the text still held back is matched once more (with the
 *  decoder's flushed bytes) and handed to on_text. stats may be NULL. With stop strings or
 *  on_text the call allocates one buffer (the longest stop string plus one token's text)
 *  before the prompt; the decode loop allocates nothing. */
INGOT_API ingot_status ingot_lm_generate(ingot_lm_session *s, ingot_sampler *sp,
                                         const int32_t *prompt, size_t n_prompt,
                                         const ingot_lm_generate_opts *opts, int32_t *out,
                                         size_t out_cap, size_t *n_out, ingot_lm_stats *stats,
                                         ingot_error *err);

/* ---------------------------------------------------------------------------------------------
 * 5. Beam search
 *
 * Hypotheses are scored by their summed log-probabilities (log-softmax of the logits, in double)
 * divided by length^length_penalty (length = tokens generated, eos included). Each step expands
 * every live hypothesis by every token and ranks the candidates by summed log-probability
 * (ties: the lower beam, then the lower token id); walking the ranking, a candidate ending in eos
 * among the first `width` ranks is finished (it takes no live slot), any other candidate becomes
 * live until `width` are live (Hugging Face's rule). After max_tokens steps the live hypotheses
 * are finished as they are. The best finished hypothesis wins (ties: the first finished).
 * width 1 without eos is greedy decoding.
 *
 * Stop strings (opts.stop_strings, with a tokenizer): each hypothesis decodes its own tokens
 * through its own streaming decoder, as ingot_lm_generate does (the text starts at the first
 * generated token). A candidate whose text then contains a stop string is treated as one ending
 * in eos: among the first `width` ranks it is finished (its tokens include the one completing
 * the match, and that token counts in its length), else dropped; it never takes a live slot.
 * The winner's text, cut right before its earliest stop string, goes to on_text at the end.
 * ------------------------------------------------------------------------------------------- */

typedef struct ingot_lm_beam_opts {
    uint32_t width;        /**< beams, 1..256 */
    uint32_t max_tokens;   /**< tokens generated per hypothesis, >= 1 */
    double length_penalty; /**< exponent of the length normaliser (0: plain sums; HF uses 1) */
    bool ignore_eos;       /**< never finish at eos */
    /* appended after the first release of this struct: text and stop strings, with the
     * meaning and the checks (MISUSE, LIMIT) of ingot_lm_generate_opts' members of these names */
    const ingot_tokenizer *tokenizer; /**< needed for stop_strings and on_text; NULL: none */
    uint32_t decode_flags;            /**< flags of the streaming decoders */
    const char *const *stop_strings;  /**< finish a hypothesis whose text contains one */
    const size_t *stop_lens;          /**< their lengths; NULL: each is NUL-terminated */
    size_t n_stop_strings;
    /** Called once the search is over with the winner's text (cut before its stop string), in
     *  one or more pieces; returning false stops the pieces there (the search is over either
     *  way). NULL: none. */
    ingot_lm_text_fn on_text;
    void *ctx;                        /**< passed to on_text */
} ingot_lm_beam_opts;

/** Runs beam search after the prompt (empty: the config's bos). It creates 2 x width sessions
 *  of the model with `so` (NULL: defaults; n_ctx must hold the prompt plus max_tokens) and all
 *  its scratch up front (with stop strings: one decoder state and held text per session); the
 *  search itself allocates nothing. The best hypothesis' generated
 *  tokens go to out (out_cap >= max_tokens, else RANGE), their count to *n_out, its score to
 *  *score (may be NULL). */
INGOT_API ingot_status ingot_lm_beam_search(ingot_lm *m, const ingot_lm_session_opts *so,
                                            const int32_t *prompt, size_t n_prompt,
                                            const ingot_lm_beam_opts *opts, int32_t *out,
                                            size_t out_cap, size_t *n_out, double *score,
                                            ingot_error *err);


/* ---------------------------------------------------------------------------------------------
 * 6. Names and config for converters (issue 18): the runtime's own table of tensor names, so
 *    `ingot convert HF_FOLDER model.gguf` and the runtime agree on every name.
 * ------------------------------------------------------------------------------------------- */

/** What a name maps to, beside the other naming's name. */
typedef struct ingot_lm_name_info {
    uint32_t layer;     /**< the block, UINT32_MAX for tensors outside the blocks */
    uint32_t expert;    /**< the expert of a per-expert tensor, UINT32_MAX otherwise */
    /** 'q' or 'k' for the query and key projections (weights and biases), 0 otherwise:
     *  llama.cpp's converter permutes their rows for the "llama" GGUF architecture (by the
     *  head count for q, the KV head count for k; not for "qwen2", which rotates half-split) */
    char qk;
    bool hf_transposed; /**< the HF tensor is stored [in, out] (GPT-2's Conv1D) */
    /** The GGUF name holds every expert of the layer stacked on a new outer dimension
     *  (ffn_gate_exps, ffn_up_exps, ffn_down_exps), where HF has one tensor per expert */
    bool stacked;
    /** An HF buffer that is no parameter (GPT-2's attn.bias and attn.masked_bias, rotary
     *  inv_freq): converters leave it out; the returned name is empty */
    bool ignored;
} ingot_lm_name_info;

/** The GGUF (llama.cpp) name of Hugging Face tensor `hf` of an `arch` model into buf (cap bytes,
 *  NUL-terminated); a per-expert tensor gives the stacked name, with info->expert set. GPT-2 names
 *  are accepted with and without "transformer.". info may be NULL. NOT_FOUND (naming the tensor)
 *  when the table has no such name, RANGE when buf is too small. */
INGOT_API ingot_status ingot_lm_name_to_gguf(ingot_lm_arch arch, const char *hf, char *buf,
                                             size_t cap, ingot_lm_name_info *info,
                                             ingot_error *err);
/** The Hugging Face name of GGUF tensor `gguf` (GPT-2 with "transformer."); for a stacked experts
 *  tensor, that of expert `expert` (ignored otherwise). Errors as ingot_lm_name_to_gguf. */
INGOT_API ingot_status ingot_lm_name_to_hf(ingot_lm_arch arch, const char *gguf, uint32_t expert,
                                           char *buf, size_t cap, ingot_lm_name_info *info,
                                           ingot_error *err);

/** Reads a model's config without opening its weights, with the runtime's readers, defaults and
 *  checks: from a config.json when `config_json` is a path, else from f's GGUF-style keys
 *  (f must then be non-NULL). vocab is 0 when the config does not say (GGUF keys: take it from
 *  token_embd). Errors as ingot_lm_open's (the key named in err->where). */
INGOT_API ingot_status ingot_lm_config_read(const ingot_file *f, const char *config_json,
                                            ingot_lm_config *out, ingot_error *err);

/** The divisors of a scaled RoPE's frequencies, as llama.cpp's converter stores them in a GGUF's
 *  rope_freqs.weight: under c's rule, rotated pair i (i < rope_dims / 2) turns at
 *  rope_theta^(-2i / rope_dims) / out[i] radians per position. LINEAR: the factor; LLAMA3:
 *  Llama 3.1's bands (the factor below the low-frequency band, 1 above the high one,
 *  interpolated between); NONE, and FREQS (whose divisors are the file's tensor): 1. n must be
 *  rope_dims / 2 (MISUSE otherwise, or for GPT-2). */
INGOT_API ingot_status ingot_lm_rope_divisors(const ingot_lm_config *c, float *out, size_t n,
                                              ingot_error *err);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_LM_H */
