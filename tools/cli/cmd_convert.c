/*
 * cmd_convert.c - `ingot convert IN OUT` and `ingot meta FILE`: a thin layer over the conversion
 * API (include/ingot/convert.h). Parses the options into a plan, runs it, prints the lossy
 * records as "lossy: ..." lines on stderr and one summary line on stdout. A Hugging Face folder
 * as IN, or a folder (or --to hf) as OUT, makes it model-aware (convert.h section 4), staged
 * through a temporary .ingot file when plan options come with it.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define INGOT_CLI_HELPERS
#include "cli.h"

/* Options that may repeat, kept in command-line order. */
typedef struct {
    const char *opt; /* "--set", "--delete", ... */
    const char *arg;
} edit;

typedef struct {
    const char *in, *out;
    const char *to, *align, *dequantize, *dtype, *quantize;
    bool json;
    const char **wopts;
    size_t n_wopts;
    edit *edits; /* --include --exclude --rename --dtype-map --set --delete --rename-key */
    size_t n_edits;
} convert_args;

static const char *const repeated[] = {"--opt", "--include", "--exclude", "--rename",
                                       "--dtype-map", "--set", "--delete", "--rename-key", NULL};

static bool is_repeated(const char *a)
{
    for (const char *const *r = repeated; *r; r++)
        if (!strcmp(*r, a)) return true;
    return false;
}

/* Splits argv into repeated options (edits, --opt) and the rest for parse_args. */
static int split_args(const char *cmd, int argc, char **argv, convert_args *a, char **rest,
                      int *n_rest)
{
    *n_rest = 0;
    for (int i = 0; i < argc; i++) {
        if (!is_repeated(argv[i])) {
            rest[(*n_rest)++] = argv[i];
            continue;
        }
        if (i + 1 >= argc) return usage("%s: %s needs a value", cmd, argv[i]);
        const char *o = argv[i], *v = argv[++i];
        bool needs_eq = strcmp(o, "--include") && strcmp(o, "--exclude") && strcmp(o, "--delete");
        if (needs_eq && !strchr(v, '=')) {
            if (!strcmp(o, "--opt")) return usage("%s: --opt needs KEY=VALUE", cmd);
            if (!strcmp(o, "--set")) return usage("%s: --set needs KEY[:TYPE]=VALUE", cmd);
            return usage("%s: %s needs %s", cmd, o,
                         !strcmp(o, "--rename") ? "REGEX=REPLACEMENT"
                         : !strcmp(o, "--dtype-map") ? "SRC=DST" : "OLD=NEW");
        }
        if (!strcmp(o, "--opt")) a->wopts[a->n_wopts++] = v;
        else a->edits[a->n_edits++] = (edit){o, v};
    }
    return 0;
}

static void print_lossy(void *ctx, const ingot_lossy *l)
{
    (void)ctx;
    fprintf(stderr, "%s: lossy: %s\n", prog, l->message);
}

static const char *const kind_names[] = {"", "skipped", "metadata", "dequantized", "cast",
                                         "quantized"};

/* --json: the records and the summary (or the error) as one object on stdout. */
static void json_report(const ingot_convert_result *r, const ingot_convert_summary *s,
                        const char *out, ingot_status st, const ingot_error *e)
{
    printf("{\"ok\": %s, \"path\": ", st == INGOT_OK ? "true" : "false");
    json_str(stdout, out, strlen(out));
    printf(", \"format\": ");
    if (s->format) json_str(stdout, s->format, strlen(s->format));
    else fputs("null", stdout);
    printf(", \"tensors\": %" PRIu64 ", \"dropped\": %" PRIu64 ", \"cast\": %" PRIu64
           ", \"quantized\": %" PRIu64 ", \"dequantized\": %" PRIu64 ", \"skipped\": %" PRIu64
           ", \"metadata_lossy\": %" PRIu64 ", \"lossy\": [",
           s->tensors, s->dropped, s->cast, s->quantized, s->dequantized, s->skipped,
           s->metadata_lossy);
    for (uint64_t i = 0; i < ingot_convert_result_lossy_count(r); i++) {
        ingot_lossy l;
        ingot_convert_result_lossy_at(r, i, &l);
        printf("%s{\"kind\": \"%s\", \"message\": ", i ? ", " : "", kind_names[l.kind]);
        json_str(stdout, l.message, strlen(l.message));
        fputs(", \"name\": ", stdout);
        json_str(stdout, l.name, strlen(l.name));
        if (l.from) printf(", \"from\": \"%s\", \"to\": \"%s\"", ingot_dtype_name(l.from),
                           ingot_dtype_name(l.to));
        printf(", \"count\": %" PRIu64 "}", l.count);
    }
    fputc(']', stdout);
    if (st != INGOT_OK) {
        printf(", \"error\": {\"code\": \"%s\", \"message\": ", ingot_status_name(st));
        json_str(stdout, e->msg, strnlen(e->msg, sizeof e->msg));
        fputs(", \"tensor\": ", stdout);
        if (e->where[0]) json_str(stdout, e->where, strnlen(e->where, sizeof e->where));
        else fputs("null", stdout);
        if (e->offset == INGOT_NO_OFFSET) fputs(", \"offset\": null}", stdout);
        else printf(", \"offset\": %" PRIu64 "}", e->offset);
    }
    printf("}\n");
}

static int parse_float_dtype(const char *cmd, const char *what, const char *s, ingot_dtype *out)
{
    if (ingot_dtype_from_name(s, out) != INGOT_OK)
        return usage("%s: %s: unknown dtype '%s'", cmd, what, s);
    return 0;
}

/* Applies the plan-building options in their documented order: selection, renames, casts,
 * quantization, then metadata edits in command-line order. */
static int build_plan(const char *cmd, ingot_convert_plan *p, const convert_args *a)
{
    ingot_error e;
    size_t nr = 0;
    ingot_convert_rule *rules = calloc(a->n_edits ? a->n_edits : 1, sizeof *rules);
    if (!rules) return fail_st(INGOT_NOMEM, cmd);
    for (size_t i = 0; i < a->n_edits; i++) {
        bool inc = !strcmp(a->edits[i].opt, "--include");
        if (inc || !strcmp(a->edits[i].opt, "--exclude"))
            rules[nr++] = (ingot_convert_rule){a->edits[i].arg, inc};
    }
    ingot_status st = ingot_convert_plan_select(p, rules, nr, &e);
    free(rules);
    if (st != INGOT_OK) return fail_err(&e, cmd);
    for (size_t i = 0; i < a->n_edits; i++) {
        if (strcmp(a->edits[i].opt, "--rename")) continue;
        const char *arg = a->edits[i].arg, *eq = strrchr(arg, '=');
        char *re = strndup(arg, (size_t)(eq - arg));
        if (!re) return fail_st(INGOT_NOMEM, cmd);
        st = ingot_convert_plan_rename(p, re, eq + 1, &e);
        free(re);
        if (st != INGOT_OK) return fail_err(&e, "--rename");
    }
    if (a->dtype) {
        ingot_dtype to;
        int rc = parse_float_dtype(cmd, "--dtype", a->dtype, &to);
        if (rc) return rc;
        if (ingot_convert_plan_cast(p, INGOT_DTYPE_INVALID, to, &e) != INGOT_OK)
            return fail_err(&e, "--dtype");
    }
    for (size_t i = 0; i < a->n_edits; i++) {
        if (strcmp(a->edits[i].opt, "--dtype-map")) continue;
        const char *arg = a->edits[i].arg, *eq = strchr(arg, '=');
        char src[32];
        ingot_dtype from, to;
        if ((size_t)(eq - arg) >= sizeof src) return usage("%s: --dtype-map %s", cmd, arg);
        memcpy(src, arg, (size_t)(eq - arg));
        src[eq - arg] = '\0';
        int rc = parse_float_dtype(cmd, "--dtype-map", src, &from);
        if (!rc) rc = parse_float_dtype(cmd, "--dtype-map", eq + 1, &to);
        if (rc) return rc;
        if (ingot_convert_plan_cast(p, from, to, &e) != INGOT_OK)
            return fail_err(&e, "--dtype-map");
    }
    if (a->quantize && ingot_convert_plan_quantize(p, a->quantize, &e) != INGOT_OK)
        return fail_err(&e, "--quantize");
    for (size_t i = 0; i < a->n_edits; i++) {
        const char *o = a->edits[i].opt, *arg = a->edits[i].arg;
        if (!strcmp(o, "--set")) {
            st = ingot_convert_plan_meta_set_text(p, arg, &e);
            if (st == INGOT_BAD_METADATA || st == INGOT_BAD_TYPE) {
                char buf[512];
                return usage("%s: --set %s: %s", cmd, arg, ingot_error_format(&e, buf, sizeof buf));
            }
        } else if (!strcmp(o, "--delete")) {
            st = ingot_convert_plan_meta_delete(p, arg, &e);
        } else if (!strcmp(o, "--rename-key")) {
            const char *eq = strchr(arg, '=');
            char *from = strndup(arg, (size_t)(eq - arg));
            if (!from) return fail_st(INGOT_NOMEM, cmd);
            st = ingot_convert_plan_meta_rename(p, from, eq + 1, &e);
            free(from);
        } else {
            continue;
        }
        if (st != INGOT_OK) return fail_err(&e, o);
    }
    return 0;
}

/* After a refusal of tensor i: how --dequantize would get it stored, only where it would (a
 * refusal of the shape, such as .mag's of empty or rank-0 tensors, gets no hint). */
static void hint_dequantize(const ingot_convert_plan *p, const ingot_convert_opts *o, uint64_t i)
{
    ingot_convert_tensor ct;
    if (ingot_convert_plan_tensor_at(p, i, &ct) != INGOT_OK || ct.action != INGOT_CONVERT_KEEP)
        return;
    ingot_dtype dt = ct.dtype;
    if (!ingot_dtype_is_float_like(dt)) return;
    if (o->dequantize == INGOT_DTYPE_INVALID) {
        static const ingot_dtype floats[] = {INGOT_DTYPE_F32, INGOT_DTYPE_F16, INGOT_DTYPE_BF16};
        char list[32] = "";
        for (size_t k = 0; k < sizeof floats / sizeof *floats; k++)
            if (floats[k] != dt && ingot_convert_target_accepts(p, o, i, floats[k]))
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                         list[0] ? "|" : "", ingot_dtype_name(floats[k]));
        if (list[0])
            fprintf(stderr, "%s: convert: --dequantize %s stores '%s' (%s) as floats instead "
                            "(lossy)\n",
                    prog, list, ct.name, ingot_dtype_name(dt));
    } else if (o->dequantize != INGOT_DTYPE_F32 && dt != INGOT_DTYPE_F32 &&
               ingot_convert_target_accepts(p, o, i, INGOT_DTYPE_F32)) {
        fprintf(stderr, "%s: convert: the target cannot store %s either; try --dequantize F32\n",
                prog, ingot_dtype_name(o->dequantize));
    }
}

/* Runs plan p into out and reports as `ingot convert` does. */
static int run_plan(const char *cmd, ingot_convert_plan *p, const char *in, const char *out,
                    ingot_convert_opts *o)
{
    progress bar;
    progress_init(&bar, cmd);
    o->progress = progress_update;
    o->progress_ctx = &bar;
    o->lossy = print_lossy;
    ingot_convert_result *r = NULL;
    ingot_error e;
    ingot_status st = ingot_convert_run(p, out, o, &r, &e);
    progress_end(&bar);
    ingot_convert_summary s;
    ingot_convert_result_summary(r, &s);
    bool json = cli_json;
    if (json) {
        json_report(r, &s, out, st, &e);
        cli_json = false; /* the error is in the report already */
    }
    ingot_convert_result_free(r);
    if (st != INGOT_OK) {
        switch (s.failed_stage) {
        case INGOT_CONVERT_STAGE_OPTION: fail_err(&e, "convert --opt"); break;
        case INGOT_CONVERT_STAGE_METADATA:
            fprintf(stderr, "%s: %s: metadata '%.*s': %s: %s\n", prog, cmd,
                    (int)strnlen(e.where, sizeof e.where), e.where, ingot_status_name(st),
                    ingot_status_str(st));
            break;
        case INGOT_CONVERT_STAGE_SOURCE: fail_err(&e, in); break;
        case INGOT_CONVERT_STAGE_TARGET: fail_err(&e, out); break;
        default: fail_err(&e, cmd); break;
        }
        if (s.failed_stage == INGOT_CONVERT_STAGE_TARGET && s.failed_tensor != UINT64_MAX &&
            (st == INGOT_UNSUPPORTED || st == INGOT_BAD_TYPE))
            hint_dequantize(p, o, s.failed_tensor);
        return EXIT_REJECT;
    }
    if (cli_quiet || json) return fflush(stdout) == 0 ? 0 : EXIT_REJECT;
    /* GGUF split into shards: the target names their prefix, not a file */
    bool split = false;
    for (size_t i = 0; i < o->n_options; i++)
        split |= !strcmp(s.format, "gguf") && !strncmp(o->options[i], "max_shard_", 10);
    size_t ol = strlen(out);
    if (split && ol > 5 && !strcmp(out + ol - 5, ".gguf")) ol -= 5;
    if (split) printf("wrote %.*s-*-of-*.gguf (gguf split", (int)ol, out);
    else printf("wrote %s (%s", out, s.format);
    printf(", %" PRIu64 " tensor%s", s.tensors, s.tensors == 1 ? "" : "s");
    if (s.alignment) printf(", alignment %u", s.alignment);
    if (s.dropped) printf(", %" PRIu64 " dropped", s.dropped);
    if (s.metadata_lossy)
        printf(", %" PRIu64 " lossy metadata step%s", s.metadata_lossy,
               s.metadata_lossy == 1 ? "" : "s");
    if (s.dequantized)
        printf(", %" PRIu64 " tensor%s dequantized%s%s", s.dequantized,
               s.dequantized == 1 ? "" : "s", o->dequantize ? " to " : "",
               o->dequantize ? ingot_dtype_name(o->dequantize) : "");
    if (s.cast) printf(", %" PRIu64 " cast", s.cast);
    if (s.quantized) printf(", %" PRIu64 " quantized", s.quantized);
    if (s.skipped)
        printf(", %" PRIu64 " part%s of the source skipped", s.skipped, s.skipped == 1 ? "" : "s");
    printf(")\n");
    if (o->dequantize != INGOT_DTYPE_INVALID && !s.dequantized)
        fprintf(stderr, "%s: note: --dequantize %s changed nothing: every tensor was stored in its "
                        "own dtype (--dtype %s casts float tensors)\n",
                prog, ingot_dtype_name(o->dequantize), ingot_dtype_name(o->dequantize));
    return fflush(stdout) == 0 ? 0 : EXIT_REJECT;
}

/* ---- model-aware conversion: Hugging Face folder <-> GGUF ---- */

static void print_notice(void *ctx, const char *msg)
{
    (void)ctx;
    if (!cli_quiet) fprintf(stderr, "%s: note: %s\n", prog, msg);
}

/* A folder holding config.json. */
static bool is_hf_folder(const char *p)
{
    struct stat sb;
    char cfg[4096];
    if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode)) return false;
    snprintf(cfg, sizeof cfg, "%s/config.json", p);
    return stat(cfg, &sb) == 0;
}

/* OUT names a Hugging Face folder: --to hf, an existing folder, a trailing '/', or a name
 * without an extension that no writer claims. */
static bool is_hf_target(const char *out, const char *to)
{
    if (to) return !strcmp(to, "hf");
    struct stat sb;
    if (stat(out, &sb) == 0) return S_ISDIR(sb.st_mode);
    size_t n = strlen(out);
    if (n && out[n - 1] == '/') return true;
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    return !ingot_writer_format_for_path(out) && !strchr(base, '.');
}

static void model_report(const char *out, const char *format, const ingot_convert_model_summary *s)
{
    if (cli_json) {
        printf("{\"ok\": true, \"path\": ");
        json_str(stdout, out, strlen(out));
        printf(", \"format\": \"%s\", \"arch\": \"%s\", \"tensors\": %" PRIu64
               ", \"tokenizer\": %s}\n",
               format, s->arch ? s->arch : "", s->tensors, s->tokenizer ? "true" : "false");
        return;
    }
    if (cli_quiet) return;
    printf("wrote %s (%s, %s, %" PRIu64 " tensor%s%s%s)\n", out, format, s->arch, s->tensors,
           s->tensors == 1 ? "" : "s", s->tokenizer ? ", tokenizer" : "",
           s->sharded ? ", sharded" : "");
}

/* "<out without trailing '/'>.ingot-stage.ingot": the intermediate file beside the target. */
static char *stage_path(const char *out)
{
    size_t n = strlen(out);
    while (n > 1 && out[n - 1] == '/') n--;
    char *p = malloc(n + 32);
    if (p) snprintf(p, n + 32, "%.*s.ingot-stage.ingot", (int)n, out);
    return p;
}

/* llama.cpp's converter keeps 1-D tensors and norm weights in F32 whatever --outtype says:
 * model-aware --dtype does the same (the cast is undone, or made a cast to F32). */
static int keep_small_f32(ingot_convert_plan *p, const ingot_file *f)
{
    ingot_error e;
    for (uint64_t i = 0; i < ingot_convert_plan_tensor_count(p); i++) {
        ingot_convert_tensor t;
        ingot_tensor_info ti;
        if (ingot_convert_plan_tensor_at(p, i, &t) != INGOT_OK ||
            ingot_file_tensor_at(f, t.src_index, &ti) != INGOT_OK)
            return fail_st(INGOT_MISUSE, "convert");
        size_t nl = strlen(t.name);
        bool norm = nl >= 12 && !strcmp(t.name + nl - 12, "_norm.weight");
        if (t.action != INGOT_CONVERT_CAST || (ti.rank > 1 && !norm)) continue;
        t.name = NULL;
        t.action = ti.dtype == INGOT_DTYPE_F32 ? INGOT_CONVERT_KEEP : INGOT_CONVERT_CAST;
        t.dtype = INGOT_DTYPE_F32;
        if (ingot_convert_plan_set_tensor(p, i, &t, &e) != INGOT_OK) return fail_err(&e, "--dtype");
    }
    return 0;
}

/* HF folder -> OUT (GGUF or any format): directly, or through a stage when plan options are
 * given (the plan then runs on the converted tensors, under their GGUF names). */
static int convert_from_hf(const convert_args *a, bool plan_opts, ingot_convert_opts *o)
{
    ingot_convert_model_opts mo = {0};
    mo.notice = print_notice;
    ingot_convert_model_summary sum;
    ingot_error e;
    if (!plan_opts) {
        mo.format = o->format;
        mo.options = a->wopts;
        mo.n_options = a->n_wopts;
        if (ingot_convert_hf_to_gguf(a->in, a->out, &mo, &sum, &e) != INGOT_OK)
            return fail_err(&e, a->in);
        model_report(a->out, o->format, &sum);
        return fflush(stdout) == 0 ? 0 : EXIT_REJECT;
    }
    char *stage = stage_path(a->out);
    if (!stage) return fail_st(INGOT_NOMEM, "convert");
    mo.format = "ingot";
    mo.no_fsync = true;
    int rc = 0;
    if (ingot_convert_hf_to_gguf(a->in, stage, &mo, &sum, &e) != INGOT_OK) rc = fail_err(&e, a->in);
    ingot_file *f = NULL;
    ingot_convert_plan *p = NULL;
    if (!rc) rc = open_file(stage, &f);
    if (!rc && ingot_convert_plan_new(f, &p, &e) != INGOT_OK) rc = fail_err(&e, "convert");
    if (!rc) rc = build_plan("convert", p, a);
    if (!rc && a->dtype) rc = keep_small_f32(p, f);
    /* --dtype changes what general.file_type says (llama.cpp: 0 F32, 1 F16, 32 BF16), unless
     * --quantize set it or the user sets it */
    bool user_ft = false;
    for (size_t i = 0; i < a->n_edits; i++)
        user_ft |= !strcmp(a->edits[i].opt, "--set") &&
                   !strncmp(a->edits[i].arg, "general.file_type", 17);
    if (!rc && a->dtype && !a->quantize && !user_ft) {
        const char *ft = !strcmp(a->dtype, "F16") ? "general.file_type:u32=1"
                       : !strcmp(a->dtype, "BF16") ? "general.file_type:u32=32"
                       : !strcmp(a->dtype, "F32") ? "general.file_type:u32=0" : NULL;
        if (ft && ingot_convert_plan_meta_set_text(p, ft, &e) != INGOT_OK)
            rc = fail_err(&e, "convert");
    }
    if (!rc) rc = run_plan("convert", p, a->in, a->out, o);
    ingot_convert_plan_free(p);
    ingot_file_close(f);
    unlink(stage);
    free(stage);
    return rc;
}

/* IN (GGUF naming) -> the HF folder OUT: directly, or after the plan options through a stage. */
static int convert_to_hf(const convert_args *a, bool plan_opts, ingot_convert_opts *o)
{
    ingot_convert_model_opts mo = {0};
    mo.notice = print_notice;
    mo.options = a->wopts;
    mo.n_options = a->n_wopts;
    ingot_convert_model_summary sum;
    ingot_error e;
    ingot_file *f = NULL, *staged = NULL;
    ingot_convert_plan *p = NULL;
    char *stage = NULL;
    int rc = open_file(a->in, &f);
    if (!rc && plan_opts) {
        stage = stage_path(a->out);
        if (!stage) rc = fail_st(INGOT_NOMEM, "convert");
        if (!rc && ingot_convert_plan_new(f, &p, &e) != INGOT_OK) rc = fail_err(&e, "convert");
        if (!rc) rc = build_plan("convert", p, a);
        /* the stage (.ingot) holds GGML blocks; the folder's safetensors cannot: --dequantize
         * decodes them on the way */
        for (uint64_t i = 0; !rc && o->dequantize && i < ingot_convert_plan_tensor_count(p); i++) {
            ingot_convert_tensor ct;
            ingot_convert_plan_tensor_at(p, i, &ct);
            if (ct.action != INGOT_CONVERT_KEEP || !ingot_dtype_is_quantized(ct.dtype)) continue;
            ct.name = NULL;
            ct.action = INGOT_CONVERT_DEQUANTIZE;
            ct.dtype = o->dequantize;
            if (ingot_convert_plan_set_tensor(p, i, &ct, &e) != INGOT_OK)
                rc = fail_err(&e, "--dequantize");
        }
        if (!rc) {
            o->format = "ingot";
            o->no_fsync = true;
            o->lossy = print_lossy;
            o->options = NULL;
            o->n_options = 0;
            ingot_convert_result *r = NULL;
            if (ingot_convert_run(p, stage, o, &r, &e) != INGOT_OK) rc = fail_err(&e, a->in);
            ingot_convert_result_free(r);
        }
        if (!rc) rc = open_file(stage, &staged);
    }
    if (!rc) {
        if (ingot_convert_gguf_to_hf(staged ? staged : f, a->out, &mo, &sum, &e) != INGOT_OK)
            rc = fail_err(&e, a->in);
        else
            model_report(a->out, "hf", &sum);
    }
    ingot_file_close(staged);
    ingot_convert_plan_free(p);
    ingot_file_close(f);
    if (stage) unlink(stage);
    free(stage);
    if (!rc) rc = fflush(stdout) == 0 ? 0 : EXIT_REJECT;
    return rc;
}

/* convert IN OUT: every tensor and metadata entry of IN into a new OUT, changed as the options
 * say, streamed and written atomically (include/ingot/convert.h). */
int ingot_cli_convert(int argc, char **argv)
{
    convert_args a = {0};
    char **rest = calloc((size_t)(argc ? argc : 1), sizeof *rest);
    a.wopts = calloc((size_t)(argc ? argc : 1), sizeof *a.wopts);
    a.edits = calloc((size_t)(argc ? argc : 1), sizeof *a.edits);
    int n_rest = 0, rc = 0;
    if (!rest || !a.wopts || !a.edits) rc = fail_st(INGOT_NOMEM, "convert");
    if (!rc) rc = split_args("convert", argc, argv, &a, rest, &n_rest);
    cli_opt opts[] = {{"--align", true, NULL},    {"--to", true, NULL},
                      {"--dequantize", true, NULL}, {"--dtype", true, NULL},
                      {"--quantize", true, NULL}, {"--json", false, NULL},
                      {NULL, false, NULL}};
    const char *pos[2];
    if (!rc) rc = parse_args("convert", n_rest, rest, opts, pos, 2, "IN OUT");
    ingot_convert_opts o = {0};
    uint64_t align = 0;
    if (!rc && opts[0].value && (!parse_u64(opts[0].value, &align) || align > (1u << 20)))
        rc = usage("convert: bad --align");
    if (!rc && opts[2].value) {
        const char *d = opts[2].value;
        if (!strcmp(d, "F32")) o.dequantize = INGOT_DTYPE_F32;
        else if (!strcmp(d, "F16")) o.dequantize = INGOT_DTYPE_F16;
        else if (!strcmp(d, "BF16")) o.dequantize = INGOT_DTYPE_BF16;
        else rc = usage("convert: --dequantize takes F32, F16 or BF16, not '%s'", d);
    }
    for (size_t i = 0; !rc && i < a.n_wopts; i++) {
        size_t kl = (size_t)(strchr(a.wopts[i], '=') - a.wopts[i]);
        if (kl == 0 || kl >= 128) rc = usage("convert: bad --opt %s", a.wopts[i]);
    }
    ingot_file *f = NULL;
    ingot_convert_plan *p = NULL;
    if (!rc) {
        a.in = pos[0];
        a.out = pos[1];
        a.dtype = opts[3].value;
        a.quantize = opts[4].value;
        bool plan_opts = a.n_edits || a.dtype || a.quantize || o.dequantize || align;
        bool hf_in = is_hf_folder(a.in), hf_out = is_hf_target(a.out, opts[1].value);
        if (hf_in && hf_out) {
            rc = usage("convert: both IN and OUT are Hugging Face folders");
        } else if (hf_in || hf_out) {
            o.alignment = (uint32_t)align;
            o.options = a.wopts;
            o.n_options = a.n_wopts;
            o.format = opts[1].value ? opts[1].value : ingot_writer_format_for_path(a.out);
            if (hf_in && !o.format)
                rc = usage("convert: cannot tell the output format from '%s': name it with --to",
                           a.out);
            else
                rc = hf_in ? convert_from_hf(&a, plan_opts, &o) : convert_to_hf(&a, plan_opts, &o);
            free(rest);
            free(a.wopts);
            free(a.edits);
            return rc;
        }
        o.format = opts[1].value ? opts[1].value : ingot_writer_format_for_path(a.out);
        if (!o.format)
            rc = usage("convert: cannot tell the output format from '%s': name it with --to",
                       a.out);
    }
    if (!rc) rc = open_file(a.in, &f);
    ingot_error e;
    if (!rc && ingot_convert_plan_new(f, &p, &e) != INGOT_OK) rc = fail_err(&e, "convert");
    if (!rc) rc = build_plan("convert", p, &a);
    if (!rc) {
        o.alignment = (uint32_t)align;
        o.options = a.wopts;
        o.n_options = a.n_wopts;
        rc = run_plan("convert", p, a.in, a.out, &o);
    }
    ingot_convert_plan_free(p);
    ingot_file_close(f);
    free(rest);
    free(a.wopts);
    free(a.edits);
    return rc;
}

/* meta FILE --set KEY[:TYPE]=VALUE --delete KEY --rename-key OLD=NEW: the metadata of FILE
 * edited, written through the atomic writer to FILE itself (a new file renamed over it; the
 * mapped old one is never written to). Tensors are copied as they are. */
int ingot_cli_meta(int argc, char **argv)
{
    convert_args a = {0};
    char **rest = calloc((size_t)(argc ? argc : 1), sizeof *rest);
    a.wopts = calloc((size_t)(argc ? argc : 1), sizeof *a.wopts);
    a.edits = calloc((size_t)(argc ? argc : 1), sizeof *a.edits);
    int n_rest = 0, rc = 0;
    if (!rest || !a.wopts || !a.edits) rc = fail_st(INGOT_NOMEM, "meta");
    if (!rc) rc = split_args("meta", argc, argv, &a, rest, &n_rest);
    const char *pos[1];
    cli_opt mopts[] = {{"--json", false, NULL}, {NULL, false, NULL}};
    if (!rc) rc = parse_args("meta", n_rest, rest, mopts, pos, 1, "FILE");
    size_t n_meta_edits = 0;
    for (size_t i = 0; !rc && i < a.n_edits; i++) {
        const char *o = a.edits[i].opt;
        if (strcmp(o, "--set") && strcmp(o, "--delete") && strcmp(o, "--rename-key"))
            rc = usage("meta: %s is an option of convert", o);
        n_meta_edits++;
    }
    if (!rc && a.n_wopts) rc = usage("meta: --opt is an option of convert");
    if (!rc && !n_meta_edits)
        rc = usage("meta: nothing to do: give --set, --delete or --rename-key");
    ingot_file *f = NULL;
    ingot_convert_plan *p = NULL;
    ingot_error e;
    if (!rc) rc = open_file(pos[0], &f);
    if (!rc && ingot_convert_plan_new(f, &p, &e) != INGOT_OK) rc = fail_err(&e, "meta");
    if (!rc) rc = build_plan("meta", p, &a);
    if (!rc) {
        ingot_convert_opts o = {0};
        o.format = ingot_file_format(f);
        if (!strcmp(o.format, "ingot")) o.alignment = (uint32_t)ingot_file_alignment(f);
        rc = run_plan("meta", p, pos[0], pos[0], &o);
    }
    ingot_convert_plan_free(p);
    ingot_file_close(f);
    free(rest);
    free(a.wopts);
    free(a.edits);
    return rc;
}
