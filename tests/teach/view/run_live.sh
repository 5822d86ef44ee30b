#!/bin/sh
# The live page of `ordo serve` in headless Chromium (test_live.mjs). Skipped (77) only when node or
# Chromium is missing.
#   run_live.sh ORDO MODEL_DIR
set -eu
here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null || { echo "skip: no node"; exit 77; }
[ -x "${ORDO_CHROMIUM:-/usr/bin/chromium}" ] || { echo "skip: no Chromium at ${ORDO_CHROMIUM:-/usr/bin/chromium}"; exit 77; }
if [ ! -d "$here/node_modules/puppeteer-core" ]; then
  echo "error: $here: puppeteer-core is not installed (run npm ci there)" >&2
  exit 1
fi
exec node "$here/test_live.mjs" "$1" "$2"
