#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs a separate project that
# finds it with find_package(ordo) and encodes two texts.
set -euo pipefail
build_dir=$1 source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/tests/api/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
out=$("$work/consumer/embed" "the cat sat on the mat" "hello")
echo "$out"
[ "$(echo "$out" | grep -c -- '-> 64 floats, norm 1.0000')" -eq 2 ]
