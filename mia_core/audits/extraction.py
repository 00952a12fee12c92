"""Verbatim extraction (Carlini et al. 2023, Definition 3.1; ``mia extraction``, made from this declaration by
:mod:`mia_core.cli.audit_command`; the Verbatim extraction page, made by :mod:`dashboard.audit_page`): prompted with
a text's first k tokens, does greedy decoding give its next m tokens exactly? Members' extractable share against
non-members', and two membership scores."""
from __future__ import annotations

from dataclasses import dataclass, field

from .base import Audit, Known, register


def _options():
    from ..extraction.options import ExtractionOptions

    return ExtractionOptions


@dataclass
class ExtractionRequest:
    """A checked extraction audit: the texts, the target's spec and how it loads, the options; nothing loaded."""

    members: list
    nonmembers: list
    model: object
    options: object
    load: dict = field(default_factory=dict)  # dtype, device, quantize, trust_remote_code


def _prepare(members=None, nonmembers=None, *, model=None, dtype: str = "auto", device: str = "auto",
             quantize: str = "none", trust_remote_code: bool = False, text_column: str | None = None, **options):
    """The texts (lists of strings, a file path or a DataFrame, as :func:`mia_core.score` reads them), the target
    (None: the embedded model) and the options, each checked in one line before any model loads."""
    from ..inputs import (
        check_flag, check_choice, check_column, check_device, check_dtype, check_model_spec, check_texts
    )
    from ..errors import DataError

    opts = _options().check(caller="prepare", **options)  # 'prepare() has no setting ...'
    text_column = check_column("text_column", text_column)
    sets = {role: check_texts(value, role, text_column=text_column)
            for role, value in (("members", members), ("nonmembers", nonmembers))}
    for role, texts in sets.items():
        if len(texts) < 2:
            raise DataError(f"{{{role}}}: give at least 2 texts, got {len(texts)}", options=(role,))
    from ..data.sets import check_two_sets

    request = ExtractionRequest(members=sets["members"], nonmembers=sets["nonmembers"],
                                model=check_model_spec("model", model), options=opts,
                                load={"dtype": check_dtype(dtype), "device": check_device(device),
                                      "quantize": check_choice("quantize", quantize, ("none", "int8", "int4")),
                                      "trust_remote_code": check_flag("trust_remote_code", trust_remote_code)})
    check_two_sets(sets["members"], sets["nonmembers"])  # no empty text, no text in both sets (issue 67)
    return request


def _execute(request, *, progress=None):
    from ..inputs import checked_model, noop_progress
    from ..extraction.audit import run_extraction_audit

    progress = progress or noop_progress()
    lm = checked_model(request.model, **request.load)
    return run_extraction_audit(lm, request.members, request.nonmembers, request.options, progress=progress)


def _result():
    from ..extraction.result import ExtractionResult

    return ExtractionResult


def _load(folder):
    return _result().load(folder)


def _example(known: Known) -> dict:
    """The tiny Llama trained on the members (it reproduces them) against never-trained texts; short prompt and
    suffix, since the tiny paragraphs are short."""
    return {"members": known.members, "nonmembers": known.nonmembers, "model": known.causal,
            "prefix_tokens": 8, "suffix_tokens": 8, "n_bootstrap": 50}


DEMO_WORDS = ("the bundled demo: 100 member and 100 non-member passages of five public-domain novels, and the demo "
              "target (the embedded SmolLM2-135M with a LoRA adapter fine-tuned on the members); a prompt and a suffix "
              "of 16 tokens each")


def _demo() -> dict | None:
    """The bundled demo (``mia_core.targets.demo``): its 100 members and 100 non-members against its target, with a
    prompt and a suffix of 16 tokens each (its passages are 44 to 106 tokens long); None when it is not installed."""
    from ..api.data import read_text_files
    from ..targets.demo import installed_demo

    d = installed_demo()
    if d is None:
        return None
    sets = {s: read_text_files([d[s]], mode="lines") for s in ("members", "nonmembers")}
    return {"words": DEMO_WORDS, "inputs": {**sets, "model": str(d["target"]), "prefix_tokens": 16, "suffix_tokens": 16}}


def _headline(result):
    return result.metrics["matched"].get("auc")


def _store():
    from ..runs.kinds import SCORED, KindStore

    return KindStore("_extraction", "verbatim extraction run", SCORED)


def _describe(result) -> dict:
    """The Runs page's line: the model, the sets and k + m, the shares and the match length's AUC."""
    s, r = result.settings, result.rates
    name = result.model.get("name") or "model"
    data = (f"{s.get('n_members')} members + {s.get('n_nonmembers')} non-members, "
            f"k = {s.get('prefix_tokens')}, m = {s.get('suffix_tokens')}")
    auc = _headline(result)
    shown = "AUC n/a" if auc is None or auc != auc else f"AUC {auc:.3f}"
    rates = f"{r['members']['rate']:.0%} vs {r['nonmembers']['rate']:.0%} extractable"
    return {"name": f"{name} · {data} · {rates} · {shown}", "model": name,
            "model_identity": result.model.get("identity"), "data": data,
            "headline": None if auc is None or auc != auc else float(auc), "headline_label": "greedy match length",
            "n_members": s.get("n_members"), "n_nonmembers": s.get("n_nonmembers")}


def _figures(result) -> dict:
    """The two shares, their difference, and each score's AUC."""
    from ..extraction.result import WORDS

    r = result.rates
    out = {"extractable share, members": r["members"]["rate"], "extractable share, non-members": r["nonmembers"]["rate"],
           "difference of the shares": result.excess()}
    out.update({f"AUC, {WORDS[n]}": m.get("auc") for n, m in result.metrics.items()})
    return out


AUDIT = register(Audit(
    name="extraction",
    title="Verbatim extraction",
    citation="Carlini et al. 2023",
    sets=("members", "nonmembers"),
    about=("Prompted with a text's first k tokens, does the model's greedy continuation give its next m tokens "
           "exactly? The extractable share of the members against the non-members' (what the model reproduces "
           "without having seen a text), and two membership scores: the matched length and the suffix's "
           "log-likelihood."),
    models=("model",),
    demo=_demo,
    demo_words=DEMO_WORDS,
    options=_options,
    prepare=_prepare,
    execute=_execute,
    result=_result,
    load=_load,
    marker="extraction.json",
    request=lambda: ExtractionRequest,
    example=_example,
    page="pages/8_Verbatim_extraction.py",
    headline=_headline,
    store=_store,
    describe=_describe,
    figures=_figures))
