"""The declared options of a document-level audit (Meeus et al. 2024): one frozen :class:`DocumentOptions` whose fields
carry their default, their domain and their one-line help (:mod:`mia_core.options`).

:meth:`DocumentOptions.check` is the one check of these settings, whoever gives them: the API
(:func:`mia_core.api.documents.prepare_documents`, ``audit_documents``), :func:`mia_core.documents.run_document_audit`,
``mia documents`` (its flags are made from the fields, :func:`mia_core.cli.common.add_options`) and the Document audit
page (its widgets' limits, :meth:`~mia_core.options.Options.widget_limits`). What needs the books (enough of them for
the folds, the partial-document lengths against their length) is checked by
:func:`mia_core.documents.stages.document_set`.
"""
from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..errors import SettingsError
from ..options import SEED, Options, flag, one_of, option, parsed, whole

DEFAULT_CONTEXT = 128  # §4.1; the paper also uses 1024 and 2048
DEFAULT_BINS = 1000  # §4.3 / the authors' configs (hist_1000)
OUTSIDE = ("clip", "drop")  # HistFE: held-out values outside the fitted bins (mia_core.documents.features)
FEATURES = ("hist", "agg")
PAPER_BASELINES = ("loss", "zlib", "lowercase", "ref", "min_k", "neighbourhood")  # §6.2
DEFAULT_SEQ_LEN = 128
DEFAULT_MAX_PER_DOC = 32
DEFAULT_LENGTHS = (100, 500, 1000, 2500, 5000, 10000, 25000)  # §6.4
POSITIONS = ("start", "random")
DICTIONARIES = ("partial", "full")
# name -> (kind, dictionary) ; kind in {"none", "ratio", "max"}, dictionary in {None, "tf", "gp"}
PASS_SHARE = 0.6  # the share of the audit's progress (0 to 0.6) its model pass over the books reports
NORMALIZATIONS: dict[str, tuple[str, str | None]] = {
    "nonorm": ("none", None),
    "rationorm_tf": ("ratio", "tf"),
    "rationorm_gp": ("ratio", "gp"),
    "maxnorm_tf": ("max", "tf"),
    "maxnorm_gp": ("max", "gp"),
}


def parse_normalizations(spec) -> tuple[str, ...]:
    """``"all"``, ``"maxnorm-tf"``, ``"MaxNormTF,nonorm"`` or a list of those -> canonical names."""
    items = [spec] if isinstance(spec, str) else list(spec or ())
    names: list[str] = []
    for item in items:
        for raw in str(item).split(","):
            key = raw.strip().lower().replace("-", "_").replace(" ", "")
            if not key:
                continue
            if key == "all":
                names.extend(NORMALIZATIONS)
                continue
            for suffix in ("tf", "gp"):  # MaxNormTF -> maxnorm_tf
                if key.endswith(suffix) and not key.endswith("_" + suffix) and key[: -len(suffix)] in ("maxnorm", "rationorm"):
                    key = key[: -len(suffix)] + "_" + suffix
            if key in ("none", "no_norm"):
                key = "nonorm"
            if key not in NORMALIZATIONS:
                raise SettingsError(
                    f"unknown normalisation {raw.strip()!r}: choose from {', '.join(n.replace('_', '-') for n in NORMALIZATIONS)} or all"
                )
            names.append(key)
    out = tuple(dict.fromkeys(names))
    if not out:
        raise SettingsError("no normalisation chosen")
    return out


def parse_features(spec) -> tuple[str, ...]:
    """``"hist"``, ``"agg"``, ``"both"``/``"all"``, ``"HistFE"`` or a list -> canonical names."""
    items = [spec] if isinstance(spec, str) else list(spec or ())
    out: list[str] = []
    for item in items:
        for raw in str(item).split(","):
            key = raw.strip().lower()
            if not key:
                continue
            if key in ("both", "all"):
                out.extend(FEATURES)
            elif key in ("hist", "histfe", "histogram"):
                out.append("hist")
            elif key in ("agg", "aggfe", "aggregate"):
                out.append("agg")
            else:
                raise SettingsError(f"unknown feature extractor {raw.strip()!r}: choose hist, agg or both")
    out = list(dict.fromkeys(out))
    if not out:
        raise SettingsError("no feature extractor chosen")
    return tuple(out)


def _shown(value) -> str:
    from ..options import _shown as shown

    return shown(value) if isinstance(value, (str, numbers.Number, bool, type(None))) else \
        f"a {type(value).__name__}"


def _items(value, where: str, what: str) -> list:
    """A comma list (a string) split, or a list's items; anything else one line naming ``where``."""
    if isinstance(value, str):
        return [x.strip() for x in value.split(",") if x.strip()]
    if isinstance(value, Iterable) and not isinstance(value, (Mapping, bytes, bytearray)):
        return list(value)
    raise SettingsError(f"{where} must be {what}, got {_shown(value)}")


def _names(parse, what: str):
    def read(value, where: str) -> tuple:
        items = _items(value, where, what)
        for i, x in enumerate(items):
            if not isinstance(x, str):
                raise SettingsError(f"{where}[{i}] must be a name (a string), got {_shown(x)}")
        return tuple(parse(items))
    return read


def _attacks(value, where: str) -> tuple:
    items = _items(value, where, "a comma list or a list of attack names")
    for i, x in enumerate(items):
        if not isinstance(x, str):
            raise SettingsError(f"{where}[{i}] must be an attack name (a string), got {_shown(x)}")
    return tuple(items)


def _lengths(value, where: str) -> tuple:
    """Token counts >= 1; ``"none"``, ``"off"``, ``"0"`` or an empty list: no curve."""
    if isinstance(value, str) and value.strip().lower() in ("off", "0"):
        return ()
    items = _items(value, where, "a comma list or a list of token counts (whole numbers >= 1), or none")
    out = []
    for i, x in enumerate(items):
        try:
            n = whole(1).check(x, f"{where}[{i}]")
        except SettingsError:
            raise SettingsError(f"{where}[{i}] must be a token count (a whole number >= 1), got {_shown(x)}") from None
        out.append(n)
    return tuple(out)


def _pairs(value, where: str) -> tuple:
    items = _items(value, where, "a list of (normalisation, feature extractor) pairs")
    for i, x in enumerate(items):
        if not (isinstance(x, (list, tuple)) and len(x) == 2 and all(isinstance(y, str) for y in x)):
            raise SettingsError(f"{where}[{i}] must be a pair of names (normalisation, feature extractor), got "
                                f"{_shown(x)}")
        if x[0] not in NORMALIZATIONS or x[1] not in FEATURES:
            raise SettingsError(f"{where}[{i}]: unknown partial-document pipeline {x[0]}+{x[1]} (normalisations: "
                                f"{', '.join(NORMALIZATIONS)}; feature extractors: {', '.join(FEATURES)})")
    return tuple(tuple(x) for x in items)


def _neighbours(value, where: str):
    if isinstance(value, Mapping):
        return dict(value)
    return flag().check(value, where)


@dataclass(frozen=True)
class DocumentOptions(Options):
    """The settings of a document-level audit (Meeus et al. 2024); section numbers are the paper's."""

    context: int = option(DEFAULT_CONTEXT, whole(2), "context length C in tokens; stride C-1 (§4.1; the paper: 128, "
                                                      "1024, 2048)")
    normalizations: tuple = option(tuple(NORMALIZATIONS), parsed(
        _names(parse_normalizations, "a comma list or a list of normalisations"),
        "nonorm, rationorm-tf, rationorm-gp, maxnorm-tf, maxnorm-gp, a comma list of them, or all"),
        "token-value normalisations (§4.2)")
    features: tuple = option(("hist", "agg"), parsed(_names(parse_features, "a comma list or a list of feature "
                                                                           "extractors"), "hist, agg or both"),
                             "feature extractors (§4.3)")
    folds: int = option(5, whole(2), "stratified cross-validation folds (§4.4)")
    n_bins: int = option(DEFAULT_BINS, whole(1), "histogram bins N_b of HistFE (§4.3; the paper: 1,000)")
    agg_count: bool = option(False, flag(), "AggFE also gets the document's token count, as the authors' code (off: "
                                            "document length can confound members and non-members)")
    hist_outside: str = option("clip", one_of(*OUTSIDE), "HistFE: held-out values outside the fitted bins counted in "
                                                         "the end bins, features are fractions (clip), or dropped, "
                                                         "features are densities (drop: the authors' code)")
    seed: int = option(0, SEED, "seed of the folds, the sampled sequences and the forest")
    partial_lengths: tuple | None = option(DEFAULT_LENGTHS, parsed(
        _lengths, "a comma list or a list of token counts (whole numbers >= 1), or none", optional=True),
        "lengths L of the partial-document curve (§6.4); none: no curve")
    partial_pipelines: tuple | None = option(None, parsed(
        _pairs, "a list of (normalisation, feature extractor) pairs, or none", optional=True),
        "the curve's pipelines (none: MaxNormTF + HistFE, the paper's best for books, and this audit's best)")
    partial_position: str = option("start", one_of(*POSITIONS), "partial documents are the first L tokens (start) or "
                                                               "a random excerpt of L tokens")
    partial_dictionaries: str = option("partial", one_of(*DICTIONARIES),
                                       "R^TF of the curve counted on the training documents cut to L tokens (partial) "
                                       "or on the full training documents (full)")
    baselines: bool = option(True, flag(), "run the sequence-level baselines scaled to documents (§6.2)")
    baseline_attacks: tuple = option(PAPER_BASELINES, parsed(_attacks, "a comma list or a list of attack names"),
                                     "the baselines' attacks (ref needs a reference model)")
    baseline_seq_len: int = option(DEFAULT_SEQ_LEN, whole(2), "tokens per sampled sequence of the baselines")
    baseline_max_sequences: int | None = option(DEFAULT_MAX_PER_DOC, whole(1, optional=True),
                                                "sequences sampled per document for the baselines (none: all)")
    baseline_neighbours: bool | dict = option(False, parsed(_neighbours, "true or false, or a mapping of the "
                                                                         "neighbourhood attack's parameters"),
                                              "the neighbourhood baseline (costly; a mapping gives its parameters)")
    n_estimators: int | None = option(500, whole(1, optional=True), "random-forest trees (§4.4; the paper: 500; none: "
                                                                     "500)")
    n_jobs: int | None = option(None, whole(1, also=(-1,), optional=True),
                                "the forest's processes (-1: every core; none: scikit-learn's default)")
    batch_tokens: int | None = option(None, whole(1, optional=True), "tokens per forward batch (a memory knob; none: "
                                                                     "the engine's)")
    use_cache: bool = option(True, flag(), "read and write the statistics cache")


__all__ = ["DEFAULT_BINS", "DEFAULT_CONTEXT", "DEFAULT_LENGTHS", "DEFAULT_MAX_PER_DOC", "DEFAULT_SEQ_LEN", "DICTIONARIES",
           "DocumentOptions", "FEATURES", "NORMALIZATIONS", "OUTSIDE", "PAPER_BASELINES", "POSITIONS", "parse_features",
           "parse_normalizations"]
