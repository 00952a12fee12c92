"""``mia mlm``: audit a masked LM (BERT, RoBERTa, ...) with a reference model.

Runs the masked-LM audit (Mireshghallah et al. 2022) through the API (:func:`mia_core.api.mlm.prepare_mlm`,
:func:`~mia_core.api.mlm.execute_mlm`): the likelihood-ratio attack (target energy minus reference energy) and
the loss baseline (target energy alone),
with thresholds that flag ``--alpha`` of a population set of known non-members. Writes
``OUT/scores.csv`` (one row per evaluated text), ``OUT/metrics.json`` and ``OUT/curves.json`` (ROC curves,
population scores and energies: what ``mia_core.load`` needs to read the audit back); prints the AUC
table, precision/recall at the population threshold, group-level figures when a group column
is given, and the features of the members the attack flags vs. those it misses.
``--recipe`` picks the energy (``mia_core.mlm.masking.RECIPES``): ``sum`` (default) or ``released``
(the authors' released code as issue 28 describes it); checked before anything is read or loaded.
"""
from __future__ import annotations

import argparse
import time

from ..errors import SettingsError, safe_lines
from ..runs.outputs import check_output_dir, final_path, staged_output
from ..api.mlm import MlmOptions
from .common import (input_path, add_options, add_engine_args, start_engine, refuse_data_with_demo, ProgressBar, check_machine, add_data_args, add_model_args, add_output_args, add_progress_args,
                     print_notes)


def register(subparsers) -> None:
    """Add ``mia mlm`` and its options to the command parser."""
    p = subparsers.add_parser(
        "mlm",
        help="masked-LM audit: likelihood ratio vs a reference MLM, population threshold (Mireshghallah et al. 2022)",
        description=(
            "Membership inference against a masked language model (BERT, RoBERTa, DistilBERT, ModernBERT...): "
            "likelihood-ratio attack with a reference MLM that shares the target's tokenizer, and the loss "
            "baseline; thresholds flag --alpha of a population set of known non-members (disjoint from the "
            "evaluated texts); precision/recall at that threshold, AUC and TPR at low FPR with bootstrap CIs; "
            "group-level (e.g. patient-level) figures with --group-column. Writes OUT/scores.csv, OUT/metrics.json and OUT/curves.json."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    d = add_data_args(
        p, group_column="group id column (e.g. patient id): adds group-level metrics", population_nargs="+",
        demo="use the bundled demo: the demo's 100 member, 100 non-member and 100 population passages, the embedded "
             "masked LM as reference and, as target, that model trained further on the members "
             "(mia_core/assets/demo/mlm_target)",
        population="population texts: known non-members, disjoint from the evaluated ones, used only for the threshold")
    d.add_argument("--train-samples", nargs="+", type=input_path,
                   help="known training texts: adds the loss attack's mu threshold (their mean energy, §3.4)")
    m = add_model_args(
        p, model_help="target masked LM: hub id or local folder (required unless --demo)",
        reference_help="reference masked LM with the same tokenizer (e.g. the general-domain model the target was trained "
                       "from; required unless --demo; 'embedded' is the embedded masked LM)",
        dtype_default="fp32", dtype_help="fp32 keeps scores bit-stable; bf16/fp16 are faster on GPU", quantize=False)
    m.add_argument("--vocab-match-only", action="store_true",
                   help="accept a reference with the same vocabulary whose tokenizer normalises text differently "
                        "(e.g. lowercases); both models get the target's tokenisation")
    a = p.add_argument_group("attack")
    # the recipe keeps its own check (its one-line refusal describes each recipe): its default and help are the option's
    a.add_argument("--recipe", default=MlmOptions.default("recipe"), metavar="{%s}" % ",".join(MlmOptions.domain("recipe").choices),
                   help=MlmOptions.help("recipe"))
    add_options(a, MlmOptions, {"k": "--masks", "rate": "--mask-rate", "alpha": "--alpha", "batch_tokens": "--batch-tokens"},
                say_default=False)  # the parser's formatter says each default
    add_engine_args(p)
    add_output_args(p, out_default="mia_mlm", cache="do not read or write the energy cache",
                    seed_help="seed for the masking patterns and the bootstrap")
    add_progress_args(p)
    p.set_defaults(func=cmd_mlm)


def cmd_mlm(args) -> int:
    """``mia mlm``: the request built through the API (:func:`mia_core.api.mlm.prepare_mlm`), the report printed,
    ``scores.csv``, ``metrics.json`` and ``curves.json`` written into ``--out`` in one rename."""
    from ..api.mlm import check_recipe, execute_mlm, mlm_demo, prepare_mlm, read_mlm_files

    t0 = time.time()
    check_recipe(args.recipe)  # one line, before any file is read or model loaded
    check_output_dir(args.out, overwrite=args.overwrite)
    check_machine(args)
    if args.demo:
        refuse_data_with_demo(args)
        demo = mlm_demo(required=True)
        args.members, args.nonmembers, args.mode = [demo["members"]], [demo["nonmembers"]], "lines"
        args.population = args.population or [demo["population"]]
        args.model = args.model or str(demo["target"])
        args.reference = args.reference or demo["reference"]
    if not (args.labelled or (args.members and args.nonmembers)):
        raise SettingsError("give --members and --nonmembers, or --labelled, or --demo")
    for opt in ("model", "reference", "population"):
        if not getattr(args, opt):
            raise SettingsError(f"give --{opt} (or --demo)")
    sets = read_mlm_files(members=args.members, nonmembers=args.nonmembers, labelled=args.labelled,
                          population=args.population, train_samples=args.train_samples, mode=args.mode,
                          text_column=args.text_column, label_column=args.label_column,
                          group_column=args.group_column)
    print_notes(sets["notes"])
    request = prepare_mlm(
        model=args.model, reference=args.reference, k=args.k, seed=args.seed, rate=args.rate,
        alpha=args.alpha, recipe=args.recipe, batch_tokens=args.batch_tokens, n_bootstrap=args.bootstrap,
        cache=not args.no_cache, device=args.device, dtype=args.dtype, trust_remote_code=args.trust_remote_code,
        vocab_only=args.vocab_match_only, **sets)
    start_engine(args)
    with ProgressBar(disable=args.quiet) as bar:
        res = execute_mlm(request, progress=bar)
    print(safe_lines(res.summary_text()))
    # written into a temporary sibling of --out, published in one rename at the end
    with staged_output(args.out, overwrite=args.overwrite) as tmp:
        paths = {k: final_path(v, tmp, args.out)
                 for k, v in res.save(tmp, extra={"data_notes": request.notes}).items()}
    print(f"\nwrote {paths['scores']}, {paths['metrics']} and {paths['curves']} in {time.time() - t0:.0f}s")
    return 0
