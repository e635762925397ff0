/*
 * lm_text.c - the text side of ingot_lm_generate: generated tokens decoded through the
 * tokenizer's streaming decoder, stop strings matched over that text (spanning tokens, starting
 * and ending inside one), and the text that could still become a stop string held back from
 * on_text until it is resolved. One allocation per call, made before the prompt. Beam search
 * runs the same matcher over each hypothesis' own decoder state and held text (a probe).
 */
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "lm_internal.h"

ingot_status ingot__lm_text_init(lm_text *g, const ingot_lm_generate_opts *o,
                                 const ingot_allocator *al, ingot_error *err)
{
    memset(g, 0, sizeof *g);
    g->matched = -1;
    if (!o->n_stop_strings && !o->on_text) return INGOT_OK;
    if (!o->tokenizer)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, "tokenizer", 9,
                          "lm_generate: stop strings and on_text need a tokenizer");
    if (o->n_stop_strings && !o->stop_strings)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, "stop_strings", 12,
                          "lm_generate: %zu stop strings but stop_strings is NULL",
                          o->n_stop_strings);
    if (o->n_stop_strings > INGOT_LM_MAX_STOP_STRINGS)
        return ingot__err(err, INGOT_E_LIMIT, INGOT_NO_OFFSET, "stop_strings", 12,
                          "lm_generate: %zu stop strings (at most %u)", o->n_stop_strings,
                          INGOT_LM_MAX_STOP_STRINGS);
    size_t longest = 0;
    for (size_t i = 0; i < o->n_stop_strings; i++) {
        const char *p = o->stop_strings[i];
        size_t len = 0;
        if (p) {
            if (o->stop_lens) len = o->stop_lens[i];
            else
                while (len <= INGOT_LM_MAX_STOP_LEN && p[len]) len++;
        }
        char where[32];
        size_t wl = ingot__fmt(where, sizeof where, "stop_strings[%zu]", i);
        if (!p || !len)
            return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, where, wl,
                              "lm_generate: stop string %zu is %s", i, p ? "empty" : "NULL");
        if (len > INGOT_LM_MAX_STOP_LEN)
            return ingot__err(err, INGOT_E_LIMIT, INGOT_NO_OFFSET, where, wl,
                              "lm_generate: stop string %zu is longer than %u bytes", i,
                              INGOT_LM_MAX_STOP_LEN);
        if (len > longest) longest = len;
    }
    g->tok = o->tokenizer;
    g->str = o->stop_strings;
    g->n = o->n_stop_strings;
    g->on_text = o->on_text;
    g->ctx = o->ctx;
    g->piece_cap = ingot_tokenizer_stream_max(g->tok);
    ingot_tokenizer_stream_init(&g->st, o->decode_flags);
    /* hold: what is held back (< longest) plus one push, then plus one flush */
    size_t hold_cap = longest + 2 * g->piece_cap;
    g->block_size = g->n * sizeof *g->lens + g->piece_cap + hold_cap;
    g->block = ingot__alloc(al, g->block_size);
    if (!g->block)
        return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0,
                          "lm_generate: %zu bytes for the text", g->block_size);
    g->lens = g->block;
    g->piece = (char *)(g->lens + g->n);
    g->hold = g->piece + g->piece_cap;
    g->hold_cap = hold_cap;
    for (size_t i = 0; i < g->n; i++) {
        const char *p = g->str[i];
        size_t len = 0;
        if (o->stop_lens) len = o->stop_lens[i];
        else
            while (p[len]) len++;
        g->lens[i] = len;
        uint8_t c = (uint8_t)p[0];
        g->first[c >> 3] |= (uint8_t)(1u << (c & 7));
    }
    return INGOT_OK;
}

void ingot__lm_text_free(lm_text *g, const ingot_allocator *al)
{
    if (g->block) ingot__free(al, g->block, g->block_size);
}

/* Hands hold[0, n) to on_text and drops it from the hold; false if on_text says stop. */
static bool text_release(lm_text *g, size_t n)
{
    bool go_on = true;
    if (n && g->on_text) go_on = g->on_text(g->ctx, g->hold, n);
    g->bytes += n;
    memmove(g->hold, g->hold + n, g->nhold - n);
    g->nhold -= n;
    return go_on;
}

/* Appends p[0, n) to the held text and matches the stop strings over it: the earliest full
 * occurrence (lowest index at one place) stops, the text before it is released; otherwise
 * everything before the first place where the held text is a proper prefix of a stop string is
 * released (all of it when `final`). Every byte released earlier was no such place, so no
 * occurrence can start before the hold. */
static lm_text_verdict text_push(lm_text *g, const char *p, size_t n, bool final)
{
    memcpy(g->hold + g->nhold, p, n);
    g->nhold += n;
    size_t keep = g->nhold;
    for (size_t i = 0; i < g->nhold; i++) {
        uint8_t c = (uint8_t)g->hold[i];
        if (!(g->first[c >> 3] >> (c & 7) & 1)) continue;
        size_t rest = g->nhold - i;
        for (size_t k = 0; k < g->n; k++) {
            size_t m = g->lens[k] < rest ? g->lens[k] : rest;
            if (memcmp(g->hold + i, g->str[k], m)) continue;
            if (m == g->lens[k]) {
                g->matched = (int32_t)k;
                text_release(g, i);
                g->nhold = 0;
                return LM_TEXT_STOP_STRING;
            }
            if (keep == g->nhold) keep = i;
        }
    }
    return text_release(g, final ? g->nhold : keep) ? LM_TEXT_GO_ON : LM_TEXT_STOP_CALLBACK;
}

/* The text of generated token t (outside the tokenizer's vocabulary: none). */
lm_text_verdict ingot__lm_text_token(lm_text *g, int32_t t)
{
    size_t n = 0;
    if (ingot_tokenizer_stream_push(g->tok, &g->st, t, g->piece, g->piece_cap, &n) != INGOT_OK)
        n = 0;
    return text_push(g, g->piece, n, false);
}

/* End of the text: the decoder's held bytes (U+FFFD), a last match, the rest released. */
lm_text_verdict ingot__lm_text_finish(lm_text *g)
{
    size_t n = 0;
    if (ingot_tokenizer_stream_flush(g->tok, &g->st, g->piece, g->piece_cap, &n) != INGOT_OK)
        n = 0;
    return text_push(g, g->piece, n, true);
}

lm_text_verdict ingot__lm_text_probe(lm_text *g, ingot_tokenizer_stream *st, char *hold,
                                     size_t *nhold, int32_t t)
{
    ingot_tokenizer_stream own = g->st;
    char *own_hold = g->hold;
    size_t own_n = g->nhold;
    uint64_t own_bytes = g->bytes;
    int32_t own_matched = g->matched;
    ingot_lm_text_fn fn = g->on_text;
    g->st = *st;
    g->hold = hold;
    g->nhold = *nhold;
    g->on_text = NULL;
    lm_text_verdict v = ingot__lm_text_token(g, t);
    *st = g->st;
    *nhold = g->nhold;
    g->st = own;
    g->hold = own_hold;
    g->nhold = own_n;
    g->bytes = own_bytes;
    g->matched = own_matched;
    g->on_text = fn;
    return v;
}
