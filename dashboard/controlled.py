"""The logic behind the "Controlled experiment" page (kept out of the page so it stays thin).

The page gathers its settings into one dict (the keys of :func:`plan`); :func:`plan` checks every one and splits
the corpus, nothing written yet; :func:`build_job` makes the background job that writes the split and fine-tunes
the target through the engine (``mia_core.api.targets``); :func:`take_built` hands its result over in
``st.session_state`` (:data:`KEYS`);
:func:`show_target` shows it and :func:`use_target` puts it in the sidebar.
"""
from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pandas as pd
import streamlit as st

from mia_core.api.targets import build_target, experiment_folder, read_corpus, write_split
from mia_core.api.data import SplitOptions, split_corpus
from mia_core.errors import DataError, MiaError, SettingsError
from mia_core.models import EMBEDDED_NAME

from .audit_jobs import AuditJob
from .ui import fmt_num, fmt_seconds, md_text

UPLOAD_TYPES = ["txt", "text", "csv", "tsv", "jsonl", "json", "parquet", "arrow", "feather", "zip"]
CALIBRATION_PAGE = "pages/2_Calibration_run.py"
KEYS = ("controlled_target", "controlled_members", "controlled_nonmembers", "controlled_population",
        "controlled_reference", "controlled_log")
_READ_NOTE = re.compile(r"^.*: read \d+ texts")  # a reader's per-file count, summed into one line by plan()


def corpus_texts(source: str, demo_files, uploads, mode: str) -> tuple[list[str], list[str]]:
    """The corpus's distinct texts and the readers' notes; every note but the per-file counts shown as a caption
    (e.g. a file read as Windows-1252: shown even when a later check fails).

    Parameters
    ----------
    source : {"demo", "upload"}
        The bundled demo corpus or the uploaded files.
    demo_files : list of pathlib.Path
        The demo corpus's files.
    uploads : list of file-like or None
        The uploaded files.
    mode : str
        How uploaded .txt files hold their texts.

    Returns
    -------
    texts : list of str
        The distinct texts.
    notes : list of str
        The readers' notes.
    """
    notes: list[str] = []
    if source == "demo":
        items, m = demo_files, "lines"
    else:
        if not uploads:
            raise DataError("upload a corpus first (or choose the bundled demo corpus).")
        items, m = list(uploads), mode
    texts = read_corpus(items, mode=m, notes=notes)
    for n_ in notes:
        if not _READ_NOTE.match(n_):
            st.caption(n_)
    return texts, notes


def parse_lr(text: str) -> float | None:
    """The learning rate typed on the page: None when blank, else checked by its declared domain
    (``mia_core.targets.options.TargetOptions``: a number > 0).

    Parameters
    ----------
    text : str
        What was typed.

    Returns
    -------
    float or None
        The learning rate; None for the method's default.
    """
    from mia_core.targets.options import TargetOptions

    if not text.strip():
        return None
    return TargetOptions.check_some(strict=False, lr=text.strip())["lr"]


def base_model(choice: str, custom: str) -> str:
    """The base model's spec: the embedded model, or the hub id / local folder typed (checked to exist now).

    Parameters
    ----------
    choice : {"smollm2", "custom"}
        The page's choice.
    custom : str
        The hub id or folder typed.

    Returns
    -------
    str
        The spec.
    """
    base = EMBEDDED_NAME if choice == "smollm2" else custom.strip()
    if not base:
        raise SettingsError("type a hub id or a local folder for the base model.")
    if base != EMBEDDED_NAME:
        from mia_core.models.hub import locate

        locate(base)  # a path that does not exist: ModelError now, before anything is written
    return base


def plan(cfg: dict) -> dict:
    """Check every input and split the corpus (raises MiaError); nothing is written or trained yet.

    Parameters
    ----------
    cfg : dict
        The page's settings: ``epochs``, ``lr_text``, ``base_choice``, ``base_custom``, ``name``, ``source``,
        ``demo_files``, ``uploads``, ``mode``, ``max_texts``, ``shares`` (members, non-members, population %),
        ``seed``.

    Returns
    -------
    dict
        ``sets`` (the split), ``notes``, ``base``, ``lr`` and ``out_root`` (the experiment folder).
    """
    from mia_core.targets.options import TargetOptions

    TargetOptions.check_some(epochs=int(cfg["epochs"]), seed=int(cfg["seed"]), max_length=int(cfg["max_length"]),
                             batch_size=int(cfg["batch_size"]), method=cfg["method"])  # the one check, declared once
    lr = parse_lr(cfg["lr_text"])
    base = base_model(cfg["base_choice"], cfg["base_custom"])
    out_root = experiment_folder(cfg["name"])
    texts, notes = corpus_texts(cfg["source"], cfg["demo_files"], cfg["uploads"], cfg["mode"])
    total = len(texts)
    max_texts = SplitOptions.check_some(strict=False, max_texts=cfg["max_texts"])["max_texts"]  # its declared domain
    if max_texts > 0:
        texts = texts[:max_texts] if len(texts) > max_texts else texts
    n = len(texts)
    files = sum(bool(_READ_NOTE.match(n_)) for n_ in notes)
    st.caption(f"Read {total:,} distinct texts" + (f" from {files} files" if files > 1 else "")
               + (f"; this experiment uses the first {n:,}." if n < total else "."))
    sets = split_corpus(texts, tuple(cfg["shares"]), cfg["seed"])  # the shares and seed checked by their domains
    return {"sets": sets, "notes": notes, "base": base, "lr": lr, "out_root": out_root}


ESTIMATE_MAX_BYTES = 5 * 2**20  # uploads above this are not re-read on every change of the page just to estimate


def estimate_line(cfg: dict, panel) -> str:
    """The line shown before "Build the target" (``mia_core.api.targets.estimate_build``): the training epochs x
    the members' tokens at about 3 forward passes a token, plus the held-out scoring, at this machine's measured
    speed for the base model (looked up among the models loaded already, never loaded here). Empty on bad input
    (Build says why) and for uploads over 5 MB.

    Parameters
    ----------
    cfg : dict
        The page's settings (:func:`build`'s).
    panel
        The sidebar's model panel (dtype, device).

    Returns
    -------
    str
    """
    from mia_core.api.targets import estimate_build

    from .loaders import loaded

    if cfg["source"] != "demo" and sum(getattr(f, "size", 0) or 0 for f in cfg["uploads"] or []) > ESTIMATE_MAX_BYTES:
        return ""
    try:
        if int(cfg["epochs"]) < 1 or (cfg["source"] != "demo" and not cfg["uploads"]):
            return ""
        base = base_model(cfg["base_choice"], cfg["base_custom"])
        items = cfg["demo_files"] if cfg["source"] == "demo" else list(cfg["uploads"])
        texts = read_corpus(items, mode="lines" if cfg["source"] == "demo" else cfg["mode"], notes=[])
        if int(cfg["max_texts"]) > 0:
            texts = texts[:int(cfg["max_texts"])]
        sets = split_corpus(texts, tuple(int(x) for x in cfg["shares"]), int(cfg["seed"]))
    except (MiaError, OSError, ValueError):
        return ""
    lm = loaded(base, panel.dtype, "none", panel.device, panel.trust_remote_code)
    return estimate_build(sets, epochs=int(cfg["epochs"]), max_length=int(cfg["max_length"]), base=lm,
                          n_params=135e6 if base == EMBEDDED_NAME else None)[0]


def build_job(cfg: dict, panel) -> AuditJob:
    """The checked plan (every input, the split; nothing written yet) and the background job that writes the split
    and fine-tunes the target, for the Build button (``dashboard.audit_jobs.audit_job``): the build goes on while
    the user looks at another page, with its elapsed time and time left, and one time left for the whole build from
    the estimate before Build (``AuditJob.expected``). A half-made experiment is removed when the build fails, so its
    name stays free.

    Parameters
    ----------
    cfg : dict
        The page's settings (:func:`plan`'s, plus ``method``, ``max_length`` and ``batch_size``).
    panel
        The sidebar's model panel (its device and dtype).

    Returns
    -------
    AuditJob

    Raises
    ------
    MiaError
        A bad input (one line, before anything is written).
    """
    from mia_core.api.targets import estimate_build

    from .loaders import loaded

    p = plan(cfg)
    out_root: Path = p["out_root"]
    sets = p["sets"]
    lm = loaded(p["base"], panel.dtype, "none", panel.device, panel.trust_remote_code)
    seconds = estimate_build(sets, epochs=int(cfg["epochs"]), max_length=int(cfg["max_length"]), base=lm,
                             n_params=135e6 if p["base"] == EMBEDDED_NAME else None)[1]
    device = panel.device

    def work(progress):
        created = None if out_root.exists() else out_root
        try:
            files = write_split(sets, out_root)
            t0 = time.time()
            log = build_target(sets, out_root, base=p["base"], method=cfg["method"], epochs=int(cfg["epochs"]),
                               lr=p["lr"], seed=int(cfg["seed"]), max_length=int(cfg["max_length"]),
                               batch_size=int(cfg["batch_size"]), device=device, files=files, progress=progress)
            created = None
            return {"controlled_target": str(out_root / "target"), "controlled_members": str(files["members"]),
                    "controlled_nonmembers": str(files["nonmembers"]),
                    "controlled_population": str(files["population"]) if "population" in files else None,
                    "controlled_reference": p["base"], "controlled_log": log, "seconds": time.time() - t0,
                    "split": f"Split: {len(sets['members'])} members · {len(sets['nonmembers'])} non-members · "
                             f"{len(sets['population'])} population texts, written to `{out_root}`."}
        finally:
            if created is not None:  # the build failed: drop the half-made experiment so its name stays free
                shutil.rmtree(created, ignore_errors=True)

    how = {"lora": "LoRA", "full": "full"}.get(cfg["method"], cfg["method"])
    return AuditJob(f"Controlled experiment: {how} fine-tune of {p['base']} on {len(sets['members'])} "
                    f"members, {int(cfg['epochs'])} epoch{'s' if int(cfg['epochs']) != 1 else ''}", work, None,
                    # the build's reports give the whole build's share done (mia_core.targets: training and scoring)
                    expected={"seconds": seconds, "fraction_is_whole": True} if seconds > 0 else None)


def take_built(result: dict) -> None:
    """A finished build handed over in ``st.session_state`` (:data:`KEYS`), with its split and time in words."""
    for k in KEYS:
        st.session_state[k] = result[k]
    st.caption(md_text(result["split"]))
    st.caption(f"Target built in {fmt_seconds(result['seconds'])}.")


def use_target() -> None:
    """Put the built target (and its base model as the reference) in the sidebar's model choices."""
    st.session_state["mp_target"] = "custom"
    st.session_state["mp_target_custom"] = st.session_state["controlled_target"]
    ref = st.session_state.get("controlled_reference")
    if ref == EMBEDDED_NAME:
        st.session_state["mp_reference"] = "smollm2"
    elif ref:
        st.session_state["mp_reference"] = "custom"
        st.session_state["mp_reference_custom"] = ref


def show_target() -> None:
    """The built target: its final losses, the generalisation gap, the loss curve, the files, and the hand-over
    to the sidebar and the calibration page. Nothing when no target was built."""
    if not st.session_state.get("controlled_target"):
        return
    from mia_core.reports import plots

    st.subheader("4 · Your target")
    log = st.session_state.get("controlled_log") or {}
    hist = pd.DataFrame(log.get("history") or [])
    final = log.get("final") or {}
    k1, k2, k3 = st.columns(3)
    k1.metric("Loss on the members", fmt_num(final.get("train_loss")))
    k2.metric("Loss on the non-members", fmt_num(final.get("heldout_loss")))
    gap = None
    if final.get("train_loss") is not None and final.get("heldout_loss") is not None:
        gap = final["heldout_loss"] - final["train_loss"]
    k3.metric("Generalisation gap", fmt_num(gap), help="Held-out loss minus member loss: the larger, the easier "
              "membership inference.")
    if len(hist):
        st.plotly_chart(plots.loss_curve(hist), key="cx_loss_chart")
        st.caption("The members' curve is the mean training loss over each epoch, as the model was still learning "
                   "them (and with dropout, if the model uses it); the figures above are both sets scored once more "
                   "after training, so the members' final loss sits below their last point.")
    st.success(f"Target folder: `{st.session_state['controlled_target']}` — members "
               f"`{st.session_state['controlled_members']}`, non-members `{st.session_state['controlled_nonmembers']}`.")
    if st.button("Use this target (and its base as reference) in the sidebar", key="go_cx_use"):
        use_target()
        st.rerun()
    st.page_link(CALIBRATION_PAGE, label="Audit it on the calibration page", icon=":material/monitoring:")
    st.caption("On the calibration page, choose \"The controlled experiment's split\" as data (no upload needed: "
               "the population file sets thresholds), with this target and its base model as reference.")
