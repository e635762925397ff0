/*
 * tok_load_json.c - tokenizers from JSON: Hugging Face tokenizer.json (model BPE, its vocab and
 * merges, added_tokens, the pre-tokenizer / normalizer that decide the kind) with the special
 * tokens of tokenizer_config.json, and GPT-2's encoder.json / vocab.json with vocab.bpe /
 * merges.txt. JSON is read with the core's strict pull scanner (src/core/json.h), twice: once
 * to size the vocabulary (largest id), once to fill it.
 */
#include "error.h"
#include "json.h"
#include "tok_internal.h"

typedef struct jc {
    ingot__json j;
    ingot__json_tok t;
    ingot_error *err;
    const char *where;
    uint8_t buf[TOK_MAX_TOKEN_BYTES];
    size_t blen;
} jc;

#define BAD(c, st, ...)                                                                          \
    ingot__err((c)->err, st, (c)->j.base_offset + (c)->t.pos, (c)->where, ing_strlen((c)->where), \
               __VA_ARGS__)

/* The next token. The end of the text is an error here: every loop of this file stops on its
 * container's end token, so reaching END means the walk lost its place. */
static ingot_status next(jc *c)
{
    ING_TRY(ingot__json_next(&c->j, &c->t, c->err));
    if (c->t.type == ING_JSON_END) return BAD(c, INGOT_BAD_METADATA, "unexpected end of JSON");
    return INGOT_OK;
}

/* The text's end after its top-level value. */
static ingot_status expect_end(jc *c)
{
    ING_TRY(ingot__json_next(&c->j, &c->t, c->err));
    if (c->t.type != ING_JSON_END) return BAD(c, INGOT_BAD_METADATA, "expected the end of JSON");
    return INGOT_OK;
}


/* Decodes the current string/key token into c->buf. */
static ingot_status str(jc *c)
{
    if (c->t.dlen > sizeof c->buf) return BAD(c, INGOT_LIMIT, "string longer than 4096 bytes");
    return ingot__json_str(&c->t, c->buf, sizeof c->buf, &c->blen, c->err);
}

static bool key_is(const jc *c, const char *k)
{
    return ingot__json_str_eq(&c->t, k, ing_strlen(k));
}

/* Skips the value whose first token was just read. */
static ingot_status skip(jc *c) { return ingot__json_skip(&c->j, &c->t, c->err); }

/* The next value where only a scalar is meaningful: a container is consumed whole (c->t then
 * still says OBJECT or ARRAY, which no caller takes for a scalar). */
static ingot_status scalar(jc *c)
{
    ING_TRY(next(c));
    return skip(c);
}

static ingot_status expect(jc *c, ingot__json_type ty, const char *what)
{
    ING_TRY(next(c));
    if (c->t.type != ty) return BAD(c, INGOT_BAD_METADATA, "expected %s", what);
    return INGOT_OK;
}

static ingot_status get_u32(jc *c, uint32_t *out)
{
    uint64_t v;
    if (c->t.type != ING_JSON_NUMBER) return BAD(c, INGOT_BAD_METADATA, "%s is not a number", "id");
    ING_TRY(ingot__json_u64(&c->j, &c->t, &v, c->err));
    if (v >= TOK_MAX_VOCAB) return BAD(c, INGOT_LIMIT, "%s past the vocabulary limit", "token id");
    *out = (uint32_t)v;
    return INGOT_OK;
}

/* ---- the flat vocabulary object {"text": id, ...} ---------------------------------------- */
/* pass 1 (b NULL): *max_id and *entries; pass 2: sets texts. The '{' was just read. */
static ingot_status vocab_obj(jc *c, tok_build *b, int64_t *max_id, uint64_t *entries)
{
    for (;;) {
        ING_TRY(next(c));
        if (c->t.type == ING_JSON_OBJECT_END) return INGOT_OK;
        if (b) ING_TRY(str(c));
        size_t pos = c->t.pos;
        ING_TRY(next(c));
        uint32_t id;
        ING_TRY(get_u32(c, &id));
        if ((int64_t)id > *max_id) *max_id = id;
        (*entries)++;
        if (b) {
            ingot_status st = ingot__tok_build_set(b, id, c->buf, c->blen, c->err);
            if (st != INGOT_OK) {
                if (c->err) c->err->offset = c->j.base_offset + pos;
                return st;
            }
        }
    }
}

/* ---- tokenizer.json ---------------------------------------------------------------------- */
typedef struct hf {
    bool is_bpe, byte_fallback, ignore_merges, have_model_type;
    int pre_kind;      /* 0 none, 1 ByteLevel(regex GPT-2), 2 Split+ByteLevel, 3 Metaspace */
    tok_pre split_pre; /* the Split regex recognised */
    bool split_unknown, prefix_space, prepend_norm, meta_first;
    bool bytelevel_decoder;
    char model_type[24];
    int64_t max_id;
    uint64_t entries; /* vocabulary and added-token entries: ids are dense, so >= max_id + 1 */
    uint8_t unk[TOK_MAX_TOKEN_BYTES];
    size_t unk_len;
    bool have_unk;
    int64_t tpl_bos; /* TemplateProcessing: id of a leading special token */
} hf;

static const char llama3_re[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char qwen2_re[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char gpt2_re[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* One pre-tokenizer object ('{' read). */
static ingot_status pre_obj(jc *c, hf *h)
{
    char type[24] = "";
    bool use_regex = true, prefix = false, split_isolated = true;
    tok_pre re = TOK_PRE_NONE;
    bool re_seen = false, first = false;
    for (;;) {
        ING_TRY(next(c));
        if (c->t.type == ING_JSON_OBJECT_END) break;
        if (key_is(c, "type")) {
            ING_TRY(expect(c, ING_JSON_STRING, "a type name"));
            ING_TRY(str(c));
            size_t l = c->blen < sizeof type - 1 ? c->blen : sizeof type - 1;
            ING_MEMCPY(type, c->buf, l);
            type[l] = 0;
        } else if (key_is(c, "pretokenizers")) {
            ING_TRY(expect(c, ING_JSON_ARRAY, "an array"));
            for (;;) {
                ING_TRY(next(c));
                if (c->t.type == ING_JSON_ARRAY_END) break;
                if (c->t.type != ING_JSON_OBJECT)
                    return BAD(c, INGOT_BAD_METADATA, "%s", "pre-tokenizer is not an object");
                ING_TRY(pre_obj(c, h));
            }
        } else if (key_is(c, "use_regex")) {
            ING_TRY(scalar(c));
            use_regex = c->t.type == ING_JSON_TRUE;
        } else if (key_is(c, "add_prefix_space")) {
            ING_TRY(scalar(c));
            prefix = c->t.type == ING_JSON_TRUE;
        } else if (key_is(c, "prepend_scheme")) {
            ING_TRY(next(c));
            first = c->t.type == ING_JSON_STRING && ingot__json_str_eq(&c->t, "first", 5);
            ING_TRY(skip(c));
        } else if (key_is(c, "behavior")) {
            ING_TRY(scalar(c));
            split_isolated = c->t.type == ING_JSON_STRING &&
                             ingot__json_str_eq(&c->t, "Isolated", 8);
        } else if (key_is(c, "pattern")) {
            ING_TRY(expect(c, ING_JSON_OBJECT, "a pattern object"));
            for (;;) {
                ING_TRY(next(c));
                if (c->t.type == ING_JSON_OBJECT_END) break;
                bool is_re = key_is(c, "Regex");
                ING_TRY(next(c));
                if (is_re && c->t.type == ING_JSON_STRING) {
                    re_seen = true;
                    if (ingot__json_str_eq(&c->t, llama3_re, sizeof llama3_re - 1))
                        re = TOK_PRE_LLAMA3;
                    else if (ingot__json_str_eq(&c->t, qwen2_re, sizeof qwen2_re - 1))
                        re = TOK_PRE_QWEN2;
                    else if (ingot__json_str_eq(&c->t, gpt2_re, sizeof gpt2_re - 1))
                        re = TOK_PRE_GPT2;
                }
                ING_TRY(skip(c));
            }
        } else {
            ING_TRY(next(c));
            ING_TRY(skip(c));
        }
    }
    if (!ing_strlen(type)) return INGOT_OK;
    if (!__builtin_strcmp(type, "ByteLevel")) {
        if (use_regex && !h->pre_kind) {
            h->pre_kind = 1;
            h->split_pre = TOK_PRE_GPT2;
        } else if (!use_regex && h->pre_kind == 2) {
            /* Split then ByteLevel without its own regex: the Split decides */
        } else if (!use_regex && !h->pre_kind) {
            h->pre_kind = 1;
            h->split_pre = TOK_PRE_NONE;
        }
        if (prefix) h->prefix_space = true;
    } else if (!__builtin_strcmp(type, "Split")) {
        h->pre_kind = 2;
        h->split_pre = re;
        if (!re_seen || re == TOK_PRE_NONE || !split_isolated) h->split_unknown = true;
    } else if (!__builtin_strcmp(type, "Metaspace")) {
        h->pre_kind = 3;
        h->meta_first = first;
    } else if (__builtin_strcmp(type, "Sequence") != 0) {
        h->split_unknown = true;
    }
    return INGOT_OK;
}

/* normalizer ('{' read): notes a Prepend("\u2581") (SentencePiece's leading space). */
static ingot_status norm_obj(jc *c, hf *h)
{
    for (;;) {
        ING_TRY(next(c));
        if (c->t.type == ING_JSON_OBJECT_END) return INGOT_OK;
        if (key_is(c, "normalizers")) {
            ING_TRY(expect(c, ING_JSON_ARRAY, "an array"));
            for (;;) {
                ING_TRY(next(c));
                if (c->t.type == ING_JSON_ARRAY_END) break;
                if (c->t.type == ING_JSON_OBJECT) ING_TRY(norm_obj(c, h));
                else ING_TRY(skip(c));
            }
        } else if (key_is(c, "type")) {
            ING_TRY(scalar(c));
            if (c->t.type == ING_JSON_STRING && ingot__json_str_eq(&c->t, "Prepend", 7))
                h->prepend_norm = true;
        } else {
            ING_TRY(next(c));
            ING_TRY(skip(c));
        }
    }
}

/* post_processor ('{' read): a TemplateProcessing whose "single" starts with a SpecialToken. */
static ingot_status post_obj(jc *c, hf *h, tok_build *b)
{
    for (;;) {
        ING_TRY(next(c));
        if (c->t.type == ING_JSON_OBJECT_END) return INGOT_OK;
        if (key_is(c, "single")) {
            ING_TRY(expect(c, ING_JSON_ARRAY, "an array"));
            bool first = true;
            for (;;) {
                ING_TRY(next(c));
                if (c->t.type == ING_JSON_ARRAY_END) break;
                if (c->t.type != ING_JSON_OBJECT) {
                    ING_TRY(skip(c));
                    first = false;
                    continue;
                }
                ING_TRY(next(c));
                bool special = c->t.type == ING_JSON_KEY && key_is(c, "SpecialToken");
                if (c->t.type == ING_JSON_OBJECT_END) continue;
                if (special && first && b) {
                    ING_TRY(expect(c, ING_JSON_OBJECT, "an object"));
                    for (;;) {
                        ING_TRY(next(c));
                        if (c->t.type == ING_JSON_OBJECT_END) break;
                        bool idk = key_is(c, "id");
                        ING_TRY(next(c));
                        if (idk && c->t.type == ING_JSON_STRING) {
                            ING_TRY(str(c));
                            h->tpl_bos = ingot__tok_build_lookup(b, c->buf, c->blen);
                        }
                        ING_TRY(skip(c));
                    }
                } else {
                    ING_TRY(next(c));
                    ING_TRY(skip(c));
                }
                first = false;
                for (;;) { /* rest of the item object */
                    ING_TRY(next(c));
                    if (c->t.type == ING_JSON_OBJECT_END) break;
                    ING_TRY(next(c));
                    ING_TRY(skip(c));
                }
            }
        } else {
            ING_TRY(next(c));
            ING_TRY(skip(c));
        }
    }
}

static ingot_status merges_arr(jc *c, tok_build *b)
{
    for (;;) {
        ING_TRY(next(c));
        if (c->t.type == ING_JSON_ARRAY_END) return INGOT_OK;
        if (c->t.type == ING_JSON_STRING) {
            if (!b) continue;
            ING_TRY(str(c));
            size_t sp = 1;
            while (sp < c->blen && c->buf[sp] != ' ') sp++;
            if (c->blen < 3 || sp >= c->blen)
                return BAD(c, INGOT_BAD_METADATA, "%s is not \"LEFT RIGHT\"", "merge");
            ING_TRY(ingot__tok_build_merge(b, c->buf, sp, c->buf + sp + 1, c->blen - sp - 1,
                                           c->err));
        } else if (c->t.type == ING_JSON_ARRAY) {
            uint8_t l[TOK_MAX_TOKEN_BYTES];
            size_t ln = 0;
            ING_TRY(expect(c, ING_JSON_STRING, "a merge side"));
            if (b) {
                ING_TRY(str(c));
                ING_MEMCPY(l, c->buf, c->blen);
                ln = c->blen;
            }
            ING_TRY(expect(c, ING_JSON_STRING, "a merge side"));
            if (b) {
                ING_TRY(str(c));
                ING_TRY(ingot__tok_build_merge(b, l, ln, c->buf, c->blen, c->err));
            }
            ING_TRY(expect(c, ING_JSON_ARRAY_END, "the end of a merge pair"));
        } else {
            return BAD(c, INGOT_BAD_METADATA, "%s is neither a string nor a pair", "merge");
        }
    }
}

static ingot_status model_obj(jc *c, hf *h, tok_build *b)
{
    for (;;) {
        ING_TRY(next(c));
        if (c->t.type == ING_JSON_OBJECT_END) return INGOT_OK;
        if (key_is(c, "type")) {
            ING_TRY(expect(c, ING_JSON_STRING, "a model type"));
            ING_TRY(str(c));
            size_t l = c->blen < sizeof h->model_type - 1 ? c->blen : sizeof h->model_type - 1;
            ING_MEMCPY(h->model_type, c->buf, l);
            h->model_type[l] = 0;
            h->have_model_type = true;
            h->is_bpe = c->blen == 3 && ING_MEMCMP(c->buf, "BPE", 3) == 0;
        } else if (key_is(c, "vocab")) {
            ING_TRY(next(c));
            if (c->t.type != ING_JSON_OBJECT) {
                /* Unigram's vocab is an array of [piece, score]: refused by type below */
                ING_TRY(skip(c));
                continue;
            }
            ING_TRY(vocab_obj(c, b, &h->max_id, &h->entries));
        } else if (key_is(c, "merges")) {
            ING_TRY(expect(c, ING_JSON_ARRAY, "an array of merges"));
            ING_TRY(merges_arr(c, b));
        } else if (key_is(c, "byte_fallback") || key_is(c, "ignore_merges")) {
            bool *f = key_is(c, "byte_fallback") ? &h->byte_fallback : &h->ignore_merges;
            ING_TRY(scalar(c));
            *f = c->t.type == ING_JSON_TRUE;
        } else if (key_is(c, "unk_token")) {
            ING_TRY(next(c));
            if (c->t.type == ING_JSON_STRING) {
                ING_TRY(str(c));
                ING_MEMCPY(h->unk, c->buf, c->blen);
                h->unk_len = c->blen;
                h->have_unk = true;
            }
            ING_TRY(skip(c));
        } else {
            ING_TRY(next(c));
            ING_TRY(skip(c));
        }
    }
}

/* added_tokens: [{"id": N, "content": "...", "special": bool, ...}] */
static ingot_status added_arr(jc *c, hf *h, tok_build *b)
{
    for (;;) {
        ING_TRY(next(c));
        if (c->t.type == ING_JSON_ARRAY_END) return INGOT_OK;
        if (c->t.type != ING_JSON_OBJECT)
            return BAD(c, INGOT_BAD_METADATA, "%s is not an object", "added token");
        size_t pos = c->t.pos;
        int64_t id = -1;
        bool special = false, have_content = false;
        uint8_t content[TOK_MAX_TOKEN_BYTES];
        size_t cl = 0;
        for (;;) {
            ING_TRY(next(c));
            if (c->t.type == ING_JSON_OBJECT_END) break;
            if (key_is(c, "id")) {
                ING_TRY(next(c));
                uint32_t v;
                ING_TRY(get_u32(c, &v));
                id = v;
            } else if (key_is(c, "content")) {
                ING_TRY(expect(c, ING_JSON_STRING, "a string"));
                ING_TRY(str(c));
                ING_MEMCPY(content, c->buf, c->blen);
                cl = c->blen;
                have_content = true;
            } else if (key_is(c, "special")) {
                ING_TRY(scalar(c));
                special = c->t.type == ING_JSON_TRUE;
            } else {
                ING_TRY(next(c));
                ING_TRY(skip(c));
            }
        }
        if (id < 0 || !have_content || cl == 0)
            return ingot__err(c->err, INGOT_BAD_METADATA, c->j.base_offset + pos, c->where,
                              ing_strlen(c->where), "added token without id or content");
        if (id > h->max_id) h->max_id = id;
        h->entries++;
        if (!b) continue;
        uint32_t i = (uint32_t)id;
        if (b->have[i]) {
            if (b->len[i] != cl || (cl && ING_MEMCMP(b->blob + b->off[i], content, cl) != 0))
                return ingot__err(c->err, INGOT_BAD_METADATA, c->j.base_offset + pos, c->where,
                                  ing_strlen(c->where),
                                  "added token %u differs from the vocabulary's token %u", i, i);
        } else {
            ING_TRY(ingot__tok_build_set(b, i, content, cl, c->err));
        }
        b->type[i] = special ? TOK_T_CONTROL : TOK_T_USER;
    }
}

static ingot_status hf_pass(const uint8_t *buf, size_t n, hf *h, tok_build *b, ingot_error *err,
                            jc *c)
{
    ingot__json_init(&c->j, buf, n, 64, 0);
    c->err = err;
    c->where = "tokenizer.json";
    /* transformers writes added_tokens before model, and its added tokens usually repeat vocab
     * entries (<unk>, <s>, </s> of Llama 2): the fill pass takes them after the vocabulary */
    size_t deferred = SIZE_MAX;
    bool seen_model = false;
    ING_TRY(expect(c, ING_JSON_OBJECT, "a JSON object"));
    for (;;) {
        ING_TRY(next(c));
        if (c->t.type == ING_JSON_OBJECT_END) break;
        if (key_is(c, "model")) {
            ING_TRY(expect(c, ING_JSON_OBJECT, "a model object"));
            ING_TRY(model_obj(c, h, b));
            seen_model = true;
        } else if (key_is(c, "added_tokens") && b && !seen_model) {
            ING_TRY(expect(c, ING_JSON_ARRAY, "an array"));
            deferred = c->t.pos;
            ING_TRY(skip(c));
        } else if (key_is(c, "added_tokens")) {
            ING_TRY(expect(c, ING_JSON_ARRAY, "an array"));
            ING_TRY(added_arr(c, h, b));
        } else if (key_is(c, "pre_tokenizer") && !b) {
            ING_TRY(next(c));
            if (c->t.type == ING_JSON_OBJECT) ING_TRY(pre_obj(c, h));
            else ING_TRY(skip(c));
        } else if (key_is(c, "normalizer") && !b) {
            ING_TRY(next(c));
            if (c->t.type == ING_JSON_OBJECT) ING_TRY(norm_obj(c, h));
            else ING_TRY(skip(c));
        } else if (key_is(c, "decoder") && !b) {
            ING_TRY(next(c));
            if (c->t.type == ING_JSON_OBJECT) {
                for (;;) {
                    ING_TRY(next(c));
                    if (c->t.type == ING_JSON_OBJECT_END) break;
                    bool ty = key_is(c, "type");
                    ING_TRY(next(c));
                    if (ty && c->t.type == ING_JSON_STRING &&
                        ingot__json_str_eq(&c->t, "ByteLevel", 9))
                        h->bytelevel_decoder = true;
                    ING_TRY(skip(c));
                }
            } else {
                ING_TRY(skip(c));
            }
        } else if (key_is(c, "post_processor") && b) {
            ING_TRY(next(c));
            if (c->t.type == ING_JSON_OBJECT) ING_TRY(post_obj(c, h, b));
            else ING_TRY(skip(c));
        } else {
            ING_TRY(next(c));
            ING_TRY(skip(c));
        }
    }
    ING_TRY(expect_end(c));
    if (deferred == SIZE_MAX) return INGOT_OK;
    ingot__json_init(&c->j, buf + deferred, n - deferred, 64, deferred);
    ING_TRY(expect(c, ING_JSON_ARRAY, "an array"));
    return added_arr(c, h, b);
}

/* tokenizer_config.json: bos/eos/unk/pad tokens (a string or {"content": ...}), add_bos_token,
 * add_eos_token. Names are resolved against the built vocabulary. */
static ingot_status config_pass(const uint8_t *buf, size_t n, tok_build *b, ingot_error *err,
                                jc *c)
{
    ingot__json_init(&c->j, buf, n, 64, 0);
    c->err = err;
    c->where = "tokenizer_config.json";
    ING_TRY(expect(c, ING_JSON_OBJECT, "a JSON object"));
    for (;;) {
        ING_TRY(next(c));
        if (c->t.type == ING_JSON_OBJECT_END) break;
        int64_t *role = key_is(c, "bos_token") ? &b->bos : key_is(c, "eos_token") ? &b->eos
                      : key_is(c, "unk_token") ? &b->unk : key_is(c, "pad_token") ? &b->pad
                      : NULL;
        int *flag = key_is(c, "add_bos_token") ? &b->add_bos
                  : key_is(c, "add_eos_token") ? &b->add_eos : NULL;
        ING_TRY(next(c));
        if (flag && (c->t.type == ING_JSON_TRUE || c->t.type == ING_JSON_FALSE)) {
            *flag = c->t.type == ING_JSON_TRUE;
        } else if (role && c->t.type == ING_JSON_STRING) {
            ING_TRY(str(c));
            int64_t id = ingot__tok_build_lookup(b, c->buf, c->blen);
            if (id < 0) return BAD(c, INGOT_BAD_METADATA, "%s names no token", "special token");
            *role = id;
        } else if (role && c->t.type == ING_JSON_OBJECT) {
            for (;;) {
                ING_TRY(next(c));
                if (c->t.type == ING_JSON_OBJECT_END) break;
                bool ck = key_is(c, "content");
                ING_TRY(next(c));
                if (ck && c->t.type == ING_JSON_STRING) {
                    ING_TRY(str(c));
                    int64_t id = ingot__tok_build_lookup(b, c->buf, c->blen);
                    if (id < 0)
                        return BAD(c, INGOT_BAD_METADATA, "%s names no token", "special token");
                    *role = id;
                }
                ING_TRY(skip(c));
            }
        } else {
            ING_TRY(skip(c));
        }
    }
    return expect_end(c);
}

#define UNSUP(err, ...) \
    ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, "tokenizer.json", 14, __VA_ARGS__)

ingot_status ingot__tok_load_hf_json(const uint8_t *buf, size_t n, const uint8_t *config,
                                     size_t config_n, const ingot_allocator *a,
                                     ingot_tokenizer **out, ingot_error *err)
{
    jc *c = ingot__tok_scratch_alloc(a, sizeof *c);
    hf *h = ingot__tok_scratch_alloc(a, sizeof *h);
    tok_build b;
    ING_MEMSET(&b, 0, sizeof b);
    ingot_status st;
    if (!c || !h) {
        st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, NULL, 0, "tokenizer.json state");
        goto done;
    }
    ING_MEMSET(h, 0, sizeof *h);
    h->max_id = -1;
    h->tpl_bos = -1;
    if ((st = hf_pass(buf, n, h, NULL, err, c)) != INGOT_OK) goto done;
    if (!h->have_model_type || !h->is_bpe) {
        const char *ty = h->have_model_type ? h->model_type : "(no model.type)";
        st = UNSUP(err, "model type \"%s\" is not supported (only BPE; WordPiece, Unigram and "
                        "WordLevel are not)", ty);
        goto done;
    }
    tok_kind kind;
    tok_pre pre = TOK_PRE_NONE;
    const char *pre_name = NULL;
    if (h->byte_fallback) {
        kind = TOK_BPE_FALLBACK;
    } else {
        kind = TOK_BPE;
        if (h->split_unknown || h->pre_kind == 0 || h->pre_kind == 3 ||
            (h->pre_kind == 1 && h->split_pre == TOK_PRE_NONE)) {
            st = UNSUP(err, "%s is not supported (byte-level BPE needs the GPT-2, Llama 3 or "
                            "Qwen 2 pattern)", "this pre_tokenizer");
            goto done;
        }
        if (h->prefix_space) {
            st = UNSUP(err, "%s is not supported", "ByteLevel add_prefix_space");
            goto done;
        }
        pre = h->split_pre;
        pre_name = pre == TOK_PRE_LLAMA3 ? "llama-bpe" : pre == TOK_PRE_QWEN2 ? "qwen2"
                                                                            : "gpt-2";
    }
    if (h->max_id < 0) {
        st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, "tokenizer.json", 14,
                        "no vocabulary");
        goto done;
    }
    /* ids run 0..max_id without holes: fewer entries than that is refused before the
     * vocabulary is allocated (a small file cannot ask for a large one) */
    if (h->entries < (uint64_t)h->max_id + 1) {
        st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, "tokenizer.json", 14,
                        "token ids go up to %lld but only %llu tokens are given",
                        (long long)h->max_id, (unsigned long long)h->entries);
        goto done;
    }
    h->entries = 0;
    if ((st = ingot__tok_build_init(&b, a, (uint32_t)h->max_id + 1, err)) != INGOT_OK) goto done;
    b.kind = kind;
    b.pre = pre;
    b.pre_name = pre_name;
    b.dup_is_error = true;
    b.where = "tokenizer.json";
    b.ignore_merges = h->ignore_merges;
    b.default_bos = pre == TOK_PRE_LLAMA3;
    if (kind == TOK_BPE_FALLBACK)
        b.space_prefix = h->pre_kind == 3 ? (h->meta_first ? TOK_PREFIX_FIRST : TOK_PREFIX_EACH)
                       : h->prepend_norm ? TOK_PREFIX_EACH : TOK_PREFIX_NONE;
    for (uint32_t i = 0; i < b.n; i++) b.type[i] = TOK_T_NORMAL;
    if ((st = hf_pass(buf, n, h, &b, err, c)) != INGOT_OK) goto done;
    if (h->have_unk) b.unk = ingot__tok_build_lookup(&b, h->unk, h->unk_len);
    if (h->tpl_bos >= 0) {
        b.bos = h->tpl_bos;
        b.add_bos = 1;
    }
    if (config && (st = config_pass(config, config_n, &b, err, c)) != INGOT_OK) goto done;
    b.where = "tokenizer.json";
    st = ingot__tok_finish(&b, out, err);
done:
    ingot__tok_build_free(&b);
    ingot__tok_scratch_free(a, c, sizeof *c);
    ingot__tok_scratch_free(a, h, sizeof *h);
    return st;
}

/* ---- encoder.json / vocab.json + vocab.bpe / merges.txt ---------------------------------- */
ingot_status ingot__tok_load_gpt2_files(const uint8_t *vocab, size_t vn, const uint8_t *merges,
                                        size_t mn, const uint8_t *config, size_t config_n,
                                        const ingot_allocator *a, ingot_tokenizer **out,
                                        ingot_error *err)
{
    jc *c = ingot__tok_scratch_alloc(a, sizeof *c);
    tok_build b;
    ING_MEMSET(&b, 0, sizeof b);
    ingot_status st;
    if (!c) {
        st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, NULL, 0, "vocabulary state");
        goto done;
    }
    int64_t max_id = -1;
    uint64_t entries = 0;
    for (int pass = 0; pass < 2; pass++) {
        ingot__json_init(&c->j, vocab, vn, 8, 0);
        c->err = err;
        c->where = "encoder.json";
        if ((st = expect(c, ING_JSON_OBJECT, "a JSON object")) != INGOT_OK) goto done;
        if ((st = vocab_obj(c, pass ? &b : NULL, &max_id, &entries)) != INGOT_OK) goto done;
        if ((st = expect_end(c)) != INGOT_OK) goto done;
        if (pass == 0) {
            if (max_id < 0) {
                st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, "encoder.json", 12,
                                "empty vocabulary");
                goto done;
            }
            if (entries < (uint64_t)max_id + 1) {
                st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, "encoder.json", 12,
                                "token ids go up to %lld but only %llu tokens are given",
                                (long long)max_id, (unsigned long long)entries);
                goto done;
            }
            if ((st = ingot__tok_build_init(&b, a, (uint32_t)max_id + 1, err)) != INGOT_OK)
                goto done;
            b.kind = TOK_BPE;
            b.pre = TOK_PRE_GPT2;
            b.pre_name = "gpt-2";
            b.dup_is_error = true;
            b.where = "encoder.json";
        }
    }
    b.where = "vocab.bpe";
    uint64_t line = 0;
    for (size_t i = 0; i < mn;) {
        size_t e = i;
        while (e < mn && merges[e] != '\n') e++;
        size_t le = e;
        if (le > i && merges[le - 1] == '\r') le--;
        line++;
        if (le > i && !(line == 1 && le - i >= 8 && ING_MEMCMP(merges + i, "#version", 8) == 0)) {
            size_t sp = i + 1;
            while (sp < le && merges[sp] != ' ') sp++;
            if (le - i < 3 || sp >= le) {
                st = ingot__err(err, INGOT_BAD_METADATA, i, "vocab.bpe", 9,
                                "line %llu is not \"LEFT RIGHT\"", (unsigned long long)line);
                goto done;
            }
            if ((st = ingot__tok_build_merge(&b, merges + i, sp - i, merges + sp + 1, le - sp - 1,
                                             err)) != INGOT_OK)
                goto done;
        }
        i = e + 1;
    }
    int64_t eot = ingot__tok_build_lookup(&b, (const uint8_t *)"<|endoftext|>", 13);
    if (eot >= 0) {
        b.type[eot] = TOK_T_CONTROL;
        b.bos = b.eos = eot;
    }
    if (config && (st = config_pass(config, config_n, &b, err, c)) != INGOT_OK) goto done;
    b.where = "encoder.json";
    st = ingot__tok_finish(&b, out, err);
done:
    ingot__tok_build_free(&b);
    ingot__tok_scratch_free(a, c, sizeof *c);
    return st;
}
