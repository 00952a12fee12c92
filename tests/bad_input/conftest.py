"""Fixtures the bad-input tests share (a module may define its own of the same name)."""
import pytest
from helpers import stop_model_loads


@pytest.fixture
def no_model(monkeypatch):
    """Any attempt to load a model (or to start the masked-LM audit or fine-tuning) fails the test: every case
    that uses it must be refused first."""
    def boom(*a, **k):
        raise AssertionError("a model was loaded for input that should be refused first")

    stop_model_loads(monkeypatch, boom)
    return boom
