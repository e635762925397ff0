/*
 * test_tokenizer_cache.c - the caller's word cache (ingot_tokenizer_cache): encoding through it
 * gives exactly the ids of ingot_tokenizer_encode (counts, statuses, partial writes) on every
 * shared vector file (llama.cpp's, TestPlans.txt, the stories260K golden story), on seeded
 * random and adversarial texts, with every flag, budgets from one entry to megabytes, after
 * clear; a cache is refused by another tokenizer; it allocates through the
 * tokenizer's allocator at creation only. The tokenizer's own word caches (ingot_tokenizer_opts,
 * borrowed by plain encodes): the same ids as a tokenizer without them, from many threads at
 * once, their options, memory and statistics.
 */
#include "harness.h"
#include "files.h"

#define FIX INGOT_FIXTURES
#define LCPP FIX "/tokenizers/llama.cpp/"

/* Without options the tokenizers here keep no word caches of their own, so that the plain
 * encode the caches are compared with is the encoder itself. */
static const ingot_tokenizer_opts no_own = {.word_cache_bytes = INGOT_TOKENIZER_NO_WORD_CACHE};

static ingot_tokenizer *open_tok(const char *path, const ingot_tokenizer_opts *o)
{
    if (!o) o = &no_own;
    ingot_tokenizer *t = NULL;
    ingot_error e;
    if (ingot_tokenizer_open(path, o, &t, &e) != INGOT_OK) {
        char b[300];
        fprintf(stderr, "  open %s: %s\n", path, ingot_error_format(&e, b, sizeof b));
    }
    return t;
}

static const char *const tok_paths[4] = {LCPP "ggml-vocab-gpt-2.gguf",
                                         FIX "/tokenizers/llama3/tokenizer.json",
                                         LCPP "ggml-vocab-llama-spm.gguf",
                                         FIX "/models/stories260K/tok512.bin"};

/* Whether text encodes through cache c exactly as without it, under flags: full buffer, size
 * query (ids NULL) and a buffer one short (RANGE, the same first ids). Reports the first
 * difference. */
static int agree(const ingot_tokenizer *t, ingot_tokenizer_cache *c, const char *s, size_t len,
                 uint32_t flags)
{
    size_t cap = ingot_tokenizer_max_tokens(len);
    int32_t *a = malloc(cap * sizeof *a), *b = malloc(cap * sizeof *b);
    size_t na = 0, nb = 0, nq = 0;
    int ok = 1;
    ingot_status sa = ingot_tokenizer_encode(t, s, len, flags, a, cap, &na, NULL, 0, NULL);
    ingot_status sb = ingot_tokenizer_encode_cached(t, c, s, len, flags, b, cap, &nb, NULL, 0,
                                                    NULL);
    if (sa != sb || na != nb || memcmp(a, b, na * sizeof *a) != 0) ok = 0;
    ingot_status sq = ingot_tokenizer_encode_cached(t, c, s, len, flags, NULL, 0, &nq, NULL, 0,
                                                    NULL);
    if (sq != INGOT_OK || nq != na) ok = 0;
    if (na > 1) { /* one short: RANGE, the first na - 1 ids written */
        for (size_t i = 0; i < na; i++) b[i] = -7;
        sb = ingot_tokenizer_encode_cached(t, c, s, len, flags, b, na - 1, &nb, NULL, 0, NULL);
        if (sb != INGOT_RANGE || nb != na || memcmp(a, b, (na - 1) * sizeof *a) != 0 ||
            b[na - 1] != -7)
            ok = 0;
    }
    if (!ok)
        fprintf(stderr, "  differ (flags %u, %zu bytes: %.*s): plain %d/%zu, cached %d/%zu\n",
                flags, len, (int)(len > 60 ? 60 : len), s, (int)sa, na, (int)sb, nb);
    free(a);
    free(b);
    return ok;
}

static uint64_t hits_of(const ingot_tokenizer_cache *c)
{
    uint64_t h = 0;
    ingot_tokenizer_cache_stats(c, NULL, NULL, &h, NULL);
    return h;
}

static uint64_t words_of(const ingot_tokenizer_cache *c)
{
    uint64_t w = 0;
    ingot_tokenizer_cache_stats(c, &w, NULL, NULL, NULL);
    return w;
}

/* llama.cpp's vector cases of stem through a cache, twice: both passes give the expected ids of
 * the .out file (llama.cpp's), and the second pass finds its words in the cache. */
static void vectors_twice(const char *tok, const char *stem, size_t budget)
{
    ingot_tokenizer *t = open_tok(tok, NULL);
    ASSERT_TRUE(t);
    ingot_tokenizer_cache *c = NULL;
    ASSERT_OK(ingot_tokenizer_cache_new(t, budget, &c, NULL));
    char p[512];
    size_t ni, no;
    snprintf(p, sizeof p, LCPP "%s.inp", stem);
    char *in = test_read_file(p, &ni);
    snprintf(p, sizeof p, LCPP "%s.out", stem);
    char *out = test_read_file(p, &no);
    ASSERT_TRUE(in && out);
    static const char sep[] = "\n__ggml_vocab_test__\n";
    size_t cases = 0, exact = 0;
    uint64_t w2 = 0, h2 = 0;
    for (int pass = 0; pass < 2; pass++) {
        char *s = in, *q = out;
        uint64_t w0 = words_of(c), h0 = hits_of(c);
        for (char *e; (e = strstr(s, sep)) != NULL; s = e + sizeof sep - 1) {
            int32_t want[1024];
            size_t nw = 0;
            char *eol = strchr(q, '\n');
            if (!eol) eol = q + strlen(q);
            for (char *r = q, *end; r < eol && nw < 1024; r = end) {
                long v = strtol(r, &end, 10);
                if (end == r) break;
                want[nw++] = (int32_t)v;
            }
            q = *eol ? eol + 1 : eol;
            size_t len = (size_t)(e - s), cap = ingot_tokenizer_max_tokens(len), n = 0;
            int32_t *ids = malloc(cap * sizeof *ids);
            ASSERT_OK(ingot_tokenizer_encode_cached(t, c, s, len, 0, ids, cap, &n, NULL, 0,
                                                    NULL));
            exact += n == nw && memcmp(ids, want, n * sizeof *ids) == 0;
            cases += pass == 0;
            free(ids);
            CHECK(agree(t, c, s, len, 0), "%s case %zu", stem, cases);
        }
        if (pass == 1) {
            w2 = words_of(c) - w0;
            h2 = hits_of(c) - h0;
        }
    }
    fprintf(stderr, "  %s: %zu/%zu exact twice, second pass %llu of %llu words hit\n", stem,
            exact, 2 * cases, (unsigned long long)h2, (unsigned long long)w2);
    ASSERT_EQ(cases, 46);
    ASSERT_EQ(exact, 2 * cases);
    /* words a cache can hold (short, few ids) all hit the second time; the others (long, many
     * ids) are missed every time */
    ASSERT_TRUE(w2 > 200 && h2 * 10 >= w2 * 9);
    free(in);
    free(out);
    ingot_tokenizer_cache_free(c);
    ingot_tokenizer_close(t);
}

TEST(test_cache_vectors_gpt2) { vectors_twice(tok_paths[0], "ggml-vocab-gpt-2.gguf", 1 << 20); }
TEST(test_cache_vectors_llama3)
{
    vectors_twice(tok_paths[1], "ggml-vocab-llama-bpe.gguf", 1 << 20);
}
TEST(test_cache_vectors_spm)
{
    vectors_twice(tok_paths[2], "ggml-vocab-llama-spm.gguf", 1 << 20);
}

TEST(test_cache_vectors_gpt2_encoder_json)
{
    vectors_twice(FIX "/tokenizers/gpt2", "ggml-vocab-gpt-2.gguf", 1 << 20);
}

/* The stories260K vocabulary (its GGUF and llama2.c's tok512.bin): llama.cpp's SentencePiece
 * inputs and llama2.c's golden story, twice through one cache, with every flag. */
TEST(test_cache_stories260k)
{
    static const char *const srcs[2] = {FIX "/models/stories260K/stories260K.gguf",
                                        FIX "/models/stories260K/tok512.bin"};
    size_t ni, gl;
    char *in = test_read_file(LCPP "ggml-vocab-llama-spm.gguf.inp", &ni);
    char *golden = test_read_file(FIX "/models/stories260K/golden/llama2c_run_t0.0_n200.txt", &gl);
    ASSERT_TRUE(in && golden);
    static const char sep[] = "\n__ggml_vocab_test__\n";
    for (int k = 0; k < 2; k++) {
        ingot_tokenizer *t = open_tok(srcs[k], NULL);
        ASSERT_TRUE(t);
        ingot_tokenizer_cache *c = NULL;
        ASSERT_OK(ingot_tokenizer_cache_new(t, 1 << 16, &c, NULL));
        size_t cases = 0, bad = 0;
        for (int pass = 0; pass < 2; pass++) {
            for (char *s = in, *e; (e = strstr(s, sep)) != NULL; s = e + sizeof sep - 1) {
                cases++;
                for (uint32_t fl = 0; fl < 4; fl++) bad += !agree(t, c, s, (size_t)(e - s), fl);
            }
            for (uint32_t fl = 0; fl < 4; fl++) bad += !agree(t, c, golden, gl, fl);
        }
        CHECK(bad == 0, "%s: %zu differ", srcs[k], bad);
        ASSERT_EQ(cases, 2 * 46);
        ASSERT_TRUE(hits_of(c) > 100);
        ingot_tokenizer_cache_free(c);
        ingot_tokenizer_close(t);
    }
    free(in);
    free(golden);
}

/* GPT-2's r50k_base samples of TestPlans.txt (each line a text), twice through a tiny cache. */
TEST(test_cache_testplans)
{
    ingot_tokenizer *t = open_tok(tok_paths[0], NULL);
    ASSERT_TRUE(t);
    ingot_tokenizer_cache *c = NULL;
    ASSERT_OK(ingot_tokenizer_cache_new(t, 256, &c, NULL));
    size_t n;
    char *tp = test_read_file(FIX "/tokenizers/gpt2/TestPlans.txt", &n);
    ASSERT_TRUE(tp);
    size_t lines = 0, bad = 0;
    for (int pass = 0; pass < 2; pass++)
        for (char *s = tp, *e; s < tp + n; s = e + 1) {
            e = memchr(s, '\n', (size_t)(tp + n - s));
            if (!e) e = tp + n;
            lines++;
            bad += !agree(t, c, s, (size_t)(e - s), 0);
        }
    CHECK(bad == 0, "%zu of %zu lines differ", bad, lines);
    ASSERT_TRUE(lines > 100);
    free(tp);
    ingot_tokenizer_cache_free(c);
    ingot_tokenizer_close(t);
}

/* ---- seeded random and adversarial texts ------------------------------------------------- */
static uint64_t rng = 0x2545F4914F6CDD1Dull;
static unsigned rnd(unsigned n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng >> 33) % n;
}

/* A text of pieces: common words (repeated, so the cache hits), long words past the key bound,
 * words of many ids, invalid UTF-8, special tokens' text, whitespace runs, digits, CJK, emoji. */
static size_t gen_text(char *b, size_t cap)
{
    static const char *const w[] = {
        " the", " of", " and", "The", " information", " tokenizer", "ing", " cat", " dog", ".",
        ",", "\n", "\n\n", "  ", "   ", "\t", " 123", "4567890", " \xe4\xb8\xad\xe6\x96\x87",
        "\xf0\x9f\x98\x80", " \xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82", "'s", "'ll",
        " (x)", "->", "==", "<|endoftext|>", "<|begin_of_text|>", "<s>", "</s>", "<unk>",
        "<|eot_id|>", " <s>", "\xff", "\xc3", "\xe2\x96", "\xed\xa0\x80", "\xf4\x90\x80\x80",
        "\xe2\x96\x81", " \xe2\x96\x81x", "_", "a", "Z", " Hello", " world", "!", "?"};
    size_t n = 0, parts = 1 + rnd(40);
    for (size_t k = 0; k < parts && n + 400 < cap; k++) {
        unsigned r = rnd(20);
        if (r == 0) { /* a long word: past the key bound, sometimes past 255 bytes */
            size_t l = 20 + rnd(r == 0 && rnd(4) == 0 ? 300 : 40);
            b[n++] = ' ';
            for (size_t i = 0; i < l; i++) b[n++] = (char)('a' + rnd(26));
        } else if (r == 1) { /* many ids: rare letters and symbols mixed */
            static const char z[] = "qxzjvkQXZJ~^`|";
            size_t l = 4 + rnd(24);
            for (size_t i = 0; i < l; i++) b[n++] = z[rnd(sizeof z - 1)];
        } else if (r == 2) { /* random bytes */
            size_t l = 1 + rnd(12);
            for (size_t i = 0; i < l; i++) b[n++] = (char)rnd(256);
        } else {
            const char *p = w[rnd(sizeof w / sizeof w[0])];
            size_t l = strlen(p);
            memcpy(b + n, p, l);
            n += l;
        }
    }
    return n;
}

/* Every tokenizer, budgets of one entry to a megabyte, every flag: 600 texts per tokenizer and
 * budget through one cache (so it holds what earlier texts left), each twice; cleared now and
 * then. */
TEST(test_cache_random_texts)
{
    static const size_t budgets[] = {0, 64, 200, 4096, 1 << 20};
    char *buf = malloc(1 << 16);
    size_t bad = 0, texts = 0;
    for (int k = 0; k < 4; k++) {
        ingot_tokenizer *t = open_tok(tok_paths[k], NULL);
        ASSERT_TRUE(t);
        for (size_t bi = 0; bi < sizeof budgets / sizeof budgets[0]; bi++) {
            ingot_tokenizer_cache *c = NULL;
            ASSERT_OK(ingot_tokenizer_cache_new(t, budgets[bi], &c, NULL));
            for (int i = 0; i < 600; i++) {
                size_t n = gen_text(buf, 1 << 16);
                uint32_t fl = (uint32_t)rnd(4);
                for (int twice = 0; twice < 2; twice++) bad += !agree(t, c, buf, n, fl);
                texts++;
                if (rnd(50) == 0) ingot_tokenizer_cache_clear(c);
            }
            if (budgets[bi] >= 4096) /* (one or two entries may hit never) */
                CHECK(hits_of(c) > 0, "%s, budget %zu: no hits", tok_paths[k], budgets[bi]);
            if (budgets[bi] == 1 << 20)
                fprintf(stderr, "  %s: %llu hits of %llu words\n", tok_paths[k],
                        (unsigned long long)hits_of(c), (unsigned long long)words_of(c));
            ingot_tokenizer_cache_free(c);
        }
        ingot_tokenizer_close(t);
    }
    free(buf);
    CHECK(bad == 0, "%zu of %zu texts differ", bad, 2 * texts);
}

/* Many distinct short words through a tiny cache: each lookup finds another word's entry (same
 * slot, same length, other bytes), which must not be taken for a hit. */
TEST(test_cache_collisions)
{
    for (int k = 0; k < 4; k++) {
        ingot_tokenizer *t = open_tok(tok_paths[k], NULL);
        ASSERT_TRUE(t);
        ingot_tokenizer_cache *c = NULL;
        ASSERT_OK(ingot_tokenizer_cache_new(t, 128, &c, NULL)); /* two entries */
        char text[8192];
        size_t bad = 0;
        for (int i = 0; i < 300; i++) {
            size_t n = 0;
            for (int wds = 0; wds < 200; wds++) { /* " xy" with random letters: equal lengths */
                text[n++] = ' ';
                text[n++] = (char)('a' + rnd(26));
                text[n++] = (char)('a' + rnd(26));
                text[n++] = (char)('a' + rnd(26));
            }
            bad += !agree(t, c, text, n, 0);
        }
        CHECK(bad == 0, "%s: %zu of 300 texts differ", tok_paths[k], bad);
        ingot_tokenizer_cache_free(c);
        ingot_tokenizer_close(t);
    }
}

/* clear empties the table and the counts: after it, a text finds what a new cache finds. */
TEST(test_cache_clear)
{
    ingot_tokenizer *t = open_tok(tok_paths[1], NULL);
    ASSERT_TRUE(t);
    ingot_tokenizer_cache *c = NULL, *fresh = NULL;
    ASSERT_OK(ingot_tokenizer_cache_new(t, 65536, &c, NULL));
    ASSERT_OK(ingot_tokenizer_cache_new(t, 65536, &fresh, NULL));
    static const char s[] = "the cat and the dog and the cat, information about the tokenizer";
    int32_t ids[256];
    size_t n = 0;
    ASSERT_OK(ingot_tokenizer_encode_cached(t, c, s, sizeof s - 1, 0, ids, 256, &n, NULL, 0,
                                            NULL));
    ASSERT_OK(ingot_tokenizer_encode_cached(t, c, s, sizeof s - 1, 0, ids, 256, &n, NULL, 0,
                                            NULL));
    uint64_t w, by, h, hb;
    ingot_tokenizer_cache_stats(c, &w, &by, &h, &hb);
    ASSERT_TRUE(h > 8 && hb > h); /* the second time every word hit */
    ingot_tokenizer_cache_clear(c);
    ingot_tokenizer_cache_stats(c, &w, &by, &h, &hb);
    ASSERT_U64(w + by + h + hb, 0);
    ASSERT_TRUE(agree(t, c, s, sizeof s - 1, 0));
    ASSERT_TRUE(agree(t, fresh, s, sizeof s - 1, 0));
    uint64_t w2, h2;
    ingot_tokenizer_cache_stats(c, &w, NULL, &h, NULL);
    ingot_tokenizer_cache_stats(fresh, &w2, NULL, &h2, NULL);
    ASSERT_U64(w, w2);
    ASSERT_U64(h, h2);
    ingot_tokenizer_cache_clear(NULL); /* no-ops */
    ingot_tokenizer_cache_free(NULL);
    ingot_tokenizer_cache_stats(NULL, &w, NULL, NULL, NULL);
    ASSERT_U64(w, 0);
    ingot_tokenizer_cache_free(c);
    ingot_tokenizer_cache_free(fresh);
    ingot_tokenizer_close(t);
}

/* A cache belongs to one tokenizer: another refuses it (MISUSE, nothing written); NULL is the
 * plain encode; bad arguments to cache_new. */
TEST(test_cache_misuse)
{
    ingot_tokenizer *a = open_tok(tok_paths[0], NULL), *b = open_tok(tok_paths[0], NULL);
    ASSERT_TRUE(a && b);
    ingot_tokenizer_cache *c = NULL;
    ingot_error e;
    ASSERT_OK(ingot_tokenizer_cache_new(a, 4096, &c, NULL));
    int32_t ids[16] = {0};
    size_t n = 99;
    ASSERT_ST(ingot_tokenizer_encode_cached(b, c, "hello", 5, 0, ids, 16, &n, NULL, 0, &e),
              INGOT_MISUSE);
    ASSERT_U64(n, 0);
    ASSERT_TRUE(strstr(e.msg, "another tokenizer") != NULL);
    ASSERT_OK(ingot_tokenizer_encode_cached(b, NULL, "hello", 5, 0, ids, 16, &n, NULL, 0, &e));
    ASSERT_U64(n, 1);
    ASSERT_EQ(ids[0], 31373); /* "hello" in GPT-2 */
    ASSERT_ST(ingot_tokenizer_encode_cached(a, c, NULL, 5, 0, ids, 16, &n, NULL, 0, NULL),
              INGOT_MISUSE);
    ASSERT_ST(ingot_tokenizer_encode_cached(a, c, "hello", 5, 8, ids, 16, &n, NULL, 0, NULL),
              INGOT_MISUSE); /* unknown flag */
    ingot_tokenizer_cache *d = (ingot_tokenizer_cache *)&n;
    ASSERT_ST(ingot_tokenizer_cache_new(NULL, 4096, &d, &e), INGOT_MISUSE);
    ASSERT_TRUE(d == NULL);
    ASSERT_ST(ingot_tokenizer_cache_new(a, 4096, NULL, &e), INGOT_MISUSE);
    ASSERT_ST(ingot_tokenizer_cache_new(a, ((size_t)1 << 30) + 1, &d, &e), INGOT_LIMIT);
    ASSERT_TRUE(d == NULL);
    ingot_tokenizer_cache_free(c);
    ingot_tokenizer_close(a);
    ingot_tokenizer_close(b);
}

/* The budget is allocated at creation, through the tokenizer's allocator (the largest power of
 * two of 64-byte entries within it, plus a header); encoding with scratch allocates nothing; free
 * returns every byte. bpe-fallback (no word split) encodes alike with a cache. */
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

TEST(test_cache_memory)
{
    size_t live = 0;
    ingot_allocator al = {count_alloc, count_free, &live};
    ingot_tokenizer_opts op = {.allocator = &al,
                               .word_cache_bytes = INGOT_TOKENIZER_NO_WORD_CACHE};
    ingot_tokenizer *t = open_tok(tok_paths[0], &op);
    ASSERT_TRUE(t);
    size_t base = live;
    ingot_tokenizer_cache *c = NULL;
    ASSERT_OK(ingot_tokenizer_cache_new(t, 1000000, &c, NULL));
    size_t got = live - base;
    ASSERT_TRUE(got >= 524288 && got <= 524288 + 512); /* 8192 entries of 64 bytes */
    static const char s[] = "Hello world, hello world! The cat sat on the mat.";
    size_t ss = ingot_tokenizer_scratch_size(t, sizeof s - 1);
    void *scratch = malloc(ss);
    int32_t ids[128];
    size_t n = 0;
    for (int i = 0; i < 3; i++)
        ASSERT_OK(ingot_tokenizer_encode_cached(t, c, s, sizeof s - 1, INGOT_ENCODE_ADD_SPECIAL,
                                                ids, 128, &n, scratch, ss, NULL));
    ASSERT_U64(live - base, got);
    ASSERT_TRUE(agree(t, c, s, sizeof s - 1, 0));
    ingot_tokenizer_cache *one = NULL;
    ASSERT_OK(ingot_tokenizer_cache_new(t, 0, &one, NULL)); /* at least one entry */
    ASSERT_TRUE(agree(t, one, s, sizeof s - 1, 0));
    ASSERT_TRUE(agree(t, one, s, sizeof s - 1, 0));
    ingot_tokenizer_cache_free(one);
    ingot_tokenizer_cache_free(c);
    ASSERT_U64(live, base);
    free(scratch);
    ingot_tokenizer_close(t);
    ASSERT_U64(live, 0);

    static const char fb[] = "{\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,\"vocab\":{"
                             "\"<unk>\":0,\"a\":1,\"b\":2,\"ab\":3,\"\\u2581\":4},"
                             "\"merges\":[\"a b\"]}}";
    ASSERT_OK(ingot_tokenizer_open_buffer(fb, strlen(fb), NULL, &t, NULL));
    ASSERT_STR(ingot_tokenizer_kind(t), "bpe-fallback");
    ASSERT_OK(ingot_tokenizer_cache_new(t, 4096, &c, NULL));
    ASSERT_TRUE(agree(t, c, "ab ab ba", 8, 0));
    ASSERT_TRUE(agree(t, c, "ab ab ba", 8, INGOT_ENCODE_ADD_SPECIAL));
    ingot_tokenizer_cache_free(c);
    ingot_tokenizer_close(t);
}

/* ---- the tokenizer's own word caches --------------------------------------------------- */

/* The same text through own (a tokenizer with its own word caches) and ref (the same vocabulary
 * without): equal statuses, counts and ids; the size query; one id short (RANGE, the first ids
 * written). */
static int agree_own(const ingot_tokenizer *own, const ingot_tokenizer *ref, const char *s,
                     size_t len, uint32_t flags)
{
    size_t cap = ingot_tokenizer_max_tokens(len);
    int32_t *a = malloc(cap * sizeof *a), *b = malloc(cap * sizeof *b);
    size_t na = 0, nb = 0, nq = 0;
    int ok = 1;
    ingot_status sa = ingot_tokenizer_encode(ref, s, len, flags, a, cap, &na, NULL, 0, NULL);
    ingot_status sb = ingot_tokenizer_encode(own, s, len, flags, b, cap, &nb, NULL, 0, NULL);
    if (sa != sb || na != nb || memcmp(a, b, na * sizeof *a) != 0) ok = 0;
    if (ingot_tokenizer_encode(own, s, len, flags, NULL, 0, &nq, NULL, 0, NULL) != INGOT_OK ||
        nq != na)
        ok = 0;
    if (na > 1) {
        for (size_t i = 0; i < na; i++) b[i] = -7;
        sb = ingot_tokenizer_encode(own, s, len, flags, b, na - 1, &nb, NULL, 0, NULL);
        if (sb != INGOT_RANGE || nb != na || memcmp(a, b, (na - 1) * sizeof *a) != 0 ||
            b[na - 1] != -7)
            ok = 0;
    }
    if (!ok)
        fprintf(stderr, "  own caches differ (flags %u, %zu bytes: %.*s)\n", flags, len,
                (int)(len > 60 ? 60 : len), s);
    free(a);
    free(b);
    return ok;
}

static uint64_t own_stat(const ingot_tokenizer *t, int which)
{
    uint64_t v[4];
    ingot_tokenizer_word_cache_stats(t, &v[0], &v[1], &v[2], &v[3]);
    return v[which];
}

/* Every tokenizer, its own caches at the default size, one entry (every word collides) and 4 KB,
 * one cache or the default two: 300 seeded random texts each, each twice, every flag, the same as
 * without caches; the shared vector inputs likewise. */
TEST(test_own_caches_agree)
{
    static const size_t budgets[] = {0, 64, 4096};
    char *buf = malloc(1 << 16);
    size_t bad = 0, texts = 0;
    for (int k = 0; k < 4; k++) {
        ingot_tokenizer *ref = open_tok(tok_paths[k], NULL);
        ASSERT_TRUE(ref);
        for (size_t bi = 0; bi < sizeof budgets / sizeof budgets[0]; bi++) {
            ingot_tokenizer_opts o = {.word_cache_bytes = budgets[bi],
                                      .word_caches = bi == 1 ? 1u : 0u};
            ingot_tokenizer *own = open_tok(tok_paths[k], &o);
            ASSERT_TRUE(own);
            for (int i = 0; i < 300; i++) {
                size_t n = gen_text(buf, 1 << 16);
                uint32_t fl = (uint32_t)rnd(4);
                for (int twice = 0; twice < 2; twice++) bad += !agree_own(own, ref, buf, n, fl);
                texts++;
            }
            static const char *const stems[] = {"ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-bpe.gguf",
                                                "ggml-vocab-llama-spm.gguf"};
            char p[512];
            snprintf(p, sizeof p, LCPP "%s.inp", stems[k < 3 ? k : 2]);
            size_t ni = 0;
            char *in = test_read_file(p, &ni);
            ASSERT_TRUE(in);
            for (int twice = 0; twice < 2; twice++) bad += !agree_own(own, ref, in, ni, 0);
            free(in);
            if (budgets[bi] != 64)
                CHECK(own_stat(own, 2) > 0, "%s, budget %zu: no hits", tok_paths[k],
                      budgets[bi]);
            ingot_tokenizer_close(own);
        }
        ASSERT_U64(own_stat(ref, 0), 0); /* no caches: nothing counted */
        ingot_tokenizer_close(ref);
    }
    free(buf);
    CHECK(bad == 0, "%zu of %zu texts differ", bad, 2 * texts);
}

#include <pthread.h>

typedef struct own_par {
    const ingot_tokenizer *t;
    const char *buf;
    const size_t *off, *len, *woff, *nw;
    const int32_t *want;
    size_t k, step;
    int bad;
} own_par;

static void *own_run(void *arg)
{
    own_par *p = arg;
    int32_t *ids = malloc(ingot_tokenizer_max_tokens(4096) * sizeof *ids);
    for (int rep = 0; rep < 25; rep++)
        for (size_t j = 0; j < p->k; j++) {
            size_t i = (j * p->step + (size_t)rep) % p->k, n = 0;
            if (ingot_tokenizer_encode(p->t, p->buf + p->off[i], p->len[i], 0, ids,
                                       ingot_tokenizer_max_tokens(4096), &n, NULL, 0,
                                       NULL) != INGOT_OK ||
                n != p->nw[i] || memcmp(ids, p->want + p->woff[i], n * sizeof *ids) != 0)
                p->bad++;
        }
    free(ids);
    return NULL;
}

/* Six threads encoding 64 texts in six orders with one tokenizer whose two word caches they
 * take in turn (four at a time go without): every result the ids of a tokenizer without caches. */
TEST(test_own_caches_threads)
{
    for (int k = 0; k < 3; k++) {
        ingot_tokenizer *ref = open_tok(tok_paths[k], NULL);
        ingot_tokenizer *own = open_tok(tok_paths[k], &(ingot_tokenizer_opts){0});
        ASSERT_TRUE(ref && own);
        enum { K = 64 };
        char *buf = malloc(K * 4096);
        size_t off[K], len[K], woff[K], nw[K], total = 0, pos = 0;
        int32_t *want = malloc(K * ingot_tokenizer_max_tokens(4096) * sizeof *want);
        for (size_t i = 0; i < K; i++) {
            off[i] = pos;
            len[i] = gen_text(buf + pos, 4096);
            pos += len[i];
            woff[i] = total;
            ASSERT_OK(ingot_tokenizer_encode(ref, buf + off[i], len[i], 0, want + total,
                                             ingot_tokenizer_max_tokens(4096), &nw[i], NULL, 0,
                                             NULL));
            total += nw[i];
        }
        own_par ps[6];
        pthread_t th[6];
        static const size_t steps[6] = {1, 3, 5, 7, 9, 11};
        for (int i = 0; i < 6; i++) {
            ps[i] = (own_par){own, buf, off, len, woff, nw, want, K, steps[i], 0};
            ASSERT_EQ(pthread_create(&th[i], NULL, own_run, &ps[i]), 0);
        }
        int bad = 0;
        for (int i = 0; i < 6; i++) {
            pthread_join(th[i], NULL);
            bad += ps[i].bad;
        }
        CHECK(bad == 0, "%s: %d of %d encodes differ", tok_paths[k], bad, 6 * 25 * K);
        CHECK(own_stat(own, 2) > 0, "%s: the caches were never used", tok_paths[k]);
        free(buf);
        free(want);
        ingot_tokenizer_close(own);
        ingot_tokenizer_close(ref);
    }
}

/* The options: what open reserves (through the tokenizer's allocator, all of it returned by
 * close), the limits, a cache given back after each encode, none for bpe-fallback. */
TEST(test_own_caches_options)
{
    size_t live = 0;
    ingot_allocator al = {count_alloc, count_free, &live};
    ingot_tokenizer_opts none = {.allocator = &al,
                                 .word_cache_bytes = INGOT_TOKENIZER_NO_WORD_CACHE};
    ingot_tokenizer *t = open_tok(tok_paths[0], &none);
    ASSERT_TRUE(t);
    size_t base = live;
    ingot_tokenizer_close(t);
    ASSERT_U64(live, 0);
    /* three caches of 64 KB: 1024 entries each, plus a header and a slot each */
    ingot_tokenizer_opts three = {.allocator = &al, .word_cache_bytes = 65536, .word_caches = 3};
    t = open_tok(tok_paths[0], &three);
    ASSERT_TRUE(t);
    CHECK(live - base >= 3 * 65536 && live - base <= 3 * (65536 + 512 + 64), "%zu bytes",
          live - base);
    ingot_tokenizer_close(t);
    ASSERT_U64(live, 0);
    /* the default: two of 2 MiB */
    ingot_tokenizer_opts dflt = {.allocator = &al};
    t = open_tok(tok_paths[0], &dflt);
    ASSERT_TRUE(t);
    size_t two = (size_t)2 << 21;
    CHECK(live - base >= two && live - base <= two + 2 * (512 + 64), "%zu bytes", live - base);
    /* one encode at a time: the second encode of a text finds every word the first left */
    static const char s[] = "The quick brown fox jumps over the lazy dog, again and again.";
    int32_t ids[128];
    size_t n = 0;
    ASSERT_OK(ingot_tokenizer_encode(t, s, sizeof s - 1, 0, ids, 128, &n, NULL, 0, NULL));
    uint64_t w1 = own_stat(t, 0), h1 = own_stat(t, 2);
    ASSERT_TRUE(w1 > 5 && h1 < w1);
    ASSERT_OK(ingot_tokenizer_encode(t, s, sizeof s - 1, 0, ids, 128, &n, NULL, 0, NULL));
    ASSERT_U64(own_stat(t, 0) - w1, w1);
    ASSERT_U64(own_stat(t, 2) - h1, w1);
    ASSERT_TRUE(own_stat(t, 3) > 0 && own_stat(t, 1) >= own_stat(t, 3));
    ingot_tokenizer_close(t);
    ASSERT_U64(live, 0);
    /* the limits: refused before anything stays allocated */
    ingot_error e;
    ingot_tokenizer_opts many = {.allocator = &al, .word_caches = 65};
    t = (ingot_tokenizer *)&n;
    ASSERT_ST(ingot_tokenizer_open(tok_paths[0], &many, &t, &e), INGOT_LIMIT);
    ASSERT_TRUE(t == NULL && strstr(e.msg, "word caches") != NULL);
    ingot_tokenizer_opts big = {.allocator = &al, .word_cache_bytes = ((size_t)1 << 30) + 1};
    ASSERT_ST(ingot_tokenizer_open(tok_paths[2], &big, &t, &e), INGOT_LIMIT);
    ASSERT_TRUE(t == NULL);
    ASSERT_U64(live, 0);
    ingot_tokenizer_opts max = {.allocator = &al, .word_caches = 64, .word_cache_bytes = 64};
    ASSERT_OK(ingot_tokenizer_open(tok_paths[3], &max, &t, &e));
    ASSERT_TRUE(agree(t, NULL, s, sizeof s - 1, INGOT_ENCODE_ADD_SPECIAL));
    ingot_tokenizer_close(t);
    ASSERT_U64(live, 0);
    /* bpe-fallback encodes without one: nothing reserved, nothing counted */
    static const char fb[] = "{\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,\"vocab\":{"
                             "\"<unk>\":0,\"a\":1,\"b\":2,\"ab\":3,\"\\u2581\":4},"
                             "\"merges\":[\"a b\"]}}";
    ASSERT_OK(ingot_tokenizer_open_buffer(fb, strlen(fb), &none, &t, NULL));
    size_t fb_none = live;
    ingot_tokenizer_close(t);
    ASSERT_OK(ingot_tokenizer_open_buffer(fb, strlen(fb), &dflt, &t, NULL));
    ASSERT_U64(live, fb_none);
    ASSERT_OK(ingot_tokenizer_encode(t, "ab ab", 5, 0, ids, 128, &n, NULL, 0, NULL));
    ASSERT_U64(own_stat(t, 0), 0);
    ingot_tokenizer_close(t);
    ASSERT_U64(live, 0);
    ingot_tokenizer_word_cache_stats(NULL, &w1, NULL, NULL, NULL);
    ASSERT_U64(w1, 0);
}

RUN_TESTS(T(test_cache_vectors_gpt2), T(test_cache_vectors_llama3), T(test_cache_vectors_spm),
          T(test_cache_vectors_gpt2_encoder_json), T(test_cache_stories260k),
          T(test_cache_testplans), T(test_cache_random_texts), T(test_cache_collisions),
          T(test_cache_clear), T(test_cache_misuse), T(test_cache_memory),
          T(test_own_caches_agree), T(test_own_caches_threads), T(test_own_caches_options))
