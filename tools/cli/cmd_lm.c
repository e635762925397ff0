/* cmd_lm.c - the language-model commands (include/ingot/lm.h):
 *   ingot eval MODEL --tokens ID,ID,... -o logits.npy [--kv f32|f16] [options]
 *       float32 [T, vocab]: the logits at every position under teacher forcing.
 *   ingot generate MODEL [--tokens ID,ID,...] [-n N] [--temp T] [--top-k K] [--top-p P]
 *       [--min-p P] [--repeat-penalty R] [--seed S] [--ctx N] [--kv f32|f16] [--beams W]
 *       [--length-penalty L] [--json] [options]
 *       streams the generated tokens to stdout; --temp 0 is greedy; no prompt starts from BOS.
 * Shared options: --config config.json, --lora ADAPTER[:SCALE] (a PEFT adapter folder or its
 * .safetensors; merged at open, or with --lora-runtime applied per call), --threads N,
 * --backend cpu|ref.
 * Text in and out goes through the tokenizer (include/ingot/tokenizer.h, its own issue): until it
 * is wired in, prompts are token ids and the output is ids; tokens_to_text() and
 * text_to_tokens() below are the seam. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "ingot/ingot.h"

typedef struct lm_args {
    const char *model, *config, *backend, *out, *tokens, *prompt, *prompt_file;
    char lora[4096];
    double lora_scale;
    bool lora_runtime;
    unsigned threads, ctx, n, beams;
    double length_penalty;
    bool json, have_n, have_seed;
    ingot_dtype kv;
    ingot_sampler_params sp;
} lm_args;

static int fail(const char *cmd, const char *what, const ingot_error *e)
{
    char buf[320];
    fprintf(stderr, "ingot %s: %s: %s\n", cmd, what, ingot_error_format(e, buf, sizeof buf));
    return 1;
}

static void print_notice(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "notice: %s\n", msg);
}

static bool parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-') return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max) return false;
    *out = v;
    return true;
}

static bool parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    if (!s || !*s) return false;
    double v = strtod(s, &end);
    if (errno || *end || v != v) return false;
    *out = v;
    return true;
}

/* "1,2,3" -> ids (malloc'd). */
static int parse_tokens(const char *cmd, const char *s, int32_t **out, size_t *n)
{
    size_t cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) return fprintf(stderr, "ingot %s: out of memory\n", cmd), 1;
    size_t k = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX || (*end && *end != ',')) {
            fprintf(stderr, "ingot %s: --tokens: '%s' is not a list of token ids\n", cmd, s);
            free(ids);
            return 2;
        }
        ids[k++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    *out = ids;
    *n = k;
    return 0;
}

static int usage_eval(void)
{
    fprintf(stderr, "usage: ingot eval MODEL --tokens ID,ID,... -o logits.npy [--kv f32|f16] "
                    "[--config config.json] [--lora ADAPTER[:SCALE] [--lora-runtime]] "
                    "[--threads N] [--backend cpu|ref]\n");
    return 2;
}

static int usage_generate(void)
{
    fprintf(stderr,
            "usage: ingot generate MODEL [--tokens ID,ID,...] [-n N] [--temp T] [--top-k K]\n"
            "         [--top-p P] [--min-p P] [--repeat-penalty R] [--seed S] [--ctx N]\n"
            "         [--kv f32|f16] [--beams W [--length-penalty L]] [--json]\n"
            "         [--config config.json] [--lora ADAPTER[:SCALE] [--lora-runtime]]\n"
            "         [--threads N] [--backend cpu|ref]\n"
            "  streams the generated token ids to stdout (text needs the tokenizer); --temp 0 is\n"
            "  greedy; without --tokens it starts from BOS; --beams W > 1 runs beam search\n"
            "  (scores: summed log-probabilities / length^L, L = 1 by default; sampling options\n"
            "  are ignored; -n is required). --json prints one object: prompt_tokens, tokens,\n"
            "  text, prefill_tokens_per_s, decode_tokens_per_s.\n");
    return 2;
}

/* Parses the options both commands share plus generate's; returns 0, or 2 (usage). */
static int parse_args(int argc, char **argv, bool generate, lm_args *a)
{
    memset(a, 0, sizeof *a);
    a->backend = "cpu";
    a->kv = INGOT_DTYPE_F32;
    a->sp.temperature = 0.8;
    a->sp.top_k = 40;
    a->sp.top_p = 0.95;
    a->sp.min_p = 0.05;
    a->beams = 1;
    a->length_penalty = 1.0;
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long u;
        double d;
        bool val = true;
        if (!strcmp(o, "--config") && v) a->config = v;
        else if (!strcmp(o, "--lora") && v && strlen(v) < sizeof a->lora) {
            /* ADAPTER[:SCALE] */
            snprintf(a->lora, sizeof a->lora, "%s", v);
            char *colon = strrchr(a->lora, ':');
            if (colon && parse_double(colon + 1, &d)) {
                *colon = 0;
                a->lora_scale = d;
            }
        } else if (!strcmp(o, "--lora-runtime")) {
            a->lora_runtime = true;
            val = false;
        }
        else if (!strcmp(o, "--backend") && v) a->backend = v;
        else if (!strcmp(o, "--tokens") && v) a->tokens = v;
        else if (!strcmp(o, "--threads") && parse_uint(v, 1024, &u)) a->threads = (unsigned)u;
        else if (!strcmp(o, "--kv") && v && (!strcmp(v, "f32") || !strcmp(v, "f16")))
            a->kv = !strcmp(v, "f16") ? INGOT_DTYPE_F16 : INGOT_DTYPE_F32;
        else if (!generate && !strcmp(o, "-o") && v) a->out = v;
        else if (generate && !strcmp(o, "--prompt") && v) a->prompt = v;
        else if (generate && !strcmp(o, "--beams") && parse_uint(v, 256, &u) && u >= 1)
            a->beams = (unsigned)u;
        else if (generate && !strcmp(o, "--length-penalty") && parse_double(v, &d))
            a->length_penalty = d;
        else if (generate && !strcmp(o, "--prompt-file") && v) a->prompt_file = v;
        else if (generate && !strcmp(o, "-n") && parse_uint(v, 1u << 30, &u)) {
            a->n = (unsigned)u;
            a->have_n = true;
        } else if (generate && !strcmp(o, "--ctx") && parse_uint(v, 1u << 22, &u))
            a->ctx = (unsigned)u;
        else if (generate && !strcmp(o, "--temp") && parse_double(v, &d) && d >= 0)
            a->sp.temperature = d;
        else if (generate && !strcmp(o, "--top-k") && parse_uint(v, UINT32_MAX, &u))
            a->sp.top_k = (uint32_t)u;
        else if (generate && !strcmp(o, "--top-p") && parse_double(v, &d) && d >= 0)
            a->sp.top_p = d;
        else if (generate && !strcmp(o, "--min-p") && parse_double(v, &d) && d >= 0 && d <= 1)
            a->sp.min_p = d;
        else if (generate && !strcmp(o, "--repeat-penalty") && parse_double(v, &d) && d >= 0)
            a->sp.repeat_penalty = d;
        else if (generate && !strcmp(o, "--seed") && parse_uint(v, UINT64_MAX, &u)) {
            a->sp.seed = u;
            a->have_seed = true;
        } else if (generate && !strcmp(o, "--json")) {
            a->json = true;
            val = false;
        } else if (o[0] == '-' || a->model) {
            fprintf(stderr, "ingot %s: bad or unknown argument '%s'\n",
                    generate ? "generate" : "eval", o);
            return 2;
        } else {
            a->model = o;
            val = false;
        }
        if (val) i++;
    }
    return a->model ? 0 : 2;
}

/* The backend and the model; 0 or 1 (message printed). */
static int open_model(const char *cmd, const lm_args *a, ingot_backend **be, ingot_lm **m)
{
    ingot_error e = {0};
    ingot_backend_opts bo = {0};
    bo.threads = a->threads;
    if (ingot_backend_new(a->backend, &bo, be, &e) != INGOT_OK) return fail(cmd, a->backend, &e);
    ingot_lm_opts lo = {0};
    lo.config_path = a->config;
    lo.notice = print_notice;
    if (a->lora[0]) {
        lo.lora_path = a->lora;
        lo.lora_scale = a->lora_scale;
        lo.lora_runtime = a->lora_runtime;
    }
    if (ingot_lm_open_path(*be, a->model, &lo, m, &e) != INGOT_OK) return fail(cmd, a->model, &e);
    return 0;
}

int ingot_cli_eval(int argc, char **argv)
{
    lm_args a;
    if (parse_args(argc, argv, false, &a) || !a.tokens || !a.out) return usage_eval();
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = parse_tokens("eval", a.tokens, &ids, &n);
    if (rc) return rc;
    if (n == 0) {
        free(ids);
        return usage_eval();
    }
    ingot_backend *be = NULL;
    ingot_lm *m = NULL;
    ingot_lm_session *s = NULL;
    ingot_writer *w = NULL;
    float *logits = NULL;
    ingot_error e = {0};
    rc = open_model("eval", &a, &be, &m);
    if (rc) goto done;
    rc = 1;
    uint32_t vocab = ingot_lm_get_config(m)->vocab;
    ingot_lm_session_opts so = {0};
    so.n_ctx = (uint32_t)n;
    so.kv_dtype = a.kv;
    logits = malloc(n * vocab * sizeof *logits);
    if (!logits) {
        fprintf(stderr, "ingot eval: out of memory\n");
        goto done;
    }
    if (ingot_lm_session_new(m, &so, &s, &e) != INGOT_OK) {
        fail("eval", "session", &e);
        goto done;
    }
    if (ingot_lm_eval(s, ids, n, INGOT_LM_LOGITS_ALL, logits, n * vocab, &e) != INGOT_OK) {
        fail("eval", a.model, &e);
        goto done;
    }
    ingot_writer_opts wo = {0};
    wo.format = ingot_writer_format_for_path(a.out);
    if (!wo.format) wo.format = "npy";
    uint64_t shape[2] = {n, vocab};
    if (ingot_writer_new(&wo, &w, &e) != INGOT_OK ||
        ingot_writer_add_tensor(w, "logits", INGOT_DTYPE_F32, 2, shape, NULL, logits, &e) !=
            INGOT_OK ||
        ingot_writer_save(w, a.out, &e) != INGOT_OK) {
        fail("eval", a.out, &e);
        goto done;
    }
    rc = 0;
done:
    ingot_writer_free(w);
    free(logits);
    free(ids);
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    ingot_backend_free(be);
    return rc;
}

/* ---- generate ---- */

/* The tokenizer seam: text -> ids. Until include/ingot/tokenizer.h lands, prompts are ids. */
static int text_to_tokens(const lm_args *a, int32_t **ids, size_t *n)
{
    if (a->prompt || a->prompt_file) {
        fprintf(stderr, "ingot generate: --prompt/--prompt-file need the tokenizer, which is not "
                        "wired in yet; give the prompt as --tokens ID,ID,...\n");
        return 1;
    }
    *ids = NULL;
    *n = 0;
    return a->tokens ? parse_tokens("generate", a->tokens, ids, n) : 0;
}

typedef struct gen_out {
    bool json;
    size_t count;
} gen_out;

/* The tokenizer seam: one generated id -> stdout (ids, space separated, for now). */
static bool tokens_to_text(void *ctx, int32_t t)
{
    gen_out *g = ctx;
    if (!g->json) {
        printf(g->count ? " %d" : "%d", (int)t);
        fflush(stdout);
    }
    g->count++;
    return true;
}

int ingot_cli_generate(int argc, char **argv)
{
    lm_args a;
    if (parse_args(argc, argv, true, &a)) return usage_generate();
    if (!a.have_seed) a.sp.seed = (uint64_t)time(NULL);
    int32_t *prompt = NULL, *out = NULL;
    size_t np = 0, nout = 0;
    int rc = text_to_tokens(&a, &prompt, &np);
    if (rc) return rc;
    ingot_backend *be = NULL;
    ingot_lm *m = NULL;
    ingot_lm_session *s = NULL;
    ingot_sampler *sp = NULL;
    ingot_error e = {0};
    rc = open_model("generate", &a, &be, &m);
    if (rc) goto done;
    rc = 1;
    const ingot_lm_config *c = ingot_lm_get_config(m);
    ingot_lm_session_opts so = {0};
    so.n_ctx = a.ctx;
    so.kv_dtype = a.kv;
    if (ingot_lm_session_new(m, &so, &s, &e) != INGOT_OK) {
        fail("generate", "session", &e);
        goto done;
    }
    uint32_t ctx = ingot_lm_session_ctx(s);
    size_t cap = a.have_n ? a.n : ctx;
    out = malloc((cap ? cap : 1) * sizeof *out);
    if (!out || ingot_sampler_new(&a.sp, c->vocab, NULL, &sp, &e) != INGOT_OK) {
        fail("generate", "sampler", &e);
        goto done;
    }
    gen_out g = {a.json, 0};
    if (a.beams > 1) {
        if (!a.have_n) {
            fprintf(stderr, "ingot generate: --beams needs -n\n");
            rc = 2;
            goto done;
        }
        ingot_lm_beam_opts bo = {a.beams, (uint32_t)cap, a.length_penalty, false};
        ingot_lm_session_opts bso = so;
        if (!bso.n_ctx) bso.n_ctx = (uint32_t)(np + cap + 1);
        double score = 0;
        uint64_t t0 = 0;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        t0 = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        if (ingot_lm_beam_search(m, &bso, prompt, np, &bo, out, cap, &nout, &score, &e) !=
            INGOT_OK) {
            fail("generate", "beam search", &e);
            goto done;
        }
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double secs = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec - t0) * 1e-9;
        if (a.json) {
            printf("{\"prompt_tokens\": %zu, \"tokens\": [", np ? np : 1);
            for (size_t i = 0; i < nout; i++) printf(i ? ", %d" : "%d", (int)out[i]);
            printf("], \"text\": \"\", \"score\": %.6f, \"beams\": %u, \"seconds\": %.3f}\n",
                   score, a.beams, secs);
        } else {
            for (size_t i = 0; i < nout; i++) tokens_to_text(&g, out[i]);
            printf("\n");
            fflush(stdout);
            fprintf(stderr, "ingot generate: beam search, %u beams, score %.4f, %.3f s\n",
                    a.beams, score, secs);
        }
        rc = 0;
        goto done;
    }
    ingot_lm_generate_opts go = {0};
    go.max_tokens = (uint32_t)cap;
    go.on_token = tokens_to_text;
    go.ctx = &g;
    ingot_lm_stats st;
    if (cap && ingot_lm_generate(s, sp, prompt, np, &go, out, cap, &nout, &st, &e) != INGOT_OK) {
        if (!a.json && g.count) printf("\n");
        fail("generate", a.model, &e);
        goto done;
    }
    if (!cap) memset(&st, 0, sizeof st);
    double pre = st.prefill_ns ? st.prompt_tokens * 1e9 / (double)st.prefill_ns : 0;
    double dec = st.decode_ns && nout > 1 ? (nout - 1) * 1e9 / (double)st.decode_ns : 0;
    if (a.json) {
        printf("{\"prompt_tokens\": %" PRIu64 ", \"tokens\": [", st.prompt_tokens);
        for (size_t i = 0; i < nout; i++) printf(i ? ", %d" : "%d", (int)out[i]);
        printf("], \"text\": \"\", \"prefill_tokens_per_s\": %.1f, \"decode_tokens_per_s\": "
               "%.1f, \"seed\": %" PRIu64 "}\n", pre, dec, a.sp.seed);
    } else {
        printf("\n");
        fflush(stdout);
        fprintf(stderr, "ingot generate: %" PRIu64 " prompt tokens at %.1f tokens/s, %zu "
                        "generated at %.1f tokens/s\n", st.prompt_tokens, pre, nout, dec);
    }
    rc = 0;
done:
    free(prompt);
    free(out);
    ingot_sampler_free(sp);
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    ingot_backend_free(be);
    return rc;
}
