#!/usr/bin/env bash
# CLI test over a tensor larger than 4.3 GB (ctest label "large"): pack a 4.6 GB raw file (sparse,
# a few non-zero bytes), then `ingot verify` must pass with stderr on a pseudo-terminal (the
# tensor-by-tensor progress path, one CRC call per tensor) and off it (chunks joined with
# ingot_crc32c_combine), and fail both ways once a byte of the tensor is changed.
# Needs ~4.7 GB free disk under DIR (the packed file is written out in full).
# Usage: large.sh PATH_TO_INGOT DIR
set -uo pipefail
ING=$(realpath "$1")
mkdir -p "$2"
W=$(mktemp -d "$(realpath "$2")/cli-large.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"
fails=0
n=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

SIZE=4600000000
avail=$(df -Pk . | awk 'NR == 2 { print $4 }')
if [ "$avail" -lt $(( (SIZE + 200000000) / 1024 )) ]; then
    echo "FAIL: $((avail / 1024)) MiB free under $W; this test writes a $SIZE-byte file"
    exit 1
fi

# on_tty CMD...: runs CMD with stdin, stdout and stderr on a new pseudo-terminal; its output goes
# to tty.txt and its exit status is returned. Exit 97: stderr was not a terminal after all.
on_tty() {
    local cmd
    printf -v cmd '%q ' "$@"
    if command -v script >/dev/null; then
        script -qec "[ -t 2 ] || exit 97; $cmd" /dev/null >tty.txt 2>&1 </dev/null
    else
        /usr/bin/python3 -c 'import os, pty, sys
st = pty.spawn(["bash", "-c", "[ -t 2 ] || exit 97; " + sys.argv[1]])
sys.exit(os.waitstatus_to_exitcode(st))' "$cmd" >tty.txt 2>&1 </dev/null
    fi
}

# off_tty CMD...: stderr to a file; exit status returned.
off_tty() { "$@" >out.txt 2>err.txt </dev/null; }

# A sparse 4.6 GB tensor with marker bytes around 2^29, 2^31, 2^32 and at both ends, so that its
# CRC depends on where they are (a wrong shift anywhere changes it).
truncate -s $SIZE big.bin
for off in 0 536870911 2147483648 4294967296 4294967297 $((SIZE - 1)); do
    printf '\x5a\xa5' | dd of=big.bin bs=1 seek="$off" count=1 conv=notrunc status=none
done
printf '\x01\x02\x03\x04' > small.bin

t0=$(date +%s)
n=$((n + 1))
off_tty "$ING" pack big.ingot --tensor big:U8:$SIZE=big.bin --tensor small:U8:4=small.bin ||
    { fail "pack exit $?"; cat err.txt; }
rm -f big.bin
echo "pack: $(( $(date +%s) - t0 )) s"

# both paths accept the file as written
t0=$(date +%s)
n=$((n + 1))
off_tty "$ING" verify big.ingot; rc=$?
[ $rc = 0 ] || { fail "verify (stderr not a terminal) exit $rc"; cat err.txt; }
n=$((n + 1))
grep -q "big.ingot: OK" out.txt || fail "verify (stderr not a terminal) printed no OK"
n=$((n + 1))
on_tty "$ING" verify big.ingot; rc=$?
[ $rc = 0 ] || { fail "verify (stderr on a terminal) exit $rc"; cat tty.txt; }
n=$((n + 1))
grep -q "big.ingot: OK" tty.txt || fail "verify (stderr on a terminal) printed no OK"
echo "verify x2: $(( $(date +%s) - t0 )) s"

# one byte changed deep inside the tensor: both paths must report BAD_CHECKSUM on it
boff=$("$ING" info --json big.ingot | /usr/bin/python3 -c 'import json, sys
print([t for t in json.load(sys.stdin)["tensors"] if t["name"] == "big"][0]["offset"])')
if [ -z "$boff" ]; then
    fail "no offset for tensor big in info --json"
else
    printf '\x77' |
        dd of=big.ingot bs=1 seek=$((boff + 3000000000)) count=1 conv=notrunc status=none
    n=$((n + 1))
    off_tty "$ING" verify big.ingot; rc=$?
    [ $rc = 1 ] || fail "verify of a corrupted tensor (stderr not a terminal) exit $rc, want 1"
    n=$((n + 1))
    grep -q "checksum" err.txt || { fail "no checksum error (stderr not a terminal)"; cat err.txt; }
    n=$((n + 1))
    on_tty "$ING" verify big.ingot; rc=$?
    [ $rc = 1 ] || fail "verify of a corrupted tensor (stderr on a terminal) exit $rc, want 1"
    n=$((n + 1))
    grep -q "checksum" tty.txt || { fail "no checksum error (stderr on a terminal)"; cat tty.txt; }
fi

echo "cli-large: $n checks, $fails failed"
[ "$fails" = 0 ]
