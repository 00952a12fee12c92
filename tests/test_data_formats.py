"""Labelled datasets the way the field ships them (issue 31 item 2): Parquet, Arrow/Feather, a Hugging Face
``save_to_disk`` folder, WikiMIA-style jsonl; bad ones refused in one line."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
from helpers import assert_one_error

from mia_core.cli import main
from mia_core.data import load_dataset
from mia_core.errors import DataError

ROWS = {"input": [f"text number {i} about the harbour" for i in range(6)], "label": [1, 0, 1, 0, 1, 0]}


def _hf_folder(root, table: pa.Table):
    """What datasets.Dataset.save_to_disk writes: an Arrow IPC *stream*, dataset_info.json and state.json."""
    root.mkdir()
    with ipc.new_stream(str(root / "data-00000-of-00001.arrow"), table.schema) as w:
        w.write_table(table)
    (root / "dataset_info.json").write_text(json.dumps({"features": {}}))
    (root / "state.json").write_text(json.dumps({"_data_files": [{"filename": "data-00000-of-00001.arrow"}],
                                                 "_split": None}))
    return root


@pytest.mark.parametrize("kind", ["parquet", "feather", "arrow_stream", "hf_folder"])
def test_arrow_family_loads_with_text_and_label_columns(tmp_path, kind):
    table = pa.table(ROWS)
    if kind == "parquet":
        path = tmp_path / "wiki.parquet"
        pq.write_table(table, path)
    elif kind == "feather":
        path = tmp_path / "wiki.feather"
        feather.write_feather(table, path)
    elif kind == "arrow_stream":
        path = tmp_path / "wiki.arrow"
        with ipc.new_stream(str(path), table.schema) as w:
            w.write_table(table)
    else:
        path = _hf_folder(tmp_path / "wiki_hf", table)
    ds = load_dataset(labelled=path, text_column="input", label_column="label")
    assert ds.n_members == 3 and ds.n_nonmembers == 3 and ds.texts[0] == ROWS["input"][0]
    ds2 = load_dataset(labelled=path)  # the text column found by itself, "label" the default
    assert sorted(ds2.texts) == sorted(ds.texts)


def test_bad_arrow_family_inputs_are_one_line(tmp_path, capsys):
    (tmp_path / "fake.parquet").write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(DataError, match="not a readable parquet file"):
        load_dataset(labelled=tmp_path / "fake.parquet")
    pq.write_table(pa.table({"input": ["a", "b"], "label": [1, 7]}), tmp_path / "bad_labels.parquet")
    with pytest.raises(DataError, match="label"):
        load_dataset(labelled=tmp_path / "bad_labels.parquet")
    d = tmp_path / "dd"
    d.mkdir()
    (d / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "test"]}))
    with pytest.raises(DataError, match="DatasetDict .*train, test.*give one split's folder"):
        load_dataset(labelled=d)
    e = tmp_path / "escape"
    e.mkdir()
    (e / "state.json").write_text(json.dumps({"_data_files": [{"filename": "../fake.parquet"}]}))
    with pytest.raises(DataError, match="missing or foreign"):
        load_dataset(labelled=e)
    rc = main(["shift", "--labelled", str(tmp_path / "fake.parquet"), "--quiet"])
    assert_one_error(rc, capsys.readouterr().err, "not a readable parquet file")


def test_wikimia_style_jsonl_loads_with_one_flag(tmp_path):
    """WikiMIA ships jsonl rows {"input": ..., "label": 0/1}: --labelled alone reads it."""
    (tmp_path / "wikimia.jsonl").write_text("\n".join(json.dumps({"input": t, "label": y})
                                                      for t, y in zip(ROWS["input"], ROWS["label"])) + "\n")
    ds = load_dataset(labelled=tmp_path / "wikimia.jsonl")
    assert ds.n_members == 3 and ds.n_nonmembers == 3


def test_an_uploaded_parquet_file_reads_like_a_path(tmp_path):
    """The pages' upload widgets hand over file-like objects (name + getvalue)."""
    import io

    pq.write_table(pa.table(ROWS), tmp_path / "up.parquet")

    class Upload(io.BytesIO):
        name = "up.parquet"

    ds = load_dataset(labelled=Upload((tmp_path / "up.parquet").read_bytes()))
    assert ds.n_members == 3 and ds.n_nonmembers == 3


def test_the_api_audits_a_labelled_parquet_file(tmp_path):
    import mia_core
    from helpers import save_tiny_llama

    rows = {"input": [f"The {w} walked to the harbour on day {i} and counted the boats." for i, w in
                      enumerate(["miller", "baker", "clerk", "sailor", "widow", "farmer"])], "label": [1, 0] * 3}
    pq.write_table(pa.table(rows), tmp_path / "set.parquet")
    res = mia_core.audit(labelled=tmp_path / "set.parquet", model=save_tiny_llama(tmp_path / "tiny"),
                         attacks="loss", n_bootstrap=0, blind=False, device="cpu")
    assert len(res.scores) == 6 and res.scores["label"].sum() == 3
    with pytest.raises(DataError, match="not both"):
        mia_core.audit(["a"], ["b"], labelled=tmp_path / "set.parquet")


# ---------------------------------------------------------------------------- hf:ID[:config][@split]
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _hub_cache(cache, files: dict, repo: str = "owner/wiki"):
    """The Hugging Face cache as snapshot_download leaves a dataset's parquet conversion: the revision
    refs/convert/parquet -> a commit, the files in blobs/ and linked from snapshots/<commit>/."""
    repo_dir = cache / f"datasets--{repo.replace('/', '--')}"
    ref = repo_dir / "refs" / "refs" / "convert" / "parquet"
    ref.parent.mkdir(parents=True)
    ref.write_text(COMMIT)  # no newline: huggingface_hub reads the hash as it is
    for i, (rel, table) in enumerate(files.items()):
        blob = repo_dir / "blobs" / f"{i:040x}"
        blob.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, blob)
        link = repo_dir / "snapshots" / COMMIT / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(blob)
    return cache


@pytest.fixture
def offline_hub(tmp_path, monkeypatch):
    """An empty Hugging Face cache in tmp_path/hub, HF_HUB_OFFLINE=1."""
    import huggingface_hub.constants

    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))  # read when huggingface_hub loads
    return cache


@pytest.mark.parametrize("spec, want", [
    ("hf:swj0419/WikiMIA:default@WikiMIA_length32", ("swj0419/WikiMIA", "default", "WikiMIA_length32")),
    ("hf:swj0419/WikiMIA", ("swj0419/WikiMIA", "default", "train")),
    ("hf:imdb@test", ("imdb", "default", "test")),
    ("hf:owner/set.v2:plain_text", ("owner/set.v2", "plain_text", "train")),
    ("hf:owner/set:en-US@validation", ("owner/set", "en-US", "validation")),
])
def test_hub_specs_parse_with_their_defaults(spec, want):
    from mia_core.data import parse_hub_spec

    got = parse_hub_spec(spec)
    assert (got.repo_id, got.config, got.split) == want
    assert str(got) == f"hf:{want[0]}:{want[1]}@{want[2]}"


@pytest.mark.parametrize("spec", ["hf:", "hf:a/b/c", "hf:a/b:", "hf:a/b@", "hf:a/b:c:d", "hf:a b", "hf:a/b:c@d@e",
                                  "hf:a--b/c", "hf:../x", "hf:a/b:c/d"])
def test_malformed_hub_specs_say_the_expected_form(spec, capsys):
    from mia_core.data import parse_hub_spec

    with pytest.raises(DataError, match=r"expected hf:ID\[:config\]\[@split\]") as e:
        parse_hub_spec(spec)
    assert "\n" not in str(e.value)
    rc = main(["shift", "--labelled", spec, "--quiet"])
    assert_one_error(rc, capsys.readouterr().err, "expected hf:ID[:config][@split]")


def test_a_hub_set_loads_from_the_local_cache_offline(offline_hub):
    """hf:OWNER/NAME -> default@train: its parquet files in file-name order, one table, as the CLI reads it."""
    _hub_cache(offline_hub, {"default/train/0001.parquet": pa.table({k: v[4:] for k, v in ROWS.items()}),
                             "default/train/0000.parquet": pa.table({k: v[:4] for k, v in ROWS.items()}),
                             "default/test/0000.parquet": pa.table({"input": ["x", "y"], "label": [1, 0]})})
    ds = load_dataset(labelled="hf:owner/wiki")
    assert ds.texts == ROWS["input"] and ds.labels.tolist() == ROWS["label"]
    assert ds.sources[0] == "hf:owner/wiki:default@train/0000.parquet:row 1"
    assert any("hf:owner/wiki:default@train: read 6 texts from column 'input'" in n for n in ds.report)
    same = load_dataset(labelled="hf:owner/wiki:default@train", text_column="input", label_column="label")
    assert same.texts == ds.texts
    from mia_core.data import read_texts

    assert [r.text for r in read_texts("hf:owner/wiki@test")] == ["x", "y"]
    with pytest.raises(DataError, match="hf:owner/wiki:default@train has no label column 'member'"):
        load_dataset(labelled="hf:owner/wiki", label_column="member")
    with pytest.raises(DataError, match=r"no parquet files for config 'default', split 'validation' .*"
                                        r"it holds default@test, default@train.*save_to_disk"):
        load_dataset(labelled="hf:owner/wiki@validation")


def test_older_parquet_conversions_are_read_too(offline_hub):
    _hub_cache(offline_hub, {"plain/wiki-train.parquet": pa.table(ROWS),
                             "plain/test-00000-of-00001.parquet": pa.table({"text": ["only one"]})})
    assert load_dataset(labelled="hf:owner/wiki:plain").n_members == 3
    from mia_core.data import read_population

    assert [r.text for r in read_population("hf:owner/wiki:plain@test")] == ["only one"]


def test_a_file_named_like_a_spec_is_read_as_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hf:local.jsonl").write_text("\n".join(json.dumps({"input": t, "label": y})
                                                       for t, y in zip(ROWS["input"], ROWS["label"])) + "\n")
    assert load_dataset(labelled="hf:local.jsonl").n_members == 3


@pytest.mark.slow
def test_a_hub_set_missing_offline_is_one_cli_line_before_any_model(tmp_path):
    from helpers import run_mia

    r = run_mia("run", "--labelled", "hf:swj0419/WikiMIA:default@WikiMIA_length32", "--out", tmp_path / "out",
                "--quiet", env_extra={"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "empty_cache")})
    line = assert_one_error(r.returncode, r.stderr, "hf:swj0419/WikiMIA:default@WikiMIA_length32 is not in the "
                                                    "local Hugging Face cache")
    assert "run once online" in line and "save_to_disk" in line and ".parquet" in line
    assert not (tmp_path / "out").exists()


def _http_error(cls):
    from types import SimpleNamespace

    return cls("404 Client Error\nsecond line", response=SimpleNamespace(headers={}, request=None))


@pytest.mark.parametrize("error, offline, needle", [
    ("GatedRepoError", "0", "is gated"),
    ("RepositoryNotFoundError", "0", "no dataset 'owner/wiki' on the hub"),
    ("RevisionNotFoundError", "0", "no parquet conversion"),
    ("LocalEntryNotFoundError", "0", "not in the local Hugging Face cache and the hub could not be reached"),
    ("LocalEntryNotFoundError", "1", "not in the local Hugging Face cache and the hub is offline"),
    ("RuntimeError", "0", "could not fetch it from the hub: boom"),
])
def test_hub_errors_are_one_line_naming_the_spec(monkeypatch, error, offline, needle):
    import huggingface_hub
    from huggingface_hub import errors as hub_errors

    exc = (RuntimeError("boom\nmore") if error == "RuntimeError" else hub_errors.LocalEntryNotFoundError("x\ny")
           if error == "LocalEntryNotFoundError" else _http_error(getattr(hub_errors, error)))
    seen = {}

    def fake(**kw):
        seen.update(kw)
        raise exc

    monkeypatch.setenv("HF_HUB_OFFLINE", offline)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    with pytest.raises(DataError, match=needle) as e:
        load_dataset(labelled="hf:owner/wiki")
    assert str(e.value).startswith("hf:owner/wiki:default@train") and "\n" not in str(e.value)
    assert seen["revision"] == "refs/convert/parquet" and seen["repo_type"] == "dataset"
    assert seen["local_files_only"] is (offline == "1") and "default/train/*.parquet" in seen["allow_patterns"]
