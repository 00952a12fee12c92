"""The metrics table: one row per attack, built once, rendered as text, HTML or a page's table.

:func:`metrics_rows` turns ``{attack: evaluate(...) output}`` into rows that hold each figure's
value and its text (the rules of ``mia_core.formatting``: AUC and its CI to 3 decimals, rates as
percentages with 3 significant digits, ``n/e`` for a TPR the non-members cannot measure). Every
front end renders those rows: :func:`summarize_table` for the command line (fixed width, warnings
below), :func:`metrics_frame` for the HTML report, the pages and notebooks (a DataFrame of strings).
:func:`merge_warnings` folds the per-FPR "not estimable" warnings into one line.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from typing import Sequence

from ..formatting import NOT_ESTIMABLE, fmt_auc, fmt_pct, fmt_rate_ci, fpr_label
from .curves import tpr_estimable
from .inputs import FPR_GRID, fpr_key


def table_attacks(metrics: dict, include_blind: bool = True) -> list[str]:
    """The attacks with metrics, in the table's order: the blind baseline last."""
    names = [k for k in metrics if k != "blind" and isinstance(metrics[k], dict)]
    if include_blind and isinstance(metrics.get("blind"), dict):
        names.append("blind")
    return names


def shown_fprs(metrics: dict, fprs: Sequence[float] | None = None) -> list[str]:
    """The FPR keys of the table's TPR columns: those of ``fprs``; without, the keys of ``FPR_GRID`` that
    some attack has, then any other key an attack has (increasing), or ``FPR_GRID`` when none has any."""
    if fprs is not None:
        return [fpr_key(f) for f in fprs]
    tprs = [m.get("tpr_at_fpr") or {} for m in metrics.values() if isinstance(m, dict)]
    grid = [fpr_key(f) for f in FPR_GRID]
    extra = sorted({k for t in tprs for k in t if k not in grid}, key=float)
    present = [k for k in grid if any(k in t for t in tprs)] + extra
    return present or grid


def metrics_rows(metrics: dict, *, fprs: Sequence[float] | None = None, include_blind: bool = True) -> list[dict]:
    """One row per attack (the blind baseline last), each figure as a value and as text::

        {"attack": key, "label": name for people,
         "auc", "auc_ci", "auc_text" ('0.734'), "auc_ci_text" ('0.734 [0.650, 0.812]'),
         "tpr", "tpr_ci", "estimable", "tpr_text" ('2.00%' or 'n/e'), "tpr_ci_text" ('2.00% [1.00%, 3.00%]'):
             each a mapping FPR key -> ..., over :func:`shown_fprs`,
         "n_members", "n_nonmembers", "n_text" ('300 / 300')}
    """
    keys = shown_fprs(metrics, fprs)
    rows = []
    for name in table_attacks(metrics, include_blind):
        m = metrics[name]
        t, tci = m.get("tpr_at_fpr") or {}, m.get("tpr_at_fpr_ci") or {}
        n_non = m.get("n_nonmembers")
        est = {k: tpr_estimable(float(k), n_non) for k in keys}
        rows.append({
            "attack": name, "label": m.get("label") or name,
            "auc": m.get("auc"), "auc_ci": m.get("auc_ci"),
            "auc_text": fmt_auc(m.get("auc")), "auc_ci_text": fmt_auc(m.get("auc"), m.get("auc_ci")),
            "tpr": {k: t.get(k) for k in keys}, "tpr_ci": {k: tci.get(k) for k in keys}, "estimable": est,
            "tpr_text": {k: fmt_pct(t.get(k)) if est[k] else NOT_ESTIMABLE for k in keys},
            "tpr_ci_text": {k: fmt_rate_ci(t.get(k), tci.get(k)) if est[k] else NOT_ESTIMABLE for k in keys},
            "n_members": m.get("n_members"), "n_nonmembers": n_non,
            "n_text": f"{m.get('n_members', '–')} / {m.get('n_nonmembers', '–')}",
        })
    return rows


def metrics_frame(metrics: dict, *, fprs: Sequence[float] | None = FPR_GRID, include_blind: bool = True,
                  with_ci: bool = True, with_n: bool = True, name: str = "label"):
    """The rows as a ``pandas.DataFrame`` of strings: ``Attack`` (``name``: the row's ``label`` or its
    ``attack`` key), ``AUC [95% CI]`` (``AUC`` without CIs), ``TPR@1% FPR``... and
    ``Members / non-members``."""
    import pandas as pd

    out = []
    for r in metrics_rows(metrics, fprs=fprs, include_blind=include_blind):
        row = {"Attack": r[name]}
        row["AUC [95% CI]" if with_ci else "AUC"] = r["auc_ci_text"] if with_ci else r["auc_text"]
        tpr = r["tpr_ci_text"] if with_ci else r["tpr_text"]
        row.update({f"TPR@{fpr_label(float(k))} FPR": v for k, v in tpr.items()})
        if with_n:
            row["Members / non-members"] = r["n_text"]
        out.append(row)
    return pd.DataFrame(out)


_NE = re.compile(r"^TPR at ([0-9.]+)% FPR is not estimable with ([0-9,]+) non-members \(it needs at least ([0-9,]+)\): "
                 r"shown as n/e$")


def merge_warnings(warnings) -> list[str]:
    """The same warnings with the per-FPR "not estimable" lines on one set size merged into one
    line, FPRs in increasing order (five near-identical lines say less than one)."""
    out, groups = [], {}
    for w in warnings:
        m = _NE.match(w)
        if m is None:
            out.append(w)
            continue
        key = m.group(2)
        if key not in groups:
            groups[key] = []
            out.append(key)  # placeholder, keeps the first one's position
        groups[key].append((float(m.group(1)), m.group(1), m.group(3)))
    merged = []
    for w in out:
        if w in groups:
            items = sorted(groups[w])
            if len(items) == 1:
                _, f, need = items[0]
                merged.append(f"TPR at {f}% FPR is not estimable with {w} non-members (it needs at least {need}): "
                              "shown as n/e")
                continue
            fs = [f"{f}%" for _, f, _ in items]
            needs = ", ".join(n for _, _, n in items)
            merged.append(f"TPR at {', '.join(fs[:-1])} and {fs[-1]} FPR is not estimable with {w} non-members "
                          f"(each needs at least 1/FPR of them: {needs}): shown as n/e")
        else:
            merged.append(w)
    return merged


def _warning_lines(metrics: dict) -> list[str]:
    """The attacks' warnings, deduplicated: one every attack shares once, others prefixed with the attacks'
    names."""
    n_attacks = len(metrics)
    seen: "OrderedDict[str, list[str]]" = OrderedDict()
    for name, m in metrics.items():
        for w in m.get("warnings") or []:
            seen.setdefault(w, [])
            if name not in seen[w]:
                seen[w].append(name)
    if not seen:
        return []
    shared = [w for w, names in seen.items() if len(names) == n_attacks or n_attacks <= 1]
    lines = ["", "Warnings:"] + [f"  - {w}" for w in merge_warnings(shared)]
    lines += [f"  - [{', '.join(names)}] {w}" for w, names in seen.items() if w not in shared]
    return lines


def summarize_table(metrics: dict[str, dict]) -> str:
    """Fixed-width table of :func:`metrics_rows`, one row per attack: AUC [CI], TPR at each FPR,
    n members / non-members. Warnings are appended below the table (see :func:`_warning_lines`)."""
    metrics = {k: m for k, m in metrics.items() if isinstance(m, dict)}
    rows = metrics_rows(metrics)
    keys = shown_fprs(metrics)
    header = ["attack", "AUC [CI]"] + [f"TPR@{fpr_label(float(k))}" for k in keys] + ["n (mem / non)"]
    cells = [[r["attack"], r["auc_ci_text"]] + [r["tpr_text"][k] for k in keys] + [r["n_text"]] for r in rows]
    widths = [max(len(c[i]) for c in [header] + cells) for i in range(len(header))]

    def line(c):
        out = [c[0].ljust(widths[0]), c[1].ljust(widths[1])] + [x.rjust(w) for x, w in zip(c[2:], widths[2:])]
        return "  ".join(out).rstrip()

    lines = [line(header), "  ".join("-" * w for w in widths)] + [line(c) for c in cells]
    return "\n".join(lines + _warning_lines(metrics))
