"""The verbatim extraction audit's result (:class:`ExtractionResult`): what it measured, its report, its files
(``extraction.json`` and ``extraction_scores.csv``) and the same result read back from them."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..runs.results import AuditResult, json_default, read_csv, write_csv

MARKER = "extraction.json"  # the file a saved extraction audit holds and no other audit's does
SCORES = "extraction_scores.csv"
WORDS = {"matched": "greedy match length", "suffix_loglik": "suffix log-likelihood"}


@dataclass
class ExtractionResult(AuditResult):
    """A verbatim extraction audit (Carlini et al. 2023, Definition 3.1).

    Attributes
    ----------
    metrics : dict
        ``{"matched" | "suffix_loglik": mia_core.metrics.evaluate(...)}``: each membership score's AUC [CI] and TPR
        at low FPR, on the texts of k + m tokens or more.
    scores : pandas.DataFrame
        One row per text: ``text_id``, ``label``, ``n_tokens``, ``matched`` (NaN: left out, too short),
        ``extractable``, ``suffix_loglik``, ``begins``.
    rates : dict
        ``{"members" | "nonmembers": {"extractable", "scored", "rate", "ci"}}``.
    settings : dict
        The options, the sets' sizes and ``left_out``.
    model : dict
        ``name`` and ``identity`` of the target.
    """

    metrics: dict
    scores: object
    rates: dict
    settings: dict
    model: dict = field(default_factory=dict)

    def excess(self) -> float:
        """Members' extractable share minus non-members' (the evidence; the second is what a model reproduces
        without having seen the text)."""
        return self.rates["members"]["rate"] - self.rates["nonmembers"]["rate"]

    def summary_text(self) -> str:
        """The report: the shares with their intervals, what the non-members' share means, the scores' table."""
        from ..formatting import fmt_rate_ci
        from ..metrics import summarize_table

        s, r = self.settings, self.rates
        k, m = s["prefix_tokens"], s["suffix_tokens"]
        lines = [f"Verbatim extraction (Carlini et al. 2023, Definition 3.1) of {self.model.get('name', 'the model')}:",
                 f"prompted with a text's first {k} tokens, does greedy decoding give its next {m} exactly?",
                 f"(only a text's first {k + m} tokens are read and scored: the rest of it is not used)", ""]
        for key, what in (("members", "members"), ("nonmembers", "non-members")):
            x = r[key]
            lines.append(f"  {what:<12} {x['extractable']:>5} of {x['scored']:<5} extractable: "
                         f"{fmt_rate_ci(x['rate'], x['ci'])} (95 % Wilson interval)")
        lines += [f"  difference   {self.excess() * 100:+.1f} points",
                  "  The non-members' share is what the model reproduces without having seen the texts (common or",
                  "  formulaic text); only the members' excess over it is evidence of training. The intervals take",
                  "  the texts as independent draws.", ""]
        if s.get("left_out"):
            lines.append(f"  {s['left_out']} text(s) under {k + m} tokens left out.")
        shown = {WORDS[n]: mm for n, mm in self.metrics.items()}
        lines += ["Membership scores (AUC [95 % bootstrap CI], texts resampled within each set):",
                  summarize_table(shown)]
        return "\n".join(lines)

    def to_json(self) -> dict:
        """What ``extraction.json`` holds: metrics without ROC curves, the shares, settings and model."""
        return {"metrics": {n: {k: v for k, v in mm.items() if k != "roc"} for n, mm in self.metrics.items()},
                "roc": {n: mm.get("roc") for n, mm in self.metrics.items()},
                "rates": self.rates, "settings": self.settings, "model": self.model}

    def _write(self, out: Path) -> dict[str, Path]:
        paths = {"extraction": out / MARKER, "scores": out / SCORES}
        paths["extraction"].write_text(json.dumps(self.to_json(), indent=2, default=json_default), encoding="utf-8")
        write_csv(self.scores, paths["scores"])
        return paths

    @classmethod
    def load(cls, out_dir) -> "ExtractionResult":
        """The result :meth:`save` wrote into ``out_dir``, read back (JSON and CSV parsed, never unpickled);
        ``DataError`` in one line for a folder holding no saved extraction audit or a damaged one."""
        from ..errors import DataError
        from ..runs.folder import read_saved_json

        out = Path(out_dir).expanduser()
        raw = read_saved_json(out, MARKER, "verbatim extraction audit", needs=("metrics", "rates", "settings"))
        try:
            scores = read_csv(out / SCORES, dtype={"text_id": str, "begins": str})
            metrics = {n: {**mm, "roc": (raw.get("roc") or {}).get(n)} for n, mm in raw["metrics"].items()}
            if not metrics or set(metrics) - set(WORDS):
                raise ValueError(f"{MARKER} names no score of this audit")
        except (ValueError, OSError, KeyError, TypeError, AttributeError) as e:
            raise DataError(f"{out}: the saved verbatim extraction audit cannot be read ({e})") from None
        return cls(metrics=metrics, scores=scores, rates=raw["rates"], settings=raw["settings"],
                   model=raw.get("model") or {})
