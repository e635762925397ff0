/*
 * cmd_inspect.c - the inspection commands of the ingot CLI: dump (values, slices, statistics,
 * JSON), diff (two models compared by name, value and metadata, across formats), hash (content
 * digests, include/ingot/inspect.h) and summary (parameters and bytes per dtype and per layer,
 * the architecture's hyperparameters). Read-only; public API only.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INGOT_CLI_HELPERS
#include "cli.h"

/* ---------------------------------------------------------------------------------------------
 * Element values
 * ------------------------------------------------------------------------------------------- */

static double half_to_double(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return s ? -v : v;
}

static double bf16_to_double(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* OCP FP8 E4M3 (the "FN" variant: no infinities, S.1111.111 is NaN), bias 7. */
static double e4m3_to_double(uint8_t b)
{
    int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    double v = (e == 15 && m == 7) ? NAN : e == 0 ? ldexp(m, -9) : ldexp(m + 8, e - 10);
    return s ? -v : v;
}

/* OCP FP8 E5M2: IEEE-like, bias 15, with infinities and NaNs. */
static double e5m2_to_double(uint8_t b)
{
    int s = b >> 7, e = (b >> 2) & 31, m = b & 3;
    double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -16) : ldexp(m + 4, e - 17);
    return s ? -v : v;
}

/* FNUZ variants (Graphcore/AMD): no infinities, no negative zero, 0x80 is the only NaN; the
 * exponent bias is one more than the OCP type's (8 for E4M3, 16 for E5M2). */
static double e4m3fnuz_to_double(uint8_t b)
{
    int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    if (b == 0x80) return NAN;
    double v = e == 0 ? ldexp(m, -10) : ldexp(m + 8, e - 11);
    return s ? -v : v;
}

static double e5m2fnuz_to_double(uint8_t b)
{
    int s = b >> 7, e = (b >> 2) & 31, m = b & 3;
    if (b == 0x80) return NAN;
    double v = e == 0 ? ldexp(m, -17) : ldexp(m + 4, e - 18);
    return s ? -v : v;
}

static void print_float(double v, int digits)
{
    if (isnan(v)) printf("nan"); /* no "-nan": the sign of a NaN carries no value */
    else printf("%.*g", digits, v);
}

static void print_value(ingot_dtype dt, const uint8_t *p)
{
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (dt) {
    case INGOT_DTYPE_F64: { double d; memcpy(&d, p, 8); print_float(d, 17); break; }
    case INGOT_DTYPE_F32: { float v; memcpy(&v, p, 4); print_float(v, 9); break; }
    case INGOT_DTYPE_F16: memcpy(&u16, p, 2); print_float(half_to_double(u16), 6); break;
    case INGOT_DTYPE_BF16: memcpy(&u16, p, 2); print_float(bf16_to_double(u16), 5); break;
    case INGOT_DTYPE_F8_E4M3: print_float(e4m3_to_double(*p), 4); break;
    case INGOT_DTYPE_F8_E5M2: print_float(e5m2_to_double(*p), 4); break;
    case INGOT_DTYPE_F8_E4M3FNUZ: print_float(e4m3fnuz_to_double(*p), 4); break;
    case INGOT_DTYPE_F8_E5M2FNUZ: print_float(e5m2fnuz_to_double(*p), 4); break;
    case INGOT_DTYPE_I64: memcpy(&u64, p, 8); printf("%" PRId64, (int64_t)u64); break;
    case INGOT_DTYPE_I32: memcpy(&u32, p, 4); printf("%" PRId32, (int32_t)u32); break;
    case INGOT_DTYPE_I16: memcpy(&u16, p, 2); printf("%d", (int16_t)u16); break;
    case INGOT_DTYPE_I8: printf("%d", (int8_t)*p); break;
    case INGOT_DTYPE_U64: memcpy(&u64, p, 8); printf("%" PRIu64, u64); break;
    case INGOT_DTYPE_U32: memcpy(&u32, p, 4); printf("%" PRIu32, u32); break;
    case INGOT_DTYPE_U16: memcpy(&u16, p, 2); printf("%u", u16); break;
    case INGOT_DTYPE_U8: printf("%u", *p); break;
    case INGOT_DTYPE_BOOL: printf("%s", *p ? "true" : "false"); break;
    case INGOT_DTYPE_F8_E8M0: print_float(*p == 0xFF ? NAN : ldexp(1.0, *p - 127), 9); break;
    case INGOT_DTYPE_C64: {
        float re, im;
        memcpy(&re, p, 4);
        memcpy(&im, p + 4, 4);
        print_float(re, 9);
        printf("%s", im < 0 || (im == 0 && signbit(im)) ? "-" : "+");
        print_float(fabsf(im), 9);
        printf("j");
        break;
    }
    case INGOT_DTYPE_C128: {
        double re, im;
        memcpy(&re, p, 8);
        memcpy(&im, p + 8, 8);
        print_float(re, 17);
        printf("%s", im < 0 || (im == 0 && signbit(im)) ? "-" : "+");
        print_float(fabs(im), 17);
        printf("j");
        break;
    }
    default: break;
    }
}


/* A float element's value as a double (exact); false for integer, bool and complex dtypes. */
static bool float_value(ingot_dtype dt, const uint8_t *p, double *v)
{
    uint16_t u16;
    switch (dt) {
    case INGOT_DTYPE_F64: memcpy(v, p, 8); return true;
    case INGOT_DTYPE_F32: { float f; memcpy(&f, p, 4); *v = f; return true; }
    case INGOT_DTYPE_F16: memcpy(&u16, p, 2); *v = half_to_double(u16); return true;
    case INGOT_DTYPE_BF16: memcpy(&u16, p, 2); *v = bf16_to_double(u16); return true;
    case INGOT_DTYPE_F8_E4M3: *v = e4m3_to_double(*p); return true;
    case INGOT_DTYPE_F8_E5M2: *v = e5m2_to_double(*p); return true;
    case INGOT_DTYPE_F8_E4M3FNUZ: *v = e4m3fnuz_to_double(*p); return true;
    case INGOT_DTYPE_F8_E5M2FNUZ: *v = e5m2fnuz_to_double(*p); return true;
    case INGOT_DTYPE_F8_E8M0: *v = *p == 0xFF ? NAN : ldexp(1.0, *p - 127); return true;
    default: return false;
    }
}

/* One element in JSON: numbers (NaN and infinities as strings), true/false, [re, im]. */
static void json_value(ingot_dtype dt, const uint8_t *p)
{
    double v;
    if (float_value(dt, p, &v)) {
        json_double(stdout, v, dt != INGOT_DTYPE_F64);
    } else if (dt == INGOT_DTYPE_C64) {
        float re, im;
        memcpy(&re, p, 4);
        memcpy(&im, p + 4, 4);
        fputc('[', stdout);
        json_double(stdout, re, true);
        fputs(", ", stdout);
        json_double(stdout, im, true);
        fputc(']', stdout);
    } else if (dt == INGOT_DTYPE_C128) {
        double re, im;
        memcpy(&re, p, 8);
        memcpy(&im, p + 8, 8);
        fputc('[', stdout);
        json_double(stdout, re, false);
        fputs(", ", stdout);
        json_double(stdout, im, false);
        fputc(']', stdout);
    } else {
        print_value(dt, p);
    }
}

/* ---------------------------------------------------------------------------------------------
 * dump
 * ------------------------------------------------------------------------------------------- */

/* NAME[SLICE]: per dimension (outermost first) "a:b", "a:", ":b", ":" or "i"; dimensions not
 * given are whole. */
typedef struct {
    uint64_t lo[INGOT_MAX_RANK], hi[INGOT_MAX_RANK];
    uint32_t given;
} slice;

static int parse_slice(const char *spec, const ingot_tensor_info *t, slice *s)
{
    for (uint32_t d = 0; d < t->rank; d++) s->lo[d] = 0, s->hi[d] = t->shape[d];
    s->given = 0;
    const char *p = spec;
    while (*p && *p != ']') {
        if (s->given >= t->rank)
            return usage("dump: slice [%s has more dimensions than '%s' (%u)", spec, t->name,
                         t->rank);
        uint32_t d = s->given++;
        char *end;
        bool range = false;
        uint64_t a = 0, b = t->shape[d];
        if (*p != ':' && *p != ',' && *p != ']') {
            errno = 0;
            a = strtoull(p, &end, 10);
            if (end == p || errno) return usage("dump: bad slice [%s", spec);
            p = end;
            b = a + 1;
        }
        if (*p == ':') {
            range = true;
            p++;
            b = t->shape[d];
            if (*p != ',' && *p != ']' && *p) {
                errno = 0;
                b = strtoull(p, &end, 10);
                if (end == p || errno) return usage("dump: bad slice [%s", spec);
                p = end;
            }
        }
        if (a > t->shape[d] || b > t->shape[d] || a > b || (!range && a >= t->shape[d]))
            return usage("dump: slice [%s: dimension %u of '%s' has %" PRIu64 " entries", spec, d,
                         t->name, t->shape[d]);
        s->lo[d] = a, s->hi[d] = b;
        if (*p == ',') p++;
        else if (*p != ']') return usage("dump: bad slice [%s", spec);
    }
    if (*p != ']' || p[1]) return usage("dump: bad slice [%s (expected NAME[a:b,c,...])", spec);
    return 0;
}

/* Reads elements of one tensor by flat C-order index: from a dense copy (big-endian,
 * column-major, strided tensors), by bounded reads, or decoded block by block (--dequantize). */
typedef struct {
    ingot_file *f;
    const char *path;
    ingot_tensor_info t;
    uint8_t *dense;
    bool decode;
    float *blk;      /* the decoded block cached */
    uint64_t blk_at; /* its first element, UINT64_MAX if none */
} reader;

static int reader_open(reader *r, ingot_file *f, const char *path, const ingot_tensor_info *t,
                       bool decode)
{
    memset(r, 0, sizeof *r);
    r->f = f, r->path = path, r->t = *t, r->decode = decode, r->blk_at = UINT64_MAX;
    ingot_error e;
    const uint32_t relayout = INGOT_TENSOR_BIG_ENDIAN | INGOT_TENSOR_FORTRAN | INGOT_TENSOR_STRIDED;
    if (t->flags & relayout) {
        if (!(r->dense = malloc(t->nbytes ? (size_t)t->nbytes : 1)))
            return fail_st(INGOT_NOMEM, "dump");
        if (ingot_file_tensor_copy(f, t->index, r->dense, (size_t)t->nbytes, &e) != INGOT_OK)
            return fail_err(&e, path);
    } else if (t->dtype == INGOT_DTYPE_BOOL) {
        /* A BOOL tensor with a byte other than 0 or 1 is refused whole, not shown in part: the
         * reads check every byte (BAD_VALUE naming the byte). */
        uint8_t buf[512];
        for (uint64_t off = 0; off < t->nbytes; off += sizeof buf) {
            size_t k = t->nbytes - off < sizeof buf ? (size_t)(t->nbytes - off) : sizeof buf;
            if (ingot_file_tensor_read(f, t->index, off, buf, k, &e) != INGOT_OK)
                return fail_err(&e, path);
        }
    }
    if (decode && !(r->blk = malloc(ingot_dtype_block_elems(t->dtype) * sizeof *r->blk)))
        return fail_st(INGOT_NOMEM, "dump");
    return 0;
}

static void reader_close(reader *r)
{
    free(r->dense);
    free(r->blk);
}

/* Stored bytes of element (or block, for GGML types) k. */
static int reader_raw(reader *r, uint64_t k, uint8_t *out)
{
    uint32_t bb = ingot_dtype_block_bytes(r->t.dtype);
    ingot_error e;
    if (r->dense) memcpy(out, r->dense + k * bb, bb);
    else if (ingot_file_tensor_read(r->f, r->t.index, k * bb, out, bb, &e) != INGOT_OK)
        return fail_err(&e, r->path);
    return 0;
}

/* Element k decoded to F32 (--dequantize). */
static int reader_decoded(reader *r, uint64_t k, float *v)
{
    uint32_t be = ingot_dtype_block_elems(r->t.dtype), bb = ingot_dtype_block_bytes(r->t.dtype);
    uint64_t at = k / be * be;
    ingot_error e;
    if (at != r->blk_at) {
        ingot_status st;
        if (r->dense)
            st = ingot_dequantize(r->t.dtype, r->dense + at / be * bb, bb, r->blk, be, &e);
        else st = ingot_file_tensor_dequantize(r->f, r->t.index, at, be, r->blk, &e);
        if (st != INGOT_OK) return fail_err(&e, r->path);
        r->blk_at = at;
    }
    *v = r->blk[k - at];
    return 0;
}

typedef struct {
    bool json, stats, decode, first;
    uint64_t limit;
} dump_opts;

static void json_stats(const ingot_tensor_stats *s)
{
    printf("{\"count\": %" PRIu64 ", \"nan\": %" PRIu64 ", \"inf\": %" PRIu64 ", \"min\": ",
           s->count, s->nan, s->inf);
    json_double(stdout, s->min, false);
    fputs(", \"max\": ", stdout);
    json_double(stdout, s->max, false);
    fputs(", \"mean\": ", stdout);
    json_double(stdout, s->mean, false);
    fputs(", \"std\": ", stdout);
    json_double(stdout, s->std, false);
    fputc('}', stdout);
}

static void text_stats(const ingot_tensor_stats *s)
{
    printf("min %.9g max %.9g mean %.9g std %.9g nan %" PRIu64 " inf %" PRIu64 "\n", s->min,
           s->max, s->mean, s->std, s->nan, s->inf);
}

/* Dumps one tensor (a slice of it if `spec`). */
static int dump_one(ingot_file *f, const char *path, const ingot_tensor_info *t, const char *spec,
                    dump_opts *o)
{
    uint32_t be = ingot_dtype_block_elems(t->dtype), bb = ingot_dtype_block_bytes(t->dtype);
    bool blocks = be > 1 && !o->decode;
    if ((o->decode || o->stats) && !ingot_dequantize_supported(t->dtype)) {
        fprintf(stderr, "%s: UNSUPPORTED: no decoder for %s ('%s')\n", prog,
                ingot_dtype_name(t->dtype), t->name);
        return EXIT_REJECT;
    }
    slice s;
    int rc = parse_slice(spec ? spec : "]", t, &s);
    if (rc) return rc;
    if (blocks && spec)
        return usage("dump: slicing %s needs --dequantize", ingot_dtype_name(t->dtype));
    uint64_t sel = 1;
    for (uint32_t d = 0; d < t->rank; d++) sel *= s.hi[d] - s.lo[d];
    uint64_t units = blocks ? t->nbytes / bb : spec ? sel : t->nelem;
    char sh[INGOT_MAX_RANK * 21 + 1];
    shape_str(t, sh, sizeof sh);
    ingot_tensor_stats st = {0};
    ingot_error e;
    if (o->stats && !spec && ingot_file_tensor_stats(f, t->index, &st, &e) != INGOT_OK)
        return fail_err(&e, path);
    reader r;
    if ((rc = reader_open(&r, f, path, t, o->decode || (o->stats && spec)))) {
        reader_close(&r);
        return rc;
    }
    uint64_t n = o->stats ? (spec ? units : 0) : units < o->limit ? units : o->limit;
    if (o->json) {
        printf("%s{\"name\": ", o->first ? "" : ", ");
        o->first = false;
        json_str(stdout, t->name, t->name_len);
        printf(", \"dtype\": \"%s\", \"shape\": [", ingot_dtype_name(t->dtype));
        for (uint32_t d = 0; d < t->rank; d++) printf("%s%" PRIu64, d ? ", " : "", t->shape[d]);
        printf("], \"elements\": %" PRIu64, t->nelem);
        if (spec) {
            fputs(", \"slice\": [", stdout);
            for (uint32_t d = 0; d < t->rank; d++)
                printf("%s[%" PRIu64 ", %" PRIu64 "]", d ? ", " : "", s.lo[d], s.hi[d]);
            printf("], \"selected\": %" PRIu64, sel);
        }
        if (!o->stats) printf(", \"%s\": [", blocks ? "blocks" : o->decode ? "decoded" : "values");
    } else {
        printf("%.*s", (int)t->name_len, t->name);
        if (spec) printf("[%s", spec);
        printf(": %s %s, %" PRIu64 " elements", ingot_dtype_name(t->dtype), sh, t->nelem);
        if (spec) printf(", %" PRIu64 " selected", sel);
        if (o->decode && !o->stats) printf(", decoded to F32");
        printf(o->stats ? ": " : "\n");
    }
    /* the odometer over the selection, outermost dimension first */
    uint64_t idx[INGOT_MAX_RANK];
    for (uint32_t d = 0; d < t->rank; d++) idx[d] = s.lo[d];
    double mean = 0, m2 = 0;
    uint64_t finite = 0;
    uint8_t raw[512];
    for (uint64_t k = 0; k < n && !rc; k++) {
        uint64_t flat = k;
        if (spec) {
            flat = 0;
            for (uint32_t d = 0; d < t->rank; d++) flat = flat * t->shape[d] + idx[d];
            for (uint32_t d = t->rank; d-- > 0;) {
                if (++idx[d] < s.hi[d]) break;
                idx[d] = s.lo[d];
            }
        }
        if (o->stats) { /* over a slice: decoded values */
            float v;
            if ((rc = reader_decoded(&r, flat, &v))) break;
            st.count++;
            if (isnan(v)) st.nan++;
            else if (isinf(v)) st.inf++;
            else {
                if (!finite || v < st.min) st.min = v;
                if (!finite || v > st.max) st.max = v;
                finite++;
                double dlt = v - mean;
                mean += dlt / (double)finite;
                m2 += dlt * (v - mean);
            }
            continue;
        }
        if (o->json && k) fputs(", ", stdout);
        if (o->decode) {
            float v;
            if ((rc = reader_decoded(&r, flat, &v))) break;
            if (o->json) json_double(stdout, v, true);
            else print_float(v, 9);
        } else {
            if ((rc = reader_raw(&r, flat, raw))) break;
            if (blocks) {
                if (!o->json) printf("block %" PRIu64 ":", k);
                else fputc('"', stdout);
                for (uint32_t b = 0; b < bb; b++) printf(o->json ? "%02x" : " %02x", raw[b]);
                if (o->json) fputc('"', stdout);
            } else if (o->json) {
                json_value(t->dtype, raw);
            } else {
                print_value(t->dtype, raw);
            }
        }
        if (!o->json) printf(blocks || k + 1 == n || k % 8 == 7 ? "\n" : " ");
    }
    if (o->stats && spec) {
        st.mean = mean;
        st.std = finite ? sqrt(m2 / (double)finite) : 0;
    }
    if (!rc) {
        if (o->json) {
            if (o->stats) {
                fputs(", \"stats\": ", stdout);
                json_stats(&st);
            } else {
                printf("], \"truncated\": %s", n < units ? "true" : "false");
            }
            fputc('}', stdout);
        } else if (o->stats) {
            text_stats(&st);
        } else if (n < units) {
            printf("... (%" PRIu64 " more %s)\n", units - n, blocks ? "blocks" : "elements");
        }
    }
    reader_close(&r);
    return rc;
}

int ingot_cli_dump(int argc, char **argv)
{
    dump_opts o = {0};
    o.limit = 64;
    o.first = true;
    bool all = false;
    const char **names = calloc((size_t)argc + 1, sizeof *names);
    const char *path = NULL;
    size_t nn = 0;
    int rc = names ? 0 : fail_st(INGOT_NOMEM, "dump");
    for (int i = 0; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--limit")) {
            if (i + 1 >= argc || !parse_u64(argv[++i], &o.limit)) rc = usage("dump: bad --limit");
        } else if (!strcmp(a, "--dequantize")) o.decode = true;
        else if (!strcmp(a, "--stats")) o.stats = true;
        else if (!strcmp(a, "--json")) o.json = true;
        else if (!strcmp(a, "--all")) all = true;
        else if (a[0] == '-' && a[1]) rc = usage("dump: unknown option %s", a);
        else if (!path) path = a;
        else names[nn++] = a;
    }
    if (!rc && (!path || (!nn && !all))) rc = usage("dump: need FILE NAME... (or FILE --all)");
    if (!rc && all && nn) rc = usage("dump: --all takes no tensor names");
    ingot_file *f = NULL;
    if (!rc) rc = open_file(path, &f);
    uint64_t count = rc ? 0 : all ? ingot_file_tensor_count(f) : nn;
    uint64_t *which = calloc(count ? (size_t)count : 1, sizeof *which);
    const char **specs = calloc(count ? (size_t)count : 1, sizeof *specs);
    if (!rc && (!which || !specs)) rc = fail_st(INGOT_NOMEM, "dump");
    /* every name resolved before anything is printed (--json stays one object) */
    for (uint64_t k = 0; k < count && !rc; k++) {
        ingot_tensor_info t;
        if (all) {
            which[k] = k;
            continue;
        }
        const char *arg = names[k], *br = strchr(arg, '[');
        size_t len = br ? (size_t)(br - arg) : strlen(arg);
        /* a name that itself holds '[' is found whole first */
        if (br && ingot_file_tensor_find(f, arg, &t) == INGOT_OK) br = NULL, len = strlen(arg);
        char *name = strndup(arg, len);
        if (!name) rc = fail_st(INGOT_NOMEM, "dump");
        else rc = find_tensor(f, path, name, &t);
        free(name);
        which[k] = t.index;
        specs[k] = br ? br + 1 : NULL;
    }
    if (!rc && o.json) {
        printf("{\"path\": ");
        json_str(stdout, path, strlen(path));
        printf(", \"tensors\": [");
    }
    for (uint64_t k = 0; k < count && !rc; k++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, which[k], &t);
        rc = dump_one(f, path, &t, specs[k], &o);
    }
    free(which);
    free(specs);
    if (!rc && o.json) printf("]}\n");
    free(names);
    ingot_file_close(f);
    if (!rc && fflush(stdout) != 0) rc = EXIT_REJECT;
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * hash
 * ------------------------------------------------------------------------------------------- */

static void hex32(const uint8_t d[32], char out[65])
{
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* hash FILE...: the content digest of every tensor and of the model (inspect.h), as
 * "DIGEST  NAME" lines (sha256sum's layout) or --json. */
int ingot_cli_hash(int argc, char **argv)
{
    bool json = false, quiet = cli_quiet;
    int nf = 0, rc = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = true;
        else if (argv[i][0] == '-' && argv[i][1]) return usage("hash: unknown option %s", argv[i]);
        else nf++;
    }
    if (!nf) return usage("hash: need FILE...");
    if (json) printf("[");
    bool first = true;
    for (int i = 0; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1]) continue;
        const char *path = argv[i];
        ingot_file *f;
        int r = open_file(path, &f);
        if (r) {
            rc = r;
            continue;
        }
        ingot_error e;
        uint8_t d[32];
        char hx[65];
        uint64_t nt = ingot_file_tensor_count(f);
        if (json) {
            printf("%s{\"path\": ", first ? "" : ", ");
            json_str(stdout, path, strlen(path));
            printf(", \"format\": \"%s\", \"tensors\": [", ingot_file_format(f));
        }
        first = false;
        for (uint64_t k = 0; k < nt && !r; k++) {
            ingot_tensor_info t;
            ingot_file_tensor_at(f, k, &t);
            if (ingot_file_tensor_digest(f, k, d, &e) != INGOT_OK) {
                r = fail_err(&e, path);
                break;
            }
            hex32(d, hx);
            if (json) {
                printf("%s{\"name\": ", k ? ", " : "");
                json_str(stdout, t.name, t.name_len);
                printf(", \"sha256\": \"%s\"}", hx);
            } else if (!quiet) {
                printf("%s  %s: %s\n", hx, path, t.name);
            }
        }
        if (!r && ingot_file_digest(f, d, &e) != INGOT_OK) r = fail_err(&e, path);
        if (!r) {
            hex32(d, hx);
            if (json) printf("], \"model\": \"%s\"}", hx);
            else printf("%s  %s\n", hx, path);
        } else if (json) {
            printf("], \"model\": null}");
        }
        if (r) rc = r;
        ingot_file_close(f);
    }
    if (json) printf("]\n");
    return fflush(stdout) == 0 ? rc : EXIT_REJECT;
}

/* ---------------------------------------------------------------------------------------------
 * summary
 * ------------------------------------------------------------------------------------------- */

/* The layer prefix of a tensor name: up to and including the number after "blk.", "layers.",
 * "h.", "layer.", "block." or "blocks." ("model.layers.3", "blk.0"); length 0 if none. */
static size_t layer_prefix(const char *name)
{
    static const char *const words[] = {"blk.", "layers.", "h.", "layer.", "block.", "blocks."};
    for (const char *p = name; *p; p++) {
        if (p != name && p[-1] != '.' && p[-1] != '/') continue;
        for (size_t w = 0; w < sizeof words / sizeof *words; w++) {
            size_t wl = strlen(words[w]);
            if (strncmp(p, words[w], wl) || p[wl] < '0' || p[wl] > '9') continue;
            const char *q = p + wl;
            while (*q >= '0' && *q <= '9') q++;
            if (*q == '.' || *q == '/' || !*q) return (size_t)(q - name);
        }
    }
    return 0;
}

typedef struct {
    char key[96];
    uint64_t tensors, params, bytes;
} tally;

static void add_tally(tally *list, size_t *n, size_t cap, const char *key, size_t klen,
                      const ingot_tensor_info *t)
{
    if (klen >= sizeof list->key) klen = sizeof list->key - 1;
    size_t i = 0;
    while (i < *n && (strlen(list[i].key) != klen || strncmp(list[i].key, key, klen))) i++;
    if (i == *n) {
        if (*n == cap) return;
        memcpy(list[i].key, key, klen);
        list[i].key[klen] = '\0';
        list[i].tensors = list[i].params = list[i].bytes = 0;
        (*n)++;
    }
    list[i].tensors++;
    list[i].params += t->nelem;
    list[i].bytes += t->nbytes;
}

static void print_tallies(const char *what, const tally *l, size_t n, bool json)
{
    if (json) {
        printf(", \"%s\": [", what);
        for (size_t i = 0; i < n; i++) {
            printf("%s{\"name\": ", i ? ", " : "");
            json_str(stdout, l[i].key, strlen(l[i].key));
            printf(", \"tensors\": %" PRIu64 ", \"params\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
                   l[i].tensors, l[i].params, l[i].bytes);
        }
        printf("]");
        return;
    }
    size_t w = 8;
    for (size_t i = 0; i < n; i++)
        if (strlen(l[i].key) > w) w = strlen(l[i].key);
    printf("\nby %s:\n  %-*s %8s %16s %16s\n", what, (int)w, what, "tensors", "params", "bytes");
    for (size_t i = 0; i < n; i++)
        printf("  %-*s %8" PRIu64 " %16" PRIu64 " %16" PRIu64 "\n", (int)w, l[i].key,
               l[i].tensors, l[i].params, l[i].bytes);
}

/* The `{arch}.*` hyperparameters summary prints when the file names its architecture. */
static const char *const hyper[] = {"block_count", "context_length", "embedding_length",
                                    "feed_forward_length", "attention.head_count",
                                    "attention.head_count_kv", "expert_count", "vocab_size",
                                    "rope.dimension_count"};

int ingot_cli_summary(int argc, char **argv)
{
    cli_opt opts[] = {{"--json", false, NULL}, {NULL, false, NULL}};
    const char *path;
    int rc = parse_args("summary", argc, argv, opts, &path, 1, "FILE");
    if (rc) return rc;
    bool json = opts[0].value != NULL;
    ingot_file *f;
    if ((rc = open_file(path, &f))) return rc;
    uint64_t nt = ingot_file_tensor_count(f), params = 0, bytes = 0;
    size_t cap = (size_t)(nt ? nt : 1), nd = 0, nl = 0;
    tally *by_dtype = calloc(cap, sizeof *by_dtype), *by_layer = calloc(cap + 1, sizeof *by_layer);
    if (!by_dtype || !by_layer) {
        free(by_dtype);
        free(by_layer);
        ingot_file_close(f);
        return fail_st(INGOT_NOMEM, "summary");
    }
    for (uint64_t i = 0; i < nt; i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        params += t.nelem;
        bytes += t.nbytes;
        const char *dn = ingot_dtype_name(t.dtype);
        add_tally(by_dtype, &nd, cap, dn, strlen(dn), &t);
        size_t lp = layer_prefix(t.name);
        if (lp) add_tally(by_layer, &nl, cap, t.name, lp, &t);
        else add_tally(by_layer, &nl, cap + 1, "(other)", 7, &t);
    }
    const char *arch = NULL;
    size_t alen = 0;
    bool has_arch =
        ingot_file_meta_get_string(f, "general.architecture", &arch, &alen) == INGOT_OK &&
        alen < 64;
    uint64_t vocab = 0;
    bool has_vocab = ingot_file_meta_get_array(f, "tokenizer.ggml.tokens", INGOT_META_STRING,
                                               &vocab) == INGOT_OK;
    if (json) {
        printf("{\"path\": ");
        json_str(stdout, path, strlen(path));
        printf(", \"format\": \"%s\", \"tensors\": %" PRIu64 ", \"params\": %" PRIu64
               ", \"bytes\": %" PRIu64 ", \"architecture\": ",
               ingot_file_format(f), nt, params, bytes);
        if (has_arch) json_str(stdout, arch, alen);
        else fputs("null", stdout);
        fputs(", \"hyperparameters\": {", stdout);
    } else {
        printf("%s: %s, %" PRIu64 " tensor%s, %" PRIu64 " parameter%s, %" PRIu64
               " bytes of tensor data\n",
               path, ingot_file_format(f), nt, nt == 1 ? "" : "s", params, params == 1 ? "" : "s",
               bytes);
        if (has_arch) printf("architecture: %.*s", (int)alen, arch);
    }
    bool any = false;
    for (size_t k = 0; has_arch && k < sizeof hyper / sizeof *hyper; k++) {
        char key[160];
        ingot_meta_info m;
        snprintf(key, sizeof key, "%.*s.%s", (int)alen, arch, hyper[k]);
        if (ingot_file_meta_find(f, key, &m) != INGOT_OK || m.is_array) continue;
        if (json) {
            printf("%s\"%s\": ", any ? ", " : "", hyper[k]);
            print_meta_value(stdout, f, &m, true, 0);
        } else {
            printf("%s%s ", any ? ", " : " (", hyper[k]);
            print_meta_value(stdout, f, &m, false, 0);
        }
        any = true;
    }
    if (has_vocab) {
        if (json) printf("%s\"vocab\": %" PRIu64, any ? ", " : "", vocab);
        else if (has_arch) printf("%svocab %" PRIu64, any ? ", " : " (", vocab);
        any = true;
    }
    if (json) {
        fputc('}', stdout);
    } else if (has_arch) {
        printf("%s\n", any ? ")" : "");
    }
    print_tallies("dtype", by_dtype, nd, json);
    print_tallies("layer", by_layer, nl, json);
    if (json) printf("}\n");
    free(by_dtype);
    free(by_layer);
    ingot_file_close(f);
    return fflush(stdout) == 0 ? 0 : EXIT_REJECT;
}

/* ---------------------------------------------------------------------------------------------
 * diff
 * ------------------------------------------------------------------------------------------- */

/* Differences of two tensors' decoded values, compared in C order. */
typedef struct {
    ingot_file *fb;
    ingot_tensor_info tb;
    uint64_t at;
    float *buf;       /* B's values for the current piece */
    double *all;      /* B's values, materialised when B cannot be decoded in ranges */
    double max_abs, max_rel, num, den;
    uint64_t nan_mismatch;
    ingot_status st;
    ingot_error e;
} cmp_job;

static bool cmp_piece(void *ctx, const double *a, size_t n)
{
    cmp_job *j = ctx;
    const double *b = j->all ? j->all + j->at : NULL;
    if (!b) {
        if ((j->st = ingot_file_tensor_dequantize(j->fb, j->tb.index, j->at, n, j->buf, &j->e)) !=
            INGOT_OK)
            return false;
    }
    for (size_t k = 0; k < n; k++) {
        double x = a[k], y = b ? b[k] : j->buf[k];
        if (isnan(x) || isnan(y)) {
            j->nan_mismatch += isnan(x) != isnan(y);
            continue;
        }
        double d = fabs(x - y);
        if (isinf(x) || isinf(y)) d = x == y ? 0 : INFINITY;
        if (d > j->max_abs) j->max_abs = d;
        double rel = d == 0 ? 0 : d / fmax(fabs(x), fabs(y));
        if (rel > j->max_rel) j->max_rel = rel;
        if (isfinite(d)) {
            j->num += d * d;
            j->den += x * x;
        }
    }
    j->at += n;
    return true;
}

static bool collect(void *ctx, const double *v, size_t n)
{
    cmp_job *j = ctx;
    memcpy(j->all + j->at, v, n * sizeof *v);
    j->at += n;
    return true;
}

/* Metadata values compared by their printed JSON form (type compared separately). */
static char *meta_json(const ingot_file *f, const ingot_meta_info *m, size_t *len)
{
    char *buf = NULL;
    FILE *o = open_memstream(&buf, len);
    if (!o) return NULL;
    print_meta_value(o, f, m, true, 0);
    fclose(o);
    return buf;
}

static void type_str(const ingot_meta_info *m, char *out, size_t cap)
{
    snprintf(out, cap, "%s%s", ingot_meta_type_name(m->type), m->is_array ? "[]" : "");
}

/* diff A B: exit 0 same, 1 different, 2 usage or unreadable input (as cmp and diff do). */
int ingot_cli_diff(int argc, char **argv)
{
    cli_opt opts[] = {{"--json", false, NULL}, {"--quiet", false, NULL}, {"-q", false, NULL},
                      {NULL, false, NULL}};
    const char *pos[2];
    int rc = parse_args("diff", argc, argv, opts, pos, 2, "A B");
    if (rc) return rc;
    bool json = opts[0].value != NULL, quiet = cli_quiet || opts[1].value || opts[2].value;
    ingot_file *fa = NULL, *fb = NULL;
    if (open_file(pos[0], &fa) || open_file(pos[1], &fb)) {
        ingot_file_close(fa);
        return EXIT_USAGE;
    }
    uint64_t na = ingot_file_tensor_count(fa), nb = ingot_file_tensor_count(fb), ndiff = 0;
    uint64_t same = 0;
    int trouble = 0;
    if (json) printf("{\"a\": \"%s\", \"b\": \"%s\", \"tensors\": [", ingot_file_format(fa),
                     ingot_file_format(fb));
    bool first = true;
#define ITEM_START() (json ? printf("%s{", first ? "" : ", ") : 0, first = false)
    for (uint64_t i = 0; i < na && !trouble; i++) {
        ingot_tensor_info ta, tb;
        ingot_file_tensor_at(fa, i, &ta);
        if (ingot_file_tensor_findn(fb, ta.name, ta.name_len, &tb) != INGOT_OK) {
            ndiff++;
            if (quiet) continue;
            ITEM_START();
            if (json) {
                fputs("\"name\": ", stdout);
                json_str(stdout, ta.name, ta.name_len);
                fputs(", \"only_in\": \"a\"}", stdout);
            } else {
                char sh[INGOT_MAX_RANK * 21 + 1];
                shape_str(&ta, sh, sizeof sh);
                printf("only in A: %s (%s %s)\n", ta.name, ingot_dtype_name(ta.dtype), sh);
            }
            continue;
        }
        bool dt_same = ta.dtype == tb.dtype, sh_same = ta.rank == tb.rank;
        for (uint32_t d = 0; sh_same && d < ta.rank; d++) sh_same = ta.shape[d] == tb.shape[d];
        uint8_t da[32], db[32];
        ingot_error e;
        if (dt_same && sh_same) {
            if (ingot_file_tensor_digest(fa, i, da, &e) != INGOT_OK ||
                ingot_file_tensor_digest(fb, tb.index, db, &e) != INGOT_OK) {
                fail_err(&e, ta.name);
                trouble = 1;
                break;
            }
            if (!memcmp(da, db, 32)) {
                same++;
                continue;
            }
        }
        ndiff++;
        if (quiet) continue;
        cmp_job j;
        memset(&j, 0, sizeof j);
        bool values = sh_same && ta.nelem == tb.nelem && ingot_dequantize_supported(ta.dtype) &&
                      ingot_dequantize_supported(tb.dtype);
        if (values) {
            j.fb = fb;
            j.tb = tb;
            bool ranged = !(tb.flags & (INGOT_TENSOR_FORTRAN | INGOT_TENSOR_STRIDED)) &&
                          tb.dtype != INGOT_DTYPE_F64 &&
                          ingot_dtype_block_elems(tb.dtype) <= ingot_dtype_block_elems(ta.dtype);
            if (ranged) {
                j.buf = malloc((1u << 16) * sizeof *j.buf);
            } else {
                j.all = malloc(tb.nelem ? (size_t)tb.nelem * sizeof *j.all : 1);
                if (j.all && ingot_file_tensor_values(fb, tb.index, collect, &j, &e) != INGOT_OK) {
                    fail_err(&e, pos[1]);
                    trouble = 1;
                }
                j.at = 0;
            }
            if (!j.buf && !j.all) {
                fail_st(INGOT_NOMEM, "diff");
                trouble = 1;
            }
            if (!trouble && ingot_file_tensor_values(fa, i, cmp_piece, &j, &e) != INGOT_OK) {
                fail_err(&e, pos[0]);
                trouble = 1;
            }
            if (!trouble && j.st != INGOT_OK) {
                fail_err(&j.e, pos[1]);
                trouble = 1;
            }
            free(j.buf);
            free(j.all);
            if (trouble) break;
        }
        double nmse = j.den > 0 ? j.num / j.den : (j.num > 0 ? INFINITY : 0);
        ITEM_START();
        if (json) {
            fputs("\"name\": ", stdout);
            json_str(stdout, ta.name, ta.name_len);
            printf(", \"dtype\": [\"%s\", \"%s\"], \"shape\": [[", ingot_dtype_name(ta.dtype),
                   ingot_dtype_name(tb.dtype));
            for (uint32_t d = 0; d < ta.rank; d++) printf("%s%" PRIu64, d ? ", " : "", ta.shape[d]);
            fputs("], [", stdout);
            for (uint32_t d = 0; d < tb.rank; d++) printf("%s%" PRIu64, d ? ", " : "", tb.shape[d]);
            fputs("]]", stdout);
            if (values) {
                fputs(", \"max_abs\": ", stdout);
                json_double(stdout, j.max_abs, false);
                fputs(", \"max_rel\": ", stdout);
                json_double(stdout, j.max_rel, false);
                fputs(", \"nmse\": ", stdout);
                json_double(stdout, nmse, false);
                printf(", \"nan_mismatch\": %" PRIu64, j.nan_mismatch);
            }
            fputc('}', stdout);
        } else {
            char sa[INGOT_MAX_RANK * 21 + 1], sb[INGOT_MAX_RANK * 21 + 1];
            shape_str(&ta, sa, sizeof sa);
            shape_str(&tb, sb, sizeof sb);
            printf("differs: %s", ta.name);
            if (!dt_same)
                printf(" (dtype %s vs %s)", ingot_dtype_name(ta.dtype), ingot_dtype_name(tb.dtype));
            if (!sh_same) printf(" (shape %s vs %s)", sa, sb);
            if (values)
                printf(": max abs %.6g, max rel %.6g, NMSE %.6g%s", j.max_abs, j.max_rel, nmse,
                       j.nan_mismatch ? ", NaN in one only" : "");
            else if (dt_same && sh_same)
                printf(": bytes differ");
            printf("\n");
        }
    }
    for (uint64_t i = 0; i < nb && !trouble; i++) {
        ingot_tensor_info tb, ta;
        ingot_file_tensor_at(fb, i, &tb);
        if (ingot_file_tensor_findn(fa, tb.name, tb.name_len, &ta) == INGOT_OK) continue;
        ndiff++;
        if (quiet) continue;
        ITEM_START();
        if (json) {
            fputs("\"name\": ", stdout);
            json_str(stdout, tb.name, tb.name_len);
            fputs(", \"only_in\": \"b\"}", stdout);
        } else {
            char sh[INGOT_MAX_RANK * 21 + 1];
            shape_str(&tb, sh, sizeof sh);
            printf("only in B: %s (%s %s)\n", tb.name, ingot_dtype_name(tb.dtype), sh);
        }
    }
    /* metadata by key and type, values by their JSON form */
    uint64_t ma = ingot_file_meta_count(fa), mb = ingot_file_meta_count(fb), mdiff = 0;
    if (json && !trouble) printf("], \"metadata\": [");
    first = true;
    for (int side = 0; side < 2 && !trouble; side++) {
        ingot_file *x = side ? fb : fa, *y = side ? fa : fb;
        for (uint64_t i = 0; i < (side ? mb : ma); i++) {
            ingot_meta_info m, o;
            ingot_file_meta_at(x, i, &m);
            char key[65536 + 1];
            memcpy(key, m.key, m.key_len);
            key[m.key_len] = '\0';
            bool there = ingot_file_meta_find(y, key, &o) == INGOT_OK;
            if (side && there) continue; /* compared from A's side */
            char ta_[24], tb_[24];
            const char *what = NULL;
            char *va = NULL, *vb = NULL;
            size_t la = 0, lb = 0;
            if (!there) {
                what = side ? "only in B" : "only in A";
            } else {
                type_str(&m, ta_, sizeof ta_);
                type_str(&o, tb_, sizeof tb_);
                if (strcmp(ta_, tb_)) what = "type differs";
                else {
                    va = meta_json(x, &m, &la);
                    vb = meta_json(y, &o, &lb);
                    if (va && vb && (la != lb || memcmp(va, vb, la))) what = "value differs";
                }
            }
            if (what) {
                mdiff++;
                if (!quiet) {
                    ITEM_START();
                    if (json) {
                        fputs("\"key\": ", stdout);
                        json_str(stdout, m.key, m.key_len);
                        printf(", \"change\": \"%s\"", what);
                        if (there && !strcmp(what, "type differs"))
                            printf(", \"type\": [\"%s\", \"%s\"]", ta_, tb_);
                        if (va && vb && !strcmp(what, "value differs"))
                            printf(", \"value\": [%s, %s]", va, vb);
                        fputc('}', stdout);
                    } else {
                        printf("metadata %s: %s", what, key);
                        if (there && !strcmp(what, "type differs")) printf(" (%s vs %s)", ta_, tb_);
                        if (va && vb && !strcmp(what, "value differs"))
                            printf(": %.*s vs %.*s", la > 80 ? 80 : (int)la, va,
                                   lb > 80 ? 80 : (int)lb, vb);
                        printf("\n");
                    }
                }
            }
            free(va);
            free(vb);
        }
    }
    if (!trouble) {
        if (json) {
            printf("], \"same\": %" PRIu64 ", \"tensors_differ\": %" PRIu64
                   ", \"metadata_differ\": %" PRIu64 ", \"identical\": %s}\n",
                   same, ndiff, mdiff, ndiff || mdiff ? "false" : "true");
        } else if (!quiet) {
            printf("%" PRIu64 " tensor%s the same, %" PRIu64 " differ%s, %" PRIu64
                   " metadata entr%s differ%s\n",
                   same, same == 1 ? "" : "s", ndiff, ndiff == 1 ? "s" : "", mdiff,
                   mdiff == 1 ? "y" : "ies", mdiff == 1 ? "s" : "");
        }
    }
    ingot_file_close(fa);
    ingot_file_close(fb);
    if (fflush(stdout) != 0) return EXIT_USAGE;
    return trouble ? EXIT_USAGE : ndiff || mdiff ? 1 : 0;
}
