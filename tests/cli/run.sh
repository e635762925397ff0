#!/usr/bin/env bash
# CLI contract tests: exact stdout, stderr fragments and exit codes (0 ok, 1 rejected, 2 usage;
# never a signal). Usage: run.sh PATH_TO_INGOT
set -uo pipefail
ING=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
fails=0
n=0

# run EXPECTED_RC CMD... ; leaves stdout in out.txt, stderr in err.txt
run() {
    local want=$1; shift
    n=$((n + 1))
    "$@" >out.txt 2>err.txt
    local rc=$?
    if [ "$rc" -ge 128 ]; then echo "FAIL: '$*' died with signal $((rc - 128))"; fails=$((fails + 1)); return; fi
    if [ "$rc" != "$want" ]; then
        echo "FAIL: '$*' exit $rc, want $want"; sed 's/^/  stderr: /' err.txt; fails=$((fails + 1))
    fi
}
expect_err() { n=$((n + 1)); grep -q -- "$1" err.txt || { echo "FAIL: stderr lacks '$1':"; cat err.txt; fails=$((fails + 1)); }; }
expect_out() { n=$((n + 1)); grep -q -- "$1" out.txt || { echo "FAIL: stdout lacks '$1':"; cat out.txt; fails=$((fails + 1)); }; }
# golden FILE: compare out.txt with tests/cli/expected/FILE (INGOT_CLI_REGEN=1 rewrites it)
golden() {
    if [ -n "${INGOT_CLI_REGEN:-}" ]; then cp out.txt "$HERE/expected/$1"; fi
    same out.txt "$HERE/expected/$1"
}
same() { n=$((n + 1)); cmp -s "$1" "$2" || { echo "FAIL: $1 differs from $2"; diff "$1" "$2" | head -20; fails=$((fails + 1)); }; }
expect_no_err() { n=$((n + 1)); ! grep -q -- "$1" err.txt || { echo "FAIL: stderr has '$1':"; cat err.txt; fails=$((fails + 1)); }; }
expect_no_out() { n=$((n + 1)); ! grep -q -- "$1" out.txt || { echo "FAIL: stdout has '$1':"; cat out.txt; fails=$((fails + 1)); }; }
# json_is EXPR: out.txt is one JSON object d for which the Python expression EXPR is true
json_is() {
    n=$((n + 1))
    python3 -c 'import json, sys; d = json.load(open("out.txt")); sys.exit(0 if eval(sys.argv[1]) else 1)' "$1" \
        || { echo "FAIL: json: $1"; cat out.txt; fails=$((fails + 1)); }
}
# flip FILE OFFSET: xor one byte with 0x55
flip() { python3 -c 'import sys; p, o = sys.argv[1], int(sys.argv[2]); b = bytearray(open(p, "rb").read()); b[o] ^= 0x55; open(p, "wb").write(b)' "$1" "$2"; }
# offset_of FILE NAME: the data offset of a tensor, from info --json
offset_of() { "$ING" info --json "$1" | python3 -c 'import json, sys; print([t for t in json.load(sys.stdin)["tensors"] if t["name"] == sys.argv[1]][0]["offset"])' "$2"; }
# npy_bool FILE BYTES: a NumPy 1.0 file of a 1-d bool array holding BYTES (NumPy's header layout)
npy_bool() {
    python3 -c '
import sys
data = bytes.fromhex(sys.argv[2])
h = ("{\x27descr\x27: \x27|b1\x27, \x27fortran_order\x27: False, \x27shape\x27: (%d,), }" % len(data)).encode()
hl = (10 + len(h) + 1 + 63) // 64 * 64 - 10
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + hl.to_bytes(2, "little") + h + b" " * (hl - len(h) - 1) + b"\n" + data)' "$1" "$2"
}

# raw little-endian inputs
printf '\x00\x00\x00\x00\x00\x00\x80\x3e\x00\x00\x00\x3f\x00\x00\x40\x3f\x00\x00\x80\x3f\x00\x00\xa0\x3f' > w.bin  # f32 0 .25 .5 .75 1 1.25
printf '\x00\x00\x00\x3f\x00\x00\x80\xbf\x00\x00\x00\x40' > b.bin                                  # f32 .5 -1 2
printf '\x00\x3c\x00\xc1\x66\x2e\xff\x7b' > h.bin          # f16 1 -2.5 0.1 65504
printf '\x80\x3f\x49\xc0\x80\x7f' > bf.bin                 # bf16 1 -3.140625 inf
printf '\x38\x7e\xff\xb8' > e4.bin                         # e4m3 1 448 nan -1
printf '\x3c\x7b\x7c\x01' > e5.bin                         # e5m2 1 57344 inf 2^-16
printf '\x07\x00\x00\x00' > s.bin                          # i32 scalar 7
head -c 18 /dev/zero > q.bin                               # one Q4_0 block of zeros... (32 elems)
printf '\x01' >> q.bin; head -c 17 /dev/zero >> q.bin      # ... and a second block

run 0 "$ING" pack m.ingot --align 64 --meta name=demo --meta layers:u32=2 --meta lr:f64=0.5 \
    --meta ids:i64[]=1,-2,9007199254740993 --meta tags:string[]=a,b --meta blob:bytes=00ff10 \
    --meta on:bool=true --meta big:u64=18446744073709551615 \
    --tensor fc.weight:F32:2x3=w.bin --tensor fc.bias:F32:3=b.bin --tensor h:F16:4=h.bin \
    --tensor bf:BF16:3=bf.bin --tensor e4:F8_E4M3:4=e4.bin --tensor e5:F8_E5M2:4=e5.bin \
    --tensor step:I32:=s.bin --tensor q:Q4_0:2x32=q.bin
expect_out "wrote m.ingot (8 tensors)"

run 0 "$ING" info --json m.ingot
golden info.json
run 0 "$ING" info m.ingot
golden info.txt

# info --json is valid JSON whatever bytes a string value holds (GGUF values may be any bytes):
# each maximal invalid UTF-8 subsequence becomes U+FFFD, exactly as Python's errors="replace"
python3 - <<'PY'
import random, struct
def s(b): return struct.pack('<Q', len(b)) + b
random.seed(13)
vals = [b'\xff\xfea"b\\', b'\xc3(', b'\xe2\x82', b'\xe2\x82\xac', b'\xed\xa0\x80', b'\xf4\x90\x80\x80',
        b'\xf0\x9f\x98', b'\xc0\xaf', b'\x80', b'h\xc3\xa9', b'\x00\x1f\x7f', b'']
vals += [bytes(random.choice(b'\x00a\x7f\x80\x8f\x90\x9f\xa0\xbf\xc0\xc2\xdf\xe0\xed\xef\xf0\xf4\xf5\xff')
               for _ in range(random.randrange(1, 7))) for _ in range(3000)]
kv = s(b'raw') + struct.pack('<I', 8) + s(vals[0])
kv += s(b'arr') + struct.pack('<IIQ', 9, 8, len(vals)) + b''.join(s(v) for v in vals)
open('raw.gguf', 'wb').write(b'GGUF' + struct.pack('<IQQ', 3, 0, 2) + kv)
open('raw.expect', 'w').write(repr([v.decode('utf-8', 'replace') for v in vals]))
PY
run 0 "$ING" info --json raw.gguf
n=$((n + 1))
python3 -c 'import json,sys,ast; d=json.load(open("out.txt")); want=ast.literal_eval(open("raw.expect").read()); assert d["metadata"]["raw"]["value"]==want[0] and d["metadata"]["arr"]["value"]==want, "mismatch"' \
    || { echo "FAIL: info --json of raw string bytes"; fails=$((fails + 1)); }

# npz string members (scipy.sparse.save_npz's 'format', np.savez(foo="abc")) are listed as skipped
run 0 "$ING" info "$HERE/../data/npy/scipy_csr.npz"
expect_out "4 tensors"
expect_out "^skipped (not opened as tensors):$"
expect_out "^  format  *npz: member 'format.npy' holds a byte string array (descr '|S3'), not numbers: skipped$"
run 0 "$ING" info --json "$HERE/../data/npy/savez_str.npz"
n=$((n + 1))
python3 -c 'import json; d=json.load(open("out.txt")); assert [t["name"] for t in d["tensors"]]==["x"]; assert [s["name"] for s in d["skipped"]]==["foo","bar"]; assert all("<U3" in s["reason"] for s in d["skipped"])' \
    || { echo "FAIL: info --json skipped"; fails=$((fails + 1)); }
# convert says what it leaves out: one "lossy:" line per skipped member, counted in the summary
run 0 "$ING" convert "$HERE/../data/npy/scipy_csr.npz" csr.safetensors
expect_err "lossy: 'format' of the source skipped (npz: member 'format.npy' holds a byte string"
expect_out "^wrote csr.safetensors (safetensors, 4 tensors, 1 part of the source skipped)$"

run 0 "$ING" verify m.ingot
expect_out "m.ingot: OK"
# verify says exactly what it checked: .ingot has a header CRC-32C and one per tensor
expect_out "structure valid; header CRC-32C match; 8 tensors: CRC-32C match; padding valid$"
run 0 "$ING" verify --json m.ingot
json_is 'd["ok"] and d["path"] == "m.ingot" and d["format"] == "ingot" and d["checked"] == ["structure", "header_crc32c", "tensor_crc32c", "readable", "padding"] and d["tensors"] == 8 and d["tensors_with_checksum"] == 8 and d["tensors_without"] == 0 and d["checksums"] == 8'

run 0 "$ING" dump m.ingot h
golden dump_h.txt
run 0 "$ING" dump m.ingot bf
expect_out "^1 -3.1406 inf$"
run 0 "$ING" dump m.ingot e4
expect_out "^1 448 nan -1$"
run 0 "$ING" dump m.ingot e5
expect_out "^1 5.734e+04 inf 1.526e-05$"
# FNUZ variants: bias 8 / 16, 0x80 the only NaN, no infinity (0x7f is the largest finite value)
printf '\x08\x80\x40\xc4\x7f' > e4z.bin                   # e4m3fnuz 2^-7 nan 1 -1.5 240
printf '\x04\x80\x40\x01\x7f' > e5z.bin                   # e5m2fnuz 2^-15 nan 1 2^-17 57344
run 0 "$ING" pack z.ingot --tensor a:F8_E4M3FNUZ:5=e4z.bin --tensor b:F8_E5M2FNUZ:5=e5z.bin
run 0 "$ING" dump z.ingot a
expect_out "^0.007812 nan 1 -1.5 240$"
run 0 "$ING" dump z.ingot b
expect_out "^3.052e-05 nan 1 7.629e-06 5.734e+04$"
run 0 "$ING" dump m.ingot fc.weight --limit 2
expect_out "^0 0.25$"
expect_out "4 more elements"
run 0 "$ING" dump m.ingot q
expect_out "^block 1: 01 00"

for t in fc.weight fc.bias h step q; do
    run 0 "$ING" unpack m.ingot "$t" -o "u_$t.bin"
done
same u_fc.weight.bin w.bin; same u_fc.bias.bin b.bin; same u_h.bin h.bin; same u_step.bin s.bin; same u_q.bin q.bin

run 0 "$ING" convert m.ingot c.ingot --align 4096
expect_out "alignment 4096"
run 0 "$ING" verify c.ingot
run 0 "$ING" unpack c.ingot fc.weight -o cw.bin
same cw.bin w.bin
run 0 "$ING" info --json c.ingot
n=$((n + 1)); grep -q '"alignment": 4096' out.txt || { echo "FAIL: convert alignment"; fails=$((fails + 1)); }
# converting back gives the original file byte for byte (deterministic writer)
run 0 "$ING" convert c.ingot back.ingot --align 64
same back.ingot m.ingot

# the output format comes from the extension, or --to; options go to the format's writer
run 2 "$ING" convert m.ingot out.unknownext
expect_err "cannot tell the output format"
n=$((n + 1)); [ ! -e out.unknownext ] || { echo "FAIL: refused convert left a file"; fails=$((fails + 1)); }
run 0 "$ING" convert m.ingot out.bin --to ingot --align 64
same out.bin m.ingot
run 1 "$ING" convert m.ingot out2.ingot --opt nosuch=1
expect_err "UNSUPPORTED"
run 2 "$ING" convert m.ingot out3.ingot --opt novalue
run 1 "$ING" convert m.ingot out4.bin --to nosuchformat
expect_err "no writer for this format"

# damage one byte of one tensor: verify names the tensor and the byte offset
cp m.ingot bad.ingot
off=$("$ING" info --json m.ingot | python3 -c 'import json,sys; d=json.load(sys.stdin); print([t for t in d["tensors"] if t["name"]=="fc.bias"][0]["offset"])')
printf '\x55' | dd of=bad.ingot bs=1 seek=$((off + 1)) conv=notrunc 2>/dev/null
run 1 "$ING" verify bad.ingot
expect_err "BAD_CHECKSUM"
expect_err "\[fc.bias\] at byte $off"
run 1 "$ING" verify --json bad.ingot
expect_err "BAD_CHECKSUM"
json_is 'not d["ok"] and "checked" not in d and d["error"]["code"] == "BAD_CHECKSUM" and d["error"]["where"] == "fc.bias" and d["error"]["offset"] == '"$off"
# damage the header (the first stored tensor checksum, byte 208): open already refuses
cp m.ingot badh.ingot; printf '\x01' | dd of=badh.ingot bs=1 seek=208 conv=notrunc 2>/dev/null
run 1 "$ING" info badh.ingot
expect_err "BAD_CHECKSUM"
# truncation
head -c 100 m.ingot > trunc.ingot
run 1 "$ING" verify trunc.ingot
expect_err "TRUNCATED"
run 1 "$ING" verify --json trunc.ingot
json_is 'not d["ok"] and d["error"]["code"] == "TRUNCATED" and "format" not in d'
head -c $(( $(stat -c %s m.ingot) - 1 )) m.ingot > trunc2.ingot
run 1 "$ING" info trunc2.ingot
expect_err "TRUNCATED"
# not a model file
echo "hello" > notmodel.txt
run 1 "$ING" info notmodel.txt
expect_err "UNKNOWN_FORMAT"
run 1 "$ING" info missing.ingot
expect_err "NOT_FOUND"
run 1 "$ING" dump m.ingot nosuch
expect_err "NOT_FOUND"

# Formats that store no checksum (issue 13 item 2). The contract: a file whose tensor bytes were
# overwritten still verifies (exit 0), because nothing in the file can tell; verify says it
# checked the structure and that the data is readable, and never claims a checksum.
run 0 "$ING" pack p.ingot --tensor fc.weight:F32:2x3=w.bin --tensor fc.bias:F32:3=b.bin
run 0 "$ING" pack one.ingot --tensor w:F32:2x3=w.bin
run 0 "$ING" convert p.ingot p.safetensors
run 0 "$ING" convert p.ingot p.gguf
run 0 "$ING" convert one.ingot one.npy
for f in p.safetensors p.gguf one.npy; do
    t=fc.bias; [ "$f" = one.npy ] && t=one
    flip "$f" "$(offset_of "$f" "$t")"
    run 0 "$ING" verify "$f"
    expect_out "^$f: OK (.*): structure valid; this format stores no checksums; data readable"
    expect_no_out "checksums match"
    run 0 "$ING" verify --json "$f"
    json_is 'd["ok"] and d["tensors_with_checksum"] == 0 and d["tensors_without"] == d["tensors"] and d["checksums"] == 0 and not [c for c in d["checked"] if "crc" in c] and d["checked"][:2] == ["structure", "readable"]'
done
run 0 "$ING" verify --json p.gguf
json_is 'd["checked"] == ["structure", "readable", "padding"]'
# .npz: the zip CRC-32 of every member is checked, and a corrupted member fails on it
run 0 "$ING" convert p.ingot p.npz
run 0 "$ING" verify p.npz
expect_out "structure valid; zip CRC-32 of 2 members match$"
run 0 "$ING" verify --json p.npz
json_is 'd["checked"] == ["structure", "zip_crc32", "readable"] and d["tensors_with_checksum"] == 2 and d["checksums"] == 2'
boff=$(offset_of p.npz fc.bias)
flip p.npz $((boff + 4))
run 1 "$ING" verify p.npz
expect_err "BAD_CHECKSUM: .*CRC-32 .*\[fc.bias\]"
run 1 "$ING" verify --json p.npz
json_is 'not d["ok"] and d["error"]["code"] == "BAD_CHECKSUM" and d["error"]["where"] == "fc.bias"'

# BOOL values (issue 13 item 5): an .npy bool array holding "bad" is refused by verify (naming
# the tensor and the byte), dump and convert; open still succeeds (it reads the header only)
npy_bool mask.npy 626164
npy_bool okmask.npy 010001
run 0 "$ING" verify okmask.npy
expect_out "; BOOL values 0 or 1$"
run 0 "$ING" dump okmask.npy okmask
expect_out "^true false true$"
run 0 "$ING" info mask.npy
run 1 "$ING" verify mask.npy
expect_err "BAD_VALUE: .*0x62.*\[mask\] at byte 128"
run 1 "$ING" verify --json mask.npy
json_is 'not d["ok"] and d["error"]["code"] == "BAD_VALUE" and d["error"]["where"] == "mask" and d["error"]["offset"] == 128'
run 1 "$ING" dump mask.npy mask
expect_err "BAD_VALUE: .*\[mask\] at byte 128"
n=$((n + 1)); [ ! -s out.txt ] || { echo "FAIL: dump of a bad BOOL tensor printed:"; cat out.txt; fails=$((fails + 1)); }
for to in safetensors npz ingot; do
    run 1 "$ING" convert mask.npy "mask_out.$to"
    expect_err "BAD_VALUE: .*\[mask\] at byte 128"
    n=$((n + 1)); [ ! -e "mask_out.$to" ] || { echo "FAIL: refused convert left mask_out.$to"; fails=$((fails + 1)); }
done

# unpack writes OUT through a temporary: a refused read leaves an existing OUT as it was and no
# temporary; a good one replaces it; a device is written in place (never replaced by a file)
printf 'old contents' > unpacked.bin
run 1 "$ING" unpack mask.npy mask -o unpacked.bin
expect_err "BAD_VALUE: .*\[mask\] at byte 128"
n=$((n + 1)); [ "$(cat unpacked.bin)" = "old contents" ] || { echo "FAIL: refused unpack changed its output"; fails=$((fails + 1)); }
n=$((n + 1)); ! ls ./*ingot-tmp* >/dev/null 2>&1 || { echo "FAIL: unpack left a temporary:"; ls ./*ingot-tmp*; fails=$((fails + 1)); }
run 0 "$ING" unpack okmask.npy okmask -o unpacked.bin
n=$((n + 1)); [ "$(od -An -tx1 unpacked.bin | tr -d ' ')" = "010001" ] || { echo "FAIL: unpack wrote $(od -An -tx1 unpacked.bin)"; fails=$((fails + 1)); }
run 0 "$ING" unpack okmask.npy okmask -o /dev/null
n=$((n + 1)); [ -c /dev/null ] || { echo "FAIL: unpack replaced /dev/null"; fails=$((fails + 1)); }

# convert to .mag: the --dequantize hint only where dequantizing would get the tensor stored
printf '\x00\x00\x40\x40' > one.bin                                              # f32 3
printf '\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\x00\x40' > d.bin  # f64 1 2
: > empty.bin
run 0 "$ING" pack r0.ingot --tensor s:F32:=one.bin
run 1 "$ING" convert r0.ingot r0.mag
expect_err "rank 0"
expect_no_err "dequantize"
run 0 "$ING" pack e0.ingot --tensor e:F32:0x3=empty.bin
run 1 "$ING" convert e0.ingot e0.mag
expect_err "dimension 0 is 0"
expect_no_err "dequantize"
run 0 "$ING" pack d.ingot --tensor d:F64:2=d.bin
run 1 "$ING" convert d.ingot d.mag
expect_err "--dequantize F32|F16 stores 'd' (F64) as floats instead"
run 0 "$ING" convert d.ingot d.mag --dequantize F16
head -c 8 d.bin > d1.bin
run 0 "$ING" pack r64.ingot --tensor s:F64:=d1.bin
run 1 "$ING" convert r64.ingot r64.mag --dequantize F16
expect_err "rank 0"
expect_no_err "try --dequantize"
run 1 "$ING" convert r64.ingot r64.mag
expect_no_err "dequantize"

# convert --dtype / --dtype-map: float tensors cast (round to nearest even), a "lossy:" line per
# narrowing (F8 -> F16 is exact: counted, no line), GGML blocks and integers untouched
run 0 "$ING" convert m.ingot c16.ingot --dtype F16
expect_err "lossy: 2 F32 tensors cast to F16 (first 'fc.weight')"
expect_err "lossy: 1 BF16 tensor cast to F16 (first 'bf')"
expect_no_err "F8_E4M3 tensor"
expect_out "^wrote c16.ingot (ingot, 8 tensors, alignment 64, 5 cast)$"
run 0 "$ING" dump c16.ingot fc.weight
expect_out "^fc.weight: F16 2x3, 6 elements$"
expect_out "^0 0.25 0.5 0.75 1 1.25$"
run 0 "$ING" dump c16.ingot e5
expect_out "^1 57344 inf 1.52588e-05$"
run 0 "$ING" info --json c16.ingot
json_is '[t["dtype"] for t in d["tensors"]] == ["F16", "F16", "F16", "F16", "F16", "F16", "I32", "Q4_0"]'
run 0 "$ING" convert m.ingot cm.ingot --dtype-map F32=BF16 --dtype-map F8_E5M2=F32
run 0 "$ING" info --json cm.ingot
json_is '[t["dtype"] for t in d["tensors"]] == ["BF16", "BF16", "F16", "BF16", "F8_E4M3", "F32", "I32", "Q4_0"]'
run 2 "$ING" convert m.ingot x.ingot --dtype F99
expect_err "unknown dtype 'F99'"
run 1 "$ING" convert m.ingot x.ingot --dtype Q4_0
expect_err "UNSUPPORTED"
# --dequantize never changes what the target stores as is, and says so
run 0 "$ING" convert p.ingot pdq.safetensors --dequantize BF16
expect_err "note: --dequantize BF16 changed nothing"
run 0 "$ING" info --json pdq.safetensors
json_is 'all(t["dtype"] == "F32" for t in d["tensors"])'

# --include/--exclude/--rename: selection by glob, then renames in order; a collision names both
run 0 "$ING" convert m.ingot sel.safetensors --exclude 'e?' --include 'fc.*' --include 'h' --rename '^fc\.(.*)$=layer.\1' --rename '^layer=blk.0'
expect_out "3 tensors, 5 dropped"
run 0 "$ING" info --json sel.safetensors
json_is '[t["name"] for t in d["tensors"]] == ["blk.0.weight", "blk.0.bias", "h"]'
run 0 "$ING" unpack sel.safetensors blk.0.weight -o sel_w.bin
same sel_w.bin w.bin
run 1 "$ING" convert m.ingot x.ingot --rename '^fc\..*$=fc'
expect_err "DUPLICATE: tensors 'fc.weight' and 'fc.bias' would both be named 'fc'"
n=$((n + 1)); [ ! -e x.ingot ] || { echo "FAIL: refused rename left x.ingot"; fails=$((fails + 1)); }
run 2 "$ING" convert m.ingot x.ingot --rename 'nodelimiter'

# --quantize with llama-quantize's rules, on the real stories260K (rows of 64: the K types fall
# back to Q5_0/Q8_0; ffn_down rows of 172: F16; norms stay F32; use_more_bits(i, 5) = i 2 and 4)
STORIES="$HERE/../../../shared/fixtures/models/stories260K/stories260K.gguf"
run 0 "$ING" convert "$STORIES" q.gguf --quantize Q4_K_M
expect_out "^wrote q.gguf (gguf, 48 tensors, 5 cast, 32 quantized)$"
expect_err "lossy: 29 F32 tensors quantized to Q5_0 (first 'token_embd.weight')"
run 0 "$ING" info --json q.gguf
json_is 'd["metadata"]["general.file_type"]["value"] == 15 and d["metadata"]["general.quantization_version"]["value"] == 2'
json_is '{t["name"]: t["dtype"] for t in d["tensors"]}["output.weight"] == "Q8_0"'
json_is '[t["dtype"] for t in d["tensors"] if "attn_v" in t["name"]] == ["Q5_0", "Q5_0", "Q8_0", "Q5_0", "Q8_0"]'
json_is 'all(t["dtype"] == "F16" for t in d["tensors"] if "ffn_down" in t["name"])'
json_is 'all(t["dtype"] == "F32" for t in d["tensors"] if "norm" in t["name"])'
run 0 "$ING" verify q.gguf
run 1 "$ING" convert "$STORIES" x.gguf --quantize Q3_K_M
expect_err "no quantization type 'Q3_K_M'"

# metadata edits: convert --set/--delete/--rename-key, and meta FILE in place (a new file renamed
# over it: tensors byte for byte the same)
run 0 "$ING" convert m.ingot me.ingot --set layers:u32=8 --delete lr --rename-key name=general.name --set 'tags:string[]=x,y'
run 0 "$ING" info --json me.ingot
json_is 'd["metadata"]["layers"]["value"] == 8 and "lr" not in d["metadata"] and d["metadata"]["general.name"]["value"] == "demo" and d["metadata"]["tags"]["value"] == ["x", "y"]'
cp m.ingot inplace.ingot
run 0 "$ING" meta inplace.ingot --set 'layers:u32=3' --set note=hello --delete blob
expect_out "^wrote inplace.ingot (ingot, 8 tensors, alignment 64)$"
run 0 "$ING" info --json inplace.ingot
json_is 'd["metadata"]["layers"]["value"] == 3 and d["metadata"]["note"]["value"] == "hello" and "blob" not in d["metadata"]'
run 0 "$ING" unpack inplace.ingot fc.weight -o ip_w.bin
same ip_w.bin w.bin
run 0 "$ING" verify inplace.ingot
run 1 "$ING" meta inplace.ingot --delete nosuchkey
expect_err "NOT_FOUND"
run 2 "$ING" meta inplace.ingot --set 'n:u8=300'
expect_err "does not parse as u8"
run 2 "$ING" meta inplace.ingot
expect_err "nothing to do"
n=$((n + 1)); ! ls ./*ingot-tmp* >/dev/null 2>&1 || { echo "FAIL: meta left a temporary"; fails=$((fails + 1)); }
cp p.gguf pmeta.gguf
run 0 "$ING" meta pmeta.gguf --set general.name=edited
run 0 "$ING" info --json pmeta.gguf
json_is 'd["metadata"]["general.name"]["value"] == "edited"'

# hash: one digest per tensor and one for the model, the same in every format (C-order LE bytes
# of the dtype); sha256 of "ingot-tensor-v1\0F32\0" + rank + dims + data, computed here by Python
run 0 "$ING" hash m.ingot p.safetensors
expect_out "  m.ingot: fc.weight$"
want=$(python3 -c 'import hashlib,struct,sys; d=open(sys.argv[1],"rb").read(); print(hashlib.sha256(b"ingot-tensor-v1\0F32\0"+struct.pack("<IQQ",2,2,3)+d).hexdigest())' w.bin)
expect_out "^$want  m.ingot: fc.weight$"
for ext in safetensors gguf npz; do "$ING" convert p.ingot "p2.$ext" >/dev/null 2>&1; done
run 0 "$ING" hash --json p.ingot p2.safetensors p2.gguf p2.npz
json_is 'len(set(f["model"] for f in d)) == 1 and len(d) == 4 and d[0]["tensors"][0]["sha256"] == "'"$want"'"'
run 0 "$ING" hash c16.ingot
expect_no_out "$want"
run 1 "$ING" hash missing.ingot m.ingot
expect_err "NOT_FOUND"
expect_out "  m.ingot$"

# diff: across formats by C-order values; exit 0 same, 1 different, 2 trouble
run 0 "$ING" diff p.ingot p2.gguf
expect_out "^2 tensors the same, 0 differ, 0 metadata entries differ$"
# p.gguf had one byte of fc.bias flipped above (verify cannot see it; diff can)
run 1 "$ING" diff p.ingot p.gguf
expect_out "^differs: fc.bias: max abs 5.06639e-06, max rel 1.01327e-05, NMSE"
run 1 "$ING" diff m.ingot c16.ingot
expect_out "^differs: fc.weight (dtype F32 vs F16): max abs 0, max rel 0, NMSE 0$"
run 1 "$ING" diff m.ingot me.ingot --json
json_is 'd["same"] == 8 and {m["key"]: m["change"] for m in d["metadata"]} == {"layers": "value differs", "lr": "only in A", "name": "only in A", "general.name": "only in B", "tags": "value differs"}'
run 1 "$ING" diff m.ingot sel.safetensors
expect_out "^only in A: fc.weight (F32 2x3)$"
expect_out "^only in B: blk.0.weight (F32 2x3)$"
run 1 "$ING" diff "$STORIES" q.gguf --json
json_is '[t for t in d["tensors"] if t["name"] == "output.weight"][0]["nmse"] < 1e-3'
run 1 "$ING" diff --quiet m.ingot c16.ingot
n=$((n + 1)); [ ! -s out.txt ] || { echo "FAIL: diff --quiet printed"; fails=$((fails + 1)); }
run 2 "$ING" diff m.ingot missing.ingot

# summary: parameters and bytes by dtype and by layer; the architecture's hyperparameters
run 0 "$ING" summary "$STORIES"
expect_out "48 tensors, 292800 parameters, 1171200 bytes of tensor data$"
expect_out "^architecture: llama (block_count 5, context_length 2048, embedding_length 64"
expect_out "^  blk.4 *9 *45440 *181760$"
run 0 "$ING" summary --json q.gguf
json_is 'd["params"] == 292800 and d["hyperparameters"]["attention.head_count"] == 8 and {x["name"] for x in d["dtype"]} == {"F32", "F16", "Q5_0", "Q8_0"} and sum(x["tensors"] for x in d["layer"]) == 48'

# dump: slices (outermost first), several tensors, --all, --stats, --json
run 0 "$ING" dump m.ingot 'fc.weight[1,0:2]' fc.bias
expect_out "^fc.weight\[1,0:2\]: F32 2x3, 6 elements, 2 selected$"
expect_out "^0.75 1$"
expect_out "^0.5 -1 2$"
run 0 "$ING" dump m.ingot 'fc.weight[:,2]' --stats
expect_out "^fc.weight\[:,2\]: F32 2x3, 6 elements, 2 selected: min 0.5 max 1.25 mean 0.875 std 0.375 nan 0 inf 0$"
run 0 "$ING" dump --all --stats --json m.ingot
json_is '[t["name"] for t in d["tensors"]] == ["fc.weight", "fc.bias", "h", "bf", "e4", "e5", "step", "q"] and d["tensors"][3]["stats"]["inf"] == 1 and d["tensors"][4]["stats"]["nan"] == 1 and d["tensors"][1]["stats"]["mean"] == 0.5'
run 0 "$ING" dump --json m.ingot bf e4 q
json_is 'd["tensors"][0]["values"] == [1.0, -3.140625, "Infinity"] and d["tensors"][1]["values"][2] == "NaN" and len(d["tensors"][2]["blocks"]) == 2'
run 0 "$ING" dump m.ingot 'q[1,0:3]' --dequantize
expect_out "^-4.76837158e-07 -4.76837158e-07 -4.76837158e-07$"   # d = 2^-24, (0 - 8) d
run 2 "$ING" dump m.ingot 'q[1,0:3]'
expect_err "needs --dequantize"
run 2 "$ING" dump m.ingot 'fc.weight[2]'
expect_err "dimension 0 of 'fc.weight' has 2 entries"
run 2 "$ING" dump m.ingot 'fc.weight[0,0,0]'

# convert --json: the lossy records and the summary, or the error, as one object
run 0 "$ING" convert m.ingot cj.ingot --dtype F16 --json
json_is 'd["ok"] and d["format"] == "ingot" and d["tensors"] == 8 and d["cast"] == 5 and [l["kind"] for l in d["lossy"]][:2] == ["cast", "cast"] and d["lossy"][0]["from"] == "F32"' 
run 1 "$ING" convert m.ingot cj2.safetensors --json
json_is 'not d["ok"] and d["error"]["code"] == "UNSUPPORTED" and d["error"]["tensor"] == "q"'

# GGUF split: --opt max_shard_size writes llama.cpp's split files; any shard opens the model
run 0 "$ING" convert "$STORIES" sp.gguf --opt max_shard_size=400KB
expect_out "^wrote sp-\*-of-\*.gguf (gguf split, 48 tensors)$"
n=$((n + 1)); [ -e sp-00004-of-00004.gguf ] && [ ! -e sp.gguf ] || { echo "FAIL: split files"; ls sp*; fails=$((fails + 1)); }
run 0 "$ING" diff "$STORIES" sp-00003-of-00004.gguf
run 0 "$ING" verify sp-00001-of-00004.gguf
expect_out "gguf-split 3.0, 48 tensors"
run 0 "$ING" convert sp-00002-of-00004.gguf joined.gguf
run 0 "$ING" hash --quiet "$STORIES" joined.gguf sp-00001-of-00004.gguf
n=$((n + 1)); [ "$(cut -d' ' -f1 out.txt | sort -u | wc -l)" = 1 ] || { echo "FAIL: split/join digests"; cat out.txt; fails=$((fails + 1)); }
rm sp-00004-of-00004.gguf
run 1 "$ING" info sp-00001-of-00004.gguf
expect_err "NOT_FOUND: .*\[sp-00004-of-00004.gguf\]"

# pack input checks
run 1 "$ING" pack x.ingot --tensor a:F32:4x4=w.bin
expect_err "BAD_SIZE: tensor 'a'"
run 1 "$ING" pack x.ingot --tensor a:Q4_0:2x33=q.bin
expect_err "BAD_SIZE"
run 1 "$ING" pack x.ingot --tensor a:F32:2x3=w.bin --tensor a:F32:3=b.bin
expect_err "DUPLICATE"
run 2 "$ING" pack x.ingot --tensor a:F99:2x3=w.bin
expect_err "unknown dtype"
run 2 "$ING" pack x.ingot --tensor a:F32:2y3=w.bin
run 2 "$ING" pack x.ingot --meta n:u8=300
run 1 "$ING" pack x.ingot --align 100 --tensor a:F32:2x3=w.bin
expect_err "BAD_ALIGN"
n=$((n + 1)); [ ! -e x.ingot ] && ! ls x.ingot.ingot-tmp-* >/dev/null 2>&1 || { echo "FAIL: failed pack left files"; fails=$((fails + 1)); }

# language models (stories260K, a real pretrained Llama): greedy generation from BOS against the
# torch reference's 200 tokens, eval's logits file, usage and input errors
SM="$HERE/../../../shared/fixtures/models/stories260K"
if [ -d "$SM" ]; then
    run 0 "$ING" dump "$SM/golden/tokens_greedy_bos_plus_200.npy" tokens_greedy_bos_plus_200 --limit 300
    tail -n +2 out.txt | tr -s ' \n' ' ' | sed 's/^1 //; s/ $//' > want_ids.txt
    # the text llama2.c prints (run stories260K.bin -z tok512.bin -t 0.0 -n 200), byte for byte,
    # from the GGUF with its own vocabulary and from the llama2.c files
    run 0 "$ING" generate "$SM/stories260K.gguf" --temp 0 -n 200
    same out.txt "$SM/golden/llama2c_run_t0.0_n200.txt"
    expect_err "1 prompt tokens"
    run 0 "$ING" generate "$SM/stories260K.bin" --tokenizer "$SM/tok512.bin" --temp 0 -n 200
    same out.txt "$SM/golden/llama2c_run_t0.0_n200.txt"
    # with a prompt: llama2.c (-i "Once upon a time, Tim" -n 64) prints the prompt, and its -n
    # counts every position after BOS, the prompt's 6 tokens included; ingot's -n counts the
    # generated tokens only, and --echo prints the prompt: -n 64 - 6 = 58
    for m in "$SM/stories260K.gguf" "$SM/stories260K.bin --tokenizer $SM/tok512.bin"; do
        # shellcheck disable=SC2086
        run 0 "$ING" generate $m --prompt "Once upon a time, Tim" --temp 0 -n 58 --echo
        same out.txt "$SM/golden/llama2c_run_t0.0_n64_prompt_Once-upon-a-time-Tim.txt"
        expect_err "7 prompt tokens"
    done
    # without --echo the text goes on from the prompt, its leading space kept
    run 0 "$ING" generate "$SM/stories260K.gguf" --prompt "Once upon a time, Tim" --temp 0 -n 58
    printf 'Once upon a time, Tim' | cat - out.txt > echoed.txt
    same echoed.txt "$SM/golden/llama2c_run_t0.0_n64_prompt_Once-upon-a-time-Tim.txt"
    # ids echoed likewise without a tokenizer
    run 0 "$ING" generate "$SM/stories260K.bin" --tokens 1,403,407 --temp 0 -n 2 --echo
    expect_out "^1 403 407 [0-9]* [0-9]*$"
    # a checkpoint without a tokenizer prints ids: the torch reference's 200 greedy tokens
    run 0 "$ING" generate "$SM/stories260K.bin" --temp 0 -n 200
    head -1 out.txt | tr -d '\n' > got_ids.txt
    same got_ids.txt want_ids.txt
    run 1 "$ING" generate "$SM/stories260K.bin" --prompt "Once upon" -n 3
    expect_err "has no tokenizer: name one with --tokenizer"
    run 0 "$ING" generate "$SM/stories260K.gguf" --temp 0 -n 5 --json --threads 1
    expect_out '^{"prompt_tokens": 1, "tokens": \[403, 407, 261, 378, 432\], "text": "Once upon a time,", "prefill_tokens_per_s": '
    # sampled: the seed decides, not the thread count
    run 0 "$ING" generate "$SM/stories260K.gguf" --temp 0.8 --top-k 20 --top-p 0.9 --min-p 0.01 \
        --repeat-penalty 1.1 --seed 5 -n 40 --threads 1
    cp out.txt s1.txt
    run 0 "$ING" generate "$SM/stories260K.gguf" --temp 0.8 --top-k 20 --top-p 0.9 --min-p 0.01 \
        --repeat-penalty 1.1 --seed 5 -n 40 --threads 2
    same out.txt s1.txt
    run 0 "$ING" generate "$SM/stories260K.gguf" --tokens 1,403,407 --temp 0 -n 3 --json
    expect_out '"tokens": \[261, 378, 432\], "text": " a time,"'
    # a text prompt is encoded with the BOS the vocabulary asks for: the same ids, the same text
    run 0 "$ING" generate "$SM/stories260K.gguf" --prompt "Once upon" --temp 0 -n 3 --json
    expect_out '^{"prompt_tokens": 3, "tokens": \[261, 378, 432\], "text": " a time,"'
    printf 'Once upon' > prompt.txt
    run 0 "$ING" generate "$SM/stories260K.bin" --tokenizer "$SM/tok512.bin" --prompt-file prompt.txt --temp 0 -n 3
    expect_out "^ a time,$"
    run 0 "$ING" generate "$SM/stories260K.gguf" --beams 3 -n 6 --json
    expect_out '^{"prompt_tokens": 1, "tokens": \[403, 407, 261, 378, 432, 383\], "text": "Once upon a time, there", "score": '
    run 2 "$ING" generate "$SM/stories260K.gguf" --beams 3
    # --stop: the golden text printed up to (not including) the first stop string, one spanning
    # tokens and starting and ending inside them; the ids with the token that completed it
    python3 -c 'import sys; t = open(sys.argv[1]).read(); print(t[:t.index("ig, r")])' \
        "$SM/golden/llama2c_run_t0.0_n200.txt" > want_stop.txt
    run 0 "$ING" generate "$SM/stories260K.gguf" --temp 0 -n 200 --stop "ig, r" --stop zzz
    same out.txt want_stop.txt
    run 0 "$ING" generate "$SM/stories260K.gguf" --temp 0 -n 200 --stop zzz --stop "ig, r" --json
    json_is 'd["stop"] == "string" and d["text"] + "\n" == open("want_stop.txt").read()'
    json_is 'd["tokens"] == [int(x) for x in open("want_ids.txt").read().split()][:len(d["tokens"])]'
    json_is '"ig, r" not in d["text"] and len(d["tokens"]) < 200'
    # a stop string that never occurs: all 200 tokens, the golden text
    run 0 "$ING" generate "$SM/stories260K.gguf" --temp 0 -n 200 --stop "Lily's dog"
    same out.txt "$SM/golden/llama2c_run_t0.0_n200.txt"
    run 0 "$ING" generate "$SM/stories260K.gguf" --temp 0 -n 5 --json --stop zzz
    json_is 'd["stop"] == "length" and d["text"] == "Once upon a time,"'
    # the prompt is not matched (it holds "Tim"): the generated "Tim" stops it; --echo prints
    # the prompt before
    python3 -c 'import sys; t = open(sys.argv[1]).read(); i = t.index("Tim", 22); print(t[:i])' \
        "$SM/golden/llama2c_run_t0.0_n64_prompt_Once-upon-a-time-Tim.txt" > want_stop.txt
    run 0 "$ING" generate "$SM/stories260K.gguf" --prompt "Once upon a time, Tim" --temp 0 -n 58 \
        --echo --stop Tim
    same out.txt want_stop.txt
    run 1 "$ING" generate "$SM/stories260K.gguf" --temp 0 -n 5 --stop ""
    expect_err "MISUSE: lm_generate: stop string 0 is empty"
    # --stop with --beams: a hypothesis whose text holds the string is finished there; the
    # winner's text (plain and in --json) ends before it (tests/test_lm_stop.c and
    # test_lm_beam.c check the search itself: width 1 against greedy, wide against brute force)
    run 0 "$ING" generate "$SM/stories260K.gguf" --beams 2 -n 200 --stop "ig, r" --json
    json_is '"ig, r" not in d["text"] and 1 <= len(d["tokens"]) < 200 and d["text"].startswith("Once upon")'
    python3 -c 'import json; print(json.load(open("out.txt"))["text"])' > want_beam.txt
    run 0 "$ING" generate "$SM/stories260K.gguf" --beams 2 -n 200 --stop "ig, r"
    same out.txt want_beam.txt
    run 2 "$ING" generate "$SM/stories260K.bin" --beams 2 -n 5 --stop park
    expect_err "\-\-stop needs a tokenizer"
    run 2 "$ING" generate "$SM/stories260K.bin" --temp 0 -n 5 --stop park
    expect_err "\-\-stop needs a tokenizer"
    G="$HERE/../golden/lm"
    run 0 "$ING" eval "$G/llama_hf" --tokens 1,5,9 -o l0.npy
    run 0 "$ING" eval "$G/llama_hf" --tokens 1,5,9 -o l1.npy --lora "$G/llama_lora:0.5"
    expect_err "notice: lm: LoRA .*r 4, alpha 8, scale 0.5, 8 matrices merged"
    run 0 "$ING" eval "$G/llama.gguf" --tokens 1,5,9 -o l2.npy --lora "$G/llama_lora:0.5" --lora-runtime
    expect_err "8 matrices applied at run time"
    n=$((n + 1)); cmp -s l0.npy l1.npy && { echo "FAIL: the adapter changed nothing"; fails=$((fails + 1)); }
    # GPT-2 (Conv1D, fan_in_fan_out) and Mixtral experts: 4 matrices a layer, and q, o, the
    # router and 4 x 3 expert matrices a layer, over 2 layers
    run 0 "$ING" eval "$G/gpt2_hf" --tokens 0,5,9 -o g1.npy --lora "$G/gpt2_lora:0.5"
    expect_err "notice: lm: LoRA .*r 4, alpha 8, scale 0.5, 8 matrices merged"
    run 0 "$ING" eval "$G/moe.gguf" --tokens 1,5,9 -o m1.npy --lora "$G/moe_lora" --lora-runtime
    expect_err "30 matrices applied at run time"
    run 0 "$ING" eval "$SM/stories260K.gguf" --tokens 1,403,407,261 -o lg.npy
    run 0 "$ING" info lg.npy
    expect_out "F32 *4x512"
    run 1 "$ING" eval "$SM/stories260K.gguf" --tokens 1,512 -o lg.npy
    expect_err "RANGE: lm: token 512 at index 1 is outside the vocabulary"
    run 2 "$ING" eval "$SM/stories260K.gguf" --tokens 1,x -o lg.npy
    run 2 "$ING" eval "$SM/stories260K.gguf" --tokens 1,2
    # partial rotary runs (test_lm_models) but is not converted: refused, naming the key
    run 1 "$ING" convert "$G/llama_partial_hf" partial.gguf
    expect_err "UNSUPPORTED: partial rotary embeddings (8 of 16 dims) are not converted"
    expect_err "partial_rotary_factor"
    run 1 "$ING" convert "$G/llama_partial.gguf" partial_hf
    expect_err "llama.rope.dimension_count"
    run 2 "$ING" generate "$SM/stories260K.gguf" --temp -1
    run 2 "$ING" generate "$SM/stories260K.gguf" --kv f8
    run 1 "$ING" generate m.ingot
    expect_err "BAD_METADATA"
else
    echo "FAIL: $SM missing (the shared model fixtures)"; fails=$((fails + 1))
fi
# tokenize / detokenize (issue 14). Expected ids are llama.cpp's vectors for "Hello world"
# (../shared/fixtures/tokenizers/llama.cpp/*.out, case 12), BOS ids from the vocabularies.
FIX="$HERE/../../../shared/fixtures"
TOK="$FIX/tokenizers"
run 0 "$ING" tokenize "$TOK/llama.cpp/ggml-vocab-gpt-2.gguf" --text "Hello world"
expect_out "^15496 995$"
run 0 "$ING" tokenize "$TOK/gpt2" --text "Hello world"
expect_out "^15496 995$"
run 0 "$ING" tokenize "$TOK/gpt2/encoder.json" --no-bos --text "Hello world"
expect_out "^15496 995$"
run 0 "$ING" tokenize "$TOK/llama.cpp/ggml-vocab-llama-spm.gguf" --text "Hello world"
expect_out "^1 15043 3186$"
run 0 "$ING" tokenize "$TOK/llama.cpp/ggml-vocab-llama-spm.gguf" --no-bos --text "Hello world"
expect_out "^15043 3186$"
run 0 "$ING" tokenize "$TOK/llama3" --text "Hello world"
expect_out "^128000 9906 1917$"
run 0 "$ING" tokenize "$TOK/llama3/tokenizer.json" --no-bos --parse-special --text "Hello world<|eot_id|>"
expect_out "^9906 1917 128009$"
printf 'Hello world' > hw.txt
run 0 "$ING" tokenize "$FIX/models/stories260K/tok512.bin" --file hw.txt
cp out.txt tok512.txt
run 0 "$ING" tokenize "$FIX/models/stories260K" --file hw.txt
same out.txt tok512.txt
run 0 "$ING" detokenize "$TOK/llama.cpp/ggml-vocab-llama-spm.gguf" --tokens 1,15043,3186
printf 'Hello world' > want.txt
same out.txt want.txt
run 0 "$ING" detokenize "$TOK/llama3/tokenizer.json" --tokens 128000,9906,1917 --special
printf '<|begin_of_text|>Hello world' > want.txt
same out.txt want.txt
run 1 "$ING" detokenize "$TOK/gpt2" --tokens 50257
expect_err "RANGE"
run 1 "$ING" tokenize "$FIX/npy" --text x
expect_err "NOT_FOUND"
printf '{"model": {"type": "WordPiece", "vocab": {"a": 0}}}' > wp.json
run 1 "$ING" tokenize wp.json --text x
expect_err "UNSUPPORTED"
expect_err "WordPiece"
run 2 "$ING" tokenize "$TOK/gpt2"
run 2 "$ING" detokenize "$TOK/gpt2" --tokens 1,x

# usage errors
run 2 "$ING"
run 2 "$ING" frobnicate
run 2 "$ING" info
run 2 "$ING" unpack m.ingot fc.bias
run 2 "$ING" verify --threads x m.ingot
run 0 "$ING" --version
expect_out "^ingot 0.1.0$"
run 0 "$ING" --help
expect_out "^  verify   run every check a file's format allows$"
run 0 "$ING" help verify
expect_out "^usage: ingot verify \[--threads N\] \[--json\] FILE...$"
expect_out "this format stores no checksums"
run 0 "$ING" verify --help
expect_out "^usage: ingot verify \[--threads N\] \[--json\] FILE...$"
# a usage error prints that command's usage only, on stderr; did you mean
run 2 "$ING" verify --thread 2 m.ingot
expect_err "unknown option --thread; did you mean --threads?"
expect_err "^usage: ingot verify \[--threads N\] \[--json\] FILE...$"
expect_no_err "ingot convert"
run 2 "$ING" convrt m.ingot x.ingot
expect_err "unknown command 'convrt'; did you mean 'convert'?"
run 1 "$ING" dump m.ingot fc.weigth
expect_err "no tensor named 'fc.weigth' in m.ingot; did you mean 'fc.weight'?"
run 1 "$ING" dump --json m.ingot nosuch
json_is 'd["error"]["code"] == "NOT_FOUND" and d["error"]["tensor"] == "nosuch"'
run 1 "$ING" info --json trunc.ingot
json_is 'd["error"]["code"] == "TRUNCATED" and d["error"]["offset"] == 100'
# several files per call; --quiet
run 0 "$ING" info --json m.ingot p.ingot
n=$((n + 1)); [ "$(wc -l < out.txt)" = 2 ] || { echo "FAIL: info --json of 2 files"; fails=$((fails + 1)); }
run 1 "$ING" verify m.ingot missing.ingot p.ingot
expect_out "^m.ingot: OK"
expect_out "^p.ingot: OK"
expect_err "NOT_FOUND"
run 0 "$ING" --quiet convert m.ingot quiet.ingot
n=$((n + 1)); [ ! -s out.txt ] || { echo "FAIL: --quiet printed"; fails=$((fails + 1)); }
# man pages and completions come from the same text
run 0 "$ING" help --man man
n=$((n + 1)); grep -q 'ingot verify \[\\-\\-threads N\]' man/ingot-verify.1 && [ -s man/ingot.1 ] || { echo "FAIL: man page synopsis"; fails=$((fails + 1)); }
run 0 "$ING" help --completion bash
expect_out "convert) opts=\" --to --align --opt --dequantize --dtype --dtype-map --quantize --include"
run 0 "$ING" help --completion zsh
expect_out "^#compdef ingot$"

# model-aware conversion: HF folder <-> GGUF (convert.h section 4)
LM="$HERE/../golden/lm"
run 0 "$ING" convert "$LM/llama_hf" llama.gguf
expect_out "^wrote llama.gguf (gguf, llama, 21 tensors)$"
expect_err "note: the folder has no tokenizer"
run 1 "$ING" diff llama.gguf "$LM/llama.gguf"
expect_out "21 tensors the same, 0 differ"
run 0 "$ING" convert "$STORIES" st_hf
expect_out "^wrote st_hf (hf, llama, 48 tensors, tokenizer)$"
n=$((n + 1)); [ -s st_hf/model.safetensors ] && [ -s st_hf/config.json ] && [ -s st_hf/tokenizer.json ] && [ -s st_hf/tokenizer_config.json ] || { echo "FAIL: HF folder files"; fails=$((fails + 1)); }
run 0 "$ING" convert st_hf st.gguf --json
json_is 'd["ok"] and d["format"] == "gguf" and d["arch"] == "llama" and d["tensors"] == 48 and d["tokenizer"]'
run 1 "$ING" diff "$STORIES" st.gguf
expect_out "48 tensors the same, 0 differ"
run 0 "$ING" convert "$STORIES" st_sharded --opt max_shard_size=400KB
expect_out "^wrote st_sharded (hf, llama, 48 tensors, tokenizer, sharded)$"
n=$((n + 1)); [ -s st_sharded/model.safetensors.index.json ] && [ -s st_sharded/model-00001-of-00004.safetensors ] || { echo "FAIL: shards"; fails=$((fails + 1)); }
run 0 "$ING" convert st_sharded st_from_shards.gguf
run 1 "$ING" diff "$STORIES" st_from_shards.gguf
expect_out "48 tensors the same, 0 differ"
run 0 "$ING" tokenize st_hf --text "Once upon a time, Tim said hello."
cp out.txt tok_hf.txt
run 0 "$ING" tokenize "$STORIES" --text "Once upon a time, Tim said hello."
same out.txt tok_hf.txt
# --to hf names the folder output; plan options stage through .ingot and apply to GGUF names
run 0 "$ING" convert "$LM/moe.gguf" moe_out --to hf --exclude 'nothing*'
expect_out "^wrote moe_out (hf, llama, 41 tensors)$"  # 2 x (4 attn, 2 norms, router, 4 x 3 experts) + 3
n=$((n + 1)); ! ls moe_out.ingot-stage* >/dev/null 2>&1 || { echo "FAIL: stage left behind"; fails=$((fails + 1)); }
run 0 "$ING" convert "$LM/qwen2_hf" q8.gguf --quantize Q8_0 --set general.name=q
expect_out "^wrote q8.gguf (gguf, "
expect_out "quantized"
run 0 "$ING" info --json q8.gguf
json_is 'd["metadata"]["general.name"]["value"] == "q" and d["metadata"]["general.file_type"]["value"] == 7 and any(t["name"] == "blk.0.attn_q.weight" and t["dtype"] == "Q8_0" for t in d["tensors"])'
n=$((n + 1)); ! ls q8.gguf.ingot-stage* >/dev/null 2>&1 || { echo "FAIL: stage left behind"; fails=$((fails + 1)); }
run 0 "$ING" convert "$LM/llama_hf" f16.gguf --dtype F16
run 0 "$ING" info --json f16.gguf
# as llama.cpp's converter: 1-D tensors and norm weights stay F32, the matrices become F16
json_is 'd["metadata"]["general.file_type"]["value"] == 1 and all(t["dtype"] == ("F32" if len(t["shape"]) == 1 or t["name"].endswith("_norm.weight") else "F16") for t in d["tensors"]) and any(t["dtype"] == "F32" for t in d["tensors"])'
# errors name the key or tensor
mkdir bad_hf && cp "$LM/gpt2_hf/model.safetensors" bad_hf/ && sed 's/"gpt2"/"bert"/' "$LM/gpt2_hf/config.json" > bad_hf/config.json
run 1 "$ING" convert bad_hf bad.gguf
expect_err "UNSUPPORTED.*model_type 'bert'"
n=$((n + 1)); [ ! -e bad.gguf ] || { echo "FAIL: bad.gguf written"; fails=$((fails + 1)); }
run 1 "$ING" convert "$LM/quant.gguf" quant_hf
expect_err "BAD_TYPE: tensor 'token_embd.weight' is Q8_0, which safetensors cannot hold"
run 0 "$ING" convert "$LM/quant.gguf" quant_hf --dequantize F32
expect_err "lossy: 2 Q4_K tensors dequantized to F32"
run 0 "$ING" convert "$LM/quant.gguf" quant_f32.safetensors --dequantize F32
run 0 "$ING" convert quant_hf quant_back.gguf
run 1 "$ING" diff quant_back.gguf quant_f32.safetensors
expect_out "21 tensors the same, 0 differ"
run 2 "$ING" convert st_hf st_hf2/
expect_err "both IN and OUT are Hugging Face folders"

echo "cli: $n checks, $fails failed"
[ "$fails" = 0 ]
