"""One exception family for everything a user can get wrong.

The CLI prints ``MiaError`` messages as one line and exits non-zero; the dashboard
shows them in an ``st.error`` box. Anything else escaping is a bug.
"""


class MiaError(Exception):
    """A problem the user can fix (bad input, unknown model, too little data...)."""


class DataError(MiaError):
    """Input files or texts that cannot be used as given."""


class ModelError(MiaError):
    """A model that cannot be found, loaded or run."""


class SettingsError(MiaError):
    """Incompatible or invalid settings (e.g. a saved SMIA model applied to other settings)."""
