/*
 * test_lm_stop.c - stop strings and streamed text of ingot_lm_generate (lm_text.c) on the real
 * stories260K: the greedy text cut right before a stop string found in the golden text, the token
 * count from the reference tokens decoded on their own, strings spanning tokens, starting and
 * ending inside one, several strings, one that never occurs, the text held back exactly while it
 * could still become a stop string, UTF-8 split over byte tokens, and the refusals.
 */
#include "harness.h"
#include "npy_load.h"
#include "ingot/lm.h"
#include "ingot/tokenizer.h"
#include "lm_internal.h"

#define MDIR INGOT_FIXTURES "/models/stories260K/"

static int32_t *load_tokens(uint64_t *n)
{
    return load_npy(MDIR "golden/tokens_greedy_bos_plus_200.npy", INGOT_DTYPE_I32, n);
}

/* llama2.c's output for 200 greedy tokens (its run prints a newline at the end). */
static char *load_golden(size_t *n)
{
    FILE *fp = fopen(MDIR "golden/llama2c_run_t0.0_n200.txt", "rb");
    if (!fp) return NULL;
    static char buf[8192];
    *n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[*n] = 0;
    return buf;
}

/* What a run saw: the text handed to on_text, and the holding rule checked at every token. */
typedef struct run_log {
    const ingot_tokenizer *tok;
    const int32_t *ref;          /* the reference tokens after BOS */
    const char *const *stops;
    size_t nstops;
    char text[8192];
    size_t len;
    size_t tokens;               /* on_token calls */
    int bad;                     /* on_token calls where the text handed out was not expected */
    size_t text_calls;
    int refuse_after;            /* on_text returns false on this call (1-based); 0: never */
} run_log;

static bool log_text(void *ctx, const char *p, size_t n)
{
    run_log *r = ctx;
    if (r->len + n < sizeof r->text) memcpy(r->text + r->len, p, n);
    r->len += n;
    r->text_calls++;
    return r->refuse_after == 0 || (int)r->text_calls < r->refuse_after;
}

/* After token k the text handed out must be decode(ref[0..k]) less its longest suffix that is a
 * proper prefix of a stop string (computed here with the one-shot decoder). */
static bool log_token(void *ctx, int32_t t)
{
    run_log *r = ctx;
    size_t k = ++r->tokens;
    if (r->ref[k - 1] != t) {
        r->bad++;
        return true;
    }
    char d[8192];
    size_t dn = 0;
    if (ingot_tokenizer_decode(r->tok, r->ref, k, 0, d, sizeof d, &dn, NULL) != INGOT_OK) {
        r->bad++;
        return true;
    }
    size_t held = 0;
    for (size_t i = 0; i < r->nstops; i++) {
        size_t sl = strlen(r->stops[i]);
        for (size_t h = sl - 1; h > held; h--)
            if (h <= dn && !memcmp(d + dn - h, r->stops[i], h)) {
                held = h;
                break;
            }
    }
    if (r->len != dn - held || memcmp(r->text, d, r->len)) r->bad++;
    return true;
}

typedef struct fixture {
    ingot_backend *be;
    ingot_lm *m;
    ingot_tokenizer *tok;
    int32_t *ref; /* BOS + 200 */
    char *golden;
    size_t golden_len;
} fixture;

static bool fixture_open(fixture *f)
{
    memset(f, 0, sizeof *f);
    uint64_t nt = 0;
    f->ref = load_tokens(&nt);
    f->golden = load_golden(&f->golden_len);
    ingot_backend_opts bo = {0};
    bo.threads = 1;
    return f->ref && nt == 201 && f->golden &&
           ingot_backend_new("cpu", &bo, &f->be, NULL) == INGOT_OK &&
           ingot_lm_open_path(f->be, MDIR "stories260K.gguf", NULL, &f->m, NULL) == INGOT_OK &&
           ingot_tokenizer_open(MDIR "stories260K.gguf", NULL, &f->tok, NULL) == INGOT_OK;
}

static void fixture_close(fixture *f)
{
    ingot_tokenizer_close(f->tok);
    ingot_lm_free(f->m);
    ingot_backend_free(f->be);
    free(f->ref);
}

/* Greedy from BOS with these stop strings, at most max tokens. */
static ingot_status run(fixture *f, const char *const *stops, size_t nstops, uint32_t max,
                        run_log *r, int32_t *out, size_t *n, ingot_lm_stats *st, ingot_error *e)
{
    memset(r, 0, sizeof *r);
    r->tok = f->tok;
    r->ref = f->ref + 1;
    r->stops = stops;
    r->nstops = nstops;
    ingot_lm_session *s = NULL;
    ingot_sampler *sp = NULL;
    ingot_sampler_params p = {0};
    ingot_status rc = ingot_lm_session_new(f->m, NULL, &s, e);
    if (rc == INGOT_OK) rc = ingot_sampler_new(&p, 512, NULL, &sp, e);
    ingot_lm_generate_opts go = {0};
    go.max_tokens = max;
    go.tokenizer = f->tok;
    go.stop_strings = stops;
    go.n_stop_strings = nstops;
    go.on_text = log_text;
    go.on_token = log_token;
    go.ctx = r;
    if (rc == INGOT_OK) rc = ingot_lm_generate(s, sp, NULL, 0, &go, out, 200, n, st, e);
    ingot_sampler_free(sp);
    ingot_lm_session_free(s);
    return rc;
}

/* The first k such that the reference's first k tokens decode to a text containing one of the
 * stop strings (one-shot decoder, strstr), 0 if none within 200; *at: where the earliest is. */
static size_t expected_tokens(const fixture *f, const char *const *stops, size_t nstops,
                              size_t *at, size_t *which)
{
    for (size_t k = 1; k <= 200; k++) {
        char d[8192];
        size_t dn = 0;
        if (ingot_tokenizer_decode(f->tok, f->ref + 1, k, 0, d, sizeof d - 1, &dn, NULL))
            return 0;
        d[dn] = 0;
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < nstops; i++) {
            const char *hit = strstr(d, stops[i]);
            if (hit && (size_t)(hit - d) < best) {
                best = (size_t)(hit - d);
                *which = i;
            }
        }
        if (best != SIZE_MAX) {
            *at = best;
            return k;
        }
    }
    return 0;
}

/* One case: the text is the golden text up to the earliest stop string in it, the tokens are the
 * reference's up to the one completing it, the stop reason and index say so. */
static void check_case(fixture *f, const char *const *stops, size_t nstops, size_t want_which)
{
    const char *first = NULL;
    size_t which = SIZE_MAX;
    for (size_t i = 0; i < nstops; i++) {
        const char *hit = strstr(f->golden, stops[i]);
        if (hit && (!first || hit < first)) {
            first = hit;
            which = i;
        }
    }
    CHECK(first && which == want_which, "'%s': not where expected in the golden text", stops[0]);
    if (!first) return;
    size_t want_len = (size_t)(first - f->golden);
    size_t at = 0, which2 = 0;
    size_t k = expected_tokens(f, stops, nstops, &at, &which2);
    CHECK(k > 0 && at == want_len, "'%s': tokens decode elsewhere (%zu, %zu)", stops[0], at,
          want_len);
    static run_log r;
    int32_t out[200];
    size_t n = 0;
    ingot_lm_stats st;
    ingot_error e;
    ingot_status rc = run(f, stops, nstops, 200, &r, out, &n, &st, &e);
    CHECK(rc == INGOT_OK, "'%s': generate %d", stops[0], (int)rc);
    if (rc != INGOT_OK) return;
    CHECK(n == k, "'%s': %zu tokens, expected %zu", stops[0], n, k);
    CHECK(!memcmp(out, f->ref + 1, n * sizeof *out), "'%s': tokens differ", stops[0]);
    CHECK(st.stop == INGOT_LM_STOP_STRING, "'%s': stop %d", stops[0], (int)st.stop);
    CHECK(st.stop_string == (int32_t)want_which, "'%s': stop_string %d", stops[0],
          (int)st.stop_string);
    CHECK(r.len == want_len && !memcmp(r.text, f->golden, want_len),
          "'%s': text of %zu bytes, expected %zu: '%.*s'", stops[0], r.len, want_len,
          (int)(r.len < 200 ? r.len : 200), r.text);
    CHECK(st.text_bytes == want_len, "'%s': text_bytes %llu", stops[0],
          (unsigned long long)st.text_bytes);
    /* on_token is not called for the token completing the stop string */
    CHECK(r.tokens == n - 1 && r.bad == 0, "'%s': on_token %zu calls, %d bad", stops[0], r.tokens,
          r.bad);
}

TEST(stop_string_cuts_the_golden_text)
{
    fixture f;
    ASSERT_TRUE(fixture_open(&f));
    /* the greedy text (llama2.c's) holds "she saw a big, red ball": " big" "," " red" ... */
    static const char *const a[] = {"big, red"};
    check_case(&f, a, 1, 0);
    /* starts inside " big", ends inside " red" */
    static const char *const b[] = {"ig, r"};
    check_case(&f, b, 1, 0);
    /* "Lily" comes long before "Lily's mom": held back there, then released */
    static const char *const c[] = {"Lily's mom"};
    check_case(&f, c, 1, 0);
    /* across the newline byte token */
    static const char *const d[] = {"high.\nLily"};
    check_case(&f, d, 1, 0);
    /* a one-byte string */
    static const char *const g[] = {","};
    check_case(&f, g, 1, 0);
    fixture_close(&f);
}

/* Beam search of width 1 is greedy: with stop strings it ends where ingot_lm_generate ends (the
 * reference tokens up to the one completing the earliest string), and on_text gets the golden
 * text up to it; a wider beam's winner never holds a stop string in its text. */
static void check_beam_case(fixture *f, const char *const *stops, size_t nstops)
{
    size_t at = 0, which = 0;
    size_t k = expected_tokens(f, stops, nstops, &at, &which);
    CHECK(k > 0, "'%s': not in the reference text", stops[0]);
    static run_log r;
    memset(&r, 0, sizeof r);
    ingot_lm_beam_opts o = {1, 200, 1.0, true, f->tok, 0, stops, NULL, nstops, log_text, &r};
    int32_t out[200];
    size_t n = 0;
    ASSERT_OK(ingot_lm_beam_search(f->m, NULL, NULL, 0, &o, out, 200, &n, NULL, NULL));
    CHECK(n == k && !memcmp(out, f->ref + 1, n * sizeof *out), "'%s': %zu tokens, expected %zu",
          stops[0], n, k);
    CHECK(r.len == at && !memcmp(r.text, f->golden, at), "'%s': text of %zu bytes, expected %zu",
          stops[0], r.len, at);
    /* width 4: no stop string before the winner's last token (it would have finished there);
     * on_text gets its tokens' text (one-shot decoder) cut before the earliest stop string */
    memset(&r, 0, sizeof r);
    o.width = 4;
    ASSERT_OK(ingot_lm_beam_search(f->m, NULL, NULL, 0, &o, out, 200, &n, NULL, NULL));
    ASSERT_TRUE(n >= 1);
    char d[8192];
    size_t dn = 0, cut;
    ASSERT_OK(ingot_tokenizer_decode(f->tok, out, n - 1, 0, d, sizeof d - 1, &dn, NULL));
    d[dn] = 0;
    for (size_t i = 0; i < nstops; i++)
        CHECK(!strstr(d, stops[i]), "'%s': width 4 went on past it", stops[i]);
    ASSERT_OK(ingot_tokenizer_decode(f->tok, out, n, 0, d, sizeof d - 1, &dn, NULL));
    d[dn] = 0;
    cut = dn;
    for (size_t i = 0; i < nstops; i++) {
        const char *hit = strstr(d, stops[i]);
        if (hit && (size_t)(hit - d) < cut) cut = (size_t)(hit - d);
    }
    CHECK(r.len == cut && !memcmp(r.text, d, cut), "'%s': width 4 text of %zu bytes, want %zu",
          stops[0], r.len, cut);
}

TEST(beam_stop_strings)
{
    fixture f;
    ASSERT_TRUE(fixture_open(&f));
    static const char *const a[] = {"big, red"};
    check_beam_case(&f, a, 1);
    static const char *const b[] = {"ig, r"};
    check_beam_case(&f, b, 1);
    static const char *const c[] = {"zzz", "park", "Lily"};
    check_beam_case(&f, c, 3);
    static const char *const d[] = {"high.\nLily"};
    check_beam_case(&f, d, 1);
    /* on_text returning false: no more pieces after it (the search itself is over) */
    static run_log r;
    memset(&r, 0, sizeof r);
    r.refuse_after = 2;
    ingot_lm_beam_opts o = {1, 40, 1.0, true, f.tok, 0, NULL, NULL, 0, log_text, &r};
    int32_t out[40];
    size_t n = 0;
    ASSERT_OK(ingot_lm_beam_search(f.m, NULL, NULL, 0, &o, out, 40, &n, NULL, NULL));
    ASSERT_EQ(n, 40);
    ASSERT_EQ(r.text_calls, 2);
    char dd[4096];
    size_t dn = 0;
    ASSERT_OK(ingot_tokenizer_decode(f.tok, out, n, 0, dd, sizeof dd, &dn, NULL));
    CHECK(r.len > 0 && r.len < dn && !memcmp(r.text, dd, r.len), "text of %zu bytes of %zu",
          r.len, dn);
    fixture_close(&f);
}

TEST(stop_strings_earliest_wins)
{
    fixture f;
    ASSERT_TRUE(fixture_open(&f));
    /* "Lily" (named Lily.) comes before "park"; "zzz" never */
    static const char *const a[] = {"zzz", "park", "Lily"};
    check_case(&f, a, 3, 2);
    /* "Lily's" partly matched at "named Lily." is dropped at the "."; "park" completes first */
    static const char *const b[] = {"Lily's", "park"};
    check_case(&f, b, 2, 1);
    fixture_close(&f);
}

TEST(stop_string_in_the_first_token)
{
    fixture f;
    ASSERT_TRUE(fixture_open(&f));
    /* " Once" is the first token: "Once" and "On" both complete there at 0 (lowest index
     * wins); "Once upon" is not complete yet, so it does not count */
    static const char *const a[] = {"Once upon", "Once", "On"};
    static run_log r;
    int32_t out[200];
    size_t n = 0;
    ingot_lm_stats st;
    ASSERT_OK(run(&f, a, 3, 200, &r, out, &n, &st, NULL));
    ASSERT_EQ(n, 1);
    ASSERT_EQ(out[0], f.ref[1]);
    ASSERT_EQ(st.stop, INGOT_LM_STOP_STRING);
    ASSERT_EQ(st.stop_string, 1);
    ASSERT_EQ(r.len, 0);
    ASSERT_EQ(r.text_calls, 0);
    fixture_close(&f);
}

TEST(stop_string_never_found)
{
    fixture f;
    ASSERT_TRUE(fixture_open(&f));
    static const char *const a[] = {"zzz", "Lily's dog"};
    static run_log r;
    int32_t out[200];
    size_t n = 0;
    ingot_lm_stats st;
    ASSERT_OK(run(&f, a, 2, 200, &r, out, &n, &st, NULL));
    ASSERT_EQ(n, 200);
    ASSERT_EQ(st.stop, INGOT_LM_STOP_LENGTH);
    ASSERT_EQ(st.stop_string, -1);
    ASSERT_EQ(r.bad, 0);
    /* the whole text: llama2.c's less the newline its run prints at the end */
    ASSERT_EQ(r.len, f.golden_len - 1);
    ASSERT_MEM(r.text, f.golden, r.len);
    ASSERT_U64(st.text_bytes, r.len);
    /* on_text alone, no stop strings: the same text */
    static const char *const none[] = {NULL};
    ASSERT_OK(run(&f, none, 0, 200, &r, out, &n, &st, NULL));
    ASSERT_EQ(r.len, f.golden_len - 1);
    ASSERT_MEM(r.text, f.golden, r.len);
    fixture_close(&f);
}

TEST(stop_on_text_false_stops)
{
    fixture f;
    ASSERT_TRUE(fixture_open(&f));
    static run_log r;
    memset(&r, 0, sizeof r);
    ingot_lm_session *s = NULL;
    ingot_sampler *sp = NULL;
    ingot_sampler_params p = {0};
    ASSERT_OK(ingot_lm_session_new(f.m, NULL, &s, NULL));
    ASSERT_OK(ingot_sampler_new(&p, 512, NULL, &sp, NULL));
    r.refuse_after = 3;
    ingot_lm_generate_opts go = {0};
    go.tokenizer = f.tok;
    go.on_text = log_text;
    go.ctx = &r;
    int32_t out[200];
    size_t n = 0;
    ingot_lm_stats st;
    ASSERT_OK(ingot_lm_generate(s, sp, NULL, 0, &go, out, 200, &n, &st, NULL));
    /* every token's text is released at once: the third token stops it */
    ASSERT_EQ(st.stop, INGOT_LM_STOP_CALLBACK);
    ASSERT_EQ(n, 3);
    ingot_sampler_free(sp);
    ingot_lm_session_free(s);
    fixture_close(&f);
}

TEST(stop_strings_refused)
{
    fixture f;
    ASSERT_TRUE(fixture_open(&f));
    ingot_lm_session *s = NULL;
    ingot_sampler *sp = NULL;
    ingot_sampler_params p = {0};
    ASSERT_OK(ingot_lm_session_new(f.m, NULL, &s, NULL));
    ASSERT_OK(ingot_sampler_new(&p, 512, NULL, &sp, NULL));
    int32_t out[8];
    size_t n = 0;
    ingot_error e;
    const char *strs[] = {"park", "", NULL};
    ingot_lm_generate_opts go = {0};
    go.tokenizer = f.tok;
    go.stop_strings = strs;
    go.n_stop_strings = 2;
    /* an empty string: MISUSE naming it, nothing evaluated */
    ASSERT_ST(ingot_lm_generate(s, sp, NULL, 0, &go, out, 8, &n, NULL, &e), INGOT_E_MISUSE);
    ASSERT_STR(e.where, "stop_strings[1]");
    ASSERT_EQ(ingot_lm_session_pos(s), 0);
    ASSERT_EQ(n, 0);
    /* the same with explicit lengths */
    size_t lens[] = {4, 0};
    go.stop_lens = lens;
    ASSERT_ST(ingot_lm_generate(s, sp, NULL, 0, &go, out, 8, &n, NULL, &e), INGOT_E_MISUSE);
    ASSERT_STR(e.where, "stop_strings[1]");
    go.stop_lens = NULL;
    /* a NULL string */
    strs[1] = "x";
    go.n_stop_strings = 3;
    ASSERT_ST(ingot_lm_generate(s, sp, NULL, 0, &go, out, 8, &n, NULL, &e), INGOT_E_MISUSE);
    ASSERT_STR(e.where, "stop_strings[2]");
    /* no tokenizer */
    go.n_stop_strings = 1;
    go.tokenizer = NULL;
    ASSERT_ST(ingot_lm_generate(s, sp, NULL, 0, &go, out, 8, &n, NULL, &e), INGOT_E_MISUSE);
    ASSERT_STR(e.where, "tokenizer");
    go.tokenizer = f.tok;
    /* too long, too many */
    static char big[INGOT_LM_MAX_STOP_LEN + 2];
    memset(big, 'a', sizeof big - 1);
    strs[0] = big;
    ASSERT_ST(ingot_lm_generate(s, sp, NULL, 0, &go, out, 8, &n, NULL, &e), INGOT_E_LIMIT);
    ASSERT_STR(e.where, "stop_strings[0]");
    big[INGOT_LM_MAX_STOP_LEN] = 0; /* the longest allowed runs */
    ASSERT_OK(ingot_lm_generate(s, sp, NULL, 0, &go, out, 8, &n, NULL, &e));
    ASSERT_EQ(n, 8);
    ASSERT_OK(ingot_lm_session_rewind(s, 0, NULL));
    go.n_stop_strings = INGOT_LM_MAX_STOP_STRINGS + 1;
    ASSERT_ST(ingot_lm_generate(s, sp, NULL, 0, &go, out, 8, &n, NULL, &e), INGOT_E_LIMIT);
    ASSERT_STR(e.where, "stop_strings");
    ASSERT_EQ(ingot_lm_session_pos(s), 0);
    ingot_sampler_free(sp);
    ingot_lm_session_free(s);
    fixture_close(&f);
}

/* ---- the text machinery on chosen tokens (byte tokens: id = 3 + byte in tok512) ---- */

#define BYTE(b) (3 + (b))

typedef struct feed_case {
    const char *what;
    const char *stops[3];
    uint32_t flags;
    int32_t tokens[8];
    size_t ntok;
    int want_at;       /* the token (0-based) whose text completes a stop string; -1: none,
                          -2: completed by the end of text (the decoder's flushed bytes) */
    int want_which;
    const char *want;  /* the text handed out */
} feed_case;

TEST(stop_text_utf8_split_over_tokens)
{
    ingot_tokenizer *tok = NULL;
    ASSERT_OK(ingot_tokenizer_open(MDIR "tok512.bin", NULL, &tok, NULL));
    /* " a" is 261, " big" 370, "ed" 266; U+00E9 is C3 A9, U+20AC E2 82 AC */
    static const feed_case cases[] = {
        {"a then e-acute over two byte tokens", {"a\xc3\xa9"}, 0,
         {261, BYTE(0xC3), BYTE(0xA9), 370}, 4, 2, 0, ""},
        {"the leading space kept", {"a\xc3\xa9"}, INGOT_DECODE_KEEP_LEADING_SPACE,
         {261, BYTE(0xC3), BYTE(0xA9)}, 3, 2, 0, " "},
        {"a three-byte character in three tokens, the string after it", {"\xe2\x82\xac big"}, 0,
         {261, BYTE(0xE2), BYTE(0x82), BYTE(0xAC), 370, 266}, 6, 4, 0, "a"},
        {"the character alone", {"\xe2\x82\xac"}, 0,
         {261, BYTE(0xE2), BYTE(0x82), BYTE(0xAC), 370}, 5, 3, 0, "a"},
        {"a prefix that fails at a character's last byte", {"\xe2\x82\xad"}, 0,
         {261, BYTE(0xE2), BYTE(0x82), BYTE(0xAC), 370}, 5, -1, 0, "a\xe2\x82\xac big"},
        {"an invalid sequence becomes U+FFFD", {"\xef\xbf\xbd big"}, 0,
         {261, BYTE(0xC3), 370, 266}, 4, 2, 0, "a"},
        {"U+FFFD from the decoder's flush completes it", {"big\xef\xbf\xbd"}, 0,
         {261, 370, BYTE(0xE2), BYTE(0x82)}, 4, -2, 0, "a "},
        {"tokens outside the vocabulary have no text", {"abig"}, 0,
         {261, 9999, 370}, 3, -1, 0, "a big"},
        {"ends mid-token: the rest of the token is dropped", {"bi", "a b"}, 0,
         {261, 370, 266}, 3, 1, 1, ""},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const feed_case *fc = &cases[c];
        static run_log r;
        memset(&r, 0, sizeof r);
        ingot_lm_generate_opts go = {0};
        size_t ns = 0;
        while (ns < 3 && fc->stops[ns]) ns++;
        go.tokenizer = tok;
        go.decode_flags = fc->flags;
        go.stop_strings = fc->stops;
        go.n_stop_strings = ns;
        go.on_text = log_text;
        go.ctx = &r;
        lm_text t;
        ingot_status rc = ingot__lm_text_init(&t, &go, NULL, NULL);
        CHECK(rc == INGOT_OK, "%s: init %d", fc->what, (int)rc);
        if (rc != INGOT_OK) continue;
        int at = -1;
        lm_text_verdict v = LM_TEXT_GO_ON;
        for (size_t i = 0; i < fc->ntok && v == LM_TEXT_GO_ON; i++) {
            v = ingot__lm_text_token(&t, fc->tokens[i]);
            if (v == LM_TEXT_STOP_STRING) at = (int)i;
        }
        if (v == LM_TEXT_GO_ON && ingot__lm_text_finish(&t) == LM_TEXT_STOP_STRING) at = -2;
        CHECK(at == fc->want_at, "%s: stopped at %d, expected %d", fc->what, at, fc->want_at);
        CHECK(fc->want_at == -1 || t.matched == fc->want_which, "%s: matched %d", fc->what,
              (int)t.matched);
        size_t wl = strlen(fc->want);
        CHECK(r.len == wl && !memcmp(r.text, fc->want, wl), "%s: text '%.*s', expected '%s'",
              fc->what, (int)r.len, r.text, fc->want);
        ingot__lm_text_free(&t, NULL);
    }
    ingot_tokenizer_close(tok);
}

RUN_TESTS(T(stop_string_cuts_the_golden_text), T(stop_strings_earliest_wins), T(beam_stop_strings),
          T(stop_string_in_the_first_token), T(stop_string_never_found),
          T(stop_on_text_false_stops), T(stop_strings_refused),
          T(stop_text_utf8_split_over_tokens))
