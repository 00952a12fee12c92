"""Streamlit-specific shared code of the dashboard (the engine, ``mia_core``, never imports Streamlit).

* ``sidebar``   the model panel every page shows (target, reference, precision, device).
* ``loaders``   cached model / corpus loaders (``st.cache_resource`` / ``st.cache_data``).
* ``jobs``      long runs in a background thread, so pages stay usable and a refresh loses nothing.
* ``tokens``    the per-token view (probabilities, RatioNorm / MaxNorm, coloured HTML spans).
* ``ui``        page setup, error boxes, verdict banner, stage progress, formatting.
"""

from . import threadsafe_ast as _threadsafe_ast

_threadsafe_ast.install()
