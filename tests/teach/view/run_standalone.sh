#!/bin/sh
# The page of `ordo view --standalone` in headless Chromium, from disk, offline (test_standalone.mjs):
# the default model with 20 typed sentences, and the rope and alibi models with 3. Skipped (77) when
# node or Chromium is missing, or when ordo was not compiled to WebAssembly (no emscripten).
#   run_standalone.sh ORDO MODEL_DIR OUT_DIR
set -eu
ordo=$1 model=$2 out=$3
. "$(cd "$(dirname "$0")" && pwd)/preflight.sh"
web="$(dirname "$ordo")/web/ordo_web.wasm"
if [ ! -f "$web" ]; then
  echo "skip: $web is missing: ordo was not compiled to WebAssembly (install emscripten, then cmake --build build --target ordo_web)"
  exit 77
fi
mkdir -p "$out"
"$ordo" view --standalone --model "$model" --html "$out/view-standalone.html"
node "$here/test_standalone.mjs" "$ordo" "$model" "$out/view-standalone.html"
models=$(cd "$here/../../../models" && pwd)
for pe in rope alibi; do
  "$ordo" view --standalone --model "$models/position-$pe" --html "$out/view-standalone-$pe.html"
  node "$here/test_standalone.mjs" "$ordo" "$models/position-$pe" "$out/view-standalone-$pe.html" --sentences 3
done
