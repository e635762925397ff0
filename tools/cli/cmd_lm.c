/* cmd_lm.c - the language-model commands (include/ingot/lm.h):
 *   ingot eval MODEL --tokens ID,ID,... -o logits.npy [--kv f32|f16] [options]
 *       float32 [T, vocab]: the logits at every position under teacher forcing.
 *   ingot generate MODEL [--tokens ID,ID,...] [-n N] [--temp T] [--top-k K] [--top-p P]
 *       [--min-p P] [--repeat-penalty R] [--seed S] [--ctx N] [--kv f32|f16] [--beams W]
 *       [--length-penalty L] [--echo] [--json] [options]
 *       streams the generated tokens to stdout (after the prompt with --echo); --temp 0 is
 *       greedy; no prompt starts from BOS.
 * Shared options: --config config.json, --lora ADAPTER[:SCALE] (a PEFT adapter folder or its
 * .safetensors; merged at open, or with --lora-runtime applied per call), --threads N,
 * --backend cpu|ref.
 * Text in and out goes through the tokenizer (include/ingot/tokenizer.h): --tokenizer SRC, else
 * the model's own (a GGUF's tokenizer.ggml.* arrays, a folder's tokenizer.json, ...). A model
 * without one (a llama2.c checkpoint given alone) takes --tokens and prints ids. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "ingot/ingot.h"

typedef struct lm_args {
    const char *model, *config, *backend, *out, *tokens, *prompt, *prompt_file, *tokenizer;
    char lora[4096];
    double lora_scale;
    bool lora_runtime;
    unsigned threads, ctx, n, beams;
    double length_penalty;
    bool json, have_n, have_seed, echo;
    const char **stop; /* --stop STR, repeatable (argv pointers) */
    size_t n_stop;
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
            "usage: ingot generate MODEL [--tokenizer SRC] [--prompt TEXT | --prompt-file F |\n"
            "         --tokens ID,ID,...] [-n N] [--temp T] [--top-k K]\n"
            "         [--top-p P] [--min-p P] [--repeat-penalty R] [--seed S] [--ctx N]\n"
            "         [--kv f32|f16] [--beams W [--length-penalty L]] [--stop STR]... [--echo]\n"
            "         [--json]\n"
            "         [--config config.json] [--lora ADAPTER[:SCALE] [--lora-runtime]]\n"
            "         [--threads N] [--backend cpu|ref]\n"
            "  streams the generated text to stdout (token ids when neither --tokenizer nor the\n"
            "  model has a tokenizer); --temp 0 is greedy; without a prompt (or with an empty\n"
            "  one) it starts from BOS; --beams W > 1 runs beam search\n"
            "  (scores: summed log-probabilities / length^L, L = 1 by default; sampling options\n"
            "  are ignored; -n is required). -n counts generated tokens; --echo prints the\n"
            "  prompt first (as llama2.c does: its -n also counts the prompt's tokens after\n"
            "  BOS). --stop STR (repeatable; needs a tokenizer) stops when the\n"
            "  generated text contains STR (bytes as given: $'\\n' in bash for a newline); the\n"
            "  text before it is printed, text that could still become one is held back until\n"
            "  resolved (with --beams a hypothesis whose text contains STR is finished there,\n"
            "  and the winner's text is printed up to it). --json prints one object:\n"
            "  prompt_tokens, tokens (with the token that completed a stop string), text (with\n"
            "  --echo, the prompt's text too; never the stop string), prefill_tokens_per_s,\n"
            "  decode_tokens_per_s, seed, stop (length, eos, string, context); with --beams\n"
            "  prompt_tokens, tokens, text, score, beams, seconds.\n");
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
        else if (generate && !strcmp(o, "--tokenizer") && v) a->tokenizer = v;
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
        } else if (generate && !strcmp(o, "--stop") && v) {
            if (!a->stop && !(a->stop = calloc((size_t)argc, sizeof *a->stop))) return 2;
            a->stop[a->n_stop++] = v;
        } else if (generate && !strcmp(o, "--echo")) {
            a->echo = true;
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

/* The tokenizer: --tokenizer SRC, else the model's own; NULL (and 0) when the model has none and
 * none was named. A named tokenizer that does not open is an error. */
static int open_tokenizer(const lm_args *a, ingot_tokenizer **tok)
{
    *tok = NULL;
    ingot_error e = {0};
    if (a->tokenizer) {
        if (ingot_tokenizer_open(a->tokenizer, NULL, tok, &e) != INGOT_OK)
            return fail("generate", a->tokenizer, &e);
        return 0;
    }
    if (ingot_tokenizer_open(a->model, NULL, tok, &e) != INGOT_OK) *tok = NULL;
    return 0;
}

static char *read_all(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    size_t cap = 4096, len = 0;
    char *b = malloc(cap);
    for (size_t k; b && (k = fread(b + len, 1, cap - len, fp)) > 0;) {
        len += k;
        if (len == cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) free(b);
            b = nb;
            cap *= 2;
        }
    }
    if (b && ferror(fp)) {
        free(b);
        b = NULL;
    }
    fclose(fp);
    *n = len;
    return b;
}

/* The prompt as ids: --tokens as given, or --prompt / --prompt-file encoded with the BOS the
 * tokenizer asks for. No prompt, or an empty one: no ids (generation starts from BOS). */
static int text_to_tokens(const lm_args *a, const ingot_tokenizer *tok, int32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    if (a->tokens) return parse_tokens("generate", a->tokens, ids, n);
    if (!a->prompt && !a->prompt_file) return 0;
    if (!tok) {
        fprintf(stderr, "ingot generate: %s has no tokenizer: name one with --tokenizer, or give "
                        "the prompt as --tokens ID,ID,...\n", a->model);
        return 1;
    }
    size_t len = 0;
    char *file = NULL;
    const char *text = a->prompt;
    if (a->prompt_file) {
        if (!(file = read_all(a->prompt_file, &len))) {
            fprintf(stderr, "ingot generate: IO: cannot read '%s': %s\n", a->prompt_file,
                    strerror(errno));
            return 1;
        }
        text = file;
    } else {
        len = strlen(text);
    }
    int rc = 0;
    if (len) {
        ingot_error e = {0};
        size_t cap = ingot_tokenizer_max_tokens(len);
        *ids = malloc(cap * sizeof **ids);
        if (!*ids) rc = fail("generate", "prompt", &e);
        else if (ingot_tokenizer_encode(tok, text, len, INGOT_ENCODE_ADD_SPECIAL, *ids, cap, n,
                                        NULL, 0, &e) != INGOT_OK)
            rc = fail("generate", "prompt", &e);
    }
    free(file);
    return rc;
}

typedef struct gen_out {
    bool json;
    size_t count;
    const ingot_tokenizer *tok; /* NULL: ids are printed */
    ingot_tokenizer_stream st;
    char *piece; /* ingot_tokenizer_stream_max(tok) bytes */
    char *text;  /* everything decoded, for --json */
    size_t text_len, text_cap;
} gen_out;

static void gen_emit(gen_out *g, const char *p, size_t n)
{
    if (!n) return;
    if (!g->json) {
        fwrite(p, 1, n, stdout);
        fflush(stdout);
        return;
    }
    if (g->text_len + n > g->text_cap) {
        size_t cap = (g->text_len + n) * 2;
        char *t = realloc(g->text, cap);
        if (!t) return;
        g->text = t;
        g->text_cap = cap;
    }
    memcpy(g->text + g->text_len, p, n);
    g->text_len += n;
}

/* One generated id -> stdout: its text (complete UTF-8 only) or, without a tokenizer, the id. */
static bool tokens_to_text(void *ctx, int32_t t)
{
    gen_out *g = ctx;
    if (g->tok) {
        size_t n = 0;
        if (ingot_tokenizer_stream_push(g->tok, &g->st, t, g->piece,
                                        ingot_tokenizer_stream_max(g->tok), &n) == INGOT_OK)
            gen_emit(g, g->piece, n);
    } else if (!g->json) {
        printf(g->count ? " %d" : "%d", (int)t);
        fflush(stdout);
    }
    g->count++;
    return true;
}

/* The library's resolved text (held back while it could become a stop string) -> stdout. */
static bool text_out(void *ctx, const char *p, size_t n)
{
    gen_emit(ctx, p, n);
    return true;
}

/* The token callback when the library decodes: counts only. */
static bool count_token(void *ctx, int32_t t)
{
    (void)t;
    ((gen_out *)ctx)->count++;
    return true;
}

static const char *stop_name(ingot_lm_stop s)
{
    switch (s) {
    case INGOT_LM_STOP_EOS: return "eos";
    case INGOT_LM_STOP_CALLBACK: return "callback";
    case INGOT_LM_STOP_CONTEXT: return "context";
    case INGOT_LM_STOP_STRING: return "string";
    default: return "length";
    }
}

static void gen_flush(gen_out *g)
{
    size_t n = 0;
    if (g->tok && ingot_tokenizer_stream_flush(g->tok, &g->st, g->piece,
                                               ingot_tokenizer_stream_max(g->tok), &n) == INGOT_OK)
        gen_emit(g, g->piece, n);
}

/* A JSON string of the decoded text (valid UTF-8: the stream decoder emits nothing else). */
static void json_text(const gen_out *g)
{
    putchar('"');
    for (size_t i = 0; i < g->text_len; i++) {
        unsigned char c = (unsigned char)g->text[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '\r') fputs("\\r", stdout);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

int ingot_cli_generate(int argc, char **argv)
{
    lm_args a;
    if (parse_args(argc, argv, true, &a)) {
        free(a.stop);
        return usage_generate();
    }
    if (!a.have_seed) a.sp.seed = (uint64_t)time(NULL);
    int32_t *prompt = NULL, *out = NULL;
    size_t np = 0, nout = 0;
    ingot_tokenizer *tok = NULL;
    gen_out g = {a.json, 0, NULL, {0}, NULL, NULL, 0, 0};
    uint32_t decode_flags = 0;
    int rc = open_tokenizer(&a, &tok);
    if (!rc && a.n_stop && !tok) {
        fprintf(stderr, "ingot generate: --stop needs a tokenizer (--tokenizer SRC): the model "
                        "has none\n");
        rc = 2;
    }
    if (!rc) rc = text_to_tokens(&a, tok, &prompt, &np);
    if (!rc && tok) {
        g.tok = tok;
        /* After a prompt the text goes on from it: keep the space SentencePiece puts in front
         * of the first generated word (it is stripped only at the start of a text). */
        bool text_before = false;
        for (size_t i = 0; i < np && !text_before; i++)
            text_before = !ingot_tokenizer_is_control(tok, prompt[i]);
        /* with --echo the prompt goes through g.st first, which then keeps the space itself */
        decode_flags = text_before ? INGOT_DECODE_KEEP_LEADING_SPACE : 0;
        ingot_tokenizer_stream_init(&g.st, a.echo ? 0 : decode_flags);
        if (!(g.piece = malloc(ingot_tokenizer_stream_max(tok)))) rc = 1;
    }
    if (rc) {
        ingot_tokenizer_close(tok);
        free(prompt);
        free(a.stop);
        return rc;
    }
    /* --echo: the prompt through the same stream (its control tokens print nothing; without a
     * tokenizer its ids), so the generated text goes on from it as llama2.c prints it */
    for (size_t i = 0; a.echo && i < np; i++) tokens_to_text(&g, prompt[i]);
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
    if (a.beams > 1) {
        if (!a.have_n) {
            fprintf(stderr, "ingot generate: --beams needs -n\n");
            rc = 2;
            goto done;
        }
        ingot_lm_beam_opts bo = {0};
        bo.width = a.beams;
        bo.max_tokens = (uint32_t)cap;
        bo.length_penalty = a.length_penalty;
        if (tok) { /* the library decodes the winner (cut before a stop string) */
            gen_flush(&g);
            bo.tokenizer = tok;
            bo.decode_flags = decode_flags;
            bo.stop_strings = a.stop;
            bo.n_stop_strings = a.n_stop;
            bo.on_text = text_out;
            bo.ctx = &g;
        }
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
        if (!tok)
            for (size_t i = 0; i < nout; i++) tokens_to_text(&g, out[i]);
        if (a.json) {
            printf("{\"prompt_tokens\": %zu, \"tokens\": [", np ? np : 1);
            for (size_t i = 0; i < nout; i++) printf(i ? ", %d" : "%d", (int)out[i]);
            printf("], \"text\": ");
            json_text(&g);
            printf(", \"score\": %.6f, \"beams\": %u, \"seconds\": %.3f}\n", score, a.beams,
                   secs);
        } else {
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
    if (tok) {
        /* the library decodes (and holds back what could become a stop string) */
        gen_flush(&g);
        go.on_token = count_token;
        go.on_text = text_out;
        go.tokenizer = tok;
        go.decode_flags = decode_flags;
        go.stop_strings = a.stop;
        go.n_stop_strings = a.n_stop;
    }
    ingot_lm_stats st;
    if (cap && ingot_lm_generate(s, sp, prompt, np, &go, out, cap, &nout, &st, &e) != INGOT_OK) {
        if (!a.json && g.count) printf("\n");
        fail("generate", a.model, &e);
        goto done;
    }
    if (!cap) memset(&st, 0, sizeof st);
    if (!tok) gen_flush(&g);
    double pre = st.prefill_ns ? st.prompt_tokens * 1e9 / (double)st.prefill_ns : 0;
    double dec = st.decode_ns && nout > 1 ? (nout - 1) * 1e9 / (double)st.decode_ns : 0;
    if (a.json) {
        printf("{\"prompt_tokens\": %" PRIu64 ", \"tokens\": [", st.prompt_tokens);
        for (size_t i = 0; i < nout; i++) printf(i ? ", %d" : "%d", (int)out[i]);
        printf("], \"text\": ");
        json_text(&g);
        printf(", \"prefill_tokens_per_s\": %.1f, \"decode_tokens_per_s\": %.1f, \"seed\": "
               "%" PRIu64 ", \"stop\": \"%s\"}\n", pre, dec, a.sp.seed, stop_name(st.stop));
    } else {
        printf("\n");
        fflush(stdout);
        fprintf(stderr, "ingot generate: %" PRIu64 " prompt tokens at %.1f tokens/s, %zu "
                        "generated at %.1f tokens/s\n", st.prompt_tokens, pre, nout, dec);
    }
    rc = 0;
done:
    free(a.stop);
    free(prompt);
    free(out);
    free(g.piece);
    free(g.text);
    ingot_tokenizer_close(tok);
    ingot_sampler_free(sp);
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    ingot_backend_free(be);
    return rc;
}

/* ---- ingot bench generate ---- */

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }
/* CPU time of the whole process (every thread of the pool), immune to time spent waiting for a
 * core on a loaded machine. */
static double cpu_s(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
/* Median of v[0, n) (sorts v); 0 for n == 0. */
static double median(double *v, unsigned n)
{
    if (!n) return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct read_job {
    const uint64_t *p;
    size_t n; /* words */
    uint64_t sum;
} read_job;

/* Sums the words with 8 independent accumulators of the widest loads the CPU has (AVX-512 or
 * AVX2, chosen at run time, as `ingot bench gemm` measures its read rate), so the loop is
 * limited by memory, not by adds. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
__attribute__((target("avx2"))) static uint64_t sum_avx2(const uint64_t *p, size_t n)
{
    __m256i a[8];
    for (int k = 0; k < 8; k++) a[k] = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 8; k++)
            a[k] = _mm256_add_epi64(a[k], _mm256_loadu_si256((const void *)(p + i + 4 * k)));
    uint64_t l[4], s = 0;
    for (int k = 0; k < 8; k++) {
        _mm256_storeu_si256((void *)l, a[k]);
        s += l[0] + l[1] + l[2] + l[3];
    }
    for (; i < n; i++) s += p[i];
    return s;
}
__attribute__((target("avx512f"))) static uint64_t sum_avx512(const uint64_t *p, size_t n)
{
    __m512i a[8];
    for (int k = 0; k < 8; k++) a[k] = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int k = 0; k < 8; k++)
            a[k] = _mm512_add_epi64(a[k], _mm512_loadu_si512((const void *)(p + i + 8 * k)));
    uint64_t s = 0;
    for (int k = 0; k < 8; k++) s += (uint64_t)_mm512_reduce_add_epi64(a[k]);
    for (; i < n; i++) s += p[i];
    return s;
}
#define HAVE_SUM_AVX2 1
/* The GEMM kernels may return with the upper register halves dirty, which slows the non-VEX
 * code after them (this file's loops included) many times over: cleared before each timing. */
__attribute__((target("avx"))) static void zero_upper_avx(void) { _mm256_zeroupper(); }
static void zero_upper(void)
{
    if (__builtin_cpu_supports("avx")) zero_upper_avx();
}
#else
static void zero_upper(void) {}
#endif

static void *read_words(void *arg)
{
    read_job *j = arg;
#ifdef HAVE_SUM_AVX2
    if (__builtin_cpu_supports("avx512f")) {
        j->sum = sum_avx512(j->p, j->n);
        return NULL;
    }
    if (__builtin_cpu_supports("avx2")) {
        j->sum = sum_avx2(j->p, j->n);
        return NULL;
    }
#endif
    uint64_t a[8] = {0};
    size_t i = 0;
    for (; i + 8 <= j->n; i += 8)
        for (int k = 0; k < 8; k++) a[k] += j->p[i + k];
    for (; i < j->n; i++) a[0] += j->p[i];
    j->sum = a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
    return NULL;
}

/* Streaming read bandwidth: a 1 GiB buffer, filled once, read by `threads` threads (one
 * contiguous slice each) per sample. bench generate samples it after every decode repetition as
 * well as three times at the end and takes the best, so the bound comes from the same minutes as
 * the decode it divides on a machine whose speed drifts (a shared host; one sample varies
 * 3-36 GB/s there, the best of eight far less). */
typedef struct read_buf {
    uint64_t *p;
    size_t words;
} read_buf;

static bool read_buf_new(read_buf *r)
{
    r->words = ((size_t)1 << 30) / 8;
    r->p = malloc(r->words * 8);
    if (!r->p) return false;
    for (size_t i = 0; i < r->words; i++) r->p[i] = i;
    return true;
}

/* One pass: bytes/s of wall time, *cpu: of process CPU time (0 when not measurable). */
static double read_sample(const read_buf *r, unsigned threads, double *cpu)
{
    pthread_t th[64];
    read_job jobs[64];
    if (threads > 64) threads = 64;
    size_t bytes = r->words * 8;
    zero_upper();
    double t0 = now_s(), c0 = cpu_s();
    for (unsigned k = 0; k < threads; k++) {
        size_t b = r->words / threads * k;
        size_t e = k + 1 == threads ? r->words : r->words / threads * (k + 1);
        jobs[k] = (read_job){r->p + b, e - b, 0};
        if (k) pthread_create(&th[k], NULL, read_words, &jobs[k]);
    }
    read_words(&jobs[0]);
    for (unsigned k = 1; k < threads; k++) pthread_join(th[k], NULL);
    double t = now_s() - t0, c = cpu_s() - c0;
    *cpu = c > 0 ? bytes / c : 0;
    return bytes / t;
}

/* f32 GEMM rate (FLOP/s) of the backend's linear on [512, 2048] x [2048, 2048]^T, best of 3:
 * the kernel prefill runs through; *cpu: FLOP per second of process CPU time. */
static double sgemm_rate(ingot_backend *be, double *cpu)
{
    enum { M = 512, K = 2048, N = 2048 };
    ingot_buffer *xb = NULL, *wb = NULL, *yb = NULL;
    double best = 0;
    *cpu = 0;
    if (ingot_buffer_alloc(be, (size_t)M * K * 4, &xb, NULL) == INGOT_OK &&
        ingot_buffer_alloc(be, (size_t)N * K * 4, &wb, NULL) == INGOT_OK &&
        ingot_buffer_alloc(be, (size_t)M * N * 4, &yb, NULL) == INGOT_OK) {
        float *x = ingot_buffer_host(xb), *w = ingot_buffer_host(wb);
        for (size_t i = 0; i < (size_t)M * K; i++) x[i] = (float)(i % 13) * 0.01f;
        for (size_t i = 0; i < (size_t)N * K; i++) w[i] = (float)(i % 7) * 0.01f;
        ingot_tensor X, W, Y;
        int64_t xs[2] = {M, K}, ws[2] = {N, K}, ys[2] = {M, N};
        ingot_tensor_init(&X, xb, 0, INGOT_DTYPE_F32, 2, xs, NULL);
        ingot_tensor_init(&W, wb, 0, INGOT_DTYPE_F32, 2, ws, NULL);
        ingot_tensor_init(&Y, yb, 0, INGOT_DTYPE_F32, 2, ys, NULL);
        for (int rep = 0; rep < 4; rep++) {
            zero_upper();
            double t0 = now_s(), c0 = cpu_s();
            if (ingot_op_linear(be, &Y, &X, &W, NULL, NULL) != INGOT_OK) break;
            double t = now_s() - t0, c = cpu_s() - c0, r = 2.0 * M * K * N / t;
            if (rep && r > best) best = r; /* the first call warms the pool */
            if (rep && c > 0 && 2.0 * M * K * N / c > *cpu) *cpu = 2.0 * M * K * N / c;
        }
    }
    ingot_buffer_free(xb);
    ingot_buffer_free(wb);
    ingot_buffer_free(yb);
    return best;
}

/* Drops the file's pages from the page cache (clean pages; no privileges needed). */
static void drop_cache(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

/* Open + first token (a 1-token prefill with its logits): seconds, or -1. */
static double first_token(const lm_args *a, ingot_backend *be)
{
    double t0 = now_s(), t = -1;
    ingot_lm *m = NULL;
    ingot_lm_session *s = NULL;
    ingot_lm_opts lo = {0};
    lo.config_path = a->config;
    if (ingot_lm_open_path(be, a->model, &lo, &m, NULL) == INGOT_OK) {
        const ingot_lm_config *c = ingot_lm_get_config(m);
        ingot_lm_session_opts so = {0};
        so.n_ctx = 16;
        int32_t tok = c->bos >= 0 ? c->bos : 0;
        float *lg = malloc((size_t)c->vocab * 4);
        if (lg && ingot_lm_session_new(m, &so, &s, NULL) == INGOT_OK &&
            ingot_lm_eval(s, &tok, 1, INGOT_LM_LOGITS_LAST, lg, c->vocab, NULL) == INGOT_OK)
            t = now_s() - t0;
        free(lg);
    }
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    return t;
}

int ingot_cli_bench_generate(int argc, char **argv)
{
    lm_args a;
    unsigned prompt = 128, decode = 64, reps = 3;
    /* bench options on top of the shared ones */
    int k = 0;
    char *rest[64];
    for (int i = 0; i < argc && k < 64; i++) {
        unsigned long long u;
        if (!strcmp(argv[i], "--prompt-tokens") && i + 1 < argc &&
            parse_uint(argv[i + 1], 4096, &u))
            prompt = (unsigned)u, i++;
        else if (!strcmp(argv[i], "--decode-tokens") && i + 1 < argc &&
                 parse_uint(argv[i + 1], 4096, &u))
            decode = (unsigned)u, i++;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc && parse_uint(argv[i + 1], 99, &u) &&
                 u >= 1)
            reps = (unsigned)u, i++;
        else rest[k++] = argv[i];
    }
    if (parse_args(k, rest, true, &a) || prompt < 1 || decode < 2) {
        fprintf(stderr, "usage: ingot bench generate MODEL [--threads N] [--json] "
                        "[--prompt-tokens P] [--decode-tokens D] [--reps R] "
                        "[--kv f32|f16] [--config config.json]\n");
        return 2;
    }
    ingot_backend *be = NULL;
    ingot_lm *m = NULL;
    ingot_lm_session *s = NULL;
    int32_t *toks = NULL;
    int rc = open_model("bench generate", &a, &be, &m);
    if (rc) return rc;
    rc = 1;
    const ingot_lm_config *c = ingot_lm_get_config(m);
    unsigned threads = ingot_backend_threads(be);
    ingot_lm_estimate est;
    ingot_lm_estimate_plan(m, prompt + decode + 1, INGOT_DTYPE_F32, 0, &est);
    ingot_lm_session_opts so = {0};
    so.n_ctx = prompt + decode + 1;
    toks = malloc((prompt + decode) * sizeof *toks);
    ingot_error e = {0};
    if (!toks || ingot_lm_session_new(m, &so, &s, &e) != INGOT_OK) {
        fail("bench generate", "session", &e);
        goto done;
    }
    for (unsigned i = 0; i < prompt + decode; i++) toks[i] = (int32_t)((i * 7919u + 13) % c->vocab);
    float *lg = malloc((size_t)c->vocab * 4);
    /* warm-up: one prefill (weights paged in, scratch sized) */
    if (!lg || ingot_lm_eval(s, toks, prompt, INGOT_LM_LOGITS_LAST, lg, c->vocab, &e) != INGOT_OK) {
        free(lg);
        fail("bench generate", "prefill", &e);
        goto done;
    }
    /* per repetition: tokens/s of wall time and of process CPU time, prefill and decode, and
     * a read-bandwidth sample right after the decode (the bound: the best of them all) */
    double best_pre = 0, best_dec = 0, r_pre[99], r_dec[99], c_pre[99], c_dec[99];
    double bw = 0, bw_cpu = 0;
    unsigned done = 0;
    read_buf rb;
    if (!read_buf_new(&rb)) {
        free(lg);
        fprintf(stderr, "ingot: bench generate: no memory for the 1 GiB read-bandwidth buffer\n");
        goto done;
    }
    for (unsigned rep = 0; rep < reps; rep++, done++) {
        ingot_lm_session_rewind(s, 0, NULL);
        double t0 = now_s(), c0 = cpu_s();
        if (ingot_lm_eval(s, toks, prompt, INGOT_LM_LOGITS_LAST, lg, c->vocab, &e) != INGOT_OK)
            break;
        double tp = now_s() - t0, cp = cpu_s() - c0;
        t0 = now_s(), c0 = cpu_s();
        unsigned i = 0;
        for (; i < decode; i++)
            if (ingot_lm_eval(s, toks + prompt + i, 1, INGOT_LM_LOGITS_LAST, lg, c->vocab, &e) !=
                INGOT_OK)
                break;
        if (i < decode) break;
        double td = now_s() - t0, cd = cpu_s() - c0, bc, b1 = read_sample(&rb, threads, &bc);
        if (b1 > bw) bw = b1;
        if (bc > bw_cpu) bw_cpu = bc;
        r_pre[rep] = prompt / tp, r_dec[rep] = decode / td;
        c_pre[rep] = cp > 0 ? prompt / cp : 0, c_dec[rep] = cd > 0 ? decode / cd : 0;
        if (r_pre[rep] > best_pre) best_pre = r_pre[rep];
        if (r_dec[rep] > best_dec) best_dec = r_dec[rep];
    }
    free(lg);
    if (done < reps) {
        free(rb.p);
        fail("bench generate", "eval", &e);
        goto done;
    }
    double med_pre = median(r_pre, done), med_dec = median(r_dec, done);
    double cpu_pre = median(c_pre, done), cpu_dec = median(c_dec, done);
    ingot_lm_session_free(s);
    s = NULL;
    for (int q = 0; q < 3; q++) { /* three more samples after the repetitions */
        double bc, b1 = read_sample(&rb, threads, &bc);
        if (b1 > bw) bw = b1;
        if (bc > bw_cpu) bw_cpu = bc;
    }
    free(rb.p);
    double gf_cpu = 0, gf = sgemm_rate(be, &gf_cpu);
    double dec_bound = est.weight_bytes ? bw / (double)est.weight_bytes : 0;
    double pre_bound = est.flops_per_token ? gf / (double)est.flops_per_token : 0;
    /* the same in CPU time: work per CPU second against the bound per CPU second, which a
     * machine shared with other jobs disturbs far less than wall-clock rates */
    double dec_bound_cpu = est.weight_bytes ? bw_cpu / (double)est.weight_bytes : 0;
    double pre_bound_cpu = est.flops_per_token ? gf_cpu / (double)est.flops_per_token : 0;
    /* time to first token: the model closed, its file dropped from the page cache, reopened */
    ingot_lm_free(m);
    m = NULL;
    drop_cache(a.model);
    double cold = first_token(&a, be), warm = first_token(&a, be);
    if (a.json) {
        printf("{\"model\": \"%s\", \"threads\": %u, \"kv\": \"%s\", \"weight_bytes\": %llu, "
               "\"flops_per_token\": %llu, \"read_bytes_per_s\": %.4g, \"sgemm_flops_per_s\": "
               "%.4g, \"prefill_tokens\": %u, \"prefill_tokens_per_s\": %.2f, "
               "\"prefill_bound_tokens_per_s\": %.2f, \"prefill_ratio\": %.3f, "
               "\"decode_tokens\": %u, \"decode_tokens_per_s\": %.2f, "
               "\"decode_bound_tokens_per_s\": %.2f, \"decode_ratio\": %.3f, "
               "\"ttft_cold_s\": %.4f, \"ttft_warm_s\": %.4f, \"reps\": %u, "
               "\"prefill_tokens_per_s_median\": %.2f, \"prefill_cpu_tokens_per_s\": %.2f, "
               "\"decode_tokens_per_s_median\": %.2f, \"decode_cpu_tokens_per_s\": %.2f, "
               "\"read_cpu_bytes_per_s\": %.4g, \"sgemm_cpu_flops_per_s\": %.4g, "
               "\"prefill_cpu_ratio\": %.3f, \"decode_cpu_ratio\": %.3f}\n",
               a.model, threads, a.kv == INGOT_DTYPE_F16 ? "f16" : "f32",
               (unsigned long long)est.weight_bytes, (unsigned long long)est.flops_per_token, bw,
               gf, prompt, best_pre, pre_bound,
               pre_bound ? best_pre / pre_bound : 0, decode, best_dec, dec_bound,
               dec_bound ? best_dec / dec_bound : 0, cold, warm, reps, med_pre, cpu_pre, med_dec,
               cpu_dec, bw_cpu, gf_cpu, pre_bound_cpu ? cpu_pre / pre_bound_cpu : 0,
               dec_bound_cpu ? cpu_dec / dec_bound_cpu : 0);
    } else {
        printf("ingot bench generate %s: %u threads, KV cache %s, %.1f MB of weights per token, "
               "%.1f MFLOP per token\n", a.model, threads, a.kv == INGOT_DTYPE_F16 ? "f16" : "f32",
               est.weight_bytes / 1e6, est.flops_per_token / 1e6);
        printf("  read bandwidth %.1f GB/s -> decode bound %.1f tokens/s; decode %.1f tokens/s "
               "(%.2f of the bound)\n", bw / 1e9, dec_bound, best_dec,
               dec_bound ? best_dec / dec_bound : 0);
        printf("  sgemm %.1f GFLOP/s -> prefill bound %.1f tokens/s; prefill of %u: %.1f "
               "tokens/s (%.2f of the bound)\n", gf / 1e9, pre_bound, prompt, best_pre,
               pre_bound ? best_pre / pre_bound : 0);
        printf("  time to first token after open: cold %.1f ms, warm %.1f ms\n", cold * 1e3,
               warm * 1e3);
        printf("  medians of %u runs: prefill %.1f tokens/s (%.1f per CPU second), decode %.1f "
               "tokens/s (%.1f per CPU second)\n", reps, med_pre, cpu_pre, med_dec, cpu_dec);
        printf("  per CPU second: read %.1f GB, sgemm %.1f GFLOP; decode %.2f of its bound, "
               "prefill %.2f\n", bw_cpu / 1e9, gf_cpu / 1e9,
               dec_bound_cpu ? cpu_dec / dec_bound_cpu : 0,
               pre_bound_cpu ? cpu_pre / pre_bound_cpu : 0);
    }
    rc = 0;
done:
    free(toks);
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    ingot_backend_free(be);
    return rc;
}
