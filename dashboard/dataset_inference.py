"""The logic behind the "Dataset inference" page: what the user entered (kept across page switches), reading
the two sets (texts, or books), the model-free checks, the background job that runs the test and saves it, and
the result drawn with the inputs it came from (a result of other inputs is labelled as such).

Two units (``mia_core.dataset_inference``): **texts** (``run_dataset_inference``) and **books**
(``books.run_book_inference``: each book cut into passages, the book the unit of the test, a p-value per
suspect book). Books come from ``.txt`` files (one book per file) or a ``.zip`` per side, read by
``mia_core.documents.load_documents`` (the Document audit page's reader: its size limits and one-line
errors), or from the bundled book demo (``mia_core.documents.demo_documents``). A saved run is reopened from
the Runs page (:func:`reopened`).
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from mia_core.api.inference import InferenceOptions, combination_words
from mia_core.errors import DataError, MiaError
from mia_core.formatting import counted

from .ui import put

RESULT_KEY = "di_result"
TEXT_TYPES = ["txt", "text", "csv", "tsv", "jsonl", "json", "parquet", "arrow", "feather", "zip"]
BOOK_TYPES = ["txt", "text", "md", "zip"]  # the Document audit page's: one book per file, or a .zip of them
UNITS = {"texts": "Texts", "books": "Books"}
TEXT_SOURCES = {"demo": "Demo: members vs non-members", "demo_null": "Demo null: unseen vs non-members",
                "upload": "Upload files", "paste": "Paste texts"}
BOOK_SOURCES = {"demo": "Book demo: member vs non-member documents",
                "demo_null": "Book demo null: non-member documents in two halves", "upload": "Upload books"}
CORRECTIONS = {"bh": "Benjamini-Hochberg (false-discovery rate)", "holm": "Holm (family-wise error)"}
DEMO_PASSAGE_WORDS = 64  # the book demo's documents are ~240 words: 64-word passages give each 3-4
PASSAGE_WORDS, MAX_PASSAGES = InferenceOptions.default("passage_words"), InferenceOptions.default("max_passages")
ESTIMATE_MAX_BYTES = 5 * 2**20  # uploads above this are not re-read on every rerun just to estimate the time
_SHOWN_SHAPES = (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError)
# the settings' widgets: {widget key: option name}; their limits and defaults are the options' own
# (mia_core.dataset_inference.options.InferenceOptions), and a reopened run's settings are put back in them
SETTINGS = {"di_alpha": "alpha", "di_folds": "folds", "di_perms": "n_permutations", "di_seed": "seed",
            "di_passage_words": "passage_words", "di_max_passages": "max_passages"}


def limits(key: str) -> dict:
    """``min_value`` / ``max_value`` of the setting widget ``key``: its option's domain."""
    return InferenceOptions.widget_limits(SETTINGS[key])


def default(key: str):
    """The default of the setting widget ``key``: its option's."""
    return InferenceOptions.default(SETTINGS[key])


# ------------------------------------------------------------------ what the user entered, kept
# the page's widgets are drawn with dashboard.ui.kept: a value outlives a page switch and a source not shown


UPLOADED = "di_uploaded_names"  # the names of the last uploads: said when they are gone


def uploads_left() -> bool:
    """Whether the upload fields' state is gone (the page or the source was left since they were drawn): called
    before they are drawn."""
    from dashboard.ui import upload_key

    return upload_key("di_suspect_up") not in st.session_state and upload_key("di_validation_up") not in st.session_state


def upload_note(src: Source, left: bool) -> None:
    """Below the upload fields: the uploads' names are kept; a browser upload cannot be restored, so when the
    fields come back empty after the page or the source was left, the page names the files that are gone."""
    from dashboard.ui import md_text

    ss = st.session_state
    names = [getattr(f, "name", str(f)) for f in [*src.suspect_files, *src.validation_files]]
    if names or not left:
        ss[UPLOADED] = names
    if left and not names and ss.get(UPLOADED):
        st.info(md_text(f"The files uploaded before ({', '.join(ss[UPLOADED][:6])}"
                        + (f" and {len(ss[UPLOADED]) - 6} more" if len(ss[UPLOADED]) > 6 else "")
                        + ") are gone: a browser upload cannot be kept when you leave the page or the source. "
                          "Upload them again; the other entries are kept."), icon=":material/upload_file:")
    else:
        st.caption("Uploaded files are not kept when you leave the page (the other entries are).")


def follow_book_demo(unit: str, source: str) -> None:
    """The book demo's documents are about 240 words: entering the demo sets the passage words to 64 (the CLI's
    256 would read each document as one passage); leaving it puts 256 back if 64 is still there."""
    ss = st.session_state
    now = unit == "books" and source in ("demo", "demo_null")
    was = ss.get("_di_was_book_demo")
    if was != now and was != "restored":  # a reopened run's own passage words stay
        current = ss.get("di_passage_words", PASSAGE_WORDS)
        if now:
            put("di_passage_words", DEMO_PASSAGE_WORDS)
        elif was and current == DEMO_PASSAGE_WORDS:
            put("di_passage_words", PASSAGE_WORDS)
    ss["_di_was_book_demo"] = now


def restore_settings(summary: dict) -> None:
    """The page's unit and test settings set to a reopened run's (each one the run recorded, within the
    widget's bounds), so that the page shows the settings its result came from."""
    put("di_unit", "books" if summary.get("mode") == "books" else "texts")
    if summary.get("correction") in CORRECTIONS:
        put("di_correction", summary["correction"])
    for key, name in SETTINGS.items():
        v = summary.get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            try:
                put(key, InferenceOptions.check_some(**{name: v})[name])
            except MiaError:  # outside the option's domain: the widget keeps its value
                pass
    st.session_state["_di_was_book_demo"] = "restored"


@dataclass
class Source:
    """What the page's first section holds: the unit, where the sets come from, and the entries."""
    unit: str
    source: str
    suspect_files: list = field(default_factory=list)
    validation_files: list = field(default_factory=list)
    suspect_text: str = ""
    validation_text: str = ""
    strip: bool = True

    @property
    def label(self) -> str:
        return (BOOK_SOURCES if self.unit == "books" else TEXT_SOURCES).get(self.source, self.source)


@dataclass
class Settings:
    alpha: float
    folds: int
    perms: int
    seed: int
    features: str
    correction: str = "bh"
    passage_words: int = PASSAGE_WORDS
    max_passages: int = MAX_PASSAGES
    control: str = "auto"  # the negative control (mia_core.dataset_inference.control): auto or none
    adjust_length: bool = True  # every feature adjusted for text length


def book_demo_available(demo) -> bool:
    """The book demo can be offered: the demo (``mia_core.api.inference.inference_demo``) has its documents."""
    return bool(demo) and bool(demo.get("books"))


# ------------------------------------------------------------------ reading the sets
def _lines(text: str) -> list[str]:
    return [t.strip() for t in (text or "").splitlines() if t.strip()]


def _read_text_sets(src: Source, demo):
    """The texts: the demo (one text per line) or uploads, read by the API's reader; pasted texts one per line.
    The text readers' notes are not kept (the page never showed them)."""
    from mia_core.api.inference import InferenceSets, read_inference_sets

    if src.source in ("demo", "demo_null"):
        if not demo:
            raise DataError("the demo set is not available in this installation.")
        sets = read_inference_sets(demo=src.source, mode="lines")
    elif src.source == "paste":
        sets = InferenceSets(_lines(src.suspect_text), _lines(src.validation_text))
    elif not src.suspect_files or not src.validation_files:
        raise DataError("upload the suspect and the validation files.")
    else:
        sets = read_inference_sets(list(src.suspect_files), list(src.validation_files))
    sets.notes = []
    return sets


def _read_book_sets(src: Source, demo):
    """Suspect and validation books (``mia_core.documents.Document``) through the API's reader: the CLI's
    ``--books --demo`` (members vs non-members), ``--demo-null`` (non-members[::2] vs non-members[1::2]: each novel
    on both sides, never trained on), or uploads read as the Document audit page reads them (the reader's notes,
    e.g. a book read as Windows-1252, kept)."""
    from mia_core.api.inference import read_inference_sets

    if src.source in ("demo", "demo_null"):
        if not book_demo_available(demo):
            raise DataError("the book demo is not available in this installation.")
        return read_inference_sets(demo=src.source, books=True)
    for role, files in (("suspect", src.suspect_files), ("validation", src.validation_files)):
        if not files:
            raise DataError(f"upload the {role} books: .txt files (one book per file) or a .zip of them.")
    return read_inference_sets(list(src.suspect_files), list(src.validation_files), books=True, strip=src.strip)


def model_specs(src: Source, demo, panel) -> tuple[str | None, str | None]:
    """The target and reference specs a run of these inputs uses: the demo target for a demo, else the
    sidebar's; the sidebar's reference (none: None)."""
    target = str(demo["target"]) if src.source in ("demo", "demo_null") and demo else panel.target_spec
    return target, (panel.reference_spec or None)


def model_line(src: Source, settings: Settings, demo, panel) -> str:
    """The line beside Run: the model the run tests and its negative control, in words, before anything loads
    (a demo tests the demo target, not the sidebar's model)."""
    from mia_core.api.inference import control_words

    target, reference = model_specs(src, demo, panel)
    if src.source in ("demo", "demo_null") and demo:
        tested = "the demo target (SmolLM2-135M fine-tuned on the demo's members), not the sidebar's model"
    elif target in (None, "", "smollm2"):
        tested = "the embedded SmolLM2-135M (the sidebar's model)"
    else:
        tested = f"{target} (the sidebar's model)"
    return f"**Model tested:** {tested}. **Negative control:** {control_words(target, reference, settings.control)}."


def read_sets(src: Source, demo):
    """The two sets (``mia_core.api.inference.InferenceSets``): texts (strings) or books (Documents), with the
    readers' notes the page keeps. ``MiaError``, one line, for bad input."""
    return _read_book_sets(src, demo) if src.unit == "books" else _read_text_sets(src, demo)


def prepare(src: Source, settings: Settings, demo, panel):
    """The run's request (``mia_core.api.inference.prepare_inference``): the sets read and every check that needs
    no model made once (settings, sizes, overlap, features, the books' passages), one line each, before any model
    loads. Returns ``(request, sets)``."""
    from mia_core.api.inference import prepare_inference

    sets = read_sets(src, demo)
    target, reference = model_specs(src, demo, panel)
    request = prepare_inference(
        sets.suspect, sets.validation, model=target, reference=reference, books=src.unit == "books",
        features=settings.features, alpha=float(settings.alpha), folds=int(settings.folds),
        n_permutations=int(settings.perms), seed=int(settings.seed), correction=settings.correction,
        passage_words=int(settings.passage_words), max_passages=int(settings.max_passages), read_notes=sets.notes,
        control=settings.control, adjust_length=bool(settings.adjust_length),
        dtype=panel.dtype, device=panel.device, trust_remote_code=panel.trust_remote_code)
    return request, sets


# ------------------------------------------------------------------ which inputs a result came from
def _files_key(files) -> tuple:
    return tuple((getattr(f, "name", str(f)), getattr(f, "size", None), getattr(f, "file_id", None))
                 for f in files or ())


def signature(src: Source, settings: Settings, demo, panel) -> dict:
    """What a result depends on, in three parts (``data``, ``model``, ``settings``): a result whose signature
    is not the page's is from other inputs. Uploads are told apart by name, size and upload id, pasted texts by
    their hash (nothing is read)."""
    if src.source == "paste":
        data = hashlib.sha256(f"{src.suspect_text}\0{src.validation_text}".encode()).hexdigest()
    elif src.source == "upload":
        data = (_files_key(src.suspect_files), _files_key(src.validation_files),
                src.strip if src.unit == "books" else None)
    else:
        data = None
    cfg = (settings.alpha, settings.folds, settings.perms, settings.seed, settings.features.strip(),
           settings.correction, settings.control, settings.adjust_length)
    if src.unit == "books":
        cfg += (settings.passage_words, settings.max_passages)
    model = (*model_specs(src, demo, panel), getattr(panel, "dtype", None), getattr(panel, "device", None))
    return {"data": repr((src.unit, src.source, data)), "model": repr(model),
            "settings": repr(cfg)}


def changed(stored: dict, now: dict) -> list[str]:
    """The parts of the page's inputs that differ from those of ``stored`` (a result), in words; a result
    reopened from the Runs page takes the page's inputs when it is first drawn."""
    sig = stored.get("signature")
    if sig is None:
        stored["signature"] = dict(now)
        return []
    words = {"data": "the sets", "model": "the model", "settings": "the settings"}
    return [w for k, w in words.items() if sig.get(k) != now.get(k)]


def describe(src: Source, suspect, validation, target: str | None, reference: str | None,
             identity: str | None = None) -> dict:
    """What was run, stored with its result (the caption says it; the saved run's name and report too:
    :func:`engine_inputs`)."""
    names = {role: [getattr(f, "name", str(f)) for f in files] if src.source == "upload" else []
             for role, files in (("suspect", src.suspect_files), ("validation", src.validation_files))}
    return {"unit": src.unit, "source": src.source, "source_label": src.label, "n_suspect": len(suspect),
            "n_validation": len(validation), "model": target, "reference": reference,
            "files": names["suspect"] + names["validation"], "suspect_files": names["suspect"],
            "validation_files": names["validation"], "model_identity": identity}


def engine_inputs(inputs: dict) -> dict:
    """The page's record of what was run as ``mia_core.api.inference.save_inference_run`` takes it (the run's
    name, its ``meta.json`` and its report's header: the model, its identity, the source, the file names)."""
    keys = ("model", "model_identity", "reference", "source", "unit", "suspect_files", "validation_files")
    return {k: inputs[k] for k in keys if inputs.get(k) not in (None, "", [])}


# ------------------------------------------------------------------ the run
def estimate(src: Source, settings: Settings, demo, panel) -> str:
    """The line shown before Run: the features' passes over both sets (texts, or every book's passages) the cache
    lacks, at this machine's measured speed for the model, and the permutation tests
    (``mia_core.api.inference.estimate_inference``); the models the run would use (the demo's target for a demo)
    are looked up among those loaded already, never loaded here. Empty until both sets are there, and for uploads
    over 5 MB (they would be re-read on every change of the page)."""
    from mia_core.api.inference import estimate_inference
    from dashboard.loaders import loaded
    from dashboard.ui import fmt_seconds

    if sum(getattr(f, "size", 0) or 0 for f in [*src.suspect_files, *src.validation_files]) > ESTIMATE_MAX_BYTES:
        return ""
    target, reference = model_specs(src, demo, panel)
    how = (panel.dtype, "none", panel.device, panel.trust_remote_code)
    try:
        sets = read_sets(src, demo)
        plan, tests = estimate_inference(sets.suspect, sets.validation, books=src.unit == "books",
                                         features=settings.features, reference=bool(panel.reference_spec),
                                         n_permutations=int(settings.perms), passage_words=settings.passage_words,
                                         max_passages=settings.max_passages, target_model=loaded(target, *how),
                                         reference_model=loaded(reference, *how), control=settings.control)
    except (MiaError, ValueError):
        return ""
    line = plan.estimate.split(" Lowercase (not ticked")[0]
    if src.unit == "books":  # the passes are over the books' passages
        line = line.replace(" texts", " passages")
    return (line
            + f" The permutation tests ({int(settings.perms):,} permutations): about {fmt_seconds(tests)} more.")


def blocker(src: Source, settings: Settings, demo, panel) -> str:
    """Why Run would refuse these inputs, in one line, before it is pressed (issue 53 item 5: a known limit, such as
    five books a side, said beside Run, Run disabled and the previous result kept); empty when nothing stops it, or
    for uploads over 5 MB (re-read on every change of the page: they are checked when Run is pressed)."""
    from dashboard.options import worded

    if sum(getattr(f, "size", 0) or 0 for f in [*src.suspect_files, *src.validation_files]) > ESTIMATE_MAX_BYTES:
        return ""
    try:
        prepare(src, settings, demo, panel)
    except MiaError as e:
        return worded(e)
    return ""


def start(reg, src: Source, settings: Settings, demo, panel, sig: dict) -> None:
    """Run pressed: the request prepared (:func:`prepare`: one line on the page for bad input, before any model
    loads; the previous result stays until it passed), the models loaded, the test started as a background job of
    this session."""
    from dashboard.loaders import load_model
    from dashboard.ui import md_text, start_job

    request, sets = prepare(src, settings, demo, panel)
    st.session_state.pop(RESULT_KEY, None)
    for n in request.read_notes:  # e.g. a book read as Windows-1252
        st.caption(md_text(n))
    with st.spinner("loading the models"):  # here, so that a model that does not load is one line on the page
        target = load_model(request.model, panel.dtype, "none", panel.device, panel.trust_remote_code)
        reference = load_model(request.reference, panel.dtype, "none", panel.device, panel.trust_remote_code) \
            if request.reference else None
    inputs = describe(src, sets.suspect, sets.validation, getattr(target, "name", None) or request.model,
                      request.reference, getattr(target, "identity", None))
    start_job(reg, "di", f"Dataset inference: {len(sets.suspect)} suspect vs {len(sets.validation)} validation "
              f"{src.unit}", _work(request, target, reference, inputs, sig), state_key="di_job",
              expected=run_expected(src, settings, sets, target, reference))


def run_expected(src: Source, settings: Settings, sets, target, reference) -> dict | None:
    """What the test is expected to take, for the job's one time left for the whole run (``dashboard.jobs.Job
    .expected``, :func:`dashboard.ui.whole_run_left`): the estimate's seconds in all (the features' passes the cache
    lacks, with the loaded models, and the permutation tests), those of the passes and how many have texts to
    score. None when it cannot be estimated (the run then shows each stage's own time left)."""
    from mia_core.api.inference import estimate_inference

    try:
        plan, tests = estimate_inference(sets.suspect, sets.validation, books=src.unit == "books",
                                         features=settings.features, reference=reference is not None,
                                         n_permutations=int(settings.perms), passage_words=settings.passage_words,
                                         max_passages=settings.max_passages, target_model=target,
                                         reference_model=reference, control=settings.control)
    except (MiaError, ValueError):
        return None
    if plan.seconds is None:
        return None
    return {"seconds": plan.seconds + tests, "pass_seconds": plan.pass_seconds or 0.0, "passes": plan.todo_passes}


def _work(request, target, reference, inputs: dict, sig: dict):
    """The background job: the prepared request run on the loaded models
    (``mia_core.api.inference.execute_inference``, on the checks already made); returns what the page stores as
    its result."""
    def work(progress):
        import time

        from mia_core.api.inference import execute_inference

        t0 = time.time()
        res = execute_inference(request, target=target, reference=reference,
                                progress=lambda m, f: _report(progress, m, f))
        stored = {"result": res, "seconds": time.time() - t0, "model": inputs["model"], "inputs": inputs,
                  "signature": sig}
        _save(stored)  # by the job, once, whichever tab (or none) is watching it
        return stored
    return work


def _report(progress, message: str, fraction: float) -> None:
    """The run's progress into the job's stages: each model pass of its scoring stage (``target pass: 12/200
    windows``, ``reference pass: ...``: the negative control's) a stage of its own with its own share done (the run
    reports it inside :data:`~mia_core.api.inference.SCORING_SHARE`), so that each shows its time left and the whole
    run's time left follows the pass under way (issue 53 item 1: both passes in one stage had the line jump from 55 s
    to 7 min 30 s when the control's pass began); the rest under "dataset inference"."""
    from mia_core.api.inference import SCORING_SHARE

    stage = message.split(":", 1)[0]
    if stage.endswith(" pass"):
        lo, hi = SCORING_SHARE
        progress(message, min(1.0, max(0.0, (fraction - lo) / (hi - lo))))
    else:
        progress(f"dataset inference: {message}", fraction)


def _save(stored: dict) -> None:
    """The finished result saved to the runs folder, named by the model, the data and the verdict
    (``mia_core.api.inference.inference_run_name``); ``stored["saved"]`` is its id, or None with
    ``stored["save_error"]`` the reason in words."""
    from dashboard.options import worded
    from mia_core.api.inference import save_inference_run

    try:
        meta = save_inference_run(stored["result"], model=stored.get("model"),
                                  inputs=engine_inputs(stored.get("inputs") or {}))
        stored["saved"], stored["name"] = meta["id"], meta["name"]
    except (MiaError, OSError) as e:
        stored["saved"], stored["save_error"] = None, worded(e)


def finished(done) -> None:
    """A finished job: its result (saved to the runs folder by the job itself, :func:`_save`) kept in this
    session, whichever tab started it."""
    from dashboard.ui import md_text

    stored = done.result
    st.session_state[RESULT_KEY] = stored
    if stored.get("save_error"):
        st.caption(md_text(f"not saved to the runs folder: {stored['save_error']}"))


def reopened(run_id: str, meta: dict | None = None) -> dict:
    """A saved run (``mia_core.api.inference.load_inference_run``: every file checked, ``DataError`` in one line)
    as the page keeps a result: the inputs it came from are those the run recorded."""
    from mia_core.api.inference import load_inference_run

    res = load_inference_run(run_id)
    s, meta = res.summary, meta or {}
    label = f"saved run “{meta.get('name') or run_id}”" + (f" ({meta['created']})" if meta.get("created") else "")
    inputs = {"unit": "books" if s.get("mode") == "books" else "texts", "source": "saved", "source_label": label,
              "n_suspect": s.get("n_suspect"), "n_validation": s.get("n_validation"),
              "model": s.get("model") or res.inputs.get("model") or meta.get("model"),
              "reference": s.get("reference_model"),
              "files": [*res.inputs.get("suspect_files", []), *res.inputs.get("validation_files", [])]}
    return {"result": res, "seconds": s.get("seconds"), "model": inputs["model"], "inputs": inputs,
            "signature": None, "saved": run_id, "reopened": True}


# ------------------------------------------------------------------ the result
def books_frame(summary: dict) -> pd.DataFrame:
    """One row per suspect book: its passages, its own (conformal) p-value, the adjusted p-value across the
    suspect books and whether it is flagged; sorted by adjusted p-value, then p-value, flagged books first."""
    rows = [{"Book": str(b.get("book")), "Passages": b.get("n_passages"), "p-value": b.get("p_value"),
             "Adjusted p-value": b.get("p_adjusted"), "Flagged": "✔ flagged" if b.get("flagged") else "–"}
            for b in summary.get("books") or []]
    df = pd.DataFrame(rows, columns=["Book", "Passages", "p-value", "Adjusted p-value", "Flagged"])
    if df.empty:
        return df
    df["_f"] = df["Flagged"] != "–"
    df = df.sort_values(["_f", "Adjusted p-value", "p-value", "Book"], ascending=[False, True, True, True],
                        kind="stable", na_position="last")
    return df.drop(columns="_f").reset_index(drop=True)


def floor_note(result) -> str | None:
    """The note that the floor ``1 / (1 + validation books)`` keeps every book from being flagged: the run's
    own (``verdict.unit_p_values``; older runs worded it otherwise), else worked out from the summary."""
    s = result.summary
    unit = "book" if s.get("mode") == "books" else "text"
    own = next((n for n in result.report if f"no single {unit}" in n), None)
    if own or s.get("unit_p_floor") is None:
        return own
    floor, m, alpha = float(s["unit_p_floor"]), int(s.get("n_suspect") or 0), float(s["alpha"])
    best = floor if s.get("correction", "bh") == "bh" else min(1.0, m * floor)
    if best <= alpha:
        return None
    return (f"no single {unit} can be flagged: a {unit}'s own p-value cannot go below 1 / (1 + validation "
            f"{unit}s) = {floor:.3g} > alpha {alpha}; the collection test is not limited this way")


def _p(s: dict, key: str, bound_key: str | None = None) -> str:
    from mia_core.formatting import p_number

    v = s.get(key)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return p_number(float(v), bool(s.get(bound_key)) if bound_key else False)


def inputs_caption(stored: dict) -> str:
    """What the result came from, in one line: source, sizes, model, the test's settings, time, where saved."""
    from dashboard.ui import fmt_seconds, md_text

    s, inp = stored["result"].summary, stored.get("inputs") or {}
    unit = "books" if s.get("mode") == "books" else "texts"
    parts = [inp.get("source_label") or "inputs not recorded (an earlier session)",
             f"{s.get('n_suspect')} suspect vs {s.get('n_validation')} validation {unit}"]
    if unit == "books" and s.get("passages_per_book") is not None:
        parts.append(f"{s['passages_per_book']} passage(s) of {s.get('passage_words')} words a book")
    if inp.get("files"):
        more = len(inp["files"]) - 4
        parts.append("files " + ", ".join(inp["files"][:4]) + (f" (+{more})" if more > 0 else ""))
    model = inp.get("model") or s.get("model") or stored.get("model")
    if model:
        parts.append(f"model {model}" + (f", reference {inp['reference']}" if inp.get("reference") else ""))
    parts.append(f"α = {s.get('alpha')}")
    if s.get("n_permutations"):
        parts.append(f"{int(s['n_permutations']):,} permutations")
    if stored.get("seconds") is not None:
        parts.append(fmt_seconds(stored["seconds"]))
    text = md_text(" · ".join(str(p) for p in parts))
    if stored.get("saved"):
        how = "reopened from" if stored.get("reopened") else "saved as"
        text += f" · {how} run {md_text(stored['saved'])}" + (f" “{md_text(stored['name'])}”" if stored.get("name")
                                                              else "") + " (Runs page)"
    return text


def show_result(stored: dict, now: dict) -> None:
    """The stored result, under the inputs it came from; when the page's inputs have changed since, it is
    labelled as the previous inputs' result and folded away (never shown as the answer to the new ones)."""
    from dashboard.ui import md_text

    from dashboard.results import DI_VERDICT_WORDS, verdict_words

    diff = changed(stored, now)
    if diff:
        s = stored["result"].summary
        st.info(f"**The inputs have changed** ({', '.join(diff)}) since the last result: press **Run dataset "
                "inference** to test the current ones. The previous result is kept below, labelled.",
                icon=":material/history:")
        box = st.expander(f"Previous result, from the previous inputs: "
                          f"{md_text(verdict_words(s.get('verdict'), DI_VERDICT_WORDS))} — "
                          + inputs_caption(stored), expanded=False)
    else:
        st.subheader("3 · Verdict")
        if stored.get("reopened"):  # issue 53 item 2: a saved run's sets are not the page's, and Run tests the page's
            inp = stored.get("inputs") or {}
            st.info(f"**Reopened from the Runs page:** {md_text(inp.get('source_label') or 'a saved run')}. Its sets "
                    "are not restored here: the sets and the model above are the page's own, and **Run dataset "
                    "inference** tests those, not this run's. Its unit and test settings were put back.",
                    icon=":material/history:")
        box = st.container()
    with box:
        try:
            _draw(stored)
        except _SHOWN_SHAPES as e:  # a saved run of another version that got past the checks: one line
            st.error(md_text(f"This result cannot be shown in full (saved by another version, or damaged): "
                             f"{type(e).__name__}: {e}"))


def _draw(stored: dict) -> None:
    from mia_core.api.inference import inference_notes
    from dashboard.ui import md_text

    res = stored["result"]
    s = res.summary
    verdict, words = s["verdict"], inference_notes(s)
    {"used": st.warning, "not_shown": st.info, "refused": st.error}[verdict](
        f"**{words['verdict']}.** {md_text(words['reason'])}")
    st.caption(inputs_caption(stored))
    if words["blind"]:
        st.caption(md_text(words["blind"]))
    if "null_p_value" in s or "p_value_crossfit_ttest" in s:
        st.warning("This run was saved by an earlier version, before the test was made one-sided and valid for "
                   "sets of unequal spread or size (issue 38): its p-value and verdict come from that test. Run the "
                   "same sets again for the current one.", icon=":material/history:")
    shown = None
    if verdict == "refused" and s.get("control_p_value") is not None:
        st.caption(md_text(f"Negative control {s.get('control_model')}: the same test on its own features gave "
                           f"p = {_p(s, 'control_p_value')}; the target's features were not tested."))
    elif verdict == "refused":
        st.caption(md_text(f"Blind baseline AUC {_fmt(s.get('blind_auc'))}: no model pass was made."))
    elif s.get("mode") == "books":
        shown = _book_part(res)
    else:
        _text_part(res)
    for n, said in zip(res.report, inference_notes(s, res.report)["notes"]):
        if n != shown:
            st.caption(md_text(said))
    from mia_core.runs.results import csv_text

    st.download_button(f"Download the per-{'book' if s.get('mode') == 'books' else 'text'} features and scores (CSV)",
                       csv_text(res.scores).encode("utf-8"), file_name="dataset_inference_scores.csv",
                       mime="text/csv", key="go_di_download")


def feature_names(weights: dict) -> dict:
    """``{feature id: weight}`` keyed by the features' display names ("Min-K%++ (k = 60 %)", as the rest of the
    product names the attacks: ``mia_core.api.inference.inference_feature_label``)."""
    from mia_core.api.inference import inference_feature_label

    return {inference_feature_label(k): v for k, v in weights.items()}


def _fmt(v, digits: int = 3) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{float(v):.{digits}f}"


def _self_check(s: dict) -> None:
    from dashboard.ui import md_text

    if s.get("self_check_p_value") is not None:
        st.caption(md_text(f"Self-check (the same test on two random halves of the validation set, exchangeable by "
                           f"construction: it checks the code path, not the data): p = "
                           f"{_p(s, 'self_check_p_value', 'self_check_p_value_is_bound')}."))
    elif s.get("null_p_value") is not None:  # runs saved before issue 38
        st.caption(md_text(f"Null check of the earlier version (two random halves of the validation set): p = "
                           f"{_p(s, 'null_p_value', 'null_p_value_is_bound')}."))


def _primary_metric(col, s: dict, unit: str) -> None:
    col.metric("p-value (one-sided test)", _p(s, "p_value", "p_value_is_bound"),
               help=f"Is the suspect set more member-like than the validation set? A permutation test, over {unit}, "
                    f"of the Welch t of the combined scores ({combination_words(s.get('combination'))}, "
                    f"{s.get('folds', '?')} folds, "
                    f"{int(s.get('n_permutations') or 0):,} permutations), reported as the largest of its p-value, "
                    "the Welch t-test's and the bootstrap-t's: exact when the sets are exchangeable, and valid when "
                    "they differ only in spread or size, a small set skewed included. The primary figure."
                    + (f" Every feature is the target's minus the negative control's ({s['control_model']}: a model "
                       "that never saw either set)." if s.get("control_model") else " No negative control.")
                    + (" Every feature is adjusted for text length." if s.get("adjust_length") else ""))


def _blind_metric(col, s: dict) -> None:
    col.metric("Blind baseline AUC", _fmt(s.get("blind_auc")),
               help="A text classifier that never queries the model, suspect vs validation, with a permutation "
                    "p-value (the IID guard: refused at p <= 0.05). Far below 0.5 happens by chance on small sets.")


def _text_part(res) -> None:
    s = res.summary
    m1, m2, m3, m4 = st.columns(4)
    _primary_metric(m1, s, "texts")
    m2.metric("p-value (paper's t-test)", _p(s, "p_value_ttest"),
              help="Maini et al.'s procedure: a linear model on half the texts, a t-test on the other half. It "
                   "learns the direction, so it is not one-sided: shown beside, never deciding.")
    m3.metric("Texts that stand out", "–" if s.get("n_flagged") is None else f"{s['n_flagged']} of {s['n_suspect']}",
              help="Each suspect text's conformal p-value against the validation set, adjusted by "
                   "Benjamini-Hochberg (false-discovery rate at alpha). A weak target shifts the whole set a "
                   "little and flags few or no single texts: the collection test is the stronger claim.")
    _blind_metric(m4, s)
    _self_check(s)
    _charts(res, power=True)
    if "p_adjusted" in res.scores and "text_id" in res.scores:
        sus = res.scores[(res.scores["set"] == "suspect") & ~res.scores["excluded"]]
        st.markdown(f"**Which texts stand out?** Each suspect text's conformal p-value against the validation set "
                    f"(a label-free score: exact for a text that is like the validation texts), adjusted across "
                    f"the {counted(len(sus), 'suspect texts')} ({CORRECTIONS.get(s.get('correction'), 'Benjamini-Hochberg')}). "
                    f"A text's p-value cannot go below 1 / (1 + validation texts) = "
                    f"{float(s.get('unit_p_floor') or 0):.2g}; on a weak target few or no single texts stand out "
                    "even when the collection does. Text s0001 is the first suspect text (after empty and duplicate "
                    "texts are dropped).")
        st.dataframe(unit_table(sus, getattr(res, "texts", None) or {}), hide_index=True, key="di_units")


UNIT_COLUMNS = {"text_id": "Text", "label_free_score": "Score (higher: more member-like)", "p_value": "p-value",
                "p_adjusted": "Adjusted p-value", "flagged": "Stands out"}


def unit_table(sus, texts: dict, n: int = 50):
    """The per-text table in words (issue 53 item 6): the text's id and its first words (when the run's texts are at
    hand: not for a run reopened from the store, which keeps ids only), its label-free score, p-value, adjusted
    p-value and whether it stands out; the ``n`` lowest p-values first."""
    import pandas as pd

    top = sus.sort_values("p_value").head(n)
    out = pd.DataFrame({UNIT_COLUMNS[c]: top[c].to_numpy() for c in UNIT_COLUMNS if c in top})
    if texts:
        out.insert(1, "Begins", [_snippet(texts.get(i, "")) for i in top["text_id"]])
    if "Stands out" in out:
        out["Stands out"] = ["✔ yes" if bool(f) else "–" for f in out["Stands out"]]
    return out


def _snippet(text: str, words: int = 12) -> str:
    w = str(text).split()
    return " ".join(w[:words]) + (" …" if len(w) > words else "")


def _book_part(res) -> str | None:
    """The book result: the metrics that make sense for books, the per-book table with the floor beside it,
    the charts. Returns the note shown beside the table (not repeated among the notes)."""
    from dashboard.ui import md_text

    s = res.summary
    m1, m2, m3, m4 = st.columns(4)
    _primary_metric(m1, s, "books")
    m2.metric("Books that stand out", "–" if s.get("n_flagged") is None else f"{s['n_flagged']} of {s['n_suspect']}",
              help="Each suspect book's conformal p-value against the validation books, adjusted across the "
                   f"suspect books ({CORRECTIONS.get(s.get('correction'), s.get('correction'))}).")
    m3.metric("Passages a book", "–" if s.get("passages_per_book") is None else
              f"{s['passages_per_book']} × {s.get('passage_words')} words",
              help="Every book is read as the same number of passages (the shortest book's count, at most the "
                   "maximum), spread over the book: equal counts keep the books exchangeable under the null.")
    _blind_metric(m4, s)
    _self_check(s)
    note = floor_note(res)
    st.markdown(f"**Which books stand out?** Each suspect book's own p-value against the validation books, and "
                f"adjusted across the {s.get('n_suspect')} suspect books "
                f"({CORRECTIONS.get(s.get('correction'), s.get('correction'))}); flagged: adjusted p at most "
                f"α = {s.get('alpha')}.")
    c1, c2 = st.columns([3, 2])
    table = books_frame(s)
    c1.dataframe(table, hide_index=True, key="di_books", width="stretch",
                 height=35 * (min(len(table), 25) + 1) + 3)  # every book up to 25 without scrolling
    with c2:
        if note:
            why = note.split(": ", 1)[1] if note.startswith("no single book can be flagged:") else note
            st.warning(f"**No single book can be flagged:** {md_text(why)}. With n validation books a book's "
                       "p-value can reach 1 / (n + 1): add validation books to test single books.",
                       icon=":material/block:")
        elif s.get("unit_p_floor") is not None:
            st.caption(md_text(f"A book's own p-value cannot go below 1 / (1 + validation books) = "
                               f"{float(s['unit_p_floor']):.3g}."))
    _charts(res, power=False)
    return note


def _charts(res, *, power: bool) -> None:
    """The combined scores of both sets, the power curve (texts: descriptive, the same data) and the weights;
    books have no power curve, their weights go beside the histogram."""
    from mia_core.api.inference import inference_notes
    from mia_core.reports import plots

    s = res.summary
    scores = res.scores[~res.scores["excluded"]]
    hist = plots.di_score_histogram(scores.loc[scores["set"] == "suspect", "score"],
                                    scores.loc[scores["set"] == "validation", "score"],
                                    title=plots.di_score_title(s.get("combination")))
    side = plots.di_power_curve(s["power_curve"], alpha=s["alpha"], n_permutations=s.get("n_permutations")) \
        if power and s.get("power_curve") else None
    weights = plots.di_weights(feature_names(s["weights"])) if s.get("weights") else None
    c1, c2 = st.columns(2)
    c1.plotly_chart(hist, key="di_hist")
    if side is not None:
        c2.plotly_chart(side, key="di_power")
        c2.caption(inference_notes(s)["power_floor"] or "")  # the curve's floor against the headline's
    elif weights is not None:  # half a page wide: a shorter axis title
        c2.plotly_chart(weights.update_xaxes(title_text="weight (non-negative: higher = more member-like)"),
                        key="di_weights")
        weights = None
    if weights is not None:
        st.plotly_chart(weights, key="di_weights")
    if s.get("combination") == "nonneg":
        st.caption("Weights of the test's combination on standardised features, fitted on all units and kept "
                   "non-negative: every feature is oriented so that higher means more member-like, and the combined "
                   "score can only rise with a feature. Correlated features (Min-K% at neighbouring k) share weight; "
                   "a weight of 0 means the feature adds nothing the others do not.")
    else:
        st.caption("Weights of the test's combination on standardised features, set before the run (no label is "
                   "read): every feature is oriented so that higher means more member-like, and "
                   + ("each attack counts once, its weight shared by its columns (Min-K% at seven k)."
                      if s.get("combination") == "families" else "every feature counts equally."))
