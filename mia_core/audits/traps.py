"""Copyright traps (Meeus et al. 2024; ``mia traps test``, :mod:`mia_core.cli.traps`; the Copyright traps page):
the pre-registered test of a sealed record's inserted traps against its held-out ones on a model. Making and
planting the traps (``mia traps make`` / ``insert``) are steps before the audit: :mod:`mia_core.traps`."""
from __future__ import annotations

from dataclasses import dataclass, field

from .base import Audit, Known, register


def _options():
    from ..traps.options import TrapsOptions

    return TrapsOptions


@dataclass
class TrapsRequest:
    """A checked traps audit: the sealed record (read and its seal checked), the model's and the reference's specs
    and how they load, the options; nothing loaded."""

    record: dict
    model: object
    reference: object  # a spec, or "none": the loss alone
    options: object
    load: dict = field(default_factory=dict)


def _prepare(traps=None, *, model=None, reference: object = "generator", dtype: str = "auto", device: str = "auto",
             quantize: str = "none", trust_remote_code: bool = False, **options):
    """``traps``: the folder ``mia traps make`` wrote (or its ``record.json``), its seal checked; ``model`` the
    target (None: the embedded model); ``reference``: ``"generator"`` (the record's, default), ``"none"`` (the loss
    alone) or a model spec. Every check before any model loads."""
    import os

    from ..inputs import bad_value, check_flag, check_choice, check_device, check_dtype, check_model_spec
    from ..traps.record import read_record

    opts = _options().check(caller="prepare", **options)
    if not isinstance(traps, (str, os.PathLike)) or not str(traps).strip():
        raise bad_value("traps", "the folder `mia traps make` wrote (or its record.json)", traps)
    rec = read_record(traps)
    if isinstance(reference, str) and reference.strip().lower() in ("none", "generator"):
        ref = reference.strip().lower()
    else:
        ref = check_model_spec("reference", reference, optional=False)
    return TrapsRequest(record=rec, model=check_model_spec("model", model), reference=ref, options=opts,
                        load={"dtype": check_dtype(dtype), "device": check_device(device),
                              "quantize": check_choice("quantize", quantize, ("none", "int8", "int4")),
                              "trust_remote_code": check_flag("trust_remote_code", trust_remote_code)})


def generator_spec(rec: dict):
    """How to load the record's generator: its recorded spec (None: the embedded model)."""
    return rec["sealed"]["generator"].get("spec")


def _execute(request, *, progress=None):
    from ..inputs import checked_model, noop_progress
    from ..errors import SettingsError
    from ..traps.audit import generator_matches, run_traps_audit

    progress = progress or noop_progress()
    lm = checked_model(request.model, **request.load)
    gen = request.record["sealed"]["generator"]
    if request.reference == "none":
        ref, words = None, "the loss alone (no reference)"
    elif request.reference == "generator":
        ref = checked_model(generator_spec(request.record), **request.load)
        if not generator_matches(ref, gen):
            raise SettingsError(f"the generator the record names ({gen.get('name')}) is not what loads from "
                                f"{generator_spec(request.record) or 'the embedded model'} here (other weights or "
                                "tokenizer): name the reference with {reference}, or none", options=("reference",))
        words = f"the loss ratio to the generator {ref.name}"
    else:
        ref = checked_model(request.reference, **request.load)
        words = f"the loss ratio to the reference {ref.name}"
    return run_traps_audit(request.record, lm, ref, request.options, reference_words=words, progress=progress)


def _steps() -> dict:
    from ..traps.options import InsertOptions, MakeOptions

    return {"make": MakeOptions, "insert": InsertOptions}


def make(out, *, model=None, dtype: str = "auto", device: str = "auto", trust_remote_code: bool = False,
         overwrite: bool = False, progress=None, strict: bool = True, **options) -> dict:
    """``mia traps make``: the options checked (:class:`mia_core.traps.options.MakeOptions`) and the output folder,
    then the generator loaded (None: the embedded model), the batch made, split and sealed into ``out``
    (:func:`mia_core.traps.make.make_traps`); returns its summary (``seal``, ``record``, ``counts``...)."""
    from ..inputs import checked_model, noop_progress
    from ..runs.outputs import check_output_dir
    from ..traps.make import make_traps

    opts = _steps()["make"].check(strict=strict, caller="make", **options)
    check_output_dir(out, overwrite=overwrite)
    lm = checked_model(model, dtype=dtype, device=device, trust_remote_code=trust_remote_code)
    import os

    spec = (None if model is None else str(model) if isinstance(model, (str, os.PathLike))
            else getattr(model, "source", None))  # how `mia traps test` loads the generator back
    return make_traps(lm, opts, out, generator_spec=spec, overwrite=overwrite, progress=progress or noop_progress())


def insert(traps, documents, out, *, overwrite: bool = False, progress=None, strict: bool = True, **options) -> dict:
    """``mia traps insert``: the record read (its seal checked), the inserted traps planted in copies of
    ``documents`` written to ``out`` and checked (:func:`mia_core.traps.insert.insert_traps`); returns the log
    entry (with ``notes``) and ``n_inserted``."""
    from ..traps.insert import insert_traps
    from ..traps.record import by_group, read_record

    opts = _steps()["insert"].check(strict=strict, caller="insert", **options)
    rec = read_record(traps)
    docs = [documents] if isinstance(documents, (str, bytes)) or hasattr(documents, "__fspath__") else list(documents)
    entry = insert_traps(rec, docs, out, seed=opts.seed, overwrite=overwrite, progress=progress)
    return {**entry, "n_inserted": len(by_group(rec, "inserted")), "record": rec["path"]}


def check_record(traps) -> dict:
    """The sealed record at ``traps`` (a folder or its record.json), read and its seal checked: ``DataError`` in one
    line for a missing, foreign or edited file. A page calls it before loading any model."""
    from ..traps.record import read_record

    return read_record(traps)


def marked_folder(path) -> bool:
    """Whether ``path`` is a folder ``mia traps insert`` wrote (it holds the copies' spans)."""
    from pathlib import Path

    from ..traps.insert import SPANS

    p = Path(path).expanduser()
    return p.is_dir() and (p / SPANS).is_file()


def training_texts(folder, base=None, max_length: int = 256) -> tuple[list[str], str]:
    """The documents of a folder ``mia traps insert`` wrote, cut for ``mia make-target`` into pieces of at most
    ``max_length`` tokens of ``base``'s tokenizer (the start token and a margin left), at word boundaries, never
    inside a trap copy: each is one training window, so no copy is split or lost to truncation. Returns the pieces
    and a line saying what was read."""
    import json
    from pathlib import Path

    from ..inputs import checked_model
    from ..errors import DataError
    from ..traps.insert import SPANS, training_pieces

    p = Path(folder).expanduser()
    try:
        spans = json.loads((p / SPANS).read_text(encoding="utf-8"))["spans"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DataError(f"{p / SPANS} cannot be read ({type(e).__name__}): not a folder `mia traps insert` wrote",
                        options=("members",)) from None
    tok = checked_model(base, device="cpu").tokenizer
    pieces, copies = [], 0
    for name, sp in spans.items():
        f = p / name
        if not f.is_file() or f.resolve().parent != (p / name).resolve().parent or ".." in Path(name).parts:
            raise DataError(f"{p}: {name} is listed in {SPANS} but not there", options=("members",))
        pieces += training_pieces(f.read_text(encoding="utf-8"), sp, tok, max(8, int(max_length) - 4))
        copies += len(sp)
    return pieces, (f"{len(spans)} marked documents ({copies:,} trap copies) cut into {len(pieces):,} windows of at "
                    f"most {max_length} tokens, none cutting a copy")


def _result():
    from ..traps.result import TrapsResult

    return TrapsResult


def _example(known: Known) -> dict:
    """A record sealed over the known sets: the members as the inserted traps (one copy each), the non-members as
    the held-out ones, one bucket; the tiny Llama trained on the members as the model, the loss alone. (A real
    record's groups come from its coin flip: :func:`mia_core.traps.make.make_traps`.)"""
    import tempfile

    from ..traps.known import record_of

    folder = tempfile.mkdtemp(prefix="mia-traps-example-")
    record_of(known.members, known.nonmembers, folder, permutations=999)
    return {"traps": folder, "model": known.causal, "reference": "none", "n_bootstrap": 50}


def _headline(result):
    return result.summary.get("auc")


def _store():
    from ..runs.kinds import SCORED, KindStore

    return KindStore("_traps", "copyright-traps run", SCORED)


def _describe(result) -> dict:
    """The Runs page's line: the model, the traps, the verdict with its p-value."""
    from ..traps.result import VERDICTS, fmt_p

    s = result.summary
    name = result.model.get("name") or "model"
    data = f"{s['n_inserted']} inserted + {s['n_held_out']} held-out traps, seal {s['seal'][:12]}"
    auc = s.get("auc")
    return {"name": f"{name} · {data} · {VERDICTS[s['verdict']]}, p = {fmt_p(s['p_value'])}", "model": name,
            "model_identity": result.model.get("identity"), "data": data,
            "headline": None if auc is None or auc != auc else float(auc), "headline_label": "AUC, inserted vs held out",
            "n_members": s["n_inserted"], "n_nonmembers": s["n_held_out"]}


def _figures(result) -> dict:
    s = result.summary
    out = {"p-value": s["p_value"], "AUC, inserted vs held out": s.get("auc"), "mean exposure (bits)": s["exposure_mean"]}
    for r, v in result.levels.items():
        out[f"p-value, x{r} (Holm)"] = v["p_holm"]
        out[f"AUC, x{r}"] = v["metrics"].get("auc")
    return out


AUDIT = register(Audit(
    name="traps",
    title="Copyright traps",
    citation="Meeus et al. 2024",
    sets=("traps",),
    about=("Were the documents you published with traps in them trained on? Every trap of the sealed record is "
           "scored on the model, and a pre-registered permutation test compares the inserted traps with the held-out "
           "ones: its p-value is exact by design (the split was random and sealed before publishing)."),
    models=("model",),
    options=_options,
    prepare=_prepare,
    execute=_execute,
    result=_result,
    load=lambda folder: _result().load(folder),
    marker="traps.json",
    request=lambda: TrapsRequest,
    example=_example,
    page="pages/9_Copyright_traps.py",
    headline=_headline,
    store=_store,
    describe=_describe,
    figures=_figures,
    steps=_steps))
