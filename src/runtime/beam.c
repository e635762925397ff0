/*
 * beam.c - beam search (include/ingot/lm.h section 5): `width` live hypotheses, each a session
 * (its KV cache) plus its summed log-probability; every step ranks all continuations, forks the
 * surviving ones into a second set of sessions (ingot_lm_session_copy) and evaluates their new
 * token. Sessions, candidate lists and hypothesis storage are allocated before the first step.
 * With stop strings every live hypothesis also carries its streaming decoder state and the text
 * it holds back (what could still become a stop string); a candidate is probed by pushing its
 * token through a copy of its parent's (lm_text.c's matcher), and forks carry the result.
 */
#include <math.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "lm_internal.h"

#define MAX_WIDTH 256u

typedef struct cand {
    double sum;
    uint32_t beam, token;
} cand;

typedef struct beam_state {
    ingot_lm *m;
    uint32_t W, V, T;   /* width, vocabulary, max tokens */
    ingot_lm_session **cur; /* 2 W sessions: the live generation's half and the next one's */
    double *sum;            /* 2 W sums, by slot */
    int32_t *toks;          /* 2 W x T generated tokens */
    double *lp;         /* one beam's log-softmax */
    cand *heap;         /* the best `keep` candidates */
    int32_t *best;      /* the best finished hypothesis */
    size_t best_n;
    double best_score;
    bool have_best;
    /* stop strings: the matcher, and per slot (2 W) a decoder state and held text */
    lm_text txt;
    bool stops;
    ingot_tokenizer_stream *tst;
    char *thold;        /* 2 W x txt.hold_cap, then one more for the probe */
    size_t *tn;
} beam_state;

/* One generation of hypotheses: a half (W slots) of each double buffer of beam_state. */
typedef struct beam_gen {
    ingot_lm_session **s;
    double *sum;
    int32_t *toks; /* [W][T] */
    ingot_tokenizer_stream *st; /* stop strings only: decoder states, held texts, their lengths */
    char *hold;
    size_t *hn;
} beam_gen;

static beam_gen gen_half(const beam_state *b, size_t half, size_t HC)
{
    size_t W = b->W;
    beam_gen g = {b->cur + half * W, b->sum + half * W, b->toks + half * W * b->T, NULL, NULL,
                  NULL};
    if (b->stops) {
        g.st = b->tst + half * W;
        g.hold = b->thold + half * W * HC;
        g.hn = b->tn + half * W;
    }
    return g;
}

/* Rank order: larger sum first, then lower beam, then lower token. */
static bool better(const cand *a, const cand *b)
{
    if (a->sum != b->sum) return a->sum > b->sum;
    if (a->beam != b->beam) return a->beam < b->beam;
    return a->token < b->token;
}

/* Min-heap by rank (the worst kept candidate on top). */
static void sift(cand *h, size_t n, size_t i)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) return;
        if (c + 1 < n && better(&h[c], &h[c + 1])) c++;
        if (!better(&h[i], &h[c])) return;
        cand t = h[i];
        h[i] = h[c];
        h[c] = t;
        i = c;
    }
}

static void push(cand *h, size_t *n, size_t cap, cand c)
{
    if (*n < cap) {
        size_t i = (*n)++;
        h[i] = c;
        while (i > 0) { /* sift up */
            size_t p = (i - 1) / 2;
            if (!better(&h[p], &h[i])) break;
            cand t = h[p];
            h[p] = h[i];
            h[i] = t;
            i = p;
        }
    } else if (better(&c, &h[0])) {
        h[0] = c;
        sift(h, *n, 0);
    }
}

static void log_softmax(const float *x, uint32_t n, double *out)
{
    double mx = -INFINITY, sum = 0;
    for (uint32_t i = 0; i < n; i++)
        if (x[i] > mx) mx = x[i];
    for (uint32_t i = 0; i < n; i++) sum += exp((double)x[i] - mx);
    double l = mx + log(sum);
    for (uint32_t i = 0; i < n; i++) out[i] = (double)x[i] - l;
}

static void finish(beam_state *b, const int32_t *toks, size_t n, int32_t last, double sum,
                   double penalty)
{
    size_t len = n + (last >= 0);
    double score = sum / (penalty != 0 ? pow((double)len, penalty) : 1.0);
    if (b->have_best && !(score > b->best_score)) return;
    memcpy(b->best, toks, n * sizeof *toks);
    if (last >= 0) b->best[n] = last;
    b->best_n = len;
    b->best_score = score;
    b->have_best = true;
}

static void free_state(beam_state *b)
{
    const ingot_allocator *al = b->m->al;
    size_t W = b->W, T = b->T, V = b->V;
    for (size_t i = 0; i < 2 * W; i++)
        if (b->cur) ingot_lm_session_free(b->cur[i]);
    if (b->cur) ingot__free(al, b->cur, 2 * W * sizeof *b->cur);
    if (b->sum) ingot__free(al, b->sum, 2 * W * sizeof *b->sum);
    if (b->toks) ingot__free(al, b->toks, 2 * W * T * sizeof *b->toks);
    if (b->lp) ingot__free(al, b->lp, V * sizeof *b->lp);
    if (b->heap) ingot__free(al, b->heap, 2 * W * sizeof *b->heap);
    if (b->best) ingot__free(al, b->best, (T + 1) * sizeof *b->best);
    if (b->tst) ingot__free(al, b->tst, 2 * W * sizeof *b->tst);
    if (b->tn) ingot__free(al, b->tn, 2 * W * sizeof *b->tn);
    if (b->thold) ingot__free(al, b->thold, (2 * W + 1) * b->txt.hold_cap);
    ingot__lm_text_free(&b->txt, al);
}

/* The text options of o as ingot_lm_generate's (lm_text.c checks and sizes them). */
static void text_opts(const ingot_lm_beam_opts *o, ingot_lm_generate_opts *g)
{
    memset(g, 0, sizeof *g);
    g->tokenizer = o->tokenizer;
    g->decode_flags = o->decode_flags;
    g->stop_strings = o->stop_strings;
    g->stop_lens = o->stop_lens;
    g->n_stop_strings = o->n_stop_strings;
    g->on_text = o->on_text;
    g->ctx = o->ctx;
}

/* The winner's text to on_text: its tokens through a fresh decoder, up to its stop string. */
static void winner_text(beam_state *b, const ingot_lm_beam_opts *o)
{
    lm_text *t = &b->txt;
    if (!t->tok || !o->on_text) return;
    ingot_tokenizer_stream_init(&t->st, o->decode_flags);
    t->nhold = 0;
    t->matched = -1;
    t->on_text = o->on_text;
    t->ctx = o->ctx;
    for (size_t i = 0; i < b->best_n; i++)
        if (ingot__lm_text_token(t, b->best[i]) != LM_TEXT_GO_ON) return;
    ingot__lm_text_finish(t);
}

INGOT_API ingot_status ingot_lm_beam_search(ingot_lm *m, const ingot_lm_session_opts *so,
                                            const int32_t *prompt, size_t n_prompt,
                                            const ingot_lm_beam_opts *opts, int32_t *out,
                                            size_t out_cap, size_t *n_out, double *score,
                                            ingot_error *err)
{
    if (!m || !opts || !n_out || (n_prompt && !prompt) || !out)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "lm_beam_search: NULL argument");
    *n_out = 0;
    const ingot_lm_config *c = &m->cfg;
    if (opts->width < 1 || opts->width > MAX_WIDTH || opts->max_tokens < 1 ||
        opts->length_penalty != opts->length_penalty)
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "width", 5,
                          "lm: beam width %u (1..%u) or max_tokens %u (>= 1)", opts->width,
                          MAX_WIDTH, opts->max_tokens);
    if (out_cap < opts->max_tokens)
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "out", 3,
                          "lm: room for %zu tokens, max_tokens is %u", out_cap, opts->max_tokens);
    int32_t bos = c->bos;
    if (n_prompt == 0) {
        if (bos < 0)
            return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, "bos", 3,
                              "lm_beam_search: no prompt and the model has no BOS token");
        prompt = &bos;
        n_prompt = 1;
    }
    beam_state b;
    memset(&b, 0, sizeof b);
    b.txt.matched = -1;
    ingot_lm_generate_opts to;
    text_opts(opts, &to);
    to.on_text = NULL; /* the winner's text is handed out at the end (winner_text) */
    ingot_status st = ingot__lm_text_init(&b.txt, &to, m->al, err);
    if (st == INGOT_OK && opts->on_text && !opts->tokenizer)
        st = ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, "tokenizer", 9,
                        "lm_beam_search: on_text needs a tokenizer");
    if (st != INGOT_OK) {
        ingot__lm_text_free(&b.txt, m->al);
        return st;
    }
    if (opts->on_text && !b.txt.tok) { /* text without stop strings: the matcher, no strings */
        to.on_text = opts->on_text;
        st = ingot__lm_text_init(&b.txt, &to, m->al, err);
        if (st != INGOT_OK) return st;
    }
    b.stops = b.txt.tok && b.txt.n;
    b.m = m;
    b.W = opts->width;
    b.V = c->vocab;
    b.T = opts->max_tokens;
    size_t W = b.W, T = b.T;
    const ingot_allocator *al = m->al;
    b.cur = ingot__calloc(al, 2 * W * sizeof *b.cur);
    b.sum = ingot__alloc(al, 2 * W * sizeof *b.sum);
    b.toks = ingot__alloc(al, 2 * W * T * sizeof *b.toks);
    b.lp = ingot__alloc(al, (size_t)b.V * sizeof *b.lp);
    b.heap = ingot__alloc(al, 2 * W * sizeof *b.heap);
    b.best = ingot__alloc(al, (T + 1) * sizeof *b.best);
    if (b.stops) {
        b.tst = ingot__alloc(al, 2 * W * sizeof *b.tst);
        b.tn = ingot__alloc(al, 2 * W * sizeof *b.tn);
        b.thold = ingot__alloc(al, (2 * W + 1) * b.txt.hold_cap);
    }
    if (!b.cur || !b.sum || !b.toks || !b.lp || !b.heap || !b.best ||
        (b.stops && (!b.tst || !b.tn || !b.thold)))
        st = ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0, "lm: beam search state");
    for (size_t i = 0; st == INGOT_OK && i < 2 * W; i++)
        st = ingot_lm_session_new(m, so, &b.cur[i], err);
    if (st == INGOT_OK && n_prompt + T > ingot_lm_session_ctx(b.cur[0]))
        st = ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "n_ctx", 5,
                        "lm: %zu prompt tokens + %zu generated exceed the %u-position sessions",
                        n_prompt, T, ingot_lm_session_ctx(b.cur[0]));
    if (st != INGOT_OK) {
        free_state(&b);
        return st;
    }
    size_t HC = b.txt.hold_cap;
    beam_gen cur = gen_half(&b, 0, HC), nxt = gen_half(&b, 1, HC);
    /* stop strings: the probe's decoder state and held text (the slot after the 2 W) */
    ingot_tokenizer_stream pst;
    char *phold = b.thold ? b.thold + 2 * W * HC : NULL;
    size_t pn = 0;
    if (b.stops) {
        ingot_tokenizer_stream_init(&cur.st[0], opts->decode_flags);
        cur.hn[0] = 0;
    }
    st = ingot_lm_eval(cur.s[0], prompt, n_prompt, INGOT_LM_LOGITS_LAST, cur.s[0]->last_logits,
                       b.V, err);
    size_t live = 1;
    cur.sum[0] = 0;
    bool eos_ends = !opts->ignore_eos && c->eos >= 0;
    for (size_t step = 0; st == INGOT_OK && step < T && live; step++) {
        /* rank every continuation; keep the best 2W (W live slots + up to W finished) */
        size_t nh = 0, keep = 2 * W;
        for (size_t i = 0; i < live; i++) {
            log_softmax(ingot_lm_session_logits(cur.s[i]), b.V, b.lp);
            for (uint32_t t = 0; t < b.V; t++) {
                cand cd = {cur.sum[i] + b.lp[t], (uint32_t)i, t};
                if (cd.sum == -INFINITY) continue;
                push(b.heap, &nh, keep, cd);
            }
        }
        /* heap sort: the worst goes to the end each round, so the array ends best first */
        size_t n = nh;
        for (size_t e = nh; e > 1; e--) {
            cand tmp = b.heap[0];
            b.heap[0] = b.heap[e - 1];
            b.heap[e - 1] = tmp;
            sift(b.heap, e - 1, 0);
        }
        size_t nlive = 0;
        bool last_step = step + 1 == T;
        for (size_t r = 0; r < n && nlive < W; r++) {
            const cand *cd = &b.heap[r];
            const int32_t *pt = cur.toks + cd->beam * T;
            if (eos_ends && (int32_t)cd->token == c->eos) {
                if (r < W) finish(&b, pt, step, (int32_t)cd->token, cd->sum, opts->length_penalty);
                continue;
            }
            if (b.stops) { /* the parent's text state, plus this token */
                pst = cur.st[cd->beam];
                pn = cur.hn[cd->beam];
                memcpy(phold, cur.hold + cd->beam * HC, pn);
                if (ingot__lm_text_probe(&b.txt, &pst, phold, &pn, (int32_t)cd->token) ==
                    LM_TEXT_STOP_STRING) {
                    if (r < W)
                        finish(&b, pt, step, (int32_t)cd->token, cd->sum, opts->length_penalty);
                    continue;
                }
            }
            if (last_step) {
                finish(&b, pt, step, (int32_t)cd->token, cd->sum, opts->length_penalty);
                nlive++;
                continue;
            }
            memcpy(nxt.toks + nlive * T, pt, step * sizeof *pt);
            nxt.toks[nlive * T + step] = (int32_t)cd->token;
            nxt.sum[nlive] = cd->sum;
            if (b.stops) {
                nxt.st[nlive] = pst;
                nxt.hn[nlive] = pn;
                memcpy(nxt.hold + nlive * HC, phold, pn);
            }
            st = ingot_lm_session_copy(nxt.s[nlive], cur.s[cd->beam], err);
            if (st != INGOT_OK) break;
            nlive++;
        }
        if (last_step || st != INGOT_OK) break;
        for (size_t i = 0; st == INGOT_OK && i < nlive; i++)
            st = ingot_lm_eval(nxt.s[i], &nxt.toks[i * T + step], 1, INGOT_LM_LOGITS_LAST,
                               nxt.s[i]->last_logits, b.V, err);
        beam_gen tg = cur;
        cur = nxt;
        nxt = tg;
        live = nlive;
    }
    if (st == INGOT_OK && !b.have_best)
        st = ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "logits", 6,
                        "lm: beam search found no finite hypothesis");
    if (st == INGOT_OK) {
        memcpy(out, b.best, b.best_n * sizeof *out);
        *n_out = b.best_n;
        if (score) *score = b.best_score;
        winner_text(&b, opts);
    }
    free_state(&b);
    return st;
}
