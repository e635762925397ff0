/*
 * test_tokenizer_vectors.c - every shared tokenizer vector, exact: llama.cpp's 46 cases for
 * GPT-2 (GGUF and encoder.json/vocab.bpe), Llama 2 SentencePiece (GGUF) and Llama 3
 * (tokenizer.json), GPT-2's r50k_base cases of TestPlans.txt, the stories260K vocabulary from
 * its GGUF and from llama2.c's tok512.bin (identical ids), and llama2.c's greedy output decoded.
 * Expected ids come from the fixtures (produced by llama.cpp / Hugging Face / tiktoken), never
 * from this code.
 */
#include "harness.h"
#include "files.h"

#define FIX INGOT_FIXTURES
#define LCPP FIX "/tokenizers/llama.cpp/"

typedef struct vcase {
    const char *text;
    size_t len;
    int32_t ids[1024];
    size_t n;
} vcase;

/* llama.cpp's .inp (cases separated by "\n__ggml_vocab_test__\n") and .out (one line of ids per
 * case). Returns the case count; cases point into *inp_buf. */
static size_t load_llamacpp(const char *inp, const char *outp, vcase *cases, size_t cap,
                            char **inp_buf)
{
    size_t n_in, n_out;
    char *in = test_read_file(inp, &n_in), *out = test_read_file(outp, &n_out);
    if (!in || !out) {
        free(in);
        free(out);
        return 0;
    }
    static const char sep[] = "\n__ggml_vocab_test__\n";
    size_t k = 0;
    char *p = in;
    for (;;) {
        char *e = strstr(p, sep);
        if (!e || k == cap) break;
        cases[k].text = p;
        cases[k].len = (size_t)(e - p);
        k++;
        p = e + sizeof sep - 1;
    }
    char *q = out;
    for (size_t i = 0; i < k; i++) {
        char *eol = strchr(q, '\n');
        if (!eol) eol = q + strlen(q);
        cases[i].n = 0;
        char *s = q;
        while (s < eol) {
            char *end;
            long v = strtol(s, &end, 10);
            if (end == s) break;
            if (cases[i].n < 1024) cases[i].ids[cases[i].n++] = (int32_t)v;
            s = end;
        }
        q = *eol ? eol + 1 : eol;
    }
    free(out);
    *inp_buf = in;
    return k;
}

static ingot_tokenizer *open_tok(const char *path)
{
    ingot_tokenizer *t = NULL;
    ingot_error e;
    ingot_status st = ingot_tokenizer_open(path, NULL, &t, &e);
    if (st != INGOT_OK) {
        char buf[300];
        fprintf(stderr, "  open %s: %s\n", path, ingot_error_format(&e, buf, sizeof buf));
    }
    return t;
}

/* Encodes text (no BOS, no special parsing) and compares with want; with round_trip, also
 * decode(encode(text)) == text. Returns 1 if the case passed. */
static int check_case(ingot_tokenizer *t, const char *text, size_t len, const int32_t *want,
                      size_t nwant, bool round_trip, const char *label, size_t idx)
{
    size_t cap = ingot_tokenizer_max_tokens(len);
    int32_t *ids = malloc(cap * sizeof *ids);
    size_t n = 0;
    ingot_error e;
    /* twice: the second time the words come from the tokenizer's own word cache */
    int ok = 1;
    for (int pass = 0; pass < 2 && ok; pass++) {
        ingot_status st = ingot_tokenizer_encode(t, text, len, 0, ids, cap, &n, NULL, 0, &e);
        ok = st == INGOT_OK && n == nwant && memcmp(ids, want, n * sizeof *ids) == 0;
    }
    if (!ok) {
        fprintf(stderr, "  %s case %zu: %.*s\n    got ", label, idx, (int)(len > 60 ? 60 : len),
                text);
        for (size_t i = 0; i < n && i < 40; i++) fprintf(stderr, "%d ", ids[i]);
        fprintf(stderr, "\n    want ");
        for (size_t i = 0; i < nwant && i < 40; i++) fprintf(stderr, "%d ", want[i]);
        fprintf(stderr, "\n");
    }
    if (ok && round_trip) {
        size_t dl = 0;
        char *back = malloc(len + 16);
        ingot_status st = ingot_tokenizer_decode(t, ids, n, 0, back, len + 16, &dl, &e);
        if (st != INGOT_OK || dl != len || memcmp(back, text, len) != 0) {
            fprintf(stderr, "  %s case %zu: decode(encode(s)) != s (%zu vs %zu bytes)\n", label,
                    idx, dl, len);
            ok = 0;
        }
        free(back);
    }
    free(ids);
    return ok;
}

static size_t run_llamacpp(ingot_tokenizer *t, const char *stem, bool round_trip, size_t *total)
{
    static vcase cases[64];
    char *buf = NULL;
    char inp[512], outp[512];
    snprintf(inp, sizeof inp, LCPP "%s.inp", stem);
    snprintf(outp, sizeof outp, LCPP "%s.out", stem);
    size_t k = load_llamacpp(inp, outp, cases, 64, &buf);
    size_t pass = 0;
    for (size_t i = 0; i < k; i++)
        pass += (size_t)check_case(t, cases[i].text, cases[i].len, cases[i].ids, cases[i].n,
                                   round_trip, stem, i);
    free(buf);
    *total = k;
    fprintf(stderr, "  %s: %zu/%zu cases exact\n", stem, pass, k);
    return pass;
}

TEST(test_gpt2_gguf_llamacpp_vectors)
{
    ingot_tokenizer *t = open_tok(LCPP "ggml-vocab-gpt-2.gguf");
    ASSERT_TRUE(t);
    ASSERT_STR(ingot_tokenizer_kind(t), "bpe");
    ASSERT_STR(ingot_tokenizer_pre(t), "gpt-2");
    ASSERT_EQ(ingot_tokenizer_vocab_size(t), 50257);
    ASSERT_EQ(ingot_tokenizer_special(t, INGOT_TOKEN_BOS), 50256);
    ASSERT_TRUE(!ingot_tokenizer_adds_bos(t));
    size_t total = 0, pass = run_llamacpp(t, "ggml-vocab-gpt-2.gguf", true, &total);
    ASSERT_EQ(total, 46);
    ASSERT_EQ(pass, total);
    ingot_tokenizer_close(t);
}

TEST(test_spm_gguf_llamacpp_vectors)
{
    ingot_tokenizer *t = open_tok(LCPP "ggml-vocab-llama-spm.gguf");
    ASSERT_TRUE(t);
    ASSERT_STR(ingot_tokenizer_kind(t), "spm");
    ASSERT_EQ(ingot_tokenizer_vocab_size(t), 32000);
    ASSERT_EQ(ingot_tokenizer_special(t, INGOT_TOKEN_BOS), 1);
    ASSERT_EQ(ingot_tokenizer_special(t, INGOT_TOKEN_EOS), 2);
    ASSERT_EQ(ingot_tokenizer_special(t, INGOT_TOKEN_UNK), 0);
    ASSERT_TRUE(ingot_tokenizer_adds_bos(t));
    size_t total = 0, pass = run_llamacpp(t, "ggml-vocab-llama-spm.gguf", true, &total);
    ASSERT_EQ(total, 46);
    ASSERT_EQ(pass, total);
    ingot_tokenizer_close(t);
}

TEST(test_llama3_json_llamacpp_vectors)
{
    ingot_tokenizer *t = open_tok(FIX "/tokenizers/llama3/tokenizer.json");
    ASSERT_TRUE(t);
    ASSERT_STR(ingot_tokenizer_kind(t), "bpe");
    ASSERT_STR(ingot_tokenizer_pre(t), "llama-bpe");
    ASSERT_EQ(ingot_tokenizer_vocab_size(t), 128256);
    ASSERT_EQ(ingot_tokenizer_special(t, INGOT_TOKEN_BOS), 128000);
    ASSERT_EQ(ingot_tokenizer_special(t, INGOT_TOKEN_EOS), 128001);
    ASSERT_TRUE(ingot_tokenizer_adds_bos(t));
    size_t total = 0, pass = run_llamacpp(t, "ggml-vocab-llama-bpe.gguf", true, &total);
    ASSERT_EQ(total, 46);
    ASSERT_EQ(pass, total);
    ingot_tokenizer_close(t);
}

TEST(test_gpt2_encoder_json_llamacpp_vectors)
{
    ingot_tokenizer *t = open_tok(FIX "/tokenizers/gpt2");
    ASSERT_TRUE(t);
    ASSERT_STR(ingot_tokenizer_pre(t), "gpt-2");
    ASSERT_EQ(ingot_tokenizer_vocab_size(t), 50257);
    ASSERT_EQ(ingot_tokenizer_special(t, INGOT_TOKEN_EOS), 50256);
    size_t total = 0, pass = run_llamacpp(t, "ggml-vocab-gpt-2.gguf", true, &total);
    ASSERT_EQ(pass, total);
    ingot_tokenizer_close(t);
}

/* TestPlans.txt: "EncodingName: X\nSample: TEXT\nEncoded: [a, b, ...]\n\n". Samples are one line
 * (the file has no escapes). */
TEST(test_gpt2_encoder_json_r50k_testplans)
{
    ingot_tokenizer *t = open_tok(FIX "/tokenizers/gpt2/encoder.json");
    ASSERT_TRUE(t);
    size_t n;
    char *buf = test_read_file(FIX "/tokenizers/gpt2/TestPlans.txt", &n);
    ASSERT_TRUE(buf);
    size_t total = 0, pass = 0;
    static int32_t want[4096];
    for (char *p = buf; (p = strstr(p, "EncodingName: r50k_base\n"));) {
        p += strlen("EncodingName: r50k_base\n");
        if (strncmp(p, "Sample: ", 8) != 0) continue;
        char *text = p + 8, *eol = strchr(text, '\n');
        if (!eol || strncmp(eol + 1, "Encoded: [", 10) != 0) continue;
        char *s = eol + 11;
        size_t k = 0;
        while (*s && *s != ']') {
            char *end;
            long v = strtol(s, &end, 10);
            if (end == s) break;
            if (k < 4096) want[k++] = (int32_t)v;
            s = end;
            while (*s == ',' || *s == ' ') s++;
        }
        pass += (size_t)check_case(t, text, (size_t)(eol - text), want, k, true, "r50k", total);
        total++;
        p = s;
    }
    fprintf(stderr, "  r50k_base: %zu/%zu cases exact\n", pass, total);
    ASSERT_EQ(total, 64);
    ASSERT_EQ(pass, total);
    free(buf);
    ingot_tokenizer_close(t);
}

/* The stories260K vocabulary from its GGUF and from llama2.c's tok512.bin: the same ids for every
 * text of both vector files, with and without BOS, and the same text back. */
TEST(test_stories260k_gguf_and_tok512_agree)
{
    ingot_tokenizer *g = open_tok(FIX "/models/stories260K/stories260K.gguf");
    ingot_tokenizer *b = open_tok(FIX "/models/stories260K/tok512.bin");
    ASSERT_TRUE(g && b);
    ASSERT_EQ(ingot_tokenizer_vocab_size(g), 512);
    ASSERT_EQ(ingot_tokenizer_vocab_size(b), 512);
    ASSERT_STR(ingot_tokenizer_kind(b), "spm");
    static vcase cases[64];
    char *buf = NULL;
    size_t k = load_llamacpp(LCPP "ggml-vocab-llama-spm.gguf.inp",
                             LCPP "ggml-vocab-llama-spm.gguf.out", cases, 64, &buf);
    ASSERT_EQ(k, 46);
    size_t agree = 0, tokens = 0;
    for (size_t i = 0; i < k; i++) {
        for (uint32_t fl = 0; fl <= INGOT_ENCODE_ADD_SPECIAL; fl += INGOT_ENCODE_ADD_SPECIAL) {
            size_t cap = ingot_tokenizer_max_tokens(cases[i].len), n1 = 0, n2 = 0;
            int32_t *a = malloc(cap * 4), *c = malloc(cap * 4);
            ASSERT_OK(ingot_tokenizer_encode(g, cases[i].text, cases[i].len, fl, a, cap, &n1,
                                             NULL, 0, NULL));
            ASSERT_OK(ingot_tokenizer_encode(b, cases[i].text, cases[i].len, fl, c, cap, &n2,
                                             NULL, 0, NULL));
            bool same = n1 == n2 && memcmp(a, c, n1 * 4) == 0;
            if (same && fl) same = n1 >= 1 && a[0] == 1;
            CHECK(same, "case %zu flags %u: %zu vs %zu ids", i, fl, n1, n2);
            agree += same;
            tokens += n1;
            char *t1 = malloc(cases[i].len + 8), *t2 = malloc(cases[i].len + 8);
            size_t l1 = 0, l2 = 0;
            ASSERT_OK(ingot_tokenizer_decode(g, a, n1, 0, t1, cases[i].len + 8, &l1, NULL));
            ASSERT_OK(ingot_tokenizer_decode(b, c, n2, 0, t2, cases[i].len + 8, &l2, NULL));
            CHECK(l1 == cases[i].len && memcmp(t1, cases[i].text, l1) == 0,
                  "case %zu: GGUF round trip", i);
            CHECK(l2 == cases[i].len && memcmp(t2, cases[i].text, l2) == 0,
                  "case %zu: tok512.bin round trip", i);
            free(t1);
            free(t2);
            free(a);
            free(c);
        }
    }
    fprintf(stderr, "  stories260K: %zu/%zu encodings identical (%zu ids)\n", agree, 2 * k,
            tokens);
    ASSERT_EQ(agree, 2 * k);
    free(buf);
    ingot_tokenizer_close(g);
    ingot_tokenizer_close(b);
}

/* llama2.c's greedy run printed these 200 tokens after BOS as the golden text: decoding them
 * (and streaming them one by one) must give that text. */
TEST(test_stories260k_decode_llama2c_golden)
{
    ingot_file *f = NULL;
    ASSERT_OK(ingot_file_open(FIX "/models/stories260K/golden/tokens_greedy_bos_plus_200.npy",
                              NULL, &f, NULL));
    ingot_tensor_info ti;
    ASSERT_OK(ingot_file_tensor_at(f, 0, &ti));
    ASSERT_EQ(ti.dtype, INGOT_DTYPE_I32);
    ASSERT_EQ(ti.nelem, 201);
    int32_t ids[201];
    memcpy(ids, ti.data, sizeof ids);
    ingot_file_close(f);
    size_t gl;
    char *golden = test_read_file(FIX "/models/stories260K/golden/llama2c_run_t0.0_n200.txt", &gl);
    ASSERT_TRUE(golden);
    while (gl && golden[gl - 1] == '\n') gl--;
    const char *srcs[2] = {FIX "/models/stories260K/tok512.bin",
                           FIX "/models/stories260K/stories260K.gguf"};
    for (int s = 0; s < 2; s++) {
        ingot_tokenizer *t = open_tok(srcs[s]);
        ASSERT_TRUE(t);
        char out[4096];
        size_t n = 0;
        ASSERT_OK(ingot_tokenizer_decode(t, ids, 201, 0, out, sizeof out, &n, NULL));
        while (n && out[n - 1] == '\n') n--;
        ASSERT_EQ(n, gl);
        ASSERT_MEM(out, golden, gl);
        ingot_tokenizer_stream st;
        ingot_tokenizer_stream_init(&st, 0);
        char piece[256];
        size_t o = 0;
        for (int i = 0; i < 201; i++) {
            size_t pl = 0;
            ASSERT_OK(ingot_tokenizer_stream_push(t, &st, ids[i], piece, sizeof piece, &pl));
            memcpy(out + o, piece, pl);
            o += pl;
        }
        while (o && out[o - 1] == '\n') o--;
        ASSERT_EQ(o, gl);
        ASSERT_MEM(out, golden, gl);
        ingot_tokenizer_close(t);
    }
    free(golden);
}

/* One tokenizer, four threads encoding and decoding every llama.cpp input at once: the same ids
 * and text as one thread (the vocabulary is immutable; its two word caches are taken by one
 * encode at a time, so two threads at a time encode without one). */
#include <pthread.h>

typedef struct par {
    ingot_tokenizer *t;
    vcase *cases;
    size_t k;
    int bad;
} par;

static void *par_run(void *arg)
{
    par *p = arg;
    for (int rep = 0; rep < 20; rep++)
        for (size_t i = 0; i < p->k; i++) {
            int32_t ids[1024];
            size_t n = 0, l = 0;
            char back[4096];
            if (ingot_tokenizer_encode(p->t, p->cases[i].text, p->cases[i].len, 0, ids, 1024, &n,
                                       NULL, 0, NULL) != INGOT_OK ||
                n != p->cases[i].n || memcmp(ids, p->cases[i].ids, n * 4) != 0 ||
                ingot_tokenizer_decode(p->t, ids, n, 0, back, sizeof back, &l, NULL) !=
                    INGOT_OK ||
                l != p->cases[i].len || memcmp(back, p->cases[i].text, l) != 0)
                p->bad++;
        }
    return NULL;
}

TEST(test_concurrent_encode_decode)
{
    static vcase cases[64];
    char *buf = NULL;
    size_t k = load_llamacpp(LCPP "ggml-vocab-llama-bpe.gguf.inp",
                             LCPP "ggml-vocab-llama-bpe.gguf.out", cases, 64, &buf);
    ASSERT_EQ(k, 46);
    ingot_tokenizer *t = open_tok(FIX "/tokenizers/llama3/tokenizer.json");
    ASSERT_TRUE(t);
    par ps[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        ps[i] = (par){t, cases, k, 0};
        ASSERT_EQ(pthread_create(&th[i], NULL, par_run, &ps[i]), 0);
    }
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        bad += ps[i].bad;
    }
    ASSERT_EQ(bad, 0);
    ingot_tokenizer_close(t);
    free(buf);
}

RUN_TESTS(T(test_concurrent_encode_decode), T(test_gpt2_gguf_llamacpp_vectors),
          T(test_spm_gguf_llamacpp_vectors),
          T(test_llama3_json_llamacpp_vectors), T(test_gpt2_encoder_json_llamacpp_vectors),
          T(test_gpt2_encoder_json_r50k_testplans), T(test_stories260k_gguf_and_tok512_agree),
          T(test_stories260k_decode_llama2c_golden))
