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

run 0 "$ING" verify m.ingot
expect_out "m.ingot: OK"

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
# damage the header (the first stored tensor checksum, byte 208): open already refuses
cp m.ingot badh.ingot; printf '\x01' | dd of=badh.ingot bs=1 seek=208 conv=notrunc 2>/dev/null
run 1 "$ING" info badh.ingot
expect_err "BAD_CHECKSUM"
# truncation
head -c 100 m.ingot > trunc.ingot
run 1 "$ING" verify trunc.ingot
expect_err "TRUNCATED"
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

echo "cli: $n checks, $fails failed"
[ "$fails" = 0 ]
