/* test_tokenizer_json_order.c - tokenizer.json in transformers' own key order: added_tokens
 * before model, with added tokens that repeat vocabulary entries (Llama 2's <unk>, <s>, </s>).
 * The file is llama.cpp's Llama 2 vocabulary exported by ingot, then reordered as transformers
 * writes it; it must load and encode exactly as the original, and a real disagreement between
 * an added token and the vocabulary must still be refused. */
#include "harness.h"
#include "ingot/tokenizer.h"

#define FIX INGOT_FIXTURES
#define LCPP FIX "/tokenizers/llama.cpp/"

/* [start, end) of the JSON array after `"key":` (strings skipped, escapes honoured). */
static bool array_span(const char *s, size_t n, const char *key, size_t *a, size_t *b)
{
    const char *k = strstr(s, key);
    if (!k) return false;
    const char *p = strchr(k + strlen(key), '[');
    if (!p) return false;
    int depth = 0;
    bool in_str = false;
    for (const char *q = p; q < s + n; q++) {
        if (in_str) {
            if (*q == '\\') q++;
            else if (*q == '"') in_str = false;
        } else if (*q == '"') {
            in_str = true;
        } else if (*q == '[' || *q == '{') {
            depth++;
        } else if ((*q == ']' || *q == '}') && --depth == 0) {
            *a = (size_t)(k - s);
            *b = (size_t)(q + 1 - s);
            return true;
        }
    }
    return false;
}

/* The export with its `"added_tokens": [...]` member moved in front of `"model"`. */
static char *reorder(const char *json, size_t n, size_t *out_n)
{
    size_t a, b;
    const char *model = strstr(json, "\"model\"");
    if (!array_span(json, n, "\"added_tokens\"", &a, &b) || !model) return NULL;
    size_t m = (size_t)(model - json);
    if (m > a) return NULL; /* the export must put added_tokens after model */
    /* drop the member and the comma before it, then insert "member," before "model" */
    size_t cut_from = a;
    while (cut_from > 0 && json[cut_from - 1] != ',') cut_from--;
    if (cut_from == 0) return NULL;
    cut_from--;
    char *r = malloc(n + 2);
    size_t k = 0;
    memcpy(r + k, json, m), k += m;
    memcpy(r + k, json + a, b - a), k += b - a;
    r[k++] = ',';
    memcpy(r + k, json + m, cut_from - m), k += cut_from - m;
    memcpy(r + k, json + b, n - b), k += n - b;
    *out_n = k;
    return r;
}

static const char *texts[] = {"Hello world", " leading space", "<s> not parsed", "\xe2\x96\x81x",
                              "numbers 12345 and \xe4\xbd\xa0\xe5\xa5\xbd"};

TEST(test_added_tokens_before_model)
{
    ingot_tokenizer *t, *r;
    ingot_error e;
    ASSERT_OK(ingot_tokenizer_open(LCPP "ggml-vocab-llama-spm.gguf", NULL, &t, &e));
    char *json;
    size_t jn, rn;
    ASSERT_OK(ingot_tokenizer_export_json(t, &json, &jn, NULL, NULL, &e));
    /* the reference: the same export in its own order (added_tokens after model) */
    ingot_tokenizer *u;
    ASSERT_OK(ingot_tokenizer_open_buffer(json, jn, NULL, &u, &e));
    ingot_tokenizer_close(t);
    t = u;
    char *re = reorder(json, jn, &rn);
    ASSERT_TRUE(re != NULL);
    ASSERT_TRUE(strstr(re, "\"added_tokens\"") < strstr(re, "\"model\""));
    ingot_status st = ingot_tokenizer_open_buffer(re, rn, NULL, &r, &e);
    if (st != INGOT_OK) {
        char buf[300];
        FAIL_AT("reordered tokenizer.json: %s", ingot_error_format(&e, buf, sizeof buf));
    }
    ASSERT_EQ(ingot_tokenizer_vocab_size(r), ingot_tokenizer_vocab_size(t));
    for (int32_t i = 0; i < (int32_t)ingot_tokenizer_vocab_size(t); i++) {
        const char *sa, *sb;
        size_t la, lb;
        ASSERT_OK(ingot_tokenizer_token_text(t, i, &sa, &la));
        ASSERT_OK(ingot_tokenizer_token_text(r, i, &sb, &lb));
        CHECK(la == lb && memcmp(sa, sb, la) == 0, "token %d", i);
        CHECK(ingot_tokenizer_is_control(t, i) == ingot_tokenizer_is_control(r, i), "control %d", i);
    }
    ASSERT_TRUE(ingot_tokenizer_is_control(r, 1));
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        int32_t ia[256], ib[256];
        size_t na, nb;
        size_t len = strlen(texts[k]);
        ASSERT_OK(ingot_tokenizer_encode(t, texts[k], len, INGOT_ENCODE_ADD_SPECIAL, ia, 256, &na,
                                         NULL, 0, &e));
        ASSERT_OK(ingot_tokenizer_encode(r, texts[k], len, INGOT_ENCODE_ADD_SPECIAL, ib, 256, &nb,
                                         NULL, 0, &e));
        ASSERT_EQ(na, nb);
        ASSERT_MEM(ia, ib, na * sizeof ia[0]);
    }
    ingot_tokenizer_close(r);
    /* an added token that disagrees with the vocabulary's token of the same id is refused */
    char *s = strstr(re, "\"</s>\"");
    ASSERT_TRUE(s != NULL && s < strstr(re, "\"model\""));
    s[2] = 'S'; /* "</S>" */
    ASSERT_ST(ingot_tokenizer_open_buffer(re, rn, NULL, &r, &e), INGOT_BAD_METADATA);
    ASSERT_TRUE(strstr(e.msg, "differs from the vocabulary") != NULL);
    free(re);
    ingot_tokenizer_export_free(json, jn);
    ingot_tokenizer_close(t);
}

RUN_TESTS(T(test_added_tokens_before_model))
