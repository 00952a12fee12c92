"""``mia NAME`` for every registered audit without a command module of its own, made from its declaration
(:class:`mia_core.audits.Audit`): a flag per set it reads (``--members``...), its models' flags, a flag per declared
option (its default, domain and help from the ``Options`` field, spelled ``--prefix-tokens`` for ``prefix_tokens``;
a true/false option is ``--name`` or ``--no-name``, whichever changes its default), the engine's and the output's.
It reads the sets, builds the request through the registry's front door (:func:`mia_core.audits.prepare`: every
check before any model loads), runs it with a progress bar, prints the report, and writes ``--out`` in one rename
and, with ``--save``, keeps the run in the run store (the Runs page lists it)."""
from __future__ import annotations

import argparse

from ..audits import AUDITS, Audit, prepare, execute
from ..errors import SettingsError
from .common import (TEXT_FORMATS, ProgressBar, add_engine_args, add_model_args, add_options, add_progress_args,
                     check_machine, input_path, print_notes, print_report, start_engine)


def flag_of(name: str) -> str:
    """An option's flag: ``prefix_tokens`` -> ``--prefix-tokens``."""
    return "--" + name.replace("_", "-")


def register_generated(subparsers) -> None:
    """Add ``mia NAME`` for each registered audit that no command module added, in the registry's order."""
    for name, audit in AUDITS.items():
        if name not in subparsers.choices:
            add_command(subparsers, audit)


def _option_flags(group, options) -> None:
    """The declared options as flags: numbers and words through :func:`.common.add_options`, true/false as a switch
    that changes the default (``--no-cache``)."""
    plain = {}
    for name in options.declared():
        if options.domain(name).kind != "bool":
            plain[name] = flag_of(name)
            continue
        on = bool(options.default(name))
        group.add_argument(flag_of(("no_" if on else "") + name), dest=name, action="store_false" if on else "store_true",
                           help=options.help(name) + (" (on unless given)" if on else ""))
    add_options(group, options, plain)


def add_command(subparsers, audit: Audit) -> argparse.ArgumentParser:
    """The parser of ``mia NAME`` for ``audit`` (see the module docstring)."""
    p = subparsers.add_parser(audit.name, help=f"{audit.title.lower()} ({audit.citation})",
                              description=f"{audit.title} ({audit.citation}). {audit.about}".strip())
    d = p.add_argument_group("data")
    demo = bool(audit.demo_words)  # the demo is read when --demo is given, never to build the parser
    for s in audit.sets:
        d.add_argument(flag_of(s), nargs="+", type=input_path, required=not demo,
                       help=f"the texts of the {s} set: {TEXT_FORMATS}")
    if demo:
        d.add_argument("--demo", action="store_true", help=f"use {audit.demo_words}")
    d.add_argument("--mode", default="auto", choices=["auto", "lines", "blank"],
                   help=".txt reading: one text per line, or blank-line-separated paragraphs")
    d.add_argument("--text-column", help="text column of table input (auto-detected)")
    if "model" in audit.models:
        add_model_args(p, model_help="target causal LM: hub id, local folder or GGUF file (default: the embedded "
                                     "SmolLM2-135M)")
    _option_flags(p.add_argument_group(f"{audit.title.lower()} ({audit.citation})"), audit.options())
    add_engine_args(p)
    o = p.add_argument_group("output")
    o.add_argument("--out", help="folder for the result's files (new or empty)")
    o.add_argument("--overwrite", action="store_true", help="replace an --out folder this tool wrote (only once the "
                                                             "new results are complete)")
    o.add_argument("--save", action="store_true", help="also keep the run in the run store (the Runs page lists it)")
    add_progress_args(p)
    p.set_defaults(func=lambda args: run(args, audit))
    return p


def _demo_inputs(args, audit: Audit, options: dict, models: dict) -> dict:
    """The bundled demo's sets (``Audit.demo``), its model unless ``--model`` names another, and its own settings
    (said on stderr); given sets beside ``--demo`` are refused in one line."""
    given = [flag_of(s) for s in audit.sets if getattr(args, s)]
    if given:
        raise SettingsError(f"--demo brings its own sets: leave out {' and '.join(given)}")
    box = audit.demo()
    if box is None:
        raise SettingsError("the bundled demo is not installed here: give the sets instead of --demo")
    inputs = dict(box["inputs"])
    if models and not models.get("model"):
        models["model"] = inputs.get("model")
    inputs.pop("model", None)
    own = {k: inputs.pop(k) for k in list(inputs) if k in options}
    options.update(own)
    if own:
        print_notes([f"the demo runs with {', '.join(f'{flag_of(k)} {v}' for k, v in own.items())} (its own)"])
    return inputs


def run(args, audit: Audit) -> int:
    """``mia NAME``: the output folder and the machine checked, the sets read, the request prepared (every check
    before any model loads), run, reported, written."""
    from ..api.data import read_text_files
    from ..runs.outputs import check_output_dir, final_path, staged_output

    if args.out:
        check_output_dir(args.out, overwrite=args.overwrite)
    args.no_cache = not getattr(args, "cache", True)
    check_machine(args)
    notes: list = []
    options = {n: getattr(args, n) for n in audit.options().declared()}
    models = ({"model": args.model, "dtype": args.dtype, "device": args.device, "quantize": args.quantize,
               "trust_remote_code": args.trust_remote_code} if "model" in audit.models else {})
    if getattr(args, "demo", False):
        sets = _demo_inputs(args, audit, options, models)
    else:
        missing = [flag_of(s) for s in audit.sets if not getattr(args, s)]
        if missing:
            raise SettingsError(f"give {' and '.join(missing)}" + (", or --demo" if hasattr(args, "demo") else ""))
        sets = {s: read_text_files(getattr(args, s), mode=args.mode, text_column=args.text_column, notes=notes)
                for s in audit.sets}
    print_notes(notes)
    request = prepare(audit.name, **sets, **models, **options)
    start_engine(args)
    with ProgressBar(disable=args.quiet) as bar:
        result = execute(request, progress=bar)
    print_report(result.summary_text(), notes)
    if args.out:
        with staged_output(args.out, overwrite=args.overwrite) as tmp:  # published in one rename at the end
            paths = result.save(tmp)
        print(f"wrote {', '.join(str(final_path(v, tmp, args.out)) for v in paths.values())}")
    if args.save:
        from ..audits.saved import save_run

        meta = save_run(audit.name, result)
        print(f"saved in the run store as {meta['id']} ({meta['name']})")
    return 0

