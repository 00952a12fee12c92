import os
from pathlib import Path

# mia_core comes from the installed project (setup.sh: ``pip install -e .[all]``); the tests'
# own helper modules (helpers, tiny_lm, golden_outputs) and the dashboard's ``dashboard``
# package are importable through pytest.ini's ``pythonpath``.
# Tests never reach a model hub; the statistics cache lives in a per-session folder
# unless the caller set MIA_CACHE_DIR (the converted embedded model is then reused).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# the server's start-up preload of the demo models (dashboard/warmup.py) would load two models in the
# background of whichever test first runs app.py; its own test turns it back on
os.environ.setdefault("MIA_NO_PRELOAD", "1")
os.environ.setdefault("MIA_CACHE_DIR", str(Path.home() / ".cache" / "mia-dashboard-tests"))


def pytest_runtest_setup(item):
    """Before a test's fixtures: let a start-up warm-up that an earlier page test began (``app.py`` run by
    AppTest) finish its imports, so that the test's own ``from transformers import ...`` does not race it
    (``dashboard.warmup.wait_imports``: Python's import deadlock guard hands one thread a partial module)."""
    import sys

    warmup = sys.modules.get("dashboard.warmup")
    if warmup is not None:
        warmup.wait_imports()
