"""Output folders: checked before any work, written into a temporary sibling, published at the end.

* :func:`check_output_dir` — before any model is loaded: can ``--out`` be created and written
  (not an existing file, not under ``/proc``, not in a read-only folder)? An existing non-empty
  folder is refused unless ``overwrite``. Raises ``SettingsError`` with one line naming the path
  and the reason.
* :func:`staged_output` — a context manager yielding a fresh temporary folder next to ``--out``;
  on a clean exit it is renamed to ``--out`` in one step (atomic publish). If ``--out`` appeared
  meanwhile (another run with the same ``--out``), it is not replaced: this run's files stay in a
  clearly named sibling folder and ``SettingsError`` says where. With ``overwrite`` the old folder
  is replaced only at that very end. On an exception the temporary folder is removed (the
  statistics are cached, so a re-run resumes).
"""
from __future__ import annotations

import errno
import os
import secrets
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from .errors import SettingsError

_TMP_PREFIX = ".mia-tmp-"


def _reason(e: OSError) -> str:
    return e.strerror or str(e)


def _nearest_existing(p: Path) -> Path:
    q = p
    while not (q.exists() or q.is_symlink()):
        if q.parent == q:
            break
        q = q.parent
    return q


def check_output_dir(path, *, overwrite: bool = False, flag: str = "--out") -> Path:
    """Check that the output folder ``path`` can be created and written; returns it as an
    absolute ``Path``. Nothing is left behind (a probe folder is created and removed)."""
    if path is None or not str(path).strip():
        raise SettingsError(f"{flag} is empty: give a folder to write the results to.")
    p = Path(str(path)).expanduser()
    try:
        p = p.absolute()
        exists = p.exists()
    except OSError as e:
        raise SettingsError(f"{flag} {path}: cannot use this path: {_reason(e)}.") from None
    if exists or p.is_symlink():
        if not p.is_dir():
            raise SettingsError(f"{flag} {path}: exists and is not a folder; give a folder path.")
        try:
            non_empty = any(p.iterdir())
        except OSError as e:
            raise SettingsError(f"{flag} {path}: cannot read this folder: {_reason(e)}.") from None
        if non_empty and not overwrite:
            raise SettingsError(f"{flag} {path}: folder exists and is not empty; give another {flag} "
                                "or --overwrite to replace it.")
    anchor = _nearest_existing(p.parent)
    if not anchor.is_dir():
        raise SettingsError(f"{flag} {path}: {anchor} is not a folder.")
    # the results are written into a sibling of --out and renamed: the parent (or the first
    # folder that exists on the way to it) must take a new folder
    try:
        probe = tempfile.mkdtemp(prefix=".mia-check-", dir=anchor)
        os.rmdir(probe)
    except OSError as e:
        why = "it does not take new folders" if e.errno == errno.ENOENT else _reason(e)
        raise SettingsError(f"{flag} {path}: cannot write in {anchor}: {why}.") from None
    return p


def _kept_name(final: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    cand = final.with_name(f"{final.name}.kept-{stamp}-{os.getpid()}")
    i = 1
    while cand.exists():
        i += 1
        cand = final.with_name(f"{final.name}.kept-{stamp}-{os.getpid()}-{i}")
    return cand


def publish(tmp: Path, final: Path, *, overwrite: bool = False, flag: str = "--out") -> Path:
    """Rename the finished folder ``tmp`` to ``final``. Never replaces another run's results
    unless ``overwrite``; see the module docstring."""
    tmp, final = Path(tmp), Path(final)
    backup = None
    if overwrite and final.is_dir() and not final.is_symlink():
        try:
            if any(final.iterdir()):
                backup = final.with_name(f"{_TMP_PREFIX}{final.name}.old-{os.getpid()}")
                final.rename(backup)
        except OSError as e:
            raise SettingsError(f"{flag} {final}: cannot replace it ({_reason(e)}); this run's results "
                                f"are in {tmp}.") from None
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
            raise SettingsError(f"{flag} {final} was written by another run meanwhile and was kept; "
                                f"this run's results are in {kept}.") from None
        raise SettingsError(f"{flag} {final}: cannot publish the results ({_reason(e)}); "
                            f"they are in {kept}.") from None
    if backup is not None:
        shutil.rmtree(backup, ignore_errors=True)
    return final


@contextmanager
def staged_output(path, *, overwrite: bool = False, flag: str = "--out"):
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
        tmp = final.with_name(f"{_TMP_PREFIX}{final.name}-{os.getpid()}-{secrets.token_hex(4)}")
        tmp.mkdir()  # the usual permissions (mkdtemp would make it private)
    except OSError as e:
        raise SettingsError(f"{flag} {path}: cannot write in {final.parent}: {_reason(e)}.") from None
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    publish(tmp, final, overwrite=overwrite, flag=flag)


def final_path(p, tmp, out) -> Path:
    """Where ``p`` (written under the staging folder ``tmp``) lies once published as ``out``."""
    return Path(out) / Path(p).relative_to(tmp)
