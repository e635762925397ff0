/*
 * tok_export.c - a loaded vocabulary written back out, for converters (tokenizer.h, the export
 * section): per-token scores and GGUF types, the merges in rank order (or, for SentencePiece
 * vocabularies, the ones Hugging Face's converter derives from the scores), and a Hugging Face
 * tokenizer.json + tokenizer_config.json. Reads the finished tokenizer only.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "json.h"
#include "tok_internal.h"

const char *ingot_tokenizer_gguf_model(const ingot_tokenizer *t)
{
    if (!t) return NULL;
    return t->kind == TOK_BPE ? "gpt2" : "llama";
}

/* GGUF type of id: the stored one, the unknown token UNKNOWN. */
static int32_t export_type(const ingot_tokenizer *t, uint32_t id)
{
    if (t->kind != TOK_BPE && t->unk >= 0 && (uint32_t)t->unk == id) return TOK_T_UNKNOWN;
    return t->type[id] ? t->type[id] : TOK_T_NORMAL;
}

ingot_status ingot_tokenizer_token_attrs(const ingot_tokenizer *t, int32_t id, float *score,
                                         int32_t *type)
{
    if (!t) return INGOT_MISUSE;
    if (id < 0 || (uint32_t)id >= t->n_vocab) return INGOT_RANGE;
    if (type) *type = export_type(t, (uint32_t)id);
    if (score) {
        if (t->kind != TOK_BPE_FALLBACK) {
            *score = t->score[id];
        } else if (export_type(t, (uint32_t)id) != TOK_T_NORMAL) {
            *score = 0.0f;
        } else { /* SentencePiece BPE's scores: -k for the k-th normal piece */
            uint32_t k = 0;
            for (int32_t i = 0; i < id; i++) k += export_type(t, (uint32_t)i) == TOK_T_NORMAL;
            *score = -(float)k;
        }
    }
    return INGOT_OK;
}

ingot_status ingot_tokenizer_vocab_attrs(const ingot_tokenizer *t, float *scores,
                                         int32_t *types, size_t cap)
{
    if (!t) return INGOT_MISUSE;
    if (cap < t->n_vocab) return INGOT_RANGE;
    uint32_t k = 0;
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        int32_t ty = export_type(t, i);
        if (types) types[i] = ty;
        if (!scores) continue;
        if (t->kind != TOK_BPE_FALLBACK) scores[i] = t->score[i];
        else scores[i] = ty == TOK_T_NORMAL ? -(float)k++ : 0.0f;
    }
    return INGOT_OK;
}

/* ---- merges ---- */

typedef struct spm_merge {
    int32_t l, r;
    float score;
    uint64_t order;
} spm_merge;

static int spm_merge_cmp(const void *a, const void *b)
{
    const spm_merge *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1; /* highest first */
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Length of the UTF-8 sequence starting with byte c (1 for a stray byte). */
static size_t u8len(uint8_t c)
{
    return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* SentencePiece vocabularies: for each token (in id order), each split of its text at a
 * character boundary into two tokens (ordered by the left then the right id), all sorted by
 * the token's score, highest first, ties kept in that order (transformers'
 * SentencePieceExtractor with the vocabulary's scores). */
static ingot_status spm_merges(const ingot_tokenizer *t, spm_merge **out, size_t *n_out,
                               ingot_error *err)
{
    size_t cap = 0, n = 0;
    spm_merge *m = NULL;
    for (int pass = 0; pass < 2; pass++) {
        n = 0;
        for (uint32_t id = 0; id < t->n_vocab; id++) {
            const uint8_t *s = t->arena + t->text_off[id];
            size_t len = t->text_len[id];
            size_t first = n;
            for (size_t k = u8len(s[0]); k < len; k += u8len(s[k])) {
                int32_t l = ingot__tok_find(t, s, k), r = ingot__tok_find(t, s + k, len - k);
                if (l < 0 || r < 0) continue;
                if (pass) {
                    m[n].l = l;
                    m[n].r = r;
                    m[n].score = t->score[id];
                }
                n++;
            }
            if (pass) { /* the token's own splits by (left id, right id) */
                for (size_t i = first + 1; i < n; i++)
                    for (size_t j = i; j > first && (m[j - 1].l > m[j].l ||
                                                     (m[j - 1].l == m[j].l && m[j - 1].r > m[j].r));
                         j--) {
                        spm_merge tmp = m[j];
                        m[j] = m[j - 1];
                        m[j - 1] = tmp;
                    }
            }
        }
        if (pass == 0) {
            cap = n ? n : 1;
            m = ingot__alloc(NULL, cap * sizeof *m);
            if (!m) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "merges");
        }
    }
    for (size_t i = 0; i < n; i++) m[i].order = i;
    qsort(m, n, sizeof *m, spm_merge_cmp);
    *out = m;
    *n_out = n;
    return INGOT_OK;
}

/* Slot j of the merge table: false when empty, else the pair and its rank. */
static bool slot_at(const ingot_tokenizer *t, uint64_t j, uint32_t *l, uint32_t *r,
                    uint32_t *rank)
{
    if (t->m8) {
        uint64_t v = t->mslot8[j];
        if (v == UINT64_MAX) return false;
        *l = (uint32_t)(v >> 48);
        *r = (uint32_t)(v >> 32) & 0xFFFF;
        *rank = (uint32_t)(v >> 16) & 0xFFFF;
        return true;
    }
    uint64_t k = t->mslot[j].key;
    if (k == UINT64_MAX) return false;
    uint64_t key = k >> TOK_MENTRY_BITS;
    *l = (uint32_t)(key >> 21);
    *r = (uint32_t)(key & ((1u << 21) - 1));
    *rank = (uint32_t)(k & ((1u << TOK_MENTRY_BITS) - 1));
    return true;
}

ingot_status ingot_tokenizer_merges(const ingot_tokenizer *t, int32_t *pairs, size_t cap,
                                    size_t *n, ingot_error *err)
{
    if (!t || !n) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL argument");
    *n = 0;
    if (t->kind == TOK_SPM) {
        spm_merge *m = NULL;
        size_t nm = 0;
        ING_TRY(spm_merges(t, &m, &nm, err));
        *n = nm;
        if (pairs)
            for (size_t i = 0; i < nm && i < cap; i++) {
                pairs[2 * i] = m[i].l;
                pairs[2 * i + 1] = m[i].r;
            }
        ingot__free(NULL, m, (nm ? nm : 1) * sizeof *m);
        if (pairs && cap < nm)
            return ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, 0, 0, "%zu merges", nm);
        return INGOT_OK;
    }
    /* BPE kinds: rank -> pair from the merge table (a duplicate pair's later rank is absent).
     * Both slot layouts of tok_internal.h: m8 (l << 48 | r << 32 | rank << 16 | merged) and
     * the 16-byte one (key l << 43 | r << 22 | rank). */
    size_t nm = 0, full = 0;
    for (uint64_t j = 0; t->m_mask && j <= t->m_mask; j++) {
        uint32_t l, r, rank;
        if (!slot_at(t, j, &l, &r, &rank)) continue;
        nm++;
        if ((size_t)rank + 1 > full) full = (size_t)rank + 1;
    }
    *n = nm;
    if (!pairs) return INGOT_OK;
    if (cap < nm) return ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, 0, 0, "%zu merges", nm);
    /* ranks are 0 .. full-1 with holes for duplicates: place by rank, then close the holes */
    if (!full) full = 1;
    int32_t *tmp = ingot__alloc(NULL, full * 2 * sizeof *tmp);
    if (!tmp) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "merges");
    for (size_t i = 0; i < full * 2; i++) tmp[i] = -1;
    for (uint64_t j = 0; t->m_mask && j <= t->m_mask; j++) {
        uint32_t l, r, rank;
        if (!slot_at(t, j, &l, &r, &rank)) continue;
        tmp[2 * (size_t)rank] = (int32_t)l;
        tmp[2 * (size_t)rank + 1] = (int32_t)r;
    }
    size_t o = 0;
    for (size_t i = 0; i < full && o < nm; i++)
        if (tmp[2 * i] >= 0) {
            pairs[2 * o] = tmp[2 * i];
            pairs[2 * o + 1] = tmp[2 * i + 1];
            o++;
        }
    ingot__free(NULL, tmp, full * 2 * sizeof *tmp);
    *n = o;
    return INGOT_OK;
}

/* ---- tokenizer.json ---- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool failed;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->failed) return;
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + n + 1) nc *= 2;
        if (!ingot__grow(NULL, (void **)&b->p, b->cap, nc)) {
            b->failed = true;
            return;
        }
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_int(sbuf *b, long long v)
{
    char tmp[32];
    size_t k = ingot__fmt(tmp, sizeof tmp, "%lld", v);
    sb_put(b, tmp, k);
}

/* Shrinks the text to its length + 1 (what ingot_tokenizer_export_free releases). */
static void sb_fit(sbuf *b)
{
    if (b->failed || !b->p) return;
    if (ingot__grow(NULL, (void **)&b->p, b->cap, b->n + 1)) b->cap = b->n + 1;
    else b->failed = true;
}

/* A JSON string literal of s[0..n) (the stored token texts are UTF-8 for every kind). */
static void sb_quote(sbuf *b, const void *s, size_t n)
{
    size_t need = ingot__json_quote(NULL, 0, s, n);
    if (b->failed) return;
    if (b->n + need + 1 > b->cap) {
        sb_put(b, "", 0);
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + need + 1) nc *= 2;
        if (!ingot__grow(NULL, (void **)&b->p, b->cap, nc)) {
            b->failed = true;
            return;
        }
        b->cap = nc;
    }
    ingot__json_quote(b->p + b->n, b->cap - b->n, s, n);
    b->n += need;
    b->p[b->n] = 0;
}

static void sb_token(sbuf *b, const ingot_tokenizer *t, int32_t id)
{
    if (id < 0 || (uint32_t)id >= t->n_vocab) {
        sb_str(b, "null");
        return;
    }
    sb_quote(b, t->arena + t->text_off[id], t->text_len[id]);
}

/* The pre-tokenizer regexes tokenizer.json files carry (Hugging Face's own strings). */
static const char re_llama3[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char re_qwen2[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static void free_sb(sbuf *b)
{
    if (b->p) ingot__free(NULL, b->p, b->cap);
    memset(b, 0, sizeof *b);
}

ingot_status ingot_tokenizer_export_json(const ingot_tokenizer *t, char **json, size_t *json_len,
                                         char **config, size_t *config_len, ingot_error *err)
{
    if (!t || !json || !json_len)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL argument");
    *json = NULL;
    *json_len = 0;
    if (config) *config = NULL;
    if (config_len) *config_len = 0;
    bool bpe = t->kind == TOK_BPE;
    if (bpe && t->pre != TOK_PRE_GPT2 && t->pre != TOK_PRE_LLAMA3 && t->pre != TOK_PRE_QWEN2)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, "tokenizer.ggml.pre", 18,
                          "tokenizer.json export: pre-tokenizer '%s' (gpt-2, llama-bpe and "
                          "qwen2 are written)", t->pre_name ? t->pre_name : "?");
    size_t nm = 0;
    ING_TRY(ingot_tokenizer_merges(t, NULL, 0, &nm, err));
    int32_t *pairs = ingot__alloc(NULL, (nm ? nm : 1) * 2 * sizeof *pairs);
    if (!pairs) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "merges");
    ingot_status st = ingot_tokenizer_merges(t, pairs, nm, &nm, err);
    if (st != INGOT_OK) {
        ingot__free(NULL, pairs, (nm ? nm : 1) * 2 * sizeof *pairs);
        return st;
    }
    sbuf b = {0};
    sb_str(&b, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n");
    if (bpe) {
        sb_str(&b, "  \"normalizer\": null,\n  \"pre_tokenizer\": ");
        if (t->pre == TOK_PRE_GPT2) {
            sb_str(&b, "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                       "\"trim_offsets\": true, \"use_regex\": true},\n");
        } else {
            sb_str(&b, "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
                       "\"pattern\": {\"Regex\": ");
            const char *re = t->pre == TOK_PRE_LLAMA3 ? re_llama3 : re_qwen2;
            sb_quote(&b, re, strlen(re));
            sb_str(&b, "}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": "
                       "\"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, "
                       "\"use_regex\": false}]},\n");
        }
        sb_str(&b, "  \"post_processor\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
                   "\"trim_offsets\": false, \"use_regex\": true},\n"
                   "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
                   "\"trim_offsets\": true, \"use_regex\": true},\n");
    } else {
        if (t->space_prefix == TOK_PREFIX_FIRST) {
            sb_str(&b, "  \"normalizer\": null,\n  \"pre_tokenizer\": {\"type\": \"Metaspace\", "
                       "\"replacement\": \"\\u2581\", \"prepend_scheme\": \"first\", "
                       "\"split\": false},\n");
        } else {
            sb_str(&b, "  \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [");
            if (t->space_prefix == TOK_PREFIX_EACH)
                sb_str(&b, "{\"type\": \"Prepend\", \"prepend\": \"\\u2581\"}, ");
            sb_str(&b, "{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, "
                       "\"content\": \"\\u2581\"}]},\n  \"pre_tokenizer\": null,\n");
        }
        sb_str(&b, "  \"post_processor\": null,\n"
                   "  \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": "
                   "\"Replace\", \"pattern\": {\"String\": \"\\u2581\"}, \"content\": \" \"}, "
                   "{\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}");
        if (t->space_prefix != TOK_PREFIX_NONE)
            sb_str(&b, ", {\"type\": \"Strip\", \"content\": \" \", \"start\": 1, \"stop\": 0}");
        sb_str(&b, "]},\n");
    }
    sb_str(&b, "  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": ");
    sb_token(&b, t, bpe ? -1 : t->unk);
    sb_str(&b, ", \"continuing_subword_prefix\": null, \"end_of_word_suffix\": null, "
               "\"fuse_unk\": ");
    sb_str(&b, bpe ? "false" : "true");
    sb_str(&b, ", \"byte_fallback\": ");
    sb_str(&b, bpe ? "false" : "true");
    sb_str(&b, ", \"ignore_merges\": ");
    sb_str(&b, t->ignore_merges ? "true" : "false");
    sb_str(&b, ",\n    \"vocab\": {");
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        sb_str(&b, i ? ",\n      " : "\n      ");
        sb_token(&b, t, (int32_t)i);
        sb_str(&b, ": ");
        sb_int(&b, i);
    }
    sb_str(&b, "\n    },\n    \"merges\": [");
    for (size_t i = 0; i < nm; i++) {
        sb_str(&b, i ? ",\n      [" : "\n      [");
        sb_token(&b, t, pairs[2 * i]);
        sb_str(&b, ", ");
        sb_token(&b, t, pairs[2 * i + 1]);
        sb_str(&b, "]");
    }
    sb_str(&b, nm ? "\n    ]\n  },\n" : "]\n  },\n");
    /* after the model: loaders that read in order see the vocabulary first */
    sb_str(&b, "  \"added_tokens\": [");
    bool first = true;
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        int32_t ty = export_type(t, i);
        if (ty != TOK_T_CONTROL && ty != TOK_T_USER && ty != TOK_T_UNKNOWN) continue;
        sb_str(&b, first ? "\n    {\"id\": " : ",\n    {\"id\": ");
        first = false;
        sb_int(&b, i);
        sb_str(&b, ", \"content\": ");
        sb_token(&b, t, (int32_t)i);
        sb_str(&b, ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, "
                   "\"normalized\": ");
        sb_str(&b, ty == TOK_T_USER ? "true" : "false");
        sb_str(&b, ", \"special\": ");
        sb_str(&b, ty == TOK_T_USER ? "false}" : "true}");
    }
    sb_str(&b, first ? "]\n}\n" : "\n  ]\n}\n");

    ingot__free(NULL, pairs, (nm ? nm : 1) * 2 * sizeof *pairs);

    sbuf c = {0};
    if (config) {
        sb_str(&c, "{\n  \"add_bos_token\": ");
        sb_str(&c, t->add_bos ? "true" : "false");
        sb_str(&c, ",\n  \"add_eos_token\": ");
        sb_str(&c, t->add_eos ? "true" : "false");
        static const char *const roles[4] = {"bos_token", "eos_token", "unk_token", "pad_token"};
        const int32_t ids[4] = {t->bos, t->eos, t->unk, t->pad};
        for (int r = 0; r < 4; r++) {
            sb_str(&c, ",\n  \"");
            sb_str(&c, roles[r]);
            sb_str(&c, "\": ");
            sb_token(&c, t, ids[r]);
        }
        sb_str(&c, ",\n  \"clean_up_tokenization_spaces\": false,\n  \"tokenizer_class\": ");
        sb_str(&c, !bpe ? "\"LlamaTokenizerFast\"" : t->pre == TOK_PRE_GPT2
                                                   ? "\"GPT2TokenizerFast\""
                                                   : "\"PreTrainedTokenizerFast\"");
        sb_str(&c, "\n}\n");
    }
    sb_fit(&b);
    sb_fit(&c);
    if (b.failed || c.failed) {
        free_sb(&b);
        free_sb(&c);
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "tokenizer.json text");
    }
    *json = b.p;
    *json_len = b.n;
    if (config) {
        *config = c.p;
        if (config_len) *config_len = c.n;
    }
    return INGOT_OK;
}

void ingot_tokenizer_export_free(char *text, size_t len)
{
    if (text) ingot__free(NULL, text, len + 1);
}
