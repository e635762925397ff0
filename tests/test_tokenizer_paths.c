/*
 * test_tokenizer_paths.c - the encoders' fast paths against slower ones that must agree: byte-level
 * BPE words of every length and script (the scan for short words, the heap for long ones, the
 * byte-pair table, the cuts between bytes no token joins) against a naive merge loop written
 * here, and SentencePiece through its pair table with score ranks (ties included) against the
 * same vocabulary looked up by text, and with its cuts against none; the merge and token filters
 * against the bare tables; the per-call word cache; the space escaping.
 */
#include <time.h>

#include "harness.h"
#include "tok_internal.h"

#define FIX INGOT_FIXTURES

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static unsigned rnd(unsigned n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng >> 33) % n;
}

/* BPE the slow way: byte tokens, then the lowest-ranked adjacent pair merged (leftmost first)
 * until none is left; a whole word in the vocabulary first when ignore_merges. */
static size_t naive_bpe(const ingot_tokenizer *t, const uint8_t *w, size_t n, int32_t *out)
{
    if (t->ignore_merges) {
        int32_t id = ingot__tok_find(t, w, n);
        if (id >= 0) {
            out[0] = id;
            return 1;
        }
    }
    uint32_t sym[512];
    for (size_t i = 0; i < n; i++) sym[i] = (uint32_t)t->byte_tok[w[i]];
    for (;;) {
        uint32_t best = UINT32_MAX, best_res = 0;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            uint32_t rank, res;
            if (ingot__tok_merge(t, sym[i], sym[i + 1], &rank, &res) && rank < best) {
                best = rank;
                best_res = res;
                at = i;
            }
        }
        if (best == UINT32_MAX) break;
        sym[at] = best_res;
        memmove(sym + at + 1, sym + at + 2, (n - at - 2) * sizeof sym[0]);
        n--;
    }
    for (size_t i = 0; i < n; i++) out[i] = (int32_t)sym[i];
    return n;
}

static void bpe_words_agree(const char *path)
{
    ingot_tokenizer *t = NULL;
    ASSERT_OK(ingot_tokenizer_open(path, NULL, &t, NULL));
    /* letters: ASCII, then CJK, Cyrillic, Devanagari, accented (2- and 3-byte characters, where
     * most byte pairs across a character boundary are in no token: the cut pieces) */
    static const char *const pieces[] = {"a", "e", "th", "ing", "ion", "er", "x", "q", "z", "st",
                                         "ed", "ou", "an", "k", "ll",
                                         "\u4e2d", "\u6587", "\u7684", "\u8a9e", "\u3042",
                                         "\u0436", "\u043e", "\u0432", "\u0915", "\u0939",
                                         "\u00e9", "\u00df", "\u0645", "\u05d0", "\u30ab"};
    int32_t got[1024], want[1024];
    for (int round = 0; round < 800; round++) {
        /* one pre-token: a space, then letters (\p{L}) only (words of 2 to about 300 bytes) */
        uint8_t w[400];
        size_t n = 0, target = 1 + (size_t)(round % 400 < 200 ? rnd(40) : rnd(300));
        w[n++] = ' ';
        while (n < target) {
            const char *p = pieces[round < 400 ? rnd(15) : rnd(30)];
            size_t l = strlen(p);
            if (n + l > sizeof w) break;
            memcpy(w + n, p, l);
            n += l;
        }
        size_t k = 0;
        ASSERT_OK(ingot_tokenizer_encode(t, (const char *)w, n, 0, got, 1024, &k, NULL, 0, NULL));
        size_t m = naive_bpe(t, w, n, want);
        ASSERT_EQ(k, m);
        for (size_t i = 0; i < k; i++) ASSERT_EQ(got[i], want[i]);
    }
    ingot_tokenizer_close(t);
}

TEST(test_bpe_words_match_naive_merges_gpt2)
{
    bpe_words_agree(FIX "/tokenizers/llama.cpp/ggml-vocab-gpt-2.gguf"); /* 8-byte merge slots */
}

TEST(test_bpe_words_match_naive_merges_llama3)
{
    bpe_words_agree(FIX "/tokenizers/llama3/tokenizer.json"); /* 16-byte slots, ignore_merges */
}

/* ---- pre-tokenizers: the ASCII fast paths against the general matchers -------------------- */
typedef struct splits {
    size_t off[4096], n;
} splits;

static ingot_status collect(void *ctx, size_t off, size_t len)
{
    splits *sp = ctx;
    (void)len;
    if (sp->n < 4096) sp->off[sp->n++] = off;
    return INGOT_OK;
}

/* GPT-2 and Llama 3 take letter runs sixteen bytes a step (SSE2) and other ASCII by tables
 * (Llama 3 also its punctuation and whitespace runs, falling back where one meets non-ASCII); on
 * text without digits StarCoder (\p{N}, then GPT-2's general matcher) and Qwen 2 (Llama 3's
 * general matcher with single digits) split the same. Letter runs of 1 to 40 around the 16-byte
 * steps, ending in punctuation, space, non-ASCII letters or the end. */
TEST(test_pretok_fast_paths_match_general)
{
    static const char *const parts[] = {
        "a", "Z", "q", "xyz", " ", "  ", "\n", ".", ",", "'s", "'T", "\u00e9", "\u4e2d", "\u00a0",
        "!", "(", "\t", "\r\n",
        /* for Llama 3's punctuation and whitespace runs: ASCII whitespace and control characters,
         * whitespace and punctuation beyond ASCII right after ASCII runs of them */
        "\r", "\v", "\f", "\x01", "\x7f", ";", "  ;", "\n\n", " \n ", "\u3000", "\xc2\x85",
        "\u2028", "\u00bf", "\u2019"};
    size_t bad = 0;
    for (int round = 0; round < 3000; round++) {
        char text[800];
        size_t n = 0, np = 1 + rnd(30);
        for (size_t k = 0; k < np && n < 700; k++) {
            if (rnd(2)) { /* a letter run of 1..40 */
                size_t run = 1 + rnd(40);
                for (size_t r = 0; r < run; r++)
                    text[n++] = (char)(rnd(2) ? 'a' + rnd(26) : 'A' + rnd(26));
            } else {
                const char *p = parts[rnd(sizeof parts / sizeof parts[0])];
                memcpy(text + n, p, strlen(p));
                n += strlen(p);
            }
        }
        static splits a, b;
        a.n = b.n = 0;
        ingot__tok_pretokenize(TOK_PRE_GPT2, (const uint8_t *)text, n, collect, &a);
        ingot__tok_pretokenize(TOK_PRE_STARCODER, (const uint8_t *)text, n, collect, &b);
        bad += a.n != b.n || memcmp(a.off, b.off, a.n * sizeof a.off[0]) != 0;
        a.n = b.n = 0;
        ingot__tok_pretokenize(TOK_PRE_LLAMA3, (const uint8_t *)text, n, collect, &a);
        ingot__tok_pretokenize(TOK_PRE_QWEN2, (const uint8_t *)text, n, collect, &b);
        bad += a.n != b.n || memcmp(a.off, b.off, a.n * sizeof a.off[0]) != 0;
    }
    CHECK(bad == 0, "%zu of 6000 splits differ", bad);
}

/* ---- the merge filter: no merge lost, most non-merges told without a probe ---------------- */
static void merge_filter_exact(const char *path)
{
    ingot_tokenizer *t = NULL;
    ASSERT_OK(ingot_tokenizer_open(path, NULL, &t, NULL));
    ASSERT_TRUE(t->mfilt != NULL);
    ingot_tokenizer bare = *t; /* the same tables without the filter: every lookup probes */
    bare.mfilt = NULL;
    size_t n = 0;
    ASSERT_OK(ingot_tokenizer_merges(t, NULL, 0, &n, NULL));
    ASSERT_TRUE(n >= 1024);
    int32_t *pairs = malloc(n * 2 * sizeof *pairs);
    ASSERT_OK(ingot_tokenizer_merges(t, pairs, n, &n, NULL));
    size_t lost = 0;
    for (size_t i = 0; i < n; i++) { /* every merge of the file passes the filter */
        uint32_t rank = 0, res = 0, rank2 = 0, res2 = 0;
        bool a = ingot__tok_merge(t, (uint32_t)pairs[2 * i], (uint32_t)pairs[2 * i + 1], &rank,
                                  &res);
        bool b = ingot__tok_merge(&bare, (uint32_t)pairs[2 * i], (uint32_t)pairs[2 * i + 1],
                                  &rank2, &res2);
        lost += !a || !b || rank != rank2 || res != res2;
    }
    CHECK(lost == 0, "%zu of %zu merges lost or changed by the filter", lost, n);
    free(pairs);
    /* random pairs: the same answer with and without it, and most non-merges stopped by it */
    uint32_t nv = ingot_tokenizer_vocab_size(t);
    size_t none = 0, passed = 0, differ = 0;
    for (int k = 0; k < 200000; k++) {
        uint32_t l = k & 1 ? rnd(nv) : rnd(512), r = k & 2 ? rnd(nv) : rnd(512);
        uint32_t rank = 0, res = 0, rank2 = 0, res2 = 0;
        bool a = ingot__tok_merge(t, l, r, &rank, &res);
        bool b = ingot__tok_merge(&bare, l, r, &rank2, &res2);
        differ += a != b || (a && (rank != rank2 || res != res2));
        if (!b) {
            none++;
            uint64_t key = t->m8 ? (uint64_t)l << 16 | r : TOK_MKEY(l, r);
            uint64_t h = ingot__tok_pair_hash(key), m = ingot__tok_mf_bits(h);
            passed += (t->mfilt[TOK_MF_WORD(h, t->mf_mask)] & m) == m;
        }
    }
    CHECK(differ == 0, "%zu random pairs differ with the filter", differ);
    CHECK(none > 100000 && passed * 10 < none, "filter passes %zu of %zu pairs with no merge",
          passed, none);
    ingot_tokenizer_close(t);
}

/* The token filter: every token found by its text (the id the hash gives without the filter),
 * and most strings that are no token stopped by it. */
static void token_filter_exact(const char *path)
{
    ingot_tokenizer *t = NULL;
    ASSERT_OK(ingot_tokenizer_open(path, NULL, &t, NULL));
    ASSERT_TRUE(t->tfilt != NULL);
    ingot_tokenizer bare = *t;
    bare.tfilt = NULL;
    const uint32_t *off = t->key_text ? t->text_off : t->dec_off;
    const uint32_t *len = t->key_text ? t->text_len : t->dec_len;
    size_t lost = 0, none = 0, passed = 0;
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        if (!len[i]) continue;
        const uint8_t *k = t->arena + off[i];
        lost += ingot__tok_find(t, k, len[i]) != ingot__tok_find(&bare, k, len[i]) ||
                ingot__tok_find(t, k, len[i]) < 0;
        uint8_t x[80]; /* the token with a byte more: mostly no token */
        size_t xl = len[i] < 64 ? len[i] : 64;
        memcpy(x, k, xl);
        x[xl++] = (uint8_t)"qz#~"[i % 4];
        int32_t a = ingot__tok_find(t, x, xl), b = ingot__tok_find(&bare, x, xl);
        lost += a != b;
        if (b < 0) {
            none++;
            uint64_t h = ingot__tok_hash(x, xl), m = ingot__tok_mf_bits(h);
            passed += (t->tfilt[TOK_MF_WORD(h, t->tf_mask)] & m) == m;
        }
    }
    CHECK(lost == 0, "%zu lookups differ with the token filter", lost);
    CHECK(none > 10000 && passed * 10 < none, "filter passes %zu of %zu non-tokens", passed, none);
    ingot_tokenizer_close(t);
}

/* The token hash compares keys in its slots' first 24 bytes (three words, the last ones filled
 * from the key's end) and past them in the token's text: every token of more than 8 bytes is
 * found as itself (or as a token of the same bytes); its slot's comparison takes its bytes and
 * refuses them with one byte changed at the edges of those words or in the text past them (the
 * hash's tag would refuse most of those first, so the comparison is asked directly). Keys are
 * copied to blocks of their exact size, so that a read past them shows under ASan. */
static void token_slot_keys_exact(const char *path, size_t min_long)
{
    ingot_tokenizer *t = NULL;
    ASSERT_OK(ingot_tokenizer_open(path, NULL, &t, NULL));
    const uint32_t *off = t->key_text ? t->text_off : t->dec_off;
    const uint32_t *len = t->key_text ? t->text_len : t->dec_len;
    size_t wrong = 0, tried = 0, long_keys = 0;
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        size_t l = len[i];
        if (l <= 8) continue;
        uint8_t *x = malloc(l);
        ASSERT_TRUE(x != NULL);
        memcpy(x, t->arena + off[i], l);
        int32_t f = ingot__tok_find(t, x, l);
        wrong += f < 0 || len[f] != l || memcmp(t->arena + off[f], x, l) != 0;
        const struct tok_map_slot *sl = NULL;
        for (uint64_t j = ingot__tok_hash(x, l) & t->map_mask; !sl && t->map[j].id != UINT32_MAX;
             j = (j + 1) & t->map_mask)
            if (t->map[j].id == (uint32_t)f) sl = &t->map[j];
        ASSERT_TRUE(sl != NULL);
        wrong += !ingot__tok_key_rest(t, sl, x, l);
        long_keys += l > 24;
        static const size_t at[] = {8, 9, 15, 16, 17, 23, 24, 25, 31, 32, SIZE_MAX};
        for (size_t q = 0; q < sizeof at / sizeof at[0]; q++) {
            size_t p = at[q] == SIZE_MAX ? l - 1 : at[q];
            if (p >= l) continue;
            uint8_t keep = x[p];
            x[p] ^= (uint8_t)(1u << (i % 8));
            wrong += ingot__tok_key_rest(t, sl, x, l);
            int32_t g = ingot__tok_find(t, x, l);
            wrong += g == f || (g >= 0 && (len[g] != l || memcmp(t->arena + off[g], x, l) != 0));
            x[p] = keep;
            tried++;
        }
        free(x);
    }
    CHECK(wrong == 0, "%zu of %zu lookups wrong", wrong, tried);
    CHECK(long_keys >= min_long, "%zu tokens past 24 bytes", long_keys);
    ingot_tokenizer_close(t);
}

TEST(test_token_slot_keys_exact)
{
    token_slot_keys_exact(FIX "/tokenizers/llama.cpp/ggml-vocab-gpt-2.gguf", 10);
    token_slot_keys_exact(FIX "/tokenizers/llama3/tokenizer.json", 10);
    token_slot_keys_exact(FIX "/tokenizers/llama.cpp/ggml-vocab-llama-spm.gguf", 10);
}

TEST(test_token_filter_exact)
{
    token_filter_exact(FIX "/tokenizers/llama.cpp/ggml-vocab-gpt-2.gguf");   /* decoded bytes */
    token_filter_exact(FIX "/tokenizers/llama3/tokenizer.json");
    token_filter_exact(FIX "/tokenizers/llama.cpp/ggml-vocab-llama-spm.gguf"); /* stored text */
}

TEST(test_merge_filter_exact_gpt2)
{
    merge_filter_exact(FIX "/tokenizers/llama.cpp/ggml-vocab-gpt-2.gguf"); /* 8-byte slots */
}

TEST(test_merge_filter_exact_llama3)
{
    merge_filter_exact(FIX "/tokenizers/llama3/tokenizer.json"); /* 16-byte slots */
}

TEST(test_merge_filter_exact_spm)
{
    merge_filter_exact(FIX "/tokenizers/llama.cpp/ggml-vocab-llama-spm.gguf"); /* pair table */
}

/* ---- the per-call word cache ------------------------------------------------------------- */
/* ids of s[0..n) with flags fl (malloc'ed, count in *k) */
static int32_t *enc_all(const ingot_tokenizer *t, const char *s, size_t n, uint32_t fl, size_t *k)
{
    size_t cap = ingot_tokenizer_max_tokens(n);
    int32_t *ids = malloc(cap * sizeof *ids);
    if (ingot_tokenizer_encode(t, s, n, fl, ids, cap, k, NULL, 0, NULL) != INGOT_OK) *k = SIZE_MAX;
    return ids;
}

/* SentencePiece keeps 16 bits of the fragment number in each cache entry and clears the cache
 * when they wrap: 70,000 fragments (split by <s>) of a few repeating words give the ids of each
 * fragment encoded on its own. */
TEST(test_word_cache_many_fragments)
{
    ingot_tokenizer *t = NULL;
    ASSERT_OK(ingot_tokenizer_open(FIX "/tokenizers/llama.cpp/ggml-vocab-llama-spm.gguf", NULL,
                                   &t, NULL));
    static const char *const w[] = {"a", "hello", "the cat", "x y z", "ab", "hello world!"};
    enum { FRAGS = 70000 };
    size_t cap = 0;
    for (int i = 0; i < FRAGS; i++) cap += 3 + strlen(w[i % 6]);
    char *text = malloc(cap + 1);
    size_t n = 0;
    for (int i = 0; i < FRAGS; i++) n += (size_t)sprintf(text + n, "<s>%s", w[i % 6]);
    size_t k = 0;
    int32_t *got = enc_all(t, text, n, INGOT_ENCODE_PARSE_SPECIAL, &k);
    ASSERT_TRUE(k != SIZE_MAX);
    size_t at = 0, bad = 0;
    int32_t bos = ingot_tokenizer_special(t, INGOT_TOKEN_BOS);
    for (int i = 0; i < FRAGS && at < k; i++) {
        size_t kw = 0;
        int32_t *want = enc_all(t, w[i % 6], strlen(w[i % 6]), 0, &kw);
        bad += got[at++] != bos;
        for (size_t j = 0; j < kw; j++) bad += at >= k || got[at++] != want[j];
        free(want);
    }
    CHECK(bad == 0 && at == k, "%zu ids differ, %zu of %zu ids checked", bad, at, k);
    free(got);
    free(text);
    ingot_tokenizer_close(t);
}

/* Words over 255 bytes are not cached; one that comes twice gives the same ids twice. */
TEST(test_word_cache_long_words)
{
    ingot_tokenizer *t = NULL;
    ASSERT_OK(ingot_tokenizer_open(FIX "/tokenizers/llama.cpp/ggml-vocab-gpt-2.gguf", NULL, &t,
                                   NULL));
    char text[700];
    for (int i = 0; i < 300; i++) text[i] = "abcdefgh"[rnd(8)];
    text[300] = ' ';
    memcpy(text + 301, text, 300);
    size_t k1 = 0, k2 = 0, k = 0;
    int32_t *a = enc_all(t, text, 300, 0, &k1), *b = enc_all(t, text + 300, 301, 0, &k2);
    int32_t *all = enc_all(t, text, 601, 0, &k);
    ASSERT_EQ(k, k1 + k2);
    ASSERT_MEM(all, a, k1 * sizeof *a);
    ASSERT_MEM(all + k1, b, k2 * sizeof *b);
    free(a);
    free(b);
    free(all);
    ingot_tokenizer_close(t);
}

/* ---- SentencePiece: pair table with score ranks vs lookups by text ------------------------ */
static size_t bin_token(uint8_t *p, float score, const char *s)
{
    int32_t len = (int32_t)strlen(s);
    memcpy(p, &score, 4);
    memcpy(p + 4, &len, 4);
    memcpy(p + 8, s, (size_t)len);
    return 8 + (size_t)len;
}

/* A llama2.c tokenizer.bin over the letters a b c and the space (and the characters of the
 * special tokens, so that every character of every token is a token): every string of 1 to 3
 * of them with a space only in front, scores from a set of four (many ties); `extra` adds a
 * token of two characters that are not tokens, which turns the pair table off. */
static size_t spm_vocab(uint8_t *b, bool extra)
{
    int32_t maxlen = 16;
    memcpy(b, &maxlen, 4);
    size_t n = 4;
    n += bin_token(b + n, 0, "<unk>");
    n += bin_token(b + n, 0, "\n<s>\n");
    n += bin_token(b + n, 0, "\n</s>\n");
    static const char al[] = "abc";
    n += bin_token(b + n, -10, " ");
    for (int i = 0; i < 10; i++) { /* and the characters of <unk>, <s>, </s> */
        char s[2] = {"abc<>/unks"[i], 0};
        n += bin_token(b + n, -10, s);
    }
    rng = 12345;
    for (int len = 2; len <= 3; len++)
        for (int sp = 0; sp < 2; sp++)
            for (int c = 0; c < 27; c++) {
                if (len == 2 && c >= 9) break;
                char s[5];
                int k = 0;
                if (sp) s[k++] = ' ';
                s[k++] = al[c % 3];
                s[k++] = al[c / 3 % 3];
                if (len == 3) s[k++] = al[c / 9];
                s[k] = 0;
                if (rnd(4) == 0) continue; /* leave some out */
                n += bin_token(b + n, -(float)rnd(4), s);
            }
    if (extra) n += bin_token(b + n, -1, "xy");
    return n;
}

/* SentencePiece words are cut between two ASCII characters no token has side by side. A toy
 * vocabulary where "a," is a token: ",1" and "ba" are cuts, "a," is not. "ba,1" escapes to
 * "\u2581ba,1"; by score "a," (-1) merges first, then "\u2581b" (-2): \u2581b, a, "1". */
TEST(test_spm_cuts_where_no_token_joins)
{
    uint8_t b[512];
    int32_t maxlen = 16;
    memcpy(b, &maxlen, 4);
    size_t n = 4;
    static const char *const tok[] = {"<unk>", "\n<s>\n", "\n</s>\n", " ", "a", "b", ",", "1",
                                      "a,", " b"};
    static const float sc[] = {0, 0, 0, -10, -10, -10, -10, -10, -1, -2};
    for (int i = 0; i < 10; i++) n += bin_token(b + n, sc[i], tok[i]);
    ingot_tokenizer *t = NULL;
    ASSERT_OK(ingot_tokenizer_open_buffer(b, n, NULL, &t, NULL));
    ASSERT_TRUE(t->spm_split);
    ASSERT_TRUE(t->spm_bar[','][0] >> '1' & 1);               /* cut */
    ASSERT_TRUE(t->spm_bar['b'][1] >> ('a' - 64) & 1);        /* cut */
    ASSERT_TRUE(!(t->spm_bar['a'][0] >> ',' & 1));            /* "a," is a token */
    /* the scan's table (a | b << 8): the cuts of spm_bar, and every 0xE2 (a mark may start) */
    size_t stop_wrong = 0;
    for (unsigned x = 0; x < 256; x++)
        for (unsigned y = 0; y < 256; y++) {
            unsigned v = x | y << 8;
            bool want = y == 0xE2 ||
                        (x < 128 && y < 128 && (t->spm_bar[x][y >> 6] >> (y & 63) & 1));
            stop_wrong += (bool)(t->spm_stop[v >> 6] >> (v & 63) & 1) != want;
        }
    ASSERT_EQ(stop_wrong, 0);
    int32_t ids[16];
    size_t k = 0;
    ASSERT_OK(ingot_tokenizer_encode(t, "ba,1", 4, 0, ids, 16, &k, NULL, 0, NULL));
    ASSERT_EQ(k, 3);
    ASSERT_EQ(ids[0], 9); /* \u2581b */
    ASSERT_EQ(ids[1], 8); /* a, */
    ASSERT_EQ(ids[2], 7); /* 1 */
    ingot_tokenizer_close(t);
}

/* Encodes 3000 texts of 1..max_parts parts drawn from `parts` with a and with b (flags 1):
 * *differ counts the texts whose ids differ, *long_texts those of more than 8 ids. */
static void encode_both(const ingot_tokenizer *a, const ingot_tokenizer *b,
                        const char *const *parts, size_t n_parts, size_t max_parts,
                        size_t *differ, size_t *long_texts)
{
    static int32_t ia[4096], ib[4096];
    for (int round = 0; round < 3000; round++) {
        char s[600];
        size_t n = 0, parts_n = 1 + rnd((unsigned)max_parts);
        for (size_t i = 0; i < parts_n; i++) {
            const char *p = parts[rnd((unsigned)n_parts)];
            memcpy(s + n, p, strlen(p));
            n += strlen(p);
        }
        size_t ka = 0, kb = 0;
        ASSERT_OK(ingot_tokenizer_encode(a, s, n, 1, ia, 4096, &ka, NULL, 0, NULL));
        ASSERT_OK(ingot_tokenizer_encode(b, s, n, 1, ib, 4096, &kb, NULL, 0, NULL));
        *differ += ka != kb || memcmp(ia, ib, ka * sizeof ia[0]) != 0;
        *long_texts += ka > 8;
    }
}

/* The same cuts on Llama 2's vocabulary against no cuts at all, over text with punctuation,
 * digits, code and other scripts. */
TEST(test_spm_cuts_match_whole_words)
{
    ingot_tokenizer *t = NULL;
    ASSERT_OK(ingot_tokenizer_open(FIX "/tokenizers/llama.cpp/ggml-vocab-llama-spm.gguf", NULL,
                                   &t, NULL));
    ingot_tokenizer bare = *t;
    memset(bare.spm_bar, 0, sizeof bare.spm_bar);
    memset(bare.spm_stop, 0, sizeof bare.spm_stop); /* the scan stops only where 0xE2 is */
    for (unsigned x = 0; x < 256; x++) bare.spm_stop[(x | 0xE2u << 8) >> 6] |= 1ull << (x & 63);
    static const char *const parts[] = {"a", "the", "ing", ",", ".", "(", ")", "_", "->", "0",
                                        "42", "x", "\"", "'", " ", " ", "  ", "\n", "\u00e9",
                                        "\u4e2d\u6587", "{", "}", ";", "::", "Z", "#", "-", "/*"};
    size_t differ = 0, long_texts = 0;
    encode_both(t, &bare, parts, sizeof parts / sizeof parts[0], 60, &differ, &long_texts);
    CHECK(differ == 0, "%zu of 3000 texts differ with the cuts", differ);
    ASSERT_TRUE(long_texts > 1000);
    ingot_tokenizer_close(t);
}

/* A caller's allocator: every block it hands out is counted (live bytes back to 0 at close). */
static void *count_alloc(void *ctx, size_t n, size_t align)
{
    (void)align;
    *(size_t *)ctx += n;
    return malloc(n);
}
static void count_free(void *ctx, void *p, size_t n)
{
    *(size_t *)ctx -= n;
    free(p);
}

/* With libc's allocator the token and merge hashes of a vocabulary as large as Llama 3's (8 MB
 * each) start at 2 MB boundaries inside their allocations (transparent huge pages on Linux); with
 * a caller's allocator each table is its own allocation. Both encode alike, and every byte the
 * caller's allocator gave is freed. */
TEST(test_big_tables_on_huge_pages)
{
    const char *path = FIX "/tokenizers/llama3/tokenizer.json";
    ingot_tokenizer *t = NULL, *u = NULL;
    ASSERT_OK(ingot_tokenizer_open(path, NULL, &t, NULL));
#if defined(__linux__)
    size_t mn = (size_t)(t->map_mask + 1) * sizeof *t->map;
    size_t sn = (size_t)(t->m_mask + 1) * sizeof *t->mslot;
    ASSERT_TRUE(!t->m8 && t->map_raw != NULL && t->mslot_raw != NULL);
    ASSERT_EQ((uintptr_t)t->map % (2u << 20), 0);
    ASSERT_EQ((uintptr_t)t->mslot % (2u << 20), 0);
    ASSERT_TRUE((uint8_t *)t->map >= (uint8_t *)t->map_raw &&
                (uint8_t *)t->map + mn <= (uint8_t *)t->map_raw + t->map_raw_n);
    ASSERT_TRUE((uint8_t *)t->mslot >= (uint8_t *)t->mslot_raw &&
                (uint8_t *)t->mslot + sn <= (uint8_t *)t->mslot_raw + t->mslot_raw_n);
#endif
    size_t live = 0;
    ingot_allocator al = {count_alloc, count_free, &live};
    ingot_tokenizer_opts op = {.allocator = &al};
    ASSERT_OK(ingot_tokenizer_open(path, &op, &u, NULL));
    ASSERT_TRUE(u->map_raw == NULL && u->mslot_raw == NULL);
    static const char *const parts[] = {"a", " the", " information", "\u4e2d\u6587", "\n", " 123",
                                        " \u0437\u0434\u0440\u0430\u0432", "(){};", "  "};
    size_t differ = 0, long_texts = 0;
    encode_both(t, u, parts, sizeof parts / sizeof parts[0], 60, &differ, &long_texts);
    CHECK(differ == 0, "%zu of 3000 texts differ", differ);
    ASSERT_TRUE(long_texts > 1000);
    ingot_tokenizer_close(t);
    ingot_tokenizer_close(u);
    ASSERT_EQ(live, 0);
}

/* SentencePiece words take the tokens of their two- and three-byte characters from a code point
 * table, and byte-level BPE pieces of one character too (the token where its bytes merge to one,
 * else the merges): every entry is what the token hash (and for byte-level BPE the whole flag)
 * gives for that character's UTF-8, and texts of characters from many scripts, four-byte ones,
 * invalid bytes, overlong and surrogate forms and sequences cut short encode as they do without
 * the table. */
static void char_table_exact(const char *path, size_t min_found)
{
    ingot_tokenizer *t = NULL;
    ASSERT_OK(ingot_tokenizer_open(path, NULL, &t, NULL));
    ASSERT_TRUE(t->cp_tok != NULL);
    size_t wrong = 0, found = 0;
    for (uint32_t cp = 0x80; cp < 0x10000; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        uint8_t u[3];
        size_t l = cp < 0x800 ? 2 : 3;
        if (l == 2) {
            u[0] = (uint8_t)(0xC0 | cp >> 6);
            u[1] = (uint8_t)(0x80 | (cp & 0x3F));
        } else {
            u[0] = (uint8_t)(0xE0 | cp >> 12);
            u[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
            u[2] = (uint8_t)(0x80 | (cp & 0x3F));
        }
        bool whole = true;
        int32_t want = ingot__tok_find_hw(t, u, l, ingot__tok_hash(u, l), &whole);
        if (t->kind == TOK_BPE && !whole) want = -1;
        uint16_t got = t->cp_tok[(size_t)t->cp_blk[cp >> 7] * 128 + (cp & 127)];
        wrong += want >= 0 ? got != (uint16_t)want : got != 0xFFFF;
        found += want >= 0;
    }
    CHECK(wrong == 0, "%zu code points differ from the hash", wrong);
    CHECK(found > min_found, "%zu characters in the table", found);
    ingot_tokenizer bare = *t;
    bare.cp_tok = NULL;
    bare.cp_blk = NULL;
    static const char *const parts[] = {
        "a", " ", "\u00e9", "\u00df", "\u0416", "\u03bb", "\u4e2d", "\u6587", "\u3053",
        "\uac00", "\u0905", "\u0627", "\u2014", "\u201c", "\uff01", "\U0001F600",
        "\U00020000", "\xc3", "\xe4\xb8", "\xe0\x80\x80", "\xed\xa0\x80", "\xc0\xaf",
        "\xff", "\x80", "\xef\xbf\xbf", "\xc2\x80", "\xe0\xa0\x80", "\xf4\x90\x80\x80",
        "\xe0\x83\xa9" /* \u00e9, overlong */, "\xed\x9f\xbf", "\xc1\xa9",
        ",", "1"};
    size_t differ = 0, long_texts = 0;
    encode_both(t, &bare, parts, sizeof parts / sizeof parts[0], 80, &differ, &long_texts);
    CHECK(differ == 0, "%zu of 3000 texts differ with the code point table", differ);
    ASSERT_TRUE(long_texts > 1000);
    ingot_tokenizer_close(t);
}

TEST(test_char_table_matches_hash_spm)
{
    char_table_exact(FIX "/tokenizers/llama.cpp/ggml-vocab-llama-spm.gguf", 1000);
}

TEST(test_char_table_matches_hash_gpt2)
{
    char_table_exact(FIX "/tokenizers/llama.cpp/ggml-vocab-gpt-2.gguf", 100);
}

/* Spaces are escaped eight bytes a step: texts of 0 to 40 bytes with spaces anywhere (runs,
 * either end, each place in an 8-byte step) come back from decode(encode(s)), and their ids are
 * those of the same text with each space replaced by U+2581 in the input. */
TEST(test_spm_escape_every_space_position)
{
    ingot_tokenizer *t = NULL;
    ASSERT_OK(ingot_tokenizer_open(FIX "/tokenizers/llama.cpp/ggml-vocab-llama-spm.gguf", NULL,
                                   &t, NULL));
    size_t bad = 0;
    for (int round = 0; round < 4000; round++) {
        char s[48], u[160], back[64];
        size_t n = (size_t)rnd(41), un = 0;
        for (size_t i = 0; i < n; i++) {
            s[i] = rnd(3) ? "abcde.,x"[rnd(8)] : ' ';
            if (s[i] == ' ') {
                memcpy(u + un, "\xe2\x96\x81", 3);
                un += 3;
            } else {
                u[un++] = s[i];
            }
        }
        int32_t a[200], b[200];
        size_t ka = 0, kb = 0, bl = 0;
        ASSERT_OK(ingot_tokenizer_encode(t, s, n, 0, a, 200, &ka, NULL, 0, NULL));
        ASSERT_OK(ingot_tokenizer_encode(t, u, un, 0, b, 200, &kb, NULL, 0, NULL));
        ASSERT_OK(ingot_tokenizer_decode(t, a, ka, 0, back, sizeof back, &bl, NULL));
        bad += ka != kb || memcmp(a, b, ka * sizeof a[0]) != 0 || bl != n || memcmp(back, s, n);
    }
    CHECK(bad == 0, "%zu of 4000 texts differ", bad);
    ingot_tokenizer_close(t);
}

/* A SentencePiece vocabulary of 8000 tokens of 4095 and 4096 bytes (every other one "a" and the
 * one before it, so the pair table has pairs): the pair table and the whole-token check cost the
 * square of a token's length (8000 x 4096 splits hashing up to 4096 bytes, then merging each
 * token's 4096 characters: 57 s here); past TOK_OPEN_BUDGET the table is not built and the check
 * stops, so it opens in a fraction of a second, and encodes. */
TEST(test_spm_long_tokens_open_fast)
{
    enum { NLONG = 8000, LEN = 4096 };
    size_t cap = 4 + 32 * 24 + (size_t)NLONG * (8 + LEN);
    uint8_t *b = malloc(cap);
    char *tok = malloc(LEN + 1);
    int32_t maxlen = LEN;
    memcpy(b, &maxlen, 4);
    size_t n = 4;
    n += bin_token(b + n, 0, "<unk>");
    n += bin_token(b + n, 0, "\n<s>\n");
    n += bin_token(b + n, 0, "\n</s>\n");
    for (int c = 0; c < 15; c++) { /* a..h and the characters of the special tokens: every
                                     * character of every token a token (the pair table's rule) */
        char s1[2] = {"abcdefgh<>/unks"[c], 0};
        n += bin_token(b + n, -1, s1);
    }
    n += bin_token(b + n, -1, "\n");
    for (int i = 0; i < NLONG; i += 2) { /* a token of 4095 bytes, and "a" + it */
        tok[0] = 'a';
        for (int k = 1; k < LEN; k++) tok[k] = (char)('a' + rnd(8));
        tok[LEN] = 0;
        n += bin_token(b + n, -3, tok + 1);
        n += bin_token(b + n, -2, tok);
    }
    clock_t c0 = clock();
    ingot_tokenizer *t = NULL;
    ASSERT_OK(ingot_tokenizer_open_buffer(b, n, NULL, &t, NULL));
    double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
    CHECK(secs < 5, "open took %.1f s", secs);
    ASSERT_TRUE(!t->spm_pairs);
    int32_t ids[LEN + 8];
    size_t k = 0, bl = 0;
    ASSERT_OK(ingot_tokenizer_encode(t, tok, 300, 0, ids, LEN + 8, &k, NULL, 0, NULL));
    ASSERT_EQ(k, 303); /* <unk> for each byte of the leading U+2581 (no token), the letters */
    ASSERT_EQ(ids[0], 0);
    char back[400];
    ASSERT_OK(ingot_tokenizer_decode(t, ids, k, 0, back, sizeof back, &bl, NULL));
    ASSERT_EQ(bl, 300);
    ASSERT_MEM(back, tok, 300);
    ingot_tokenizer_close(t);
    free(tok);
    free(b);
}

TEST(test_spm_pair_table_matches_text_lookups)
{
    uint8_t ba[4096], bb[4096];
    size_t na = spm_vocab(ba, false), nb = spm_vocab(bb, true);
    ingot_tokenizer *a = NULL, *b = NULL;
    ASSERT_OK(ingot_tokenizer_open_buffer(ba, na, NULL, &a, NULL));
    ASSERT_OK(ingot_tokenizer_open_buffer(bb, nb, NULL, &b, NULL));
    ASSERT_TRUE(a->spm_pairs);
    ASSERT_TRUE(!b->spm_pairs);
    int32_t ia[512], ib[512];
    int differ = 0;
    for (int round = 0; round < 500; round++) {
        char s[160];
        size_t n = 1 + rnd(round < 250 ? 30 : 150); /* words up to 150 symbols: scan and heap */
        for (size_t i = 0; i < n; i++) s[i] = "abc  abcabc"[rnd(round % 2 ? 11 : 3)];
        size_t ka = 0, kb = 0;
        ASSERT_OK(ingot_tokenizer_encode(a, s, n, 1, ia, 512, &ka, NULL, 0, NULL));
        ASSERT_OK(ingot_tokenizer_encode(b, s, n, 1, ib, 512, &kb, NULL, 0, NULL));
        ASSERT_EQ(ka, kb);
        for (size_t i = 0; i < ka; i++) {
            ASSERT_EQ(ia[i], ib[i]);
            differ += ia[i] > 13; /* merged tokens were made */
        }
    }
    ASSERT_TRUE(differ > 1000);
    ingot_tokenizer_close(a);
    ingot_tokenizer_close(b);
}

/* An empty token decodes to nothing and must not use up the one leading space SentencePiece
 * decoding strips (the streaming decoder skips it the same way). The committed fuzz_tok_gguf
 * corpus caught decode consuming it after 60c93b0 (decode reading the packed entry). */
TEST(test_empty_token_keeps_the_space_strip)
{
    uint8_t b[256];
    int32_t maxlen = 8;
    memcpy(b, &maxlen, 4);
    size_t n = 4;
    n += bin_token(b + n, 0, "<unk>");
    n += bin_token(b + n, 0, "\n<s>\n");
    n += bin_token(b + n, 0, "\n</s>\n");
    n += bin_token(b + n, 0, "");
    n += bin_token(b + n, -1, " a");
    ingot_tokenizer *t = NULL;
    ASSERT_OK(ingot_tokenizer_open_buffer(b, n, NULL, &t, NULL));
    const int32_t ids[] = {1, 3, 4, 3, 4};
    char out[32], piece[256];
    size_t len = 0;
    ASSERT_OK(ingot_tokenizer_decode(t, ids, 5, 0, out, sizeof out, &len, NULL));
    ASSERT_EQ(len, 3);
    ASSERT_MEM(out, "a a", 3);
    ingot_tokenizer_stream st;
    ingot_tokenizer_stream_init(&st, 0);
    char all[32];
    size_t o = 0, pl = 0;
    for (int i = 0; i < 5; i++) {
        ASSERT_OK(ingot_tokenizer_stream_push(t, &st, ids[i], piece, sizeof piece, &pl));
        memcpy(all + o, piece, pl);
        o += pl;
    }
    ASSERT_EQ(o, len);
    ASSERT_MEM(all, out, len);
    ingot_tokenizer_close(t);
}

RUN_TESTS(T(test_bpe_words_match_naive_merges_gpt2), T(test_bpe_words_match_naive_merges_llama3),
          T(test_pretok_fast_paths_match_general),
          T(test_merge_filter_exact_gpt2), T(test_merge_filter_exact_llama3),
          T(test_merge_filter_exact_spm), T(test_token_filter_exact),
          T(test_token_slot_keys_exact),
          T(test_word_cache_many_fragments),
          T(test_word_cache_long_words), T(test_spm_cuts_where_no_token_joins),
          T(test_spm_cuts_match_whole_words), T(test_char_table_matches_hash_spm),
          T(test_char_table_matches_hash_gpt2), T(test_big_tables_on_huge_pages),
          T(test_spm_escape_every_space_position), T(test_spm_long_tokens_open_fast),
          T(test_spm_pair_table_matches_text_lookups), T(test_empty_token_keeps_the_space_strip))
