"""The distribution-shift check's front door (``mia shift``): is there a member/non-member shift that needs no
model? :func:`read_shift_sets` reads the two sets as ``mia shift`` reads them, :func:`check_shift` runs the
blind baseline, the overlap statistics and the verdict (:func:`mia_core.metrics.blind_baseline.shift_report`),
and :func:`shift_summary` words the report as the command prints it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import DataError
from ..formatting import fmt_auc, fmt_rate_ci
from ..options import BOOTSTRAP, SEED, Options, flag, option, whole

DEFAULT_YEAR_CUTOFF = 2020  # mia_core.data.overlap's (tests/test_options.py holds them equal)


@dataclass(frozen=True)
class ShiftOptions(Options):
    """The settings of the distribution-shift check (the blind baseline of Das et al. 2024 and the overlap
    statistics): :func:`check_shift` checks them with :meth:`~mia_core.options.Options.check`, ``mia shift``'s flags
    are made from them (:func:`mia_core.cli.common.add_options`)."""

    folds: int = option(5, whole(2), "the blind baseline's cross-validation folds")
    seed: int = option(0, SEED, "seed of the folds and the bootstrap")
    match_lengths: bool = option(False, flag(), "also run the blind baseline after matching the word-count "
                                                "distributions")
    n_bootstrap: int = option(1000, BOOTSTRAP, "bootstrap resamples of the AUC's and TPRs' confidence intervals")
    year_cutoff: int = option(DEFAULT_YEAR_CUTOFF, whole(0), "report the share of texts mentioning a year at or after "
                                                            "this one")


def read_shift_sets(members=None, nonmembers=None, *, labelled=None, text_column: str | None = None,
                    label_column: str = "label"):
    """The members and non-members of a shift check: two sets of files, or one labelled table.

    Parameters
    ----------
    members, nonmembers : list of paths, optional
        The two sets' files (``mia_core.data.load_dataset``).
    labelled : path, optional
        Instead: one labelled table with ``label_column`` (1 = member) and ``text_column``.
    text_column, label_column : str
        The table's columns (the text column found by itself when None).

    Returns
    -------
    mia_core.data.Dataset

    Raises
    ------
    DataError
        Both forms given, or one set missing.
    """
    from ..data import load_dataset

    if labelled:
        if members or nonmembers:
            raise DataError("give either {labelled} or {members} and {nonmembers}, not both.",
                            options=("labelled", "members", "nonmembers"))
        return load_dataset(labelled=labelled, label_column=label_column, text_column=text_column)
    if not members or not nonmembers:
        raise DataError("give {members} and {nonmembers} (or one {labelled} table).",
                        options=("members", "nonmembers", "labelled"))
    return load_dataset(members=members, nonmembers=nonmembers, text_column=text_column)


def check_shift(member_texts, nonmember_texts, *, folds: int = 5, seed: int = 0, match_lengths: bool = False,
                n_bootstrap: int = 1000, year_cutoff: int = 2020, progress=None) -> dict | None:
    """The shift report of two text sets: the blind baseline (a text-only classifier that never queries the
    model; Das et al. 2024) with its out-of-fold AUC [CI] and TPR at 1 % / 5 % FPR, the overlap statistics and
    the verdict.

    Parameters
    ----------
    member_texts, nonmember_texts : list of str
        The two sets.
    folds, seed, n_bootstrap
        The blind baseline's cross-validation folds (at least 2), seed, and bootstrap resamples (0: none).
    match_lengths : bool
        Also run the blind baseline after matching the word-count distributions.
    year_cutoff : int
        The date statistics' cutoff (share of texts mentioning a year at or after it).
    progress : callable, optional
        ``progress(message, fraction)`` (:mod:`mia_core.progress`).

    Returns
    -------
    dict or None
        :func:`mia_core.metrics.blind_baseline.shift_report`'s report; None when the computation ran out of
        memory (raised by the caller once that memory is released).

    Raises
    ------
    SettingsError
        A setting outside its declared domain (:class:`ShiftOptions`: fewer than 2 folds, a negative number of
        resamples...), one line naming it, before any work.
    """
    from ..metrics.blind_baseline import shift_report

    o = ShiftOptions.check(folds=folds, seed=seed, match_lengths=match_lengths, n_bootstrap=n_bootstrap,
                           year_cutoff=year_cutoff)
    try:
        return shift_report(list(member_texts), list(nonmember_texts), folds=o.folds, seed=o.seed,
                            match=o.match_lengths, n_bootstrap=o.n_bootstrap, year_cutoff=o.year_cutoff,
                            progress=progress)
    except MemoryError:  # the caller raises its message once the failed computation's memory is released
        return None


def _fmt_ci(m: dict) -> str:
    return fmt_auc(m.get("auc"), m.get("auc_ci"))


def _fmt_tpr(m: dict, key: str) -> str:
    return fmt_rate_ci((m.get("tpr_at_fpr") or {}).get(key), (m.get("tpr_at_fpr_ci") or {}).get(key))


def _num(v, fmt="{:.1f}") -> str:
    return "-" if v is None else fmt.format(v)


def shift_summary(rep: dict) -> str:
    """The shift report as text (what ``mia shift`` prints): the blind baseline, the overlap statistics, the
    length-matched baseline when made, the warnings and the verdict."""
    b = rep["blind"]
    o = rep["overlap"]
    lines = [
        f"Blind baseline ({b['model']})",
        f"  members {b['n_members']}, non-members {b['n_nonmembers']}",
        f"  AUC {_fmt_ci(b)}   TPR@1% FPR {_fmt_tpr(b, '0.01')}   TPR@5% FPR {_fmt_tpr(b, '0.05')}",
    ]
    tf = b.get("top_features") or {}
    if tf.get("member") or tf.get("nonmember"):
        lines.append("  member cues:     " + ", ".join(repr(f["ngram"]) for f in tf.get("member", [])[:8]))
        lines.append("  non-member cues: " + ", ".join(repr(f["ngram"]) for f in tf.get("nonmember", [])[:8]))
    lines.append("Overlap")
    for n, d in o["ngram_overlap"].items():
        frac = "-" if d["fraction"] is None else f"{100 * d['fraction']:.2f}%"
        lines.append(f"  {n}-grams of non-members found in members: {frac} "
                     f"({d['in_members']}/{d['nonmember_ngrams']}; {d['nonmember_texts_with_overlap']} texts)")
    L = o["lengths"]
    lines.append(f"  length (words) mean/median: members {_num(L['members']['mean'])}/{_num(L['members']['median'])}, "
                 f"non-members {_num(L['nonmembers']['mean'])}/{_num(L['nonmembers']['median'])}; "
                 f"KS D={_num(L['ks']['statistic'], '{:.3f}')} p={_num(L['ks']['pvalue'], '{:.2g}')}")
    D = o["dates"]
    for role in ("members", "nonmembers"):
        d = D[role]
        lines.append(f"  {role:<10} years/1k words {_num(d['years_per_1000_words'], '{:.2f}')}, "
                     f"months/1k words {_num(d['months_per_1000_words'], '{:.2f}')}, "
                     f"texts with a year >= {D['year_cutoff']}: "
                     f"{_num(None if d['share_texts_with_year_ge_cutoff'] is None else 100 * d['share_texts_with_year_ge_cutoff'])}%")
    du = o["duplicates"]
    lines.append(f"  cross-set duplicates: {du['n_exact_pairs']} exact, {du['n_near_pairs']} near "
                 f"(Jaccard of word {du['shingle_words']}-gram shingles >= {du['near_threshold']})")
    if "matched" in rep:
        m = rep["matched"]
        mb = m["blind"]
        lines.append(f"After matching lengths: members {m['n_members']}, non-members {m['n_nonmembers']}, "
                     f"KS D={m['ks']['statistic']:.3f}")
        lines.append(f"  blind AUC {_fmt_ci(mb)}   TPR@1% FPR {_fmt_tpr(mb, '0.01')}   "
                     f"TPR@5% FPR {_fmt_tpr(mb, '0.05')}   verdict: {m['verdict']['level']}")
    warnings = list(dict.fromkeys(b.get("warnings") or []))
    if warnings:
        lines.append("Warnings:")
        lines.extend(f"  - {w}" for w in warnings)
    v = rep["verdict"]
    lines.append(f"VERDICT [{v['level']}]: {v['message']}")
    return "\n".join(lines)
