/*
 * bench_lm.c - writes the language-model benchmark files: a Llama in llama.cpp's GGUF naming
 * with seeded random weights, every matrix in one dtype (F32, F16, Q8_0 or Q4_K: valid blocks
 * with random quants and moderate scales), norms F32, untied output. The default shape is the
 * one llama.cpp's llama-bench was measured on (docs/PERFORMANCE.md): dim 1024, 16 layers, 16
 * heads, 4 KV heads, ffn 2816, vocab 32000 (246 M parameters). Measure a file with
 * `ingot bench generate FILE [--threads N] [--json]`; bench/run_lm_bench.sh runs the set.
 *
 *   bench_lm OUT.gguf DTYPE [--dim D] [--layers L] [--heads H] [--kv-heads K] [--ffn F]
 *            [--vocab V] [--vocab-from VOCAB.gguf]
 *
 * --vocab-from copies a SentencePiece vocabulary (tokenizer.ggml.model, tokens, scores,
 * token_type) from a GGUF vocab file such as llama.cpp's ggml-vocab-llama-spm.gguf, whose 32000
 * tokens match the default vocab size: llama.cpp refuses a model without one, so this is what
 * lets bench/peer_llamacpp.mjs run llama.cpp on the same file. ingot's figures do not change.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingot/ingot.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static float uni(float a) { return ((float)(next() >> 40) / 16777216.0f * 2.0f - 1.0f) * a; }

static uint16_t half(float v)
{
    uint16_t h = 0;
    ingot_f32_encode(INGOT_DTYPE_F16, &v, 1, &h, 2, NULL);
    return h;
}

/* Fills `n` bytes of rows of dtype dt (rows of `cols` elements, values ~ +-a). */
static void fill(ingot_dtype dt, uint8_t *p, size_t nelem, float a)
{
    if (dt == INGOT_DTYPE_F32) {
        for (size_t i = 0; i < nelem; i++) {
            float v = uni(a);
            memcpy(p + 4 * i, &v, 4);
        }
    } else if (dt == INGOT_DTYPE_F16) {
        for (size_t i = 0; i < nelem; i++) {
            uint16_t h = half(uni(a));
            memcpy(p + 2 * i, &h, 2);
        }
    } else if (dt == INGOT_DTYPE_Q8_0) {
        uint16_t d = half(a / 127.0f);
        for (size_t b = 0; b < nelem / 32; b++, p += 34) {
            memcpy(p, &d, 2);
            for (int i = 0; i < 32; i++) p[2 + i] = (uint8_t)(int8_t)((int)(next() % 255) - 127);
        }
    } else { /* Q4_K: d, dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles */
        uint16_t d = half(a / (15.0f * 32.0f)), dmin = half(a / 64.0f);
        for (size_t b = 0; b < nelem / 256; b++, p += 144) {
            memcpy(p, &d, 2);
            memcpy(p + 2, &dmin, 2);
            for (int i = 0; i < 140; i++) p[4 + i] = (uint8_t)next();
        }
    }
}

typedef struct spec {
    char name[64];
    uint64_t r, c; /* c 0: a vector of r */
    ingot_dtype dt;
    float a;
} spec;

static void add(spec *t, size_t *n, const char *name, uint64_t r, uint64_t c, ingot_dtype dt,
                float a)
{
    snprintf(t[*n].name, sizeof t[*n].name, "%s", name);
    t[*n].r = r;
    t[*n].c = c;
    t[*n].dt = dt;
    t[*n].a = a;
    (*n)++;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_lm OUT.gguf F32|F16|Q8_0|Q4_K [--dim D] [--layers L] "
                    "[--heads H] [--kv-heads K] [--ffn F] [--vocab V] "
                    "[--vocab-from VOCAB.gguf]\n");
    return 2;
}

/* Copies the SentencePiece vocabulary of `path` (V tokens) into w; 0 on success. */
static int copy_vocab(ingot_writer *w, const char *path, uint32_t V)
{
    ingot_file *f = NULL;
    ingot_error e;
    if (ingot_file_open(path, NULL, &f, &e) != INGOT_OK) {
        fprintf(stderr, "bench_lm: %s: %s\n", path, e.msg);
        return 1;
    }
    int rc = 1;
    const char *model = NULL;
    size_t ml = 0;
    uint64_t n = 0, ns = 0, nty = 0;
    ingot_meta_info tok, sc, ty;
    const void **p = calloc(V, sizeof *p);
    size_t *len = calloc(V, sizeof *len);
    float *scores = calloc(V, sizeof *scores);
    int32_t *types = calloc(V, sizeof *types);
    if (!p || !len || !scores || !types ||
        ingot_file_meta_get_string(f, "tokenizer.ggml.model", &model, &ml) != INGOT_OK ||
        ingot_file_meta_get_array(f, "tokenizer.ggml.tokens", INGOT_META_STRING, &n) !=
            INGOT_OK ||
        ingot_file_meta_get_array(f, "tokenizer.ggml.scores", INGOT_META_F32, &ns) != INGOT_OK ||
        ingot_file_meta_get_array(f, "tokenizer.ggml.token_type", INGOT_META_I32, &nty) !=
            INGOT_OK ||
        n != V || ns != V || nty != V) {
        fprintf(stderr, "bench_lm: %s: not a SentencePiece vocabulary of %u tokens\n", path, V);
        goto done;
    }
    ingot_file_meta_find(f, "tokenizer.ggml.tokens", &tok);
    ingot_file_meta_find(f, "tokenizer.ggml.scores", &sc);
    ingot_file_meta_find(f, "tokenizer.ggml.token_type", &ty);
    for (uint32_t i = 0; i < V; i++) {
        const char *s = NULL;
        if (ingot_file_meta_array_string(f, tok.index, i, &s, &len[i]) != INGOT_OK) goto done;
        p[i] = s;
    }
    if (ingot_file_meta_array_read(f, sc.index, INGOT_META_F32, 0, V, scores) != INGOT_OK ||
        ingot_file_meta_array_read(f, ty.index, INGOT_META_I32, 0, V, types) != INGOT_OK)
        goto done;
    if (ingot_writer_set_stringn(w, "tokenizer.ggml.model", model, ml) != INGOT_OK ||
        ingot_writer_set_string_array(w, "tokenizer.ggml.tokens", INGOT_META_STRING, p, len, V) !=
            INGOT_OK ||
        ingot_writer_set_array(w, "tokenizer.ggml.scores", INGOT_META_F32, scores, V) !=
            INGOT_OK ||
        ingot_writer_set_array(w, "tokenizer.ggml.token_type", INGOT_META_I32, types, V) !=
            INGOT_OK)
        goto done;
    rc = 0;
done:
    free(p);
    free(len);
    free(scores);
    free(types);
    ingot_file_close(f);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) return usage();
    const char *out = argv[1];
    ingot_dtype dt;
    if (ingot_dtype_from_name(argv[2], &dt) != INGOT_OK ||
        (dt != INGOT_DTYPE_F32 && dt != INGOT_DTYPE_F16 && dt != INGOT_DTYPE_Q8_0 &&
         dt != INGOT_DTYPE_Q4_K))
        return usage();
    uint32_t dim = 1024, L = 16, H = 16, KV = 4, F = 2816, V = 32000;
    const char *vocab_from = NULL;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--vocab-from")) {
            vocab_from = argv[i + 1];
            continue;
        }
        uint32_t v = (uint32_t)strtoul(argv[i + 1], NULL, 10);
        if (!strcmp(argv[i], "--dim")) dim = v;
        else if (!strcmp(argv[i], "--layers")) L = v;
        else if (!strcmp(argv[i], "--heads")) H = v;
        else if (!strcmp(argv[i], "--kv-heads")) KV = v;
        else if (!strcmp(argv[i], "--ffn")) F = v;
        else if (!strcmp(argv[i], "--vocab")) V = v;
        else return usage();
    }
    uint32_t hd = dim / H, kvd = hd * KV;
    ingot_writer_opts wo = {0};
    wo.format = "gguf";
    wo.alignment = 64;
    wo.no_fsync = true;
    ingot_writer *w = NULL;
    ingot_error e;
    if (ingot_writer_new(&wo, &w, &e) != INGOT_OK) return 1;
    ingot_writer_set_string(w, "general.architecture", "llama");
    ingot_writer_set_string(w, "general.name", "ingot-bench");
    ingot_writer_set_u32(w, "llama.block_count", L);
    ingot_writer_set_u32(w, "llama.context_length", 4096);
    ingot_writer_set_u32(w, "llama.embedding_length", dim);
    ingot_writer_set_u32(w, "llama.feed_forward_length", F);
    ingot_writer_set_u32(w, "llama.attention.head_count", H);
    ingot_writer_set_u32(w, "llama.attention.head_count_kv", KV);
    ingot_writer_set_f32(w, "llama.rope.freq_base", 10000.0f);
    ingot_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    ingot_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
    ingot_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    if (vocab_from && copy_vocab(w, vocab_from, V)) return 1;
    spec *t = calloc(3 + 9 * (size_t)L, sizeof *t);
    size_t nt = 0;
    float s = 1.0f / 32.0f;
    add(t, &nt, "token_embd.weight", V, dim, dt, 1.0f);
    for (uint32_t l = 0; l < L; l++) {
        char nm[64];
        snprintf(nm, sizeof nm, "blk.%u.attn_norm.weight", l);
        add(t, &nt, nm, dim, 0, INGOT_DTYPE_F32, 1);
        snprintf(nm, sizeof nm, "blk.%u.attn_q.weight", l);
        add(t, &nt, nm, dim, dim, dt, s);
        snprintf(nm, sizeof nm, "blk.%u.attn_k.weight", l);
        add(t, &nt, nm, kvd, dim, dt, s);
        snprintf(nm, sizeof nm, "blk.%u.attn_v.weight", l);
        add(t, &nt, nm, kvd, dim, dt, s);
        snprintf(nm, sizeof nm, "blk.%u.attn_output.weight", l);
        add(t, &nt, nm, dim, dim, dt, s);
        snprintf(nm, sizeof nm, "blk.%u.ffn_norm.weight", l);
        add(t, &nt, nm, dim, 0, INGOT_DTYPE_F32, 1);
        snprintf(nm, sizeof nm, "blk.%u.ffn_gate.weight", l);
        add(t, &nt, nm, F, dim, dt, s);
        snprintf(nm, sizeof nm, "blk.%u.ffn_up.weight", l);
        add(t, &nt, nm, F, dim, dt, s);
        snprintf(nm, sizeof nm, "blk.%u.ffn_down.weight", l);
        add(t, &nt, nm, dim, F, dt, s);
    }
    add(t, &nt, "output_norm.weight", dim, 0, INGOT_DTYPE_F32, 1);
    add(t, &nt, "output.weight", V, dim, dt, s);
    for (size_t i = 0; i < nt; i++) {
        uint64_t shape[2] = {t[i].r, t[i].c};
        if (ingot_writer_add_tensor(w, t[i].name, t[i].dt, t[i].c ? 2 : 1, shape, NULL, NULL,
                                    &e) != INGOT_OK) {
            fprintf(stderr, "bench_lm: %s: %s\n", t[i].name, e.msg);
            return 1;
        }
    }
    if (ingot_writer_begin(w, out, &e) != INGOT_OK) {
        fprintf(stderr, "bench_lm: %s: %s\n", out, e.msg);
        return 1;
    }
    size_t cap = (size_t)8 << 20;
    uint8_t *buf = malloc(cap);
    for (size_t i = 0; i < nt; i++) {
        uint64_t cols = t[i].c ? t[i].c : t[i].r, rows = t[i].c ? t[i].r : 1;
        uint64_t rb = cols / ingot_dtype_block_elems(t[i].dt) * ingot_dtype_block_bytes(t[i].dt);
        uint64_t per = cap / rb ? cap / rb : 1;
        for (uint64_t r = 0; r < rows; r += per) {
            uint64_t k = rows - r < per ? rows - r : per;
            if (t[i].c == 0)
                for (uint64_t j = 0; j < cols; j++) {
                    float v = 1.0f + uni(0.1f);
                    memcpy(buf + 4 * j, &v, 4);
                }
            else
                fill(t[i].dt, buf, (size_t)(k * cols), t[i].a);
            if (ingot_writer_write(w, buf, (size_t)(k * rb), &e) != INGOT_OK) {
                fprintf(stderr, "bench_lm: writing %s: %s\n", t[i].name, e.msg);
                return 1;
            }
        }
    }
    if (ingot_writer_commit(w, &e) != INGOT_OK) {
        fprintf(stderr, "bench_lm: %s: %s\n", out, e.msg);
        return 1;
    }
    ingot_writer_free(w);
    free(buf);
    free(t);
    printf("wrote %s (%s, dim %u, %u layers, %u heads / %u kv, ffn %u, vocab %u)\n", out,
           argv[2], dim, L, H, KV, F, V);
    return 0;
}
