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
from .options import InferenceOptions
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
                notes: list, progress: Progress) -> bool:
    """The IID guard (``guards.iid_guard``) into ``summary`` and ``notes``.

    Parameters
    ----------
    suspect, validation : list of str
        The two sets' texts (books: each book's passages joined).
    seed : int
        The guard's seed.
    iid_check : bool
        False skips the guard (recorded in ``notes``).
    summary, notes : dict, list
        Updated in place.
    progress : callable
        ``progress(message, fraction)``.

    Returns
    -------
    bool
        False when the verdict is refused (no model pass is then made).
    """
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


def model_name(m) -> str:
    """How the result names a model: a loaded model's name, else its spec."""
    return str(getattr(m, "name", None) or m)


def feature_stage(texts: list[str], y: np.ndarray, ids: list[str], target, *, reference, population: list[str], cfg,
                  attacks: list, notes: list, progress: Progress) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The features of every text from one scoring stage (``features``).

    Parameters
    ----------
    texts, y, ids
        The scored texts (suspect first), their sets (1: suspect) and ids.
    target, reference : LoadedModel
        The models (``reference`` None: none).
    population : list of str
        Known non-members (ReCaLL's prefix); empty: none.
    cfg : mia_core.pipeline.RunConfig
        The scoring stage's configuration (:func:`run_config`).
    attacks : list
        The feature attacks' registry entries.
    notes : list
        The scoring stage's and the features' notes are appended.
    progress : callable
        ``progress(message, fraction)``; the scoring stage takes 0.05 to 0.90 of the run.

    Returns
    -------
    tuple
        ``(names, X, ok)``: feature names, the features matrix, the mask of texts with every feature.
    """
    from ..data import Dataset
    from ..pipeline import score_stage

    pop_ds = (Dataset(texts=population, labels=[0] * len(population), ids=[f"p{i + 1:04d}" for i in range(len(population))])
              if population else None)
    st = score_stage(texts, target, reference=reference, cfg=cfg, attacks=attacks, population=pop_ds,
                     progress=lambda m, f: progress(m, 0.05 + 0.85 * f),
                     dataset=Dataset(texts=texts, labels=y, ids=ids, report=[]), train_mask=np.zeros(len(y), bool))
    notes += st.report
    names, X, ok, fnotes = F.clean(F.feature_columns(st.inputs, attacks, cfg.params, st.scores))
    notes += fnotes
    return names, X, ok


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
