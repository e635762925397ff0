/*
 * replay_main.c - a plain main() for the fuzz targets, used where libFuzzer is not available (gcc,
 * valgrind, the ordinary test suite): runs LLVMFuzzerTestOneInput once on every file given, and
 * on every regular file of every directory given (sorted, not recursive). Each input is copied
 * into a buffer of exactly its size, so sanitizers see reads past its end.
 *
 *   replay_fuzz_open_native fuzz/corpus/fuzz_open_native crash-1234 --optional tests/corpus/bad
 *
 * Paths after --optional may be missing or empty; the others must exist and together hold at
 * least one input. Exit status: 0 when every input ran (a failing check aborts), 1 on a usage or
 * I/O error, 2 when the required paths held no input (an empty corpus is a configuration error).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        perror(path);
        return -1;
    }
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0 || sb.st_size < 0) {
        perror(path);
        fclose(fp);
        return -1;
    }
    size_t n = (size_t)sb.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf || fread(buf, 1, n, fp) != n) {
        fprintf(stderr, "%s: read failed\n", path);
        free(buf);
        fclose(fp);
        return -1;
    }
    fclose(fp);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of dir; returns how many ran, or -1. */
static long run_dir(const char *dir)
{
    DIR *dp = opendir(dir);
    if (!dp) {
        perror(dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        if (de->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **p = realloc(names, cap * sizeof *names);
            if (!p) abort();
            names = p;
        }
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n]) abort();
        snprintf(names[n], len, "%s/%s", dir, de->d_name);
        n++;
    }
    closedir(dp);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    long ran = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        if (stat(names[i], &sb) == 0 && S_ISREG(sb.st_mode)) {
            if (run_file(names[i]) < 0) ran = -1;
            else if (ran >= 0) ran++;
        }
        free(names[i]);
    }
    free(names);
    return ran;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR... [--optional FILE|DIR...]\n", argv[0]);
        return 1;
    }
    long required = 0, total = 0;
    int optional = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--optional") == 0) {
            optional = 1;
            continue;
        }
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            if (optional) {
                printf("%s: absent, skipped\n", argv[i]);
                continue;
            }
            perror(argv[i]);
            return 1;
        }
        long r = S_ISDIR(sb.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
        if (r < 0) return 1;
        printf("%s: %ld input%s\n", argv[i], r, r == 1 ? "" : "s");
        total += r;
        if (!optional) required += r;
    }
    printf("replayed %ld inputs\n", total);
    return required ? 0 : 2;
}
