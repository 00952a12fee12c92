"""The package's version: the one place it lives (``pyproject.toml`` reads it from here)."""
__version__ = "0.1.0"
