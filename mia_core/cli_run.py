"""``python -m mia_core run``: score member and non-member sets with the chosen attacks."""
from __future__ import annotations

import argparse
import json
import sys
import time

from .attacks import REGISTRY
from .errors import SettingsError
from .progress import TqdmProgress


def register(sub) -> None:
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
    d = p.add_argument_group("data")
    d.add_argument("--members", nargs="+", help="member texts: .txt (one per line or blank-line paragraphs), .csv, .jsonl, .json or .zip")
    d.add_argument("--nonmembers", nargs="+", help="non-member texts, same formats")
    d.add_argument("--labelled", help="one file with a label column (1 = member, 0 = non-member) instead of two files")
    d.add_argument("--demo", action="store_true", help="use the bundled demo: members, non-members, fine-tuned demo target, base SmolLM2 as reference")
    d.add_argument("--mode", default="auto", choices=["auto", "lines", "blank"], help=".txt reading: one text per line, or blank-line-separated paragraphs")
    d.add_argument("--text-column", help="text column of .csv/.jsonl input (auto-detected)")
    d.add_argument("--label-column", default="label", help="label column of a --labelled file")
    d.add_argument("--group-column", help="group id column: also report group-level metrics (mean score per group)")
    d.add_argument("--population", help="population set (non-members disjoint from the evaluated ones) to fit a threshold at --alpha FPR")
    d.add_argument("--alpha", type=float, default=0.1, help="target FPR on the population set for the threshold")
    m = p.add_argument_group("models")
    m.add_argument("--model", default="smollm2", help="target: 'smollm2' (embedded), hub id, local folder, .gguf file or a make-target folder")
    m.add_argument("--reference", help="reference model for the 'ref' attack (same forms as --model); default for a fine-tuned target: its base")
    m.add_argument("--dtype", default="auto", choices=["auto", "fp32", "bf16", "fp16"], help="auto = bf16/fp16 on GPU, fp32 on CPU")
    m.add_argument("--quantize", default="none", choices=["none", "int8", "int4"], help="bitsandbytes quantisation of the target")
    m.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1 ...")
    m.add_argument("--trust-remote-code", action="store_true", help="allow custom model code from the hub (off by default: it runs code)")
    a = p.add_argument_group("attacks")
    a.add_argument("--attacks", default="loss,zlib,lowercase,min_k,min_k_pp", help=f"comma list or 'all' ({', '.join(REGISTRY)})")
    a.add_argument("--k", type=float, default=0.2, help="fraction k of lowest-scoring tokens for Min-K%% and Min-K%%++")
    a.add_argument("--context", type=int, help="window length C for long texts (stride C-1); default min(model max, 2048)")
    a.add_argument("--batch-tokens", type=int, default=4096, help="tokens per forward batch (memory knob)")
    a.add_argument("--no-prefix", action="store_true", help="do not put a BOS/EOS token before each text (the first token is then not scored)")
    for hook in _EXTRA_ARGS:
        hook(p)
    o = p.add_argument_group("output")
    o.add_argument("--out", default="mia_run", help="output folder")
    o.add_argument("--no-cache", action="store_true", help="do not read or write the statistics cache")
    o.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the CIs")
    o.add_argument("--seed", type=int, default=0, help="seed for bootstrap, splits and sampling")
    o.add_argument("--no-blind", action="store_true", help="skip the model-free blind baseline (distribution-shift check)")
    o.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_run)


# Other modules (neighbours / SMIA) add their options here: each hook(parser) -> None,
# and a matching entry in _EXTRA_CONFIG turns the parsed args into config/params.
_EXTRA_ARGS: list = []
_EXTRA_CONFIG: list = []
_EXTRA_AFTER: list = []  # hook(args, ds=, target=, reference=, config=, train=, population=, result=, out=)


def _load_inputs(args):
    from .data import load_dataset

    population = None
    if args.demo:
        from .demo import demo_paths

        paths = demo_paths()
        if args.members or args.nonmembers or args.labelled:
            raise SettingsError("--demo fills in the members and non-members; do not give them too")
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
    from .data import Dataset, read_texts
    import numpy as np

    recs = [r for r in read_texts(path, mode=mode, text_column=text_column) if r.text.strip()]
    if not recs:
        from .errors import DataError

        raise DataError(f"{path}: the population set is empty")
    return Dataset(
        texts=[r.text for r in recs], labels=np.zeros(len(recs), dtype=int), ids=[f"p{i:04d}" for i in range(len(recs))],
        groups=None, sources=[r.source for r in recs], report=[],
    )


def cmd_run(args) -> int:
    from .models import describe, load_causal_lm
    from .pipeline import RunConfig, parse_attacks, run_attacks
    from .metrics import summarize_table
    from .stats import StatsSettings

    t_start = time.time()
    attacks = parse_attacks(args.attacks)
    ds, population = _load_inputs(args)
    for line in ds.report:
        print(f"note: {line}", file=sys.stderr)
    bar = TqdmProgress(disable=args.quiet)
    target = load_causal_lm(
        args.model, dtype=args.dtype, quantize=args.quantize, device=args.device,
        trust_remote_code=args.trust_remote_code, progress=bar,
    )
    reference = None
    if "ref" in attacks or any("reference" in REGISTRY[a].needs for a in attacks):
        ref_spec = args.reference or target.base_spec
        if ref_spec is None:
            raise SettingsError("the 'ref' attack needs --reference (e.g. --reference smollm2 or a hub id / local folder)")
        reference = load_causal_lm(ref_spec, dtype=args.dtype, device=args.device, trust_remote_code=args.trust_remote_code, progress=bar)
    params = {"min_k": {"k": args.k}, "min_k_pp": {"k": args.k}}
    cfg = RunConfig(
        attacks=attacks,
        params=params,
        stats=StatsSettings(context=args.context, prefix=not args.no_prefix, batch_tokens=args.batch_tokens),
        use_cache=not args.no_cache,
        n_bootstrap=args.bootstrap,
        seed=args.seed,
        population_alpha=args.alpha,
        blind=not args.no_blind,
    )
    train = None
    for hook in _EXTRA_CONFIG:
        train = hook(args, cfg, params) or train
    result = run_attacks(ds, target, reference=reference, config=cfg, train=train, population=population, progress=bar)
    bar.close()
    out = result.save(args.out)
    print()
    print(f"target: {describe(target)['name']} ({target.dtype}, {target.quantize})"
          + (f"; reference: {reference.name}" if reference is not None else ""))
    n_eval = int((result.scores.get("split", "eval") == "eval").sum()) if "split" in result.scores else len(result.scores)
    print(f"{ds.n_members} members, {ds.n_nonmembers} non-members; {n_eval} texts evaluated")
    print(summarize_table(result.metrics))
    if result.population:
        print(f"\nthreshold at {args.alpha:.0%} FPR on the population set ({result.population['n_population']} texts):")
        for name, d in result.population["attacks"].items():
            if "error" in d:
                print(f"  {name:<12} {d['error']}")
                continue
            prec = "n/a" if d["precision"] is None else f"{d['precision']:.3f}"
            print(f"  {name:<12} precision {prec}  recall {d['recall']:.3f}  FPR on evaluated non-members {d['fpr']:.3f}")
    if result.group_metrics:
        print("\ngroup-level AUC (mean score per group):")
        for name, g in result.group_metrics.items():
            print(f"  {name:<12} " + (g["error"] if "error" in g else f"{g['auc']:.3f} over {g['n_groups']} groups"))
    if result.shift:
        v = result.shift["verdict"]
        print(f"\nVERDICT [{v['level']}]: {v['message']}")
    for line in result.report:
        print(f"note: {line}")
    for hook in _EXTRA_AFTER:
        hook(args, ds=ds, target=target, reference=reference, config=cfg, train=train, population=population,
             result=result, out=out)
    print(f"\nwrote {out/'scores.csv'}, {out/'metrics.json'} and {out/'run.json'} in {time.time() - t_start:.0f}s")
    return 0


from .neighbour_options import add_arguments as _nb_args, after_run as _nb_after, apply_config as _nb_config  # noqa: E402

_EXTRA_ARGS.append(_nb_args)
_EXTRA_CONFIG.append(_nb_config)
_EXTRA_AFTER.append(_nb_after)
