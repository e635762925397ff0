#!/usr/bin/env bash
# Installs the Debian 12 packages ingot needs to build and test. Idempotent; run as root after
# `apt-get update` (or let it run apt-get update itself when a package is missing).
# Nothing is downloaded from anywhere but Debian's archive.
set -euo pipefail
pkgs=(
  build-essential     # gcc, make, libc headers: the compiler ingot is built with
  cmake               # the build system (>= 3.20)
  pkg-config          # the install test builds a consumer through ingot.pc
  clang               # libFuzzer targets (INGOT_BUILD_FUZZ); not needed for the plain build
  libclang-rt-14-dev  # libFuzzer and sanitizer runtimes for clang 14
  libxxhash-dev       # benchmarks only: XXH3 as a second checksum baseline
  zlib1g-dev          # deflated .npz members (inflate); also the zlib crc32 bench baseline
  libcbor-dev         # Burnpack headers are CBOR (RFC 8949): a maintained decoder, not our own
  libjson-c-dev       # JSON baseline in the safetensors header benchmark
  libopenblas-dev     # the GEMM/GEMV benchmark baseline, dlopen'ed by `ingot bench gemm`
  valgrind            # the test script replays tests under memcheck
  python3             # CLI tests parse `ingot info --json`
  python3-sentencepiece  # bench/tok_ref.py only: the SentencePiece baseline of bench_tokenizer
  python3-protobuf    # bench/tok_ref.py only: writes the SentencePiece model from a GGUF vocab
  python3-regex       # bench/tok_ref.py only: \p{L}/\p{N} for the pure-Python GPT-2 floor
  binutils            # nm/readelf for the freestanding and SONAME checks
  python3-dev         # python/: headers of CPython for the `ingot` extension (limited API)
  python3-setuptools  # python/: setup.py builds the package (offline, no build isolation)
  python3-pip         # python/: `python3 -m pip install --no-build-isolation --no-index ./python`
  python3-wheel       # python/: pip builds the package as an abi3 wheel first
  python3-numpy       # python/: tensors come back as NumPy arrays viewing the mapping
  python3-pytest      # python/: the package's test suite (python/run_tests.sh)
  python3-torch       # python/: ingot.torch bridge and its tests against torch.load
)
# The Python package's install contract is `/usr/bin/python3 -m pip install --no-build-isolation
# --no-index ./python`. Debian 12 marks its Python "externally managed" (PEP 668), which makes pip
# refuse that command, so the set-up allows pip to install into /usr/local (pip.conf, pip >= 23.0.1).
pip_conf() {
  [ "$(id -u)" = 0 ] || return 0
  if ! grep -qs '^break-system-packages *= *true' /etc/pip.conf; then
    if grep -qs '^\[global\]' /etc/pip.conf; then # one [global] section only (configparser)
      sed -i '0,/^\[global\]/s//[global]\nbreak-system-packages = true/' /etc/pip.conf
    else
      printf '[global]\nbreak-system-packages = true\n' >> /etc/pip.conf
    fi
    echo "install-deps: /etc/pip.conf allows pip installs beside Debian's packages (PEP 668)"
  fi
}
pip_conf
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-deps: missing ${missing[*]}; run this script as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "${missing[@]}" || {
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
}
echo "install-deps: installed ${missing[*]}"
