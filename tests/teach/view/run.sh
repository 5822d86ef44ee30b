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

# The page the walkthrough links to, and its screenshot as docs/img/view.png shows it: section 2 on layer 1,
# head 1 (the head that looks at the piece before), with the pointer on A's "cat".
mkdir -p "$out"
A="the cat sat on the mat" B="the mat sat on the cat"
ORDO_MODEL="$model" "$ordo" view "$A" "$B" --html "$out/view-example.html"
"$ordo" trace --json --model "$model" --inside 1,1 "$A" >"$out/view-example-trace-1,1.json"
"$ordo" attention --model "$model" --layer 0 --head 1 --parts "$A" >"$out/view-example-parts-0,1.txt"
node "$here/test_view.mjs" "$out/view-example.html" --layers "$layers" --heads "$heads" --loads 3 \
  --trace "$out/view-example-trace-1,1.json" --parts "0,1,$out/view-example-parts-0,1.txt" --trained 32 --boxes \
  --screenshot "$out/view-example.png" --shot-from "#head-view h2" --shot-head 1,1 \
  --shot-hover "#head-views .side:first-child .hit:nth-of-type(2)"
# Two texts longer than the training length of 32 pieces (40 and 67): its mark on the maps and in section 4,
# and the layout of maps of many cells; the inside of layer 0 head 0 (A has 40 pieces) against the engine's.
A40="an article of clothing the way something is with respect to its main attributes they claimed that they had been in contact with extraterrestrial beings the act of delivering a child"
B67="that song was his first hit and marked the beginning of his career a failure to perform some promised act or obligation a breach of a legal duty (tennis) two successive faults in serving resulting in the loss of the point an option granted to corporate executives if the company achieves certain financial goals"
ORDO_MODEL="$model" "$ordo" view "$A40" "$B67" --html "$out/view-long.html"
"$ordo" trace --json --model "$model" --inside 0,0 "$A40" >"$out/view-long-trace-0,0.json"
node "$here/test_view.mjs" "$out/view-long.html" --trace "$out/view-long-trace-0,0.json" --trained 32 --boxes
# Rope and alibi act inside the heads: the page of each, checked against `ordo trace --inside` for a head
# of layer 1 and, for alibi, of layer 0 (whose bias section 5 shows). The models are in the source tree.
models=$(cd "$here/../../../models" && pwd)
for pe in rope alibi; do
  "$ordo" view --model "$models/position-$pe" "$A" "$B" --html "$out/view-$pe.html"
  traces=""
  for head in 1,2 0,3; do
    "$ordo" trace --json --model "$models/position-$pe" --inside $head "$A" >"$out/view-$pe-trace-$head.json"
    traces="$traces --trace $out/view-$pe-trace-$head.json"
  done
  node "$here/test_view.mjs" "$out/view-$pe.html" $traces --boxes
done
node "$here/test_view.mjs" --template "$template" --data "$here/sample.json" --out "$out/view-sample.html" \
  --predictions 2
