/* sha256.h - SHA-256 for tests (fixture sidecars give sha256 of each tensor's bytes). */
#ifndef INGOT_TEST_SHA256_H
#define INGOT_TEST_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    size_t fill;
} test_sha256;

void test_sha256_init(test_sha256 *s);
void test_sha256_update(test_sha256 *s, const void *data, size_t n);
void test_sha256_final(test_sha256 *s, uint8_t out[32]);
/* One call: lowercase hex digest into hex[65] (NUL-terminated). */
void test_sha256_hex(const void *data, size_t n, char hex[65]);

#endif
