"""The package as installed: stubs and markers shipped, the stubs name every public symbol,
docstrings present, one abi3 extension linking no libingot.so."""
import ast
import os
import subprocess

import ingot


def _pkg(*parts):
    return os.path.join(os.path.dirname(ingot.__file__), *parts)


def test_stubs_cover_the_public_api():
    for f in ("__init__.pyi", "torch.pyi", "py.typed"):
        assert os.path.exists(_pkg(f)), f
    tree = ast.parse(open(_pkg("__init__.pyi")).read())
    names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    assert set(ingot.__all__) <= names, set(ingot.__all__) - names
    for name in ingot.__all__:
        assert getattr(ingot, name).__doc__, name


def test_extension_is_abi3_and_self_contained():
    so = ingot._ingot.__file__
    assert so.endswith(".abi3.so")
    deps = subprocess.run(["ldd", so], capture_output=True, text=True).stdout
    assert "libingot" not in deps
    syms = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True,
                          text=True).stdout.split()
    assert "PyInit__ingot" in syms
    assert ingot.__version__ == ingot._ingot.version()
