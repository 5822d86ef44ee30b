#!/usr/bin/env bash
# Installs what ordo needs to build and test, from Debian 12's packages.
set -euo pipefail
packages=(
  cmake g++ make pkg-config            # build
  libopenblas-dev                      # matrix work (cblas_sgemm)
  libsentencepiece-dev sentencepiece   # tokenizer (and spm_train, for tools/train/train_tokenizer.sh)
  libcxxopts-dev nlohmann-json3-dev    # command line, JSON
  libgtest-dev googletest              # tests
  wordnet-base                         # the corpus of tools/train/ (tokenizer and models; tests retrain both)
  python3-torch python3-numpy python3-sentencepiece  # PyTorch parity tests, export and training tools
  libpng-dev libcairo2-dev libpango1.0-dev  # pictures: ordo pe --png, ordo attention --png (PNG or SVG)
  fonts-dejavu-core fonts-droid-fallback     # their labels: Latin, Greek, Cyrillic, "▁"; Chinese, Japanese, Korean
  clang libclang-rt-14-dev             # libFuzzer and sanitizers (fuzz/, ORDO_FUZZ)
)
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${packages[@]}"
