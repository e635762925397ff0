/*
 * tok_build.c - from what a loader gathered (tok_build: token texts, scores, types, merges as
 * text pairs, special ids) to the immutable ingot_tokenizer: each token's decoded bytes (GPT-2's
 * byte-to-code-point map undone, SentencePiece's U+2581 and <0xNN> undone), the token hash, the
 * merge hash, byte tokens and the special-token list. Every inconsistency is an error naming the
 * token or merge index.
 */
#include "alloc.h"
#include "error.h"
#include "tok_internal.h"

#define NO_ID UINT32_MAX

ingot_status ingot__tok_build_init(tok_build *b, const ingot_allocator *a, uint32_t n,
                                   ingot_error *err)
{
    ING_MEMSET(b, 0, sizeof *b);
    b->alloc = a;
    b->bos = b->eos = b->unk = b->pad = -1;
    b->add_bos = b->add_eos = -1;
    b->space_prefix = -1;
    b->where = "tokenizer";
    if (n > TOK_MAX_VOCAB)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, b->where, ing_strlen(b->where),
                          "%u tokens: more than the limit of %u", n, TOK_MAX_VOCAB);
    b->n = n;
    b->off = ingot__calloc(a, (size_t)n * 4);
    b->len = ingot__calloc(a, (size_t)n * 4);
    b->score = ingot__calloc(a, (size_t)n * 4);
    b->type = ingot__calloc(a, n);
    b->have = ingot__calloc(a, n);
    if (!b->off || !b->len || !b->score || !b->type || !b->have) {
        ingot__tok_build_free(b);
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, NULL, 0, "vocabulary of %u tokens",
                          n);
    }
    for (uint32_t i = 0; i < n; i++) b->type[i] = TOK_T_NORMAL;
    return INGOT_OK;
}

void ingot__tok_build_free(tok_build *b)
{
    const ingot_allocator *a = b->alloc;
    ingot__free(a, b->blob, b->blob_cap);
    ingot__free(a, b->off, (size_t)b->n * 4);
    ingot__free(a, b->len, (size_t)b->n * 4);
    ingot__free(a, b->score, (size_t)b->n * 4);
    ingot__free(a, b->type, b->n);
    ingot__free(a, b->have, b->n);
    ingot__free(a, b->mblob, b->mblob_cap);
    ingot__free(a, b->moff, (size_t)b->merges_cap * 16);
    ING_MEMSET(b, 0, sizeof *b);
}

static bool blob_push(const ingot_allocator *a, uint8_t **blob, size_t *len, size_t *cap,
                      const void *s, size_t n)
{
    if (*cap - *len < n) {
        size_t nc = *cap ? *cap : 4096;
        while (nc - *len < n) {
            if (nc > SIZE_MAX / 2) return false;
            nc *= 2;
        }
        void *p = *blob;
        if (!ingot__grow(a, &p, *cap, nc)) return false;
        *blob = p;
        *cap = nc;
    }
    if (n) ING_MEMCPY(*blob + *len, s, n);
    *len += n;
    return true;
}

/* Token i's gathered text (the blob is NULL while every text is empty). */
static const uint8_t *btext(const tok_build *b, uint32_t i)
{
    return b->blob ? b->blob + b->off[i] : (const uint8_t *)"";
}

int64_t ingot__tok_build_lookup(const tok_build *b, const uint8_t *s, size_t n)
{
    for (uint32_t i = 0; i < b->n; i++)
        if (b->have[i] && b->len[i] == n && (n == 0 || ING_MEMCMP(btext(b, i), s, n) == 0))
            return i;
    return -1;
}

void *ingot__tok_scratch_alloc(const ingot_allocator *a, size_t n) { return ingot__alloc(a, n); }
void ingot__tok_scratch_free(const ingot_allocator *a, void *p, size_t n) { ingot__free(a, p, n); }

ingot_status ingot__tok_build_set(tok_build *b, uint32_t i, const void *s, size_t n,
                                  ingot_error *err)
{
    if (i >= b->n)
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, b->where,
                          ing_strlen(b->where), "token id %u outside the vocabulary of %u", i,
                          b->n);
    if (b->have[i])
        return ingot__err(err, INGOT_DUPLICATE, INGOT_NO_OFFSET, b->where, ing_strlen(b->where),
                          "token id %u given twice", i);
    if (n > TOK_MAX_TOKEN_BYTES)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, b->where, ing_strlen(b->where),
                          "token %u is %zu bytes long (limit %u)", i, n, TOK_MAX_TOKEN_BYTES);
    if (b->blob_len + n > UINT32_MAX)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, b->where, ing_strlen(b->where),
                          "token texts exceed 4 GiB");
    b->off[i] = (uint32_t)b->blob_len;
    b->len[i] = (uint32_t)n;
    if (!blob_push(b->alloc, &b->blob, &b->blob_len, &b->blob_cap, s, n))
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, NULL, 0, "token texts");
    b->have[i] = true;
    return INGOT_OK;
}

ingot_status ingot__tok_build_merge(tok_build *b, const void *l, size_t ln, const void *r,
                                    size_t rn, ingot_error *err)
{
    if (b->n_merges >= TOK_MAX_MERGES)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, b->where, ing_strlen(b->where),
                          "more than %u merges", TOK_MAX_MERGES);
    if (ln > TOK_MAX_TOKEN_BYTES || rn > TOK_MAX_TOKEN_BYTES ||
        b->mblob_len + ln + rn > UINT32_MAX)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, b->where, ing_strlen(b->where),
                          "merge %u too long", b->n_merges);
    if (b->n_merges == b->merges_cap) {
        uint32_t nc = b->merges_cap ? b->merges_cap * 2 : 1024;
        void *p = b->moff;
        if (!ingot__grow(b->alloc, &p, (size_t)b->merges_cap * 16, (size_t)nc * 16))
            return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, NULL, 0, "merges");
        b->moff = p;
        b->merges_cap = nc;
    }
    uint32_t *m = b->moff + (size_t)b->n_merges * 4;
    m[0] = (uint32_t)b->mblob_len;
    m[1] = (uint32_t)ln;
    m[2] = (uint32_t)(b->mblob_len + ln);
    m[3] = (uint32_t)rn;
    if (!blob_push(b->alloc, &b->mblob, &b->mblob_len, &b->mblob_cap, l, ln) ||
        !blob_push(b->alloc, &b->mblob, &b->mblob_len, &b->mblob_cap, r, rn))
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, NULL, 0, "merges");
    b->n_merges++;
    return INGOT_OK;
}

/* ---- byte-level map (GPT-2's bytes_to_unicode): printable bytes stand for themselves, the 68
 * others for U+0100.. in byte order. ------------------------------------------------------- */
static bool byte_printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/* Code point -> byte, or -1. */
static int cp_to_byte(uint32_t cp)
{
    if (cp < 256) return byte_printable(cp) ? (int)cp : -1;
    if (cp >= 0x100 + 68) return -1;
    unsigned k = cp - 0x100;
    for (unsigned b = 0; b < 256; b++)
        if (!byte_printable(b) && k-- == 0) return (int)b;
    return -1;
}

/* Decodes byte-level text into bytes (dst has room for n bytes); -1 if some code point is not
 * one of the 256. */
static int64_t bytelevel_decode(const uint8_t *s, size_t n, uint8_t *dst, const int16_t *inv)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = ingot__tok_utf8(s + i, n - i, &cp);
        if (cp >= 0x100 + 68) return -1;
        int b = inv[cp];
        if (b < 0) return -1;
        dst[o++] = (uint8_t)b;
        i += l;
    }
    return (int64_t)o;
}

/* "<0xNN>" with two upper- or lower-case hex digits: the byte, else -1. */
static int hex_byte_token(const uint8_t *s, size_t n)
{
    if (n != 6 || s[0] != '<' || s[1] != '0' || s[2] != 'x' || s[5] != '>') return -1;
    int v = 0;
    for (int k = 3; k < 5; k++) {
        uint8_t c = s[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
              : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* ---- hash tables -------------------------------------------------------------------------- */
uint64_t ingot__tok_hash(const uint8_t *s, size_t n) { return ingot__tok_hash_x(s, n, false); }

int32_t ingot__tok_find(const ingot_tokenizer *t, const uint8_t *s, size_t n)
{
    return ingot__tok_find_h(t, s, n, ingot__tok_hash(s, n));
}

int32_t ingot__tok_find_hw(const ingot_tokenizer *t, const uint8_t *s, size_t n, uint64_t h,
                           bool *whole)
{
    return ingot__tok_find_x(t, s, n, h, ingot__tok_tail(s, n < 8 ? n : 8, false), whole);
}

bool ingot__tok_key_text(const ingot_tokenizer *t, uint32_t id, const uint8_t *s, size_t n)
{
    const uint32_t *off = t->key_text ? t->text_off : t->dec_off;
    return ingot__tok_eq(t->arena + off[id] + 24, s + 24, n - 24);
}

int32_t ingot__tok_find_x(const ingot_tokenizer *t, const uint8_t *s, size_t n, uint64_t h,
                          uint64_t head, bool *whole)
{
    return ingot__tok_find_xi(t, s, n, h, head, whole);
}

int32_t ingot__tok_find_h(const ingot_tokenizer *t, const uint8_t *s, size_t n, uint64_t h)
{
    bool whole;
    return ingot__tok_find_hw(t, s, n, h, &whole);
}

static uint64_t pow2_at_least(uint64_t v)
{
    uint64_t p = 16;
    while (p < v) p *= 2;
    return p;
}

/* Groups special ids by first byte (spec_start), each group longest text first, then by id. */
static void sort_specials(ingot_tokenizer *t, uint32_t *tmp)
{
    uint32_t cnt[257] = {0};
    for (uint32_t k = 0; k < t->n_spec; k++) cnt[t->arena[t->text_off[t->spec[k]]] + 1]++;
    for (int c = 0; c < 256; c++) cnt[c + 1] += cnt[c];
    ING_MEMCPY(t->spec_start, cnt, sizeof cnt);
    for (uint32_t k = 0; k < t->n_spec; k++) {
        uint32_t id = t->spec[k];
        tmp[cnt[t->arena[t->text_off[id]]]++] = id;
    }
    for (int c = 0; c < 256; c++) {
        uint32_t lo = t->spec_start[c], hi = t->spec_start[c + 1];
        for (uint32_t i = lo + 1; i < hi; i++) { /* insertion sort (groups are small) */
            uint32_t v = tmp[i], j = i;
            while (j > lo) {
                uint32_t u = tmp[j - 1];
                bool before = t->text_len[v] > t->text_len[u] ||
                              (t->text_len[v] == t->text_len[u] && v < u);
                if (!before) break;
                tmp[j] = u;
                j--;
            }
            tmp[j] = v;
        }
    }
    ING_MEMCPY(t->spec, tmp, (size_t)t->n_spec * 4);
}

static ingot_status nomem(ingot_error *err, const char *what);

/* Allocates the merge table for up to `entries` entries (slots: a power of two >= 1.5x);
 * max_rank: the largest rank that will be stored. */
static ingot_status merge_table(ingot_tokenizer *t, const ingot_allocator *a, uint64_t entries,
                                uint64_t max_rank, ingot_error *err)
{
    uint64_t cap = 16;
    while (cap < entries + entries / 2) cap *= 2;
    t->m8 = t->n_vocab < 0xFFFF && max_rank <= 0xFFFF;
    size_t sz = t->m8 ? 8 : sizeof *t->mslot;
    void *p = ingot__alloc_table(a, (size_t)cap * sz, &t->mslot_raw, &t->mslot_raw_n);
    if (!p) return nomem(err, "merge table");
    ING_MEMSET(p, 0xFF, (size_t)cap * sz);
    if (t->m8) t->mslot8 = p;
    else t->mslot = p;
    t->m_mask = cap - 1;
    return INGOT_OK;
}

/* Inserts (l, r) -> (rank, res) unless the pair is there already (then false: the first
 * wins). */
static bool merge_put(ingot_tokenizer *t, uint32_t l, uint32_t r, uint32_t rank, uint32_t res)
{
    if (t->m8) {
        uint64_t key = (uint64_t)l << 16 | r;
        for (uint64_t j = ingot__tok_pair_hash(key) & t->m_mask;; j = (j + 1) & t->m_mask) {
            if (t->mslot8[j] >> 32 == key) return false;
            if (t->mslot8[j] == UINT64_MAX) {
                t->mslot8[j] = key << 32 | (uint64_t)rank << 16 | res;
                t->n_merges++;
                return true;
            }
        }
    }
    uint64_t key = TOK_MKEY(l, r);
    for (uint64_t j = ingot__tok_pair_hash(key) & t->m_mask;; j = (j + 1) & t->m_mask) {
        struct tok_mslot *sl = &t->mslot[j];
        if (sl->key >> TOK_MENTRY_BITS == key) return false;
        if (sl->key == UINT64_MAX) {
            sl->key = key << TOK_MENTRY_BITS | rank;
            sl->res = res;
            sl->unused = 0;
            t->n_merges++;
            return true;
        }
    }
}

/* Builds the merge filter (tok_internal.h) from every key in the merge table: 8 bits per merge,
 * a power of two of 64-bit words (at most 2^20 words, 8 MB, for the 4 M merges allowed). */
static ingot_status merge_filter(ingot_tokenizer *t, const ingot_allocator *a, ingot_error *err)
{
    if (!t->m_mask || t->n_merges < 1024) return INGOT_OK; /* small tables stay in cache */
    uint64_t words = 16;
    while (words * 8 < t->n_merges) words *= 2; /* 64 bits / 8 per merge */
    t->mfilt = ingot__calloc(a, (size_t)words * 8);
    if (!t->mfilt) return nomem(err, "merge filter");
    t->mf_mask = words - 1;
    for (uint64_t j = 0; j <= t->m_mask; j++) {
        uint64_t key;
        if (t->m8) {
            if (t->mslot8[j] == UINT64_MAX) continue;
            key = t->mslot8[j] >> 32;
        } else {
            if (t->mslot[j].key == UINT64_MAX) continue;
            key = t->mslot[j].key >> TOK_MENTRY_BITS;
        }
        uint64_t h = ingot__tok_pair_hash(key);
        t->mfilt[TOK_MF_WORD(h, t->mf_mask)] |= ingot__tok_mf_bits(h);
    }
    return INGOT_OK;
}

/* A float's bits made to sort as unsigned integers in the float order (-0 as +0). */
static uint32_t float_order(float f)
{
    uint32_t u;
    if (f == 0) f = 0;
    ING_MEMCPY(&u, &f, 4);
    return u >> 31 ? ~u : u | 0x80000000u;
}

/* rank[i]: the place of token i's score in descending order, equal scores sharing one (the
 * merge order of SentencePiece: highest score first). LSD radix sort of (key, id) pairs. */
static ingot_status score_ranks(const ingot_tokenizer *t, const ingot_allocator *a,
                                uint32_t *rank, ingot_error *err)
{
    uint32_t n = t->n_vocab;
    uint64_t *v = ingot__alloc(a, (size_t)n * 8), *tmp = ingot__alloc(a, (size_t)n * 8);
    if (!v || !tmp) {
        ingot__free(a, v, (size_t)n * 8);
        ingot__free(a, tmp, (size_t)n * 8);
        return nomem(err, "score order");
    }
    for (uint32_t i = 0; i < n; i++) v[i] = (uint64_t)~float_order(t->score[i]) << 32 | i;
    for (unsigned sh = 32; sh < 64; sh += 8) {
        size_t cnt[257] = {0};
        for (uint32_t i = 0; i < n; i++) cnt[((v[i] >> sh) & 255) + 1]++;
        for (int c = 0; c < 256; c++) cnt[c + 1] += cnt[c];
        for (uint32_t i = 0; i < n; i++) tmp[cnt[(v[i] >> sh) & 255]++] = v[i];
        uint64_t *x = v;
        v = tmp;
        tmp = x;
    }
    uint32_t r = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i && (v[i] >> 32) != (v[i - 1] >> 32)) r++;
        rank[(uint32_t)v[i]] = r;
    }
    ingot__free(a, v, (size_t)n * 8);
    ingot__free(a, tmp, (size_t)n * 8);
    return INGOT_OK;
}

/* The code point table (cp_blk, cp_tok): the token of each character of two or three bytes, as
 * the token hash gives it for that text (with duplicate texts, the one a lookup finds);
 * byte-level BPE only where that token's own merges give it (whole), as a piece's lookup asks.
 * Only for ids < 0xFFFF (Llama 2: 32000, GPT-2: 50257). */
static ingot_status char_table(ingot_tokenizer *t, const ingot_allocator *a, ingot_error *err)
{
    if (t->n_vocab >= 0xFFFF) return INGOT_OK;
    t->cp_blk = ingot__calloc(a, 512 * sizeof *t->cp_blk);
    if (!t->cp_blk) return nomem(err, "code point table");
    const uint32_t *off = t->key_text ? t->text_off : t->dec_off;
    const uint32_t *len = t->key_text ? t->text_len : t->dec_len;
    uint32_t nb = 1;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < t->n_vocab; i++) {
            const uint8_t *s = t->arena + off[i];
            size_t l = len[i];
            uint32_t cp;
            if (l < 2 || l > 3 || ingot__tok_utf8(s, l, &cp) != l) continue;
            if (pass == 0) {
                if (!t->cp_blk[cp >> 7]) t->cp_blk[cp >> 7] = (uint16_t)nb++;
                continue;
            }
            int32_t id = ingot__tok_find(t, s, l);
            if (id >= 0 && (t->kind != TOK_BPE || t->whole[id]))
                t->cp_tok[(size_t)t->cp_blk[cp >> 7] * 128 + (cp & 127)] = (uint16_t)id;
        }
        if (pass == 0) {
            t->cp_tok = ingot__alloc(a, (size_t)nb * 128 * sizeof *t->cp_tok);
            if (!t->cp_tok) return nomem(err, "code point table");
            ING_MEMSET(t->cp_tok, 0xFF, (size_t)nb * 128 * sizeof *t->cp_tok);
            t->n_cp_blk = nb;
        }
    }
    return INGOT_OK;
}

/* SentencePiece's merge table: for every token and every split of its text into two tokens,
 * (left, right) -> token. Only built when every character of every token is itself a token
 * (then a merge can only join two tokens); otherwise encoding looks texts up. */
static ingot_status spm_pair_table(ingot_tokenizer *t, const ingot_allocator *a,
                                   ingot_error *err)
{
    uint64_t pairs = 0, cost = 0;
    for (uint32_t i = 0; i < t->n_vocab; i++) /* each split hashes the whole token: l^2 bytes */
        cost += (uint64_t)t->text_len[i] * t->text_len[i];
    if (cost > TOK_OPEN_BUDGET) return INGOT_OK; /* long tokens: look texts up instead */
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        const uint8_t *s = t->arena + t->text_off[i];
        size_t l = t->text_len[i];
        for (size_t k = 0; k < l;) {
            uint32_t cp;
            size_t cl = ingot__tok_utf8(s + k, l - k, &cp);
            if (ingot__tok_find(t, s + k, cl) < 0) return INGOT_OK; /* not every char a token */
            k += cl;
        }
    }
    for (uint32_t i = 0; i < t->n_vocab; i++) { /* the table's size: splits into two tokens */
        const uint8_t *s = t->arena + t->text_off[i];
        size_t l = t->text_len[i];
        if (ingot__tok_find(t, s, l) != (int32_t)i) continue;
        for (size_t k = 0; k < l;) {
            uint32_t cp;
            k += ingot__tok_utf8(s + k, l - k, &cp);
            pairs += k < l && ingot__tok_find(t, s, k) >= 0 &&
                     ingot__tok_find(t, s + k, l - k) >= 0;
        }
    }
    if (!pairs) return INGOT_OK;
    if (pairs >= (1u << TOK_MENTRY_BITS) - 1) return INGOT_OK; /* too many: look texts up */
    uint32_t *rank = ingot__alloc(a, (size_t)t->n_vocab * 4);
    if (!rank) return nomem(err, "score order");
    ingot_status st = score_ranks(t, a, rank, err);
    if (st == INGOT_OK) st = merge_table(t, a, pairs, t->n_vocab, err);
    if (st != INGOT_OK) {
        ingot__free(a, rank, (size_t)t->n_vocab * 4);
        return st;
    }
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        const uint8_t *s = t->arena + t->text_off[i];
        size_t l = t->text_len[i];
        if (ingot__tok_find(t, s, l) != (int32_t)i) continue; /* a duplicate: the other wins */
        for (size_t k = 0; k < l;) {
            uint32_t cp;
            k += ingot__tok_utf8(s + k, l - k, &cp);
            if (k >= l) break;
            int32_t x = ingot__tok_find(t, s, k), y = ingot__tok_find(t, s + k, l - k);
            if (x < 0 || y < 0) continue;
            merge_put(t, (uint32_t)x, (uint32_t)y, rank[i], i);
        }
    }
    ingot__free(a, rank, (size_t)t->n_vocab * 4);
    ING_TRY(merge_filter(t, a, err));
    t->spm_pairs = true;
    t->pairc = ingot__alloc(a, (size_t)TOK_NCHR * TOK_NCHR * 8);
    if (!t->pairc) return nomem(err, "character pair table");
    static const uint8_t mark[3] = {0xE2, 0x96, 0x81};
    for (uint32_t c = 0; c < TOK_NCHR; c++) {
        uint8_t ch = (uint8_t)c;
        int32_t id = c < 128 ? ingot__tok_find(t, &ch, 1) : ingot__tok_find(t, mark, 3);
        t->chr_tok[c] = id >= 0 ? (uint32_t)id : UINT32_MAX;
    }
    for (uint32_t x = 0; x < TOK_NCHR; x++)
        for (uint32_t y = 0; y < TOK_NCHR; y++) {
            uint32_t l = t->chr_tok[x], r = t->chr_tok[y], rk, res;
            t->pairc[x * TOK_NCHR + y] =
                l != UINT32_MAX && r != UINT32_MAX && ingot__tok_merge(t, l, r, &rk, &res)
                    ? ((uint64_t)rk << 32 | res) : UINT64_MAX;
        }
    return char_table(t, a, err);
}

void ingot_tokenizer_close(ingot_tokenizer *t)
{
    if (!t) return;
    ingot__tok_wc_detach(t);
    const ingot_allocator *a = &t->alloc;
    size_t n = t->n_vocab;
    ingot__free(a, t->arena, t->arena_len);
    ingot__free(a, t->text_off, n * 4);
    ingot__free(a, t->text_len, n * 4);
    ingot__free(a, t->dec_off, n * 4);
    ingot__free(a, t->dec_len, n * 4);
    ingot__free(a, t->score, n * 4);
    ingot__free(a, t->type, n);
    if (t->map)
        ingot__free_table(a, t->map, (size_t)(t->map_mask + 1) * sizeof *t->map, t->map_raw,
                          t->map_raw_n);
    if (t->m_mask && t->m8)
        ingot__free_table(a, t->mslot8, (size_t)(t->m_mask + 1) * 8, t->mslot_raw, t->mslot_raw_n);
    if (t->m_mask && !t->m8)
        ingot__free_table(a, t->mslot, (size_t)(t->m_mask + 1) * sizeof *t->mslot, t->mslot_raw,
                          t->mslot_raw_n);
    if (t->whole) ingot__free(a, t->whole, n);
    ingot__free(a, t->ent, n * sizeof *t->ent);
    ingot__free(a, t->pair0, 65536 * 8);
    ingot__free(a, t->mfilt, (size_t)(t->mf_mask + 1) * 8);
    ingot__free(a, t->tfilt, (size_t)(t->tf_mask + 1) * 8);
    ingot__free(a, t->pairc, (size_t)TOK_NCHR * TOK_NCHR * 8);
    ingot__free(a, t->cp_blk, 512 * sizeof *t->cp_blk);
    ingot__free(a, t->cp_tok, (size_t)t->n_cp_blk * 128 * sizeof *t->cp_tok);
    ingot__free(a, t->spec, (size_t)t->n_spec * 4);
    ingot_allocator al = t->alloc;
    ingot__free(&al, t, sizeof *t);
}

static ingot_status nomem(ingot_error *err, const char *what)
{
    return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, NULL, 0, "%s", what);
}

static ingot_status check_special(tok_build *b, int64_t id, const char *role, int32_t *out,
                                  ingot_error *err)
{
    if (id < 0) {
        *out = -1;
        return INGOT_OK;
    }
    if ((uint64_t)id >= b->n)
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, b->where,
                          ing_strlen(b->where), "%s token id %lld outside the vocabulary of %u",
                          role, (long long)id, b->n);
    *out = (int32_t)id;
    return INGOT_OK;
}

ingot_status ingot__tok_finish(tok_build *b, ingot_tokenizer **out, ingot_error *err)
{
    const ingot_allocator *a = b->alloc;
    const char *w = b->where;
    size_t wl = ing_strlen(w);
    *out = NULL;
    if (b->n == 0)
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, w, wl, "empty vocabulary");
    ingot_tokenizer *t = ingot__calloc(a, sizeof *t);
    if (!t) return nomem(err, "tokenizer");
    if (a) t->alloc = *a;
    t->kind = b->kind;
    t->pre = b->pre;
    t->pre_name = b->pre_name ? b->pre_name : "none";
    t->ignore_merges = b->ignore_merges;
    t->space_prefix = (uint8_t)(b->kind == TOK_BPE ? TOK_PREFIX_NONE
                                : b->space_prefix < 0 ? TOK_PREFIX_EACH : b->space_prefix);
    uint32_t n = b->n;
    t->n_vocab = n;
    ingot_status st = INGOT_OK;
    int16_t inv[0x100 + 68];
    for (uint32_t cp = 0; cp < 0x100 + 68; cp++) inv[cp] = (int16_t)cp_to_byte(cp);

    t->text_off = ingot__alloc(a, (size_t)n * 4);
    t->text_len = ingot__alloc(a, (size_t)n * 4);
    t->dec_off = ingot__alloc(a, (size_t)n * 4);
    t->dec_len = ingot__alloc(a, (size_t)n * 4);
    t->score = ingot__alloc(a, (size_t)n * 4);
    t->type = ingot__alloc(a, n);
    if (!t->text_off || !t->text_len || !t->dec_off || !t->dec_len || !t->score || !t->type) {
        st = nomem(err, "vocabulary");
        goto fail;
    }
    /* Arena: every text, then decoded forms that differ from their text. Decoding never makes a
     * token longer (byte-level: one byte per code point; U+2581 -> ' '; <0xNN> -> one byte), so
     * twice the blob bounds it. */
    if (b->blob_len > (SIZE_MAX - 16) / 2) {
        st = nomem(err, "token texts");
        goto fail;
    }
    t->arena_len = b->blob_len * 2 + 16;
    t->arena = ingot__alloc(a, t->arena_len);
    if (!t->arena) {
        st = nomem(err, "token texts");
        goto fail;
    }
    if (b->blob_len) ING_MEMCPY(t->arena, b->blob, b->blob_len);
    size_t ap = b->blob_len;
    ING_MEMCPY(t->score, b->score, (size_t)n * 4);
    ING_MEMCPY(t->type, b->type, n);
    for (uint32_t i = 0; i < n; i++) {
        if (!b->have[i]) {
            st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, w, wl,
                            "token id %u has no text (ids must run 0..%u without holes)", i,
                            n - 1);
            goto fail;
        }
        if (t->type[i] > TOK_T_BYTE) {
            st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, w, wl,
                            "token %u has unknown type %u", i, t->type[i]);
            goto fail;
        }
        const uint8_t *s = btext(b, i);
        size_t len = b->len[i];
        t->text_off[i] = b->off[i];
        t->text_len[i] = (uint32_t)len;
        t->dec_off[i] = b->off[i];
        t->dec_len[i] = (uint32_t)len;
        uint8_t *d = t->arena + ap;
        if (t->kind == TOK_BPE) {
            int64_t dl = bytelevel_decode(s, len, d, inv);
            if (dl >= 0 && ((size_t)dl != len || ING_MEMCMP(d, s, len) != 0)) {
                t->dec_off[i] = (uint32_t)ap;
                t->dec_len[i] = (uint32_t)dl;
                ap += (size_t)dl;
            }
        } else {
            int hb = t->type[i] == TOK_T_BYTE || t->kind == TOK_BPE_FALLBACK ||
                     t->kind == TOK_SPM ? hex_byte_token(s, len) : -1;
            if (t->type[i] == TOK_T_BYTE && hb < 0) {
                st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, w, wl,
                                "byte token %u is not of the form <0xNN>", i);
                goto fail;
            }
            if (hb >= 0 && (t->type[i] == TOK_T_BYTE || t->type[i] == TOK_T_NORMAL ||
                            t->type[i] == TOK_T_UNDEFINED)) {
                t->type[i] = TOK_T_BYTE;
                d[0] = (uint8_t)hb;
                t->dec_off[i] = (uint32_t)ap;
                t->dec_len[i] = 1;
                ap += 1;
            } else {
                size_t o = 0;
                bool changed = false;
                for (size_t k = 0; k < len; k++) {
                    if (k + 2 < len && s[k] == 0xE2 && s[k + 1] == 0x96 && s[k + 2] == 0x81) {
                        d[o++] = ' ';
                        k += 2;
                        changed = true;
                    } else {
                        d[o++] = s[k];
                    }
                }
                if (changed) {
                    t->dec_off[i] = (uint32_t)ap;
                    t->dec_len[i] = (uint32_t)o;
                    ap += o;
                }
            }
        }
        if (t->dec_len[i] > t->max_dec_len) t->max_dec_len = t->dec_len[i];
        if (t->text_len[i] > t->max_dec_len) t->max_dec_len = t->text_len[i];
    }

    /* token hash. Key: the decoded bytes for byte-level BPE (its encoder works on raw bytes),
     * the stored text for the others (their encoders work on the escaped text). */
    t->map_mask = pow2_at_least((uint64_t)n * 2) - 1;
    t->map = ingot__alloc_table(a, (size_t)(t->map_mask + 1) * sizeof *t->map, &t->map_raw,
                                &t->map_raw_n);
    if (!t->map) {
        st = nomem(err, "token hash");
        goto fail;
    }
    for (uint64_t j = 0; j <= t->map_mask; j++) t->map[j].id = UINT32_MAX;
    bool by_text = t->kind != TOK_BPE;
    t->key_text = by_text;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *k = t->arena + (by_text ? t->text_off[i] : t->dec_off[i]);
        size_t kl = by_text ? t->text_len[i] : t->dec_len[i];
        if (kl == 0) continue;
        uint64_t h = ingot__tok_hash(k, kl);
        struct tok_map_slot slot = {
            ingot__tok_tail(k, kl < 8 ? kl : 8, false),
            {kl > 8 ? ingot__tok_chunk(k, kl, 8) : 0, kl > 16 ? ingot__tok_chunk(k, kl, 16) : 0},
            i, (uint16_t)kl, (uint16_t)(h >> 48)};
        for (uint64_t j = h & t->map_mask;; j = (j + 1) & t->map_mask) {
            if (t->map[j].id == UINT32_MAX) {
                t->map[j] = slot;
                break;
            }
            uint32_t o = t->map[j].id;
            const uint8_t *ok = t->arena + (by_text ? t->text_off[o] : t->dec_off[o]);
            size_t ol = by_text ? t->text_len[o] : t->dec_len[o];
            if (ol == kl && ING_MEMCMP(ok, k, kl) == 0) {
                if (b->dup_is_error) {
                    st = ingot__err(err, INGOT_DUPLICATE, INGOT_NO_OFFSET, w, wl,
                                    "tokens %u and %u have the same text", o, i);
                    goto fail;
                }
                t->map[j] = slot; /* the later id wins, as llama.cpp's token_to_id */
                break;
            }
        }
    }

    /* its filter: 8 bits per token (tok_internal.h), for vocabularies past the caches */
    if (n >= 4096) {
        uint64_t words = 16;
        while (words * 8 < n) words *= 2;
        t->tfilt = ingot__calloc(a, (size_t)words * 8);
        if (!t->tfilt) {
            st = nomem(err, "token filter");
            goto fail;
        }
        t->tf_mask = words - 1;
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *k = t->arena + (by_text ? t->text_off[i] : t->dec_off[i]);
            size_t kl = by_text ? t->text_len[i] : t->dec_len[i];
            if (kl == 0) continue;
            uint64_t h = ingot__tok_hash(k, kl);
            t->tfilt[TOK_MF_WORD(h, t->tf_mask)] |= ingot__tok_mf_bits(h);
        }
    }

    /* byte tokens */
    for (unsigned by = 0; by < 256; by++) {
        int32_t id;
        if (t->kind == TOK_BPE) {
            uint8_t c = (uint8_t)by;
            id = ingot__tok_find(t, &c, 1);
            if (id < 0) {
                st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, w, wl,
                                "byte-level vocabulary has no token for byte 0x%02x", by);
                goto fail;
            }
        } else {
            static const char hx[] = "0123456789ABCDEF";
            uint8_t name[6] = {'<', '0', 'x', (uint8_t)hx[by >> 4], (uint8_t)hx[by & 15], '>'};
            id = ingot__tok_find(t, name, 6);
        }
        t->byte_tok[by] = id;
    }

    /* merges */
    if ((t->kind == TOK_BPE || t->kind == TOK_BPE_FALLBACK) && b->n_merges) {
        if ((st = merge_table(t, a, b->n_merges, b->n_merges - 1, err)) != INGOT_OK) goto fail;
        uint8_t buf[2 * TOK_MAX_TOKEN_BYTES];
        for (uint32_t m = 0; m < b->n_merges; m++) {
            const uint32_t *mo = b->moff + (size_t)m * 4;
            const uint8_t *mb = b->mblob ? b->mblob : (const uint8_t *)"";
            const uint8_t *ls = mb + mo[0], *rs = mb + mo[2];
            int32_t l, r, res;
            if (t->kind == TOK_BPE) {
                int64_t ll = bytelevel_decode(ls, mo[1], buf, inv);
                int64_t rl = ll < 0 ? -1 : bytelevel_decode(rs, mo[3], buf + ll, inv);
                if (ll <= 0 || rl <= 0) {
                    st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, w, wl,
                                    "merge %u: a side is empty or not byte-level text", m);
                    goto fail;
                }
                l = ingot__tok_find(t, buf, (size_t)ll);
                r = ingot__tok_find(t, buf + ll, (size_t)rl);
                res = ingot__tok_find(t, buf, (size_t)(ll + rl));
            } else {
                if (mo[1] == 0 || mo[3] == 0) {
                    st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, w, wl,
                                    "merge %u: a side is empty", m);
                    goto fail;
                }
                ING_MEMCPY(buf, ls, mo[1]);
                ING_MEMCPY(buf + mo[1], rs, mo[3]);
                l = ingot__tok_find(t, buf, mo[1]);
                r = ingot__tok_find(t, buf + mo[1], mo[3]);
                res = ingot__tok_find(t, buf, (size_t)mo[1] + mo[3]);
            }
            if (l < 0 || r < 0 || res < 0) {
                st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, w, wl,
                                "merge %u names a token not in the vocabulary (%s)", m,
                                l < 0 ? "left" : r < 0 ? "right" : "merged result");
                goto fail;
            }
            /* rank m; for a duplicate pair the first wins */
            merge_put(t, (uint32_t)l, (uint32_t)r, m, (uint32_t)res);
        }
    }

    if ((st = merge_filter(t, a, err)) != INGOT_OK) goto fail;

    /* byte-level BPE: the byte pairs no token has (any token: a merge's result is a token) */
    if (t->kind == TOK_BPE && t->m_mask) {
        ING_MEMSET(t->bbar, 0xFF, sizeof t->bbar);
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *s = t->arena + t->dec_off[i];
            for (size_t k = 0; k + 1 < t->dec_len[i]; k++)
                t->bbar[s[k]][s[k + 1] >> 6] &= ~(1ull << (s[k + 1] & 63));
        }
        t->bbar_on = true;
    }

    /* byte-level BPE: the merges of byte pairs, for the first round of every word */
    if (t->kind == TOK_BPE && t->m_mask && n >= 1024) { /* pays off for real vocabularies */
        t->pair0 = ingot__alloc(a, 65536 * 8);
        if (!t->pair0) {
            st = nomem(err, "byte pair table");
            goto fail;
        }
        for (uint32_t p = 0; p < 65536; p++) {
            uint32_t rank, res;
            t->pair0[p] = ingot__tok_merge(t, (uint32_t)t->byte_tok[p >> 8],
                                           (uint32_t)t->byte_tok[p & 255], &rank, &res)
                              ? ((uint64_t)rank << 32 | res) : UINT64_MAX;
        }
    }

    /* byte-level BPE without ignore_merges: which tokens their own merges give back whole */
    if (t->kind == TOK_BPE && !t->ignore_merges && t->m_mask) {
        size_t wsz = ((size_t)t->max_dec_len + 1) * TOK_BPE_WORK_PER_BYTE;
        void *work = ingot__alloc(a, wsz);
        t->whole = ingot__calloc(a, n);
        if (!work || !t->whole) {
            ingot__free(a, work, wsz);
            st = nomem(err, "merge check");
            goto fail;
        }
        for (uint32_t i = 0; i < n; i++) {
            size_t l = t->dec_len[i];
            if (l >= 2 && ingot__tok_find(t, t->arena + t->dec_off[i], l) == (int32_t)i)
                t->whole[i] = ingot__tok_bpe_gives(t, t->arena + t->dec_off[i], l, (int32_t)i,
                                                   work);
        }
        ingot__free(a, work, wsz);
    }
    if (t->kind == TOK_BPE && t->whole && (st = char_table(t, a, err)) != INGOT_OK) goto fail;

    if (t->kind == TOK_SPM && (st = spm_pair_table(t, a, err)) != INGOT_OK) goto fail;
    if (t->kind == TOK_SPM) {
        t->spm_split = true;
        for (uint32_t i = 0; i < n && t->spm_split; i++) {
            const uint8_t *s = t->arena + t->text_off[i];
            size_t l = t->text_len[i];
            for (size_t k = 1; k + 2 < l; k++)
                if (s[k] == 0xE2 && s[k + 1] == 0x96 && s[k + 2] == 0x81 &&
                    !(k >= 3 && s[k - 3] == 0xE2 && s[k - 2] == 0x96 && s[k - 1] == 0x81)) {
                    t->spm_split = false;
                    break;
                }
        }
    }

    /* SentencePiece split into words: the ASCII pairs no token has (any token, whatever its type:
     * a merge looks tokens up by text) */
    if (t->kind == TOK_SPM && t->spm_split) {
        ING_MEMSET(t->spm_bar, 0xFF, sizeof t->spm_bar);
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *s = t->arena + t->text_off[i];
            for (size_t k = 0; k + 1 < t->text_len[i]; k++)
                if (s[k] < 0x80 && s[k + 1] < 0x80)
                    t->spm_bar[s[k]][s[k + 1] >> 6] &= ~(1ull << (s[k + 1] & 63));
        }
        for (unsigned x = 0; x < 128; x++)
            for (unsigned y = 0; y < 128; y++)
                if (t->spm_bar[x][y >> 6] >> (y & 63) & 1)
                    t->spm_stop[(x | y << 8) >> 6] |= 1ull << ((x | y << 8) & 63);
        for (unsigned x = 0; x < 256; x++)
            t->spm_stop[(x | 0xE2u << 8) >> 6] |= 1ull << ((x | 0xE2u << 8) & 63);
    }

    /* SentencePiece split into words: which tokens their own merges give back whole */
    if (t->kind == TOK_SPM && t->spm_split) {
        size_t wsz = ((size_t)t->max_dec_len + 2) * TOK_SPM_WORK_PER_BYTE;
        void *work = ingot__alloc(a, wsz);
        t->whole = ingot__calloc(a, n);
        if (!work || !t->whole) {
            ingot__free(a, work, wsz);
            st = nomem(err, "merge check");
            goto fail;
        }
        uint64_t cost = 0; /* without the pair table a merge looks its text up: l^2 a token */
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *s = t->arena + t->text_off[i];
            size_t l = t->text_len[i];
            if (!t->spm_pairs && (cost += (uint64_t)l * l) > TOK_OPEN_BUDGET) break;
            if (l >= 2 && ingot__tok_find(t, s, l) == (int32_t)i)
                t->whole[i] = ingot__tok_spm_gives(t, s, l, (int32_t)i, work);
        }
        ingot__free(a, work, wsz);
    }

    t->ent = ingot__alloc(a, (size_t)n * sizeof *t->ent);
    if (!t->ent) {
        st = nomem(err, "token entries");
        goto fail;
    }
    for (uint32_t i = 0; i < n; i++) {
        t->ent[i].dec_off = t->dec_off[i];
        t->ent[i].dec_len = (uint16_t)t->dec_len[i];
        t->ent[i].type = t->type[i];
        t->ent[i].whole = t->whole ? t->whole[i] : 0;
    }
    if (t->whole) /* the flag in the hash slots too, where the lookup finds it */
        for (uint64_t j = 0; j <= t->map_mask; j++)
            if (t->map[j].id != UINT32_MAX && t->whole[t->map[j].id])
                t->map[j].len |= TOK_SLOT_WHOLE;

    /* special tokens matched in text */
    uint32_t ns = 0;
    for (uint32_t i = 0; i < n; i++)
        if ((t->type[i] == TOK_T_CONTROL || t->type[i] == TOK_T_USER ||
             t->type[i] == TOK_T_UNKNOWN) && t->text_len[i])
            ns++;
    if (ns) {
        t->spec = ingot__alloc(a, (size_t)ns * 4);
        uint32_t *tmp = ingot__alloc(a, (size_t)ns * 4);
        if (!t->spec || !tmp) {
            ingot__free(a, tmp, (size_t)ns * 4);
            ingot__free(a, t->spec, (size_t)ns * 4);
            t->spec = NULL;
            st = nomem(err, "special tokens");
            goto fail;
        }
        for (uint32_t i = 0; i < n; i++)
            if ((t->type[i] == TOK_T_CONTROL || t->type[i] == TOK_T_USER ||
                 t->type[i] == TOK_T_UNKNOWN) && t->text_len[i]) {
                t->spec[t->n_spec++] = i;
                t->n_user += t->type[i] == TOK_T_USER;
            }
        sort_specials(t, tmp);
        ingot__free(a, tmp, (size_t)ns * 4);
    }

    if ((st = check_special(b, b->bos, "BOS", &t->bos, err)) != INGOT_OK) goto fail;
    if ((st = check_special(b, b->eos, "EOS", &t->eos, err)) != INGOT_OK) goto fail;
    if ((st = check_special(b, b->unk, "UNK", &t->unk, err)) != INGOT_OK) goto fail;
    if ((st = check_special(b, b->pad, "PAD", &t->pad, err)) != INGOT_OK) goto fail;
    bool def_bos = t->kind != TOK_BPE || b->default_bos;
    t->add_bos = (b->add_bos < 0 ? def_bos : b->add_bos != 0) && t->bos >= 0;
    t->add_eos = (b->add_eos < 0 ? false : b->add_eos != 0) && t->eos >= 0;
    *out = t;
    return INGOT_OK;
fail:
    ingot_tokenizer_close(t);
    return st;
}
