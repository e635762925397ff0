/*
 * help.c - the one text of every command's help: `ingot help CMD` and `ingot CMD --help` print
 * it, a usage error prints its synopsis, and the build generates the man pages (`ingot help
 * --man DIR`) and the bash and zsh completions (`ingot help --completion bash|zsh`) from it.
 * Also the "did you mean" suggestions (edit distance) for commands, options and names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "help.h"

typedef struct {
    const char *name;
    const char *synopsis; /* lines after "ingot ", several joined by '\n' */
    const char *summary;  /* one line */
    const char *options;  /* "--opt ARG\tdescription\n" lines */
    const char *details;  /* paragraphs; lines of at most 96 columns */
} cmd_help;

static const cmd_help cmds[] = {
    {"info", "info [--json] FILE...", "show a model file's format, metadata and tensors",
     "--json\tone JSON object per file (schema 2: metadata values as {\"type\", \"value\"})\n",
     "Shapes are listed outermost dimension first (NumPy and PyTorch order); GGUF stores them\n"
     "innermost first, so a GGUF tensor of ne = [4096, 11008] shows as 11008x4096.\n"
     "--json prints {\"schema\": 2, \"path\", \"format\", \"version\", \"size\", \"alignment\",\n"
     "\"metadata\": {KEY: {\"type\": \"u32\", \"value\": 8}}, \"tensors\": [...], \"skipped\": "
     "[...]};\n"
     "array types end in [], integers beyond 2^53 are strings, f64 is printed "
     "shortest-round-trip,\n"
     "bytes as base64, NaN and infinities as the strings \"NaN\", \"Infinity\", \"-Infinity\".\n"
     "\"skipped\" ({name, reason, offset}) lists the parts not opened as tensors: .npz string\n"
     "members, PyTorch objects outside the allow-list (inert placeholders, never run).\n"
     "With several files, one object per line."},
    {"verify", "verify [--threads N] [--json] FILE...", "run every check a file's format allows",
     "--threads N\tthreads checking tensor data (default: up to 8)\n"
     "--json\tone JSON object per file\n",
     "Checks what the format stores and says which: CRC-32C of the header and of every tensor\n"
     "(.ingot; the header only for .mag), the zip CRC-32 of each member (.npz, PyTorch zip "
     "files).\n"
     "safetensors, GGUF, .npy, Burnpack, .tenzor, RMD1 and legacy PyTorch files store no "
     "checksums:\n"
     "there 'structure valid; this format stores no checksums' (exit 0) means well-formed and\n"
     "readable, not intact. Always: padding the format fixes, BOOL values 0 or 1 (else BAD_VALUE,\n"
     "exit 1).\n"
     "--json: {\"path\", \"format\", \"version\", \"ok\", \"checked\": [structure, header_crc32c,\n"
     "tensor_crc32c, zip_crc32, readable, padding, bool_values], \"tensors\", "
     "\"tensors_with_checksum\",\n"
     "\"tensors_without\", \"checksums\", \"data_bytes\"}; \"error\": {code, where, offset, "
     "message}\n"
     "instead of \"checked\" on failure."},
    {"pack",
     "pack OUT [--align N] [--meta KEY[:TYPE]=VALUE]... --tensor NAME:DTYPE:SHAPE=RAWFILE...",
     "pack raw little-endian tensor data into a new .ingot file",
     "--align N\tdata alignment, a power of two from 64 to 65536 (default 256)\n"
     "--meta KEY[:TYPE]=VALUE\ta metadata entry (a string without TYPE)\n"
     "--tensor NAME:DTYPE:SHAPE=RAWFILE\ta tensor whose bytes are RAWFILE\n",
     "TYPE: u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 bool string bytes (hex), or TYPE[] for a\n"
     "comma-separated array. SHAPE: dims joined by x (4x3), outermost first; empty for a scalar."},
    {"unpack", "unpack FILE NAME -o OUT", "write one tensor's stored bytes to a file",
     "-o OUT\tthe output file (\"-\" for stdout)\n",
     "OUT is written to a temporary beside it and renamed over it once complete."},
    {"dump",
     "dump FILE NAME[SLICE]... [--limit N] [--dequantize] [--stats] [--json]\n"
     "dump FILE --all [--limit N] [--dequantize] [--stats] [--json]",
     "print tensor values, slices or statistics",
     "--limit N\tat most N values (or blocks) per tensor (default 64)\n"
     "--dequantize\tvalues decoded to F32 (GGML blocks included)\n"
     "--stats\tmin, max, mean, std and the NaN and infinity counts instead of values\n"
     "--all\tevery tensor of the file\n"
     "--json\tone JSON object\n",
     "SLICE selects per dimension, outermost first: NAME[0:4,:] (rows 0 to 3), NAME[2] (row 2),\n"
     "NAME[:,1:3]; dimensions not given are whole. GGML block tensors print their blocks in hex\n"
     "unless --dequantize."},
    {"convert",
     "convert IN OUT [--to FORMAT] [--align N] [--opt KEY=VALUE]... [--dequantize F32|F16|BF16]\n"
     "      [--dtype DT] [--dtype-map SRC=DST]... [--quantize TYPE] [--include GLOB]...\n"
     "      [--exclude GLOB]... [--rename REGEX=REPL]... [--set KEY[:TYPE]=VALUE]...\n"
     "      [--delete KEY]... [--rename-key OLD=NEW]... [--json]",
     "convert a model file to another format, changing what the options say",
     "--to FORMAT\tthe output format (default: from OUT's extension; hf: an HF folder)\n"
     "--align N\ttensor data alignment of the output\n"
     "--opt KEY=VALUE\ta writer option of the output format (docs/COMPAT.md)\n"
     "--dequantize F32|F16|BF16\ttensors the target cannot store are decoded to that type\n"
     "--dtype DT\tevery float tensor cast to DT\n"
     "--dtype-map SRC=DST\tthe float tensors of dtype SRC cast to DST\n"
     "--quantize TYPE\tquantize as llama-quantize does\n"
     "--include GLOB\tkeep the tensors GLOB matches\n"
     "--exclude GLOB\tdrop the tensors GLOB matches\n"
     "--rename REGEX=REPL\trename tensors (POSIX extended regex)\n"
     "--set KEY[:TYPE]=VALUE\tset a metadata entry\n"
     "--delete KEY\tremove a metadata entry\n"
     "--rename-key OLD=NEW\trename a metadata entry\n"
     "--json\tthe lossy records and the summary (or the error) as one JSON object on stdout:\n"
     "\t{ok, path, format, tensors, dropped, cast, quantized, dequantized, skipped,\n"
     "\tmetadata_lossy, lossy: [{kind, message, name, from, to, count}], error}\n",
     "FORMAT: ingot, safetensors, gguf, npy, npz, burnpack, mag, tenzor, rmd1, hf. The output is\n"
     "written to a temporary and renamed over OUT once complete; every lossy step is one\n"
     "'lossy:' line on stderr. A tensor the target cannot store exactly is refused unless\n"
     "--dequantize names a float type to store it as (GGML blocks, F8 and other float types it\n"
     "lacks; one 'lossy:' line per source dtype).\n"
     "--dtype and --dtype-map cast float tensors (F64 F32 F16 BF16 F8_*) to F64 F32 F16 BF16\n"
     "F8_E4M3 F8_E5M2, rounded to nearest even: the bits of NumPy and torch.\n"
     "--quantize: Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q6_K or the mixes Q4_K_S Q4_K_M Q5_K_S Q5_K_M (Q4_K,\n"
     "Q5_K: the _M mixes), with llama-quantize's rules for the tensors that stay in higher\n"
     "precision (norms, 1-D tensors, rows that are not whole blocks; the output tensor Q6_K).\n"
     "--include/--exclude: the first rule matching a tensor's name decides; with an --include,\n"
     "tensors no rule matches are dropped. --rename REGEX=REPL: \\1..\\9 and & in REPL, applied "
     "in\n"
     "order after the selection; two tensors ending with one name is an error naming both.\n"
     "Order: selection, renames, casts, quantization, then metadata edits in command-line order.\n"
     "Model-aware: IN a Hugging Face folder (config.json, safetensors or pytorch_model.bin,\n"
     "tokenizer.json) of GPT-2, Llama, Mistral, Qwen2 or Mixtral gives what llama.cpp's\n"
     "convert_hf_to_gguf.py writes (names, q/k permutation, keys, tokenizer arrays); OUT a folder\n"
     "(existing, ending in '/', without an extension, or --to hf) gives model.safetensors,\n"
     "config.json, tokenizer.json and tokenizer_config.json from a GGUF. Plan options apply on\n"
     "the GGUF side."},
    {"meta",
     "meta FILE [--set KEY[:TYPE]=VALUE]... [--delete KEY]... [--rename-key OLD=NEW]... [--json]",
     "edit a model file's metadata in place",
     "--set KEY[:TYPE]=VALUE\tset an entry (TYPE as info prints it; a string without)\n"
     "--delete KEY\tremove an entry\n"
     "--rename-key OLD=NEW\trename an entry\n"
     "--json\tthe result as one JSON object, as convert --json\n",
     "FILE is written anew in its own format through the atomic writer and renamed over the old\n"
     "one (never changed in place on the mapped bytes); tensors are copied byte for byte.\n"
     "TYPE: u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 bool string bytes (hex), or TYPE[]."},
    {"diff", "diff A B [--json] [--quiet]", "compare two model files, in any formats",
     "--json\tone JSON object\n"
     "--quiet\tno output; the exit status says\n",
     "Tensors are matched by name and compared by C-order values, not file offsets: only in A,\n"
     "only in B, dtype or shape differing, and for decodable dtypes the largest absolute and\n"
     "relative difference and the NMSE sum((a-b)^2)/sum(a^2). Metadata by key, type and value.\n"
     "Exit 0 the same, 1 different, 2 trouble (usage, unreadable input)."},
    {"hash", "hash FILE... [--json] [--quiet]", "content digests of tensors and models",
     "--json\tone JSON array\n"
     "--quiet\tonly the model digests\n",
     "A tensor's digest is SHA-256 over its dtype, shape and C-order little-endian bytes, so the\n"
     "same tensor hashes the same in every format; the model's covers every tensor (sorted by\n"
     "name) but no metadata (include/ingot/inspect.h)."},
    {"summary", "summary FILE [--json]", "parameters and bytes per dtype and per layer",
     "--json\tone JSON object\n",
     "Layers are the name prefixes blk.N, layers.N, h.N (model.layers.N, transformer.h.N, ...).\n"
     "The architecture and its hyperparameters come from general.architecture and {arch}.*."},
    {"bench",
     "bench gemm [--threads N] [--json] [--quick] [--gemv | --sgemm]\n"
     "bench generate MODEL [--threads N] [--json]",
     "CPU kernels against OpenBLAS; LM prefill/decode against their bounds",
     "--threads N\tthreads\n--json\tone JSON object\n--quick\tsmaller cases (2048^3, 1.25 x L3)\n"
     "--gemv\tthe GEMV cases alone\n--sgemm\tthe f32 GEMM cases alone\n",
     "bench gemm prints each case with the ISA level used (INGOT_ISA=LEVEL caps it) beside\n"
     "OpenBLAS and the streaming read rate measured in the same run. bench generate prints\n"
     "prefill and decode tokens/s beside the compute and memory bounds of the same run."},
    {"eval", "eval MODEL --tokens ID,ID,... -o logits.npy [--kv f32|f16]",
     "logits at every position under teacher forcing",
     "--tokens ID,ID,...\tthe token ids\n-o FILE\tfloat32 [T, vocab] .npy\n"
     "--kv f32|f16\tKV cache type\n--config FILE\tconfig.json beside weights\n"
     "--lora ADAPTER[:SCALE]\ta PEFT adapter\n--threads N\tthreads\n",
     "MODEL is a file (GGUF, safetensors, .pt, .ingot, llama2.c, ...) or a Hugging Face folder\n"
     "(docs/RUNTIME.md)."},
    {"generate",
     "generate MODEL [--tokenizer SRC] [--prompt TEXT | --prompt-file F | --tokens IDS] [-n N]\n"
     "generate MODEL ... [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R]\n"
     "generate MODEL ... [--seed S] [--beams W] [--ctx N] [--kv f32|f16] [--json]\n"
     "generate MODEL ... [--stop STR]...",
     "generate text from a language model",
     "--tokenizer SRC\tGGUF, tokenizer.json, tokenizer.bin or folder (default: the model's)\n"
     "--prompt TEXT\tthe prompt (none or empty: start from BOS)\n"
     "-n N\ttokens to generate\n--temp T\t0 is greedy\n--seed S\tsampling seed\n"
     "--beams W\tbeam search (needs -n)\n--echo\tprint the prompt first\n"
     "--stop STR\tstop when the generated text contains STR (repeatable)\n"
     "--json\tone JSON object\n",
     "Streams the text to stdout. -n counts generated tokens (llama2.c's -n also counts the\n"
     "prompt's tokens after BOS). --json prints {\"prompt_tokens\", \"tokens\", \"text\",\n"
     "\"prefill_tokens_per_s\", \"decode_tokens_per_s\", \"seed\", \"stop\"}; with --stop STR the\n"
     "text ends right before STR (held back while it could still become one; with --beams the\n"
     "winner's text),\n"
     "\"tokens\" ends with the token completing it, \"stop\" is \"string\". Also: --prompt-file F,\n"
     "--tokens IDS, --top-k K, --top-p P, --min-p P, --repeat-penalty R, --ctx N, --kv f32|f16,\n"
     "--length-penalty L, --config FILE, --lora ADAPTER[:SCALE] [--lora-runtime], --threads N,\n"
     "--backend cpu|ref (docs/RUNTIME.md)."},
    {"tokenize", "tokenize SOURCE [--no-bos] [--parse-special] (--text STR | --file F)",
     "text to token ids", "--no-bos\tno BOS even where the vocabulary adds one\n"
     "--parse-special\ttext spelling a control token becomes it\n--text STR\tthe text\n"
     "--file F\tthe text from a file\n",
     "Prints the ids space-separated on one line. SOURCE: a GGUF model or vocab file, a\n"
     "tokenizer.json, a llama2.c tokenizer.bin, or a folder holding one (docs/TOKENIZERS.md)."},
    {"detokenize", "detokenize SOURCE --tokens ID,ID,... [--special]", "token ids to text",
     "--tokens ID,ID,...\tthe ids\n--special\tcontrol tokens as their text\n",
     "Prints the text, byte for byte."},
    {"run", "run MODEL --input X.npy -o Y.npy [--backend cpu|ref] [--threads N] [--stats]",
     "run a dense MLP (RMD1 topology) forward pass",
     "--input X.npy\tthe float32 [batch, in] input\n-o Y.npy\tthe output\n"
     "--backend cpu|ref\tthe tensor backend\n--threads N\tthreads\n--stats\ttimings\n",
     ""},
    {"help", "help [CMD]\nhelp --man DIR\nhelp --completion bash|zsh", "show a command's help",
     "--man DIR\twrite the man pages into DIR\n"
     "--completion bash|zsh\tprint the shell completion script\n",
     "ingot CMD --help prints the same. Exit codes of every command: 0 ok, 1 input rejected\n"
     "(stderr names the error code and the place), 2 usage. --quiet drops the lines a command\n"
     "prints on success; --json, where a command has it, also reports errors as\n"
     "{\"error\": {\"code\", \"message\", \"tensor\", \"offset\"}} on stdout."},
};

#define NCMDS (sizeof cmds / sizeof *cmds)

static const cmd_help *find(const char *name)
{
    for (size_t i = 0; i < NCMDS; i++)
        if (!strcmp(cmds[i].name, name)) return &cmds[i];
    return NULL;
}

bool help_known(const char *cmd) { return find(cmd) != NULL; }

void help_synopsis(FILE *o, const char *cmd)
{
    const cmd_help *h = find(cmd);
    if (!h) return;
    const char *s = h->synopsis;
    fputs("usage: ", o);
    for (bool first = true; *s; first = false) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        bool cont = s[0] == ' ';
        fprintf(o, "%s%s%.*s\n", first ? "" : "       ", cont ? "" : "ingot ", (int)n, s);
        s += n + (nl ? 1 : 0);
    }
}

void help_overview(FILE *o)
{
    fputs("usage: ingot CMD [ARGS...]   (ingot help CMD, or ingot CMD --help, for one command)\n"
          "       ingot --version\n\ncommands:\n",
          o);
    for (size_t i = 0; i < NCMDS; i++) fprintf(o, "  %-8s %s\n", cmds[i].name, cmds[i].summary);
    fputs("\nExit codes: 0 ok, 1 input rejected (stderr names the error code and the place), "
          "2 usage.\n",
          o);
}

static void print_options(FILE *o, const char *opts)
{
    while (*opts) {
        const char *tab = strchr(opts, '\t'), *nl = strchr(opts, '\n');
        if (!tab || !nl || tab > nl) break;
        int w = (int)(tab - opts);
        fprintf(o, "  %-26.*s %.*s\n", w, opts, (int)(nl - tab - 1), tab + 1);
        opts = nl + 1;
    }
}

int help_command(FILE *o, const char *cmd)
{
    const cmd_help *h = find(cmd);
    if (!h) return -1;
    help_synopsis(o, cmd);
    fprintf(o, "\n%s.\n", h->summary);
    if (*h->options) {
        fputs("\noptions:\n", o);
        print_options(o, h->options);
    }
    if (*h->details) fprintf(o, "\n%s\n", h->details);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Man pages and completions
 * ------------------------------------------------------------------------------------------- */

/* Text for roff: a leading '.' or '\'' escaped, backslashes doubled, '-' as \-. */
static void roff(FILE *o, const char *s, size_t n)
{
    bool bol = true;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (bol && (c == '.' || c == '\'')) fputs("\\&", o);
        if (c == '\\') fputs("\\e", o);
        else if (c == '-') fputs("\\-", o);
        else fputc(c, o);
        bol = c == '\n';
    }
}

static int man_page(const char *dir, const cmd_help *h, const char *version)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ingot-%s.1", dir, h->name);
    FILE *o = fopen(path, "w");
    if (!o) return -1;
    char up[32];
    size_t k = 0;
    for (; h->name[k] && k < sizeof up - 1; k++)
        up[k] = (char)(h->name[k] >= 'a' && h->name[k] <= 'z' ? h->name[k] - 32 : h->name[k]);
    up[k] = '\0';
    fprintf(o, ".TH INGOT-%s 1 \"\" \"ingot %s\" \"ingot manual\"\n.SH NAME\ningot\\-%s \\- ", up,
            version, h->name);
    roff(o, h->summary, strlen(h->summary));
    fputs("\n.SH SYNOPSIS\n", o);
    for (const char *s = h->synopsis; *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        fputs(".nf\n", o);
        if (s[0] != ' ') fputs("ingot ", o);
        roff(o, s, n);
        fputs("\n.fi\n", o);
        s += n + (nl ? 1 : 0);
    }
    fputs(".SH DESCRIPTION\n", o);
    roff(o, h->summary, strlen(h->summary));
    fputs(".\n", o);
    if (*h->details) {
        fputs(".PP\n", o);
        roff(o, h->details, strlen(h->details));
        fputc('\n', o);
    }
    if (*h->options) {
        fputs(".SH OPTIONS\n", o);
        for (const char *s = h->options; *s;) {
            const char *tab = strchr(s, '\t'), *nl = strchr(s, '\n');
            if (!tab || !nl) break;
            fputs(".TP\n.B ", o);
            roff(o, s, (size_t)(tab - s));
            fputc('\n', o);
            roff(o, tab + 1, (size_t)(nl - tab - 1));
            fputc('\n', o);
            s = nl + 1;
        }
    }
    fputs(".SH SEE ALSO\n.BR ingot (1)\n", o);
    return fclose(o) == 0 ? 0 : -1;
}

int help_man(const char *dir, const char *version)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ingot.1", dir);
    FILE *o = fopen(path, "w");
    if (!o) return -1;
    fprintf(o, ".TH INGOT 1 \"\" \"ingot %s\" \"ingot manual\"\n.SH NAME\ningot \\- open, check, "
               "convert and inspect neural-network weight files\n.SH SYNOPSIS\n.B ingot\nCMD "
               "[ARGS...]\n.SH COMMANDS\n",
            version);
    for (size_t i = 0; i < NCMDS; i++) {
        fprintf(o, ".TP\n.BR ingot\\-%s (1)\n", cmds[i].name);
        roff(o, cmds[i].summary, strlen(cmds[i].summary));
        fputc('\n', o);
    }
    fputs(".SH EXIT STATUS\n0 ok, 1 input rejected, 2 usage.\n", o);
    if (fclose(o) != 0) return -1;
    for (size_t i = 0; i < NCMDS; i++)
        if (man_page(dir, &cmds[i], version)) return -1;
    return 0;
}

/* The options of a command: every word of its synopsis and options text starting with '-'. */
static void options_of(FILE *o, const cmd_help *h)
{
    const char *texts[2] = {h->synopsis, h->options};
    char seen[2048] = " ";
    for (int k = 0; k < 2; k++)
        for (const char *s = texts[k]; *s; s++) {
            if (*s != '-' || (s != texts[k] && s[-1] != ' ' && s[-1] != '[' && s[-1] != '\n'))
                continue;
            size_t n = strspn(s, "-abcdefghijklmnopqrstuvwxyz");
            if (n < 2) continue;
            char word[64];
            snprintf(word, sizeof word, " %.*s ", (int)n, s);
            if (strstr(seen, word)) continue;
            if (strlen(seen) + strlen(word) < sizeof seen) strcat(seen, word + 1);
            fprintf(o, " %.*s", (int)n, s);
            s += n - 1;
        }
}

void help_completion(FILE *o, const char *shell)
{
    if (!strcmp(shell, "zsh")) {
        fputs("#compdef ingot\n# zsh completion for ingot (generated by `ingot help --completion "
              "zsh`)\n_ingot() {\n  local -a cmds opts\n  cmds=(",
              o);
        for (size_t i = 0; i < NCMDS; i++) fprintf(o, "%s'%s'", i ? " " : "", cmds[i].name);
        fputs(")\n  if (( CURRENT == 2 )); then\n    compadd -a cmds\n    return\n  fi\n"
              "  case $words[2] in\n",
              o);
        for (size_t i = 0; i < NCMDS; i++) {
            fprintf(o, "    %s) opts=(", cmds[i].name);
            options_of(o, &cmds[i]);
            fputs(" --help) ;;\n", o);
        }
        fputs("  esac\n  if [[ $PREFIX == -* ]]; then compadd -a opts; else _files; fi\n}\n"
              "_ingot \"$@\"\n",
              o);
        return;
    }
    fputs("# bash completion for ingot (generated by `ingot help --completion bash`)\n"
          "_ingot() {\n  local cur=${COMP_WORDS[COMP_CWORD]} opts\n"
          "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n    COMPREPLY=($(compgen -W \"",
          o);
    for (size_t i = 0; i < NCMDS; i++) fprintf(o, "%s%s", i ? " " : "", cmds[i].name);
    fputs(" --version --help\" -- \"$cur\"))\n    return\n  fi\n  case ${COMP_WORDS[1]} in\n", o);
    for (size_t i = 0; i < NCMDS; i++) {
        fprintf(o, "    %s) opts=\"", cmds[i].name);
        options_of(o, &cmds[i]);
        fputs(" --help\" ;;\n", o);
    }
    fputs(
        "  esac\n  if [[ $cur == -* ]]; then\n    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
        "  else\n    COMPREPLY=($(compgen -f -- \"$cur\"))\n  fi\n}\ncomplete -o filenames -F "
        "_ingot ingot\n",
        o);
}

/* ---------------------------------------------------------------------------------------------
 * Did you mean
 * ------------------------------------------------------------------------------------------- */

size_t edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
    if (na > 256 || nb > 256) return (size_t)-1;
    size_t row[257];
    for (size_t j = 0; j <= nb; j++) row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[nb];
}

bool close_enough(size_t d, size_t len) { return d > 0 && d <= (len < 6 ? 1 : len / 3); }

const char *help_suggest_command(const char *typo)
{
    const char *best = NULL;
    size_t bd = (size_t)-1, n = strlen(typo);
    for (size_t i = 0; i < NCMDS; i++) {
        size_t d = edit_distance(typo, n, cmds[i].name, strlen(cmds[i].name));
        if (d < bd) bd = d, best = cmds[i].name;
    }
    return close_enough(bd, n) || (best && !strncmp(best, typo, n) && n >= 2) ? best : NULL;
}

const char *help_suggest_option(const char *cmd, const char *typo)
{
    const cmd_help *h = find(cmd);
    if (!h) return NULL;
    static char best[64];
    size_t bd = (size_t)-1, n = strlen(typo);
    const char *texts[2] = {h->synopsis, h->options};
    for (int k = 0; k < 2; k++)
        for (const char *s = texts[k]; *s; s++) {
            if (*s != '-' || (s != texts[k] && s[-1] != ' ' && s[-1] != '[' && s[-1] != '\n'))
                continue;
            size_t m = strspn(s, "-abcdefghijklmnopqrstuvwxyz");
            if (m < 2 || m >= sizeof best) continue;
            size_t d = edit_distance(typo, n, s, m);
            if (d < bd) {
                bd = d;
                memcpy(best, s, m);
                best[m] = '\0';
            }
            s += m - 1;
        }
    return close_enough(bd, n) ? best : NULL;
}
