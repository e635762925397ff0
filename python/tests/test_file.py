"""ingot.open(): every shared fixture against its sidecar and against NumPy's and torch's own
readers, zero-copy proofs, lifetime, layouts, slices, metadata types, errors, threads."""
import gc
import glob
import hashlib
import json
import os
import shutil
import threading

import numpy as np
import pytest

import ingot
from conftest import CORPUS, FIXTURES, fixture

SIDECARS = sorted(glob.glob(os.path.join(FIXTURES, "**", "*.expected.json"), recursive=True))


def sha(b):
    return hashlib.sha256(b).hexdigest()


def stored_bytes(f, name):
    """The tensor's bytes as the file stores them, through the view."""
    a = f[name]
    info = f.info(name)
    return a.tobytes(order="F" if "fortran" in info.flags else "C")


@pytest.mark.parametrize("sidecar", SIDECARS, ids=lambda p: os.path.relpath(p, FIXTURES))
def test_fixture_matches_sidecar(sidecar):
    exp = json.load(open(sidecar))
    path = sidecar[: -len(".expected.json")]
    if exp.get("ingot_expect"):
        with pytest.raises(ingot.Error) as ei:
            ingot.open(path)
        assert ei.value.code and ei.value.message
        return
    with ingot.open(path) as f:
        assert f.size == exp["file_size"]
        names = f.keys()
        assert len(names) == len(exp["tensors"])
        for name, t in zip(names, exp["tensors"]):
            if "name" in t:
                assert name == t["name"]
            info = f.info(name)
            assert list(info.shape) == t["shape"], name
            assert info.nelem == t["n_elements"], name
            if "member" in t and "file_offset" not in t:  # deflated .npz member: one copy
                assert "not_mapped" in info.flags
            if "contiguous" not in t or t["contiguous"]:
                assert info.nbytes == t["nbytes"], name
                assert sha(stored_bytes(f, name)) == t["sha256"], name
            if "sha256_c_order_le" in t:
                a = f[name]
                le = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<")))
                assert sha(le.tobytes()) == t["sha256_c_order_le"], name
            if "dequant_sha256_f32le" in t:
                d = f.get_tensor(name, dequantize=True)
                assert d.dtype == np.float32 and list(d.shape) == t["shape"]
                assert sha(d.tobytes()) == t["dequant_sha256_f32le"], name
            if t.get("first4") and info.dtype not in ("C64",) and not info.dtype.startswith("Q"):
                v = f.get_tensor(name, "float64").ravel()
                n = min(4, v.size)
                np.testing.assert_array_equal(v[:n], np.array(t["first4"][:n], dtype=np.float64))


NPY = sorted(p for p in glob.glob(os.path.join(FIXTURES, "npy", "*.np[yz]"))
             if "REJECT" not in p)


@pytest.mark.parametrize("path", NPY, ids=os.path.basename)
def test_npy_equals_numpy_load(path):
    ref = np.load(path, allow_pickle=False)
    refs = dict(ref) if path.endswith(".npz") else {None: ref}
    with ingot.open(path) as f:
        names = f.keys()
        assert len(names) == len(refs)
        for name in names:
            r = refs[name if path.endswith(".npz") else None]
            a = f[name]
            assert a.dtype == r.dtype, name          # byte order included (>f4 stays >f4)
            assert a.shape == r.shape
            np.testing.assert_array_equal(a, r)
            assert not a.flags.writeable


def test_fortran_and_big_endian_are_views():
    with ingot.open(fixture("npy", "fortran_f4_3x4.npy")) as f:
        a = f[f.keys()[0]]
        assert a.flags.f_contiguous and not a.flags.c_contiguous
        assert isinstance(a.base, ingot._file._Owner)
    with ingot.open(fixture("npy", "be_f4_3x2.npy")) as f:
        a = f[f.keys()[0]]
        assert a.dtype.byteorder == ">" and isinstance(a.base, ingot._file._Owner)
        assert f.info(f.keys()[0]).flags == ("big_endian",) or "big_endian" in f.info(
            f.keys()[0]).flags


def test_deflated_npz_member_is_one_documented_copy():
    p = fixture("npy", "arrays_compressed.npz")
    ref = np.load(p)
    with ingot.open(p) as f:
        for n in f.keys():
            a = f[n]
            assert "not_mapped" in f.info(n).flags
            assert a.base is None or not isinstance(a.base, ingot._file._Owner)
            assert not a.flags.writeable
            np.testing.assert_array_equal(a, ref[n])


TORCH = sorted(glob.glob(os.path.join(FIXTURES, "torch", "*.pt")))


@pytest.mark.parametrize("path", TORCH, ids=os.path.basename)
def test_torch_checkpoint_equals_torch_load(path):
    torch = pytest.importorskip("torch")
    sd = torch.load(path, map_location="cpu")
    with ingot.open(path) as f:
        assert sorted(f.keys()) == sorted(sd.keys())
        for name, t in sd.items():
            a = f[name]
            info = f.info(name)
            assert list(info.shape) == list(t.shape)
            if t.dtype == torch.bfloat16:
                assert info.dtype == "BF16" and a.dtype == np.uint16
                bits = t.contiguous().view(torch.int16).numpy().view(np.uint16)
                np.testing.assert_array_equal(a, bits)
                np.testing.assert_array_equal(f.get_tensor(name, "float32"),
                                              t.float().numpy())
            else:
                np.testing.assert_array_equal(a, t.numpy())


# ---- zero copy ----------------------------------------------------------------------------

def test_views_share_the_mapping_and_refuse_writes():
    p = fixture("npy", "f4_128x256.npy")
    with ingot.open(p) as f:
        n = f.keys()[0]
        a, b = f[n], f.get_tensor(n)
        assert np.shares_memory(a, b)
        assert a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
        owner = a.base
        assert isinstance(owner, ingot._file._Owner)
        assert isinstance(owner.handle, ingot._ingot.Handle)
        assert owner.__array_interface__["data"] == (a.__array_interface__["data"][0], True)
        assert not a.flags.writeable and not a.flags.owndata
        with pytest.raises(ValueError):
            a[0, 0] = 1.0
        with pytest.raises(ValueError):
            a.flags.writeable = True
        # a slice of a view is still a view of the same memory
        assert np.shares_memory(a[3:5], b)


def test_view_address_is_in_the_file_at_the_tensor_offset():
    p = fixture("safetensors", "hfsamples_e_f16.safetensors")
    with ingot.open(p) as f:
        n0, n1 = f.keys()[0], f.keys()[-1]
        a0, a1 = f[n0], f[n1]
        d = a1.__array_interface__["data"][0] - a0.__array_interface__["data"][0]
        assert d == f.info(n1).offset - f.info(n0).offset


# ---- lifetime -----------------------------------------------------------------------------

def test_views_outlive_close_and_gc():
    p = fixture("npy", "f4_128x256.npy")
    ref = np.load(p)
    f = ingot.open(p)
    a = f[f.keys()[0]]
    s = a[10:20]
    f.close()
    assert f.closed
    with pytest.raises(ingot.UsageError):
        f.keys()
    del f
    gc.collect()
    np.testing.assert_array_equal(a, ref)
    del a
    gc.collect()
    np.testing.assert_array_equal(s, ref[10:20])   # the slice alone keeps the mapping


def test_many_open_close_cycles_do_not_leak_handles():
    p = fixture("npy", "f4_2x3.npy")
    fds = len(os.listdir("/proc/self/fd"))
    for _ in range(300):
        with ingot.open(p) as f:
            a = f[f.keys()[0]]
        del a
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) <= fds + 2


# ---- metadata, info, dtypes ---------------------------------------------------------------

_GGUF_TYPES = {"UINT8": "u8", "INT8": "i8", "UINT16": "u16", "INT16": "i16", "UINT32": "u32",
               "INT32": "i32", "UINT64": "u64", "INT64": "i64", "FLOAT32": "f32",
               "FLOAT64": "f64", "BOOL": "bool", "STRING": "string"}


def test_gguf_metadata_python_types():
    p = fixture("gguf", "gguf_all_types.gguf")
    exp = json.load(open(p + ".expected.json"))["metadata"]
    with ingot.open(p) as f:
        md, types = f.metadata, f.metadata_types
        assert list(md) == list(exp)
        for k, e in exp.items():
            if e["type"] == "ARRAY":
                assert types[k] == _GGUF_TYPES[e["item_type"]] + "[]"
            else:
                assert types[k] == _GGUF_TYPES[e["type"]]
            assert md[k] == e["value"], k
            assert type(md[k]) is type(e["value"]), k


def test_safetensors_metadata_is_str():
    p = fixture("safetensors", "flux_model_with_metadata.safetensors")
    exp = json.load(open(p + ".expected.json"))["metadata"]
    with ingot.open(p) as f:
        for k, v in exp.items():
            assert f.metadata[k] == v


def test_info_fields():
    p = fixture("safetensors", "hfsamples_e_f16.safetensors")
    exp = json.load(open(p + ".expected.json"))
    with ingot.open(p) as f:
        t = exp["tensors"][0]
        i = f.info(t["name"])
        assert i.dtype == "F16" and list(i.shape) == t["shape"] and i.nbytes == t["nbytes"]
        assert i.offset == t["file_offset"] and i.index == 0 and i.param_id is None
        assert f.format == "safetensors"
        with pytest.raises(ingot.NotFoundError) as ei:
            f.info("no such tensor")
        assert isinstance(ei.value, KeyError) and ei.value.tensor == "no such tensor"
        with pytest.raises(KeyError):
            f["no such tensor"]
        assert t["name"] in f and "nope" not in f and len(f) == len(exp["tensors"])


def test_gguf_blocks_raw_and_dequantized():
    p = fixture("gguf", "gguf_kquants_random_blocks.gguf")
    exp = json.load(open(p + ".expected.json"))
    with ingot.open(p) as f:
        for t in exp["tensors"]:
            raw = f[t["name"]]
            if t["dtype"].startswith(("Q", "IQ", "TQ")):
                assert raw.dtype == np.uint8
                assert raw.shape[:-1] == tuple(t["shape"][:-1])
                assert raw.shape[-1] == t["shape"][-1] // t["block_size"] * t["type_size"]
                assert raw.nbytes == t["nbytes"] and sha(raw.tobytes()) == t["sha256"]
                assert isinstance(raw.base, ingot._file._Owner)


def test_bf16_and_f8_are_bits_plus_decoded_float32():
    p = fixture("safetensors", "hfsamples_e_f16.safetensors")
    for side in sorted(glob.glob(os.path.join(FIXTURES, "safetensors", "*.expected.json"))):
        exp = json.load(open(side))
        if any(t["dtype"] in ("BF16", "F8_E4M3", "F8_E5M2") for t in exp["tensors"]):
            p = side[: -len(".expected.json")]
            break
    else:
        pytest.skip("no BF16/F8 safetensors fixture")
    torch = pytest.importorskip("torch")
    with ingot.open(p) as f:
        for t in exp["tensors"]:
            if t["dtype"] not in ("BF16", "F8_E4M3", "F8_E5M2"):
                continue
            raw = f[t["name"]]
            assert raw.dtype == (np.uint16 if t["dtype"] == "BF16" else np.uint8)
            tt = {"BF16": torch.bfloat16, "F8_E4M3": getattr(torch, "float8_e4m3fn", None),
                  "F8_E5M2": getattr(torch, "float8_e5m2", None)}[t["dtype"]]
            dec = f.get_tensor(t["name"], "float32")
            if tt is None:
                continue
            bits = torch.from_numpy(np.array(raw).view(
                np.int16 if raw.dtype == np.uint16 else np.int8)).view(tt)
            np.testing.assert_array_equal(dec, bits.float().numpy())


# ---- slices ---------------------------------------------------------------------------------

@pytest.mark.parametrize("io", ["mmap", "pread"])
def test_get_slice(io):
    p = fixture("npy", "f4_128x256.npy")
    ref = np.load(p)
    with ingot.open(p, io=io) as f:
        n = f.keys()[0]
        s = f.get_slice(n)
        assert s.get_shape() == [128, 256] and s.get_dtype() == "F32"
        for key in [(slice(0, 4), slice(None)), (5,), (slice(-3, None), slice(1, 9, 2)),
                    (slice(10, 2),), (-1, 7), (slice(None, None, 3), 0)]:
            np.testing.assert_array_equal(s[key], ref[key])
        if io == "mmap":
            assert np.shares_memory(s[0:4, :], f[n])
        else:
            a = f[n]
            assert not isinstance(a.base, ingot._file._Owner)
            np.testing.assert_array_equal(a, ref)
        with pytest.raises(IndexError):
            s[128]


# ---- verify ---------------------------------------------------------------------------------

def test_verify_names_the_damaged_tensor(tmp_path):
    p = str(tmp_path / "m.ingot")
    a = np.arange(1000, dtype=np.float32)
    b = np.ones((7, 3), dtype=np.float64)
    ingot.save({"a": a, "b": b}, p)
    with ingot.open(p, verify="all") as f:
        r = f.verify(threads=2)
        assert "tensor_crc32c" in r["checked"] and r["tensors_with_checksum"] == 2
        off = f.info("b").offset
    data = bytearray(open(p, "rb").read())
    data[off + 5] ^= 0x10
    bad = str(tmp_path / "bad.ingot")
    open(bad, "wb").write(bytes(data))
    with ingot.open(bad) as f:                      # opens: only the header is checked
        with pytest.raises(ingot.ChecksumError) as ei:
            f.verify()
        assert ei.value.tensor == "b" and ei.value.code == "BAD_CHECKSUM"
        assert isinstance(ei.value, ingot.FormatError)
    with pytest.raises(ingot.ChecksumError):
        ingot.open(bad, verify="all")


def test_verify_releases_the_gil(tmp_path):
    p = str(tmp_path / "big.ingot")
    ingot.save({"x": np.zeros(64 << 20, dtype=np.uint8)}, p, fsync=False)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            stop.wait(0.0005)
    with ingot.open(p) as f:
        t = threading.Thread(target=ticker)
        t.start()
        for _ in range(5):
            f.verify()
        stop.set()
        t.join()
    assert len(ticks) > 5


# ---- errors and the malformed corpus --------------------------------------------------------

def _manifest():
    rows = []
    with open(os.path.join(CORPUS, "bad", "MANIFEST")) as m:
        for line in m:
            parts = line.split()
            if len(parts) >= 3 and not line.startswith("#"):
                rows.append(parts[:3])
    return rows


def test_every_corpus_file_raises_never_crashes():
    rows = _manifest()
    assert len(rows) > 200
    for fname, code, phase in rows:
        path = os.path.join(CORPUS, "bad", fname)
        for io in ("mmap", "pread"):
            if phase == "open":
                with pytest.raises(ingot.Error) as ei:
                    ingot.open(path, io=io, format="ingot")
            else:
                with ingot.open(path, io=io, format="ingot") as f:
                    for n in f.keys():
                        f.info(n)
                    with pytest.raises(ingot.Error) as ei:
                        f.verify()
            e = ei.value
            assert e.code == code, (fname, io, str(e))
            assert e.message and isinstance(e.status, int)
            assert e.offset is None or isinstance(e.offset, int)


FUZZ = os.path.join(os.path.dirname(CORPUS), "..", "fuzz", "corpus")
FILE_CORPORA = ["fuzz_burnpack", "fuzz_gguf", "fuzz_llama2c", "fuzz_mag", "fuzz_native_strict",
                "fuzz_npy", "fuzz_open_native", "fuzz_rmd1", "fuzz_safetensors", "fuzz_tenzor",
                "fuzz_torch_zip", "fuzz_zip", "fuzz_roundtrip_native"]


@pytest.mark.parametrize("corpus", FILE_CORPORA)
def test_every_fuzz_seed_is_an_error_or_a_file(corpus):
    """Every seed of the file-format fuzz corpora opens or raises ingot.Error; the tensors and
    metadata of those that open can be read (or raise ingot.Error), never a crash."""
    paths = sorted(glob.glob(os.path.join(FUZZ, corpus, "*")))
    assert paths, corpus
    opened = 0
    for p in paths:
        try:
            with ingot.open(p) as f:
                opened += 1
                f.metadata
                for n in f.keys():
                    try:
                        a = f.get_tensor(n)
                        a.tobytes()                         # every byte of the view readable
                    except ingot.Error as e:
                        assert e.code
        except ingot.Error as e:
            assert e.code and e.message


@pytest.mark.parametrize("corpus", ["fuzz_tok_bin", "fuzz_tok_gguf", "fuzz_tok_json"])
def test_every_tokenizer_fuzz_seed_is_an_error_or_a_tokenizer(corpus):
    paths = sorted(glob.glob(os.path.join(FUZZ, corpus, "*")))
    assert paths, corpus
    for p in paths:
        try:
            t = ingot.Tokenizer(p)
        except ingot.Error as e:
            assert e.code
            continue
        try:
            ids = t.encode("Hello wörld 123 <s>", parse_special=True)
            t.decode(ids)
        except ingot.Error as e:
            assert e.code


def test_the_asan_run_is_instrumented():
    """run_tests.sh's second pass sets INGOT_PY_UNDER_ASAN=1: it must really run under ASan
    (and the first pass must not)."""
    maps = open("/proc/self/maps").read()
    assert ingot._ingot.__file__ in maps
    assert ("libasan" in maps) == (os.environ.get("INGOT_PY_UNDER_ASAN") == "1")


def test_error_attributes():
    with pytest.raises(ingot.Error) as ei:
        ingot.open(os.path.join(CORPUS, "bad", "trunc_empty.ingot"))
    e = ei.value
    assert e.code == "TRUNCATED" and e.status == 1 and "TRUNCATED" in str(e)
    with pytest.raises(ingot.UsageError):
        ingot.open(fixture("npy", "f4_2x3.npy"), verify="sometimes")
    with pytest.raises(FileNotFoundError) as ei:
        ingot.open(os.path.join(CORPUS, "no such file.ingot"))
    assert isinstance(ei.value, ingot.NotFoundError) and ei.value.code == "NOT_FOUND"
    assert "no such file.ingot" in str(ei.value)


# ---- threads --------------------------------------------------------------------------------

def test_one_file_many_threads():
    p = fixture("safetensors", "flux_model_torch.safetensors")
    with ingot.open(p) as f:
        names = f.keys()
        want = {n: sha(np.ascontiguousarray(f[n]).tobytes()) for n in names}
        errors = []

        def work():
            try:
                for _ in range(20):
                    for n in names:
                        if sha(np.ascontiguousarray(f[n]).tobytes()) != want[n]:
                            errors.append(n)
                    f.verify()
                    f.metadata
            except Exception as e:  # pragma: no cover - reported below
                errors.append(repr(e))
        ts = [threading.Thread(target=work) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert errors == []


def test_every_format_opens():
    """One file of each format the library reads, opened and read through the views."""
    paths = [fixture("burnpack", "synthetic", "b_multi_dtype_v021.bpk"),
             fixture("mag", "storage", "storage_v100_mixed.mag"),
             fixture("tenzor", "handmade", "mixed_dtypes.tenzor"),
             fixture("rmd1", "handmade", "mlp_2_3_1_relu_sigmoid_f32.rmd1"),
             fixture("models", "stories260K", "stories260K.bin")]
    formats = set()
    for p in paths:
        with ingot.open(p) as f:
            formats.add(f.format)
            assert len(f) > 0
            for n in f.keys():
                a = f[n]
                i = f.info(n)
                assert a.nbytes == i.nbytes or i.dtype.startswith(("F4", "F6"))
    assert len(formats) == len(paths)
