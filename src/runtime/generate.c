/*
 * generate.c - the generate loop of include/ingot/lm.h: prefill the prompt (or BOS), then sample
 * a token from the last logits, decode its text (lm_text.c: stop strings), hand it to the
 * callbacks, and evaluate it, until a stop. The loop uses only what the session, the sampler and
 * the text buffer allocated before the prompt hold.
 */
#include <string.h>
#include <time.h>

#include "error.h"
#include "lm_internal.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

INGOT_API ingot_status ingot_lm_generate(ingot_lm_session *s, ingot_sampler *sp,
                                         const int32_t *prompt, size_t n_prompt,
                                         const ingot_lm_generate_opts *opts, int32_t *out,
                                         size_t out_cap, size_t *n_out, ingot_lm_stats *stats,
                                         ingot_error *err)
{
    if (!s || !sp || !n_out || (n_prompt && !prompt) || (out_cap && !out))
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "lm_generate: NULL argument");
    *n_out = 0;
    ingot_lm_generate_opts o = {0};
    if (opts) o = *opts;
    ingot_lm_stats st;
    memset(&st, 0, sizeof st);
    st.stop_string = -1;
    const ingot_lm_config *c = &s->m->cfg;
    int32_t bos = c->bos;
    if (n_prompt == 0 && s->pos == 0) {
        if (bos < 0)
            return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, "bos", 3,
                              "lm_generate: no prompt and the model has no BOS token");
        prompt = &bos;
        n_prompt = 1;
    }
    if (n_prompt == 0 && !s->have_logits)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "lm_generate: no prompt and no logits from a previous eval");
    lm_text g;
    ING_TRY(ingot__lm_text_init(&g, &o, s->m->al, err));
    uint64_t t0 = now_ns();
    ingot_status rc = INGOT_OK;
    if (n_prompt)
        rc = ingot_lm_eval(s, prompt, n_prompt, INGOT_LM_LOGITS_LAST, s->last_logits, c->vocab,
                           err);
    if (rc != INGOT_OK) {
        ingot__lm_text_free(&g, s->m->al);
        return rc;
    }
    st.prompt_tokens = n_prompt;
    st.prefill_ns = now_ns() - t0;
    uint64_t t1 = now_ns();
    size_t limit = o.max_tokens && o.max_tokens < out_cap ? o.max_tokens : out_cap;
    st.stop = INGOT_LM_STOP_LENGTH;
    while (*n_out < limit) {
        int32_t t;
        rc = ingot_sampler_sample(sp, s->last_logits, s->tokens, s->pos, &t, err);
        if (rc != INGOT_OK) break;
        out[(*n_out)++] = t;
        bool stop = !o.ignore_eos && c->eos >= 0 && t == c->eos;
        for (size_t i = 0; !stop && i < o.n_stop_tokens; i++) stop = o.stop_tokens[i] == t;
        if (stop) {
            st.stop = INGOT_LM_STOP_EOS;
            break;
        }
        lm_text_verdict tv = g.tok ? ingot__lm_text_token(&g, t) : LM_TEXT_GO_ON;
        if (tv == LM_TEXT_STOP_STRING) {
            st.stop = INGOT_LM_STOP_STRING;
            break;
        }
        if (tv == LM_TEXT_STOP_CALLBACK || (o.on_token && !o.on_token(o.ctx, t))) {
            st.stop = INGOT_LM_STOP_CALLBACK;
            break;
        }
        if (*n_out == limit) break;
        if (s->pos >= s->n_ctx) {
            st.stop = INGOT_LM_STOP_CONTEXT;
            break;
        }
        rc = ingot_lm_eval(s, &t, 1, INGOT_LM_LOGITS_LAST, s->last_logits, c->vocab, err);
        if (rc != INGOT_OK) break;
    }
    st.decode_ns = now_ns() - t1;
    /* the end of the text: what was held back is matched once more and released */
    if (rc == INGOT_OK && g.tok && st.stop != INGOT_LM_STOP_STRING &&
        ingot__lm_text_finish(&g) == LM_TEXT_STOP_STRING)
        st.stop = INGOT_LM_STOP_STRING;
    st.generated_tokens = *n_out;
    st.stop_string = g.matched;
    st.text_bytes = g.bytes;
    ingot__lm_text_free(&g, s->m->al);
    if (stats) *stats = st;
    return rc;
}
