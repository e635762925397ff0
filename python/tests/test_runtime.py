"""The runtime: ingot.LM on stories260K against the CLI (`ingot generate`, `ingot tokenize`)
and the committed golden tokens and logits, streaming, the GIL; ingot.MLP against NumPy."""
import os
import subprocess
import threading

import numpy as np
import pytest

import ingot
from conftest import ROOT, fixture

MODEL = fixture("models", "stories260K", "stories260K.gguf")
GOLDEN = os.path.dirname(MODEL) + "/golden/"


def cli():
    """The ingot CLI built beside the package (run_tests.sh sets INGOT_CLI)."""
    path = os.environ.get("INGOT_CLI")
    for p in [path] + [os.path.join(ROOT, d, "tools", "cli", "ingot")
                       for d in ("build-test", "build")]:
        if p and os.access(p, os.X_OK):
            return p
    pytest.fail("no ingot CLI: set INGOT_CLI (python/run_tests.sh builds one)")


def run_cli(*args):
    return subprocess.run([cli(), *args], check=True, capture_output=True).stdout.decode()


@pytest.fixture(scope="module")
def lm():
    return ingot.LM(MODEL)


def test_greedy_generation_equals_golden_and_cli(lm):
    text = lm.generate(temperature=0, max_tokens=200, stream=False)
    want = np.load(GOLDEN + "tokens_greedy_bos_plus_200.npy")
    assert lm.last_tokens == want[1:].tolist()
    assert text == open(GOLDEN + "llama2c_run_t0.0_n200.txt").read().rstrip("\n")
    assert text + "\n" == run_cli("generate", MODEL, "--temp", "0", "-n", "200")


@pytest.mark.parametrize("kw,args", [
    ({"temperature": 0.8, "seed": 42}, ["--seed", "42"]),
    ({"temperature": 1.0, "top_k": 5, "top_p": 0.5, "seed": 7},
     ["--temp", "1.0", "--top-k", "5", "--top-p", "0.5", "--seed", "7"]),
])
def test_sampled_generation_equals_cli(lm, kw, args):
    text = lm.generate(max_tokens=64, stream=False, **kw)
    assert text + "\n" == run_cli("generate", MODEL, "-n", "64", *args)


def test_prompt_and_stream_equal_cli(lm):
    prompt = "Once upon a time Tim"
    pieces = list(lm.generate(prompt, temperature=0, max_tokens=64))
    assert len(pieces) > 10 and all(isinstance(p, str) for p in pieces)
    whole = lm.generate(prompt, temperature=0, max_tokens=64, stream=False)
    assert "".join(pieces) == whole
    assert whole + "\n" == run_cli("generate", MODEL, "--prompt", prompt, "--temp", "0",
                                   "-n", "64")


def test_stop_strings_end_the_text_before_them(lm):
    golden = open(GOLDEN + "llama2c_run_t0.0_n200.txt").read().rstrip("\n")
    ids = np.load(GOLDEN + "tokens_greedy_bos_plus_200.npy")[1:].tolist()
    want = golden[:golden.index("ig, r")]           # starts inside " big", ends inside " red"
    text = lm.generate(temperature=0, max_tokens=200, stream=False, stop=["zzz", "ig, r"])
    assert text == want
    assert lm.last_stop == "string"
    n = len(lm.last_tokens)
    assert lm.last_tokens == ids[:n]
    # the last token is the one completing the match: its text holds the string, the text
    # without it does not
    full = lm.tokenizer.decode(ids[:n])
    assert "ig, r" in full and "ig, r" not in lm.tokenizer.decode(ids[:n - 1])
    assert text + "\n" == run_cli("generate", MODEL, "--temp", "0", "-n", "200", "--stop", "zzz",
                                   "--stop", "ig, r")
    # streamed (bytes given): the same text; what could be the string's start is held back
    pieces = list(lm.generate(temperature=0, max_tokens=200, stop=b"ig, r"))
    assert "".join(pieces) == want and lm.last_stop == "string"
    # a string that never occurs
    assert lm.generate(temperature=0, max_tokens=200, stream=False, stop="Lily's dog") == golden
    assert lm.last_stop == "length" and len(lm.last_tokens) == 200


def test_stop_strings_refused(lm):
    with pytest.raises(ingot.UsageError, match="stop string 1 is empty"):
        lm.generate(temperature=0, max_tokens=5, stream=False, stop=["a", ""])
    assert lm.pos == 0
    bare = ingot.LM(MODEL)
    bare.tokenizer = None                          # a model without one
    with pytest.raises(ingot.UsageError, match="need a tokenizer"):
        bare.generate(temperature=0, max_tokens=5, stream=False, stop="a")


def test_stream_stops_early(lm):
    g = lm.generate(temperature=0, max_tokens=200)
    first = [next(g) for _ in range(3)]
    g.close()                                  # the worker stops at the next token
    assert "".join(first).startswith("Once")
    assert lm.last_stop == "callback" and len(lm.last_tokens) < 200


def test_eval_logits_equal_golden(lm):
    toks = np.load(GOLDEN + "tokens_greedy_bos_plus_200.npy")[:32]
    want = np.load(GOLDEN + "logits_first32.npy")
    lm.reset()
    got = lm.eval(toks, all=True)
    assert got.shape == (32, 512) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    lm.reset()
    last = lm.eval(toks[:5])
    assert last.shape == (512,) and lm.pos == 5
    np.testing.assert_allclose(last, want[4], rtol=1e-4, atol=1e-4)
    more = lm.eval(toks[5:8])                 # continues the session
    np.testing.assert_allclose(more, want[7], rtol=1e-4, atol=1e-4)


def test_tokenizer_equals_cli(lm):
    text = "Hello world, once upon a time"
    ids = lm.tokenizer.encode(text)
    assert ids == [int(x) for x in run_cli("tokenize", MODEL, "--text", text).split()]
    assert lm.tokenizer.decode(ids) == text
    assert lm.tokenizer.vocab_size == 512 and lm.tokenizer.bos == 1
    assert lm.tokenizer.encode(text, add_special=False) == ids[1:]


def test_llama2c_checkpoint_with_its_tokenizer():
    d = os.path.dirname(MODEL)
    lm = ingot.LM(d + "/stories260K.bin", tokenizer=d + "/tok512.bin")
    text = lm.generate(temperature=0, max_tokens=200, stream=False)
    assert text == open(GOLDEN + "llama2c_run_t0.0_n200.txt").read().rstrip("\n")


def test_generation_releases_the_gil():
    lm = ingot.LM(MODEL, n_ctx=2048)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            stop.wait(0.001)
    t = threading.Thread(target=ticker)
    t.start()
    lm.eval([3 + k % 500 for k in range(1500)])              # one long prefill, a single C call
    stop.set()
    t.join()
    assert len(ticks) > 3


def test_errors():
    with pytest.raises(ingot.Error):
        ingot.LM(fixture("npy", "f4_2x3.npy"))
    lm = ingot.LM(MODEL, n_ctx=16)
    with pytest.raises(ingot.Error):
        lm.eval(list(range(40)))               # past the cache
    with pytest.raises(ingot.Error):
        lm.eval([100000])                      # not a token


def test_mlp_forward_equals_numpy():
    p = fixture("rmd1", "handmade", "mlp_2_3_1_relu_sigmoid_f32.rmd1")
    with ingot.open(p) as f:
        w0, b0 = f["layers.0.weight"], f["layers.0.bias"]
        w1, b1 = f["layers.1.weight"], f["layers.1.bias"]
    m = ingot.MLP(p)
    assert (m.input_size, m.output_size, m.layers) == (2, 1, 2)
    x = np.array([[0.5, -1.0], [2.0, 3.0], [0.0, 0.0]], dtype=np.float32)
    h = np.maximum(x @ w0.T + b0, 0)
    want = 1 / (1 + np.exp(-(h @ w1.T + b1)))
    np.testing.assert_allclose(m.forward(x), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(m.forward(x[1]), want[1], rtol=1e-6, atol=1e-6)
    with pytest.raises(ingot.UsageError):
        m.forward(np.zeros((2, 3), np.float32))


def test_one_session_refuses_a_second_caller_while_generating():
    lm = ingot.LM(MODEL)
    g = lm.generate(temperature=0, max_tokens=300, ignore_eos=True)
    next(g)                                   # the worker thread is inside ingot_lm_generate
    with pytest.raises(ingot.UsageError):
        lm.eval([1, 2, 3])
    rest = "".join(g)
    assert len(lm.last_tokens) == 300 and rest
    assert lm.eval([1]).shape == (512,)       # usable again once the loop is done


def test_hash_of_the_model_file_is_format_independent(tmp_path):
    # the LM's weights converted to safetensors keep their content digests
    st = str(tmp_path / "m.safetensors")
    ingot.convert(MODEL, st)
    a, b = ingot.hash(MODEL), ingot.hash(st)
    assert a["model"] == b["model"] and a["tensors"] == b["tensors"]


LMDIR = os.path.join(ROOT, "tests", "golden", "lm")


@pytest.mark.parametrize("name", ["llama", "gpt2", "moe", "qwen2"])
def test_hf_folder_and_gguf_equal_torch(name):
    """A Hugging Face folder (config.json + safetensors, sharded for llama) and its llama.cpp-
    layout GGUF give torch's logits (the goldens of tests/gen_lm_models.py)."""
    toks = np.load(os.path.join(LMDIR, name + "_tokens.npy"))
    want = np.load(os.path.join(LMDIR, name + "_logits.npy"))
    for src in (name + "_hf", name + ".gguf"):
        lm = ingot.LM(os.path.join(LMDIR, src))
        got = lm.eval(toks, all=True)
        assert got.shape == want.shape
        err = np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want)))
        assert err <= 1e-4, (src, err)


@pytest.mark.parametrize("src", ["llama_hf", "llama.gguf"])
def test_lora_adapter_equals_torch_merged(src):
    """A PEFT adapter (r 4, alpha 8) at scale 0.5 on an HF folder and on the GGUF: torch's
    logits of the merged model."""
    toks = np.load(os.path.join(LMDIR, "llama_tokens.npy"))
    want = np.load(os.path.join(LMDIR, "llama_lora_logits.npy"))
    lm = ingot.LM(os.path.join(LMDIR, src), lora=os.path.join(LMDIR, "llama_lora"),
                  lora_scale=0.5)
    got = lm.eval(toks, all=True)
    err = np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want)))
    assert err <= 1e-4, err
    base = ingot.LM(os.path.join(LMDIR, src)).eval(toks, all=True)
    assert np.max(np.abs(base - want)) > 1e-3      # the adapter changed something


# ---- Tokenizer.encode_batch --------------------------------------------------------------------
TOK = [("tokenizers", "llama3", "tokenizer.json"),
       ("tokenizers", "llama.cpp", "ggml-vocab-gpt-2.gguf"),
       ("tokenizers", "llama.cpp", "ggml-vocab-llama-spm.gguf")]


def vector_texts():
    """llama.cpp's tokenizer test inputs (every script, whitespace runs, special-token text),
    with some prose repeated so that a word cache has hits."""
    raw = open(fixture("tokenizers", "llama.cpp", "ggml-vocab-gpt-2.gguf.inp"),
               encoding="utf-8").read()
    texts = [t[1:] if t.startswith("\n") else t for t in raw.split("\n__ggml_vocab_test__\n")]
    prose = "Once upon a time, there was a little girl named Lily. She loved to play outside."
    return texts + [prose] * 3 + ["<s> and </s> and <|endoftext|>", "", "\u4e2d\u6587 " * 40]


@pytest.mark.parametrize("path", TOK, ids=lambda p: p[-1])
def test_encode_batch_equals_encode(path):
    t = ingot.Tokenizer(fixture(*path))
    texts = vector_texts()
    for add, parse in [(True, False), (False, True), (False, False)]:
        want = [t.encode(x, add_special=add, parse_special=parse) for x in texts]
        assert sum(map(len, want)) > len(texts)
        for cache in (0, 64, 2 << 20):          # none, one entry (constant eviction), default
            got = t.encode_batch(texts, add_special=add, parse_special=parse, cache_bytes=cache)
            assert got == want, (add, parse, cache)
        # the same texts twice in one batch: the second pass finds its words in the cache
        assert t.encode_batch(texts * 2, add_special=add, parse_special=parse) == want * 2


def test_encode_batch_inputs():
    t = ingot.Tokenizer(fixture(*TOK[0]))
    assert t.encode_batch([]) == []
    assert t.encode_batch(["", b""], add_special=False) == [[], []]
    mixed = ["caf\u00e9", "caf\u00e9".encode(), bytearray(b"caf\xc3\xa9"),
             memoryview(b"caf\xc3\xa9")]
    got = t.encode_batch(mixed)
    assert got == [t.encode("caf\u00e9")] * 4
    assert t.encode_batch(iter(["a b", "c"])) == [t.encode("a b"), t.encode("c")]
    with pytest.raises(TypeError):
        t.encode_batch([12])                   # not twelve zero bytes
    with pytest.raises(TypeError):
        t.encode(12)
    with pytest.raises(ValueError):
        t.encode_batch(["a"], cache_bytes=-1)
    with pytest.raises(ingot.LimitError):          # the library's bound on a cache: 1 GiB
        t.encode_batch(["a"], cache_bytes=(1 << 30) + 1)


@pytest.mark.parametrize("path", TOK, ids=lambda p: p[-1])
def test_own_word_caches(path):
    """The tokenizer's own word caches (which encode borrows) change no id: default, none, one
    entry, one cache; the second encode of a text finds its words there."""
    texts = vector_texts()
    ref = ingot.Tokenizer(fixture(*path), word_cache_bytes=0)
    want = [ref.encode(x, add_special=False) for x in texts]
    assert ref.word_cache_stats() == {"words": 0, "bytes": 0, "hits": 0, "hit_bytes": 0}
    for kw in ({}, {"word_cache_bytes": 64}, {"word_caches": 1}, {"word_cache_bytes": 1 << 16,
                                                                  "word_caches": 64}):
        t = ingot.Tokenizer(fixture(*path), **kw)
        for _ in range(2):
            assert [t.encode(x, add_special=False) for x in texts] == want, kw
    t = ingot.Tokenizer(fixture(*path), word_caches=1)
    t.encode("the cat sat on the mat with the other cat")
    s1 = t.word_cache_stats()
    assert s1["words"] > 3
    t.encode("the cat sat on the mat with the other cat")
    s2 = t.word_cache_stats()
    assert s2["words"] - s1["words"] == s1["words"]
    assert s2["hits"] - s1["hits"] == s1["words"]
    assert s2["hit_bytes"] > 0


def test_own_word_caches_options():
    p = fixture(*TOK[1])
    with pytest.raises(ValueError):
        ingot.Tokenizer(p, word_cache_bytes=-1)
    with pytest.raises(ValueError):
        ingot.Tokenizer(p, word_caches=0)
    with pytest.raises(ingot.LimitError):
        ingot.Tokenizer(p, word_caches=65)
    with pytest.raises(ingot.LimitError):
        ingot.Tokenizer(p, word_caches=1 << 40)
    with pytest.raises(ingot.LimitError):
        ingot.Tokenizer(p, word_cache_bytes=(1 << 30) + 1)
    with ingot.open(p) as f:                       # from an open GGUF, with options
        t = ingot.Tokenizer(f, word_cache_bytes=4096, word_caches=3)
        assert t.encode("hello world", add_special=False) == \
            ingot.Tokenizer(p, word_cache_bytes=0).encode("hello world", add_special=False)


def test_encode_batch_from_threads_at_once():
    """Each call has its own cache and scratch: calls on one tokenizer from several threads
    (the GIL released in each) give every thread encode's ids."""
    t = ingot.Tokenizer(fixture(*TOK[0]))
    texts = vector_texts() * 4
    want = [t.encode(x) for x in texts]
    out, errors = {}, []

    def work(k):
        try:
            for _ in range(5):
                out[k] = t.encode_batch(texts, cache_bytes=(k + 1) * 4096)
                assert out[k] == want
        except Exception as e:                     # reported below, in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors and all(out[k] == want for k in range(4))
