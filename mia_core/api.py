"""The Python API: the engine's audits as functions, for a notebook or a script.

Everything here is exported from ``mia_core`` itself (lazily: ``import mia_core`` stays light)::

    from mia_core import score, audit, plan_run

* :func:`score` -- per-text membership scores of unlabelled texts (no labels, no metrics);
* :func:`audit` -- members vs non-members: scores, AUC and TPR at low FPR with CIs, the blind
  baseline, population thresholds (the CLI's ``mia run``);
* :func:`audit_documents` -- document-level MIA on books (Meeus et al. 2024; ``mia documents``);
* :func:`audit_mlm` -- the masked-LM likelihood ratio (Mireshghallah et al. 2022; ``mia mlm``);
* :func:`infer_dataset` -- was a whole collection used? One p-value (dataset inference, Maini et
  al. 2024; ``mia infer-dataset``);
* :func:`plan_run` -- what a run would do before anything loads: the attacks that can run, those
  skipped and why, the model passes, warnings and the time estimate;
* :func:`load` -- a saved run folder back as the result :func:`audit` returned (``result.save(dir)``).

Models are given as a loaded model or a spec: a hub id, a local folder, ``"smollm2"`` (the
embedded default) or a ``make-target`` folder (``mia_core.models.load_causal_lm``). Texts are given
as a list of strings, a file path (or ``hf:ID[:config][@split]``) read as the CLI reads it, or a pandas
DataFrame / Series read by its text column (``text_column``, else found as in a .csv file; a column of
numbers, lists or mappings is refused, never scored as its printed form).

Every function checks its arguments before anything is read or loaded (one set of checks, ``_int``,
``_num``, ``_prob``, ``_bool``, ``_choice``, ``_mapping``, ``_names``, ``_texts``...): a wrong type or value
is a one-line :class:`~mia_core.errors.SettingsError` (``DataError`` for texts) naming the parameter, never
a ``TypeError`` from deep inside; later bad input (too few texts, an unknown model) is a one-line
:class:`mia_core.errors.MiaError` before any model pass.
"""
from __future__ import annotations

import inspect
import math
import numbers
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .errors import DataError, SettingsError, safe_text

__all__ = ["RunPlan", "audit", "audit_documents", "audit_mlm", "infer_dataset", "load", "plan_run", "score"]

MAX_PERMUTATIONS = 1_000_000  # infer_dataset's n_permutations at most (p-values down to 1e-6; beyond: hours)
MAX_BOOTSTRAP = 1_000_000  # n_bootstrap at most (the CIs do not gain from more)
MAX_SEED = 2**32 - 1  # what numpy's legacy seeding and scikit-learn's random_state take


# ---------------------------------------------------------------------------- argument checks
# Every public function checks its arguments with these before it reads a file or loads a model: a wrong
# type or value is one SettingsError (a setting) or DataError (texts) line naming the parameter, written
# ``{name}`` with the name in ``options`` (mia_core.errors: each front end words it its own way).

def _shown(value, limit: int = 60) -> str:
    """A value as a message shows it: a short repr for a plain value, "a DataFrame" / "a list" otherwise."""
    if value is None or isinstance(value, (bool, numbers.Number, str, bytes)):
        try:
            s = safe_text(repr(value))
        except ValueError:  # an integer past Python's digit limit for str()
            return "a whole number of more than 4,000 digits"
        return s if len(s) <= limit else s[: limit - 1] + "…"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _bad(name: str, want: str, value, cls=SettingsError):
    return cls(f"{{{name}}} must be {want}, got {_shown(value)}", options=(name,))


def _range(noun: str, lo=None, hi=None, *, lo_open: bool = False, hi_open: bool = False) -> str:
    def f(v):
        return f"{v:,}" if isinstance(v, int) else f"{v:g}"

    if lo is not None and hi is not None:
        return f"{noun} in {'(' if lo_open else '['}{f(lo)}, {f(hi)}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{noun} {'>' if lo_open else '>='} {f(lo)}"
    if hi is not None:
        return f"{noun} {'<' if hi_open else '<='} {f(hi)}"
    return noun


def _int(name: str, value, lo: int | None = None, hi: int | None = None, *, optional: bool = False):
    """A whole number in [lo, hi] (an integral float such as ``1e4`` is taken); None with ``optional``."""
    if value is None and optional:
        return None
    want = _range("a whole number", lo, hi) + (", or None" if optional else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _bad(name, want, value)
    if isinstance(value, numbers.Integral):
        n = int(value)
    else:
        try:
            v = float(value)
        except (OverflowError, ValueError):
            raise _bad(name, want, value) from None
        if not math.isfinite(v) or not v.is_integer():
            raise _bad(name, want, value)
        n = int(v)
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise _bad(name, want, value)
    return n


def _num(name: str, value, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
         hi_open: bool = False, optional: bool = False):
    """A finite number in the range (each end open or closed); None with ``optional``."""
    if value is None and optional:
        return None
    want = _range("a finite number", lo, hi, lo_open=lo_open, hi_open=hi_open) + (", or None" if optional else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _bad(name, want, value)
    try:
        v = float(value)
    except (OverflowError, ValueError):
        raise _bad(name, want, value) from None
    if not math.isfinite(v) or (lo is not None and (v <= lo if lo_open else v < lo)) or (
            hi is not None and (v >= hi if hi_open else v > hi)):
        raise _bad(name, want, value)
    return v


def _prob(name: str, value, *, optional: bool = False):
    """A share strictly between 0 and 1."""
    return _num(name, value, 0, 1, lo_open=True, hi_open=True, optional=optional)


def _seed(value, name: str = "seed") -> int:
    return _int(name, value, 0, MAX_SEED)


def _bool(name: str, value, *, optional: bool = False):
    if value is None and optional:
        return None
    if isinstance(value, bool) or type(value).__name__ == "bool_":  # numpy's too
        return bool(value)
    raise _bad(name, "True or False" + (" or None" if optional else ""), value)


def _choice(name: str, value, choices: Sequence[str]) -> str:
    """One of ``choices`` (case and surrounding spaces ignored); returns it as written in ``choices``."""
    if isinstance(value, str) and value.strip().lower() in choices:
        return value.strip().lower()
    raise _bad(name, "one of " + ", ".join(choices), value)


def _mapping(name: str, value) -> dict:
    """A mapping (None: empty), e.g. ``params`` = ``{attack: {name: value}}``."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    raise _bad(name, "a mapping" + (" {attack: {name: value}}" if name == "params" else ""), value)


def _names(name: str, value, *, optional: bool = True):
    """Names: a comma list (a string) or a list of strings; None with ``optional`` (the default)."""
    if value is None and optional:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, Iterable) and not isinstance(value, (Mapping, bytes, bytearray)):
        items = list(value)
        for i, x in enumerate(items):
            if not isinstance(x, str):
                raise SettingsError(f"{{{name}}}[{i}] must be a name (a string), got {_shown(x)}", options=(name,))
        return items
    raise _bad(name, "a comma list or a list of names (strings)", value)


def _column(name: str, value, *, optional: bool = True):
    if value is None and optional:
        return None
    if isinstance(value, str) and value.strip():
        return value
    raise _bad(name, "a column name (a non-empty string)" + (" or None" if optional else ""), value)


def _callable(name: str, value):
    if value is None or callable(value):
        return value
    raise _bad(name, "a function or None", value)


def _device(value, name: str = "device") -> str:
    """``auto``, ``cpu``, ``cuda``, ``cuda:N``, ``mps`` or ``xpu`` (whether this machine has it is checked when
    a model loads)."""
    import re

    from .models.device import DEVICE_HELP

    if isinstance(value, str) and (value.strip().lower() in ("", "auto")
                                   or re.fullmatch(r"(cpu|cuda|mps|xpu)(:\d+)?", value.strip().lower())):
        return value
    raise _bad(name, DEVICE_HELP, value)


def _dtype(value, name: str = "dtype") -> str:
    from .models.device import DTYPES

    return _choice(name, value, DTYPES)


def _prefix(value):
    """``"auto"``, ``"always"``, ``"none"`` (True / False: always / none)."""
    from .stats.settings import PREFIX_MODES, prefix_mode

    if isinstance(value, (str, bool)) or (isinstance(value, numbers.Integral) and int(value) >= 0):
        try:
            prefix_mode(value)
            return value
        except SettingsError:
            pass
    raise _bad("prefix", "one of " + ", ".join(PREFIX_MODES), value)


def _model_spec(name: str, value, *, optional: bool = True, masked: bool = False):
    """A model spec (a hub id, a local folder or file, ``"smollm2"``) or a loaded model; None with ``optional``."""
    if value is None and optional:
        return None
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, os.PathLike):
        return value
    if not isinstance(value, (str, bytes, numbers.Number)) and value is not None:
        if masked:
            from .models import MaskedLM as Loaded
        else:
            from .models import LoadedModel as Loaded
        if isinstance(value, Loaded):
            return value
    want = ("a hub id, a local folder or a loaded MaskedLM" if masked
            else "a hub id, a local folder or file, 'smollm2' or a loaded model (LoadedModel)")
    raise _bad(name, want + (", or None" if optional else ""), value)


def _path_or_frame(name: str, value):
    """A file path, an ``hf:`` spec, a list of paths, or a pandas DataFrame (``labelled``)."""
    from .data.sets import is_frame

    if value is None or is_frame(value) or isinstance(value, (str, os.PathLike)):
        return value
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (str, os.PathLike)) for v in value):
        return value
    raise _bad(name, "a file path, an hf:ID[:config][@split] spec, a list of paths or a pandas DataFrame", value,
               DataError)


def _sequence(name: str, value, *, optional: bool = True):
    """A list of values (ids, groups): not a string, not a mapping."""
    if value is None and optional:
        return None
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes, bytearray, Mapping)):
        return list(value)
    raise _bad(name, "a list" + (" or None" if optional else ""), value)


def _kwargs(func: str, target, kwargs: dict, checks: dict, *, skip: Sequence[str] = ()) -> dict:
    """``kwargs`` for ``target``: an unknown keyword is one line (before any model loads), each known one
    checked by ``checks[name]``."""
    known = [p for p in inspect.signature(target).parameters if p not in skip]
    for k in kwargs:
        if k not in known:
            raise SettingsError(f"{func}() has no keyword {safe_text(k)!r}; it takes {', '.join(known)}")
    return {k: checks[k](v) if k in checks else v for k, v in kwargs.items()}


def _texts(value, name: str, *, text_column: str | None = None) -> list[str]:
    """The texts given as ``name``: a list (or any iterable) of strings, a file path or ``hf:`` spec (read as
    ``mia run`` reads a file), or a pandas DataFrame / Series (read by its text column, found as in a .csv file
    or named by ``text_column``). None: no texts. Anything else, or a list holding a non-string, is one
    ``DataError`` line naming ``name`` (and the position)."""
    from .data.sets import _shown_path, is_frame, path_exists, read_frame, read_texts
    from .data.hub import is_hub_spec

    if value is None:
        return []
    if is_frame(value):
        kind = "DataFrame" if hasattr(value, "columns") else "Series"
        return [r.text for r in read_frame(value, name=f"{name} (a {kind})", text_column=text_column)]
    if isinstance(value, (str, os.PathLike)):
        if isinstance(value, str) and not is_hub_spec(value) and not path_exists(value):
            raise DataError(f"{{{name}}}: no file or folder named {_shown_path(value)!r} (a string is read as a "
                            f"file path or an hf:ID spec; to give texts, pass a list of strings)", options=(name,))
        return [r.text for r in read_texts(value, text_column=text_column)]
    if isinstance(value, (bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise DataError(f"{{{name}}} must be texts: give texts (a list of strings), a file path or a pandas DataFrame "
                        f"with a text column; got {_shown(value)}", options=(name,))
    items = list(value)  # once: a generator is read here, not exhausted by the check below
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise DataError(f"{{{name}}}[{i}] is {_shown(t)}, not a text: give texts (strings), a file path or a "
                            "pandas DataFrame with a text column", options=(name,))
    return [str(t) for t in items]  # numpy's str_ as str


def _documents(items, what: str, *, text_column: str | None = None):
    """Books: Documents, texts, or paths of files / folders (all of one kind), or a DataFrame's text column."""
    from .data.sets import _shown_path, is_frame, path_exists
    from .documents import Document, load_documents

    if is_frame(items):
        return [Document(name=f"{what[0]}{i + 1:04d}", text=t, source=f"{what} row {i + 1}", strip={})
                for i, t in enumerate(_texts(items, what, text_column=text_column))]
    if isinstance(items, (str, os.PathLike)):
        if not path_exists(items):
            raise DataError(f"{{{what}}}: no file or folder named {_shown_path(items)!r} (a string is read as a "
                            "path; to give the books' texts, pass a list of strings)", options=(what,))
        items = [items]
    elif items is None or isinstance(items, (bytes, bytearray, Mapping)) or not isinstance(items, Iterable):
        raise DataError(f"{{{what}}} must be books: Documents, texts (strings) or paths of files or folders, in a "
                        f"list; got {_shown(items)}", options=(what,))
    items = list(items)
    for i, d in enumerate(items):
        if not isinstance(d, (Document, str, os.PathLike)):
            raise DataError(f"{{{what}}}[{i}] is {_shown(d)}, not a book: give Documents, texts (strings) or paths",
                            options=(what,))
    if all(isinstance(d, Document) for d in items):
        return items
    if any(isinstance(d, Document) for d in items):
        i = next(i for i, d in enumerate(items) if not isinstance(d, Document))
        raise DataError(f"{{{what}}}[{i}] is not a Document while others are: give all Documents, all texts or all "
                        "paths", options=(what,))
    exists = [path_exists(d) for d in items]
    if all(exists):
        return load_documents([os.fspath(d) for d in items])
    missing = next(i for i, e in enumerate(exists) if not e)
    if any(exists) or isinstance(items[missing], os.PathLike):
        raise DataError(f"{{{what}}}[{missing}]: no file or folder named {_shown_path(items[missing])!r} (give all "
                        "paths or all texts)", options=(what,))
    return [Document(name=f"{what[0]}{i + 1:04d}", text=t, source=f"{what} text {i + 1}", strip={})
            for i, t in enumerate(items)]


def _model(spec, *, dtype: str = "auto", device: str = "auto", quantize: str = "none",
           trust_remote_code: bool = False):
    """A loaded causal LM from a spec (None: the embedded default), or the model itself."""
    from .models import LoadedModel, load_causal_lm

    if isinstance(spec, LoadedModel):
        return spec
    return load_causal_lm(spec, dtype=dtype, device=device, quantize=quantize, trust_remote_code=trust_remote_code)


def _config(attacks, params, *, prefix: str, first_token, cache: bool, n_bootstrap: int = 0, seed: int = 0,
            split=None, blind: bool = True, population_alpha: float = 0.1):
    from .attacks import DEFAULT_ATTACKS
    from .pipeline import RunConfig
    from .stats import StatsSettings

    names = list(DEFAULT_ATTACKS) if attacks is None else attacks.split(",") if isinstance(attacks, str) else list(attacks)
    names = [n.strip() for n in names if n.strip()]
    return RunConfig(attacks=names, params=dict(params or {}), stats=StatsSettings(prefix=prefix), use_cache=cache,
                     n_bootstrap=n_bootstrap, seed=seed, split=split, blind=blind, population_alpha=population_alpha,
                     score_first_token=first_token)


@dataclass
class RunPlan:
    """What a run would do (:func:`plan_run`): ``attacks`` to run, ``skipped`` ``{attack: why}``, the
    model ``passes``, ``warnings``, the ``estimate`` line and its ``seconds`` (None without texts)."""

    attacks: list[str]
    skipped: dict[str, str] = field(default_factory=dict)
    passes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    estimate: str = ""
    seconds: float | None = None

    def __str__(self) -> str:
        lines = [f"attacks: {', '.join(self.attacks)}"]
        lines += [f"skipped {n}: it {why}" for n, why in self.skipped.items()]
        lines += [f"passes: {', '.join(self.passes)}"] + ([self.estimate] if self.estimate else [])
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def plan_run(attacks=None, *, texts: Sequence[str] = (), reference: bool = False, population: Sequence[str] = (),
             labels: bool = False, params: dict | None = None, n_params: float | None = None, device: str = "cpu",
             tokenizer=None, modify_variants: Sequence[str] = (), check_inputs: bool = True,
             text_column: str | None = None) -> RunPlan:
    """What a run of ``attacks`` would do, before any model loads.

    Parameters
    ----------
    attacks : str or list of str, optional
        Attack names, a comma list, or ``"all"`` (every attack the inputs allow; the others are
        skipped with the reason). None: the default list (``mia_core.attacks.default_attacks``).
    texts : list of str, path or DataFrame
        The texts the run will score (for the estimate; the population counts too). A DataFrame or a
        Series is read by its text column (``text_column``, else found as in a .csv file).
    reference : bool
        Whether a reference model will be given.
    population : list of str
        Known non-members (ReCaLL's prefix, RMIA's z, the population threshold).
    labels : bool
        Whether labelled training texts will be given (``split`` or a training set: SMIA).
    params : dict, optional
        ``{attack: {name: value}}``; every value is checked against its declared domain.
    n_params, device, tokenizer
        For the time estimate: the model's parameter count, where it runs, its tokenizer (exact
        token counts; otherwise estimated from characters).
    modify_variants : list of str
        Modified-member variants (SMIA §5.2) that will be evaluated too.
    check_inputs : bool
        False: plan the attacks as given without checking that their inputs will be there (a page's
        estimate of what is ticked; the run itself checks).
    text_column : str, optional
        The text column of a table (file or DataFrame) given as ``texts`` or ``population``.

    Returns
    -------
    RunPlan

    Raises
    ------
    SettingsError
        An attack named explicitly that cannot run with these inputs, an unknown attack, a parameter
        outside its domain, or an argument of the wrong type (one line naming it).
    DataError
        ``texts`` or ``population`` that are not texts (one line naming the parameter).
    """
    from .attacks import REGISTRY, default_attacks
    from .estimate import count_tokens, describe_estimate, estimate_seconds
    from .pipeline import plan_attacks
    from .formatting import fmt_seconds

    attacks = _names("attacks", attacks)
    reference, labels = _bool("reference", reference), _bool("labels", labels)
    params = _mapping("params", params)
    n_params = _num("n_params", n_params, 0, optional=True)
    device = _device(device)
    if tokenizer is not None and not callable(tokenizer):
        raise _bad("tokenizer", "a tokenizer (callable) or None", tokenizer)
    modify_variants = _names("modify_variants", modify_variants) or []
    if isinstance(modify_variants, str):
        modify_variants = [v for v in modify_variants.split(",") if v.strip()]
    check_inputs = _bool("check_inputs", check_inputs)
    text_column = _column("text_column", text_column)
    texts = _texts(texts, "texts", text_column=text_column)
    population = _texts(population, "population", text_column=text_column)
    spec = attacks if attacks is not None else default_attacks(have_reference=reference)
    have = ({"reference"} if reference else set()) | ({"labels"} if labels else set()) | (
        {"population"} if len(population) else set())
    if check_inputs:
        names, skipped = plan_attacks(spec, have=have, params=params)
    else:
        from .pipeline import parse_attacks

        names, skipped = parse_attacks(spec), {}
    needs = {n for a in names for n in REGISTRY[a].needs}
    passes = ["target"] + (["target lower-cased"] if "target_lower" in needs else []) + (
        ["reference"] if "reference" in needs else [])
    warnings: list[str] = []
    texts, pop = list(texts), list(population)
    estimate, seconds = "", None
    if texts:
        n_tok = count_tokens(texts, tokenizer)
        extra = count_tokens(pop, tokenizer) * len(passes) if pop else 0.0
        if "neighbours" in needs:
            n = max(int(REGISTRY[a].kwargs(params).get("n") or 25) for a in names if "neighbours" in REGISTRY[a].needs)
            extra += 0.6 * n * n_tok  # each neighbour scored from where it differs from its text
        if modify_variants:
            extra += len(modify_variants) * n_tok * len(passes) / 2  # only the members are modified
        estimate = describe_estimate(len(texts), passes, n_tok, n_params, device)
        seconds = estimate_seconds(n_tok * len(passes), n_params, device)[0]
        if extra:
            sec, _ = estimate_seconds(int(extra), n_params, device)
            seconds += sec
            parts = (["the population set"] if pop else []) + (["neighbours"] if "neighbours" in needs else []) + (
                ["modified members"] if modify_variants else [])
            estimate += f" Plus about {fmt_seconds(sec)} for {', '.join(parts)}."
        if "lowercase" in REGISTRY and "lowercase" not in names:
            sec, _ = estimate_seconds(n_tok, n_params, device)
            estimate += (f" Lowercase (not ticked by default) would add a pass over the lower-cased texts: about "
                         f"{fmt_seconds(sec)}.")
    if "rmia" in names and not REGISTRY["rmia"].kwargs(params).get("references"):
        warnings.append("RMIA with the run's single reference cannot tune a (it needs 3+ make-references models): "
                        "a = 0.3, which ranks like LOSS at language-model likelihoods")
    return RunPlan(attacks=names, skipped=skipped, passes=passes, warnings=warnings, estimate=estimate,
                   seconds=seconds)


def score(texts, model=None, attacks=None, reference=None, *, population=None, params: dict | None = None,
          prefix: str = "auto", first_token: bool | None = None, cache: bool = True, dtype: str = "auto",
          device: str = "auto", progress=None, text_column: str | None = None):
    """Membership scores of unlabelled texts, one row per text (higher = more likely a member).

    Parameters
    ----------
    texts : list of str, path or DataFrame
        The texts to score (a path: read as ``mia run`` reads a file; a pandas DataFrame or Series: its
        text column, ``text_column`` or found as in a .csv file; a column that holds numbers, lists or
        anything but strings is refused).
    model : LoadedModel or str, optional
        The audited causal LM or its spec; None: the embedded SmolLM2-135M.
    attacks : str or list of str, optional
        Attack names (None: ``mia_core.attacks.DEFAULT_ATTACKS``, the one-pass attacks LOSS, zlib, Min-K%,
        Min-K%++; ``ref`` is not added for a reference given). Attacks that learn
        from labels (SMIA) cannot run without labels; ``ref`` needs ``reference``; ReCaLL and RMIA need
        ``population``.
    reference : LoadedModel or str, optional
        The reference model (for ``ref``, offline ``rmia``).
    population : list of str, optional
        Known non-members, disjoint from ``texts``.
    params : dict, optional
        ``{attack: {name: value}}`` (``python -m mia_core run --list-params`` lists them).
    prefix : {"auto", "always", "none"}
        What is put in front of every text: ``"auto"`` scores texts as the model saw them in training
        (the tokenizer's own BOS, or nothing for GPT-2-style tokenizers).
    first_token : bool, optional
        Force the first text token in or out of the scored tokens (None: from ``prefix``).
    cache : bool
        Read and write the on-disk statistics cache.
    text_column : str, optional
        The text column of a table (file or DataFrame) given as ``texts`` or ``population``.

    Raises
    ------
    SettingsError
        A setting of the wrong type or out of range: one line naming the parameter, before anything is
        read or loaded.
    DataError
        Texts that are not texts (a list holding a non-string, a column of numbers or lists, a missing
        file): one line naming the parameter or the file.

    Returns
    -------
    pandas.DataFrame
        ``text_id``, ``text_hash`` and one column per attack; ``df.attrs["report"]`` holds the notes.

    References
    ----------
    Yeom et al. 2018 (LOSS); Carlini et al. 2021 (zlib, lowercase, reference); Shi et al. 2024
    (Min-K%); Zhang et al. 2024 (Min-K%++); and each attack's citation in ``mia_core.attacks``.
    """
    from .data import Dataset
    from .pipeline import check_config, score_texts

    model, reference = _model_spec("model", model), _model_spec("reference", reference)
    attacks, params = _names("attacks", attacks), _mapping("params", params)
    prefix, first_token = _prefix(prefix), _bool("first_token", first_token, optional=True)
    cache, dtype, device = _bool("cache", cache), _dtype(dtype), _device(device)
    progress, text_column = _callable("progress", progress), _column("text_column", text_column)
    texts = _texts(texts, "texts", text_column=text_column)
    if not texts:
        raise DataError("texts: no texts to score (an empty list)")  # score()'s own parameter: no flag, no widget
    pop = _texts(population, "population", text_column=text_column)
    cfg = check_config(_config(attacks, params, prefix=prefix, first_token=first_token, cache=cache))  # before any model
    target = _model(model, dtype=dtype, device=device)
    ref = _model(reference, dtype=dtype, device=device) if reference is not None else None
    population_ds = Dataset(texts=pop, labels=[0] * len(pop), ids=[f"p{i + 1:04d}" for i in range(len(pop))]) \
        if pop else None
    return score_texts(texts, target, reference=ref, config=cfg, population=population_ds,
                       progress=progress or _noop())


def audit(members=None, nonmembers=None, model=None, attacks=None, reference=None, *, labelled=None,
          text_column: str | None = None, label_column: str = "label", population=None,
          params: dict | None = None, split: float | None = None, n_bootstrap: int = 1000, seed: int = 0,
          prefix: str = "auto", first_token: bool | None = None, blind: bool = True, alpha: float = 0.1,
          cache: bool = True, dtype: str = "auto", device: str = "auto", progress=None):
    """Members vs non-members: every attack's scores and metrics (the CLI's ``mia run``).

    Parameters
    ----------
    members, nonmembers : list of str, path or DataFrame
        Texts known to be in (out of) the model's training data (a pandas DataFrame or Series: its text
        column, ``text_column`` or found as in a .csv file).
    labelled : path or DataFrame, optional
        Instead of ``members``/``nonmembers``: one labelled table, the way MIA benchmarks ship them
        (.csv, .tsv, .jsonl, .json, .parquet, .arrow, .feather, a folder written by
        ``datasets.Dataset.save_to_disk``, or ``"hf:ID[:config][@split]"``: a hub dataset's parquet
        conversion, from the local Hugging Face cache when offline), with ``label_column``
        (1 = member) and ``text_column`` (found by itself when None). WikiMIA's jsonl (``input``,
        ``label``) needs nothing more, nor does ``"hf:swj0419/WikiMIA:default@WikiMIA_length32"``. A pandas
        DataFrame is read the same way (its text and label columns).
    model : LoadedModel or str, optional
        The audited causal LM or its spec; None: the embedded SmolLM2-135M.
    attacks : str or list of str, optional
        Attack names, a comma list, or ``"all"``; None: the default list (the reference attack
        included when a reference is given).
    reference : LoadedModel or str, optional
        The reference model; for a ``make-target`` folder its base is used when none is given.
    population : list of str or path, optional
        Known non-members, disjoint from the audited texts: the threshold at ``alpha`` FPR, ReCaLL's
        prefix, RMIA's z.
    params : dict, optional
        ``{attack: {name: value}}``.
    split : float, optional
        Share of the labelled texts that attacks which learn (SMIA) train on; every attack is then
        reported on the held-out rest.
    n_bootstrap, seed : int
        Bootstrap resamples for the CIs (0: none; at most 1,000,000) and their seed.
    prefix, first_token, cache
        As in :func:`score`.
    blind : bool
        Also train the model-free blind baseline (is there a distribution shift a text classifier sees?).
    alpha : float
        The population threshold's false-positive rate, in (0, 1).

    Raises
    ------
    SettingsError
        A setting of the wrong type or out of range: one line naming the parameter, before anything is
        read or loaded.
    DataError
        Texts that are not texts (a list holding a non-string, a column of numbers or lists, a missing
        file): one line naming the parameter or the file.

    Returns
    -------
    mia_core.pipeline.RunResult
        ``.scores`` (DataFrame), ``.metrics`` (``{attack: {"auc", "auc_ci", "tpr_at_fpr", ...}}``),
        ``.summary_text()``, ``.save(dir)``; :func:`load` reads it back.

    References
    ----------
    AUC and TPR at low FPR: Carlini et al. 2022, "Membership Inference Attacks From First Principles".
    The blind baseline: Das et al. 2024, "Blind Baselines Beat Membership Inference Attacks for
    Foundation Models".
    """
    from .data import Dataset, texts_from_strings
    from .pipeline import check_config, check_population, run_attacks

    model, reference = _model_spec("model", model), _model_spec("reference", reference)
    attacks, params = _names("attacks", attacks), _mapping("params", params)
    labelled = _path_or_frame("labelled", labelled)
    text_column, label_column = _column("text_column", text_column), _column("label_column", label_column,
                                                                                optional=False)
    no_split = isinstance(split, numbers.Real) and not isinstance(split, bool) and split == 0  # 0: no split
    split = None if no_split else _prob("split", split, optional=True)
    n_bootstrap, seed = _int("n_bootstrap", n_bootstrap, 0, MAX_BOOTSTRAP), _seed(seed)
    prefix, first_token = _prefix(prefix), _bool("first_token", first_token, optional=True)
    blind, alpha, cache = _bool("blind", blind), _prob("alpha", alpha), _bool("cache", cache)
    dtype, device, progress = _dtype(dtype), _device(device), _callable("progress", progress)
    if labelled is not None:
        from .data import load_dataset

        if members is not None or nonmembers is not None:
            raise DataError("give either labelled= or members and non-members, not both")
        ds = load_dataset(labelled=labelled, text_column=text_column, label_column=label_column)
    else:
        ds = texts_from_strings(_texts(members, "members", text_column=text_column),
                                _texts(nonmembers, "nonmembers", text_column=text_column))
    pop = _texts(population, "population", text_column=text_column)
    population_ds = Dataset(texts=pop, labels=[0] * len(pop), ids=[f"p{i + 1:04d}" for i in range(len(pop))]) \
        if pop else None
    check_population(population_ds, ds.texts)
    ref_spec = reference
    if ref_spec is None:
        ref_spec = _base_of(model)
    if attacks is None:
        from .attacks import default_attacks

        attacks = default_attacks(have_reference=ref_spec is not None)
    plan = plan_run(attacks, reference=ref_spec is not None, population=pop, labels=bool(split), params=params)
    cfg = check_config(_config(plan.attacks, params, prefix=prefix, first_token=first_token, cache=cache,
                               n_bootstrap=n_bootstrap, seed=seed, split=split, blind=blind, population_alpha=alpha))
    target = _model(model, dtype=dtype, device=device)
    from .pipeline import uses_reference

    ref = _model(ref_spec, dtype=dtype, device=device) if ref_spec is not None and uses_reference(
        plan.attacks, cfg.params) else None
    result = run_attacks(ds, target, reference=ref, config=cfg, population=population_ds, progress=progress or _noop())
    if plan.skipped:
        result.config["skipped"] = plan.skipped
        result.report += [f"skipped {n}: it {why}" for n, why in plan.skipped.items()]
    return result


def _base_of(model):
    """The base of a ``make-target`` folder (its record), else None: nothing is loaded."""
    import json

    from .models import LoadedModel

    if model is None or isinstance(model, LoadedModel):
        return None
    try:
        from .models.causal import TARGET_MARKER, resolve_spec

        ms = resolve_spec(str(model))
        if ms.kind == "target":
            return json.loads((Path(ms.location) / TARGET_MARKER).read_text()).get("base")
    except Exception:  # noqa: BLE001 - an unreadable target is reported when it is loaded
        return None
    return None


def _pairs(name: str, value):
    """None, or a list of (normalisation, feature extractor) pairs of strings."""
    if value is None:
        return None
    items = _sequence(name, value, optional=False)
    for i, x in enumerate(items):
        if not (isinstance(x, (list, tuple)) and len(x) == 2 and all(isinstance(y, str) for y in x)):
            raise SettingsError(f"{{{name}}}[{i}] must be a pair of names (normalisation, feature extractor), got "
                                f"{_shown(x)}", options=(name,))
    return [tuple(x) for x in items]


def _whole_list(name: str, value, lo: int):
    """None, or a list of whole numbers >= ``lo``."""
    if value is None:
        return None
    return [_int(f"{name}[{i}]", x, lo) for i, x in enumerate(_sequence(name, value, optional=False))]


def _neighbours(value):
    if isinstance(value, Mapping):
        return dict(value)
    return _bool("baseline_neighbours", value)


def _n_jobs(value):
    """scikit-learn's ``n_jobs``: None, a number of processes >= 1, or -1 (every core)."""
    if value is None:
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) == -1:
        return -1
    return _int("n_jobs", value, 1)


_DOCUMENT_CHECKS = {
    "context": lambda v: _int("context", v, 2),
    "normalizations": lambda v: _names("normalizations", v, optional=False),
    "features": lambda v: _names("features", v, optional=False),
    "folds": lambda v: _int("folds", v, 2),
    "n_bins": lambda v: _int("n_bins", v, 1),
    "agg_count": lambda v: _bool("agg_count", v),
    "hist_outside": lambda v: _choice("hist_outside", v, ("clip", "drop")),
    "seed": _seed,
    "partial_lengths": lambda v: _whole_list("partial_lengths", v, 1),
    "partial_pipelines": lambda v: _pairs("partial_pipelines", v),
    "partial_position": lambda v: _choice("partial_position", v, ("start", "random")),
    "partial_dictionaries": lambda v: _choice("partial_dictionaries", v, ("partial", "full")),
    "baselines": lambda v: _bool("baselines", v),
    "baseline_attacks": lambda v: _names("baseline_attacks", v, optional=False),
    "baseline_seq_len": lambda v: _int("baseline_seq_len", v, 2),
    "baseline_max_sequences": lambda v: _int("baseline_max_sequences", v, 1, optional=True),
    "baseline_neighbours": _neighbours,
    "n_estimators": lambda v: _int("n_estimators", v, 1, optional=True),
    "n_jobs": lambda v: _n_jobs(v),
    "batch_tokens": lambda v: _int("batch_tokens", v, 1, optional=True),
    "use_cache": lambda v: _bool("use_cache", v),
    "progress": lambda v: _callable("progress", v),
}


def audit_documents(members, nonmembers, model=None, *, reference=None, dtype: str = "auto", device: str = "auto",
                    text_column: str | None = None, **kwargs):
    """Document-level membership inference on whole books (Meeus et al. 2024, USENIX Security).

    ``members``/``nonmembers``: lists of :class:`mia_core.documents.Document`, of texts, or of paths
    (files or folders, read as ``mia documents`` reads them; all of one kind), or a pandas DataFrame
    (one book per row of its text column, ``text_column`` or found as in a .csv file). Keyword arguments
    go to :func:`mia_core.documents.run_document_audit` (``normalizations``, ``features``, ``folds``,
    ``n_bins``, ``agg_count``, ``hist_outside``, ``partial_lengths``, ...); each is checked, and an unknown
    one refused, before anything is read or loaded (one line naming it). Returns its
    ``DocumentAuditResult`` (``.metrics``, ``.scores``, ``.summary_text()``, ``.save(dir)``).

    References
    ----------
    Meeus, Jain, Rei & de Montjoye 2024, "Did the Neurons Read your Book? Document-level Membership
    Inference for Large Language Models", USENIX Security.
    """
    from .documents import run_document_audit
    from .documents.audit import run_document_audit as declared  # its keywords

    model, reference = _model_spec("model", model), _model_spec("reference", reference)
    dtype, device, text_column = _dtype(dtype), _device(device), _column("text_column", text_column)
    kwargs = _kwargs("audit_documents", declared, kwargs, _DOCUMENT_CHECKS,
                     skip=("member_docs", "nonmember_docs", "lm", "reference"))
    docs = [_documents(members, "members", text_column=text_column),
            _documents(nonmembers, "nonmembers", text_column=text_column)]
    lm = _model(model, dtype=dtype, device=device)
    ref = _model(reference, dtype=dtype, device=device) if reference is not None else None
    return run_document_audit(docs[0], docs[1], lm, reference=ref, progress=kwargs.pop("progress", None) or _noop(),
                              **kwargs)


def _mlm_checks() -> dict:
    from .mlm.masking import RECIPES

    return {
        "k": lambda v: _int("k", v, 1, optional=True),
        "seed": _seed,
        "rate": lambda v: _num("rate", v, 0, 1, lo_open=True),
        "alpha": lambda v: _prob("alpha", v),
        "recipe": lambda v: _choice("recipe", v, tuple(RECIPES)),
        "member_groups": lambda v: _sequence("member_groups", v),
        "nonmember_groups": lambda v: _sequence("nonmember_groups", v),
        "population_groups": lambda v: _sequence("population_groups", v),
        "member_ids": lambda v: _sequence("member_ids", v),
        "nonmember_ids": lambda v: _sequence("nonmember_ids", v),
        "batch_tokens": lambda v: _int("batch_tokens", v, 1),
        "n_bootstrap": lambda v: _int("n_bootstrap", v, 0, MAX_BOOTSTRAP),
        "cache": lambda v: _bool("cache", v),
        "device": _device,
        "dtype": _dtype,
        "trust_remote_code": lambda v: _bool("trust_remote_code", v),
        "vocab_only": lambda v: _bool("vocab_only", v),
        "progress": lambda v: _callable("progress", v),
    }


def audit_mlm(members, nonmembers, population, model, reference, *, text_column: str | None = None, **kwargs):
    """The masked-LM likelihood-ratio audit (Mireshghallah et al. 2022, EMNLP) of ``model`` against
    ``reference`` (masked LMs sharing a tokenizer; specs or loaded ``MaskedLM``). ``population``:
    known non-members for the thresholds. Texts are given as for :func:`score` (lists of strings, paths,
    or pandas DataFrames read by ``text_column``). Keyword arguments go to :func:`mia_core.mlm.run_mlm_audit`
    (``recipe``, ``k``, ``seed``, ``alpha``, groups, ``train_samples``...); each is checked, and an unknown
    one refused, before anything is read or loaded. Returns its ``MlmAuditResult``.

    References
    ----------
    Mireshghallah, Goyal, Uniyal, Berg-Kirkpatrick & Shokri 2022, "Quantifying Privacy Risks of Masked
    Language Models Using Membership Inference Attacks", EMNLP.
    """
    from . import mlm
    from .mlm.audit import run_mlm_audit as declared  # its keywords (mlm.run_mlm_audit is what is called)

    model = _model_spec("model", model, optional=False, masked=True)
    reference = _model_spec("reference", reference, optional=False, masked=True)
    text_column = _column("text_column", text_column)
    kwargs = _kwargs("audit_mlm", declared, kwargs, _mlm_checks(),
                     skip=("members", "nonmembers", "population", "target", "reference"))
    if "train_samples" in kwargs:
        kwargs["train_samples"] = _texts(kwargs["train_samples"], "train_samples", text_column=text_column) or None
    return mlm.run_mlm_audit(_texts(members, "members", text_column=text_column),
                             _texts(nonmembers, "nonmembers", text_column=text_column),
                             _texts(population, "population", text_column=text_column), model, reference, **kwargs)


def infer_dataset(suspect, validation, model=None, reference=None, *, population=None, features="default",
                  alpha: float = 0.01, folds: int = 5, n_permutations: int = 10_000, seed: int = 0,
                  params: dict | None = None, prefix: str = "auto", cache: bool = True, dtype: str = "auto",
                  device: str = "auto", books: bool = False, passage_words: int = 256, max_passages: int = 40,
                  correction: str = "bh", combination: str = "nonneg", progress=None, text_column: str | None = None):
    """Was the suspect collection used to train the model? Dataset inference with a p-value.

    Parameters
    ----------
    suspect : list of str, path or DataFrame
        The texts in question (a pandas DataFrame or Series: its text column, ``text_column`` or found as
        in a .csv file).
    validation : list of str, path or DataFrame
        Texts of the same distribution known not to be trained on (the test's assumption: the two
        sets are exchangeable unless the suspect set was trained on; checked by the IID guard).
    model, reference : LoadedModel or str, optional
        The audited causal LM (None: the embedded SmolLM2-135M) and an optional reference model (adds
        the reference attack as a feature). Loaded only once the model-free checks have passed.
    population : list of str, path or DataFrame, optional
        Known non-members besides the validation set (ReCaLL's prefix feature).
    features : str or list of str
        ``"default"``, ``"all"`` or attack families (``mia_core.dataset_inference.features``).
    alpha : float
        Significance level of the verdict, in (0, 1).
    folds, n_permutations, seed
        The one-sided permutation test's folds (>= 2), label permutations (99 to 1,000,000) and seed.
    combination : str
        How the oriented features are combined, always with non-negative weights: ``"nonneg"`` (fitted by
        cross-fitting, the default) or ``"mean"`` (equal weights, reads no label);
        ``mia_core.dataset_inference.significance``.
    correction : str
        Across the suspect texts' (or books') own conformal p-values: ``"bh"`` (Benjamini-Hochberg, the
        false-discovery rate) or ``"holm"`` (the family-wise error rate).
    books : bool
        ``suspect`` and ``validation`` are books (Documents, texts or paths of files/folders, one book per
        file): each is cut into passages of ``passage_words`` words (at least 16; at most ``max_passages``),
        the book is the unit of the test, and each suspect book gets its own p-value, adjusted across the
        books (``mia_core.dataset_inference.books``).
    text_column : str, optional
        The text column of a table (file or DataFrame) given as a set.

    Raises
    ------
    SettingsError
        A setting of the wrong type or out of range: one line naming the parameter, before anything is
        read or loaded.
    DataError
        Texts that are not texts (a list holding a non-string, a column of numbers or lists, a missing
        file): one line naming the parameter or the file.

    Returns
    -------
    mia_core.dataset_inference.DatasetInferenceResult
        ``.summary`` (``p_value``, ``p_value_ttest``, ``verdict``: ``used`` / ``not_shown`` /
        ``refused``, ``blind_auc``, ``blind_p_value``, ``self_check_p_value``, ``n_flagged``, ``weights`` ...),
        ``.scores`` (per text: features, scores, conformal and adjusted p-values), ``.save(dir)``.

    References
    ----------
    Maini, Jia, Papernot & Dziedzic 2024, "LLM Dataset Inference: Did you train on my dataset?",
    NeurIPS. Phipson & Smyth 2010, "Permutation P-values Should Never Be Zero".
    """
    from .attacks import check_params
    from .dataset_inference import run_dataset_inference

    model, reference = _model_spec("model", model), _model_spec("reference", reference)
    features = _names("features", features)
    features = "default" if features is None else features
    alpha, folds = _prob("alpha", alpha), _int("folds", folds, 2)
    n_permutations = _int("n_permutations", n_permutations, 99, MAX_PERMUTATIONS)
    seed, params = _seed(seed), check_params(_mapping("params", params))
    prefix, cache, dtype, device = _prefix(prefix), _bool("cache", cache), _dtype(dtype), _device(device)
    books, correction = _bool("books", books), _choice("correction", correction, ("bh", "holm"))
    from .dataset_inference.significance import COMBINATIONS

    combination = _choice("combination", combination, COMBINATIONS)
    passage_words, max_passages = _int("passage_words", passage_words, 16), _int("max_passages", max_passages, 1)
    progress, text_column = _callable("progress", progress), _column("text_column", text_column)

    def load(spec):
        return _model(spec, dtype=dtype, device=device)

    if books:
        from .dataset_inference.books import run_book_inference

        if population is not None:
            raise SettingsError("{population} is not used with {books}: the book test has no ReCaLL feature",
                                options=("population", "books"))
        return run_book_inference(
            _documents(suspect, "suspect", text_column=text_column),
            _documents(validation, "validation", text_column=text_column), model, reference=reference,
            features=features, alpha=alpha, folds=folds, n_permutations=n_permutations, seed=seed, params=params,
            prefix=prefix, use_cache=cache, passage_words=passage_words, max_passages=max_passages,
            correction=correction, combination=combination, load=load, progress=progress)
    return run_dataset_inference(
        _texts(suspect, "suspect", text_column=text_column), _texts(validation, "validation", text_column=text_column),
        model, reference=reference, population=_texts(population, "population", text_column=text_column),
        features=features, alpha=alpha, folds=folds, n_permutations=n_permutations, seed=seed, params=params,
        prefix=prefix, use_cache=cache, combination=combination, correction=correction, load=load, progress=progress)


def load(path):
    """A saved run folder read back, as the dashboard's run store reads its runs.

    Parameters
    ----------
    path : str or Path
        A folder written by ``result.save(dir)``, ``mia run --out`` or the run store.

    Returns
    -------
    mia_core.runs.StoredRun
        The :class:`mia_core.pipeline.RunResult` it was (``.scores``, ``.metrics``, ``.config``,
        ``.models``, ``.timings``, ``.shift``, ``.report``...), plus ``.id`` (the folder's name),
        ``.meta`` (its ``meta.json`` when the run store wrote it, else ``{}``) and ``.path``.

    Raises
    ------
    DataError
        One line, for a folder that holds no saved run (document and masked-LM folders are not read
        back yet) or a damaged one: a file a link, not JSON, or of another shape than a run's.
    """
    from .runs import read_run

    if not isinstance(path, (str, os.PathLike)) or (isinstance(path, str) and not path.strip()):
        raise _bad("path", "the path of a saved run's folder", path, DataError)
    return read_run(path)


def _noop():
    from .progress import noop

    return noop
