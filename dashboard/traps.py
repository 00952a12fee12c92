"""The Copyright traps page (``pages/9_Copyright_traps.py``): the three steps in order, each a background job
(:func:`dashboard.audit_jobs.audit_job`) with one line for bad input.

1. **Make**: the generator (the sidebar's model), the declared options of :class:`mia_core.traps.options.MakeOptions`;
   the record to download, the seal shown.
2. **Insert**: the owner's documents uploaded (.txt, .md); the marked copies as a zip, what was placed where.
3. **Test**: the record (this session's, or an uploaded ``record.json``, read as JSON, never unpickled), the model
   under test named before Run; the verdict, the figures, the score distributions per repetition level, the ROC and
   the exposure histogram. Saved in the run store.
"""
from __future__ import annotations

import io
import json
import tempfile
import time
import zipfile
from pathlib import Path

import streamlit as st

from mia_core.errors import DataError, SettingsError

from .audit_jobs import AuditJob, audit_job, save_finished
from .audit_page import option_widgets
from .ui import kept, md_text, upload_files

P = "traps"


def _work_dir() -> Path:
    """This session's folder for the records and the marked copies."""
    d = st.session_state.get(f"{P}_dir")
    if not d or not Path(d).is_dir():
        d = tempfile.mkdtemp(prefix="mia-traps-page-")
        st.session_state[f"{P}_dir"] = d
    return Path(d)


def make_step(panel) -> None:
    """Step 1: generate, split and seal."""
    from mia_core.audits import audit_named

    MakeOptions = audit_named("traps").steps()["make"]
    st.subheader("1 · Make the traps")
    st.caption(md_text("Unique sequences sampled from the generator (the sidebar's model), filtered, then split at "
                       "random within perplexity buckets into the traps you will insert and the ones you keep secret. "
                       "The record is sealed: keep it private, timestamp or hand over its seal before publishing."))
    shown = ["count", "tokens", "repetitions", "buckets", "max_perplexity", "seed", "alpha"]
    values = option_widgets(MakeOptions, f"{P}_make", shown)

    def build():
        from mia_core.audits.traps import make

        from .loaders import load_with_progress

        MakeOptions.check(strict=False, **values)  # one line before anything loads
        spec = panel.target_spec
        if not spec:
            raise SettingsError(f"the generator is not chosen: {panel.target_error or 'choose one in the sidebar'}.")
        out = _work_dir() / f"record-{time.strftime('%Y%m%d-%H%M%S')}"
        lm = load_with_progress(spec, panel.dtype, panel.quantize, panel.device, panel.trust_remote_code,
                                label="Loading the generator")

        def work(progress):
            t0 = time.time()
            res = make(out, model=lm, strict=False, progress=progress, **values)
            return {"made": res, "folder": str(out), "seconds": time.time() - t0}

        return AuditJob(title="Copyright traps: make", work=work)

    done = audit_job(prefix=f"{P}_make", kind="traps-make", button="Make the traps", clear=(f"{P}_made",), build=build)
    if done is not None:
        st.session_state[f"{P}_made"] = done.result
        st.session_state[f"{P}_record"] = done.result["folder"]
        for step in ("insert", "test"):  # the record just made is the one the next steps use (drawn below)
            st.session_state[f"{P}_{step}_rec"] = "session"
    made = st.session_state.get(f"{P}_made")
    if made:
        res = made["made"]
        st.success(f"{res['n_inserted']} traps to insert, {res['n_held_out']} held out (secret).")
        for n in res.get("notes", []):  # the test's floor above alpha: said while more traps can still be made
            st.warning(n)
        st.code(f"SHA-256 {res['seal']}", language=None)
        st.download_button("Download the record (private)", Path(res["record"]).read_bytes(), "record.json",
                           mime="application/json", key=f"{P}_dl_record")


def _record_choice(step: str):
    """The record a step uses: this session's, or an uploaded ``record.json`` (saved to a folder, its seal checked
    by the step)."""
    here = st.session_state.get(f"{P}_record")
    options = (["session"] if here else []) + ["upload"]
    how = kept(st.radio, "Record", f"{P}_{step}_rec", options[0], options=options, horizontal=True,
               format_func={"session": "the one made above", "upload": "upload record.json"}.get)
    if how == "session":
        return here
    up = st.file_uploader("record.json", type=["json"], key=f"{P}_{step}_rec_up")
    if up is None:
        return None
    d = _work_dir() / f"uploaded-{step}"
    d.mkdir(exist_ok=True)
    (d / "record.json").write_bytes(up.getvalue())
    return str(d)


def insert_step() -> None:
    """Step 2: plant the inserted traps in copies of the documents."""
    st.subheader("2 · Insert them into your documents")
    record = _record_choice("insert")
    files = upload_files(st, "Your documents (.txt, .md)", type=["txt", "md"], key=f"{P}_docs")

    def build():
        from mia_core.audits.traps import insert

        if not record:
            raise DataError("make the traps above or upload a record.json first.")
        if not files:
            raise DataError("upload the documents to mark.")
        src = _work_dir() / f"documents-{time.strftime('%Y%m%d-%H%M%S')}"
        src.mkdir()
        for f in files:
            (src / Path(f.name).name).write_bytes(f.getvalue())
        out = src.with_name(src.name.replace("documents", "marked"))

        def work(progress):
            t0 = time.time()
            entry = insert(record, [str(src)], str(out), progress=progress)
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
                for p in sorted(out.iterdir()):
                    if p.is_file() and not p.name.startswith("."):
                        z.write(p, p.name)
            spans = json.loads((out / ".mia-traps.json").read_text())["spans"]
            return {"entry": entry, "zip": buf.getvalue(), "spans": spans, "seconds": time.time() - t0}

        return AuditJob(title="Copyright traps: insert", work=work)

    done = audit_job(prefix=f"{P}_insert", kind="traps-insert", button="Insert the traps", clear=(f"{P}_inserted",),
                     build=build)
    if done is not None:
        st.session_state[f"{P}_inserted"] = done.result
    got = st.session_state.get(f"{P}_inserted")
    if got:
        e = got["entry"]
        for n in e["notes"]:
            st.warning(n)
        st.success(f"{e['copies']:,} copies placed in {e['documents']} documents, checked from the written files.")
        st.download_button("Download the marked documents (.zip)", got["zip"], "marked-documents.zip",
                           mime="application/zip", key=f"{P}_dl_zip")
        import pandas as pd

        rows = [{"document": d, "copies": len(s), "first at character": min((a for a, _ in s), default=None)}
                for d, s in got["spans"].items()]
        st.dataframe(pd.DataFrame(rows), hide_index=True)


def test_step(panel) -> None:
    """Step 3: the pre-registered test on the model under test."""
    from mia_core.audits import audit_named, execute, prepare

    audit = audit_named("traps")
    st.subheader("3 · Test a model")
    record = _record_choice("test")
    ref = kept(st.radio, "Scored as", f"{P}_reference", "generator", options=["generator", "none"], horizontal=True,
               format_func={"generator": "loss ratio to the generator", "none": "the loss alone"}.get)
    st.markdown(md_text("Model tested: " + (panel.target_spec or "none chosen: choose one in the sidebar")))

    def build():
        from .loaders import load_with_progress

        if not record:
            raise DataError("make the traps above or upload a record.json first.")
        from mia_core.audits.traps import check_record

        check_record(record)  # an edited or foreign file is refused before the model loads
        if not panel.target_spec:
            raise SettingsError(f"the model is not chosen: {panel.target_error or 'choose one in the sidebar'}.")
        lm = load_with_progress(panel.target_spec, panel.dtype, panel.quantize, panel.device,
                                panel.trust_remote_code, label="Loading the model")
        request = prepare("traps", record, model=lm, reference=ref)

        def work(progress):
            t0 = time.time()
            res = execute(request, progress=progress)
            return {"result": res, "seconds": time.time() - t0, "record": save_finished("traps", res)}

        return AuditJob(title=audit.title, work=work)

    done = audit_job(prefix=f"{P}_test", kind="traps", button="Run the test", clear=(f"{P}_tested",), build=build)
    if done is not None:
        st.session_state[f"{P}_tested"] = done.result
    got = st.session_state.get(f"{P}_tested")
    if got:
        show_result(got["result"])


def show_result(res) -> None:
    """The verdict, the figures and the three plots."""
    s = res.summary
    (st.success if s["verdict"] == "used" else st.info)(res.verdict_line())
    for n in res.notes:  # what the verdict rests on: a foreign tokenizer, a leak, a floor above alpha
        st.warning(n)
    cols = st.columns(4)
    cols[0].metric("p-value", res.p_text())
    cols[1].metric("AUC", "n/a" if s.get("auc") is None else f"{s['auc']:.3f}")
    cols[2].metric("traps", f"{s['n_inserted']} + {s['n_held_out']}")
    cols[3].metric("mean exposure", f"{s['exposure_mean']:.2f} bits")
    for fig in figures(res):
        st.plotly_chart(fig)
    with st.expander("Report"):
        st.code(res.summary_text(), language=None)


def figures(res) -> list:
    """The score distributions (held out, and each repetition level), the ROC, the exposure histogram."""
    import plotly.graph_objects as go

    df = res.scores
    # the groups differ in size (held out: half; each level a share of the other half): each in percent of its own
    # traps, on shared bins, held out in grey under the levels
    dist = go.Figure()
    held = df["group"] == "held_out"
    dist.add_histogram(x=df.loc[held, "score"], name=f"held out ({int(held.sum())})", opacity=0.55,
                       histnorm="percent", bingroup=1, marker_color="#8c8c8c")
    colours = ["#f28e2b", "#d62728", "#9467bd", "#1f77b4", "#2ca02c"]
    for i, r in enumerate(sorted(set(df.loc[df["group"] == "inserted", "copies"]))):
        at = (df["group"] == "inserted") & (df["copies"] == r)
        dist.add_histogram(x=df.loc[at, "score"], name=f"inserted x{r} ({int(at.sum())})", opacity=0.55,
                           histnorm="percent", bingroup=1, marker_color=colours[i % len(colours)])
    dist.update_layout(barmode="overlay", title="Membership score (higher: more familiar)", xaxis_title="score",
                       yaxis_title="% of the group's traps")
    roc = go.Figure()
    curve = (res.metrics.get("overall") or {}).get("roc") or {}
    roc.add_scatter(x=curve.get("fpr", []), y=curve.get("tpr", []), name="inserted vs held out")
    roc.add_scatter(x=[0, 1], y=[0, 1], name="chance", line={"dash": "dot"})
    roc.update_layout(title="ROC", xaxis_title="false positive rate", yaxis_title="true positive rate")
    ex = go.Figure()
    ex.add_histogram(x=df.loc[df["group"] == "inserted", "exposure_bits"])
    ex.update_layout(title=f"Exposure of the inserted traps (bits; at most {res.summary['exposure_max_bits']:.2f})",
                     xaxis_title="bits", yaxis_title="traps")
    return [dist, roc, ex]


def page() -> None:
    """The whole page."""
    from .sidebar import model_panel
    from .ui import page_setup

    page_setup("Copyright traps", ":material/pest_control:", keep=(f"{P}_",))
    panel = model_panel(load=False, need_reference=False)
    st.title("Copyright traps")
    st.markdown(md_text(
        "Plant unique sequences in what you publish, prove training on them later (Meeus et al. 2024). A random half "
        "of the traps goes into your documents, the rest stays secret; the test compares how familiar the model finds "
        "each half. Because the coin flip was sealed before publishing, its p-value is exact whatever the model: a "
        "weak model costs power, never validity."))
    make_step(panel)
    insert_step()
    test_step(panel)
