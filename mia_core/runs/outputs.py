"""Output folders: checked before any work, written into a temporary sibling, published at the end.

* :func:`check_output_dir` — before any model is loaded: can ``--out`` be created and written
  (not an existing file, not under ``/proc``, not in a read-only folder)? An existing non-empty
  folder is refused unless ``overwrite``, and ``overwrite`` replaces only a folder this tool wrote
  (:func:`written_by_mia`: it carries :data:`OUTPUT_MARKER`, or a target / reference folder's record),
  never a symbolic link, the working folder or a folder holding it. Raises ``SettingsError`` with one
  line naming the path and the reason (and never suggests ``--overwrite`` for a folder it would refuse).
* :func:`staged_output` — a context manager yielding a fresh temporary folder next to ``--out``;
  on a clean exit it is renamed to ``--out`` in one step (atomic publish). If ``--out`` appeared
  meanwhile (another run with the same ``--out``), it is not replaced: this run's files stay in a
  clearly named sibling folder and ``SettingsError`` says where. With ``overwrite`` the old folder
  is replaced only at that very end, after checking again that it is still one this tool wrote. Every
  published folder carries :data:`OUTPUT_MARKER`. On an exception the temporary folder is removed (the
  statistics are cached, so a re-run resumes).
* :func:`save_output` — what every result's ``save(out_dir)`` in the API does: the same rules as
  ``--out`` (:func:`check_output_dir`, then :func:`staged_output`), so a save never writes into a folder
  the tool did not write, never through a symbolic link named like one of its files, and publishes
  its files in one rename. Called with a folder that :func:`staged_output` handed out (a command that
  stages ``--out`` itself, a store that publishes the folder itself), it writes straight into it.
"""
from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from ..errors import SettingsError, Worded

_TMP_PREFIX = ".mia-tmp-"
OUTPUT_MARKER = ".mia-output.json"  # in every folder the tool publishes: what --overwrite may replace
# the records of the folders make-target and make-references write (mia_core.targets) mark them too
OWN_MARKERS = (OUTPUT_MARKER, "mia_target.json", "references.json")
_NAME_ROOM = 40  # characters a staging / kept / backup name adds to --out's name (cut to fit)


def written_by_mia(p) -> bool:
    """Is ``p`` a real folder (not a link) that this tool wrote (it carries one of :data:`OWN_MARKERS`)?"""
    p = Path(p)
    try:
        return p.is_dir() and not p.is_symlink() and any(
            (p / m).is_file() and not (p / m).is_symlink() for m in OWN_MARKERS)
    except OSError:
        return False


def write_marker(folder, **fields) -> None:
    """Mark ``folder`` as written by this tool (:data:`OUTPUT_MARKER`)."""
    rec = {"tool": "mia-dashboard", "created": time.strftime("%Y-%m-%d %H:%M:%S"), **fields}
    (Path(folder) / OUTPUT_MARKER).write_text(json.dumps(rec, indent=2))


def overwrite_refusal(p: Path, shown, option: str = "out") -> Worded | None:
    """Why ``overwrite`` may not replace the existing, non-empty folder ``p`` (None: it may), naming the
    folder's option (``out``) and ``overwrite`` as :mod:`mia_core.errors` does."""
    o = _placeholder(option)
    if p.is_symlink():
        why = (f"{o} {shown} is a symbolic link (to {os.path.realpath(p)}): {{overwrite}} replaces only a real "
               "folder this tool wrote, never what a link points to; give that folder itself, or a new folder.")
        return Worded(why, (option, "overwrite"))
    try:
        rp, cwd = p.resolve(), Path.cwd().resolve()
    except OSError:
        rp, cwd = p, None
    if cwd is not None and (rp == cwd or rp in cwd.parents):
        return Worded(f"{o} {shown} is the working folder{'' if rp == cwd else ' or holds it'}: {{overwrite}} would "
                      "replace it; give a new folder for the results.", (option, "overwrite"))
    if not written_by_mia(p):
        return Worded(f"{o} {shown}: folder exists, is not empty and was not written by this tool (it has no "
                      f"{OUTPUT_MARKER}): it is never replaced; give a new folder for the results.", (option,))
    return None


def _placeholder(option: str) -> str:
    """How a message writes the option ``option`` (``{out}``; :mod:`mia_core.errors`)."""
    return "{" + option + "}"


def _short(name: str, room: int = 255 - _NAME_ROOM) -> str:
    """``name`` cut so that a name built from it stays within the file system's 255-byte limit."""
    b = name.encode("utf-8", "surrogateescape")
    return name if len(b) <= room else b[:room].decode("utf-8", "ignore")


def _reason(e: Exception) -> str:
    return getattr(e, "strerror", None) or str(e)


def _nearest_existing(p: Path) -> Path:
    q = p
    while not (q.exists() or q.is_symlink()):
        if q.parent == q:
            break
        q = q.parent
    return q


def check_output_dir(path, *, overwrite: bool = False, option: str = "out") -> Path:
    """Check that the output folder ``path`` can be created and written; returns it as an
    absolute ``Path``. Nothing is left behind (a probe folder is created and removed). Messages name
    the folder's option ``option`` (and ``overwrite``) as :mod:`mia_core.errors` does."""
    o, about = _placeholder(option), (option,)
    if path is None or not str(path).strip():
        raise SettingsError(f"{o} is empty: give a folder to write the results to.", options=about)
    if "\x00" in str(path):
        raise SettingsError(f"{o}: a path cannot hold a NUL character.", options=about)
    p = Path(str(path)).expanduser()
    try:
        p = p.absolute()
        exists = p.exists()
    except (OSError, ValueError) as e:  # ValueError: a NUL character in the path
        raise SettingsError(f"{o} {path}: cannot use this path: {_reason(e)}.", options=about) from None
    _check_name_length(p, path, option)
    if exists or p.is_symlink():
        if not p.is_dir():
            raise SettingsError(f"{o} {path}: exists and is not a folder; give a folder path.", options=about)
        try:
            non_empty = any(p.iterdir())
        except OSError as e:
            raise SettingsError(f"{o} {path}: cannot read this folder: {_reason(e)}.", options=about) from None
        if non_empty:
            why = overwrite_refusal(p, path, option)
            if why:
                raise SettingsError(why)
            if not overwrite:
                raise SettingsError(f"{o} {path}: holds the results of an earlier run; give another {o} "
                                    "or {overwrite} to replace them.", options=(option, "overwrite"))
    anchor = _nearest_existing(p.parent)
    if not anchor.is_dir():
        raise SettingsError(f"{o} {path}: {anchor} is not a folder.", options=about)
    # the results are written into a sibling of --out and renamed: the parent (or the first
    # folder that exists on the way to it) must take a new folder
    try:
        probe = tempfile.mkdtemp(prefix=".mia-check-", dir=anchor)
        os.rmdir(probe)
    except OSError as e:
        why = "it does not take new folders" if e.errno == errno.ENOENT else _reason(e)
        raise SettingsError(f"{o} {path}: cannot write in {anchor}: {why}.", options=about) from None
    return p


def _check_name_length(p: Path, shown, option: str) -> None:
    """Every part of the path within the file system's name limit, with room for the staging folder's
    name (the results are written next to ``--out`` first): checked before the run, not at its end."""
    anchor = _nearest_existing(p.parent)
    try:
        name_max = os.pathconf(anchor, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    for part in p.parts:
        if len(part.encode("utf-8", "surrogateescape")) > name_max:
            raise SettingsError(f"{_placeholder(option)}: the name {part[:40]}... is "
                                f"{len(part.encode('utf-8', 'surrogateescape'))} bytes long; this file system "
                                f"allows {name_max}: give a shorter name.", options=(option,))
    if len(str(p).encode("utf-8", "surrogateescape")) + _NAME_ROOM > 4000:
        raise SettingsError(f"{_placeholder(option)}: the path is {len(str(p))} characters long; give a shorter "
                            "one.", options=(option,))


def _kept_name(final: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = _short(final.name)
    cand = final.with_name(f"{base}.kept-{stamp}-{os.getpid()}")
    i = 1
    while cand.exists():
        i += 1
        cand = final.with_name(f"{base}.kept-{stamp}-{os.getpid()}-{i}")
    return cand


def publish(tmp: Path, final: Path, *, overwrite: bool = False, option: str = "out") -> Path:
    """Rename the finished folder ``tmp`` to ``final``. Never replaces another run's results
    unless ``overwrite``; see the module docstring."""
    tmp, final = Path(tmp), Path(final)
    o, about = _placeholder(option), (option,)
    backup = None
    # replaced only if it is still a folder this tool wrote (checked again: time has passed since the
    # up-front check); anything else in its place is kept, with this run's results beside it
    if overwrite and final.is_dir() and not final.is_symlink() and written_by_mia(final):
        try:
            if any(final.iterdir()):
                backup = final.with_name(f"{_TMP_PREFIX}{_short(final.name)}.old-{os.getpid()}")
                final.rename(backup)
        except OSError as e:
            raise SettingsError(f"{o} {final}: cannot replace it ({_reason(e)}); this run's results "
                                f"are in {tmp}.", options=about) from None
    try:
        os.rename(tmp, final)  # atomic; succeeds over an empty folder, fails over a non-empty one
    except OSError as e:
        if backup is not None:
            try:
                backup.rename(final)
            except OSError:
                pass
        kept = _kept_name(final)
        try:
            tmp.rename(kept)
        except OSError:
            kept = tmp
        if e.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
            raise SettingsError(f"{o} {final} was written by another run meanwhile and was kept; "
                                f"this run's results are in {kept}.", options=about) from None
        raise SettingsError(f"{o} {final}: cannot publish the results ({_reason(e)}); "
                            f"they are in {kept}.", options=about) from None
    if backup is not None:
        shutil.rmtree(backup, ignore_errors=True)
    return final


_STAGING: set[str] = set()  # the staging folders staged_output has handed out and not yet published


def _key(path) -> str:
    return os.path.abspath(os.path.expanduser(os.fspath(path)))


def is_staging(path) -> bool:
    """Is ``path`` a staging folder that :func:`staged_output` handed out in this process and has not
    published yet (the tool's own, fresh folder: written into directly)?"""
    try:
        return _key(path) in _STAGING
    except (TypeError, ValueError):
        return False


@contextmanager
def staged_output(path, *, overwrite: bool = False, option: str = "out"):
    """``with staged_output(out) as tmp: result.save(tmp)``: write into a temporary sibling of
    ``out``, renamed to ``out`` when the block ends without an exception. The caller maps the
    paths it wrote with :func:`final_path`."""
    # no second "not empty" check here: a folder that appeared since check_output_dir is
    # another run's, and publish() keeps both
    final = Path(str(path)).expanduser().absolute()
    if final.is_symlink() and final.is_dir():
        final = final.resolve()  # publish next to the folder the link points to
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f"{_TMP_PREFIX}{_short(final.name)}-{os.getpid()}-{secrets.token_hex(4)}")
        tmp.mkdir()  # the usual permissions (mkdtemp would make it private)
        write_marker(tmp)
    except OSError as e:
        raise SettingsError(f"{_placeholder(option)} {path}: cannot write in {final.parent}: {_reason(e)}.",
                            options=(option,)) from None
    key = _key(tmp)
    _STAGING.add(key)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        _STAGING.discard(key)
    publish(tmp, final, overwrite=overwrite, option=option)


def save_output(out_dir, write, *, overwrite: bool = False, option: str = "out_dir") -> dict[str, Path]:
    """The one way a result's ``save(out_dir)`` writes: ``write(folder)`` writes the files into ``folder`` (an
    empty folder of the tool's own) and returns ``{name: path}``; returned are the paths where they lie once
    published in ``out_dir``.

    The rules of ``--out``: ``out_dir`` a new folder, an empty one, or (``overwrite=True``) one this tool wrote,
    replaced only once the new files are complete; a non-empty folder the tool did not write, a file, a link to
    a file are refused (``SettingsError``, one line naming ``option`` and the path). The files are written into a
    temporary sibling that carries :data:`OUTPUT_MARKER` and is renamed to ``out_dir``, so nothing is ever
    written through a symbolic link named like an output file. A folder :func:`staged_output` handed out (a
    command or a store that publishes it itself) is written into directly."""
    if out_dir is None or isinstance(out_dir, bool) or not isinstance(out_dir, (str, os.PathLike)):
        raise SettingsError(f"{_placeholder(option)} must be a folder path (a str or a pathlib.Path), got "
                            f"{type(out_dir).__name__}", options=(option,))
    if not isinstance(overwrite, bool):
        raise SettingsError(f"{{overwrite}} must be True or False, got {type(overwrite).__name__}",
                            options=("overwrite",))
    if is_staging(out_dir):
        return write(Path(_key(out_dir)))
    out = check_output_dir(out_dir, overwrite=overwrite, option=option)
    with staged_output(out, overwrite=overwrite, option=option) as tmp:
        paths = write(tmp)
    return {k: final_path(v, tmp, out) for k, v in paths.items()}


def final_path(p, tmp, out) -> Path:
    """Where ``p`` (written under the staging folder ``tmp``) lies once published as ``out``."""
    return Path(out) / Path(p).relative_to(tmp)
