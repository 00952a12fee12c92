"""Plotly figure builders shared by the dashboard pages and the HTML report.

Plain Python + plotly (no Streamlit). Every attack has one fixed colour
(:data:`ATTACK_COLOURS`, unknown names get a stable colour from :data:`PALETTE`), members and
non-members have one colour each everywhere, and axes show rates as percentages.

* :func:`roc_figure`        ROC curves of all attacks of a run (linear or log-log axes; log-log is
  the field's convention for the low-FPR regime, Carlini et al. 2022 §IV-A).
* :func:`roc_overlay`       the same for several runs at once (one dash style per run).
* :func:`score_histograms`  member vs non-member score distributions, one panel per attack.
* :func:`placement_figure`  one text's score against a run's member/non-member distributions.
* :func:`token_strip`       a windowed per-token value along a long text.
* :func:`neighbour_scatter` embedding distance vs loss change of a text's neighbours.
* :func:`partial_documents_figure` document-level AUC vs tokens seen per book (Meeus et al. 2024 §6.4).
* :func:`population_histogram` members, non-members and a population with the population threshold
  (Mireshghallah et al. 2022 §2.4, their Figure 3).
* :func:`loss_curve`        a fine-tuned target's loss per epoch on its members and non-members.
* :func:`di_score_histogram` (:func:`di_score_title`), :func:`di_power_curve`, :func:`di_weights`  dataset inference (Maini et
  al. 2024): the combined out-of-fold scores of the two sets, the p-value against the number of texts,
  the linear model's feature weights.
"""
from __future__ import annotations

import hashlib
import math
from typing import Iterable, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..formatting import finite, fpr_label

# One colour per attack, the same on every page and in the report (Plotly's D3 palette).
ATTACK_COLOURS: dict[str, str] = {
    "loss": "#1f77b4",
    "zlib": "#ff7f0e",
    "lowercase": "#2ca02c",
    "ref": "#d62728",
    "min_k": "#9467bd",
    "min_k_pp": "#8c564b",
    "neighbourhood": "#e377c2",
    "smia": "#17becf",
    "blind": "#7f7f7f",
}
PALETTE = ("#bcbd22", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354")
MEMBER_COLOUR = "#c0392b"
NONMEMBER_COLOUR = "#2471a3"
POPULATION_COLOUR = "#7f7f7f"
DASHES = ("solid", "dash", "dot", "dashdot", "longdash")
TEMPLATE = "plotly_white"


def attack_colour(name: str) -> str:
    """The fixed colour of an attack; a stable palette colour for names not in the table."""
    if name in ATTACK_COLOURS:
        return ATTACK_COLOURS[name]
    h = int(hashlib.sha1(name.encode()).hexdigest(), 16)
    return PALETTE[h % len(PALETTE)]


def _label(name: str, m: dict | None) -> str:
    return str((m or {}).get("label") or name)



def _roc_points(m: dict, log: bool) -> tuple[np.ndarray, np.ndarray] | None:
    roc = (m or {}).get("roc") or {}
    fpr = np.asarray(roc.get("fpr") or [], dtype=float)
    tpr = np.asarray(roc.get("tpr") or [], dtype=float)
    if fpr.size == 0 or fpr.size != tpr.size:
        return None
    if log:
        ok = (fpr > 0) & (tpr > 0)
        fpr, tpr = fpr[ok], tpr[ok]
        if fpr.size == 0:
            return None
    return fpr, tpr


def _roc_curves(metrics: dict, names: Sequence[str], log: bool) -> tuple[list[tuple], float]:
    """(name, metrics, fpr, tpr, AUC or None) of each attack whose curve can be drawn, and the
    smallest positive FPR among them (1.0 when none)."""
    curves, min_fpr = [], 1.0
    for n in names:
        m = metrics[n]
        pts = _roc_points(m, log)
        if pts is None:
            continue
        fpr, tpr = pts
        if fpr[fpr > 0].size:
            min_fpr = min(min_fpr, float(fpr[fpr > 0].min()))
        curves.append((n, m, fpr, tpr, finite(m.get("auc"))))
    return curves, min_fpr


def _style_roc_axes(fig: go.Figure, log: bool, min_fpr: float) -> None:
    if log:
        lo = math.log10(max(min(min_fpr, 1e-2), 1e-6)) - 0.1
        decades = [10.0 ** e for e in range(int(math.floor(lo)) + 1, 1)]
        ticks = dict(tickvals=decades, ticktext=[_pct_tick(d) for d in decades])
        fig.update_xaxes(type="log", range=[lo, 0.02], title="False-positive rate (log)", **ticks)
        fig.update_yaxes(type="log", range=[lo, 0.02], title="True-positive rate (log)", **ticks)
    else:
        fig.update_xaxes(range=[0, 1], title="False-positive rate", tickformat=".0%")
        fig.update_yaxes(range=[0, 1.01], title="True-positive rate", tickformat=".0%")
    fig.update_layout(template=TEMPLATE, legend=dict(orientation="v", x=1.02, y=1), margin=dict(l=60, r=20, t=50, b=50))


def _pct_tick(v: float) -> str:
    return fpr_label(v)


def roc_figure(metrics: dict, *, log: bool = False, title: str | None = None,
               attacks: Sequence[str] | None = None, height: int = 460) -> go.Figure:
    """ROC curves (``metrics[attack]["roc"]``) of every attack on one plot, plus the chance line.
    An entry's ``"colour"`` overrides the attack colour (curves that are not attacks: folds).

    ``log``: log-log axes (points at FPR or TPR 0 cannot be drawn there and are left out).
    The legend gives each attack's AUC.
    """
    fig = go.Figure()
    names = [n for n in (attacks or metrics) if n in metrics and n != "blind"]
    curves, min_fpr = _roc_curves(metrics, names, log)
    for n, m, fpr, tpr, auc in curves:
        fig.add_trace(go.Scatter(
            x=fpr, y=tpr, mode="lines", name=f"{_label(n, m)} (AUC {auc:.3f})" if auc is not None else _label(n, m),
            line=dict(color=(m or {}).get("colour") or attack_colour(n), width=2, shape="hv"),
            hovertemplate="FPR %{x:.2%}<br>TPR %{y:.2%}<extra>" + _label(n, m) + "</extra>",
        ))
    if log:
        grid = np.logspace(math.log10(max(min(min_fpr, 1e-2), 1e-6)) - 0.1, 0, 50)
        fig.add_trace(go.Scatter(x=grid, y=grid, mode="lines", name="chance (AUC 0.5)",
                                 line=dict(color="#999", dash="dot", width=1), hoverinfo="skip"))
    else:
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="chance (AUC 0.5)",
                                 line=dict(color="#999", dash="dot", width=1), hoverinfo="skip"))
    _style_roc_axes(fig, log, min_fpr)
    fig.update_layout(title=title or ("ROC curves (log-log)" if log else "ROC curves"), height=height)
    return fig


def roc_overlay(runs: Sequence[tuple[str, dict]], *, log: bool = False, attacks: Sequence[str] | None = None,
                height: int = 480) -> go.Figure:
    """ROC curves of several runs: colour = attack, dash style = run (``runs``: (label, metrics))."""
    fig = go.Figure()
    min_fpr = 1.0
    for r, (run_label, metrics) in enumerate(runs):
        dash = DASHES[r % len(DASHES)]
        names = [n for n in (attacks or metrics) if n in metrics and n != "blind"]
        curves, run_min_fpr = _roc_curves(metrics, names, log)
        min_fpr = min(min_fpr, run_min_fpr)
        for n, m, fpr, tpr, auc in curves:
            fig.add_trace(go.Scatter(
                x=fpr, y=tpr, mode="lines", legendgroup=run_label,
                name=f"{run_label} · {_label(n, m)}" + (f" ({auc:.3f})" if auc is not None else ""),
                line=dict(color=attack_colour(n), width=2, dash=dash, shape="hv"),
                hovertemplate="FPR %{x:.2%}<br>TPR %{y:.2%}<extra>" + f"{run_label} · {_label(n, m)}" + "</extra>",
            ))
    diag = np.logspace(-6, 0, 50) if log else np.array([0.0, 1.0])
    fig.add_trace(go.Scatter(x=diag, y=diag, mode="lines", name="chance", line=dict(color="#999", dash="dot", width=1),
                             hoverinfo="skip"))
    _style_roc_axes(fig, log, min_fpr)
    fig.update_layout(title="ROC curves, runs compared" + (" (log-log)" if log else ""), height=height)
    return fig


def score_histograms(scores, attacks: Sequence[str], *, labels: dict | None = None, eval_only: bool = True,
                     cols: int = 2, nbins: int = 30, height_per_row: int = 260) -> go.Figure:
    """Member vs non-member score histograms, one panel per attack (overlaid, normalised to %).

    ``scores``: the run's scores table (``label`` column: 1 member, 0 non-member; one column per
    attack; an optional ``split`` column whose ``eval`` rows are used when ``eval_only``).
    """
    df = scores
    if eval_only and "split" in df.columns:
        df = df[df["split"] == "eval"]
    names = [a for a in attacks if a in df.columns]
    if not names:
        return go.Figure()
    cols = max(1, min(cols, len(names)))
    rows = int(math.ceil(len(names) / cols))
    titles = [(labels or {}).get(a, a) for a in names]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.08, vertical_spacing=0.14 if rows > 1 else 0.1)
    for i, a in enumerate(names):
        r, c = i // cols + 1, i % cols + 1
        for lab, name, colour in ((1, "members", MEMBER_COLOUR), (0, "non-members", NONMEMBER_COLOUR)):
            v = df.loc[df["label"] == lab, a].to_numpy(dtype=float)
            v = v[np.isfinite(v)]
            fig.add_trace(go.Histogram(
                x=v, name=name, legendgroup=name, showlegend=(i == 0), marker_color=colour, opacity=0.55,
                nbinsx=nbins, histnorm="percent",
                hovertemplate="score %{x}<br>%{y:.1f}% of " + name + "<extra></extra>",
            ), row=r, col=c)
        fig.update_xaxes(title_text="score (higher = member)", row=r, col=c, title_font=dict(size=11))
        fig.update_yaxes(title_text="% of set", row=r, col=c, title_font=dict(size=11))
    fig.update_layout(barmode="overlay", template=TEMPLATE, height=max(300, rows * height_per_row),
                      title="Score distributions: members vs non-members", margin=dict(l=60, r=20, t=70, b=40),
                      legend=dict(orientation="h", y=1.08, x=1, xanchor="right"))
    return fig


def placement_figure(member_scores: Iterable[float], nonmember_scores: Iterable[float], value: float, *,
                     thresholds: dict[str, float] | None = None, title: str = "", nbins: int = 30,
                     height: int = 300) -> go.Figure:
    """A text's score (vertical line) on a calibration run's member/non-member histograms.

    ``thresholds``: label -> score threshold (e.g. ``{"1% FPR": t1, "5% FPR": t5}``), drawn dotted.
    """
    fig = go.Figure()
    for v, name, colour in ((member_scores, "members", MEMBER_COLOUR), (nonmember_scores, "non-members", NONMEMBER_COLOUR)):
        arr = np.asarray(list(v), dtype=float)
        arr = arr[np.isfinite(arr)]
        fig.add_trace(go.Histogram(x=arr, name=f"{name} (calibration run)", marker_color=colour, opacity=0.5,
                                   nbinsx=nbins, histnorm="percent"))
    # threshold labels at the foot of their lines, leaning away from each other (the stricter, higher
    # threshold to the right), and "this text" at the top: no label covers another
    shown = sorted(((t, lab) for lab, t in (thresholds or {}).items() if finite(t) is not None), key=lambda x: x[0])
    for i, (t, lab) in enumerate(shown):
        fig.add_vline(x=t, line=dict(color="#555", dash="dot", width=1), annotation_text=lab,
                      annotation_position="bottom right" if i == len(shown) - 1 and i else "bottom left",
                      annotation_font_size=10)
    if finite(value) is not None:
        fig.add_vline(x=value, line=dict(color="#111", width=3), annotation_text="this text",
                      annotation_position="top right")
    fig.update_layout(barmode="overlay", template=TEMPLATE, title=title, height=height,
                      xaxis_title="score (higher = member)", yaxis_title="% of set",
                      margin=dict(l=60, r=20, t=50, b=40), legend=dict(orientation="h", y=-0.3))
    return fig


def token_strip(values: np.ndarray, *, window: int, ylabel: str, title: str = "",
                height: int = 300, percent: bool = False) -> go.Figure:
    """Mean of a per-token value over consecutive windows of ``window`` tokens, along the text."""
    v = np.asarray(values, dtype=float)
    n = v.size
    starts = np.arange(0, n, max(1, window))
    means = np.array([np.nanmean(v[s:s + window]) if np.isfinite(v[s:s + window]).any() else np.nan for s in starts])
    fig = go.Figure(go.Scatter(
        x=starts + 1, y=means, mode="lines", line=dict(color="#1f77b4", width=1.5), fill="tozeroy" if percent else None,
        hovertemplate=f"tokens %{{x}}-%{{customdata}}<br>mean {ylabel}: %{{y:.3g}}<extra></extra>",
        customdata=np.minimum(starts + window, n),
    ))
    fig.update_layout(template=TEMPLATE, height=height, title=title or f"Mean {ylabel} per {window}-token window",
                      xaxis_title="token position", yaxis_title=ylabel, margin=dict(l=60, r=20, t=50, b=40))
    if percent:
        fig.update_yaxes(tickformat=".0%")
    return fig


def neighbour_scatter(distance: Sequence[float], loss_change: Sequence[float], *, hover: Sequence[str] | None = None,
                      clouds: dict[str, tuple[Sequence[float], Sequence[float]]] | None = None,
                      height: int = 420) -> go.Figure:
    """x: embedding distance of each neighbour to the original, y: loss change (neighbour - original).

    ``clouds``: optional ``{"members": (x, y), "non-members": (x, y)}`` from a calibration run,
    drawn underneath in the member/non-member colours.
    """
    fig = go.Figure()
    for name, (x, y) in (clouds or {}).items():
        colour = MEMBER_COLOUR if name.startswith("member") else NONMEMBER_COLOUR
        fig.add_trace(go.Scatter(x=list(x), y=list(y), mode="markers", name=f"{name} (calibration run)",
                                 marker=dict(color=colour, size=5, opacity=0.25)))
    fig.add_trace(go.Scatter(
        x=list(distance), y=list(loss_change), mode="markers", name="this text's neighbours",
        marker=dict(color="#111", size=9, symbol="diamond"), text=list(hover) if hover is not None else None,
        hovertemplate="distance %{x:.3g}<br>loss change %{y:.3g}<br>%{text}<extra></extra>" if hover is not None else None,
    ))
    fig.update_layout(template=TEMPLATE, height=height, title="Neighbours: embedding distance vs loss change",
                      xaxis_title="embedding distance to the original (1 - cosine)",
                      yaxis_title="loss(neighbour) - loss(original)", margin=dict(l=60, r=20, t=50, b=40))
    # one outlier used to squash the rest (24 of 25 points stacked near 0): the view spans the bulk of this
    # text's neighbours; points beyond it are counted on the plot (a double-click shows everything)
    outside = 0
    for axis, v in (("xaxis", distance), ("yaxis", loss_change)):
        lo, hi, out = robust_range(v)
        if lo is not None:
            fig.update_layout(**{axis: dict(range=[lo, hi])})
            outside = max(outside, out)
    if outside:
        fig.add_annotation(text=f"{outside} neighbour(s) outside this view: double-click the plot to see all",
                           xref="paper", yref="paper", x=1, y=1.02, showarrow=False, font=dict(size=11, color="#666"))
    return fig


def robust_range(values: Sequence[float], q: float = 5.0, spread: float = 3.0):
    """``(lo, hi, n outside)`` of an axis that shows the bulk of ``values``: the ``q``..``100-q`` percentile
    span, widened by ``spread`` times itself on each side only where a value lies beyond it; ``(None, None, 0)``
    when every value fits (the axis then scales itself)."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if len(v) < 5:
        return None, None, 0
    a, b = np.percentile(v, [q, 100 - q])
    width = max(b - a, 1e-9)
    lo, hi = a - spread * width, b + spread * width
    out = int(((v < lo) | (v > hi)).sum())
    if not out:
        return None, None, 0
    pad = 0.08 * width
    return float(max(lo, v[v >= lo].min()) - pad), float(min(hi, v[v <= hi].max()) + pad), out


def partial_documents_figure(partial) -> go.Figure:
    """AUC (mean ± std over folds) against the number of tokens seen per book, one line per pipeline.

    ``partial``: the partial-document table of a document audit (``mia_core.documents.partial``;
    columns ``pipeline``, ``n_tokens``, ``auc_mean``, ``auc_std``). Meeus et al. 2024 §6.4.
    """
    fig = go.Figure()
    for p in partial["pipeline"].unique():
        sub = partial[partial["pipeline"] == p]
        err = sub["auc_std"].fillna(0).to_numpy()
        fig.add_trace(go.Scatter(x=sub["n_tokens"], y=sub["auc_mean"], mode="lines+markers", name=p,
                                 error_y=dict(type="data", array=err, visible=True),
                                 hovertemplate="%{x} tokens<br>AUC %{y:.3f}<extra>" + p + "</extra>"))
    fig.add_hline(y=0.5, line=dict(color="#999", dash="dot"), annotation_text="chance")
    fig.update_layout(template=TEMPLATE, height=360, xaxis_title="tokens per book (log)",
                      yaxis_title="AUC (mean over folds)", xaxis_type="log", yaxis_range=[0, 1.02],
                      title="AUC vs tokens seen per book")
    return fig


def population_histogram(member_scores: Iterable[float], nonmember_scores: Iterable[float],
                         population_scores: Iterable[float], *, threshold: float | None = None,
                         threshold_label: str = "threshold", title: str = "") -> go.Figure:
    """Members, non-members and population scores with the population threshold (dashed).

    Mireshghallah et al. 2022, Figure 3: the threshold flags a fraction α of the population
    (``mia_core.metrics.population_threshold``); ``threshold_label`` annotates it.
    """
    fig = go.Figure()
    sets = ((member_scores, "members", MEMBER_COLOUR),
            (nonmember_scores, "non-members", NONMEMBER_COLOUR),
            (population_scores, "population", POPULATION_COLOUR))
    for v, name, colour in sets:
        arr = np.asarray(v, dtype=float)
        arr = arr[np.isfinite(arr)]
        fig.add_trace(go.Histogram(x=arr, name=name, marker_color=colour, opacity=0.5, nbinsx=30, histnorm="percent",
                                   hovertemplate="score %{x}<br>%{y:.1f}% of " + name + "<extra></extra>"))
    if threshold is not None and np.isfinite(threshold):
        fig.add_vline(x=threshold, line=dict(color="#111", width=2, dash="dash"),
                      annotation_text=threshold_label,
                      annotation_position="top right", annotation_font_size=11)
    fig.update_layout(barmode="overlay", template=TEMPLATE, height=340, title=title,
                      xaxis_title="score (higher = member)", yaxis_title="% of set",
                      margin=dict(l=60, r=20, t=50, b=40), legend=dict(orientation="h", y=-0.25))
    return fig


def loss_curve(history) -> go.Figure:
    """Mean token loss per epoch on the members (trained on) and the non-members (held out).

    ``history``: the ``history`` of ``mia_core.targets.make_target``'s training log as a table
    (columns ``epoch``, ``train_loss``, ``heldout_loss``; a column that is absent or all missing is
    not drawn).
    """
    fig = go.Figure()
    for col, lab, colour in (("train_loss", "members (trained on)", MEMBER_COLOUR),
                             ("heldout_loss", "non-members (held out)", NONMEMBER_COLOUR)):
        if col in history and history[col].notna().any():
            fig.add_trace(go.Scatter(x=history["epoch"], y=history[col], mode="lines+markers", name=lab,
                                     line=dict(color=colour)))
    fig.update_layout(template=TEMPLATE, height=320, title="Loss per epoch", xaxis_title="epoch",
                      yaxis_title="mean token loss (nats)")
    if "epoch" in history and len(history["epoch"]):  # whole epochs only, tight around them (one epoch: 0 and 1)
        lo, hi = float(min(history["epoch"])), float(max(history["epoch"]))
        fig.update_xaxes(dtick=1, range=[lo - 0.3, hi + 0.3],
                         title="epoch (0: before training)" if lo == 0 else "epoch")
    return fig


def smia_learning_curve(curves: dict) -> go.Figure:
    """SMIA's training and validation loss per epoch (class-balanced BCE), the validation AUC
    (per text, right axis), the constant predictor's loss (ln 2: a network below it learned
    something that generalises) and the kept epoch. ``curves``: ``train_smia``'s curves."""
    from plotly.subplots import make_subplots

    ep = list(curves.get("epoch") or [])
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=ep, y=curves.get("train_loss"), mode="lines", name="training loss",
                             line=dict(color=MEMBER_COLOUR)), secondary_y=False)
    fig.add_trace(go.Scatter(x=ep, y=curves.get("val_loss"), mode="lines", name="validation loss",
                             line=dict(color=NONMEMBER_COLOUR)), secondary_y=False)
    if curves.get("val_auc"):
        fig.add_trace(go.Scatter(x=ep, y=curves.get("val_auc"), mode="lines", name="validation AUC (per text)",
                                 line=dict(color="#555555", dash="dot")), secondary_y=True)
    chance = curves.get("chance_val_loss")
    if chance is not None and ep:
        fig.add_trace(go.Scatter(x=[ep[0], ep[-1]], y=[chance, chance], mode="lines", name="constant predictor (ln 2)",
                                 line=dict(color="#999999", dash="dash")), secondary_y=False)
    best = curves.get("best_epoch")
    if best:
        fig.add_vline(x=best, line=dict(color="#2ca02c", dash="dot"), annotation_text=f"kept: epoch {best}",
                      annotation_position="top")
    fig.update_layout(template=TEMPLATE, height=340, title="SMIA learning curve", xaxis_title="epoch",
                      margin=dict(l=60, r=60, t=50, b=40), legend=dict(orientation="h", y=-0.25))
    fig.update_yaxes(title_text="loss (balanced BCE)", secondary_y=False)
    fig.update_yaxes(title_text="validation AUC", range=[0, 1], secondary_y=True)
    return fig


def di_score_title(combination) -> str:
    """The combined-score histogram's title for a run's ``combination``: out of fold only where weights were
    fitted (``nonneg``); a fixed combination reads no label."""
    return "Combined score (out of fold)" if combination in (None, "nonneg") else "Combined score (no label read)"


def di_score_histogram(suspect_scores: Iterable[float], validation_scores: Iterable[float], *,
                       title: str = "Combined score (out of fold)") -> go.Figure:
    """Dataset inference: each text's combined score (``nonneg``: from the fold model that did not see it); the
    suspect set (member colour) lies to the right of the validation set (non-member colour) when it was trained on."""
    fig = go.Figure()
    for v, name, colour in ((suspect_scores, "suspect", MEMBER_COLOUR), (validation_scores, "validation",
                                                                           NONMEMBER_COLOUR)):
        arr = np.asarray(v, dtype=float)
        arr = arr[np.isfinite(arr)]
        fig.add_trace(go.Histogram(x=arr, name=name, marker_color=colour, opacity=0.55, nbinsx=30, histnorm="percent",
                                   hovertemplate="score %{x}<br>%{y:.1f}% of the " + name + " set<extra></extra>"))
    fig.update_layout(barmode="overlay", template=TEMPLATE, height=320, title=title,
                      xaxis_title="combined score (higher = more like trained-on)", yaxis_title="% of set",
                      margin=dict(l=60, r=20, t=50, b=40), legend=dict(orientation="h", y=-0.28))
    return fig


def di_power_curve(curve: Sequence[dict], *, alpha: float | None = None,
                   n_permutations: int | None = None) -> go.Figure:
    """Dataset inference: the test's p-value (median and range over random subsets) against the number of
    suspect texts, log scale, with the significance level and the floor of the curve's permutations
    (``1 / (B + 1)``; the headline's ``n_permutations``, when given, named beside it). Whole texts on the x-axis."""
    n = [c["n"] for c in curve]
    med = [max(c["median_p"], 1e-6) for c in curve]
    lo = [max(c["min_p"], 1e-6) for c in curve]
    hi = [max(c["max_p"], 1e-6) for c in curve]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=n + n[::-1], y=hi + lo[::-1], fill="toself", fillcolor="rgba(192,57,43,0.15)",
                             mode="lines", line=dict(width=0), hoverinfo="skip", name="range over subsets"))
    fig.add_trace(go.Scatter(x=n, y=med, mode="lines+markers", line=dict(color=MEMBER_COLOUR), name="median p",
                             hovertemplate="%{x} + %{x} texts: median p %{y:.2g}<extra></extra>"))
    # each line's note is placed by hand, in log10 units: add_hline's own annotation on a log axis takes the value as
    # its exponent and drew both notes at the top, over each other (issue 53 item 9)
    if alpha:
        fig.add_hline(y=alpha, line=dict(color="#111", dash="dash"))
        fig.add_annotation(x=1, xref="paper", xanchor="right", y=math.log10(alpha), yref="y", yanchor="bottom",
                           text=f"alpha = {alpha:g}", showarrow=False)
    floor = curve[0].get("floor") if curve else None
    if floor:  # the smallest p the curve's permutations can give: a point on it is a bound
        b = round(1 / floor) - 1
        head = f"; the headline used {int(n_permutations):,}" if n_permutations and n_permutations != b else ""
        fig.add_hline(y=floor, line=dict(color="#888", dash="dot"))
        fig.add_annotation(x=1, xref="paper", xanchor="right", y=math.log10(floor), yref="y", yanchor="top",
                           text=f"floor: 1/({b:,}+1) = {floor:.2g}, the least p of {b:,} permutations{head}",
                           showarrow=False, font=dict(color="#555"))
    fig.update_xaxes(tickvals=n, tickformat="d")  # whole numbers of texts only
    fig.update_layout(template=TEMPLATE, height=360,
                      title="Texts the claim needs (descriptive)",
                      xaxis_title="suspect texts (+ as many validation), from these texts",
                      yaxis_title="p-value",
                      margin=dict(l=60, r=20, t=50, b=90), legend=dict(orientation="h", y=-0.42))
    # the range holds the floor too, with room below it: its note sits inside the plot, not over the x-axis title
    low = min(lo + ([alpha] if alpha else []) + ([floor] if floor else []))
    ticks = [10.0 ** -e for e in range(0, int(math.ceil(-math.log10(max(low, 1e-6)))) + 1)]
    fig.update_yaxes(type="log", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks],
                     range=[math.log10(max(low, 1e-6)) - 0.5, 0.15])
    return fig


def di_weights(weights: dict) -> go.Figure:
    """Dataset inference: the linear model's weight per standardised feature (positive: higher on suspect texts)."""
    items = sorted(weights.items(), key=lambda kv: kv[1])
    fig = go.Figure(go.Bar(x=[v for _, v in items], y=[k for k, _ in items], orientation="h",
                           marker_color=[MEMBER_COLOUR if v > 0 else NONMEMBER_COLOUR for _, v in items],
                           hovertemplate="%{y}: %{x:.3f}<extra></extra>"))
    fig.update_layout(template=TEMPLATE, height=max(240, 22 * len(items) + 80), title="Feature weights",
                      xaxis_title="weight on the standardised feature (non-negative: higher = more member-like)",
                      margin=dict(l=120, r=20, t=50, b=40))
    return fig
