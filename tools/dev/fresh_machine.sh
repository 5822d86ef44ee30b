#!/usr/bin/env bash
# A new user's first run, on a fresh Debian 12 machine (a new VM or container with this clone, and
# nothing else of yours running): the README's two commands, as the README has them, with the build's
# peak memory measured. Fails when either command fails or the build's peak passes the bound.
#   tools/dev/fresh_machine.sh           the README's commands (the full install, then the suite)
#   tools/dev/fresh_machine.sh --cli     install-deps.sh --cli, the build and the demo (no suite)
#   ORDO_MAX_BUILD_MB=4096               the bound on the build's peak (MemAvailable's drop), in MB
# .ci/run runs on such a machine too; tools/dev/check_install.sh checks the same path without installing.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-full}
bound=${ORDO_MAX_BUILD_MB:-4096}
readme_sh=$(awk '/^```sh$/ {on = 1; next} /^```$/ {on = 0} on' README.md)
first=$(grep -m1 '^tools/dev/install-deps.sh' <<<"$readme_sh")
second=$(grep -m1 '^ctest ' <<<"$readme_sh")
if [ "$mode" = --cli ]; then first=${first/install-deps.sh/install-deps.sh --cli}; fi
rm -rf build

# The install first (it is not part of the build's memory), then the rest of the first command.
install=${first%% && *}
rest=${first#* && }
echo "== $install"
bash -c "$install"
avail() { awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo; }
base=$(avail)
lowest=$base
(while sleep 0.5; do avail; done) >"${TMPDIR:-/tmp}/ordo-fresh-mem.$$" &
sampler=$!
echo "== $rest"
status=0
if [ -x /usr/bin/time ]; then
  /usr/bin/time -v bash -c "$rest" 2>"${TMPDIR:-/tmp}/ordo-fresh-time.$$" || status=$?
  grep -E "Maximum resident set size|Elapsed" "${TMPDIR:-/tmp}/ordo-fresh-time.$$" || true
else
  bash -c "$rest" || status=$?
fi
kill "$sampler"
while read -r a; do [ "$a" -lt "$lowest" ] && lowest=$a; done <"${TMPDIR:-/tmp}/ordo-fresh-mem.$$"
rm -f "${TMPDIR:-/tmp}/ordo-fresh-mem.$$" "${TMPDIR:-/tmp}/ordo-fresh-time.$$"
peak=$((base - lowest))
echo "the build and the demo: exit $status; peak memory $peak MB (MemAvailable's drop, sampled every 0.5 s; bound $bound MB) on $(nproc) cores"
[ "$status" -eq 0 ] || exit "$status"
if [ "$peak" -gt "$bound" ]; then
  echo "error: the build took $peak MB at its peak, more than $bound MB" >&2
  exit 1
fi
if [ "$mode" != --cli ]; then
  echo "== $second"
  bash -c "$second"
fi
echo "the README's commands pass on this machine"
