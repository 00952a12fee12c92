"""Copyright traps (Meeus et al. 2024): make, insert, test. Page logic: ``dashboard.traps``; the audit is the
registry's ``traps`` (``mia_core/audits/traps.py``); engine: ``mia_core.traps``."""
from dashboard.traps import page

page()
