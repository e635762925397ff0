/*
 * test_tokenizer_pretok.c - every pre-tokenizer against splits computed independently with
 * python3-regex from llama.cpp's patterns (tests/gen_pretok_golden.py -> tests/data/
 * pretok_golden.txt): the 46 llama.cpp vector inputs, every TestPlans.txt sample and a few
 * strings aimed at digits, punctuation, whitespace kinds and non-Latin scripts.
 */
#include "harness.h"
#include "tok_internal.h"

static size_t unhex(const char *h, size_t n, uint8_t *out)
{
    size_t k = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        unsigned v;
        sscanf(h + i, "%2x", &v);
        out[k++] = (uint8_t)v;
    }
    return k;
}

typedef struct got {
    char *buf;
    size_t n, cap;
    const uint8_t *s;
} got;

static ingot_status collect(void *ctx, size_t off, size_t len)
{
    got *g = ctx;
    for (size_t i = 0; i < len && g->n + 3 < g->cap; i++)
        g->n += (size_t)snprintf(g->buf + g->n, g->cap - g->n, "%02x", g->s[off + i]);
    if (g->n + 1 < g->cap) g->buf[g->n++] = ',';
    g->buf[g->n] = 0;
    return INGOT_OK;
}

TEST(test_pretokenizers_match_python_regex)
{
    FILE *f = fopen(INGOT_SOURCE_DIR "/tests/data/pretok_golden.txt", "r");
    ASSERT_TRUE(f != NULL);
    static char line[1 << 16], gotbuf[1 << 16];
    static uint8_t text[1 << 15];
    size_t total = 0, pass = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        ASSERT_TRUE(t1 && t2);
        *t1 = 0;
        size_t tl = unhex(t1 + 1, (size_t)(t2 - t1 - 1), text);
        char *want = t2 + 1;
        size_t wl = strcspn(want, "\n");
        want[wl] = 0;
        tok_pre pre;
        const char *name;
        ASSERT_TRUE(ingot__tok_pre_from_name(line, strlen(line), &pre, &name));
        got g = {gotbuf, 0, sizeof gotbuf, text};
        gotbuf[0] = 0;
        ASSERT_OK(ingot__tok_pretokenize(pre, text, tl, collect, &g));
        if (g.n && gotbuf[g.n - 1] == ',') gotbuf[--g.n] = 0;
        total++;
        if (strcmp(gotbuf, want) == 0) pass++;
        else CHECK(0, "%s: %.60s\n    got  %.200s\n    want %.200s", line, (char *)text, gotbuf,
                   want);
    }
    fclose(f);
    fprintf(stderr, "  pre-tokenizers: %zu/%zu splits as python3-regex\n", pass, total);
    ASSERT_EQ(total, 1053);
    ASSERT_EQ(pass, total);
}

RUN_TESTS(T(test_pretokenizers_match_python_regex))
