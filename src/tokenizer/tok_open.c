/*
 * tok_open.c - the public open functions: from an ingot_file (GGUF metadata), from a path (a
 * file told from its content, or a folder searched for the known file names) and from a buffer;
 * plus the llama2.c tokenizer.bin loader (i32 max_token_length, then per token f32 score, i32
 * length, bytes; spaces stored as ' ' where SentencePiece has U+2581).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "error.h"
#include "io.h"
#include "tok_internal.h"

static const ingot_allocator *opt_alloc(const ingot_tokenizer_opts *o)
{
    return o && o->allocator ? o->allocator : NULL;
}

/* The open functions' last step: a built tokenizer gets its word caches (or is closed). */
static ingot_status finish(ingot_status st, const ingot_tokenizer_opts *opts,
                           ingot_tokenizer **out, ingot_error *err)
{
    if (st != INGOT_OK) return st;
    st = ingot__tok_wc_attach(*out, opts, err);
    if (st != INGOT_OK) {
        ingot_tokenizer_close(*out);
        *out = NULL;
    }
    return st;
}

ingot_status ingot_tokenizer_open_file(const ingot_file *f, const ingot_tokenizer_opts *opts,
                                       ingot_tokenizer **out, ingot_error *err)
{
    if (out) *out = NULL;
    if (!f || !out)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, NULL, 0, "NULL file or out");
    return finish(ingot__tok_load_gguf(f, opt_alloc(opts), out, err), opts, out, err);
}

/* ---- llama2.c tokenizer.bin -------------------------------------------------------------- */
static float ld_f32(const uint8_t *p)
{
    uint32_t v = ing_ld32(p);
    float f;
    ING_MEMCPY(&f, &v, 4);
    return f;
}

ingot_status ingot__tok_load_llama2c(const uint8_t *buf, size_t n, const ingot_allocator *a,
                                     ingot_tokenizer **out, ingot_error *err)
{
    static const char w[] = "tokenizer.bin";
    if (n < 4) return ingot__err(err, INGOT_TRUNCATED, 0, w, 13, "shorter than its header");
    int32_t maxlen = (int32_t)ing_ld32(buf);
    if (maxlen <= 0 || (uint32_t)maxlen > TOK_MAX_TOKEN_BYTES)
        return ingot__err(err, INGOT_BAD_HEADER_SIZE, 0, w, 13,
                          "max_token_length %d outside 1..%u", maxlen, TOK_MAX_TOKEN_BYTES);
    uint32_t count = 0;
    for (size_t p = 4; p < n; count++) {
        if (n - p < 8) return ingot__err(err, INGOT_TRUNCATED, p, w, 13, "token %u cut", count);
        int32_t l = (int32_t)ing_ld32(buf + p + 4);
        if (l < 0 || l > maxlen)
            return ingot__err(err, INGOT_BAD_STRING, p + 4, w, 13,
                              "token %u has length %d (max_token_length %d)", count, l, maxlen);
        if ((size_t)l > n - p - 8)
            return ingot__err(err, INGOT_TRUNCATED, p + 8, w, 13, "token %u cut", count);
        float sc = ld_f32(buf + p);
        if (sc != sc)
            return ingot__err(err, INGOT_BAD_METADATA, p, w, 13, "score %u is NaN", count);
        p += 8 + (size_t)l;
        if (count == TOK_MAX_VOCAB)
            return ingot__err(err, INGOT_LIMIT, p, w, 13, "more than %u tokens", TOK_MAX_VOCAB);
    }
    if (count < 3)
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, w, 13,
                          "%u tokens: llama2.c vocabularies start with <unk>, <s>, </s>", count);
    tok_build b;
    ingot_status st = ingot__tok_build_init(&b, a, count, err);
    if (st != INGOT_OK) return st;
    b.kind = TOK_SPM;
    b.where = w;
    b.bos = 1, b.eos = 2, b.unk = 0; /* llama2.c's run.c fixes these */
    uint8_t tmp[3 * TOK_MAX_TOKEN_BYTES];
    size_t p = 4;
    for (uint32_t i = 0; i < count; i++) {
        size_t l = ing_ld32(buf + p + 4);
        const uint8_t *s = buf + p + 8;
        b.score[i] = ld_f32(buf + p);
        size_t m = 0;
        if (i == 1 && l == 5 && ING_MEMCMP(s, "\n<s>\n", 5) == 0) {
            ING_MEMCPY(tmp, "<s>", 3); /* llama2.c's export wraps BOS/EOS in newlines */
            m = 3;
        } else if (i == 2 && l == 6 && ING_MEMCMP(s, "\n</s>\n", 6) == 0) {
            ING_MEMCPY(tmp, "</s>", 4);
            m = 4;
        } else {
            for (size_t k = 0; k < l; k++) {
                if (s[k] == ' ') {
                    tmp[m++] = 0xE2;
                    tmp[m++] = 0x96;
                    tmp[m++] = 0x81;
                } else {
                    tmp[m++] = s[k];
                }
            }
        }
        b.type[i] = i == 0 ? TOK_T_UNKNOWN : i <= 2 ? TOK_T_CONTROL : TOK_T_NORMAL;
        if ((st = ingot__tok_build_set(&b, i, tmp, m, err)) != INGOT_OK) goto done;
        p += 8 + l;
    }
    st = ingot__tok_finish(&b, out, err);
done:
    ingot__tok_build_free(&b);
    return st;
}

/* ---- files ------------------------------------------------------------------------------- */
typedef struct fbuf {
    uint8_t *p;
    size_t n, cap;
} fbuf;

static void fbuf_free(const ingot_allocator *a, fbuf *b)
{
    ingot__free(a, b->p, b->cap);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* Reads a whole regular file (at most TOK_MAX_FILE bytes). NOT_FOUND if it does not exist. */
static ingot_status read_all(const ingot_allocator *a, const char *path, fbuf *out,
                             ingot_error *err)
{
    size_t pl = strlen(path);
    int fd = ingot__io->open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return ingot__err(err, errno == ENOENT ? INGOT_NOT_FOUND : INGOT_IO, INGOT_NO_OFFSET,
                          path, pl, "cannot open: %s", strerror(errno));
    struct stat st;
    ingot_status rc = INGOT_OK;
    if (ingot__io->fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = ingot__err(err, INGOT_IO, INGOT_NO_OFFSET, path, pl, "not a readable regular file");
        goto done;
    }
    if ((uint64_t)st.st_size > TOK_MAX_FILE) {
        rc = ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, path, pl,
                        "%llu bytes: tokenizer files are limited to 1 GiB",
                        (unsigned long long)st.st_size);
        goto done;
    }
    out->cap = (size_t)st.st_size + 1;
    out->n = (size_t)st.st_size;
    out->p = ingot__alloc(a, out->cap);
    if (!out->p) {
        out->cap = 0;
        rc = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, path, pl, "reading the file");
        goto done;
    }
    for (size_t got = 0; got < out->n;) {
        ssize_t r = ingot__io->pread(fd, out->p + got, out->n - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            rc = ingot__err(err, r < 0 ? INGOT_IO : INGOT_TRUNCATED, got, path, pl,
                            "read failed%s", r < 0 ? "" : " (file shrank)");
            fbuf_free(a, out);
            goto done;
        }
        got += (size_t)r;
    }
done:
    ingot__io->close(fd);
    return rc;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* dir + "/" + name into buf (NULL-free; false if it does not fit) */
static bool join(char *buf, size_t cap, const char *dir, size_t dl, const char *name)
{
    size_t nl = strlen(name);
    if (dl + 1 + nl + 1 > cap) return false;
    memcpy(buf, dir, dl);
    buf[dl] = '/';
    memcpy(buf + dl + 1, name, nl + 1);
    return true;
}

static ingot_status open_gguf_path(const char *path, const ingot_allocator *a,
                                   ingot_tokenizer **out, ingot_error *err)
{
    ingot_file *f = NULL;
    ingot_open_opts fo = {0};
    fo.allocator = a;
    ingot_status st = ingot_file_open(path, &fo, &f, err);
    if (st != INGOT_OK) return st;
    st = ingot__tok_load_gguf(f, a, out, err);
    ingot_file_close(f);
    return st;
}

/* A file next to a tokenizer.json or encoder.json, or NULL buffer if absent. */
static ingot_status sibling(const ingot_allocator *a, const char *dir, size_t dl,
                            const char *name, fbuf *out, ingot_error *err)
{
    char p[4096];
    if (!join(p, sizeof p, dir, dl, name) || !exists(p)) return INGOT_OK;
    return read_all(a, p, out, err);
}

static ingot_status open_gpt2_pair(const char *dir, size_t dl, const char *vocab,
                                   const char *merges, const ingot_allocator *a,
                                   ingot_tokenizer **out, ingot_error *err)
{
    char p[4096];
    fbuf v = {0}, m = {0}, c = {0};
    ingot_status st;
    if (!join(p, sizeof p, dir, dl, vocab))
        return ingot__err(err, INGOT_BAD_PATH, INGOT_NO_OFFSET, NULL, 0, "path too long");
    if ((st = read_all(a, p, &v, err)) != INGOT_OK) goto done;
    if (!join(p, sizeof p, dir, dl, merges)) {
        st = ingot__err(err, INGOT_BAD_PATH, INGOT_NO_OFFSET, NULL, 0, "path too long");
        goto done;
    }
    if ((st = read_all(a, p, &m, err)) != INGOT_OK) goto done;
    if ((st = sibling(a, dir, dl, "tokenizer_config.json", &c, err)) != INGOT_OK) goto done;
    st = ingot__tok_load_gpt2_files(v.p, v.n, m.p, m.n, c.p, c.n, a, out, err);
done:
    fbuf_free(a, &v);
    fbuf_free(a, &m);
    fbuf_free(a, &c);
    return st;
}

static bool json_start(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')) i++;
    return i < n && p[i] == '{';
}

static ingot_status open_file_path(const char *path, const ingot_allocator *a,
                                   ingot_tokenizer **out, ingot_error *err)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dl = slash ? (size_t)(slash - path) : 1;
    const char *dir = slash ? path : ".";
    if (slash == path) dl = 1, dir = "/";
    if (!strcmp(base, "encoder.json"))
        return open_gpt2_pair(dir, dl, base, "vocab.bpe", a, out, err);
    if (!strcmp(base, "vocab.json"))
        return open_gpt2_pair(dir, dl, base, "merges.txt", a, out, err);
    if (!strcmp(base, "vocab.bpe"))
        return open_gpt2_pair(dir, dl, "encoder.json", base, a, out, err);
    if (!strcmp(base, "merges.txt"))
        return open_gpt2_pair(dir, dl, "vocab.json", base, a, out, err);
    fbuf f = {0}, c = {0};
    ingot_status st = read_all(a, path, &f, err);
    if (st != INGOT_OK) return st;
    if (f.n >= 4 && memcmp(f.p, "GGUF", 4) == 0) {
        fbuf_free(a, &f);
        return open_gguf_path(path, a, out, err);
    }
    if (json_start(f.p, f.n)) {
        if ((st = sibling(a, dir, dl, "tokenizer_config.json", &c, err)) == INGOT_OK)
            st = ingot__tok_load_hf_json(f.p, f.n, c.p, c.n, a, out, err);
    } else {
        st = ingot__tok_load_llama2c(f.p, f.n, a, out, err);
    }
    fbuf_free(a, &f);
    fbuf_free(a, &c);
    return st;
}

static ingot_status open_path(const char *path, const ingot_allocator *a, ingot_tokenizer **out,
                              ingot_error *err)
{
    if (!is_dir(path)) return open_file_path(path, a, out, err);
    size_t dl = strlen(path);
    while (dl > 1 && path[dl - 1] == '/') dl--;
    char p[4096];
    static const char *const singles[] = {"tokenizer.json", NULL};
    for (int i = 0; singles[i]; i++)
        if (join(p, sizeof p, path, dl, singles[i]) && exists(p))
            return open_file_path(p, a, out, err);
    if (join(p, sizeof p, path, dl, "encoder.json") && exists(p))
        return open_gpt2_pair(path, dl, "encoder.json", "vocab.bpe", a, out, err);
    if (join(p, sizeof p, path, dl, "vocab.json") && exists(p))
        return open_gpt2_pair(path, dl, "vocab.json", "merges.txt", a, out, err);
    if (join(p, sizeof p, path, dl, "tokenizer.bin") && exists(p))
        return open_file_path(p, a, out, err);
    /* a folder holding exactly one GGUF file */
    DIR *d = opendir(path);
    char found[256] = "";
    int n_gguf = 0;
    for (struct dirent *de; d && (de = readdir(d));) {
        size_t l = strlen(de->d_name);
        if (l > 5 && l < sizeof found && !strcmp(de->d_name + l - 5, ".gguf")) {
            n_gguf++;
            memcpy(found, de->d_name, l + 1);
        }
    }
    if (d) closedir(d);
    if (n_gguf == 1 && join(p, sizeof p, path, dl, found)) return open_gguf_path(p, a, out, err);
    return ingot__err(err, INGOT_NOT_FOUND, INGOT_NO_OFFSET, path, dl,
                      n_gguf > 1 ? "several .gguf files here: name one"
                                 : "no tokenizer.json, encoder.json, vocab.json, tokenizer.bin or "
                                   ".gguf here");
}

ingot_status ingot_tokenizer_open(const char *path, const ingot_tokenizer_opts *opts,
                                  ingot_tokenizer **out, ingot_error *err)
{
    if (out) *out = NULL;
    if (!path || !out)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, NULL, 0, "NULL path or out");
    return finish(open_path(path, opt_alloc(opts), out, err), opts, out, err);
}

static ingot_status open_buffer(const void *buf, size_t size, const ingot_allocator *a,
                                ingot_tokenizer **out, ingot_error *err)
{
    const uint8_t *p = buf;
    if (size >= 4 && memcmp(p, "GGUF", 4) == 0) {
        ingot_file *f = NULL;
        ingot_open_opts fo = {0};
        fo.allocator = a;
        ingot_status st = ingot_file_open_buffer(buf, size, &fo, &f, err);
        if (st != INGOT_OK) return st;
        st = ingot__tok_load_gguf(f, a, out, err);
        ingot_file_close(f);
        return st;
    }
    if (json_start(p, size)) return ingot__tok_load_hf_json(p, size, NULL, 0, a, out, err);
    return ingot__tok_load_llama2c(p, size, a, out, err);
}

ingot_status ingot_tokenizer_open_buffer(const void *buf, size_t size,
                                         const ingot_tokenizer_opts *opts, ingot_tokenizer **out,
                                         ingot_error *err)
{
    if (out) *out = NULL;
    if ((!buf && size) || !out)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, NULL, 0, "NULL buffer or out");
    return finish(open_buffer(buf, size, opt_alloc(opts), out, err), opts, out, err);
}
