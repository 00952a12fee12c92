"""The result of a run of attacks (:func:`mia_core.pipeline.run_attacks`): :class:`RunResult`."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..errors import DataError
from ..results import AuditResult, json_default, write_csv


@dataclass
class RunResult(AuditResult):
    """What ``run_attacks`` produced (:class:`mia_core.results.AuditResult`).

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
        return [k for k in self.metrics if k != "blind"]

    def to_json(self) -> dict:
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

    @classmethod
    def load(cls, out_dir: str | Path) -> "RunResult":
        """The result :meth:`save` wrote into ``out_dir`` (``DataError``, one line, for a folder that
        holds no saved run)."""
        from ..results import read_csv

        out = Path(out_dir).expanduser()
        missing = [n for n in ("scores.csv", "metrics.json", "run.json") if not (out / n).is_file()]
        if missing:
            raise DataError(f"{out} does not hold a saved run (missing {', '.join(missing)}); document and "
                            "masked-LM result folders are not read back yet")
        try:
            run = json.loads((out / "run.json").read_text())
            metrics = json.loads((out / "metrics.json").read_text())
            scores = read_csv(out / "scores.csv", dtype={"text_id": str, "text_hash": str})
        except (ValueError, OSError) as e:
            raise DataError(f"{out}: the saved run cannot be read ({e})") from None
        return cls(scores=scores, metrics=metrics, **{k: run.get(k) for k in (
            "config", "models", "timings", "shift", "population", "group_metrics")},
            extra=run.get("extra") or {}, report=run.get("report") or [])

    def save(self, out_dir: str | Path) -> dict[str, Path]:
        """Write ``scores.csv``, ``metrics.json`` and ``run.json`` (config, models, timings,
        shift, population, group metrics, notes, extra); returns ``{"scores", "metrics", "run"}``
        -> path."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
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
