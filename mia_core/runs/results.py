"""One result type for the four audits: ``run``, ``documents``, ``mlm`` and ``infer-dataset``.

Every audit returns an :class:`AuditResult`:

* :class:`RunResult` (``run_attacks``: baselines, neighbourhood, SMIA), here (and re-exported as
  ``mia_core.pipeline.RunResult``) so that the run store, below the pipeline, reads runs back as it:
  :meth:`RunResult.load` mirrors :meth:`RunResult.save` (a run of the store is a
  :class:`mia_core.runs.store.StoredRun`, a RunResult with its id, meta and folder);
* :class:`mia_core.documents.DocumentAuditResult` (``run_document_audit``: Meeus et al. 2024);
* :class:`mia_core.mlm.MlmAuditResult` (``run_mlm_audit``: Mireshghallah et al. 2022);
* :class:`mia_core.dataset_inference.DatasetInferenceResult` (``run_dataset_inference``: Maini et al.
  2024).

They share four things, which the CLI and the dashboard rely on:

``metrics``
    ``{attack or pipeline: {metric: value}}`` (AUC, TPR at low FPR, thresholds...).
``scores``
    a ``pandas.DataFrame`` with one row per evaluated text (or document).
``summary_text()``
    the human-readable report the command line prints.
``save(out_dir, overwrite=False)``
    writes the command's files into ``out_dir`` and returns ``{name: path}`` of what it wrote, under the
    rules of ``--out`` (:func:`mia_core.runs.outputs.save_output`: a new or empty folder, or with ``overwrite`` one
    this tool wrote; written into a temporary sibling, published in one rename, never through a link).
    Each result writes its files in ``_write(folder)``.

:func:`json_default` is the one ``json.dumps(default=...)`` encoder for the numpy values
(and paths) results hold.

CSV files people open in a spreadsheet (``scores.csv``, ``document_scores.csv``, the dashboard's
downloads) are written with :func:`write_csv` / :func:`csv_text` and read back with :func:`read_csv`:
a text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return would run as a
formula there (a text id ``=HYPERLINK(...)`` or ``=cmd|' /C calc'!A0``), so it gets a leading
``'`` as OWASP advises ("CSV Injection"); so does a text cell that already starts with ``'``, which
makes the round trip exact (:func:`read_csv` drops one leading ``'`` from every text cell). Numbers
are never touched: a score of -3.2 stays a number.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataError
from .outputs import save_output

if TYPE_CHECKING:  # pandas is imported where a table is read or written: ``mia --help`` stays light
    import pandas as pd


class AuditResult:
    """The interface every audit's result implements (see the module docstring).

    Subclasses are dataclasses holding at least ``metrics`` (dict) and ``scores``
    (DataFrame); they implement :meth:`summary_text` and :meth:`_write` (a result whose files take
    options has a :meth:`save` of its own that passes them on, through :func:`mia_core.runs.outputs.save_output`).
    """

    metrics: dict
    scores: pd.DataFrame

    def summary_text(self) -> str:
        """The human-readable report (what the CLI prints)."""
        raise NotImplementedError

    def save(self, out_dir: str | Path, *, overwrite: bool = False) -> dict[str, Path]:
        """Write the audit's files into ``out_dir``; returns ``{name: path}``.

        The rules of ``--out``: ``out_dir`` is a new folder or an empty one; a folder this tool wrote is
        replaced only with ``overwrite=True`` (once the new files are complete); a folder it did not write,
        a file or a link to one is never written into (``SettingsError``, one line). The files are written
        into a temporary sibling folder and published in one rename (:func:`mia_core.runs.outputs.save_output`)."""
        return save_output(out_dir, self._write, overwrite=overwrite)

    def _write(self, out: Path) -> dict[str, Path]:
        """Write the files into the folder ``out`` (new, empty and the tool's own); returns ``{name: path}``."""
        raise NotImplementedError

    def _repr_html_(self) -> str:
        """A notebook shows the metrics table (every cell escaped) and the notes."""
        import html

        from ..metrics import metrics_frame

        scored = {k: m for k, m in (self.metrics or {}).items() if isinstance(m, dict) and "auc" in m}
        rows = metrics_frame(scored, fprs=(0.01, 0.1), with_n=False, name="attack")
        table = rows.to_html(index=False, escape=True) if len(rows) else "<p>no metrics</p>"
        notes = getattr(self, "report", None) or []
        return (f"<div><b>{html.escape(type(self).__name__)}</b>{table}"
                + "".join(f"<div>note: {html.escape(str(n))}</div>" for n in notes) + "</div>")


def json_default(o):
    """``json.dumps(..., default=json_default)``: numpy scalars and arrays as Python values,
    paths and anything else as strings."""
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    return str(o)


# ----------------------------------------------------------------------------- CSV for people
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a cell as a formula
_QUOTE = "'"


def neutralise_cell(v):
    """A text cell that a spreadsheet would run as a formula, with a leading ``'`` (and one that starts
    with ``'`` too, so that :func:`restore_cell` is exact); anything else (numbers included) as it is."""
    if isinstance(v, str) and v.startswith(FORMULA_START + (_QUOTE,)):
        return _QUOTE + v
    return v


def restore_cell(v):
    """The inverse of :func:`neutralise_cell` on a text cell read back."""
    if isinstance(v, str) and v.startswith(_QUOTE):
        return v[1:]
    return v


def _text_columns(df: pd.DataFrame) -> list:
    import pandas as pd

    return [c for c in df.columns if pd.api.types.is_object_dtype(df[c]) or pd.api.types.is_string_dtype(df[c])]


def csv_safe(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` whose text cells and column names are :func:`neutralise_cell`-ed."""
    import pandas as pd

    out = df.copy()
    for c in _text_columns(out):
        mapped = out[c].map(neutralise_cell, na_action="ignore")  # a categorical maps its categories
        out[c] = mapped if isinstance(out[c].dtype, pd.CategoricalDtype) else mapped.astype(out[c].dtype)
    out.columns = [neutralise_cell(c) for c in out.columns]
    return out


def _to_csv(df: pd.DataFrame, target=None):
    safe = csv_safe(df)
    # a carriage return inside a cell: Python's csv writer (3.11) only quotes cells holding the line
    # terminator ("\n"), so such a cell would split its row; then every text cell is quoted
    cr = any(isinstance(v, str) and "\r" in v
             for v in [*safe.columns, *(v for c in _text_columns(safe) for v in safe[c].tolist())])
    return safe.to_csv(target, index=False, **({"quoting": csv.QUOTE_NONNUMERIC} if cr else {}))


def csv_text(df: pd.DataFrame) -> str:
    """``df`` as CSV text (no index) that is safe to open in a spreadsheet (a download button's data)."""
    return _to_csv(df)


def write_csv(df: pd.DataFrame, path) -> None:
    """Write ``df`` (no index) to ``path`` as :func:`csv_text`."""
    _to_csv(df, path)


def read_csv(path, **kwargs) -> pd.DataFrame:
    """Read a CSV written by :func:`write_csv` (``pandas.read_csv`` arguments): the cells and column
    names come back exactly as they were given to it."""
    import pandas as pd

    df = pd.read_csv(path, **kwargs)
    df.columns = [restore_cell(c) for c in df.columns]
    for c in _text_columns(df):
        df[c] = df[c].map(restore_cell, na_action="ignore").astype(df[c].dtype)
    return df


# ----------------------------------------------------------------------------- the result of a run
RUN_FILES = ("scores.csv", "metrics.json", "run.json")  # what RunResult.save writes


@dataclass
class RunResult(AuditResult):
    """What ``run_attacks`` produced (:class:`mia_core.runs.results.AuditResult`).

    ``scores``: one row per scored text (``text_id``, ``label``, ``text_hash``, [``split``],
    [``group``], one column per attack); ``metrics``: ``{attack: metrics}`` on the evaluation
    part (plus ``blind``); ``config``, ``models`` (``describe`` of the target and, when used,
    the reference), ``timings``, ``shift`` (the blind-baseline report), ``population``
    (threshold decisions), ``group_metrics``, ``extra`` (attack artefacts) and ``report``
    (notes).
    """

    scores: pd.DataFrame
    metrics: dict
    config: dict
    models: dict
    timings: dict
    shift: dict | None = None
    population: dict | None = None
    group_metrics: dict | None = None
    extra: dict = field(default_factory=dict)  # attack-specific artefacts (SMIA curves, neighbours...)
    report: list[str] = field(default_factory=list)

    def attack_names(self) -> list[str]:
        """The attacks with metrics, in order (every entry of ``metrics`` but ``blind``)."""
        return [k for k in self.metrics if k != "blind"]

    def to_json(self) -> dict:
        """The metrics as ``metrics.json`` holds them (a copy of ``metrics``)."""
        out = dict(self.metrics)
        return out

    def summary_text(self) -> str:
        """The report ``mia run`` prints: models, counts, the metrics table, precision/recall at
        the population threshold, group-level AUCs, the blind-baseline verdict and the notes."""
        from ..formatting import fmt_rate_ci
        from ..metrics import decision_cis, summarize_table

        t = self.models.get("target") or {}
        ref = self.models.get("reference")
        sc = self.scores
        # the audited set: every row, except the rows of a separate training set (split
        # "train" without a split fraction)
        ds = sc[sc["split"] == "eval"] if "split" in sc and not self.config.get("split") else sc
        n_eval = int((sc.get("split", "eval") == "eval").sum()) if "split" in sc else len(sc)
        kt = self.extra.get("known_truth")
        lines = ([f"!!! {kt['message']}", ""] if kt and not kt["ok"] else []) + [
            f"target: {t.get('name')} ({t.get('dtype')}, {t.get('quantize')})"
            + (f"; reference: {ref['name']}" if ref is not None else ""),
            f"{int((ds['label'] == 1).sum())} members, {int((ds['label'] == 0).sum())} non-members; "
            f"{n_eval} texts evaluated",
            summarize_table(self.metrics),
        ]
        if self.population:
            lines += ["", f"threshold at {self.population['alpha']:.0%} FPR on the population set "
                          f"({self.population['n_population']} texts):"]
            for name, d in self.population["attacks"].items():
                if "error" in d:
                    lines.append(f"  {name:<12} {d['error']}")
                    continue
                c = decision_cis(d)

                def ci(v, k):
                    return "n/a" if v is None else fmt_rate_ci(v, c[k])

                lines.append(f"  {name:<12} precision {ci(d['precision'], 'precision')}  recall "
                             f"{ci(d['recall'], 'recall')}  FPR on evaluated non-members {ci(d['fpr'], 'fpr')}")
        if self.group_metrics:
            lines += ["", "group-level AUC (mean score per group):"]
            for name, g in self.group_metrics.items():
                lines.append(f"  {name:<12} " + (g["error"] if "error" in g else f"{g['auc']:.3f} over {g['n_groups']} groups"))
        if self.shift:
            v = self.shift["verdict"]
            lines += ["", f"VERDICT [{v['level']}]: {v['message']}"]
        if kt:
            lines += ["", ("KNOWN TRUTH [ok]: " if kt["ok"] else "KNOWN TRUTH [FAILED]: ") + kt["message"]]
        for line in self.report:
            lines.append(f"note: {line}")
        return "\n".join(lines)

    @property
    def verdict(self) -> dict | None:
        """The blind baseline's verdict on the data (``{"level", "message"}``; None without the check)."""
        return (self.shift or {}).get("verdict")

    @classmethod
    def load(cls, out_dir: str | Path, **where) -> "RunResult":
        """The result :meth:`save` wrote into ``out_dir``: its files read by :meth:`read_saved`, the result
        made by :meth:`from_saved` (``where``: what a subclass adds, e.g. the run store's id and meta).
        ``DataError`` (one line) for a folder that holds no saved run."""
        out = Path(out_dir).expanduser()
        return cls.from_saved(*cls.read_saved(out), **where)

    @staticmethod
    def read_saved(out: Path) -> tuple[pd.DataFrame, dict, dict]:
        """``scores.csv``, ``metrics.json`` and ``run.json`` of ``out``, parsed (the run store reads them with
        its checks for damaged folders instead: ``mia_core.runs.StoredRun``)."""
        check_saved(out)
        try:
            run = json.loads((out / "run.json").read_text())
            metrics = json.loads((out / "metrics.json").read_text())
            scores = read_csv(out / "scores.csv", dtype={"text_id": str, "text_hash": str})
        except (ValueError, OSError) as e:
            raise DataError(f"{out}: the saved run cannot be read ({e})") from None
        return scores, metrics, run

    @classmethod
    def from_saved(cls, scores: pd.DataFrame, metrics: dict, run: dict, **where) -> "RunResult":
        """The result from what :meth:`save` wrote: the ``scores.csv`` table, the ``metrics.json`` and
        ``run.json`` contents (a section ``run.json`` lacks: empty, or None where it is optional)."""
        return cls(scores=scores, metrics=metrics, config=run.get("config") or {}, models=run.get("models") or {},
                   timings=run.get("timings") or {}, shift=run.get("shift"), population=run.get("population"),
                   group_metrics=run.get("group_metrics"), extra=run.get("extra") or {},
                   report=list(run.get("report") or []), **where)

    def _write(self, out: Path) -> dict[str, Path]:
        """Write ``scores.csv``, ``metrics.json`` and ``run.json`` (config, models, timings,
        shift, population, group metrics, notes, extra) into ``out``; returns ``{"scores", "metrics",
        "run"}`` -> path. (:meth:`save` checks and stages the folder.)"""
        paths = {"scores": out / "scores.csv", "metrics": out / "metrics.json", "run": out / "run.json"}
        write_csv(self.scores, paths["scores"])  # text ids as text, never as spreadsheet formulas
        paths["metrics"].write_text(json.dumps(self.metrics, indent=2, default=json_default))
        run = {
            "config": self.config,
            "models": self.models,
            "timings": self.timings,
            "shift": self.shift,
            "population": self.population,
            "group_metrics": self.group_metrics,
            "report": self.report,
            "extra": self.extra,
        }
        paths["run"].write_text(json.dumps(run, indent=2, default=json_default))
        return paths


def check_saved(out: Path) -> None:
    """``DataError`` (one line) when ``out`` lacks one of the files :meth:`RunResult.save` writes."""
    missing = [n for n in RUN_FILES if not (out / n).is_file()]
    if missing:
        raise DataError(f"{out} does not hold a saved run (missing {', '.join(missing)}); a document, masked-LM "
                        "or dataset-inference folder is read by mia_core.load")
