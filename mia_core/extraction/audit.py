"""The verbatim extraction audit's stages: each text's prompt and suffix, the one statistics pass, the matched
length and the figures (:func:`run_extraction_audit`; the package docstring says what is measured and why a
greedy continuation is read off the pass)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import DataError
from ..progress import Progress, noop
from .options import ExtractionOptions


def matched_length(token_ids: np.ndarray, top_id: np.ndarray, k: int, m: int) -> int:
    """How many of the ``m`` tokens after the first ``k`` greedy decoding reproduces before its first wrong token:
    the leading positions ``t`` in ``[k, k + m)`` where the most likely token given the true text before ``t``
    (``top_id[t]``) is the true token."""
    hit = np.asarray(top_id[k:k + m]) == np.asarray(token_ids[k:k + m])
    return int(m if hit.all() else np.argmin(hit))


def text_row(stats, k: int, m: int) -> dict:
    """One text's figures from its statistics: ``matched`` (0..m), ``extractable`` (all m), ``suffix_loglik`` (the
    suffix's mean log-likelihood given the text before each token); NaN and False for a text under k + m tokens."""
    n = stats.n_tokens
    if n < k + m or (stats.top_id[k:k + m] < 0).any():
        return {"n_tokens": n, "matched": float("nan"), "extractable": False, "suffix_loglik": float("nan")}
    j = matched_length(stats.token_ids, stats.top_id, k, m)
    return {"n_tokens": n, "matched": float(j), "extractable": j == m,
            "suffix_loglik": float(np.mean(stats.logprob[k:k + m].astype(np.float64)))}


def check_lengths(lengths: Sequence[int], labels: Sequence[int], opts: ExtractionOptions, max_context: int) -> None:
    """Before the pass: the prompt and suffix fit the model's window, and each set keeps at least two texts of
    k + m tokens (``DataError`` / ``SettingsError`` in one line naming the options)."""
    from ..errors import SettingsError

    k, m = opts.prefix_tokens, opts.suffix_tokens
    if k + m > max_context:
        raise SettingsError(f"{{prefix_tokens}} + {{suffix_tokens}} = {k + m} tokens is longer than the model's "
                            f"window ({max_context} tokens)", options=("prefix_tokens", "suffix_tokens"))
    long_enough = np.asarray(lengths) >= k + m
    lab = np.asarray(labels)
    for flag, what in ((1, "members"), (0, "non-members")):
        kept = int(long_enough[lab == flag].sum())
        if kept < 2:
            raise DataError(f"only {kept} of the {int((lab == flag).sum())} {what} have k + m = {k + m} tokens or "
                            f"more: give longer texts or lower {{prefix_tokens}} / {{suffix_tokens}}",
                            options=("prefix_tokens", "suffix_tokens"))


MARGIN = 4  # tokens read past the cut, so that the cut cannot change the tokens before it


def head_of(lm, text: str, n_tokens: int) -> tuple[str, int]:
    """What the audit reads of ``text``: its shortest start whose tokens are the text's first ``n_tokens`` (k + m),
    and how many tokens that is (fewer where the text is shorter). Only a bounded start is tokenized (8 characters
    a token, doubled until ``n_tokens`` + :data:`MARGIN` tokens are there), so a text of a million words costs what
    one of k + m tokens does; a causal LM's statistics at those positions do not depend on what follows them."""
    from ..stats.settings import tokenize

    chars = 8 * (n_tokens + MARGIN) + 64
    while True:
        head = text[:chars]
        ids = tokenize(lm, head)
        if len(head) == len(text) or len(ids) >= n_tokens + MARGIN:
            break
        chars *= 2
    if len(ids) <= n_tokens and len(head) == len(text):
        return text, len(ids)
    try:  # the cut at the end of token n (a fast tokenizer's offsets), kept where it tokenizes to those n tokens
        offsets = lm.tokenizer(head, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        cut = head[: int(offsets[n_tokens - 1][1])]
        if list(tokenize(lm, cut)) == list(ids[:n_tokens]):
            return cut, n_tokens
    except (TypeError, KeyError, IndexError, NotImplementedError, ValueError):
        pass
    return head, n_tokens  # the bounded start: its first n tokens are the text's (the statistics past them unused)


def share(flags: np.ndarray) -> dict:
    """The extractable share of one set: ``{"extractable", "scored", "rate", "ci"}`` (95 % Wilson interval)."""
    from ..metrics import wilson_ci

    k, n = int(np.sum(flags)), int(len(flags))
    ci = wilson_ci(k, n)
    return {"extractable": k, "scored": n, "rate": k / n if n else float("nan"), "ci": list(ci) if ci else None}


def run_extraction_audit(lm, members: Sequence[str], nonmembers: Sequence[str], opts: ExtractionOptions, *,
                         progress: Progress = noop):
    """The audit on a loaded causal LM (:class:`mia_core.models.LoadedModel`).

    Parameters
    ----------
    lm : LoadedModel
        The target.
    members, nonmembers : sequence of str
        The texts known (or claimed) to be in its training data, and texts it never saw.
    opts : ExtractionOptions
        k, m, the bootstrap, the pass's batch and cache.
    progress : Progress
        ``progress(message, fraction)``.

    Returns
    -------
    ExtractionResult
    """
    import pandas as pd

    from ..metrics import evaluate
    from ..stats import StatsSettings, compute_stats
    from .result import ExtractionResult

    texts, labels = [*members, *nonmembers], [1] * len(members) + [0] * len(nonmembers)
    k, m = opts.prefix_tokens, opts.suffix_tokens
    # only the first k + m tokens of a text are compared: each is cut there before anything is tokenized in full
    # or scored (issue 67: two 200,000-word members took hours for 8 tokens each)
    heads = [head_of(lm, t, k + m) for t in texts]
    check_lengths([n for _, n in heads], labels, opts, lm.max_context)
    stats = compute_stats(lm, [h for h, _ in heads], StatsSettings(batch_tokens=opts.batch_tokens),
                          use_cache=opts.cache, progress=progress, label="greedy continuations")
    rows = [{"text_id": f"{'m' if y else 'n'}{i:04d}", "label": y, **text_row(s, k, m),
             "begins": t[:80]} for i, (t, y, s) in enumerate(zip(texts, labels, stats))]
    scores = pd.DataFrame(rows)
    scored = scores[scores["matched"].notna()]
    y = scored["label"].to_numpy()
    metrics = {name: evaluate(y, scored[name].to_numpy(), n_bootstrap=opts.n_bootstrap, seed=opts.seed)
               for name in ("matched", "suffix_loglik")}
    rates = {"members": share(scored["extractable"].to_numpy()[y == 1]),
             "nonmembers": share(scored["extractable"].to_numpy()[y == 0])}
    settings = {**opts.as_dict(), "n_members": len(members), "n_nonmembers": len(nonmembers),
                "left_out": int(len(scores) - len(scored)),
                "read": f"the first k + m = {k + m} tokens of each text (n_tokens: the tokens read; the rest of a "
                        "text is not read)"}
    progress("verbatim extraction: done", 1.0)
    return ExtractionResult(metrics=metrics, scores=scores, rates=rates, settings=settings,
                            model={"name": lm.name, "identity": lm.identity})
