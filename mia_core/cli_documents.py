"""``python -m mia_core documents``: document-level membership inference (Meeus et al. 2024).

Reads member and non-member documents (folders of ``.txt``, ``.zip`` of ``.txt``, single
files; Project Gutenberg headers/footers are stripped unless ``--no-strip``), runs
:func:`mia_core.documents.run_document_audit` and prints a table of mean ± std AUC and TPR
at 1 %/10 % FPR per normalisation × feature extractor, the scaled sequence-level
baselines and the partial-document curve. ``--out DIR`` writes ``document_metrics.json``,
``document_scores.csv``, ``partial_documents.csv``, ``baselines.csv`` and
``token_values/<doc>.npz`` (per-token normalised values for a document's strip).
"""
from __future__ import annotations

import sys

from .errors import SettingsError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "documents",
        help="document-level membership inference for books (Meeus et al. 2024)",
        description="Document-level membership inference (Meeus et al., USENIX Security 2024): token probabilities "
                    "normalised by token frequency or general probability, histogram/aggregate features and a "
                    "random-forest meta-classifier under stratified k-fold cross-validation.",
    )
    p.add_argument("--members", nargs="+", required=True, help="member documents: folder(s), .zip or .txt files")
    p.add_argument("--nonmembers", nargs="+", required=True, help="non-member documents: folder(s), .zip or .txt files")
    p.add_argument("--model", default=None, help="target model (default: the embedded SmolLM2-135M)")
    p.add_argument("--reference", default=None, help="reference model for the reference-model baseline")
    p.add_argument("--context", type=int, default=128, help="context length C; stride C-1 (default 128; paper: 128/1024/2048)")
    p.add_argument("--normalization", default="all",
                   help="nonorm, rationorm-tf, rationorm-gp, maxnorm-tf, maxnorm-gp, a comma list, or all (default)")
    p.add_argument("--features", default="both", help="hist, agg or both (default)")
    p.add_argument("--folds", type=int, default=5, help="stratified cross-validation folds (default 5)")
    p.add_argument("--bins", type=int, default=1000, help="histogram bins N_b for HistFE (default 1000, as the paper)")
    p.add_argument("--trees", type=int, default=500, help="random-forest trees (default 500, as the paper)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", default="auto", help="auto, fp32, bf16 or fp16")
    p.add_argument("--quantize", default="none", help="none, int8 or int4 (bitsandbytes)")
    p.add_argument("--partial-lengths", default="100,500,1000,2500,5000,10000,25000",
                   help="comma list of excerpt lengths in tokens for the partial-document curve, or none")
    p.add_argument("--no-baselines", action="store_true", help="skip the sequence-level baselines")
    p.add_argument("--max-sequences", type=int, default=32,
                   help="128-token sequences sampled per document for the baselines (0 = all; default 32)")
    p.add_argument("--neighbours", type=int, default=0,
                   help="neighbours per sequence for the neighbourhood baseline (0 = off, the default; costly)")
    p.add_argument("--neighbour-generator", default="offline",
                   help="neighbour generator for --neighbours (offline, masked-lm:MODEL, t5:MODEL; default offline)")
    p.add_argument("--batch-tokens", type=int, default=None, help="tokens per forward batch (memory)")
    p.add_argument("--no-strip", action="store_true", help="keep Project Gutenberg headers and footers")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the statistics cache")
    p.add_argument("--no-token-values", action="store_true", help="do not write token_values/ with --out")
    p.add_argument("--out", default=None, help="folder for the output files")
    p.set_defaults(func=run)


def _lengths(s: str) -> tuple[int, ...]:
    if s.strip().lower() in ("", "none", "0", "off"):
        return ()
    try:
        out = tuple(int(x) for x in s.split(",") if x.strip())
    except ValueError:
        raise SettingsError(f"--partial-lengths must be a comma list of token counts, not {s!r}") from None
    if any(v <= 0 for v in out):
        raise SettingsError("--partial-lengths must be positive token counts")
    return out


def run(args) -> int:
    from tqdm import tqdm

    from .data import load_documents
    from .documents import parse_features, parse_normalizations, run_document_audit
    from .models import load_causal_lm

    norms = parse_normalizations(args.normalization)
    feats = parse_features(args.features)
    lengths = _lengths(args.partial_lengths)
    strip = not args.no_strip
    members = load_documents(args.members, strip=strip)
    nonmembers = load_documents(args.nonmembers, strip=strip)
    n_strip = sum(1 for d in members + nonmembers if d.strip.get("stripped"))
    print(f"{len(members)} member and {len(nonmembers)} non-member documents"
          + (f"; Gutenberg header/footer removed from {n_strip}" if n_strip else ""), file=sys.stderr)
    lm = load_causal_lm(args.model, dtype=args.dtype, quantize=args.quantize)
    ref = load_causal_lm(args.reference) if args.reference else None

    bar = tqdm(total=1000, desc="documents", unit="‰", file=sys.stderr, dynamic_ncols=True,
               bar_format="{l_bar}{bar}| {elapsed}<{remaining} {postfix}")
    state = {"n": 0}

    def progress(msg: str, frac: float) -> None:
        n = int(max(0.0, min(1.0, frac)) * 1000)
        if n > state["n"]:
            bar.update(n - state["n"])
            state["n"] = n
        bar.set_postfix_str(msg[:70], refresh=False)

    try:
        res = run_document_audit(
            members, nonmembers, lm, reference=ref, context=args.context, normalizations=norms, features=feats,
            folds=args.folds, n_bins=args.bins, seed=args.seed, partial_lengths=lengths,
            baselines=not args.no_baselines, baseline_max_sequences=args.max_sequences or None,
            baseline_neighbours={"n": args.neighbours, "generator": args.neighbour_generator} if args.neighbours else False,
            n_estimators=args.trees, batch_tokens=args.batch_tokens, use_cache=not args.no_cache, progress=progress,
        )
    finally:
        bar.close()
    print(res.summary_text())
    if args.out:
        paths = res.save(args.out, token_values=not args.no_token_values)
        print(f"wrote {', '.join(str(p) for p in paths.values())}")
    return 0
