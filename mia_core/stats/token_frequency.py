"""Token frequencies of a reference corpus under a model's tokenizer (DC-PDD's f(x), Zhang et al. 2024).

DC-PDD (``mia_core.attacks.dc_pdd``) calibrates each token's probability by how frequent the
token is in a reference corpus standing in for the (unknown) pretraining data. This module
counts every token id of a tokenizer over a corpus and turns the counts into the
Laplace-smoothed distribution of the paper (§4, token frequency distribution) and its code
(``com_det_sco.py``: ``(counts + 1) / (sum(counts) + len(counts))``)::

    f(t) = (count(t) + 1) / (N + V)

with ``N`` the number of tokens counted and ``V`` the size of the table (``len(tokenizer)``,
or one more than the largest id met if that is larger), so an unseen token has a small
non-zero frequency.

Corpus. ``None``: the bundled corpus, eight public-domain Project Gutenberg novels shipped as
package data (``mia_core/assets/corpus/*.txt.gz``, about 3.2 M characters; provenance in
``mia_core/assets/README.md``). Or the user's own: any input ``mia_core.data.read_texts``
reads (a .txt file, a folder of .txt files, a .zip, a .csv/.jsonl with a text column), every
text a document. Every token of every document is counted (the paper's code caps each C4
document at 1,024 tokens; our documents are whole books, so nothing is capped), tokenised
without special tokens, in pieces of at most ``CHUNK_CHARS`` characters cut at line ends (a
document shorter than that is tokenised whole).

Cost and cache. Counting is one tokenizer pass over the corpus: the bundled corpus (754,661
SmolLM2 tokens, 18,878 distinct ids) takes about 9 s with SmolLM2's fast tokenizer on one core
of a shared 2-core CPU, and 0.25 s once cached (reading and hashing the corpus). The counts are cached on disk (``mia_core.cache.ArrayCache``, namespace
``token_frequency``) keyed by the tokenizer's identity (a hash of its full serialisation, or
of its vocabulary) and a hash of the corpus' text, so each (tokenizer, corpus) pair is counted
once per machine; nothing in the cache is ever unpickled.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..cache import ArrayCache
from ..errors import DataError
from ..paths import ASSETS
from ..progress import Progress, noop

FREQ_VERSION = 1
BUNDLED = ASSETS / "corpus"
CHUNK_CHARS = 20_000  # characters per tokenizer call (cut at line ends)
BATCH = 64  # chunks per tokenizer call


@dataclass
class FrequencyTable:
    """Token counts of one corpus under one tokenizer, and the Laplace-smoothed frequencies."""

    counts: np.ndarray  # int64, one per token id
    n_documents: int
    corpus: str  # "bundled" or the path given
    corpus_hash: str
    tokenizer_hash: str
    seconds: float = 0.0  # time spent counting (0 when read from the cache)
    cached: bool = False

    @property
    def n_tokens(self) -> int:
        """``N``: the tokens counted over the whole corpus."""
        return int(self.counts.sum())

    @property
    def frequencies(self) -> np.ndarray:
        """f(t) = (count(t) + 1) / (N + V), float64."""
        c = self.counts.astype(np.float64)
        return (c + 1.0) / (c.sum() + len(c))

    def summary(self) -> dict:
        """The table's record for a run: corpus and its size (documents, tokens), the vocabulary size and how many
        of its ids were seen, both hashes, the counting time and whether it came from the cache.
        """
        return {"corpus": self.corpus, "documents": self.n_documents, "tokens": self.n_tokens,
                "vocabulary": int(len(self.counts)), "tokens_seen": int((self.counts > 0).sum()),
                "corpus_hash": self.corpus_hash, "tokenizer_hash": self.tokenizer_hash,
                "seconds": round(self.seconds, 3), "cached": self.cached}


def tokenizer_hash(tokenizer) -> str:
    """A stable identity of a tokenizer: a hash of its full serialisation (fast tokenizers:
    vocabulary, merges, normaliser, pre-tokeniser) or else of its vocabulary, with its length."""
    blob = None
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        try:
            blob = backend.to_str()
        except Exception:  # noqa: BLE001 - fall back to the vocabulary
            blob = None
    if blob is None:
        blob = json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=False)
    h = hashlib.sha256(blob.encode("utf-8", "surrogatepass"))
    h.update(str(len(tokenizer)).encode())
    return h.hexdigest()[:24]


def corpus_hash(documents: list[str]) -> str:
    """A stable identity of a corpus: the first 24 hex digits of a SHA-256 over its documents in order, each
    preceded by its length in bytes (so no two different splits of the same text collide).
    """
    h = hashlib.sha256()
    for d in documents:
        b = d.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()[:24]


def bundled_documents() -> list[str]:
    """The bundled corpus: one document per book, in file-name order."""
    files = sorted(BUNDLED.glob("*.txt.gz"))
    if not files:
        raise DataError(f"the bundled reference corpus is missing from {BUNDLED} (reinstall mia-dashboard)")
    return [gzip.decompress(f.read_bytes()).decode("utf-8") for f in files]


def corpus_documents(corpus: str | Path | None = None) -> tuple[list[str], str]:
    """(documents, name) of the bundled corpus (``None``) or of the user's file/folder."""
    if corpus is None or (isinstance(corpus, str) and corpus.strip().lower() in ("", "none", "bundled")):
        return bundled_documents(), "bundled"
    from ..data import read_texts

    p = Path(str(corpus)).expanduser()
    if not p.exists():
        raise DataError(f"reference corpus not found: {p}")
    docs = [r.text for r in read_texts(p) if r.text.strip()]
    if not docs:
        raise DataError(f"the reference corpus {p} holds no text")
    return docs, str(p)


def _chunks(doc: str) -> list[str]:
    if len(doc) <= CHUNK_CHARS:
        return [doc]
    out, cur, n = [], [], 0
    for line in doc.splitlines(keepends=True):
        if cur and n + len(line) > CHUNK_CHARS:
            out.append("".join(cur))
            cur, n = [], 0
        cur.append(line)
        n += len(line)
    if cur:
        out.append("".join(cur))
    return out


def count_tokens(tokenizer, documents: list[str], progress: Progress = noop) -> np.ndarray:
    """Occurrences of every token id in ``documents`` (int64, length ``len(tokenizer)`` or more)."""
    size = len(tokenizer)
    counts = np.zeros(size, dtype=np.int64)
    pieces = [c for d in documents for c in _chunks(d) if c]
    total = max(1, len(pieces))
    for i in range(0, len(pieces), BATCH):
        batch = pieces[i : i + BATCH]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ids = tokenizer(batch, add_special_tokens=False, verbose=False)["input_ids"]
        flat = np.fromiter((t for row in ids for t in row), dtype=np.int64)
        if flat.size:
            need = int(flat.max()) + 1
            if need > len(counts):
                counts = np.concatenate([counts, np.zeros(need - len(counts), dtype=np.int64)])
            counts += np.bincount(flat, minlength=len(counts))
        progress(f"token frequencies: {min(i + BATCH, len(pieces))}/{len(pieces)} pieces", min(1.0, (i + BATCH) / total))
    return counts


def frequency_table(tokenizer, corpus: str | Path | None = None, *, use_cache: bool = True,
                    progress: Progress = noop) -> FrequencyTable:
    """The token-frequency table of ``corpus`` (None: the bundled corpus) under ``tokenizer`` (cached).

    Parameters
    ----------
    tokenizer
        A Hugging Face tokenizer.
    corpus : str or Path, optional
        What :func:`corpus_documents` reads; None: the bundled corpus.
    use_cache : bool
        Read and write the disk cache (namespace ``token_frequency``, one entry per corpus hash).
    progress : Progress
        Progress callback.

    Returns
    -------
    FrequencyTable
        The counts, with ``cached`` True when they came from the cache.
    """
    docs, name = corpus_documents(corpus)
    ch = corpus_hash(docs)
    th = tokenizer_hash(tokenizer)
    cache = ArrayCache("token_frequency", {"tokenizer": th, "version": FREQ_VERSION}, enabled=use_cache)
    look = cache.lookup([ch], lambda a: FrequencyTable(a["counts"], int(a["n_documents"]), name, ch, th, 0.0,
                                                       cached=True))
    if not look.missing:
        return look.results[0]
    t0 = time.time()
    counts = count_tokens(tokenizer, docs, progress)
    table = FrequencyTable(counts, len(docs), name, ch, th, time.time() - t0)
    cache.put(ch, {"counts": counts, "n_documents": np.array(len(docs))})
    return table
