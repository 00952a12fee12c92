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
