/*
 * test_faults_common.h - helpers shared by the crash-safety tests (test_faults.c,
 * test_killsafe.c, test_mmap_contract.c): scratch directories, whole-file reads, descriptor and
 * temporary-file counting, a deterministic "model" that can be saved to a path or built in memory,
 * and a tracking allocator. Everything is static inline so each test uses what it needs.
 */
#ifndef INGOT_TEST_FAULTS_COMMON_H
#define INGOT_TEST_FAULTS_COMMON_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "afile.h"
#include "harness.h"
#include "ingot/writer.h"

#define TMP_INFIX ".ingot-tmp-"

/* ---------------------------------------------------------------------------------------------
 * Files and directories
 * ------------------------------------------------------------------------------------------- */

/* Creates a fresh scratch directory /tmp/ingot-<tag>-XXXXXX into buf. Aborts on failure. */
static inline void make_scratch(char *buf, size_t cap, const char *tag)
{
    snprintf(buf, cap, "/tmp/ingot-%s-XXXXXX", tag);
    if (!mkdtemp(buf)) {
        perror("mkdtemp");
        abort();
    }
}

/* Removes every entry of dir (no recursion) and dir itself. */
static inline void remove_scratch(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        char p[1024];
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Whole file into a malloc'ed buffer (NULL if it cannot be read; *n = 0). */
static inline uint8_t *slurp(const char *path, size_t *n)
{
    *n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    size_t got = 0;
    while (buf && got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            free(buf);
            buf = NULL;
            break;
        }
        got += (size_t)r;
    }
    close(fd);
    if (buf) *n = size;
    return buf;
}

/* 1 if the file at path holds exactly buf[0..n), else 0. */
static inline int file_equals(const char *path, const void *buf, size_t n)
{
    size_t got;
    uint8_t *b = slurp(path, &got);
    int eq = b && got == n && memcmp(b, buf, n) == 0;
    free(b);
    return eq;
}

/* Writes buf[0..n) to path without ingot (truncating). 0 on success. */
static inline int put_file(const char *path, const void *buf, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    const uint8_t *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            close(fd);
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return close(fd);
}

/* Open descriptors of this process (entries of /proc/self/fd, the directory's own included). */
static inline int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* Number of "*.ingot-tmp-*" entries in dir; removes them when `clean`. */
static inline int count_tmps(const char *dir, bool clean)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *de;
    char p[1024];
    while ((de = readdir(d)) != NULL) {
        if (!strstr(de->d_name, TMP_INFIX)) continue;
        n++;
        if (clean) {
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            unlink(p);
        }
    }
    closedir(d);
    return n;
}

/* Whether the writer gets an unnamed (O_TMPFILE) temporary in dir when ingot__afile_tmpfile is 1:
 * not on file systems without O_TMPFILE or without /proc. Tests expect what this says, and say
 * when the unnamed cases ran with named temporaries. */
static inline bool unnamed_tmp_works(const char *dir)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/probe.ingot", dir);
    int saved = ingot__afile_tmpfile;
    ingot__afile_tmpfile = 1;
    ingot__afile af;
    bool ok = ingot__afile_create(&af, NULL, p, false, NULL) == INGOT_OK && af.unnamed;
    ingot__afile_abort(&af);
    ingot__afile_tmpfile = saved;
    if (!ok) fprintf(stderr, "  note: no O_TMPFILE in %s: the unnamed cases get named ones\n", dir);
    return ok;
}

/* Lines of /proc/self/maps that mention `needle` (a path): live mappings of that file. */
static inline int count_maps_of(const char *needle)
{
    FILE *fp = fopen("/proc/self/maps", "re");
    if (!fp) return -1;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, fp))
        if (strstr(line, needle)) n++;
    fclose(fp);
    return n;
}

/* ---------------------------------------------------------------------------------------------
 * A deterministic model: a few tensors (some given by pointer, some pushed in chunks) and one
 * metadata entry of most kinds. The same model always produces the same bytes.
 * ------------------------------------------------------------------------------------------- */

#define MODEL_MAX_T 8

typedef struct {
    const char *name;
    ingot_dtype dtype;
    uint32_t rank;
    uint64_t shape[2];
    bool pushed; /* streamed with ingot_writer_write() instead of a data pointer */
} model_tensor;

typedef struct {
    const char *tag; /* stored as metadata "model.name" */
    size_t n;
    model_tensor t[MODEL_MAX_T];
    uint8_t *data[MODEL_MAX_T];
    size_t nbytes[MODEL_MAX_T];
    size_t push_chunk; /* size of the ingot_writer_write() calls (may span tensors) */
    uint8_t *image;    /* the expected file bytes (built in memory) */
    size_t image_len;
} model;

static inline uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Allocates and fills the tensor data of m (t[], n, tag, push_chunk set by the caller). */
static inline void model_fill(model *m, uint64_t seed)
{
    for (size_t i = 0; i < m->n; i++) {
        uint64_t nb = 0;
        if (ingot_dtype_nbytes(m->t[i].dtype, m->t[i].rank, m->t[i].shape, NULL, &nb) != INGOT_OK)
            abort();
        m->nbytes[i] = (size_t)nb;
        m->data[i] = malloc(nb ? (size_t)nb : 1);
        uint64_t s = seed * 1000003u + i;
        for (size_t k = 0; k < nb; k += 8) {
            uint64_t r = splitmix(&s);
            size_t c = nb - k < 8 ? (size_t)(nb - k) : 8;
            memcpy(m->data[i] + k, &r, c);
        }
    }
}

static inline void model_free(model *m)
{
    for (size_t i = 0; i < m->n; i++) free(m->data[i]);
    free(m->image);
    memset(m, 0, sizeof *m);
}

/* Describes m into w (metadata, then tensors). */
static inline ingot_status model_describe(const model *m, ingot_writer *w, ingot_error *e)
{
    ingot_status st;
    if ((st = ingot_writer_set_string(w, "model.name", m->tag)) != INGOT_OK) return st;
    if ((st = ingot_writer_set_u32(w, "model.layers", (uint32_t)m->n)) != INGOT_OK) return st;
    if ((st = ingot_writer_set_f64(w, "train.lr", 0.00025)) != INGOT_OK) return st;
    int32_t arr[5] = {-3, 0, 7, 1 << 20, (int32_t)m->n};
    if ((st = ingot_writer_set_array(w, "model.dims", INGOT_META_I32, arr, 5)) != INGOT_OK)
        return st;
    const void *strs[3] = {"<s>", "</s>", m->tag};
    size_t lens[3] = {3, 4, strlen(m->tag)};
    if ((st = ingot_writer_set_string_array(w, "tok.vocab", INGOT_META_STRING, strs, lens, 3)) !=
        INGOT_OK)
        return st;
    static const uint8_t blob[6] = {0, 1, 2, 0xfe, 0xff, 0};
    if ((st = ingot_writer_set_bytes(w, "blob", blob, sizeof blob)) != INGOT_OK) return st;
    if ((st = ingot_writer_set_bool(w, "flag", true)) != INGOT_OK) return st;
    for (size_t i = 0; i < m->n; i++) {
        const model_tensor *t = &m->t[i];
        ingot_tensor_opts to = {true, 1000 + i};
        st = ingot_writer_add_tensor(w, t->name, t->dtype, t->rank, t->shape, i % 2 ? &to : NULL,
                                     t->pushed ? NULL : m->data[i], e);
        if (st != INGOT_OK) return st;
    }
    return INGOT_OK;
}

/* Pushes the bytes of the pushed tensors, in declaration order, in chunks of m->push_chunk that
 * run across tensor boundaries. */
static inline ingot_status model_push(const model *m, ingot_writer *w, ingot_error *e)
{
    size_t total = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->t[i].pushed) total += m->nbytes[i];
    uint8_t *stream = malloc(total ? total : 1);
    size_t at = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->t[i].pushed) {
            memcpy(stream + at, m->data[i], m->nbytes[i]);
            at += m->nbytes[i];
        }
    ingot_status st = INGOT_OK;
    size_t chunk = m->push_chunk ? m->push_chunk : 4096;
    for (size_t k = 0; k < total && st == INGOT_OK; k += chunk)
        st = ingot_writer_write(w, stream + k, total - k < chunk ? total - k : chunk, e);
    free(stream);
    return st;
}

/* Saves m to path with the writer options o: new, describe, begin, push, commit, free. Returns the
 * first failure. */
static inline ingot_status model_save(const model *m, const char *path,
                                      const ingot_writer_opts *o, ingot_error *e)
{
    ingot_writer *w = NULL;
    ingot_status st = ingot_writer_new(o, &w, e);
    if (st != INGOT_OK) return st;
    if (st == INGOT_OK) st = model_describe(m, w, e);
    if (st == INGOT_OK) st = ingot_writer_begin(w, path, e);
    if (st == INGOT_OK) st = model_push(m, w, e);
    if (st == INGOT_OK) st = ingot_writer_commit(w, e);
    ingot_writer_free(w);
    return st;
}

/* Builds m->image in memory (the bytes a save must produce). Aborts on failure. */
static inline void model_build_image(model *m)
{
    ingot_writer *w;
    ingot_error e;
    void *out = NULL;
    size_t len = 0;
    if (ingot_writer_new(NULL, &w, &e) != INGOT_OK || model_describe(m, w, &e) != INGOT_OK ||
        ingot_writer_begin_mem(w, &e) != INGOT_OK || model_push(m, w, &e) != INGOT_OK ||
        ingot_writer_commit_mem(w, &out, &len, &e) != INGOT_OK) {
        fprintf(stderr, "model_build_image failed: %s\n", e.msg);
        abort();
    }
    m->image = malloc(len);
    memcpy(m->image, out, len);
    m->image_len = len;
    ingot_writer_free_mem(NULL, out, len);
    ingot_writer_free(w);
}

/* Checks an open file against the model: tensors (bytes through tensor_read, and through the
 * mapping when there is one) and metadata. Returns 0 if all match, else a line number. */
static inline int model_check_open(const model *m, const ingot_file *f)
{
    if (ingot_file_tensor_count(f) != m->n) return __LINE__;
    for (size_t i = 0; i < m->n; i++) {
        ingot_tensor_info t;
        if (ingot_file_tensor_find(f, m->t[i].name, &t) != INGOT_OK) return __LINE__;
        if (t.nbytes != m->nbytes[i] || t.index != i) return __LINE__;
        if (t.data && memcmp(t.data, m->data[i], m->nbytes[i]) != 0) return __LINE__;
        if (!t.data && !(t.flags & INGOT_TENSOR_NOT_MAPPED)) return __LINE__;
        uint8_t *buf = malloc(m->nbytes[i] ? m->nbytes[i] : 1);
        ingot_status st = ingot_file_tensor_read(f, i, 0, buf, m->nbytes[i], NULL);
        int bad = st != INGOT_OK || memcmp(buf, m->data[i], m->nbytes[i]) != 0;
        free(buf);
        if (bad) return __LINE__;
    }
    const char *s;
    size_t sl;
    if (ingot_file_meta_get_string(f, "model.name", &s, &sl) != INGOT_OK) return __LINE__;
    if (sl != strlen(m->tag) || memcmp(s, m->tag, sl) != 0) return __LINE__;
    uint32_t u;
    if (ingot_file_meta_get_u32(f, "model.layers", &u) != INGOT_OK || u != m->n) return __LINE__;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Tracking allocator: counts calls, fails call fail_at (once, or that one and every later one),
 * records every live block with its size, and flags frees whose size differs from the request.
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    void *p;
    size_t n;
} talloc_rec;

typedef struct {
    pthread_mutex_t mu;
    long calls;      /* allocation calls seen */
    long fail_at;    /* 0: never fail */
    bool persistent; /* fail fail_at and every later call */
    bool fired;      /* a failure was injected */
    long failures;   /* how many */
    size_t live_bytes;
    long live_blocks;
    long bad_frees; /* unknown pointer or size mismatch */
    long bad_align;
    size_t peak_bytes;
    talloc_rec *recs;
    size_t n_recs, cap_recs;
} talloc;

static inline void *talloc_alloc(void *ctx, size_t size, size_t align)
{
    talloc *t = ctx;
    pthread_mutex_lock(&t->mu);
    t->calls++;
    if (t->fail_at && (t->calls == t->fail_at || (t->persistent && t->calls > t->fail_at))) {
        t->fired = true;
        t->failures++;
        pthread_mutex_unlock(&t->mu);
        return NULL;
    }
    if (align == 0 || (align & (align - 1)) || align > 4096) t->bad_align++;
    size_t a = align < sizeof(void *) ? sizeof(void *) : align;
    void *p = NULL;
    if (posix_memalign(&p, a, size ? size : 1) != 0) p = NULL;
    if (p) {
        if (t->n_recs == t->cap_recs) {
            size_t nc = t->cap_recs ? t->cap_recs * 2 : 256;
            talloc_rec *r = realloc(t->recs, nc * sizeof *r);
            if (!r) abort();
            t->recs = r;
            t->cap_recs = nc;
        }
        t->recs[t->n_recs++] = (talloc_rec){p, size};
        t->live_bytes += size;
        t->live_blocks++;
        if (t->live_bytes > t->peak_bytes) t->peak_bytes = t->live_bytes;
    }
    pthread_mutex_unlock(&t->mu);
    return p;
}

static inline void talloc_free(void *ctx, void *p, size_t size)
{
    talloc *t = ctx;
    pthread_mutex_lock(&t->mu);
    size_t i = t->n_recs;
    while (i > 0 && t->recs[i - 1].p != p) i--;
    if (i == 0) {
        t->bad_frees++; /* unknown pointer: do not free what we did not hand out */
    } else {
        talloc_rec *r = &t->recs[i - 1];
        if (r->n != size) t->bad_frees++;
        t->live_bytes -= r->n;
        t->live_blocks--;
        *r = t->recs[--t->n_recs];
        free(p);
    }
    pthread_mutex_unlock(&t->mu);
}

static inline void talloc_init(talloc *t)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
}

/* Re-arms the counters for a new iteration (live blocks must already be 0). */
static inline void talloc_arm(talloc *t, long fail_at, bool persistent)
{
    pthread_mutex_lock(&t->mu);
    t->calls = 0;
    t->fail_at = fail_at;
    t->persistent = persistent;
    t->fired = false;
    t->failures = 0;
    pthread_mutex_unlock(&t->mu);
}

static inline void talloc_destroy(talloc *t)
{
    for (size_t i = 0; i < t->n_recs; i++) free(t->recs[i].p);
    free(t->recs);
    pthread_mutex_destroy(&t->mu);
}

static inline ingot_allocator talloc_allocator(talloc *t)
{
    ingot_allocator a = {talloc_alloc, talloc_free, t};
    return a;
}

#endif
