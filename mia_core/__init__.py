"""mia_core: the engine behind mia-dashboard (membership-inference audits of language models).

Nothing in this package imports Streamlit: the dashboard pages, the CLI
(``python -m mia_core``) and the tests all call the same functions.
"""
from .version import __version__

# The Python API (mia_core.api), loaded on first use so that ``import mia_core`` stays light:
#     from mia_core import score, audit, audit_documents, audit_mlm, infer_dataset, plan_run, load
_API = ("score", "audit", "audit_documents", "audit_mlm", "infer_dataset", "plan_run", "load", "RunPlan")
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name == "load":  # any audit's saved folder (mia_core.audits.load_saved; mia_core.api.load reads runs)
        from .audits import load_saved

        return load_saved
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'mia_core' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_API])
