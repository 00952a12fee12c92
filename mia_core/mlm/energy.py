"""Energies (§2.3, eq. 2): the batched masked-LM scoring, cached on disk.

For a text ``s`` and the ``K`` masking patterns ``I_1..I_K`` of its :class:`MaskPlan`, of ``l``
tokens each, the energy under the plan's recipe (``mia_core.mlm.masking.RECIPES``) is::

    "sum" (default):  E(s; theta) = -(1/K) * sum_k       sum_{i in I_k} log p_mlm(s_i | s with I_k masked; theta)
    "released":       E(s; theta) = -(1/K) * sum_k (1/l) sum_{i in I_k} log p_mlm(s_i | s with I_k masked; theta)

``"sum"`` is this project's reading of the paper's eq. 2; ``"released"`` is the mean loss per
masked token of the authors' released code as issue 28 describes it (``l`` is the same for every
pattern of a text, so it is the ``"sum"`` energy divided by ``l``). All ``K`` masked copies of a
batch of texts go through the model together (:func:`_batches` groups texts longest first within a
padded-token budget; :func:`_score_batch` builds the masked rows; :func:`_forward_logprobs`
projects only the masked positions onto the vocabulary). Per-pattern *sums* are cached
(``mia_core.cache.ArrayCache``, namespace ``mlm``, read with ``ArrayCache.lookup`` like every cache client)
keyed by the model's identity and
``MaskPlan.settings()`` (``K``, seed, mask rate, maximum length, and the rounding of ``l`` when it
is not the default's) and the text hash, so a re-run makes no model call.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..cache import ArrayCache
from ..engines import Workload, current_engine
from ..errors import ModelError, SettingsError
from ..models import MaskedLM
from ..progress import Progress, noop
from .masking import DEFAULT_RATE, DEFAULT_RECIPE, RECIPES, MaskPlan, check_recipe, plan_masks

CACHE_VERSION = 1


def _batches(lengths: np.ndarray, k: int, batch_tokens: int) -> list[list[int]]:
    """Texts grouped so that (rows = texts x K) x (longest length) stays within ``batch_tokens``.

    Texts are taken longest first, so each batch pads little. A text whose K rows alone exceed
    the budget gets a batch of its own (its rows are then split in :func:`_score_batch`).
    """
    order = np.argsort(-lengths, kind="stable")
    out, cur, cur_max = [], [], 0
    for i in order.tolist():
        L = int(lengths[i])
        new_max = max(cur_max, L)
        if cur and (len(cur) + 1) * k * new_max > batch_tokens:
            out.append(cur)
            cur, new_max = [], L
        cur.append(i)
        cur_max = new_max
    if cur:
        out.append(cur)
    return out


def _forward_logprobs(model, input_ids, attention_mask, rows, cols, targets):
    """log p(target | masked input) at (rows, cols), computing the vocabulary projection only
    at the masked positions when the model's output layer allows it (a pre-hook gathers those
    hidden states), else from the full logits."""
    import torch

    n = rows.numel()
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    flat = rows * input_ids.shape[1] + cols
    state = {"used": False}

    def gather(module, args):
        h = args[0]
        if h.dim() == 3 and h.shape[0] * h.shape[1] == input_ids.numel():
            state["used"] = True
            return (h.reshape(-1, h.shape[-1]).index_select(0, flat),) + tuple(args[1:])
        return None

    logits = None
    if head is not None:
        handle = head.register_forward_pre_hook(gather)
        try:
            out = model(input_ids=input_ids, attention_mask=attention_mask)
        finally:
            handle.remove()
        lg = out.logits
        if state["used"] and lg.dim() == 2 and lg.shape[0] == n:
            logits = lg
    if logits is None:
        out = model(input_ids=input_ids, attention_mask=attention_mask)
        logits = out.logits[rows, cols]
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp.gather(1, targets[:, None])[:, 0]


def _score_batch(mlm: MaskedLM, plan: MaskPlan, idx: list[int], batch_tokens: int) -> dict[int, np.ndarray]:
    """Sum of log-probabilities of the masked tokens, per pattern, for the texts ``idx``."""
    import torch

    k = plan.k
    rows_spec = [(i, j) for i in idx for j in range(k)]
    L_max = max(len(plan.ids[i]) for i in idx)
    per_chunk = max(1, batch_tokens // max(1, L_max))
    result = {i: np.zeros(k, dtype=np.float64) for i in idx}
    pad = mlm.tokenizer.pad_token_id if mlm.tokenizer.pad_token_id is not None else 0
    mask_id = mlm.mask_token_id
    for c0 in range(0, len(rows_spec), per_chunk):
        chunk = rows_spec[c0:c0 + per_chunk]
        L = max(len(plan.ids[i]) for i, _ in chunk)
        inp = np.full((len(chunk), L), pad, dtype=np.int64)
        att = np.zeros((len(chunk), L), dtype=np.int64)
        r_list, c_list, t_list = [], [], []
        for r, (i, j) in enumerate(chunk):
            seq = plan.ids[i]
            inp[r, :len(seq)] = seq
            att[r, :len(seq)] = 1
            pos = plan.positions(i)[j]
            t_list.append(seq[pos])
            inp[r, pos] = mask_id
            r_list.append(np.full(pos.size, r))
            c_list.append(pos)
        rows = np.concatenate(r_list) if r_list else np.zeros(0, dtype=np.int64)
        if rows.size == 0:
            continue
        dev = mlm.device
        with torch.inference_mode():
            lp = _forward_logprobs(
                mlm.model, torch.from_numpy(inp).to(dev), torch.from_numpy(att).to(dev),
                torch.from_numpy(rows).to(dev), torch.from_numpy(np.concatenate(c_list)).to(dev),
                torch.from_numpy(np.concatenate(t_list)).to(dev))
            sums = torch.zeros(len(chunk), dtype=torch.float64, device=lp.device)
            sums.index_add_(0, torch.from_numpy(rows).to(lp.device), lp.double())
        sums = sums.cpu().numpy()
        for r, (i, j) in enumerate(chunk):
            result[i][j] = sums[r]
    return result


def _score_rows(mlm: MaskedLM, plan: MaskPlan, todo: list[int], batch_tokens: int, progress: Progress = noop):
    """``(index, per-pattern sums)`` of the plan's texts ``todo``, batch by batch (:func:`_batches`)."""
    lengths = np.array([len(plan.ids[i]) for i in todo])
    total_tok = float(lengths.sum()) or 1.0
    done_tok = 0.0
    for b in _batches(lengths, plan.k, int(batch_tokens)):
        idx = [todo[j] for j in b]
        try:
            res = _score_batch(mlm, plan, idx, int(batch_tokens))
        except RuntimeError as e:
            if "out of memory" in str(e).lower():
                raise ModelError(f"out of memory scoring with {mlm.name}: lower batch_tokens "
                                 f"(now {batch_tokens}).") from None
            raise
        yield from res.items()
        done_tok += float(sum(len(plan.ids[i]) for i in idx))
        progress(f"{done_tok / total_tok:.0%} of the tokens", done_tok / total_tok)


class EnergyWorkload(Workload):
    """Per-pattern sums as an engine workload (:class:`mia_core.engines.Workload`). The local engine
    scores the driver's plan; a Ray worker loads the masked LM once and re-makes each text's masks
    from the plan's settings (they depend on the text and the seed only)."""

    kind = "mlm"

    def __init__(self, mlm: MaskedLM, plan: MaskPlan, batch_tokens: int):
        super().__init__((mlm, plan), {
            "load_args": getattr(mlm, "load_args", None), "identity": mlm.identity, "name": mlm.name,
            "batch_tokens": int(batch_tokens),
            "plan": {"k": plan.k, "seed": plan.seed, "rate": plan.rate, "max_length": plan.max_length,
                     "recipe": plan.recipe}})

    def check_remote(self) -> None:
        """Refuse a masked LM not loaded with ``load_masked_lm`` (a Ray worker could not load it again).

        Raises
        ------
        SettingsError
            The model has no ``load_args``.
        """
        if not self.init["load_args"]:
            raise SettingsError(f"{self.init['name']} was not loaded with load_masked_lm, so Ray workers cannot "
                                "load it")

    @classmethod
    def build(cls, init: dict, device: str):
        """On a worker: ``((masked LM, None), identity)``, the model loaded from ``init["load_args"]`` on ``device``
        (no plan: :meth:`work` re-makes each unit's masks).
        """
        from ..models import load_masked_lm

        mlm = load_masked_lm(**init["load_args"], device=device)
        return (mlm, None), mlm.identity

    @classmethod
    def work(cls, tool, init: dict, items: list[dict], emit, progress: Progress = noop) -> None:
        """A unit's per-pattern log-probability sums, ``emit(idx, -1, -1, {"pattern_logp": sums})`` per text.

        ``tool`` is ``(masked LM, plan)``: locally the driver's plan is scored; on a worker (plan None) the
        unit's masks are re-made from ``init["plan"]``'s settings (they depend on the text and the seed only).
        """
        mlm, plan = tool
        if plan is None:  # a worker: this unit's masks, re-made from the plan's settings
            p = init["plan"]
            plan = plan_masks(mlm.tokenizer, [it["text"] for it in items], k=p["k"], seed=p["seed"], rate=p["rate"],
                              max_length=p["max_length"], recipe=p["recipe"])
            for j, v in _score_rows(mlm, plan, list(range(len(items))), init["batch_tokens"], progress):
                emit(items[j]["idx"], -1, -1, {"pattern_logp": v})
        else:
            for i, v in _score_rows(mlm, plan, [it["idx"] for it in items], init["batch_tokens"], progress):
                emit(i, -1, -1, {"pattern_logp": v})


def _cache_for(mlm: MaskedLM, plan: MaskPlan, enabled: bool) -> ArrayCache:
    settings = {"version": CACHE_VERSION, "attack": "mlm_energy", "model": mlm.identity, **plan.settings()}
    return ArrayCache("mlm", settings, enabled=enabled)


def energies(mlm: MaskedLM, texts: Sequence[str] | None = None, *, k: int | None = None, seed: int = 0,
             rate: float = DEFAULT_RATE, recipe: str | None = None, batch_tokens: int = 8192, cache: bool = True,
             plan: MaskPlan | None = None, progress: Progress | None = None, return_patterns: bool = False):
    """Energies ``E(s; theta)`` of §2.3 (eq. 2) for ``texts`` under the masked LM ``mlm``.

    Recipe ``"sum"`` (default): ``E = -(1/K) * sum_k sum_{i in I_k} log p(s_i | s with I_k masked)``;
    ``"released"``: the same divided by ``l``, the mean loss per masked token (module docstring).
    Lower = the model finds the text more likely. All ``K`` masked copies of a batch of texts go
    through the model together (rows padded; at most ``batch_tokens`` padded tokens per forward pass).
    ``plan`` (from :func:`plan_masks`) fixes the tokenisation, the masks and the recipe; give the same
    plan to the target and the reference so they see identical masked inputs (otherwise one is made
    from ``texts``, ``k`` (None: the recipe's default), ``seed``, ``rate``, ``recipe`` and the model's
    maximum length). Texts with no token get ``NaN``. With ``return_patterns``, also returns the
    ``(n, K)`` per-pattern sums of log-probabilities (the cached numbers, whatever the recipe).
    """
    progress = progress or noop
    if recipe is not None:
        check_recipe(recipe)
    if plan is None:
        if texts is None:
            raise SettingsError("energies() needs texts or a mask plan.")
        plan = plan_masks(mlm.tokenizer, texts, k=k, seed=seed, rate=rate, max_length=mlm.max_length,
                          recipe=recipe or DEFAULT_RECIPE)
    elif recipe is not None and recipe != plan.recipe:
        raise SettingsError(f"the mask plan was drawn for the {plan.recipe!r} recipe, not {recipe!r}: make a plan "
                            "with plan_masks(..., recipe=...).")
    elif len(mlm.tokenizer) != plan.vocab_size:
        raise SettingsError(f"the mask plan was made with a tokenizer of {plan.vocab_size:,} tokens but "
                            f"{mlm.name} has {len(mlm.tokenizer):,}; make a plan with this model's tokenizer.")
    if plan.max_length > mlm.max_length:
        raise SettingsError(f"the mask plan allows {plan.max_length} tokens but {mlm.name} takes at most "
                            f"{mlm.max_length}.")
    if int(batch_tokens) < 1:
        raise SettingsError(f"batch_tokens must be >= 1, got {batch_tokens}.")
    n = len(plan.texts)
    sums = np.full((n, plan.k), np.nan, dtype=np.float64)
    store = _cache_for(mlm, plan, cache)
    live = [i for i in range(n) if plan.content[i].size]  # a text without content keeps NaN energies
    found = store.lookup([plan.hashes[i] for i in live], decode=lambda a: a["pattern_logp"],
                         check=lambda j, a: None if a.get("pattern_logp") is not None and
                         a["pattern_logp"].shape == (plan.k,) else f"not {plan.k} pattern sums")
    for j, v in enumerate(found.results):
        if v is not None:
            sums[live[j]] = v
    todo = [live[found.first(h)] for h in found.missing]  # a text that comes twice is scored once
    if todo:
        def put(i: int, t_a: int, t_b: int, arrays: dict) -> bool:
            v = arrays["pattern_logp"]
            for j in found.missing[plan.hashes[i]]:
                sums[live[j]] = v
            store.put(plan.hashes[i], {"pattern_logp": v, "n_tokens": np.int64(plan.content[i].size)})
            return True

        # in this process or on Ray workers (they re-make each text's masks from the plan's settings and
        # recipe); each text's sums cached here as they come
        engine = current_engine()
        items = [{"idx": i, "text": plan.texts[i]} for i in todo]
        units = engine.cut(items, [len(plan.ids[i]) * plan.k for i in todo])
        progress(f"scoring: {mlm.name}, {len(todo)} texts x {plan.k} masks", 0.0)
        engine.map(EnergyWorkload(mlm, plan, int(batch_tokens)), units, put,
                   progress=lambda m, f: progress(f"scoring: {mlm.name}, {m}", f), label=f"{plan.k} masks")
    e = -sums.mean(axis=1)
    if RECIPES[plan.recipe]["energy"] == "mean":  # mean loss per masked token: l is the same for all K patterns
        with np.errstate(invalid="ignore", divide="ignore"):
            e = e / np.where(plan.n_masked > 0, plan.n_masked, np.nan)
    return (e, sums) if return_patterns else e
