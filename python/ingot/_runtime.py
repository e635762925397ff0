"""The model runtime: ingot.MLP (dense MLP, RMD1 topology), ingot.LM (Llama family and GPT-2
from any format or a Hugging Face folder) and ingot.Tokenizer. The GIL is released while a
model computes; LM.generate(stream=True) runs the decode loop on a worker thread and yields the
text pieces as they come."""

import os
import queue
import threading

import numpy as np

from . import _ingot
from ._errors import UsageError
from ._file import File

_ENCODE_ADD_SPECIAL = 1
_ENCODE_PARSE_SPECIAL = 2
_DECODE_SPECIAL = 1
_DECODE_KEEP_LEADING_SPACE = 2
_STOPS = {0: "length", 1: "eos", 2: "callback", 3: "context", 4: "string"}


def _utf8(text):
    """str as UTF-8; any bytes-like object as its bytes (an int is a TypeError, not that many
    zero bytes)."""
    return text.encode("utf-8") if isinstance(text, str) else bytes(memoryview(text))


class Tokenizer:
    """Text <-> token ids: a GGUF file's vocabulary, a tokenizer.json, llama2.c's
    tokenizer.bin, or encoder.json + vocab.bpe (give either path)."""

    def __init__(self, source, word_cache_bytes=None, word_caches=None):
        """word_cache_bytes: the size of each of the tokenizer's own word caches, which encode
        borrows (None: the library's default, 2 MiB; 0: none; at most 1 GiB); word_caches: how
        many encodes at once may each borrow one (None: 2; at most 64). The ids never depend
        on them."""
        wb = -1 if word_cache_bytes is None else int(word_cache_bytes)
        wn = 0 if word_caches is None else int(word_caches)
        if word_cache_bytes is not None and wb < 0:
            raise ValueError("word_cache_bytes must be >= 0")
        if word_caches is not None and wn < 1:
            raise ValueError("word_caches must be >= 1")
        self._t = _ingot.tokenizer_open(source._handle() if isinstance(source, File) else source,
                                        wb, wn)
        (self.kind, self.pre, self.vocab_size, self.bos, self.eos, self.adds_bos,
         self.adds_eos) = self._t.info()

    @classmethod
    def _wrap(cls, t):
        self = cls.__new__(cls)
        self._t = t
        (self.kind, self.pre, self.vocab_size, self.bos, self.eos, self.adds_bos,
         self.adds_eos) = t.info()
        return self

    def encode(self, text, add_special=True, parse_special=False):
        """Token ids (list of int) of text (str or UTF-8 bytes); add_special adds the BOS/EOS
        the vocabulary asks for; parse_special turns special-token text into its id."""
        b = _utf8(text)
        flags = (_ENCODE_ADD_SPECIAL if add_special else 0) | (
            _ENCODE_PARSE_SPECIAL if parse_special else 0)
        return np.frombuffer(self._t.encode(b, flags), dtype=np.int32).tolist()

    def word_cache_stats(self):
        """What the tokenizer's own word caches saw since open: a dict of words looked up,
        the bytes they span, hits and hit bytes (for choosing word_cache_bytes)."""
        w, b, h, hb = self._t.word_cache_stats()
        return {"words": w, "bytes": b, "hits": h, "hit_bytes": hb}

    def encode_batch(self, texts, add_special=True, parse_special=False, cache_bytes=2 << 20):
        """The ids of each text (a list of lists of int), exactly as encode gives them, in one
        call: the texts (str or UTF-8 bytes) are encoded one after another with the GIL
        released, through a word cache of about cache_bytes made for the call (0: none; it
        pays where words repeat, as in any real corpus; at most 1 GiB)."""
        if cache_bytes < 0:
            raise ValueError("cache_bytes must be >= 0")
        bs = tuple(_utf8(t) for t in texts)
        flags = (_ENCODE_ADD_SPECIAL if add_special else 0) | (
            _ENCODE_PARSE_SPECIAL if parse_special else 0)
        ids, off = self._t.encode_batch(bs, flags, int(cache_bytes))
        a = np.frombuffer(ids, dtype=np.int32)
        o = np.frombuffer(off, dtype=np.int64).tolist()
        return [a[o[i]:o[i + 1]].tolist() for i in range(len(bs))]

    def decode(self, ids, special=False, errors="replace"):
        """The text of ids (str); special=True keeps the text of control tokens."""
        arr = np.ascontiguousarray(np.asarray(ids, dtype=np.int32).ravel())
        return self._t.decode(arr.tobytes(), _DECODE_SPECIAL if special else 0).decode(
            "utf-8", errors)


class MLP:
    """A dense MLP (RMD1 topology: mlp.* metadata and layer weights) run from mapped weights."""

    def __init__(self, path, *, backend=None, threads=0):
        self._file = path if isinstance(path, File) else File(path)
        self._m = _ingot.mlp_open(self._file._handle(), backend, int(threads))
        self.input_size, self.output_size, self.layers = self._m.shape()

    def forward(self, x):
        """y = MLP(x): x float32 [batch, in] or [in]; returns float32 [batch, out] or [out]."""
        x = np.asarray(x, dtype=np.float32)
        one = x.ndim == 1
        x2 = np.ascontiguousarray(x.reshape(1, -1) if one else x)
        if x2.ndim != 2 or x2.shape[1] != self.input_size:
            raise UsageError("MISUSE", f"input must be [batch, {self.input_size}], got "
                             f"{list(x.shape)}")
        y = np.empty((x2.shape[0], self.output_size), dtype=np.float32)
        self._m.forward(x2.__array_interface__["data"][0], x2.shape[0],
                        y.__array_interface__["data"][0])
        return y[0] if one else y

    __call__ = forward


class LM:
    """A language model (Llama family incl. MoE, GPT-2) with one session (KV cache).

    path: a GGUF, safetensors, PyTorch or llama2.c file, or a Hugging Face folder
    (config.json + weights). tokenizer: a path; default: the model's own (GGUF vocabulary,
    tokenizer.json / tokenizer.bin in its folder), None when it has none."""

    def __init__(self, path, *, tokenizer=None, config=None, lora=None, lora_scale=1.0,
                 backend=None, threads=0, n_ctx=0, kv_dtype="F32"):
        if kv_dtype not in ("F32", "F16"):
            raise UsageError("MISUSE", "kv_dtype is 'F32' or 'F16'")
        self._m = _ingot.lm_open(path, config, lora, float(lora_scale), backend, int(threads),
                                 int(n_ctx), kv_dtype == "F16")
        self.config = self._m.config()
        self.vocab_size = self.config["vocab"]
        self.tokenizer = None
        src = tokenizer if tokenizer is not None else path
        try:
            self.tokenizer = Tokenizer(src)
        except Exception:
            if tokenizer is not None:
                raise
            for name in ("tokenizer.json", "tokenizer.bin", "tok512.bin"):
                d = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
                if os.path.exists(os.path.join(d, name)):
                    try:
                        self.tokenizer = Tokenizer(os.path.join(d, name))
                        break
                    except Exception:  # noqa: S112 - try the next candidate
                        continue

    @property
    def pos(self):
        """Positions the session holds."""
        return self._m.pos()

    def reset(self, pos=0):
        """Forgets the session's positions >= pos (0: start over)."""
        self._m.rewind(int(pos))

    def _ids(self, tokens):
        if isinstance(tokens, str):
            if self.tokenizer is None:
                raise UsageError("MISUSE", "this model has no tokenizer: pass token ids")
            tokens = self.tokenizer.encode(tokens)
        return np.ascontiguousarray(np.asarray(tokens, dtype=np.int32).ravel())

    def eval(self, tokens, all=False):  # noqa: A002
        """Appends tokens to the session and returns float32 logits: [vocab] of the last token,
        or [len(tokens), vocab] with all=True (teacher forcing)."""
        ids = self._ids(tokens)
        out = np.frombuffer(self._m.eval(ids.tobytes(), bool(all)), dtype=np.float32)
        return out.reshape(len(ids), self.vocab_size) if all else out

    def generate(self, prompt=None, max_tokens=0, temperature=0.8, top_k=40, top_p=0.95,
                 min_p=0.05, repeat_penalty=1.0, seed=None, stream=True, ignore_eos=False,
                 reset=True, stop=None):
        """Generates from prompt (text, token ids, or None: from BOS), as `ingot generate` does.
        Sampling defaults are the CLI's (temperature 0.8, top_k 40, top_p 0.95, min_p 0.05);
        temperature 0 is greedy. stream=True: an iterator of text pieces (whole UTF-8 only);
        stream=False: the text. Without a tokenizer the pieces are token ids. reset=True starts
        a fresh session (False continues the current one). stop: stop strings (a str or bytes,
        or a list of them; needs a tokenizer): generation stops once the generated text
        contains one, the text ends right before it (text that could still become one is held
        back from the stream until resolved), last_stop is "string" and last_tokens ends with
        the token that completed it. The decode loop runs without the GIL."""
        if stop is None:
            stops = ()
        else:
            if isinstance(stop, (str, bytes, bytearray)):
                stop = [stop]
            stops = tuple(s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in stop)
            if stops and self.tokenizer is None:
                raise UsageError("MISUSE", "stop strings need a tokenizer: this model has none")
        if reset:
            self.reset()
        ids = self._ids(prompt if prompt is not None else [])
        keep_space = False
        if self.tokenizer is not None and len(ids):
            # after prompt text the generated text goes on from it (as `ingot generate`)
            keep_space = any(not self.tokenizer._t.is_control(int(t)) for t in ids)
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        args = (ids.tobytes(), int(max_tokens), float(temperature), int(top_k), float(top_p),
                float(min_p), float(repeat_penalty), int(seed) & ((1 << 64) - 1),
                bool(ignore_eos), self.tokenizer._t if self.tokenizer else None, keep_space,
                stops)
        if not stream:
            pieces = []

            def collect(token, piece):
                pieces.append(piece if self.tokenizer else b"" if token < 0 else
                              (f" {token}" if pieces else str(token)).encode())
                return True
            r = self._m.generate(*args, collect)
            self.last_tokens = np.frombuffer(r[0], dtype=np.int32).tolist()
            self.last_stop = _STOPS.get(r[1], str(r[1]))
            return b"".join(pieces).decode("utf-8", "replace")
        return self._stream(args)

    def _stream(self, args):
        q = queue.Queue()
        stop = threading.Event()
        done = object()

        def on_token(token, piece):
            if token >= 0 or piece:
                q.put(piece.decode("utf-8", "replace") if self.tokenizer else
                      token if token >= 0 else None)
            return not stop.is_set()

        def work():
            try:
                r = self._m.generate(*args, on_token)
                self.last_tokens = np.frombuffer(r[0], dtype=np.int32).tolist()
                self.last_stop = _STOPS.get(r[1], str(r[1]))
                q.put(done)
            except BaseException as e:  # handed to the consumer
                q.put(e)

        t = threading.Thread(target=work, daemon=True)
        t.start()
        try:
            while True:
                item = q.get()
                if item is done:
                    return
                if isinstance(item, BaseException):
                    raise item
                if item is not None and item != "":
                    yield item
        finally:
            stop.set()
            t.join()
