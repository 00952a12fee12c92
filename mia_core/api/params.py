"""Attack parameters written as ``ATTACK.NAME=VALUE`` (the CLI's ``--param``), read into ``{attack: {name: value}}``.

One reader for every command that takes ``--param`` (``mia run``, ``mia infer-dataset``): each value is checked
against the parameter's declared domain and coerced to its type (``mia_core.attacks.domains``).
"""
from __future__ import annotations

from typing import Iterable

from ..errors import SettingsError


def parse_param_items(items: Iterable[str] | None, params: dict | None = None) -> dict:
    """``ATTACK.NAME=VALUE`` items into ``{attack: {name: value}}``.

    Parameters
    ----------
    items : iterable of str, optional
        The items, e.g. ``["min_k.k=0.1", "dc_pdd.corpus=FOLDER"]``.
    params : dict, optional
        Filled in place and returned (a new dict when None).

    Returns
    -------
    dict
        ``{attack: {name: value}}``, each value checked against the parameter's declared domain and coerced to
        its type.

    Raises
    ------
    SettingsError
        One line: an item not written ``ATTACK.NAME=VALUE``, an unknown attack or parameter, a value outside
        the domain.
    """
    from ..attacks import REGISTRY

    params = {} if params is None else params
    for item in items or []:
        head, eq, value = item.partition("=")
        attack, dot, key = head.strip().partition(".")
        attack, key = attack.strip(), key.strip()
        if not eq or not dot or not attack or not key:
            raise SettingsError(f"--param {item!r}: write ATTACK.NAME=VALUE, e.g. --param min_k.k=0.1")
        if attack not in REGISTRY:
            raise SettingsError(f"--param {item!r}: unknown attack {attack!r}; choose from {', '.join(REGISTRY)}")
        a = REGISTRY[attack]
        if key not in a.params:
            known = ", ".join(a.params) or "none"
            raise SettingsError(f"--param {item!r}: {attack} has no parameter {key!r} (its parameters: {known})")
        params.setdefault(attack, {})[key] = a.domains[key].check(value, f"--param {attack}.{key}")
    return params
