"""The dashboard's ast.parse lock (dashboard/threadsafe_ast.py): two threads building AST objects
while a third makes garbage whose ``__del__`` runs Python code, the situation of a calibration job
reading cached arrays (numpy's header goes through ast.literal_eval) beside Streamlit's script
thread. Unserialised, CPython 3.11 raises "AST constructor recursion depth mismatch" several times
a second here; serialised, never."""
import ast
import threading
import time

import pytest

import dashboard  # noqa: F401  (installs the lock)


class _Cyclic:
    def __init__(self):
        self.me = self

    def __del__(self):
        sum(range(50))


@pytest.mark.slow
def test_dashboard_import_serialises_ast_parse_across_threads():
    assert getattr(ast.parse, "_mia_serialised", False)
    source = open(ast.__file__).read()
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (123,), }"
    errors: list[str] = []
    stop = time.time() + 3.0

    def parse_module():
        while time.time() < stop:
            try:
                ast.parse(source)
            except SystemError as e:
                errors.append(str(e))

    def read_headers():
        while time.time() < stop:
            try:
                assert ast.literal_eval(header)["shape"] == (123,)
            except SystemError as e:
                errors.append(str(e))

    def make_garbage():
        while time.time() < stop:
            for _ in range(100):
                _Cyclic()
            time.sleep(0)

    threads = [threading.Thread(target=f) for f in (parse_module, read_headers, make_garbage)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_streamlit_magic_is_off_in_the_project_config():
    from streamlit import config

    config.get_config_options(force_reparse=True)
    assert config.get_option("runner.magicEnabled") is False
    # and no file watcher: it would walk into .venv under app.py's folder ("Inotify queue overflowed")
    assert config.get_option("server.fileWatcherType") == "none"
    assert config.get_option("server.address") == "localhost"
