"""``mia shift``: is there a member/non-member shift that needs no model?

Runs :func:`mia_core.metrics.blind_baseline.shift_report` on two text sets: the blind baseline (a text-only
classifier, never the model) with its out-of-fold AUC [CI] and TPR at 1 % / 5 % FPR, the
overlap statistics and the verdict; ``--match-lengths`` adds the blind baseline after
matching word-count distributions. ``--out DIR`` writes ``DIR/shift.json``.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import DataError, SettingsError
from ..formatting import fmt_auc, fmt_rate_ci
from ..runs.outputs import check_output_dir, staged_output
from .common import (ProgressBar, add_data_args, add_output_args, add_progress_args, int_at_least, non_negative_int,
                     print_notes)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "shift",
        help="check members vs non-members for a distribution shift (blind baseline, no model)",
        description="Blind baseline (TF-IDF + logistic regression on the texts alone, never the model), "
                    "n-gram/length/date/duplicate statistics and a verdict on whether attack AUCs on "
                    "these sets can measure membership.",
    )
    add_data_args(p, mode=False, group_column=None)
    b = p.add_argument_group("blind baseline")
    b.add_argument("--folds", type=int_at_least(2), default=5, help="cross-validation folds (default 5)")
    b.add_argument("--year-cutoff", type=non_negative_int, default=2020,
                   help="report the share of texts mentioning a year >= this (default 2020)")
    b.add_argument("--match-lengths", action="store_true",
                   help="also run the blind baseline after matching word-count distributions")
    add_output_args(p, out_help="folder for shift.json", cache=None, seed_help="seed of the folds and the bootstrap")
    add_progress_args(p)
    p.set_defaults(func=run)


def _fmt_ci(m: dict) -> str:
    return fmt_auc(m.get("auc"), m.get("auc_ci"))


def _fmt_tpr(m: dict, key: str) -> str:
    return fmt_rate_ci((m.get("tpr_at_fpr") or {}).get(key), (m.get("tpr_at_fpr_ci") or {}).get(key))


def _num(v, fmt="{:.1f}") -> str:
    return "-" if v is None else fmt.format(v)


def format_report(rep: dict) -> str:
    """The human-readable summary printed by the CLI."""
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


def out_of_memory_message(n_members: int, n_nonmembers: int) -> str:
    """The ``error:`` line when the report runs out of memory. It names no flag: ``shift`` runs no
    model (no ``--batch-tokens``, ``--context`` or quantisation), and none of its own flags lowers
    the memory it needs: that grows with the texts (the TF-IDF n-grams of every text, the word
    n-grams and shingles of the overlap statistics)."""
    return (f"out of memory computing the shift report on {n_members:,} members and {n_nonmembers:,} non-members "
            "(the TF-IDF n-grams and word shingles of all texts must fit in memory): give fewer or shorter texts.")


def run(args) -> int:
    from ..data import load_dataset
    from ..metrics.blind_baseline import shift_report

    if args.folds < 2:
        raise SettingsError(f"--folds must be at least 2 (got {args.folds}).")
    if args.bootstrap < 0:
        raise SettingsError(f"--bootstrap must be >= 0 (got {args.bootstrap}).")
    if args.out:
        check_output_dir(args.out, overwrite=args.overwrite)
    if args.labelled:
        if args.members or args.nonmembers:
            raise DataError("give either --labelled or --members and --nonmembers, not both.")
        ds = load_dataset(labelled=args.labelled, label_column=args.label_column, text_column=args.text_column)
    else:
        if not args.members or not args.nonmembers:
            raise DataError("give --members and --nonmembers (or one --labelled table).")
        ds = load_dataset(members=args.members, nonmembers=args.nonmembers, text_column=args.text_column)
    print_notes(ds.report)
    rep = None
    with ProgressBar(disable=args.quiet) as bar:
        try:
            rep = shift_report(ds.members(), ds.nonmembers(), folds=args.folds, seed=args.seed,
                               match=args.match_lengths, n_bootstrap=args.bootstrap,
                               year_cutoff=args.year_cutoff, progress=bar)
        except MemoryError:  # raised below, once the failed computation's memory is released
            pass
    if rep is None:
        raise DataError(out_of_memory_message(ds.n_members, ds.n_nonmembers))
    print(format_report(rep))
    if args.out:
        # written into a temporary sibling of --out, published in one rename at the end
        with staged_output(args.out, overwrite=args.overwrite) as tmp:
            try:
                (tmp / "shift.json").write_text(json.dumps(rep, indent=2), encoding="utf-8")
            except OSError as e:
                raise DataError(f"cannot write {args.out}/shift.json: {e.strerror or e}") from None
        print(f"wrote {Path(args.out) / 'shift.json'}")
    return 0
