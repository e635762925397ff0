/*
 * lm_internal.h - what the language-model files of the runtime box share: the bound weights of a
 * model, the session (KV cache and scratch), the config readers and the per-architecture forward
 * passes. Not installed.
 */
#ifndef INGOT_LM_INTERNAL_H
#define INGOT_LM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ingot/lm.h"
#include "ingot/tokenizer.h"

/* Hard limits on hostile configs (every count from a file is checked against these before it
 * sizes anything). */
#define LM_MAX_LAYERS 1024u
#define LM_MAX_DIM (1u << 16)
#define LM_MAX_FFN (1u << 18)
#define LM_MAX_HEADS 1024u
#define LM_MAX_HEAD_DIM 1024u
#define LM_MAX_VOCAB (1u << 22)
#define LM_MAX_EXPERTS 256u
#define LM_MAX_CTX (1u << 22)
#define LM_MAX_PROBED 16u /* dtypes whose linear support was asked of the backend */

/* One bound weight: a backend tensor over the mapping (zero-copy) or over a converted copy. */
typedef struct lm_w {
    ingot_tensor t;
    ingot_buffer *buf; /* owned wrapper or copy; NULL for a slice of another weight's buffer */
    bool present;
    /* a LoRA applied at run time: y += lscale * B (A x); A [r, in] and B [out, r] F32 in lbuf */
    bool lora;
    float lscale;
    ingot_tensor la, lb;
    ingot_buffer *lbuf;
    /* A dense Q4_K linear's rows repacked at open (the kernels' ingot__q4kr_repack; on by
     * default where the backend's kernel for it runs, off with ingot_lm_opts.no_repack or
     * INGOT_LM_REPACK=0): read by every product instead of t's data (t gives the shape; its
     * mapped pages are released after the copy) */
    const void *rp;  /* in the model's rp_arena */
    bool mapped;     /* t is zero-copy over file tensor findex (its pages can be released) */
    uint32_t findex;
} lm_w;

/* Tensor roles: one row of the naming table each (lm_names.c). */
typedef enum lm_role {
    LM_TOK_EMBD, LM_POS_EMBD, LM_OUT_NORM, LM_OUT_NORM_B, LM_OUTPUT,
    LM_ATTN_NORM, LM_ATTN_NORM_B, LM_ATTN_Q, LM_ATTN_Q_B, LM_ATTN_K, LM_ATTN_K_B,
    LM_ATTN_V, LM_ATTN_V_B, LM_ATTN_QKV, LM_ATTN_QKV_B, LM_ATTN_OUT, LM_ATTN_OUT_B,
    LM_FFN_NORM, LM_FFN_NORM_B, LM_FFN_GATE, LM_FFN_UP, LM_FFN_UP_B, LM_FFN_DOWN, LM_FFN_DOWN_B,
    LM_FFN_ROUTER, LM_FFN_GATE_EXPS, LM_FFN_UP_EXPS, LM_FFN_DOWN_EXPS,
    LM_FFN_GATE_EXP, LM_FFN_UP_EXP, LM_FFN_DOWN_EXP,
    LM_ROLE_COUNT
} lm_role;

typedef enum lm_naming { LM_NAMES_GGUF = 0, LM_NAMES_HF = 1 } lm_naming;

/* Formats the file name of `role` for layer `layer` (and expert `expert`) under `naming` into
 * buf; returns false if the role has no name there. *hf_transposed: the HF tensor is stored
 * [in, out] (GPT-2's Conv1D). */
bool ingot__lm_role_name(lm_naming naming, ingot_lm_arch arch, lm_role role, uint32_t layer,
                         uint32_t expert, char *buf, size_t cap, bool *hf_transposed);

typedef struct lm_layer {
    lm_w attn_norm, attn_norm_b, wq, bq, wk, bk, wv, bv, wqkv, bqkv, wo, bo;
    lm_w ffn_norm, ffn_norm_b, w_gate, w_up, b_up, w_down, b_down;
    lm_w router;
    lm_w exps[3]; /* merged [E, rows, cols] gate, up, down weights (GGUF), when the file has them */
    lm_w *exp;    /* n_expert x {gate, up, down}: slices of exps or separate tensors */
} lm_layer;

/* An embedding table read row by row from the file (any dtype ingot_file_tensor_dequantize
 * decodes: a quantized table is never expanded). */
typedef struct lm_table {
    uint64_t index; /* tensor index in the file */
    ingot_dtype dtype;
    uint64_t rows;
    bool present;
    lm_w copy; /* a decoded F32 copy when rows cannot be decoded one by one (grouped int8) */
} lm_table;

struct ingot_lm {
    ingot_backend *be;
    const ingot_allocator *al;
    ingot_lm_config cfg;
    const ingot_file *f;
    ingot_file *owned_file; /* opened by ingot_lm_open_path */
    lm_naming naming;
    lm_table tok_embd, pos_embd;
    lm_w out_norm, out_norm_b, output;
    lm_layer *layers;
    uint64_t weight_bytes, expert_bytes, owned_bytes;
    uint32_t nsessions;
    uint32_t lora_rank, lora_out; /* run-time LoRA: largest r and output width (session scratch) */
    struct { ingot_dtype dtype; bool native; } probed[LM_MAX_PROBED]; /* native_linear cache */
    uint32_t n_probed;
    ingot_lm_notice_fn notice;
    void *notice_ctx;
    /* scaled RoPE (cfg.rope_scaling != NONE): the rotation frequencies, applied through the
     * session's cos/sin tables instead of the backend's rope op */
    bool rope_scaled;
    double rope_freq[LM_MAX_HEAD_DIM / 2];
    /* INGOT_LM_FUSE=0 at open: one op per linear in decode (A/B of the fused decode linears) */
    bool fuse_off;
    uint8_t *rp_arena;       /* every repacked Q4_K linear, 64-byte aligned, one allocation */
    size_t rp_arena_bytes;   /* (ingot__alloc_table: raw and raw_bytes to free it) */
    void *rp_raw;
    size_t rp_raw_bytes;
    uint64_t repacked_bytes; /* its bytes (counted in owned_bytes) */
    ingot_buffer *vec_arena; /* with repacking: the norm weights and biases, copied (lm_model.c) */
    uint64_t released_bytes; /* of their mapped pages, released from the process after the copy */
};

/* Reads a small file (at most 1 MiB: configs) into an allocation of *n bytes (at least 1). */
ingot_status ingot__lm_read_file(const ingot_allocator *al, const char *path, void **out,
                                 size_t *n, ingot_error *err);
/* Applies the PEFT adapter of o->lora_path (lora.c): merged into F32 copies, or kept for run
 * time. Called by ingot_lm_open once every weight is bound. */
ingot_status ingot__lm_lora_apply(ingot_lm *m, const ingot_lm_opts *o, ingot_error *err);
/* Notice callback of the model (no-op without one). */
void ingot__lm_notice(const ingot_lm *m, const char *msg);

/* Config readers (lm_config.c). Both validate every value against the limits above. */
ingot_status ingot__lm_config_gguf(const ingot_file *f, ingot_lm_config *c, ingot_error *err);
/* json: the bytes of a config.json (borrowed); path only names it in errors. */
ingot_status ingot__lm_config_json(const void *json, size_t n, const char *path,
                                   ingot_lm_config *c, ingot_error *err);
/* Checks the relations between fields (heads divide, limits); fills head_dim if 0. */
ingot_status ingot__lm_config_check(ingot_lm_config *c, const char *where, ingot_error *err);

/* The session (lm_session.c). Activations are F32; the KV cache F32 or F16. */
struct ingot_lm_session {
    ingot_lm *m;
    uint32_t n_ctx, n_batch, pos;
    ingot_dtype kv_dtype;
    int32_t *tokens;              /* n_ctx: the tokens at each position */
    float *last_logits;           /* vocab floats */
    bool have_logits;
    /* backend buffers */
    bool counted;                 /* counted in m->nsessions */
    ingot_buffer *ids, *posb, *x, *xn, *q, *qr, *kr, *ao, *tmp, *g, *u;
    ingot_buffer *logits, *kv, *kvf, *router, *eo;
    ingot_buffer *lr, *lo;        /* run-time LoRA: A x [n_batch, r], B (A x) [n_batch, out] */
    ingot_buffer *rope_cs;        /* scaled RoPE: cos then sin, each [n_ctx, head_dim / 2] */
    /* MoE: rows gathered per expert [n_batch, dim] and its outputs; the picks of every row
     * (n_batch x k ids, n_batch row ids, n_batch x k weights, n_batch weights) */
    ingot_buffer *mx, *my, *msel;
    uint64_t kv_layer_bytes;      /* K then V of one layer */
};

/* KV cache and scratch bytes of a session with these options (defaults applied). */
void ingot__lm_session_sizes(const ingot_lm *m, const ingot_lm_session_opts *o, uint64_t *kv,
                             uint64_t *scratch);

/* Forward passes (llama.c, gpt2.c): tokens are in s->ids, rows n at positions s->pos.. ;
 * on return s->x holds the final hidden states [n, dim] (before the output norm). */
ingot_status ingot__llama_forward(ingot_lm_session *s, uint32_t n, ingot_error *err);
ingot_status ingot__gpt2_forward(ingot_lm_session *s, uint32_t n, ingot_error *err);

/* Shared pieces of the forward passes (lm_session.c). */
/* s->x rows [0, n) = token embeddings (+ learned positions for GPT-2) of positions s->pos.. */
ingot_status ingot__lm_embed(ingot_lm_session *s, const int32_t *tokens, uint32_t n,
                             ingot_error *err);
/* Contiguous F32 [rows, cols] view at element offset `off` of buf. */
void ingot__lm_view2(ingot_tensor *t, ingot_buffer *buf, uint64_t off, int64_t rows,
                     int64_t cols);
/* Causal self-attention of n rows at positions s->pos.. for layer `layer`: q [n, H*hd] (rotated),
 * the layer's K/V cache already holding positions 0 .. pos+n-1; result [n, H*hd] in s->ao. */
ingot_status ingot__lm_attention(ingot_lm_session *s, uint32_t layer, const ingot_tensor *q,
                                 uint32_t n, ingot_error *err);
/* K/V cache views of layer `layer`: [n_head_kv, len, head_dim] starting at position `from`. */
void ingot__lm_kv_view(const ingot_lm_session *s, uint32_t layer, bool value, uint32_t from,
                       uint32_t len, ingot_tensor *t);
/* Stores rows [n, Hkv*hd] (F32, any view) into the cache at positions pos.. (casting for F16). */
ingot_status ingot__lm_kv_store(ingot_lm_session *s, uint32_t layer, bool value,
                                const ingot_tensor *rows, uint32_t n, ingot_error *err);
/* y = x . w^T + b into dst (w F32 or a quantized dtype the backend runs; b may be absent). */
ingot_status ingot__lm_linear(ingot_lm_session *s, ingot_tensor *dst, const ingot_tensor *x,
                              const lm_w *w, const lm_w *b, ingot_error *err);
/* The n linears dst[i] = x . w[i]^T + b[i] (b NULL: no biases) on the same input x. On one row
 * they run as one backend job (backend_export.h's ingot__linear_multi, the same bits as n
 * ingot__lm_linear calls); where that does not apply (several rows, another backend or dtype,
 * run-time LoRA, INGOT_LM_FUSE=0) as one ingot__lm_linear each. */
ingot_status ingot__lm_linears(ingot_lm_session *s, uint32_t n, ingot_tensor *const dst[],
                               const ingot_tensor *x, const lm_w *const w[],
                               const lm_w *const b[], ingot_error *err);

/* The text side of a generate call (lm_text.c): the streaming decoder, the stop strings and the
 * text held back while it could still be the start of one. One allocation holds lens, piece and
 * hold. */
typedef struct lm_text {
    const ingot_tokenizer *tok; /* NULL: no text asked for (nothing else is set) */
    ingot_tokenizer_stream st;
    const char *const *str;
    size_t *lens;               /* n of them */
    size_t n;
    uint8_t first[32];          /* bit set of the stop strings' first bytes */
    char *piece;                /* piece_cap = ingot_tokenizer_stream_max(tok) */
    size_t piece_cap;
    char *hold;                 /* < the longest stop string, + one push + one flush */
    size_t nhold;
    size_t hold_cap;            /* bytes of hold */
    ingot_lm_text_fn on_text;
    void *ctx;
    uint64_t bytes;             /* handed to on_text */
    int32_t matched;            /* the stop string found, -1 */
    void *block;
    size_t block_size;
} lm_text;

typedef enum lm_text_verdict {
    LM_TEXT_GO_ON, LM_TEXT_STOP_STRING, LM_TEXT_STOP_CALLBACK
} lm_text_verdict;

/* Checks o's text options (tokenizer, stop strings: MISUSE / LIMIT naming the string) and
 * allocates the buffers; with neither stop strings nor on_text, t->tok stays NULL. */
ingot_status ingot__lm_text_init(lm_text *t, const ingot_lm_generate_opts *o,
                                 const ingot_allocator *al, ingot_error *err);
void ingot__lm_text_free(lm_text *t, const ingot_allocator *al);
/* The text of one generated token: matched, and released to on_text as far as resolved. */
lm_text_verdict ingot__lm_text_token(lm_text *t, int32_t token);
/* End of the text: the decoder's held bytes, a last match, everything left released. */
lm_text_verdict ingot__lm_text_finish(lm_text *t);
/* Beam search's probe: token `token` through a hypothesis' own decoder state and held text
 * (*st, hold[0, *nhold), t->hold_cap bytes of room) against t's stop strings, both updated;
 * on_text is not called and t's own state is left as it was. */
lm_text_verdict ingot__lm_text_probe(lm_text *t, ingot_tokenizer_stream *st, char *hold,
                                     size_t *nhold, int32_t token);

#endif
