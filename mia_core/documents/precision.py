"""Model precision as a mitigation (Meeus et al. 2024, §6.4, Table 5).

The same audit is run with the target model loaded at several precisions: full fp32,
half precision (bf16 or fp16) and bitsandbytes int8 / int4 (NF4) quantisation, through
``mia_core.models.load_causal_lm(spec, dtype=..., quantize=...)``. Each precision is a
different model identity, so its statistics are computed (and cached) separately.

On a CPU without native bf16 matrix units (AVX2 only) bf16/fp16 matmuls are many times
slower than fp32, and bitsandbytes' CPU kernels are slow too; keep such runs small.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Sequence

import pandas as pd

from ..errors import MiaError
from ..models import load_causal_lm
from .audit import PAPER_BEST, run_document_audit
from .pipeline import pipeline_name

DEFAULT_PRECISIONS = (("fp32", "none"), ("bf16", "none"), ("fp32", "int8"), ("fp32", "int4"))


def precision_label(dtype: str, quantize: str) -> str:
    """A precision's name in the table: the quantisation (``int8``, ``int4``) when there is one, else the dtype."""
    return quantize if quantize != "none" else dtype


def precision_table(
    spec: str | None,
    member_docs,
    nonmember_docs,
    *,
    precisions: Sequence[tuple[str, str]] = DEFAULT_PRECISIONS,
    pipeline: tuple[str, str] = PAPER_BEST,
    device: str = "auto",
    progress: Callable[[str, float], None] | None = None,
    **audit_kwargs,
) -> pd.DataFrame:
    """One row per precision: ``precision``, ``dtype``, ``quantize``, ``auc_mean``, ``auc_std``,
    ``tpr_1_mean``, ``tpr_10_mean``, ``seconds`` (audit wall time), ``tokens_per_s`` (of the model
    pass; cached statistics make it meaningless on a re-run), ``memory_mb`` and ``error`` (why a
    precision could not be run, e.g. bitsandbytes missing). Baselines and the partial-document
    curve are off; other keyword arguments go to ``run_document_audit``."""
    audit_kwargs = {"baselines": False, "partial_lengths": None, **audit_kwargs}
    norm, feat = pipeline
    name = pipeline_name(norm, feat)
    rows = []
    bnb_log = logging.getLogger("bitsandbytes")  # int8 logs one cast warning per matmul call
    level = bnb_log.level
    bnb_log.setLevel(logging.ERROR)
    try:
        for j, (dtype, quantize) in enumerate(precisions):
            rows.append(_one_precision(spec, member_docs, nonmember_docs, dtype, quantize, norm, feat, name, device,
                                       progress, j, len(precisions), audit_kwargs))
    finally:
        bnb_log.setLevel(level)
    return pd.DataFrame(rows)


def _one_precision(spec, member_docs, nonmember_docs, dtype, quantize, norm, feat, name, device, progress, j, n,
                   audit_kwargs) -> dict:
    """One row of ``precision_table``; a precision the backend cannot run gives a row with ``error``."""
    row = {"precision": precision_label(dtype, quantize), "dtype": dtype, "quantize": quantize,
           "auc_mean": float("nan"), "auc_std": float("nan"), "tpr_1_mean": float("nan"),
           "tpr_10_mean": float("nan"), "seconds": float("nan"), "tokens_per_s": float("nan"),
           "memory_mb": float("nan"), "error": ""}
    try:
        lm = load_causal_lm(spec, dtype=dtype, quantize=quantize, device=device, reuse=False)
        t0 = time.time()
        res = run_document_audit(
            member_docs, nonmember_docs, lm, normalizations=(norm,), features=(feat,),
            progress=(lambda m, f: progress(f"{row['precision']}: {m}", (j + f) / n)) if progress else None,
            **audit_kwargs,
        )
        m = res.metrics[name]
        row.update(
            auc_mean=m["auc_mean"], auc_std=m["auc_std"], tpr_1_mean=m["tpr_at_fpr_mean"]["0.01"],
            tpr_10_mean=m["tpr_at_fpr_mean"]["0.1"], seconds=time.time() - t0,
            tokens_per_s=res.timings["tokens"] / max(res.timings["stats_s"], 1e-9),
            memory_mb=lm.memory_bytes / 2**20,
        )
        del lm
    except MiaError as e:
        row["error"] = str(e)
    except (RuntimeError, ImportError, ValueError, NotImplementedError) as e:  # backend cannot run this precision here
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return row
