/*
 * ingot.c - the `ingot` command-line tool: info, verify, pack, unpack, dump, convert.
 * Uses only the public API (include/ingot). Contract (other tools and tests rely on it):
 * exit 0 ok, 1 input rejected (stderr names the error code and the place), 2 usage; ended by
 * SIGINT, SIGTERM or SIGHUP it leaves no temporary file and dies of that signal (a shell reports
 * 130, 143, 129), the target of an interrupted write left as it was or complete.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ingot/ingot.h"
#define INGOT_CLI_HELPERS
#include "cli.h"
#include "help.h"

#define IO_CHUNK (4u << 20)

const char *prog = "ingot";

const char *cli_cmd;
bool cli_json, cli_quiet;

int usage(const char *fmt, ...)
{
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "%s: ", prog);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
        va_end(ap);
    }
    if (cli_cmd && help_known(cli_cmd)) {
        help_synopsis(stderr, cli_cmd);
        fprintf(stderr, "Try 'ingot help %s' for more.\n", cli_cmd);
    } else {
        fprintf(stderr, "Try 'ingot --help' for the commands.\n");
    }
    return EXIT_USAGE;
}

/* With --json: the error as {"error": {...}} on stdout, beside the line on stderr. */
static void json_fail(ingot_status code, const char *msg, const char *where, uint64_t offset)
{
    if (!cli_json) return;
    printf("{\"error\": {\"code\": \"%s\", \"message\": ", ingot_status_name(code));
    json_str(stdout, msg, strlen(msg));
    fputs(", \"tensor\": ", stdout);
    if (where && *where) json_str(stdout, where, strlen(where));
    else fputs("null", stdout);
    if (offset == INGOT_NO_OFFSET) fputs(", \"offset\": null}}\n", stdout);
    else printf(", \"offset\": %" PRIu64 "}}\n", offset);
    fflush(stdout);
}

int fail_err(const ingot_error *e, const char *what)
{
    char buf[512];
    ingot_error_format(e, buf, sizeof buf);
    fprintf(stderr, "%s: %s: %s\n", prog, what, buf);
    char where[sizeof e->where + 1], msg[sizeof e->msg + 1];
    snprintf(where, sizeof where, "%.*s", (int)strnlen(e->where, sizeof e->where), e->where);
    snprintf(msg, sizeof msg, "%.*s", (int)strnlen(e->msg, sizeof e->msg), e->msg);
    json_fail(e->code, msg, where, e->offset);
    return EXIT_REJECT;
}

int fail_st(ingot_status st, const char *what)
{
    fprintf(stderr, "%s: %s: %s: %s\n", prog, what, ingot_status_name(st), ingot_status_str(st));
    json_fail(st, ingot_status_str(st), NULL, INGOT_NO_OFFSET);
    return EXIT_REJECT;
}

static int fail_sys(const char *what, const char *path)
{
    fprintf(stderr, "%s: IO: %s '%s': %s\n", prog, what, path, strerror(errno));
    return EXIT_REJECT;
}

/* ---------------------------------------------------------------------------------------------
 * Progress bar: stderr, only on a terminal, only once work has lasted about a second.
 * ------------------------------------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_init(progress *p, const char *label)
{
    p->label = label;
    p->start = p->last = now();
    p->tty = isatty(2);
    p->shown = false;
}

void progress_update(void *ctx, uint64_t done, uint64_t total)
{
    progress *p = ctx;
    if (!p->tty) return;
    double t = now();
    if (t - p->start < 1.0 || (t - p->last < 0.1 && done < total)) return;
    p->last = t;
    p->shown = true;
    int width = 30, fill = total ? (int)((double)done / (double)total * width) : width;
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    double mb = (double)done / 1e6, rate = mb / (t - p->start);
    fprintf(stderr, "\r%s [%s] %3d%% %.0f/%.0f MB %.0f MB/s", p->label, bar,
            total ? (int)(100.0 * (double)done / (double)total) : 100, mb, (double)total / 1e6,
            rate);
}

void progress_end(progress *p)
{
    if (p->shown) fprintf(stderr, "\n");
}

/* ---------------------------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------------------------- */

int open_file(const char *path, ingot_file **f)
{
    ingot_error e;
    ingot_status st = ingot_file_open(path, NULL, f, &e);
    if (st != INGOT_OK) return fail_err(&e, path);
    return 0;
}

void shape_str(const ingot_tensor_info *t, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    if (t->rank == 0) {
        snprintf(buf, cap, "[]");
        return;
    }
    for (uint32_t d = 0; d < t->rank && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRIu64, d ? "x" : "", t->shape[d]);
    if (n >= cap && cap > 4) memcpy(buf + cap - 4, "...", 4); /* cut: say so */
}

bool parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-') return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end) return false;
    *out = v;
    return true;
}

/* The UTF-8 sequence at s[0..n): returns its length and sets *ok when it is one valid character
 * (strict: no overlongs, surrogates or code points above U+10FFFF); otherwise returns the length
 * of its maximal subpart (Unicode 15, section 3.9: the bytes that could start a valid sequence,
 * at least 1), which stands for one replacement character. */
static size_t utf8_seq(const unsigned char *s, size_t n, bool *ok)
{
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t len, k;
    *ok = c < 0x80;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3; /* E0: no overlongs; ED: no surrogates */
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4; /* F0: no overlongs; F4: nothing above U+10FFFF */
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 1;
    }
    for (k = 1; k < len && k < n; k++) {
        if (s[k] < lo || s[k] > hi) return k;
        lo = 0x80, hi = 0xBF;
    }
    *ok = k == len;
    return k;
}

/* JSON string with escapes. Keys, names and most values are UTF-8 (readers validate them), but
 * some formats allow any bytes in string values (GGUF vocabularies hold raw-byte tokens): each
 * maximal invalid subsequence is written as \ufffd (U+FFFD, as Python's errors="replace" does),
 * so the output is always valid JSON (docs/COMPAT.md, "ingot info --json"). */
void json_str(FILE *o, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    fputc('"', o);
    for (size_t i = 0; i < n;) {
        bool ok;
        size_t len = utf8_seq(u + i, n - i, &ok);
        unsigned char c = u[i];
        i += len;
        if (!ok) fputs("\\ufffd", o);
        else if (len > 1) fwrite(u + i - len, 1, len, o);
        else if (c == '"') fputs("\\\"", o);
        else if (c == '\\') fputs("\\\\", o);
        else if (c == '\n') fputs("\\n", o);
        else if (c == '\r') fputs("\\r", o);
        else if (c == '\t') fputs("\\t", o);
        else if (c < 0x20 || c == 0x7f) fprintf(o, "\\u%04x", c);
        else fputc(c, o);
    }
    fputc('"', o);
}

static void base64(FILE *o, const uint8_t *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    fputc('"', o);
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n) v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n) v |= p[i + 2];
        fputc(tab[(v >> 18) & 63], o);
        fputc(tab[(v >> 12) & 63], o);
        fputc(i + 1 < n ? tab[(v >> 6) & 63] : '=', o);
        fputc(i + 2 < n ? tab[v & 63] : '=', o);
    }
    fputc('"', o);
}

/* The shortest %g form that reads back as the same value (as float when is_f32). */
static void shortest(char *buf, size_t cap, double v, bool is_f32)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, cap, "%.*g", p, v);
        double back = strtod(buf, NULL);
        if (is_f32 ? (float)back == (float)v : back == v) return;
    }
}

void json_double(FILE *o, double v, bool is_f32)
{
    if (isnan(v)) fputs("\"NaN\"", o);
    else if (isinf(v)) fputs(v > 0 ? "\"Infinity\"" : "\"-Infinity\"", o);
    else {
        char buf[40];
        shortest(buf, sizeof buf, v, is_f32);
        /* keep floats recognisable as floats */
        fputs(buf, o);
        if (!strpbrk(buf, ".eEn")) fputs(".0", o);
    }
}

/* A float for people: shortest round trip, "nan", "inf". */
static void text_double(FILE *o, double v, bool is_f32)
{
    char buf[40];
    if (isnan(v)) fputs("nan", o);
    else if (isinf(v)) fputs(v > 0 ? "inf" : "-inf", o);
    else {
        shortest(buf, sizeof buf, v, is_f32);
        fputs(buf, o);
    }
}

/* JSON integers beyond 2^53 are strings: a reader using doubles would round them. */
static void json_u64(FILE *o, uint64_t v, bool json)
{
    fprintf(o, json && v > (UINT64_C(1) << 53) ? "\"%" PRIu64 "\"" : "%" PRIu64, v);
}

static void json_i64(FILE *o, int64_t v, bool json)
{
    bool big = v > (INT64_C(1) << 53) || v < -(INT64_C(1) << 53);
    fprintf(o, json && big ? "\"%" PRId64 "\"" : "%" PRId64, v);
}

/* Prints element k of a numeric array entry (already host-order in buf). */
static void print_elem(FILE *o, ingot_meta_type t, const void *buf, bool json)
{
    switch (t) {
    case INGOT_META_U8: fprintf(o, "%u", *(const uint8_t *)buf); break;
    case INGOT_META_U16: fprintf(o, "%u", *(const uint16_t *)buf); break;
    case INGOT_META_U32: fprintf(o, "%" PRIu32, *(const uint32_t *)buf); break;
    case INGOT_META_U64: json_u64(o, *(const uint64_t *)buf, json); break;
    case INGOT_META_I8: fprintf(o, "%d", *(const int8_t *)buf); break;
    case INGOT_META_I16: fprintf(o, "%d", *(const int16_t *)buf); break;
    case INGOT_META_I32: fprintf(o, "%" PRId32, *(const int32_t *)buf); break;
    case INGOT_META_I64: json_i64(o, *(const int64_t *)buf, json); break;
    case INGOT_META_F32:
        if (json) json_double(o, *(const float *)buf, true);
        else text_double(o, *(const float *)buf, true);
        break;
    case INGOT_META_F64:
        if (json) json_double(o, *(const double *)buf, false);
        else text_double(o, *(const double *)buf, false);
        break;
    case INGOT_META_BOOL: fputs(*(const uint8_t *)buf ? "true" : "false", o); break;
    default: break;
    }
}

/* Prints a metadata value: JSON or a human form (arrays truncated to `limit` elements). */
void print_meta_value(FILE *o, const ingot_file *f, const ingot_meta_info *m, bool json,
                             uint64_t limit)
{
    if (!m->is_array) {
        switch (m->type) {
        case INGOT_META_STRING: json_str(o, m->data, (size_t)m->count); return;
        case INGOT_META_BYTES:
            if (json) base64(o, m->data, (size_t)m->count);
            else {
                fprintf(o, "<%" PRIu64 " bytes>", m->count);
            }
            return;
        case INGOT_META_F32: case INGOT_META_F64: {
            if (json) json_double(o, m->v.f, m->type == INGOT_META_F32);
            else text_double(o, m->v.f, m->type == INGOT_META_F32);
            return;
        }
        case INGOT_META_BOOL: fputs(m->v.b ? "true" : "false", o); return;
        case INGOT_META_I8: case INGOT_META_I16: case INGOT_META_I32: case INGOT_META_I64:
            json_i64(o, m->v.i, json);
            return;
        default: json_u64(o, m->v.u, json); return;
        }
    }
    fputc('[', o);
    uint64_t n = json ? m->count : (m->count < limit ? m->count : limit);
    for (uint64_t k = 0; k < n; k++) {
        if (k) fputs(json ? ", " : ", ", o);
        if (m->type == INGOT_META_STRING || m->type == INGOT_META_BYTES) {
            const char *s;
            size_t len;
            if (ingot_file_meta_array_string(f, m->index, k, &s, &len) != INGOT_OK) break;
            if (m->type == INGOT_META_STRING) json_str(o, s, len);
            else if (json) base64(o, (const uint8_t *)s, len);
            else fprintf(o, "<%zu bytes>", len);
        } else {
            uint64_t v = 0;
            if (ingot_file_meta_array_read(f, m->index, m->type, k, 1, &v) != INGOT_OK) break;
            print_elem(o, m->type, &v, json);
        }
    }
    if (n < m->count) fprintf(o, ", ... (%" PRIu64 " total)", m->count);
    fputc(']', o);
}

/* One command's arguments: options (a flag, or one taking a value) anywhere, then exactly npos
 * positional arguments. Returns 0, or the usage exit code after printing why. */
int parse_args(const char *cmd, int argc, char **argv, cli_opt *opts, const char **pos,
                      int npos, const char *need)
{
    int got = 0;
    for (int i = 0; i < argc; i++) {
        cli_opt *o = NULL;
        for (cli_opt *q = opts; q && q->name; q++)
            if (strcmp(argv[i], q->name) == 0) o = q;
        if (o) {
            if (o->takes_value && i + 1 >= argc) return usage("%s: %s needs a value", cmd, o->name);
            o->value = o->takes_value ? argv[++i] : o->name;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            const char *near = help_suggest_option(cmd, argv[i]);
            if (near) return usage("%s: unknown option %s; did you mean %s?", cmd, argv[i], near);
            return usage("%s: unknown option %s", cmd, argv[i]);
        } else if (got < npos) {
            pos[got++] = argv[i];
        } else {
            return usage("%s: unexpected argument %s", cmd, argv[i]);
        }
    }
    return got < npos ? usage("%s: need %s", cmd, need) : 0;
}

/* ---------------------------------------------------------------------------------------------
 * info
 * ------------------------------------------------------------------------------------------- */

static int info_one(const char *path, bool json)
{
    ingot_file *f;
    int rc;
    if ((rc = open_file(path, &f))) return rc;
    uint64_t nt = ingot_file_tensor_count(f), nm = ingot_file_meta_count(f);
    uint64_t ns = ingot_file_notice_count(f);
    FILE *o = stdout;
    if (json) {
        fprintf(o, "{\"schema\": 2, \"path\": ");
        json_str(o, path, strlen(path));
        fprintf(o, ", \"format\": ");
        json_str(o, ingot_file_format(f), strlen(ingot_file_format(f)));
        fprintf(o, ", \"version\": \"%s\", \"size\": %" PRIu64 ", \"alignment\": %" PRIu64,
                ingot_file_version(f), ingot_file_size(f), ingot_file_alignment(f));
        fprintf(o, ", \"metadata\": {");
        for (uint64_t i = 0; i < nm; i++) {
            ingot_meta_info m;
            ingot_file_meta_at(f, i, &m);
            fprintf(o, "%s", i ? ", " : "");
            json_str(o, m.key, m.key_len);
            fprintf(o, ": {\"type\": \"%s%s\", \"value\": ", ingot_meta_type_name(m.type),
                    m.is_array ? "[]" : "");
            print_meta_value(o, f, &m, true, 0);
            fputc('}', o);
        }
        fprintf(o, "}, \"tensors\": [");
        for (uint64_t i = 0; i < nt; i++) {
            ingot_tensor_info t;
            ingot_file_tensor_at(f, i, &t);
            fprintf(o, "%s{\"name\": ", i ? ", " : "");
            json_str(o, t.name, t.name_len);
            fprintf(o, ", \"dtype\": \"%s\", \"shape\": [", ingot_dtype_name(t.dtype));
            for (uint32_t d = 0; d < t.rank; d++)
                fprintf(o, "%s%" PRIu64, d ? ", " : "", t.shape[d]);
            fprintf(o, "], \"nbytes\": %" PRIu64 ", \"offset\": %" PRIu64 ", \"param_id\": ",
                    t.nbytes, t.offset);
            if (t.flags & INGOT_TENSOR_HAS_PARAM_ID) fprintf(o, "%" PRIu64, t.param_id);
            else fputs("null", o);
            if (t.flags & INGOT_TENSOR_BIG_ENDIAN) fputs(", \"byte_order\": \"big\"", o);
            if (t.flags & INGOT_TENSOR_FORTRAN) fputs(", \"layout\": \"fortran\"", o);
            if (t.flags & INGOT_TENSOR_STRIDED) {
                fputs(", \"stride\": [", o);
                for (uint32_t d = 0; d < t.rank; d++)
                    fprintf(o, "%s%" PRId64, d ? ", " : "", t.strides[d]);
                fputc(']', o);
            }
            if (t.flags & INGOT_TENSOR_NOT_MAPPED) fputs(", \"mapped\": false", o);
            fputc('}', o);
        }
        fprintf(o, "], \"skipped\": [");
        for (uint64_t i = 0; i < ns; i++) {
            ingot_notice n;
            ingot_file_notice_at(f, i, &n);
            fprintf(o, "%s{\"name\": ", i ? ", " : "");
            json_str(o, n.name, n.name_len);
            fputs(", \"reason\": ", o);
            json_str(o, n.reason, strlen(n.reason));
            if (n.offset != INGOT_NO_OFFSET) fprintf(o, ", \"offset\": %" PRIu64, n.offset);
            fputc('}', o);
        }
        fprintf(o, "]}\n");
    } else {
        fprintf(o, "%s: %s %s, %" PRIu64 " bytes, alignment %" PRIu64 ", %" PRIu64
                   " tensor%s, %" PRIu64 " metadata entr%s\n",
                path, ingot_file_format(f), ingot_file_version(f), ingot_file_size(f),
                ingot_file_alignment(f), nt, nt == 1 ? "" : "s", nm, nm == 1 ? "y" : "ies");
        if (nm) fprintf(o, "\nmetadata:\n");
        size_t kw = 24; /* the key column fits the longest key */
        for (uint64_t i = 0; i < nm; i++) {
            ingot_meta_info m;
            ingot_file_meta_at(f, i, &m);
            if (m.key_len > kw) kw = m.key_len;
        }
        for (uint64_t i = 0; i < nm; i++) {
            ingot_meta_info m;
            char ty[16];
            ingot_file_meta_at(f, i, &m);
            snprintf(ty, sizeof ty, "%s%s", ingot_meta_type_name(m.type), m.is_array ? "[]" : "");
            fprintf(o, "  %-*.*s  %-8s ", (int)kw, (int)m.key_len, m.key, ty);
            print_meta_value(o, f, &m, false, 8);
            fputc('\n', o);
        }
        if (nt) {
            size_t w = 4;
            for (uint64_t i = 0; i < nt; i++) {
                ingot_tensor_info t;
                ingot_file_tensor_at(f, i, &t);
                if (t.name_len > w) w = t.name_len;
            }
            size_t sw = 20; /* the shape column fits the longest shape too */
            for (uint64_t i = 0; i < nt; i++) {
                ingot_tensor_info t;
                char sh[INGOT_MAX_RANK * 21 + 1];
                ingot_file_tensor_at(f, i, &t);
                shape_str(&t, sh, sizeof sh);
                if (strlen(sh) > sw) sw = strlen(sh);
            }
            fprintf(o, "\n  %5s  %-*s  %-8s %-*s %14s %14s  %s\n", "#", (int)w, "name", "dtype",
                    (int)sw, "shape", "nbytes", "offset", "param_id");
            for (uint64_t i = 0; i < nt; i++) {
                ingot_tensor_info t;
                char sh[INGOT_MAX_RANK * 21 + 1]; /* 64 dims of up to 20 digits */
                ingot_file_tensor_at(f, i, &t);
                shape_str(&t, sh, sizeof sh);
                fprintf(o, "  %5" PRIu64 "  %-*.*s  %-8s %-*s %14" PRIu64 " %14" PRIu64 "  ", i,
                        (int)w, (int)t.name_len, t.name, ingot_dtype_name(t.dtype), (int)sw, sh,
                        t.nbytes, t.offset);
                if (t.flags & INGOT_TENSOR_HAS_PARAM_ID) fprintf(o, "%" PRIu64 "\n", t.param_id);
                else fputs("-\n", o);
            }
        }
        if (nt)
            fprintf(o, "\n  shapes outermost dimension first%s\n",
                    strcmp(ingot_file_format(f), "gguf") == 0
                        ? " (GGUF stores them innermost first: ne = the shape reversed)"
                        : "");
        if (ns) fprintf(o, "\nskipped (not opened as tensors):\n");
        for (uint64_t i = 0; i < ns; i++) {
            ingot_notice n;
            ingot_file_notice_at(f, i, &n);
            fprintf(o, "  %-32.*s %s\n", (int)n.name_len, n.name, n.reason);
        }
    }
    ingot_file_close(f);
    return fflush(o) == 0 ? 0 : EXIT_REJECT;
}

/* info [--json] FILE...: one report per file (JSON: one object per line); exit 1 if any file
 * was refused. */
static int cmd_info(int argc, char **argv)
{
    bool json = false;
    int nf = 0, rc = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = true;
        else if (argv[i][0] == '-' && argv[i][1]) {
            const char *near = help_suggest_option("info", argv[i]);
            return near ? usage("info: unknown option %s; did you mean %s?", argv[i], near)
                        : usage("info: unknown option %s", argv[i]);
        } else nf++;
    }
    if (!nf) return usage("info: need FILE");
    int k = 0;
    for (int i = 0; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1]) continue;
        if (!json && k++) fputc('\n', stdout);
        int r = info_one(argv[i], json);
        if (r) rc = r;
    }
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * verify
 * ------------------------------------------------------------------------------------------- */

/* verify --json: the error as an object (stdout), beside the usual line on stderr. */
static void json_error(FILE *o, const ingot_error *e)
{
    fprintf(o, "\"error\": {\"code\": \"%s\", \"where\": ", ingot_status_name(e->code));
    json_str(o, e->where, strnlen(e->where, sizeof e->where));
    fputs(", \"tensor\": ", o); /* the key every command's JSON errors have */
    json_str(o, e->where, strnlen(e->where, sizeof e->where));
    if (e->offset == INGOT_NO_OFFSET) fputs(", \"offset\": null", o);
    else fprintf(o, ", \"offset\": %" PRIu64, e->offset);
    fputs(", \"message\": ", o);
    json_str(o, e->msg, strnlen(e->msg, sizeof e->msg));
    fputc('}', o);
}

/* What verify checked, in words: says plainly when the format stores no checksum at all (then a
 * pass means readable and well-formed, not intact). */
static void print_checked(FILE *o, const ingot_verify_plan *p)
{
    fputs("structure valid", o);
    if (p->checks & INGOT_CHECK_HEADER_CRC32C) fputs("; header CRC-32C match", o);
    if (p->checks & INGOT_CHECK_TENSOR_CRC32C)
        fprintf(o, "; %" PRIu64 " tensor%s: CRC-32C match", p->tensors_with_checksum,
                p->tensors_with_checksum == 1 ? "" : "s");
    if (p->checks & INGOT_CHECK_ZIP_CRC32)
        fprintf(o, "; zip CRC-32 of %" PRIu64 " member%s match", p->checksums,
                p->checksums == 1 ? "" : "s");
    if (p->tensors_with_checksum == 0)
        fputs(p->checks & INGOT_CHECK_HEADER_CRC32C ? "; tensor data has no checksum in this format"
                                                    : "; this format stores no checksums",
              o);
    else if (p->tensors_without)
        fprintf(o, "; %" PRIu64 " tensor%s without checksum", p->tensors_without,
                p->tensors_without == 1 ? "" : "s");
    if ((p->checks & INGOT_CHECK_READABLE) && p->tensors_without) fputs("; data readable", o);
    if (p->checks & INGOT_CHECK_PADDING) fputs("; padding valid", o);
    if (p->checks & INGOT_CHECK_BOOL_VALUES) fputs("; BOOL values 0 or 1", o);
}

/* verify [--threads N] [--json] FILE...: every file checked; exit 1 if any failed. */
static int verify_one(const char *path, uint64_t threads, bool json);

static int cmd_verify(int argc, char **argv)
{
    uint64_t threads = 0;
    bool json = false;
    int nf = 0, rc = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--threads")) {
            if (i + 1 >= argc || !parse_u64(argv[++i], &threads) || threads > 64)
                return usage("verify: bad --threads");
        } else if (argv[i][0] == '-' && argv[i][1]) {
            const char *near = help_suggest_option("verify", argv[i]);
            return near ? usage("verify: unknown option %s; did you mean %s?", argv[i], near)
                        : usage("verify: unknown option %s", argv[i]);
        } else {
            nf++;
        }
    }
    if (!nf) return usage("verify: need FILE");
    cli_json = false; /* verify --json reports its errors inside its own object */
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (uint64_t)(n < 8 ? n : 8) : 1;
    }
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--threads")) {
            i++;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1]) continue;
        int r = verify_one(argv[i], threads, json);
        if (r) rc = r;
    }
    return rc;
}

static int verify_one(const char *path, uint64_t threads, bool json)
{
    ingot_file *f;
    ingot_error e;
    /* open checks the structure and the header checksum */
    ingot_status st = ingot_file_open(path, NULL, &f, &e);
    if (st != INGOT_OK) {
        if (json) {
            printf("{\"path\": ");
            json_str(stdout, path, strlen(path));
            printf(", \"ok\": false, ");
            json_error(stdout, &e);
            printf("}\n");
        }
        return fail_err(&e, path);
    }
    ingot_verify_plan plan;
    uint64_t nt = ingot_file_tensor_count(f);
    st = ingot_file_verify_plan(f, &plan);
    if (st != INGOT_OK) {
        ingot_file_close(f);
        return fail_st(st, path);
    }
    /* Long job on a terminal: a progress bar; the checks are the same either way. */
    bool bar = !json && isatty(2) && plan.data_bytes > (512u << 20);
    progress p;
    if (bar) progress_init(&p, "verify");
    st = ingot_file_verify_progress(f, (uint32_t)threads, bar ? progress_update : NULL, &p, &e);
    if (bar) progress_end(&p);
    FILE *o = stdout;
    if (json) {
        fprintf(o, "{\"path\": ");
        json_str(o, path, strlen(path));
        fprintf(o, ", \"format\": ");
        json_str(o, ingot_file_format(f), strlen(ingot_file_format(f)));
        fprintf(o, ", \"version\": ");
        json_str(o, ingot_file_version(f), strlen(ingot_file_version(f)));
        fprintf(o, ", \"ok\": %s", st == INGOT_OK ? "true" : "false");
        if (st == INGOT_OK) {
            fputs(", \"checked\": [", o);
            bool first = true;
            for (uint32_t bit = 1; bit; bit <<= 1) {
                if (!(plan.checks & bit) || !ingot_check_name(bit)) continue;
                fprintf(o, "%s\"%s\"", first ? "" : ", ", ingot_check_name(bit));
                first = false;
            }
            fputc(']', o);
        } else {
            fputs(", ", o);
            json_error(o, &e);
        }
        fprintf(o, ", \"tensors\": %" PRIu64 ", \"tensors_with_checksum\": %" PRIu64
                   ", \"tensors_without\": %" PRIu64 ", \"checksums\": %" PRIu64
                   ", \"data_bytes\": %" PRIu64 "}\n",
                nt, plan.tensors_with_checksum, plan.tensors_without, plan.checksums,
                plan.data_bytes);
    }
    if (st != INGOT_OK) {
        ingot_file_close(f);
        return fail_err(&e, path);
    }
    if (!json && !cli_quiet) {
        fprintf(o, "%s: OK (%s %s, %" PRIu64 " tensor%s, %" PRIu64 " bytes of tensor data): ",
                path, ingot_file_format(f), ingot_file_version(f), nt, nt == 1 ? "" : "s",
                plan.data_bytes);
        print_checked(o, &plan);
        fputc('\n', o);
    }
    ingot_file_close(f);
    return fflush(o) == 0 ? 0 : EXIT_REJECT;
}

/* ---------------------------------------------------------------------------------------------
 * pack
 * ------------------------------------------------------------------------------------------- */

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool parse_scalar(ingot_meta_type t, const char *s, uint64_t *bits)
{
    char *end;
    errno = 0;
    switch (t) {
    case INGOT_META_U8: case INGOT_META_U16: case INGOT_META_U32: case INGOT_META_U64: {
        uint64_t v;
        if (!parse_u64(s, &v)) return false;
        uint32_t sz = ingot_meta_type_size(t);
        if (sz < 8 && v >> (8 * sz)) return false;
        *bits = v;
        return true;
    }
    case INGOT_META_I8: case INGOT_META_I16: case INGOT_META_I32: case INGOT_META_I64: {
        long long v = strtoll(s, &end, 0);
        if (errno || *end || !*s) return false;
        uint32_t sz = ingot_meta_type_size(t);
        if (sz < 8) {
            long long lim = 1ll << (8 * sz - 1);
            if (v < -lim || v >= lim) return false;
        }
        *bits = (uint64_t)v;
        return true;
    }
    case INGOT_META_F32: {
        float v = strtof(s, &end);
        if (*end || !*s) return false;
        uint32_t b;
        memcpy(&b, &v, 4);
        *bits = b;
        return true;
    }
    case INGOT_META_F64: {
        double v = strtod(s, &end);
        if (*end || !*s) return false;
        memcpy(bits, &v, 8);
        return true;
    }
    case INGOT_META_BOOL:
        if (!strcmp(s, "true") || !strcmp(s, "1")) *bits = 1;
        else if (!strcmp(s, "false") || !strcmp(s, "0")) *bits = 0;
        else return false;
        return true;
    default: return false;
    }
}

static ingot_meta_type meta_type_from(const char *s, size_t n)
{
    for (int t = INGOT_META_U8; t <= INGOT_META_BYTES; t++) {
        const char *name = ingot_meta_type_name((ingot_meta_type)t);
        if (strlen(name) == n && memcmp(name, s, n) == 0) return (ingot_meta_type)t;
    }
    return INGOT_META_INVALID;
}

/* --meta KEY=VALUE (string) or KEY:TYPE=VALUE or KEY:TYPE[]=V1,V2,... */
static int add_meta_arg(ingot_writer *w, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq) return usage("--meta %s: expected KEY=VALUE", arg);
    const char *colon = memchr(arg, ':', (size_t)(eq - arg));
    /* the type is after the LAST colon before '=' so keys may contain ':' */
    for (const char *c = colon; c && c < eq; c = memchr(c + 1, ':', (size_t)(eq - c - 1)))
        colon = c;
    ingot_meta_type type = INGOT_META_STRING;
    bool array = false;
    size_t klen = (size_t)(eq - arg);
    if (colon) {
        const char *ts = colon + 1;
        size_t tn = (size_t)(eq - ts);
        if (tn > 2 && ts[tn - 2] == '[' && ts[tn - 1] == ']') array = true, tn -= 2;
        ingot_meta_type t = meta_type_from(ts, tn);
        if (t != INGOT_META_INVALID) {
            type = t;
            klen = (size_t)(colon - arg);
        } else if (array) {
            return usage("--meta %s: unknown type", arg);
        }
    }
    char *key = strndup(arg, klen);
    const char *val = eq + 1;
    ingot_status st = INGOT_OK;
    if (!key) return fail_st(INGOT_NOMEM, "--meta");
    if (!array && type == INGOT_META_STRING) {
        st = ingot_writer_set_string(w, key, val);
    } else if (!array && type == INGOT_META_BYTES) {
        size_t n = strlen(val);
        uint8_t *b = malloc(n / 2 + 1);
        bool ok = b && n % 2 == 0;
        for (size_t i = 0; ok && i < n / 2; i++) {
            int hi = hexval(val[2 * i]), lo = hexval(val[2 * i + 1]);
            if (hi < 0 || lo < 0) ok = false;
            else b[i] = (uint8_t)(hi * 16 + lo);
        }
        st = ok ? ingot_writer_set_bytes(w, key, b, n / 2) : INGOT_BAD_METADATA;
        free(b);
    } else if (!array) {
        uint64_t bits;
        if (!parse_scalar(type, val, &bits)) st = INGOT_BAD_METADATA;
        else switch (type) {
            case INGOT_META_U8: st = ingot_writer_set_u8(w, key, (uint8_t)bits); break;
            case INGOT_META_U16: st = ingot_writer_set_u16(w, key, (uint16_t)bits); break;
            case INGOT_META_U32: st = ingot_writer_set_u32(w, key, (uint32_t)bits); break;
            case INGOT_META_U64: st = ingot_writer_set_u64(w, key, bits); break;
            case INGOT_META_I8: st = ingot_writer_set_i8(w, key, (int8_t)bits); break;
            case INGOT_META_I16: st = ingot_writer_set_i16(w, key, (int16_t)bits); break;
            case INGOT_META_I32: st = ingot_writer_set_i32(w, key, (int32_t)bits); break;
            case INGOT_META_I64: st = ingot_writer_set_i64(w, key, (int64_t)bits); break;
            case INGOT_META_F32: { float v; uint32_t b = (uint32_t)bits; memcpy(&v, &b, 4);
                st = ingot_writer_set_f32(w, key, v); break; }
            case INGOT_META_F64: { double v; memcpy(&v, &bits, 8);
                st = ingot_writer_set_f64(w, key, v); break; }
            case INGOT_META_BOOL: st = ingot_writer_set_bool(w, key, bits != 0); break;
            default: st = INGOT_BAD_TYPE;
            }
    } else if (type == INGOT_META_STRING || type == INGOT_META_BYTES) {
        /* comma-separated strings (no escaping: use the API for strings with commas) */
        size_t cap = 1;
        for (const char *c = val; *c; c++) cap += *c == ',';
        const void **elems = calloc(cap, sizeof *elems);
        size_t *lens = calloc(cap, sizeof *lens), n = 0;
        if (!elems || !lens) st = INGOT_NOMEM;
        for (const char *c = val; st == INGOT_OK;) {
            const char *e = strchr(c, ',');
            elems[n] = c;
            lens[n++] = e ? (size_t)(e - c) : strlen(c);
            if (!e) break;
            c = e + 1;
        }
        if (st == INGOT_OK) st = ingot_writer_set_string_array(w, key, type, elems, lens, n);
        free(elems);
        free(lens);
    } else {
        size_t cap = 1;
        for (const char *c = val; *c; c++) cap += *c == ',';
        uint32_t esz = ingot_meta_type_size(type);
        uint8_t *buf = calloc(cap, esz);
        char *copy = strdup(val);
        size_t n = 0;
        if (!buf || !copy) st = INGOT_NOMEM;
        for (char *tok = copy, *next; st == INGOT_OK && tok; tok = next) {
            next = strchr(tok, ',');
            if (next) *next++ = '\0';
            if (!*tok && !next && n == 0) break; /* empty array */
            uint64_t bits;
            if (!parse_scalar(type, tok, &bits)) {
                st = INGOT_BAD_METADATA;
                break;
            }
            if (type == INGOT_META_F32) {
                uint32_t b = (uint32_t)bits;
                memcpy(buf + n * 4, &b, 4);
            } else {
                switch (esz) {
                case 1: buf[n] = (uint8_t)bits; break;
                case 2: { uint16_t x = (uint16_t)bits; memcpy(buf + 2 * n, &x, 2); break; }
                case 4: { uint32_t x = (uint32_t)bits; memcpy(buf + 4 * n, &x, 4); break; }
                default: memcpy(buf + 8 * n, &bits, 8);
                }
            }
            n++;
        }
        if (st == INGOT_OK) st = ingot_writer_set_array(w, key, type, buf, n);
        free(buf);
        free(copy);
    }
    int rc = 0;
    if (st == INGOT_BAD_METADATA) rc = usage("--meta %s: value does not parse as %s", arg,
                                             ingot_meta_type_name(type));
    else if (st != INGOT_OK) {
        fprintf(stderr, "%s: --meta %s: %s: %s\n", prog, key, ingot_status_name(st),
                ingot_status_str(st));
        rc = EXIT_REJECT;
    }
    free(key);
    return rc;
}

typedef struct {
    char *name;
    const char *raw;
} pack_tensor;

/* NAME:DTYPE:SHAPE=RAWFILE; NAME may contain ':' (DTYPE and SHAPE are the last two fields). */
static int parse_tensor_arg(const char *arg, char **name, ingot_dtype *dt, uint32_t *rank,
                            uint64_t *shape, const char **raw)
{
    const char *eq = strchr(arg, '=');
    if (!eq) return usage("--tensor %s: expected NAME:DTYPE:SHAPE=RAWFILE", arg);
    const char *c2 = NULL, *c1 = NULL;
    for (const char *c = arg; c < eq; c++)
        if (*c == ':') c1 = c2, c2 = c;
    if (!c1 || c1 == arg) return usage("--tensor %s: expected NAME:DTYPE:SHAPE=RAWFILE", arg);
    char dts[32];
    size_t dn = (size_t)(c2 - c1 - 1);
    if (dn >= sizeof dts) return usage("--tensor %s: unknown dtype", arg);
    memcpy(dts, c1 + 1, dn);
    dts[dn] = '\0';
    if (ingot_dtype_from_name(dts, dt) != INGOT_OK)
        return usage("--tensor %s: unknown dtype '%s'", arg, dts);
    *rank = 0;
    for (const char *s = c2 + 1; s < eq;) {
        if (*rank == INGOT_MAX_RANK)
            return usage("--tensor %s: more than %d dims", arg, INGOT_MAX_RANK);
        char *end;
        if (*s < '0' || *s > '9') return usage("--tensor %s: bad shape", arg);
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || (end != eq && *end != 'x')) return usage("--tensor %s: bad shape", arg);
        shape[(*rank)++] = v;
        s = end == eq ? eq : end + 1;
        if (end != eq && s == eq) return usage("--tensor %s: bad shape", arg);
    }
    *name = strndup(arg, (size_t)(c1 - arg));
    *raw = eq + 1;
    if (!*raw[0]) return usage("--tensor %s: missing RAWFILE", arg);
    return *name ? 0 : fail_st(INGOT_NOMEM, "--tensor");
}

static int stream_file(ingot_writer *w, const char *path, uint64_t n, uint8_t *buf)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail_sys("open", path);
    ingot_error e;
    int rc = 0;
    for (uint64_t done = 0; done < n && !rc;) {
        size_t k = n - done < IO_CHUNK ? (size_t)(n - done) : IO_CHUNK;
        ssize_t r = read(fd, buf, k);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            rc = r < 0 ? fail_sys("read", path)
                       : (fprintf(stderr, "%s: IO: '%s' shrank while packing\n", prog, path),
                          EXIT_REJECT);
            break;
        }
        if (ingot_writer_write(w, buf, (size_t)r, &e) != INGOT_OK) rc = fail_err(&e, "write");
        done += (uint64_t)r;
    }
    close(fd);
    return rc;
}

static int cmd_pack(int argc, char **argv)
{
    if (argc < 1 || argv[0][0] == '-') return usage("pack: missing OUT");
    const char *out = argv[0];
    ingot_writer_opts wo = {0};
    uint64_t align = 256;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--align") == 0) {
            if (i + 1 >= argc || !parse_u64(argv[i + 1], &align) || align > 65536)
                return usage("pack: bad --align");
            i++;
        }
    wo.alignment = (uint32_t)align;
    ingot_writer *w;
    ingot_error e;
    if (ingot_writer_new(&wo, &w, &e) != INGOT_OK) return fail_err(&e, "pack");
    int rc = 0;
    pack_tensor *list = calloc((size_t)argc, sizeof *list);
    size_t n = 0;
    if (!list) rc = fail_st(INGOT_NOMEM, "pack");
    for (int i = 1; i < argc && !rc; i++) {
        if (strcmp(argv[i], "--align") == 0) {
            i++;
        } else if (strcmp(argv[i], "--meta") == 0 && i + 1 < argc) {
            rc = add_meta_arg(w, argv[++i]);
        } else if (strcmp(argv[i], "--tensor") == 0 && i + 1 < argc) {
            char *name = NULL;
            ingot_dtype dt = INGOT_DTYPE_INVALID;
            uint32_t rank = 0;
            uint64_t shape[INGOT_MAX_RANK] = {0};
            const char *raw = NULL;
            rc = parse_tensor_arg(argv[++i], &name, &dt, &rank, shape, &raw);
            if (rc) break;
            list[n].name = name;
            list[n].raw = raw;
            n++;
            uint64_t nbytes;
            ingot_status st = ingot_dtype_nbytes(dt, rank, shape, NULL, &nbytes);
            if (st != INGOT_OK) {
                fprintf(stderr, "%s: %s: tensor '%s': %s\n", prog, ingot_status_name(st), name,
                        ingot_status_str(st));
                rc = EXIT_REJECT;
                break;
            }
            struct stat sb;
            if (stat(raw, &sb) != 0) {
                rc = fail_sys("stat", raw);
                break;
            }
            if ((uint64_t)sb.st_size != nbytes) {
                fprintf(stderr,
                        "%s: BAD_SIZE: tensor '%s': '%s' has %lld bytes, %s with this shape "
                        "needs %" PRIu64 "\n",
                        prog, name, raw, (long long)sb.st_size, ingot_dtype_name(dt), nbytes);
                rc = EXIT_REJECT;
                break;
            }
            if (ingot_writer_add_tensor(w, name, dt, rank, shape, NULL, NULL, &e) != INGOT_OK)
                rc = fail_err(&e, "pack");
        } else {
            rc = usage("pack: unexpected argument %s", argv[i]);
        }
    }
    uint8_t *buf = NULL;
    progress p;
    progress_init(&p, "pack");
    ingot_writer_set_progress(w, progress_update, &p);
    if (!rc && ingot_writer_begin(w, out, &e) != INGOT_OK) rc = fail_err(&e, out);
    if (!rc && !(buf = malloc(IO_CHUNK))) rc = fail_st(INGOT_NOMEM, "pack");
    for (size_t i = 0; i < n && !rc; i++) {
        struct stat sb;
        if (stat(list[i].raw, &sb) != 0) rc = fail_sys("stat", list[i].raw);
        else rc = stream_file(w, list[i].raw, (uint64_t)sb.st_size, buf);
    }
    if (!rc && ingot_writer_commit(w, &e) != INGOT_OK) rc = fail_err(&e, out);
    progress_end(&p);
    free(buf);
    for (size_t i = 0; i < n; i++) free(list[i].name);
    free(list);
    ingot_writer_free(w); /* removes the temporary if anything failed */
    if (!rc && !cli_quiet) printf("wrote %s (%zu tensor%s)\n", out, n, n == 1 ? "" : "s");
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * unpack, dump
 * ------------------------------------------------------------------------------------------- */

int find_tensor(ingot_file *f, const char *path, const char *name, ingot_tensor_info *t)
{
    if (ingot_file_tensor_find(f, name, t) == INGOT_OK) return 0;
    /* the nearest name, if one is a plausible typo */
    const char *best = NULL;
    size_t bd = (size_t)-1, n = strlen(name);
    for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
        ingot_tensor_info u;
        ingot_file_tensor_at(f, i, &u);
        size_t d = edit_distance(name, n, u.name, u.name_len);
        if (d < bd) bd = d, best = u.name;
    }
    fprintf(stderr, "%s: NOT_FOUND: no tensor named '%s' in %s", prog, name, path);
    if (best && close_enough(bd, n)) fprintf(stderr, "; did you mean '%s'?", best);
    fputc('\n', stderr);
    json_fail(INGOT_NOT_FOUND, "no such tensor", name, INGOT_NO_OFFSET);
    return EXIT_REJECT;
}

/* ---------------------------------------------------------------------------------------------
 * Raw output files (unpack): written to OUT.ingot-tmp-XXXXXX, then renamed over OUT. The one
 * temporary's name is kept for the signal handler, which removes it.
 * ------------------------------------------------------------------------------------------- */

static char raw_tmp_path[4096];
static volatile sig_atomic_t raw_tmp_live;

static FILE *raw_tmp_open(const char *out)
{
    int len = snprintf(raw_tmp_path, sizeof raw_tmp_path, "%s.ingot-tmp-XXXXXX", out);
    if (len < 0 || (size_t)len >= sizeof raw_tmp_path) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    sigset_t term, old;
    sigemptyset(&term);
    sigaddset(&term, SIGINT);
    sigaddset(&term, SIGTERM);
    sigaddset(&term, SIGHUP);
    sigprocmask(SIG_BLOCK, &term, &old); /* the name is live before a signal can see it */
    int fd = mkstemp(raw_tmp_path);
    if (fd >= 0) raw_tmp_live = 1;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) return NULL;
    mode_t mask = umask(0); /* the mode fopen would give: 0666 less the umask */
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0) { /* mkstemp creates 0600 */
        int saved = errno;
        close(fd);
        unlink(raw_tmp_path);
        raw_tmp_live = 0;
        errno = saved;
        return NULL;
    }
    FILE *o = fdopen(fd, "wb");
    if (!o) {
        int saved = errno;
        close(fd);
        unlink(raw_tmp_path);
        raw_tmp_live = 0;
        errno = saved;
    }
    return o;
}

/* Closes the temporary; on `ok`, flushes it to disk and renames it over `out`, else removes it. */
static int raw_tmp_finish(FILE *o, const char *out, bool ok)
{
    int rc = 0;
    if (ok && (fflush(o) != 0 || fsync(fileno(o)) != 0)) rc = fail_sys("write", out);
    if (fclose(o) != 0 && ok && !rc) rc = fail_sys("close", out);
    if (ok && !rc && rename(raw_tmp_path, out) != 0) rc = fail_sys("rename", out);
    if (!ok || rc) unlink(raw_tmp_path);
    raw_tmp_live = 0;
    return rc;
}

static int cmd_unpack(int argc, char **argv)
{
    cli_opt opts[] = {{"-o", true, NULL}, {NULL, false, NULL}};
    const char *pos[2];
    int rc = parse_args("unpack", argc, argv, opts, pos, 2, "FILE NAME -o OUT");
    if (rc) return rc;
    const char *path = pos[0], *name = pos[1], *out = opts[0].value;
    if (!out) return usage("unpack: need FILE NAME -o OUT");
    ingot_file *f;
    if ((rc = open_file(path, &f))) return rc;
    ingot_tensor_info t;
    if ((rc = find_tensor(f, path, name, &t))) {
        ingot_file_close(f);
        return rc;
    }
    /* A regular file OUT is written to a temporary beside it and renamed over OUT once complete:
     * a failed read or a signal leaves the old OUT as it was and no temporary behind. "-", a
     * pipe or a device (/dev/null) is written in place. */
    bool to_stdout = strcmp(out, "-") == 0;
    struct stat sb;
    bool direct = !to_stdout && stat(out, &sb) == 0 && !S_ISREG(sb.st_mode);
    FILE *o = to_stdout ? stdout : direct ? fopen(out, "wb") : raw_tmp_open(out);
    /* Stored bytes as they are in the file, except a strided view, which has none of its own:
     * its elements are written in C order. */
    bool view = (t.flags & INGOT_TENSOR_STRIDED) != 0;
    size_t cap = view ? (size_t)t.nbytes : IO_CHUNK;
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!o) rc = fail_sys("create", out);
    else if (!buf) rc = fail_st(INGOT_NOMEM, "unpack");
    ingot_error e;
    if (!rc && view) {
        if (ingot_file_tensor_copy(f, t.index, buf, cap, &e) != INGOT_OK) rc = fail_err(&e, path);
        else if (fwrite(buf, 1, cap, o) != cap) rc = fail_sys("write", out);
    }
    for (uint64_t done = 0; !rc && !view && done < t.nbytes;) {
        size_t k = t.nbytes - done < IO_CHUNK ? (size_t)(t.nbytes - done) : IO_CHUNK;
        if (ingot_file_tensor_read(f, t.index, done, buf, k, &e) != INGOT_OK)
            rc = fail_err(&e, path);
        else if (fwrite(buf, 1, k, o) != k) rc = fail_sys("write", out);
        done += k;
    }
    if (to_stdout && fflush(o) != 0 && !rc) rc = fail_sys("write", out);
    if (direct && o && fclose(o) != 0 && !rc) rc = fail_sys("close", out);
    if (!to_stdout && !direct && o) {
        int rc2 = raw_tmp_finish(o, out, rc == 0);
        if (!rc) rc = rc2;
    }
    free(buf);
    ingot_file_close(f);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Termination signals: remove the temporaries of the open writers, then die of the signal.
 * ------------------------------------------------------------------------------------------- */

static void on_terminate(int sig)
{
    ingot_writer_remove_temporaries(); /* async-signal-safe */
    if (raw_tmp_live) unlink(raw_tmp_path);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig); /* pending until unblocked: the handler blocks it */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
}

static void install_signal_cleanup(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_terminate;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaddset(&sa.sa_mask, sigs[i]);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        /* A signal ignored at start (nohup, a background job) stays ignored. */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sigaction(sigs[i], &sa, NULL);
    }
}

/* help [CMD] | help --man DIR | help --completion bash|zsh: on stdout, exit 0. */
static int cmd_help(int argc, char **argv)
{
    if (argc == 0) {
        help_overview(stdout);
        return fflush(stdout) == 0 ? 0 : EXIT_REJECT;
    }
    if (!strcmp(argv[0], "--man") && argc == 2) {
        if ((mkdir(argv[1], 0777) != 0 && errno != EEXIST) ||
            help_man(argv[1], ingot_version_string()) != 0)
            return fail_sys("write", argv[1]);
        return 0;
    }
    if (!strcmp(argv[0], "--completion") && argc == 2 &&
        (!strcmp(argv[1], "bash") || !strcmp(argv[1], "zsh"))) {
        help_completion(stdout, argv[1]);
        return fflush(stdout) == 0 ? 0 : EXIT_REJECT;
    }
    cli_cmd = "help";
    if (argc != 1) return usage("help: expected one command");
    if (help_command(stdout, argv[0]) == 0) return fflush(stdout) == 0 ? 0 : EXIT_REJECT;
    const char *near = help_suggest_command(argv[0]);
    if (near) return usage("help: no command '%s'; did you mean '%s'?", argv[0], near);
    return usage("help: no command '%s'", argv[0]);
}

int main(int argc, char **argv)
{
    install_signal_cleanup();
    /* --quiet before the command applies to it */
    while (argc > 2 && (!strcmp(argv[1], "--quiet") || !strcmp(argv[1], "-q"))) {
        cli_quiet = true;
        argv[1] = argv[0];
        argv++, argc--;
    }
    if (argc < 2) return usage(NULL);
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("ingot %s\n", ingot_version_string());
        return 0;
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help"))
        return cmd_help(argc - 2, argv + 2);
    if (ingot_version_number() != INGOT_VERSION_NUMBER) {
        fprintf(stderr, "%s: library version %s does not match the header\n", prog,
                ingot_version_string());
        return EXIT_REJECT;
    }
    cli_cmd = cmd;
    /* global conventions: CMD --help, --quiet anywhere, --json noted for error reports */
    int n = 0;
    for (int i = 2; i < argc; i++) {
        if ((!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) && help_known(cmd))
            return help_command(stdout, cmd) == 0 && fflush(stdout) == 0 ? 0 : EXIT_REJECT;
        if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q")) {
            cli_quiet = true;
            continue;
        }
        if (!strcmp(argv[i], "--json")) cli_json = true;
        argv[2 + n++] = argv[i];
    }
    argc = 2 + n;
    if (!strcmp(cmd, "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(cmd, "verify")) return cmd_verify(argc - 2, argv + 2);
    if (!strcmp(cmd, "pack")) return cmd_pack(argc - 2, argv + 2);
    if (!strcmp(cmd, "unpack")) return cmd_unpack(argc - 2, argv + 2);
    if (!strcmp(cmd, "dump")) return ingot_cli_dump(argc - 2, argv + 2);
    if (!strcmp(cmd, "diff")) return ingot_cli_diff(argc - 2, argv + 2);
    if (!strcmp(cmd, "hash")) return ingot_cli_hash(argc - 2, argv + 2);
    if (!strcmp(cmd, "summary")) return ingot_cli_summary(argc - 2, argv + 2);
    if (!strcmp(cmd, "convert")) return ingot_cli_convert(argc - 2, argv + 2);
    if (!strcmp(cmd, "meta")) return ingot_cli_meta(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench")) return ingot_cli_bench(argc - 2, argv + 2);
    if (!strcmp(cmd, "run")) return ingot_cli_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "eval")) return ingot_cli_eval(argc - 2, argv + 2);
    if (!strcmp(cmd, "generate")) return ingot_cli_generate(argc - 2, argv + 2);
    if (!strcmp(cmd, "tokenize")) return ingot_cli_tokenize(argc - 2, argv + 2);
    if (!strcmp(cmd, "detokenize")) return ingot_cli_detokenize(argc - 2, argv + 2);
    cli_cmd = NULL;
    const char *near = help_suggest_command(cmd);
    if (near) return usage("unknown command '%s'; did you mean '%s'?", cmd, near);
    return usage("unknown command '%s'", cmd);
}
