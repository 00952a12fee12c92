"""The masked-LM audit's result, :class:`MlmAuditResult` (the project's one result type,
:class:`mia_core.runs.results.AuditResult`): the CLI's report, the JSON and the files it writes."""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..errors import SettingsError
from ..formatting import fmt_pct
from ..runs.outputs import save_output
from ..runs.results import AuditResult, json_default, neutralise_cell
from .masking import DEFAULT_RECIPE, RECIPES, MaskPlan

ATTACKS = ("likelihood_ratio", "loss")
CURVES_FILE = "curves.json"  # the ROC curves, the population's scores and the energies (what metrics.json leaves out)


# --------------------------------------------------------------------------------------
# the result
# --------------------------------------------------------------------------------------
def _pct(v) -> str:
    return "n/a" if v is None else fmt_pct(v)


def _decision_line(name: str, d: dict, what: str) -> str:
    return (f"  {name:<17} precision {_pct(d['precision']):>6}  recall {_pct(d['recall']):>6}  "
            f"FPR {_pct(d['fpr']):>6}  ({d['n_flagged']} flagged; threshold {d['threshold']:.4g} {what})")


def _json_metrics(m: dict) -> dict:
    return {k: v for k, v in m.items() if k != "roc"}


@dataclass
class MlmAuditResult(AuditResult):
    """Everything a masked-LM audit produced (see :func:`run_mlm_audit`).

    ``metrics``: ``{"likelihood_ratio": evaluate(...) + {"population_threshold": decisions,
    "alpha"}, "loss": ... (+ "mu_threshold" with training samples)}``; ``group_metrics``: the
    same per attack at group level (§4.2), or ``None``; ``scores``: one row per evaluated text
    (``text_id``, ``label``, ``text_hash``, [``group``], ``n_tokens``, ``n_masked`` (``l``, the
    tokens each pattern masks), ``likelihood_ratio``, ``loss`` (minus the target's mean loss per
    masked token, ``-E/l``), ``energy_target``, ``energy_reference``, ``flagged_likelihood_ratio``,
    ``flagged_loss``; the energies follow ``settings["recipe"]``); ``population_scores``: ``{attack: [...]}``;
    ``leak_features``:
    ``{attack: {"flagged": {feature: mean}, "unflagged": {...}, ...}}`` (§4.6); ``energies``:
    ``{"target": [...], "reference": [...], "population_target": [...], ...}``; ``settings``,
    ``models`` (``{"target": {...}, "reference": {...}}``) and ``warnings``. ``plan``: the
    tokenisation and masks both models scored (:class:`MaskPlan`; not written by :meth:`save`).
    """

    metrics: dict
    group_metrics: dict | None
    scores: pd.DataFrame
    population_scores: dict
    leak_features: dict
    energies: dict
    settings: dict
    models: dict
    warnings: list[str] = field(default_factory=list)
    plan: MaskPlan | None = field(default=None, repr=False, compare=False)

    def summary_text(self) -> str:
        """The human-readable summary printed by the CLI."""
        from ..metrics import summarize_table

        s = self.settings
        recipe = s.get("recipe", DEFAULT_RECIPE)
        how = ("mean loss per masked token, l = int" if RECIPES.get(recipe, {}).get("energy") == "mean"
               else "summed over the masked tokens, l = ceil")
        lines = [
            f"target: {self.models['target']['name']}; reference: {self.models['reference']['name']} "
            f"(recipe '{recipe}': K={s['k']} masks of {s['rate']:.0%} of the tokens, energy {how}({s['rate']:g} T); "
            f"max {s['max_length']} tokens)",
            f"{s['n_members']} members, {s['n_nonmembers']} non-members, {s['n_population']} population texts",
            "",
            summarize_table(self.metrics),
            "",
            f"at the population threshold (flags {s['alpha']:.0%} of the population; §2.4):",
        ]
        for name, m in self.metrics.items():
            lines.append(_decision_line(name, m["population_threshold"], "on the score"))
        mu = self.metrics.get("loss", {}).get("mu_threshold")
        if mu:
            lines.append(f"loss attack at the mean training-sample loss per masked token mu = {mu['mu']:.4g} "
                         f"({mu['n_train_samples']} training samples; §3.4):")
            lines.append(_decision_line("loss (mu)", mu, "on -loss"))
        if self.group_metrics:
            g0 = next(iter(self.group_metrics.values()))
            lines += ["", f"group level (mean score per group, {g0['n_groups']} groups; §4.2):",
                      summarize_table(self.group_metrics),
                      f"at the group threshold (from the {g0['population_threshold']['threshold_from']}):"]
            for name, m in self.group_metrics.items():
                lines.append(_decision_line(name, m["population_threshold"], "on the group mean"))
        lf = self.leak_features.get("likelihood_ratio")
        if lf:
            lines += ["", f"members flagged by the likelihood ratio ({lf['n_flagged']}) vs. not flagged "
                          f"({lf['n_unflagged']}), feature means (§4.6):"]
            for f in lf["features"]:
                a, b = lf["flagged"][f], lf["unflagged"][f]
                lines.append(f"  {f:<18} {'-' if a is None else f'{a:.1f}':>8}  {'-' if b is None else f'{b:.1f}':>8}")
        for w in self.warnings:
            lines.append(f"note: {w}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        """The content of ``metrics.json``: metrics without ROC curves (``group`` for the group
        level), leak features, settings, models and warnings."""
        metrics = {name: _json_metrics(m) for name, m in self.metrics.items()}
        if self.group_metrics:
            metrics["group"] = {name: _json_metrics(m) for name, m in self.group_metrics.items()}
        metrics["leak_features"] = self.leak_features
        metrics["settings"] = self.settings
        metrics["models"] = self.models
        metrics["warnings"] = self.warnings
        return metrics

    def save(self, out_dir, *, extra: dict | None = None, overwrite: bool = False) -> dict[str, Path]:
        """Write ``scores.csv`` (one row per evaluated text; ``text_id``, ``label``, ``text_hash``,
        ``likelihood_ratio``, ``loss`` [, ``group``] first), ``metrics.json`` (:meth:`to_json`,
        updated with ``extra``, e.g. the CLI's ``data_notes``) and ``curves.json`` (ROC curves, population scores,
        energies: what :meth:`load` needs besides), under the rules of ``--out``
        (:meth:`mia_core.runs.results.AuditResult.save`: a new or empty folder, or with ``overwrite`` one this tool
        wrote; published in one rename)."""
        if extra is not None and not isinstance(extra, dict):
            # an API-only parameter (no flag, no widget): named as it is
            raise SettingsError(f"extra must be a dict (added to metrics.json), got {type(extra).__name__}")
        return save_output(out_dir, lambda out: self._write(out, extra=extra), overwrite=overwrite)

    @classmethod
    def load(cls, out_dir) -> "MlmAuditResult":
        """The result :meth:`save` wrote into ``out_dir``, read back: ``metrics.json`` (metrics, group metrics, leak
        features, settings, models, notes), ``curves.json`` (the ROC curves, the population's scores and the
        energies) and ``scores.csv``; its report (:meth:`summary_text`), :meth:`to_json` and files are the saved
        run's. The masking plan is not kept (a re-run of the same settings makes it again). JSON and CSV are parsed,
        never unpickled; ``DataError`` in one line for a folder that holds no saved masked-LM audit or a damaged
        one (a folder saved before ``curves.json`` was written is refused the same way)."""
        from ..errors import DataError
        from ..runs.folder import read_saved_json
        from ..runs.results import read_csv

        out = Path(out_dir).expanduser()
        raw = read_saved_json(out, "metrics.json", "masked-LM audit", needs=("settings", "models", *ATTACKS))
        curves = read_saved_json(out, CURVES_FILE, "masked-LM audit", needs=("roc", "energies", "population_scores"))
        try:
            scores = read_csv(out / "scores.csv", dtype={"text_id": str, "text_hash": str})
            metrics = {n: {**raw[n], **({"roc": curves["roc"][n]} if n in curves["roc"] else {})} for n in ATTACKS}
            group = raw.get("group")
            group_metrics = None if group is None else {
                n: {**m, **({"roc": (curves.get("group_roc") or {})[n]} if n in (curves.get("group_roc") or {}) else {})}
                for n, m in group.items()}
        except (ValueError, OSError, KeyError, TypeError, AttributeError) as e:
            raise DataError(f"{out}: the saved masked-LM audit cannot be read ({e})") from None
        return cls(metrics=metrics, group_metrics=group_metrics, scores=scores,
                   population_scores=curves["population_scores"], leak_features=raw.get("leak_features") or {},
                   energies=curves["energies"], settings=raw["settings"], models=raw["models"],
                   warnings=list(raw.get("warnings") or []))

    def _write(self, out: Path, *, extra: dict | None = None) -> dict[str, Path]:
        paths = {"scores": out / "scores.csv", "metrics": out / "metrics.json", "curves": out / CURVES_FILE}
        rows = self.scores.to_dict(orient="records")
        cols = ["text_id", "label", "text_hash", "likelihood_ratio", "loss"]
        if rows and "group" in rows[0]:
            cols.append("group")
        cols += [c for c in rows[0] if c not in cols] if rows else []
        with open(paths["scores"], "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            for r in rows:
                w.writerow({c: neutralise_cell(r.get(c)) for c in cols})  # text ids never as spreadsheet formulas
        metrics = self.to_json()
        if extra:
            metrics.update(extra)
        paths["metrics"].write_text(json.dumps(metrics, indent=2, allow_nan=True))
        curves = {"roc": {n: m["roc"] for n, m in self.metrics.items() if "roc" in m},
                  "group_roc": {n: m["roc"] for n, m in (self.group_metrics or {}).items() if "roc" in m},
                  "population_scores": self.population_scores, "energies": self.energies}
        paths["curves"].write_text(json.dumps(curves, default=json_default, allow_nan=True))
        return paths
