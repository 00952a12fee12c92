"""Fixtures the bad-input tests share (a module may define its own of the same name)."""
import pytest
from helpers import good_inputs, stop_model_loads


@pytest.fixture
def work(tmp_path, monkeypatch):
    """Good inputs in ``tmp_path`` (``helpers.good_inputs``: members ``m.txt``, non-members ``n.txt``, population
    ``pop.txt``, two books a side), a private statistics cache in ``tmp_path/cache``, the default text limit."""
    monkeypatch.delenv("MIA_MAX_TEXT_CHARS", raising=False)
    return good_inputs(tmp_path, monkeypatch)


@pytest.fixture
def no_model(monkeypatch):
    """Any attempt to load a model (or to start the masked-LM audit or fine-tuning) fails the test: every case
    that uses it must be refused first."""
    def boom(*a, **k):
        raise AssertionError("a model was loaded for input that should be refused first")

    stop_model_loads(monkeypatch, boom)
    return boom
