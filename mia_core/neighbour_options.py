"""Command-line options of ``python -m mia_core run`` for the neighbour attacks and SMIA.

Hooked into ``mia_core.cli_run`` (``_EXTRA_ARGS``, ``_EXTRA_CONFIG``, ``_EXTRA_AFTER``):

* neighbour generation: ``--neighbours offline|masked-lm:MODEL|t5:MODEL``, ``--n-neighbours``,
  ``--m-words``, ``--dropout``, ``--neighbour-seed``;
* SMIA: ``--embedder``, a training set (``--train-members``/``--train-nonmembers``) or a split
  (``--split 0.5 [--split-seed]``), ``--smia-save PATH`` / ``--smia-load PATH``, ``--smia-epochs``;
* ``--modify duplicate,delete,add``: also report every attack on one-word-modified members
  (SMIA §5.2; ``mia_core.modify``), written to ``OUT/modified.json``.
"""
from __future__ import annotations

import json
import sys

from .errors import SettingsError
from .neighbours import DEFAULT_DROPOUT, DEFAULT_M, DEFAULT_N, NeighbourSettings


def add_arguments(p) -> None:
    g = p.add_argument_group("neighbours and SMIA (attacks 'neighbourhood' and 'smia')")
    g.add_argument("--neighbours", default="offline", metavar="GENERATOR",
                   help="neighbour generator: 'offline' (embedded SmolLM2 proposes words, no download), "
                        "'masked-lm:MODEL' (Mattern et al. 2023, e.g. masked-lm:roberta-base) or 't5:MODEL' (span filling)")
    g.add_argument("--n-neighbours", type=int, default=DEFAULT_N, help="neighbours per text (Mattern et al. best: 100)")
    g.add_argument("--m-words", type=int, default=DEFAULT_M, help="words replaced per neighbour (masked spans for t5)")
    g.add_argument("--dropout", type=float, default=DEFAULT_DROPOUT, help="embedding dropout of the masked-LM generator")
    g.add_argument("--neighbour-seed", type=int, default=0, help="seed of the neighbour positions and samples")
    g.add_argument("--embedder", default="minilm",
                   help="SMIA sentence embedder: 'minilm' (embedded all-MiniLM-L6-v2), a sentence-transformers id or folder")
    g.add_argument("--train-members", nargs="+", help="SMIA training members (never evaluated)")
    g.add_argument("--train-nonmembers", nargs="+", help="SMIA training non-members (never evaluated)")
    g.add_argument("--split", type=float,
                   help="train on this stratified fraction of the labelled texts and report every attack on the rest")
    g.add_argument("--split-seed", type=int, help="seed of --split (default: --seed)")
    g.add_argument("--smia-save", metavar="PATH", help="save the trained SMIA network (safetensors + JSON) to this folder")
    g.add_argument("--smia-load", metavar="PATH", help="apply a saved SMIA network instead of training one")
    g.add_argument("--smia-epochs", type=int, default=60, help="SMIA training epochs (the best validation epoch is kept)")
    g.add_argument("--modify", metavar="VARIANTS",
                   help="also evaluate on members modified by one word: comma list of duplicate, delete, add")


def _variants(spec: str | None) -> list[str]:
    from .modify import VARIANTS

    if not spec:
        return []
    out = [v.strip().lower() for v in spec.split(",") if v.strip()]
    bad = [v for v in out if v not in VARIANTS]
    if bad:
        raise SettingsError(f"--modify: unknown variant(s) {', '.join(bad)}; choose from {', '.join(VARIANTS)}")
    return out


def apply_config(args, cfg, params):
    """Fill the run configuration; returns the separate training set, if one was given."""
    nb = NeighbourSettings(generator=args.neighbours, n=args.n_neighbours, m=args.m_words, dropout=args.dropout,
                           seed=args.neighbour_seed).validate().to_dict()
    params["neighbourhood"] = dict(nb)
    params["smia"] = {**nb, "embedder": args.embedder, "save": args.smia_save, "load": args.smia_load,
                      "epochs": args.smia_epochs}
    if args.smia_save and args.smia_load:
        raise SettingsError("give either --smia-save or --smia-load, not both")
    if args.split is not None:
        cfg.split = args.split
        cfg.split_seed = args.seed if args.split_seed is None else args.split_seed
    _variants(args.modify)
    if args.train_members or args.train_nonmembers:
        if not (args.train_members and args.train_nonmembers):
            raise SettingsError("give both --train-members and --train-nonmembers")
        if args.split is not None:
            raise SettingsError("give either a training set (--train-members/--train-nonmembers) or --split, not both")
        from .data import load_dataset

        train = load_dataset(members=args.train_members, nonmembers=args.train_nonmembers, mode=args.mode,
                             text_column=args.text_column)
        for line in train.report:
            print(f"note (training set): {line}", file=sys.stderr)
        return train
    return None


def after_run(args, *, ds, target, reference, config, train, population, result, out, **_) -> None:
    """``--modify``: re-run the attacks with one-word-modified members and print the table."""
    variants = _variants(getattr(args, "modify", None))
    if not variants:
        return
    from .modify import run_modified, summary_table
    from .progress import TqdmProgress

    bar = TqdmProgress(disable=args.quiet)
    res = run_modified(ds, target, variants=variants, reference=reference, config=config, train=train,
                       population=population, seed=args.seed, progress=bar, verbatim=result.metrics)
    bar.close()
    print("\nmodified members (SMIA §5.2):")
    print(summary_table(res))
    slim = {k: ({a: {kk: vv for kk, vv in m.items() if kk != "roc"} for a, m in v.items()}
                if k not in ("modifications", "n_unmodified") else v) for k, v in res.items()}
    (out / "modified.json").write_text(json.dumps(slim, indent=2, default=float))
    print(f"wrote {out / 'modified.json'}")
