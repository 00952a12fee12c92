"""A deferred load's tokenizer (:mod:`mia_core.models.deferred`): the digest of a tokenizer's files, the tokenizer
of a recorded load read from its own folder (:func:`read_tokenizer`), and until more than token ids is asked of it,
those ids from the folder's ``tokenizer.json`` alone (:class:`DeferredTokenizer`, :class:`FileTokenizer`), so that a
run whose statistics are all cached imports no transformers (issue 70)."""
from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Callable

from ..errors import ModelError
from .loaded import compute_tokenizer_prefix_id, prefix_ids, probe_ids

_TOKENIZER_SUFFIXES = (".json", ".txt", ".model", ".jinja", ".tiktoken")
_TOKENIZER_FILE_CAP = 64 * 2**20  # a tokenizer file larger than this is not one: no record


def tokenizer_digest(folder: Path) -> str | None:
    """16 hex digits over the names and bytes of the files a tokenizer may read in ``folder`` (its top-level
    ``.json``, ``.txt``, ``.model``, ``.jinja`` and ``.tiktoken`` files: the tokenizer, its configuration, special
    tokens, vocabulary, merges, chat template). None when the folder cannot be read or holds a file too large."""
    h = hashlib.sha256()
    try:
        for f in sorted(Path(folder).iterdir()):
            if f.suffix in _TOKENIZER_SUFFIXES and f.is_file():
                if f.stat().st_size > _TOKENIZER_FILE_CAP:
                    return None
                h.update(f"{f.name}:{f.stat().st_size}:".encode())
                h.update(f.read_bytes())
    except OSError:
        return None
    return h.hexdigest()[:16]



_GENERIC_TOKENIZERS = ("TokenizersBackend", "PreTrainedTokenizerFast", "PythonBackend", "SentencePieceBackend")


def _declared_class(folder: Path) -> str | None:
    """The tokenizer class the folder's ``tokenizer_config.json`` names (without a ``Fast`` suffix), or None."""
    try:
        cfg = json.loads((Path(folder) / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = cfg.get("tokenizer_class") if isinstance(cfg, dict) else None
    return name.removesuffix("Fast") if isinstance(name, str) else None


def read_tokenizer(rec: dict, folder: Path):
    """The tokenizer of a recorded load, read from ``folder`` (the source's own, never a folder the record
    names): with the class the load's ``AutoTokenizer`` chose, when that is one of transformers' own and either a
    generic one or the one the folder's ``tokenizer_config.json`` names (``AutoTokenizer`` reads the model's config
    to choose it, which imports transformers' modelling code: about 1.5 s), else with ``AutoTokenizer``; with the
    padding token the load set. A string (why not: read the model in full) unless it has the recorded size and
    tokenizes the probe as recorded."""
    import transformers

    from .hub import LOAD_ERRORS

    name = rec.get("tokenizer_class") or ""
    cls = getattr(transformers, name, None)
    if not (isinstance(cls, type) and issubclass(cls, transformers.PreTrainedTokenizerBase)
            and (name in _GENERIC_TOKENIZERS or name.removesuffix("Fast") == _declared_class(folder))):
        cls = transformers.AutoTokenizer
    try:
        tok = cls.from_pretrained(str(folder), local_files_only=True, _from_auto=True)
    except (*LOAD_ERRORS, TypeError):
        return "its tokenizer could not be read"
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token or tok.unk_token
    if len(tok) != rec["tokenizer_len"] or probe_ids(tok) != rec["probe_ids"]:
        return "the tokenizer reads otherwise than recorded"
    return tok


def file_backend(folder: Path):
    """The ``tokenizers`` tokenizer of ``folder``'s ``tokenizer.json`` as the file says, without truncation or
    padding; None when there is none or it cannot be read."""
    try:
        import tokenizers

        f = Path(folder) / "tokenizer.json"
        if not f.is_file() or f.stat().st_size > _TOKENIZER_FILE_CAP:
            return None
        raw = tokenizers.Tokenizer.from_file(str(f))
        raw.no_truncation()
        raw.no_padding()
        return raw
    except Exception:  # noqa: BLE001 - any failure only means: tokenize with transformers
        return None


def backend_is_file(tok, folder: Path, digest: str | None = None) -> bool:
    """Whether ``tok`` (a transformers tokenizer) tokenizes with exactly the ``tokenizers`` tokenizer its folder's
    ``tokenizer.json`` describes: a fast tokenizer whose backend transformers did not change (no tokens added, no
    pre-tokenizer or post-processor rewritten), compared whole by serialisation, truncation and padding aside.
    Then ``tok(text, add_special_tokens=False)`` gives the ids that file's tokenizer gives ``text``, and a deferred
    load tokenizes with it (:class:`DeferredTokenizer`) without importing transformers. ``digest``: the folder's
    :func:`tokenizer_digest` where the caller has it already."""
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is None:
        return False
    # the comparison costs 0.5 to 1 s for a 49k vocabulary (two serialisations): once per process for the same
    # files read by the same class to the same size (a tokenizer the process added tokens to is compared again)
    key = (digest or tokenizer_digest(folder), f"{type(tok).__module__}.{type(tok).__qualname__}", len(tok))
    if key[0] is None:
        return False
    if key not in _SAME_AS_FILE:
        try:
            mine = backend.to_str()
        except (TypeError, AttributeError, ValueError):
            return False
        _SAME_AS_FILE[key] = _serialised_like_file(mine, folder)
    return _SAME_AS_FILE[key]


_SAME_AS_FILE: dict[tuple, bool] = {}


def _serialised_like_file(mine: str, folder: Path) -> bool:
    raw = file_backend(folder)
    if raw is None:
        return False
    try:
        theirs = raw.to_str()
        if mine == theirs:
            return True
        a, b = json.loads(mine), json.loads(theirs)
    except (ValueError, TypeError, AttributeError):
        return False
    for d in (a, b):
        d["truncation"] = d["padding"] = None
    return a == b



class _Ids(dict):
    """A tokenizer call's result as transformers gives it: ``["input_ids"]`` and ``.input_ids``."""

    @property
    def input_ids(self) -> list[int]:
        return self["input_ids"]


class FileTokenizer:
    """A folder's ``tokenizer.json`` read by the ``tokenizers`` library alone (:func:`_file_backend`), answering
    the calls this tool makes of a tokenizer's ids: ``len()`` (with the added tokens, as transformers' fast
    tokenizers count) and ``tok(text, add_special_tokens=...)``. It is that of a transformers fast tokenizer whose
    backend is exactly the file's (:func:`_backend_is_file`)."""

    def __init__(self, raw):
        self.raw = raw

    def __len__(self) -> int:
        return int(self.raw.get_vocab_size(with_added_tokens=True))

    def __call__(self, text: str, add_special_tokens: bool = True, **_ignored) -> _Ids:
        return _Ids(input_ids=list(self.raw.encode(text, add_special_tokens=add_special_tokens).ids))


def file_facts_differ(ft: FileTokenizer, rec: dict) -> str | None:
    """Why the record's tokenizer facts are not those of the file's tokenizer ``ft`` (None: they are)."""
    if len(ft) != rec["tokenizer_len"] or probe_ids(ft) != rec["probe_ids"]:
        return "the tokenizer reads otherwise than recorded"
    if compute_tokenizer_prefix_id(ft) != rec["prefix_ids"][0]:
        return "the tokenizer adds another prefix than recorded"
    return None


class DeferredTokenizer:
    """A deferred load's tokenizer: transformers' tokenizer, read from the source's own folder
    (:func:`read_tokenizer`) only when something other than its ids is asked of it, so that a run whose
    statistics are all cached imports no transformers (about 1.5 s on a 2-core CPU, with torch, which it imports).

    Where the recorded load found that transformers tokenizes with exactly the folder's ``tokenizer.json``
    (``backend_is_file``, :func:`_backend_is_file`), ids come from that file through the ``tokenizers`` library
    (:class:`FileTokenizer`): a text's ids without special tokens (``recorded_facts["encode_plain"]``, which
    :func:`mia_core.stats.settings.tokenize` uses), the size and the probe's ids that
    :meth:`LoadedModel.same_tokenizer` compares, and the token the tokenizer itself puts in front of a text; all
    three were checked against the record when the load was made. One fact comes from the record alone, the
    BOS/EOS token of ``prefix="always"`` (``"prefix_token_id"``, transformers' reading of the special tokens): the
    recorded load computed it from the same files (their digest is checked) under the same transformers (its
    version is in the record's key). Once the tokenizer is read, every fact is computed from it instead, after a
    check that it gives the recorded ones: any difference stops the pass with a one-line ``ModelError`` and makes
    the record unusable, so that the next run reads the weights and records again."""

    _OWN = frozenset({"recorded_facts", "_tok", "_rec", "_folder", "_forget", "_lock", "_file"})

    def __init__(self, rec: dict, folder: Path, forget: Callable[[], None], *, file: FileTokenizer | None = None,
                 tok=None):
        facts = {"tokenizer_prefix_id": rec["prefix_ids"][0], "prefix_token_id": rec["prefix_ids"][1]}
        if file is not None:
            facts.update({"len": len(file), "probe_ids": probe_ids(file), "encode_plain": self._encode_plain})
        for k, v in (("recorded_facts", {} if tok is not None else facts), ("_tok", tok), ("_rec", rec),
                     ("_folder", Path(folder)), ("_forget", forget), ("_lock", threading.Lock()), ("_file", file)):
            object.__setattr__(self, k, v)

    @property
    def loaded(self) -> bool:
        """Whether transformers' tokenizer has been read."""
        return self._tok is not None

    def _encode_plain(self, text: str) -> list[int]:
        """``text``'s ids without special tokens: the file's tokenizer's until transformers' is read."""
        if self._tok is not None:
            return list(self._tok(text, add_special_tokens=False, verbose=False)["input_ids"])
        return self._file(text, add_special_tokens=False)["input_ids"]

    def read(self):
        """Transformers' tokenizer (read the first time, and checked against the recorded facts)."""
        with self._lock:
            if self._tok is None:
                tok = read_tokenizer(self._rec, self._folder)
                if not isinstance(tok, str) and prefix_ids(tok) != list(self._rec["prefix_ids"]):
                    tok = "its prefix tokens are not the recorded ones"
                if not isinstance(tok, str) and self._file is not None and not backend_is_file(tok, self._folder):
                    tok = "it does not tokenize with its tokenizer.json as recorded"
                if isinstance(tok, str):
                    self._forget()
                    raise ModelError(f"the tokenizer in {self._folder} does not read as its load record says "
                                     f"({tok}): the record is dropped; run it again")
                object.__setattr__(self, "_tok", tok)
                object.__setattr__(self, "recorded_facts", {})
            return self._tok

    def __getattr__(self, name: str):
        if name.startswith("__") or name in self._OWN:
            raise AttributeError(name)
        return getattr(self.read(), name)

    def __setattr__(self, name: str, value) -> None:
        if name in self._OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.read(), name, value)

    def __call__(self, *args, **kwargs):
        return self.read()(*args, **kwargs)

    def __len__(self) -> int:
        return len(self._tok) if self._tok is not None else len(self._file) if self._file is not None else \
            len(self.read())

    def __repr__(self) -> str:
        return f"DeferredTokenizer({str(self._folder)!r}, loaded={self.loaded})"
