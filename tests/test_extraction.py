"""The verbatim extraction audit (``mia_core.extraction``; Carlini et al. 2023, Definition 3.1), the command made
from its declaration (``mia extraction``, ``mia_core.cli.audit_command``) and the page made from it
(``pages/8_Verbatim_extraction.py``, ``dashboard.audit_page``).

The model is a tiny Llama trained for the session (``conftest.memorised_llama``), 60 epochs, on 24 known paragraphs (greedy decoding reproduces them) and
never on 24 others, so membership and extractability are ground truth. The matched length the audit reads off the
one statistics pass is compared, text by text and for several prompt lengths, with ``transformers``' own greedy
``generate`` (the reference implementation of greedy decoding).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from mia_core.extraction.audit import matched_length


@pytest.fixture(scope="module")
def memorised(memorised_llama, tmp_path_factory):
    """``(model folder, members, non-members)``: the session's tiny Llama trained 60 epochs on the members
    (``conftest.memorised_llama``), with a statistics cache of this module's own."""
    mp = pytest.MonkeyPatch()
    mp.setenv("MIA_CACHE_DIR", str(tmp_path_factory.mktemp("extraction") / "cache"))
    yield memorised_llama["folder"], memorised_llama["members"], memorised_llama["nonmembers"]
    mp.undo()


def test_the_matched_length_is_the_run_of_right_tokens_before_the_first_wrong_one():
    ids = np.array([5, 6, 7, 8, 9, 10])
    assert matched_length(ids, np.array([0, 0, 7, 8, 9, 10]), 2, 4) == 4
    assert matched_length(ids, np.array([0, 0, 7, 1, 9, 10]), 2, 4) == 1  # later right tokens do not count
    assert matched_length(ids, np.array([0, 0, 1, 8, 9, 10]), 2, 4) == 0
    assert matched_length(ids, np.array([0, 0, 7, 8, 9, 1]), 2, 3) == 3  # the suffix ends before the wrong one


def test_each_bad_type_at_the_front_door_is_one_line_naming_it_before_any_model_loads(monkeypatch):
    from helpers import stop_model_loads

    from mia_core.audits import prepare
    from mia_core.errors import MiaError

    stop_model_loads(monkeypatch)
    texts = ["a text long enough"] * 3
    for bad, name in ((dict(members=5), "members"), (dict(nonmembers=[1, 2]), "nonmembers"), (dict(model=5), "model"),
                      (dict(dtype="fp64"), "dtype"), (dict(quantize="int3"), "quantize"),
                      (dict(prefix_tokens="8"), "prefix_tokens"), (dict(prefx_tokens=8), "prefx_tokens"),
                      (dict(device=3), "device"), (dict(cache="no"), "cache"), (dict(members=texts[:1]), "members")):
        with pytest.raises(MiaError) as e:
            prepare("extraction", **{"members": texts, "nonmembers": texts, **bad})
        assert "\n" not in str(e.value) and name in str(e.value), (bad, str(e.value))


def _greedy_matches(model_dir: str, texts: list[str], k: int, m: int) -> list[int]:
    """The reference: ``generate`` (greedy) from the text's first k tokens, after the token the statistics pass
    puts in front of a text; the leading tokens of its m new ones that are the text's."""
    import torch
    from transformers import AutoModelForCausalLM

    from mia_core.models import load_causal_lm
    from mia_core.stats import StatsSettings
    from mia_core.stats.settings import resolve_prefix, tokenize

    lm = load_causal_lm(model_dir)
    prefix = resolve_prefix(lm, StatsSettings())
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    out = []
    for t in texts:
        ids = [int(i) for i in tokenize(lm, t)]
        prompt = ([prefix] if prefix is not None else []) + ids[:k]
        with torch.no_grad():
            x = torch.tensor([prompt])  # the whole prompt attended to (its first token is the pad id too)
            gen = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=m, do_sample=False, num_beams=1,
                                 pad_token_id=0, eos_token_id=None)[0, len(prompt):].tolist()
        j = 0
        while j < min(m, len(gen)) and gen[j] == ids[k + j]:
            j += 1
        out.append(j)
    return out


@pytest.mark.slow
def test_the_matched_length_equals_greedy_generation_text_by_text(memorised):
    from mia_core.audits import execute, prepare

    model, members, nonmembers = memorised
    seen = set()
    for k, m in ((2, 6), (8, 8)):
        res = execute(prepare("extraction", members=members, nonmembers=nonmembers, model=model, prefix_tokens=k,
                              suffix_tokens=m, n_bootstrap=0))
        ours = res.scores["matched"].astype(int).tolist()
        assert ours == _greedy_matches(model, members + nonmembers, k, m), (k, m)
        seen |= set(ours)
    assert {0, 8} <= seen and seen - {0, 6, 8}, seen  # not vacuous: none, whole and partial matches all occur


def test_only_the_first_k_plus_m_tokens_are_read(memorised):
    """Issue 67: two members of 200,000 words more score as the same members cut by hand (the first 40 words), text
    by text; only k + m tokens of each are read (the run took hours before, tokenizing and scoring every word)."""
    from mia_core.audits import execute, prepare

    model, members, nonmembers = memorised
    by_hand = [" ".join(t.split()[:40]) for t in members[:6]]
    tail = " and the river ran on" * 40_000  # 200,000 words
    long = [t + tail for t in members[:2]] + members[2:6]
    runs = [execute(prepare("extraction", members=mem, nonmembers=nonmembers[:6], model=model, prefix_tokens=4,
                            suffix_tokens=4, n_bootstrap=0)) for mem in (by_hand, long)]
    a, b = (r.scores for r in runs)
    assert a["matched"].tolist() == b["matched"].tolist() and (a["n_tokens"] == 8).all() and (b["n_tokens"] == 8).all()
    np.testing.assert_allclose(a["suffix_loglik"], b["suffix_loglik"], rtol=1e-5, atol=1e-6)
    assert "first 8 tokens are read" in runs[1].summary_text()


@pytest.mark.slow
def test_known_members_are_extractable_and_never_trained_texts_are_not(memorised):
    from mia_core.audits import execute, prepare

    model, members, nonmembers = memorised
    res = execute(prepare("extraction", members=members, nonmembers=nonmembers, model=model, prefix_tokens=8,
                          suffix_tokens=8, n_bootstrap=200))
    r = res.rates
    assert r["members"]["rate"] >= 0.9 and r["nonmembers"]["extractable"] == 0, r
    lo, hi = r["members"]["ci"]
    assert lo < r["members"]["rate"] <= hi <= 1.0  # the Wilson interval holds its rate
    assert res.metrics["suffix_loglik"]["auc"] >= 0.95 and res.metrics["matched"]["auc"] >= 0.9
    text = res.summary_text()
    assert "only the members' excess over it is evidence of training" in text
    assert "95 % Wilson interval" in text and "greedy match length" in text


def _files(tmp_path: Path, members, nonmembers) -> tuple[Path, Path]:
    m, n = tmp_path / "members.txt", tmp_path / "nonmembers.txt"
    m.write_text("\n".join(t.replace("\n", " ") for t in members), encoding="utf-8")
    n.write_text("\n".join(t.replace("\n", " ") for t in nonmembers), encoding="utf-8")
    return m, n


@pytest.mark.slow
def test_the_command_made_from_the_declaration_runs_writes_and_keeps_the_run(memorised, tmp_path, monkeypatch):
    from helpers import mia

    from mia_core.audits.saved import list_runs

    model, members, nonmembers = memorised
    m, n = _files(tmp_path, members, nonmembers)
    monkeypatch.setenv("MIA_RUNS_DIR", str(tmp_path / "runs"))
    help_ = mia("extraction", "--help")
    assert help_.returncode == 0
    for flag in ("--members", "--nonmembers", "--model", "--prefix-tokens", "--suffix-tokens", "--n-bootstrap",
                 "--no-cache", "--out", "--save"):
        assert flag in help_.stdout, flag  # a flag per set, per option, and the model's and output's
    out = tmp_path / "out"
    p = mia("extraction", "--members", m, "--nonmembers", n, "--model", model, "--prefix-tokens", 8,
            "--suffix-tokens", 8, "--n-bootstrap", 50, "--out", out, "--save", "--quiet")
    assert p.returncode == 0, p.stderr
    assert "members         " in p.stdout and "extractable" in p.stdout and "saved in the run store as" in p.stdout
    saved = json.loads((out / "extraction.json").read_text())
    assert saved["settings"]["prefix_tokens"] == 8 and saved["rates"]["members"]["scored"] == 24
    listed = list_runs("extraction")
    assert len(listed) == 1 and "k = 8, m = 8" in listed[0]["data"], listed


@pytest.mark.slow
def test_bad_input_is_one_line_and_nothing_is_written(memorised, tmp_path):
    from helpers import mia

    model, members, nonmembers = memorised
    m, n = _files(tmp_path, members, nonmembers)
    out = tmp_path / "out"
    for args, words in ((("--prefix-tokens", 0), "--prefix-tokens must be"),
                        (("--prefix-tokens", 300), "longer than the model's window"),
                        (("--prefix-tokens", 200, "--suffix-tokens", 50), "have k + m = 250 tokens or more"),
                        (("--model", tmp_path / "nope"), "no such file or folder")):
        p = mia("extraction", "--members", m, "--nonmembers", n, "--model", model, *args, "--out", out, "--quiet")
        err = [line for line in p.stderr.splitlines() if line.startswith("error:")]
        assert p.returncode == 2 and len(err) == 1 and words in err[0], (args, p.stderr)
        assert "Traceback" not in p.stderr and not out.exists(), args
    p = mia("extraction", "--members", m, "--model", model)
    assert p.returncode == 2 and "--nonmembers" in p.stderr  # a set missing: argparse's one line


# ------------------------------------------------------------------------------- the page made from the declaration
@pytest.mark.slow
def test_the_page_made_from_the_declaration_runs_saves_and_reopens(memorised, tmp_path, monkeypatch):
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    from mia_core.extraction.options import ExtractionOptions

    model, members, nonmembers = memorised
    monkeypatch.setenv("MIA_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    root = Path(__file__).resolve().parent.parent
    at = AppTest.from_file(str(root / "app.py"), default_timeout=180)
    at.session_state["mp_target"] = "custom"
    at.session_state["mp_target_custom"] = model
    at.switch_page("pages/8_Verbatim_extraction.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Verbatim extraction"
    k = at.number_input(key="extraction_opt_prefix_tokens")  # limits from the option's domain
    assert (k.min, k.max, k.value) == (1, 4096, ExtractionOptions.default("prefix_tokens"))
    at.radio(key="extraction_source").set_value("paste").run()
    at.button(key="go_extraction").click().run()  # nothing pasted: one red line, nothing starts
    assert [e.value for e in at.error] and "paste one text per line" in at.error[0].value
    at.text_area(key="extraction_members_text").set_value("\n".join(t.replace("\n", " ") for t in members))
    at.text_area(key="extraction_nonmembers_text").set_value("\n".join(t.replace("\n", " ") for t in nonmembers))
    at.number_input(key="extraction_opt_prefix_tokens").set_value(8)
    at.number_input(key="extraction_opt_suffix_tokens").set_value(8)
    at.number_input(key="extraction_opt_n_bootstrap").set_value(50).run()
    assert any(md.value.startswith("Model tested: ") and model.split("/")[-1] in md.value for md in at.markdown)
    at.button(key="go_extraction").click().run()
    t0 = time.time()
    while not any(m.label == "extractable share, members" for m in at.metric) and time.time() - t0 < 180:
        time.sleep(0.5)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    share = next(m.value for m in at.metric if m.label == "extractable share, members")
    assert float(share) >= 0.9 and next(m.value for m in at.metric if m.label == "extractable share, non-members") == "0.000"
    assert any(c.value.startswith("Saved in Runs as “") for c in at.caption), [c.value for c in at.caption]
    at.number_input(key="extraction_opt_suffix_tokens").set_value(6).run()  # the inputs change: the result is labelled
    assert any("The inputs have changed" in i.value and "the settings" in i.value for i in at.info)
    at.switch_page("pages/5_Runs.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Verbatim extraction" in [h.value for h in at.subheader]
    at.button(key="runs_extraction_show").click().run()
    assert at.title[0].value == "Verbatim extraction"
    assert any(i.value.startswith("Reopened from Runs: saved run “") for i in at.info)
