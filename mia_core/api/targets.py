"""A controlled experiment's target, as the dashboard's "Controlled experiment" page builds it.

A corpus is read (:func:`read_corpus`), split at random (``mia_core.data.split_corpus``), the split written to an
experiment folder under the cache (:func:`experiment_folder`, :func:`write_split`), and a base model fine-tuned on
the members only (:func:`build_target`, ``mia_core.targets.make_target``): membership is then ground truth.

The engine's modules are imported when a function runs (a test's patch of ``mia_core.targets.make_target`` or
``mia_core.paths.cache_subdir`` takes effect).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Iterable, Sequence

from ..errors import DataError, SettingsError

EXPERIMENTS = "controlled"  # the experiments' folder under the cache root
_NAME = re.compile(r"[A-Za-z0-9._-]+")


def experiment_folder(name: str) -> Path:
    """Where an experiment named ``name`` goes: ``<cache root>/controlled/<name>`` (``mia_core.paths.cache_subdir``).

    Parameters
    ----------
    name : str
        The experiment's name: letters, digits, '.', '_' and '-', not starting with '.'.

    Returns
    -------
    pathlib.Path
        The folder (not created; it does not exist, or is empty).

    Raises
    ------
    mia_core.errors.SettingsError
        A name that is not a plain folder name, an experiment of that name already there, or an unusable cache.
    """
    from ..paths import cache_subdir

    folder_name = name.strip()
    if not folder_name or not _NAME.fullmatch(folder_name) or folder_name.startswith("."):
        raise SettingsError("the experiment name may hold only letters, digits, '.', '_' and '-'.")
    folder = cache_subdir(EXPERIMENTS) / folder_name
    if folder.exists() and any(folder.iterdir()):
        raise SettingsError(f"an experiment named {folder_name!r} exists already; choose another name.")
    return folder


def read_corpus(items: Iterable, *, mode: str = "auto", notes: list[str] | None = None) -> list[str]:
    """The distinct texts of a corpus, each on one line (runs of white space made one space), in file order.

    Parameters
    ----------
    items : iterable of path or file-like
        The corpus files (``mia_core.data.read_texts`` reads each: .txt, .csv, .jsonl, a .zip...).
    mode : {"auto", "lines", "blank"}, default "auto"
        How .txt files hold their texts.
    notes : list of str, optional
        The readers' notes are appended here (e.g. "c.txt: read 12 texts", "read as Windows-1252").

    Returns
    -------
    list of str
        The texts, without duplicates or empty ones.

    Raises
    ------
    mia_core.errors.DataError
        A file that cannot be read.
    """
    from ..data import read_texts

    notes = [] if notes is None else notes
    texts, seen = [], set()
    for it in items:
        for r in read_texts(it, mode=mode, notes=notes):
            t = " ".join(r.text.split())  # one text per line in the split files
            if t and t not in seen:
                seen.add(t)
                texts.append(t)
    return texts


def write_split(sets: dict[str, Sequence[str]], folder: Path) -> dict[str, Path]:
    """Write each non-empty set of a split to ``folder/<role>.txt``, one text per line, following the ``--out``
    rules (``mia_core.runs.outputs``): ``folder`` is new, empty, or one this tool wrote (it is marked as such);
    a folder of the user's, a file in the way, or a file name that is a symbolic link is refused in one line and
    nothing is written; each file is written aside and renamed into place.

    Parameters
    ----------
    sets : dict
        ``{"members": [...], "nonmembers": [...], "population": [...]}`` (``mia_core.data.split_corpus``).
    folder : pathlib.Path
        The experiment folder (created if needed; :func:`experiment_folder`).

    Returns
    -------
    dict
        ``{role: path}`` of the files written.

    Raises
    ------
    mia_core.errors.SettingsError
        ``folder`` is not a folder this tool may write into (before anything is written).
    """
    import os

    from ..runs.outputs import write_marker, written_by_mia

    folder = Path(folder)
    shown = str(folder)
    if folder.is_symlink():
        raise SettingsError(f"the experiment folder {shown} is a symbolic link: give a folder of its own.")
    if folder.exists():
        if not folder.is_dir():
            raise SettingsError(f"the experiment folder {shown} exists and is not a folder.")
        if any(folder.iterdir()) and not written_by_mia(folder):
            raise SettingsError(f"the experiment folder {shown} holds files this tool did not write: they are "
                                "never replaced; give a new folder.")
    roles = [role for role, texts in sets.items() if texts]
    for role in roles:
        if (folder / f"{role}.txt").is_symlink():
            raise SettingsError(f"{folder / f'{role}.txt'} is a symbolic link: the split is never written through "
                                "one; give a new folder.")
    folder.mkdir(parents=True, exist_ok=True)
    if not written_by_mia(folder):
        write_marker(folder, kind="controlled experiment")
    files = {}
    for role in roles:
        files[role] = folder / f"{role}.txt"
        tmp = folder / f".{role}.txt.tmp-{os.getpid()}"
        tmp.write_text("\n".join(sets[role]) + "\n", encoding="utf-8")
        os.replace(tmp, files[role])
    return files


def build_target(sets: dict[str, Sequence[str]], folder: Path, *, base: str, method: str = "lora", epochs: int = 3,
                 lr: float | None = None, seed: int = 0, max_length: int = 256, batch_size: int = 8,
                 device: str = "auto", files: dict | None = None, progress: Callable | None = None) -> dict:
    """Fine-tune ``base`` on the split's members into ``folder/target`` (``mia_core.targets.make_target``), the
    non-members held out (their loss after each epoch shows the generalisation gap).

    Parameters
    ----------
    sets : dict
        The split (``members``, ``nonmembers``, ``population``).
    folder : pathlib.Path
        The experiment folder; the target goes to its ``target`` subfolder.
    base : str
        The base model: a hub id, a local folder or the embedded model's name.
    method : {"lora", "full"}, default "lora"
        A LoRA adapter or every weight.
    epochs : int, default 3
        Passes over the members.
    lr : float, optional
        The learning rate (None: 1e-3 for LoRA, 1e-4 for full fine-tuning).
    seed : int, default 0
        The training seed.
    max_length : int, default 256
        Tokens per text at most.
    batch_size : int, default 8
        Texts per step.
    device : str, default "auto"
        Where to train.
    files : dict, optional
        ``{role: path}`` of the split files (:func:`write_split`), recorded in the training log.
    progress : callable, optional
        ``progress(message, fraction)`` after every step.

    Returns
    -------
    dict
        The training log: ``history`` (one entry per epoch), ``final`` (``train_loss``, ``heldout_loss``), ...

    Raises
    ------
    mia_core.errors.MiaError
        Bad settings, a base model that does not load, or no member text.
    """
    from ..targets import make_target

    if not isinstance(sets, dict) or not sets.get("members") or not isinstance(sets.get("nonmembers", []), (list, tuple)):
        from ..inputs import bad_value

        raise bad_value("sets", "a split with its member texts ({'members': [...], 'nonmembers': [...]}, as read_corpus or "
                   "mia_core.data.split_corpus makes it)", sets, DataError)
    return make_target(list(sets["members"]), base=base, out_dir=Path(folder) / "target", method=method,
                       epochs=int(epochs), lr=lr, seed=int(seed), heldout_texts=list(sets.get("nonmembers") or []),
                       progress=progress, max_length=int(max_length), batch_size=int(batch_size), device=device,
                       data_files={k: str(v) for k, v in (files or {}).items()})


TRAIN_COST = 3.0  # a training step costs about 3 forward passes per token (forward, then about twice that backward)


def estimate_build(sets: dict[str, Sequence[str]], *, epochs: int = 3, max_length: int = 256, base=None,
                   n_params: float | None = None, device: str = "cpu") -> tuple[str, float]:
    """About how long :func:`build_target` takes, before it runs: ``epochs`` passes of training over the members'
    tokens (each text cut at ``max_length``) at :data:`TRAIN_COST` times this machine's measured forward speed
    for the base model, plus the scoring passes it makes (the held-out texts' loss after each epoch, the members'
    loss at the end). An estimate from that rule, not a measurement of training.

    Parameters
    ----------
    sets : dict
        The split (``members``, ``nonmembers``, ``population``).
    epochs, max_length
        As :func:`build_target` takes them.
    base : LoadedModel, optional
        The base model when it is loaded already (its tokenizer counts the tokens, its own measured speed is
        used); None: tokens from characters and a model of ``n_params`` (None: 135M).
    n_params : float, optional
        The base model's size when ``base`` is not given.
    device : str
        Where it trains.

    Returns
    -------
    tuple
        ``(line, seconds)``; ``("", 0.0)`` without members.
    """
    from ..estimate import count_tokens, speed
    from ..formatting import fmt_seconds

    members, heldout = list(sets.get("members") or ()), list(sets.get("nonmembers") or ())
    if not members or int(epochs) < 1:
        return "", 0.0
    tok = getattr(base, "tokenizer", None)
    cap = int(max_length)

    def tokens(texts: list[str]) -> int:
        return sum(min(cap, count_tokens([t], tok)) for t in texts)

    n_mem, n_held = tokens(members), tokens(heldout)
    per, _, src = speed(getattr(base, "n_params", None) or n_params, getattr(base, "device", None) or device,
                        getattr(base, "identity", None))
    train = int(epochs) * n_mem * TRAIN_COST * per
    score = (int(epochs) * n_held + n_mem) * per
    return (f"About {fmt_seconds(train + score)} in all: {int(epochs)} epoch{'s' if int(epochs) != 1 else ''} × "
            f"{len(members):,} member texts (about {n_mem:,} tokens), about {fmt_seconds(train)} of training, "
            f"counting a training token as {TRAIN_COST:.0f} forward passes (an estimate from that rule), plus about "
            f"{fmt_seconds(score)} scoring the held-out texts after each epoch and the members at the end; forward "
            f"speed: {src}."), train + score
