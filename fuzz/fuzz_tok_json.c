/*
 * fuzz_tok_json.c - libFuzzer target for tokenizer.json (and tokenizer_config.json): the input,
 * up to a first "\n--config--\n", is the tokenizer.json, the rest the config. Any failure must be
 * a clean status with a filled error record; a tokenizer that opens is exercised
 * (tok_exercise.h), encoding the input's own bytes as well.
 */
#include "tok_exercise.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    static const char sep[] = "\n--config--\n";
    size_t jn = n, cn = 0;
    const uint8_t *cfg = NULL;
    for (size_t i = 0; i + sizeof sep - 1 <= n; i++)
        if (memcmp(d + i, sep, sizeof sep - 1) == 0) {
            jn = i;
            cfg = d + i + sizeof sep - 1;
            cn = n - jn - (sizeof sep - 1);
            break;
        }
    ingot_tokenizer *t = NULL;
    ingot_error e;
    fz_err_reset(&e);
    ingot_status st = ingot__tok_load_hf_json(d, jn, cfg, cn, NULL, &t, &e);
    fz_err_check(&e, st);
    if (st != INGOT_OK) {
        FZ_CHECK(t == NULL);
        return 0;
    }
    tok_exercise(t, d, jn < 256 ? jn : 256);
    ingot_tokenizer_close(t);
    return 0;
}
