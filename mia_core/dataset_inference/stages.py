"""The stages of a dataset-inference run (Maini et al. 2024), shared by texts (``audit``) and books (``books``),
in the order a run makes them (as ``mia_core.pipeline.stages`` for a calibration run):

check -> guard -> load models -> features -> tests -> per-unit p-values -> result.

* **check** (model-free, one line each): the settings (:func:`check_test_settings`, :func:`check_correction`),
  the sets (``audit.check_inputs`` / ``books.check_books``), the feature families and the scoring stage's
  configuration (:func:`run_config`). What it gives is a :class:`Checked`: ``audit.check_text_run`` /
  ``books.check_book_run`` make one, ``mia_core.api.inference.prepare_inference`` keeps it in its request, and
  the run takes it instead of checking again.
* **guard** (:func:`guard_stage`): the IID guard (``guards.iid_guard``), still without the model; a refusal
  ends the run there.
* **load models** (:func:`load_stage`): the target and the reference, loaded only now.
* **features** (:func:`feature_stage`): every text's (or passage's) features from one scoring stage.
* **tests** (``verdict.test_stage``) and their notes (:func:`tested_notes`).
* **per-unit p-values** and the result's table (:func:`units_frame`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from ..progress import Progress
from . import features as F
from .guards import iid_guard
from .options import SCORING_SHARE, InferenceOptions
from .significance import DEFAULT_COMBINATION, check_settings, format_p


@dataclass
class Checked:
    """What the model-free checks of a run give: the sets as the run reads them, its settings, the feature
    families, the scoring stage's configuration and the checks' notes. Nothing is loaded.

    Attributes
    ----------
    mode : str
        ``"texts"`` or ``"books"``.
    suspect, validation : list
        Texts (stripped, empty and duplicate texts dropped) or books (``mia_core.documents.Document``).
    families : list of str
        The feature attacks (``features.parse_features``).
    config : mia_core.pipeline.RunConfig
        The scoring stage's configuration (checked).
    settings : dict
        ``alpha``, ``folds``, ``n_permutations``, ``seed``, ``combination``, ``correction``, ``prefix``,
        ``iid_check`` (books: also ``passage_words``, ``max_passages`` and ``passages_per_book``, the count every
        book is read as).
    notes : list of str
        The checks' notes, in order (the run's notes start with them).
    population : list of str
        Texts: known non-members (ReCaLL's prefix), stripped; empty for books.
    cut : list of list of str
        Books: each book's passages (every book the same number); empty for texts.
    """

    mode: str
    suspect: list
    validation: list
    families: list
    config: object
    settings: dict
    notes: list = field(default_factory=list)
    population: list = field(default_factory=list)
    cut: list = field(default_factory=list)

    @property
    def n_units(self) -> int:
        """Suspect plus validation units (texts or books)."""
        return len(self.suspect) + len(self.validation)


def check_test_settings(*, alpha, folds, n_permutations, combination=DEFAULT_COMBINATION) -> None:
    """The test's settings (one line each, naming the option), before anything is read or loaded: the domains of
    :class:`~mia_core.dataset_inference.options.InferenceOptions`.

    Parameters
    ----------
    alpha : float
        The significance level, in (0, 0.5].
    folds, n_permutations, combination
        As ``significance.check_settings`` checks them.

    Raises
    ------
    SettingsError
        A setting the test cannot use.
    """
    InferenceOptions.check_some(alpha=alpha)
    check_settings(folds=folds, n_permutations=n_permutations, combination=combination)


def folds_used(folds: int, n_units: int, unit: str, notes: list) -> int:
    """The folds the test really uses: at most one unit (text or book) per fold, as the permutation test cuts
    them (``significance.permutation_test``); a note says so when fewer than asked, so that the report states
    what ran.

    Parameters
    ----------
    folds : int
        The folds asked for.
    n_units : int
        Suspect plus validation units.
    unit : str
        ``"texts"`` or ``"books"``.
    notes : list
        Receives the note.

    Returns
    -------
    int
    """
    k = int(min(folds, n_units))
    if k < folds:
        notes.append(f"{folds} folds were asked for, but there are {n_units} {unit}: {k} folds (one {unit[:-1]} "
                     "each) are used")
    return k


def check_correction(correction: str) -> None:
    """``SettingsError`` (one line) for a correction across the units' p-values that is not ``bh`` or ``holm``.

    Parameters
    ----------
    correction : str
        The correction asked for (``verdict.CORRECTIONS``).
    """
    InferenceOptions.check_some(correction=correction)


def run_config(families: list[str], *, params: dict | None, prefix: str, use_cache: bool):
    """The scoring stage's checked configuration: the feature attacks, their parameters, the prefix, the cache.

    Parameters
    ----------
    families : list of str
        The feature attacks.
    params : dict, optional
        ``{attack: {name: value}}``.
    prefix : str
        What goes in front of every text (``mia_core.stats.StatsSettings``).
    use_cache : bool
        Read and write the statistics cache.

    Returns
    -------
    mia_core.pipeline.RunConfig
    """
    from ..pipeline import RunConfig, check_config
    from ..stats import StatsSettings

    return check_config(RunConfig(attacks=families, params=dict(params or {}), stats=StatsSettings(prefix=prefix),
                                  use_cache=use_cache, n_bootstrap=0, blind=False))


def guard_stage(suspect: list[str], validation: list[str], *, seed: int, iid_check: bool, summary: dict,
                notes: list, progress: Progress, adjust_length: bool = True) -> bool:
    """The IID guard (``guards.iid_guard``) and the length check (``guards.length_check``) into ``summary`` and
    ``notes``.

    Parameters
    ----------
    suspect, validation : list of str
        The two sets' texts (books: each book's passages joined).
    seed : int
        The guard's seed.
    iid_check : bool
        False skips the guard and the length check (recorded in ``notes``).
    summary, notes : dict, list
        Updated in place.
    progress : callable
        ``progress(message, fraction)``.
    adjust_length : bool
        The features will be adjusted for length: a length difference is then said, not refused; without the
        adjustment, lengths that differ (permutation p at most ``guards.GUARD_ALPHA``) refuse the verdict.

    Returns
    -------
    bool
        False when the verdict is refused (no model pass is then made).
    """
    from .guards import GUARD_ALPHA, length_check

    if not iid_check:
        notes.append("the IID guard (blind baseline) was switched off: the p-value assumes the sets are exchangeable")
        return True
    progress("IID guard: blind baseline", 0.02)
    g = iid_guard(suspect, validation, seed=seed)
    summary.update(blind_auc=g["blind_auc"], blind_p_value=g["blind_p_value"], blind_detectable_auc=g["detectable_auc"],
                   blind_message=g["message"])
    notes += g["notes"]
    if not g["ok"]:
        summary.update(verdict="refused", verdict_reason=g["message"])
        return False
    notes.append(f"IID guard: {g['message']}")
    lc = length_check(suspect, validation, seed=seed)
    summary.update(length_auc=lc["auc"], length_p_value=lc["p_value"])
    differ = lc["p_value"] <= GUARD_ALPHA
    if differ and not adjust_length:
        summary.update(verdict="refused", verdict_reason=(
            f"the two sets differ in length ({lc['message']}), which every membership feature responds to, and the "
            "length adjustment is off: a p-value here would measure length, not training. Refused: keep the length "
            "adjustment on, or draw sets of the same lengths"))
        return False
    notes.append(f"IID guard, {lc['message']}: " + (
        ("they differ; every feature is adjusted for length" if differ else "no clear difference; every feature is "
         "adjusted for length all the same") if adjust_length else "no clear difference (features not adjusted for "
                                                                    "length, as asked)"))
    return True


def load_stage(target, reference, load) -> tuple:
    """The target and the reference, loaded by ``load(spec)`` once every model-free check has passed.

    Parameters
    ----------
    target, reference : LoadedModel or str or None
        Loaded models or specs; ``reference`` None: no reference.
    load : callable, optional
        ``load(spec) -> LoadedModel``; None: the models are used as given.

    Returns
    -------
    tuple
        ``(target, reference)``.
    """
    if load is not None:
        target = load(target)
        reference = load(reference) if reference is not None else None
    return target, reference


def control_stage(target, reference, c: Checked, load, summary: dict, notes: list) -> tuple:
    """The negative control of the run (``control.control_spec``), loaded when it is not the reference, and the
    scoring configuration and feature attacks that give its pass (the ``ref`` feature added: its pass is the
    control's; and ``wbc``, which compares the target with the control window by window, when they share a
    tokenizer). Returns ``(control or None, cfg, attacks)``; the summary names the control (or None) and the notes
    say which it is, or why there is none.

    Raises
    ------
    ModelError
        The control could not be loaded (one line, naming ``control``).
    SettingsError
        A named control that is the target itself (the same weights).
    """
    from ..errors import ModelError, SettingsError
    from .control import control_spec, is_named

    choice = c.settings.get("control", "auto")
    spec, note = control_spec(target, reference, choice)
    summary["control_model"] = None
    if spec is None:
        notes.append(note)
        return None, c.config, feature_attacks(c.families)
    ctl = spec
    if isinstance(spec, str) and not (reference is not None and spec is reference):
        try:
            ctl = load(spec) if load is not None else _load_causal(spec)
        except ModelError as e:
            raise ModelError(f"the negative control ({spec}) could not be loaded: {e}; give a reference model, or "
                             "run without a control ({control} none)", options=(*e.options, "control")) from None
    if getattr(ctl, "identity", None) == getattr(target, "identity", None) or (
            is_named(choice) and _weights(ctl) is not None and _weights(ctl) == _weights(target)):
        if is_named(choice):
            raise SettingsError(f"{{control}} {choice} is the target itself (the same weights), which cannot "
                                "control for itself: name a model that never saw either set", options=("control",))
        notes.append("no negative control: the control would be the target itself")
        return None, c.config, feature_attacks(c.families)
    notes.append(note if model_name(ctl).lower() in note.lower() else f"{note} ({model_name(ctl)})")
    families = list(c.families) + ([] if "ref" in c.families else ["ref"])
    if not hasattr(ctl, "same_tokenizer") or target.same_tokenizer(ctl):
        families += [] if "wbc" in families else ["wbc"]  # control.PAIRED: target against control, per window
    else:
        notes.append("WBC (window-based comparison) left out: the control's tokenizer differs from the target's, "
                     "so their token losses cannot be compared window by window")
    cfg = run_config(families, params=c.config.params, prefix=c.config.stats.prefix, use_cache=c.config.use_cache)
    summary["control_model"] = model_name(ctl)
    return ctl, cfg, feature_attacks(families)


def _weights(lm) -> str | None:
    """The weights' fingerprint a loaded model's identity ends with (``...|w:FINGERPRINT``; None: none recorded):
    two folders holding the same weights have the same."""
    ident = getattr(lm, "identity", None)
    if not isinstance(ident, str) or "|w:" not in ident:
        return None
    w = ident.rsplit("|w:", 1)[1]
    return w if w and w != "None" else None


def _load_causal(spec):
    from ..models import load_causal_lm

    return load_causal_lm(spec)


def control_refusal(fs: Features, y: np.ndarray, st: dict, summary: dict, notes: list, unit: str = "texts") -> bool:
    """The control's own check (``control.control_check``) into ``summary`` and ``notes``; True when it refuses
    the verdict (the control alone scores the suspect units as more member-like)."""
    from .control import control_check

    if fs.control_X is None:
        return False
    ok = fs.ok
    cc = control_check(fs.control_X[ok], y[ok], folds=st["folds"], seed=st["seed"], combination=st["combination"],
                       unit=unit, names=fs.control_names)
    summary.update(control_p_value=cc["p_value"], control_message=cc["message"])
    if cc["refused"]:
        summary.update(verdict="refused", verdict_reason=cc["message"])
        return True
    notes.append(cc["message"])
    return False


def rests_on(summary: dict, fs: Features, adjust_length: bool) -> None:
    """The verdict's sentence completed with what it rests on: the control and its assumption, the length
    adjustment (``summary["assumptions"]`` lists them for the API and the report)."""
    from .control import ASSUMPTION

    said = []
    if summary.get("control_model"):
        said.append(f"It reads what the target sees beyond the negative control ({summary['control_model']}): "
                    f"{ASSUMPTION}.")
    if adjust_length:
        said.append("Every feature was adjusted for text length (a pooled, label-free fit on the texts' lengths in "
                    "tokens, words and characters).")
    summary["assumptions"] = said
    if said and summary.get("verdict") in ("used", "not_shown"):
        summary["verdict_reason"] = f"{summary['verdict_reason']} {' '.join(said)}"


def model_name(m) -> str:
    """How the result names a model: a loaded model's name, else its spec."""
    return str(getattr(m, "name", None) or m)


@dataclass
class Features:
    """What the features stage gives the tests.

    Attributes
    ----------
    names : list of str
        The features the test reads (calibrated against the control when there is one).
    X : numpy.ndarray
        ``(units, features)``; length-adjusted where the run adjusts (rows of ``ok`` only).
    ok : numpy.ndarray
        The units with every feature (and every control feature).
    n_tokens : numpy.ndarray
        Each unit's token count (the target's tokenizer).
    control_names : list of str
        The control's own features (empty: no control).
    control_X : numpy.ndarray or None
        Their matrix, adjusted as ``X``.
    length_r2 : dict
        ``{feature: share of its variance length explained}`` (empty: not adjusted).
    """

    names: list
    X: np.ndarray
    ok: np.ndarray
    n_tokens: np.ndarray
    control_names: list = field(default_factory=list)
    control_X: np.ndarray | None = None
    length_r2: dict = field(default_factory=dict)


def feature_stage(texts: list[str], y: np.ndarray, ids: list[str], target, *, reference, population: list[str], cfg,
                  attacks: list, notes: list, progress: Progress, control: bool = False,
                  adjust_length: bool = False) -> Features:
    """The features of every text from one scoring stage (``features``), calibrated against the negative control
    and adjusted for length where asked (``control``).

    Parameters
    ----------
    texts, y, ids
        The scored texts (suspect first), their sets (1: suspect) and ids.
    target, reference : LoadedModel
        The models (``reference`` None: none; with ``control``, the negative control, whose pass is the run's
        reference pass).
    population : list of str
        Known non-members (ReCaLL's prefix); empty: none.
    cfg : mia_core.pipeline.RunConfig
        The scoring stage's configuration (:func:`run_config`).
    attacks : list
        The feature attacks' registry entries.
    notes : list
        The scoring stage's and the features' notes are appended.
    progress : callable
        ``progress(message, fraction)``; the scoring stage takes :data:`SCORING_SHARE` (0.05 to 0.90) of the run.
    control : bool
        ``reference`` is the negative control: the test reads every feature target minus control
        (``control.calibrate``) and the control's own features are kept for its check.
    adjust_length : bool
        Every feature (and control feature) replaced by its residual from the pooled, label-free fit on the texts'
        lengths in tokens, words and characters (``control.length_adjust``).

    Returns
    -------
    Features
    """
    from ..data import Dataset
    from ..pipeline import score_stage
    from .control import calibrate, control_columns, length_adjust, text_lengths

    lo, hi = SCORING_SHARE
    pop_ds = (Dataset(texts=population, labels=[0] * len(population), ids=[f"p{i + 1:04d}" for i in range(len(population))])
              if population else None)
    st = score_stage(texts, target, reference=reference, cfg=cfg, attacks=attacks, population=pop_ds,
                     progress=lambda m, f: progress(m, lo + (hi - lo) * f),
                     dataset=Dataset(texts=texts, labels=y, ids=ids, report=[]), train_mask=np.zeros(len(y), bool))
    notes += st.report
    cols = F.feature_columns(st.inputs, attacks, cfg.params, st.scores)
    n_tokens = np.array([s.n_tokens for s in st.inputs.target])
    cnames, cX, cok = [], None, np.ones(len(texts), bool)
    if control:
        ccols = control_columns(st.inputs, attacks, cfg.params)
        cols = calibrate(cols, ccols, notes)
        cnames, cX, cok, cnotes = F.clean(ccols)
        notes += [f"control: {n}" for n in cnotes]
    names, X, ok, fnotes = F.clean(cols)
    notes += fnotes
    ok = ok & cok
    r2 = {}
    if adjust_length and ok.sum() > 3:
        X = X.copy()
        lengths = text_lengths(texts, n_tokens)[ok]
        X[ok], shares = length_adjust(X[ok], lengths)
        r2 = dict(zip(names, np.round(shares, 4).tolist()))
        if cX is not None:
            cX = cX.copy()
            cX[ok], _ = length_adjust(cX[ok], lengths)
    return Features(names, X, ok, n_tokens, cnames, cX, r2)


def feature_attacks(families: Sequence[str]) -> list:
    """The registry entries of the feature attacks ``families``."""
    from ..attacks import REGISTRY

    return [REGISTRY[n] for n in families]


def tested_notes(tested: dict, alpha: float, notes: list, *, paper: bool = True) -> None:
    """The tests' notes (``verdict.test_stage``'s result): the per-unit floor, a self-check at or below alpha and
    (texts, ``paper``) a small split t-test beside a primary test that is not.

    Parameters
    ----------
    tested : dict
        ``verdict.test_stage``'s result.
    alpha : float
        The significance level.
    notes : list
        Appended to.
    paper : bool
        The self-check and split t-test notes (texts); books only note the per-unit floor.
    """
    s = tested["summary"]
    if tested["unit_note"]:
        notes.append(tested["unit_note"])
    if not paper:
        return
    if s["self_check_p_value"] <= alpha:
        notes.append(f"the self-check (two random halves of the validation set) gave "
                     f"{format_p(s['self_check_p_value'])} <= alpha: this happens with probability alpha by chance "
                     "(the halves are exchangeable by construction; it checks the code path, not the data)")
    if s["p_value_ttest"] is not None and s["p_value_ttest"] <= alpha and s["verdict"] != "used":
        notes.append("the paper's split t-test is small but the primary test is not: the paper's classifier learns "
                     "the direction on half A, so it also reacts to a suspect set that is *less* member-like")


def units_frame(df: pd.DataFrame, names, X, ok, tested: dict) -> pd.DataFrame:
    """The result's table: one row per unit with its features, scores and (suspect units) p-values.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per unit: its id and ``set``; columns are added to it.
    names, X, ok
        Feature names, the features matrix, the mask of units tested.
    tested : dict
        ``verdict.test_stage``'s result.

    Returns
    -------
    pandas.DataFrame
        ``df`` with the features, the primary's combined ``score``, the ``label_free_score``, the conformal
        ``p_value``, its ``p_adjusted`` value, ``flagged`` and ``excluded``.
    """
    y = (df["set"] == "suspect").to_numpy()
    for n, c in zip(names, X.T):
        df[n] = c
    cols = {k: np.full(len(y), np.nan) for k in ("score", "label_free_score", "p_value", "p_adjusted")}
    cols["score"][ok] = tested["perm"]["scores"]
    u = tested["units"]
    cols["label_free_score"][ok] = u["score"]
    sus = np.flatnonzero(ok & y)
    cols["p_value"][sus], cols["p_adjusted"][sus] = u["p_value"], u["p_adjusted"]
    for k, v in cols.items():
        df[k] = v
    df["flagged"] = df["p_adjusted"] <= tested["summary"]["alpha"]
    df["excluded"] = ~ok
    return df
