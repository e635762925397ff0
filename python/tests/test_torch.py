"""ingot.torch: load_file/save_file against torch.load and torch's own values, zero-copy and
lifetime of the tensors, bf16 included."""
import gc
import glob
import os

import numpy as np
import pytest

import ingot
from conftest import FIXTURES, fixture

torch = pytest.importorskip("torch")
import ingot.torch as it  # noqa: E402


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(FIXTURES, "torch", "*.pt"))),
                         ids=os.path.basename)
def test_load_file_equals_torch_load(path):
    ref = torch.load(path, map_location="cpu")
    got = it.load_file(path)
    assert list(got) == list(ref) or sorted(got) == sorted(ref)
    for k, v in ref.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape, k
        assert torch.equal(got[k], v), k


def test_round_trip_every_dtype(tmp_path):
    g = torch.Generator().manual_seed(3)
    sd = {"bf16": torch.randn(4, 8, generator=g).to(torch.bfloat16),
          "f16": torch.randn(3, 5, generator=g).half(), "f32": torch.randn(7, generator=g),
          "f64": torch.randn(2, 2, generator=g, dtype=torch.float64),
          "i64": torch.arange(-3, 3), "i32": torch.arange(4, dtype=torch.int32),
          "i16": torch.tensor([-7, 7], dtype=torch.int16),
          "i8": torch.tensor([-1], dtype=torch.int8),
          "u8": torch.tensor([0, 255], dtype=torch.uint8), "bool": torch.tensor([True, False]),
          "scalar": torch.tensor(1.5), "transposed": torch.randn(3, 4, generator=g).t()}
    for ext in ("safetensors", "ingot", "pt.ingot"):
        p = str(tmp_path / f"m.{ext}")
        it.save_file(sd, p, metadata={"format": "pt"})
        back = it.load_file(p)
        for k, v in sd.items():
            assert back[k].dtype == v.dtype and back[k].shape == v.shape, (ext, k)
            assert torch.equal(back[k], v), (ext, k)
        with ingot.open(p) as f:
            assert f.metadata["format"] == "pt"
            assert f.info("bf16").dtype == "BF16"


def test_safetensors_file_matches_torch_bits(tmp_path):
    t = torch.randn(16, 16).to(torch.bfloat16)
    p = str(tmp_path / "x.safetensors")
    it.save_file({"t": t}, p)
    with ingot.open(p) as f:
        off, n = f.info("t").offset, f.info("t").nbytes
    assert open(p, "rb").read()[off:off + n] == t.view(torch.int16).numpy().tobytes()


def test_zero_copy_and_lifetime():
    p = fixture("torch", "torch_tinynet_f16_bf16.pt")
    ref = torch.load(p, map_location="cpu")
    with ingot.open(p) as f:
        off = {n: f.info(n).offset for n in f.keys()}
    got = it.load_file(p)
    gc.collect()                                    # the File is gone; the tensors keep the map
    k0 = next(iter(got))
    for k, t in got.items():
        # every tensor, bf16 included, lies in one mapping of the file at its offset
        assert t.data_ptr() - got[k0].data_ptr() == off[k] - off[k0], k
        assert torch.equal(t, ref[k])
    copied = it.load_file(p, copy=True)
    base = got[k0].data_ptr() - off[k0]
    for k, t in copied.items():
        assert not base <= t.data_ptr() < base + os.path.getsize(p)
        assert torch.equal(t, ref[k])
        t.add_(1)                                   # copies are ordinary writable tensors


def test_in_place_writes_stay_in_the_process(tmp_path):
    """load_file maps copy-on-write: t.add_(1) on a zero-copy tensor works (a read-only mapping
    killed the process with SIGSEGV here), and the file and other readers keep the bytes."""
    sd = {"w": torch.arange(4096, dtype=torch.float32), "b": torch.ones(3, dtype=torch.bfloat16)}
    for ext in ("safetensors", "ingot", "gguf"):
        p = str(tmp_path / f"m.{ext}")
        it.save_file(sd, p)
        before = open(p, "rb").read()
        got = it.load_file(p)
        got["w"].add_(1)
        got["b"][0] = 5
        assert torch.equal(got["w"], sd["w"] + 1) and got["b"][0].item() == 5.0
        again = it.load_file(p)
        assert torch.equal(again["w"], sd["w"]) and torch.equal(again["b"], sd["b"])
        with ingot.open(p) as f:
            assert np.array_equal(f["w"], sd["w"].numpy()) and not f["w"].flags.writeable
        assert open(p, "rb").read() == before
        with ingot.open(p, io="private") as f:
            v = f["w"]
            assert v.flags.writeable
            v[0] = -1.0
            with ingot.open(p) as g:
                assert g["w"][0] == 0.0


def test_strided_views_of_a_torch_checkpoint(tmp_path):
    """torch.save keeps views of one storage: ingot exposes them as strided NumPy views of the
    same mapped bytes, equal to what torch.load gives."""
    base = torch.arange(48, dtype=torch.float32).reshape(6, 8)
    sd = {"base": base, "t": base.t(), "s": base[1:, ::3], "row": base[2],
          "bf": torch.arange(12, dtype=torch.float32).reshape(3, 4).to(torch.bfloat16).t()}
    p = str(tmp_path / "views.pt")
    torch.save(sd, p)
    ref = torch.load(p)
    with ingot.open(p) as f:
        for k in ("t", "s"):
            assert "strided" in f.info(k).flags, k
        for k, v in ref.items():
            a = f[k]
            if v.dtype == torch.bfloat16:
                np.testing.assert_array_equal(f.get_tensor(k, "float32"), v.float().numpy())
                np.testing.assert_array_equal(a, v.contiguous().view(torch.int16).numpy()
                                              .view(np.uint16))
            else:
                np.testing.assert_array_equal(a, v.numpy(), err_msg=k)
        assert np.shares_memory(f["t"], f["base"]) and np.shares_memory(f["s"], f["base"])
    got = it.load_file(p)
    for k, v in ref.items():
        assert torch.equal(got[k], v), k
