"""Bad input, the Python API (issue 37): every public function of ``mia_core`` (``score``, ``audit``,
``audit_documents``, ``audit_mlm``, ``infer_dataset``, ``plan_run``, ``load``) refuses a wrong type or value
with the project's one-line error naming the parameter, before any model loads; a pandas DataFrame or Series
given as texts is read by its text column (never iterated as its column names); a text column that holds
numbers, lists or mappings is refused, in the API and in the csv / jsonl / parquet readers; names longer than
the system allows (a path, an ``hf:`` spec) are one line, never ``OSError``.

No model is loaded: the ``no_model`` fixture fails a test that tries; where a case must get past every check
(to see which texts were read), the function the API hands the texts to is replaced by one that records them.
"""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

import mia_core
from mia_core.errors import DataError, MiaError, SettingsError

TEXTS = [f"The {w} walked to the harbour on day {i} and counted the boats along the wall." for i, w in
         enumerate(["miller", "baker", "clerk", "sailor", "widow", "farmer", "smith", "weaver", "tailor", "cooper",
                    "mason", "potter"])]
OTHER = [f"A quiet rain fell over the northern hills on evening {i}, and the {w} stayed in." for i, w in
         enumerate(["fox", "owl", "hare", "deer", "crow", "wren", "vole", "lark", "mole", "stoat", "swan", "kite"])]
INF, NAN = float("inf"), float("nan")


def _args(fn: str) -> dict:
    """Good arguments for ``fn`` (each case replaces one of them)."""
    return {
        "plan_run": {"attacks": "loss", "texts": TEXTS},
        "score": {"texts": TEXTS},
        "audit": {"members": TEXTS[:6], "nonmembers": OTHER[:6]},
        "infer_dataset": {"suspect": TEXTS, "validation": OTHER},
        "audit_documents": {"members": TEXTS[:4], "nonmembers": OTHER[:4], "folds": 2},
        "audit_mlm": {"members": TEXTS[:4], "nonmembers": OTHER[:4], "population": OTHER[4:], "model": "bert-a",
                      "reference": "bert-b"},
        "load": {"path": "no-such-run-folder"},
    }[fn]


# (function, the argument replaced, its wrong value, the error, the parameter the message names)
CASES = [
    # plan_run
    ("plan_run", "attacks", 5, SettingsError, "attacks"),
    ("plan_run", "attacks", ["loss", 3], SettingsError, "attacks"),
    ("plan_run", "texts", [None], DataError, "texts"),
    ("plan_run", "texts", 5, DataError, "texts"),
    ("plan_run", "population", [1, 2], DataError, "population"),
    ("plan_run", "reference", "yes", SettingsError, "reference"),
    ("plan_run", "labels", None, SettingsError, "labels"),
    ("plan_run", "params", "x", SettingsError, "params"),
    ("plan_run", "n_params", NAN, SettingsError, "n_params"),
    ("plan_run", "device", 5, SettingsError, "device"),
    ("plan_run", "tokenizer", 5, SettingsError, "tokenizer"),
    ("plan_run", "modify_variants", 5, SettingsError, "modify_variants"),
    ("plan_run", "check_inputs", "no", SettingsError, "check_inputs"),
    ("plan_run", "text_column", 5, SettingsError, "text_column"),
    # score
    ("score", "texts", [None], DataError, "texts"),
    ("score", "texts", [1, 2], DataError, "texts"),
    ("score", "texts", None, DataError, "texts"),  # nothing to score (said before any model loads)
    ("score", "texts", {"a": "text"}, DataError, "texts"),
    ("score", "texts", b"bytes", DataError, "texts"),
    ("score", "texts", 3.5, DataError, "texts"),
    ("score", "texts", "Just one text, not a file", DataError, "texts"),
    ("score", "texts", "x" * 5000, DataError, "texts"),
    ("score", "model", 5, SettingsError, "model"),
    ("score", "model", "", SettingsError, "model"),
    ("score", "reference", ["gpt2"], SettingsError, "reference"),
    ("score", "attacks", 5, SettingsError, "attacks"),
    ("score", "population", [None], DataError, "population"),
    ("score", "params", "x", SettingsError, "params"),
    ("score", "params", ["loss"], SettingsError, "params"),
    ("score", "prefix", "sometimes", SettingsError, "prefix"),
    ("score", "prefix", None, SettingsError, "prefix"),
    ("score", "first_token", "yes", SettingsError, "first_token"),
    ("score", "cache", None, SettingsError, "cache"),
    ("score", "dtype", "fp64", SettingsError, "dtype"),
    ("score", "device", 0, SettingsError, "device"),
    ("score", "device", "gpu", SettingsError, "device"),
    ("score", "progress", 5, SettingsError, "progress"),
    ("score", "text_column", 5, SettingsError, "text_column"),
    # audit
    ("audit", "members", [None], DataError, "members"),
    ("audit", "nonmembers", 5, DataError, "nonmembers"),
    ("audit", "labelled", 5, DataError, "labelled"),
    ("audit", "label_column", None, SettingsError, "label_column"),
    ("audit", "alpha", None, SettingsError, "alpha"),
    ("audit", "alpha", 1.5, SettingsError, "alpha"),
    ("audit", "alpha", NAN, SettingsError, "alpha"),
    ("audit", "n_bootstrap", -1, SettingsError, "n_bootstrap"),
    ("audit", "n_bootstrap", 1.5, SettingsError, "n_bootstrap"),
    ("audit", "n_bootstrap", INF, SettingsError, "n_bootstrap"),
    ("audit", "n_bootstrap", 10**12, SettingsError, "n_bootstrap"),
    ("audit", "seed", None, SettingsError, "seed"),
    ("audit", "seed", -1, SettingsError, "seed"),
    ("audit", "seed", "0", SettingsError, "seed"),
    ("audit", "seed", 2**64, SettingsError, "seed"),
    ("audit", "split", 2, SettingsError, "split"),
    ("audit", "split", "half", SettingsError, "split"),
    ("audit", "blind", None, SettingsError, "blind"),
    ("audit", "params", 5, SettingsError, "params"),
    ("audit", "model", 5, SettingsError, "model"),
    # infer_dataset
    ("infer_dataset", "suspect", [None], DataError, "suspect"),
    ("infer_dataset", "validation", 5, DataError, "validation"),
    ("infer_dataset", "population", [1], DataError, "population"),
    ("infer_dataset", "alpha", None, SettingsError, "alpha"),
    ("infer_dataset", "alpha", 0, SettingsError, "alpha"),
    ("infer_dataset", "folds", None, SettingsError, "folds"),
    ("infer_dataset", "folds", 1, SettingsError, "folds"),
    ("infer_dataset", "folds", 2.5, SettingsError, "folds"),
    ("infer_dataset", "n_permutations", INF, SettingsError, "n_permutations"),
    ("infer_dataset", "n_permutations", NAN, SettingsError, "n_permutations"),
    ("infer_dataset", "n_permutations", 10**7, SettingsError, "n_permutations"),  # at most 1,000,000
    ("infer_dataset", "n_permutations", 50, SettingsError, "n_permutations"),
    ("infer_dataset", "features", 5, SettingsError, "features"),
    ("infer_dataset", "features", ["loss", None], SettingsError, "features"),
    ("infer_dataset", "params", "x", SettingsError, "params"),
    ("infer_dataset", "seed", 1.5, SettingsError, "seed"),
    ("infer_dataset", "prefix", 3.5, SettingsError, "prefix"),
    ("infer_dataset", "cache", "yes", SettingsError, "cache"),
    ("infer_dataset", "books", "yes", SettingsError, "books"),
    ("infer_dataset", "passage_words", None, SettingsError, "passage_words"),
    ("infer_dataset", "passage_words", 8, SettingsError, "passage_words"),
    ("infer_dataset", "max_passages", 0, SettingsError, "max_passages"),
    ("infer_dataset", "correction", "bonferroni", SettingsError, "correction"),
    ("infer_dataset", "model", 5, SettingsError, "model"),
    ("infer_dataset", "reference", 5.0, SettingsError, "reference"),
    ("infer_dataset", "dtype", None, SettingsError, "dtype"),
    ("infer_dataset", "progress", "bar", SettingsError, "progress"),
    # audit_documents
    ("audit_documents", "members", 5, DataError, "members"),
    ("audit_documents", "members", [5, 6], DataError, "members"),
    ("audit_documents", "nonmembers", None, DataError, "nonmembers"),
    ("audit_documents", "members", "no-such-book-folder", DataError, "members"),
    ("audit_documents", "folds", None, SettingsError, "folds"),
    ("audit_documents", "features", 5, SettingsError, "features"),
    ("audit_documents", "normalizations", 5, SettingsError, "normalizations"),
    ("audit_documents", "context", 1, SettingsError, "context"),
    ("audit_documents", "n_bins", 0, SettingsError, "n_bins"),
    ("audit_documents", "agg_count", "yes", SettingsError, "agg_count"),
    ("audit_documents", "hist_outside", 1, SettingsError, "hist_outside"),
    ("audit_documents", "seed", -1, SettingsError, "seed"),
    ("audit_documents", "partial_lengths", 5, SettingsError, "partial_lengths"),
    ("audit_documents", "partial_lengths", [100, 0], SettingsError, "partial_lengths"),
    ("audit_documents", "partial_pipelines", ["maxnorm_tf"], SettingsError, "partial_pipelines"),
    ("audit_documents", "n_jobs", 0, SettingsError, "n_jobs"),
    ("audit_documents", "n_estimators", INF, SettingsError, "n_estimators"),
    ("audit_documents", "baselines", None, SettingsError, "baselines"),
    ("audit_documents", "no_such_option", 1, SettingsError, "no_such_option"),
    ("audit_documents", "model", 5, SettingsError, "model"),
    # audit_mlm
    ("audit_mlm", "members", [None], DataError, "members"),
    ("audit_mlm", "population", 5, DataError, "population"),
    ("audit_mlm", "model", None, SettingsError, "model"),
    ("audit_mlm", "reference", 5, SettingsError, "reference"),
    ("audit_mlm", "k", "x", SettingsError, "k"),
    ("audit_mlm", "k", 0, SettingsError, "k"),
    ("audit_mlm", "seed", -1, SettingsError, "seed"),
    ("audit_mlm", "rate", 0, SettingsError, "rate"),
    ("audit_mlm", "alpha", None, SettingsError, "alpha"),
    ("audit_mlm", "recipe", 5, SettingsError, "recipe"),
    ("audit_mlm", "batch_tokens", 0, SettingsError, "batch_tokens"),
    ("audit_mlm", "n_bootstrap", INF, SettingsError, "n_bootstrap"),
    ("audit_mlm", "member_groups", 5, SettingsError, "member_groups"),
    ("audit_mlm", "train_samples", [None], DataError, "train_samples"),
    ("audit_mlm", "cache", None, SettingsError, "cache"),
    ("audit_mlm", "device", 5, SettingsError, "device"),
    ("audit_mlm", "trust_remote_code", "yes", SettingsError, "trust_remote_code"),
    ("audit_mlm", "no_such_option", 1, SettingsError, "no_such_option"),
    # load
    ("load", "path", None, DataError, "path"),
    ("load", "path", 5, DataError, "path"),
    ("load", "path", "", DataError, "path"),
]


def _id(case) -> str:
    fn, arg, value = case[:3]
    shown = repr(value) if not isinstance(value, str) or len(value) < 30 else f"str[{len(value)}]"
    return f"{fn}-{arg}={shown}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_a_wrong_argument_is_one_line_naming_it_before_any_model(case, no_model, tmp_path, monkeypatch):
    fn, arg, value, error, named = case
    monkeypatch.chdir(tmp_path)  # relative names ("no-such-run-folder") are looked for here
    kwargs = {**_args(fn), arg: value}
    with pytest.raises(MiaError) as e:
        getattr(mia_core, fn)(**kwargs)
    msg = str(e.value)
    assert isinstance(e.value, error), (type(e.value).__name__, msg)
    assert "\n" not in msg and len(msg) < 600, msg
    assert re.search(rf"(^|\W){re.escape(named)}(\W|$)", msg), msg


def test_every_public_function_is_covered():
    """A function added to the API gets its row in the table above."""
    assert {c[0] for c in CASES} == {n for n in mia_core.__all__ if n[0].islower() and n != "__version__"}


# ---------------------------------------------------------------------------- DataFrames and Series, read by column
@pytest.fixture
def seen(monkeypatch):
    """The texts each API function hands on, recorded where the model would be loaded and used."""
    import mia_core.dataset_inference as di
    import mia_core.documents as documents
    import mia_core.mlm as mlm
    import mia_core.pipeline as pipeline

    got: dict = {}

    class Stop(Exception):
        pass

    def record(key, fn):
        def f(*a, **k):
            got[key] = fn(*a, **k)
            raise Stop

        return f

    import mia_core.models as models

    # every API path loads its causal LM through mia_core.models.load_causal_lm (looked up when called)
    monkeypatch.setattr(models, "load_causal_lm", lambda spec, **k: ("model", spec))
    monkeypatch.setattr(pipeline, "score_texts", record("score", lambda texts, *a, **k: list(texts)))
    monkeypatch.setattr(pipeline, "run_attacks", record("audit", lambda ds, *a, **k: (ds.members(), ds.nonmembers())))
    monkeypatch.setattr(di, "run_dataset_inference", record("infer", lambda s, v, *a, **k: (list(s), list(v))))
    monkeypatch.setattr(documents, "run_document_audit",
                        record("documents", lambda m, n, *a, **k: ([d.text for d in m], [d.text for d in n])))
    monkeypatch.setattr(mlm, "run_mlm_audit", record("mlm", lambda m, n, p, *a, **k: (m, n, p)))
    got["Stop"] = Stop
    return got


def _call(seen, fn, *a, **k):
    with pytest.raises(seen["Stop"]):
        getattr(mia_core, fn)(*a, **k)


def test_a_dataframe_or_series_is_read_by_its_text_column(seen):
    df = pd.DataFrame({"id": range(len(TEXTS)), "text": TEXTS, "year": [2020] * len(TEXTS)})
    _call(seen, "score", df)
    assert seen["score"] == TEXTS  # not ["id", "text", "year"], the column names
    _call(seen, "score", pd.Series(TEXTS, name="whatever"))
    assert seen["score"] == TEXTS
    _call(seen, "score", pd.DataFrame({"body": TEXTS, "n": range(len(TEXTS))}))  # the only column of texts
    assert seen["score"] == TEXTS
    _call(seen, "score", pd.DataFrame({"a": TEXTS, "b": OTHER}), text_column="b")
    assert seen["score"] == OTHER

    _call(seen, "infer_dataset", pd.DataFrame({"text": TEXTS}), pd.DataFrame({"input": OTHER}))
    assert seen["infer"] == (TEXTS, OTHER)  # not one text each ("1 text(s)")
    _call(seen, "audit", pd.DataFrame({"text": TEXTS[:6]}), pd.Series(OTHER[:6]), attacks="loss", blind=False)
    assert seen["audit"] == (TEXTS[:6], OTHER[:6])
    labelled = pd.DataFrame({"text": TEXTS[:4] + OTHER[:4], "label": [1] * 4 + [0] * 4})
    _call(seen, "audit", labelled=labelled, attacks="loss", blind=False)
    assert seen["audit"] == (TEXTS[:4], OTHER[:4])
    _call(seen, "audit_documents", pd.DataFrame({"text": TEXTS[:4]}), pd.DataFrame({"text": OTHER[:4]}), folds=2)
    assert seen["documents"] == (TEXTS[:4], OTHER[:4])
    _call(seen, "audit_mlm", pd.DataFrame({"text": TEXTS[:4]}), pd.Series(OTHER[:4]), pd.DataFrame({"text": OTHER[4:]}),
          "bert-a", "bert-b")
    assert seen["mlm"] == (TEXTS[:4], OTHER[:4], OTHER[4:])

    plan = mia_core.plan_run("loss", texts=pd.DataFrame({"label": [1, 0, 1], "text": TEXTS[:3]}))
    assert plan.estimate.startswith("3 texts")
    assert mia_core.plan_run("loss", texts=pd.Series(TEXTS)).estimate.startswith(f"{len(TEXTS)} texts")


@pytest.mark.parametrize("frame, needle", [
    (pd.DataFrame({"text": [0, 1, 2]}), "'text' holds int values"),
    (pd.DataFrame({"text": [[1, 2], [3]]}), "'text' holds list values"),
    (pd.DataFrame({"text": [{"a": 1}, {"b": 2}]}), "'text' holds dict values"),
    (pd.DataFrame({"text": ["a real text here", 5, "another text"]}), "'text' holds int values"),
    (pd.DataFrame({"text": [1.5, 2.5]}), "'text' holds float values"),
    (pd.DataFrame({"text": ["1", "2", "3"]}), "'text' holds only numbers"),
    (pd.Series([1, 2, 3]), "holds int values"),
    (pd.DataFrame({"a": TEXTS, "b": OTHER}), "cannot tell which column holds the texts"),
    (pd.DataFrame({"text": TEXTS}).iloc[:0], "no rows"),
])
def test_a_dataframe_without_a_column_of_texts_is_refused_in_one_line(frame, needle, no_model):
    for call in (lambda: mia_core.score(frame), lambda: mia_core.plan_run("loss", texts=frame),
                 lambda: mia_core.infer_dataset(frame, OTHER)):
        with pytest.raises(DataError, match=re.escape(needle)) as e:
            call()
        assert "\n" not in str(e.value)


def test_a_text_column_named_that_is_not_there_is_refused(no_model):
    with pytest.raises(DataError, match="no text column 'body'"):
        mia_core.score(pd.DataFrame({"text": TEXTS}), text_column="body")
    with pytest.raises(DataError, match="text_column"):
        mia_core.score(pd.Series(TEXTS, name="text"), text_column="body")


# ---------------------------------------------------------------------------- the file readers
@pytest.mark.parametrize("name, content, needle", [
    ("ints.csv", "text,label\n1,1\n2,0\n3,1\n", "'text' holds only numbers"),
    ("bools.csv", "text\ntrue\nfalse\n", "'text' holds only numbers or true/false"),
    ("ints.jsonl", '{"text": 1}\n{"text": 2}\n', "'text' holds int values"),
    ("mixed.jsonl", '{"text": "a fine text"}\n{"text": 7}\n', "'text' holds int values, not texts (at line 2)"),
    ("lists.jsonl", '{"text": ["a", "b"]}\n{"text": ["c"]}\n', "'text' holds list values"),
    ("maps.jsonl", '{"text": {"a": "b"}}\n', "'text' holds dict values"),
    ("items.json", '[{"input": 1.5}, {"input": 2.5}]', "'input' holds float values"),
])
def test_a_file_whose_text_column_is_not_texts_is_refused(tmp_path, name, content, needle, no_model):
    from mia_core.data import load_dataset, read_texts

    f = tmp_path / name
    f.write_text(content)
    with pytest.raises(DataError, match=re.escape(needle)) as e:
        read_texts(f)
    assert name in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(DataError, match=re.escape(needle)):
        mia_core.score(str(f))
    with pytest.raises(DataError, match=re.escape(needle)):
        load_dataset(members=f, nonmembers=f)


def test_a_parquet_column_of_lists_or_numbers_is_refused(tmp_path, no_model):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from mia_core.data import read_texts

    pq.write_table(pa.table({"text": [[1, 2], [3]]}), tmp_path / "lists.parquet")
    pq.write_table(pa.table({"text": [1, 2]}), tmp_path / "ints.parquet")
    with pytest.raises(DataError, match="'text' holds list values"):
        read_texts(tmp_path / "lists.parquet")
    with pytest.raises(DataError, match="'text' holds int values"):
        read_texts(tmp_path / "ints.parquet")


def test_texts_that_look_like_numbers_among_texts_are_kept(tmp_path):
    from mia_core.data import read_texts

    (tmp_path / "t.jsonl").write_text("\n".join(json.dumps({"text": t}) for t in ["1999", "a fine text here"]))
    assert [r.text for r in read_texts(tmp_path / "t.jsonl")] == ["1999", "a fine text here"]


# ---------------------------------------------------------------------------- names longer than the system allows
def test_a_path_longer_than_the_system_allows_is_one_line(no_model, tmp_path):
    from mia_core.data import load_dataset, read_population

    long = str(tmp_path / ("n" * 5000))
    (tmp_path / "n.txt").write_text("\n".join(OTHER))
    for call in (lambda: load_dataset(members=long, nonmembers=tmp_path / "n.txt"),
                 lambda: read_population(long), lambda: mia_core.load(long), lambda: mia_core.score(long)):
        with pytest.raises(DataError) as e:
            call()
        assert "\n" not in str(e.value) and len(str(e.value)) < 600


def test_a_book_text_longer_than_a_file_name_is_a_text(seen):
    """audit_documents / infer_dataset(books=True) take texts or paths: a long text is a text (it used to be
    looked up as a file, which raised OSError: File name too long)."""
    books = ["word " * 2000, "other " * 2000]
    _call(seen, "audit_documents", books, ["third " * 2000, "fourth " * 2000], folds=2)
    assert seen["documents"][0] == books


def test_a_hub_spec_of_thousands_of_characters_is_one_line(tmp_path, monkeypatch, no_model):
    """hf:ID:config@split with a config or split longer than a file name, the dataset being in the local cache
    (where the long name used to reach the file system: OSError)."""
    pa = pytest.importorskip("pyarrow")
    import huggingface_hub.constants
    import pyarrow.parquet as pq

    from mia_core.data import read_texts

    cache = tmp_path / "hub"
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = cache / "datasets--owner--wiki"
    (repo / "refs" / "refs" / "convert").mkdir(parents=True)
    (repo / "refs" / "refs" / "convert" / "parquet").write_text(commit)
    (repo / "blobs").mkdir()
    pq.write_table(pa.table({"text": TEXTS}), repo / "blobs" / ("0" * 40))
    link = repo / "snapshots" / commit / "default" / "train" / "0000.parquet"
    link.parent.mkdir(parents=True)
    link.symlink_to(repo / "blobs" / ("0" * 40))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))

    assert [r.text for r in read_texts("hf:owner/wiki")] == TEXTS  # the cache is read
    for spec in ("hf:owner/wiki:" + "c" * 5000, "hf:owner/wiki@" + "s" * 5000, "hf:owner/wiki:default@" + "s" * 300,
                 "hf:" + "o" * 3000 + "/wiki"):
        with pytest.raises(DataError) as e:
            read_texts(spec)
        msg = str(e.value)
        assert "\n" not in msg and len(msg) < 600 and "hf:" in msg, msg
        with pytest.raises(DataError):
            mia_core.score(spec)


def test_each_execute_function_takes_only_its_own_request():
    """Issue 50: ``execute_run`` / ``execute_documents`` / ``execute_mlm`` / ``execute_inference`` given anything but
    the request their ``prepare_*`` returns raised AttributeError; now one line naming ``request``."""
    from mia_core.api.documents import execute_documents
    from mia_core.api.inference import execute_inference
    from mia_core.api.mlm import execute_mlm
    from mia_core.api.request import execute_modified, execute_run
    from mia_core.errors import SettingsError

    for fn, want in ((execute_run, "RunRequest"), (execute_documents, "DocumentRequest"), (execute_mlm, "MlmRequest"),
                     (execute_inference, "InferenceRequest")):
        for bad in (None, [], {"data": 1}, "request", 5):
            with pytest.raises(SettingsError) as e:
                fn(bad)
            assert e.value.options == ("request",) and want in str(e.value) and "\n" not in str(e.value), (fn, bad)
    with pytest.raises(SettingsError, match="RunRequest"):
        execute_modified([], target=None)


def test_prepare_run_takes_datasets_only():
    """Issue 50: ``prepare_run`` given None, ``[]``, a generator, bytes, a DataFrame or a list of strings as
    ``population`` raised AttributeError or TypeError; now one line naming the parameter."""
    import pandas as pd

    from mia_core.api.request import prepare_run
    from mia_core.data import texts_from_strings
    from mia_core.errors import DataError

    good = texts_from_strings(TEXTS[:4], OTHER[:4])
    for name, bad in (("data", None), ("data", []), ("data", (t for t in TEXTS)), ("data", b"texts"),
                      ("data", pd.DataFrame({"x": [1, 2]})), ("population", ["a population text"]),
                      ("train", "train.txt")):
        kw = {"data": good, name: bad}
        with pytest.raises(DataError) as e:
            prepare_run(**kw)
        assert e.value.options == (name,) and "\n" not in str(e.value), (name, bad)


def test_more_front_door_functions_answer_wrong_types_in_one_line():
    """Issue 50's list: ``api.inspect.read_text(None | bytes)``, ``text_hash(None)``, ``text_statistics`` given a
    model spec, ``api.targets.build_target({})``, ``prepare_inference(read_notes=5)`` and strings with
    ``books=True`` raised TypeError, AttributeError or KeyError; ``read_inference_sets(None, None)`` was accepted."""
    from mia_core.api import inference, inspect, targets
    from mia_core.errors import MiaError

    cases = [("upload", lambda: inspect.read_text(None)), ("upload", lambda: inspect.read_text(b"some text")),
             ("text", lambda: inspect.text_hash(None)), ("lm", lambda: inspect.text_statistics("a text", "smollm2")),
             ("sets", lambda: targets.build_target({}, "unused-folder", base="smollm2")),
             ("read_notes", lambda: inference.prepare_inference(TEXTS[:10], OTHER[:10], read_notes=5)),
             ("suspect", lambda: inference.prepare_inference(TEXTS[:5], OTHER[:5], books=True)),
             ("suspect", lambda: inference.read_inference_sets(None, None))]
    for name, call in cases:
        with pytest.raises(MiaError) as e:
            call()
        assert name in e.value.options and "\n" not in str(e.value), (name, str(e.value))


def test_document_files_of_the_wrong_type_are_named_before_anything_is_read(tmp_path):
    """``prepare_documents`` with bytes file names, (name, bytes) pairs or a dict as ``*_files`` raised TypeError;
    a wrong non-member entry was found only after the members were read."""
    from mia_core.api.documents import prepare_documents
    from mia_core.errors import DataError

    missing = str(tmp_path / "not-there.txt")
    for name, kw in (("member_files", {"member_files": [b"a.txt"], "nonmember_files": [missing]}),
                     ("member_files", {"member_files": [(b"a.txt", b"text")], "nonmember_files": [missing]}),
                     ("member_files", {"member_files": {b"a.txt": b"text"}, "nonmember_files": [missing]}),
                     ("nonmember_files", {"member_files": [missing], "nonmember_files": [5]})):
        with pytest.raises(DataError) as e:
            prepare_documents(model="smollm2", **kw)
        assert e.value.options == (name,) and "\n" not in str(e.value), (name, str(e.value))
