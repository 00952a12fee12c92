"""mia_core: the engine behind mia-dashboard (membership-inference audits of language models).

Nothing in this package imports Streamlit: the dashboard pages, the CLI
(``python -m mia_core``) and the tests all call the same functions.
"""
__version__ = "0.1.0"  # the one place the version lives: pyproject.toml reads it from here
