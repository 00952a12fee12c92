"""The logic behind the "Inspect a text" page (kept out of the page so it stays thin).

* :func:`attack_scores`   every sequence-level attack's score for one text (cheap functions of the
  token statistics already computed; the calibration run's attack parameters and first-token
  rule when there is one, :func:`run_first_token`, so the scores equal the run's).
* :func:`placement_rows`  each score placed on a calibration run (``mia_core.metrics.placement``: percentile
  among its members and non-members, and the decision at the thresholds that flag 1 % / 5 % of its
  non-members, Mireshghallah et al. 2022 §2.4: member iff score >= t), formatted as table rows.
* :func:`reference_counts` token counts of the R^TF reference corpus.
* :func:`neighbour_section` the neighbour table and scatter (when ``mia_core.neighbours`` exists).
"""
from __future__ import annotations

import html

import numpy as np
import streamlit as st

from mia_core.attacks import REGISTRY, AttackInputs
from mia_core.errors import DataError, MiaError
from mia_core.metrics.placement import DECISION_FPRS, incomparable, place_score, run_groups
from mia_core.runs import list_runs
from mia_core.data.demo import demo_corpus_files

from .loaders import corpus_key, token_counts
from .options import worded
from .ui import fmt_num, fmt_pct, show_error, stage_progress

SEQUENCE_NEEDS = {"target", "target_lower", "reference"}


def calibration_runs(target_identity: str) -> list[dict]:
    """Saved runs on exactly this model (identity includes dtype and quantisation), newest first."""
    return [m for m in list_runs() if (m.get("target") or {}).get("identity") == target_identity]


def related_run(target_identity: str) -> dict | None:
    """The newest saved run on another model (e.g. the demo target, when Inspect is on the embedded
    model), to offer switching to it; None when there is none."""
    return next((m for m in list_runs() if (m.get("target") or not m.get("damaged"))  # a damaged run without a target
                 and (m.get("target") or {}).get("identity") != target_identity), None)  # is nothing to switch to


def sequence_attacks() -> list[str]:
    return [n for n, a in REGISTRY.items() if a.prepare is None and set(a.needs) <= SEQUENCE_NEEDS]


def run_first_token(run=None, default: bool = False) -> bool:
    """Whether attacks score each text's first token, as the calibration ``run`` did
    (``mia_core.attacks.base``): what the run recorded (``scored_tokens``), else its
    ``score_first_token``. Without a run, or a run that left it to the default: ``default`` (the
    target's, ``mia_core.stats.scores_first_token``: as the model was trained). A run saved before the
    rule existed has no such setting and scored every token."""
    cfg = (run.config or {}) if run is not None else {}
    rec = cfg.get("scored_tokens")
    if isinstance(rec, dict) and isinstance(rec.get("first_token"), bool):
        return rec["first_token"]
    if run is not None and "score_first_token" not in cfg:
        return True
    ft = cfg.get("score_first_token")
    if isinstance(ft, bool):
        return ft
    return bool(default)


def attack_scores(res: dict, run=None) -> tuple[dict[str, tuple[str, float]], list[str]]:
    """{attack: (label, score)} for one analysed text, plus notes on attacks left out."""
    inputs = AttackInputs(texts=[res["text"]], target=[res["stats"]],
                          target_lower=[res["lower"]] if res.get("lower") is not None else None,
                          reference=[res["ref"]] if res.get("ref") is not None else None,
                          same_tokenizer=res.get("same_tokenizer", True),
                          first_token=run_first_token(run, res.get("first_token_default", False)))
    run_params = ((run.config if run is not None else {}) or {}).get("params") or {}
    out, notes = {}, []
    for name in sequence_attacks():
        a = REGISTRY[name]
        if "target_lower" in a.needs and inputs.target_lower is None:
            notes.append(f"{a.label}: needs the lower-cased pass (tick it under Options).")
            continue
        if "reference" in a.needs and inputs.reference is None:
            notes.append(f"{a.label}: needs a reference model (choose one in the sidebar).")
            continue
        kw = a.kwargs(run_params)
        try:
            out[name] = (a.label, float(a.score(inputs, **kw)[0]))
        except MiaError as e:
            notes.append(f"{a.label}: {worded(e)}")
    return out, notes


def placement_rows(scores: dict[str, tuple[str, float]], run=None, *, ref_identity: str | None = None) -> list[dict]:
    """One row per attack: score, and (with a run) percentiles and decisions at 1 % / 5 % FPR.

    The placement is ``mia_core.metrics.placement``'s; this formats it. Keys starting with ``_`` hold the
    arrays for the placement figure; ``key`` is the attack name.
    """
    rows = []
    df = run.scores if run is not None else None
    run_ref = ((run.models.get("reference") or {}).get("identity")) if run is not None else None
    for name, (label, s) in scores.items():
        row = {"key": name, "Attack": label, "Score": fmt_num(s)}
        if df is not None:
            why = incomparable(df, name, run_reference=run_ref, reference=ref_identity)
            if why is not None:
                row["vs non-members"] = why
            else:
                p = place_score(s, *run_groups(df, name), DECISION_FPRS)
                if p is not None:
                    thr = {f"{fpr_lbl(f)} FPR": t for f, t in p.thresholds.items()}
                    row["Above % of non-members"] = fmt_pct(p.above_nonmembers)
                    row["Above % of members"] = fmt_pct(p.above_members)
                    for f, lab in zip(p.thresholds, thr):
                        row[f"Member at {lab}?"] = p.decision(f)
                    row.update({"_placed": True, "_members": p.members, "_nonmembers": p.nonmembers, "_value": s,
                                "_thresholds": thr})
        rows.append(row)
    return rows


def fpr_lbl(f: float) -> str:
    return f"{f * 100:g}%"


def reference_counts(lm, corpus: str, upload, stats) -> tuple[np.ndarray, str]:
    """Token counts of the chosen R^TF corpus and a phrase naming it."""
    vocab = lm.vocab_size
    if corpus == "demo":
        files = demo_corpus_files()
        if files:
            texts = tuple(p.read_text(encoding="utf-8", errors="replace") for p in files)
            return (token_counts(lm.identity, corpus_key(texts), lm.tokenizer, texts, vocab),
                    f"the bundled demo corpus ({len(files)} file{'s' if len(files) != 1 else ''})")
    if corpus == "upload":
        if upload is None:
            raise DataError("no reference corpus uploaded yet: upload a .txt file, or use this text itself.")
        from mia_core.data import MAX_BYTES, decode_bytes
        from mia_core.data.decoding import _read_bytes

        _, raw = _read_bytes(upload, MAX_BYTES)  # the same size limit as every other reader
        text, _ = decode_bytes(raw, upload.name)
        if not text.strip():
            raise DataError(f"{upload.name} holds no text.")
        texts = (text,)
        return token_counts(lm.identity, corpus_key(texts), lm.tokenizer, texts, vocab), f"{upload.name}"
    ids = np.asarray(stats.token_ids, dtype=np.int64)
    return (np.bincount(ids, minlength=vocab)[:vocab],
            "this text itself (no reference corpus: rarities are relative to the text, a rough stand-in)")


# ------------------------------------------------------------------ neighbours

def neighbour_spans(text: str, replaced) -> list[tuple[int, int]]:
    """Character spans of the replaced words in a neighbour of ``text``.

    ``replaced``: ``((word_index, old, new), ...)`` with word indices into
    ``mia_core.neighbours.words(text)``; later words shift by the length change of earlier ones.
    """
    from mia_core.neighbours import words

    ws = words(text)
    spans, shift = [], 0
    for idx, old, new in sorted((int(i), str(o), str(n)) for i, o, n in replaced):
        if not 0 <= idx < len(ws):
            continue
        start = ws[idx].start + shift
        spans.append((start, start + len(new)))
        shift += len(new) - len(ws[idx].text)
    return spans


def neighbour_settings(run=None, n: int | None = None):
    """The calibration run's neighbour settings when it used a neighbour attack (so the scatter
    compares like with like), else the neighbourhood attack's defaults; ``n`` overrides."""
    from mia_core.attacks.neighbourhood import settings_from

    ran = (run.config.get("attacks") or []) if run is not None else []
    name = next((a for a in ("smia", "neighbourhood") if a in ran), "neighbourhood")
    params = REGISTRY[name].kwargs((run.config.get("params") or {}) if run is not None else None)
    if n is not None:
        params["n"] = int(n)
    return settings_from(params)


def inspect_neighbours(lm, text: str, settings, *, progress, first_token: bool = False) -> dict:
    """Neighbours of one text with their target loss and embedding cosine similarity to the text.

    Losses follow the first-token rule (``first_token``; ``mia_core.attacks.base``), as the
    neighbourhood attack computes them."""
    from mia_core.attacks.base import scored_tokens
    from mia_core.stats.embeddings import neighbour_similarities
    from mia_core.neighbours import generate_neighbours
    from mia_core.stats import compute_stats

    nbs = generate_neighbours([text], settings, progress=progress)[0]
    if not nbs:
        return {"original_loss": float("nan"), "neighbours": []}
    stats = scored_tokens(compute_stats(lm, [n.text for n in nbs], progress=progress, label="neighbour pass"),
                          first_token)
    cos = neighbour_similarities([text], [nbs], progress=progress)[0]
    from mia_core.attacks.neighbourhood import coupling_warning

    return {"settings": settings.to_dict(), "first_token": bool(first_token), "warning": coupling_warning(settings, lm),
            "neighbours": [
        {"text": n.text, "spans": neighbour_spans(text, n.replaced), "loss": float(s.loss), "cosine": float(c),
         "replaced": [list(r) for r in n.replaced]} for n, s, c in zip(nbs, stats, cos)]}


def _highlight(text: str, spans, width: int = 90) -> str:
    """HTML of ``text`` with the replaced spans in <mark>; long texts cut around the first span."""
    spans = sorted((int(a), int(b)) for a, b in (spans or []) if 0 <= int(a) <= int(b) <= len(text))
    lo, hi = 0, len(text)
    if len(text) > 3 * width and spans:
        lo, hi = max(0, spans[0][0] - width), min(len(text), spans[-1][1] + width)
    out, cur = [], lo
    for a, b in spans:
        if a < cur or b > hi:
            continue
        out.append(html.escape(text[cur:a]))
        out.append(f"<mark style='background:#ffe066'>{html.escape(text[a:b])}</mark>")
        cur = b
    out.append(html.escape(text[cur:hi]))
    return ("…" if lo > 0 else "") + "".join(out) + ("…" if hi < len(text) else "")


def run_clouds(run) -> dict | None:
    """Member / non-member (embedding distance, loss change) pairs of a run's SMIA attack.

    SMIA's report keeps every (text, neighbour) pair's cosine and ``L(x) - L(x~)``; the
    scatter's y is the loss change ``L(x~) - L(x)``, so the sign flips. Evaluation pairs only.
    """
    if run is None:
        return None
    pairs = (run.extra.get("smia") or {}).get("pairs") if isinstance(run.extra.get("smia"), dict) else None
    if not pairs or not pairs.get("cosine"):
        return None
    cos = np.asarray(pairs["cosine"], dtype=float)
    dl = -np.asarray(pairs["loss_diff"], dtype=float)
    lab = np.asarray(pairs["label"], dtype=int)
    ev = np.asarray([s == "eval" for s in pairs.get("split", ["eval"] * len(cos))], dtype=bool)
    out = {}
    for name, v in (("members", 1), ("non-members", 0)):
        sel = (lab == v) & ev
        if sel.any():
            out[name] = (1.0 - cos[sel], dl[sel])
    return out or None


def neighbour_section(lm, res: dict, run=None) -> None:
    """Generate the text's neighbours behind a button; a table with the replaced words
    highlighted, each neighbour's loss and cosine similarity; and the distance / loss-change
    scatter over the calibration run's SMIA pairs when it has them."""
    from mia_core.reports import plots

    st.caption("Neighbours are copies of the text with one word replaced by a plausible substitute. A text the "
               "model was trained on tends to have a clearly lower loss than its neighbours (Mattern et al. 2023); "
               "SMIA also looks at how far the meaning moved (embedding distance). Generating and scoring them "
               "takes a while on a CPU.")
    default = neighbour_settings(run)
    c1, c2 = st.columns([1, 3])
    n = int(c1.number_input("Neighbours", 1, 200, int(default.n), key="inspect_nb_n"))
    c2.caption(f"Generator: {default.generator}, {default.m} word(s) replaced"
               + (" (the calibration run's settings)" if run is not None and default.to_dict() != neighbour_settings().to_dict() else ""))
    if st.button("Generate neighbours", key="inspect_nb_go"):
        slot = st.empty()
        cb = stage_progress(slot.container())
        try:
            out = inspect_neighbours(lm, res["text"], neighbour_settings(run, n), progress=cb,
                                     first_token=run_first_token(run, res.get("first_token_default", False)))
            st.session_state["inspect_neighbours"] = (res["hash"], lm.identity, out)
            slot.empty()
        except MiaError as e:
            show_error(e)
    got = st.session_state.get("inspect_neighbours")
    if not got or got[0] != res["hash"] or got[1] != lm.identity:
        return
    out = got[2]
    from mia_core.attacks.base import scored_tokens

    base = float(scored_tokens([res["stats"]], bool(out.get("first_token", False)))[0].loss)
    if out.get("warning"):
        st.warning(out["warning"])
    nbs = out.get("neighbours") or []
    if not nbs:
        st.warning("No neighbour could be generated: the text has no replaceable content word.")
        return
    rows = []
    for nb in sorted(nbs, key=lambda d: d["loss"]):
        swap = "; ".join(f"{o} → {w}" for _, o, w in nb.get("replaced", []))
        rows.append(f"<tr><td>{_highlight(str(nb['text']), nb.get('spans'))}</td><td>{html.escape(swap)}</td>"
                    f"<td>{fmt_num(nb['loss'])}</td>"
                    f"<td>{fmt_num(nb['loss'] - base)}</td><td>{fmt_num(nb['cosine'])}</td></tr>")
    mean_nb = float(np.nanmean([nb["loss"] for nb in nbs]))
    st.markdown(f"Loss of the text **{fmt_num(base)}**, mean over {len(nbs)} neighbours **{fmt_num(mean_nb)}** "
                f"(neighbourhood score {fmt_num(-(base - mean_nb))}; higher = more member-like).")
    st.html("<div style='max-height:420px;overflow:auto;max-width:100%'><table class='mia-neighbours' "
            "style='border-collapse:collapse;font-size:.9em;width:100%;table-layout:fixed;overflow-wrap:anywhere' "
            "border='1' cellpadding='5'><colgroup><col style='width:58%'><col style='width:16%'><col><col><col>"
            "</colgroup>"
            "<tr><th>Neighbour (replaced words highlighted)</th><th>Replaced</th><th>Loss</th><th>Loss change</th>"
            "<th>Cosine similarity</th></tr>" + "".join(rows) + "</table></div>")
    clouds = run_clouds(run)
    if run is not None and clouds is None:
        st.caption("The calibration run has no SMIA pairs to compare with (run SMIA to see its member / "
                   "non-member clouds here).")
    fig = plots.neighbour_scatter(
        [1.0 - nb["cosine"] for nb in nbs], [nb["loss"] - base for nb in nbs],
        hover=[html.escape(" ".join(f"{o} → {w}" for _, o, w in nb.get("replaced", []))) for nb in nbs],
        clouds=clouds)
    st.plotly_chart(fig, key="inspect_nb_scatter")
