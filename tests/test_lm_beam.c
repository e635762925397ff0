/*
 * test_lm_beam.c - beam search against brute force on a tiny vocabulary: a seeded Llama with 5
 * tokens is written here as an in-memory GGUF; every sequence of up to 3 tokens is scored by
 * teacher forcing (summed log-softmax of its logits, over length^length_penalty), and a beam
 * wide enough to keep every candidate must return the best of them; width 1 is greedy. The same
 * with stop strings (stories260K's tokenizer: ids 3 and 4 are the bytes 0x00 and 0x01): a
 * sequence also ends at the first token whose text (the one-shot decoder) contains one. Also
 * ingot_lm_session_copy and the argument checks.
 */
#include <math.h>

#include "harness.h"
#include "ingot/lm.h"
#include "ingot/tokenizer.h"

enum { V = 5, D = 8, F = 16, KV = 4, BOS = 1, EOS = 2, N = 3 };

static uint32_t rng = 2024;
static float frand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

static void *mem;
static size_t mem_size;

static ingot_file *tiny_model(void)
{
    ingot_writer_opts wo = {0};
    wo.format = "gguf";
    ingot_writer *w = NULL;
    ingot_writer_new(&wo, &w, NULL);
    ingot_writer_set_string(w, "general.architecture", "llama");
    ingot_writer_set_u32(w, "llama.block_count", 1);
    ingot_writer_set_u32(w, "llama.embedding_length", D);
    ingot_writer_set_u32(w, "llama.feed_forward_length", F);
    ingot_writer_set_u32(w, "llama.attention.head_count", 2);
    ingot_writer_set_u32(w, "llama.attention.head_count_kv", 1);
    ingot_writer_set_u32(w, "llama.context_length", 16);
    ingot_writer_set_u32(w, "tokenizer.ggml.bos_token_id", BOS);
    ingot_writer_set_u32(w, "tokenizer.ggml.eos_token_id", EOS);
    static float data[4096];
    size_t used = 0;
    struct { const char *name; uint64_t r, c; float scale, base; } t[] = {
        {"token_embd.weight", V, D, 1.5f, 0}, {"blk.0.attn_norm.weight", D, 0, 0.1f, 1},
        {"blk.0.attn_q.weight", D, D, 0.7f, 0}, {"blk.0.attn_k.weight", KV, D, 0.7f, 0},
        {"blk.0.attn_v.weight", KV, D, 0.7f, 0}, {"blk.0.attn_output.weight", D, D, 0.7f, 0},
        {"blk.0.ffn_norm.weight", D, 0, 0.1f, 1}, {"blk.0.ffn_gate.weight", F, D, 0.7f, 0},
        {"blk.0.ffn_up.weight", F, D, 0.7f, 0}, {"blk.0.ffn_down.weight", D, F, 0.5f, 0},
        {"output_norm.weight", D, 0, 0.1f, 1}, {"output.weight", V, D, 1.2f, 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        uint64_t shape[2] = {t[i].r, t[i].c}, n = t[i].r * (t[i].c ? t[i].c : 1);
        for (uint64_t k = 0; k < n; k++) data[used + k] = t[i].base + t[i].scale * frand();
        ingot_writer_add_tensor(w, t[i].name, INGOT_DTYPE_F32, t[i].c ? 2 : 1, shape, NULL,
                                data + used, NULL);
        used += n;
    }
    ingot_file *f = NULL;
    if (ingot_writer_begin_mem(w, NULL) == INGOT_OK &&
        ingot_writer_commit_mem(w, &mem, &mem_size, NULL) == INGOT_OK)
        ingot_file_open_buffer(mem, mem_size, NULL, &f, NULL);
    ingot_writer_free(w);
    return f;
}

/* Summed log-probability of seq[0..n) after BOS, by one teacher-forced pass. */
static double seq_logprob(ingot_lm *m, const int32_t *seq, int n)
{
    ingot_lm_session *s = NULL;
    ingot_lm_session_new(m, NULL, &s, NULL);
    int32_t in[N + 1] = {BOS};
    for (int i = 0; i < n; i++) in[i + 1] = seq[i];
    float lg[(N + 1) * V];
    ingot_lm_eval(s, in, (size_t)n, INGOT_LM_LOGITS_ALL, lg, sizeof lg / 4, NULL);
    double total = 0;
    for (int i = 0; i < n; i++) {
        double mx = -INFINITY, z = 0;
        for (int t = 0; t < V; t++) mx = fmax(mx, lg[i * V + t]);
        for (int t = 0; t < V; t++) z += exp(lg[i * V + t] - mx);
        total += lg[i * V + seq[i]] - mx - log(z);
    }
    ingot_lm_session_free(s);
    return total;
}

typedef struct best {
    int32_t seq[N];
    int n;
    double score;
} best;

typedef struct stop_case stop_case;
static void brute(ingot_lm *m, const stop_case *sc, int32_t *seq, int len, bool eos, double lp,
                  best *b);

static void check_beam(ingot_lm *m, uint32_t width, bool ignore_eos, double lp)
{
    best b = {{0}, 0, 0};
    int32_t seq[N];
    brute(m, NULL, seq, 0, !ignore_eos, lp, &b);
    ingot_lm_beam_opts o = {width, N, lp, ignore_eos, NULL, 0, NULL, NULL, 0, NULL, NULL};
    int32_t out[N];
    size_t n = 0;
    double score = 0;
    ingot_error e;
    ASSERT_OK(ingot_lm_beam_search(m, NULL, NULL, 0, &o, out, N, &n, &score, &e));
    CHECK(n == (size_t)b.n && !memcmp(out, b.seq, n * 4),
          "width %u eos %d lp %.1f: beam found %zu tokens (%d %d %d), brute force %d (%d %d %d)",
          width, !ignore_eos, lp, n, out[0], n > 1 ? out[1] : -1, n > 2 ? out[2] : -1, b.n,
          b.seq[0], b.n > 1 ? b.seq[1] : -1, b.n > 2 ? b.seq[2] : -1);
    CHECK(fabs(score - b.score) < 1e-5, "score %.6f, brute force %.6f", score, b.score);
}

TEST(beam_equals_brute_force_when_wide_enough)
{
    ingot_file *f = tiny_model();
    ASSERT_TRUE(f);
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    ingot_lm *m = NULL;
    ASSERT_OK(ingot_lm_open(be, f, NULL, &m, NULL));
    /* without eos: V^(N-1) live prefixes suffice */
    check_beam(m, V * V, true, 0.0);
    check_beam(m, V * V, true, 1.0);
    /* with eos: V^N beams keep every candidate within the first `width` ranks */
    check_beam(m, V * V * V, false, 0.0);
    check_beam(m, V * V * V, false, 1.0);
    check_beam(m, V * V * V, false, 2.0);
    ingot_lm_free(m);
    ingot_backend_free(be);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, mem, mem_size);
}

/* ---- stop strings against brute force ---- */

typedef struct stop_case {
    const ingot_tokenizer *tok;
    const char *const *stops;
    const size_t *lens;
    size_t n;
} stop_case;

/* True if the one-shot decoded text of seq[0..len) contains one of the stop strings; *cut: the
 * text's length before the earliest occurrence. */
static bool text_stops(const stop_case *sc, const int32_t *seq, int len, char *text,
                       size_t *tlen, size_t *cut)
{
    *tlen = 0;
    if (ingot_tokenizer_decode(sc->tok, seq, (size_t)len, 0, text, 64, tlen, NULL) != INGOT_OK)
        return false;
    bool hit = false;
    *cut = *tlen;
    for (size_t k = 0; k < sc->n; k++)
        for (size_t i = 0; i + sc->lens[k] <= *tlen; i++)
            if (!memcmp(text + i, sc->stops[k], sc->lens[k])) {
                if (i < *cut) *cut = i;
                hit = true;
                break;
            }
    return hit;
}

/* Every finished hypothesis: N tokens, (unless eos is false) the first EOS, and (with sc) the
 * first token whose text holds a stop string. */
static void brute(ingot_lm *m, const stop_case *sc, int32_t *seq, int len, bool eos, double lp,
                  best *b)
{
    if (len > 0) {
        char text[64];
        size_t tl, cut;
        bool ends =
            (eos && seq[len - 1] == EOS) || (sc && text_stops(sc, seq, len, text, &tl, &cut));
        if (ends || len == N) {
            double s = seq_logprob(m, seq, len) / (lp != 0 ? pow(len, lp) : 1.0);
            if (b->n == 0 || s > b->score) {
                memcpy(b->seq, seq, sizeof b->seq);
                b->n = len;
                b->score = s;
            }
            return;
        }
    }
    for (int t = 0; t < V; t++) {
        seq[len] = t;
        brute(m, sc, seq, len + 1, eos, lp, b);
    }
}

typedef struct text_sink {
    char text[64];
    size_t len, calls;
} text_sink;

static bool sink(void *ctx, const char *p, size_t n)
{
    text_sink *t = ctx;
    if (t->len + n <= sizeof t->text) memcpy(t->text + t->len, p, n);
    t->len += n;
    t->calls++;
    return true;
}

static void check_beam_stop(ingot_lm *m, const stop_case *sc, bool ignore_eos, double lp,
                            int *stopped)
{
    best b = {{0}, 0, 0};
    int32_t seq[N];
    brute(m, sc, seq, 0, !ignore_eos, lp, &b);
    ingot_lm_beam_opts o = {V * V * V, N, lp, ignore_eos, sc->tok, 0, sc->stops, sc->lens,
                            sc->n, sink, NULL};
    text_sink ts = {{0}, 0, 0};
    o.ctx = &ts;
    int32_t out[N];
    size_t n = 0;
    double score = 0;
    ASSERT_OK(ingot_lm_beam_search(m, NULL, NULL, 0, &o, out, N, &n, &score, NULL));
    CHECK(n == (size_t)b.n && !memcmp(out, b.seq, n * 4),
          "stop %zu eos %d lp %.1f: beam found %zu tokens (%d %d %d), brute force %d (%d %d %d)",
          sc->lens[0], !ignore_eos, lp, n, out[0], n > 1 ? out[1] : -1, n > 2 ? out[2] : -1,
          b.n, b.seq[0], b.n > 1 ? b.seq[1] : -1, b.n > 2 ? b.seq[2] : -1);
    CHECK(fabs(score - b.score) < 1e-5, "score %.6f, brute force %.6f", score, b.score);
    /* the winner's text, cut before its stop string */
    char text[64];
    size_t tl = 0, cut = 0;
    bool hit = text_stops(sc, b.seq, b.n, text, &tl, &cut);
    CHECK(ts.len == cut && !memcmp(ts.text, text, cut), "text of %zu bytes, want %zu", ts.len,
          cut);
    if (hit) ++*stopped;
}

TEST(beam_with_stop_strings_equals_brute_force)
{
    ingot_file *f = tiny_model();
    ASSERT_TRUE(f);
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    ingot_lm *m = NULL;
    ASSERT_OK(ingot_lm_open(be, f, NULL, &m, NULL));
    ingot_tokenizer *tok = NULL;
    ASSERT_OK(ingot_tokenizer_open(INGOT_FIXTURES "/models/stories260K/stories260K.gguf", NULL,
                                   &tok, NULL));
    /* bytes 0x00 (id 3) and 0x01 (id 4): one-token strings, a two-token one, and two */
    static const char s0[] = {0}, s01[] = {0, 1}, s1[] = {1}, s10[] = {1, 0}, s00[] = {0, 0};
    const char *a[] = {s01}, *b[] = {s0}, *c[] = {s1}, *d[] = {s10, s00};
    size_t la[] = {2}, lb[] = {1}, lc[] = {1}, ld[] = {2, 2};
    stop_case cases[] = {{tok, a, la, 1}, {tok, b, lb, 1}, {tok, c, lc, 1}, {tok, d, ld, 2}};
    int stopped = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int k = 0; k < 6; k++) check_beam_stop(m, &cases[i], k % 2, k / 2, &stopped);
    /* winners that ended at their stop string (else the strings were never tested) */
    CHECK(stopped >= 3, "%d winners ended at a stop string", stopped);
    /* stop strings without a tokenizer, an empty one, on_text without a tokenizer: refused */
    ingot_lm_beam_opts o = {4, N, 0, false, NULL, 0, a, la, 1, NULL, NULL};
    int32_t out[N];
    size_t n = 0;
    ingot_error e;
    ASSERT_ST(ingot_lm_beam_search(m, NULL, NULL, 0, &o, out, N, &n, NULL, &e), INGOT_E_MISUSE);
    ASSERT_STR(e.where, "tokenizer");
    size_t zero[] = {0};
    o.tokenizer = tok;
    o.stop_lens = zero;
    ASSERT_ST(ingot_lm_beam_search(m, NULL, NULL, 0, &o, out, N, &n, NULL, &e), INGOT_E_MISUSE);
    ASSERT_STR(e.where, "stop_strings[0]");
    o.tokenizer = NULL;
    o.n_stop_strings = 0;
    o.on_text = sink;
    ASSERT_ST(ingot_lm_beam_search(m, NULL, NULL, 0, &o, out, N, &n, NULL, &e), INGOT_E_MISUSE);
    ASSERT_STR(e.where, "tokenizer");
    ingot_tokenizer_close(tok);
    ingot_lm_free(m);
    ingot_backend_free(be);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, mem, mem_size);
}

TEST(width_one_is_greedy)
{
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    ingot_lm *m = NULL;
    ASSERT_OK(ingot_lm_open_path(be, INGOT_FIXTURES "/models/stories260K/stories260K.gguf", NULL,
                                 &m, NULL));
    ingot_lm_beam_opts o = {1, 40, 1.0, true, NULL, 0, NULL, NULL, 0, NULL, NULL};
    int32_t beam[40], greedy[40];
    size_t nb = 0, ng = 0;
    ASSERT_OK(ingot_lm_beam_search(m, NULL, NULL, 0, &o, beam, 40, &nb, NULL, NULL));
    ingot_lm_session *s = NULL;
    ASSERT_OK(ingot_lm_session_new(m, NULL, &s, NULL));
    ingot_sampler *sp = NULL;
    ingot_sampler_params p = {0};
    ASSERT_OK(ingot_sampler_new(&p, 512, NULL, &sp, NULL));
    ingot_lm_generate_opts go = {0};
    go.max_tokens = 40;
    go.ignore_eos = true;
    ASSERT_OK(ingot_lm_generate(s, sp, NULL, 0, &go, greedy, 40, &ng, NULL, NULL));
    ASSERT_EQ(nb, 40);
    ASSERT_EQ(ng, 40);
    ASSERT_MEM(beam, greedy, sizeof beam);
    /* a wider beam finds a sequence at least as likely as greedy's */
    ingot_lm_beam_opts o4 = {4, 40, 0.0, true, NULL, 0, NULL, NULL, 0, NULL, NULL};
    double s1 = 0, s4 = 0;
    o.length_penalty = 0;
    ASSERT_OK(ingot_lm_beam_search(m, NULL, NULL, 0, &o, beam, 40, &nb, &s1, NULL));
    ASSERT_OK(ingot_lm_beam_search(m, NULL, NULL, 0, &o4, beam, 40, &nb, &s4, NULL));
    CHECK(s4 >= s1 - 1e-9, "width 4 score %.4f below width 1 %.4f", s4, s1);
    ingot_sampler_free(sp);
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    ingot_backend_free(be);
}

TEST(session_copy_forks_the_cache)
{
    ingot_file *f = tiny_model();
    ASSERT_TRUE(f);
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    ingot_lm *m = NULL;
    ASSERT_OK(ingot_lm_open(be, f, NULL, &m, NULL));
    ingot_lm_session *a = NULL, *b = NULL, *c = NULL;
    ASSERT_OK(ingot_lm_session_new(m, NULL, &a, NULL));
    ASSERT_OK(ingot_lm_session_new(m, NULL, &b, NULL));
    ingot_lm_session_opts small = {0};
    small.n_ctx = 2;
    ASSERT_OK(ingot_lm_session_new(m, &small, &c, NULL));
    int32_t t[4] = {BOS, 3, 4, 0};
    float x[V], y[V];
    ASSERT_OK(ingot_lm_eval(a, t, 3, INGOT_LM_LOGITS_LAST, x, V, NULL));
    ASSERT_OK(ingot_lm_session_copy(b, a, NULL));
    ASSERT_EQ(ingot_lm_session_pos(b), 3);
    ASSERT_MEM(ingot_lm_session_logits(b), x, sizeof x);
    ASSERT_OK(ingot_lm_eval(a, t + 3, 1, INGOT_LM_LOGITS_LAST, x, V, NULL));
    ASSERT_OK(ingot_lm_eval(b, t + 3, 1, INGOT_LM_LOGITS_LAST, y, V, NULL));
    ASSERT_MEM(x, y, sizeof x);
    ingot_error e;
    ASSERT_ST(ingot_lm_session_copy(c, a, &e), INGOT_E_RANGE);
    ingot_lm_beam_opts o = {0, 3, 0, false, NULL, 0, NULL, NULL, 0, NULL, NULL};
    int32_t out[4];
    size_t n;
    ASSERT_ST(ingot_lm_beam_search(m, NULL, NULL, 0, &o, out, 4, &n, NULL, &e), INGOT_E_RANGE);
    o.width = 2;
    ASSERT_ST(ingot_lm_beam_search(m, NULL, NULL, 0, &o, out, 2, &n, NULL, &e), INGOT_E_RANGE);
    ingot_lm_session_free(a);
    ingot_lm_session_free(b);
    ingot_lm_session_free(c);
    ingot_lm_free(m);
    ingot_backend_free(be);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, mem, mem_size);
}

RUN_TESTS(T(beam_equals_brute_force_when_wide_enough),
          T(beam_with_stop_strings_equals_brute_force), T(width_one_is_greedy),
          T(session_copy_forks_the_cache))
