# Sourced by run.sh and run_live.sh: skip (77) without node or Chromium; fail, saying what to do,
# without puppeteer-core. Sets $here to this directory.
here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null || { echo "skip: no node"; exit 77; }
[ -x "${ORDO_CHROMIUM:-/usr/bin/chromium}" ] || { echo "skip: no Chromium at ${ORDO_CHROMIUM:-/usr/bin/chromium}"; exit 77; }
if [ ! -d "$here/node_modules/puppeteer-core" ]; then
  echo "error: $here: puppeteer-core is not installed (run npm ci there)" >&2
  exit 1
fi
