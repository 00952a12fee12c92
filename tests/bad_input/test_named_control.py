"""Issue 67, item 4: dataset inference's ``--control`` names a model as ``--model`` does (a folder, a make-target
folder, a ``.gguf`` file, a hub id, ``smollm2``), with the same checks before any model loads: what it names
exists, it is not the target itself (by path before loading, by weights after), and it is not a second reference
model beside ``--reference`` (the run has one reference pass, the control's). A named control that shares the
target's tokenizer gives every calibrated feature and WBC; the result and the report name it.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import assert_one_error, mia, save_tiny_llama
from mia_core.errors import ModelError, SettingsError

ROOT = Path(__file__).resolve().parents[2]

OLD = [f"The carriage drew up before the inn at dusk on the {i}th evening, and the coachman called for ale."
       for i in range(12)]
OLDER = [f"The miller's daughter walked to the chapel on the {i}th morning, and the bells rang over the fields."
         for i in range(12)]


def _halves():
    """Two sets from one source (24 paragraphs of ``tests/data/paragraphs.jsonl``, a seeded split), which the IID
    guard lets through, so that a run reaches its models."""
    import numpy as np

    from tiny_lm import paragraphs

    texts = paragraphs()
    order = np.random.default_rng(3).permutation(len(texts))[:24]
    return [texts[i] for i in order[:12]], [texts[i] for i in order[12:]]


@pytest.fixture(scope="module")
def other_llama(tmp_path_factory) -> str:
    """A second random tiny Llama (another seed: other weights, the same tokenizer as ``tiny_llama``)."""
    return save_tiny_llama(tmp_path_factory.mktemp("other_llama"), seed=1)


@pytest.mark.parametrize("bad", ["", "  ", " auto", "smollm2\n"])
def test_a_control_that_is_no_model_name_is_one_line(bad, no_model):
    from mia_core.api.inference import prepare_inference

    with pytest.raises(SettingsError, match="control.*auto, none, or a model"):
        prepare_inference(OLD, OLDER, control=bad)


def test_a_named_control_that_does_not_exist_is_refused_before_any_model(tmp_path, no_model):
    from mia_core.api.inference import prepare_inference

    with pytest.raises(ModelError, match=r"^control: .*no-such-model: no such file or folder"):
        prepare_inference(OLD, OLDER, control=str(tmp_path / "no-such-model"))


def test_the_target_named_as_its_own_control_is_refused_before_any_model(tiny_llama, no_model):
    from mia_core.api.inference import prepare_inference

    with pytest.raises(SettingsError, match="is the target itself"):
        prepare_inference(OLD, OLDER, model=tiny_llama, control=tiny_llama)
    with pytest.raises(SettingsError, match="is the target itself"):  # the embedded model by its two names
        prepare_inference(OLD, OLDER, model=None, control="smollm2")


def test_a_named_control_beside_another_reference_is_refused(tiny_llama, other_llama, no_model):
    from mia_core.api.inference import prepare_inference

    with pytest.raises(SettingsError, match="two models.*give one of them"):
        prepare_inference(OLD, OLDER, model=tiny_llama, reference="smollm2", control=other_llama)
    # the same model as reference and control is one model: accepted
    request = prepare_inference(OLD, OLDER, model=tiny_llama, reference=other_llama, control=other_llama,
                                n_permutations=99)
    assert request.settings["control"] == other_llama


def test_the_cli_says_it_in_one_line(work, tiny_llama, no_model):
    p = mia("infer-dataset", "--suspect", str(work / "m.txt"), "--validation", str(work / "n.txt"),
            "--model", tiny_llama, "--control", tiny_llama, "--quiet")
    line = assert_one_error(p.returncode, p.stderr, "is the target itself")
    assert "--control" in line


def test_the_control_words_name_it():
    from mia_core.api.inference import control_words

    assert control_words("some/target", None, "some/control") == "the named model (some/control)"


def test_a_copy_of_the_target_under_another_name_is_refused_once_loaded(tmp_path, tiny_llama):
    """Another folder, the same weights: refused when the two are loaded, before any pass."""
    from mia_core.api.inference import execute_inference, prepare_inference

    copy = shutil.copytree(tiny_llama, tmp_path / "copy")
    request = prepare_inference(*_halves(), model=tiny_llama, control=str(copy), n_permutations=99, cache=False,
                                device="cpu")
    with pytest.raises(SettingsError, match="is the target itself .the same weights."):
        execute_inference(request)


def test_a_named_control_is_the_one_the_run_reads(tiny_llama, other_llama):
    """A real run: the target (one tiny Llama) read against the named control (another): the summary and the
    report name the control, its own check ran, and WBC is among the features (the two share a tokenizer)."""
    from mia_core.api.inference import infer_dataset

    res = infer_dataset(*_halves(), model=tiny_llama, control=other_llama, n_permutations=99, folds=2,
                        features="loss,zlib", device="cpu", cache=False)
    s = res.summary
    assert s["verdict"] in ("used", "not_shown"), (s["verdict"], res.report)  # the IID guard let it through
    assert s["control_model"] and s["control_model"] != s.get("model"), s
    assert s.get("control_p_value") is not None and 0 < s["control_p_value"] <= 1
    assert "wbc" in s["features"], s["features"]
    assert any("negative control: the named model" in n for n in res.report), res.report


def test_the_page_names_the_control_and_says_what_is_wrong_before_run(tmp_path, no_model):
    """The page's "a model I name": the model line names it, the target itself or a missing folder is the line
    beside a disabled Run, and nothing loads."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.switch_page("pages/7_Dataset_inference.py")
    at.run()
    suspect, validation = _halves()
    at.radio(key="di_source").set_value("paste").run()
    at.text_area(key="di_suspect_text").set_value("\n".join(suspect))
    at.text_area(key="di_validation_text").set_value("\n".join(validation))
    at.selectbox(key="di_control").set_value("named").run()
    assert not at.exception, [e.value for e in at.exception]

    def said() -> tuple[str, str]:
        line = next(m.value for m in at.markdown if m.value.startswith("**Model tested:**"))
        block = next((c.value for c in at.caption if "Run is not available yet" in c.value), "")
        return line, block

    assert "auto, none, or a model" in said()[1]  # nothing typed yet
    at.text_input(key="di_control_model").set_value("smollm2").run()
    assert "is the target itself" in said()[1], said()
    at.text_input(key="di_control_model").set_value(str(tmp_path / "gone")).run()
    assert "no such file or folder" in said()[1], said()
    folder = save_tiny_llama(tmp_path / "control")
    at.text_input(key="di_control_model").set_value(folder).run()
    line, block = said()
    assert not block and f"the named model ({folder})" in line, (line, block)
    assert not at.button(key="go_di").disabled
