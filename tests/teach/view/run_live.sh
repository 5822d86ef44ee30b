#!/bin/sh
# The live page of `ordo serve` in headless Chromium (test_live.mjs). Skipped (77) only when node or
# Chromium is missing.
#   run_live.sh ORDO MODEL_DIR [--no-timing]
set -eu
. "$(cd "$(dirname "$0")" && pwd)/preflight.sh"
exec node "$here/test_live.mjs" "$@"
