#!/bin/sh
# The page of `ordo view` in headless Chromium: ordo's page for "the cat sat on the mat" / "the mat sat
# on the cat", then the page template filled with sample.json (mask predictions, which the default model
# may not give). Skipped (77) only when node or Chromium is missing.
#   run.sh ORDO MODEL_DIR TEMPLATE OUT_DIR
set -eu
ordo=$1 model=$2 template=$3 out=$4
. "$(cd "$(dirname "$0")" && pwd)/preflight.sh"
# The model's sizes, read here rather than from the page, so the panel count is checked against them.
size() { node -e "console.log(JSON.parse(require('fs').readFileSync('$model/config.json', 'utf8')).$1)"; }
layers=$(size n_layers) heads=$(size n_heads)

# The page the walkthrough links to, and its screenshot as docs/img/view.png shows it: section 2 with the
# pointer on A's "cat".
mkdir -p "$out"
ORDO_MODEL="$model" "$ordo" view "the cat sat on the mat" "the mat sat on the cat" --html "$out/view-example.html"
node "$here/test_view.mjs" "$out/view-example.html" --layers "$layers" --heads "$heads" --loads 3 \
  --screenshot "$out/view-example.png" --shot-from "#head-view h2" \
  --shot-hover "#head-views .side:first-child .hit:nth-of-type(2)"
node "$here/test_view.mjs" --template "$template" --data "$here/sample.json" --out "$out/view-sample.html" \
  --predictions 2
