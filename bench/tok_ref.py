#!/usr/bin/python3
"""tok_ref.py - the Python references of bench_tokenizer, on the corpus it wrote.

  /usr/bin/python3 bench/tok_ref.py build/bench_tokenizer_corpus.txt [--reps N]

Same chunks as bench_tokenizer (lines joined until a chunk holds at least 4096 bytes), CPU time of
this process (time.process_time), median of --reps runs, MB/s of input text.
  gpt-2  a pure-Python GPT-2 byte-level BPE written for this bench (OpenAI's published algorithm:
         bytes_to_unicode, the GPT-2 regex via Debian's python3-regex, merges by rank, a word cache
         kept across calls as in OpenAI's encoder) on ../shared/fixtures/tokenizers/gpt2.
  spm    Debian's python3-sentencepiece (the C++ library behind a Python call per chunk) with a
         BPE model built from ggml-vocab-llama-spm.gguf's pieces, scores and types (python3-protobuf
         writes the model); its ids are checked against llama.cpp's vectors before timing.
Prints ids per case, so they can be compared with bench_tokenizer's counts.
"""
import json
import os
import statistics
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, '..', '..', 'shared', 'fixtures')


def chunks(data):
    out, i, n = [], 0, len(data)
    while i < n:
        e = i
        while e < n and e - i < 4096:
            j = data.find(b'\n', e)
            e = n if j < 0 else j + 1
        out.append(data[i:e])
        i = e
    return out


# ---- GPT-2, pure Python ---------------------------------------------------------------------
def bytes_to_unicode():
    bs = list(range(ord('!'), ord('~') + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    k = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + k)
            k += 1
    return dict(zip(bs, map(chr, cs)))


class GPT2:
    def __init__(self, folder):
        import regex
        with open(os.path.join(folder, 'encoder.json'), encoding='utf-8') as f:
            self.encoder = json.load(f)
        with open(os.path.join(folder, 'vocab.bpe'), encoding='utf-8') as f:
            lines = f.read().split('\n')[1:]
        merges = [tuple(l.split(' ')) for l in lines if l]
        self.ranks = {m: i for i, m in enumerate(merges)}
        self.b2u = bytes_to_unicode()
        self.cache = {}
        self.pat = regex.compile(
            r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = list(token)
        while len(word) > 1:
            pairs = [(self.ranks.get((word[i], word[i + 1]), 1 << 60), i)
                     for i in range(len(word) - 1)]
            rank, _ = min(pairs)
            if rank == 1 << 60:
                break
            a, b = word[pairs[[p[0] for p in pairs].index(rank)][1]], None
            first = word[[p[0] for p in pairs].index(rank)]
            second = word[[p[0] for p in pairs].index(rank) + 1]
            new, i = [], 0
            while i < len(word):
                if i < len(word) - 1 and word[i] == first and word[i + 1] == second:
                    new.append(first + second)
                    i += 2
                else:
                    new.append(word[i])
                    i += 1
            word = new
        out = [self.encoder[w] for w in word]
        self.cache[token] = out
        return out

    def encode(self, data):
        # invalid UTF-8 does not occur in the corpus (it is built from UTF-8 sources)
        text = data.decode('utf-8')
        ids = []
        for tok in self.pat.findall(text):
            ids.extend(self.bpe(''.join(self.b2u[b] for b in tok.encode('utf-8'))))
        return ids


# ---- SentencePiece --------------------------------------------------------------------------
def gguf_vocab(path):
    """tokens, scores, types of a GGUF's tokenizer.ggml.* arrays (a minimal GGUF v3 reader)."""
    d = open(path, 'rb').read()
    assert d[:4] == b'GGUF'
    n_t, n_kv = struct.unpack_from('<QQ', d, 8)
    p = 24
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def rstr(p):
        n, = struct.unpack_from('<Q', d, p)
        return d[p + 8:p + 8 + n], p + 8 + n

    def rval(t, p):
        if t == 8:
            return rstr(p)
        if t == 9:
            et, n = struct.unpack_from('<IQ', d, p)
            p += 12
            out = []
            for _ in range(n):
                v, p = rval(et, p)
                out.append(v)
            return out, p
        fmt = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?', 10: 'Q', 11: 'q',
               12: 'd'}[t]
        return struct.unpack_from('<' + fmt, d, p)[0], p + sizes[t]

    kv = {}
    for _ in range(n_kv):
        k, p = rstr(p)
        t, = struct.unpack_from('<I', d, p)
        v, p = rval(t, p + 4)
        kv[k.decode()] = v
    return (kv['tokenizer.ggml.tokens'], kv['tokenizer.ggml.scores'],
            kv['tokenizer.ggml.token_type'])


def spm_model(path):
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb
    toks, scores, types = gguf_vocab(path)
    m = pb.ModelProto()
    for t, s, ty in zip(toks, scores, types):
        p = m.pieces.add()
        p.piece = t.decode('utf-8')
        p.score = s
        p.type = ty
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    m.trainer_spec.vocab_size = len(toks)
    m.trainer_spec.byte_fallback = True
    m.normalizer_spec.name = 'identity'
    m.normalizer_spec.add_dummy_prefix = True
    m.normalizer_spec.remove_extra_whitespaces = False
    m.normalizer_spec.escape_whitespaces = True
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(m.SerializeToString())
    return sp


def check_spm(sp):
    base = os.path.join(FIX, 'tokenizers', 'llama.cpp', 'ggml-vocab-llama-spm.gguf')
    cases = open(base + '.inp', 'rb').read().split(b'\n__ggml_vocab_test__\n')[:-1]
    outs = open(base + '.out').read().split('\n')
    ok = sum(sp.EncodeAsIds(c.decode('utf-8')) == [int(x) for x in o.split()]
             for c, o in zip(cases, outs))
    return ok, len(cases)


def run(name, fn, parts, reps, total):
    times, n_ids = [], 0
    for _ in range(reps):
        t0 = time.process_time()
        n_ids = sum(len(fn(c)) for c in parts)
        times.append(time.process_time() - t0)
    med = statistics.median(times)
    print('%-34s encode %8.2f MB/s (%d ids)' % (name, total / med / 1e6, n_ids))


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    reps = int(sys.argv[sys.argv.index('--reps') + 1]) if '--reps' in sys.argv else 3
    data = open(sys.argv[1], 'rb').read()
    parts = chunks(data)
    print('corpus: %d bytes, %d chunks; python %s'
          % (len(data), len(parts), sys.version.split()[0]))
    g = GPT2(os.path.join(FIX, 'tokenizers', 'gpt2'))
    run('gpt-2 pure Python (cache kept)', g.encode, parts, reps, len(data))
    sp = spm_model(os.path.join(FIX, 'tokenizers', 'llama.cpp', 'ggml-vocab-llama-spm.gguf'))
    ok, n = check_spm(sp)
    print('sentencepiece %s model from the GGUF: %d/%d llama.cpp vectors exact'
          % (__import__('sentencepiece').__version__, ok, n))
    run('llama-2 python3-sentencepiece', lambda c: sp.EncodeAsIds(c.decode('utf-8')), parts, reps,
        len(data))
    return 0


if __name__ == '__main__':
    sys.exit(main())
