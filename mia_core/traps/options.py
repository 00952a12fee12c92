"""The declared options of copyright traps: making a batch (:class:`MakeOptions`), planting it
(:class:`InsertOptions`) and the audit that tests a model (:class:`TrapsOptions`). The test itself (its score, its
strata, its permutations and its level) is not an option of the audit: it is written in the sealed record when the
traps are made (pre-registered), and read from there."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import SettingsError
from ..options import BOOTSTRAP, MAX_SEED, SEED, Options, _shown, flag, number, option, parsed, path, whole

DEFAULT_TEMPERATURES = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5)  # Meeus et al. 2024, gen_traps.py: 0.5 to 3.5, step 0.5
DEFAULT_REPETITIONS = (1, 10)
MAX_REPETITIONS = 10_000
NGRAM = 13  # words: a trap sharing a 13-gram with the owner's documents is not unique (the avoid filter, a leak)


def _items(value, where: str, want: str) -> list:
    if isinstance(value, str):
        items = [x.strip() for x in value.replace(";", ",").split(",") if x.strip()]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise SettingsError(f"{where} must be {want}, got {_shown(value)}")
    if not items:
        raise SettingsError(f"{where} must be {want}, got nothing")
    return items


def _temperatures(value, where: str) -> tuple:
    """Sampling temperatures: numbers in (0, 20], at least one, each once."""
    items = _items(value, where, "a comma list of temperatures in (0, 20]")
    out = []
    for i, x in enumerate(items):
        try:
            t = number(0, 20, lo_open=True).check(x, f"{where}[{i}]")
        except SettingsError:
            raise SettingsError(f"{where}[{i}] must be a temperature in (0, 20], got {_shown(x)}") from None
        out.append(float(t))
    if len(set(out)) != len(out):
        raise SettingsError(f"{where} names a temperature twice: {', '.join(f'{t:g}' for t in out)}")
    return tuple(out)


def _repetitions(value, where: str) -> tuple:
    """Copies per inserted trap: whole numbers in [1, 10,000], each level once, in increasing order."""
    items = _items(value, where, f"a comma list of copy counts (whole numbers in [1, {MAX_REPETITIONS:,}])")
    out = []
    for i, x in enumerate(items):
        try:
            out.append(int(whole(1, MAX_REPETITIONS).check(x, f"{where}[{i}]")))
        except SettingsError:
            raise SettingsError(f"{where}[{i}] must be a copy count (a whole number in [1, {MAX_REPETITIONS:,}]), got "
                                f"{_shown(x)}") from None
    if len(set(out)) != len(out):
        raise SettingsError(f"{where} names a level twice: {', '.join(map(str, out))}")
    return tuple(sorted(out))


@dataclass(frozen=True)
class MakeOptions(Options):
    """How a batch of traps is generated, filtered, split and sealed (``mia traps make``)."""

    count: int = option(200, whole(4, 20_000), "traps made in all: about half are inserted, the rest held out "
                                               "(the split is stratified by perplexity bucket)")
    tokens: int = option(64, whole(8, 4096), "length of each trap in tokens (the reference work: 25, 50 or 100)")
    temperatures: tuple = option(DEFAULT_TEMPERATURES, parsed(_temperatures, "a comma list of temperatures in (0, 20]"),
                                 "sampling temperatures (unconditional sampling from the start token): the first batch spreads over "
                                 "them; then each row samples at a temperature in their range (steps of 0.05) aimed at "
                                 "a perplexity bucket still open")
    buckets: int = option(10, whole(1, 100), "perplexity buckets of equal width over [min_perplexity, max_perplexity]: "
                                             "equal quotas, and the strata of the split and of the test")
    min_perplexity: float = option(1.0, number(1.0, 1e6), "lowest generator perplexity a trap may have")
    max_perplexity: float = option(100.0, number(1.0, 1e6, lo_open=True),
                                   "highest generator perplexity a trap may have (the reference work: 100)")
    repetitions: tuple = option(DEFAULT_REPETITIONS, parsed(
        _repetitions, f"a comma list of copy counts (whole numbers in [1, {MAX_REPETITIONS:,}])"),
        "copies of each inserted trap, levels assigned round-robin within each perplexity bucket")
    jaccard: float = option(0.2, number(0.0, 1.0), "a candidate whose token set has a Jaccard similarity above this "
                                                   "to an accepted trap's is rejected")
    avoid: str | None = option(None, path("read"), "a folder or file of the owner's documents: a candidate sharing a "
                                                   f"{NGRAM}-word sequence with them is rejected")
    seed: int | None = option(None, whole(0, MAX_SEED, optional=True, words=("fresh", "secret")),
                              "seed of the sampling and of the split; none: a fresh secret (recorded in the record)")
    alpha: float = option(0.01, number(0.0, 0.5, lo_open=True),
                          "the level the test is pre-registered at (written in the record)")
    permutations: int = option(100_000, whole(999, 10_000_000),
                               "random within-bucket permutations of the pre-registered test (exact enumeration "
                               "where there are fewer assignments)")
    batch_size: int = option(64, whole(1, 4096), "sequences sampled per call of the generator (memory knob; "
                                                   "on 2 CPU cores more rows sample faster: SmolLM2-135M, 64 "
                                                   "tokens, 170 tokens/s at 32 rows, 240 at 128)")
    max_candidates: int = option(0, whole(0, 10_000_000), "candidates sampled at most before giving up (0: 50 per "
                                                          "trap)")


@dataclass(frozen=True)
class InsertOptions(Options):
    """How the inserted traps are planted in copies of the owner's documents (``mia traps insert``)."""

    seed: int | None = option(None, whole(0, MAX_SEED, optional=True, words=("fresh",)),
                              "seed of the places (which document, which word boundary); none: fresh")


@dataclass(frozen=True)
class TrapsOptions(Options):
    """The settings of the traps audit (``mia traps test``) that are not pre-registered: the figures' intervals and
    the pass. The test (score, strata, permutations, alpha) is the record's."""

    n_bootstrap: int = option(1000, BOOTSTRAP, "bootstrap resamples of the AUC's and TPRs' confidence intervals")
    seed: int = option(0, SEED, "seed of the bootstrap and of the permutations")
    batch_tokens: int | None = option(None, whole(1, optional=True),
                                      "tokens per forward batch (memory knob); none: the device's default")
    cache: bool = option(True, flag(), "read and write the statistics cache")
