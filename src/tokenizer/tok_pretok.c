/*
 * tok_pretok.c - the pre-tokenizers of byte-level BPE, hand-written from their regexes (no regex
 * library), as llama.cpp's llama-vocab.cpp lists them per tokenizer.ggml.pre. A pre-tokenizer is
 * a list of stages; each stage splits every piece the previous one produced into its matches and
 * the gaps between them (llama.cpp's unicode_regex_split), and the last stage's pieces are the
 * pre-tokens. Each stage's matcher returns the length of the regex's match at a position, with
 * the piece's end as the end of the text (so lookaheads stop there). Classes: the generated
 * tok_unicode_table.h (gen_unicode.py).
 */
#include "error.h"
#include "tok_internal.h"
#include "tok_unicode_table.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static inline uint8_t uclass(uint32_t cp)
{
    if (cp >= 0x110000) return 0;
    return tok_ublocks[tok_uindex[cp / TOK_UBLOCK]][cp % TOK_UBLOCK];
}

uint8_t ingot__tok_uclass(uint32_t cp) { return uclass(cp); }

typedef struct uch {
    uint32_t cp;
    uint32_t len;
    uint8_t cls;
} uch;

static inline uch at(const uint8_t *s, size_t i, size_t end)
{
    uch u;
    if (s[i] < 0x80) {
        u.cp = s[i];
        u.len = 1;
        u.cls = tok_uascii[s[i]];
        return u;
    }
    u.len = (uint32_t)ingot__tok_utf8(s + i, end - i, &u.cp);
    u.cls = uclass(u.cp);
    return u;
}

#define IS_L(u) (((u).cls & TOK_U_L) != 0)
#define IS_N(u) (((u).cls & TOK_U_N) != 0)
#define IS_WS(u) (((u).cls & TOK_U_WS) != 0)
#define IS_OTHER(u) (((u).cls & (TOK_U_L | TOK_U_N | TOK_U_WS)) == 0) /* [^\s\p{L}\p{N}] */

/* End of the run of ASCII letters starting at j: sixteen bytes a step where SSE2 is there (a
 * byte is a letter when (b | 0x20) - 'a' < 26, as a signed compare after a shift by 0x80). */
static inline size_t ascii_letters(const uint8_t *s, size_t j, size_t end)
{
#if defined(__SSE2__)
    const __m128i lower = _mm_set1_epi8(0x20), shift = _mm_set1_epi8((char)(0x80 - 'a'));
    const __m128i lim = _mm_set1_epi8((char)(0x80 + 26 - 256));
    while (j + 16 <= end) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + j));
        __m128i y = _mm_add_epi8(_mm_or_si128(v, lower), shift);
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(y, lim));
        if (m != 0xFFFF) return j + (size_t)TOK_CTZ64(~(uint64_t)m);
        j += 16;
    }
#endif
    while (j < end && s[j] < 0x80 && (tok_uascii[s[j]] & TOK_U_L)) j++;
    return j;
}

/* End of the run of code points with class bit(s) `mask` starting at i. */
static size_t run_cls(const uint8_t *s, size_t i, size_t end, uint8_t mask)
{
    while (i < end && s[i] < 0x80 && (tok_uascii[s[i]] & mask)) i++;
    while (i < end) {
        uch u = at(s, i, end);
        if (!(u.cls & mask)) break;
        i += u.len;
    }
    return i;
}

static size_t run_other(const uint8_t *s, size_t i, size_t end)
{
    while (i < end) {
        uch u = at(s, i, end);
        if (!IS_OTHER(u)) break;
        i += u.len;
    }
    return i;
}

/* 's 't 're 've 'm 'll 'd at s[i] == '\''; fold: ASCII case-insensitive (Llama 3). */
static size_t contraction(const uint8_t *s, size_t i, size_t end, bool fold)
{
    if (s[i] != '\'' || i + 1 >= end) return 0;
    uint8_t a = s[i + 1], b = i + 2 < end ? s[i + 2] : 0;
    if (fold) {
        if (a >= 'A' && a <= 'Z') a = (uint8_t)(a + 32);
        if (b >= 'A' && b <= 'Z') b = (uint8_t)(b + 32);
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* \s+(?!\S)|\s+ at a whitespace code point: the run, less its last code point when a non-space
 * follows and the run has more than one. */
static size_t ws_tail(const uint8_t *s, size_t i, size_t end)
{
    size_t j = i, last = i;
    while (j < end) {
        uch u = at(s, j, end);
        if (!IS_WS(u)) break;
        last = j;
        j += u.len;
    }
    if (j == end || last == i) return j - i;
    return last - i;
}

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static size_t m_gpt2(const uint8_t *s, size_t i, size_t end)
{
    size_t k = contraction(s, i, end, false);
    if (k) return k;
    size_t p = i;
    if (s[i] == ' ' && i + 1 < end) p = i + 1;
    uch u = at(s, p, end);
    if (IS_L(u)) return run_cls(s, p, end, TOK_U_L) - i;
    if (IS_N(u)) return run_cls(s, p, end, TOK_U_N) - i;
    if (IS_OTHER(u)) return run_other(s, p, end) - i;
    /* s[i] is whitespace (p == i, or a space followed by whitespace) */
    return ws_tail(s, i, end);
}

/* GPT-2 when the pre-token starts with ASCII (most text): the same match by table lookups, the
 * general matcher for the rest (contractions, whitespace, non-ASCII starts) and for a run that
 * meets a non-ASCII byte. */
static inline size_t m_gpt2_ascii(const uint8_t *s, size_t i, size_t end)
{
    uint8_t c = s[i];
    size_t p = i;
    if (c == ' ' && i + 1 < end) c = s[++p];
    if (c >= 0x80 || c == '\'') return m_gpt2(s, i, end);
    uint8_t k = tok_uascii[c];
    size_t j = p + 1;
    if (k & (TOK_U_L | TOK_U_N)) {
        uint8_t mask = k & TOK_U_L ? TOK_U_L : TOK_U_N;
        if (mask == TOK_U_L) j = ascii_letters(s, j, end);
        else while (j < end && s[j] < 0x80 && (tok_uascii[s[j]] & mask)) j++;
        if (j < end && s[j] >= 0x80) j = run_cls(s, j, end, mask);
        return j - i;
    }
    if (k & TOK_U_WS) return m_gpt2(s, i, end);
    while (j < end && s[j] < 0x80 && !(tok_uascii[s[j]] & (TOK_U_L | TOK_U_N | TOK_U_WS))) j++;
    if (j < end && s[j] >= 0x80) j = run_other(s, j, end);
    return j - i;
}

/* Llama 3 (digits 3) and Qwen 2 (digits 1):
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*|
 * \s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t m_llama3_d(const uint8_t *s, size_t i, size_t end, unsigned digits)
{
    size_t k = contraction(s, i, end, true);
    if (k) return k;
    uch u = at(s, i, end);
    if (IS_L(u)) return run_cls(s, i, end, TOK_U_L) - i;
    if (!IS_N(u) && u.cp != '\r' && u.cp != '\n' && i + u.len < end) {
        uch v = at(s, i + u.len, end);
        if (IS_L(v)) return run_cls(s, i + u.len, end, TOK_U_L) - i;
    }
    if (IS_N(u)) {
        size_t j = i;
        for (unsigned d = 0; d < digits && j < end; d++) {
            uch w = at(s, j, end);
            if (!IS_N(w)) break;
            j += w.len;
        }
        return j - i;
    }
    size_t p = i;
    if (s[i] == ' ' && i + 1 < end && IS_OTHER(at(s, i + 1, end))) p = i + 1;
    if (IS_OTHER(at(s, p, end))) {
        size_t j = run_other(s, p, end);
        while (j < end && (s[j] == '\r' || s[j] == '\n')) j++;
        return j - i;
    }
    /* whitespace: \s*[\r\n]+ ends after the run's last CR or LF */
    size_t j = i, nl = SIZE_MAX;
    while (j < end) {
        uch w = at(s, j, end);
        if (!IS_WS(w)) break;
        if (w.cp == '\r' || w.cp == '\n') nl = j;
        j += w.len;
    }
    if (nl != SIZE_MAX) return nl + 1 - i;
    return ws_tail(s, i, end);
}

/* Llama 3 when the pre-token starts with ASCII: by table lookups, the same matches as
 * m_llama3_d for letters (after one optional character that is not CR, LF, a letter or a digit),
 * up to three digits, punctuation runs (with one leading space and trailing CRs and LFs) and
 * whitespace runs; the general matcher for contractions, non-ASCII starts, and a run of digits or
 * whitespace that meets a non-ASCII byte (which may be a digit or a space). */
static inline size_t m_llama3_ascii(const uint8_t *s, size_t i, size_t end)
{
    uint8_t c = s[i];
    if (c >= 0x80 || c == '\'') return m_llama3_d(s, i, end, 3);
    uint8_t k = tok_uascii[c];
    if (k & TOK_U_L) {
        size_t j = ascii_letters(s, i + 1, end);
        if (j < end && s[j] >= 0x80) j = run_cls(s, j, end, TOK_U_L);
        return j - i;
    }
    if (k & TOK_U_N) {
        if (i + 3 <= end && s[i + 1] < 0x80 && s[i + 2] < 0x80) {
            size_t j = i + 1;
            while (j < i + 3 && (tok_uascii[s[j]] & TOK_U_N)) j++;
            return j - i;
        }
        return m_llama3_d(s, i, end, 3);
    }
    if (i + 1 == end) return 1; /* one space or punctuation character, last in the text */
    uint8_t d = s[i + 1];
    if (d >= 0x80) return m_llama3_d(s, i, end, 3);
    uint8_t kd = tok_uascii[d];
    if ((kd & TOK_U_L) && c != '\r' && c != '\n') { /* [^\r\n\p{L}\p{N}]?\p{L}+ */
        size_t j = ascii_letters(s, i + 2, end);
        if (j < end && s[j] >= 0x80) j = run_cls(s, j, end, TOK_U_L);
        return j - i;
    }
    if (!(k & TOK_U_WS) || (c == ' ' && !(kd & (TOK_U_WS | TOK_U_N)))) {
        /* ` ?[^\s\p{L}\p{N}]+[\r\n]*`: c is punctuation, or a space before punctuation */
        size_t j = i + 1 + (c == ' ');
        while (j < end && s[j] < 0x80 && !(tok_uascii[s[j]] & (TOK_U_L | TOK_U_N | TOK_U_WS))) j++;
        if (j < end && s[j] >= 0x80) j = run_other(s, j, end);
        while (j < end && (s[j] == '\r' || s[j] == '\n')) j++;
        return j - i;
    }
    /* whitespace: \s*[\r\n]+ ends after the run's last CR or LF, else \s+(?!\S)|\s+ */
    size_t j = i, nl = SIZE_MAX;
    while (j < end && s[j] < 0x80 && (tok_uascii[s[j]] & TOK_U_WS)) {
        if (s[j] == '\r' || s[j] == '\n') nl = j;
        j++;
    }
    if (j < end && s[j] >= 0x80) return m_llama3_d(s, i, end, 3);
    if (nl != SIZE_MAX) return nl + 1 - i;
    return j == end || j == i + 1 ? j - i : j - 1 - i;
}

static size_t m_llama3(const uint8_t *s, size_t i, size_t end) { return m_llama3_d(s, i, end, 3); }
static size_t m_qwen2(const uint8_t *s, size_t i, size_t end) { return m_llama3_d(s, i, end, 1); }

/* \p{N} */
static size_t m_digit(const uint8_t *s, size_t i, size_t end)
{
    uch u = at(s, i, end);
    return IS_N(u) ? u.len : 0;
}

/* \p{N}+ */
static size_t m_digits(const uint8_t *s, size_t i, size_t end)
{
    return run_cls(s, i, end, TOK_U_N) - i;
}

/* [0-9][0-9][0-9] */
static size_t m_ascii3(const uint8_t *s, size_t i, size_t end)
{
    if (end - i < 3) return 0;
    for (int k = 0; k < 3; k++)
        if (s[i + k] < '0' || s[i + k] > '9') return 0;
    return 3;
}

/* [\p{P}\$\+<=>\^~\|]+ (default) and the same with ` (falcon) */
static size_t punct_run(const uint8_t *s, size_t i, size_t end, bool backtick)
{
    size_t j = i;
    while (j < end) {
        uch u = at(s, j, end);
        bool ok = (u.cls & TOK_U_P) || u.cp == '$' || u.cp == '+' || u.cp == '<' || u.cp == '=' ||
                  u.cp == '>' || u.cp == '^' || u.cp == '~' || u.cp == '|' ||
                  (backtick && u.cp == '`');
        if (!ok) break;
        j += u.len;
    }
    return j - i;
}
static size_t m_punct(const uint8_t *s, size_t i, size_t end)
{
    return punct_run(s, i, end, false);
}
static size_t m_punct_bt(const uint8_t *s, size_t i, size_t end)
{
    return punct_run(s, i, end, true);
}

/* BLOOM: " ?[^(\s|.,!?…。，、।۔،)]+" */
static bool bloom_stop(uch u)
{
    switch (u.cp) {
    case '(': case '|': case '.': case ',': case '!': case '?': case ')':
    case 0x2026: case 0x3002: case 0xFF0C: case 0x3001: case 0x0964: case 0x06D4: case 0x060C:
        return true;
    default:
        return IS_WS(u);
    }
}
static size_t m_bloom(const uint8_t *s, size_t i, size_t end)
{
    size_t p = i;
    if (s[i] == ' ' && i + 1 < end && !bloom_stop(at(s, i + 1, end))) p = i + 1;
    size_t j = p;
    while (j < end) {
        uch u = at(s, j, end);
        if (bloom_stop(u)) break;
        j += u.len;
    }
    return j > p ? j - i : 0;
}

/* DeepSeek Coder: [\r\n], \s?\p{L}+, \s?\p{P}+, [一-龥ࠀ-一가-퟿]+, \p{N} */
static size_t m_crlf(const uint8_t *s, size_t i, size_t end)
{
    (void)end;
    return s[i] == '\r' || s[i] == '\n';
}
static size_t ws_opt_run(const uint8_t *s, size_t i, size_t end, uint8_t mask)
{
    uch u = at(s, i, end);
    size_t p = i;
    if (IS_WS(u) && i + u.len < end && (at(s, i + u.len, end).cls & mask)) p = i + u.len;
    size_t j = run_cls(s, p, end, mask);
    return j > p ? j - i : 0;
}
static size_t m_ws_letters(const uint8_t *s, size_t i, size_t end)
{
    return ws_opt_run(s, i, end, TOK_U_L);
}
static size_t m_ws_punct(const uint8_t *s, size_t i, size_t end)
{
    return ws_opt_run(s, i, end, TOK_U_P);
}
static size_t m_cjk(const uint8_t *s, size_t i, size_t end)
{
    size_t j = i;
    while (j < end) {
        uch u = at(s, j, end);
        if (!((u.cp >= 0x4E00 && u.cp <= 0x9FA5) || (u.cp >= 0x0800 && u.cp <= 0x4E00) ||
              (u.cp >= 0xAC00 && u.cp <= 0xD7FF)))
            break;
        j += u.len;
    }
    return j - i;
}

typedef size_t (*matcher)(const uint8_t *s, size_t i, size_t end);

typedef struct pre_def {
    tok_pre pre;
    matcher stages[5];
} pre_def;

static const pre_def pre_defs[] = {
    {TOK_PRE_DEFAULT, {m_punct, m_gpt2, m_digits, m_ascii3, NULL}},
    {TOK_PRE_GPT2, {m_gpt2, NULL}},
    {TOK_PRE_LLAMA3, {m_llama3, NULL}},
    {TOK_PRE_QWEN2, {m_qwen2, NULL}},
    {TOK_PRE_FALCON, {m_punct_bt, m_gpt2, m_ascii3, NULL}},
    {TOK_PRE_STARCODER, {m_digit, m_gpt2, NULL}},
    {TOK_PRE_BLOOM, {m_bloom, NULL}},
    {TOK_PRE_VIKING, {m_bloom, m_digit, NULL}},
    {TOK_PRE_DEEPSEEK_CODER, {m_crlf, m_ws_letters, m_ws_punct, m_cjk, m_digit}},
};

/* Names (tokenizer.ggml.pre) llama.cpp accepts for byte-level BPE, and what they run. Names of
 * pre-tokenizers not implemented here are absent: they are refused as unknown. */
static const struct {
    const char *name;
    tok_pre pre;
} pre_names[] = {
    {"default", TOK_PRE_DEFAULT},
    {"llama3", TOK_PRE_LLAMA3}, {"llama-v3", TOK_PRE_LLAMA3}, {"llama-bpe", TOK_PRE_LLAMA3},
    {"falcon3", TOK_PRE_LLAMA3}, {"falcon-h1", TOK_PRE_LLAMA3}, {"pixtral", TOK_PRE_LLAMA3},
    {"midm-2.0", TOK_PRE_LLAMA3}, {"lfm2", TOK_PRE_LLAMA3},
    {"dbrx", TOK_PRE_LLAMA3}, {"smaug-bpe", TOK_PRE_LLAMA3},
    {"chatglm-bpe", TOK_PRE_LLAMA3}, {"glm4", TOK_PRE_LLAMA3},
    {"qwen2", TOK_PRE_QWEN2}, {"stablelm2", TOK_PRE_QWEN2}, {"megrez", TOK_PRE_QWEN2},
    {"deepseek-r1-qwen", TOK_PRE_QWEN2}, {"kormo", TOK_PRE_QWEN2},
    {"falcon", TOK_PRE_FALCON},
    {"gpt-2", TOK_PRE_GPT2}, {"phi-2", TOK_PRE_GPT2}, {"jina-es", TOK_PRE_GPT2},
    {"jina-de", TOK_PRE_GPT2}, {"gigachat", TOK_PRE_GPT2}, {"jina-v1-en", TOK_PRE_GPT2},
    {"jina-v2-es", TOK_PRE_GPT2}, {"jina-v2-de", TOK_PRE_GPT2}, {"jina-v2-code", TOK_PRE_GPT2},
    {"roberta-bpe", TOK_PRE_GPT2}, {"mpt", TOK_PRE_GPT2}, {"olmo", TOK_PRE_GPT2},
    {"jais", TOK_PRE_GPT2}, {"a.x-4.0", TOK_PRE_GPT2}, {"mellum", TOK_PRE_GPT2},
    {"exaone4", TOK_PRE_GPT2},
    {"starcoder", TOK_PRE_STARCODER}, {"refact", TOK_PRE_STARCODER},
    {"command-r", TOK_PRE_STARCODER}, {"smollm", TOK_PRE_STARCODER},
    {"codeshell", TOK_PRE_STARCODER}, {"exaone", TOK_PRE_STARCODER},
    {"minerva-7b", TOK_PRE_STARCODER},
    {"bloom", TOK_PRE_BLOOM}, {"poro-chat", TOK_PRE_BLOOM}, {"gpt3-finnish", TOK_PRE_BLOOM},
    {"viking", TOK_PRE_VIKING},
    {"deepseek-coder", TOK_PRE_DEEPSEEK_CODER},
};

bool ingot__tok_pre_from_name(const char *s, size_t n, tok_pre *pre, const char **name)
{
    for (size_t i = 0; i < sizeof pre_names / sizeof pre_names[0]; i++) {
        const char *c = pre_names[i].name;
        size_t cl = ing_strlen(c);
        if (cl == n && ING_MEMCMP(c, s, n) == 0) {
            *pre = pre_names[i].pre;
            *name = c;
            return true;
        }
    }
    return false;
}

typedef struct split_ctx {
    const matcher *stages;
    const uint8_t *s;
    tok_emit_fn emit;
    void *ctx;
} split_ctx;

static ingot_status split(const split_ctx *c, unsigned k, size_t start, size_t end)
{
    matcher m = k < 5 ? c->stages[k] : NULL;
    if (!m) return c->emit(c->ctx, start, end - start);
    size_t gap = start, i = start;
    while (i < end) {
        size_t len = m(c->s, i, end);
        if (!len) {
            i += at(c->s, i, end).len;
            continue;
        }
        if (gap < i) ING_TRY(split(c, k + 1, gap, i));
        ING_TRY(split(c, k + 1, i, i + len));
        i += len;
        gap = i;
    }
    if (gap < end) ING_TRY(split(c, k + 1, gap, end));
    return INGOT_OK;
}

ingot_status ingot__tok_pretokenize(tok_pre pre, const uint8_t *s, size_t n, tok_emit_fn emit,
                                    void *ctx)
{
    if (!n) return INGOT_OK;
    if (pre == TOK_PRE_NONE) return emit(ctx, 0, n);
    const pre_def *d = NULL;
    for (size_t i = 0; i < sizeof pre_defs / sizeof pre_defs[0]; i++)
        if (pre_defs[i].pre == pre) d = &pre_defs[i];
    if (!d) return INGOT_MISUSE;
    if (pre == TOK_PRE_GPT2) {
        for (size_t i = 0; i < n;) {
            size_t len = m_gpt2_ascii(s, i, n);
            ING_TRY(emit(ctx, i, len));
            i += len;
        }
        return INGOT_OK;
    }
    if (pre == TOK_PRE_LLAMA3) {
        for (size_t i = 0; i < n;) {
            size_t len = m_llama3_ascii(s, i, n);
            ING_TRY(emit(ctx, i, len));
            i += len;
        }
        return INGOT_OK;
    }
    if (pre == TOK_PRE_QWEN2) {
        /* one stage that matches everywhere: no recursion, no gaps */
        matcher m = d->stages[0];
        for (size_t i = 0; i < n;) {
            size_t len = m(s, i, n);
            ING_TRY(emit(ctx, i, len));
            i += len;
        }
        return INGOT_OK;
    }
    split_ctx c = {d->stages, s, emit, ctx};
    return split(&c, 0, 0, n);
}
