/*
 * error.c - status names and messages (one X-macro list in core.h), ingot_error filling, and a
 * small printf subset so the freestanding reader core can format messages without stdio.
 */
#include "error.h"

const char *ingot_status_str(ingot_status s)
{
    switch (s) {
#define X(name, value, msg)                                                                        \
    case INGOT_##name:                                                                             \
        return msg;
        INGOT_STATUS_LIST(X)
#undef X
    }
    return "unknown status";
}

const char *ingot_status_name(ingot_status s)
{
    switch (s) {
#define X(name, value, msg)                                                                        \
    case INGOT_##name:                                                                             \
        return #name;
        INGOT_STATUS_LIST(X)
#undef X
    }
    return "UNKNOWN";
}

typedef struct {
    char *buf;
    size_t cap, len;
} out_t;

static void put(out_t *o, char c)
{
    if (o->len + 1 < o->cap) o->buf[o->len] = c;
    o->len++;
}

static void put_str(out_t *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) put(o, s[i]);
}

static void put_uint_w(out_t *o, unsigned long long v, unsigned base, int width, char padc)
{
    char tmp[24];
    int n = 0;
    do {
        unsigned d = (unsigned)(v % base);
        tmp[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
        v /= base;
    } while (v);
    for (int k = n; k < width; k++) put(o, padc);
    while (n) put(o, tmp[--n]);
}

static void put_uint(out_t *o, unsigned long long v, unsigned base) { put_uint_w(o, v, base, 0, ' '); }

static void put_int(out_t *o, long long v)
{
    if (v < 0) {
        put(o, '-');
        put_uint(o, 0ull - (unsigned long long)v, 10);
    } else {
        put_uint(o, (unsigned long long)v, 10);
    }
}

size_t ingot__vfmt(char *buf, size_t cap, const char *fmt, va_list ap)
{
    out_t o = {buf, cap, 0};
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') {
            put(&o, *p);
            continue;
        }
        p++;
        int prec = -1, lng = 0, width = 0;
        char padc = ' ';
        if (*p == '0') {
            padc = '0';
            p++;
        }
        while (*p >= '0' && *p <= '9') width = width * 10 + (*p++ - '0');
        if (p[0] == '.' && p[1] == '*') {
            prec = va_arg(ap, int);
            p += 2;
        }
        while (*p == 'l') {
            lng++;
            p++;
        }
        if (*p == 'z') {
            lng = 3;
            p++;
        }
        switch (*p) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s) s = "(null)";
            size_t n = 0;
            while ((prec < 0 || n < (size_t)prec) && s[n]) n++;
            put_str(&o, s, n);
            break;
        }
        case 'c':
            put(&o, (char)va_arg(ap, int));
            break;
        case 'd':
            put_int(&o, lng == 2 ? va_arg(ap, long long) : lng == 1 ? va_arg(ap, long) : va_arg(ap, int));
            break;
        case 'u':
        case 'x': {
            unsigned base = *p == 'u' ? 10 : 16;
            unsigned long long v = lng == 3   ? va_arg(ap, size_t)
                                   : lng == 2 ? va_arg(ap, unsigned long long)
                                   : lng == 1 ? va_arg(ap, unsigned long)
                                              : va_arg(ap, unsigned);
            put_uint_w(&o, v, base, width, padc);
            break;
        }
        case '%':
            put(&o, '%');
            break;
        case '\0':
            p--;
            break;
        default:
            put(&o, '%');
            put(&o, *p);
        }
    }
    if (cap) buf[o.len < cap ? o.len : cap - 1] = '\0';
    return o.len < cap ? o.len : (cap ? cap - 1 : 0);
}

size_t ingot__fmt(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t n = ingot__vfmt(buf, cap, fmt, ap);
    va_end(ap);
    return n;
}

ingot_status ingot__err(ingot_error *err, ingot_status code, uint64_t offset, const char *where,
                        size_t where_len, const char *fmt, ...)
{
    if (!err) return code;
    err->code = code;
    err->offset = offset;
    size_t n = 0;
    if (where) {
        /* Names come from hostile files: keep printable ASCII, escape the rest as '?'. */
        for (; n < where_len && n + 1 < sizeof err->where; n++) {
            unsigned char c = (unsigned char)where[n];
            err->where[n] = (c >= 0x20 && c < 0x7f) || c >= 0x80 ? (char)c : '?';
        }
        /* Do not cut a UTF-8 sequence in half. */
        if (n < where_len)
            while (n > 0 && ((unsigned char)err->where[n - 1] & 0xC0) == 0x80) n--;
        if (n < where_len && n > 0 && ((unsigned char)err->where[n - 1] & 0xC0) == 0xC0) n--;
    }
    err->where[n] = '\0';
    va_list ap;
    va_start(ap, fmt);
    ingot__vfmt(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

char *ingot_error_format(const ingot_error *e, char *buf, size_t cap)
{
    if (!buf || !cap) return buf;
    if (!e) {
        buf[0] = '\0';
        return buf;
    }
    out_t o = {buf, cap, 0};
    const char *name = ingot_status_name(e->code);
    size_t n = 0;
    while (name[n]) n++;
    put_str(&o, name, n);
    put_str(&o, ": ", 2);
    for (n = 0; e->msg[n] && n < sizeof e->msg; n++) put(&o, e->msg[n]);
    if (e->where[0]) {
        put_str(&o, " [", 2);
        for (n = 0; e->where[n] && n < sizeof e->where; n++) put(&o, e->where[n]);
        put(&o, ']');
    }
    if (e->offset != INGOT_NO_OFFSET) {
        put_str(&o, " at byte ", 9);
        put_uint(&o, e->offset, 10);
    }
    buf[o.len < cap ? o.len : cap - 1] = '\0';
    return buf;
}
