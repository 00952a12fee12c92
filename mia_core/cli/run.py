"""``mia run``: score member and non-member sets with the chosen attacks.

Baselines, the neighbourhood attack and SMIA, with the options of each:

* neighbour generation: ``--neighbours offline|masked-lm:MODEL|t5:MODEL``, ``--n-neighbours``,
  ``--m-words``, ``--dropout``, ``--neighbour-seed``;
* SMIA: ``--embedder``, a training set (``--train-members``/``--train-nonmembers``) or a split
  (``--split 0.5 [--split-seed]``), ``--smia-save PATH`` / ``--smia-load PATH``, ``--smia-epochs``;
* ``--modify duplicate,delete,add``: also report every attack on one-word-modified members
  (SMIA §5.2; ``mia_core.pipeline.modified``), written to ``OUT/modified.json``;
* ``--param ATTACK.NAME=VALUE`` sets any registered attack parameter (``--list-params`` lists
  them with their defaults); ``--score-first-token`` scores each text's first token too.

``--attacks all`` runs every attack the inputs allow (a reference model, a training set or
split, a population) and says which it skipped and why; named attacks whose inputs are missing
stop the run before any model is loaded (``mia_core.pipeline.plan_attacks``).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ..attacks import DEFAULT_ATTACKS, REGISTRY
from ..errors import SettingsError, in_words
from ..neighbours import DEFAULT_DROPOUT, DEFAULT_GENERATOR, DEFAULT_M, DEFAULT_N, NeighbourSettings
from ..api.request import RunOptions
from ..runs.outputs import check_output_dir, final_path, staged_output
from .common import (parse_params, input_path, add_engine_args, add_options, start_engine, refuse_data_with_demo,
                     ProgressBar, check_machine, add_data_args, add_model_args, add_output_args, add_progress_args,
                     fraction_closed_right, non_negative_int, positive_int, print_notes, unit_interval_open_right)
from .quiet import without_printed_notes


def register(sub) -> None:
    """Add ``mia run`` and its options to the command parser."""
    p = sub.add_parser(
        "run",
        help="run membership-inference attacks on member / non-member sets",
        description=(
            "Score member and non-member texts with the chosen attacks on a target model and report "
            "AUC and TPR at low FPR with 95% bootstrap CIs. Writes OUT/scores.csv, OUT/metrics.json, OUT/run.json. "
            "Attacks: " + ", ".join(f"{k} ({a.citation})" for k, a in REGISTRY.items())
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    d = add_data_args(
        p, demo="use the bundled demo: members, non-members, fine-tuned demo target, base SmolLM2 as reference",
        population="population set (non-members disjoint from the evaluated ones) to fit a threshold at --alpha FPR")
    add_options(d, RunOptions, {"alpha": "--alpha"}, say_default=False)  # the run's declared options (RunOptions)
    add_model_args(
        p, model_default="smollm2",
        model_help="target: 'smollm2' (embedded), hub id, local folder, .gguf file or a make-target folder",
        reference_help="reference model for the 'ref' attack (same forms as --model); default for a fine-tuned target: its base")
    a = p.add_argument_group("attacks")
    a.add_argument("--attacks", default=None,
                   help=f"comma list or 'all' ({', '.join(REGISTRY)}); default: {','.join(DEFAULT_ATTACKS)}, plus ref and wbc "
                        "when there is a reference model (--reference, a fine-tuned target's base, the demo's)")
    a.add_argument("--k", type=fraction_closed_right, default=0.2, help="fraction k of lowest-scoring tokens for Min-K%% and Min-K%%++")
    add_options(a, RunOptions, {"context": "--context", "batch_tokens": "--batch-tokens"}, say_default=False)
    a.add_argument("--prefix", choices=("auto", "always", "none"), default="auto",
                   help="what goes in front of each text: auto = what the model saw in training (a make-target "
                        "folder's training prefix; else what the tokenizer adds itself: a Llama-style BOS, and then "
                        "every text token is scored, or nothing for GPT-2-style tokenizers, and then tokens 2..n, as "
                        "MIMIR); always = a BOS/EOS token before every text (whole-string NLL, e.g. to compare "
                        "models with different tokenizers per byte; the first token is then not scored unless "
                        "--score-first-token); none = nothing")
    a.add_argument("--no-prefix", action="store_true", help="the same as --prefix none (earlier versions' flag)")
    a.add_argument("--score-first-token", action="store_true", default=None,
                   help="also score each text's first token when it has a prediction (the default scores it only "
                        "when the prefix is the model's own: --prefix auto)")
    a.add_argument("--param", action="append", default=[], metavar="ATTACK.NAME=VALUE",
                   help="set any registered parameter of an attack, e.g. --param min_k.k=0.1 --param ref.form=ratio "
                        "(repeatable; overrides the dedicated flags; the parameters and defaults are listed by --list-params)")
    a.add_argument("--list-params", action="store_true", help="print every attack with what it needs and costs, its parameters and "
                                                                  "their defaults, and exit")
    g = p.add_argument_group("neighbours and SMIA (attacks 'neighbourhood' and 'smia')")
    g.add_argument("--neighbours", default=DEFAULT_GENERATOR, metavar="GENERATOR",
                   help="neighbour generator: 'masked-lm:embedded' (default: the embedded independent masked LM, "
                        "MiniLM + a head trained on public-domain books, no download), 'masked-lm:MODEL' (Mattern et al. "
                        "2023, e.g. masked-lm:roberta-base), 't5:MODEL' (span filling) or 'offline' (the embedded "
                        "SmolLM2 proposes words: it shares weights with SmolLM2-based targets)")
    g.add_argument("--n-neighbours", type=positive_int, default=DEFAULT_N, help="neighbours per text (Mattern et al. best: 100)")
    g.add_argument("--m-words", type=positive_int, default=DEFAULT_M, help="words replaced per neighbour (masked spans for t5)")
    g.add_argument("--dropout", type=unit_interval_open_right, default=DEFAULT_DROPOUT, help="embedding dropout of the masked-LM generator")
    g.add_argument("--neighbour-seed", type=non_negative_int, default=0, help="seed of the neighbour positions and samples")
    g.add_argument("--embedder", default="minilm",
                   help="SMIA sentence embedder: 'minilm' (embedded all-MiniLM-L6-v2), a sentence-transformers id or folder")
    g.add_argument("--train-members", nargs="+", type=input_path, help="SMIA training members (never evaluated)")
    g.add_argument("--train-nonmembers", nargs="+", type=input_path, help="SMIA training non-members (never evaluated)")
    add_options(g, RunOptions, {"split": "--split", "split_seed": "--split-seed"}, say_default=False)
    g.add_argument("--smia-save", metavar="PATH", help="save the trained SMIA network (safetensors + JSON) to this folder")
    g.add_argument("--smia-load", metavar="PATH", help="apply a saved SMIA network instead of training one")
    g.add_argument("--smia-preset", choices=("project", "paper"), default="project",
                   help="SMIA training recipe: project (standardised inputs, lr 1e-3, 60 epochs, batches of 64 pairs) or "
                        "paper (Mozaffari & Marathe App. D.4: raw inputs, lr 5e-6, 20 epochs, batches of 4 texts x all "
                        "their neighbours); every setting can be overridden with --param smia.NAME=VALUE")
    g.add_argument("--smia-epochs", type=positive_int, default=None,
                   help="SMIA training epochs (default: the preset's; the best validation epoch is kept)")
    g.add_argument("--modify", metavar="VARIANTS",
                   help="also evaluate on members modified by one word: comma list of duplicate, delete, add")
    add_engine_args(p)
    o = add_output_args(p, out_default="mia_run")
    o.add_argument("--no-blind", action="store_true", help="skip the model-free blind baseline (distribution-shift check)")
    add_progress_args(p)
    p.set_defaults(func=cmd_run)


# ----------------------------------------------------------------------------- inputs
def _load_inputs(args):
    from ..data import load_dataset

    population = None
    if args.demo:
        from ..targets.demo import demo_paths

        paths = demo_paths()
        refuse_data_with_demo(args)
        ds = load_dataset(members=paths["members"], nonmembers=paths["nonmembers"], mode="lines")
        if args.model == "smollm2":
            args.model = str(paths["target"])
        if args.reference is None:
            args.reference = paths.get("reference", "smollm2")
        if args.population is None and paths.get("population"):
            population = _population(paths["population"], "lines")
    else:
        if not (args.labelled or (args.members and args.nonmembers)):
            raise SettingsError("give --members and --nonmembers, or --labelled, or --demo")
        ds = load_dataset(
            members=args.members, nonmembers=args.nonmembers, labelled=args.labelled, mode=args.mode,
            text_column=args.text_column, label_column=args.label_column, group_column=args.group_column,
        )
    if args.population:
        population = _population(args.population, args.mode, args.text_column)
    return ds, population


def _population(path, mode, text_column=None):
    from ..data import read_population

    return read_population(path, mode=mode, text_column=text_column, dedupe=False, as_dataset=True)


def _neighbour_params(args, params) -> None:
    """The neighbour and SMIA flags into ``params`` (``neighbourhood`` and ``smia``), checked."""
    from ..attacks.smia import DOMAINS as SMIA_DOMAINS, check_saved

    nb = NeighbourSettings(generator=args.neighbours, n=args.n_neighbours, m=args.m_words, dropout=args.dropout,
                           seed=args.neighbour_seed).validate().to_dict()
    if args.smia_save and args.smia_load:
        raise SettingsError("give either --smia-save or --smia-load, not both")
    # the folders SMIA writes to / reads from, checked now rather than after training (the same domains
    # as --param smia.save / smia.load)
    save = SMIA_DOMAINS["save"].check(args.smia_save, "--smia-save")
    load = SMIA_DOMAINS["load"].check(args.smia_load, "--smia-load")
    if load:
        check_saved(load, "--smia-load")
    params["neighbourhood"] = dict(nb)
    params["smia"] = {**nb, "embedder": args.embedder, "save": save, "load": load,
                      "epochs": args.smia_epochs, "preset": args.smia_preset}


def _training_set(args):
    """SMIA's separate training set (``--train-members`` / ``--train-nonmembers``), or None."""
    if not (args.train_members or args.train_nonmembers):
        return None
    if not (args.train_members and args.train_nonmembers):
        raise SettingsError("give both --train-members and --train-nonmembers")
    if args.split is not None:
        raise SettingsError("give either a training set (--train-members/--train-nonmembers) or --split, not both")
    from ..data import load_dataset

    train = load_dataset(members=args.train_members, nonmembers=args.train_nonmembers, mode=args.mode,
                         text_column=args.text_column)
    print_notes(train.report, "note (training set)")
    return train


# ----------------------------------------------------------------------------- the command
def list_params() -> str:
    """Every attack, with what it needs and costs, and its parameters with their defaults and domains
    (``mia run --list-params``)."""
    from ..attacks.base import needs_line

    lines = []
    for name, a in REGISTRY.items():
        if not a.params:
            lines.append(f"{name:<14} (no parameters) {needs_line(a)}")
            continue
        lines.append(f"{name:<14} {needs_line(a)}")
        for k, v in a.params.items():
            d = a.domains[k]
            lines.append(f"  {k}={v!r}".ljust(26) + f" {d.describe()}" + (f"  ({d.note})" if d.note else ""))
    return "\n".join(lines)


def _params(args) -> dict:
    """Every attack parameter the flags set: ``--k``, the neighbour and SMIA flags, then ``--param`` items."""
    params = {"min_k": {"k": args.k}, "min_k_pp": {"k": args.k}}
    _neighbour_params(args, params)
    return parse_params(args.param, params)


def _request(args):
    """The run's request through the API's front door (:func:`mia_core.api.request.prepare_run`): every
    setting, the inputs, the population and the plan checked before any model loads."""
    from ..api.request import check_attacks, check_modify, prepare_run

    check_attacks(args.attacks or ",".join(DEFAULT_ATTACKS))
    check_output_dir(args.out, overwrite=args.overwrite)
    check_machine(args)
    check_modify(args.modify)
    params = _params(args)
    train = _training_set(args)
    ds, population = _load_inputs(args)
    print_notes(ds.report)
    request = prepare_run(
        ds, model=args.model, reference=args.reference, attacks=args.attacks, params=params, population=population,
        train=train, split=args.split, split_seed=args.split_seed, prefix="none" if args.no_prefix else args.prefix,
        context=args.context, batch_tokens=args.batch_tokens, first_token=args.score_first_token,
        cache=not args.no_cache, n_bootstrap=args.bootstrap, seed=args.seed, blind=not args.no_blind,
        alpha=args.alpha, dtype=args.dtype, device=args.device, quantize=args.quantize,
        trust_remote_code=args.trust_remote_code, modify=args.modify)
    # the reasons as flags, in the notes and in the run's record
    request.skipped = {n: in_words(why, getattr(args, "option_flags", None)) for n, why in request.skipped.items()}
    return request


def cmd_run(args) -> int:
    """``mia run``: the request built through the API (every check one line before any model loads), the models
    loaded with a progress bar, the passes run (:func:`mia_core.api.request.execute_run`), the report printed and
    the run's files published in one rename."""
    from ..api.request import execute_run, load_models

    t_start = time.time()
    if args.list_params:
        print(list_params())
        return 0
    request = _request(args)
    print_notes([f"skipping {n}: it {why}" for n, why in request.skipped.items()])
    start_engine(args)
    bar = ProgressBar(disable=args.quiet)
    target, reference = load_models(request, progress=bar)
    printed = list(request.data.report)

    def warn(coupled: str) -> None:
        bar.close()  # the next stage opens a new bar
        print_notes([coupled], "warning")
        printed.append(coupled)

    result = execute_run(request, target=target, reference=reference, progress=bar, warn=warn)
    bar.close()
    print()
    print(without_printed_notes(result.summary_text(), printed))  # the input notes went to stderr above
    kt = result.extra.get("known_truth")
    if kt and not kt["ok"]:
        print_notes([kt["message"]], "warning")
    out = Path(args.out)
    # written into a temporary sibling of --out, published in one rename at the end
    with staged_output(args.out, overwrite=args.overwrite) as tmp:
        paths = {k: final_path(v, tmp, out) for k, v in result.save(tmp).items()}
        _modified(args, request, target=target, reference=reference, result=result, out=tmp)
    if args.modify:
        print(f"wrote {out / 'modified.json'}")
    print(f"\nwrote {paths['scores']}, {paths['metrics']} and {paths['run']} in {time.time() - t_start:.0f}s")
    return 0


def _modified(args, request, *, target, reference, result, out) -> None:
    """``--modify``: re-run the attacks with one-word-modified members (through the API) and print the table."""
    from ..api.request import execute_modified, modified_summary

    if not request.modify:
        return
    with ProgressBar(disable=args.quiet) as bar:
        res = execute_modified(request, target, reference, progress=bar, verbatim=result.metrics)
    print("\nmodified members (SMIA §5.2):")
    print(modified_summary(res))
    slim = {k: ({a: {kk: vv for kk, vv in m.items() if kk != "roc"} for a, m in v.items()}
                if k not in ("modifications", "n_unmodified") else v) for k, v in res.items()}
    (out / "modified.json").write_text(json.dumps(slim, indent=2, default=float))
