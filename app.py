"""MIA dashboard: was this language model trained on these texts?

Run with ``streamlit run app.py`` (binds to localhost and answers only under the loopback names,
see ``.streamlit/config.toml`` and ``dashboard/hosts.py``). The pages are the files
``pages/<n>_<Title_with_underscores>.py``, found automatically and listed in the order of ``<n>``
(title and URL path come from the file name); the engine is ``mia_core`` (also usable as
``python -m mia_core``).
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import streamlit as st

from dashboard import hosts, warmup
from dashboard.loaders import model_store, warm_defaults
from dashboard.sidebar import model_panel
from dashboard.ui import AUC_EXPLAINER, page_setup
from mia_core import runs

if hosts.refuse_foreign_host():  # a page under another host name (DNS rebinding): dashboard/hosts.py
    st.stop()

# imports, then the default models, while the user reads the page (once per process)
warmup.start(functools.partial(warm_defaults, model_store()))

ROOT = Path(__file__).resolve().parent
ICONS = {"Inspect_a_text": ":material/manage_search:", "Calibration_run": ":material/monitoring:", "Document_audit": ":material/menu_book:", "Masked_LM_audit": ":material/theater_comedy:",
         "Runs": ":material/folder_open:", "Controlled_experiment": ":material/science:",
         "Dataset_inference": ":material/dataset:", "Verbatim_extraction": ":material/content_copy:",
         "Copyright_traps": ":material/pest_control:"}


def home() -> None:
    page_setup("Home", ":material/home:")
    model_panel(load=False)

    st.title("Membership-inference audit dashboard")
    st.markdown(
        "This tool asks whether a language model was **trained on a given text**. It runs published "
        "membership-inference attacks (LOSS, zlib, lowercase, Min-K%, Min-K%++, reference model and more): "
        "each one scores a text by how familiar the model finds it, using only the model's token "
        "probabilities. To know what a score means, the attacks are first **calibrated** on texts known to "
        "be in the training data (members) and texts known not to be (non-members). "
        + AUC_EXPLAINER
        + " A model-free *blind baseline* checks that members and non-members do not differ in ways the "
        "model is not needed for (dates, topics, lengths): if they do, attack AUCs above 0.5 mean nothing."
    )

    st.subheader("Pages")
    _pages_grid(_page_files())
    st.caption(f"{saved_runs_line()} · everything runs locally; no text leaves this machine.")


def _pages_grid(files: list[Path], per_row: int = 3) -> None:
    """The pages in rows of ``per_row`` bordered cells, every cell of a row as tall as the row (a last, shorter
    row: its cells bordered one by one, without empty cells)."""
    for start in range(0, len(files), per_row):
        row = files[start:start + per_row]
        full = len(row) == per_row
        for col, f in zip(st.columns(per_row, border=full), row):
            name = re.sub(r"^\d+_", "", f.stem)
            with col if full else col.container(border=True):
                st.page_link(str(f.relative_to(ROOT)), label=name.replace("_", " "), icon=ICONS.get(name))
                st.caption(_summary(f))


def saved_runs_line() -> str:
    """"5 saved runs (2 calibration, 1 document audit, 2 dataset inference) in <folder>": every kind of run the Runs
    page lists (the one run store, ``mia_core.audits.saved``, by kind)."""
    from mia_core.audits import AUDITS
    from mia_core.audits.saved import list_runs
    from mia_core.errors import MiaError

    words = {"run": "calibration", "documents": "document audit", "mlm": "masked-LM audit",
             "infer-dataset": "dataset inference"}
    counts = {}
    for kind, audit in AUDITS.items():
        try:
            counts[words.get(kind, audit.title.lower())] = len(list_runs(kind))
        except (MiaError, OSError):
            counts[words.get(kind, audit.title.lower())] = None  # an unreadable store: said, never a traceback
    total = sum(n or 0 for n in counts.values())
    parts = ", ".join(f"{'?' if n is None else n} {kind}" for kind, n in counts.items() if n != 0)
    return (f"{total} saved run{'s' if total != 1 else ''}" + (f" ({parts})" if parts else "")
            + f" in {runs.runs_dir()}")


def _summary(path: Path) -> str:
    """The first paragraph of a page's module docstring (its one-line description)."""
    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    except (OSError, SyntaxError):
        return ""
    return " ".join(doc.split("\n\n")[0].split())


def _page_files() -> list[Path]:
    def order(p: Path):
        m = re.match(r"(\d+)_", p.name)
        return (int(m.group(1)) if m else 10**6, p.name)

    return sorted((p for p in (ROOT / "pages").glob("*.py") if not p.name.startswith("_")), key=order)


def pages() -> list:
    out = [st.Page(home, title="Home", icon=":material/home:", default=True)]
    for f in _page_files():
        name = re.sub(r"^\d+_", "", f.stem)
        out.append(st.Page(str(f), title=name.replace("_", " "), icon=ICONS.get(name), url_path=name))
    return out


st.navigation(pages()).run()
