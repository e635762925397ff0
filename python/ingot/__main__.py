"""python3 -m ingot: a few commands of the `ingot` CLI over the Python package.

    python3 -m ingot info [--json] FILE...     as `ingot info` (the JSON is the same object)
    python3 -m ingot verify FILE...            as `ingot verify` (exit 1 naming the damage)
    python3 -m ingot hash FILE...              content digests of each model

Exit codes as the CLI's: 0 ok, 1 input rejected, 2 usage."""

import base64
import json
import sys

import numpy as np

from . import hash as _hash
from ._errors import Error
from ._file import File

_USAGE = ("usage: python3 -m ingot info [--json] FILE...\n"
          "       python3 -m ingot verify FILE...\n"
          "       python3 -m ingot hash FILE...\n")


def _shortest(v, is_f32):
    for p in range(1, 18):
        s = "%.*g" % (p, v)
        back = float(s)
        if (np.float32(back) == np.float32(v)) if is_f32 else back == v:
            return s
    return repr(v)


def _json_float(v, is_f32):
    if v != v:
        return '"NaN"'
    if v in (float("inf"), float("-inf")):
        return '"Infinity"' if v > 0 else '"-Infinity"'
    s = _shortest(v, is_f32)
    return s if any(c in s for c in ".eEn") else s + ".0"


def _text_float(v, is_f32):
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return _shortest(v, is_f32)


def _scalar(v, t, as_json):
    if t == "string":
        return json.dumps(v, ensure_ascii=False)
    if t == "bytes":
        return json.dumps(base64.b64encode(v).decode()) if as_json else f"<{len(v)} bytes>"
    if t in ("f32", "f64"):
        return (_json_float if as_json else _text_float)(v, t == "f32")
    if t == "bool":
        return "true" if v else "false"
    if as_json and abs(v) > (1 << 53):
        return f'"{v}"'
    return str(v)


def _value(v, tname, as_json, limit=8):
    if not tname.endswith("[]"):
        return _scalar(v, tname, as_json)
    t = tname[:-2]
    shown = v if as_json else v[:limit]
    s = "[" + ", ".join(_scalar(x, t, as_json) for x in shown)
    if len(shown) < len(v):
        s += f", ... ({len(v)} total)"
    return s + "]"


def _info_json(path, f):
    md, types = f.metadata, f.metadata_types
    out = ['{"schema": 2, "path": ', json.dumps(path, ensure_ascii=False), ', "format": ',
           json.dumps(f.format), f', "version": "{f.version}", "size": {f.size}, '
           f'"alignment": {f.alignment}, "metadata": {{']
    out.append(", ".join(f'{json.dumps(k, ensure_ascii=False)}: {{"type": "{types[k]}", '
                         f'"value": {_value(v, types[k], True)}}}' for k, v in md.items()))
    out.append('}, "tensors": [')
    items = []
    for n in f.keys():
        i = f.info(n)
        s = (f'{{"name": {json.dumps(n, ensure_ascii=False)}, "dtype": "{i.dtype}", "shape": '
             f'[{", ".join(str(d) for d in i.shape)}], "nbytes": {i.nbytes}, '
             f'"offset": {i.offset}, "param_id": '
             f'{"null" if i.param_id is None else i.param_id}')
        if "big_endian" in i.flags:
            s += ', "byte_order": "big"'
        if "fortran" in i.flags:
            s += ', "layout": "fortran"'
        if "strided" in i.flags:
            s += ', "stride": [' + ", ".join(str(x) for x in i.strides) + "]"
        if "not_mapped" in i.flags:
            s += ', "mapped": false'
        items.append(s + "}")
    out.append(", ".join(items))
    out.append('], "skipped": [')
    out.append(", ".join(f'{{"name": {json.dumps(n, ensure_ascii=False)}, "reason": '
                         f'{json.dumps(r, ensure_ascii=False)}}}' for n, r, _o in f.notices))
    out.append("]}")
    return "".join(out)


def _info_text(path, f):
    nt, md, types = len(f), f.metadata, f.metadata_types
    nm = len(md)
    lines = [f"{path}: {f.format} {f.version}, {f.size} bytes, alignment {f.alignment}, "
             f"{nt} tensor{'' if nt == 1 else 's'}, {nm} metadata entr{'y' if nm == 1 else 'ies'}"]
    if nm:
        lines.append("\nmetadata:")
        kw = max([24] + [len(k.encode()) for k in md])
        for k, v in md.items():
            key = k + " " * (kw - len(k.encode()))
            lines.append(f"  {key}  {types[k]:<8} {_value(v, types[k], False)}")
    if nt:
        infos = [f.info(n) for n in f.keys()]
        w = max([4] + [len(i.name.encode()) for i in infos])
        shapes = ["x".join(str(d) for d in i.shape) or "[]" for i in infos]
        sw = max([20] + [len(s) for s in shapes])
        lines.append(f"\n  {'#':>5}  {'name':<{w}}  {'dtype':<8} {'shape':<{sw}} "
                     f"{'nbytes':>14} {'offset':>14}  param_id")
        for k, (i, s) in enumerate(zip(infos, shapes)):
            pid = "-" if i.param_id is None else str(i.param_id)
            name = i.name + " " * (w - len(i.name.encode()))      # padded in bytes, as C
            lines.append(f"  {k:>5}  {name}  {i.dtype:<8} {s:<{sw}} {i.nbytes:>14} "
                         f"{i.offset:>14}  {pid}")
        gg = " (GGUF stores them innermost first: ne = the shape reversed)" \
            if f.format == "gguf" else ""
        lines.append(f"\n  shapes outermost dimension first{gg}")
    if f.notices:
        lines.append("\nskipped (not opened as tensors):")
        for n, r, _o in f.notices:
            lines.append(f"  {n + ' ' * (32 - len(n.encode()))} {r}")
    return "\n".join(lines)


def _fail(cmd, path, e):
    print(f"ingot {cmd}: {path}: {e}", file=sys.stderr)
    return 1


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        sys.stdout.write(_USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    as_json = "--json" in rest
    paths = [a for a in rest if a != "--json"]
    bad = [a for a in paths if a.startswith("-")]
    if cmd not in ("info", "verify", "hash") or bad or not paths:
        sys.stderr.write(_USAGE)
        return 2
    rc = 0
    for p in paths:
        try:
            if cmd == "info":
                with File(p) as f:
                    print(_info_json(p, f) if as_json else _info_text(p, f))
            elif cmd == "verify":
                with File(p) as f:
                    r = f.verify()
                print(f"{p}: ok ({', '.join(r['checked'])})")
            else:
                h = _hash(p)
                print(f"{h['model']}  {p}")
        except Error as e:
            rc = _fail(cmd, p, e)
        except OSError as e:
            rc = _fail(cmd, p, e)
    return rc


if __name__ == "__main__":
    sys.exit(main())
