/* test_json.c - the strict JSON pull scanner (src/core/json.h): grammar accept/reject pairs,
 * strings (escapes, surrogates, strict UTF-8), numbers (u64/i64/f64 limits), error codes and byte
 * offsets, skip, str_eq, quote round trip, every truncation of a document, random corruption. */
#include <math.h>

#include "harness.h"
#include "json.h"

/* Scans a whole document; renders tokens compactly into out (if given). */
static ingot_status scan_all(const char *doc, size_t n, char *out, size_t cap, ingot_error *err)
{
    ingot__json j;
    ingot__json_init(&j, doc, n, 0, 0);
    size_t o = 0;
    if (out && cap) out[0] = 0;
    for (int guard = 0; guard < 100000; guard++) {
        ingot__json_tok t;
        ingot_status st = ingot__json_next(&j, &t, err);
        if (st != INGOT_OK) return st;
        if (t.type == ING_JSON_END) return INGOT_OK;
        if (!out) continue;
        char tmp[256];
        int k = 0;
        switch (t.type) {
        case ING_JSON_OBJECT: k = snprintf(tmp, sizeof tmp, "{"); break;
        case ING_JSON_OBJECT_END: k = snprintf(tmp, sizeof tmp, "}"); break;
        case ING_JSON_ARRAY: k = snprintf(tmp, sizeof tmp, "["); break;
        case ING_JSON_ARRAY_END: k = snprintf(tmp, sizeof tmp, "]"); break;
        case ING_JSON_KEY:
        case ING_JSON_STRING: {
            char d[128];
            size_t dl = 0;
            if (ingot__json_str(&t, d, sizeof d, &dl, NULL) != INGOT_OK) return INGOT_RANGE;
            k = snprintf(tmp, sizeof tmp, "%s%.*s ", t.type == ING_JSON_KEY ? "k:" : "s:", (int)dl, d);
            break;
        }
        case ING_JSON_NUMBER: k = snprintf(tmp, sizeof tmp, "n:%.*s ", (int)t.len, (const char *)t.p); break;
        case ING_JSON_TRUE: k = snprintf(tmp, sizeof tmp, "T "); break;
        case ING_JSON_FALSE: k = snprintf(tmp, sizeof tmp, "F "); break;
        case ING_JSON_NULL: k = snprintf(tmp, sizeof tmp, "N "); break;
        default: break;
        }
        if (o + (size_t)k + 1 < cap) {
            memcpy(out + o, tmp, (size_t)k);
            o += (size_t)k;
            out[o] = 0;
        }
    }
    return INGOT_LIMIT;
}

static ingot_status scan_str(const char *doc, ingot_error *err)
{
    return scan_all(doc, strlen(doc), NULL, 0, err);
}

TEST(accepts_valid_documents)
{
    char out[512];
    const char *d1 = "{\"a\":[1,-2,3.5e3,true,false,null,\"x\\n\"],\"b\":{}}";
    ASSERT_OK(scan_all(d1, strlen(d1), out, sizeof out, NULL));
    ASSERT_STR(out, "{k:a [n:1 n:-2 n:3.5e3 T F N s:x\n ]k:b {}}");
    ASSERT_OK(scan_all(" \t\r\n{ \"k\" : \"v\" } \n ", 20, out, sizeof out, NULL));
    ASSERT_STR(out, "{k:k s:v }");
    static const char *ok[] = {"1", "-0", "0.5", "1E+2", "1e-2", "\"\"", "[]", "{}", "[[]]",
                               "true", "null", "[{},{}]", "{\"\":0}", "\"\\/\"", "123456789"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) CHECK(scan_str(ok[i], NULL) == INGOT_OK, "%s", ok[i]);
}

TEST(rejects_grammar_errors_with_offsets)
{
    static const struct {
        const char *doc;
        size_t off;
    } bad[] = {
        {"", 0},          {"{", 1},          {"{\"a\"}", 4},     {"{\"a\":}", 5},
        {"[1,]", 3},      {"{,}", 1},        {"01", 1},          {"1.", 2},
        {"-", 1},         {".5", 0},         {"1e", 2},          {"+1", 0},
        {"tru", 0},       {"nulll", 4},      {"[1 2]", 3},       {"{\"a\":1,}", 7},
        {"{\"a\" 1}", 5}, {"{1:2}", 1},      {"[", 1},           {"]", 0},
        {"{}}", 2},       {"{} {}", 3},      {"1 2", 2},         {"[1,,2]", 3},
        {"{\"a\":1 \"b\":2}", 7},            {"\xef\xbb\xbf{}", 0}, {"NaN", 0}, {"Infinity", 0},
        {"-Infinity", 1}, {"0x10", 1},       {"'a'", 0},         {"1.e3", 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ingot_error e;
        memset(&e, 0, sizeof e);
        ingot_status st = scan_str(bad[i].doc, &e);
        CHECK(st == INGOT_BAD_METADATA, "'%s': %s", bad[i].doc, ingot_status_name(st));
        CHECK(e.offset == bad[i].off, "'%s': offset %llu want %zu", bad[i].doc,
              (unsigned long long)e.offset, bad[i].off);
    }
    /* NUL padding is not whitespace. */
    ASSERT_ST(scan_all("{}\0\0", 4, NULL, 0, NULL), INGOT_BAD_METADATA);
    ASSERT_OK(scan_all("{}    ", 6, NULL, 0, NULL));
}

TEST(syntax_code_and_base_offset)
{
    ingot__json j;
    ingot__json_init(&j, "[1,}", 4, 0, 1000);
    j.syntax_code = INGOT_BAD_LAYOUT;
    ingot__json_tok t;
    ingot_error e;
    ASSERT_OK(ingot__json_next(&j, &t, &e));
    ASSERT_OK(ingot__json_next(&j, &t, &e));
    ASSERT_ST(ingot__json_next(&j, &t, &e), INGOT_BAD_LAYOUT);
    ASSERT_U64(e.offset, 1003);
    /* Sticky. */
    ASSERT_ST(ingot__json_next(&j, &t, &e), INGOT_BAD_LAYOUT);
}

TEST(strings_escapes_and_utf8)
{
    char out[512];
    ASSERT_OK(scan_str("\"\\u00e9\\ud83d\\ude00\\\"\\\\\\/\\b\\f\\n\\r\\t\"", NULL));
    ingot__json j;
    const char *doc = "\"a\\u00e9\\ud83d\\ude00\\u0000z\"";
    ingot__json_init(&j, doc, strlen(doc), 0, 0);
    ingot__json_tok t;
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_EQ(t.type, ING_JSON_STRING);
    ASSERT_TRUE(t.flags & ING_JSON_ESCAPED);
    ASSERT_TRUE(t.flags & ING_JSON_HAS_NUL);
    ASSERT_EQ(t.dlen, 1 + 2 + 4 + 1 + 1);
    size_t dl = 0;
    ASSERT_OK(ingot__json_str(&t, out, sizeof out, &dl, NULL));
    ASSERT_EQ(dl, 9);
    ASSERT_MEM(out, "a\xc3\xa9\xf0\x9f\x98\x80\0z", 9);
    ASSERT_TRUE(ingot__json_str_eq(&t, "a\xc3\xa9\xf0\x9f\x98\x80\0z", 9));
    ASSERT_TRUE(!ingot__json_str_eq(&t, "a\xc3\xa9\xf0\x9f\x98\x80\0y", 9));
    ASSERT_ST(ingot__json_str(&t, out, 8, &dl, NULL), INGOT_RANGE);
    /* Raw UTF-8 passes through, no escape flag. */
    doc = "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"";
    ingot__json_init(&j, doc, strlen(doc), 0, 0);
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_TRUE(!(t.flags & ING_JSON_ESCAPED));
    ASSERT_TRUE(t.flags & ING_JSON_NONASCII);
    ASSERT_EQ(t.dlen, 9);
    ASSERT_TRUE(ingot__json_str_eq(&t, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9));

    static const struct {
        const char *doc;
        size_t off;
    } bad[] = {
        {"\"abc", 0},                 /* unterminated */
        {"\"a\\x\"", 2},              /* bad escape */
        {"\"\\u12g4\"", 1},           /* bad hex */
        {"\"\\u123\"", 1},            /* short hex */
        {"\"\\ud800\"", 1},           /* lone high */
        {"\"\\ud800\\u0041\"", 1},    /* high + non-low */
        {"\"\\udc00\"", 1},           /* lone low */
        {"\"a\x01\"", 2},             /* control */
        {"\"a\x7f\x80\"", 3},         /* stray continuation */
        {"\"\xc0\x80\"", 1},          /* overlong NUL */
        {"\"\xc1\xbf\"", 1},          /* overlong */
        {"\"\xe0\x80\x80\"", 1},      /* overlong 3-byte */
        {"\"\xed\xa0\x80\"", 1},      /* UTF-8 surrogate */
        {"\"\xf4\x90\x80\x80\"", 1},  /* > U+10FFFF */
        {"\"\xf5\x80\x80\x80\"", 1},  /* invalid lead */
        {"\"\xe2\x82\"", 1},          /* truncated sequence */
        {"\"\xe2\x82", 1},            /* truncated at end of input */
        {"{\"k\\q\":1}", 3},          /* bad escape in a key */
        /* long runs of text (validated by the vector code): the first bad sequence's offset */
        {"\"\xc3\xa9\xe2\x82\xac abc \xf0\x9f\x98\x80\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xed\xa0\x80z\"", 25},
        {"\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xe2\x82\"", 19},
        {"\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\x80\"", 47},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ingot_error e;
        memset(&e, 0, sizeof e);
        ingot_status st = scan_str(bad[i].doc, &e);
        CHECK(st == INGOT_BAD_STRING, "case %zu: %s", i, ingot_status_name(st));
        CHECK(e.offset == bad[i].off, "case %zu: offset %llu want %zu", i,
              (unsigned long long)e.offset, bad[i].off);
    }
}

static ingot__json_tok one_number(ingot__json *j, const char *doc)
{
    ingot__json_tok t;
    memset(&t, 0, sizeof t);
    ingot__json_init(j, doc, strlen(doc), 0, 0);
    if (ingot__json_next(j, &t, NULL) != INGOT_OK) t.type = ING_JSON_END;
    return t;
}

TEST(numbers)
{
    ingot__json j;
    ingot__json_tok t;
    uint64_t u = 0;
    int64_t i = 0;
    double d = 0;
    t = one_number(&j, "18446744073709551615");
    ASSERT_OK(ingot__json_u64(&j, &t, &u, NULL));
    ASSERT_U64(u, UINT64_MAX);
    t = one_number(&j, "18446744073709551616");
    ASSERT_ST(ingot__json_u64(&j, &t, &u, NULL), INGOT_RANGE);
    t = one_number(&j, "99999999999999999999999");
    ASSERT_ST(ingot__json_u64(&j, &t, &u, NULL), INGOT_RANGE);
    t = one_number(&j, "-1");
    ASSERT_ST(ingot__json_u64(&j, &t, &u, NULL), INGOT_WRONG_TYPE);
    t = one_number(&j, "2.0");
    ASSERT_ST(ingot__json_u64(&j, &t, &u, NULL), INGOT_WRONG_TYPE);
    t = one_number(&j, "1e3");
    ASSERT_ST(ingot__json_u64(&j, &t, &u, NULL), INGOT_WRONG_TYPE);
    t = one_number(&j, "0");
    ASSERT_OK(ingot__json_u64(&j, &t, &u, NULL));
    ASSERT_U64(u, 0);
    t = one_number(&j, "-9223372036854775808");
    ASSERT_OK(ingot__json_i64(&j, &t, &i, NULL));
    ASSERT_TRUE(i == INT64_MIN);
    t = one_number(&j, "-9223372036854775809");
    ASSERT_ST(ingot__json_i64(&j, &t, &i, NULL), INGOT_RANGE);
    t = one_number(&j, "9223372036854775807");
    ASSERT_OK(ingot__json_i64(&j, &t, &i, NULL));
    ASSERT_TRUE(i == INT64_MAX);
    t = one_number(&j, "9223372036854775808");
    ASSERT_ST(ingot__json_i64(&j, &t, &i, NULL), INGOT_RANGE);
    static const char *fl[] = {"0",       "-0.0",      "1.5",         "3.141592653589793",
                               "1e22",    "1e23",      "-2.5e-3",     "123456789012345678901234",
                               "5e-324",  "1.7976931348623157e308", "0.1", "1E-7",
                               "9007199254740993", "0.000001", "1e-400", "12345678901234567890e-30"};
    for (size_t k = 0; k < sizeof fl / sizeof fl[0]; k++) {
        t = one_number(&j, fl[k]);
        ingot_status st = ingot__json_f64(&j, &t, &d, NULL);
        CHECK(st == INGOT_OK, "%s: %s", fl[k], ingot_status_name(st));
        double want = strtod(fl[k], NULL);
        CHECK(memcmp(&d, &want, sizeof d) == 0, "%s: %.17g want %.17g", fl[k], d, want);
    }
    t = one_number(&j, "1e309");
    ASSERT_ST(ingot__json_f64(&j, &t, &d, NULL), INGOT_RANGE);
    /* Flags. */
    t = one_number(&j, "-1.5e3");
    ASSERT_EQ(t.flags, ING_JSON_NEG | ING_JSON_FRAC | ING_JSON_EXP);
}

TEST(depth_limit)
{
    char doc[600];
    for (int k = 0; k < 300; k++) doc[k] = '[';
    for (int k = 0; k < 300; k++) doc[300 + k] = ']';
    ingot_error e;
    ASSERT_ST(scan_all(doc, 600, NULL, 0, &e), INGOT_BAD_ARRAY);
    ASSERT_U64(e.offset, 256);
    /* Exactly at the limit passes. */
    ingot__json j;
    ingot__json_init(&j, doc + 300 - 4, 8, 4, 0);
    ingot__json_tok t;
    ingot_status st;
    do st = ingot__json_next(&j, &t, NULL);
    while (st == INGOT_OK && t.type != ING_JSON_END);
    ASSERT_OK(st);
    ingot__json_init(&j, doc + 300 - 5, 10, 4, 0);
    do st = ingot__json_next(&j, &t, NULL);
    while (st == INGOT_OK && t.type != ING_JSON_END);
    ASSERT_ST(st, INGOT_BAD_ARRAY);
    /* Mixed objects and arrays keep their kinds across 64-bit words of the stack. */
    char mix[1200];
    size_t o = 0;
    for (int k = 0; k < 200; k++) {
        if (k % 3 == 0) { memcpy(mix + o, "{\"a\":", 5); o += 5; }
        else mix[o++] = '[';
    }
    mix[o++] = '1';
    for (int k = 199; k >= 0; k--) mix[o++] = (k % 3 == 0) ? '}' : ']';
    ASSERT_OK(scan_all(mix, o, NULL, 0, NULL));
}

TEST(skip_and_structure)
{
    const char *doc = "{\"skip\":{\"a\":[1,{\"b\":[]}],\"c\":\"}\"},\"keep\":[true]}";
    ingot__json j;
    ingot__json_init(&j, doc, strlen(doc), 0, 0);
    ingot__json_tok t;
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_EQ(t.type, ING_JSON_OBJECT);
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_TRUE(t.type == ING_JSON_KEY && ingot__json_str_eq(&t, "skip", 4));
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_EQ(t.type, ING_JSON_OBJECT);
    ASSERT_EQ(t.depth, 1);
    ASSERT_OK(ingot__json_skip(&j, &t, NULL));
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_TRUE(t.type == ING_JSON_KEY && ingot__json_str_eq(&t, "keep", 4));
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_EQ(t.type, ING_JSON_ARRAY);
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_EQ(t.type, ING_JSON_TRUE);
    ASSERT_EQ(t.depth, 2);
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_EQ(t.type, ING_JSON_ARRAY_END);
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_EQ(t.type, ING_JSON_OBJECT_END);
    ASSERT_EQ(t.depth, 0);
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_EQ(t.type, ING_JSON_END);
    ASSERT_OK(ingot__json_next(&j, &t, NULL)); /* END repeats */
    ASSERT_EQ(t.type, ING_JSON_END);
    /* Skipping a scalar is a no-op. */
    ingot__json_init(&j, "5", 1, 0, 0);
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_OK(ingot__json_skip(&j, &t, NULL));
}

TEST(quote_round_trip)
{
    const char s[] = "a\"b\\c\n\t\x01\x1f\xc3\xa9/";
    size_t n = sizeof s - 1;
    char buf[128];
    size_t need = ingot__json_quote(NULL, 0, s, n);
    ASSERT_EQ(ingot__json_quote(buf, sizeof buf, s, n), need);
    ASSERT_EQ(need, strlen("\"a\\\"b\\\\c\\n\\t\\u0001\\u001f\xc3\xa9/\""));
    ASSERT_MEM(buf, "\"a\\\"b\\\\c\\n\\t\\u0001\\u001f\xc3\xa9/\"", need);
    ingot__json j;
    ingot__json_init(&j, buf, need, 0, 0);
    ingot__json_tok t;
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_TRUE(ingot__json_str_eq(&t, s, n));
}

TEST(every_truncation_and_corruption)
{
    const char *doc = "{\"__metadata__\":{\"format\":\"pt\"},\"w\\u00e9\":{\"dtype\":\"F32\","
                      "\"shape\":[2,3],\"data_offsets\":[0,24]},\"x\":[-1.5e3,true,null]}";
    size_t n = strlen(doc);
    ASSERT_OK(scan_all(doc, n, NULL, 0, NULL));
    for (size_t k = 0; k < n; k++) {
        ingot_error e;
        ingot_status st = scan_all(doc, k, NULL, 0, &e);
        CHECK(st != INGOT_OK, "prefix %zu accepted", k);
        CHECK(e.offset <= k, "prefix %zu: offset %llu", k, (unsigned long long)e.offset);
    }
    /* Every byte replaced by every value: never crashes, reports an offset inside the buffer. */
    char *cp = malloc(n);
    ASSERT_TRUE(cp != NULL);
    size_t accepted = 0;
    for (size_t k = 0; k < n; k++) {
        for (int v = 0; v < 256; v++) {
            memcpy(cp, doc, n);
            cp[k] = (char)v;
            ingot_error e;
            memset(&e, 0, sizeof e);
            ingot_status st = scan_all(cp, n, NULL, 0, &e);
            if (st == INGOT_OK) accepted++;
            else if (e.offset > n) {
                CHECK(0, "byte %zu=%d: offset %llu", k, v, (unsigned long long)e.offset);
            }
        }
    }
    free(cp);
    ASSERT_TRUE(accepted > 0);
}

/* Digit runs and integers through the word-at-a-time path and the byte tail: every length from
 * 1 to 24 digits, at every offset from the buffer end, against a byte loop. */
TEST(digits_and_uint_at)
{
    char buf[64];
    for (int nd = 1; nd <= 24; nd++) {
        for (int tail = 0; tail <= 9; tail++) {
            size_t n = 0;
            for (int k = 0; k < nd; k++) buf[n++] = (char)('1' + (k * 7 + nd) % 9);
            for (int k = 0; k < tail; k++) buf[n++] = ",]}:.e /"[k % 8];
            uint64_t want = 0;
            for (int k = 0; k < nd; k++) want = want * 10 + (uint64_t)(buf[k] - '0');
            uint64_t acc = 0;
            size_t end = ingot__json_digits((const uint8_t *)buf, 0, n, &acc);
            CHECK(end == (size_t)nd && acc == want, "%d digits, %d after", nd, tail);
            uint64_t v = 7;
            end = ingot__json_uint_at((const uint8_t *)buf, 0, n, &v);
            if (nd <= 19)
                CHECK(end == (size_t)nd && v == want, "uint_at %d digits", nd);
            else
                CHECK(end == 0 && v == 7, "uint_at %d digits: refused, nothing stored", nd);
        }
    }
    uint64_t v = 0;
    const uint8_t *m = (const uint8_t *)"9999999999999999999,18446744073709551615]0123-1 x";
    ASSERT_EQ(ingot__json_uint_at(m, 0, 50, &v), 19);
    ASSERT_U64(v, 9999999999999999999ull);
    ASSERT_EQ(ingot__json_uint_at(m, 20, 50, &v), 0); /* 20 digits: the general path decides */
    ASSERT_EQ(ingot__json_uint_at(m, 41, 50, &v), 42); /* '0' ends the number */
    ASSERT_U64(v, 0);
    ASSERT_EQ(ingot__json_uint_at(m, 45, 50, &v), 0); /* '-' */
    ASSERT_EQ(ingot__json_uint_at(m, 48, 50, &v), 0); /* ' ' */
    ASSERT_EQ(ingot__json_uint_at(m, 50, 50, &v), 0); /* end */
    ASSERT_EQ(ingot__json_uint_at(m, 0, 3, &v), 3);   /* the buffer ends the number */
    ASSERT_U64(v, 999);
}

/* value_at / value_done: a caller matches a value itself and the scanner continues after it. */
TEST(caller_matched_values)
{
    const char *doc = "{\"a\": {\"x\":[1,2]},\"b\":7}";
    ingot__json j;
    ingot__json_tok t;
    ingot__json_init(&j, doc, strlen(doc), 0, 0);
    ASSERT_EQ(ingot__json_value_at(&j), 0); /* the top-level value */
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_EQ(t.type, ING_JSON_OBJECT);
    ASSERT_TRUE(ingot__json_value_at(&j) == SIZE_MAX); /* a key comes next, not a value */
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_EQ(t.type, ING_JSON_KEY);
    size_t at = ingot__json_value_at(&j);
    ASSERT_EQ(at, 6); /* whitespace skipped */
    ASSERT_EQ(doc[at], '{');
    ingot__json_value_done(&j, at + 11); /* {"x":[1,2]} */
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_EQ(t.type, ING_JSON_KEY);
    ASSERT_TRUE(ingot__json_str_eq(&t, "b", 1));
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_EQ(t.type, ING_JSON_NUMBER);
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_EQ(t.type, ING_JSON_OBJECT_END);
    ASSERT_OK(ingot__json_next(&j, &t, NULL));
    ASSERT_EQ(t.type, ING_JSON_END);
    /* A whole document matched by the caller: only whitespace may follow. */
    ingot__json_init(&j, "[1] x", 5, 0, 0);
    ingot__json_value_done(&j, 3);
    ASSERT_ST(ingot__json_next(&j, &t, NULL), INGOT_BAD_METADATA);
    ASSERT_TRUE(ingot__json_value_at(&j) == SIZE_MAX); /* failed */
}

RUN_TESTS(T(accepts_valid_documents), T(rejects_grammar_errors_with_offsets),
          T(syntax_code_and_base_offset), T(strings_escapes_and_utf8), T(numbers), T(depth_limit),
          T(skip_and_structure), T(quote_round_trip), T(every_truncation_and_corruption),
          T(digits_and_uint_at), T(caller_matched_values))
