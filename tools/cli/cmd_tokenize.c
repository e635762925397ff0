/* cmd_tokenize.c - `ingot tokenize SOURCE [--no-bos] [--parse-special] (--text STR | --file F)`
 * prints the token ids space-separated on one line; `ingot detokenize SOURCE --tokens 1,2,3
 * [--special]` prints the decoded text, byte for byte (no newline added). SOURCE: a GGUF model or
 * vocab file, a tokenizer.json, a llama2.c tokenizer.bin, or a folder holding one of them, or
 * encoder.json + vocab.bpe / vocab.json + merges.txt. Exit 0 ok, 1 rejected, 2 usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ingot/ingot.h"

static int usage(const char *why)
{
    if (why) fprintf(stderr, "ingot: %s\n", why);
    fprintf(stderr, "usage: ingot tokenize SOURCE [--no-bos] [--parse-special] "
                    "(--text STR | --file F)\n"
                    "       ingot detokenize SOURCE --tokens ID,ID,... [--special]\n"
                    "SOURCE: a GGUF file, tokenizer.json, llama2.c tokenizer.bin, encoder.json or "
                    "vocab.json (with vocab.bpe / merges.txt beside it), or a folder of one.\n"
                    "tokenize adds the BOS (and EOS) the vocabulary asks for unless --no-bos; "
                    "--parse-special turns\ncontrol-token text (<s>, <|begin_of_text|>) into "
                    "those tokens. detokenize prints the bytes as they\ndecode (no newline "
                    "added); control tokens print only with --special.\n");
    return 2;
}

static int fail(const char *what, const ingot_error *e)
{
    char buf[400];
    fprintf(stderr, "ingot: %s: %s\n", what, ingot_error_format(e, buf, sizeof buf));
    return 1;
}

static char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *p = malloc(cap);
    while (p) {
        size_t r = fread(p + len, 1, cap - len, f);
        len += r;
        if (len < cap) break;
        char *q = realloc(p, cap * 2);
        if (!q) {
            free(p);
            p = NULL;
            break;
        }
        p = q;
        cap *= 2;
    }
    if (p && ferror(f)) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *n = len;
    return p;
}

static int open_source(const char *src, ingot_tokenizer **t)
{
    ingot_error e;
    if (ingot_tokenizer_open(src, NULL, t, &e) != INGOT_OK) return fail(src, &e);
    return 0;
}

int ingot_cli_tokenize(int argc, char **argv)
{
    const char *src = NULL, *text = NULL, *file = NULL;
    bool no_bos = false, parse = false;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--no-bos")) no_bos = true;
        else if (!strcmp(argv[i], "--parse-special")) parse = true;
        else if (!strcmp(argv[i], "--text") && i + 1 < argc) text = argv[++i];
        else if (!strcmp(argv[i], "--file") && i + 1 < argc) file = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1]) return usage("tokenize: unknown option or "
                                                               "missing value");
        else if (!src) src = argv[i];
        else return usage("tokenize: more than one SOURCE");
    }
    if (!src || (!text) == (!file)) return usage("tokenize: need SOURCE and one of --text, --file");
    size_t len;
    char *owned = NULL;
    if (file) {
        owned = read_file(file, &len);
        if (!owned) {
            fprintf(stderr, "ingot: IO: cannot read '%s': %s\n", file, strerror(errno));
            return 1;
        }
        text = owned;
    } else {
        len = strlen(text);
    }
    ingot_tokenizer *t = NULL;
    int rc = open_source(src, &t);
    if (rc) {
        free(owned);
        return rc;
    }
    uint32_t flags = (no_bos ? 0 : INGOT_ENCODE_ADD_SPECIAL) |
                     (parse ? INGOT_ENCODE_PARSE_SPECIAL : 0);
    size_t cap = ingot_tokenizer_max_tokens(len), n = 0;
    size_t ss = ingot_tokenizer_scratch_size(t, len);
    int32_t *ids = malloc(cap * sizeof *ids);
    void *scratch = malloc(ss ? ss : 1);
    ingot_error e;
    if (!ids || !scratch) {
        fprintf(stderr, "ingot: out of memory for %zu bytes of text\n", len);
        rc = 1;
    } else if (ingot_tokenizer_encode(t, text, len, flags, ids, cap, &n, scratch, ss, &e) !=
               INGOT_OK) {
        rc = fail("tokenize", &e);
    } else {
        for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
        printf("\n");
    }
    free(ids);
    free(scratch);
    free(owned);
    ingot_tokenizer_close(t);
    return rc;
}

int ingot_cli_detokenize(int argc, char **argv)
{
    const char *src = NULL, *list = NULL;
    bool special = false;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--tokens") && i + 1 < argc) list = argv[++i];
        else if (!strcmp(argv[i], "--special")) special = true;
        else if (argv[i][0] == '-' && argv[i][1]) return usage("detokenize: unknown option or "
                                                               "missing value");
        else if (!src) src = argv[i];
        else return usage("detokenize: more than one SOURCE");
    }
    if (!src || !list) return usage("detokenize: need SOURCE and --tokens");
    size_t cap = strlen(list) / 2 + 1, n = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) return 1;
    for (const char *p = list; *p;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < INT32_MIN || v > INT32_MAX || (*end && *end != ',') ||
            n == cap) {
            free(ids);
            return usage("detokenize: --tokens takes comma-separated integers");
        }
        ids[n++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    ingot_tokenizer *t = NULL;
    int rc = open_source(src, &t);
    if (rc) {
        free(ids);
        return rc;
    }
    ingot_error e;
    size_t len = 0;
    uint32_t flags = special ? INGOT_DECODE_SPECIAL : 0;
    char *out = NULL;
    if (ingot_tokenizer_decode(t, ids, n, flags, NULL, 0, &len, &e) != INGOT_OK) {
        rc = fail("detokenize", &e);
    } else if (!(out = malloc(len ? len : 1))) {
        fprintf(stderr, "ingot: out of memory for %zu bytes\n", len);
        rc = 1;
    } else if (ingot_tokenizer_decode(t, ids, n, flags, out, len, &len, &e) != INGOT_OK) {
        rc = fail("detokenize", &e);
    } else {
        fwrite(out, 1, len, stdout);
    }
    free(out);
    free(ids);
    ingot_tokenizer_close(t);
    return rc;
}
