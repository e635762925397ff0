/*
 * fuzz_tok_gguf.c - structure-aware libFuzzer target for GGUF vocabulary arrays. The input
 * describes tokenizer.ggml.* metadata: a header byte (model gpt2 / llama / bert / unknown, a
 * pre-tokenizer name among implemented, refused and unknown ones, whether scores, token types,
 * merges and the 256 byte-level tokens are present), special ids and flags, then NUL-separated
 * token texts (any bytes: duplicates, bad UTF-8, empty) and, after "\x01\x01", merges. The GGUF
 * is written in memory with ingot_writer and opened with ingot_tokenizer_open_buffer: a refusal
 * must be a clean status with its error record; a tokenizer that opens is exercised
 * (tok_exercise.h).
 */
#include "tok_exercise.h"

static const char *const pres[8] = {"gpt-2", "llama-bpe", "qwen2", "starcoder",
                                    "default", "bloom", "tekken", "\xff-bad"};

static size_t bl_char(unsigned b, char *o)
{
    unsigned cp = b;
    if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) {
        unsigned k = 0;
        for (unsigned c = 0; c < b; c++)
            if (!((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE)) k++;
        cp = 0x100 + k;
    }
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    if (n < 4) return 0;
    uint8_t h = d[0], h2 = d[1], bos = d[2], eos = d[3];
    static const char *const models[4] = {"gpt2", "llama", "bert", "rwkv"};
    enum { MAXT = 600, MAXM = 300 };
    static char bytes_text[256][2];
    static const void *tp[MAXT], *mp[MAXM];
    static size_t tl[MAXT], ml[MAXM];
    static int32_t types[MAXT];
    static float scores[MAXT];
    size_t nt = 0, nm = 0;
    if (h2 & 1)
        for (unsigned b = 0; b < 256; b++) {
            tl[nt] = bl_char(b, bytes_text[b]);
            tp[nt++] = bytes_text[b];
        }
    size_t i = 4;
    bool in_merges = false;
    while (i < n) {
        size_t e = i;
        while (e < n && d[e] != 0) e++;
        if (e - i == 2 && d[i] == 1 && d[i + 1] == 1) {
            in_merges = true;
        } else if (in_merges) {
            if (nm < MAXM) {
                mp[nm] = d + i;
                ml[nm++] = e - i;
            }
        } else if (nt < MAXT) {
            tp[nt] = d + i;
            tl[nt++] = e - i;
        }
        i = e + 1;
    }
    if (!nt) return 0;
    for (size_t k = 0; k < nt; k++) {
        uint8_t v = d[(k * 7 + 5) % n];
        types[k] = (h2 & 8) ? (int32_t)(v % 9) - 1 : (v % 5 == 0 ? 3 : 1); /* -1..7 or sane */
        scores[k] = (float)((int8_t)v) / 4.0f;
    }
    ingot_writer_opts wo = {0};
    wo.format = "gguf";
    ingot_writer *w = NULL;
    if (ingot_writer_new(&wo, &w, NULL) != INGOT_OK) return 0;
    ingot_writer_set_string(w, "tokenizer.ggml.model", models[h & 3]);
    if (h & 0x80) ingot_writer_set_string(w, "tokenizer.ggml.pre", pres[(h >> 2) & 7]);
    if (ingot_writer_set_string_array(w, "tokenizer.ggml.tokens", INGOT_META_STRING, tp, tl,
                                      nt) != INGOT_OK) {
        ingot_writer_free(w); /* e.g. text that is not UTF-8: the writer refuses it */
        return 0;
    }
    if (h & 0x20)
        ingot_writer_set_array(w, "tokenizer.ggml.scores", INGOT_META_F32, scores,
                               (h2 & 2) ? nt - 1 : nt);
    if (h & 0x40) ingot_writer_set_array(w, "tokenizer.ggml.token_type", INGOT_META_I32, types, nt);
    if (nm && ingot_writer_set_string_array(w, "tokenizer.ggml.merges", INGOT_META_STRING, mp, ml,
                                            nm) != INGOT_OK) {
        ingot_writer_free(w);
        return 0;
    }
    if (h2 & 4) ingot_writer_set_u32(w, "tokenizer.ggml.bos_token_id", bos);
    if (h2 & 16) ingot_writer_set_i32(w, "tokenizer.ggml.eos_token_id", (int8_t)eos);
    if (h2 & 32) ingot_writer_set_bool(w, "tokenizer.ggml.add_bos_token", (h2 & 64) != 0);
    if (h2 & 128) ingot_writer_set_bool(w, "tokenizer.ggml.add_space_prefix", (eos & 1) != 0);
    void *buf = NULL;
    size_t size = 0;
    if (ingot_writer_begin_mem(w, NULL) != INGOT_OK ||
        ingot_writer_commit_mem(w, &buf, &size, NULL) != INGOT_OK) {
        ingot_writer_free(w);
        return 0;
    }
    ingot_writer_free(w);
    ingot_tokenizer *t = NULL;
    ingot_error e;
    fz_err_reset(&e);
    ingot_status st = ingot_tokenizer_open_buffer(buf, size, NULL, &t, &e);
    fz_err_check(&e, st);
    if (st == INGOT_OK) {
        tok_exercise(t, d + 4, n - 4 < 200 ? n - 4 : 200);
        ingot_tokenizer_close(t);
    } else {
        FZ_CHECK(t == NULL);
    }
    ingot_writer_free_mem(NULL, buf, size);
    return 0;
}
