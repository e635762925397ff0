/*
 * ingot/ingot.h - umbrella header: include this to use ingot.
 *
 *   core.h    open any model file zero-copy; tensors, typed metadata, verification
 *   writer.h  streaming, crash-safe writer
 *   convert.h conversion plans: select, rename, cast, quantize, edit metadata, write
 *   inspect.h content digests and value statistics, the same in every format
 *   native.h  the freestanding .ingot reader core (embedded use)
 *   quant.h   GGML block decoding/encoding
 *   backend.h tensor backends and ops;  runtime.h the dense MLP runtime
 *   lm.h      language models (Llama family, MoE, GPT-2): sessions, sampling, generate
 *   tokenizer.h  text to token ids and back (BPE, SentencePiece), without a model
 */
#ifndef INGOT_INGOT_H
#define INGOT_INGOT_H

#include "ingot/core.h"
#include "ingot/native.h"
#include "ingot/writer.h"
#include "ingot/convert.h"
#include "ingot/inspect.h"
#include "ingot/quant.h"
#include "ingot/backend.h"
#include "ingot/runtime.h"
#include "ingot/lm.h"
#include "ingot/tokenizer.h"

#endif
