"""``mia infer-dataset``: was this collection used to train the model? (dataset inference, Maini et al. 2024)

Reads a suspect set and a validation set (texts of the same distribution known not to be trained
on), checks them without the model (sizes, overlap, the blind-baseline IID guard), computes MIA
features for every text from one scoring stage, and reports the cross-fitted permutation test's
p-value (primary), the paper's split t-test, the null check and the verdict. ``--out DIR`` writes
``DIR/dataset_inference.json`` and ``DIR/scores.csv``.

A thin parser: the sets are read, checked and run through the API's front door
(``mia_core.api.inference``: ``read_inference_sets``, ``prepare_inference``, ``execute_inference``), the
``--param`` items read by ``mia_core.cli.common.parse_params``.
"""
from __future__ import annotations

import time
from pathlib import Path

from ..errors import SettingsError, safe_text
from ..runs.outputs import check_output_dir, final_path, staged_output
from ..api.inference import InferenceOptions
from .common import (ProgressBar, add_model_args, add_options, add_output_args, add_progress_args, input_path,
                     print_notes, print_report)


def register(subparsers) -> None:
    """Add ``mia infer-dataset`` and its options to the command parser."""
    p = subparsers.add_parser(
        "infer-dataset",
        help="dataset inference: one p-value for 'was this collection used to train the model?'",
        description="Dataset inference (Maini et al. 2024, NeurIPS): MIA features of a suspect set and of a "
                    "validation set from the same distribution (known not to be trained on), a linear model "
                    "across them, and a p-value: the cross-fitted permutation test (primary) and the paper's "
                    "split t-test, with the IID guard (blind baseline) and a null check.",
    )
    d = p.add_argument_group("data")
    d.add_argument("--suspect", nargs="+", type=input_path,
                   help="the texts in question (.txt one per line or paragraphs, .csv, .jsonl ...)")
    d.add_argument("--validation", nargs="+", type=input_path,
                   help="texts of the same distribution known not to be trained on")
    d.add_argument("--population", nargs="+", type=input_path,
                   help="optional known non-members besides the validation set (ReCaLL's prefix)")
    d.add_argument("--mode", default="auto", choices=["auto", "lines", "blank"],
                   help=".txt reading: one text per line, or blank-line-separated paragraphs")
    d.add_argument("--text-column", help="text column of .csv/.tsv/.jsonl/.json input (auto-detected)")
    d.add_argument("--books", action="store_true",
                   help="each file (or file in a folder) is a book: cut into passages, tested book by book and as a "
                        "collection (the book is the unit of the test)")
    add_options(d, InferenceOptions, {"correction": "--correction", "passage_words": "--passage-words",
                                      "max_passages": "--max-passages"})
    d.add_argument("--demo", action="store_true",
                   help="the bundled demo: its members as the suspect set, its non-members as validation")
    d.add_argument("--demo-null", action="store_true",
                   help="the bundled demo's null case: its population (never trained on) as the suspect set")
    add_model_args(p, model_help="the audited causal LM (hub id, folder, make-target folder; default: the "
                                 "embedded SmolLM2-135M, or the demo target with --demo)",
                   reference_help="a reference model: adds the reference attack as a feature", quantize=False)
    t = p.add_argument_group("test")
    add_options(t, InferenceOptions, {"combination": "--combination", "features": "--features"})
    t.add_argument("--param", action="append", default=[], metavar="ATTACK.NAME=VALUE",
                   help="a feature attack's parameter, e.g. --param dc_pdd.corpus=FOLDER (repeatable; see "
                        "mia run --list-params); min_k.k and min_k_pp.k are the paper's grid here")
    add_options(t, InferenceOptions, {"alpha": "--alpha", "folds": "--folds", "n_permutations": "--permutations",
                                      "prefix": "--prefix", "control": "--control"})
    t.add_argument("--no-length-adjust", dest="adjust_length", action="store_false",
                   help="do not adjust the features for text length (default: "
                        + InferenceOptions.help("adjust_length") + ")")
    add_output_args(p, out_help="folder for dataset_inference.json and scores.csv", bootstrap=False,
                    seed_help="seed of the folds, the permutations and the splits")
    add_progress_args(p)
    p.set_defaults(func=run)


def _sets(args):
    """The sets through the API (``read_inference_sets``): the demo, the demo's null case, or the files given."""
    from ..api.inference import read_inference_sets

    if args.demo and args.demo_null:
        raise SettingsError("give --demo or --demo-null, not both")
    if args.out:
        check_output_dir(args.out, overwrite=args.overwrite)
    if args.demo or args.demo_null:
        if args.suspect or args.validation:
            raise SettingsError("--demo fills in the suspect and validation sets; do not give them too")
        return read_inference_sets(demo="demo_null" if args.demo_null else "demo", books=args.books, mode=args.mode,
                                   text_column=args.text_column)
    if not args.suspect or not args.validation:
        raise SettingsError("give --suspect and --validation (or --demo)")
    return read_inference_sets(args.suspect, args.validation, None if args.books else args.population,
                               books=args.books, mode=args.mode, text_column=args.text_column)


def run(args) -> int:
    """``mia infer-dataset``: the request built through the API (every model-free check once, one line each, before
    any model loads), its notes printed, then run with a progress bar and reported."""
    from ..api.inference import execute_inference, prepare_inference
    from .common import parse_params

    t_start = time.time()
    sets = _sets(args)
    # the book reader's notes are not printed nor kept by the CLI (as before the front door)
    read = [] if args.books else sets.notes
    request = prepare_inference(
        sets.suspect, sets.validation, model=args.model or sets.target, reference=args.reference,
        population=sets.population, books=args.books, features=args.features, alpha=args.alpha, folds=args.folds,
        n_permutations=args.n_permutations, seed=args.seed, params=parse_params(args.param),
        prefix=args.prefix, cache=not args.no_cache, passage_words=args.passage_words,
        max_passages=args.max_passages, correction=args.correction, combination=args.combination,
        control=args.control, adjust_length=args.adjust_length,
        read_notes=read, dtype=args.dtype, device=args.device, trust_remote_code=args.trust_remote_code)
    printed = [] if args.books else [*read, *request.notes, *filter(None, [request.estimate_note])]
    print_notes(printed)
    with ProgressBar(disable=args.quiet) as bar:
        res = execute_inference(request, progress=bar)
    res.inputs = _inputs(args, request.model, res.summary.get("model"))
    return _report(res, args, t_start, printed=printed)


def _inputs(args, spec, name) -> dict:
    """What was audited, for the report's header and the first line printed: the model (its short name and the
    spec it was loaded from), the source (the demo, its null case or files) and the files' names."""
    source = "demo_null" if args.demo_null else "demo" if args.demo else "files"
    short = name or ("demo target" if source != "files" else Path(str(spec)).name)  # a refused run loads none
    out = {"model": str(short), "model_identity": str(spec), "source": source}
    if source == "files":
        out.update(suspect_files=[Path(str(f)).name for f in args.suspect],
                   validation_files=[Path(str(f)).name for f in args.validation])
    return out


def _report(res, args, t_start: float, printed=()) -> int:
    """Print the result (book and file names in it as safe text; the notes already printed left out); with
    ``--out``, publish its files in one rename."""
    from ..api.inference import inference_run_name

    print()
    print(safe_text(f"audited: {inference_run_name(res.summary, res.inputs)}"))
    print_report(res.summary_text(), printed)
    if args.out:
        out = Path(args.out)
        with staged_output(args.out, overwrite=args.overwrite) as tmp:
            paths = {k: final_path(v, tmp, out) for k, v in res.save(tmp).items()}
        print("\n" + safe_text(f"wrote {paths['summary']}, {paths['scores']} and {paths['report']} in "
                               f"{time.time() - t_start:.0f}s"))
    return 0
