"""ingot.save() in every writable format, ingot.convert() (cast, quantize, select, rename,
metadata edits), ingot.hash/diff/summary: round trips checked against the values written."""
import os

import numpy as np
import pytest

import ingot
from conftest import fixture

RNG = np.random.default_rng(7)
BASE = {
    "w.f32": RNG.standard_normal((16, 32)).astype(np.float32),
    "w.f16": RNG.standard_normal((4, 64)).astype(np.float16),
    "b.i32": np.arange(-5, 11, dtype=np.int32),
    "m.u8": np.arange(12, dtype=np.uint8).reshape(3, 4),
}
# every NumPy dtype the C library has, for the formats that store them all
EVERY = dict(BASE, **{
    "f64": RNG.standard_normal((3, 3)), "i64": np.array([-(1 << 62), 1, 2], dtype=np.int64),
    "i16": np.array([-3, 4], dtype=np.int16), "i8": np.array([-128, 127], dtype=np.int8),
    "u64": np.array([1 << 63], dtype=np.uint64), "u32": np.array([7], dtype=np.uint32),
    "u16": np.array([65535], dtype=np.uint16), "bool": np.array([True, False, True]),
    "scalar": np.float32(2.5) * np.ones((), dtype=np.float32),
    "fortran": np.asfortranarray(RNG.standard_normal((5, 3)).astype(np.float32)),
    "strided": RNG.standard_normal((8, 8)).astype(np.float32)[::2, 1::3],
    "bigendian": np.arange(6, dtype=">i4").reshape(2, 3),
})

FORMATS = {
    "x.ingot": EVERY,
    "x.safetensors": EVERY,
    "x.npz": EVERY,
    "x.gguf": {k: v for k, v in BASE.items() if k != "m.u8"},
    "x.bpk": BASE,
    "x.mag": {k: v for k, v in BASE.items()},
    "x.tenzor": BASE,
}


def _check_same(path, tensors):
    with ingot.open(path) as f:
        assert sorted(f.keys()) == sorted(tensors)
        for k, v in tensors.items():
            a = f[k]
            assert a.shape == np.shape(v), k
            assert a.dtype.newbyteorder("=") == np.asarray(v).dtype.newbyteorder("="), k
            np.testing.assert_array_equal(a, v, err_msg=k)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_save_round_trip(tmp_path, name):
    p = str(tmp_path / name)
    notices = ingot.save(FORMATS[name], p, metadata={"model.name": "demo"}, fsync=False)
    _check_same(p, FORMATS[name])
    with ingot.open(p) as f:
        if name in ("x.mag", "x.npz"):          # no place for metadata: dropped, with a notice
            assert "model.name" not in f.metadata
            assert any("model.name" in n for n in notices), notices
        else:
            assert f.metadata.get("model.name") == "demo"
            assert notices == [] or all("model.name" not in n for n in notices)


def test_save_npy_single(tmp_path):
    p = str(tmp_path / "a.npy")
    a = RNG.standard_normal((3, 5)).astype(np.float32)
    ingot.save({"a": a}, p)
    np.testing.assert_array_equal(np.load(p), a)


def test_save_safetensors_is_read_by_numpy_bytes(tmp_path):
    # the safetensors file holds exactly the C-order little-endian bytes
    p = str(tmp_path / "s.safetensors")
    ingot.save({"x": EVERY["fortran"]}, p)
    with ingot.open(p) as f:
        i = f.info("x")
    raw = open(p, "rb").read()[i.offset:i.offset + i.nbytes]
    assert raw == np.ascontiguousarray(EVERY["fortran"]).tobytes()


def test_save_typed_metadata_round_trip(tmp_path):
    p = str(tmp_path / "m.ingot")
    md = {"u8": ingot.typed(200, "u8"), "i16": ingot.typed(-3, "i16"), "u32": np.uint32(7),
          "i64": -5, "u64": 1 << 63, "f32": ingot.typed(0.5, "f32"), "f64": 1e-300, "b": True,
          "s": "héllo", "raw": b"\x00\x01", "arr": [1, 2, 3], "farr": [0.5, 1],
          "sarr": ["a", "", "ü"], "barr": [True, False], "np": np.arange(4, dtype=np.int16),
          "typed_arr": ingot.typed([1, 2], "u16[]")}
    ingot.save({"t": np.zeros(1, np.float32)}, p, metadata=md)
    want_types = {"u8": "u8", "i16": "i16", "u32": "u32", "i64": "i64", "u64": "u64",
                  "f32": "f32", "f64": "f64", "b": "bool", "s": "string", "raw": "bytes",
                  "arr": "i64[]", "farr": "f64[]", "sarr": "string[]", "barr": "bool[]",
                  "np": "i16[]", "typed_arr": "u16[]"}
    with ingot.open(p) as f:
        assert f.metadata_types == {k: want_types[k] for k in sorted(want_types)}
        m = f.metadata
        assert m["u8"] == 200 and m["i16"] == -3 and m["u32"] == 7 and m["u64"] == 1 << 63
        assert m["f32"] == 0.5 and m["f64"] == 1e-300 and m["b"] is True and m["s"] == "héllo"
        assert m["raw"] == b"\x00\x01" and m["arr"] == [1, 2, 3] and m["farr"] == [0.5, 1.0]
        assert m["sarr"] == ["a", "", "ü"] and m["barr"] == [True, False]
        assert m["np"] == [0, 1, 2, 3] and m["typed_arr"] == [1, 2]


def test_save_raw_dtypes_round_trip(tmp_path):
    """BF16, F8 and GGML blocks read raw, saved as (raw array, dtype), read back identical."""
    src = fixture("gguf", "gguf_kquants_random_blocks.gguf")
    p = str(tmp_path / "q.ingot")
    with ingot.open(src) as f:
        tensors = {n: (f[n], f.info(n).dtype) for n in f.keys()}
        ingot.save(tensors, p)
        with ingot.open(p) as g:
            for n in f.keys():
                assert g.info(n).dtype == f.info(n).dtype
                assert list(g.info(n).shape) == list(f.info(n).shape)
                np.testing.assert_array_equal(g[n], f[n])
                assert g.digest(n) == f.digest(n)
    bf = np.array([0x3F80, 0xC000, 0x7F80], dtype=np.uint16)     # 1.0, -2.0, inf in BF16
    ingot.save({"bf": (bf, "BF16")}, p)
    with ingot.open(p) as f:
        assert f.info("bf").dtype == "BF16"
        np.testing.assert_array_equal(f.get_tensor("bf", "float32"),
                                      np.array([1.0, -2.0, np.inf], np.float32))


def test_save_is_atomic_on_error(tmp_path):
    p = str(tmp_path / "keep.ingot")
    ingot.save({"a": np.ones(3, np.float32)}, p)
    before = open(p, "rb").read()
    with pytest.raises(ingot.Error):
        ingot.save({"a": np.ones(3), "": np.ones(2)}, p)       # empty name refused
    assert open(p, "rb").read() == before
    assert os.listdir(tmp_path) == ["keep.ingot"]
    with pytest.raises(TypeError):
        ingot.save({"o": np.array(["x"])}, p)


def test_save_over_an_open_mapped_file_keeps_views(tmp_path):
    p = str(tmp_path / "m.ingot")
    ingot.save({"a": np.arange(10, dtype=np.float32)}, p)
    f = ingot.open(p)
    a = f["a"]
    ingot.save({"a": np.zeros(10, dtype=np.float32)}, p)
    np.testing.assert_array_equal(a, np.arange(10, dtype=np.float32))
    with ingot.open(p) as g:
        np.testing.assert_array_equal(g["a"], np.zeros(10))
    f.close()


def test_save_alignment_and_options(tmp_path):
    p = str(tmp_path / "a.ingot")
    ingot.save(BASE, p, align=4096)
    with ingot.open(p) as f:
        assert f.alignment == 4096
        assert all(f.info(n).offset % 4096 == 0 for n in f.keys())
    with pytest.raises(ingot.Error):
        ingot.save(BASE, p, align=100)
    with pytest.raises(ingot.UnsupportedError):
        ingot.save(BASE, str(tmp_path / "b.safetensors"), options={"nonsense": "1"})


# ---- convert -------------------------------------------------------------------------------

def test_convert_cast_select_rename_meta(tmp_path):
    src = str(tmp_path / "s.safetensors")
    ingot.save(BASE, src, metadata={"a": "1", "b": "2"})
    dst = str(tmp_path / "d.ingot")
    r = ingot.convert(src, dst, dtype="F16", exclude=["m.*"], rename=[(r"^w\.", "weight.")],
                      set={"n": ingot.typed(8, "u32"), "s": "x"}, delete=["b"])
    assert r["format"] == "ingot" and r["tensors"] == 3 and r["dropped"] == 1
    assert r["cast"] == 1 and any(x["kind"] == "cast" for x in r["lossy"])
    with ingot.open(dst) as f:
        assert sorted(f.keys()) == ["b.i32", "weight.f16", "weight.f32"]
        assert f.info("weight.f32").dtype == "F16"
        np.testing.assert_array_equal(f["weight.f32"], BASE["w.f32"].astype(np.float16))
        np.testing.assert_array_equal(f["b.i32"], BASE["b.i32"])
        assert f.metadata == {"a": "1", "n": 8, "s": "x"}
        assert f.metadata_types["n"] == "u32"


def test_convert_quantize_and_dequantize(tmp_path):
    src = str(tmp_path / "s.safetensors")
    w = RNG.standard_normal((8, 256)).astype(np.float32)
    ingot.save({"blk.0.ffn_up.weight": w}, src)
    q = str(tmp_path / "q.gguf")
    r = ingot.convert(src, q, quantize="Q8_0")
    assert r["quantized"] == 1
    with ingot.open(q) as f:
        assert f.info("blk.0.ffn_up.weight").dtype == "Q8_0"
        d = f.get_tensor("blk.0.ffn_up.weight", dequantize=True)
        assert d.shape == w.shape and np.abs(d - w).max() < np.abs(w).max() / 100
    back = str(tmp_path / "back.safetensors")
    with pytest.raises(ingot.Error):
        ingot.convert(q, back)                    # safetensors cannot hold Q8_0 blocks
    r = ingot.convert(q, back, dequantize="F32")
    assert r["dequantized"] == 1
    with ingot.open(back) as f, ingot.open(q) as g:
        np.testing.assert_array_equal(f["blk.0.ffn_up.weight"],
                                      g.get_tensor("blk.0.ffn_up.weight", dequantize=True))


# ---- inspect -------------------------------------------------------------------------------

def test_hash_diff_summary_across_formats(tmp_path):
    a, b, c = (str(tmp_path / n) for n in ("a.ingot", "b.safetensors", "c.npz"))
    ingot.save(BASE, a)
    ingot.save(BASE, b)
    changed = dict(BASE, **{"b.i32": BASE["b.i32"] + 1})
    changed.pop("m.u8")
    ingot.save(changed, c)
    ha, hb = ingot.hash(a), ingot.hash(b)
    assert ha == hb and len(ha["model"]) == 64 and sorted(ha["tensors"]) == sorted(BASE)
    assert ingot.diff(a, b) == {"same": True, "only_a": [], "only_b": [], "differ": []}
    d = ingot.diff(a, c)
    assert not d["same"] and d["only_a"] == ["m.u8"] and d["differ"] == [("b.i32",
                                                                           "values differ")]
    s = ingot.summary(a)
    assert s["tensors"] == 4 and s["params"] == sum(v.size for v in BASE.values())
    assert s["by_dtype"]["F32"] == {"tensors": 1, "params": 512, "bytes": 2048}
