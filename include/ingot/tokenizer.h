/*
 * ingot/tokenizer.h - text to token ids and back, without a model.
 *
 * Kinds (docs/TOKENIZERS.md has the details and what is refused):
 *   "bpe"  byte-level BPE of the GPT-2 family: bytes mapped to printable code points, a regex
 *          pre-tokenizer (GPT-2, Llama 3 and the other byte-level ones llama.cpp names in
 *          tokenizer.ggml.pre), merges by rank, Llama 3's ignore_merges.
 *   "spm"  SentencePiece-style (Llama 1/2, Mistral, TinyLlama, stories): '\xe2\x96\x81' for
 *          spaces, a leading space added, merges chosen by score, <0xNN> byte fallback.
 *   "bpe-fallback"  Hugging Face BPE with byte_fallback (tokenizer.json of SentencePiece models):
 *          the same text handling as "spm", merges by rank.
 * Sources: a GGUF file's tokenizer.ggml.* metadata (an open ingot_file), a Hugging Face
 * tokenizer.json (tokenizer_config.json beside it is read too), llama2.c's tokenizer.bin, and
 * OpenAI's encoder.json + vocab.bpe or Hugging Face's vocab.json + merges.txt (a folder).
 * WordPiece, Unigram and unknown pre-tokenizers are refused with INGOT_UNSUPPORTED naming them.
 *
 * Ownership: ingot_tokenizer_open*() return an owned handle (ingot_tokenizer_close() releases it,
 * NULL is a no-op); everything is copied at open, so the source file may be closed afterwards.
 * Strings handed out are borrowed until close. A failed call leaves *out NULL.
 *
 * Memory: open allocates everything the vocabulary needs, through the allocator of the options,
 * and (byte-level BPE and SentencePiece) the tokenizer's own word caches (2 x 2 MiB by default,
 * ingot_tokenizer_opts). Encoding needs work memory proportional to the text (the BPE and
 * SentencePiece merge state): pass `scratch` of ingot_tokenizer_scratch_size() bytes to allocate
 * nothing; with scratch NULL encode takes that much from the tokenizer's allocator for the
 * duration of the call. Decoding and the streaming decoder never allocate.
 *
 * Threads: any number of threads may encode and decode with one handle at once (each with its
 * own scratch and stream state). The vocabulary is immutable after open; the only state encoding
 * changes is the tokenizer's word caches, each taken by one encode at a time (an atomic flag) and
 * only ever memoizing results, so no call's ids depend on another's. Close must not race.
 *
 * Input text is bytes: invalid UTF-8 is accepted and kept byte for byte (for byte-level BPE each
 * invalid byte is one code point of no class, so decode(encode(s)) == s for any bytes).
 */
#ifndef INGOT_TOKENIZER_H
#define INGOT_TOKENIZER_H

#include "ingot/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ingot_tokenizer ingot_tokenizer;

/** word_cache_bytes value: the tokenizer keeps no word caches of its own. */
#define INGOT_TOKENIZER_NO_WORD_CACHE SIZE_MAX

/** Open options. Zero-initialise ({0}) for the defaults. */
typedef struct ingot_tokenizer_opts {
    const ingot_allocator *allocator; /**< NULL: libc; copied, ctx must outlive the tokenizer */
    /** Bytes of each of the tokenizer's own word caches, which plain encodes borrow ("Word
     *  cache" below): 0 for the default, 2 MiB; INGOT_TOKENIZER_NO_WORD_CACHE for none; at most
     *  1 GiB (else LIMIT). Reserved at open; with libc's allocator the pages are touched only
     *  as words fill them. */
    size_t word_cache_bytes;
    /** How many encodes at once may each borrow one of those caches (0: the default, 2; at most
     *  64, else LIMIT). Encodes beyond that run without one, with the same results. */
    uint32_t word_caches;
} ingot_tokenizer_opts;

/** Opens the tokenizer described by a GGUF file's tokenizer.ggml.* metadata (model "gpt2" or
 *  "llama"; a vocab-only GGUF or a full model). f is only read during the call.
 *  NOT_FOUND when the file has no tokenizer.ggml.model; UNSUPPORTED for other models ("bert",
 *  "t5", ...) and unknown tokenizer.ggml.pre values; BAD_METADATA / BAD_ARRAY / WRONG_TYPE for
 *  inconsistent vocabularies (the error names the key and element). */
INGOT_API ingot_status ingot_tokenizer_open_file(const ingot_file *f,
                                                 const ingot_tokenizer_opts *opts,
                                                 ingot_tokenizer **out, ingot_error *err);

/** Opens a tokenizer from a path: a GGUF file (model or vocab), a tokenizer.json, a llama2.c
 *  tokenizer.bin, or a folder holding tokenizer.json, encoder.json + vocab.bpe, vocab.json +
 *  merges.txt, tokenizer.bin or a single *.gguf (tried in that order). The kind of a file is told
 *  from its content. */
INGOT_API ingot_status ingot_tokenizer_open(const char *path, const ingot_tokenizer_opts *opts,
                                            ingot_tokenizer **out, ingot_error *err);

/** Opens a tokenizer held in memory (copied): GGUF, tokenizer.json or llama2.c tokenizer.bin,
 *  told from the content. */
INGOT_API ingot_status ingot_tokenizer_open_buffer(const void *buf, size_t size,
                                                   const ingot_tokenizer_opts *opts,
                                                   ingot_tokenizer **out, ingot_error *err);

/** Releases the tokenizer. NULL is a no-op. */
INGOT_API void ingot_tokenizer_close(ingot_tokenizer *t);

/** "bpe", "spm" or "bpe-fallback" (static storage). */
INGOT_API const char *ingot_tokenizer_kind(const ingot_tokenizer *t);
/** The pre-tokenizer: a tokenizer.ggml.pre name ("gpt-2", "llama-bpe", ...) for "bpe", "none"
 *  for the others (static storage). */
INGOT_API const char *ingot_tokenizer_pre(const ingot_tokenizer *t);
/** Number of token ids (valid ids are 0 .. vocab_size-1). */
INGOT_API uint32_t ingot_tokenizer_vocab_size(const ingot_tokenizer *t);

/** Special token roles. */
typedef enum ingot_token_role {
    INGOT_TOKEN_BOS = 0,
    INGOT_TOKEN_EOS = 1,
    INGOT_TOKEN_UNK = 2,
    INGOT_TOKEN_PAD = 3,
} ingot_token_role;

/** Id of a special token, or -1 when the vocabulary has none for that role. */
INGOT_API int32_t ingot_tokenizer_special(const ingot_tokenizer *t, ingot_token_role role);
/** Whether encoding with INGOT_ENCODE_ADD_SPECIAL prepends BOS / appends EOS (from the file:
 *  tokenizer.ggml.add_bos_token, tokenizer_config.json add_bos_token, a TemplateProcessing
 *  post-processor; else the kind's default: BOS for "spm", "bpe-fallback" and Llama 3's BPE). */
INGOT_API bool ingot_tokenizer_adds_bos(const ingot_tokenizer *t);
INGOT_API bool ingot_tokenizer_adds_eos(const ingot_tokenizer *t);

/** The vocabulary's text of token id as stored ("\xc4\xa0the" for byte-level BPE,
 *  "\xe2\x96\x81the" or "<0x0A>" for SentencePiece). Borrowed until close, not NUL-terminated in
 *  general. RANGE for an id outside the vocabulary. */
INGOT_API ingot_status ingot_tokenizer_token_text(const ingot_tokenizer *t, int32_t id,
                                                  const char **text, size_t *len);
/** True if id is a control token (BOS, EOS, <|eot_id|>, ...), which decodes to nothing unless
 *  INGOT_DECODE_SPECIAL is given. False for ids outside the vocabulary. */
INGOT_API bool ingot_tokenizer_is_control(const ingot_tokenizer *t, int32_t id);

/** Encode flags. */
enum {
    /** Add the BOS / EOS the tokenizer asks for (ingot_tokenizer_adds_bos/_eos). */
    INGOT_ENCODE_ADD_SPECIAL = 1u << 0,
    /** Text spelling a control token ("<s>", "<|begin_of_text|>") becomes that token. Without
     *  it only user-defined added tokens are recognised, as llama.cpp does. */
    INGOT_ENCODE_PARSE_SPECIAL = 1u << 1,
};

/** Most ids encoding `len` bytes can give: 4 * len + 8 (SentencePiece without a U+2581 token
 *  spells each space, and the space it adds after a special token, as three byte tokens). */
INGOT_API size_t ingot_tokenizer_max_tokens(size_t len);

/** Bytes of scratch ingot_tokenizer_encode() needs for a text of `len` bytes (0 on overflow). */
INGOT_API size_t ingot_tokenizer_scratch_size(const ingot_tokenizer *t, size_t len);

/** Encodes text[0..len) into ids. *n_out receives the number of ids the text encodes to.
 *  ids NULL (cap 0): size query, returns OK. Else RANGE when cap < *n_out (the first cap ids
 *  are written). scratch: NULL, or at least ingot_tokenizer_scratch_size(t, len) bytes (else
 *  MISUSE), aligned to 8. NOMEM only when scratch is NULL and the allocator fails. Words go
 *  through one of the tokenizer's own word caches when one is free ("Word cache" below): the
 *  ids are the same with or without it. */
INGOT_API ingot_status ingot_tokenizer_encode(const ingot_tokenizer *t, const char *text,
                                              size_t len, uint32_t flags, int32_t *ids,
                                              size_t cap, size_t *n_out, void *scratch,
                                              size_t scratch_size, ingot_error *err);

/* ---------------------------------------------------------------------------------------------
 * Word cache: a table of pre-tokens already encoded and their ids, kept across calls, so that a
 * word seen before is found in a small table instead of the vocabulary's hash tables and merges.
 * ingot_tokenizer_encode() borrows one of the tokenizer's own (ingot_tokenizer_opts sizes them);
 * a caller-owned cache (below) gives one thread a table of its own size, statistics and clear.
 * ------------------------------------------------------------------------------------------- */
typedef struct ingot_tokenizer_cache ingot_tokenizer_cache;

/** Creates an empty word cache for tokenizer t, taking about `bytes` (the table is the largest
 *  power of two of 64-byte entries that fits, at least one, plus a small header; 1-4 MB suit
 *  most jobs: docs/TOKENIZERS.md). All of it is allocated here, through t's allocator; encoding
 *  with it allocates nothing more. t must outlive the cache. MISUSE for NULL t or out; LIMIT
 *  for bytes over 1 GiB; NOMEM. A failed call leaves *out NULL.
 *  Which words it holds: byte-level BPE ("bpe") pre-tokens and SentencePiece ("spm") words of up
 *  to 32 bytes encoding to at most 6 ids; "bpe-fallback" merges a whole fragment at once and
 *  encodes as without a cache.
 *  Threads: a cache is used by one thread at a time (encode writes it); give each thread its own.
 *  The tokenizer itself stays immutable and shared. */
INGOT_API ingot_status ingot_tokenizer_cache_new(const ingot_tokenizer *t, size_t bytes,
                                                 ingot_tokenizer_cache **out, ingot_error *err);
/** Releases the cache (NULL is a no-op); before its tokenizer is closed. */
INGOT_API void ingot_tokenizer_cache_free(ingot_tokenizer_cache *c);
/** Empties the cache (the memory stays). NULL is a no-op. */
INGOT_API void ingot_tokenizer_cache_clear(ingot_tokenizer_cache *c);

/** What the cache saw since creation or the last clear: words looked up in it and the bytes
 *  they span, and those of them found (hits). Bytes are the text's for "bpe" (one-byte words are
 *  not looked up), the escaped text's for "spm" (a space is the 3 bytes of U+2581). Any pointer
 *  may be NULL; c NULL gives zeros. */
INGOT_API void ingot_tokenizer_cache_stats(const ingot_tokenizer_cache *c, uint64_t *words,
                                           uint64_t *bytes, uint64_t *hits, uint64_t *hit_bytes);

/** The same figures summed over the tokenizer's own word caches (ingot_tokenizer_opts), since
 *  open: for choosing word_cache_bytes. Read them while no encode runs on t (they are not
 *  atomic). Zeros without caches; any pointer may be NULL. */
INGOT_API void ingot_tokenizer_word_cache_stats(const ingot_tokenizer *t, uint64_t *words,
                                                uint64_t *bytes, uint64_t *hits,
                                                uint64_t *hit_bytes);

/** ingot_tokenizer_encode() through a word cache: the same parameters, errors and results.
 *  Guarantee: the ids (and *n_out and the status) are exactly those of ingot_tokenizer_encode for
 *  every input, flags and cache state: the cache only memoizes the pure function from a word's
 *  bytes to its ids; it holds nothing of the flags, special tokens or the text around a word.
 *  cache NULL: ingot_tokenizer_encode(). MISUSE when the cache was made for another tokenizer.
 *  With a cache the tokenizer's own are not used. Allocates
 *  nothing the plain call would not (scratch as there). */
INGOT_API ingot_status ingot_tokenizer_encode_cached(const ingot_tokenizer *t,
                                                     ingot_tokenizer_cache *cache,
                                                     const char *text, size_t len, uint32_t flags,
                                                     int32_t *ids, size_t cap, size_t *n_out,
                                                     void *scratch, size_t scratch_size,
                                                     ingot_error *err);

/** Decode flags. */
enum {
    /** Control tokens decode to their text instead of nothing. */
    INGOT_DECODE_SPECIAL = 1u << 0,
    /** Keep the space SentencePiece adds in front of the text (by default decoding strips one
     *  leading space from the first token that is not a control token, so that
     *  decode(encode(s)) == s). */
    INGOT_DECODE_KEEP_LEADING_SPACE = 1u << 1,
};

/** Decodes ids into bytes (not NUL-terminated): byte-level tokens mapped back to bytes,
 *  SentencePiece '\xe2\x96\x81' to spaces and <0xNN> to byte NN. *len_out receives the length.
 *  out NULL (cap 0): size query. RANGE when cap is too small or an id is outside the vocabulary
 *  (err names the position). Allocates nothing. */
INGOT_API ingot_status ingot_tokenizer_decode(const ingot_tokenizer *t, const int32_t *ids,
                                              size_t n, uint32_t flags, char *out, size_t cap,
                                              size_t *len_out, ingot_error *err);

/** Streaming decoder state: caller-allocated, one per stream, for printing token by token.
 *  Initialise with ingot_tokenizer_stream_init(). It holds back the bytes of an incomplete UTF-8
 *  sequence, so what push emits is always valid UTF-8: bytes that can never form a valid
 *  sequence are replaced by U+FFFD. Members are private. */
typedef struct ingot_tokenizer_stream {
    uint32_t flags;
    uint32_t started;
    uint32_t npend;
    uint8_t pend[4];
} ingot_tokenizer_stream;

INGOT_API void ingot_tokenizer_stream_init(ingot_tokenizer_stream *s, uint32_t flags);
/** Output bytes one push or flush can write at most (cap of out). */
INGOT_API size_t ingot_tokenizer_stream_max(const ingot_tokenizer *t);
/** Decodes one more id; writes the complete UTF-8 it makes available to out (cap >=
 *  ingot_tokenizer_stream_max(t), else MISUSE) and its length to *len. RANGE for a bad id. */
INGOT_API ingot_status ingot_tokenizer_stream_push(const ingot_tokenizer *t,
                                                   ingot_tokenizer_stream *s, int32_t id,
                                                   char *out, size_t cap, size_t *len);
/** End of stream: held-back bytes of an incomplete sequence come out as U+FFFD. */
INGOT_API ingot_status ingot_tokenizer_stream_flush(const ingot_tokenizer *t,
                                                    ingot_tokenizer_stream *s, char *out,
                                                    size_t cap, size_t *len);


/* ---------------------------------------------------------------------------------------------
 * Export, for converters (tok_export.c): what a GGUF's tokenizer.ggml.* arrays or a Hugging Face
 * tokenizer.json hold, read back from any loaded tokenizer.
 * ------------------------------------------------------------------------------------------- */

/** The tokenizer.ggml.model llama.cpp's converter writes for this vocabulary: "gpt2" for "bpe",
 *  "llama" for "spm" and "bpe-fallback" (static storage; NULL for NULL). */
INGOT_API const char *ingot_tokenizer_gguf_model(const ingot_tokenizer *t);

/** Score and GGUF token type (tokenizer.ggml.token_type numbering: 1 normal, 2 unknown, 3
 *  control, 4 user-defined, 5 unused, 6 byte) of id; either pointer may be NULL. The unknown
 *  token of the SentencePiece kinds is type 2. "bpe-fallback" vocabularies (tokenizer.json
 *  stores no scores) get SentencePiece BPE's own: -k for the k-th normal token, 0 for the
 *  others. RANGE for an id outside the vocabulary. */
INGOT_API ingot_status ingot_tokenizer_token_attrs(const ingot_tokenizer *t, int32_t id,
                                                   float *score, int32_t *type);
/** The same for every token at once (O(vocabulary); the single-id call is O(id) for
 *  "bpe-fallback"): cap entries at least the vocabulary size (else RANGE); either array may be
 *  NULL. */
INGOT_API ingot_status ingot_tokenizer_vocab_attrs(const ingot_tokenizer *t, float *scores,
                                                   int32_t *types, size_t cap);

/** The merges as pairs of token ids (pairs[2i], pairs[2i+1]), in rank order: "bpe" and
 *  "bpe-fallback" the file's (a repeated pair once); "spm" those transformers' SentencePiece
 *  converter derives (every split of a token's text at a character boundary into two tokens,
 *  by left then right id, all ordered by the token's score, highest first). pairs NULL: *n gets
 *  the count. RANGE when cap (in pairs) is too small; NOMEM. */
INGOT_API ingot_status ingot_tokenizer_merges(const ingot_tokenizer *t, int32_t *pairs,
                                              size_t cap, size_t *n, ingot_error *err);

/** The vocabulary as a Hugging Face tokenizer.json (BPE model: byte-level with the GPT-2, Llama 3
 *  or Qwen 2 pre-tokenizer, or SentencePiece-style with byte_fallback, as transformers writes
 *  them) and, when config is not NULL, a tokenizer_config.json (add_bos_token, add_eos_token,
 *  the special tokens, tokenizer_class). Both NUL-terminated, allocated with libc; release each
 *  with ingot_tokenizer_export_free(text, len). UNSUPPORTED for other pre-tokenizers; NOMEM. */
INGOT_API ingot_status ingot_tokenizer_export_json(const ingot_tokenizer *t, char **json,
                                                   size_t *json_len, char **config,
                                                   size_t *config_len, ingot_error *err);
INGOT_API void ingot_tokenizer_export_free(char *text, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_TOKENIZER_H */
