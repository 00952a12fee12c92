"""``mia documents``: document-level membership inference (Meeus et al. 2024).

Reads member and non-member documents (folders of ``.txt``, ``.zip`` of ``.txt``, single
files; Project Gutenberg headers/footers are stripped unless ``--no-strip``), runs
the document audit through the API (:func:`mia_core.api.documents.prepare_documents`,
:func:`~mia_core.api.documents.execute_documents`) and prints a table of mean ± std AUC and TPR
at 1 %/10 % FPR per normalisation × feature extractor, the scaled sequence-level
baselines and the partial-document curve (the paper's MaxNormTF + HistFE and this audit's best
full-document pipeline, re-trained at each length). ``--out DIR`` writes ``document_metrics.json``,
``document_scores.csv``, ``partial_documents.csv``, ``baselines.csv`` and
``token_values/<doc>.npz`` (per-token normalised values for a document's strip).
"""
from __future__ import annotations

import argparse
import sys

from ..api.documents import DEFAULT_GENERATOR, DocumentOptions
from ..errors import SettingsError, safe_lines
from ..runs.outputs import check_output_dir, final_path, staged_output
from .common import (input_path, add_engine_args, add_options, start_engine, refuse_data_with_demo, ProgressBar,
                     check_machine, add_model_args, add_output_args, add_progress_args, non_negative_int)


def register(subparsers) -> None:
    """Add ``mia documents`` and its options to the command parser."""
    p = subparsers.add_parser(
        "documents",
        help="document-level membership inference for books (Meeus et al. 2024)",
        description="Document-level membership inference (Meeus et al., USENIX Security 2024): token probabilities "
                    "normalised by token frequency or general probability, histogram/aggregate features and a "
                    "random-forest meta-classifier under stratified k-fold cross-validation.",
    )
    d = p.add_argument_group("data")
    d.add_argument("--members", nargs="+", type=input_path, help="member documents: folder(s), .zip or .txt files")
    d.add_argument("--nonmembers", nargs="+", type=input_path, help="non-member documents: folder(s), .zip or .txt files")
    d.add_argument("--demo", action="store_true",
                   help="use the bundled demo: 20 member and 20 non-member documents of five passages each from five "
                        "public-domain novels, and the demo target that was fine-tuned on the member passages")
    d.add_argument("--no-strip", action="store_true", help="keep Project Gutenberg headers and footers")
    add_model_args(p, model_help="target model (default: the embedded SmolLM2-135M)",
                   reference_help="reference model for the reference-model baseline")
    a = p.add_argument_group("attack (Meeus et al. 2024)")
    # the audit's declared options (mia_core.documents.options.DocumentOptions): their defaults, domains and help
    add_options(a, DocumentOptions, {"context": "--context", "normalizations": "--normalization",
                                     "features": "--features", "folds": "--folds", "n_bins": "--bins"})
    a.add_argument("--agg-count", action="store_true", help=DocumentOptions.help("agg_count"))
    add_options(a, DocumentOptions, {"hist_outside": "--hist-outside", "n_estimators": "--trees",
                                     "partial_lengths": "--partial-lengths", "partial_position": "--partial-position",
                                     "partial_dictionaries": "--partial-dictionaries",
                                     "batch_tokens": "--batch-tokens"})
    b = p.add_argument_group("sequence-level baselines (§6.2)")
    b.add_argument("--no-baselines", action="store_true", help="skip the sequence-level baselines")
    b.add_argument("--max-sequences", type=non_negative_int, default=32,
                   help="128-token sequences sampled per document for the baselines (0 = all; default 32)")
    b.add_argument("--n-neighbours", type=non_negative_int, default=0,
                   help="neighbours per sequence for the neighbourhood baseline (0 = off, the default; costly)")
    b.add_argument("--neighbours", default=DEFAULT_GENERATOR, metavar="GENERATOR",
                   help=f"neighbour generator for --n-neighbours (masked-lm:embedded, masked-lm:MODEL, t5:MODEL, offline; "
                        f"default {DEFAULT_GENERATOR})")
    b.add_argument("--neighbour-generator", dest="neighbours", help=argparse.SUPPRESS)  # older spelling
    add_engine_args(p)
    o = add_output_args(p, out_help="folder for the output files", cache="do not read or write the statistics cache",
                        bootstrap=False, seed_help="seed of the folds, the sampled sequences and the forest")
    o.add_argument("--no-token-values", action="store_true", help="do not write token_values/ with --out")
    add_progress_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    """``mia documents``: the request built through the API (:func:`mia_core.api.documents.prepare_documents`), the
    report printed, the files written into ``--out`` in one rename."""
    from ..api.documents import execute_documents, load_document_models, prepare_documents

    if args.out:
        check_output_dir(args.out, overwrite=args.overwrite)
    check_machine(args)
    if args.neighbours.strip().isdigit():
        raise SettingsError("--neighbours names the neighbour generator (offline, masked-lm:MODEL, t5:MODEL); "
                            "the number of neighbours per sequence is --n-neighbours")
    if args.demo:
        refuse_data_with_demo(args)
    elif not (args.members and args.nonmembers):
        raise SettingsError("give --members and --nonmembers (folders, .zip or .txt files), or --demo")
    request = prepare_documents(
        demo=args.demo, member_files=args.members, nonmember_files=args.nonmembers, strip=not args.no_strip,
        model=args.model, reference=args.reference or None, dtype=args.dtype, quantize=args.quantize,
        device=args.device, trust_remote_code=args.trust_remote_code, reference_dtype="auto",
        cache=not args.no_cache, context=args.context, normalizations=args.normalizations,
        features=args.features, folds=args.folds, n_bins=args.n_bins, agg_count=args.agg_count,
        hist_outside=args.hist_outside, seed=args.seed, partial_lengths=args.partial_lengths, partial_position=args.partial_position,
        partial_dictionaries=args.partial_dictionaries, baselines=not args.no_baselines,
        baseline_max_sequences=args.max_sequences or None,
        baseline_neighbours={"n": args.n_neighbours, "generator": args.neighbours} if args.n_neighbours else False,
        n_estimators=args.n_estimators, batch_tokens=args.batch_tokens)
    n_strip = request.n_stripped
    print(f"{len(request.members)} member and {len(request.nonmembers)} non-member documents"
          + (f"; Gutenberg header/footer removed from {n_strip}" if n_strip else ""), file=sys.stderr)
    start_engine(args)
    target, reference = load_document_models(request)
    with ProgressBar(disable=args.quiet) as bar:
        res = execute_documents(request, target=target, reference=reference, progress=bar)
    print(safe_lines(res.summary_text()))
    if args.out:
        # written into a temporary sibling of --out, published in one rename at the end
        with staged_output(args.out, overwrite=args.overwrite) as tmp:
            paths = res.save(tmp, token_values=not args.no_token_values)
        print(f"wrote {', '.join(str(final_path(p, tmp, args.out)) for p in paths.values())}")
    return 0
