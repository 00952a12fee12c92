"""The logic behind the "Dataset inference" page: what the user entered (kept across page switches), reading
the two sets (texts, or books), the model-free checks, and the background job that runs the test and saves it;
the result is drawn by ``dashboard.di_results`` with the inputs it came from (a result of other inputs is labelled
as such).

Two units (``mia_core.dataset_inference``): **texts** (``run_dataset_inference``) and **books**
(``books.run_book_inference``: each book cut into passages, the book the unit of the test, a p-value per
suspect book). Books come from ``.txt`` files (one book per file) or a ``.zip`` per side, read by
``mia_core.documents.load_documents`` (the Document audit page's reader: its size limits and one-line
errors), or from the bundled book demo (``mia_core.documents.demo_documents``). A saved run is reopened from
the Runs page (:func:`reopened`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import streamlit as st

from mia_core.api.inference import InferenceOptions
from mia_core.errors import DataError, MiaError

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
SIG_WORDS = {"data": "the sets", "model": "the model", "settings": "the settings"}


def signature(src: Source, settings: Settings, demo, panel) -> dict:
    """What a result depends on, in three parts (``data``, ``model``, ``settings``; :func:`dashboard.stale.signature`:
    uploads told apart by name, size and upload id, long pasted texts by their hash, nothing read): a result whose
    signature is not the page's is from other inputs."""
    from .stale import signature as parts

    if src.source == "paste":
        data = (src.suspect_text, src.validation_text)
    elif src.source == "upload":
        data = (src.suspect_files, src.validation_files, src.strip if src.unit == "books" else None)
    else:
        data = None
    cfg = (settings.alpha, settings.folds, settings.perms, settings.seed, settings.features.strip(),
           settings.correction, settings.control, settings.adjust_length)
    if src.unit == "books":
        cfg += (settings.passage_words, settings.max_passages)
    model = (*model_specs(src, demo, panel), getattr(panel, "dtype", None), getattr(panel, "device", None))
    return parts(data=(src.unit, src.source, data), model=model, settings=cfg)


def changed(stored: dict, now: dict) -> list[str]:
    """The parts of the page's inputs that differ from those of ``stored`` (a result), in words
    (:func:`dashboard.stale.stale_parts`); a result reopened from the Runs page takes the page's inputs when it is
    first drawn."""
    from .stale import stale_parts

    if stored.get("signature") is None:
        stored["signature"] = dict(now)
        return []
    return stale_parts(stored["signature"], now, SIG_WORDS)


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


def build_job(src: Source, settings: Settings, demo, panel, sig: dict):
    """Run pressed: the request prepared (:func:`prepare`: one line on the page for bad input, before any model
    loads; the previous result stays until it passed), the models loaded, and the test as the background job
    ``dashboard.audit_jobs.audit_job`` starts (its one time left for the whole run from :func:`run_expected`)."""
    from dashboard.audit_jobs import AuditJob
    from dashboard.loaders import load_model
    from dashboard.ui import md_text

    request, sets = prepare(src, settings, demo, panel)
    for n in request.read_notes:  # e.g. a book read as Windows-1252
        st.caption(md_text(n))
    with st.spinner("loading the models"):  # here, so that a model that does not load is one line on the page
        target = load_model(request.model, panel.dtype, "none", panel.device, panel.trust_remote_code)
        reference = load_model(request.reference, panel.dtype, "none", panel.device, panel.trust_remote_code) \
            if request.reference else None
    inputs = describe(src, sets.suspect, sets.validation, getattr(target, "name", None) or request.model,
                      request.reference, getattr(target, "identity", None))
    return AuditJob(f"Dataset inference: {len(sets.suspect)} suspect vs {len(sets.validation)} validation "
                    f"{src.unit}", _work(request, target, reference, inputs, sig),
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
