#!/usr/bin/env python3
"""make_fresh_text.py - a few MB of mixed text that does not repeat itself, for
`bench_tokenizer --text FILE` (the tokenizer benchmark's own corpus draws its lines again and
again from small pools, which flatters a word cache).

Three sources found under /usr, drawn as bench_tokenizer draws its corpus (runs of 8 lines, kinds
40 / 35 / 25 % by the same LCG), every line used at most once:
  prose         Vim's help files (/usr/share/vim/vim*/doc/*.txt)
  code          Python's standard library sources (/usr/lib/python3*/**/*.py)
  multilingual  the translations in Vim's message catalogues (/usr/share/vim/vim*/lang/*/
                LC_MESSAGES/vim.mo, the UTF-8 ones: Japanese, Chinese, Korean, Russian,
                Ukrainian, ... as msgstr text)
Usage: make_fresh_text.py OUT [--mb N]   (prints what it used; exit 1 if a source is missing)
"""
import glob
import gettext
import os
import sys


def lines_of(paths, limit):
    seen, out, total = set(), [], 0
    for p in paths:
        try:
            with open(p, encoding="utf-8") as f:
                for line in f:
                    if line.strip() and line not in seen:
                        seen.add(line)
                        out.append(line)
                        total += len(line.encode())
        except (UnicodeDecodeError, OSError):
            continue
        if total > limit:
            break
    return out


def catalogue_lines(limit):
    seen, out, total = set(), [], 0
    for mo in sorted(glob.glob("/usr/share/vim/vim*/lang/*/LC_MESSAGES/vim.mo")):
        lang = mo.split("/lang/")[1].split("/")[0]
        if "." in lang and not lang.lower().endswith("utf-8"):
            continue                              # the other encodings repeat the UTF-8 ones
        if lang.startswith("en"):
            continue
        try:
            with open(mo, "rb") as f:
                cat = gettext.GNUTranslations(f)._catalog
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        for k in sorted(cat, key=str):
            v = cat[k]
            if not isinstance(v, str) or not v.strip():
                continue
            for line in v.splitlines(keepends=False):
                line = line + "\n"
                if line.strip() and line not in seen:
                    seen.add(line)
                    out.append(line)
                    total += len(line.encode())
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    mb = float(sys.argv[sys.argv.index("--mb") + 1]) if "--mb" in sys.argv else 4.0
    target = int(mb * 1e6)
    pools = [
        lines_of(sorted(glob.glob("/usr/share/vim/vim*/doc/*.txt")), target),
        lines_of(sorted(glob.glob("/usr/lib/python3*/**/*.py", recursive=True)), target),
        catalogue_lines(target),
    ]
    names = ["prose (Vim help)", "code (Python stdlib)", "multilingual (Vim catalogues)"]
    for n, p in zip(names, pools):
        if not p:
            print(f"make_fresh_text: no {n} found", file=sys.stderr)
            return 1
    pos, got, n = [0, 0, 0], [0, 0, 0], 0
    lcg = 0x2545F4914F6CDD1D
    parts = []
    while n < target and any(pos[k] < len(pools[k]) for k in range(3)):
        lcg = (lcg * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
        r = (lcg >> 33) % 100
        k = 0 if r < 40 else 1 if r < 75 else 2
        for _ in range(8):
            if pos[k] >= len(pools[k]) or n >= target:
                break
            b = pools[k][pos[k]].encode()
            pos[k] += 1
            parts.append(b)
            n += len(b)
            got[k] += len(b)
    with open(out, "wb") as f:
        f.write(b"".join(parts))
    for k in range(3):
        extra = " (used up)" if pos[k] >= len(pools[k]) else ""
        print(f"{names[k]}: {got[k]} bytes, {pos[k]} distinct lines{extra}")
    print(f"{out}: {n} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
