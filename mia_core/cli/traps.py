"""``mia traps make | insert | test``: copyright traps (Meeus et al. 2024; :mod:`mia_core.traps`).

* ``make``   generate a batch of unique traps, split it at random (stratified by perplexity) into inserted and
  held-out traps, and seal it: ``--out FOLDER`` gets ``record.json`` (private) and ``seal.txt``; the seal is
  printed, for the owner to timestamp or hand to a third party before publishing.
* ``insert`` write copies of the owner's documents with every inserted trap placed its number of times, checked from
  the written files, logged in the record.
* ``test``   the registered audit ``traps`` (:mod:`mia_core.audits.traps`): the pre-registered test on a model,
  through the registry's front door; ``--out`` gets ``traps.json`` and ``traps_scores.csv``; ``--save`` keeps it
  in the run store.
"""
from __future__ import annotations

from ..errors import SettingsError
from .audit_command import _option_flags
from .common import (ProgressBar, add_engine_args, add_model_args, add_progress_args, check_machine, input_path,
                     print_notes, print_report, start_engine)


def register(subparsers) -> None:
    """Add ``mia traps`` and its three steps."""
    from ..audits import AUDITS

    audit = AUDITS["traps"]
    MakeOptions, InsertOptions = audit.steps()["make"], audit.steps()["insert"]
    p = subparsers.add_parser("traps", help="copyright traps: make, insert, test (Meeus et al. 2024)",
                              description="Copyright traps (Meeus et al. 2024): plant unique sequences in your "
                                          "documents before publishing, prove training on them later with a test "
                                          "whose p-value is exact by design.")
    steps = p.add_subparsers(dest="step", metavar="STEP", parser_class=type(p))
    steps.required = True

    m = steps.add_parser("make", help="generate, split and seal a batch of traps",
                         description="Generate unique traps with a causal LM, split them at random into inserted and "
                                     "held-out traps (within perplexity buckets, after every filter) and seal the "
                                     "record. Keep record.json private; publish or timestamp its seal.")
    add_model_args(m, model_help="the generator: hub id, local folder (default: the embedded SmolLM2-135M)",
                   quantize=False)
    _option_flags(m.add_argument_group("traps"), MakeOptions)
    o = m.add_argument_group("output")
    o.add_argument("--out", required=True, help="new folder for record.json and seal.txt")
    o.add_argument("--overwrite", action="store_true", help="replace an --out folder this tool wrote")
    add_progress_args(m)
    m.set_defaults(func=run_make)

    i = steps.add_parser("insert", help="plant the inserted traps in copies of your documents",
                         description="Write copies of your documents (.txt, .md) with every inserted trap placed its "
                                     "number of times at random word boundaries; checked from the written files and "
                                     "logged in the record. The input folder is never written into.")
    i.add_argument("--traps", required=True, type=input_path, help="the folder `mia traps make` wrote")
    i.add_argument("--documents", required=True, nargs="+", type=input_path,
                   help="your documents: folder(s) of .txt / .md files, or files")
    _option_flags(i.add_argument_group("placement"), InsertOptions)
    i.add_argument("--out", required=True, help="new folder for the marked copies")
    i.add_argument("--overwrite", action="store_true", help="replace an --out folder this tool wrote")
    add_progress_args(i)
    i.set_defaults(func=run_insert)

    t = steps.add_parser("test", help="the pre-registered test on a model",
                         description=f"{audit.title} ({audit.citation}). {audit.about}")
    t.add_argument("--traps", required=True, type=input_path, help="the folder `mia traps make` wrote")
    add_model_args(t, model_help="the model under test: hub id, local folder or GGUF file (default: the embedded "
                                 "SmolLM2-135M)",
                   reference_help="generator (the record's, default), none (the loss alone: also the test of the "
                                  "generator itself), or a model")
    _option_flags(t.add_argument_group("figures"), audit.options())
    add_engine_args(t)
    o = t.add_argument_group("output")
    o.add_argument("--out", help="folder for traps.json and traps_scores.csv (new or empty)")
    o.add_argument("--overwrite", action="store_true", help="replace an --out folder this tool wrote")
    o.add_argument("--save", action="store_true", help="also keep the run in the run store (the Runs page lists it)")
    add_progress_args(t)
    t.set_defaults(func=run_test)


def _load_args(args) -> dict:
    return {"dtype": args.dtype, "device": args.device, "trust_remote_code": args.trust_remote_code}


def run_make(args) -> int:
    """``mia traps make``: options and output checked, the generator loaded, the batch made and sealed."""
    from ..audits import AUDITS
    from ..audits.traps import make

    MakeOptions = AUDITS["traps"].steps()["make"]
    args.no_cache = True
    check_machine(args)
    options = {n: getattr(args, n) for n in MakeOptions.declared()}
    with ProgressBar(disable=args.quiet) as bar:
        res = make(args.out, model=args.model, strict=False, overwrite=args.overwrite, progress=bar,
                   **_load_args(args), **options)
    c, reps = res["counts"], res["repetitions"]
    print(f"made {res['n_inserted'] + res['n_held_out']} traps of {res['tokens']} tokens in {c['seconds']:.0f} s "
          f"({c['sampled']:,} sampled; rejected: {c['round_trip']:,} round trip, {c['perplexity_out_of_range']:,} "
          f"perplexity out of range, {c['bucket_full']:,} bucket full, {c['similar']:,} too similar, "
          f"{c['in_documents']:,} in your documents)")
    print(f"{res['n_inserted']} to insert ({', '.join(f'x{r}' for r in reps)}), {res['n_held_out']} held out (kept "
          "secret)")
    print(f"wrote {res['record']} (private: it names the held-out traps)")
    print(f"seal: SHA-256 {res['seal']}")
    print_notes(res["notes"], prefix="warning")
    return 0


def run_insert(args) -> int:
    """``mia traps insert``: the record read (seal checked), the documents planted and checked."""
    from ..audits.traps import insert

    with ProgressBar(disable=args.quiet) as bar:
        entry = insert(args.traps, args.documents, args.out, seed=args.seed, strict=False, overwrite=args.overwrite,
                       progress=bar)
    print_notes(entry["notes"], prefix="warning")
    print(f"placed {entry['copies']:,} copies of {entry['n_inserted']} traps in {entry['documents']} documents; "
          "checked from the written files: every inserted trap its count, no held-out trap")
    print(f"wrote {entry['out']} (publish the documents; .mia-traps.json there is for your own training runs)")
    print(f"logged in {entry['record']}")
    return 0


def run_test(args) -> int:
    """``mia traps test``: through the registry's front door, as every generated audit command."""
    from ..audits import AUDITS, execute, prepare
    from ..runs.outputs import check_output_dir, final_path, staged_output

    audit = AUDITS["traps"]
    if args.out:
        check_output_dir(args.out, overwrite=args.overwrite)
    args.no_cache = not getattr(args, "cache", True)
    check_machine(args)
    options = {n: getattr(args, n) for n in audit.options().declared()}
    reference = args.reference if args.reference is not None else "generator"
    if not str(reference).strip():
        raise SettingsError("--reference is empty: give generator, none or a model")
    request = prepare("traps", args.traps, model=args.model, reference=reference, quantize=args.quantize,
                      **_load_args(args), **options)
    start_engine(args)
    with ProgressBar(disable=args.quiet) as bar:
        result = execute(request, progress=bar)
    print_report(result.summary_text(), [])
    if args.out:
        with staged_output(args.out, overwrite=args.overwrite) as tmp:
            paths = result.save(tmp)
        print(f"wrote {', '.join(str(final_path(v, tmp, args.out)) for v in paths.values())}")
    if args.save:
        from ..audits.saved import save_run

        meta = save_run("traps", result)
        print(f"saved in the run store as {meta['id']} ({meta['name']})")
    return 0
