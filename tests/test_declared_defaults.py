"""Every default written in a signature of the engine or the API equals the option's declared one (issue 69).

An option is declared once, with its default, in its audit's ``Options`` class; a function of the same package (or
of the API module in front of it) that takes a parameter of that name and gives it a default must give the same
one, after the option's own canonicalisation (``("all",)`` is the documents' full list of normalisations). A
signature that re-lists ``adjust_length=True`` or ``control="auto"`` and drifts from the declaration is found here.
The few parameters that share an option's name but not its meaning are listed below with the reason.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

import mia_core
from mia_core.options import Options

# (Options class, function's qualified name, parameter): why its default is not the option's
NOT_THE_OPTION = {
    ("InferenceOptions", "blind_permutation_test", "n_permutations"): "a guard's own test; every caller passes it",
    ("InferenceOptions", "length_check", "n_permutations"): "a guard's own test; every caller passes it",
    ("InferenceOptions", "iid_guard", "n_permutations"): "a guard's own test; every caller passes it",
    ("InferenceOptions", "power_curve", "n_permutations"): "the power curve's simulations, not the run's test",
    ("InferenceOptions", "wider_spread_p", "n_permutations"): "a guard's own test; every caller passes it",
    ("InferenceOptions", "feature_stage", "control"): "a flag (a control model is loaded), not the option's name",
    ("InferenceOptions", "feature_stage", "adjust_length"): "the stage's flag; every caller passes the option",
    ("EngineOptions", "cut_units", "workers"): "how many pieces to cut, given by the engine",
    ("EngineOptions", "LocalEngine.__init__", "workers"): "this process alone (one worker)",
    ("RunOptions", "RunConfig.__init__", "split_seed"): "the config's field; the option's None means a fresh seed",
    ("MakeOptions", "record_of", "permutations"): "a test helper that builds known records",
    ("MakeOptions", "TrapsOptions.__init__", "seed"): "the test's bootstrap seed, not the make's",
    ("MakeOptions", "stratified_rank_test", "seed"): "the permutations' seed, given by the record",
    ("InsertOptions", "TrapsOptions.__init__", "seed"): "the test's bootstrap seed, not the insert's",
    ("InsertOptions", "stratified_rank_test", "seed"): "the permutations' seed, given by the record",
    ("TargetOptions", "build_mlm_demo_target", "lr"): "the masked-LM demo target's own rate",
    ("TargetOptions", "make_references", "epochs"): "the references' own schedule (one epoch each)",
}
# the API module in front of an engine package whose name differs from it
FRONT = {"InferenceOptions": ("mia_core.api.inference",), "DocumentOptions": ("mia_core.api.documents",),
         "MlmOptions": ("mia_core.api.mlm",)}


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _modules():
    names = [m.name for m in pkgutil.walk_packages(mia_core.__path__, "mia_core.")
             if "__main__" not in m.name and ".dashboard" not in m.name]
    return [importlib.import_module(n) for n in names]


def _functions(module):
    for obj in vars(module).values():
        members = [obj] if inspect.isfunction(obj) else (
            [v for v in vars(obj).values() if inspect.isfunction(v)] if inspect.isclass(obj) else [])
        yield from (f for f in members if f.__module__ == module.__name__)


def _canonical(cls, name, value):
    try:
        return getattr(cls.check(strict=False, **{name: value}), name)
    except Exception:  # noqa: BLE001 - a value outside the domain is a different meaning, reported as such
        return ("outside the domain", value)


def test_signature_defaults_equal_the_declared_ones():
    modules = _modules()
    seen, wrong, allowed = 0, [], set()
    for cls in set(_subclasses(Options)):
        package = cls.__module__.rsplit(".", 1)[0]
        declared = {n: f.default for n, f in cls.declared().items() if f.default is not dataclasses.MISSING}
        for module in modules:
            if not (module.__name__.startswith(package + ".") or module.__name__ in FRONT.get(cls.__name__, ())):
                continue
            for fn in _functions(module):
                for p in inspect.signature(fn).parameters.values():
                    if p.name not in declared or p.default is inspect.Parameter.empty or p.default is None:
                        continue
                    seen += 1
                    if _canonical(cls, p.name, p.default) == _canonical(cls, p.name, declared[p.name]):
                        continue
                    key = (cls.__name__, fn.__qualname__, p.name)
                    if key in NOT_THE_OPTION:
                        allowed.add(key)
                        continue
                    wrong.append(f"{module.__name__}.{fn.__qualname__}({p.name}={p.default!r}): "
                                 f"{cls.__name__} declares {declared[p.name]!r}")
    assert seen > 200, seen  # the walk reaches the signatures (276 on 2026-12-07)
    assert not wrong, "\n".join(wrong)
    assert allowed == set(NOT_THE_OPTION), set(NOT_THE_OPTION) - allowed  # no stale exception
