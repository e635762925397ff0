/* cli.h - commands of the ingot CLI that live in their own files (ingot.c dispatches), and the
 * helpers of ingot.c they share. */
#ifndef INGOT_CLI_H
#define INGOT_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ingot/ingot.h"

#define EXIT_REJECT 1
#define EXIT_USAGE 2

/* `ingot bench ...` (cmd_bench.c). argv[0] is the first argument after "bench". Exit codes as
 * every command: 0 ok, 1 failure, 2 usage. */
int ingot_cli_bench(int argc, char **argv);
/* `ingot run MODEL --input X.npy -o Y.npy` (cmd_run.c). */
int ingot_cli_run(int argc, char **argv);
/* `ingot convert IN OUT ...` and `ingot meta FILE ...` (cmd_convert.c). */
int ingot_cli_convert(int argc, char **argv);
int ingot_cli_meta(int argc, char **argv);
/* `ingot dump`, `diff`, `hash`, `summary` (cmd_inspect.c). */
int ingot_cli_dump(int argc, char **argv);
int ingot_cli_diff(int argc, char **argv);
int ingot_cli_hash(int argc, char **argv);
int ingot_cli_summary(int argc, char **argv);

#ifdef INGOT_CLI_HELPERS /* helpers of ingot.c, for the files that define this first */
extern const char *prog;
/* The command being run; --json given (errors are then also JSON on stdout); --quiet given. */
extern const char *cli_cmd;
extern bool cli_json, cli_quiet;
/* Prints "ingot: <why>" (when fmt is not NULL) and the usage on stderr; returns EXIT_USAGE. */
int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "ingot: WHAT: CODE: message ..." on stderr; returns EXIT_REJECT. */
int fail_err(const ingot_error *e, const char *what);
int fail_st(ingot_status st, const char *what);
int open_file(const char *path, ingot_file **f);
/* "NOT_FOUND: no tensor named ..." unless found. */
int find_tensor(ingot_file *f, const char *path, const char *name, ingot_tensor_info *t);
/* "4x3", "[]" for a scalar. */
void shape_str(const ingot_tensor_info *t, char *buf, size_t cap);
/* JSON string (invalid UTF-8 as U+FFFD), JSON number (NaN/Infinity as strings). */
void json_str(FILE *o, const char *s, size_t n);
void json_double(FILE *o, double v, bool is_f32);
/* A metadata value: JSON, or text with arrays cut after `limit` elements. */
void print_meta_value(FILE *o, const ingot_file *f, const ingot_meta_info *m, bool json,
                      uint64_t limit);
bool parse_u64(const char *s, uint64_t *out);

/* Progress bar on stderr: only on a terminal, only once work has lasted about a second. */
typedef struct {
    const char *label;
    double start, last;
    bool tty, shown;
} progress;
void progress_init(progress *p, const char *label);
void progress_update(void *ctx, uint64_t done, uint64_t total);
void progress_end(progress *p);

/* One command's arguments: options (a flag, or one taking a value) anywhere, then exactly npos
 * positional arguments. Returns 0, or the usage exit code after printing why. */
typedef struct {
    const char *name;
    bool takes_value;
    const char *value; /* out: the value, or the name itself for a flag; NULL if absent */
} cli_opt;
int parse_args(const char *cmd, int argc, char **argv, cli_opt *opts, const char **pos, int npos,
               const char *need);
#endif

/* `ingot eval MODEL --tokens ... -o logits.npy` and `ingot generate MODEL ...` (cmd_lm.c). */
int ingot_cli_eval(int argc, char **argv);
int ingot_cli_generate(int argc, char **argv);
/* `ingot bench generate MODEL` (cmd_lm.c): prefill and decode tokens/s against the compute and
 * memory bounds measured in the same run, and time to first token. */
int ingot_cli_bench_generate(int argc, char **argv);
/* `ingot tokenize SOURCE ...` and `ingot detokenize SOURCE --tokens ...` (cmd_tokenize.c). */
int ingot_cli_tokenize(int argc, char **argv);
int ingot_cli_detokenize(int argc, char **argv);

#endif
