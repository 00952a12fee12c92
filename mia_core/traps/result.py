"""The traps audit's result (:class:`TrapsResult`): the pre-registered test's p-value and verdict, per repetition
level, the figures, its files (``traps.json``, ``traps_scores.csv``) and the same result read back from them."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..runs.results import AuditResult, json_default, read_csv, write_csv

MARKER = "traps.json"
SCORES = "traps_scores.csv"
VERDICTS = {"used": "trained on the traps", "not_shown": "not shown"}


def fmt_p(p: float) -> str:
    """A p-value as the report writes it."""
    return f"{p:.2g}" if p < 0.001 else f"{p:.4f}".rstrip("0").rstrip(".")


@dataclass
class TrapsResult(AuditResult):
    """A copyright-traps audit.

    Attributes
    ----------
    summary : dict
        ``p_value``, ``verdict`` (``used`` / ``not_shown``), ``alpha``, ``auc`` [``auc_ci``], ``tpr_at_fpr`` (1 % and
        10 %), the statistic, the method, the counts, the mean exposure, the seal, leaks.
    levels : dict
        Per repetition level (``"1"``, ``"10"``): the same test of its traps against the held-out ones, ``p_value``,
        ``p_holm``, ``verdict``, ``metrics``, ``exposure_mean``.
    metrics : dict
        ``{"overall": mia_core.metrics.evaluate(...)}``.
    scores : pandas.DataFrame
        One row per trap: ``trap_id``, ``group``, ``copies``, ``bucket``, ``generator_perplexity``, ``loss``,
        ``reference_loss``, ``score`` (membership: higher is more member-like), ``exposure_bits``.
    """

    summary: dict
    levels: dict
    metrics: dict
    scores: object
    model: dict = field(default_factory=dict)
    reference: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def verdict_line(self) -> str:
        """The verdict in one line: ``Trained on the traps: p = 1e-05 (pre-registered alpha 0.01).``"""
        s = self.summary
        return f"{VERDICTS[s['verdict']].capitalize()}: p = {fmt_p(s['p_value'])} (pre-registered alpha {s['alpha']:g})."

    def p_text(self) -> str:
        """The p-value as the report writes it."""
        return fmt_p(self.summary["p_value"])

    def summary_text(self) -> str:
        """The report: the verdict with its p-value and what it rests on, the figures, each level."""
        from ..formatting import fmt_auc

        s = self.summary
        name = self.model.get("name", "the model")
        verdict = (f"trained on the traps, p = {fmt_p(s['p_value'])}" if s["verdict"] == "used"
                   else f"not shown (p = {fmt_p(s['p_value'])} at alpha = {s['alpha']:g})")
        tpr = s.get("tpr_at_fpr") or {}
        lines = [f"Copyright traps (Meeus et al. 2024) on {name}: {verdict}",
                 f"  {s['n_inserted']} inserted traps against {s['n_held_out']} held out, scored as "
                 f"{self.reference.get('words', 'the loss ratio')}",
                 f"  one-sided, bucket-stratified permutation test of the rank sum ({s['method']}, "
                 f"{s['permutations']:,} assignments),",
                 f"  pre-registered in the record sealed {s['seal'][:16]}...",
                 "  The p-value is exact because the coin flip that chose the inserted traps was drawn after every "
                 "filter and sealed",
                 "  before publishing: under no training on them, every within-bucket assignment is equally likely. "
                 "A weak score",
                 "  costs power, never validity. 'Not shown' is not evidence of no training.",
                 f"  AUC {fmt_auc(s.get('auc'), s.get('auc_ci'))}; TPR at 1 % FPR {_pct(tpr.get('0.01'))}, at 10 % "
                 f"{_pct(tpr.get('0.1'))}; mean exposure {s['exposure_mean']:.2f} of {s['exposure_max_bits']:.2f} bits", ""]
        lines.append("  copies  traps  AUC                   p         Holm      verdict")
        for r, v in self.levels.items():
            m = v["metrics"]
            lines.append(f"  x{r:<6} {v['n_inserted']:>5}  {fmt_auc(m.get('auc'), m.get('auc_ci')):<21} "
                         f"{fmt_p(v['p_value']):<9} {fmt_p(v['p_holm']):<9} {VERDICTS[v['verdict']]}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_json(self) -> dict:
        """What ``traps.json`` holds: the summary (``p_value``, ``verdict``, ``auc``...), the levels, the metrics
        without curves, the model, the reference, the settings, the notes."""
        return {**{k: self.summary.get(k) for k in ("p_value", "verdict", "auc")}, "summary": self.summary,
                "levels": {r: {k: v for k, v in lv.items() if k != "metrics"} | {"metrics": _no_roc(lv["metrics"])}
                           for r, lv in self.levels.items()},
                "metrics": {n: _no_roc(m) for n, m in self.metrics.items()},
                "roc": {n: m.get("roc") for n, m in self.metrics.items()},
                "model": self.model, "reference": self.reference, "settings": self.settings, "notes": self.notes}

    def _write(self, out: Path) -> dict[str, Path]:
        paths = {"traps": out / MARKER, "scores": out / SCORES}
        paths["traps"].write_text(json.dumps(self.to_json(), indent=2, default=json_default), encoding="utf-8")
        write_csv(self.scores, paths["scores"])
        return paths

    @classmethod
    def load(cls, out_dir) -> "TrapsResult":
        """The result :meth:`save` wrote into ``out_dir``, read back (JSON and CSV parsed, never unpickled)."""
        from ..errors import DataError
        from ..runs.folder import read_saved_json

        out = Path(out_dir).expanduser()
        raw = read_saved_json(out, MARKER, "copyright-traps audit", needs=("summary", "levels", "metrics"))
        try:
            scores = read_csv(out / SCORES, dtype={"trap_id": str, "group": str})
            metrics = {n: {**m, "roc": (raw.get("roc") or {}).get(n)} for n, m in raw["metrics"].items()}
            levels = {r: dict(v) for r, v in raw["levels"].items()}
        except (ValueError, OSError, KeyError, TypeError, AttributeError) as e:
            raise DataError(f"{out}: the saved copyright-traps audit cannot be read ({e})") from None
        return cls(summary=raw["summary"], levels=levels, metrics=metrics, scores=scores, model=raw.get("model") or {},
                   reference=raw.get("reference") or {}, settings=raw.get("settings") or {},
                   notes=list(raw.get("notes") or []))


def _no_roc(m: dict) -> dict:
    return {k: v for k, v in m.items() if k != "roc"}


def _pct(x) -> str:
    return "n/a" if x is None or x != x else f"{x:.0%}"
