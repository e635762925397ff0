/*
 * tok_exercise.h - what the tokenizer fuzz targets do with a tokenizer that opened: every getter,
 * encode (size query, exact cap, cap - 1, caller scratch and none) of a few texts with every flag
 * combination, ids inside the vocabulary, decode (size query, exact), the streaming decoder
 * emitting valid UTF-8 only, and decode(encode(s)) == s for byte-level BPE without user-defined
 * tokens (their text is matched as is but decoded through the byte map) and without control
 * tokens in the output (they decode to nothing).
 */
#ifndef INGOT_FUZZ_TOK_EXERCISE_H
#define INGOT_FUZZ_TOK_EXERCISE_H

#include "fuzz_common.h"
#include "tok_internal.h"

static inline void tok_encode_check(const ingot_tokenizer *t, const uint8_t *s, size_t n,
                                    uint32_t fl)
{
    size_t need = 0;
    ingot_error e;
    fz_err_reset(&e);
    ingot_status st = ingot_tokenizer_encode(t, (const char *)s, n, fl, NULL, 0, &need, NULL, 0,
                                             &e);
    fz_err_check(&e, st);
    if (st != INGOT_OK) {
        FZ_CHECK(st == INGOT_BAD_METADATA || st == INGOT_LIMIT); /* vocabulary without <unk> */
        return;
    }
    FZ_CHECK(need <= ingot_tokenizer_max_tokens(n));
    int32_t *ids = malloc((need + 1) * sizeof *ids);
    size_t ss = ingot_tokenizer_scratch_size(t, n);
    uint64_t *scratch = malloc(ss + 8);
    FZ_CHECK(ids && scratch && ss);
    size_t got = 0;
    FZ_ST(ingot_tokenizer_encode(t, (const char *)s, n, fl, ids, need, &got, scratch, ss, NULL),
          INGOT_OK);
    FZ_CHECK(got == need);
    if (need) {
        FZ_ST(ingot_tokenizer_encode(t, (const char *)s, n, fl, ids, need - 1, &got, NULL, 0, NULL),
              INGOT_RANGE);
        FZ_CHECK(got == need);
    }
    uint32_t nv = ingot_tokenizer_vocab_size(t);
    for (size_t i = 0; i < need; i++) FZ_CHECK(ids[i] >= 0 && (uint32_t)ids[i] < nv);
    size_t dl = 0;
    FZ_ST(ingot_tokenizer_decode(t, ids, need, 0, NULL, 0, &dl, NULL), INGOT_OK);
    char *out = malloc(dl + 1);
    size_t dl2 = 0;
    FZ_ST(ingot_tokenizer_decode(t, ids, need, 0, out, dl, &dl2, NULL), INGOT_OK);
    FZ_CHECK(dl2 == dl);
    bool user = t->n_user != 0; /* user-defined tokens, or a control/unknown id in the output */
    for (size_t i = 0; i < need; i++)
        user |= t->type[ids[i]] == TOK_T_CONTROL || t->type[ids[i]] == TOK_T_UNKNOWN;
    if (t->kind == TOK_BPE && !user && !(fl & INGOT_ENCODE_PARSE_SPECIAL) &&
        !(fl & INGOT_ENCODE_ADD_SPECIAL))
        FZ_CHECK(dl == n && (n == 0 || memcmp(out, s, n) == 0));
    /* streaming: valid UTF-8 only, and for valid text the same bytes as decode */
    size_t cap = ingot_tokenizer_stream_max(t);
    char *piece = malloc(cap);
    char *all = malloc(3 * dl + 8);
    size_t o = 0, pl = 0;
    ingot_tokenizer_stream stm;
    ingot_tokenizer_stream_init(&stm, 0);
    for (size_t i = 0; i < need; i++) {
        FZ_ST(ingot_tokenizer_stream_push(t, &stm, ids[i], piece, cap, &pl), INGOT_OK);
        FZ_CHECK(pl <= cap && fz_utf8((const uint8_t *)piece, pl, true));
        FZ_CHECK(o + pl <= 3 * dl + 8);
        memcpy(all + o, piece, pl);
        o += pl;
    }
    FZ_ST(ingot_tokenizer_stream_flush(t, &stm, piece, cap, &pl), INGOT_OK);
    FZ_CHECK(pl <= 3);
    memcpy(all + o, piece, pl);
    o += pl;
    FZ_CHECK(fz_utf8((const uint8_t *)all, o, true));
    if (fz_utf8((const uint8_t *)out, dl, true)) FZ_CHECK(o == dl && memcmp(all, out, dl) == 0);
    free(all);
    free(piece);
    free(out);
    free(scratch);
    free(ids);
}

static inline void tok_exercise(const ingot_tokenizer *t, const uint8_t *extra, size_t extra_n)
{
    uint32_t nv = ingot_tokenizer_vocab_size(t);
    FZ_CHECK(nv > 0);
    const char *k = ingot_tokenizer_kind(t);
    FZ_CHECK(!strcmp(k, "bpe") || !strcmp(k, "spm") || !strcmp(k, "bpe-fallback"));
    FZ_CHECK(ingot_tokenizer_pre(t) != NULL);
    for (int r = 0; r < 4; r++) {
        int32_t id = ingot_tokenizer_special(t, (ingot_token_role)r);
        FZ_CHECK(id == -1 || (id >= 0 && (uint32_t)id < nv));
    }
    if (ingot_tokenizer_adds_bos(t)) FZ_CHECK(ingot_tokenizer_special(t, INGOT_TOKEN_BOS) >= 0);
    for (uint32_t i = 0; i < nv && i < 512; i++) {
        const char *s;
        size_t l;
        FZ_ST(ingot_tokenizer_token_text(t, (int32_t)i, &s, &l), INGOT_OK);
        FZ_CHECK(l <= TOK_MAX_TOKEN_BYTES);
        if (l) FZ_CHECK(s != NULL);
        (void)ingot_tokenizer_is_control(t, (int32_t)i);
        size_t dl = 0;
        int32_t id = (int32_t)i;
        FZ_ST(ingot_tokenizer_decode(t, &id, 1, INGOT_DECODE_SPECIAL, NULL, 0, &dl, NULL),
              INGOT_OK);
        FZ_CHECK(dl <= TOK_MAX_TOKEN_BYTES);
    }
    const char *s;
    size_t l;
    FZ_ST(ingot_tokenizer_token_text(t, (int32_t)nv, &s, &l), INGOT_RANGE);
    static const char *const texts[] = {"", "Hello world", " \n\n  x's 123\t",
                                        "\xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x8c\x8d\xff\xc3"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        tok_encode_check(t, (const uint8_t *)texts[i], strlen(texts[i]), (uint32_t)i & 3);
    if (extra_n)
        for (uint32_t fl = 0; fl < 4; fl++) tok_encode_check(t, extra, extra_n, fl);
}

#endif
