#!/usr/bin/env bash
# `cmake --install` puts `import ordo` where python3 finds it, with the model beside it: installed
# into a temporary prefix, the module loads the installed default model (not the build tree's)
# and encodes; and for the configured prefix, the install directory is on python3's sys.path.
set -euo pipefail
build_dir=$1 python=$2 python_dir=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
package="$work/prefix/$python_dir/ordo"
ls "$package"/_ordo*.so "$package/__init__.py" "$package/__init__.pyi" >/dev/null
out=$(cd / && env -u ORDO_MODEL PYTHONPATH="$work/prefix/$python_dir" "$python" -c '
import ordo
m = ordo.Model()
v = m.encode(["the cat sat on the mat", "hello"], normalize=True)
print(m.path)
print(v.shape, round(float((v * v).sum()), 4))
print("pooling" in ordo.Model.encode.__doc__)
')
echo "$out"
[ "$(echo "$out" | sed -n 1p)" = "$work/prefix/share/ordo/models/default" ]
[ "$(echo "$out" | sed -n 2p)" = "(2, 64) 2.0" ]
[ "$(echo "$out" | sed -n 3p)" = "True" ]

# Where the configured prefix puts it: a directory this python3 searches.
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build_dir/CMakeCache.txt")
"$python" -c 'import sys; d = sys.argv[1]; assert d in sys.path, f"{d} is not on sys.path: {sys.path}"' \
  "$prefix/$python_dir"
