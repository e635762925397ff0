/*
 * tok_internal.h - the tokenizer object shared by the loaders (GGUF, tokenizer.json, llama2.c,
 * encoder.json) and the encoders (byte-level BPE, SentencePiece, BPE with byte fallback).
 * A loader fills a tok_build (token texts, scores, types, merges as text pairs, special ids) and
 * ingot__tok_finish() turns it into the immutable ingot_tokenizer: one arena of token bytes, a
 * hash from token bytes to id, a hash from (left id, right id) to (rank, merged id).
 */
#ifndef INGOT_TOK_INTERNAL_H
#define INGOT_TOK_INTERNAL_H

#include "deps.h"
#include "ingot/core.h"
#include "ingot/tokenizer.h"

/* Bounds on hostile vocabularies (RELIABILITY.md §0): counts and sizes past these are LIMIT. */
#define TOK_MAX_VOCAB ((1u << 21) - 1) /* 2 M tokens (the largest real ones have ~260 K) */
#define TOK_MAX_MERGES ((1u << 22) - 1) /* 4 M merges (Llama 3 has 280 K) */
#define TOK_MAX_TOKEN_BYTES 4096u    /* one token's text */
#define TOK_MAX_FILE (1ull << 30)    /* a tokenizer file read into memory */
/* Work of the checks at open whose cost grows with the square of token lengths (SentencePiece's
 * pair table and whole-token check): bytes hashed, at most. Past it the pair table is not built
 * and the remaining tokens are not checked (both only make encoding faster): real vocabularies
 * need under 2^25 (Llama 2: 2^21), tokens of 4096 bytes would need 2^24 each. */
#define TOK_OPEN_BUDGET (1ull << 27)

typedef enum tok_kind { TOK_BPE = 1, TOK_SPM = 2, TOK_BPE_FALLBACK = 3 } tok_kind;

/* Where the SentencePiece kinds add the leading space. */
enum { TOK_PREFIX_NONE = 0, TOK_PREFIX_EACH = 1, TOK_PREFIX_FIRST = 2 };

/* Token types, GGUF's numbering (tokenizer.ggml.token_type). */
enum {
    TOK_T_UNDEFINED = 0,
    TOK_T_NORMAL = 1,
    TOK_T_UNKNOWN = 2,
    TOK_T_CONTROL = 3,
    TOK_T_USER = 4,
    TOK_T_UNUSED = 5,
    TOK_T_BYTE = 6,
};

/* Pre-tokenizers of byte-level BPE (tok_pretok.c). */
typedef enum tok_pre {
    TOK_PRE_NONE = 0,
    TOK_PRE_DEFAULT,   /* llama.cpp's "default" */
    TOK_PRE_GPT2,      /* gpt-2 and the names llama.cpp maps to it, mpt, olmo, jais */
    TOK_PRE_LLAMA3,    /* llama-bpe, dbrx, smaug-bpe, chatglm-bpe: \p{N}{1,3} */
    TOK_PRE_QWEN2,     /* qwen2, stablelm2, deepseek-r1-qwen, megrez: Llama 3 with \p{N} */
    TOK_PRE_FALCON,
    TOK_PRE_STARCODER, /* starcoder, refact, command-r, smollm, codeshell, exaone, minerva-7b */
    TOK_PRE_BLOOM,     /* bloom, poro-chat, gpt3-finnish */
    TOK_PRE_VIKING,
    TOK_PRE_DEEPSEEK_CODER,
} tok_pre;

struct ingot_tokenizer {
    ingot_allocator alloc;
    /* The word caches plain encodes borrow (tok_encode.c: ingot__tok_wc_attach): n_wc slots,
     * each held by one encode at a time through its flag. NULL: none. */
    struct tok_wc_slot *wc;
    uint32_t n_wc;
    tok_kind kind;
    tok_pre pre;
    const char *pre_name; /* static */
    uint32_t n_vocab;

    /* Token i: stored text at arena[text_off[i]], text_len[i] bytes; its decoded bytes (what it
     * stands for in the text) at arena[dec_off[i]], dec_len[i] bytes. */
    uint8_t *arena;
    size_t arena_len;
    uint32_t *text_off, *text_len, *dec_off, *dec_len;
    float *score;
    uint8_t *type;
    uint32_t max_dec_len;
    /* The same facts packed per token for the hot paths (one cache line touch per token). */
    struct tok_ent {
        uint32_t dec_off;
        uint16_t dec_len;
        uint8_t type;
        uint8_t whole; /* see `whole` below */
    } *ent;
    /* Byte-level BPE: the merge of every pair of byte tokens, [a << 8 | b] = rank << 32 | id
     * (UINT64_MAX: none); the first round of every word's merges without the hash. */
    uint64_t *pair0;

    /* Token bytes -> id (open addressing; id UINT32_MAX: empty). A slot (32 bytes, two a cache
     * line) holds the key's first 24 bytes, its length and 16 bits of its hash, so a lookup of
     * a word of up to 24 bytes touches one slot and nothing else (the token's text only past
     * them). Keyed by decoded bytes (byte-level BPE) or stored text (the others). */
    struct tok_map_slot {
        uint64_t head; /* bytes 0..7 of the key, little-endian, zero-padded past its end */
        uint64_t rest[2]; /* bytes 8..15 and 16..23, the same */
        uint32_t id;
        uint16_t len;  /* key length (<= TOK_MAX_TOKEN_BYTES), TOK_SLOT_WHOLE or'ed in */
        uint16_t tag;
    } *map;
    uint64_t map_mask;
    /* The allocations holding map and the merge table (mslot8 / mslot) where tok_build.c's
     * ingot__alloc_table placed them at a huge-page boundary inside (NULL: each is its own). */
    void *map_raw, *mslot_raw;
    size_t map_raw_n, mslot_raw_n;
    /* The same kind of filter as mfilt (below) over the token hash's keys: a word that is no
     * token is mostly told so without probing the table. NULL: none. */
    uint64_t *tfilt;
    uint64_t tf_mask;
    /* byte-level BPE: whole[i] set when merging token i's own bytes gives token i, so a
     * pre-token equal to it is emitted without running the merges (exactly what they give). */
    uint8_t *whole;

    /* (left, right) -> merge, open addressing, the merged token in the slot so that a lookup
     * touches one line. rank orders the merges: BPE's merge rank, or for SentencePiece the place
     * of the merged token's score in descending order (equal scores, equal ranks). Two layouts:
     * - m8 (ids and ranks < 2^16: GPT-2, Llama 2): 8-byte slots (left << 48 | right << 32 |
     *   rank << 16 | merged), half the memory; a used slot is never UINT64_MAX (ids < 65535);
     * - else 16-byte slots: key left << 43 | right << 22 | rank (ids < 2^21, ranks < 2^22, never
     *   UINT64_MAX), then the merged token. */
    bool m8;
    uint64_t *mslot8;
    struct tok_mslot {
        uint64_t key;
        uint32_t res;
        uint32_t unused;
    } *mslot;
    uint64_t m_mask;
    uint32_t n_merges;
    /* A filter over the merge table's keys (a blocked Bloom filter: two bits of one 64-bit word
     * per key, 8 bits per merge): most pairs that have no merge are told so without touching
     * the table, which is megabytes and misses the cache. NULL: none (lookups probe). */
    uint64_t *mfilt;
    uint64_t mf_mask; /* words - 1 */

    int32_t byte_tok[256]; /* bpe: token of each byte; spm: <0xNN>; -1 if none */
    /* bpe: bit b of bbar[a] set when no token's bytes have a, b side by side, so no merge ever
     * joins them: a word is merged in pieces cut there */
    bool bbar_on;
    uint64_t bbar[256][4];

    /* Special tokens matched in the text (control, user-defined, unknown), longest first. */
    uint32_t *spec;
    uint32_t n_spec, n_user; /* n_user: how many of them are user-defined */
    uint32_t spec_start[257]; /* spec is grouped by first byte: [spec_start[c], spec_start[c+1]) */

    int32_t bos, eos, unk, pad;
    bool add_bos, add_eos, ignore_merges;
    uint8_t space_prefix; /* SentencePiece kinds: TOK_PREFIX_* */
    bool key_text; /* the token hash is keyed by stored text (else by decoded bytes) */
    bool spm_split; /* SentencePiece: no token has U+2581 right after another character */
    /* with spm_split: bit b of spm_bar[a] set when no token's text has the ASCII characters a, b
     * next to each other, so no merge ever joins them: words are merged in pieces split there */
    uint64_t spm_bar[128][2];
    /* with spm_split: bit (a | b << 8) set when the word scan must look at b after a: a, b ASCII
     * with their spm_bar bit, or b = 0xE2 (a U+2581 mark may start there); one lookup a byte */
    uint64_t spm_stop[1024];
    /* SentencePiece: every character of every token is a token, so a merge joins two tokens
     * and the merge table (mslot) holds every (a, b) whose concatenation is a token */
    bool spm_pairs;
    /* with spm_pairs: the token of each ASCII character and of U+2581 ([128]; DEAD: none), and
     * the merge of each pair of them, [a * TOK_NCHR + b] = rank << 32 | result (UINT64_MAX:
     * none): the first round of a word's merges without the hash tables */
    uint32_t chr_tok[129];
    uint64_t *pairc;
    /* ids < 0xFFFF, SentencePiece with spm_pairs or byte-level BPE with whole: the token of each
     * code point U+0080..U+FFFF (two- and three-byte UTF-8) that is one (byte-level BPE: and
     * whose own merges give it), cp_tok[cp_blk[cp >> 7] * 128 + (cp & 127)] (0xFFFF: none;
     * blocks of 128 code points, block 0 for those with none): a word's characters, a piece of
     * one character, without the token hash. NULL: none. */
    uint16_t *cp_blk; /* 512 */
    uint16_t *cp_tok;
    uint32_t n_cp_blk;
};
#define TOK_NCHR 129

/* --- what a loader gathers ------------------------------------------------------------------ */
typedef struct tok_build {
    const ingot_allocator *alloc;
    tok_kind kind;
    tok_pre pre;
    const char *pre_name;
    uint32_t n;            /* tokens */
    uint8_t *blob;         /* token texts, concatenated (owned, grown) */
    size_t blob_len, blob_cap;
    uint32_t *off, *len;   /* per token (owned) */
    float *score;          /* per token (owned) */
    uint8_t *type;         /* per token (owned) */
    bool *have;            /* per token: set (json vocab maps may leave holes) */
    /* merges: pairs of (offset,len) into mblob */
    uint8_t *mblob;
    size_t mblob_len, mblob_cap;
    uint32_t *moff;        /* 4 per merge: left off, left len, right off, right len */
    uint32_t n_merges, merges_cap;
    int64_t bos, eos, unk, pad; /* -1 none */
    int add_bos, add_eos;       /* -1: the kind's default */
    bool ignore_merges;
    int space_prefix;  /* -1: the kind's default (TOK_PREFIX_EACH for SentencePiece kinds) */
    bool default_bos;  /* bpe: add BOS unless the file says (llama.cpp: Llama 3 names) */
    bool dup_is_error; /* two tokens with one text: DUPLICATE (else the later id wins) */
    const char *where;          /* name of the source for errors ("tokenizer.json") */
} tok_build;

/* tok_build.c */
ingot_status ingot__tok_build_init(tok_build *b, const ingot_allocator *a, uint32_t n,
                                   ingot_error *err);
void ingot__tok_build_free(tok_build *b);
/* Sets token i's text (copied). DUPLICATE if i already set. */
ingot_status ingot__tok_build_set(tok_build *b, uint32_t i, const void *s, size_t n,
                                  ingot_error *err);
/* Appends a merge of the two texts (copied). */
ingot_status ingot__tok_build_merge(tok_build *b, const void *l, size_t ln, const void *r,
                                    size_t rn, ingot_error *err);
/* Id of the token whose text is s[0..n) (linear: for a few lookups), or -1. */
int64_t ingot__tok_build_lookup(const tok_build *b, const uint8_t *s, size_t n);
/* Loader state on the heap (the allocator of the options). */
void *ingot__tok_scratch_alloc(const ingot_allocator *a, size_t n);
void ingot__tok_scratch_free(const ingot_allocator *a, void *p, size_t n);
/* Builds the tokenizer; frees nothing of b (the caller frees it). */
ingot_status ingot__tok_finish(tok_build *b, ingot_tokenizer **out, ingot_error *err);
/* Looks up a pre-tokenizer name (tokenizer.ggml.pre); false if unknown. */
bool ingot__tok_pre_from_name(const char *s, size_t n, tok_pre *pre, const char **name);

/* loaders */
ingot_status ingot__tok_load_gguf(const ingot_file *f, const ingot_allocator *a,
                                  ingot_tokenizer **out, ingot_error *err);
/* config: tokenizer_config.json bytes or NULL. */
ingot_status ingot__tok_load_hf_json(const uint8_t *buf, size_t n, const uint8_t *config,
                                     size_t config_n, const ingot_allocator *a,
                                     ingot_tokenizer **out, ingot_error *err);
ingot_status ingot__tok_load_llama2c(const uint8_t *buf, size_t n, const ingot_allocator *a,
                                     ingot_tokenizer **out, ingot_error *err);
/* encoder.json / vocab.json + vocab.bpe / merges.txt; config as above. */
ingot_status ingot__tok_load_gpt2_files(const uint8_t *vocab, size_t vn, const uint8_t *merges,
                                        size_t mn, const uint8_t *config, size_t config_n,
                                        const ingot_allocator *a, ingot_tokenizer **out,
                                        ingot_error *err);

/* Trailing zero bits of v != 0. */
#if defined(__GNUC__) || defined(__clang__)
#define TOK_CTZ64(v) __builtin_ctzll(v)
#else
static inline int TOK_CTZ64(uint64_t v)
{
    int k = 0;
    while (!(v & 1)) v >>= 1, k++;
    return k;
}
#endif

/* The n < 8 (or 8) bytes at s as a little-endian word, zero-padded; over: 8 bytes at s may be
 * read (one load instead of a byte loop). */
static inline uint64_t ingot__tok_tail(const uint8_t *s, size_t n, bool over)
{
    uint64_t v = 0;
    if (n == 0) return 0;
    if (n >= 8) {
        ING_MEMCPY(&v, s, 8);
        return v;
    }
    if (over) return ing_ld64(s) & (~0ull >> (64 - 8 * n)); /* little-endian, as the loop */
    for (size_t k = 0; k < n; k++) v |= (uint64_t)s[k] << (8 * k);
    return v;
}

/* The hash of token bytes; over: 8 bytes may be read at s + (n & ~7) (see ingot__tok_tail). */
static inline uint64_t ingot__tok_hash_x(const uint8_t *s, size_t n, bool over)
{
    uint64_t h = 0x243F6A8885A308D3ull ^ (n * 0x9E3779B97F4A7C15ull);
    while (n >= 8) {
        uint64_t v;
        ING_MEMCPY(&v, s, 8);
        h = (h ^ v) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    h = (h ^ ingot__tok_tail(s, n, over)) * 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 29;
    h *= 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 32);
}

/* a[0..n) == b[0..n): eight bytes a step for the short strings tokens and words are */
static inline bool ingot__tok_eq(const uint8_t *a, const uint8_t *b, size_t n)
{
    while (n >= 8) {
        uint64_t x, y;
        ING_MEMCPY(&x, a, 8);
        ING_MEMCPY(&y, b, 8);
        if (x != y) return false;
        a += 8, b += 8, n -= 8;
    }
    while (n--)
        if (*a++ != *b++) return false;
    return true;
}

/* tok_build.c: lookups */
uint64_t ingot__tok_hash(const uint8_t *s, size_t n);
/* Id of the token whose decoded bytes are s[0..n), or -1. */
int32_t ingot__tok_find(const ingot_tokenizer *t, const uint8_t *s, size_t n);
/* The same with h = ingot__tok_hash(s, n) already computed. */
int32_t ingot__tok_find_h(const ingot_tokenizer *t, const uint8_t *s, size_t n, uint64_t h);
/* The same, also reporting the token's `whole` flag from its slot (no second cache line). */
#define TOK_SLOT_WHOLE 0x8000u
int32_t ingot__tok_find_hw(const ingot_tokenizer *t, const uint8_t *s, size_t n, uint64_t h,
                           bool *whole);
/* The same with head = ingot__tok_tail(s, min(n, 8), ...) already computed. */
int32_t ingot__tok_find_x(const ingot_tokenizer *t, const uint8_t *s, size_t n, uint64_t h,
                          uint64_t head, bool *whole);
/* ingot__tok_find_x inlined, for the encoders' word lookups. */
static inline int32_t ingot__tok_find_xi(const ingot_tokenizer *t, const uint8_t *s, size_t n,
                                         uint64_t h, uint64_t head, bool *whole);
#define TOK_MKEY(l, r) (((uint64_t)(l) << 21) | (r)) /* 42 bits */
#define TOK_MENTRY_BITS 22

/* Slot hash of a merge key (TOK_MKEY): MurmurHash3's 64-bit finaliser. */
static inline uint64_t ingot__tok_pair_hash(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xFF51AFD7ED558CCDull;
    key ^= key >> 33;
    key *= 0xC4CEB9FE1A85EC53ull;
    return key ^ (key >> 33);
}

/* The filter's bits for a key of slot hash h (bits 32..63 of h: the slot takes the low ones). */
static inline uint64_t ingot__tok_mf_bits(uint64_t h)
{
    return (1ull << ((h >> 32) & 63)) | (1ull << ((h >> 38) & 63));
}
#define TOK_MF_WORD(h, mask) (((h) >> 44) & (mask))

/* tok_build.c: whether bytes 24.. of token id's key are s[24..n) (n > 24, its length). */
bool ingot__tok_key_text(const ingot_tokenizer *t, uint32_t id, const uint8_t *s, size_t n);

/* Bytes c..c+7 of s[0..n) (c >= 8, c < n) as a little-endian word, zero-padded past n: short
 * of 8, from the key's last 8 bytes shifted down (no read outside the key). */
static inline uint64_t ingot__tok_chunk(const uint8_t *s, size_t n, size_t c)
{
    if (n - c >= 8) return ing_ld64(s + c);
    return ing_ld64(s + n - 8) >> (64 - 8 * (n - c));
}

/* Whether bytes 8.. of the key s[0..n) (n > 8, the slot's length) are the slot's: two words in
 * the slot, the token's stored text past 24 bytes. */
static inline bool ingot__tok_key_rest(const ingot_tokenizer *t, const struct tok_map_slot *sl,
                                       const uint8_t *s, size_t n)
{
    if (sl->rest[0] != ingot__tok_chunk(s, n, 8)) return false;
    if (n <= 16) return true;
    if (sl->rest[1] != ingot__tok_chunk(s, n, 16)) return false;
    return n <= 24 || ingot__tok_key_text(t, sl->id, s, n);
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
static inline int32_t ingot__tok_find_xi(const ingot_tokenizer *t, const uint8_t *s, size_t n,
                                         uint64_t h, uint64_t head, bool *whole)
{
    if (n > TOK_MAX_TOKEN_BYTES) return -1;
    if (t->tfilt) {
        uint64_t m = ingot__tok_mf_bits(h);
        if ((t->tfilt[TOK_MF_WORD(h, t->tf_mask)] & m) != m) return -1;
    }
    uint16_t tag = (uint16_t)(h >> 48);
    for (uint64_t i = h & t->map_mask;; i = (i + 1) & t->map_mask) {
        const struct tok_map_slot *sl = &t->map[i];
        if (sl->id == UINT32_MAX) return -1;
        if (sl->tag == tag && (sl->len & ~TOK_SLOT_WHOLE) == n && sl->head == head &&
            (n <= 8 || ingot__tok_key_rest(t, sl, s, n))) {
            *whole = (sl->len & TOK_SLOT_WHOLE) != 0;
            return (int32_t)sl->id;
        }
    }
}

#if defined(__GNUC__) || defined(__clang__)
#define TOK_PREFETCH(p) __builtin_prefetch(p)
#else
#define TOK_PREFETCH(p) ((void)(p))
#endif

/* Merge of (l, r): true with rank and result. Inlined even where the compiler would not (the
 * hottest lookup). The slot's line is asked for before the filter answers: most pairs a word's
 * merges look up that pass the filter have a merge, and both loads then wait together. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
static inline bool ingot__tok_merge(const ingot_tokenizer *t, uint32_t l, uint32_t r,
                                    uint32_t *rank, uint32_t *res)
{
    if (!t->m_mask) return false;
    if (t->m8) {
        uint64_t key = (uint64_t)l << 16 | r, h = ingot__tok_pair_hash(key);
        TOK_PREFETCH(&t->mslot8[h & t->m_mask]);
        if (t->mfilt) {
            uint64_t m = ingot__tok_mf_bits(h);
            if ((t->mfilt[TOK_MF_WORD(h, t->mf_mask)] & m) != m) return false;
        }
        for (uint64_t i = h & t->m_mask;; i = (i + 1) & t->m_mask) {
            uint64_t v = t->mslot8[i];
            if (v >> 32 == key) {
                *rank = (uint32_t)(v >> 16) & 0xFFFF;
                *res = (uint32_t)v & 0xFFFF;
                return true;
            }
            if (v == UINT64_MAX) return false;
        }
    }
    uint64_t key = TOK_MKEY(l, r), h = ingot__tok_pair_hash(key);
    TOK_PREFETCH(&t->mslot[h & t->m_mask]);
    if (t->mfilt) {
        uint64_t m = ingot__tok_mf_bits(h);
        if ((t->mfilt[TOK_MF_WORD(h, t->mf_mask)] & m) != m) return false;
    }
    for (uint64_t i = h & t->m_mask;; i = (i + 1) & t->m_mask) {
        const struct tok_mslot *sl = &t->mslot[i];
        if (sl->key >> TOK_MENTRY_BITS == key) {
            *rank = (uint32_t)(sl->key & ((1u << TOK_MENTRY_BITS) - 1));
            *res = sl->res;
            return true;
        }
        if (sl->key == UINT64_MAX) return false;
    }
}

/* Code point classes (bits of ingot__tok_uclass; gen_unicode.py's BITS). */
#define TOK_U_L 1    /* \p{L} */
#define TOK_U_N 2    /* \p{N} */
#define TOK_U_P 4    /* \p{P} */
#define TOK_U_S 8    /* \p{S} */
#define TOK_U_M 16   /* \p{M} */
#define TOK_U_WS 32  /* White_Space (regex \s) */
#define TOK_U_LU 64  /* \p{Lu} */
#define TOK_U_LL 128 /* \p{Ll} */

/* tok_encode.c: whether merging the byte tokens of s[0..n) gives exactly token id (byte-level
 * BPE; n <= TOK_MAX_TOKEN_BYTES, work of n * TOK_BPE_WORK_PER_BYTE bytes, aligned to 8). */
#define TOK_BPE_WORK_PER_BYTE 44
bool ingot__tok_bpe_gives(const ingot_tokenizer *t, const uint8_t *s, size_t n, int32_t id,
                          void *work);

/* The same for SentencePiece (work of (n + 1) * TOK_SPM_WORK_PER_BYTE bytes). */
#define TOK_SPM_WORK_PER_BYTE 80
bool ingot__tok_spm_gives(const ingot_tokenizer *t, const uint8_t *s, size_t n, int32_t id,
                          void *work);

/* tok_unicode.c: the class bits of code point cp (TOK_U_*), and a lenient UTF-8 decoder: the
 * length of the sequence at s[0..n) (1 for an invalid byte, whose cp is then UINT32_MAX). */
uint8_t ingot__tok_uclass(uint32_t cp);
size_t ingot__tok_utf8(const uint8_t *s, size_t n, uint32_t *cp);

/* tok_pretok.c: calls emit(ctx, off, len) for each pre-token of s[0..n) in order; stops at the
 * first non-OK status emit returns and returns it. */
typedef ingot_status (*tok_emit_fn)(void *ctx, size_t off, size_t len);
ingot_status ingot__tok_pretokenize(tok_pre pre, const uint8_t *s, size_t n, tok_emit_fn emit,
                                    void *ctx);

/* The tokenizer's own word caches (tok_encode.c), made by the public open functions once a
 * loader has built t (none for "bpe-fallback" or when opts ask for none), released by close. */
ingot_status ingot__tok_wc_attach(ingot_tokenizer *t, const ingot_tokenizer_opts *o,
                                  ingot_error *err);
void ingot__tok_wc_detach(ingot_tokenizer *t);

#endif
