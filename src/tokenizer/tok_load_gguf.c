/*
 * tok_load_gguf.c - a tokenizer from GGUF metadata (tokenizer.ggml.*: model, pre, tokens, scores,
 * token_type, merges, special ids, add_bos_token/add_eos_token/add_space_prefix), read through the
 * public ingot_file metadata API. Key meanings and defaults follow llama.cpp's llama-vocab.cpp
 * (see ../shared/formats/gguf.md for the container).
 */
#include "error.h"
#include "tok_internal.h"

#define KEY_MODEL "tokenizer.ggml.model"
#define KEY_PRE "tokenizer.ggml.pre"
#define KEY_TOKENS "tokenizer.ggml.tokens"
#define KEY_SCORES "tokenizer.ggml.scores"
#define KEY_TYPES "tokenizer.ggml.token_type"
#define KEY_MERGES "tokenizer.ggml.merges"

static ingot_status kerr(ingot_error *err, ingot_status st, const char *key, const char *msg)
{
    return ingot__err(err, st, INGOT_NO_OFFSET, key, ing_strlen(key), "%s", msg);
}

static bool str_is(const char *s, size_t n, const char *lit)
{
    size_t l = ing_strlen(lit);
    return n == l && ING_MEMCMP(s, lit, l) == 0;
}

/* An integer-valued special id (any integer type); -1 when absent or UINT32_MAX / -1. */
static ingot_status get_id(const ingot_file *f, const char *key, int64_t *out, ingot_error *err)
{
    ingot_meta_info m;
    if (ingot_file_meta_find(f, key, &m) != INGOT_OK) return INGOT_OK;
    if (m.is_array) return kerr(err, INGOT_WRONG_TYPE, key, "token id is an array");
    switch (m.type) {
    case INGOT_META_U8: case INGOT_META_U16: case INGOT_META_U32: case INGOT_META_U64:
        *out = m.v.u >= UINT32_MAX ? -1 : (int64_t)m.v.u;
        return INGOT_OK;
    case INGOT_META_I8: case INGOT_META_I16: case INGOT_META_I32: case INGOT_META_I64:
        *out = m.v.i < 0 ? -1 : m.v.i > (int64_t)UINT32_MAX ? INT64_MAX : m.v.i;
        return INGOT_OK;
    default:
        return kerr(err, INGOT_WRONG_TYPE, key, "token id is not an integer");
    }
}

static ingot_status get_flag(const ingot_file *f, const char *key, int *out, ingot_error *err)
{
    ingot_meta_info m;
    if (ingot_file_meta_find(f, key, &m) != INGOT_OK) return INGOT_OK;
    if (m.is_array || m.type != INGOT_META_BOOL)
        return kerr(err, INGOT_WRONG_TYPE, key, "expected a bool");
    *out = m.v.b ? 1 : 0;
    return INGOT_OK;
}

ingot_status ingot__tok_load_gguf(const ingot_file *f, const ingot_allocator *a,
                                  ingot_tokenizer **out, ingot_error *err)
{
    ingot_meta_info m;
    const char *s;
    size_t sl;
    if (ingot_file_meta_find(f, KEY_MODEL, &m) != INGOT_OK)
        return kerr(err, INGOT_NOT_FOUND, KEY_MODEL, "the file has no tokenizer");
    if (m.is_array || m.type != INGOT_META_STRING)
        return kerr(err, INGOT_WRONG_TYPE, KEY_MODEL, "expected a string");
    s = m.data;
    sl = (size_t)m.count;
    tok_kind kind;
    if (str_is(s, sl, "gpt2")) kind = TOK_BPE;
    else if (str_is(s, sl, "llama")) kind = TOK_SPM;
    else if (str_is(s, sl, "bert"))
        return kerr(err, INGOT_UNSUPPORTED, KEY_MODEL, "WordPiece (\"bert\") is not supported");
    else if (str_is(s, sl, "t5"))
        return kerr(err, INGOT_UNSUPPORTED, KEY_MODEL, "Unigram (\"t5\") is not supported");
    else
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, KEY_MODEL,
                          sizeof KEY_MODEL - 1, "tokenizer model \"%.*s\" is not supported",
                          (int)(sl > 40 ? 40 : sl), s);

    tok_pre pre = TOK_PRE_NONE;
    const char *pre_name = NULL;
    if (kind == TOK_BPE) {
        if (ingot_file_meta_find(f, KEY_PRE, &m) == INGOT_OK) {
            if (m.is_array || m.type != INGOT_META_STRING)
                return kerr(err, INGOT_WRONG_TYPE, KEY_PRE, "expected a string");
            if (!ingot__tok_pre_from_name(m.data, (size_t)m.count, &pre, &pre_name))
                return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, KEY_PRE,
                                  sizeof KEY_PRE - 1, "pre-tokenizer \"%.*s\" is not supported",
                                  (int)(m.count > 40 ? 40 : m.count), (const char *)m.data);
        } else {
            pre = TOK_PRE_DEFAULT; /* llama.cpp: a missing pre means "default" */
            pre_name = "default";
        }
    }

    if (ingot_file_meta_find(f, KEY_TOKENS, &m) != INGOT_OK)
        return kerr(err, INGOT_BAD_METADATA, KEY_TOKENS, "missing");
    if (!m.is_array || m.type != INGOT_META_STRING)
        return kerr(err, INGOT_WRONG_TYPE, KEY_TOKENS, "expected an array of strings");
    if (m.count > TOK_MAX_VOCAB)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, KEY_TOKENS, sizeof KEY_TOKENS - 1,
                          "%llu tokens: more than the limit of %u",
                          (unsigned long long)m.count, TOK_MAX_VOCAB);
    uint32_t n = (uint32_t)m.count;
    uint64_t tok_idx = m.index;
    tok_build b;
    ingot_status st = ingot__tok_build_init(&b, a, n, err);
    if (st != INGOT_OK) return st;
    b.kind = kind;
    b.pre = pre;
    b.pre_name = pre_name;
    b.where = KEY_TOKENS;
    for (uint32_t i = 0; i < n; i++) {
        if ((st = ingot_file_meta_array_string(f, tok_idx, i, &s, &sl)) != INGOT_OK) {
            st = ingot__err(err, st, INGOT_NO_OFFSET, KEY_TOKENS, sizeof KEY_TOKENS - 1,
                            "element %u unreadable", i);
            goto done;
        }
        /* GGUF tokens are unique by position: the same text twice is allowed (later wins) */
        if ((st = ingot__tok_build_set(&b, i, s, sl, err)) != INGOT_OK) goto done;
    }

    if (ingot_file_meta_find(f, KEY_SCORES, &m) == INGOT_OK) {
        if (!m.is_array || m.type != INGOT_META_F32) {
            st = kerr(err, INGOT_WRONG_TYPE, KEY_SCORES, "expected an array of f32");
            goto done;
        }
        if (m.count != n) {
            st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, KEY_SCORES,
                            sizeof KEY_SCORES - 1, "%llu scores for %u tokens",
                            (unsigned long long)m.count, n);
            goto done;
        }
        if ((st = ingot_file_meta_array_read(f, m.index, INGOT_META_F32, 0, n, b.score)) !=
            INGOT_OK) {
            st = kerr(err, st, KEY_SCORES, "unreadable");
            goto done;
        }
        for (uint32_t i = 0; i < n; i++)
            if (b.score[i] != b.score[i]) {
                st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, KEY_SCORES,
                                sizeof KEY_SCORES - 1, "score %u is NaN", i);
                goto done;
            }
    } else if (kind == TOK_SPM) {
        st = kerr(err, INGOT_BAD_METADATA, KEY_SCORES, "a SentencePiece vocabulary needs scores");
        goto done;
    }

    if (ingot_file_meta_find(f, KEY_TYPES, &m) == INGOT_OK) {
        if (!m.is_array || m.type != INGOT_META_I32) {
            st = kerr(err, INGOT_WRONG_TYPE, KEY_TYPES, "expected an array of i32");
            goto done;
        }
        if (m.count != n) {
            st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, KEY_TYPES,
                            sizeof KEY_TYPES - 1, "%llu types for %u tokens",
                            (unsigned long long)m.count, n);
            goto done;
        }
        int32_t chunk[512];
        for (uint32_t i = 0; i < n; i += 512) {
            uint32_t k = n - i < 512 ? n - i : 512;
            if ((st = ingot_file_meta_array_read(f, m.index, INGOT_META_I32, i, k, chunk)) !=
                INGOT_OK) {
                st = kerr(err, st, KEY_TYPES, "unreadable");
                goto done;
            }
            for (uint32_t j = 0; j < k; j++) {
                if (chunk[j] < 0 || chunk[j] > TOK_T_BYTE) {
                    st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, KEY_TYPES,
                                    sizeof KEY_TYPES - 1, "token %u has unknown type %d", i + j,
                                    chunk[j]);
                    goto done;
                }
                b.type[i + j] = (uint8_t)chunk[j];
            }
        }
    }

    if (kind == TOK_BPE) {
        if (ingot_file_meta_find(f, KEY_MERGES, &m) != INGOT_OK) {
            st = kerr(err, INGOT_BAD_METADATA, KEY_MERGES, "missing (byte-level BPE needs it)");
            goto done;
        }
        if (!m.is_array || m.type != INGOT_META_STRING) {
            st = kerr(err, INGOT_WRONG_TYPE, KEY_MERGES, "expected an array of strings");
            goto done;
        }
        if (m.count > TOK_MAX_MERGES) {
            st = kerr(err, INGOT_LIMIT, KEY_MERGES, "too many merges");
            goto done;
        }
        b.where = KEY_MERGES;
        for (uint64_t i = 0; i < m.count; i++) {
            if ((st = ingot_file_meta_array_string(f, m.index, i, &s, &sl)) != INGOT_OK) {
                st = kerr(err, st, KEY_MERGES, "element unreadable");
                goto done;
            }
            size_t sp = 1; /* llama.cpp: the first space after the first byte */
            while (sp < sl && s[sp] != ' ') sp++;
            if (sl < 3 || sp >= sl) {
                st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, KEY_MERGES,
                                sizeof KEY_MERGES - 1, "merge %llu is not \"LEFT RIGHT\"",
                                (unsigned long long)i);
                goto done;
            }
            if ((st = ingot__tok_build_merge(&b, s, sp, s + sp + 1, sl - sp - 1, err)) !=
                INGOT_OK)
                goto done;
        }
    }

    if (kind == TOK_SPM) {
        b.bos = 1, b.eos = 2, b.unk = 0; /* llama.cpp's defaults for "llama" */
    }
    /* (llama.cpp has no default BOS for the GLM names either: only the file's, read next) */
    if ((st = get_id(f, "tokenizer.ggml.bos_token_id", &b.bos, err)) != INGOT_OK ||
        (st = get_id(f, "tokenizer.ggml.eos_token_id", &b.eos, err)) != INGOT_OK ||
        (st = get_id(f, "tokenizer.ggml.unknown_token_id", &b.unk, err)) != INGOT_OK ||
        (st = get_id(f, "tokenizer.ggml.padding_token_id", &b.pad, err)) != INGOT_OK ||
        (st = get_flag(f, "tokenizer.ggml.add_bos_token", &b.add_bos, err)) != INGOT_OK ||
        (st = get_flag(f, "tokenizer.ggml.add_eos_token", &b.add_eos, err)) != INGOT_OK)
        goto done;
    int prefix = -1;
    if ((st = get_flag(f, "tokenizer.ggml.add_space_prefix", &prefix, err)) != INGOT_OK)
        goto done;
    if (prefix == 0) b.space_prefix = TOK_PREFIX_NONE;
    /* llama.cpp sets ignore_merges and add_bos for these names (not for dbrx, smaug-bpe, the
     * GLM names, which share the pattern) */
    static const char *const l3[] = {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1",
                                     "pixtral", "midm-2.0", "lfm2", NULL};
    for (int k = 0; kind == TOK_BPE && pre_name && l3[k]; k++)
        if (str_is(pre_name, ing_strlen(pre_name), l3[k])) {
            b.ignore_merges = true;
            b.default_bos = true;
        }
    b.where = "tokenizer.ggml";
    st = ingot__tok_finish(&b, out, err);
done:
    ingot__tok_build_free(&b);
    return st;
}
