#!/usr/bin/env bash
# The README's install path, checked without installing anything (ctest: install.readme_commands):
#  - every `-j` in the README's and docs' commands has a number: a bare -j starts a compiler per file
#    (about 40 at once here) and runs out of memory on a small machine;
#  - every program the README's commands call is installed by tools/dev/install-deps.sh, with and
#    without --cli, and the --cli list is part of the full one;
#  - with GoogleTest and pybind11 missing (as after install-deps.sh --cli), `cmake -B build` configures,
#    and says the tests are not built.
# tools/dev/fresh_machine.sh runs the README's commands themselves on a fresh machine.
set -euo pipefail
source_dir=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
fail=0
bad() {
  echo "error: $*" >&2
  fail=1
}

# Bare -j (followed by a space, a quote or the end of the line) in a command of README.md or docs/.
while IFS= read -r hit; do
  bad "$hit: -j without a number (use -j\"\$(nproc)\" or -jN)"
done < <(grep -nE -- '(cmake --build|ctest|make)[^`]*[[:space:]]-j([[:space:]]|$|`)' "$source_dir/README.md" \
  "$source_dir"/docs/*.md | cut -d: -f1,2 || true)

full=$("$source_dir/tools/dev/install-deps.sh" --print)
cli=$("$source_dir/tools/dev/install-deps.sh" --cli --print)
for p in $cli; do
  grep -qx -- "$p" <<<"$full" || bad "install-deps.sh --cli installs $p, which the full list does not"
done
# Programs the README's commands call, and the package that has each.
readme_sh=$(awk '/^```sh$/ {on = 1; next} /^```$/ {on = 0} on' "$source_dir/README.md")
for pair in curl:curl cmake:cmake pkg-config:pkg-config; do
  prog=${pair%%:*} pkg=${pair#*:}
  if grep -qE "(^|[[:space:]&|;(])$prog[[:space:]]" <<<"$readme_sh"; then
    grep -qx -- "$pkg" <<<"$full" || bad "README.md runs $prog; install-deps.sh does not install $pkg"
    grep -qx -- "$pkg" <<<"$cli" || bad "README.md runs $prog; install-deps.sh --cli does not install $pkg"
  fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! cmake -S "$source_dir" -B "$work/build" -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON >"$work/configure.log" 2>&1; then
  cat "$work/configure.log" >&2
  bad "cmake -B build fails without GoogleTest and pybind11 (the install-deps.sh --cli machine)"
elif ! grep -q "The tests are not built" "$work/configure.log"; then
  bad "cmake -B build without GoogleTest does not say that the tests are not built"
fi
[ "$fail" -eq 0 ] && echo "the README's install path holds together"
exit "$fail"
