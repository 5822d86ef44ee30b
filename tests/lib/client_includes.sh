#!/usr/bin/env bash
# The clients (the command line, the server, Python, the teaching views) reach the engine through the
# library's public headers, the ones `cmake --install` installs: <ordo/ordo.h>, <ordo/compare.h>,
# <ordo/errors.h>, the engine's public types (engine/ordo/*.h: <ordo/config.h>, <ordo/trace.h>, ...) and
# <ordo/tokenizer/tokenizer.h>. No header under engine/ is installed but those: a client that includes
# one ("engine/...", <ordo/engine/X.h>) fails this test, unless it is one of the exceptions below,
# each with its reason (docs/architecture.md lists them too).
set -euo pipefail
root=$1
cd "$root"

installed='ordo/tokenizer/tokenizer\.h'
# file: header -- why it may
allowed=(
  'tools/cli/bench.cpp:ordo/engine/encoder.h'     # ordo bench times the encoder's forward pass itself
  'tools/cli/bench.cpp:ordo/engine/model.h'       # ... on a model it loads without a tokenizer
  'tools/cli/bench.cpp:engine/kernels/blas.h'      # ordo bench times OpenBLAS's sgemm and names its kernels
  'tools/cli/bench.cpp:engine/kernels/gemm.h'      # ... and the engine's own GEMM against it
  'tools/cli/main.cpp:engine/kernels/parallel.h'   # the thread pool's ThreadStartError, one line and exit 1
  'tools/cli/init.cpp:engine/init.h'               # ordo init writes random models
  'tools/cli/init.cpp:engine/model.h'              # ... of a size it checks first (expected_parameters)
  'tools/cli/pe.cpp:ordo/engine/model.h'           # ordo pe reads a model's learned position table
  'tools/cli/pe.cpp:ordo/engine/reference.h'       # ordo pe prints the reference's positional encodings
  'tools/cli/info.cpp:ordo/engine/model.h'         # ordo info counts the weights and sizes their file
  'tools/teach/pe_report.cpp:engine/ops.h'         # the encodings' report computes them as the engine does
  'tools/cli/main.cpp:engine/kernels/cpu.h'        # a bad ORDO_ISA is one line and exit 2, before any work
  'tools/cli/info.cpp:engine/kernels/cpu.h'        # ordo info names the CPU's features and the kernels chosen
  'tools/cli/bench.cpp:engine/kernels/cpu.h'       # ... and so does ordo bench, beside its figures
  'tools/serve/connection.cpp:engine/kernels/parallel.h'  # the HTTP threads' start failure, ThreadStartError
)

status=0
while IFS= read -r line; do
  file=${line%%:*}
  header=$(echo "$line" | sed -E 's/.*#include [<"]([^>"]+)[>"].*/\1/')
  case "$header" in
    engine/* | ordo/engine/*) ;;
    *) continue ;;
  esac
  if echo "$header" | grep -qE "^($installed)$"; then continue; fi
  ok=0
  for a in "${allowed[@]}"; do
    [ "$a" = "$file:$header" ] && ok=1
  done
  if [ $ok = 0 ]; then
    echo "error: $file: includes $header, an engine header that is not the library's public face"
    status=1
  fi
done < <(grep -rnE '^#include [<"](ordo/)?engine/' tools/cli tools/serve tools/teach python/cpp --include='*.cpp' \
  --include='*.h' | sed -E 's/^([^:]+):[0-9]+:/\1:/')
[ $status = 0 ] && echo "the clients include only the library's public headers (and ${#allowed[@]} listed exceptions)"
exit $status
