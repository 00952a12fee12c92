"""Benchmark of the document-level audit (mia_core.documents, Meeus et al. 2024).

Three parts, each optional:

1. **Scoring a long book with the embedded model** (SmolLM2-135M, fp32): tokens/s and peak
   resident memory above the loaded-model baseline for one Gutenberg book (header/footer
   stripped), capped at ``--max-tokens`` tokens, at each context in ``--contexts`` (paper:
   128, 1024, 2048). Memory is sampled every 20 ms by a thread (/proc/self/statm), so the peak is the
   whole process's RSS, torch's allocations included.
2. **Bounded memory on a 200,000-token book**: the same windowed pass with a tiny model
   (vocabulary 1,024) over ``--long-tokens`` tokens, at two lengths, to show that the memory
   above the model does not grow with the book (only per-token scalars are kept).
3. **Controlled audit**: a tiny GPT-2 trained here on member documents cut from public-domain
   books (ground truth membership), then every normalisation × feature extractor, the
   sequence-level baselines scaled to documents, the partial-document curve (§6.4) and the
   precision table (fp32 / bf16 / fp16 / int8 / int4, Table 5).
4. **Partial-document curve** (``--partial-curve``): 42 + 42 Gutenberg excerpts of about 3,100 tokens,
   a tiny GPT-2 trained on the members, the curve of the paper's pipeline and of the best full-document
   pipeline with the first L tokens and with random excerpts (``--bins 1000`` for the paper's bins).

    python benchmarks/documents.py [--book FILE] [--max-tokens 3000] [--contexts 128,1024]
                                   [--long-tokens 200000] [--skip-embedded] [--skip-long]
                                   [--skip-controlled] [--partial-curve] [--json out.json]

Statistics are computed with ``use_cache=False`` so the timings are real model passes.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from mia_core.documents import load_documents  # noqa: E402
from mia_core.stats import StatsSettings, compute_stats  # noqa: E402

BOOK = Path("/work/shared/data/gutenberg/pg2701_melville_moby_dick.txt")
BOOKS = ROOT / "tests" / "data" / "books"


class PeakRSS:
    """Sample this process's resident set size (``/proc/self/statm``, Linux) in a thread; ``peak`` in bytes."""

    PAGE = os.sysconf("SC_PAGE_SIZE")

    def __init__(self, every: float = 0.02):
        self.every = every
        self.peak = 0
        self._stop = threading.Event()

    def rss(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self.PAGE

    def __enter__(self):
        self.start = self.rss()
        self.peak = self.start
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.rss())
            time.sleep(self.every)

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, self.rss())


def book_text(lm, paths: list[Path], n: int) -> tuple[str, int, dict]:
    """The first ``n`` tokens of the stripped book(s) (several books joined when one is too short)."""
    ids: list[int] = []
    strip = None
    for p in paths:
        doc = load_documents(p)[0]
        strip = strip or doc.strip
        ids += lm.tokenizer(doc.text, add_special_tokens=False)["input_ids"]
        if len(ids) >= n:
            break
    return lm.tokenizer.decode(ids[:n]), len(ids), strip


def measure(cfg: dict) -> dict:
    """Run in a fresh process: load the model, score ``tokens`` tokens of the book, report time and memory."""
    import resource

    from mia_core.models import load_causal_lm

    if cfg.get("threads"):
        import torch

        torch.set_num_threads(cfg["threads"])
    lm = load_causal_lm(cfg["model"], dtype="fp32")
    text, total, strip = book_text(lm, [Path(p) for p in cfg["books"]], cfg["tokens"])
    st = StatsSettings(context=cfg["context"], vocab_probs=True)
    if cfg.get("batch_tokens"):
        st.batch_tokens = cfg["batch_tokens"]
    import gc

    gc.collect()
    with PeakRSS() as mem:
        t0 = time.time()
        s = compute_stats(lm, [text], st, use_cache=False)[0]
        dt = time.time() - t0
    return {**{k: cfg[k] for k in ("context", "batch_tokens")}, "tokens": s.n_tokens, "book_tokens": total,
            "header_chars": strip["header_chars"], "footer_chars": strip["footer_chars"],
            "seconds": round(dt, 1), "tokens_per_s": round(s.n_tokens / dt, 1),
            "model_mb": round(lm.memory_bytes / 2**20), "vocab": lm.vocab_size,
            "rss_loaded_mb": round(mem.start / 2**20), "peak_above_mb": round((mem.peak - mem.start) / 2**20, 1),
            "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def run_measure(cfg: dict) -> dict:
    import subprocess

    r = subprocess.run([sys.executable, __file__, "--measure", json.dumps(cfg)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- part 1


def embedded_part(args) -> dict:
    cfgs = [{"context": c, "tokens": args.max_tokens, "batch_tokens": None} for c in args.contexts]
    cfgs.insert(1, {"context": args.contexts[0], "tokens": args.max_tokens // 2, "batch_tokens": None})
    cfgs.append({"context": args.contexts[0], "tokens": args.max_tokens // 2, "batch_tokens": 1024})
    rows = []
    for cfg in cfgs:
        r = run_measure({**cfg, "model": None, "books": [str(args.book)], "threads": args.threads})
        rows.append(r)
        print(f"  context {r['context']:>5}, batch_tokens {r['batch_tokens'] or 'default (4096)'}: {r['tokens']:,} of "
              f"{r['book_tokens']:,} tokens in {r['seconds']}s = {r['tokens_per_s']} tokens/s; RSS with model "
              f"loaded {r['rss_loaded_mb']} MiB, peak +{r['peak_above_mb']} MiB while scoring (ru_maxrss "
              f"{r['ru_maxrss_mb']} MiB)", flush=True)
    return {"book": args.book.name, "runs": rows}


# --------------------------------------------------------------------------- part 2


def long_part(args, tiny_dir: Path) -> dict:
    books = [str(args.book)] + [str(p) for p in sorted(Path(args.book).parent.glob("pg*.txt"))[:12]]
    rows = []
    for n in (args.long_tokens // 10, args.long_tokens):
        r = run_measure({"context": 128, "tokens": n, "batch_tokens": None, "model": str(tiny_dir), "books": books,
                         "threads": args.threads})
        rows.append(r)
        kept = 7 * 4 * r["tokens"] / 2**20  # five float32 + two int32 fields per token
        print(f"  tiny model (vocabulary {r['vocab']}), context 128: {r['tokens']:,} tokens in {r['seconds']}s; "
              f"RSS with model loaded {r['rss_loaded_mb']} MiB, peak +{r['peak_above_mb']} MiB while scoring "
              f"(per-token fields kept: {kept:.1f} MiB)", flush=True)
    return {"runs": rows}


# --------------------------------------------------------------------------- tiny model


def _pieces(text: str, n: int, size: int) -> list[str]:
    out, pos = [], 0
    for _ in range(n):
        end = text.rfind(" ", pos, pos + size)
        end = pos + size if end <= pos else end
        out.append(text[pos:end].strip())
        pos = end
    return out


def build_tiny(folder: Path, member_texts: list[str], all_texts: list[str], epochs: int = 6, seed: int = 0):
    """Byte-level BPE (1,024 tokens) + 2-layer GPT-2 (64 dims) trained on the member texts."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(all_texts, trainers.BpeTrainer(
        vocab_size=1024, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                                  pad_token="<|endoftext|>")
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_positions=256, n_embd=64, n_layer=2, n_head=4,
                                       bos_token_id=0, eos_token_id=0, pad_token_id=0, resid_pdrop=0.0,
                                       embd_pdrop=0.0, attn_pdrop=0.0))
    ids = np.concatenate([np.r_[0, tok(t)["input_ids"]] for t in member_texts])
    L, B, lr = 128, 8, 5e-3
    n = len(ids) // L
    blocks = torch.tensor(ids[: n * L].reshape(n, L))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=epochs * ((n + B - 1) // B), pct_start=0.1)
    t0 = time.time()
    for _ in range(epochs):
        perm = torch.randperm(n)
        for i in range(0, n, B):
            b = blocks[perm[i: i + B]]
            loss = model(input_ids=b, labels=b).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    model.eval()
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return {"train_tokens": int(len(ids)), "train_s": round(time.time() - t0, 1), "final_loss": round(float(loss.detach()), 3)}


# --------------------------------------------------------------------------- part 3


def controlled_part(args, tiny_dir: Path, members: list[str], nonmembers: list[str], train_info: dict) -> dict:
    from mia_core.documents import precision_table, run_document_audit
    from mia_core.models import load_causal_lm

    lm = load_causal_lm(str(tiny_dir))
    print(f"tiny target: {train_info}; {len(members)} member and {len(nonmembers)} non-member documents")
    t0 = time.time()
    res = run_document_audit(members, nonmembers, lm, reference=None, context=128, normalizations="all",
                             features="both", folds=5, n_bins=args.bins, seed=0,
                             partial_lengths=(50, 100, 200, 400, 800),  # paper's pipeline + best full-document one
                             baselines=True, baseline_max_sequences=8, use_cache=False)
    print(f"audit in {time.time() - t0:.0f}s ({res.timings})")
    print(res.summary_text())
    print("\nPrecision (Table 5), MaxNormGP + HistFE:")
    tab = precision_table(str(tiny_dir), members, nonmembers,
                          precisions=(("fp32", "none"), ("bf16", "none"), ("fp16", "none"), ("fp32", "int8"), ("fp32", "int4")),
                          pipeline=("maxnorm_gp", "hist"), folds=5, n_bins=args.bins, use_cache=False)
    with_err = tab.copy()
    print(with_err.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return {"audit": res.to_json(), "precision": tab.to_dict(orient="records")}


# --------------------------------------------------------------------------- part 4


GUTENBERG = ROOT.parent / "shared" / "data" / "gutenberg"


def partial_part(args) -> dict:
    """The partial-document curve (§6.4) on 42 + 42 Gutenberg excerpts (8,000 characters from a third of the
    way into each book) with a tiny GPT-2 trained on the members: full-document AUC of every pipeline, then the
    curve of the paper's MaxNormTF + HistFE and of the best full-document pipeline, first L tokens (the audit's
    protocol) and random excerpts of L tokens (the older curve), re-fitted at each L on the same folds."""
    import tempfile

    from mia_core.documents import cross_validate, make_folds, partial_curve
    from mia_core.documents.normalization import NORMALIZATIONS
    from mia_core.models import load_causal_lm

    texts = []
    for b in sorted(GUTENBERG.glob("pg*.txt"))[:84]:
        t = load_documents(b)[0].text
        a = t.find(" ", len(t) // 3) + 1
        texts.append(t[a: t.rfind(" ", a, a + 8000)].strip())
    members, nonmembers = texts[0::2], texts[1::2]
    with tempfile.TemporaryDirectory() as tmp:
        info = build_tiny(Path(tmp) / "tiny", members, texts, epochs=4)
        lm = load_causal_lm(str(Path(tmp) / "tiny"))
        st = StatsSettings(context=128, vocab_probs=True)
        stats = [compute_stats(lm, [t], st, use_cache=False)[0] for t in members + nonmembers]
    y = np.array([1] * len(members) + [0] * len(nonmembers))
    split = make_folds(y, 5, 0)
    kw = dict(vocab_size=lm.vocab_size, folds=split, seed=0, n_bins=args.bins, n_estimators=args.trees)
    cv = cross_validate(stats, y, list(NORMALIZATIONS), ["hist", "agg"], **kw)
    best = max(cv.metrics, key=lambda p: cv.metrics[p]["auc_mean"])
    print(f"tiny target: {info}; {np.mean([s.n_tokens for s in stats]):.0f} tokens per document on average")
    for name, m in sorted(cv.metrics.items(), key=lambda kv: -kv[1]["auc_mean"]):
        print(f"  full documents  {name:<18} {m['auc_mean']:.3f} ± {m['auc_std']:.3f}")
    pp = list(dict.fromkeys([("maxnorm_tf", "hist"), tuple(best.split("+"))]))
    out = {"train": info, "full": {p: cv.metrics[p]["auc_mean"] for p in cv.metrics}, "best": best, "curves": {}}
    kw.pop("folds")
    for position in ("start", "random"):
        c = partial_curve(stats, y, split, pp, lengths=(100, 250, 500, 1000, 2000), position=position, **kw)
        out["curves"][position] = c.to_dict(orient="records")
        for p in c["pipeline"].unique():
            sub = c[c.pipeline == p]
            print(f"  {position:<6} {p:<18} " + ", ".join(f"{r.n_tokens}: {r.auc_mean:.3f} ± {r.auc_std:.3f}"
                                                          for r in sub.itertuples()), flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--book", type=Path, default=BOOK)
    ap.add_argument("--max-tokens", type=int, default=3000, help="tokens of the book scored by the embedded model")
    ap.add_argument("--contexts", default="128,1024")
    ap.add_argument("--long-tokens", type=int, default=200_000)
    ap.add_argument("--bins", type=int, default=100, help="HistFE bins for the controlled run (paper: 1000)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    ap.add_argument("--skip-embedded", action="store_true")
    ap.add_argument("--skip-long", action="store_true")
    ap.add_argument("--skip-controlled", action="store_true")
    ap.add_argument("--partial-curve", action="store_true",
                    help="also part 4: the partial-document curve on 42 + 42 Gutenberg excerpts (../shared/data)")
    ap.add_argument("--trees", type=int, default=200, help="random-forest trees for part 4 (paper: 500)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--measure", default=None, help=argparse.SUPPRESS)  # internal: one measurement in a fresh process
    args = ap.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(json.loads(args.measure))))
        return 0
    args.contexts = [int(c) for c in args.contexts.split(",") if c.strip()]
    import tempfile

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    out: dict = {"torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count()}
    if not args.skip_embedded:
        print("== 1. long book, embedded model ==")
        out["embedded"] = embedded_part(args)
    if not (args.skip_long and args.skip_controlled):
        files = sorted(BOOKS.glob("*.txt"))
        texts = [f.read_text(encoding="utf-8") for f in files]
        members = [p for i, t in enumerate(texts) if i % 2 == 0 for p in _pieces(t, 4, 3000)]
        nonmembers = [p for i, t in enumerate(texts) if i % 2 == 1 for p in _pieces(t, 4, 3000)]
        with tempfile.TemporaryDirectory() as tmp:
            tiny = Path(tmp) / "tiny"
            info = build_tiny(tiny, members, texts)
            if not args.skip_long:
                print("== 2. bounded memory on a long book, tiny model ==")
                out["long"] = long_part(args, tiny)
            if not args.skip_controlled:
                print("== 3. controlled audit, tiny model trained on the member documents ==")
                out["controlled"] = controlled_part(args, tiny, members, nonmembers, info)
    if args.partial_curve:
        print("== 4. partial-document curve, tiny model trained on 42 Gutenberg excerpts ==")
        out["partial"] = partial_part(args)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
