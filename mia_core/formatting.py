"""Numbers for people: the one place where a figure becomes text.

The ground floor of ``mia_core``: it imports nothing from the package, so every layer (the metrics,
the time estimates, the report, the CLI, the pages) formats with the same rules:

* :func:`fmt_pct`      a rate as a percentage with 3 significant digits: 0.0123 -> '1.23%'
* :func:`fpr_label`    an FPR target, exactly: 0.001 -> '0.1%' (table headers, messages)
* :func:`fmt_auc`      an AUC and its CI, both to ``AUC_DECIMALS`` (3) decimals: '0.734 [0.650, 0.812]'
* :func:`fmt_rate_ci`  a rate and its CI: '12.3% [5.00%, 20.1%]'
* :func:`fmt_num`      a number with 3 significant digits
* :func:`fmt_seconds`, :func:`fmt_bytes`  durations and sizes
* :func:`finite`       a value as a float, or None when it cannot be shown as a number

A missing figure is shown as ``MISSING`` ('–'); a TPR that the number of non-members cannot
measure as ``NOT_ESTIMABLE`` ('n/e', see ``mia_core.metrics.tpr_estimable``).
"""
from __future__ import annotations

import math

MISSING = "–"
NOT_ESTIMABLE = "n/e"
AUC_DECIMALS = 3


def finite(v) -> float | None:
    """``v`` as a float, or ``None`` when it is missing, not a number, NaN or infinite (for display)."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _pair(ci) -> tuple[float, float] | None:
    """A CI ``[lo, hi]`` as two finite floats, or None when it is missing or not finite."""
    if not ci:
        return None
    lo, hi = finite(ci[0]), finite(ci[1])
    return None if lo is None or hi is None else (lo, hi)


def fmt_pct(v, sig: int = 3) -> str:
    """A rate as a percentage with ``sig`` significant digits: 0.0123 -> '1.23%', 1 -> '100%', 0 -> '0%'."""
    x = finite(v)
    if x is None:
        return MISSING
    p = x * 100.0
    if p == 0:
        return "0%"
    if abs(p) >= 100:
        return f"{p:.0f}%"
    digits = max(0, sig - 1 - int(math.floor(math.log10(abs(p)))))
    return f"{p:.{digits}f}%"


def fpr_label(f) -> str:
    """An FPR target as a label, exactly (no rounding): 0.001 -> '0.1%', 0.05 -> '5%'."""
    return f"{float(f) * 100:.10f}".rstrip("0").rstrip(".") + "%"


def fmt_num(v, sig: int = 3) -> str:
    """A number with ``sig`` significant digits, without scientific notation for ordinary sizes."""
    x = finite(v)
    if x is None:
        return MISSING
    if x == 0:
        return "0"
    mag = int(math.floor(math.log10(abs(x))))
    if mag >= sig:
        return f"{x:,.0f}"
    if mag < -4:
        return f"{x:.{sig - 1}e}"
    return f"{x:.{max(0, sig - 1 - mag)}f}"


def fmt_auc(auc, ci=None) -> str:
    """'0.734 [0.650, 0.812]': the AUC and, when given, its CI, all to ``AUC_DECIMALS`` decimals."""
    a = finite(auc)
    if a is None:
        return MISSING
    s = f"{a:.{AUC_DECIMALS}f}"
    pair = _pair(ci)
    if pair:
        s += f" [{pair[0]:.{AUC_DECIMALS}f}, {pair[1]:.{AUC_DECIMALS}f}]"
    return s


def fmt_rate_ci(v, ci=None) -> str:
    """'12.3% [5.00%, 20.1%]': a rate and, when given, its CI, as :func:`fmt_pct`."""
    s = fmt_pct(v)
    pair = _pair(ci)
    if pair:
        s += f" [{fmt_pct(pair[0])}, {fmt_pct(pair[1])}]"
    return s


def counted(n: int, plural: str) -> str:
    """``n`` and a noun given in the plural, in the singular for one: ``counted(1, "texts")`` is ``1 text``,
    ``counted(2_000, "books")`` is ``2,000 books`` (a noun that does not end in s is left as it is)."""
    word = plural
    if n == 1 and plural.endswith("sses"):  # passes -> pass
        word = plural[:-2]
    elif n == 1 and plural.endswith("s") and not plural.endswith("ss"):
        word = plural[:-1]
    return f"{n:,} {word}"


def fmt_seconds(s) -> str:
    """'12.3 s', '4 min 05 s', '2 h 03 min'."""
    x = finite(s)
    if x is None:
        return MISSING
    if x < 60:
        return f"{x:.1f} s"
    m, sec = divmod(int(round(x)), 60)
    if m < 60:
        return f"{m} min {sec:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


def fmt_bytes(n) -> str:
    """'1.5 GiB', '300.0 MiB', '12 bytes'."""
    x = finite(n)
    if x is None:
        return MISSING
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if x >= size:
            return f"{x / size:.1f} {unit}"
    return f"{int(x)} bytes"


def format_p(p: float, is_bound: bool = False) -> str:
    """``p = 0.0123``, ``p = 3.2e-05`` or ``p <= 1.0e-04`` (no permutation reached the statistic: the
    smallest p-value the permutations can give, the true one may be smaller)."""
    if is_bound:
        return f"p <= {p:.1e}"
    return f"p = {p:.4f}" if p >= 1e-3 else f"p = {p:.1e}"


def p_number(p: float, is_bound: bool = False) -> str:
    """The p-value alone, for a table cell or a metric: ``0.0123``, ``3.2e-05``, ``<= 1.0e-04``."""
    return format_p(p, is_bound).removeprefix("p = ").removeprefix("p ")
