/* cli.h - commands of the ingot CLI that live in their own files (ingot.c dispatches). */
#ifndef INGOT_CLI_H
#define INGOT_CLI_H

/* `ingot bench ...` (cmd_bench.c). argv[0] is the first argument after "bench". Exit codes as
 * every command: 0 ok, 1 failure, 2 usage. */
int ingot_cli_bench(int argc, char **argv);
/* `ingot run MODEL --input X.npy -o Y.npy` (cmd_run.c). */
int ingot_cli_run(int argc, char **argv);

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
