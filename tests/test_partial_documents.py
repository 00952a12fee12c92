"""Partial documents (Meeus et al. 2024, §6.4): the curve is re-trained at each length.

A tiny Llama (tests/tiny_lm.py) is trained on the first 255 tokens of 10 member books
(the first 6,000 characters of tests/data/books, about 1,500 tokens each) and never on the rest, so
membership lives in the start of each member book; the other 10 books are non-members. At
each length L the curve must cut every book to its first L tokens and fit the dictionaries,
the histogram bins and the random forest on the training fold's length-L documents (nothing
fitted on full documents is reused), and it reports the paper's pipeline and the audit's
best full-document pipeline.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from mia_core.documents import (HistogramFeatures, build_dictionaries, make_folds, normalized_values,
                                run_document_audit)
from mia_core.documents.partial import partial_cross_validation, partial_curve, partial_documents
from mia_core.errors import SettingsError
from mia_core.models import load_causal_lm
from mia_core.stats import StatsSettings, compute_stats

from tiny_lm import make_tokenizer, train_tiny_lm

pytestmark = pytest.mark.slow

BOOKS = Path(__file__).parent / "data" / "books"
TRAINED = 255  # train_tiny_lm keeps the first max_len - 1 tokens of each member
BINS, TREES = 50, 50
CHARS = 6000


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("partial")
    mp.setenv("MIA_CACHE_DIR", str(root / "cache"))
    mp.setenv("HF_HUB_OFFLINE", "1")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    texts = [f.read_text(encoding="utf-8")[:CHARS] for f in sorted(BOOKS.glob("*.txt"))]
    members, nonmembers = texts[0::2], texts[1::2]
    tok = make_tokenizer(texts, 1000)
    folder = train_tiny_lm(members, tok, root / "target", epochs=20, max_len=TRAINED + 1)
    lm = load_causal_lm(str(folder))
    st = StatsSettings(context=128, vocab_probs=True)
    stats = [compute_stats(lm, [t], st)[0] for t in members + nonmembers]  # cached: the audit below reuses them
    labels = np.array([1] * len(members) + [0] * len(nonmembers))
    yield {"lm": lm, "stats": stats, "labels": labels, "members": members, "nonmembers": nonmembers,
           "folds": make_folds(labels, 5, 0)}
    torch.set_num_threads(threads)
    mp.undo()


def test_each_length_fits_its_own_dictionaries_bins_and_forest(setting):
    stats, y, folds, V = setting["stats"], setting["labels"], setting["folds"], setting["lm"].vocab_size
    assert min(s.n_tokens for s in stats) > 1000
    full_edges = HistogramFeatures(BINS).fit(
        [normalized_values(stats[i], "nonorm", None) for i in folds[0][0]]).edges
    for L in (100, 400):
        cv, part = partial_cross_validation(stats, y, folds, [("maxnorm_tf", "hist"), ("nonorm", "hist")], L,
                                            vocab_size=V, n_bins=BINS, n_estimators=TREES, keep_fitted=True)
        # the first L tokens of every book: a slice of the full-document statistics, no new model call
        for s, p in zip(stats, part):
            assert p.n_tokens == L
            np.testing.assert_array_equal(p.token_ids, s.token_ids[:L])
            np.testing.assert_array_equal(p.logprob, s.logprob[:L])
        for k, (tr, te) in enumerate(folds):
            d = build_dictionaries(part, tr, V, gp_stats=stats)
            assert d.n_tokens == L * len(tr)  # R^TF counted on the training books cut to L
            np.testing.assert_allclose(cv.fold_dicts[k].token_freq, d.token_freq)
            for norm in ("maxnorm_tf", "nonorm"):
                fit = cv.fitted[k][f"{norm}+hist"]
                train_values = [normalized_values(part[i], norm, d) for i in tr]
                # bins fitted on the training fold's length-L values, not on full documents
                np.testing.assert_allclose(fit["hist"].edges, HistogramFeatures(BINS).fit(train_values).edges)
                # the forest was trained on length-L features of the training fold
                assert fit["train_tokens"] == sum(int(np.isfinite(v).sum()) for v in train_values) <= L * len(tr)
                assert fit["classifier"].n_features_in_ == BINS
                X = fit["hist"].transform(train_values)
                np.testing.assert_allclose(X.sum(1), 1.0)
        # the value range of L tokens differs from the full documents' range: bins fitted on full
        # documents would not be the bins this length uses
        edges_L = cv.fitted[0]["nonorm+hist"]["hist"].edges
        assert not np.allclose(edges_L, full_edges)
        assert edges_L[-1] - edges_L[0] < full_edges[-1] - full_edges[0]


def test_start_of_the_books_carries_membership(setting):
    """Membership was trained into the first 255 tokens only: cutting books to their start finds it, random
    excerpts of the same length (the old curve) mostly miss it."""
    stats, y, folds, V = setting["stats"], setting["labels"], setting["folds"], setting["lm"].vocab_size
    kw = dict(vocab_size=V, lengths=(200,), n_bins=BINS, n_estimators=TREES)
    start = partial_curve(stats, y, folds, [("nonorm", "agg")], **kw)
    rand = partial_curve(stats, y, folds, [("nonorm", "agg")], position="random", **kw)
    a_start, a_rand = start["auc_mean"].item(), rand["auc_mean"].item()
    assert a_start >= 0.9, (a_start, a_rand)
    assert a_start >= a_rand + 0.2, (a_start, a_rand)
    assert start["position"].item() == "start" and rand["position"].item() == "random"
    # a random excerpt is a contiguous slice somewhere in the book
    ex = partial_documents(stats, 200, "random", seed=3)
    assert any(not np.array_equal(e.token_ids, s.token_ids[:200]) for e, s in zip(ex, stats))


def test_audit_curve_reports_paper_and_best_pipeline(setting, tmp_path):
    res = run_document_audit(
        setting["members"], setting["nonmembers"], setting["lm"], context=128,
        normalizations=("nonorm", "maxnorm-tf"), features=("hist", "agg"), folds=5, n_bins=BINS, seed=0,
        partial_lengths=(100, 400, 100000), baselines=False, n_estimators=TREES,
    )
    part = res.partial
    best = res.best_pipeline
    assert best != "maxnorm_tf+hist"  # in this setting the paper's pipeline is not the best one
    assert set(part["pipeline"]) == {"maxnorm_tf+hist", best}
    assert set(part.loc[part.pipeline == best, "role"]) == {"best"}
    assert set(part.loc[part.pipeline == "maxnorm_tf+hist", "role"]) == {"paper"}
    assert part["n_tokens"].tolist() == [100, 100, 400, 400]  # 100,000 is longer than every book: dropped
    for p in part["pipeline"].unique():
        assert (part.loc[part.pipeline == p, "full_auc_mean"] == res.metrics[p]["auc_mean"]).all()
    text = res.summary_text()
    assert "best full-document pipeline" in text and "paper's pipeline" in text and "first L tokens" in text
    assert res.settings["partial_position"] == "start"
    res.save(tmp_path)
    import pandas as pd

    saved = pd.read_csv(tmp_path / "partial_documents.csv")
    assert list(saved["role"]) == list(part["role"])


def test_bad_partial_settings_fail_before_the_model(setting):
    with pytest.raises(SettingsError, match="position"):
        run_document_audit(setting["members"][:5], setting["nonmembers"][:5], None, folds=2,
                           partial_lengths=(100,), partial_position="middle")
    with pytest.raises(SettingsError, match="dictionaries"):
        partial_curve(setting["stats"], setting["labels"], setting["folds"], [("nonorm", "agg")],
                      vocab_size=setting["lm"].vocab_size, lengths=(100,), dictionaries="some")


def test_the_papers_grid_on_short_documents_becomes_lengths_from_the_documents():
    """Issue 30, item 10: the demo's documents (300-350 tokens) kept one point of the paper's grid (100)."""
    from types import SimpleNamespace

    from mia_core.documents.partial import DEFAULT_LENGTHS, lengths_for

    short = [SimpleNamespace(n_tokens=n) for n in (300, 320, 350)]
    got = lengths_for(short, DEFAULT_LENGTHS)
    assert len(got) == 5 and got == sorted(got) and 16 <= got[0] and got[-1] < 350
    assert lengths_for(short, (100, 400)) == [100]  # lengths a user chose are kept
    books = [SimpleNamespace(n_tokens=60_000)]
    assert lengths_for(books, DEFAULT_LENGTHS) == list(DEFAULT_LENGTHS)  # books: the paper's grid

