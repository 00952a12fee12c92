"""The one place a backward pass runs: per-text gradient norms of a causal LM's loss.

For every text, :func:`compute_grad_norms` computes the target model's mean negative
log-likelihood over the scored tokens (tokens 2..n, as every attack scores them:
``mia_core.attacks.base``; all tokens when ``first_token``), back-propagates it to **every
parameter of the model** and keeps, per parameter tensor, the L1, L2 and L-infinity norms of
its gradient. The gradient-norm attack (``mia_core.attacks.gradnorm``) reduces them to one
number per text (by default the global L2 norm ``sqrt(sum_tensors ||g_t||_2^2)``).

Which parameters
    All of them. A fine-tuned target (``make-target``) is loaded with its LoRA adapter merged
    into the base weights, and peft leaves the merged weights frozen (``requires_grad=False``);
    the gradient a training step *would* have on the model is what the attack reads, so
    ``requires_grad`` is switched on for every parameter during the pass and restored
    afterwards, exactly as it was. Tied input/output embeddings are one tensor (counted once).
    Quantised models (int8/int4) have no gradient with respect to their weights: a
    ``SettingsError`` says so.

Tokens and windows
    A text is tokenised as ``mia_core.stats`` scores it: the prefix ``StatsSettings.prefix`` resolves
    to (:func:`mia_core.stats.resolve_prefix`: by default what the model saw in training), windows of the
    context length C with stride C-1 for texts longer than C. The loss is the sum of the
    windows' NLLs over the scored tokens divided by their number (the mean over the whole
    text); each window's share is back-propagated in turn and the gradients add up, so a long
    text costs one forward + backward per window and never holds more than one window's graph.

Cost
    One forward and one backward pass per text (per window), one text at a time (per-text
    gradients cannot share a batch): roughly 3x the FLOPs of the forward pass, and no batching.
    Memory: one gradient buffer per parameter (the model's size again, e.g. +0.5 GB for
    SmolLM2-135M in fp32) plus one window's activations. Measured figures are in docs/gradnorm-rmia.md.

Results are cached on disk (``mia_core.cache.ArrayCache``, namespace ``gradients``) keyed by
model identity, context, prefix policy, first-token rule and text hash, like the statistics
pass, so re-running the attack on cached texts runs no model. Gradients are zeroed before and
after every text (``model.zero_grad(set_to_none=True)``), so nothing leaks into a later
training step or text.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from ..cache import ArrayCache, text_hash
from ..errors import SettingsError
from ..progress import Progress, noop
from .settings import StatsSettings, prefix_key, resolve_prefix, tokenize
from .windows import window_starts

if TYPE_CHECKING:  # mia_core.models (huggingface_hub, safetensors) loads with a model: ``mia --help`` stays light
    from ..models import LoadedModel

GRADIENTS_VERSION = 2  # 2: a tensor the loss does not reach is NaN (was 0), left out of every aggregate
NORMS = ("l1", "l2", "linf")


@dataclass
class GradNorms:
    """Gradient norms of one text's mean NLL (over its scored tokens) under one model.

    ``l1``, ``l2``, ``linf``: one value per parameter tensor (in ``names`` order; NaN for a tensor
    the loss does not reach, e.g. an unused head: MIMIR skips tensors without a gradient); ``loss``:
    the mean NLL that was differentiated; ``n_scored``: how many tokens it averages (0: the
    text had nothing to score, every norm is NaN).
    """

    names: np.ndarray
    l1: np.ndarray
    l2: np.ndarray
    linf: np.ndarray
    loss: float
    n_scored: int

    def norm(self, p: str = "l2", aggregate: str = "global") -> float:
        """One number for the text.

        ``aggregate="global"``: the norm of the whole gradient vector (L2: root of the sum of
        squared tensor L2 norms; L1: their sum; L-inf: their max). ``aggregate="mean"``: the
        mean over parameter tensors of each tensor's norm (MIMIR's ``GradNormAttack``). Tensors
        without a gradient are left out of both, as MIMIR leaves them out of its mean.
        """
        if self.n_scored == 0:
            return float("nan")
        v = getattr(self, p).astype(np.float64)
        v = v[np.isfinite(v)]
        if not v.size:
            return float("nan")
        if aggregate == "mean":
            return float(v.mean())
        if p == "l2":
            return float(np.sqrt((v * v).sum()))
        if p == "l1":
            return float(v.sum())
        return float(v.max())

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The norms as the arrays of a cache entry (``loss`` and ``n_scored`` as 0-d arrays)."""
        return {"names": self.names, "l1": self.l1, "l2": self.l2, "linf": self.linf,
                "loss": np.array(self.loss), "n_scored": np.array(self.n_scored)}

    @classmethod
    def from_arrays(cls, d: dict[str, np.ndarray]) -> "GradNorms":
        """The norms back from :meth:`to_arrays`' arrays."""
        return cls(names=d["names"], l1=d["l1"], l2=d["l2"], linf=d["linf"], loss=float(d["loss"]),
                   n_scored=int(d["n_scored"]))


def cache_settings(lm: LoadedModel, st: StatsSettings, first_token: bool) -> dict:
    """What a text's cached gradient norms depend on besides the text: the model's identity, the resolved
    context length, the prefix policy, the first-token rule and :data:`GRADIENTS_VERSION`.
    """
    return {
        "model": lm.identity,
        "context": st.resolved_context(lm),
        "prefix": prefix_key(lm, st),
        "first_token": bool(first_token),
        "version": GRADIENTS_VERSION,
    }


def check_model(lm: LoadedModel) -> None:
    """``SettingsError`` for a model whose weights have no gradient (int8/int4 quantisation)."""
    if lm.quantize != "none":
        raise SettingsError(f"the gradient-norm attack needs an unquantised target ({lm.name} is {lm.quantize}): "
                            "gradients with respect to quantised weights do not exist; load it with {quantize} none",
                            options=("quantize",))


def compute_grad_norms(
    lm: LoadedModel,
    texts: Sequence[str],
    settings: StatsSettings | None = None,
    *,
    first_token: bool = False,
    use_cache: bool = True,
    progress: Progress = noop,
    label: str = "gradient pass",
) -> list[GradNorms]:
    """Per-tensor gradient norms of every text's mean NLL (cached; see the module docstring).

    Parameters
    ----------
    lm : LoadedModel
        The causal LM (unquantised: ``SettingsError`` otherwise).
    texts : sequence of str
        The texts, duplicates allowed (each distinct text is computed once).
    settings : StatsSettings, optional
        Window and prefix as the statistics pass uses them; None: the defaults.
    first_token : bool
        Also score each text's first token.
    use_cache : bool
        Read and write the disk cache (namespace ``gradients``).
    progress : Progress
        Progress callback.
    label : str
        What the progress messages call this pass.

    Returns
    -------
    list of GradNorms
        One per text, in order.
    """
    check_model(lm)
    st = settings or StatsSettings()
    cache = ArrayCache("gradients", cache_settings(lm, st, first_token), enabled=use_cache)
    look = cache.lookup([text_hash(t) for t in texts], GradNorms.from_arrays)
    compute_grad_norms.last_cache = cache
    if not look.missing:
        progress(f"{label}: all {len(texts)} texts cached", 1.0)
        return look.results

    def store(h: str, g: GradNorms) -> None:
        cache.put(h, g.to_arrays())
        look.fill(h, g)

    todo = {h: texts[look.first(h)] for h in look.missing}
    _run_backward(lm, todo, st.resolved_context(lm), resolve_prefix(lm, st), first_token, store, progress, label)
    return look.results


def _run_backward(lm: LoadedModel, todo: dict[str, str], context: int, prefix, first_token: bool,
                  store: Callable[[str, GradNorms], None], progress: Progress, label: str) -> None:
    """The backward passes of ``todo`` (text hash -> text), one text at a time, each result handed to
    ``store(hash, norms)``; every parameter's ``requires_grad`` and the model's mode are restored after."""
    import torch

    model = lm.model
    params = _unique_params(model)
    names = np.array([n for n, _ in params])
    saved = [p.requires_grad for _, p in params]
    was_training = model.training
    model.eval()  # no dropout: the gradient of the model as it scores
    try:
        for _, p in params:
            p.requires_grad_(True)
        with torch.inference_mode(False), torch.enable_grad():
            for k, (h, text) in enumerate(todo.items()):
                store(h, _one_text(lm, [p for _, p in params], names, tokenize(lm, text), prefix, context,
                                   first_token))
                progress(f"{label}: {k + 1}/{len(todo)} texts", (k + 1) / len(todo))
    finally:
        model.zero_grad(set_to_none=True)
        for (_, p), rg in zip(params, saved):
            p.requires_grad_(rg)
        model.train(was_training)


compute_grad_norms.last_cache = None  # type: ignore[attr-defined]


def _unique_params(model) -> list[tuple[str, object]]:
    """(name, parameter) of every distinct parameter tensor (tied weights once)."""
    return list(model.named_parameters())  # named_parameters() already skips shared tensors


def windows_of(ids: np.ndarray, prefix: int | None, context: int, first_token: bool) -> tuple[list, int]:
    """The scored windows of one text: ``[(input ids, target mask)]`` and the number of scored
    tokens. Windows as ``mia_core.stats`` cuts them (C tokens, stride C-1: ``window_starts``); the
    target mask marks the positions whose next-token prediction is scored (text tokens 2..n, or 1..n
    with ``first_token``; the text's first token is only ever predicted from the prefix)."""
    seq = np.concatenate([[prefix], ids]).astype(np.int64) if prefix is not None else ids.astype(np.int64)
    offset = 1 if prefix is not None else 0  # seq position of text token 0
    first_scored = offset + (0 if first_token else 1)  # first seq position whose prediction is scored
    out, n = [], 0
    for s in window_starts(len(seq), context):
        win = seq[s : s + context]
        tgt_pos = np.arange(s + 1, s + len(win))  # seq positions predicted in this window
        mask = tgt_pos >= max(first_scored, 1)
        out.append((win, mask))
        n += int(mask.sum())
    return out, n


def _one_text(lm: LoadedModel, params: list, names: np.ndarray, ids: np.ndarray, prefix, context: int,
              first_token: bool) -> GradNorms:
    import torch

    model = lm.model
    wins, n = windows_of(ids, prefix, context, first_token)
    model.zero_grad(set_to_none=True)
    if n == 0:
        nan = np.full(len(params), np.nan, dtype=np.float32)
        return GradNorms(names, nan, nan.copy(), nan.copy(), float("nan"), 0)
    total = 0.0
    for win, mask in wins:
        if not mask.any():
            continue
        x = torch.from_numpy(win).unsqueeze(0).to(lm.device)
        logits = model(input_ids=x, use_cache=False).logits[0, :-1].float()
        lp = torch.log_softmax(logits, dim=-1)
        tgt = x[0, 1:]
        nll = -lp.gather(1, tgt.unsqueeze(1)).squeeze(1)
        m = torch.from_numpy(mask).to(nll.device)
        part = nll[m].sum()
        (part / n).backward()
        total += float(part.detach())
        del logits, lp, nll, part
    l1, l2, linf = [], [], []
    for p in params:
        if p.grad is None:  # a parameter the loss does not reach (e.g. unused heads): no gradient, as MIMIR
            l1.append(np.nan), l2.append(np.nan), linf.append(np.nan)
            continue
        g = p.grad.detach().float()
        l1.append(float(g.abs().sum()))
        l2.append(float(g.norm(2)))
        linf.append(float(g.abs().max()))
    model.zero_grad(set_to_none=True)
    return GradNorms(names, np.array(l1, dtype=np.float64), np.array(l2, dtype=np.float64),
                     np.array(linf, dtype=np.float64), total / n, n)
