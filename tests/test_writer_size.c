/*
 * test_writer_size.c - the size options both sharding writers share (safetensors' and GGUF's
 * max_shard_size, safetensors' alignment): every unit, case, overflow and malformed spelling,
 * against values worked out here by hand.
 */
#include "harness.h"
#include "writer_impl.h"

TEST(units_and_values)
{
    static const struct {
        const char *s;
        uint64_t v;
    } ok[] = {{"1", 1},
              {"123", 123},
              {"7B", 7},
              {"2KB", 2000},
              {"500MB", 500000000ull},
              {"5GB", 5000000000ull},
              {"3TB", 3000000000000ull},
              {"10KiB", 10240},
              {"1MiB", 1048576},
              {"1GiB", 1073741824ull},
              {"2TiB", 2199023255552ull},
              {"5gb", 5000000000ull},
              {"4kib", 4096},
              {"18446744073709551615", UINT64_MAX},
              {"16777215TiB", 16777215ull << 40}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 0;
        CHECK(ingot__writer_parse_size(ok[i].s, &v) && v == ok[i].v, "%s -> %" PRIu64, ok[i].s,
              v);
    }
}

TEST(refused)
{
    static const char *const bad[] = {"",      "0",     "0GB",  "GB",   "-1",
                                      " 1",    "1 GB",  "1G",   "1KIBB", "1.5GB",
                                      "1XB",   "18446744073709551616", "18446744073709551615KB",
                                      "16777216TiB", "+5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 0;
        CHECK(!ingot__writer_parse_size(bad[i], &v), "'%s' accepted as %" PRIu64, bad[i], v);
    }
}

RUN_TESTS(T(units_and_values), T(refused))
