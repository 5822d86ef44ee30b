#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs a separate project that
# finds it with find_package(ordo) and encodes two texts.
set -euo pipefail
build_dir=$1 source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null

# The public face alone is installed: no engine header (the encoder, the weights, the kernels), and
# each installed header compiles on its own against the prefix and the system's headers.
if [ -e "$work/prefix/include/ordo/engine" ]; then
  echo "error: engine headers installed: $(ls "$work/prefix/include/ordo/engine")"
  exit 1
fi
for header in $(cd "$work/prefix/include" && find ordo -name '*.h' | sort); do
  echo "#include <$header>" | c++ -std=c++17 -fsyntax-only -I"$work/prefix/include" -x c++ - ||
    { echo "error: $header does not compile alone against the installed tree"; exit 1; }
done
echo "installed headers: $(cd "$work/prefix/include" && find ordo -name '*.h' | sort | tr '\n' ' ')"
cmake -S "$source_dir/tests/lib/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
out=$("$work/consumer/embed" "the cat sat on the mat" "hello")
echo "$out"
[ "$(echo "$out" | grep -c -- '-> 64 floats, norm 1.0000')" -eq 2 ]

# The same program built without CMake, from the installed pkg-config file (ordo.pc) and nothing
# else: the prefix is not the configured one, and the program finds the model all the same
# (<ordo/installed.h>, written by cmake --install).
pc=$(dirname "$(find "$work/prefix" -name ordo.pc | head -1)")
export PKG_CONFIG_PATH="$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
model_dir=$(pkg-config --variable=modeldir ordo)
[ -f "$model_dir/model.safetensors" ]
# shellcheck disable=SC2046  # pkg-config's output is meant to be split into words
c++ -std=c++17 -O1 "$source_dir/tests/lib/consumer/embed.cpp" \
  $(pkg-config --cflags --libs ordo) -o "$work/embed_pc"
out=$(cd / && env -u ORDO_MODEL "$work/embed_pc" "the cat sat on the mat" "hello")
echo "$out"
[ "$(echo "$out" | grep -c -- '-> 64 floats, norm 1.0000')" -eq 2 ]

# docs/cpp.md's C++ block, as a reader would paste it into main(): compiled against the installed
# library and run.
awk '/^```cpp$/ {on = 1; next} /^```$/ {on = 0} on' "$source_dir/docs/cpp.md" >"$work/block.cpp"
{
  grep '^#include' "$work/block.cpp"
  echo 'int main() {'
  grep -v '^#include' "$work/block.cpp"
  echo '}'
} >"$work/doc_example.cpp"
# shellcheck disable=SC2046
c++ -std=c++17 -O1 "$work/doc_example.cpp" $(pkg-config --cflags --libs ordo) -o "$work/doc_example"
(cd / && env -u ORDO_MODEL "$work/doc_example")
echo "docs/cpp.md's example compiles and runs"

# The PyTorch exporter docs/cpp.md runs is installed, and runs from there.
exporter="$work/prefix/share/ordo/python/export_pytorch.py"
[ -x "$exporter" ]
if /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null; then
  /usr/bin/python3 "$exporter" --help | grep -q -- '--n-heads'
  echo "the installed exporter runs"
fi
