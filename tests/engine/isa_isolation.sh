#!/bin/sh
# The portable build's promise (engine/kernels/cpu.h): every function of BINARY that uses an AVX
# instruction (a VEX or EVEX encoding: v-mnemonics, ymm/zmm registers, AVX-512 masks) belongs to
# the kernels compiled for that instruction set (ordo::avx2, ordo::avx512, simd.h's per-set
# namespaces), which run only where the CPU has it. Anything else — a standard library function the
# linker took from a kernel's file, compiled with its flags — would stop the program with SIGILL
# on an older CPU. Prints those functions and fails; skips (77) without objdump.
#   tests/engine/isa_isolation.sh BINARY
set -eu
command -v objdump >/dev/null || { echo "objdump not found"; exit 77; }
objdump -d --no-show-raw-insn -C "$1" | awk '
  /^[0-9a-f]+ <.*>:$/ { fn = $0; next }
  /^ +[0-9a-f]+:\t+v[a-z0-9]+ / || /%[yz]mm/ || /%k[0-7]/ {
    if (fn !~ /ordo::avx2::|ordo::avx512::|ordo::simd_avx/) bad[fn] = $0
    kernels++
  }
  END {
    n = 0
    for (f in bad) { print "outside the kernels: " f " " bad[f]; n++ }
    if (kernels == 0) { print "no AVX instruction at all: were the kernels compiled?"; exit 1 }
    if (n > 0) exit 1
    print kernels " AVX instructions, all in the kernels of their instruction set"
  }'
