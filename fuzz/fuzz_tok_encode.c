/*
 * fuzz_tok_encode.c - libFuzzer target for encoding arbitrary bytes with the real vocabularies
 * of ../shared/fixtures (GPT-2 and Llama 2 SentencePiece GGUFs, Llama 3 tokenizer.json,
 * stories260K tok512.bin), opened once: the first input byte picks the vocabulary and the flags,
 * the rest is the text. Ids stay in the vocabulary, size queries agree, the streaming decoder
 * emits valid UTF-8 only, and byte-level BPE gives decode(encode(s)) == s for every input.
 * The tokenizers keep word caches of their own (two of 8 KB, kept across inputs, so they hold
 * earlier inputs' words and collide often); each input is also encoded twice through them and
 * twice through a caller's 4 KB word cache: the ids, count and status must be those of the same
 * vocabulary opened without word caches.
 */
#include "tok_exercise.h"

#ifndef INGOT_FIXTURES
#define INGOT_FIXTURES "../shared/fixtures"
#endif

static ingot_tokenizer *toks[4], *plain[4];
static ingot_tokenizer_cache *caches[4];

static void open_all(void)
{
    static const char *const paths[4] = {
        INGOT_FIXTURES "/tokenizers/llama.cpp/ggml-vocab-gpt-2.gguf",
        INGOT_FIXTURES "/tokenizers/llama.cpp/ggml-vocab-llama-spm.gguf",
        INGOT_FIXTURES "/tokenizers/llama3/tokenizer.json",
        INGOT_FIXTURES "/models/stories260K/tok512.bin"};
    const ingot_tokenizer_opts own = {.word_cache_bytes = 8192};
    const ingot_tokenizer_opts none = {.word_cache_bytes = INGOT_TOKENIZER_NO_WORD_CACHE};
    for (int i = 0; i < 4; i++) {
        ingot_error e;
        if (ingot_tokenizer_open(paths[i], &own, &toks[i], &e) != INGOT_OK ||
            ingot_tokenizer_open(paths[i], &none, &plain[i], &e) != INGOT_OK) {
            char b[300];
            fprintf(stderr, "fuzz_tok_encode: %s: %s\n", paths[i],
                    ingot_error_format(&e, b, sizeof b));
            abort();
        }
        FZ_ST(ingot_tokenizer_cache_new(toks[i], 4096, &caches[i], NULL), INGOT_OK);
    }
}

/* The encode without word caches, two through the tokenizer's own and two through the caller's
 * agree (status, count, ids). */
static void cached_check(int k, const uint8_t *s, size_t n, uint32_t fl)
{
    const ingot_tokenizer *t = toks[k];
    size_t cap = ingot_tokenizer_max_tokens(n), na = 0, nb = 0;
    int32_t *a = malloc(cap * sizeof *a), *b = malloc(cap * sizeof *b);
    FZ_CHECK(a && b);
    ingot_status sa =
        ingot_tokenizer_encode(plain[k], (const char *)s, n, fl, a, cap, &na, NULL, 0, NULL);
    for (int run = 0; run < 4; run++) {
        ingot_status sb =
            run < 2 ? ingot_tokenizer_encode(t, (const char *)s, n, fl, b, cap, &nb, NULL, 0, NULL)
                    : ingot_tokenizer_encode_cached(t, caches[k], (const char *)s, n, fl, b, cap,
                                                    &nb, NULL, 0, NULL);
        FZ_ST(sb, sa);
        FZ_CHECK(nb == na);
        FZ_CHECK(sa != INGOT_OK || memcmp(a, b, na * sizeof *a) == 0);
    }
    free(a);
    free(b);
}

/* libFuzzer calls this once before the first input: the vocabularies (seconds under ASan on a
 * busy machine) are not counted against the first input's timeout. The replay driver does not
 * call it; the first input opens them there. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    open_all();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    if (!toks[0]) open_all();
    if (n < 1) return 0;
    const ingot_tokenizer *t = toks[d[0] & 3];
    tok_encode_check(t, d + 1, n - 1, (d[0] >> 2) & 3);
    cached_check(d[0] & 3, d + 1, n - 1, (d[0] >> 2) & 3);
    return 0;
}
