/*
 * bench_tokenizer.c - encode and decode throughput of the tokenizers on a few MB of mixed text.
 *
 * Corpus (deterministic, written to --out so bench/tok_ref.py encodes the very same bytes): lines
 * drawn with a fixed LCG from three pools, until --mb megabytes: English prose (the .md files of
 * ../shared and ../shared/formats, read-only), C code (the .c files of src/core/), and
 * multilingual text (every sample of ../shared/fixtures/tokenizers/gpt2/TestPlans.txt and
 * llama.cpp's vector inputs: CJK, Cyrillic, Arabic scripts, emoji, whitespace runs). The unit
 * of work is a chunk: consecutive lines joined until it holds at least 4096 bytes (the Python
 * reference encodes the same chunks).
 * Cases: GPT-2 byte-level BPE (ggml-vocab-gpt-2.gguf), Llama 3 BPE (llama3/tokenizer.json),
 * Llama 2 SentencePiece (ggml-vocab-llama-spm.gguf). Encode: every chunk, scratch reused, one
 * thread; "warm chunk": the first chunk encoded 1000 times (the tables stay in cache). Decode:
 * every chunk's ids back to bytes. Times are the thread's CPU time (the machines this runs on
 * are shared), so MB/s is per busy core. Printed: the command line, the median of --reps runs,
 * MB/s of text (input bytes for encode, output bytes for decode); under each case, each pool
 * encoded on its own (its lines in the order drawn, chunked the same way), and with a library
 * built with -DINGOT_TOK_STATS the encoder's counters per byte (words, cache and whole-token
 * hits, merges, lookups). Under each line also the "cached" figure: the same chunks in order
 * through one ingot_tokenizer_cache of --cache KB (2048 by default), cleared at the start of
 * every repetition (one pass over the text, as a dataset job runs it; the clear is timed), timed
 * in the same repetition as the plain encode, its ids checked against the plain ones; with the
 * cache's hits per word looked up and per byte. "Plain" is a tokenizer opened without word
 * caches of its own (INGOT_TOKENIZER_NO_WORD_CACHE): the encoder alone. "Default (own caches)":
 * a tokenizer opened with the default options encodes the chunks in order with
 * ingot_tokenizer_encode, one pass, its own caches empty at the start (reopened every
 * repetition, the open not timed): what a user who sets nothing gets on a first pass.
 *
 *   bench_tokenizer [--mb N] [--reps N] [--warm N] [--cache KB] [--out corpus.txt]
 *   bench_tokenizer --ab OLD.so NEW.so [--rounds N] [--block N] [--mb N] [--ab-cache]
 *   bench_tokenizer --mix [--reps N] [--mb N]
 *   bench_tokenizer --text FILE [--reps N] [--cache KB]
 * (--warm: how many times the first chunk is encoded for the warm figure, 1000 by default; 0
 * skips it, for instruction and cache simulations such as cachegrind's.)
 * --ab compares two builds of the library (libingot.so of each, e.g. main's and a branch's)
 * loaded into this one process: both must give the same ids on every chunk, then each round
 * encodes the corpus in blocks of --block chunks (16 by default), each block by both libraries
 * in turn (which goes first alternates), so both see the same load; printed: MB/s of each and
 * NEW/OLD speed, over all rounds and the median of the rounds' ratios. On a shared machine
 * whose speed moves from one minute to the next this is the fair comparison. With short blocks
 * the two libraries' tables share the caches (each evicts the other's between blocks), which
 * hides part of what a smaller cache footprint gains; --block 1000 (the whole corpus, ~0.1 s a
 * block) times each library alone, the caches warm with its own tables only. --ab-cache: each
 * library encodes through its own word cache of --cache KB, cleared at the start of every round.
 * --text: FILE's chunks (the same chunking) plain, through the word cache and with the
 * default options (below), each repetition all three in turn: the corpus draws its lines again and again from small pools (12 % of its bytes
 * are lines seen for the first time), which flatters a cache; a file that does not repeat
 * itself shows what a cache finds in fresh text.
 * --mix (why the mixed corpus is slower than its pools): the same bytes in four orders, each
 * timed in turn within every repetition: the corpus as it is (lines of the three pools
 * interleaved), the pools one after another, the pools' chunks interleaved (each chunk of one
 * pool), and the pools one after another with two instances of the tokenizer taking chunks in
 * turn (the same code path as the second, twice the tables).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ingot/ingot.h"

#define FIX INGOT_SOURCE_DIR "/../shared/fixtures"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the machine is shared */
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct pool {
    char **line;
    size_t *len;
    size_t n, cap;
} pool;

static void pool_add(pool *p, const char *s, size_t n)
{
    if (n == 0) return;
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 1024;
        p->line = realloc(p->line, p->cap * sizeof *p->line);
        p->len = realloc(p->len, p->cap * sizeof *p->len);
    }
    p->line[p->n] = malloc(n);
    memcpy(p->line[p->n], s, n);
    p->len[p->n++] = n;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)sz + 1);
    *n = fread(p, 1, (size_t)sz, f);
    fclose(f);
    p[*n] = 0;
    return p;
}

/* Adds every line of a file (newline kept). */
static void add_lines(pool *p, const char *path)
{
    size_t n;
    char *b = slurp(path, &n);
    if (!b) return;
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e < n && b[e] != '\n') e++;
        if (e < n) e++;
        pool_add(p, b + i, e - i);
        i = e;
    }
    free(b);
}

static void add_dir(pool *p, const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d) return;
    char *names[512];
    int k = 0;
    for (struct dirent *de; (de = readdir(d)) && k < 512;) {
        size_t l = strlen(de->d_name), sl = strlen(suffix);
        if (l > sl && !strcmp(de->d_name + l - sl, suffix)) names[k++] = strdup(de->d_name);
    }
    closedir(d);
    for (int i = 0; i < k; i++) /* sorted: the corpus must not depend on readdir order */
        for (int j = i + 1; j < k; j++)
            if (strcmp(names[j], names[i]) < 0) {
                char *t = names[i];
                names[i] = names[j];
                names[j] = t;
            }
    for (int i = 0; i < k; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        add_lines(p, path);
        free(names[i]);
    }
}

static void add_samples(pool *p)
{
    size_t n;
    char *b = slurp(FIX "/tokenizers/gpt2/TestPlans.txt", &n);
    for (char *s = b; s && (s = strstr(s, "Sample: "));) {
        s += 8;
        char *e = strchr(s, '\n');
        if (!e) break;
        pool_add(p, s, (size_t)(e - s + 1));
        s = e;
    }
    free(b);
    b = slurp(FIX "/tokenizers/llama.cpp/ggml-vocab-gpt-2.gguf.inp", &n);
    static const char sep[] = "\n__ggml_vocab_test__\n";
    for (char *s = b; s;) {
        char *e = strstr(s, sep);
        if (!e) break;
        pool_add(p, s, (size_t)(e - s + 1));
        s = e + sizeof sep - 1;
    }
    free(b);
}

typedef struct chunk {
    size_t off, len;
} chunk;

/* Splits text[0..n) into chunks: lines joined until >= 4096 bytes. */
static chunk *make_chunks(const char *text, size_t n, size_t *nch_out)
{
    chunk *ch = malloc((n / 4096 + 2) * sizeof *ch);
    size_t nch = 0;
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e < n && e - i < 4096) {
            while (e < n && text[e] != '\n') e++;
            if (e < n) e++;
        }
        ch[nch].off = i;
        ch[nch++].len = e - i;
        i = e;
    }
    *nch_out = nch;
    return ch;
}

#ifdef INGOT_TOK_STATS
/* counters of a library built with -DINGOT_TOK_STATS (tok_encode.c; not thread-safe) */
extern unsigned long long ingot__tok_stats[16];
extern const char *const ingot__tok_stat_names[16];
static void stats_print(const char *what, size_t bytes)
{
    printf("    stats %-13s", what);
    for (int i = 0; i < 16; i++)
        if (ingot__tok_stat_names[i])
            printf(" %s %.3f", ingot__tok_stat_names[i], (double)ingot__tok_stats[i] / bytes);
    printf("  (per byte)\n");
}
static void stats_reset(void) { memset(ingot__tok_stats, 0, sizeof ingot__tok_stats); }
#else
static void stats_print(const char *what, size_t bytes) { (void)what, (void)bytes; }
static void stats_reset(void) {}
#endif

/* Encodes every chunk (ids one after another, counts in cnt): the ids in all, SIZE_MAX on
 * failure. */
static size_t encode_allc(const ingot_tokenizer *t, ingot_tokenizer_cache *wc, const char *text,
                          const chunk *ch, size_t nch, int32_t *ids, size_t idcap, size_t *cnt,
                          void *scratch, size_t ss)
{
    size_t o = 0;
    for (size_t i = 0; i < nch; i++) {
        size_t m = 0;
        ingot_error e;
        if (ingot_tokenizer_encode_cached(t, wc, text + ch[i].off, ch[i].len, 0, ids + o,
                                          idcap - o, &m, scratch, ss, &e) != INGOT_OK) {
            char b[300];
            fprintf(stderr, "encode failed: %s\n", ingot_error_format(&e, b, sizeof b));
            return SIZE_MAX;
        }
        cnt[i] = m;
        o += m;
    }
    return o;
}

static size_t encode_all(const ingot_tokenizer *t, const char *text, const chunk *ch, size_t nch,
                         int32_t *ids, size_t idcap, size_t *cnt, void *scratch, size_t ss)
{
    return encode_allc(t, NULL, text, ch, nch, ids, idcap, cnt, scratch, ss);
}

/* The cached figure: the chunks in order through one word cache, cleared first (one pass over
 * the text, as a dataset job runs it), timed in the same repetition as the plain encode; the ids
 * must be the plain ones (pids[0..np)). Returns the seconds, or -1 (ids differ, or failure). */
static double cached_pass(const ingot_tokenizer *t, ingot_tokenizer_cache *wc, const char *text,
                          const chunk *ch, size_t nch, int32_t *ids, size_t idcap, size_t *cnt,
                          void *scratch, size_t ss, const int32_t *pids, size_t np)
{
    double t0 = now();
    ingot_tokenizer_cache_clear(wc);
    size_t o = encode_allc(t, wc, text, ch, nch, ids, idcap, cnt, scratch, ss);
    double dt = now() - t0;
    if (o != np || memcmp(ids, pids, np * sizeof *ids) != 0) {
        fprintf(stderr, "bench_tokenizer: cached ids differ from plain ones\n");
        return -1;
    }
    return dt;
}

/* The default figure: a tokenizer opened with the default options (its own word caches, empty)
 * encodes the chunks in order, one pass, with ingot_tokenizer_encode: what the first pass over a
 * text costs a user who sets nothing. The open is not timed; the ids must be the plain ones. */
static double fresh_pass(const char *path, const char *text, const chunk *ch, size_t nch,
                         int32_t *ids, size_t idcap, size_t *cnt, void *scratch, size_t ss,
                         const int32_t *pids, size_t np)
{
    ingot_tokenizer *t = NULL;
    if (ingot_tokenizer_open(path, NULL, &t, NULL) != INGOT_OK) {
        fprintf(stderr, "bench_tokenizer: cannot open %s\n", path);
        return -1;
    }
    double t0 = now();
    size_t o = encode_allc(t, NULL, text, ch, nch, ids, idcap, cnt, scratch, ss);
    double dt = now() - t0;
    ingot_tokenizer_close(t);
    if (o != np || memcmp(ids, pids, np * sizeof *ids) != 0) {
        fprintf(stderr, "bench_tokenizer: default-option ids differ from plain ones\n");
        return -1;
    }
    return dt;
}

/* Hits: of the words looked up (byte-level BPE: every pre-token of 2 bytes or more;
 * SentencePiece: every word of the escaped text but lone ASCII characters), and of the bytes:
 * the text's for byte-level BPE, the looked-up words' for SentencePiece (escaped: a space is
 * the 3 bytes of U+2581). */
static void cached_print(const char *what, const ingot_tokenizer_cache *wc, bool bpe,
                         size_t bytes, double plain_s, double cached_s)
{
    uint64_t words, wbytes, hits, hbytes;
    ingot_tokenizer_cache_stats(wc, &words, &wbytes, &hits, &hbytes);
    printf("  %-29s cached %7.1f MB/s vs plain %7.1f MB/s (x%.2f)  hits %.1f%% of words looked "
           "up, %.1f%% of %s\n",
           what, bytes / cached_s / 1e6, bytes / plain_s / 1e6, plain_s / cached_s,
           words ? 100.0 * hits / words : 0.0,
           bpe ? 100.0 * hbytes / bytes : wbytes ? 100.0 * hbytes / wbytes : 0.0,
           bpe ? "the text's bytes" : "their escaped bytes");
}

/* Opened this way a tokenizer keeps no word caches of its own, so that plain encodes measure the
 * encoder itself (an older library ignores the field). */
static const ingot_tokenizer_opts no_cache = {.word_cache_bytes = INGOT_TOKENIZER_NO_WORD_CACHE};

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* --ab: one build of the library, loaded with dlopen (its own copy of every table and symbol) */
typedef struct ab_lib {
    const char *path;
    ingot_status (*open)(const char *, const ingot_tokenizer_opts *, ingot_tokenizer **,
                         ingot_error *);
    ingot_status (*encode)(const ingot_tokenizer *, const char *, size_t, uint32_t, int32_t *,
                           size_t, size_t *, void *, size_t, ingot_error *);
    size_t (*scratch_size)(const ingot_tokenizer *, size_t);
    void (*close)(ingot_tokenizer *);
    /* --ab-cache: the word cache calls (NULL without it) */
    ingot_status (*cache_new)(const ingot_tokenizer *, size_t, ingot_tokenizer_cache **,
                              ingot_error *);
    void (*cache_clear)(ingot_tokenizer_cache *);
    void (*cache_free)(ingot_tokenizer_cache *);
    ingot_status (*encode_cached)(const ingot_tokenizer *, ingot_tokenizer_cache *, const char *,
                                  size_t, uint32_t, int32_t *, size_t, size_t *, void *, size_t,
                                  ingot_error *);
    ingot_tokenizer *t;
    ingot_tokenizer_cache *wc;
    void *scratch;
    size_t ss;
} ab_lib;

static int ab_load(ab_lib *L, const char *path, bool cached)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "bench_tokenizer: %s\n", dlerror());
        return -1;
    }
    L->path = path;
    /* object to function pointer through memcpy: dlsym's documented use, without the cast */
    void *p[4] = {dlsym(h, "ingot_tokenizer_open"), dlsym(h, "ingot_tokenizer_encode"),
                  dlsym(h, "ingot_tokenizer_scratch_size"), dlsym(h, "ingot_tokenizer_close")};
    if (!p[0] || !p[1] || !p[2] || !p[3]) {
        fprintf(stderr, "bench_tokenizer: %s lacks the tokenizer API\n", path);
        return -1;
    }
    memcpy(&L->open, &p[0], sizeof p[0]);
    memcpy(&L->encode, &p[1], sizeof p[1]);
    memcpy(&L->scratch_size, &p[2], sizeof p[2]);
    memcpy(&L->close, &p[3], sizeof p[3]);
    L->wc = NULL;
    L->encode_cached = NULL;
    if (!cached) return 0;
    void *q[4] = {dlsym(h, "ingot_tokenizer_cache_new"), dlsym(h, "ingot_tokenizer_cache_clear"),
                  dlsym(h, "ingot_tokenizer_cache_free"),
                  dlsym(h, "ingot_tokenizer_encode_cached")};
    if (!q[0] || !q[1] || !q[2] || !q[3]) {
        fprintf(stderr, "bench_tokenizer: %s lacks the word cache API\n", path);
        return -1;
    }
    memcpy(&L->cache_new, &q[0], sizeof q[0]);
    memcpy(&L->cache_clear, &q[1], sizeof q[1]);
    memcpy(&L->cache_free, &q[2], sizeof q[2]);
    memcpy(&L->encode_cached, &q[3], sizeof q[3]);
    return 0;
}

/* Encodes chunks [b, e) with L: CPU seconds, or -1 on failure. */
static double ab_block(ab_lib *L, const char *text, const chunk *ch, size_t b, size_t e,
                       int32_t *ids, size_t idcap)
{
    double t0 = now();
    for (size_t i = b; i < e; i++) {
        size_t m = 0;
        ingot_status st = L->wc ? L->encode_cached(L->t, L->wc, text + ch[i].off, ch[i].len, 0,
                                                   ids, idcap, &m, L->scratch, L->ss, NULL)
                                : L->encode(L->t, text + ch[i].off, ch[i].len, 0, ids, idcap, &m,
                                            L->scratch, L->ss, NULL);
        if (st != INGOT_OK) return -1;
    }
    return now() - t0;
}

static int ab_run(const char *old_so, const char *new_so, int rounds, size_t block,
                  size_t cache_kb, const char *text, size_t n, const chunk *ch, size_t nch,
                  size_t maxch, const char *const *names, const char *const *paths)
{
    ab_lib lib[2];
    if (ab_load(&lib[0], old_so, cache_kb) || ab_load(&lib[1], new_so, cache_kb)) return 1;
    size_t idcap = ingot_tokenizer_max_tokens(maxch);
    int32_t *ids[2] = {malloc(idcap * sizeof(int32_t)), malloc(idcap * sizeof(int32_t))};
    const char *only = getenv("BENCH_TOK_ONLY");
    printf("A/B: old %s, new %s, %d rounds, blocks of %zu chunks", old_so, new_so, rounds,
           block);
    if (cache_kb) printf(", each through its word cache of %zu KB, cleared every round", cache_kb);
    printf("\n");
    for (int k = 0; k < 3; k++) {
        if (only && atoi(only) != k) continue;
        for (int s = 0; s < 2; s++) {
            ingot_error e;
            if (lib[s].open(paths[k], &no_cache, &lib[s].t, &e) != INGOT_OK) {
                fprintf(stderr, "%s: %s cannot open %s\n", names[k], lib[s].path, paths[k]);
                return 1;
            }
            lib[s].ss = lib[s].scratch_size(lib[s].t, maxch);
            lib[s].scratch = malloc(lib[s].ss);
            if (cache_kb && lib[s].cache_new(lib[s].t, cache_kb * 1024, &lib[s].wc, &e)) {
                fprintf(stderr, "%s: %s: no word cache\n", names[k], lib[s].path);
                return 1;
            }
        }
        size_t differ = 0;
        for (size_t i = 0; i < nch; i++) { /* the same ids first, or the timing means nothing */
            size_t m[2] = {0, 0};
            for (int s = 0; s < 2; s++)
                if (lib[s].wc)
                    lib[s].encode_cached(lib[s].t, lib[s].wc, text + ch[i].off, ch[i].len, 0,
                                         ids[s], idcap, &m[s], lib[s].scratch, lib[s].ss, NULL);
                else
                    lib[s].encode(lib[s].t, text + ch[i].off, ch[i].len, 0, ids[s], idcap, &m[s],
                                  lib[s].scratch, lib[s].ss, NULL);
            differ += m[0] != m[1] || memcmp(ids[0], ids[1], m[0] * sizeof(int32_t)) != 0;
        }
        if (differ) {
            printf("%-31s ids DIFFER on %zu of %zu chunks\n", names[k], differ, nch);
            return 1;
        }
        double tot[2] = {0, 0}, ratio[100];
        for (int r = 0; r < rounds; r++) {
            double tr[2] = {0, 0};
            for (int s = 0; s < 2 && cache_kb; s++) { /* one pass over the text, as a job */
                double t0 = now();
                lib[s].cache_clear(lib[s].wc);
                tr[s] += now() - t0;
            }
            for (size_t b = 0; b < nch; b += block) {
                size_t e = b + block < nch ? b + block : nch;
                int first = (int)((b / block + (size_t)r) & 1);
                for (int q = 0; q < 2; q++) {
                    int s = q ? !first : first;
                    double d = ab_block(&lib[s], text, ch, b, e, ids[s], idcap);
                    if (d < 0) return 1;
                    tr[s] += d;
                }
            }
            tot[0] += tr[0];
            tot[1] += tr[1];
            ratio[r] = tr[0] / tr[1];
        }
        qsort(ratio, (size_t)rounds, sizeof ratio[0], cmp_d);
        printf("%-31s old %6.1f MB/s  new %6.1f MB/s  new/old %.3f (rounds: median %.3f, "
               "%.3f-%.3f)  same ids on %zu chunks\n",
               names[k], n * (double)rounds / tot[0] / 1e6, n * (double)rounds / tot[1] / 1e6,
               tot[0] / tot[1], ratio[rounds / 2], ratio[0], ratio[rounds - 1], nch);
        for (int s = 0; s < 2; s++) {
            if (lib[s].wc) lib[s].cache_free(lib[s].wc);
            lib[s].close(lib[s].t);
            free(lib[s].scratch);
        }
    }
    free(ids[0]);
    free(ids[1]);
    return 0;
}

/* --text FILE: the file's chunks through each tokenizer, plain and cached in turn every
 * repetition (medians), with the cache's hits: text that does not repeat itself as the corpus
 * does (its lines are drawn again and again from small pools). */
static int text_run(int reps, const char *path, size_t cache_kb, const char *const *names,
                    const char *const *paths)
{
    size_t n = 0;
    char *text = slurp(path, &n);
    if (!text || !n) {
        fprintf(stderr, "bench_tokenizer: cannot read %s\n", path);
        return 1;
    }
    size_t nch, maxch = 0, idcap = 0;
    chunk *ch = make_chunks(text, n, &nch);
    for (size_t i = 0; i < nch; i++) {
        if (ch[i].len > maxch) maxch = ch[i].len;
        idcap += ingot_tokenizer_max_tokens(ch[i].len);
    }
    printf("text: %s, %zu bytes, %zu chunks, word cache of %zu KB\n", path, n, nch, cache_kb);
    const char *only = getenv("BENCH_TOK_ONLY");
    for (int k = 0; k < 3; k++) {
        if (only && atoi(only) != k) continue;
        ingot_tokenizer *t = NULL;
        ingot_tokenizer_cache *wc = NULL;
        ingot_error e;
        if (ingot_tokenizer_open(paths[k], &no_cache, &t, &e) != INGOT_OK ||
            ingot_tokenizer_cache_new(t, cache_kb * 1024, &wc, &e) != INGOT_OK) {
            char b[300];
            fprintf(stderr, "%s: %s\n", paths[k], ingot_error_format(&e, b, sizeof b));
            return 1;
        }
        size_t ss = ingot_tokenizer_scratch_size(t, maxch), np = 0;
        void *scratch = malloc(ss);
        int32_t *ids = malloc(idcap * sizeof *ids), *cids = malloc(idcap * sizeof *ids);
        size_t *cnt = malloc(nch * sizeof *cnt);
        double tp[100], tc[100], tf[100];
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            np = encode_all(t, text, ch, nch, ids, idcap, cnt, scratch, ss);
            if (np == SIZE_MAX) return 1;
            tp[r] = now() - t0;
            tc[r] = cached_pass(t, wc, text, ch, nch, cids, idcap, cnt, scratch, ss, ids, np);
            if (tc[r] < 0) return 1;
            tf[r] = fresh_pass(paths[k], text, ch, nch, cids, idcap, cnt, scratch, ss, ids, np);
            if (tf[r] < 0) return 1;
        }
        qsort(tp, (size_t)reps, sizeof tp[0], cmp_d);
        qsort(tc, (size_t)reps, sizeof tc[0], cmp_d);
        qsort(tf, (size_t)reps, sizeof tf[0], cmp_d);
        printf("%-31s encode %7.1f MB/s (%zu ids)\n", names[k], n / tp[reps / 2] / 1e6, np);
        cached_print("same ids, through the cache", wc, !strcmp(ingot_tokenizer_kind(t), "bpe"),
                     n, tp[reps / 2], tc[reps / 2]);
        printf("  %-29s encode %7.1f MB/s vs plain %7.1f MB/s (x%.2f)\n",
               "default (own caches)", n / tf[reps / 2] / 1e6, n / tp[reps / 2] / 1e6,
               tp[reps / 2] / tf[reps / 2]);
        ingot_tokenizer_cache_free(wc);
        ingot_tokenizer_close(t);
        free(scratch);
        free(ids);
        free(cids);
        free(cnt);
    }
    free(ch);
    free(text);
    return 0;
}

/* --mix: see the top of the file. text/ch/nch: the corpus; ptext/by_kind/pch/pnch: the pools. */
static int mix_run(int reps, const char *text, size_t n, const chunk *ch, size_t nch,
                   char *const *ptext, const size_t *by_kind, chunk *const *pch,
                   const size_t *pnch, size_t maxch, const char *const *names,
                   const char *const *paths)
{
    char *cat = malloc(n + 1); /* the pools one after another, their chunks as they were */
    chunk *cch = malloc((pnch[0] + pnch[1] + pnch[2]) * sizeof *cch);
    chunk *ich = malloc((pnch[0] + pnch[1] + pnch[2]) * sizeof *ich);
    size_t o = 0, ncat = 0, base[3];
    for (int q = 0; q < 3; q++) {
        memcpy(cat + o, ptext[q], by_kind[q]);
        base[q] = o;
        for (size_t i = 0; i < pnch[q]; i++)
            cch[ncat++] = (chunk){o + pch[q][i].off, pch[q][i].len};
        o += by_kind[q];
    }
    /* the pools' chunks interleaved in proportion: next from the pool least far through */
    size_t at[3] = {0, 0, 0}, nint = 0;
    while (nint < ncat) {
        int b = -1;
        for (int q = 0; q < 3; q++)
            if (at[q] < pnch[q] &&
                (b < 0 || (double)at[q] / pnch[q] < (double)at[b] / pnch[b]))
                b = q;
        ich[nint++] = (chunk){base[b] + pch[b][at[b]].off, pch[b][at[b]].len};
        at[b]++;
    }
    const char *only = getenv("BENCH_TOK_ONLY");
    static const char *const what[4] = {"lines interleaved (the corpus)", "pools one after another",
                                        "pool chunks interleaved",
                                        "pools in turn, 2 instances"};
    for (int k = 0; k < 3; k++) {
        if (only && atoi(only) != k) continue;
        ingot_tokenizer *t[2] = {NULL, NULL};
        for (int s = 0; s < 2; s++)
            if (ingot_tokenizer_open(paths[k], &no_cache, &t[s], NULL) != INGOT_OK) {
                fprintf(stderr, "%s: cannot open %s\n", names[k], paths[k]);
                return 1;
            }
        size_t ss = ingot_tokenizer_scratch_size(t[0], maxch), idcap = 0;
        size_t ncnt = nch > ncat ? nch : ncat;
        for (size_t i = 0; i < nch; i++) idcap += ingot_tokenizer_max_tokens(ch[i].len);
        for (size_t i = 0; i < ncat; i++) idcap += ingot_tokenizer_max_tokens(cch[i].len);
        void *scratch = malloc(ss);
        int32_t *ids = malloc(idcap * sizeof *ids);
        size_t *cnt = malloc(ncnt * sizeof *cnt), nids[4] = {0, 0, 0, 0};
        double tv[4][100];
        for (int r = 0; r < reps; r++) {
            for (int v = 0; v < 4; v++) {
                double t0 = now();
                if (v == 0) nids[v] = encode_all(t[0], text, ch, nch, ids, idcap, cnt, scratch, ss);
                else if (v == 1)
                    nids[v] = encode_all(t[0], cat, cch, ncat, ids, idcap, cnt, scratch, ss);
                else if (v == 2)
                    nids[v] = encode_all(t[0], cat, ich, nint, ids, idcap, cnt, scratch, ss);
                else
                    for (size_t i = 0, m = nids[v] = 0; i < ncat && m != SIZE_MAX; i++) {
                        m = encode_all(t[i & 1], cat, cch + i, 1, ids, idcap, cnt, scratch, ss);
                        nids[v] = m == SIZE_MAX ? m : nids[v] + m;
                    }
                tv[v][r] = now() - t0;
                if (nids[v] == SIZE_MAX) return 1;
            }
        }
        printf("%s, mixing (median of %d):\n", names[k], reps);
        for (int v = 0; v < 4; v++) {
            qsort(tv[v], (size_t)reps, sizeof tv[v][0], cmp_d);
            printf("  %-31s encode %7.1f MB/s (%zu ids)\n", what[v], n / tv[v][reps / 2] / 1e6,
                   nids[v]);
        }
        free(scratch);
        free(ids);
        free(cnt);
        ingot_tokenizer_close(t[0]);
        ingot_tokenizer_close(t[1]);
    }
    free(cat);
    free(cch);
    free(ich);
    return 0;
}

int main(int argc, char **argv)
{
    double mb = 4;
    int reps = 5, rounds = 7;
    size_t block = 16;
    bool mix = false, ab_cache = false;
    const char *text_path = NULL;
    size_t witers = 1000;
    size_t cache_kb = 2048; /* the word cache's budget (KB) for the cached figures */
    const char *ab_old = NULL, *ab_new = NULL;
    const char *out = BENCH_DEFAULT_DIR "/bench_tokenizer_corpus.txt";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mb") && i + 1 < argc) mb = atof(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--warm") && i + 1 < argc) witers = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--block") && i + 1 < argc) block = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--mix")) mix = true;
        else if (!strcmp(argv[i], "--ab-cache")) ab_cache = true;
        else if (!strcmp(argv[i], "--text") && i + 1 < argc) text_path = argv[++i];
        else if (!strcmp(argv[i], "--cache") && i + 1 < argc) cache_kb = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--ab") && i + 2 < argc) {
            ab_old = argv[++i];
            ab_new = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_tokenizer [--mb N] [--reps N] [--warm N] [--cache KB] "
                            "[--out FILE]\n"
                            "       bench_tokenizer --ab OLD.so NEW.so [--rounds N] [--block N] "
                            "[--mb N] [--ab-cache [--cache KB]]\n"
                            "       bench_tokenizer --mix [--reps N] [--mb N]\n"
                            "       bench_tokenizer --text FILE [--reps N] [--cache KB]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 99) reps = 5;
    if (rounds < 1 || rounds > 99) rounds = 7;
    if (block < 1) block = 16;
    printf("command:");
    for (int i = 0; i < argc; i++) printf(" %s", argv[i]);
    printf("\n");
    static const char *const names[3] = {"gpt-2 (byte-level BPE, GGUF)",
                                         "llama-3 (BPE, tokenizer.json)",
                                         "llama-2 (SentencePiece, GGUF)"};
    static const char *const paths[3] = {FIX "/tokenizers/llama.cpp/ggml-vocab-gpt-2.gguf",
                                         FIX "/tokenizers/llama3/tokenizer.json",
                                         FIX "/tokenizers/llama.cpp/ggml-vocab-llama-spm.gguf"};
    if (text_path) return text_run(reps, text_path, cache_kb, names, paths);
    pool prose = {0}, code = {0}, multi = {0};
    add_dir(&prose, INGOT_SOURCE_DIR "/../shared", ".md"); /* read-only: the corpus stays put */
    add_dir(&prose, INGOT_SOURCE_DIR "/../shared/formats", ".md");
    add_dir(&code, INGOT_SOURCE_DIR "/src/core", ".c");
    add_samples(&multi);
    if (!prose.n || !code.n || !multi.n) {
        fprintf(stderr, "bench_tokenizer: corpus sources missing\n");
        return 1;
    }
    size_t target = (size_t)(mb * 1e6), n = 0, cap = target + 65536;
    char *text = malloc(cap);
    char *ptext[3] = {malloc(cap), malloc(cap), malloc(cap)}; /* each pool's lines, in order */
    size_t pos[3] = {0, 0, 0};
    uint64_t lcg = 0x2545F4914F6CDD1Dull;
    size_t by_kind[3] = {0, 0, 0};
    while (n < target) {
        lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(lcg >> 33) % 100;
        int k = r < 40 ? 0 : r < 75 ? 1 : 2;
        pool *p = k == 0 ? &prose : k == 1 ? &code : &multi;
        for (int run = 0; run < 8 && n < target; run++) { /* runs of 8 lines keep some context */
            size_t i = pos[k]++ % p->n;
            memcpy(text + n, p->line[i], p->len[i]);
            memcpy(ptext[k] + by_kind[k], p->line[i], p->len[i]);
            n += p->len[i];
            by_kind[k] += p->len[i];
        }
    }
    FILE *f = fopen(out, "wb");
    if (!f || fwrite(text, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "bench_tokenizer: cannot write %s\n", out);
        return 1;
    }
    printf("corpus: %zu bytes (prose %zu, code %zu, multilingual %zu) -> %s\n", n, by_kind[0],
           by_kind[1], by_kind[2], out);
    size_t nch, pnch[3];
    chunk *ch = make_chunks(text, n, &nch);
    chunk *pch[3];
    for (int k = 0; k < 3; k++) pch[k] = make_chunks(ptext[k], by_kind[k], &pnch[k]);
    size_t maxch = 0;
    for (size_t i = 0; i < nch; i++)
        if (ch[i].len > maxch) maxch = ch[i].len;
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < pnch[k]; i++)
            if (pch[k][i].len > maxch) maxch = pch[k][i].len;
    if (ab_old)
        return ab_run(ab_old, ab_new, rounds, block, ab_cache ? cache_kb : 0, text, n, ch, nch,
                      maxch, names, paths);
    if (mix)
        return mix_run(reps, text, n, ch, nch, ptext, by_kind, pch, pnch, maxch, names, paths);
    const char *only = getenv("BENCH_TOK_ONLY"); /* "0", "1" or "2": one case (profiling) */
    for (int k = 0; k < 3; k++) {
        if (only && atoi(only) != k) continue;
        ingot_tokenizer *t = NULL;
        ingot_error e;
        if (ingot_tokenizer_open(paths[k], &no_cache, &t, &e) != INGOT_OK) {
            char b[300];
            fprintf(stderr, "%s: %s\n", paths[k], ingot_error_format(&e, b, sizeof b));
            return 1;
        }
        size_t ss = ingot_tokenizer_scratch_size(t, maxch);
        void *scratch = malloc(ss);
        size_t idcap = 0;
        for (size_t i = 0; i < nch; i++) idcap += ingot_tokenizer_max_tokens(ch[i].len);
        size_t ncnt = nch;
        for (int q = 0; q < 3; q++) {
            size_t c = 0;
            for (size_t i = 0; i < pnch[q]; i++) c += ingot_tokenizer_max_tokens(pch[q][i].len);
            if (c > idcap) idcap = c;
            if (pnch[q] > ncnt) ncnt = pnch[q];
        }
        int32_t *ids = malloc(idcap * sizeof *ids), *cids = malloc(idcap * sizeof *ids);
        size_t *cnt = malloc(ncnt * sizeof *cnt);
        char *back = malloc(n + 16);
        double te[100], td[100], tc[100], tf[100];
        size_t total_ids = 0, dec_bytes = 0;
        ingot_tokenizer_cache *wc = NULL;
        if (ingot_tokenizer_cache_new(t, cache_kb * 1024, &wc, &e) != INGOT_OK) {
            char b[300];
            fprintf(stderr, "cache: %s\n", ingot_error_format(&e, b, sizeof b));
            return 1;
        }
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            if (r == 0) stats_reset();
            size_t o = encode_all(t, text, ch, nch, ids, idcap, cnt, scratch, ss);
            if (o == SIZE_MAX) return 1;
            te[r] = now() - t0;
            if (r == 0) stats_print("all", n);
            total_ids = o;
            tc[r] = cached_pass(t, wc, text, ch, nch, cids, idcap, cnt, scratch, ss, ids, o);
            if (tc[r] < 0) return 1;
            tf[r] = fresh_pass(paths[k], text, ch, nch, cids, idcap, cnt, scratch, ss, ids, o);
            if (tf[r] < 0) return 1;
            t0 = now();
            size_t bo = 0, p = 0;
            for (size_t i = 0; i < nch; i++) {
                size_t l = 0;
                ingot_tokenizer_decode(t, ids + p, cnt[i], 0, back + bo, n + 16 - bo, &l, NULL);
                p += cnt[i];
                bo += l;
            }
            td[r] = now() - t0;
            dec_bytes = bo;
        }
        /* warm: the first chunk again and again (tables in cache): the per-word cost alone */
        double tw[100] = {0};
        size_t wn = 0;
        for (int r = 0; r < reps && witers; r++) {
            double t0 = now();
            for (size_t it = 0; it < witers; it++)
                ingot_tokenizer_encode(t, text + ch[0].off, ch[0].len, 0, ids, idcap, &wn,
                                       scratch, ss, NULL);
            tw[r] = now() - t0;
        }
        qsort(tw, (size_t)reps, sizeof tw[0], cmp_d);
        qsort(te, (size_t)reps, sizeof te[0], cmp_d);
        qsort(td, (size_t)reps, sizeof td[0], cmp_d);
        qsort(tc, (size_t)reps, sizeof tc[0], cmp_d);
        qsort(tf, (size_t)reps, sizeof tf[0], cmp_d);
        bool same = dec_bytes == n && memcmp(back, text, n) == 0;
        printf("%-31s encode %7.1f MB/s (%zu ids, %.2f bytes/id)  decode %7.1f MB/s  "
               "round trip %s  warm chunk %.1f MB/s\n",
               names[k], n / te[reps / 2] / 1e6, total_ids, (double)n / total_ids,
               dec_bytes / td[reps / 2] / 1e6, same ? "exact" : "DIFFERS",
               witers ? (double)ch[0].len * witers / tw[reps / 2] / 1e6 : 0.0);
        char what[64];
        snprintf(what, sizeof what, "all, word cache of %zu KB", cache_kb);
        bool bpe = !strcmp(ingot_tokenizer_kind(t), "bpe");
        cached_print(what, wc, bpe, n, te[reps / 2], tc[reps / 2]);
        printf("  %-29s encode %7.1f MB/s vs plain %7.1f MB/s (x%.2f)\n",
               "all, default (own caches)", n / tf[reps / 2] / 1e6, n / te[reps / 2] / 1e6,
               te[reps / 2] / tf[reps / 2]);
        /* each pool on its own (its lines in the order drawn, the same chunking): which text
         * is slow */
        static const char *const pool_names[3] = {"prose", "code", "multilingual"};
        for (int q = 0; q < 3; q++) {
            double tp[100], tpc[100];
            size_t pids = 0;
            for (int r = 0; r < reps; r++) {
                if (r == 0) stats_reset();
                double t0 = now();
                pids = encode_all(t, ptext[q], pch[q], pnch[q], ids, idcap, cnt, scratch, ss);
                if (pids == SIZE_MAX) return 1;
                tp[r] = now() - t0;
                if (r == 0) stats_print(pool_names[q], by_kind[q]);
                tpc[r] = cached_pass(t, wc, ptext[q], pch[q], pnch[q], cids, idcap, cnt, scratch,
                                     ss, ids, pids);
                if (tpc[r] < 0) return 1;
            }
            qsort(tp, (size_t)reps, sizeof tp[0], cmp_d);
            qsort(tpc, (size_t)reps, sizeof tpc[0], cmp_d);
            printf("  %-29s encode %7.1f MB/s (%zu ids, %.2f bytes/id, %zu bytes)\n",
                   pool_names[q], by_kind[q] / tp[reps / 2] / 1e6, pids,
                   (double)by_kind[q] / pids, by_kind[q]);
            cached_print(pool_names[q], wc, bpe, by_kind[q], tp[reps / 2], tpc[reps / 2]);
        }
        ingot_tokenizer_cache_free(wc);
        free(scratch);
        free(ids);
        free(cids);
        free(cnt);
        free(back);
        ingot_tokenizer_close(t);
    }
    return 0;
}
