/*
 * fuzz_tok_bin.c - libFuzzer target for llama2.c's tokenizer.bin: open from the input (clean
 * status and error record on failure, no output then), exercise what opens (tok_exercise.h).
 */
#include "tok_exercise.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    ingot_tokenizer *t = NULL;
    ingot_error e;
    fz_err_reset(&e);
    ingot_status st = ingot__tok_load_llama2c(d, n, NULL, &t, &e);
    fz_err_check(&e, st);
    if (st != INGOT_OK) {
        FZ_CHECK(t == NULL);
        if (e.offset != INGOT_NO_OFFSET) FZ_CHECK(e.offset <= n);
        return 0;
    }
    tok_exercise(t, d, n < 128 ? n : 128);
    ingot_tokenizer_close(t);
    return 0;
}
