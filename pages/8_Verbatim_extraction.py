"""Verbatim extraction (Carlini et al. 2023, Definition 3.1): does the model, prompted with a text's first k tokens,
give its next m tokens exactly? Members against non-members, with the share of each that comes back word for word.

The page is made from the audit's declaration (``mia_core/audits/extraction.py``) by ``dashboard.audit_page``; the
engine is ``mia_core.extraction``."""
from dashboard.audit_page import show

show("extraction", ":material/content_copy:")
