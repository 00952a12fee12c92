"""``mia shift``: is there a member/non-member shift that needs no model?

Runs the shift check through the API (:mod:`mia_core.api.shift`: :func:`~mia_core.api.shift.check_shift`) on two text sets: the blind baseline (a text-only
classifier, never the model) with its out-of-fold AUC [CI] and TPR at 1 % / 5 % FPR, the
overlap statistics and the verdict; ``--match-lengths`` adds the blind baseline after
matching word-count distributions. ``--out DIR`` writes ``DIR/shift.json``.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import DataError
from ..api.shift import ShiftOptions, check_shift, read_shift_sets, shift_summary
from ..runs.outputs import check_output_dir, staged_output
from .common import ProgressBar, add_data_args, add_options, add_output_args, add_progress_args, print_notes


def register(subparsers) -> None:
    """Add ``mia shift`` and its options to the command parser."""
    p = subparsers.add_parser(
        "shift",
        help="check members vs non-members for a distribution shift (blind baseline, no model)",
        description="Blind baseline (TF-IDF + logistic regression on the texts alone, never the model), "
                    "n-gram/length/date/duplicate statistics and a verdict on whether attack AUCs on "
                    "these sets can measure membership.",
    )
    add_data_args(p, mode=False, group_column=None)
    b = p.add_argument_group("blind baseline")
    # the check's declared options (mia_core.api.shift.ShiftOptions): their defaults, domains and help
    add_options(b, ShiftOptions, {"folds": "--folds", "year_cutoff": "--year-cutoff"})
    b.add_argument("--match-lengths", action="store_true", help=ShiftOptions.help("match_lengths"))
    add_output_args(p, out_help="folder for shift.json", cache=None, seed_help="seed of the folds and the bootstrap")
    add_progress_args(p)
    p.set_defaults(func=run)


def out_of_memory_message(n_members: int, n_nonmembers: int) -> str:
    """The ``error:`` line when the report runs out of memory. It names no flag: ``shift`` runs no
    model (no ``--batch-tokens``, ``--context`` or quantisation), and none of its own flags lowers
    the memory it needs: that grows with the texts (the TF-IDF n-grams of every text, the word
    n-grams and shingles of the overlap statistics)."""
    return (f"out of memory computing the shift report on {n_members:,} members and {n_nonmembers:,} non-members "
            "(the TF-IDF n-grams and word shingles of all texts must fit in memory): give fewer or shorter texts.")


def run(args) -> int:
    """``mia shift``: the two sets read and the report made through the API (:mod:`mia_core.api.shift`), printed,
    and written to ``--out`` in one rename."""
    ShiftOptions.check(folds=args.folds, n_bootstrap=args.bootstrap, seed=args.seed)  # before the files are read
    if args.out:
        check_output_dir(args.out, overwrite=args.overwrite)
    ds = read_shift_sets(args.members, args.nonmembers, labelled=args.labelled, text_column=args.text_column,
                         label_column=args.label_column)
    print_notes(ds.report)
    with ProgressBar(disable=args.quiet) as bar:
        rep = check_shift(ds.members(), ds.nonmembers(), folds=args.folds, seed=args.seed,
                          match_lengths=args.match_lengths, n_bootstrap=args.bootstrap,
                          year_cutoff=args.year_cutoff, progress=bar)
    if rep is None:
        raise DataError(out_of_memory_message(ds.n_members, ds.n_nonmembers))
    print(shift_summary(rep))
    if args.out:
        # written into a temporary sibling of --out, published in one rename at the end
        with staged_output(args.out, overwrite=args.overwrite) as tmp:
            try:
                (tmp / "shift.json").write_text(json.dumps(rep, indent=2), encoding="utf-8")
            except OSError as e:
                raise DataError(f"cannot write {args.out}/shift.json: {e.strerror or e}") from None
        print(f"wrote {Path(args.out) / 'shift.json'}")
    return 0
