/*
 * tok_encode.c - encoding and decoding: special tokens split out of the text first, then per
 * fragment byte-level BPE (pre-tokenizer, then merges by rank per pre-token), SentencePiece
 * (U+2581 escaping, bigram merges by score, byte fallback) or BPE with byte fallback (the same
 * escaping, merges by rank over characters). Work memory comes from the caller's scratch; the
 * merge state is a symbol list and a binary heap as in llama.cpp's llama-vocab.cpp. Decoding and
 * the streaming decoder write into caller buffers only. A word cache (ingot_tokenizer_cache, kept
 * across calls: the caller's, or one of the tokenizer's own that a plain encode borrows) is
 * looked up before a word's lookups and merges.
 */
#include <stdatomic.h>

#include "alloc.h"
#include "error.h"
#include "tok_internal.h"

#define DEAD UINT32_MAX

/* Counters for bench_tokenizer in a build with -DINGOT_TOK_STATS (a diagnostic build only: the
 * counters are global and not thread-safe); nothing in a normal build. */
#ifdef INGOT_TOK_STATS
enum {
    ST_WORDS, ST_BYTE1, ST_CACHE, ST_WHOLE, ST_SHORT, ST_HEAP, ST_HEAPB, ST_MERGE, ST_MLOOK,
    ST_FIND, ST_SCAN
};
unsigned long long ingot__tok_stats[16];
const char *const ingot__tok_stat_names[16] = {
    "words", "1-byte", "cache", "whole", "short", "heap", "heap-bytes", "merges", "m-lookups",
    "finds", "scan-steps"};
#define STAT(i, v) (ingot__tok_stats[i] += (v))
#else
#define STAT(i, v) ((void)0)
#endif

/* ---- output ------------------------------------------------------------------------------ */
typedef struct out_ids {
    int32_t *ids;
    size_t cap, n;
} out_ids;

static inline void put(out_ids *o, int32_t id)
{
    if (o->n < o->cap) o->ids[o->n] = id;
    o->n++;
}

/* ---- scratch ----------------------------------------------------------------------------- */
/* A word's result within one encode call: 32 bits of its hash, where it is (an offset from the
 * call's cache base), where its ids went. 16 bytes, so the cache of a 4 KB text is 16 KB:
 * words over 255 bytes or 255 ids are not cached. n 0: an empty entry. */
typedef struct wcache {
    uint32_t h, woff, ooff;
    uint8_t n, on;
    uint16_t gen; /* the fragment it belongs to (SentencePiece) */
} wcache;

typedef struct work {
    uint8_t *base;
    size_t size;
    wcache *cache; /* NULL or cmask + 1 entries */
    size_t cmask;
    uint32_t gen;  /* SentencePiece: fragment number (the escaped text is rewritten each time) */
    const uint8_t *cbase; /* words are cached as offsets from here (the text, or the scratch) */
    ingot_tokenizer_cache *pc; /* NULL, or the caller's word cache */
} work;

/* ---- the caller's word cache (ingot_tokenizer_cache) -------------------------------------
 * Direct-mapped, one 64-byte entry a slot: the word's whole bytes (up to WC_KEY) and its ids
 * (up to WC_IDS), compared in full on a hit; a new word replaces the slot's. It memoizes the
 * pure function word bytes -> ids, filled only from results the encoder computed. */
#define WC_KEY 32
#define WC_IDS 6
typedef struct wc_entry {
    uint32_t tag; /* bits 32..63 of the word's hash */
    uint8_t n, on; /* key bytes (0: empty), ids */
    uint16_t pad;
    uint8_t key[WC_KEY];
    int32_t ids[WC_IDS];
} wc_entry;
_Static_assert(sizeof(wc_entry) == 64, "one cache line an entry");

struct ingot_tokenizer_cache {
    const ingot_tokenizer *t;
    wc_entry *e; /* mask + 1 entries, aligned to 64 */
    size_t mask;
    size_t alloc_n; /* bytes of this allocation (the struct, then the table) */
    uint64_t words, bytes, hits, hit_bytes;
};

/* The cached ids of word w[0..n) (hash h) put to o: true on a hit. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
static inline bool wc_get(ingot_tokenizer_cache *c, uint64_t h, const uint8_t *w, size_t n,
                          out_ids *o)
{
    const wc_entry *e = &c->e[h & c->mask];
    c->words++;
    c->bytes += n;
    if (e->tag != (uint32_t)(h >> 32) || e->n != n || !ingot__tok_eq(e->key, w, n)) return false;
    c->hits++;
    c->hit_bytes += n;
    for (uint32_t k = 0; k < e->on; k++) put(o, e->ids[k]);
    return true;
}

/* Records word w[0..n) -> the ids o holds from start on, when they were all written and fit. */
static inline void wc_put(ingot_tokenizer_cache *c, uint64_t h, const uint8_t *w, size_t n,
                          const out_ids *o, size_t start)
{
    size_t on = o->n - start;
    if (n > WC_KEY || on > WC_IDS || !o->ids || o->n > o->cap) return;
    wc_entry *e = &c->e[h & c->mask];
    e->tag = (uint32_t)(h >> 32);
    e->n = (uint8_t)n;
    e->on = (uint8_t)on;
    ING_MEMCPY(e->key, w, n);
    ING_MEMCPY(e->ids, o->ids + start, on * sizeof(int32_t));
}

/* The cached result of word w[0..n) with hash h, copied to o: true on a hit. */
static bool cache_get(const wcache *e, const uint8_t *cbase, uint64_t h, const uint8_t *w,
                      size_t n, uint32_t gen, out_ids *o);

/* Cache entries for a text of len bytes: about one per 8 bytes, 64 .. 16384. */
static size_t cache_entries(size_t len)
{
    size_t e = 64;
    while (e < 16384 && e * 8 < len) e *= 2;
    return e;
}

/* Per unit of input (a byte of a fragment): what each encoder keeps. */
#define BPE_PER_SYM TOK_BPE_WORK_PER_BYTE /* id, prev, next, prank, pres (4 each); 3 heap x 8 */
#define SPM_PER_SYM TOK_SPM_WORK_PER_BYTE /* start, len, prev, next, id (4 each); 3 heap x 20 */

size_t ingot_tokenizer_max_tokens(size_t len)
{
    /* per input byte at most: 3 byte tokens for a space escaped to U+2581 with no token, and
     * after a one-byte special token, that token and a 3-byte space prefix: under 4 in all;
     * plus BOS, EOS and the first fragment's prefix */
    if (len > (SIZE_MAX - 8) / 4) return SIZE_MAX;
    return 4 * len + 8;
}

size_t ingot_tokenizer_scratch_size(const ingot_tokenizer *t, size_t len)
{
    /* escaped text: 3 bytes per byte plus a prefix; symbols: one per escaped byte at most */
    if (!t || len > (SIZE_MAX / 4 - 64) / 3 / (SPM_PER_SYM + 1)) return 0;
    size_t units = 3 * len + 4;
    if (t->kind == TOK_BPE) return cache_entries(len) * sizeof(wcache) + len * BPE_PER_SYM + 64;
    /* SentencePiece: one symbol per character (at most len + 1 with the prefix); BPE with byte
     * fallback: one per byte of the escaped text */
    if (t->kind == TOK_SPM)
        return cache_entries(len) * sizeof(wcache) + units + 8 + (len + 1) * SPM_PER_SYM + 64;
    return units + 8 + units * BPE_PER_SYM + 64;
}

/* ---- BPE merges over an id list (byte-level words and byte-fallback fragments) ------------ */
typedef struct bpe_state {
    uint32_t *id, *prev, *next;
    uint32_t *prank, *pres; /* the merge of the pair at each symbol (rank UINT32_MAX: none) */
    uint64_t *heap; /* rank << 32 | left position: the smallest is the next merge */
    size_t nheap, heap_cap;
} bpe_state;

static void heap_push(bpe_state *b, uint64_t v)
{
    size_t i = b->nheap++;
    while (i) {
        size_t p = (i - 1) / 2;
        if (b->heap[p] <= v) break;
        b->heap[i] = b->heap[p];
        i = p;
    }
    b->heap[i] = v;
}

static uint64_t heap_pop(bpe_state *b)
{
    uint64_t top = b->heap[0], v = b->heap[--b->nheap];
    size_t i = 0, n = b->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && b->heap[c + 1] < b->heap[c]) c++;
        if (b->heap[c] >= v) break;
        b->heap[i] = b->heap[c];
        i = c;
    }
    if (n) b->heap[i] = v;
    return top;
}

/* Rank and result of merging symbols l and r (rank UINT32_MAX: none; DEAD is no token). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
static inline void pair_at(const ingot_tokenizer *t, uint32_t l, uint32_t r, uint32_t *rank,
                           uint32_t *res)
{
    STAT(ST_MLOOK, 1);
    if (l == DEAD || r == DEAD || !ingot__tok_merge(t, l, r, rank, res)) {
        *rank = UINT32_MAX;
        *res = DEAD;
    }
}

/* Sets the merge of the pair at l (prank, pres) and queues it; a pair whose prank no longer
 * equals its queued rank is stale when it comes out. */
static void bpe_set(bpe_state *b, uint32_t l, uint32_t rank, uint32_t res)
{
    b->prank[l] = rank;
    b->pres[l] = res;
    if (rank != UINT32_MAX && b->nheap < b->heap_cap) heap_push(b, ((uint64_t)rank << 32) | l);
}

static void bpe_try(const ingot_tokenizer *t, bpe_state *b, uint32_t l)
{
    uint32_t r = b->next[l], rank = UINT32_MAX, res = DEAD;
    if (r != DEAD) pair_at(t, b->id[l], b->id[r], &rank, &res);
    bpe_set(b, l, rank, res);
}

/* Short words: the same merge order (lowest rank, then leftmost) by a linear scan, without the
 * heap. id: the n <= SCAN_MAX symbols (DEAD: no token, never merged); len: NULL or their byte
 * lengths, kept up to date; rank, res: the merge of each pair (i, i + 1) as the caller found it
 * (rank UINT32_MAX: none). The symbols stay where they are, linked (nx, pv), and each pair's
 * rank and left position are one key (rank << 6 | position, UINT32_MAX: none), so the next
 * merge is the smallest key: a branch-free minimum over a small array, no shifting. Returns the
 * count left, id and len compacted. */
#define SHORT_WORD 32 /* byte-level BPE: bytes */
#define SPM_SHORT 64  /* SentencePiece: characters */
#define SCAN_MAX 64   /* the most merge_short takes */
#define KEY_POS 6     /* bits of the position in a key: SCAN_MAX <= 64 */
static inline uint32_t pair_key(uint32_t rank, size_t pos)
{
    return rank == UINT32_MAX ? UINT32_MAX : rank << KEY_POS | (uint32_t)pos;
}

static size_t merge_short(const ingot_tokenizer *t, uint32_t *id, uint32_t *len, size_t n,
                          const uint32_t *rank, uint32_t *res)
{
    if (n < 2) return n;
    uint32_t key[SCAN_MAX];
    uint8_t nx[SCAN_MAX], pv[SCAN_MAX];
    for (size_t i = 0; i < n; i++) {
        key[i] = i + 1 < n ? pair_key(rank[i], i) : UINT32_MAX;
        nx[i] = (uint8_t)(i + 1);
        pv[i] = (uint8_t)(i - 1); /* 255 for the first */
    }
    for (size_t live = n; live > 1; live--) {
        uint32_t m = key[0];
        for (size_t i = 1; i < n; i++) m = key[i] < m ? key[i] : m;
        STAT(ST_SCAN, n);
        if (m == UINT32_MAX) break;
        STAT(ST_MERGE, 1);
        size_t p = m & ((1u << KEY_POS) - 1), q = nx[p];
        id[p] = res[p];
        if (len) len[p] += len[q];
        key[q] = UINT32_MAX;
        nx[p] = nx[q];
        uint32_t r;
        if (nx[p] < n) {
            pv[nx[p]] = (uint8_t)p;
            pair_at(t, id[p], id[nx[p]], &r, &res[p]);
            key[p] = pair_key(r, p);
        } else {
            key[p] = UINT32_MAX;
        }
        if (pv[p] != 255) {
            size_t l = pv[p];
            pair_at(t, id[l], id[p], &r, &res[l]);
            key[l] = pair_key(r, l);
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i = nx[i], k++) {
        id[k] = id[i];
        if (len) len[k] = len[i];
    }
    return k;
}

/* Merges the n symbols in b->id (linked in order) and appends the result. bytes: NULL, or the
 * n bytes whose byte tokens the symbols are. */
static void bpe_run(const ingot_tokenizer *t, bpe_state *b, size_t n, const uint8_t *bytes,
                    out_ids *o)
{
    if (n <= SHORT_WORD) {
        STAT(ST_SHORT, 1);
        uint32_t rank[SHORT_WORD], res[SHORT_WORD];
        if (bytes && t->pair0) { /* the first round from the byte pair table */
            for (size_t i = 0; i + 1 < n; i++) {
                uint64_t p = t->pair0[(uint32_t)bytes[i] << 8 | bytes[i + 1]];
                rank[i] = (uint32_t)(p >> 32);
                res[i] = (uint32_t)p;
            }
        } else {
            for (size_t i = 0; i + 1 < n; i++)
                pair_at(t, b->id[i], b->id[i + 1], &rank[i], &res[i]);
        }
        n = merge_short(t, b->id, NULL, n, rank, res);
        for (size_t i = 0; i < n; i++) put(o, (int32_t)b->id[i]);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        b->prev[i] = i ? (uint32_t)(i - 1) : DEAD;
        b->next[i] = i + 1 < n ? (uint32_t)(i + 1) : DEAD;
    }
    STAT(ST_HEAP, 1);
    STAT(ST_HEAPB, n);
    b->nheap = 0;
    b->heap_cap = 3 * n;
    for (size_t i = 0; i + 1 < n; i++) {
        if (bytes && t->pair0) {
            uint64_t p = t->pair0[(uint32_t)bytes[i] << 8 | bytes[i + 1]];
            bpe_set(b, (uint32_t)i, (uint32_t)(p >> 32), (uint32_t)p);
        } else {
            bpe_try(t, b, (uint32_t)i);
        }
    }
    b->prank[n - 1] = UINT32_MAX;
    while (b->nheap) {
        uint64_t top = heap_pop(b);
        uint32_t l = (uint32_t)top, want = (uint32_t)(top >> 32);
        uint32_t r = b->next[l];
        if (b->id[l] == DEAD || r == DEAD || b->prank[l] != want) continue; /* stale */
        STAT(ST_MERGE, 1);
        b->id[l] = b->pres[l];
        b->id[r] = DEAD;
        b->next[l] = b->next[r];
        if (b->next[r] != DEAD) b->prev[b->next[r]] = l;
        if (b->prev[l] != DEAD) bpe_try(t, b, b->prev[l]);
        bpe_try(t, b, l);
    }
    for (uint32_t i = 0; i != DEAD; i = b->next[i]) put(o, (int32_t)b->id[i]);
}

static void bpe_carve(bpe_state *b, work *w, size_t nsym)
{
    uint8_t *p = w->base;
    b->heap = (uint64_t *)(void *)p;
    p += nsym * 3 * 8;
    b->id = (uint32_t *)(void *)p;
    p += nsym * 4;
    b->prev = (uint32_t *)(void *)p;
    p += nsym * 4;
    b->next = (uint32_t *)(void *)p;
    p += nsym * 4;
    b->prank = (uint32_t *)(void *)p;
    p += nsym * 4;
    b->pres = (uint32_t *)(void *)p;
}

bool ingot__tok_bpe_gives(const ingot_tokenizer *t, const uint8_t *s, size_t n, int32_t id,
                          void *mem)
{
    bpe_state b;
    work w = {mem, n * BPE_PER_SYM, NULL, 0, 0, NULL, NULL};
    bpe_carve(&b, &w, n);
    for (size_t i = 0; i < n; i++) b.id[i] = (uint32_t)t->byte_tok[s[i]];
    int32_t got = -1;
    out_ids o = {&got, 1, 0};
    bpe_run(t, &b, n, s, &o);
    return o.n == 1 && got == id;
}

static bool cache_get(const wcache *e, const uint8_t *cbase, uint64_t h, const uint8_t *w,
                      size_t n, uint32_t gen, out_ids *o)
{
    if (e->h != (uint32_t)h || e->n != n || e->gen != (uint16_t)gen ||
        !ingot__tok_eq(cbase + e->woff, w, n))
        return false;
    if (o->ids && (size_t)e->ooff + e->on <= o->cap) /* its ids were written: copy them */
        for (uint32_t k = 0; k < e->on; k++) put(o, o->ids[e->ooff + k]);
    else /* past cap (or a size query): only the count matters */
        o->n += e->on;
    return true;
}

static void cache_put(wcache *e, const uint8_t *cbase, uint64_t h, const uint8_t *w, size_t n,
                      uint32_t gen, size_t start, size_t end)
{
    size_t woff = (size_t)(w - cbase);
    if (n > 255 || end - start > 255 || woff > UINT32_MAX || start > UINT32_MAX) return;
    e->h = (uint32_t)h;
    e->woff = (uint32_t)woff;
    e->n = (uint8_t)n;
    e->gen = (uint16_t)gen;
    e->ooff = (uint32_t)start;
    e->on = (uint8_t)(end - start);
}

/* The code point table's token (t->cp_tok) of the character of two or three bytes at s[0..avail)
 * (DEAD: none), its length in *len; *len 0 where s starts with no such character. */
static inline uint32_t cp_token(const ingot_tokenizer *t, const uint8_t *s, size_t avail,
                                size_t *len)
{
    *len = 0;
    if (avail < 2 || (s[1] & 0xC0) != 0x80) return DEAD;
    uint8_t c = s[0], c1 = s[1];
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
        cp = (uint32_t)(c & 0x1F) << 6 | (c1 & 0x3Fu);
        *len = 2;
    } else if (c >= 0xE0 && c <= 0xEF && avail > 2 && (s[2] & 0xC0) == 0x80 &&
               (c != 0xE0 || c1 >= 0xA0) && (c != 0xED || c1 <= 0x9F)) {
        cp = (uint32_t)(c & 0x0F) << 12 | (uint32_t)(c1 & 0x3F) << 6 | (s[2] & 0x3Fu);
        *len = 3;
    } else {
        return DEAD;
    }
    uint16_t v = t->cp_tok[(size_t)t->cp_blk[cp >> 7] * 128 + (cp & 127)];
    return v == 0xFFFF ? DEAD : v;
}

typedef struct bpe_word_ctx {
    const ingot_tokenizer *t;
    const uint8_t *s;
    size_t n; /* bytes at s */
    bpe_state *b;
    out_ids *o;
    wcache *cache;
    size_t cmask;
    const uint8_t *cbase;
    ingot_tokenizer_cache *pc;
} bpe_word_ctx;

/* BPE of the bytes s[off..off+n): by the byte tokens' merges. */
static void bpe_bytes(bpe_word_ctx *c, size_t off, size_t n, out_ids *o)
{
    const ingot_tokenizer *t = c->t;
    const uint8_t *w = c->s + off;
    for (size_t i = 0; i < n; i++) c->b->id[i] = (uint32_t)t->byte_tok[w[i]];
    bpe_run(t, c->b, n, w, o);
}

/* A piece of a word (bpe_pieces): one byte is its token, a token its own merges give is that
 * token, else the merges. */
static void bpe_piece(bpe_word_ctx *c, size_t off, size_t n, out_ids *o)
{
    const ingot_tokenizer *t = c->t;
    const uint8_t *w = c->s + off;
    if (n == 1) {
        put(o, t->byte_tok[w[0]]);
        return;
    }
    if (n <= 3 && t->cp_tok) { /* one character: the table says whether it is a whole token */
        size_t l;
        uint32_t id = cp_token(t, w, n, &l);
        if (l == n) {
            if (id != DEAD) put(o, (int32_t)id);
            else bpe_bytes(c, off, n, o);
            return;
        }
    }
    if (t->whole) {
        bool whole = false, over = off + n + 8 <= c->n;
        STAT(ST_FIND, 1);
        int32_t id = ingot__tok_find_xi(t, w, n, ingot__tok_hash_x(w, n, over),
                                       ingot__tok_tail(w, n < 8 ? n : 8, over), &whole);
        if (id >= 0 && whole) {
            put(o, id);
            return;
        }
    }
    bpe_bytes(c, off, n, o);
}

/* BPE of the word s[off..off+n) whose whole-token lookup failed: cut first between two bytes
 * that no token has side by side (t->bbar), since no merge can join them, then each piece on its
 * own. */
static void bpe_pieces(bpe_word_ctx *c, size_t off, size_t n, out_ids *o)
{
    const ingot_tokenizer *t = c->t;
    const uint8_t *w = c->s + off;
    size_t ps = 0;
    if (t->bbar_on)
        for (size_t i = 1; i < n; i++)
            if (t->bbar[w[i - 1]][w[i] >> 6] >> (w[i] & 63) & 1) {
                bpe_piece(c, off + ps, i - ps, o);
                ps = i;
            }
    if (ps == 0) bpe_bytes(c, off, n, o); /* no cut: the word's own lookup was done */
    else bpe_piece(c, off + ps, n - ps, o);
}

static ingot_status bpe_word(void *ctx, size_t off, size_t n)
{
    bpe_word_ctx *c = ctx;
    const ingot_tokenizer *t = c->t;
    const uint8_t *w = c->s + off;
    STAT(ST_WORDS, 1);
    if (n == 1) {
        STAT(ST_BYTE1, 1);
        put(c->o, t->byte_tok[w[0]]);
        return INGOT_OK;
    }
    bool over = off + n + 8 <= c->n; /* 8-byte loads past the word stay in the text */
    uint64_t h = ingot__tok_hash_x(w, n, over);
    out_ids *o = c->o;
    if (c->pc && wc_get(c->pc, h, w, n, o)) return INGOT_OK; /* the caller's cache first */
    size_t start = o->n;
    /* the token filter's word and the token slot asked for before the word cache is read: on a
     * cache miss (six words in ten) their loads are under way while the miss is found out */
    if (t->tfilt) TOK_PREFETCH(&t->tfilt[TOK_MF_WORD(h, t->tf_mask)]);
    TOK_PREFETCH(&t->map[h & t->map_mask]);
    /* this call's earlier result for the same word (cheaper than the vocabulary's tables) */
    wcache *e = c->cache ? &c->cache[h & c->cmask] : NULL;
    if (e && cache_get(e, c->cbase, h, w, n, 0, o)) {
        STAT(ST_CACHE, 1);
        if (c->pc) wc_put(c->pc, h, w, n, o, start);
        return INGOT_OK;
    }
    bool whole = false;
    int32_t id = -1;
    if (t->ignore_merges || t->whole) {
        STAT(ST_FIND, 1);
        id = ingot__tok_find_xi(t, w, n, h, ingot__tok_tail(w, n < 8 ? n : 8, over), &whole);
    }
    if (id >= 0 && (t->ignore_merges || whole)) {
        STAT(ST_WHOLE, 1);
        put(o, id);
    } else {
        bpe_pieces(c, off, n, o);
    }
    if (e) cache_put(e, c->cbase, h, w, n, 0, start, o->n);
    if (c->pc) wc_put(c->pc, h, w, n, o, start);
    return INGOT_OK;
}

static ingot_status enc_bpe(const ingot_tokenizer *t, const uint8_t *s, size_t n, work *w,
                            out_ids *o)
{
    bpe_state b;
    bpe_carve(&b, w, n);
    bpe_word_ctx c = {t, s, n, &b, o, w->cache, w->cmask, w->cbase, w->pc};
    return ingot__tok_pretokenize(t->pre, s, n, bpe_word, &c);
}

/* ---- SentencePiece ----------------------------------------------------------------------- */
/* Escapes s[0..n) into e: an optional leading space, then every ' ' as U+2581. */
static size_t escape(const uint8_t *s, size_t n, bool prefix, uint8_t *e)
{
    size_t m = 0;
    if (prefix) {
        e[m++] = 0xE2;
        e[m++] = 0x96;
        e[m++] = 0x81;
    }
    size_t i = 0;
    /* eight bytes a step: copied as they are up to the first space (e has room: 3n + 11 bytes) */
    while (i + 8 <= n) {
        uint64_t v = ing_ld64(s + i), x = v ^ 0x2020202020202020ull;
        uint64_t z = (x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull; /* lowest: exact */
        ING_MEMCPY(e + m, s + i, 8);
        if (!z) {
            m += 8;
            i += 8;
            continue;
        }
        size_t k = (size_t)TOK_CTZ64(z) >> 3;
        m += k;
        e[m++] = 0xE2;
        e[m++] = 0x96;
        e[m++] = 0x81;
        i += k + 1;
    }
    for (; i < n; i++) {
        if (s[i] == ' ') {
            e[m++] = 0xE2;
            e[m++] = 0x96;
            e[m++] = 0x81;
        } else {
            e[m++] = s[i];
        }
    }
    return m;
}

typedef struct spm_big {
    float score;
    uint32_t left, right, size, res;
} spm_big;

typedef struct spm_state {
    const ingot_tokenizer *t;
    const uint8_t *e;
    uint32_t *start, *len, *prev, *next;
    uint32_t *id; /* with t->spm_pairs: each symbol's token (DEAD: not a token) */
    spm_big *heap;
    size_t nheap, heap_cap;
} spm_state;

/* a before b: higher score, then the leftmost */
static inline bool big_first(const spm_big *a, const spm_big *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void spm_push(spm_state *s, spm_big v)
{
    if (s->nheap >= s->heap_cap) return;
    size_t i = s->nheap++;
    while (i) {
        size_t p = (i - 1) / 2;
        if (!big_first(&v, &s->heap[p])) break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = v;
}

static spm_big spm_pop(spm_state *s)
{
    spm_big top = s->heap[0], v = s->heap[--s->nheap];
    size_t i = 0, n = s->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && big_first(&s->heap[c + 1], &s->heap[c])) c++;
        if (!big_first(&s->heap[c], &v)) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n) s->heap[i] = v;
    return top;
}

static void spm_try(spm_state *s, uint32_t l, uint32_t r)
{
    if (l == DEAD || r == DEAD) return;
    size_t size = (size_t)s->len[l] + s->len[r];
    uint32_t res;
    float score;
    if (s->t->spm_pairs) { /* the pair table: token ids, no text hashing */
        if (s->id[l] == DEAD || s->id[r] == DEAD) return;
        STAT(ST_MLOOK, 1);
        uint32_t rank;
        if (!ingot__tok_merge(s->t, s->id[l], s->id[r], &rank, &res)) return;
        score = s->t->score[res];
    } else {
        int32_t id = ingot__tok_find(s->t, s->e + s->start[l], size);
        if (id < 0) return;
        res = (uint32_t)id;
        score = s->t->score[res];
    }
    spm_big v = {score, l, r, (uint32_t)size, res};
    spm_push(s, v);
}

static ingot_status spm_bytes(const ingot_tokenizer *t, const uint8_t *p, size_t n, out_ids *o,
                              ingot_error *err)
{
    for (size_t k = 0; k < n; k++) {
        int32_t id = t->byte_tok[p[k]] >= 0 ? t->byte_tok[p[k]] : t->unk;
        if (id < 0)
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, "tokenizer", 9,
                              "byte 0x%02x has no token and the vocabulary no <unk>", p[k]);
        put(o, id);
    }
    return INGOT_OK;
}

static bool is_ws_mark(const uint8_t *e, size_t k, size_t m)
{
    return k + 2 < m && e[k] == 0xE2 && e[k + 1] == 0x96 && e[k + 2] == 0x81;
}

/* The token of the character at e[i] (>= 0x80, not a mark) of e[0..m) (DEAD: none) and its
 * length: two- and three-byte sequences from the code point table, the rest (and a vocabulary
 * without the table) from the token hash. */
static inline uint32_t spm_char(const ingot_tokenizer *t, const uint8_t *e, size_t i, size_t m,
                                size_t *len)
{
    if (t->cp_tok) {
        uint32_t id = cp_token(t, e + i, m - i, len);
        if (*len) return id;
    }
    uint32_t cp;
    *len = ingot__tok_utf8(e + i, m - i, &cp);
    STAT(ST_FIND, 1);
    int32_t x = ingot__tok_find(t, e + i, *len);
    return x >= 0 ? (uint32_t)x : DEAD;
}

static ingot_status enc_spm_word(const ingot_tokenizer *t, const uint8_t *e, size_t m, work *w,
                                 out_ids *o, ingot_error *err)
{
    if (!m) return INGOT_OK;
    spm_state s;
    uint32_t nsym = 0;
    if (t->spm_pairs && m <= 4 * SPM_SHORT) { /* short: the heap-free scan of BPE */
        STAT(ST_SHORT, 1);
        uint32_t id[4 * SPM_SHORT], len[4 * SPM_SHORT], rank[4 * SPM_SHORT];
        uint32_t res[4 * SPM_SHORT];
        uint8_t ci[4 * SPM_SHORT]; /* index in the pair table of ASCII and U+2581 (or 255) */
        for (size_t i = 0; i < m; nsym++) {
            size_t l = 1;
            uint8_t c = e[i];
            if (c < 0x80) {
                ci[nsym] = c;
                id[nsym] = t->chr_tok[c];
            } else if (c == 0xE2 && is_ws_mark(e, i, m)) {
                l = 3;
                ci[nsym] = 128;
                id[nsym] = t->chr_tok[128];
            } else {
                ci[nsym] = 255;
                id[nsym] = spm_char(t, e, i, m, &l);
            }
            len[nsym] = (uint32_t)l;
            i += l;
        }
        if (nsym <= SPM_SHORT) {
            for (uint32_t i = 0; i + 1 < nsym; i++) {
                if (ci[i] != 255 && ci[i + 1] != 255) {
                    uint64_t p = t->pairc[ci[i] * TOK_NCHR + ci[i + 1]];
                    rank[i] = (uint32_t)(p >> 32);
                    res[i] = (uint32_t)p;
                } else {
                    pair_at(t, id[i], id[i + 1], &rank[i], &res[i]);
                }
            }
            nsym = (uint32_t)merge_short(t, id, len, nsym, rank, res);
            size_t off = 0;
            for (uint32_t i = 0; i < nsym; off += len[i++]) {
                if (id[i] != DEAD) put(o, (int32_t)id[i]);
                else ING_TRY(spm_bytes(t, e + off, len[i], o, err));
            }
            return INGOT_OK;
        }
        nsym = 0;
    }
    for (size_t i = 0; i < m; nsym++) {
        uint32_t cp;
        i += ingot__tok_utf8(e + i, m - i, &cp);
    }
    STAT(ST_HEAP, 1);
    STAT(ST_HEAPB, m);
    uint8_t *p = w->base;
    s.heap = (spm_big *)(void *)p;
    p += (size_t)nsym * 3 * sizeof(spm_big);
    s.start = (uint32_t *)(void *)p;
    p += (size_t)nsym * 4;
    s.len = (uint32_t *)(void *)p;
    p += (size_t)nsym * 4;
    s.prev = (uint32_t *)(void *)p;
    p += (size_t)nsym * 4;
    s.next = (uint32_t *)(void *)p;
    p += (size_t)nsym * 4;
    s.id = (uint32_t *)(void *)p;
    s.t = t;
    s.e = e;
    s.nheap = 0;
    s.heap_cap = 3 * (size_t)nsym;
    nsym = 0;
    for (size_t i = 0; i < m;) {
        uint32_t cp;
        size_t l = ingot__tok_utf8(e + i, m - i, &cp);
        s.start[nsym] = (uint32_t)i;
        s.len[nsym] = (uint32_t)l;
        s.prev[nsym] = nsym ? nsym - 1 : DEAD;
        s.next[nsym] = nsym + 1;
        if (t->spm_pairs && e[i] < 0x80) { /* ASCII and U+2581 from the table (DEAD: none) */
            s.id[nsym] = t->chr_tok[e[i]];
        } else if (t->spm_pairs && is_ws_mark(e, i, m)) {
            s.id[nsym] = t->chr_tok[128];
        } else if (t->spm_pairs) {
            size_t cl;
            s.id[nsym] = spm_char(t, e, i, m, &cl); /* cl == l: the same decoding */
        }
        nsym++;
        i += l;
    }
    s.next[nsym - 1] = DEAD;
    for (uint32_t i = 0; i + 1 < nsym; i++) spm_try(&s, i, i + 1);
    while (s.nheap) {
        spm_big b = spm_pop(&s);
        if (s.len[b.left] == 0 || s.len[b.right] == 0 ||
            s.len[b.left] + s.len[b.right] != b.size)
            continue;
        STAT(ST_MERGE, 1);
        s.len[b.left] += s.len[b.right];
        s.len[b.right] = 0;
        if (t->spm_pairs) s.id[b.left] = b.res;
        s.next[b.left] = s.next[b.right];
        if (s.next[b.right] != DEAD) s.prev[s.next[b.right]] = b.left;
        spm_try(&s, s.prev[b.left], b.left);
        spm_try(&s, b.left, s.next[b.left]);
    }
    for (uint32_t i = 0; i != DEAD; i = s.next[i]) {
        int32_t id = !t->spm_pairs ? ingot__tok_find(t, e + s.start[i], s.len[i])
                   : s.id[i] == DEAD ? -1 : (int32_t)s.id[i];
        if (id >= 0) put(o, id);
        else ING_TRY(spm_bytes(t, e + s.start[i], s.len[i], o, err));
    }
    return INGOT_OK;
}

bool ingot__tok_spm_gives(const ingot_tokenizer *t, const uint8_t *s, size_t n, int32_t id,
                          void *mem)
{
    work w = {mem, (n + 1) * SPM_PER_SYM, NULL, 0, 0, NULL, NULL};
    int32_t got[2] = {-1, -1};
    out_ids o = {got, 2, 0};
    return enc_spm_word(t, s, n, &w, &o, NULL) == INGOT_OK && o.n == 1 && got[0] == id;
}

/* SentencePiece over the escaped fragment e[0..m). When no token has U+2581 right after another
 * character (t->spm_split), no merge can join the text before such a mark with the mark, so the
 * fragment is merged word by word (a word: marks, then everything up to the next mark that
 * follows a non-mark), with the same result and a cache of this fragment's words; a word is cut
 * further between two ASCII characters that no token has side by side. */
static ingot_status enc_spm(const ingot_tokenizer *t, const uint8_t *e, size_t m, work *w,
                            out_ids *o, ingot_error *err)
{
    if (!t->spm_split || !w->cache) return enc_spm_word(t, e, m, w, o, err);
    if ((uint16_t)++w->gen == 0) /* entries keep 16 bits of it: start over */
        ING_MEMSET(w->cache, 0, (w->cmask + 1) * sizeof *w->cache);
    size_t ws = 0, k = 0;
    while (ws < m) {
        k = ws;
        while (is_ws_mark(e, k, m)) k += 3;
        /* to the next mark, or to two ASCII characters no token joins (t->spm_bar): the pieces
         * either side of them are merged apart with the same result. The character at k stops
         * nothing (not a mark; after marks, or first in the word), so the look starts after it:
         * one lookup in t->spm_stop a byte, a mark checked only where an 0xE2 is */
        if (k < m)
            for (k++; k < m; k++) {
                uint32_t v = e[k - 1] | (uint32_t)e[k] << 8;
                if ((t->spm_stop[v >> 6] >> (v & 63) & 1) && (e[k] != 0xE2 || is_ws_mark(e, k, m)))
                    break;
            }
        size_t n = k - ws;
        if (n == 1 && e[ws] < 0x80 && t->spm_pairs && t->chr_tok[e[ws]] != DEAD) {
            put(o, (int32_t)t->chr_tok[e[ws]]); /* one ASCII character: its token */
            ws = k;
            continue;
        }
        uint64_t h = ingot__tok_hash_x(e + ws, n, true); /* e has 8 bytes of room (enc_fragment) */
        wcache *c = &w->cache[h & w->cmask];
        STAT(ST_WORDS, 1);
        if (w->pc && wc_get(w->pc, h, e + ws, n, o)) { /* the caller's cache first */
            ws = k;
            continue;
        }
        size_t start = o->n;
        if (!cache_get(c, w->cbase, h, e + ws, n, w->gen, o)) {
            bool whole = false;
            int32_t id = -1;
            if (t->whole) {
                STAT(ST_FIND, 1);
                id = ingot__tok_find_xi(t, e + ws, n, h, ingot__tok_tail(e + ws, n, true), &whole);
            }
            if (id >= 0 && whole) { /* its own merges give it whole */
                STAT(ST_WHOLE, 1);
                put(o, id);
            } else {
                ING_TRY(enc_spm_word(t, e + ws, n, w, o, err));
            }
            cache_put(c, w->cbase, h, e + ws, n, w->gen, start, o->n);
        } else {
            STAT(ST_CACHE, 1);
        }
        if (w->pc) wc_put(w->pc, h, e + ws, n, o, start);
        ws = k;
    }
    return INGOT_OK;
}

/* BPE with byte fallback (Hugging Face): characters of the escaped text are the symbols (bytes
 * of a character not in the vocabulary become <0xNN> symbols), then merges by rank. */
static ingot_status enc_bpe_fallback(const ingot_tokenizer *t, const uint8_t *e, size_t m,
                                     work *w, out_ids *o, ingot_error *err)
{
    if (!m) return INGOT_OK;
    bpe_state b;
    bpe_carve(&b, w, m);
    size_t n = 0;
    for (size_t i = 0; i < m;) {
        uint32_t cp;
        size_t l = ingot__tok_utf8(e + i, m - i, &cp);
        int32_t id = ingot__tok_find(t, e + i, l);
        if (id >= 0) {
            b.id[n++] = (uint32_t)id;
        } else {
            for (size_t k = 0; k < l; k++) {
                int32_t bt = t->byte_tok[e[i + k]] >= 0 ? t->byte_tok[e[i + k]] : t->unk;
                if (bt < 0)
                    return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, "tokenizer", 9,
                                      "byte 0x%02x has no token and the vocabulary no <unk>",
                                      e[i + k]);
                b.id[n++] = (uint32_t)bt;
            }
        }
        i += l;
    }
    bpe_run(t, &b, n, NULL, o);
    return INGOT_OK;
}

/* ---- fragments between special tokens ---------------------------------------------------- */
static ingot_status enc_fragment(const ingot_tokenizer *t, const uint8_t *s, size_t n,
                                 bool first, bool after_special, work *w, out_ids *o,
                                 ingot_error *err)
{
    if (t->kind == TOK_BPE) return enc_bpe(t, s, n, w, o);
    bool prefix = t->space_prefix == TOK_PREFIX_EACH ? (first || after_special)
                : t->space_prefix == TOK_PREFIX_FIRST ? first : false;
    /* the escaped text sits at the end of the scratch, the merge state before it */
    size_t m_max = 3 * n + 11; /* 8 bytes of room after the text for word-sized loads */
    uint8_t *e = w->base + w->size - m_max;
    size_t m = escape(s, n, prefix, e);
    ING_MEMSET(e + m, 0, 8);
    work inner = {w->base, w->size - m_max, w->cache, w->cmask, w->gen, w->cbase, w->pc};
    if (t->kind == TOK_SPM) {
        ingot_status st = enc_spm(t, e, m, &inner, o, err);
        w->gen = inner.gen;
        return st;
    }
    return enc_bpe_fallback(t, e, m, &inner, o, err);
}

/* Id of the longest eligible special token at s[0..n), or -1. */
static int32_t special_at(const ingot_tokenizer *t, const uint8_t *s, size_t n, bool parse)
{
    uint8_t c = s[0];
    for (uint32_t k = t->spec_start[c]; k < t->spec_start[c + 1]; k++) {
        uint32_t id = t->spec[k];
        if (!parse && t->type[id] != TOK_T_USER) continue;
        size_t l = t->text_len[id];
        if (l <= n && ING_MEMCMP(t->arena + t->text_off[id], s, l) == 0) return (int32_t)id;
    }
    return -1;
}

static ingot_status encode(const ingot_tokenizer *t, ingot_tokenizer_cache *pc,
                           const char *text, size_t len, uint32_t flags, int32_t *ids,
                           size_t cap, size_t *n_out, void *scratch, size_t scratch_size,
                           ingot_error *err)
{
    if (n_out) *n_out = 0;
    if (!t || !n_out || (!text && len) || (!ids && cap) || (flags & ~3u))
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "encode: NULL tokenizer, text, ids or n_out, or unknown flags");
    size_t need = ingot_tokenizer_scratch_size(t, len);
    if (!need)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, NULL, 0,
                          "encode: text of %zu bytes is too long", len);
    work w;
    bool owned = false;
    void *scratch_mem = NULL;
    if (scratch) {
        if (scratch_size < need || ((uintptr_t)scratch & 7))
            return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                              "encode: scratch of %zu bytes, %zu needed (aligned to 8)",
                              scratch_size, need);
        w.base = scratch;
        w.size = scratch_size;
    } else {
        w.base = scratch_mem = ingot__alloc(&t->alloc, need);
        if (!w.base)
            return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, NULL, 0,
                              "encode: %zu bytes of scratch", need);
        w.size = need;
        owned = true;
    }
    w.cache = NULL;
    w.cmask = 0;
    w.gen = 0;
    w.pc = pc;
    /* the per-call word cache first, then the merge state; byte-level BPE with the caller's
     * cache does without it (that one holds nearly every word it would) */
    if (t->kind != TOK_BPE_FALLBACK && !(pc && t->kind == TOK_BPE)) {
        size_t ce = cache_entries(len);
        w.cache = (wcache *)(void *)w.base;
        w.cmask = ce - 1;
        ING_MEMSET(w.cache, 0, ce * sizeof(wcache));
        w.base += ce * sizeof(wcache);
        w.size -= ce * sizeof(wcache);
    }
    /* cached words: byte-level BPE's lie in the text, SentencePiece's in the escaped text in the
     * scratch */
    w.cbase = t->kind == TOK_BPE ? (const uint8_t *)text : w.base;
    out_ids o = {ids, cap, 0};
    ingot_status st = INGOT_OK;
    const uint8_t *s = (const uint8_t *)text;
    bool add = (flags & INGOT_ENCODE_ADD_SPECIAL) != 0;
    bool parse = (flags & INGOT_ENCODE_PARSE_SPECIAL) != 0;
    if (add && t->add_bos) put(&o, t->bos);
    size_t frag = 0;
    bool first = true, after_special = false;
    bool scan = parse ? t->n_spec != 0 : t->n_user != 0;
    for (size_t i = 0; i < len && scan;) {
        int32_t sp = t->spec_start[s[i]] < t->spec_start[s[i] + 1]
                         ? special_at(t, s + i, len - i, parse) : -1;
        if (sp < 0) {
            i++;
            continue;
        }
        if (frag < i) {
            st = enc_fragment(t, s + frag, i - frag, first, after_special, &w, &o, err);
            if (st != INGOT_OK) goto done;
            first = false;
        }
        put(&o, sp);
        after_special = true;
        first = false;
        i += t->text_len[sp];
        frag = i;
    }
    if (frag < len) {
        st = enc_fragment(t, s + frag, len - frag, first, after_special, &w, &o, err);
        if (st != INGOT_OK) goto done;
    }
    if (add && t->add_eos) put(&o, t->eos);
    *n_out = o.n;
    if (ids && o.n > cap)
        st = ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, NULL, 0,
                        "encode: %zu ids do not fit in %zu", o.n, cap);
done:
    if (owned) ingot__free(&t->alloc, scratch_mem, need);
    return st;
}

/* ---- the tokenizer's own word caches -------------------------------------------------------
 * A plain encode takes the first free slot (a relaxed look, then an acquiring exchange) and gives
 * it back with a release store, so the next encode to take the slot sees every entry the last one
 * wrote; with every slot taken it encodes without a cache. One slot a cache line. */
struct tok_wc_slot {
    atomic_uint busy;
    ingot_tokenizer_cache *c;
    uint8_t pad[64 - sizeof(atomic_uint) - sizeof(void *)];
};

#define WC_DEFAULT_BYTES ((size_t)2 << 20)
#define WC_DEFAULT_COUNT 2u
#define WC_MAX_COUNT 64u
#define WC_MAX_BYTES ((size_t)1 << 30)

ingot_status ingot__tok_wc_attach(ingot_tokenizer *t, const ingot_tokenizer_opts *o,
                                  ingot_error *err)
{
    size_t bytes = o && o->word_cache_bytes ? o->word_cache_bytes : WC_DEFAULT_BYTES;
    uint32_t n = o && o->word_caches ? o->word_caches : WC_DEFAULT_COUNT;
    if (bytes == INGOT_TOKENIZER_NO_WORD_CACHE) return INGOT_OK;
    if (bytes > WC_MAX_BYTES || n > WC_MAX_COUNT)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, NULL, 0,
                          "tokenizer options: %u word caches of %zu bytes (at most %u of %zu)",
                          n, bytes, WC_MAX_COUNT, WC_MAX_BYTES);
    if (t->kind == TOK_BPE_FALLBACK) return INGOT_OK; /* it encodes without one */
    t->wc = ingot__calloc(&t->alloc, n * sizeof *t->wc);
    if (!t->wc)
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, NULL, 0, "tokenizer: word caches");
    t->n_wc = n;
    for (uint32_t i = 0; i < n; i++) {
        atomic_init(&t->wc[i].busy, 0u);
        ingot_status st = ingot_tokenizer_cache_new(t, bytes, &t->wc[i].c, err);
        if (st != INGOT_OK) {
            ingot__tok_wc_detach(t);
            return st;
        }
    }
    return INGOT_OK;
}

void ingot__tok_wc_detach(ingot_tokenizer *t)
{
    if (!t->wc) return;
    for (uint32_t i = 0; i < t->n_wc; i++) ingot_tokenizer_cache_free(t->wc[i].c);
    ingot__free(&t->alloc, t->wc, t->n_wc * sizeof *t->wc);
    t->wc = NULL;
    t->n_wc = 0;
}

ingot_status ingot_tokenizer_encode(const ingot_tokenizer *t, const char *text, size_t len,
                                    uint32_t flags, int32_t *ids, size_t cap, size_t *n_out,
                                    void *scratch, size_t scratch_size, ingot_error *err)
{
    struct tok_wc_slot *slot = NULL;
    for (uint32_t i = 0; t && i < t->n_wc; i++) {
        struct tok_wc_slot *q = &t->wc[i];
        if (!atomic_load_explicit(&q->busy, memory_order_relaxed) &&
            !atomic_exchange_explicit(&q->busy, 1u, memory_order_acquire)) {
            slot = q;
            break;
        }
    }
    ingot_status st = encode(t, slot ? slot->c : NULL, text, len, flags, ids, cap, n_out, scratch,
                             scratch_size, err);
    if (slot) atomic_store_explicit(&slot->busy, 0u, memory_order_release);
    return st;
}

ingot_status ingot_tokenizer_encode_cached(const ingot_tokenizer *t, ingot_tokenizer_cache *cache,
                                           const char *text, size_t len, uint32_t flags,
                                           int32_t *ids, size_t cap, size_t *n_out,
                                           void *scratch, size_t scratch_size, ingot_error *err)
{
    if (!cache)
        return ingot_tokenizer_encode(t, text, len, flags, ids, cap, n_out, scratch,
                                      scratch_size, err);
    if (cache->t != t) {
        if (n_out) *n_out = 0;
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "encode: the word cache was made for another tokenizer");
    }
    return encode(t, cache, text, len, flags, ids, cap, n_out, scratch, scratch_size, err);
}

ingot_status ingot_tokenizer_cache_new(const ingot_tokenizer *t, size_t bytes,
                                       ingot_tokenizer_cache **out, ingot_error *err)
{
    if (out) *out = NULL;
    if (!t || !out)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "cache_new: NULL tokenizer or out");
    if (bytes > WC_MAX_BYTES)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, NULL, 0,
                          "cache_new: %zu bytes, at most %zu", bytes, WC_MAX_BYTES);
    size_t ne = 1;
    while (ne * 2 * sizeof(wc_entry) <= bytes) ne *= 2;
    size_t head = (sizeof(ingot_tokenizer_cache) + 63) & ~(size_t)63;
    size_t n = head + 64 + ne * sizeof(wc_entry); /* 64: room to align the table */
    uint8_t *p = ingot__calloc(&t->alloc, n);
    if (!p)
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, NULL, 0,
                          "cache_new: %zu bytes", n);
    ingot_tokenizer_cache *c = (ingot_tokenizer_cache *)(void *)p;
    uintptr_t tab = ((uintptr_t)(p + head) + 63) & ~(uintptr_t)63;
    c->t = t;
    c->e = (wc_entry *)(void *)tab;
    c->mask = ne - 1;
    c->alloc_n = n;
    *out = c;
    return INGOT_OK;
}

void ingot_tokenizer_cache_free(ingot_tokenizer_cache *c)
{
    if (c) ingot__free(&c->t->alloc, c, c->alloc_n);
}

void ingot_tokenizer_cache_clear(ingot_tokenizer_cache *c)
{
    if (!c) return;
    ING_MEMSET(c->e, 0, (c->mask + 1) * sizeof(wc_entry));
    c->words = c->bytes = c->hits = c->hit_bytes = 0;
}

void ingot_tokenizer_word_cache_stats(const ingot_tokenizer *t, uint64_t *words, uint64_t *bytes,
                                      uint64_t *hits, uint64_t *hit_bytes)
{
    uint64_t s[4] = {0, 0, 0, 0};
    for (uint32_t i = 0; t && i < t->n_wc; i++) {
        const ingot_tokenizer_cache *c = t->wc[i].c;
        s[0] += c->words;
        s[1] += c->bytes;
        s[2] += c->hits;
        s[3] += c->hit_bytes;
    }
    if (words) *words = s[0];
    if (bytes) *bytes = s[1];
    if (hits) *hits = s[2];
    if (hit_bytes) *hit_bytes = s[3];
}

void ingot_tokenizer_cache_stats(const ingot_tokenizer_cache *c, uint64_t *words, uint64_t *bytes,
                                 uint64_t *hits, uint64_t *hit_bytes)
{
    if (words) *words = c ? c->words : 0;
    if (bytes) *bytes = c ? c->bytes : 0;
    if (hits) *hits = c ? c->hits : 0;
    if (hit_bytes) *hit_bytes = c ? c->hit_bytes : 0;
}

/* ---- decoding ---------------------------------------------------------------------------- */
/* The bytes token id stands for under flags (possibly none); *strip: whether a leading space
 * may be stripped from it (the first text token of a SentencePiece sequence). */
static void piece(const ingot_tokenizer *t, uint32_t id, uint32_t flags, const uint8_t **p,
                  size_t *n)
{
    const struct tok_ent *e = &t->ent[id];
    uint8_t ty = e->type;
    if (ty == TOK_T_CONTROL || ty == TOK_T_UNKNOWN) {
        if (flags & INGOT_DECODE_SPECIAL) {
            *p = t->arena + t->text_off[id];
            *n = t->text_len[id];
        } else {
            *n = 0;
        }
        return;
    }
    *p = t->arena + e->dec_off;
    *n = e->dec_len;
}

/* d[0..n) = s[0..n) for the short pieces tokens are, without a call (exactly n bytes written) */
static inline void copy_small(uint8_t *d, const uint8_t *s, size_t n)
{
    if (n >= 8 && n <= 16) {
        uint64_t a, b;
        ING_MEMCPY(&a, s, 8);
        ING_MEMCPY(&b, s + n - 8, 8);
        ING_MEMCPY(d, &a, 8);
        ING_MEMCPY(d + n - 8, &b, 8);
    } else if (n >= 4 && n < 8) {
        uint32_t a, b;
        ING_MEMCPY(&a, s, 4);
        ING_MEMCPY(&b, s + n - 4, 4);
        ING_MEMCPY(d, &a, 4);
        ING_MEMCPY(d + n - 4, &b, 4);
    } else if (n < 4) {
        for (size_t k = 0; k < n; k++) d[k] = s[k];
    } else {
        ING_MEMCPY(d, s, n);
    }
}

ingot_status ingot_tokenizer_decode(const ingot_tokenizer *t, const int32_t *ids, size_t n,
                                    uint32_t flags, char *out, size_t cap, size_t *len_out,
                                    ingot_error *err)
{
    if (len_out) *len_out = 0;
    if (!t || !len_out || (!ids && n) || (!out && cap))
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "decode: NULL tokenizer, ids, out or len_out");
    size_t o = 0;
    bool strip = t->kind != TOK_BPE && t->space_prefix != TOK_PREFIX_NONE &&
                 !(flags & INGOT_DECODE_KEEP_LEADING_SPACE);
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (uint32_t)ids[i] >= t->n_vocab)
            return ingot__err(err, INGOT_RANGE, i, NULL, 0,
                              "decode: id %d at position %zu is outside the vocabulary of %u",
                              ids[i], i, t->n_vocab);
        const struct tok_ent *e = &t->ent[ids[i]];
        const uint8_t *p = t->arena + e->dec_off;
        size_t pn = e->dec_len;
        if (e->type == TOK_T_CONTROL || e->type == TOK_T_UNKNOWN)
            piece(t, (uint32_t)ids[i], flags, &p, &pn);
        if (!pn) continue; /* nothing, and the leading space stays to strip */
        if (strip && e->type != TOK_T_CONTROL) {
            strip = false;
            if (p[0] == ' ') p++, pn--;
        }
        if (out && o + pn <= cap) copy_small((uint8_t *)out + o, p, pn);
        o += pn;
    }
    *len_out = o;
    if (out && o > cap)
        return ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, NULL, 0,
                          "decode: %zu bytes do not fit in %zu", o, cap);
    return INGOT_OK;
}

/* ---- streaming --------------------------------------------------------------------------- */
void ingot_tokenizer_stream_init(ingot_tokenizer_stream *s, uint32_t flags)
{
    ING_MEMSET(s, 0, sizeof *s);
    s->flags = flags;
}

size_t ingot_tokenizer_stream_max(const ingot_tokenizer *t)
{
    return t ? 3 * ((size_t)t->max_dec_len + 4) + 16 : 0;
}

static size_t put_fffd(uint8_t *o)
{
    o[0] = 0xEF;
    o[1] = 0xBF;
    o[2] = 0xBD;
    return 3;
}

/* Bytes a sequence starting with lead byte c needs in all (0: c cannot start one). */
static unsigned seq_len(uint8_t c)
{
    return c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
         : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
}

/* Whether c may follow the pending bytes p[0..k) of a sequence (k >= 1). */
static bool cont_ok(const uint8_t *p, unsigned k, uint8_t c)
{
    if ((c & 0xC0) != 0x80) return false;
    if (k == 1) {
        if (p[0] == 0xE0) return c >= 0xA0;
        if (p[0] == 0xED) return c <= 0x9F;
        if (p[0] == 0xF0) return c >= 0x90;
        if (p[0] == 0xF4) return c <= 0x8F;
    }
    return true;
}

/* Feeds bytes through the UTF-8 holding state, writing complete sequences to o. */
static size_t feed(ingot_tokenizer_stream *s, const uint8_t *p, size_t n, uint8_t *o)
{
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        uint8_t c = p[i];
        if (s->npend == 0) {
            unsigned need = seq_len(c);
            if (need == 1) o[w++] = c;
            else if (need == 0) w += put_fffd(o + w);
            else s->pend[s->npend++] = c;
            i++;
            continue;
        }
        if (!cont_ok(s->pend, s->npend, c)) {
            w += put_fffd(o + w); /* the incomplete sequence; c is looked at again */
            s->npend = 0;
            continue;
        }
        s->pend[s->npend++] = c;
        i++;
        if (s->npend == seq_len(s->pend[0])) {
            ING_MEMCPY(o + w, s->pend, s->npend);
            w += s->npend;
            s->npend = 0;
        }
    }
    return w;
}

ingot_status ingot_tokenizer_stream_push(const ingot_tokenizer *t, ingot_tokenizer_stream *s,
                                         int32_t id, char *out, size_t cap, size_t *len)
{
    if (len) *len = 0;
    if (!t || !s || !out || !len || cap < ingot_tokenizer_stream_max(t)) return INGOT_MISUSE;
    if (id < 0 || (uint32_t)id >= t->n_vocab) return INGOT_RANGE;
    const uint8_t *p = NULL;
    size_t pn;
    piece(t, (uint32_t)id, s->flags, &p, &pn);
    if (!pn) return INGOT_OK;
    if (!s->started && t->type[id] != TOK_T_CONTROL) {
        s->started = 1;
        if (t->kind != TOK_BPE && t->space_prefix != TOK_PREFIX_NONE &&
            !(s->flags & INGOT_DECODE_KEEP_LEADING_SPACE) && p[0] == ' ')
            p++, pn--;
    }
    *len = feed(s, p, pn, (uint8_t *)out);
    return INGOT_OK;
}

ingot_status ingot_tokenizer_stream_flush(const ingot_tokenizer *t, ingot_tokenizer_stream *s,
                                          char *out, size_t cap, size_t *len)
{
    if (len) *len = 0;
    if (!t || !s || !out || !len || cap < ingot_tokenizer_stream_max(t)) return INGOT_MISUSE;
    if (s->npend) {
        *len = put_fffd((uint8_t *)out);
        s->npend = 0;
    }
    return INGOT_OK;
}

/* ---- getters ----------------------------------------------------------------------------- */
const char *ingot_tokenizer_kind(const ingot_tokenizer *t)
{
    if (!t) return "none";
    return t->kind == TOK_BPE ? "bpe" : t->kind == TOK_SPM ? "spm" : "bpe-fallback";
}

const char *ingot_tokenizer_pre(const ingot_tokenizer *t) { return t ? t->pre_name : "none"; }
uint32_t ingot_tokenizer_vocab_size(const ingot_tokenizer *t) { return t ? t->n_vocab : 0; }
bool ingot_tokenizer_adds_bos(const ingot_tokenizer *t) { return t && t->add_bos; }
bool ingot_tokenizer_adds_eos(const ingot_tokenizer *t) { return t && t->add_eos; }

int32_t ingot_tokenizer_special(const ingot_tokenizer *t, ingot_token_role role)
{
    if (!t) return -1;
    switch (role) {
    case INGOT_TOKEN_BOS: return t->bos;
    case INGOT_TOKEN_EOS: return t->eos;
    case INGOT_TOKEN_UNK: return t->unk;
    case INGOT_TOKEN_PAD: return t->pad;
    }
    return -1;
}

ingot_status ingot_tokenizer_token_text(const ingot_tokenizer *t, int32_t id, const char **text,
                                        size_t *len)
{
    if (!t || !text || !len) return INGOT_MISUSE;
    if (id < 0 || (uint32_t)id >= t->n_vocab) {
        *text = NULL;
        *len = 0;
        return INGOT_RANGE;
    }
    *text = (const char *)t->arena + t->text_off[id];
    *len = t->text_len[id];
    return INGOT_OK;
}

bool ingot_tokenizer_is_control(const ingot_tokenizer *t, int32_t id)
{
    return t && id >= 0 && (uint32_t)id < t->n_vocab && t->type[id] == TOK_T_CONTROL;
}
