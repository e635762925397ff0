/* test_sha256.c - the test-support SHA-256 against FIPS 180-4 example digests. */
#include "harness.h"
#include "sha256.h"

TEST(known_vectors)
{
    char hex[65];
    test_sha256_hex("", 0, hex);
    ASSERT_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    test_sha256_hex("abc", 3, hex);
    ASSERT_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    test_sha256_hex(m, strlen(m), hex);
    ASSERT_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

RUN_TESTS(T(known_vectors))
