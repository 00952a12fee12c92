"""The run store's folders for the audits other than the calibration run: one :class:`KindStore` per kind.

A calibration run lives in ``<runs dir>/<id>/`` (:mod:`mia_core.runs.store`); every other audit's runs live in
``<runs dir>/_<kind>/<id>/`` (the calibration listing skips names that start with ``_``), each holding what the
result's ``save`` writes plus ``meta.json`` (what the Runs page lists without reading the rest). One class does
what every kind needs, so no kind keeps its own copy of these rules:

* **save**: the result written into a ``.tmp`` folder, ``meta.json`` beside it, then one rename (a run is there
  whole or not at all);
* **list**: every run folder's ``meta.json``, newest first, each field of the type the page expects (``fields``:
  a field of another type is replaced by its default and named in ``damaged``); a folder that cannot be read is
  listed with ``damaged`` (one line: why) and never hides the others;
* **path**: only ids of the store's own form (``YYYYmmdd-HHMMSS-<6 hex>``) name a folder, so an id never points
  outside the store;
* **delete**: only a real folder that holds the store's run marker (``.mia-run.json``: the tool, its version, the
  kind and the id, written by :meth:`KindStore.save`; ``mia_core.runs.folder.is_own_run``), damaged or not, moved
  aside in one rename before it is removed; a link, a user's folder (whatever it holds) or anything else is one
  ``DataError`` line and nothing is removed. A folder the store did not write is not listed either.

The kinds' folder names and words are declared by their audits (``mia_core.audits``: ``Audit.store``); each kind's
folder holds :data:`MARKER`, so housekeeping (:func:`stores_in`) knows the store's folders without the registry.
"""
from __future__ import annotations

import json
import math
import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import DataError
from .folder import (
    MAX_META_BYTES, RUN_MARKER, RunUnreadable, _fallback_ts, _fmt_ts, is_json_number, json_kind, one_line,
    read_run_json, os_reason, is_own_run, remove_aside, runs_dir, write_run_marker
)

META = "meta.json"
ID_RE = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")
MARKER = ".mia-runs.json"  # in each kind's folder: how housekeeping (``mia cache clear --runs``) knows it is ours


def share(v) -> bool:
    """A number in [0, 1] (a p-value, an AUC, alpha)."""
    return is_json_number(v) and 0.0 <= float(v) <= 1.0


def count(v) -> bool:
    """A whole number of texts or books."""
    return is_json_number(v) and float(v).is_integer() and v >= 0


def text(v) -> bool:
    """Text (a name, a time written out, a verdict)."""
    return isinstance(v, str)


# the fields every kind's meta.json has: field -> (is it of the right type, what it should be, default)
COMMON = {
    "name": (text, "text", None),
    "created": (text, "text", None),
    "model": (text, "text", None),
    "model_identity": (text, "text", None),
    "data": (text, "text", None),
}

# the fields of an audit scored by an AUC (documents, masked LM): its headline figure and the sets' sizes
SCORED = {
    "headline": (share, "a number in [0, 1]", None),
    "headline_label": (text, "text", None),
    "n_members": (count, "a count", None),
    "n_nonmembers": (count, "a count", None),
}


@dataclass(frozen=True)
class KindStore:
    """The saved runs of one audit kind.

    Parameters
    ----------
    subdir : str
        The folder's name inside the runs dir (``_documents``).
    words : str
        A run of this kind in words, for messages (``"document-audit run"``).
    fields : dict
        The kind's own ``meta.json`` fields: ``name -> (check, what it should be, default)`` (beside
        :data:`COMMON`); None is always allowed (nothing recorded), as is NaN for a field checked by :func:`share`.
    """

    subdir: str
    words: str
    fields: dict = field(default_factory=dict)

    def folder(self, root=None) -> Path:
        """``<runs dir>/<subdir>`` (created if missing, with its :data:`MARKER`: the store's words)."""
        d = runs_dir(root) / self.subdir
        d.mkdir(parents=True, exist_ok=True)
        marker = d / MARKER
        if not marker.exists() and not marker.is_symlink():
            try:
                marker.write_text(json.dumps({"words": self.words}))
            except OSError:  # a read-only store still lists and opens its runs
                pass
        return d

    @property
    def kind(self) -> str:
        """The kind its run markers name: the folder's name without its ``_``."""
        return self.subdir.lstrip("_")

    def id_form(self, name: str) -> bool:
        """Is ``name`` of the form the store gives its runs' folders (``YYYYmmdd-HHMMSS-<hex>``)?"""
        return bool(ID_RE.match(name))

    def owns(self, p: Path) -> bool:
        """Is ``p`` a run this store saved (its marker; a run saved before markers: its id form and meta.json)?"""
        return is_own_run(p, self.kind, ID_RE)

    def path(self, run_id: str, root=None) -> Path:
        """The folder of run ``run_id`` (it may not exist); ``DataError`` for an id not of the store's form."""
        if not isinstance(run_id, str) or not ID_RE.match(run_id):
            raise DataError(f"{run_id!r} is not a {self.words} id")
        return self.folder(root) / run_id

    def save(self, result, meta: dict, *, root=None, save: Callable | None = None) -> dict:
        """Save ``result`` as a new run with ``meta`` (its ``name`` and the kind's fields); returns the meta as
        written (with ``id``, ``created``, ``created_ts``). ``save(folder)``: how the result is written (default
        ``result.save``)."""
        from .results import json_default

        run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
        path = self.folder(root) / run_id
        tmp = path.with_name(path.name + ".tmp")
        (save or result.save)(tmp)
        now = time.time()
        meta = {"id": run_id, **meta, "created": time.strftime("%Y-%m-%d %H:%M", time.localtime(now)),
                "created_ts": now}
        (tmp / META).write_text(json.dumps(meta, indent=2, default=json_default))
        write_run_marker(tmp, self.kind, run_id)
        tmp.rename(path)
        return meta

    def blank(self, run_id: str, p: Path) -> dict:
        """Every field a listing shows, with safe defaults (the time from the id)."""
        ts = _fallback_ts(p)
        out = {k: d for k, (_, _, d) in {**COMMON, **self.fields}.items()}
        out.update({"id": run_id, "name": run_id, "created": _fmt_ts(ts), "created_ts": ts})
        return out

    def normalise(self, raw: dict, run_id: str, p: Path) -> dict:
        """``meta.json`` with every field the Runs page shows of the type it expects: a field of another type is
        replaced by its default and named in ``damaged`` (one line), as is a missing name (the store always writes
        one); another missing field takes its default."""
        out = self.blank(run_id, p)
        problems = []
        for k, (ok, want, _) in {**COMMON, **self.fields}.items():
            v = raw.get(k)
            if v is None or (isinstance(v, float) and math.isnan(v) and ok is share):
                continue
            if ok(v):
                out[k] = v
            else:
                problems.append(f"{k} is {json_kind(v)}, not {want}")
        if "name" not in raw:  # the store always writes one: its meta.json was cut or edited
            problems.insert(0, "name is missing")
        if not str(out["name"]).strip():
            out["name"] = run_id
        ts = raw.get("created_ts")
        if ts is not None:
            if is_json_number(ts) and math.isfinite(ts) and _fmt_ts(ts):
                out["created_ts"] = float(ts)
                if not isinstance(raw.get("created"), str):
                    out["created"] = _fmt_ts(ts)
            else:
                problems.append(f"created_ts is {json_kind(ts)}, not a time")
        if problems:
            more = f"; and {len(problems) - 4} more" if len(problems) > 4 else ""
            out["damaged"] = one_line("meta.json: " + "; ".join(problems[:4]) + more)
        return out

    def entry(self, p: Path) -> dict:
        """One folder's listing entry (``damaged`` when it cannot be read)."""
        try:
            raw = read_run_json(p, META, max_bytes=MAX_META_BYTES)
            if not isinstance(raw, dict):
                raise RunUnreadable(f"meta.json is {json_kind(raw)}, not a mapping")
            return self.normalise(raw, p.name, p)
        except RunUnreadable as e:
            meta = self.blank(p.name, p)
            meta["damaged"] = one_line(e)
        except OSError as e:  # the folder went away or cannot be read while listing
            meta = self.blank(p.name, p)
            meta["damaged"] = one_line(f"cannot be read ({os_reason(e)})")
        return meta

    def list(self, root=None) -> list[dict]:
        """Every saved run's meta, newest first (see the module docstring); ``DataError`` only when the folder of
        runs cannot be read."""
        d = self.folder(root)
        try:
            entries = list(d.iterdir())
        except OSError as e:
            raise DataError(f"the {self.words}s folder {d} cannot be read ({os_reason(e)})") from None
        out = []
        for p in entries:
            try:
                if not ID_RE.match(p.name) or not self.owns(p):
                    continue
            except OSError:
                continue
            out.append(self.entry(p))
        out.sort(key=lambda m: (m["created_ts"], m["id"]), reverse=True)
        return out

    def owned(self, run_id: str, root=None) -> Path:
        """The folder of a run this store saved (its id's form, a real folder, its ``meta.json``); ``DataError``
        (one line) for anything else."""
        p = self.path(run_id, root)
        if not self.owns(p):
            raise DataError(f"{p} is not a {self.words} the store saved (it has no {RUN_MARKER}): not deleted, "
                            "nothing removed")
        return p

    def delete(self, run_id: str, root=None) -> None:
        """Delete a run this store saved (:meth:`owned`); nothing else. Links inside it are removed, never
        followed."""
        remove_aside(self.owned(run_id, root), f"{self.words} {run_id}", self.owns)


def stores_in(runs: Path) -> list[KindStore]:
    """The kinds' stores inside the runs folder ``runs``: each real folder named ``_...`` holding the :data:`MARKER`
    a :class:`KindStore` wrote (a folder without it, or a link, is not the store's)."""
    out = []
    for d in sorted(runs.iterdir()):
        m = d / MARKER
        if d.name.startswith("_") and not d.is_symlink() and d.is_dir() and m.is_file() and not m.is_symlink():
            try:
                words = json.loads(m.read_text()).get("words")
            except (OSError, ValueError, AttributeError):
                continue
            if isinstance(words, str):
                out.append(KindStore(d.name, words))
    return out
