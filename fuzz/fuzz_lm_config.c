/*
 * fuzz_lm_config.c - libFuzzer target for the language-model runtime's config.json reader
 * (src/runtime/lm_config.c, the in-tree JSON scanner underneath): the input is the file's bytes.
 * Every call must return a known status with a well-formed error record; an accepted config
 * that also passes the consistency check must satisfy the invariants the runtime sizes its
 * buffers by. Plain builds replay the corpus through replay_main.c.
 */
#include "fuzz_common.h"
#include "lm_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ingot_lm_config c;
    ingot_error e;
    fz_err_reset(&e);
    ingot_status st = ingot__lm_config_json(data, size, "config.json", &c, &e);
    fz_err_check(&e, st);
    if (st != INGOT_OK) {
        FZ_CHECK(e.offset == INGOT_NO_OFFSET || e.offset <= size);
        return 0;
    }
    FZ_CHECK(c.arch == INGOT_LM_ARCH_LLAMA || c.arch == INGOT_LM_ARCH_GPT2);
    FZ_CHECK(c.naming && strcmp(c.naming, "hf") == 0);
    fz_err_reset(&e);
    st = ingot__lm_config_check(&c, "config.json", &e);
    fz_err_check(&e, st);
    if (st != INGOT_OK) return 0;
    FZ_CHECK(c.n_layer >= 1 && c.n_layer <= LM_MAX_LAYERS);
    FZ_CHECK(c.dim >= 1 && c.dim <= LM_MAX_DIM);
    FZ_CHECK(c.n_head_kv >= 1 && c.n_head % c.n_head_kv == 0);
    FZ_CHECK(c.head_dim >= 2 && c.head_dim % 2 == 0 && c.head_dim <= LM_MAX_HEAD_DIM);
    FZ_CHECK(c.ffn_dim >= 1 && c.ffn_dim <= LM_MAX_FFN);
    FZ_CHECK(c.n_expert_used <= c.n_expert && c.n_expert <= LM_MAX_EXPERTS);
    FZ_CHECK(c.norm_eps > 0 && c.norm_eps < 1);
    FZ_CHECK(c.vocab <= LM_MAX_VOCAB);
    FZ_CHECK(c.bos >= -1 && c.eos >= -1);
    return 0;
}
