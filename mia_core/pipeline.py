"""Run a set of attacks on a labelled dataset: statistics -> scores -> metrics.

``run_attacks`` is what the CLI's ``run`` command, the dashboard's calibration page and
the tests call. It

1. works out which model passes the chosen attacks need (target on the texts, target on
   the lower-cased texts, reference on the texts) and runs each pass once, through the
   cached one-pass statistics (``mia_core.stats``);
2. lets attacks that need more (neighbours, embeddings, a trained SMIA network) prepare
   it in their ``prepare`` hook, on the training part when a split is used;
3. scores every text with every attack (cheap functions of the statistics);
4. reports metrics on the evaluation part: AUC, TPR at low FPR with bootstrap CIs, the
   blind (model-free) baseline, group-level metrics when texts carry groups, and
   precision/recall at a threshold fitted on a population set when one is given.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from . import metrics as M
from .attacks import REGISTRY, AttackInputs
from .cache import text_hash
from .data import Dataset
from .engines import current_engine
from .errors import DataError, SettingsError
from .models import LoadedModel, describe
from .stats import StatsSettings, compute_stats, resolve_prefix, scores_first_token, settings_for
from .progress import Progress, noop
from .results import AuditResult, json_default, write_csv


@dataclass
class RunConfig:
    attacks: Sequence[str] = ("loss", "zlib", "lowercase", "min_k", "min_k_pp")
    params: dict = field(default_factory=dict)  # {attack: {param: value}}
    stats: StatsSettings = field(default_factory=StatsSettings)
    use_cache: bool = True
    n_bootstrap: int = 1000
    seed: int = 0
    split: float | None = None  # fraction of the labelled set used for training (SMIA), rest evaluated
    split_seed: int = 0
    population_alpha: float = 0.1  # FPR on the population set for the threshold (Mireshghallah §2.4)
    blind: bool = True  # model-free baseline (distribution-shift check)
    # attacks score every token the model predicts as it did in training (attacks.base): None decides from
    # the prefix (stats.scores_first_token); True / False force the first text token in / out
    score_first_token: bool | None = None

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "stats"}
        d["attacks"] = list(self.attacks)
        d["stats"] = dict(self.stats.__dict__)
        return d


from .attacks import DEFAULT_ATTACKS, default_attacks  # noqa: E402,F401 - the default list lives with the registry


@dataclass
class RunContext:
    """Everything an attack's ``prepare`` hook may use."""

    target: LoadedModel
    reference: LoadedModel | None
    config: RunConfig
    dataset: Dataset  # all texts being scored (evaluation + training parts)
    train_mask: np.ndarray  # texts usable for training (labels known to the attack)
    progress: Progress
    compute: Callable[..., list]  # compute(lm, texts, label=...) -> list[TokenStats] with the run's settings
    population: Dataset | None = None  # known non-members disjoint from the audited texts (ReCaLL prefix, RMIA)


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
        from .metrics import decision_cis, summarize_table

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
                    return "n/a" if v is None else f"{v:.3f} [{c[k][0]:.2f}, {c[k][1]:.2f}]"

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
        from .results import read_csv

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


def parse_attacks(spec: str | Sequence[str] | None) -> list[str]:
    """``"all"``, a comma list, or a sequence -> validated attack names."""
    if spec is None:
        return ["loss", "zlib", "lowercase", "min_k", "min_k_pp"]
    names = [str(s).strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if str(s).strip()]
    if not names:
        raise SettingsError(f"no attack given; choose from {', '.join(REGISTRY)} or 'all'")
    if names == ["all"] or "all" in names:
        return list(REGISTRY)
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise SettingsError(f"unknown attack(s) {', '.join(unknown)}; choose from {', '.join(REGISTRY)} or 'all'")
    return names


def check_config(cfg: RunConfig) -> RunConfig:
    """The run's settings checked before any model pass (``run_attacks`` calls it first; a caller can
    call it before loading a model): the attacks, every attack parameter against its declared domain
    (:func:`mia_core.attacks.check_params`) and the run's numbers. Returns the configuration with the
    parameters coerced to their types; ``SettingsError``, one line naming the setting, otherwise."""
    from .attacks import check_params
    from .attacks.domains import number, whole

    parse_attacks(list(cfg.attacks))
    params = check_params(cfg.params)
    for where, dom, value in (
        ("n_bootstrap", whole(0), cfg.n_bootstrap),
        ("seed", whole(0), cfg.seed),
        ("split_seed", whole(0), cfg.split_seed),
        ("population_alpha", number(0, 1, lo_open=True, hi_open=True), cfg.population_alpha),
        ("split", number(0, 1, lo_open=True, hi_open=True, optional=True), cfg.split or None),  # 0 / None: no split
        ("stats.context", whole(2, also=(0,), optional=True), cfg.stats.context),  # 0 / None: the model's
        ("stats.batch_tokens", whole(1, also=(0,), optional=True), cfg.stats.batch_tokens),  # 0 / None: the device's
    ):
        dom.check(value, f"RunConfig.{where}")
    return replace(cfg, params=params)


def plan_attacks(spec: str | Sequence[str] | None, *, have: set[str] | Sequence[str],
                 params: dict | None = None) -> tuple[list[str], dict[str, str]]:
    """Which of the requested attacks can run with the inputs at hand, before anything loads.

    ``have``: the optional run inputs available: "reference" (a reference model),
    "labels" (a training set or a split), "population" (known non-members). An attack named
    explicitly that lacks an input stops the run (``SettingsError``, one line, naming what to
    give); with ``all`` such attacks are skipped and returned with the reason, so that
    ``--attacks all`` runs every attack its inputs allow.

    Returns ``(names to run, {skipped name: reason})``.
    """
    from .attacks import check_params
    from .attacks.base import OPTIONAL_INPUTS

    names = parse_attacks(spec)
    params = check_params(params)  # every parameter in its declared domain, before anything loads
    raw = [str(x).strip() for x in (spec.split(",") if isinstance(spec, str) else (spec or []))]
    all_mode = "all" in raw
    have = set(have)
    run, skipped, errors = [], {}, []
    for n in names:
        missing = sorted(REGISTRY[n].inputs_needed((params or {}).get(n)) - have)
        if not missing:
            run.append(n)
            continue
        reason = "; ".join(OPTIONAL_INPUTS[m] for m in missing)
        if all_mode:
            skipped[n] = reason
        else:
            errors.append(f"{REGISTRY[n].label} ({n}) {reason}")
    if errors:
        raise SettingsError("; ".join(errors))
    if not run:
        raise SettingsError("none of the attacks can run with these inputs: "
                            + "; ".join(f"{n}: {r}" for n, r in skipped.items()))
    return run, skipped


def uses_reference(names: Sequence[str], params: dict | None = None) -> bool:
    """Whether any of the attacks ``names`` uses the run's reference model (the reference pass,
    or an attack that loads it itself with these parameters, e.g. offline RMIA)."""
    return any("reference" in REGISTRY[n].needs or "reference" in REGISTRY[n].inputs_needed((params or {}).get(n))
               for n in names)


def check_population(population: Dataset | None, texts: Sequence[str]) -> None:
    """The population (known non-members) must be disjoint from every audited text."""
    if population is None or not len(population):
        return
    overlap = set(population.texts) & set(texts)
    if overlap:
        raise DataError(f"{len(overlap)} population text(s) also appear in the audited sets; they must be disjoint")


def split_mask(labels: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Stratified random split: True = training part. Each class keeps >= 1 text on both sides."""
    if not 0 < fraction < 1:
        raise SettingsError(f"the split fraction must be between 0 and 1, got {fraction}")
    rng = np.random.default_rng(seed)
    mask = np.zeros(len(labels), dtype=bool)
    for c in (0, 1):
        idx = np.flatnonzero(labels == c)
        if len(idx) < 2:
            raise DataError("a train/evaluation split needs at least 2 members and 2 non-members")
        n_train = int(round(len(idx) * fraction))
        n_train = min(max(n_train, 1), len(idx) - 1)
        mask[rng.permutation(idx)[:n_train]] = True
    return mask


def _one_job_per_model(compute, target, reference, needs, texts: list[str], population) -> None:
    """On a distributed engine, every pass of one model (texts, lower-cased, population) as one job: its
    workers load the model once instead of once per pass. The passes then read the cache. The early
    results (``partial``) come after the whole job rather than after each pass."""
    base = list(texts) + (list(population.texts) if population is not None and len(population) else [])
    lower = [t.lower() for t in base] if "target_lower" in needs else []
    compute(target, base + lower, "target passes")
    if "reference" in needs and reference is not None:
        compute(reference, base, "reference passes")


def not_verified_notes(models: dict) -> list[str]:
    """A warning for every model audited although its weights did not match its checkpoint (asked for with
    ``--accept-weight-mismatch``): the numbers are about that model as loaded, not its checkpoint."""
    return [f"WARNING: the {role} model {d.get('name')} was audited although its weights do not match its "
            f"checkpoint (asked for): {d['weights_not_verified']}"
            for role, d in (models or {}).items() if isinstance(d, dict) and d.get("weights_not_verified")]


@dataclass
class _Scored:
    """What the scoring stage produced (:func:`score_stage`)."""

    inputs: AttackInputs
    scores: dict
    extra: dict
    timings: dict
    report: list
    compute: Callable
    first_token: bool


def score_stage(texts: list[str], target: LoadedModel, *, reference, cfg: RunConfig, attacks: list, population,
           progress: Progress, dataset: Dataset, train_mask: np.ndarray,
           on_pass: Callable[[set, AttackInputs], None] | None = None, early: dict | None = None) -> _Scored:
    """The scoring stage of a run: the model passes the attacks need (each once, through the cached
    statistics), the attacks' ``prepare`` hooks, then every attack's score for every text. Labels are
    not read here (an attack that learns reads ``dataset``'s labels where ``train_mask`` is True), so
    unlabelled texts are scored the same way (:func:`score_texts`). ``on_pass(done, inputs)`` is called
    after each pass; scores it put in ``early`` are kept."""
    early = {} if early is None else early
    needs = {n for a in attacks for n in a.needs}
    report: list[str] = []
    timings: dict[str, float] = {}

    def compute(lm, texts, label="token statistics", settings=None):
        # a reference (or RMIA's references) scores the tokens the target scores, with the target's prefix
        st = settings_for(lm, target, settings or cfg.stats)
        return compute_stats(lm, texts, st, use_cache=cfg.use_cache, progress=progress, label=label)

    def passed(done: set) -> None:
        if on_pass is not None:
            on_pass(done, inputs)

    # ---- the model passes
    first_token = scores_first_token(target, cfg.stats) if cfg.score_first_token is None else bool(cfg.score_first_token)
    inputs = AttackInputs(texts=texts, first_token=first_token)
    t0 = time.time()
    if cfg.use_cache and current_engine().distributed:
        _one_job_per_model(compute, target, reference, needs, texts, population)
    inputs.target = compute(target, texts, "target pass")
    timings["target_pass"] = time.time() - t0
    passed({"target"})
    if "target_lower" in needs:
        t0 = time.time()
        inputs.target_lower = compute(target, [t.lower() for t in texts], "target pass (lower-cased)")
        timings["target_lower_pass"] = time.time() - t0
        passed({"target", "target_lower"})
    if "reference" in needs:
        t0 = time.time()
        inputs.reference = compute(reference, texts, "reference pass")
        inputs.same_tokenizer = target.same_tokenizer(reference)
        if reference.identity == target.identity:
            report.append("the reference model is the target model itself: the reference attack scores 0 for every text")
        if not inputs.same_tokenizer:
            report.append("target and reference tokenizers differ: the reference attack compares NLL per byte")
        timings["reference_pass"] = time.time() - t0
        passed({"target", "target_lower", "reference"})

    short = sum(1 for s in inputs.scored() if s.n_predicted == 0)
    if short:
        report.append(f"{short} text(s) too short to score (no predicted token): left out of the figures")

    # ---- attack-specific preparation (neighbours, embeddings, training)
    ctx = RunContext(target, reference, cfg, dataset, train_mask, progress, compute, population=population)
    extra: dict = {}
    for a in attacks:
        if a.prepare is not None:
            t0 = time.time()
            extra[a.name] = a.prepare(inputs, ctx, **a.kwargs(cfg.params)) or {}
            timings[f"{a.name}_prepare"] = time.time() - t0
            for kind in ("warning", "note"):
                msg = extra[a.name].get(kind) if isinstance(extra[a.name], dict) else None
                if msg and f"{a.name}: {msg}" not in report:
                    report.append(f"{a.name}: {msg}")

    # ---- scores
    scores: dict[str, np.ndarray] = {}
    for a in attacks:
        t0 = time.time()
        scores[a.name] = early[a.name] if a.name in early else np.asarray(a.score(inputs, **a.kwargs(cfg.params)),
                                                                          dtype=float)
        timings[f"{a.name}_score"] = time.time() - t0
    return _Scored(inputs, scores, extra, timings, report, compute, first_token)


def run_attacks(dataset: Dataset, target: LoadedModel, **kwargs) -> RunResult:
    """Score ``dataset`` with the configured attacks and report metrics (:func:`_run_attacks` has the
    parameters). Cache entries that were rejected on read, or could not be stored, are in the
    result's notes (``report``)."""
    from .cache import collect_notes

    from . import demo

    with collect_notes() as notes:
        result = _run_attacks(dataset, target, **kwargs)
    result.report.extend(notes)
    result.report.extend(not_verified_notes(result.models))
    reference = kwargs.get("reference")
    if demo.is_demo_run(dataset, target, reference, kwargs.get("config")):
        result.extra["known_truth"] = demo.known_truth(result.metrics, reference)
    return result


def _run_attacks(
    dataset: Dataset,
    target: LoadedModel,
    *,
    reference: LoadedModel | None = None,
    config: RunConfig | None = None,
    train: Dataset | None = None,
    population: Dataset | None = None,
    progress: Progress = noop,
    partial: Callable[[dict], None] | None = None,
) -> RunResult:
    """Score ``dataset`` with the configured attacks and report metrics.

    ``train``: a separate labelled set for attacks that learn (SMIA); alternatively
    ``config.split`` splits ``dataset`` (stratified, seeded) and every attack is then
    reported on the same held-out part. ``population``: non-member texts disjoint from the
    evaluation set, used to fit a decision threshold at FPR ``config.population_alpha``.
    ``partial``: called with ``{attack: metrics}`` (AUC, TPR and ROC without bootstrap CIs) for
    the attacks that need no preparation as soon as the passes they read are done (the one-pass
    attacks after the target pass, lowercase after its pass, ref after the reference pass), so a
    front end can show results while the rest runs; the final metrics are the returned ones.
    """
    cfg = check_config(config or RunConfig())  # every setting before any model pass
    if dataset.n_members == 0 or dataset.n_nonmembers == 0:
        raise DataError("need at least one member and one non-member text")
    have = {"reference"} if reference is not None else set()
    if train is not None or cfg.split:
        have.add("labels")
    if population is not None and len(population):
        have.add("population")
    names, skipped = plan_attacks(list(cfg.attacks), have=have, params=cfg.params)
    # the batch size this device gets by default is recorded with the run (it changes no number)
    cfg = replace(cfg, stats=replace(cfg.stats, batch_tokens=cfg.stats.resolved_batch_tokens(target)))
    attacks = [REGISTRY[n] for n in names]
    needs = {n for a in attacks for n in a.needs}
    report = list(dataset.report)
    for n, why in skipped.items():
        report.append(f"skipped {REGISTRY[n].label} ({n}): it {why}")
    timings: dict[str, float] = {}

    # ---- which texts are scored, which train, which are evaluated
    if train is not None and cfg.split:
        raise SettingsError("give either a separate training set or a split fraction, not both")
    if train is not None:
        overlap = set(train.texts) & set(dataset.texts)
        if overlap:
            raise DataError(f"{len(overlap)} text(s) appear in both the training and the evaluation sets")
        all_texts = list(dataset.texts) + list(train.texts)
        labels = np.concatenate([dataset.labels, train.labels]).astype(int)
        ids = list(dataset.ids) + [f"train-{i}" for i in train.ids]
        groups = (list(dataset.groups) if dataset.groups else [""] * len(dataset)) + [""] * len(train)
        train_mask = np.r_[np.zeros(len(dataset), bool), np.ones(len(train), bool)]
    else:
        all_texts = list(dataset.texts)
        labels = dataset.labels.astype(int)
        ids = list(dataset.ids)
        groups = list(dataset.groups) if dataset.groups else [""] * len(dataset)
        train_mask = split_mask(labels, cfg.split, cfg.split_seed) if cfg.split else np.zeros(len(labels), bool)
    eval_mask = ~train_mask
    check_population(population, all_texts)
    full = Dataset(
        texts=all_texts, labels=labels, ids=ids, groups=groups if any(groups) else None,
        sources=list(dataset.sources) + (list(train.sources) if train is not None else []), report=[],
    ) if train is not None else dataset

    target_prefix = resolve_prefix(target, cfg.stats)
    early: dict[str, np.ndarray] = {}  # scores of the attacks already shown through ``partial``

    def report_early(done: set, inputs: AttackInputs) -> None:
        if partial is None:
            return
        out = {}
        for a in attacks:
            if a.name in early or a.prepare is not None or not set(a.needs) <= done:
                continue
            try:
                early[a.name] = np.asarray(a.score(inputs, **a.kwargs(cfg.params)), dtype=float)
                m = M.evaluate(labels[eval_mask], early[a.name][eval_mask], n_bootstrap=0)
            except (DataError, SettingsError, ValueError):
                continue
            out[a.name] = {**m, "label": a.label}
        if out:
            try:
                partial(out)
            except Exception:  # noqa: BLE001 - a display callback never stops the run
                pass

    st = score_stage(all_texts, target, reference=reference, cfg=cfg, attacks=attacks, population=population,
                progress=progress, dataset=full, train_mask=train_mask, on_pass=report_early, early=early)
    inputs, scores, extra, compute, first_token = st.inputs, st.scores, st.extra, st.compute, st.first_token
    report += st.report
    timings.update(st.timings)

    df = pd.DataFrame({"text_id": ids, "label": labels, "text_hash": [text_hash(t) for t in all_texts]})
    if train_mask.any():
        df["split"] = np.where(train_mask, "train", "eval")
    if any(groups):
        df["group"] = groups
    for n, s in scores.items():
        df[n] = s

    # ---- metrics on the evaluation part
    progress("metrics", 0.95)
    metrics: dict = {}
    ev = eval_mask
    for n, s in scores.items():
        m = M.evaluate(labels[ev], s[ev], n_bootstrap=cfg.n_bootstrap, seed=cfg.seed)
        m["label"] = REGISTRY[n].label
        m["citation"] = REGISTRY[n].citation
        metrics[n] = m
    shift = None
    if cfg.blind:
        try:
            from . import shift as shift_mod

            ev_texts = [t for t, e in zip(all_texts, ev) if e]
            ev_labels = labels[ev]
            mem = [t for t, l in zip(ev_texts, ev_labels) if l == 1]
            non = [t for t, l in zip(ev_texts, ev_labels) if l == 0]
            shift = shift_mod.shift_report(mem, non, seed=cfg.seed, attack_metrics=metrics)
            blind = dict(shift["blind"])
            blind.pop("oof_scores", None)
            blind["label"] = "Blind baseline (no model)"
            metrics["blind"] = blind
        except DataError as e:
            report.append(f"blind baseline skipped: {e}")
        except ImportError:
            pass

    group_metrics = None
    if any(groups):
        group_metrics = {}
        g_ev = [g for g, e in zip(groups, ev) if e]
        for n, s in scores.items():
            gid, gs, gl = M.group_scores(s[ev], labels[ev], g_ev)
            try:
                group_metrics[n] = M.evaluate(gl, gs, n_bootstrap=cfg.n_bootstrap, seed=cfg.seed, keep_roc=False)
                group_metrics[n]["n_groups"] = len(gid)
            except DataError as e:
                group_metrics[n] = {"error": str(e)}

    pop = None
    if population is not None and len(population):
        pop_inputs = AttackInputs(texts=list(population.texts), first_token=first_token)
        pop_inputs.target = compute(target, pop_inputs.texts, "population pass")
        if "target_lower" in needs:
            pop_inputs.target_lower = compute(target, [t.lower() for t in pop_inputs.texts], "population pass (lower)")
        if "reference" in needs:
            pop_inputs.reference = compute(reference, pop_inputs.texts, "population reference pass")
            pop_inputs.same_tokenizer = inputs.same_tokenizer
        pop_inputs.extra = inputs.extra
        pop = {"alpha": cfg.population_alpha, "n_population": len(population), "attacks": {}}
        for a in attacks:
            if a.prepare is not None and not getattr(a, "population_ok", True):
                continue
            kw = a.kwargs(cfg.params)
            try:
                ps = np.asarray(a.score(pop_inputs, **kw), dtype=float)
            except Exception as e:  # noqa: BLE001 - an attack that cannot score population texts is reported
                pop["attacks"][a.name] = {"error": str(e)}
                continue
            thr = M.population_threshold(ps, cfg.population_alpha)
            d = M.decisions_at(labels[ev], scores[a.name][ev], thr)
            pop["attacks"][a.name] = d
            metrics[a.name]["population_threshold"] = d

    models = {"target": describe(target)}
    if reference is not None and ("reference" in needs or uses_reference(names, cfg.params)):
        models["reference"] = describe(reference)
    progress("done", 1.0)
    return RunResult(
        scores=df,
        metrics=metrics,
        config={**cfg.to_dict(), "attacks": names, **({"skipped": skipped} if skipped else {}),
                "scored_tokens": {"prefix": cfg.stats.prefix, "prefix_token_id": target_prefix,
                                  "first_token": first_token}},
        models=models,
        timings={k: round(v, 3) for k, v in timings.items()},
        shift=shift,
        population=pop,
        group_metrics=group_metrics,
        extra=extra,
        report=report,
    )


def score_texts(texts: Sequence[str], target: LoadedModel, *, reference: LoadedModel | None = None,
                config: RunConfig | None = None, population: Dataset | None = None,
                progress: Progress = noop) -> pd.DataFrame:
    """Score unlabelled ``texts`` with the configured attacks: the scoring stage of :func:`run_attacks`
    (the same passes, cache, ``prepare`` hooks and scores; no labels, no metrics).

    Attacks that learn from labelled texts (SMIA) cannot run here (one ``SettingsError`` line).
    Returns one row per text (``text_id``, ``text_hash``, one column per attack, higher = more likely
    a member); ``df.attrs`` holds ``report`` (notes), ``extra`` (attack artefacts), ``config`` and
    ``skipped``.
    """
    from .cache import collect_notes

    cfg = check_config(config or RunConfig())
    texts = [str(t) for t in texts]
    if not texts:
        raise DataError("no texts to score")
    have = {"reference"} if reference is not None else set()
    if population is not None and len(population):
        have.add("population")
    names, skipped = plan_attacks(list(cfg.attacks), have=have, params=cfg.params)
    check_population(population, texts)
    cfg = replace(cfg, stats=replace(cfg.stats, batch_tokens=cfg.stats.resolved_batch_tokens(target)))
    ids = [f"t{i + 1:04d}" for i in range(len(texts))]
    # the prepare hooks' view of the texts: no label is known (none is read: nothing trains here)
    dataset = Dataset(texts=texts, labels=np.zeros(len(texts), dtype=int), ids=ids, report=[])
    with collect_notes() as notes:
        st = score_stage(texts, target, reference=reference, cfg=cfg, attacks=[REGISTRY[n] for n in names],
                    population=population, progress=progress, dataset=dataset,
                    train_mask=np.zeros(len(texts), bool))
    df = pd.DataFrame({"text_id": ids, "text_hash": [text_hash(t) for t in texts]})
    for n, s in st.scores.items():
        df[n] = s
    df.attrs.update({"report": [*(f"skipped {REGISTRY[n].label} ({n}): it {why}" for n, why in skipped.items()),
                                *st.report, *notes],
                     "extra": st.extra, "skipped": skipped,
                     "config": {**cfg.to_dict(), "attacks": names,
                                "scored_tokens": {"prefix": cfg.stats.prefix,
                                                  "prefix_token_id": resolve_prefix(target, cfg.stats),
                                                  "first_token": st.first_token}}})
    progress("done", 1.0)
    return df
