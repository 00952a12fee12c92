"""Copyright traps (Meeus et al. 2024): plant unique sequences in what you publish, keep a random half secret, and
later test whether a model finds the planted ones more familiar, with a p-value that is exact by design.

Page logic: ``dashboard.traps``; the audit is the registry's ``traps`` (``mia_core/audits/traps.py``); engine:
``mia_core.traps``."""
from dashboard.traps import page

page()
