"""python3 -m ingot info mirrors `ingot info`: the same JSON object and the same text, on every
shared fixture that opens; errors exit 1 as the CLI's do."""
import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES
from test_runtime import cli

FILES = sorted(p for p in glob.glob(os.path.join(FIXTURES, "**", "*"), recursive=True)
               if os.path.isfile(p) and not p.endswith((".json", ".md", ".txt", ".npy"))
               or p.endswith(".npy") and "golden" not in p and "REJECT" not in p)


def inproc(*args):
    """python3 -m ingot ARGS run in this process: (exit code, stdout bytes)."""
    import contextlib
    import io

    import ingot.__main__ as m
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        rc = m.main(list(args))
    return rc, buf.getvalue().encode()


def py(*args):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-m", "ingot", *args], capture_output=True, env=env)


def test_info_json_and_text_equal_the_cli():
    assert len(FILES) > 40
    compared = 0
    for p in FILES:
        c = subprocess.run([cli(), "info", "--json", p], capture_output=True)
        if c.returncode != 0:
            assert inproc("info", "--json", p)[0] == 1, p
            continue
        rc, out = inproc("info", "--json", p)
        assert rc == 0, p
        assert json.loads(out) == json.loads(c.stdout), p
        assert out == c.stdout, p
        t = subprocess.run([cli(), "info", p], capture_output=True).stdout
        assert inproc("info", p)[1] == t, p
        compared += 1
    assert compared > 40


def test_exit_codes(tmp_path):
    bad = tmp_path / "bad.ingot"
    bad.write_bytes(b"INGOT\0\0\0garbage")
    r = py("info", str(bad))
    assert r.returncode == 1 and b"bad.ingot" in r.stderr
    assert py("info").returncode == 2
    assert py("frobnicate", str(bad)).returncode == 2
    ok = os.path.join(FIXTURES, "npy", "f4_2x3.npy")
    r = py("verify", ok)
    assert r.returncode == 0 and b"readable" in r.stdout
    r = py("hash", ok)
    assert r.returncode == 0 and len(r.stdout.split()[0]) == 64
