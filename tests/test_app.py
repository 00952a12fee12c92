"""The Streamlit dashboard under ``streamlit.testing.v1.AppTest`` (no browser), plus the plain
modules behind it: the run store (``mia_core.runs``), the report and number formatting
(``mia_core.reports.report``), the figure builders (``mia_core.reports.plots``) and the per-token view
(``dashboard.tokens``).

The pages run on a tiny 2-layer Llama with the SmolLM2 tokenizer that the tests build in a
temporary folder (random weights: scores are meaningless but real, and it loads in a second);
the user types its path into the sidebar's model box, as for any local model. Runs go to a
temporary ``MIA_RUNS_DIR``.
"""
from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from helpers import save_tiny_llama  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
DATA = ROOT / "tests" / "data"
TIMEOUT = 180


def _paragraphs(source: str, n: int) -> list[str]:
    rows = [json.loads(line) for line in (DATA / "paragraphs.jsonl").read_text(encoding="utf-8").splitlines()]
    return [r["text"] for r in rows if r["source"] == source][:n]


@pytest.fixture(scope="module", autouse=True)
def runs_dir(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    d = tmp_path_factory.mktemp("runs")
    mp.setenv("MIA_RUNS_DIR", str(d))
    mp.setenv("HF_HUB_OFFLINE", "1")
    yield d
    mp.undo()


def _app(page: str | None, model: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if model is not None:
        at.session_state["mp_target"] = "custom"
        at.session_state["mp_target_custom"] = model
    if page:
        at.switch_page(page)
    return at.run()


def _no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _num(s: str) -> float:
    return float(str(s).replace(",", "").replace("%", "").split()[0])


# ------------------------------------------------------------------ pages


def test_home_lists_pages_and_model_panel():
    at = _app(None)
    _no_exception(at)
    assert "Membership-inference" in at.title[0].value
    assert any("0.5" in m.value and "chance" in m.value for m in at.markdown)
    assert at.sidebar.selectbox(key="_mp_target").value == "smollm2"
    assert at.sidebar.checkbox(key="_mp_trust").value is False  # trust_remote_code off by default
    links = [e for e in at.get("page_link")]
    assert len(links) >= 3


def test_sidebar_bad_model_shows_reason_not_traceback(tmp_path):
    at = _app("pages/1_Inspect_a_text.py", model=str(tmp_path / "no_such_model"))
    _no_exception(at)
    errs = " ".join(e.value for e in at.sidebar.error)
    assert "no such file" in errs
    at.button(key="go_inspect").click().run()
    _no_exception(at)
    assert any("no target model loaded" in e.value for e in at.error)


@pytest.mark.slow
def test_inspect_page_scores_a_text(tiny_llama):
    at = _app("pages/1_Inspect_a_text.py", model=tiny_llama)
    _no_exception(at)
    assert "tiny_llama" in " ".join(c.value for c in at.sidebar.caption)
    line = next(m.value for m in at.markdown if m.value.startswith("**Model tested:**"))  # issue 53 item 4
    assert f"{tiny_llama} (the sidebar's model)" in line, line
    text = "The <b>quick</b> brown fox & the lazy dog — café naïve. " + _paragraphs("pg35_wells_time_machine.txt", 1)[0]
    at.text_area(key="inspect_text").set_value("   ")
    at.button(key="go_inspect").click().run()
    assert any("empty" in e.value for e in at.error)

    at.text_area(key="inspect_text").set_value(text).run()
    est = next(c.value for c in at.caption if c.value.startswith("Estimate: about "))  # issue 53 item 1
    assert "through the target" in est, est
    at.button(key="go_inspect").click().run()
    _no_exception(at)
    assert not at.error
    metrics = {m.label: m.value for m in at.metric}
    n_tokens = int(_num(metrics["Tokens"]))
    assert f"one pass of the text's {n_tokens + 1:,} tokens" in est or f"one pass of the text's {n_tokens:,} tokens" \
        in est, (est, n_tokens)
    assert n_tokens > 30 and _num(metrics["Loss (mean NLL)"]) > 0
    body = next(h.proto.body for h in at.get("html") if "mia-tok" in h.proto.body)
    assert body.count('class="mia-tok"') == n_tokens
    assert "&lt;" in body and "<b>" not in body and "</b>" not in body  # token text is escaped
    assert "top prediction" in body and "rank" in body and "rarity" in body
    table = at.table[0].value
    assert {"LOSS", "zlib ratio", "Lowercase ratio", "Min-K%", "Min-K%++"} <= set(table.index)
    assert all(math.isfinite(_num(v)) for v in table["Score"])

    for norm in ("ratio", "max"):  # normalised views recolour without recomputing
        at.radio(key="inspect_norm").set_value(norm).run()
        _no_exception(at)
        b2 = next(h.proto.body for h in at.get("html") if "mia-tok" in h.proto.body)
        assert b2.count('class="mia-tok"') == n_tokens and ("RatioNorm" if norm == "ratio" else "MaxNorm") in b2


@pytest.mark.slow
def test_inspect_long_text_uses_window_chart(tiny_llama):
    book = (DATA / "books" / "pg11_carroll_alice_in_wonderland.txt").read_text(encoding="utf-8")
    at = _app("pages/1_Inspect_a_text.py", model=tiny_llama)
    at.checkbox(key="inspect_lower").uncheck()
    at.text_area(key="inspect_text").set_value(book[:7500])
    at.button(key="go_inspect").click().run()
    _no_exception(at)
    assert int(_num(next(m.value for m in at.metric if m.label == "Tokens"))) > 1500
    assert len(at.get("plotly_chart")) >= 1  # the per-window strip instead of thousands of spans
    body = next(h.proto.body for h in at.get("html") if "mia-tok" in h.proto.body)
    assert body.count('class="mia-tok"') == 1000  # one segment of spans


def _wait_for_results(at: AppTest, timeout: float = TIMEOUT) -> AppTest:
    t0 = time.time()
    while time.time() - t0 < timeout:
        at.run()
        _no_exception(at)
        if at.table and "AUC [95% CI]" in at.table[0].value.columns and not any(
                "running for" in m.value for m in at.markdown):
            return at
        time.sleep(0.5)
    raise AssertionError("the calibration run did not finish")


@pytest.mark.slow
def test_calibration_page_validates_runs_and_saves(tiny_llama, runs_dir):
    from mia_core import runs

    before = len(runs.list_runs())
    at = _app("pages/2_Calibration_run.py", model=tiny_llama)
    _no_exception(at)
    demo_default = at.radio(key="cal_source").value == "demo"
    if demo_default:  # issue 53 item 4: named before Run: the demo's models, not the sidebar's
        line = next(m.value for m in at.markdown if m.value.startswith("**Model tested:**"))
        assert "the demo target" in line and "not the sidebar's model" in line, line
    at.radio(key="cal_source").set_value("paste").run()
    line = next(m.value for m in at.markdown if m.value.startswith("**Model tested:**"))
    assert f"{tiny_llama} (the sidebar's model)" in line and "**Reference:** none" in line, line
    if demo_default:  # the demo brings its own reference model; pasted texts have none here
        assert "ref" not in at.multiselect(key="cal_attacks").value
        assert "wbc" not in at.multiselect(key="cal_attacks").value
    at.button(key="go_cal").click().run()
    assert any("no member texts pasted" in e.value for e in at.error)
    src = _paragraphs("pg43_stevenson_jekyll_and_hyde.txt", 12)
    at.text_area(key="cal_members_text").set_value("\n".join(src[0::2]))
    at.text_area(key="cal_nonmembers_text").set_value("\n".join(src[0::2][:2]))  # same texts in both sets
    at.button(key="go_cal").click().run()
    assert any("both" in e.value for e in at.error)
    at.text_area(key="cal_nonmembers_text").set_value("\n".join(src[1::2]))
    at.multiselect(key="cal_attacks").set_value(["loss", "zlib", "min_k", "ref"])
    at.button(key="go_cal").click().run()
    assert any("reference model" in e.value for e in at.error)  # ref attack without a reference
    at.multiselect(key="cal_attacks").set_value(["loss", "zlib", "lowercase", "min_k", "min_k_pp"])
    at.number_input(key="cal_boot").set_value(200).run()
    est = " ".join(c.value for c in at.caption if c.value.startswith("Estimate:"))
    assert "12 texts × 2 passes (target, target lower-cased)" in est, est  # said before Run is pressed
    at.button(key="go_cal").click().run()
    _no_exception(at)
    assert not at.error, [e.value for e in at.error]
    at = _wait_for_results(at)

    table = at.table[0].value
    assert {"LOSS", "Min-K%", "Blind baseline (no model)"} <= set(table.index)
    for v in table["AUC [95% CI]"]:
        auc, lo, hi = (float(x) for x in re.findall(r"\d\.\d{3}", v))
        assert 0 <= lo <= auc <= hi <= 1
    # 6 non-members: no TPR at 1 % or 10 % FPR can be measured, and the table says so, with the reason in view
    assert all(v == "n/e" for v in table["TPR@1% FPR"]) and all(v == "n/e" for v in table["TPR@10% FPR"])
    assert any("Read these numbers with" in m.value and "not estimable with 6 non-members" in m.value
               for m in at.markdown)
    charts = at.get("plotly_chart")
    assert len(charts) >= 2  # ROC + histograms
    assert any("ROC" in c.proto.spec for c in charts)
    assert len(at.get("download_button")) == 3
    saved = runs.list_runs()
    assert len(saved) == before + 1 and saved[0]["n_members"] == 6 and saved[0]["n_nonmembers"] == 6

    at.radio(key="cal_roc_scale").set_value("Linear").run()
    _no_exception(at)
    # issue 53 item 3: other data, and the result is labelled as the previous inputs' (kept, folded away)
    at.text_area(key="cal_members_text").set_value("\n".join(src[0::2][:5])).run()
    assert any(i.value.startswith("**The inputs have changed** (the data)") for i in at.info), \
        [i.value for i in at.info]
    at.text_area(key="cal_members_text").set_value("\n".join(src[0::2])).run()  # back: the current answer again
    assert not any("inputs have changed" in i.value for i in at.info) and at.table

    fresh = _app("pages/2_Calibration_run.py", model=tiny_llama)  # a browser refresh: a new session
    _no_exception(fresh)
    assert fresh.table and "LOSS" in fresh.table[0].value.index
    assert any(saved[0]["name"] in m.value for m in fresh.markdown)  # the finished run is shown again
    assert not any("changed nothing" in c.value for c in fresh.caption)  # it made no re-run


def _engine_run(tiny_llama, k: float, name: str):
    from mia_core import runs
    from mia_core.data import texts_from_strings
    from mia_core.models import load_causal_lm
    from mia_core.pipeline import RunConfig, run_attacks

    src = _paragraphs("pg105_austen_persuasion.txt", 8)
    ds = texts_from_strings(src[0::2], src[1::2])
    lm = load_causal_lm(tiny_llama)
    cfg = RunConfig(attacks=["loss", "min_k"], params={"min_k": {"k": k}}, n_bootstrap=50, blind=False)
    return runs.save_run(run_attacks(ds, lm, config=cfg), name=name)


def test_a_rerun_that_changed_nothing_is_not_saved_again_and_default_names_differ(tiny_llama):
    """Issue 30, item 9: every warm re-run used to be saved again under the same name."""
    from mia_core import runs

    first = _engine_run(tiny_llama, 0.2, None)
    before = len(runs.list_runs())
    again = _engine_run(tiny_llama, 0.2, None)
    assert again.id == first.id and again.meta.get("unchanged") and len(runs.list_runs()) == before
    other = _engine_run(tiny_llama, 0.3, None)  # another k: other scores, a new run
    assert other.id != first.id and len(runs.list_runs()) == before + 1
    assert other.name != first.name and other.name.startswith(first.name.split(" #")[0] + " #")
    assert "texts" in first.name and ":" not in first.name  # no clock time in the name: it is shown beside


@pytest.mark.slow
def test_a_controlled_experiments_split_is_a_data_source_without_uploads(tiny_llama, runs_dir, tmp_path):
    """Issue 30, item 10: the target the Controlled experiment built went to the calibration page, its split
    files had to be uploaded again. Here the split the page wrote is a source of its own, and one button
    puts the experiment's target and reference in the sidebar."""
    src = _paragraphs("pg105_austen_persuasion.txt", 8)
    files = {}
    for role, texts in (("members", src[0::2]), ("nonmembers", src[1::2])):
        files[role] = tmp_path / f"{role}.txt"
        files[role].write_text("\n".join(texts) + "\n")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["controlled_target"] = str(Path(tiny_llama).resolve())
    at.session_state["controlled_reference"] = "smollm2"
    at.session_state["controlled_members"] = str(files["members"])
    at.session_state["controlled_nonmembers"] = str(files["nonmembers"])
    at.session_state["controlled_population"] = None
    at.switch_page("pages/2_Calibration_run.py")
    at.run()
    _no_exception(at)
    assert "The controlled experiment's split" in at.radio(key="cal_source").options
    at.radio(key="cal_source").set_value("controlled").run()
    at.button(key="go_cal_cx_models").click().run()  # the experiment's target and reference in the sidebar
    _no_exception(at)
    assert at.session_state["mp_target_custom"] == str(Path(tiny_llama).resolve())
    assert at.session_state["mp_reference"] == "smollm2"
    at.multiselect(key="cal_attacks").set_value(["loss", "zlib"]).run()
    at.button(key="go_cal").click().run()
    assert not at.error, [e.value for e in at.error]
    at = _wait_for_results(at)
    assert "LOSS" in at.table[0].value.index
    assert any("4 members" in m.value and "4 non-members" in m.value for m in at.markdown)


@pytest.mark.slow
def test_early_results_come_as_each_pass_finishes(tiny_llama):
    """``run_attacks(partial=...)``: the one-pass attacks right after the target pass, lowercase after
    its pass, each with the AUC the final metrics then report; attacks that prepare come only at the end."""
    from mia_core.data import texts_from_strings
    from mia_core.models import load_causal_lm
    from mia_core.pipeline import RunConfig, run_attacks

    src = _paragraphs("pg105_austen_persuasion.txt", 8)
    calls, stages = [], []

    def progress(msg, frac):
        stages.append(msg.split(":")[0])

    def partial(d):
        calls.append((stages[-1] if stages else None, sorted(d), {k: v["auc"] for k, v in d.items()}))

    res = run_attacks(texts_from_strings(src[0::2], src[1::2]), load_causal_lm(tiny_llama),
                      config=RunConfig(attacks=["loss", "zlib", "min_k", "lowercase", "neighbourhood"],
                                       params={"neighbourhood": {"n": 2}}, n_bootstrap=20, blind=False),
                      progress=progress, partial=partial)
    assert [c[1] for c in calls] == [["loss", "min_k", "zlib"], ["lowercase"]]
    assert calls[0][0] == "target pass" and calls[1][0] == "target pass (lower-cased)"
    for _, _, aucs in calls:
        for k, v in aucs.items():
            assert v == res.metrics[k]["auc"]
    assert "neighbourhood" in res.metrics and res.metrics["loss"]["auc_ci"] is not None


def test_inspect_places_scores_on_a_calibration_run(tiny_llama):
    _engine_run(tiny_llama, 0.2, "placement run")
    at = _app("pages/1_Inspect_a_text.py", model=tiny_llama)
    at.button(key="go_inspect").click().run()  # the pre-filled paragraph
    _no_exception(at)
    table = at.table[0].value
    assert "Above % of non-members" in table.columns and "Member at 1% FPR?" in table.columns
    placed = table.loc["LOSS"]
    assert 0 <= _num(placed["Above % of non-members"]) <= 100 and placed["Member at 5% FPR?"] == "n/e"  # 4 non-members
    assert any("this text" in json.dumps(json.loads(c.proto.spec)) for c in at.get("plotly_chart"))


@pytest.mark.slow
def test_inspect_offers_the_newest_run_on_another_model(tiny_llama, tmp_path):
    """After a calibration run on one model (the demo target, say), Inspect on another model points
    to that run and switches to its target in one click (then analyses and places the text)."""
    from mia_core import runs
    from mia_core.data import texts_from_strings
    from mia_core.models import load_causal_lm
    from mia_core.pipeline import RunConfig, run_attacks

    src = _paragraphs("pg105_austen_persuasion.txt", 8)
    lm = load_causal_lm(tiny_llama)  # a run with a reference model (here the target itself): ref is placed too
    runs.save_run(run_attacks(texts_from_strings(src[0::2], src[1::2]), lm, reference=lm,
                              config=RunConfig(attacks=["loss", "ref"], n_bootstrap=20, blind=False)),
                  name="run on the other model")
    other = Path(save_tiny_llama(tmp_path / "other_llama"))
    cfg = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**cfg, "mia_note": "another model"}))  # another identity
    at = _app("pages/1_Inspect_a_text.py", model=str(other))
    mine = src[0] + " A sentence of the user's own."
    at.text_area(key="inspect_text").set_value(mine).run()
    at.button(key="go_inspect").click().run()
    _no_exception(at)
    hint = " ".join(i.value for i in at.info)
    assert "No calibration run on this exact model" in hint and "run on the other model" in hint
    assert "Above % of non-members" not in at.table[0].value.columns
    at.button(key="go_inspect_switch").click().run()
    _no_exception(at)
    assert at.session_state["mp_target_custom"] == str(Path(tiny_llama).resolve())
    assert "tiny_llama" in " ".join(c.value for c in at.sidebar.caption)
    assert "Above % of non-members" in at.table[0].value.columns  # analysed and placed without another click
    # the run's reference is set too, so its strongest attack is placed; the text analysed is still the user's
    assert at.session_state["mp_reference"] == "custom"
    assert at.session_state["mp_reference_custom"] == str(Path(tiny_llama).resolve())
    table = at.table[0].value
    assert _num(table.loc["Reference model (log-likelihood difference)"]["Above % of non-members"]) >= 0
    assert at.session_state["inspect_result"]["text"] == mine


def test_runs_page_compares_and_deletes(tiny_llama):
    from mia_core import runs

    a = _engine_run(tiny_llama, 0.1, "k=0.1")
    b = _engine_run(tiny_llama, 0.5, "k=0.5")
    at = _app("pages/5_Runs.py")
    _no_exception(at)
    at.selectbox(key="runs_a").set_value(a.id)
    at.selectbox(key="runs_b").set_value(b.id).run()
    _no_exception(at)
    cmp_ = next(t.value for t in at.table if "ΔAUC" in t.value.columns)
    assert {"LOSS", "Min-K%"} <= set(cmp_.index)
    # same data and model: LOSS cannot change, and the paired CI says so exactly
    assert cmp_.loc["LOSS", "ΔAUC"] == "+0.000 [+0.000, +0.000]"
    assert "Min-K%" in cmp_.index and "[" in cmp_.loc["Min-K%", "ΔAUC"]
    assert any("paired" in c.value for c in at.caption)
    assert any("runs compared" in c.proto.spec for c in at.get("plotly_chart"))

    n = len(runs.list_runs())
    at.selectbox(key="runs_open").set_value(a.id)
    at.checkbox(key="runs_confirm").check().run()
    at.button(key="runs_delete").click().run()
    _no_exception(at)
    assert len(runs.list_runs()) == n - 1 and a.id not in [m["id"] for m in runs.list_runs()]


# ------------------------------------------------------------------ plain modules


def test_run_store_round_trip_and_safety(tiny_llama, tmp_path):
    from mia_core import runs
    from mia_core.errors import DataError

    stored = _engine_run(tiny_llama, 0.2, "round trip")
    again = runs.load_run(stored.id)
    assert again.meta["name"] == "round trip" and again.attack_names() == ["loss", "min_k"]
    assert again.metrics["loss"]["auc"] == pytest.approx(stored.metrics["loss"]["auc"])
    assert list(again.scores.columns[:3]) == ["text_id", "label", "text_hash"]
    ident = again.meta["target"]["identity"]
    assert runs.latest_run(target_identity=ident).meta["target"]["identity"] == ident
    assert runs.latest_run(target_identity="no such model") is None
    for bad in ("../etc", "a/b", "", ".."):
        with pytest.raises(DataError):
            runs.load_run(bad)
    runs.rename_run(stored.id, "renamed")
    assert runs.load_run(stored.id).name == "renamed"
    runs.delete_run(stored.id)
    with pytest.raises(DataError):
        runs.load_run(stored.id)
    assert runs.runs_dir(tmp_path / "x").is_dir()


def test_report_is_self_contained_and_escaped(tiny_llama):
    from mia_core import runs
    from mia_core.reports.report import build_report

    stored = _engine_run(tiny_llama, 0.2, "<script>alert(1)</script> run")
    page = build_report(stored)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("Plotly.newPlot") == 3  # ROC linear, ROC log-log, histograms
    assert len(re.findall(r"plotly\.js v\d", page)) == 1  # plotly.js embedded once, no CDN
    assert not re.search(r"<script[^>]*\bsrc=", page)  # nothing loaded from outside
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "Min-K%" in page and "TPR@1% FPR" in page
    runs.delete_run(stored.id)


def test_number_formatting():
    from mia_core.reports.report import compare_table, fmt_auc, fmt_num, fmt_pct, fmt_rate_ci, metrics_table

    assert fmt_pct(0.0123) == "1.23%" and fmt_pct(0.5) == "50.0%" and fmt_pct(1) == "100%"
    assert fmt_pct(0) == "0%" and fmt_pct(0.000123) == "0.0123%" and fmt_pct(None) == "–"
    assert fmt_num(12345.6) == "12,346" and fmt_num(0.012345) == "0.0123" and fmt_num(-4.104) == "-4.10"
    assert fmt_num(float("nan")) == "–"
    assert fmt_auc(0.73456, [0.6, 0.8]) == "0.735 [0.600, 0.800]"
    assert fmt_rate_ci(0.1, [0.05, 0.2]) == "10.0% [5.00%, 20.0%]"
    m = {"loss": {"label": "LOSS", "auc": 0.6, "auc_ci": [0.5, 0.7], "tpr_at_fpr": {"0.01": 0.02, "0.05": 0.1, "0.1": 0.2}},
         "blind": {"label": "Blind", "auc": 0.5}}
    t = metrics_table(m)
    assert list(t["Attack"]) == ["LOSS", "Blind"] and t.loc[0, "TPR@1% FPR"] == "2.00%"
    m2 = {"loss": {**m["loss"], "auc": 0.65, "tpr_at_fpr": {"0.01": 0.05, "0.05": 0.1, "0.1": 0.2}}}
    c = compare_table(m, m2)
    assert c.loc[0, "ΔAUC"] == "+0.050" and c.loc[0, "Δ TPR@1%"] == "+3.0 pp"  # no scores: no CI
    assert c.loc[0, "AUC A → B"] == "0.600 → 0.650" and len(c.columns) == 7


def test_plots_colours_are_fixed_and_log_axes_drop_zeros():
    from mia_core.reports import plots

    assert plots.attack_colour("loss") == plots.ATTACK_COLOURS["loss"]
    assert plots.attack_colour("some_new_attack") == plots.attack_colour("some_new_attack")
    assert len(set(plots.ATTACK_COLOURS.values())) == len(plots.ATTACK_COLOURS)
    roc = {"fpr": [0.0, 0.0, 0.01, 0.5, 1.0], "tpr": [0.0, 0.1, 0.2, 0.7, 1.0]}
    metrics = {"loss": {"label": "LOSS", "auc": 0.7, "roc": roc}, "min_k": {"label": "Min-K%", "auc": 0.6, "roc": roc}}
    lin = plots.roc_figure(metrics)
    log = plots.roc_figure(metrics, log=True)
    assert len(lin.data[0].x) == 5 and min(log.data[0].x) > 0 and len(log.data[0].x) == 3
    assert log.layout.xaxis.type == "log"
    assert lin.data[0].line.color == plots.ATTACK_COLOURS["loss"]
    over = plots.roc_overlay([("A", metrics), ("B", metrics)])
    colours = {(t.name.split(" · ")[1].split(" (")[0], t.line.color) for t in over.data if " · " in t.name}
    assert colours == {("LOSS", plots.ATTACK_COLOURS["loss"]), ("Min-K%", plots.ATTACK_COLOURS["min_k"])}


def test_token_view_pieces_values_and_escaping(tiny_llama):
    from transformers import AutoTokenizer

    from dashboard import tokens
    from mia_core.documents.dictionaries import token_frequency

    tok = AutoTokenizer.from_pretrained(tiny_llama)
    text = "Naïve café — “quotes” <script>x</script>\n\nnew paragraph 12345"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    pieces = tokens.token_pieces(tok, text, ids)
    assert len(pieces) == len(ids) and "".join(pieces) == text

    counts = np.zeros(50, dtype=np.int64)
    counts[[1, 2, 3]] = [6, 3, 1]
    rtf, seen = token_frequency(counts)
    assert rtf[1] == pytest.approx(0.6) and rtf[0] == pytest.approx(0.05) and seen.sum() == 3
    lp = np.log(np.array([0.5, 0.1, 0.01]))
    mx = np.log(np.array([0.5, 0.4, 0.9]))
    tid = np.array([1, 2, 0])
    ratio = tokens.token_values(lp, mx, tid, "ratio", rtf)
    assert ratio == pytest.approx(np.log10(np.array([0.5 / 0.6, 0.1 / 0.3, 0.01 / 0.05])))
    mxn = tokens.token_values(lp, mx, tid, "max", rtf)
    assert mxn == pytest.approx(np.log10(np.array([1.0 / 0.6, 0.7 / 0.3, 0.11 / 0.05])))
    u = tokens.unit(np.array([1e-6, 1e-2, 1.0]), "prob")
    assert u == pytest.approx([0.0, 0.5, 1.0])


def test_token_view_values_are_the_engines_normalisations():
    """The per-token colours are the document audit's F(t) (Meeus et al. §4.2.2) as -F / ln 10,
    with R^TF from the engine's ``token_frequency`` (same numbers, bit for bit)."""
    from dashboard import tokens
    from mia_core.documents.dictionaries import ReferenceDictionaries, token_frequency
    from mia_core.documents.normalization import normalized_values
    from mia_core.stats import TokenStats

    rng = np.random.default_rng(0)
    counts = rng.integers(0, 4, 40)
    counts[0] = 0
    rtf, seen = token_frequency(counts)
    assert not seen[0] and rtf[0] == pytest.approx(rtf[seen].min() / 2)
    n = 25
    tid = rng.integers(0, 40, n)
    lp = np.log(rng.random(n)).astype(np.float32)
    lp[0] = np.nan  # the first token has no prediction
    mx = np.maximum(lp, np.log(rng.random(n)).astype(np.float32))
    z = np.zeros(n, dtype=np.float32)
    s = TokenStats(token_ids=tid, logprob=lp, max_logprob=mx, mu=z, sigma=z, entropy=z, rank=tid, top_id=tid, n_bytes=n)
    d = ReferenceDictionaries(token_freq=rtf, general_proba=None, doc_indices=(0,), n_tokens=int(counts.sum()),
                              n_positions=0)
    for norm, name in (("ratio", "rationorm_tf"), ("max", "maxnorm_tf")):
        np.testing.assert_array_equal(tokens.token_values(lp, mx, tid, norm, rtf),
                                      -normalized_values(s, name, d) / np.log(10))
    np.testing.assert_array_equal(tokens.token_values(lp, mx, tid, "prob", None),
                                  np.exp(-normalized_values(s, "nonorm", None)))
    assert np.isnan(tokens.token_values(lp, mx, tid, "max", rtf)[0])


def test_placement_on_a_run():
    """``mia_core.metrics.placement``: percentiles (ties count half) and decisions at the non-member thresholds."""
    import pandas as pd

    from mia_core.metrics import population_threshold
    from mia_core.metrics.placement import incomparable, percentile, place_score, run_groups

    assert percentile(np.array([1.0, 2.0, 3.0, 4.0]), 3.0) == pytest.approx(0.625)
    assert math.isnan(percentile(np.array([]), 1.0))
    df = pd.DataFrame({"label": [1, 1, 1, 0, 0, 0, 0], "loss": [3.0, 2.0, np.nan, 1.0, 0.0, -1.0, 2.5]})
    assert incomparable(df, "zlib", run_reference=None, reference=None) == "not in this run"
    df["ref"] = 0.0
    assert incomparable(df, "ref", run_reference="a", reference="b") == "other reference model"
    assert incomparable(df, "ref", run_reference="a", reference="a") is None
    mem, non = run_groups(df, "loss")
    assert mem.tolist() == [3.0, 2.0] and non.tolist() == [1.0, 0.0, -1.0, 2.5]
    p = place_score(2.0, mem, non, (0.25, 0.5))
    assert p.above_nonmembers == pytest.approx(0.75) and p.above_members == pytest.approx(0.25)
    assert p.thresholds == {0.25: population_threshold(non, 0.25), 0.5: population_threshold(non, 0.5)}
    assert p.is_member(0.5) == (2.0 >= p.thresholds[0.5]) and not p.is_member(0.25)
    # a decision says what it rests on: n/e below 1/(non-members), the flagged count when under 5
    assert p.decision(0.25) == "no (rests on 1 non-member)" and p.decision(0.1) == "n/e"
    assert p.decision(0.5).startswith(("yes (rests on 2 non-members)", "no (rests on 2 non-members)"))
    assert place_score(float("nan"), mem, non) is None and place_score(1.0, mem[:0], non) is None


def test_neighbour_spans_and_run_clouds():
    from dashboard.inspect import run_clouds
    from mia_core.api.inspect import neighbour_spans
    from mia_core.pipeline import RunResult

    text = "The old man sat by the quiet river."
    nb = "The ancient man sat by the calm river."
    spans = neighbour_spans(text, [(1, "old", "ancient"), (6, "quiet", "calm")])
    assert [nb[a:b] for a, b in spans] == ["ancient", "calm"]
    pairs = {"cosine": [0.9, 0.8, 0.95, 0.7], "loss_diff": [-0.5, -0.2, 0.1, -0.3], "label": [1, 1, 0, 0],
             "split": ["eval", "train", "eval", "eval"]}
    run = RunResult(scores=None, metrics={}, config={}, models={}, timings={}, extra={"smia": {"pairs": pairs}})
    clouds = run_clouds(run)
    assert clouds["members"][0] == pytest.approx([0.1]) and clouds["members"][1] == pytest.approx([0.5])
    assert clouds["non-members"][0] == pytest.approx([0.05, 0.3]) and clouds["non-members"][1] == pytest.approx([-0.1, 0.3])
    assert run_clouds(RunResult(scores=None, metrics={}, config={}, models={}, timings={})) is None


def test_modified_table():
    from mia_core.reports.report import modified_table

    m = lambda auc, tpr: {"loss": {"label": "LOSS", "auc": auc, "tpr_at_fpr": {"0.01": tpr}}, "blind": {"auc": 0.5}}
    t = modified_table({"verbatim": m(0.8, 0.2), "delete": m(0.7, 0.1), "modifications": {}, "n_unmodified": {}})
    assert list(t.columns) == ["Attack", "AUC verbatim", "AUC delete", "TPR@1% verbatim", "TPR@1% delete"]
    assert t.loc[0, "AUC delete"] == "0.700" and t.loc[0, "TPR@1% verbatim"] == "20.0%"


def test_run_estimate_uses_the_measured_speed(tmp_path, monkeypatch):
    from mia_core import estimate as E

    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path / "cache"))
    sec, how = E.estimate_seconds(3000, 135e6)
    assert how == "assumed" and sec == pytest.approx(3000 / E.DEFAULT_TOKENS_PER_S)
    E.record(10, 1.0, 135_000_000, "cpu")  # too few tokens to say anything
    assert E.measured("cpu") is None
    E.record(6000, 20.0, 135_000_000, "cpu")  # 300 tokens/s measured for a 135M model
    sec, how = E.estimate_seconds(3000, 270e6, "cpu")
    assert how == "scaled" and sec == pytest.approx(20.0)  # another model's speed: twice the parameters, half of it
    assert E.measured("cuda:0") is None and E.count_tokens(["abcd" * 21]) == 21  # 84 characters: 20 tokens + the prefix
    line = E.describe_estimate(100, ["target", "reference"], 3000, 135e6, "cpu")
    assert "100 texts × 2 passes (target, reference)" in line and "6,000 tokens" in line and "measured" in line


def test_the_page_default_leaves_lowercase_unticked_and_the_estimate_says_what_it_would_cost(tmp_path, monkeypatch):
    """Lowercase is the one default-able attack with a model pass of its own: not ticked by default
    (a third of the demo's first run), and the line before Run prices it when it is left out."""
    from dashboard.calibration import CalibrationInputs, run_estimate
    from mia_core.attacks import DEFAULT_ATTACKS
    from mia_core import estimate as E
    from mia_core.data import texts_from_strings

    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path / "cache"))
    assert "lowercase" not in DEFAULT_ATTACKS and {"loss", "zlib", "min_k", "min_k_pp"} <= set(DEFAULT_ATTACKS)
    E.record(6000, 20.0, 135_000_000, "cpu")  # 300 tokens/s
    texts = [f"{i:04d}" + "abcd" * 20 for i in range(100)]  # 84 characters: 20 tokens + the prefix each
    inputs = CalibrationInputs(texts_from_strings(texts[:50], texts[50:]), None, {})  # 2,100 tokens
    line = run_estimate(inputs, list(DEFAULT_ATTACKS), {}, n_params=135e6)
    assert "100 texts × 1 pass (target)" in line
    assert "Lowercase (not ticked by default) would add a pass over the lower-cased texts: about 7.0 s" in line
    line = run_estimate(inputs, [*DEFAULT_ATTACKS, "lowercase"], {}, n_params=135e6)
    assert "2 passes (target, target lower-cased)" in line and "not ticked" not in line


def test_stage_eta_from_its_own_pace():
    from dashboard.jobs import Stage
    from dashboard.ui import stage_eta

    import time

    now = time.time()
    s = Stage("target pass", 0.25, "50/200 windows", started=now - 10, updated=now)
    def left(text):  # ", about 30.0 s left" -> 30.0 (the clock moves on between the lines: not to the digit)
        return float(text.split("about ")[1].split(" s")[0])

    assert abs(left(stage_eta(s, 10.0, True)) - 30) < 1  # a quarter done in 10 s: 30 s to go
    # 6 s later with no new report (windows come in bursts): the estimate counts down, it does not grow
    later = Stage("target pass", 0.25, "50/200 windows", started=now - 16, updated=now - 6)
    assert abs(left(stage_eta(later, 16.0, True)) - 24) < 1
    assert stage_eta(s, 10.0, False) == ""  # finished or waiting stages have no ETA
    assert stage_eta(Stage("x", 0.01), 10.0, True) == "" and stage_eta(s, 1.0, True) == ""  # too early to guess


@pytest.mark.slow
def test_warmup_starts_once_imports_the_model_libraries_and_preloads_the_default_models():
    """app.py starts it once per process: a second start is a no-op; it leaves transformers'
    tokenizer machinery imported (what a first model load would otherwise pay for; peft only if the demo
    target had no merged copy yet and was merged here), then loads the demo target and its reference into
    the pages' store with the sidebar's default settings, so that the page's own load of them is a lookup
    (no load step reported, the same object). In a fresh interpreter, so that nothing else has imported
    them already."""
    import subprocess
    import sys

    code = (
        "import os, sys, threading; os.environ.pop('MIA_NO_WARMUP', None); os.environ.pop('MIA_NO_PRELOAD', None)\n"
        "from collections import OrderedDict\n"
        "from dashboard import warmup\n"
        "assert 'peft' not in sys.modules and 'transformers.tokenization_utils_tokenizers' not in sys.modules\n"
        "store = {'lock': threading.Lock(), 'locks': {}, 'models': OrderedDict(), 'steps': {}}\n"
        "from dashboard.loaders import warm_defaults\n"
        "warmup.start(lambda: warm_defaults(store)); first = warmup._thread; warmup.start(lambda: warm_defaults(store))\n"
        "assert warmup._thread is first is not None\n"
        "warmup.wait(300)\n"
        "assert not first.is_alive()\n"
        "from dashboard.loaders import default_models, load_model\n"
        "from mia_core.targets.demo import installed_demo as demo_paths\n"
        "wanted = default_models(); heard = []\n"
        "assert [w[0] for w in wanted] == [str(demo_paths()['target']), 'smollm2'], wanted\n"
        "got = [load_model(*w, _progress=lambda m, f: heard.append(m), _into=store) for w in wanted]\n"
        "assert got == [store['models'][w] for w in wanted] and not heard, heard\n"
        "merged_here = 'the merged copy' not in got[0].info['weights']  # else read from its copy: no peft\n"
        "assert all(m.weights_loaded for m in got)  # the preload reads the weights, not only the tokenizers\n"
        "print(('peft' in sys.modules) == merged_here, 'transformers.tokenization_utils_tokenizers' in sys.modules,"
        " len(store['models']))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=400,
                       cwd=str(Path(__file__).resolve().parent.parent))
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["True", "True", "2"], r.stdout


@pytest.mark.slow
def test_a_page_waiting_on_a_load_under_way_shows_its_steps_and_gets_its_model():
    """A load already under way for the same settings (the start-up preload, or another page) is
    waited for, not repeated: the waiting page hears that load's latest step, and then gets the
    model it put in the store."""
    import threading
    from collections import OrderedDict

    from dashboard.loaders import load_model

    store = {"lock": threading.Lock(), "locks": {}, "models": OrderedDict(), "steps": {}}
    key = ("some/model", "auto", "none", "auto", False)
    held = store["locks"].setdefault(key, threading.Lock())
    held.acquire()
    store["steps"][key] = ("converting the GGUF weights", 0.4)
    heard, got = [], []
    t = threading.Thread(target=lambda: got.append(load_model(*key, _progress=lambda m, f: heard.append((m, f)),
                                                              _into=store)), daemon=True)
    sentinel = object()
    t.start()
    try:
        t.join(1.3)
        assert t.is_alive() and heard and heard[-1][1] == 0.4 and "converting the GGUF weights" in heard[-1][0]
        assert "already being loaded" in heard[-1][0]
    finally:  # a failed assertion must not leave the waiter blocked (it would load "some/model" or hang)
        store["models"][key] = sentinel
        held.release()
    t.join(5)
    assert got == [sentinel]


def test_home_describes_every_page_in_words_not_module_names():
    """Issue 69: Home's card for a page is the first paragraph of the page's docstring (``app._summary``); it is
    what a user reads, so it names no module or file (the traps and extraction cards named three each)."""
    import ast
    import re

    from pathlib import Path

    pages = sorted((Path(__file__).resolve().parents[1] / "pages").glob("*.py"))
    assert len(pages) >= 9
    for f in pages:
        first = (ast.get_docstring(ast.parse(f.read_text(encoding="utf-8"))) or "").split("\n\n")[0]
        assert first.strip(), f.name
        assert not re.search(r"mia_core|dashboard\.|\.py\b|``", first), (f.name, first)
