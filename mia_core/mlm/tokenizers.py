"""The masked-LM audit's first check (Mireshghallah et al. 2022, §2.2): the target and the reference share a
tokenizer, since the likelihood ratio compares the two models' probabilities of the same token ids at the same
masked positions."""
from __future__ import annotations

from ..errors import SettingsError
from ..models import MaskedLM

_PROBE = "Membership inference: 1234 naïve Résumé, ~zß! The QUICK brown fox."


def check_same_tokenizer(target: MaskedLM, reference: MaskedLM, *, vocab_only: bool = False) -> list[str]:
    """Raise ``SettingsError`` unless both models share a tokenizer; returns warnings.

    The likelihood ratio compares the two models' probabilities of the *same* token ids at the
    *same* masked positions (§2.2), so the vocabularies (token -> id maps), the mask token and
    the tokenisation of a probe string (case, accents, digits, punctuation) must all agree.
    Both models are always fed the ids made by the *target's* tokenizer. With ``vocab_only``,
    a difference in text normalisation alone (e.g. a cased vocabulary that one tokenizer
    lowercases) is accepted with a warning: the reference then sees text normalised as the
    target's tokenizer does it, which can bias its energies.
    """
    a, b = target.tokenizer, reference.tokenizer
    why = None
    va, vb = a.get_vocab(), b.get_vocab()
    if va != vb:
        missing = len(set(va) - set(vb))
        renumbered = sum(1 for tok, i in va.items() if tok in vb and vb[tok] != i)
        why = (f"their vocabularies differ ({len(va):,} vs {len(vb):,} tokens; {missing:,} of the target's "
               f"tokens are missing from the reference and {renumbered:,} have another id)")
    elif a.mask_token_id != b.mask_token_id:
        why = "their mask tokens differ"
    else:
        ea = a(_PROBE).input_ids
        eb = b(_PROBE).input_ids
        if ea != eb:
            why = (f"they tokenise text differently (the probe {_PROBE!r} gets different token ids: one "
                   "tokenizer may lowercase or strip accents and the other not)")
            if vocab_only:
                return [f"the target and the reference share a vocabulary but {why}; both are fed the target's "
                        "tokenisation (vocab_only), which the reference may find unusual."]
    if why:
        raise SettingsError(
            f"the target ({target.name}) and the reference ({reference.name}) do not share a tokenizer: {why}. "
            "The likelihood-ratio attack needs a reference with the target's tokenizer, such as the "
            "general-domain model the target was trained from."
            + (" (Same vocabulary, different normalisation only? {vocab_only} accepts that.)"
               if why.startswith("they tokenise") else ""), options=("vocab_only",))
    return []

