/*
 * fuzz_json.c - libFuzzer target for the JSON pull scanner (src/core/json.h): scans the input to
 * the end with a few depth limits, decodes every string and key (decoded length as announced,
 * strict UTF-8, str_eq agrees with the decoded bytes), converts every number with the three
 * getters and the fast integer match (ingot__json_uint_at), sometimes skips containers; errors carry
 * offsets inside the input, the scanner stays failed after an error, and two scans of the same
 * input agree.
 */
#include "fuzz_common.h"
#include "json.h"

static ingot_status scan(const uint8_t *d, size_t n, uint32_t depth, bool skip, uint64_t *tokens)
{
    ingot__json j;
    ingot__json_init(&j, d, n, depth, 1000);
    uint8_t *buf = malloc(n + 1);
    FZ_CHECK(buf);
    ingot_status st;
    *tokens = 0;
    for (;;) {
        ingot__json_tok t;
        ingot_error e;
        fz_err_reset(&e);
        st = ingot__json_next(&j, &t, &e);
        if (st != INGOT_OK) {
            fz_err_check(&e, st);
            FZ_CHECK(e.offset >= 1000 && e.offset <= 1000 + n);
            FZ_CHECK(st == INGOT_BAD_STRING || st == INGOT_BAD_ARRAY || st == INGOT_BAD_METADATA);
            ingot__json_tok u;
            FZ_ST(ingot__json_next(&j, &u, NULL), st); /* sticky */
            break;
        }
        (*tokens)++;
        FZ_CHECK(t.pos <= n);
        if (t.type == ING_JSON_END) {
            FZ_CHECK(j.depth == 0);
            break;
        }
        FZ_CHECK(t.depth < (depth ? depth : ING_JSON_DEPTH_CAP) + 1);
        if (t.type == ING_JSON_STRING || t.type == ING_JSON_KEY) {
            FZ_CHECK(t.p >= d && t.p + t.len <= d + n && t.dlen <= t.len);
            size_t dl = 0;
            FZ_ST(ingot__json_str(&t, buf, n, &dl, NULL), INGOT_OK);
            FZ_CHECK(dl == t.dlen);
            FZ_CHECK(fz_utf8(buf, dl, true));
            FZ_CHECK((memchr(buf, 0, dl) != NULL) == ((t.flags & ING_JSON_HAS_NUL) != 0));
            FZ_CHECK(ingot__json_str_eq(&t, (const char *)buf, dl));
            if (dl) FZ_CHECK(!ingot__json_str_eq(&t, (const char *)buf, dl - 1));
            if (!(t.flags & ING_JSON_ESCAPED)) FZ_CHECK(dl == t.len && memcmp(buf, t.p, dl) == 0);
            /* quote + rescan gives the same bytes back */
            size_t need = ingot__json_quote(NULL, 0, (const char *)buf, dl);
            char *q = malloc(need);
            FZ_CHECK(ingot__json_quote(q, need, (const char *)buf, dl) == need);
            ingot__json j2;
            ingot__json_init(&j2, q, need, 0, 0);
            ingot__json_tok t2;
            FZ_ST(ingot__json_next(&j2, &t2, NULL), INGOT_OK);
            FZ_CHECK(t2.type == ING_JSON_STRING && ingot__json_str_eq(&t2, (const char *)buf, dl));
            free(q);
        } else if (t.type == ING_JSON_NUMBER) {
            uint64_t u;
            int64_t i;
            double f;
            ingot_status su = ingot__json_u64(&j, &t, &u, NULL);
            ingot_status si = ingot__json_i64(&j, &t, &i, NULL);
            ingot_status sf = ingot__json_f64(&j, &t, &f, NULL);
            FZ_CHECK(su == INGOT_OK || su == INGOT_WRONG_TYPE || su == INGOT_RANGE);
            FZ_CHECK(si == INGOT_OK || si == INGOT_WRONG_TYPE || si == INGOT_RANGE);
            FZ_CHECK(sf == INGOT_OK || sf == INGOT_RANGE || sf == INGOT_LIMIT);
            if (su == INGOT_OK && si == INGOT_OK) FZ_CHECK((uint64_t)i == u);
            /* The callers' fast integer match agrees with the token and the getter. */
            uint64_t fv = 0;
            size_t fe = ingot__json_uint_at(d, t.pos, n, &fv);
            bool plain = !(t.flags & (ING_JSON_NEG | ING_JSON_FRAC | ING_JSON_EXP));
            if (t.flags & ING_JSON_NEG) FZ_CHECK(fe == 0);
            if (plain && t.len <= 19) FZ_CHECK(fe == t.pos + t.len && su == INGOT_OK && fv == u);
            if (plain && t.len > 19) FZ_CHECK(fe == 0);
            if (fe && !plain) FZ_CHECK(fe < t.pos + t.len); /* stops at '.', 'e' or 'E' */
            if (su == INGOT_OK && sf == INGOT_OK) FZ_CHECK(f == (double)u || u > (1ull << 53));
        } else if (skip && (t.type == ING_JSON_OBJECT || t.type == ING_JSON_ARRAY) &&
                   (t.pos & 1)) {
            ingot_error e2;
            fz_err_reset(&e2);
            ingot_status ss = ingot__json_skip(&j, &t, &e2);
            if (ss != INGOT_OK) {
                fz_err_check(&e2, ss);
                st = ss;
                break;
            }
        }
    }
    free(buf);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t t1, t2, t3;
    ingot_status a = scan(data, size, 0, false, &t1);
    ingot_status b = scan(data, size, 0, true, &t2);
    FZ_ST(a, b); /* skipping validates as much as scanning */
    ingot_status c = scan(data, size, 3, false, &t3);
    if (a != INGOT_OK) FZ_CHECK(c != INGOT_OK);
    if (c == INGOT_OK) FZ_ST(a, INGOT_OK);
    ingot_status a2 = scan(data, size, 0, false, &t2);
    FZ_ST(a, a2);
    FZ_CHECK(t1 == t2);
    return 0;
}
